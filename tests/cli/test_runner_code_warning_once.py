"""The warning of a runner started by hand that ran other code than the scheduler
(``execute._code_warnings``), the same under every case that runner serves, is printed
in full under the first case only; later cases say it in short on an ``as above`` line,
which the run's count line counts, and summary.json keeps it whole under every case."""

from __future__ import annotations

import json
import os

from ipc_bench import cli
from ipc_bench.cli import execute
from ipc_bench.cli.execute import _Run

THEIRS = "ecfd2610000000000000000000000000000000ff (dirty)"
MINE = "c4419ea000000000000000000000000000000000"
FULL = (f"its runner, started by hand, ran {THEIRS}; this scheduler {MINE}: the runner's "
        "timings and model are of that code, the run's metadata of this one's (start it "
        "from the same checkout to compare like with like)")
SHORT = f"  warning: as above: its runner, started by hand, ran {THEIRS}, not this scheduler's code"


def test_the_warning_is_said_in_full_once_then_in_short(tmp_path, capsys):
    run = _Run(run_dir=tmp_path, writer=None, quiet=False, num_cases=3, progress_bar=False)
    for i in range(3):
        run._log_warnings({"case_id": f"c{i}", "warnings": [f"own {i}", FULL]})
    assert capsys.readouterr().err.splitlines() == [
        "  warning: own 0", f"  warning: {FULL}",
        "  warning: own 1", SHORT,
        "  warning: own 2", SHORT]
    assert run.in_short == 2
    # another runner's code later in the run: in full, as the first of its own
    other = FULL.replace(THEIRS, "0123")
    run._log_warnings({"case_id": "c3", "warnings": [other]})
    assert capsys.readouterr().err.splitlines() == [f"  warning: {other}"]


def test_a_run_says_it_once_and_keeps_it_whole_in_its_summary(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # no load note
    monkeypatch.setattr(execute, "noise_warnings", lambda summary, usage=None: [])
    monkeypatch.setattr(execute, "floor_pair_notes", lambda cases: [])
    monkeypatch.setattr(execute, "_code_warnings", lambda summary, metadata: [FULL])
    out = tmp_path / "run"
    assert cli.main(["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
                     "--warmup-steps", "2", "--policies", "send,cached", "--codecs",
                     "msgpack", "--no-single-process", "--no-floor",
                     "--output", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    first = err.index(next(x for x in err if x.startswith("[1/2] ")))
    second = err.index(next(x for x in err if x.startswith("[2/2] ")))
    assert err[first + 1:second] == [f"  warning: {FULL}"]
    assert err[second + 1] == SHORT
    assert err[-1].startswith(
        "2 measurement warnings in 2 of 2 cases (printed under their case lines above; "
        '1 of them in short, on "as above" lines): ')
    cases = json.loads((out / "summary.json").read_text())["cases"]
    assert [c["warnings"] for c in cases] == [[FULL], [FULL]]
