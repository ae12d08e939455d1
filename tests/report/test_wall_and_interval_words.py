"""Words that say what a compared figure is: a timed replay's tokens/s, over wall time,
read ``(wall)`` in its ratio line, comparison block and pair table, and each caption of
a cached/send ratio names exactly the interval kind shown for its pair count (none
where the pairs are too few for the method's interval: 2 to 33 for the bootstrap, 2 to
5 for the sign test)."""

from __future__ import annotations

import pandas as pd
import pytest

from ipc_bench.analysis import stats
from ipc_bench.report import blocks, tables
from test_metrics import _summary


def _pairs(n: int, timed: bool = False) -> list[dict]:
    """``n`` send/cached repetitions of one workload; cached's tokens/s 20-30 % higher,
    every repetition another ratio; with ``timed`` a timed replay (``trace_speedup``
    set), load-bound (a request left waiting after 60 % of its steps), so its tokens/s
    (wall) is compared (an arrival-bound one's is withheld: test_schedules_differ)."""
    out = []
    for rep in range(n):
        for policy, tps in (("send", 1000.0 + rep), ("cached", 1200.0 + 3 * rep)):
            out.append(dict(_summary(policy, rep, tps, 6.0e6 - 1000 * rep),
                            trace_speedup=20.0 if timed else None,
                            waiting_step_share=0.6 if timed else None))
    return out


def _results(rows: list[dict], method: str = "t"):
    res = type("R", (), {})()
    res.cases = pd.DataFrame([dict(r, run_id="run") for r in rows])
    res.labels, res.metadata = ["num_running"], {"run": {"ci_method": method}}
    res.paths = {}  # no run folder: no recorded comparisons to read
    return res


def _tokens_row(table_rows: list[list[str]]) -> list[str]:
    return next(r for r in table_rows if r[2].startswith("output tokens/s"))


# --------------------------------------------------------------------------------------
# a timed replay's tokens/s: (wall) wherever compared


def test_a_timed_replays_ratio_line_says_its_tokens_are_over_wall_time():
    (timed,) = tables._ratio_lines("msgpack", _pairs(2, timed=True))
    assert timed.startswith(
        "  cached/send (msgpack; paired by repetition: geometric mean of the "
        "per-repetition ratios [95 % Student-t interval]; 2 pairs): tok/s (wall) 1.201 ")
    (busy,) = tables._ratio_lines("msgpack", _pairs(2))
    assert busy.split("): ", 1)[1].startswith("tok/s 1.201 ")
    # the run's printed text: the case table and the ratio line under it alike
    text = tables.format_tables(_pairs(2, timed=True))
    assert "  out tok/s (wall)  " in text.splitlines()[1]
    assert "): tok/s (wall) 1.201 [" in text


def test_a_timed_replays_comparison_block_row_says_wall():
    (c,) = stats.compare_cases(_pairs(2, timed=True))
    assert c["timed"] is True
    rows = tables.comparison_parts(c)[2]
    assert [r[0] for r in rows][:3] == ["step mean", "step median", "out tok/s (wall)"]
    assert "\nout tok/s (wall)  tok/s  " in tables.format_comparisons([c])
    (busy,) = stats.compare_cases(_pairs(2))
    assert "timed" not in busy
    assert tables.comparison_parts(busy)[2][2][0] == "out tok/s"


def test_a_timed_replays_pair_table_row_says_wall_and_what_it_is():
    (_, _, rows), (_, note) = blocks._pair_table(_results(_pairs(2, timed=True)))
    assert _tokens_row(rows)[2:4] == ["output tokens/s (wall)", "2"]
    assert (" `output tokens/s (wall)`: a timed replay's output tokens, warm-up included, "
            "over wall time, first arrival to last completion, as `out tok/s (wall)` in "
            "its case table.") in note
    (_, _, rows), (_, note) = blocks._pair_table(_results(_pairs(2)))
    assert _tokens_row(rows)[2] == "output tokens/s"
    assert "(wall)" not in note


def test_a_timed_replays_comparison_finding_says_wall():
    from ipc_bench.report import findings

    for timed, name in ((True, "output tokens/s (wall)"), (False, "output tokens/s")):
        (c,) = stats.compare_cases(_pairs(2, timed=timed))
        assert findings._comparison_finding(c, lambda w: f"On `{w}`") == (
            "On `num_running=4` (msgpack), cached against send over 2 paired repetitions: "
            f"{name} +20.1 % [+19.0, +21.2] % (significant after Holm (p 0.003, adjusted "
            "0.016)); mean step +0.0 % [+0.0, +0.0] % (no significant difference after "
            "Holm (p 1.000, adjusted 1.000)).")


# --------------------------------------------------------------------------------------
# the interval kind a caption names: the one shown for that pair count


