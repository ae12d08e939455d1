"""``cli.main`` called in process (a notebook, a script): what it takes as ``argv``
(any iterable, read once; texts and paths; anything else refused in one line), what a
run it starts records (``bench.py``'s absolute path, the arguments and the folder, so
that the report's command reproduces it from anywhere), and signals the caller blocks
(left blocked, and pending for the caller, during the call and after it).

Signal cases run in a process of their own (the signals sent there never reach
pytest's), with a timeout."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from ipc_bench import cli
from ipc_bench.cli.command_line import SCRIPT

REPO = Path(__file__).resolve().parents[2]
BENCH_PY = str(REPO / "bench.py")
TINY = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
        "--warmup-steps", "2", "--policies", "send", "--codecs", "msgpack",
        "--no-single-process", "--no-floor", "--quiet"]
TINY_LINE = ("--scenario decode-steady --num-running 2 --steps 20 --warmup-steps 2 "
             "--policies send --codecs msgpack --no-single-process --no-floor --quiet")


def _state() -> tuple:
    return (sys.stdout, sys.stderr, [signal.getsignal(s) for s in
                                     (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)],
            signal.pthread_sigmask(signal.SIG_BLOCK, ()), sys.unraisablehook)


def _metadata(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())["metadata"]


def _command_item(run: Path, out: Path) -> str:
    assert cli.main(["report", str(run), "--output", str(out), "--no-figures"]) == 0
    return next(ln for ln in (out / "report.md").read_text().splitlines()
                if ln.startswith("- command: "))


def test_an_iterator_argv_is_read_once(capsys):
    assert cli.main(iter(["--list"])) == 0
    assert "decode-steady" in capsys.readouterr().out
    assert cli.main(a for a in ["--list"]) == 0
    assert "decode-steady" in capsys.readouterr().out


def test_arguments_that_are_neither_texts_nor_paths_are_refused_in_one_line(capsys):
    before = _state()
    cases = [
        (["--scenario", "soak", "--steps", "20", 3],
         "bench.py: error: cli.main takes str arguments (or paths): argument 5 is int 3\n"),
        (["report", b"/tmp/run"], "bench.py: error: cli.main takes str arguments (or "
         "paths): argument 2 is bytes b'/tmp/run'\n"),
        (iter(["--list", None]), "bench.py: error: cli.main takes str arguments (or "
         "paths): argument 2 is NoneType None\n"),
        ("--list", "bench.py: error: cli.main takes a list of arguments, not one str "
         "'--list'\n"),
        (5, "bench.py: error: cli.main takes a list of str arguments (or paths), not "
         "int 5\n"),
    ]
    for argv, line in cases:
        assert cli.main(argv) == 2
        assert capsys.readouterr() == ("", line)
        assert _state() == before


def test_a_path_argument_is_taken_as_its_path(tmp_path, capsys):
    run = tmp_path / "p run"
    assert cli.main([*TINY, "--output", run]) == 0
    capsys.readouterr()
    assert _metadata(run)["command_line"] == [BENCH_PY, *TINY, "--output", str(run)]


def test_an_in_process_run_with_relative_paths_records_a_command_that_reruns(tmp_path):
    """From a folder without ``bench.py``, relative ``--output``: the run records
    ``bench.py``'s absolute path and the folder, and the report's command is ``cd
    FOLDER && python /abs/bench.py ...``, which, pasted into a shell elsewhere, runs the
    same run again (the same ``command_line`` and ``cwd`` recorded)."""
    here = tmp_path / "x dir"
    here.mkdir()
    code = ("import sys; from ipc_bench import cli; "
            f"sys.exit(cli.main({[*TINY, '--output', 'reltrace']!r}))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=here, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    md = _metadata(here / "reltrace")
    assert SCRIPT == BENCH_PY
    assert md["command_line"] == [BENCH_PY, *TINY, "--output", "reltrace"]
    assert md["cwd"] == str(here)
    item = _command_item(here / "reltrace", tmp_path / "rep")
    shell = f"cd '{here}' && python {BENCH_PY} {TINY_LINE} --output reltrace"
    assert item == f"- command: `{shell}`"
    (here / "reltrace").rename(here / "first")
    proc = subprocess.run(["bash", "-c", shell.replace(" && python ", f" && {sys.executable} ")],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert _metadata(here / "reltrace")["command_line"] == [BENCH_PY, *TINY, "--output",
                                                            "reltrace"]
    assert _metadata(here / "reltrace")["cwd"] == str(here)


def test_bench_py_records_its_argv_as_typed_and_its_folder(tmp_path):
    """``python bench.py`` records ``bench.py`` as typed and the folder it ran in, where
    its report line was the command alone, to be run from a folder it did not name."""
    proc = subprocess.run([sys.executable, "bench.py", *TINY, "--output",
                           str(tmp_path / "cl")], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    md = _metadata(tmp_path / "cl")
    assert md["command_line"] == ["bench.py", *TINY, "--output", str(tmp_path / "cl")]
    assert md["cwd"] == str(REPO)
    assert _command_item(tmp_path / "cl", tmp_path / "rep") == (
        f"- command: `cd {REPO} && python bench.py {TINY_LINE} --output {tmp_path / 'cl'}`")


def test_a_run_recorded_without_its_folder_shows_the_command_alone(tmp_path):
    """A run before ``metadata.cwd``: its report line is the command as recorded."""
    proc = subprocess.run([sys.executable, "bench.py", *TINY, "--output",
                           str(tmp_path / "cl")], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "cl" / "summary.json").read_text())
    del summary["metadata"]["cwd"]
    (tmp_path / "cl" / "summary.json").write_text(json.dumps(summary))
    assert _command_item(tmp_path / "cl", tmp_path / "rep") == (
        f"- command: `python bench.py {TINY_LINE} --output {tmp_path / 'cl'}`")


#: A caller that blocked SIGTERM (and has it pending) calls ``cli.main``; what it finds.
BLOCKED = """
import os, signal, sys
from ipc_bench import cli

