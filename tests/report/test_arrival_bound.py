"""A timed replay that kept up with its arrivals (arrival-bound: ``pace.replay_pace``)
has tokens/s (wall) that follow the trace, no throughput figure: the terminal's ratio
line, the comparison block and the finding on the comparison withhold its ratio and
verdict (``- (arrival-bound)``), as they withhold per-step figures of different
schedules; a load-bound replay's stays compared."""

from __future__ import annotations

import pandas as pd

from ipc_bench.analysis import stats
from ipc_bench.report import findings, tables
from test_metrics import _summary

WORKLOAD = "trace=azure-conv-timed:30"


def _case(arm: str, rep: int, tps: float, digest: str, waiting: float) -> dict:
    """A timed replay's case of ``arm`` (cached, or cached+async): ``waiting`` is its
    waiting_step_share (0: no request ever waited, arrival-bound; 0.6: load-bound)."""
    return dict(_summary("cached", rep, tps, 7.0e6 if arm == "cached" else 5.6e6),
                arm=arm, case_id=f"{WORKLOAD}/{arm}/msgpack#{rep}", workload=WORKLOAD,
                num_running=None, trace_speedup=50.0, schedule_digest=digest,
                waiting_step_share=waiting, arrival_span_share=0.9)


def _run(waiting: float = 0.0, same: bool = False) -> list[dict]:
    """Three repetitions of cached against cached+async, async's wall tok/s 17 % higher
    (the user's trial: 1.170); other schedules unless ``same``."""
    return [_case(arm, rep, (1490.0 + 10 * rep) * gain, "s" if same else f"{arm}{rep}",
                  waiting)
            for rep in range(3) for arm, gain in (("cached", 1.0), ("cached+async", 1.17))]


def test_the_ratio_line_withholds_an_arrival_bound_replays_tokens():
    (line,) = tables._ratio_lines("msgpack", _run())
    assert line == (
        "  cached+async/cached (msgpack; paired by repetition: geometric mean of the "
        "per-repetition ratios [95 % Student-t interval]; 3 pairs): tok/s (wall) - "
        "(arrival-bound), s2r B, build, encode, decode, mean step - (schedules differ)")
    # load-bound: the engine set the pace, so the ratio stays
    (line,) = tables._ratio_lines("msgpack", _run(waiting=0.6))
    assert line.split("): ", 1)[1].startswith("tok/s (wall) 1.170 [")


def test_the_comparison_block_withholds_it_and_says_why():
    (c,) = stats.compare_cases(_run())
    assert (c.get("arrival_bound"), c["family"]) == (True, [])
    tput = c["metrics"]["output_tokens_per_s"]
    assert (tput["verdict"], tput["ratio_geomean"], tput["p_value"]) == (
        "arrival-bound", None, None)
    _, _, rows, under = tables.comparison_parts(c)
    row = next(r for r in rows if r[0] == "out tok/s (wall)")
    assert row[2:] == ["1,500 [10.0]", "1,755 [11.7]", "-", "-", "-", "-", "-",
                       "arrival-bound"]
    assert under == (
        "schedules differ: the arms ran different batches (schedule digests differ: a "
        "timed replay follows wall-clock arrivals, and async scheduling starts the "
        "request that takes a finished one's slot a step later than sync scheduling), so "
        "their per-step bytes and times differ by batch as well as by scheduling: those "
        "rows give each arm's median, no paired figure or verdict, and are left out of "
        "the Holm adjustment; out tok/s (wall), arrival-bound, is withheld too (the "
        "trace's arrivals set it: no throughput figure)")
    # equal schedules: the tokens/s is withheld all the same, the line under says why
    (same,) = stats.compare_cases(_run(same=True))
    assert "output_tokens_per_s" not in same["family"] and same["family"]
    assert tables.comparison_parts(same)[3] == (
        "arrival-bound: every case of the pair is a timed replay, and the arrivals set "
        "the pace of at least one (summary replay_pace), so its out tok/s (wall) follows the trace, not "
        "the engine: no throughput figure, so no paired figure or verdict, and left out "
        "of the Holm adjustment")
    (load,) = stats.compare_cases(_run(waiting=0.6))
    assert "arrival_bound" not in load
    assert load["metrics"]["output_tokens_per_s"]["verdict"].startswith("significant")


def _where(workload: str) -> str:
    return f"On `{workload}`"


def test_the_finding_gives_no_throughput_gain_of_an_arrival_bound_replay():
    (c,) = stats.compare_cases(_run())
    assert findings._comparison_finding(c, _where) == (
        "On `trace=azure-conv-timed:30` (msgpack), cached+async against cached over 3 "
        "paired repetitions: output tokens/s (wall): arrival-bound; mean step: schedules "
        "differ.")


