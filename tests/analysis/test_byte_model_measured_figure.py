"""The byte model's measured send - cached bytes per request is a difference of two
means: its float noise (393.45 - 373.54 = 19.909999999999968) printed 4.977 beside the
model's 4.978 for one exact 4.9775 B, which read as a mismatch where there was none.
Rounded to 1e-9 B, equal quantities print equal."""

from __future__ import annotations

import json

from analysis_run import bench_in_process


def test_a_run_whose_measured_figure_is_the_models_prints_them_alike(tmp_path):
    out = tmp_path / "run"
    done = bench_in_process(
        ["--scenario", "decode-steady", "--num-running", "4", "--steps", "200",
         "--warmup-steps", "20", "--policies", "send,cached", "--codecs", "msgpack",
         "--no-single-process", "--output", out])
    assert done.returncode == 0, done.stderr
    (row,) = [r for r in json.loads((out / "summary.json").read_text())["byte_model"]
              if r["policy"] == "send"]
    assert row["model_send_minus_cached_bytes_per_request"] == 4.9775
    assert row["measured_send_minus_cached_bytes_per_request"] == 4.9775
    assert ("send - cached = 4.978 B per running request on these steps" in done.stdout
            and "measured over the run: 4.978)" in done.stdout)