@pytest.mark.parametrize("method, n, header, caption", [
    ("bootstrap", 2, "cached/send (median)",
     "cached/send: paired by repetition: median of the per-repetition ratios, the point "
     "alone (a percentile-bootstrap interval needs >= 34 pairs) (`--ci-method "
     "bootstrap`;"),
    ("bootstrap", 12, "cached/send (median)",
     "cached/send: paired by repetition: median of the per-repetition ratios, the point "
     "alone (a percentile-bootstrap interval needs >= 34 pairs) (`--ci-method "
     "bootstrap`;"),
    ("bootstrap", 34, "cached/send (median) [95 %]",
     "cached/send: paired by repetition: median of the per-repetition ratios [95 % "
     "percentile-bootstrap interval] (`--ci-method bootstrap`;"),
    ("sign", 2, "cached/send (median)",
     "cached/send: paired by repetition: median of the per-repetition ratios, the point "
     "alone (a sign-test interval needs >= 6 pairs) (`--ci-method sign`;"),
    ("sign", 5, "cached/send (median)",
     "cached/send: paired by repetition: median of the per-repetition ratios, the point "
     "alone (a sign-test interval needs >= 6 pairs) (`--ci-method sign`;"),
    ("sign", 6, "cached/send (median) [95 %]",
     "cached/send: paired by repetition: median of the per-repetition ratios [95 % "
     "sign-test interval] (`--ci-method sign`;"),
    ("t", 2, "cached/send (geometric mean) [95 %]",
     "cached/send: paired by repetition: geometric mean of the per-repetition ratios "
     "[95 % Student-t interval] (`--ci-method t`;"),
])
def test_the_pair_table_names_the_interval_kind_its_rows_show(method, n, header, caption):
    (_, head, rows), (_, note) = blocks._pair_table(_results(_pairs(n), method))
    assert head[-1] == header
    assert caption in note
    point = "mean" if method == "t" else "median"
    # each column head names its one statistic
    assert head[4:7] == ["send (geometric mean)", "cached (geometric mean)",
                         f"send - cached ({point})"]
    assert (f"send - cached: paired by repetition, the {point} of the per-repetition "
            "differences. cached/send:") in note
    shown = _tokens_row(rows)[-1]
    assert ("[" in shown) == header.endswith("[95 %]")


def test_the_pair_tables_arms_are_geometric_means_that_point_the_ratios_way():
    """One row cannot point two ways: send's arithmetic mean above cached's beside a
    ratio above 1. Three pairs where send is high once: means 366.67 against 350.00,
    geometric means (100 x 100 x 900)^(1/3) = 208.01 against (110 x 110 x 830)^(1/3) =
    215.75, whose quotient 1.0372 is the ratio column's geometric mean."""
    import numpy as np

    rows = []
    for rep, (s, c) in enumerate(((100.0, 110.0), (100.0, 110.0), (900.0, 830.0))):
        for policy, tps in (("send", s), ("cached", c)):
            rows.append(_summary(policy, rep, tps, 6.0e6))
    (_, head, table), (_, note) = blocks._pair_table(_results(rows))
    row = _tokens_row(table)
    send_g = float(np.exp(np.mean(np.log([100.0, 100.0, 900.0]))))
    cached_g = float(np.exp(np.mean(np.log([110.0, 110.0, 830.0]))))
    assert np.mean([100.0, 100.0, 900.0]) > np.mean([110.0, 110.0, 830.0])  # means: send
    assert row[4:6] == [f"{send_g:,.0f}", f"{cached_g:,.0f}"] == ["208", "216"]
    assert row[-1].startswith(f"{cached_g / send_g:.3f} ") and cached_g > send_g
    assert note.startswith("send, cached: each arm's geometric mean over the n "
                           "repetitions, whose quotient is the paired geometric-mean "
                           "ratio")


def test_a_pair_table_of_both_kinds_of_row_says_where_the_point_is_alone():
    # 6 pairs at one workload, 2 at another: the sign test's interval at the first only
    rows = _pairs(6) + [dict(r, workload="num_running=8", num_running=8,
                             case_id=r["case_id"].replace("=4", "=8")) for r in _pairs(2)]
    (_, head, _), (_, note) = blocks._pair_table(_results(rows, "sign"))
    assert head[-1] == "cached/send (median) [95 %]"
    assert ("cached/send: paired by repetition: median of the per-repetition ratios [95 % "
            "sign-test interval]; the point alone where the pairs are fewer (a sign-test "
            "interval needs >= 6 pairs) (`--ci-method sign`;") in note


@pytest.mark.parametrize("method, ratio_interval, phrase", [
    ("bootstrap", False, "paired by repetition: median of the per-repetition ratios; too "
                         "few pairs for a percentile-bootstrap interval (>= 34), so no "
                         "interval"),
    ("sign", False, "paired by repetition: median of the per-repetition ratios; too few "
                    "pairs for a sign-test interval (>= 6), so no interval"),
    ("bootstrap", True, "paired by repetition: median of the per-repetition ratios [95 % "
                        "percentile-bootstrap interval]"),
    ("sign", True, "paired by repetition: median of the per-repetition ratios [95 % "
                   "sign-test interval]"),
])
def test_the_throughput_caption_names_the_interval_its_ratios_show(method, ratio_interval,
                                                                   phrase):
    drawn = dict(series=[("send", "msgpack"), ("cached", "msgpack")],
                 panels=["tokens/s", "cached/send"], repeated=True, method=method,
                 ratio_interval=ratio_interval)
    assert (f" Right: cached/send, {phrase} (above 1: cached faster).") in blocks.caption(
        "throughput", drawn)


def test_the_throughput_figure_records_whether_its_ratios_have_an_interval():
    from ipc_bench.report import plots

    from ipc_bench.analysis.results import Results

    empty = pd.DataFrame(columns=["run_id", "case_id"])
    for n, method, expected in ((2, "bootstrap", False), (12, "bootstrap", False),
                                (34, "bootstrap", True), (5, "sign", False),
                                (6, "sign", True)):
        res = Results(cases=pd.DataFrame([dict(r, run_id="run") for r in _pairs(n)]),
                      steps=empty, requests=empty, floor=empty, itl=empty,
                      metadata={"run": {"ci_method": method, "cases": [
                          {"labels": {"num_running": 4}}]}},
                      status={"run": "complete"}, problems={"run": []},
                      paths={"run": "run"})
        drawn = plots.draw(plots.throughput, res)[1]
        assert drawn["ratio_interval"] is expected, (n, method)
