"""Each arm's figure beside a cached/send ratio is the statistic whose quotient is that
ratio: the geometric mean over the pairs, in the comparison block, the pair table, the
throughput figure and the side-by-side table alike (``stats.geomean_interval``,
``stats.arm_cell``, ``tables.arm_heads``)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd

from ipc_bench.analysis import stats
from ipc_bench.report import tables
from ipc_bench.report.blocks import _side_by_side

SEND_TPS = [10_000.0, 12_000.0, 11_500.0]
CACHED_TPS = [12_000.0, 11_000.0, 12_500.0]


def _case(policy: str, rep: int, tps: float, build: float = 8100.0) -> dict:
    return dict(case_id=f"num_running=4/{policy}/msgpack#{rep}", scenario="decode-steady",
                workload="num_running=4", num_running=4, policy=policy, arm=policy,
                codec="msgpack", transport="ipc", model="null", repetition=rep,
                complete=True, num_steps=200, output_tokens_per_s=tps,
                sched_to_runner_payload_bytes_per_step=1530.0,
                runner_to_sched_payload_bytes_per_step=1424.0,
                build_ns_per_step=build, encode_ns_per_step=5400.0,
                decode_ns_per_step=16500.0, step_ns_mean=4e9 / tps,
                step_ns_median=4e9 / tps - 1000, sched_cpu_ns_per_step=2e9 / tps)


def _cases(build_cached=(3200.0, 3200.0, 3200.0)) -> list[dict]:
    return [c for rep in range(3)
            for c in (_case("send", rep, SEND_TPS[rep]),
                      _case("cached", rep, CACHED_TPS[rep], build_cached[rep]))]


def test_the_blocks_arm_columns_are_geometric_means_whose_quotient_is_the_ratio():
    """send 10,000, 12,000, 11,500 and cached 12,000, 11,000, 12,500 tok/s: medians
    11,500 and 12,000 (+4.3 %), geometric means 11,133 and 11,817, whose quotient is
    the printed per-pair geometric-mean ratio 1.061 (+6.1 %)."""
    (c,) = stats.compare_cases(_cases())
    _, header, rows, _ = tables.comparison_parts(c)
    assert header[2:5] == ["send (geometric mean) [IQR]", "cached (geometric mean) [IQR]",
                           "cached/send (per-pair geomean)"]
    row = next(r for r in rows if r[0] == "out tok/s")
    send = math.exp(sum(map(math.log, SEND_TPS)) / 3)
    cached = math.exp(sum(map(math.log, CACHED_TPS)) / 3)
    assert (round(send), round(cached)) == (11133, 11817)
    assert row[2:5] == ["11,133 [1,000]", "11,817 [750.0]", "1.061"]
    assert f"{cached / send:.3f}" == row[4]
    m = c["metrics"]["output_tokens_per_s"]
    assert math.isclose(m["treatment_geomean"] / m["baseline_geomean"], m["ratio_geomean"])
    assert (m["baseline_mean"], m["treatment_mean"]) == (11_166.666666666666, 11_833.333333333334)


def test_an_arm_with_a_zero_shows_its_arithmetic_mean_marked_and_said_once():
    """A 0 in either arm leaves the pair no ratio, so neither arm its geometric mean
    (as in the pair table, ``blocks.arm_values``): both show their arithmetic means."""
    (c,) = stats.compare_cases(_cases(build_cached=(0.0, 3000.0, 6000.0)))
    _, _, rows, under = tables.comparison_parts(c)
    row = next(r for r in rows if r[0] == "build")
    assert row[2:5] == ["8.10 † [0]", "3.00 † [3.00]", "-"]
    # cached's 0 drops send's geometric mean too: the note says a pair (was 'an arm')
    assert ("†: a pair with a value of 0 or less, so neither arm has a geometric mean: "
            "each shows its arithmetic mean") in under.splitlines()


def test_a_comparison_recorded_before_arithmetic_means_shows_its_medians_marked():
    """A summary written from 71e6bcf until 00671f0 records the arms' geometric means
    but not their arithmetic means: where a 0 leaves the pair no geometric mean, each
    arm shows its recorded median marked ``‡`` (was ``- [0]``), said under the block."""
    (c,) = stats.compare_cases(_cases(build_cached=(0.0, 3000.0, 6000.0)))
    old = dict(c, metrics={k: {f: v for f, v in m.items()
                               if f not in ("baseline_mean", "treatment_mean")}
                           for k, m in c["metrics"].items()})
    _, header, rows, under = tables.comparison_parts(old)
    assert header[2:4] == ["send (geometric mean) [IQR]", "cached (geometric mean) [IQR]"]
    assert next(r for r in rows if r[0] == "build")[2:4] == ["8.10 ‡ [0]", "3.00 ‡ [3.00]"]
    assert next(r for r in rows if r[0] == "out tok/s")[2:4] == ["11,133 [1,000]",
                                                                   "11,817 [750.0]"]
    assert under.splitlines()[1:] == [
        "‡: a pair with a value of 0 or less, so neither arm has a geometric mean, and no "
        "arithmetic mean recorded (a summary.json written before they were): each shows "
        "its median over the pairs"]


def test_a_comparison_recorded_before_geometric_means_keeps_its_medians():
    (c,) = stats.compare_cases(_cases())
    old = dict(c, metrics={k: {f: v for f, v in m.items()
                               if not f.startswith(("baseline_g", "baseline_mean",
                                                    "treatment_g", "treatment_mean"))}
                           for k, m in c["metrics"].items()})
    _, header, rows, _ = tables.comparison_parts(old)
    assert header[2:4] == ["send median over reps [IQR]", "cached median over reps [IQR]"]
    assert next(r for r in rows if r[0] == "out tok/s")[2:4] == ["11,500 [1,000]",
                                                                   "12,000 [750.0]"]


def test_geomean_interval_is_the_t_interval_of_the_logs():
    centre, low, high = stats.geomean_interval([10_000.0, 12_000.0, 11_500.0, None])
    logs = [math.log(x) for x in SEND_TPS]
    mean = sum(logs) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 2)
    half = 4.302652729911275 * sd / math.sqrt(3)  # t(2, 0.975)
    assert math.isclose(centre, math.exp(mean))
    assert math.isclose(low, math.exp(mean - half)) and math.isclose(high, math.exp(mean + half))
    assert stats.geomean_interval([7.0])[0] == 7.0 and math.isnan(stats.geomean_interval([7.0])[1])
    assert stats.geomean_interval([0.0, 4.0])[0] == 2.0  # a zero: the arithmetic mean


def test_the_side_by_side_table_gives_each_runs_geometric_mean():
    rows = [dict(workload="num_running=4", policy="send", codec="msgpack", run_id=r,
                 output_tokens_per_s=v)
            for r, vals in (("a", [100.0, 400.0]), ("b", [300.0, 300.0])) for v in vals]
    blocks = _side_by_side(SimpleNamespace(run_ids=["a", "b"], cases=pd.DataFrame(rows)),
                           "output_tokens_per_s")
    # Two repetitions each: the ratio's Welch interval of the logs (one degree of
    # freedom, b's two values alike) runs from 0.000224 to 10024, printed bounded.
    assert blocks[1][2] == [["num_running=4", "send", "msgpack", "200", "300",
                             "1.500 [<0.001, >1000] inconclusive"]]


def test_a_side_by_side_cell_without_a_geometric_mean_is_marked_and_said():
    """A run whose repetitions hold a 0 has no geometric mean: its cell is the
    arithmetic mean, marked ``†`` with a note (was unmarked under a caption that says
    geometric mean)."""
    rows = [dict(workload="num_running=4", policy="send", codec="msgpack", run_id=r,
                 build_ns_per_step=v)
            for r, vals in (("a", [0.0, 4000.0]), ("b", [3000.0, 3000.0])) for v in vals]
    blocks = _side_by_side(SimpleNamespace(run_ids=["a", "b"], cases=pd.DataFrame(rows)),
                           "build_ns_per_step")
    assert blocks[1][2] == [["num_running=4", "send", "msgpack", "2.0 †", "3.0", "1.500"]]
    assert blocks[2:] == [("p", "`†`: that run has a repetition with a value of 0 or less, "
                                "so no geometric mean: its arithmetic mean over "
                                "repetitions, which the ratio columns use for it, "
                                "with no interval (no logarithm of such a value).")]


def test_the_pair_tables_dagger_says_a_pair_leaves_neither_arm_a_geometric_mean():
    from ipc_bench.report.blocks import _arms_caption
    assert _arms_caption("t", True).endswith(
        "; `†`: a pair with a value of 0 or less, so neither arm has a geometric mean: "
        "each shows its arithmetic mean.")
