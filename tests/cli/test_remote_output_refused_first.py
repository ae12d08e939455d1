"""With ``--remote-runners``, an ``--output`` folder the run would refuse is refused
before the scheduler binds its ports or prints the command that starts a runner: the
run's stderr is the refusal alone, exit 2, and the control port was never bound (a
runner started as the waiting line said would have found no scheduler)."""
import json
import socket

from ipc_bench.cli.run import main as cli_main

PORT = 5843
ARGS = ["--scenario", "decode-steady", "--transport", "tcp", "--remote-runners",
        "--port", str(PORT), "--startup-timeout", "1", "--codecs", "msgpack",
        "--policies", "send", "--no-single-process"]


def _port_free() -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", PORT))
        except OSError:
            return False
        return True


def test_an_output_folder_holding_a_run_is_refused_before_the_wait(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps({"status": "complete"}))
    code = cli_main(ARGS + ["--output", str(run)])
    assert (code, capsys.readouterr().err) == (2, (
        f"bench.py: error: output folder {run} exists and is not empty: it holds a run "
        "(summary.json, status complete); give another --output, or remove that run "
        "first\n"))
    assert _port_free()
    assert sorted(p.name for p in run.iterdir()) == ["summary.json"]


def test_an_output_that_is_a_file_is_refused_before_the_wait(tmp_path, capsys):
    path = tmp_path / "notes.txt"
    path.write_text("x")
    code = cli_main(ARGS + ["--output", str(path)])
    assert (code, capsys.readouterr().err) == (
        2, f"bench.py: error: output path {path} exists and is not a folder\n")
    assert _port_free()
