"""A run's end reads its steps.csv and floor.csv back (``replay_noise.run_noisy_arm_warnings``,
with the csv module) only where two replay cases of one arm ran one schedule: a
``--frontend`` timed replay, whose arms follow the wall clock, imports neither pandas
nor matplotlib in any of its processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ipc_bench.analysis import replay_noise
from ipc_bench.cli.execute import _one_schedule_twice, replay_arm_warnings

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO.parent / "shared" / "traces" / "AzureLLMInferenceTrace_conv.csv"
SEND, CACHED = (dict(case_id=f"trace=azure-conv-timed:20/{arm}/msgpack#0",
                     trace="azure-conv-timed:20", workload="trace=azure-conv-timed:20",
                     arm=arm, codec="msgpack", schedule_digest=digest)
                for arm, digest in (("send", "29033e3a"), ("cached", "617784c7")))


def test_arms_of_different_schedules_are_not_read_back(monkeypatch, tmp_path):
    read = []
    monkeypatch.setattr(replay_noise, "run_noisy_arm_warnings",
                        lambda cases, run_dir: read.append(run_dir) or {})
    assert replay_arm_warnings([SEND, CACHED], tmp_path) == {}
    assert read == []
    # one arm's two repetitions of one schedule are read back
    again = dict(SEND, case_id="trace=azure-conv-timed:20/send/msgpack#1")
    assert replay_arm_warnings([SEND, again], tmp_path) == {}
    assert read == [tmp_path]


def test_one_schedule_twice():
    again = dict(SEND, case_id="trace=azure-conv-timed:20/send/msgpack#1")
    assert [_one_schedule_twice(c) for c in (
        [SEND, CACHED],                                    # two arms, one case each
        [SEND, dict(CACHED, schedule_digest="29033e3a")],  # one schedule, two arms
        [SEND, again],                                     # one arm's repetitions
        [SEND, dict(again, schedule_digest="0badc0de")],   # the wall clock's
        [SEND, dict(again, schedule_digest=None)],         # a run without digests
        [SEND, dict(again, trace=None)],                   # not a replay
        [SEND, dict(again, arm=None, policy="send")],      # a run before arms
    )] == [False, False, True, False, False, False, True]


SITE = '''import atexit, os, sys
def _heavy():
    bad = [m for m in ("pandas", "matplotlib") if m in sys.modules]
    with open(os.environ["HEAVY_LOG"], "a") as f:
        f.write(f"{os.path.basename(sys.argv[0])} {bad}\\n")
atexit.register(_heavy)
'''


@pytest.mark.skipif(not TRACE.is_file(), reason="no Azure conv trace beside the checkout")
def test_a_frontend_timed_replay_imports_neither_pandas_nor_matplotlib(tmp_path):
    """Every Python process of the run (bench.py, the runner's, the frontend's) says at
    its exit which of pandas and matplotlib it holds: none."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SITE)
    log = tmp_path / "heavy.log"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "site"),
           "HEAVY_LOG": str(log)}
    proc = subprocess.run(
        [sys.executable, "bench.py", "--scenario", "azure-conv-timed", "--frontend",
         "--model", "fixed-step", "--step-time-ms", "5", "--trace", str(TRACE),
         "--max-requests", "20", "--trace-speedup", "50", "--codecs", "msgpack",
         "--no-floor", "--quiet", "--output", str(tmp_path / "run")],
        cwd=REPO, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = log.read_text().splitlines()
    assert sorted(set(lines)) == ["__main__.py []", "bench.py []", "frontend_loop.py []"]
    assert lines[-1] == "bench.py []"  # the run's own process ends last
