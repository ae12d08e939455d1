"""A run's end measures its replay arms' noise (``replay_noise.run_noisy_arm_warnings``)
from its summaries, ``steps.csv`` and ``floor.csv`` read with the csv module: the same
lines as the report's (``noisy_arm_warnings`` of the folder read with pandas), and a
logical-clock replay of two repetitions, which the run's end measures, imports neither
pandas nor matplotlib in any of its processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ipc_bench.analysis.replay_noise import noisy_arm_warnings, run_noisy_arm_warnings
from ipc_bench.analysis.results import Results

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO.parent / "shared" / "traces" / "AzureLLMInferenceTrace_conv.csv"
WORKLOAD = "trace=azure-conv:30"
SEND = [f"{WORKLOAD}/send/msgpack#{r}" for r in range(3)]
CACHED = [f"{WORKLOAD}/cached/msgpack#{r}" for r in range(3)]
#: per case: its counted step times (ns, 150 steps: 3 blocks) and floor step times
STEP_NS = {SEND[0]: 1000, SEND[1]: 1100, SEND[2]: 2000,  # the third stands out
           CACHED[0]: 1000, CACHED[1]: 1010, CACHED[2]: 9000}  # CACHED[2]: not finished
FLOOR_NS = {SEND[0]: 500, SEND[1]: 800, SEND[2]: 500}


def _cases() -> list[dict]:
    return [dict(case_id=c, trace="azure-conv:30", workload=WORKLOAD, arm=c.split("/")[1],
                 codec="msgpack", transport="ipc", model="null", repetition=int(c[-1]),
                 num_steps=155, schedule_digest="abc", no_floor=False,
                 step_ns_block_cv=0.25, complete=c != CACHED[2]) for c in SEND + CACHED]


def _steps() -> list[dict]:
    """5 warm-up steps of 1 ms (not counted), then 150 counted ones."""
    return [dict(case_id=c, seq=k, counted=int(k >= 5),
                 step_ns=1_000_000 if k < 5 else ns + (k % 2))
            for c, ns in STEP_NS.items() for k in range(155)]


def _floor() -> list[dict]:
    return [dict(case_id=c, i=k, floor_step_ns=ns) for c, ns in FLOOR_NS.items()
            for k in range(150)]


def _folder(tmp_path: Path) -> Path:
    for name, rows in (("steps.csv", _steps()), ("floor.csv", _floor())):
        pd.DataFrame(rows).to_csv(tmp_path / name, index=False)
    return tmp_path


def _loaded() -> Results:
    """The folder's tables as ``results.load`` gives them, run ``r``."""
    def frame(rows):
        return pd.DataFrame([dict(run_id="r", **row) for row in rows])

    empty = pd.DataFrame(columns=["run_id", "case_id"])
    return Results(cases=frame(_cases()), steps=frame(_steps()), requests=empty,
                   floor=frame(_floor()), itl=empty, metadata={"r": {}},
                   status={"r": "complete"}, problems={"r": []}, paths={})


def _step_line(median: str, standout: str = "") -> str:
    return (f"across the 3 repetitions of its arm, its 50-step block means vary by a "
            f"median {median} % (`step_ns_rep_block_cv`, > 10 %): the machine may be "
            f"noisy" + (f"; this repetition stands out: its blocks sit a median "
                        f"{standout} % from the others'" if standout else ""))


FLOOR_LINE = ("across the 3 repetitions of its arm, its 50-step mean floor step times vary "
              "by a median 28.9 % (`floor_step_ns_rep_block_cv`, > 10 %): the machine may "
              "be noisy, and the floor tok/s and x floor with it")
WANT = {SEND[0]: [_step_line("40.3"), FLOOR_LINE],
        SEND[1]: [_step_line("40.3"), FLOOR_LINE],
        SEND[2]: [_step_line("40.3", "90.4"), FLOOR_LINE]}


def test_the_run_end_gives_the_reports_lines_from_its_csv_files(tmp_path):
    """The send arm's three repetitions, the third twice as slow, and its floor are
    over 10 %; the cached arm's two finished ones are not (its unfinished third,
    9 us a step, is left out), and neither are the warm-up steps of 1 ms."""
    assert run_noisy_arm_warnings(_cases(), _folder(tmp_path)) == WANT
    assert noisy_arm_warnings(_loaded()) == WANT


SITE = '''import atexit, os, sys
def _heavy():
    bad = [m for m in ("pandas", "matplotlib") if m in sys.modules]
    measured = "ipc_bench.analysis.replay_noise" in sys.modules
    with open(os.environ["HEAVY_LOG"], "a") as f:
        f.write(f"{os.path.basename(sys.argv[0])} {bad} {measured}\\n")
atexit.register(_heavy)
'''


@pytest.mark.skipif(not TRACE.is_file(), reason="no Azure conv trace beside the checkout")
def test_a_logical_clock_replay_of_two_repetitions_imports_no_pandas(tmp_path):
    """Every Python process of the run says at its exit which of pandas and matplotlib
    it holds (none), and whether it measured the replay's noise (the scheduler's,
    ``bench.py``, did)."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SITE)
    log = tmp_path / "heavy.log"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "site"),
           "HEAVY_LOG": str(log)}
    proc = subprocess.run(
        [sys.executable, "bench.py", "--scenario", "azure-conv", "--trace", str(TRACE),
         "--max-requests", "10", "--repeat", "2", "--model", "null", "--codecs",
         "msgpack", "--policies", "send", "--no-single-process", "--no-floor",
         "--quiet", "--output", str(tmp_path / "run")],
        cwd=REPO, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = log.read_text().splitlines()
    assert sorted(set(lines)) == ["__main__.py [] False", "bench.py [] True"]
    assert lines[-1] == "bench.py [] True"  # the run's own process ends last
