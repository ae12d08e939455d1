"""codec_fit's ``--output`` folder, made for its runs where missing, is removed again
when nothing was written to it (the run interrupted before ``bench.py`` wrote its
folder, which the run then removes, or a run that failed so); the interrupt's one line
says so. A folder that was there is left as it was. In this process, ``run`` stubbed
(``bench.py`` interrupted that early may not have installed its handlers yet); the
signal is this process's own, its handlers put back after each test."""

from __future__ import annotations

import os
import signal
import time

import pytest

from ipc_bench.harness import signals
from script_module import load_script

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@pytest.fixture(autouse=True)
def _handlers_back():
    """``signals.restore`` leaves the signals ignored after one arrived."""
    old = {s: signal.getsignal(s) for s in signals.HANDLED}  # all, put back
    yield
    for s, h in old.items():
        signal.signal(s, h)


def _interrupted_run(signum: int):
    """``codec_fit.run`` as a ``bench.py`` run interrupted before it wrote anything
    ends: its folder removed (empty), then the signal."""
    def run(sizes, steps, repeat, out, pairs=None):
        out.rmdir()
        os.kill(os.getpid(), signum)
        time.sleep(30)  # the handler raises at once
        raise AssertionError("the signal never came")
    return run


@pytest.mark.parametrize("signum, code, name", [(signal.SIGINT, 130, "SIGINT"),
                                                (signal.SIGTERM, 143, "SIGTERM")])
def test_codec_fit_interrupted_removes_the_output_folder_it_made(
        tmp_path, monkeypatch, capsys, signum, code, name):
    codec_fit = load_script("codec_fit")
    monkeypatch.setattr(codec_fit, "run", _interrupted_run(signum))
    runs = tmp_path / "runs"
    assert codec_fit.main(["--output", str(runs), "--steps", "7", "--repeat", "1"]) == code
    assert capsys.readouterr() == ("", f"codec_fit.py: interrupted by {name}; "
                                   f"the --output folder {runs} made here is removed: "
                                   f"nothing was written to it (exit {code})\n")
    assert list(tmp_path.iterdir()) == []


def test_codec_fit_interrupted_leaves_an_output_folder_that_was_there(
        tmp_path, monkeypatch, capsys):
    codec_fit = load_script("codec_fit")
    monkeypatch.setattr(codec_fit, "run", _interrupted_run(signal.SIGINT))
    runs = tmp_path / "runs"
    runs.mkdir()
    assert codec_fit.main(["--output", str(runs), "--steps", "7", "--repeat", "1"]) == 130
    assert capsys.readouterr() == ("", "codec_fit.py: interrupted by SIGINT (exit 130)\n")
    assert list(tmp_path.iterdir()) == [runs] and list(runs.iterdir()) == []


def test_codec_fit_removes_the_output_folder_it_made_for_a_run_that_failed(
        tmp_path, monkeypatch):
    codec_fit = load_script("codec_fit")

    def run(sizes, steps, repeat, out, pairs=None):
        out.rmdir()
        raise SystemExit("codec_fit.py: error: run failed (exit 1): bench.py ...")

    monkeypatch.setattr(codec_fit, "run", run)
    with pytest.raises(SystemExit, match=r"^codec_fit.py: error: run failed \(exit 1\): "):
        codec_fit.main(["--output", str(tmp_path / "runs"), "--steps", "7", "--repeat", "1"])
    assert list(tmp_path.iterdir()) == []
