"""A pair finding whose per-step times are over fewer pairs than its tokens/s: a
``--repeat 3`` run whose last case lost its floor (its floor replay cut short) lost the
runner's per-step columns with it, so the encode, decode and build rows of the pair
table are over 2 pairs while tokens/s is over 3. Each time clause says how many
repetitions its figures are over (``over 2 of 3 repetitions``), never left beside the
tokens/s clause's ``over 3 repetitions`` alone."""

from __future__ import annotations

import json
import re
import shutil

import pandas as pd

from fault_helpers import one_runner_mark
from ipc_bench import cli
from ipc_bench.analysis.summary import r2s_wire_bytes_total
from ipc_bench.report import findings

BOTH = findings.BOTH_MESSAGES
ENC = findings.TIME_CLAUSE_WORDS["enc"]
#: The warning the harness writes for a case whose floor replay a SIGINT cut short
#: (``cli.execute._interrupted_after_steps``), after its 25th step.
FLOOR_CUT = ("interrupted by SIGINT while replaying the floor after step 24: the floor's "
             "figures (floor tok/s, x floor) are absent, and so are the runner's per-step "
             "columns (its report comes after the floor)")
#: What such a case's summary lacks (a real one's, ``None``): its floor's figures and
#: the runner's per-step columns, and what is summed from them.
LOST = ["build_ns_per_step", "decode_ns_per_step", "encode_ns_per_step",
        "floor_output_tokens_per_s", "floor_step_ns_mean", "floor_step_ns_median",
        "floor_step_ns_block_cv", "runner_breakdown_coverage", "runner_build_ns_per_step",
        "runner_decode_ns_per_step", "runner_encode_ns_per_step", "runner_forward_ns_median",
        "runner_forward_ns_per_step", "runner_gap_ns_mean", "runner_gap_ns_median",
        "runner_gap_ns_p99", "runner_gap_share", "runner_gap_share_median",
        "runner_gap_share_p99", "runner_gc_collections_per_step", "runner_idle_ns_per_step",
        "runner_prepare_ns_per_step", "runner_send_ns_per_step", "runner_step_ns_median",
        "runner_update_ns_per_step", "runner_writeback_ns_per_step",
        "s2r_build_encode_decode_ns_median", "step_to_floor_ratio"]


def test_a_time_clause_over_fewer_pairs_than_its_finding_says_how_many():
    row = dict(n=2, diff=850.0, ratio=0.796, ratio_low=0.519, ratio_high=1.22, method="t")
    assert findings._time_clause(row, *ENC, of=3) == (
        f"changes encode time per step of {BOTH} by -20.4 % [-48.1, +22.0] % over 2 of 3 "
        "repetitions (send - cached: +0.85 µs; inconclusive (interval beyond 1.1x either "
        "way))")
    saved = dict(row, ratio_low=0.7, ratio_high=0.9)
    assert findings._time_clause(saved, *ENC, of=3) == (
        f"saves 0.85 µs per step encoding {BOTH} (-20.4 % [-30.0, -10.0] % over 2 of 3 "
        "repetitions)")
    noise = dict(row, diff=-40.0, ratio=1.014, ratio_low=0.95, ratio_high=1.08)
    assert findings._time_clause(noise, *ENC, of=4) == (
        f"encodes {BOTH} within noise of send's time per step (+1.4 % [-5.0, +8.0] % over "
        "2 of 4 repetitions; send - cached: -0.04 µs)")
    # as many pairs as the finding's: no count, as before
    assert findings._time_clause(saved, *ENC, of=2) == findings._time_clause(saved, *ENC) \
        == f"saves 0.85 µs per step encoding {BOTH} (-20.4 % [-30.0, -10.0] %)"


def test_a_time_clause_with_no_interval_says_how_many_of_the_repetitions():
    one = dict(n=1, diff=850.0, ratio=0.796, ratio_low=None, ratio_high=None, method="t")
    assert findings._time_clause(one, *ENC, of=2) == (
        f"saves 0.85 µs per step encoding {BOTH} (one of 2 repetitions, no interval)")
    assert findings._time_clause(one, *ENC) == (
        f"saves 0.85 µs per step encoding {BOTH} (one repetition, no interval)")
    sign = dict(one, n=3, method="sign")
    assert findings._time_clause(sign, *ENC, of=4) == (
        f"saves 0.85 µs per step encoding {BOTH} (3 of 4 repetitions, no interval: a "
        "sign-test interval needs >= 6 pairs)")
    same = dict(one, diff=1.0)
    assert findings._time_clause(same, *ENC, of=3) == (
        f"encodes {BOTH} in the same time per step as send (0.00 µs difference; one of 3 "
        "repetitions, no interval)")


def test_the_finding_of_a_run_whose_last_case_lost_its_floor(
        tmp_path, shared_three_repetition_run):
    run = tmp_path / "run"
    shutil.copytree(shared_three_repetition_run, run)
    summary = json.loads((run / "summary.json").read_text())
    last = summary["cases"][-1]
    assert last["repetition"] == 2
    for k in LOST:
        last.pop(k, None)
    last["warnings"] = list(last["warnings"]) + [FLOOR_CUT]
    # its replies' wire bytes without the floor's replays of them, as the harness writes
    steps = pd.read_csv(run / "steps.csv")
    payload = steps.loc[steps["case_id"] == last["case_id"], "r2s_payload_bytes"]
    last["r2s_wire_bytes_total"] = r2s_wire_bytes_total(payload.to_numpy(), None)
    summary["status"] = "incomplete"  # it compared nothing: the report compares
    summary.pop("comparisons", None)
    (run / "summary.json").write_text(json.dumps(summary))
    out = tmp_path / "rep"
    assert cli.main(["report", str(run), "--output", str(out), "--no-figures"]) == 0
    md = (out / "report.md").read_text().splitlines()
    M = one_runner_mark()  # ° after msgpack on exactly 2 cores (timing rows)
    rows = {cells[2]: cells[3] for cells in (ln.split(" | ") for ln in md
                                             if ln.startswith((f"| num_running=4 | msgpack{M} | ",
                                                               "| num_running=4 | msgpack | ")))}
    assert (rows["output tokens/s"], rows["encode µs/step"], rows["decode µs/step"],
            rows["build µs/step"]) == ("3", "2", "2", "2")
    (bullet,) = [ln for ln in md if ln.startswith(f"- At 4 running requests (msgpack{M}), cached")]
    assert bullet.count(" over 2 of 3 repetitions") == 3
    for what in ("encode time per step of", "decode time per step", "build time per step",
                 "encoding", "decoding", "building"):
        for m in re.finditer(rf"{what}[^;]*? \[[^]]+\] %", bullet):
            assert bullet[m.end():].startswith(" over 2 of 3 repetitions"), bullet
    assert "output tokens/s changes by " in bullet and " % (over 3 repetitions, " in bullet
