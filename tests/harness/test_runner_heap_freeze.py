"""The runner collects and freezes its heap in the scheduler's end-of-warm-up pause
(``EndWarmup``), between two steps, not in a step."""
import json
import os

import pandas as pd

from fault_helpers import bench

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


def test_a_slow_runner_freeze_lands_in_no_step(tmp_path, bench_tmpdir):
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
    steps = pd.read_csv(tmp_path / "run" / "steps.csv")
    # It was in step 5 (the first counted), then in step 4 (the last warm-up step).
    assert steps["step_ns"].max() < 300_000_000
    assert steps.loc[steps["seq"] == 5, "counted"].tolist() == [1]
    (case,) = json.loads((tmp_path / "run" / "summary.json").read_text())["cases"]
    assert case["runner_warmup_collect_s"] >= 0.6  # recorded, inside the pause
    assert case["warmup_pause_s"] >= case["runner_warmup_collect_s"]