def test_a_comparison_recorded_before_the_mark_is_marked_from_its_cases():
    # a summary written before arrival_bound: its tokens/s compared, +17.0 %
    recorded = dict(stats.compare_cases(_run(waiting=0.6))[0], repetitions=[0, 1, 2])
    assert "output tokens/s (wall) +17.0 % [" in findings._comparison_finding(
        recorded, _where)
    run = pd.DataFrame([dict(r, run_id="run") for r in _run()])
    marked = findings._arrival_bound_marked(recorded, run)
    assert marked["arrival_bound"] is True
    assert marked["metrics"]["output_tokens_per_s"]["verdict"] == "arrival-bound"
    assert findings._comparison_finding(marked, _where).endswith(
        "over 3 paired repetitions: output tokens/s (wall): arrival-bound; mean step: "
        "schedules differ.")
    # its cases load-bound: as recorded
    loaded = pd.DataFrame([dict(r, run_id="run") for r in _run(waiting=0.6)])
    assert findings._arrival_bound_marked(recorded, loaded) is recorded


def test_the_send_cached_wall_time_clause_gives_no_verdict_where_withheld():
    # send against cached on an arrival-bound replay: its finding, after "measures the
    # arrivals, not throughput", gives the wall times and tokens/s, with no ratio or
    # verdict, as the tables withhold them
    rows = [dict(_case(policy, rep, (1490.0 + 10 * rep) * gain, "s", 0.0), arm=policy,
                 policy=policy, wall_s=10.0 / gain, run_id="run")
            for rep in range(3) for policy, gain in (("send", 1.0), ("cached", 1.17))]
    (c,) = stats.compare_cases(rows)
    res = type("R", (), {})()
    res.cases, res.labels, res.metadata = pd.DataFrame(rows), [], {"run": {}}
    (key, t), = findings._pair_tables(res)["tput"].items()
    assert findings._wall_time_clause(res.cases, key, t, _where,
                                      c["metrics"]["output_tokens_per_s"]) == (
        "On `trace=azure-conv-timed:30` (msgpack), send ran 10.00 s and cached 8.55 s of "
        "wall time, first arrival to last completion (means over repetitions): 1,500 and "
        "1,755 tok/s (wall); arrival-bound: the trace's arrivals set both, so no ratio or "
        "verdict.")


def test_the_wall_time_clause_withholds_the_ratio_of_arrival_bound_cases_not_compared():
    """A run that recorded no comparison (its cases counted no step: every step a
    warm-up one) of an arrival-bound replay: its cases' own records withhold the
    ratio, as the tables do; load-bound ones keep it."""
    for waiting, ratio in ((0.0, False), (0.6, True)):
        res = _send_cached(waiting)
        (key, t), = findings._pair_tables(res)["tput"].items()
        text = findings._wall_time_clause(res.cases, key, t, _where, None)
        assert ("→" in text) == ratio, text
        assert text.endswith("arrival-bound: the trace's arrivals set both, so no ratio "
                             "or verdict.") != ratio


def _send_cached(waiting: float):
    """send against cached on a timed replay, three repetitions, cached's wall tok/s
    17 % higher, one schedule; ``waiting``: each case's waiting_step_share."""
    rows = [dict(_case(policy, rep, (1490.0 + 10 * rep) * gain, "s", waiting), arm=policy,
                 policy=policy, wall_s=10.0 / gain, run_id="run")
            for rep in range(3) for policy, gain in (("send", 1.0), ("cached", 1.17))]
    res = type("R", (), {})()
    res.cases, res.labels, res.metadata = pd.DataFrame(rows), [], {"run": {}}
    res.paths = {}  # no summary.json: no recorded comparison to read
    return res


def test_the_pair_table_gives_an_arrival_bound_replays_tokens_each_arms_mean_alone():
    from ipc_bench.report import blocks

    (_, _, rows), (_, caption) = blocks._pair_table(_send_cached(0.0))
    tput = next(r for r in rows if r[2] == "output tokens/s (wall)")
    import numpy as np

    # each arm's geometric mean over its 3 repetitions (1,490, 1,500, 1,510 tok/s and
    # 1.17 times those), as every row of the table gives them
    send = float(np.exp(np.mean(np.log([1490.0, 1500.0, 1510.0]))))
    assert tput[3:] == ["3", f"{send:,.0f}", f"{1.17 * send:,.0f}", "-", "- (arrival-bound)"]
    assert tput[4:6] == ["1,500", "1,755"]  # tokens/s whole, as elsewhere
    assert ("Where the arrivals set the pace of every case of a pair (arrival-bound, "
            "summary `replay_pace`), its output tokens/s (wall) follow the trace, not the engine: "
            "no throughput figure, so each arm's geometric mean alone, no difference or "
            "ratio "
            "(`- (arrival-bound)`).") in caption
    # load-bound: the engine set the pace, the ratio stays
    (_, _, rows), (_, caption) = blocks._pair_table(_send_cached(0.6))
    tput = next(r for r in rows if r[2] == "output tokens/s (wall)")
    assert tput[6:] == ["-255", "1.170 [1.170, 1.170]"] and "arrival-bound" not in caption
