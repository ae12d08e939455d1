"""The runner collects and freezes its heap in the last warm-up step, not in the first
counted one (``runner_loop.heap_freeze_seq``)."""
import os

import pandas as pd

from fault_helpers import bench
from ipc_bench.harness.runner_loop import heap_freeze_seq

#: A runner process's ``gc.freeze`` takes 0.6 s longer (the scheduler's, in bench.py, does
#: not): a pause far above any step of the null model at 4 running.
SLOW_RUNNER_FREEZE = """
import gc, sys, time
_freeze = gc.freeze

def freeze():
    if sys.argv and sys.argv[0].replace("\\\\", "/").endswith("ipc_bench/harness/__main__.py"):
        time.sleep(0.6)
    _freeze()

gc.freeze = freeze
"""


def test_the_freeze_step_is_the_last_warmup_step():
    assert [heap_freeze_seq(w) for w in (0, 1, 2, 100)] == [0, 0, 1, 99]


def test_a_slow_runner_freeze_lands_in_the_last_warmup_step(tmp_path, bench_tmpdir):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SLOW_RUNNER_FREEZE)
    env = dict(os.environ, TMPDIR=str(bench_tmpdir),
               PYTHONPATH=f"{tmp_path / 'site'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = bench(["--scenario", "decode-steady", "--num-running", "4", "--steps", "30",
                  "--warmup-steps", "5", "--policies", "send", "--codecs", "msgpack",
                  "--no-single-process", "--no-floor", "--output", str(tmp_path / "run")],
                 env=env)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    steps = pd.read_csv(tmp_path / "run" / "steps.csv").set_index("seq")
    assert steps.loc[4, "warmup"] == 1 and steps.loc[5, "warmup"] == 0
    assert steps.loc[4, "step_ns"] >= 600_000_000  # the runner's pause: step 4, warm-up
    # every counted step is far shorter than the pause (it was in step 5, counted)
    assert steps.loc[steps["counted"] == 1, "step_ns"].max() < 300_000_000
    assert steps.loc[5, "counted"] == 1