def mine(signum, frame):
    print("caller's handler ran", file=sys.stderr)

signal.signal(signal.SIGTERM, mine)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
os.kill(os.getpid(), signal.SIGTERM)
code = cli.main(["--list"])
print("code", code, "pending", sorted(int(s) for s in signal.sigpending()),
      "mask", sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, ())),
      "handler", signal.getsignal(signal.SIGTERM).__name__, file=sys.stderr)
cli.COMMANDS["probe"] = lambda: probe
def probe(argv):
    os.kill(os.getpid(), signal.SIGTERM)  # blocked: stays pending
    signal.raise_signal(signal.SIGINT)    # not blocked: ends the call
    return 0
code = cli.main(["probe"])
print("code", code, "pending", sorted(int(s) for s in signal.sigpending()),
      "mask", sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, ())),
      file=sys.stderr)
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
print("done", file=sys.stderr)
"""


def test_a_signal_the_caller_blocks_stays_blocked_and_pending_for_it():
    proc = subprocess.run([sys.executable, "-c", BLOCKED], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stderr == (
        "code 0 pending [15] mask [15] handler mine\n"
        "bench.py probe: interrupted by SIGINT (exit 130)\n"
        "code 130 pending [15] mask [15]\n"
        "caller's handler ran\n"
        "done\n")


def test_the_report_line_puts_the_folder_first_only_where_it_is_a_text():
    from ipc_bench.errors import command_shell_line

    argv = ["/r/bench.py", "--trace", "conv.csv"]
    assert command_shell_line(argv, "/tmp/x") == "cd /tmp/x && python /r/bench.py --trace conv.csv"
    assert command_shell_line(argv, "/tmp/a b") == (
        "cd '/tmp/a b' && python /r/bench.py --trace conv.csv")
    for cwd in (None, "", 5, ["/tmp/x"]):  # absent, or hand-edited
        assert command_shell_line(argv, cwd) == "python /r/bench.py --trace conv.csv"
    assert command_shell_line(["bench.py", "--list"]) == "python bench.py --list"
