"""A signed difference between send and cached is worded by its direction, its size
unsigned: ``3.24 µs per step less than cached's``, never ``-3.24 µs ... more``; cached's
extra encode or build time reads as ``spends 2.51 µs more ... than send``, not as a
total."""

from __future__ import annotations

import pandas as pd

from ipc_bench.report import findings
from test_metrics import _summary


def _cases(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([dict(r, run_id="run") for r in rows])


def _where(workload: str) -> str:
    return "At 4 running requests"


def test_a_negative_share_difference_reads_less_than_cached():
    rows = []
    for policy, step, s2r in (("send", 246_000.0, 9_000.0), ("cached", 249_700.0, 12_240.0)):
        s = _summary(policy, 0, 50_000.0, step + 1000)  # step_ns_median = step
        s["s2r_build_encode_decode_ns_median"] = s2r
        rows.append(s)
    assert findings._share_findings(_cases(rows), _where, ["num_running"]) == [
        "At 4 running requests (msgpack), send's SchedulerOutput path (build + encode + "
        "decode, medians) costs 3.24 µs per step less than cached's, 1.30 % of cached's "
        "249.7 µs median step; send's whole median step, 246.0 µs, is 1.48 % shorter "
        "than cached's (noisier; one repetition, no interval)."]


def test_a_negative_step_time_share_line_reads_less_than_cached():
    from ipc_bench.analysis.send_cost import CostRow, share_line

    row = CostRow(step_time_ms=2, num_running=16, codec="msgpack", step_ns=-5_000.0,
                  s2r_ns=-3_240.0, measured_step_ns=2_160_000.0,
                  share_step=-5_000.0 / 2_160_000.0, share_s2r=-3_240.0 / 2_160_000.0)
    assert share_line(row) == (
        "fixed step 2 ms, B = 16, msgpack: send's SchedulerOutput path (build + encode + "
        "decode, medians) costs 3.24 µs per step less than cached's, 0.15 % of the "
        "measured step (cached's median, 2.16 ms); send's whole median step is "
        "0.23 % shorter than cached's (noisier). One repetition, no interval.")


def test_a_send_step_warning_with_a_shorter_path_says_shorter():
    from ipc_bench.analysis.send_cost import send_step_warning

    send = dict(fixed_step_ms=2.0, num_running=64, step_ns_median=3_950_000.0,
                s2r_build_encode_decode_ns_median=20_000.0)
    cached = dict(fixed_step_ms=2.0, num_running=64, step_ns_median=2_350_000.0,
                  s2r_build_encode_decode_ns_median=25_000.0)
    assert send_step_warning(send, cached) == (
        "fixed step 2 ms: send's whole step ran a median 3.95 ms, 1,600 µs longer than "
        "cached's 2.35 ms, but its SchedulerOutput path only 5 µs shorter: the other "
        "1,605 µs are more than 10 % + 0.44 ms (control plane at B = 64): send's case was "
        "descheduled; its whole-step difference is not send's cost")


def test_cached_spending_more_encode_decode_and_build_reads_as_a_difference():
    send, cached = _summary("send", 0, 50_000.0, 250_000.0), _summary("cached", 0,
                                                                        50_000.0, 250_000.0)
    send["encode_ns_per_step"], cached["encode_ns_per_step"] = 15_740.0, 18_250.0
    send["decode_ns_per_step"], cached["decode_ns_per_step"] = 16_500.0, 17_000.0
    send["build_ns_per_step"], cached["build_ns_per_step"] = 3_000.0, 4_500.0
    res = type("R", (), {})()
    res.cases, res.labels, res.metadata = _cases([send, cached]), ["num_running"], {"run": {}}
    tables = findings._pair_tables(res)
    key = next(iter(tables["tput"]))
    assert findings._saving_clauses(tables, key)[1:] == [
        "spends 2.51 µs more per step than send encoding the SchedulerOutput and the "
        "ModelRunnerOutput (one repetition, no interval)",
        "spends 0.50 µs more per step than send decoding them (one repetition, no "
        "interval)",
        "spends 1.50 µs more per step than send building the SchedulerOutput and the "
        "ModelRunnerOutput (one repetition, no interval)"]


def _three_pairs(build: dict[str, list[float]], encode: dict[str, list[float]]):
    rows = []
    for rep in range(3):
        for policy in ("send", "cached"):
            s = _summary(policy, rep, 50_000.0, 250_000.0)
            s["build_ns_per_step"] = build[policy][rep]
            s["encode_ns_per_step"] = encode[policy][rep]
            rows.append(s)
    res = type("R", (), {})()
    res.cases, res.labels, res.metadata = _cases(rows), ["num_running"], {"run": {}}
    return res


def test_a_time_difference_whose_interval_holds_zero_reads_as_noise():
    """Build's interval (the pair table's cached/send) holds 0 % (within 1.1x either way, so not
    inconclusive): no saving is claimed; encode's excludes it: a cost, with the same
    interval."""
    res = _three_pairs(build=dict(send=[11_000.0, 12_000.0, 10_800.0],
                                  cached=[10_900.0, 12_300.0, 10_700.0]),
                       encode=dict(send=[8_000.0, 8_100.0, 7_900.0],
                                   cached=[9_000.0, 9_300.0, 8_900.0]))
    tables = findings._pair_tables(res)
    key = next(iter(tables["tput"]))
    assert findings._saving_clauses(tables, key)[1:] == [
        "spends 1.07 µs more per step than send encoding the SchedulerOutput and the "
        "ModelRunnerOutput (+13.3 % [+10.2, +16.6] %)",
        "decodes them within noise of send's time per step (+0.0 % [+0.0, +0.0] %; send - "
        "cached: +0.00 µs)",
        "builds the SchedulerOutput and the ModelRunnerOutput within noise of send's time "
        "per step (+0.2 % [-4.5, +5.2] %; send - cached: -0.03 µs)"]


def test_the_time_clauses_show_the_pair_tables_intervals():
    from ipc_bench.report.blocks import _pair_rows

    res = _three_pairs(build=dict(send=[11_000.0, 12_000.0, 10_800.0],
                                  cached=[7_000.0, 11_500.0, 6_900.0]),
                       encode=dict(send=[8_000.0, 8_100.0, 7_900.0],
                                   cached=[9_000.0, 9_300.0, 8_900.0]))
    res.finished = lambda: res
    rows, _ = _pair_rows(res, "t")
    # the same intervals as the clauses above, as ratios
    assert {r[2]: r[7] for r in rows if r[2] in ("build µs/step", "encode µs/step")} == {
        "build µs/step": "0.730 [0.407, 1.310]", "encode µs/step": "1.133 [1.102, 1.166]"}


def test_a_step_time_share_line_gives_each_interval_and_calls_one_holding_zero_noise():
    from ipc_bench.analysis.send_cost import CostRow, share_line

    row = CostRow(step_time_ms=2, num_running=16, codec="msgpack", step_ns=5_000.0,
                  s2r_ns=3_240.0, measured_step_ns=2_160_000.0,
                  share_step=5_000.0 / 2_160_000.0, share_s2r=3_240.0 / 2_160_000.0,
                  repetitions=3, step_interval=(-0.004, 0.0086),
                  s2r_interval=(0.001, 0.002))
    assert share_line(row) == (
        "fixed step 2 ms, B = 16, msgpack: send's SchedulerOutput path (build + encode + "
        "decode, medians) costs 3.24 µs per step more than cached's, 0.15 % of the "
        "measured step (cached's median, 2.16 ms as the mean of its 3 repetitions' "
        "medians) (send - cached: [+0.10, +0.20] %, 95 % "
        "Student-t interval); send's whole median step is within noise of cached's: "
        "+0.23 % (send - cached: [-0.40, +0.86] %, 95 % Student-t interval) (noisier). "
        "Means over 3 repetitions; each share is the mean difference over the mean step.")


def test_a_change_against_its_mean_difference_names_both_messages():
    """Ten pairs where cached builds in 90 % of send's time and one large pair where it
    takes 105 %: the ratio's interval excludes 0 % (-8.7 %) while the mean difference
    says cached spent more (send - cached: -0.36 µs, the sign of the pair table's send -
    cached column); the clause gives both, of the figure it quotes, both messages' build
    summed."""
    rows = []
    for rep, (send, cached) in enumerate([(1_000.0, 900.0)] * 10 + [(100_000.0, 105_000.0)]):
        for policy, build in (("send", send), ("cached", cached)):
            s = _summary(policy, rep, 50_000.0, 250_000.0)
            s["build_ns_per_step"] = build
            rows.append(s)
    res = type("R", (), {})()
    res.cases, res.labels, res.metadata = _cases(rows), ["num_running"], {"run": {}}
    tables = findings._pair_tables(res)
    key = next(iter(tables["tput"]))
    assert findings._saving_clauses(tables, key)[-1] == (
        "changes build time per step of the SchedulerOutput and the ModelRunnerOutput by "
        "-8.7 % [-11.5, -5.8] % (send - cached: -0.36 µs)")


def test_a_decode_clause_without_an_encode_clause_names_both_messages():
    """The decode clause says ``them`` only after the encode clause that named both
    messages; without an encode figure it names them itself."""
    send, cached = _summary("send", 0, 50_000.0, 250_000.0), _summary("cached", 0,
                                                                        50_000.0, 250_000.0)
    for s in (send, cached):
        s["encode_ns_per_step"] = float("nan")
    send["decode_ns_per_step"], cached["decode_ns_per_step"] = 17_000.0, 16_500.0
    res = type("R", (), {})()
    res.cases, res.labels, res.metadata = _cases([send, cached]), ["num_running"], {"run": {}}
    tables = findings._pair_tables(res)
    key = next(iter(tables["tput"]))
    assert findings._saving_clauses(tables, key)[1] == (
        "saves 0.50 µs per step decoding the SchedulerOutput and the ModelRunnerOutput "
        "(one repetition, no interval)")
