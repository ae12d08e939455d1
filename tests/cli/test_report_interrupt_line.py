"""``bench.py report`` interrupted: its one line says the earlier report in the output
folder is untouched where there is one (the report is written all or nothing), says
nothing of one where there is none, and says the report was written where the signal
came while it was being written (finished first, then the signal)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ipc_bench import cli
from ipc_bench.report import document
from microbench_runs import finished_run

REPO = Path(__file__).resolve().parents[2]
TINY = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20", "--warmup-steps",
        "2", "--policies", "send,cached", "--codecs", "msgpack", "--no-single-process",
        "--no-floor", "--quiet"]


def _make_run(folder: Path) -> Path:
    proc = subprocess.run([sys.executable, "bench.py", *TINY, "--output", str(folder)],
                          cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return folder


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished two-case run folder (send and cached, msgpack): a copy of the
    session's run of ``TINY`` (``finished_run``), the module's own."""
    return finished_run(tmp_path_factory, "repint", TINY)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _signal_in(monkeypatch, where: str, signum: int) -> None:
    """Send ``signum`` to this process when ``where`` (``render_html``, before anything
    is written; ``copyfile``, while the report's files are written) is called."""
    target = document.shutil if where == "copyfile" else document
    real = getattr(shutil if where == "copyfile" else document, where)

    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signum)
        return real(*args, **kwargs)

    monkeypatch.setattr(target, where, interrupted)


def _earlier(run: Path, out: Path) -> dict[str, bytes]:
    assert cli.main(["report", str(run), "--output", str(out), "--no-figures"]) == 0
    return _files(out)


@pytest.mark.parametrize("sig, given_output", [("SIGINT", True), ("SIGTERM", False),
                                               ("SIGHUP", True)])
def test_an_earlier_report_is_said_untouched_and_is(run, tmp_path, monkeypatch, capsys,
                                                    handlers_restored, sig, given_output):
    out = tmp_path / "rep" if given_output else run / "report"
    earlier = _earlier(run, out)
    capsys.readouterr()
    signum = getattr(signal, sig)
    _signal_in(monkeypatch, "render_html", signum)
    args = ["report", str(run), "--no-figures"] + (["--output", str(out)] if given_output
                                                   else [])
    code = cli.main(args)
    assert (code, capsys.readouterr()) == (128 + signum, (
        "", f"bench.py report: interrupted by {sig}; the earlier "
            f"report in {out} is untouched (exit {128 + signum})\n"))
    assert _files(out) == earlier
    # no temporary folder left beside it (.rep.tmp-*, .rep.old-*)
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")] == []
    if not given_output:
        shutil.rmtree(out)


def test_no_earlier_report_nothing_is_said_of_one(run, tmp_path, monkeypatch, capsys,
                                                  handlers_restored):
    out = tmp_path / "rep"
    _signal_in(monkeypatch, "render_html", signal.SIGINT)
    code = cli.main(["report", str(run), "--output", str(out), "--no-figures"])
    assert (code, capsys.readouterr()) == (
        130, ("", "bench.py report: interrupted by SIGINT (exit 130)\n"))
    assert not out.exists()


@pytest.mark.parametrize("several", [False, True])
def test_an_empty_output_folder_or_several_runs_have_no_earlier_report(
        run, tmp_path, monkeypatch, capsys, handlers_restored, several):
    """An empty --output folder holds no report; several runs without --output get a
    report-<time> folder of their own."""
    out = tmp_path / "empty"
    out.mkdir()
    args = [str(_make_run(tmp_path / "other"))] if several else ["--output", str(out)]
    _signal_in(monkeypatch, "render_html", signal.SIGTERM)
    assert cli.main(["report", str(run), *args, "--no-figures"]) == 143
    assert capsys.readouterr().err == "bench.py report: interrupted by SIGTERM (exit 143)\n"
    assert list(out.iterdir()) == []
    assert [p.name for p in run.parent.iterdir() if p.name.startswith("report-")] == []


@pytest.mark.parametrize("earlier", [False, True])
def test_a_signal_while_the_report_is_written_says_it_was_written(
        run, tmp_path, monkeypatch, capsys, handlers_restored, earlier):
    """The files are written whole, then the signal ends the command: the earlier
    report was replaced, so the line says the new one is in place, not that the
    earlier one is untouched."""
    out = tmp_path / "rep"
    before = _earlier(run, out) if earlier else None
    capsys.readouterr()
    _signal_in(monkeypatch, "copyfile", signal.SIGINT)
    code = cli.main(["report", str(run), "--output", str(out), "--no-figures"])
    assert (code, capsys.readouterr()) == (130, (
        "", f"bench.py report: interrupted by SIGINT; the report was written "
            f"before it stopped: {out}/report.html (exit 130)\n"))
    assert "</html>" in (out / "report.html").read_text()
    if earlier:
        assert sorted(_files(out)) == sorted(before)


@pytest.mark.parametrize("earlier", [False, True])
def test_a_signal_before_the_report_starts_says_the_same(run, tmp_path, monkeypatch, capsys,
                                                         handlers_restored, earlier):
    """A signal that arrived while bench.py loaded the command (let through once it is
    loaded, before the report starts): bench.py's own line, with the same note."""
    from ipc_bench.harness import signals

    out = tmp_path / "rep"
    before = _earlier(run, out) if earlier else None
    capsys.readouterr()
    unblock = signals.unblock
    started = []

    def pending_then_unblock():
        os.kill(os.getpid(), signal.SIGTERM)
        unblock()

    monkeypatch.setattr(signals, "unblock", pending_then_unblock)
    monkeypatch.setattr(document, "write_report", lambda *a, **k: started.append(1))
    code = cli.main(["report", str(run), "--output", str(out), "--no-figures"])
    note = f"; the earlier report in {out} is untouched" if earlier else ""
    assert (code, capsys.readouterr(), started) == (
        143, ("", f"bench.py report: interrupted by SIGTERM{note} (exit 143)\n"), [])
    if earlier:
        assert _files(out) == before
    else:
        assert not out.exists()


@pytest.mark.parametrize("argv", [["report", "--no-such-option"], ["report", "x", "--help"]])
def test_a_signal_before_the_start_with_options_that_do_not_parse_has_no_note(
        monkeypatch, capsys, handlers_restored, argv):
    """(One in-process interrupt per test: after a signal, bench.py ignores the next.)"""
    from ipc_bench.harness import signals

    unblock = signals.unblock

    def pending_then_unblock():
        os.kill(os.getpid(), signal.SIGINT)
        unblock()

    monkeypatch.setattr(signals, "unblock", pending_then_unblock)
    assert cli.main(argv) == 130
    assert capsys.readouterr() == ("", "bench.py report: interrupted by SIGINT (exit 130)\n")
