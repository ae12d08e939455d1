"""A ``bench.py`` run of codec_fit's that a signal killed is said so, as
oracle_cost.py says it (``bench.py was killed by SIGKILL``), not as a raw negative
return code; a failed run's folder that is kept is named with what it holds, as an
interrupt's line names it (``kept: ...``). ``signals.call`` stubbed: no ``bench.py``
runs."""

from __future__ import annotations

import json
import sys

import pytest

from script_module import load_script


def _killed(code: int, write: bool):
    """``signals.call`` as a ``bench.py`` run killed with ``returncode`` ``code`` ends,
    having written (``write``) a summary of 2 complete cases of 10, or nothing."""
    def call(cmd, **kwargs):
        out = cmd[cmd.index("--output") + 1]
        if write:
            cases = [dict(case_id=f"c{i}", complete=True) for i in range(2)]
            with open(f"{out}/summary.json", "w") as f:
                json.dump(dict(format_version=1, status="incomplete", cases=cases), f)
        return code
    return call


def test_a_killed_run_with_its_folder_kept(tmp_path, monkeypatch):
    codec_fit = load_script("codec_fit")
    monkeypatch.setattr(codec_fit.signals, "call", _killed(-9, True))
    runs = tmp_path / "runs"
    with pytest.raises(SystemExit) as exc:
        codec_fit.main(["--output", str(runs), "--steps", "7", "--repeat", "1"])
    (fit,) = runs.iterdir()
    cmd = " ".join([sys.executable, str(codec_fit.ROOT / "bench.py"), "--scenario",
                    "decode-steady", "--num-running", "16,64,128,256,512", "--steps", "7",
                    "--repeat", "1", "--no-floor", "--no-single-process", "--quiet",
                    "--output", str(fit)])
    assert exc.value.code == (
        f"codec_fit.py: error: run failed (bench.py was killed by SIGKILL): {cmd}; "
        f"kept: the fit run {fit} is incomplete (2 cases complete)")


def test_a_killed_run_that_wrote_nothing(tmp_path, monkeypatch):
    codec_fit = load_script("codec_fit")
    monkeypatch.setattr(codec_fit.signals, "call", _killed(-15, False))
    out = tmp_path / "fit"
    out.mkdir()
    with pytest.raises(SystemExit) as exc:
        codec_fit.run("16", 1, 1, out)
    cmd = " ".join([sys.executable, str(codec_fit.ROOT / "bench.py"), "--scenario",
                    "decode-steady", "--num-running", "16", "--steps", "1", "--repeat",
                    "1", "--no-floor", "--no-single-process", "--quiet", "--output",
                    str(out)])
    assert exc.value.code == (
        f"codec_fit.py: error: run failed (bench.py was killed by SIGTERM): {cmd}")
    assert not out.exists()
