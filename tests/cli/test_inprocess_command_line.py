"""A run records the command that reproduces it (``metadata.command_line``, the
report's ``- command:`` line): ``bench.py``'s own ``sys.argv`` on the command line,
and, for a run started in-process by ``cli.main(ARGV)``, ``bench.py``'s absolute path
and ARGV, not the host's ``sys.argv`` (``['-c']``, the host script's path); either
with the folder it ran in (``metadata.cwd``), which the report's line ``cd``s to."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ipc_bench import cli
from ipc_bench.cli.command_line import SCRIPT, command_words, recorded, recording

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
        "--warmup-steps", "2", "--policies", "send", "--codecs", "msgpack",
        "--no-single-process", "--no-floor", "--quiet"]


def _command_line(run: Path) -> list[str]:
    return json.loads((run / "summary.json").read_text())["metadata"]["command_line"]


def _command_item(run: Path, tmp_path: Path) -> str:
    """The report's ``- command:`` line of ``run``."""
    out = tmp_path / f"{run.name}-report"
    assert cli.main(["report", str(run), "--output", str(out), "--no-figures"]) == 0
    return next(ln for ln in (out / "report.md").read_text().splitlines()
                if ln.startswith("- command: "))


def test_a_run_from_python_c_records_the_bench_py_command(tmp_path):
    run = tmp_path / "c run"
    argv = TINY + ["--output", str(run)]
    code = (f"import sys; from ipc_bench import cli; sys.exit(cli.main({argv!r}))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert _command_line(run) == [SCRIPT, *argv]
    assert _command_item(run, tmp_path) == (
        f"- command: `cd {tmp_path} && python {ROOT / 'bench.py'} --scenario decode-steady --num-running 2 --steps 20 "
        "--warmup-steps 2 --policies send --codecs msgpack --no-single-process --no-floor "
        f"--quiet --output '{run}'`")


def test_runs_started_in_one_host_each_record_their_own_arguments(tmp_path, capsys):
    first, second = tmp_path / "a", tmp_path / "b"
    assert cli.main(TINY + ["--output", str(first)]) == 0
    assert cli.main(TINY[:-1] + ["--output", str(second), "--quiet"]) == 0
    capsys.readouterr()
    assert _command_line(first) == [SCRIPT, *TINY, "--output", str(first)]
    assert _command_line(second) == [SCRIPT, *TINY[:-1], "--output", str(second),
                                     "--quiet"]
    assert recorded() is None  # nothing left set after main


def test_bench_py_records_its_argv_as_typed(tmp_path):
    run = tmp_path / "cl"
    args = ["bench.py", *TINY, "--output", str(run)]
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert _command_line(run) == args
    proc = subprocess.run([sys.executable, str(ROOT / "bench.py"), *TINY, "--output",
                           str(tmp_path / "path")], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert _command_line(tmp_path / "path") == [str(ROOT / "bench.py"), *TINY, "--output",
                                                str(tmp_path / "path")]


def test_command_words(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/x/bench.py", "--list"])
    assert command_words(None) == ["/x/bench.py", "--list"]
    assert SCRIPT == str(ROOT / "bench.py")
    assert command_words(("--scenario", "soak")) == [SCRIPT, "--scenario", "soak"]
    assert recorded() is None
    with recording(command_words(["--list"])):
        assert recorded() == [SCRIPT, "--list"]
        with recording(command_words(None)):
            assert recorded() == ["/x/bench.py", "--list"]
        assert recorded() == [SCRIPT, "--list"]
    assert recorded() is None
    try:
        with recording(["bench.py"]):
            raise KeyError("x")
    except KeyError:
        pass
    assert recorded() is None
