"""An ``--output`` folder that is not empty is refused naming what it holds, hidden
files included (``ls`` shows none), as ``bench.py report`` names them; a run's claim
alone says whether a run still holds it."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

from ipc_bench import cli
from ipc_bench.harness.run_folder import CLAIM_FILE, run_in_progress

REPO = Path(__file__).resolve().parents[2]
DS = ["--scenario", "decode-steady"]


def _refusal(run: Path, capsys) -> list[str]:
    code = cli.main(DS + ["--output", str(run)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    return err.splitlines()


def test_a_folder_of_hidden_files_is_refused_naming_them(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / ".DS_Store").write_bytes(b"")
    assert _refusal(run, capsys) == [
        f"bench.py: error: output folder {run} exists and is not empty (it holds "
        ".DS_Store); give --output a new or empty folder"]
    for name in ("b.txt", "a.txt", ".x", "new\nline"):
        (run / name).write_bytes(b"")
    assert _refusal(run, capsys) == [
        f"bench.py: error: output folder {run} exists and is not empty (it holds "
        ".DS_Store, .x, a.txt, ...); give --output a new or empty folder"]
    assert sorted(p.name for p in run.iterdir()) == [".DS_Store", ".x", "a.txt", "b.txt",
                                                       "new\nline"]  # nothing removed


def test_the_names_are_the_reports_words(tmp_path):
    """One function lists them for the run and for the report."""
    from ipc_bench.errors import folder_names_text

    assert folder_names_text(["notes.txt", "holiday.png"]) == "holiday.png, notes.txt"
    assert folder_names_text(["d", "c", "b", "a"]) == "a, b, c, ..."
    assert folder_names_text(["bad\nname"]) == "bad\\nname"
    from ipc_bench.analysis.run_files import ResultsError
    from ipc_bench.report.document import check_output

    out = tmp_path / "out"
    out.mkdir()
    (out / ".claimed").write_bytes(b"")
    try:
        check_output(out)
    except ResultsError as exc:
        said = str(exc)
    assert said == (f"output folder {out} holds files that are not a report's (.claimed); "
                    "give --output a new folder or an earlier report's")


def test_a_claim_left_by_a_run_that_ended_says_so_and_removes_nothing(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / CLAIM_FILE).write_bytes(b"")
    assert _refusal(run, capsys) == [
        f"bench.py: error: output folder {run} exists and is not empty (it holds "
        ".claimed): the claim of a run that ended before writing anything (killed or "
        "crashed; no process holds it now); remove the folder, or give another --output"]
    assert [p.name for p in run.iterdir()] == [CLAIM_FILE]


def test_a_claim_a_run_still_holds_is_never_called_stale(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    with open(run / CLAIM_FILE, "wb") as claim:
        fcntl.flock(claim, fcntl.LOCK_EX)
        assert _refusal(run, capsys) == [
            f"bench.py: error: output folder {run} exists and is not empty: it holds a "
            "run still going (.claimed); give another --output"]


def test_a_run_holds_its_claim_from_the_moment_it_makes_it(tmp_path):
    """The claim is locked as it is made (no moment where it exists unlocked while its
    run goes on), and let go once the run has ended."""
    from ipc_bench.harness.run_folder import create_claim, release_claim

    create_claim(tmp_path)
    try:
        assert run_in_progress(tmp_path)
    finally:
        release_claim(tmp_path)
    assert not run_in_progress(tmp_path)
    # a real run: its claim is held while it runs (the run of a folder given again)
    run = tmp_path / "run"
    script = (f"import sys, time; sys.argv = ['bench.py'] + {DS!r} + ['--num-running', '1', "
              f"'--steps', '20', '--policies', 'send', '--codecs', 'msgpack', "
              f"'--no-single-process', '--quiet', '--output', {str(run)!r}]\n"
              "from ipc_bench.cli import execute\n"
              "from ipc_bench.harness import run_folder\n"
              "made = execute.claim_run_dir\n"
              "def seen(args):\n"
              "    got = made(args)\n"
              "    print('held' if run_folder.run_in_progress(got[0]) else 'free', flush=True)\n"
              "    return got\n"
              "execute.claim_run_dir = seen\n"
              "from ipc_bench import cli\n"
              "sys.exit(cli.main(sys.argv[1:]))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, COLUMNS="200"))
    assert (done.returncode, done.stdout.splitlines()[0]) == (0, "held"), done.stderr
    assert not run_in_progress(run)
