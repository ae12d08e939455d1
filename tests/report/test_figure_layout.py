"""Figures stay readable whatever the run: tick labels never overlap (many groups,
long run ids), a log axis never draws an interval end at or below 0, an interval far
beyond the points does not stretch the tokens/s axis (the end is cut at the edge and
marked), the cached/send axis holds every ratio and the interval ends near them (log
beyond a factor of 4; an end many decades off is cut and marked, so the points stay
apart), each timed replay's note sits by its own points, and a caption says when an arm did
not finish rather than that it never ran."""

from __future__ import annotations

import json
import shutil
import warnings

import pandas as pd
import pytest

from analysis_run import TWO_CASE_ARGS, copy_as_another_run, run_bench, scale_case_times
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning
from ipc_bench.report import plots
from ipc_bench.report.blocks import caption

ARGS = ["--scenario", "decode-steady", "--num-running", "4,16", "--steps", "30",
        "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor", "--repeat", "2"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    path = tmp_path_factory.mktemp("layout") / "repeated"
    run_bench(path, ARGS)
    return path


def _edit(run, where, change, seconds: float = 10.0):
    copy_as_another_run(run, where, seconds)
    summary = json.loads((where / "summary.json").read_text())
    change(summary)
    (where / "summary.json").write_text(json.dumps(summary))
    return where


def _load(*paths):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load(list(paths)) if len(paths) > 1 else load(paths[0])


def _load_taken(path):
    """``load(path)``, which must leave nothing out (an edit the loader takes)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        res = load(path)
    assert [str(w.message) for w in caught if issubclass(w.category, ResultsWarning)] == []
    return res


def _overlaps(fig):
    fig.canvas.draw()
    return [ax.get_title() for ax in fig.axes if ax.get_visible()
            and plots._overlapping(plots._shown_labels(ax), fig)]


def _cut_markers(ax):
    return [line for line in ax.get_lines() if line.get_gid() == plots.CUT_GID]


def test_many_runs_get_readable_labels_and_the_timed_note_by_its_points(run, tmp_path):
    paths = [copy_as_another_run(run, tmp_path / f"a_rather_long_run_name_{i}", i + 1)
             for i in range(4)]

    requests = pd.read_csv(run / "requests.csv")
    tokens = requests.groupby("case_id")["num_output_tokens"].sum()

    def timed(summary):  # a timed replay's tokens/s: all its output tokens over wall_s
        for case in summary["cases"]:
            case["trace_speedup"] = 1.0
            case["output_tokens_per_s"] = tokens[case["case_id"]] / case["wall_s"]
    paths.append(_edit(run, tmp_path / "zz_timed_replay_run", timed))
    fig = plots.throughput(_load(*paths))
    assert _overlaps(fig) == []
    d = plots.drawn(fig)
    assert d["timed"] and all(g.startswith("zz_timed_replay_run\n") for g in d["timed"])
    ax = fig.axes[0]
    groups = [t.get_text().replace("\n", "") for t in ax.get_xticklabels()]
    notes = [t for t in ax.texts if t.get_gid() == "timed_note"]
    assert len(notes) == len(d["timed"])
    for note in notes:  # above a timed group's tick, not somewhere else on the axis
        x = note.xy[0]
        assert groups[round(x)].startswith("zz_timed_replay_run")
    cap = caption("throughput", d)
    assert cap.startswith(
        "Output tokens/s of every case (steady cases: tokens sampled in counted steps over "
        "their busy wall time; timed replays: every output token over the wall time from "
        "the first arrival to the last completion, `out tok/s (wall)`), ")
    assert ("The red note marks each timed replay's points: arrival-bound, so its "
            "tokens/s follow the trace, not the policy.") in cap
    # the arrival-bound replays get no ratio point, as the tables give them no ratio
    assert d["ratio_withheld"] == d["timed"]
    assert ("(above 1: cached faster). No cached/send for `zz_timed_replay_run "
            "num_running=4` and `zz_timed_replay_run num_running=16`: they are "
            "arrival-bound, so their wall tok/s follow the trace, and the tables give no "
            "ratio either.") in cap
    ratio_ax = fig.axes[1]
    drawn_x = {round(x) for line in ratio_ax.lines for x in line.get_xdata()
               if len(line.get_xdata()) and line.get_linestyle() == "None"}
    ratio_groups = [t.get_text().replace("\n", "") for t in ratio_ax.get_xticklabels()]
    assert drawn_x and not any(ratio_groups[x].startswith("zz_timed_replay_run")
                               for x in drawn_x)
    assert d["stacked"] and " Below: cached/send" in cap  # the panels, one above the other


def test_a_log_axis_cuts_an_interval_end_at_or_below_zero(run, tmp_path):
    # send/msgpack at 4 running: repetition 0 100x slower than repetition 1 (every time
    # of the case scaled, so the loader takes it)
    path = copy_as_another_run(run, tmp_path / "spread", 10.0)
    before = _load_taken(path).cases.set_index("case_id")["output_tokens_per_s"]
    scale_case_times(path, "num_running=4/send/msgpack#0", 100)
    after = _load_taken(path).cases.set_index("case_id")["output_tokens_per_s"]
    assert after["num_running=4/send/msgpack#0"] == pytest.approx(
        before["num_running=4/send/msgpack#0"] / 100)
    res = _load_taken(path)
    fig = plots.throughput(res)
    d = plots.drawn(fig)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and d["log"]
    bottom, top = ax.get_ylim()
    assert bottom > 0
    assert d["cut"] >= 1 and _cut_markers(ax)
    for line in _cut_markers(ax):  # on the axis' edge
        assert all(y in (bottom, top) for y in line.get_ydata())
    # the ratio panel: per-repetition ratios of ~100 and ~1 give a ratio of ~10 whose
    # two-pair interval ends lie decades off: the axis holds the points and 1, on a log
    # scale, and cuts those ends at its edge
    from ipc_bench.analysis.stats import paired, results_ci_method, summarize_pairs

    rows = summarize_pairs(paired(res.cases, "output_tokens_per_s"),
                           method=results_ci_method(res.metadata))
    rax = fig.axes[1]
    _, cut = _assert_ratio_axis_holds_every_point_and_interval(rax, d, rows)
    assert rax.get_yscale() == "log" and d["ratio_log"] and cut
    cap = caption("throughput", d)
    assert "The tokens/s axis is bounded to its points;" in cap
    assert "(a lower end at or below 0 cannot be placed on the log axis)" in cap
    assert ("cut at the edge, where an open arrow on the bar points the way the interval "
            "goes on.") in cap
    assert ("(above 1: cached faster). Its axis is on a log scale, as what it holds spans "
            "more than a factor of 4. The ratio axis holds every ratio; ") in cap


def _ratio_data(rax):
    """(points, interval ends) the ratio panel drew, read back from its artists."""
    import numpy as np

    points, ends = [], []
    for c in rax.containers:  # ErrorbarContainer: (data line, caps, bar collections)
        ys = c.lines[0].get_ydata()
        points += [float(y) for y in ys]
        for coll in c.lines[2]:
            for seg in coll.get_segments():
                ends += [float(v) for v in np.asarray(seg)[:, 1]]
    return points, ends


def _assert_ratio_axis_holds_every_point_and_interval(rax, d, rows):
    """The ratio axis holds every ratio of ``rows`` (``summarize_pairs``), the line at
    1 and every interval end ``ratio_bounds`` keeps near them, each drawn where it is;
    an end beyond the axis is drawn at its edge, under a cut marker, and counted in
    ``d["ratio_cut"]``. Returns the ends the rows have and the ones that were cut."""
    points, drawn_ends = _ratio_data(rax)
    lo, hi = rax.get_ylim()
    assert sorted(points) == pytest.approx(sorted(r["ratio"] for r in rows))
    assert lo < min(points + [1.0]) and max(points + [1.0]) < hi
    ends = [e for r in rows for e in (r["ratio_low"], r["ratio_high"]) if e == e]
    cut = [e for e in ends if not lo <= e <= hi]
    assert sorted(drawn_ends) == pytest.approx(sorted(
        [e for e in ends if lo <= e <= hi] + [lo if e < lo else hi for e in cut]))
    assert d["ratio_cut"] == len(cut) == sum(len(m.get_xdata()) for m in _cut_markers(rax))
    assert (lo, hi, d["ratio_log"]) == pytest.approx(plots.ratio_bounds(
        [r["ratio"] for r in rows], ends))
    return ends, cut


def test_the_ratio_axis_holds_extreme_ratios_and_their_intervals(run, tmp_path):
    # send/msgpack at 16 running 300x slower in repetition 1 only: a ratio of ~17
    # (geometric mean of ~1 and ~300) whose interval reaches far beyond. At 30x the
    # ratio (~5.5) was too near RATIO_LOG_SPAN (4): repetition 0's own ratio, measured,
    # at 0.5 on a loaded machine gives sqrt(0.5 * 30) = 3.9, a linear axis
    path = copy_as_another_run(run, tmp_path / "extreme", 10.0)
    scale_case_times(path, "num_running=16/send/msgpack#1", 300)
    res = _load_taken(path)
    from ipc_bench.analysis.stats import paired, results_ci_method, summarize_pairs

    rows = summarize_pairs(paired(res.cases, "output_tokens_per_s"),
                           method=results_ci_method(res.metadata))
    fig = plots.throughput(res)
    d = plots.drawn(fig)
    rax = fig.axes[1]
    ends, cut = _assert_ratio_axis_holds_every_point_and_interval(rax, d, rows)
    # the ~5.5 ratio's upper end reaches hundreds: beyond 1.5 times the points' span
    # above them, cut at the edge; the axis goes up to the points' reach, no further
    assert max(ends) > 100 and max(ends) in cut
    assert rax.get_yscale() == "log"
    assert rax.get_ylim()[1] < max(ends)
    n = d["ratio_cut"]
    assert (f" The ratio axis holds every ratio; {n} interval end{'s' if n > 1 else ''} "
            f"{'lie' if n > 1 else 'lies'} far beyond them and {'are' if n > 1 else 'is'} "
            "cut at the edge, where an open arrow on the bar points the way the interval goes "
            "on.") \
        in caption("throughput", d)


def test_a_narrow_ratio_axis_stays_linear():
    assert plots.ratio_bounds([0.95, 1.05, 0.9, 1.2]) == pytest.approx(
        (0.9 - 0.08 * 0.3, 1.2 + 0.08 * 0.3, False))
    lo, hi, log = plots.ratio_bounds([1.0, 0.5, 8.0, float("nan")])
    assert log and (lo, hi) == pytest.approx((0.5 / 16 ** 0.08, 8.0 * 16 ** 0.08))
    # two repetitions' t interval, 1e-11 to 1e12, beside ratios near 1: not held
    assert plots.ratio_bounds([1.0, 1.1], [1e-11, 1e12, 0.95]) == pytest.approx(
        (0.95 - 0.08 * 0.15, 1.1 + 0.08 * 0.15, False))


def test_intervals_near_the_points_are_drawn_whole(run):
    from ipc_bench.report.plots import _data_bounds

    assert _data_bounds([1.0, 1.1], [0.9, 1.2], log=False, include=[1.0])[1] >= 1.2
    lo, hi = _data_bounds([1.0, 1.1], [0.9, 180.0], log=False, include=[1.0])
    assert hi < 2 and lo <= 0.9
    lo, hi = _data_bounds([1e4, 2e4], [-5e3, 3e4], log=True)
    assert 0 < lo < 1e4 and hi >= 3e4


def test_crowded_log_ticks_are_thinned_then_turned():
    fig, axes = plots._figure(1, 1, width=2.2, height=2.0)
    ax_font = 14
    ax = axes[0][0]
    # over a decade, so the 2 and 5 minor labels crowd (under one, up to 6 evenly
    # stepped labels and no minor ones)
    ax.plot([1.5, 90.0], [0, 1])
    ax.set_xscale("log")
    plots._plain_log_ticks(ax)
    ax.tick_params(axis="x", which="both", labelsize=ax_font)
    fig.canvas.draw()
    assert plots._overlapping(plots._shown_labels(ax), fig)
    plots._readable_ticks(fig, [ax])
    assert _overlaps(fig) == []


def test_the_send_cost_share_ticks_do_not_overlap(tmp_path, monkeypatch):
    # the ticks, not the withholding, are under test: a loaded machine that stretches
    # the fixed steps off nominal would withhold every share and leave nothing drawn
    monkeypatch.setattr(plots, "_withheld_shares", lambda records: {})
    path = tmp_path / "st"
    run_bench(path, ["--scenario", "step-time", "--model", "fixed-step", "--steps", "8",
                     "--warmup-steps", "2", "--num-running", "16,64", "--step-time-ms", "1,2",
                     "--codecs",
                     "msgpack", "--no-single-process", "--no-floor"])
    fig = plots.send_cost_share(_load(path))
    assert _overlaps(fig) == []


def test_an_unfinished_arm_is_named_not_said_never_to_have_run(run, tmp_path):
    def killed(summary):
        for case in summary["cases"]:
            if "/cached/" in case["case_id"]:
                case.update(complete=False, error="runner killed by SIGKILL")
        summary.update(status="incomplete", problems=["runner killed by SIGKILL"])
    res = _load(_edit(run, tmp_path / "killed", killed))
    for name, fn in (("bytes_per_step", plots.bytes_per_step),
                     ("throughput", plots.throughput)):
        d = plots.drawn(fn(res))
        assert ("cached", "msgpack") in d["unfinished"]
        text = caption(name, d)
        assert text.endswith(" `cached` did not finish: it ran but is left out, so no "
                             "other line is set against `send`.")
        assert "Only `send` ran" not in text


def test_the_send_cost_share_axis_holds_the_points_not_a_far_interval(run, tmp_path):
    # send at 4 running: 10x slower in one repetition only (every time of the case)
    path = copy_as_another_run(run, tmp_path / "slow", 10.0)
    scale_case_times(path, "num_running=4/send/msgpack#0", 10)
    fig = plots.send_cost_share(_load_taken(path))
    d = plots.drawn(fig)
    assert d["cut"] >= 1
    for ax in fig.axes[:2]:
        lo, hi = ax.get_ylim()
        points = [y for c in ax.containers for y in c.lines[0].get_ydata()]
        ends = [y for c in ax.containers for bar in c.lines[2]
                for seg in bar.get_segments() for _, y in seg]
        assert all(lo <= y <= hi for y in points)
        assert all(lo - 1e-9 <= y <= hi + 1e-9 for y in ends)  # drawn ends stay inside
        assert _cut_markers(ax)
    text = caption("send_cost_share", d)
    assert f"The y axis is bounded to the points; {d['cut']} interval end" in text


def test_latencies_at_or_below_zero_are_counted_not_dropped_silently(tmp_path):
    import csv

    from test_timed_no_floor import write_trace

    trace = tmp_path / "trace.csv"
    write_trace(trace)
    path = tmp_path / "timed"
    run_bench(path, ["--scenario", "azure-conv-timed", "--trace", str(trace),
                     "--max-requests", "6", "--codecs", "msgpack", "--warmup-steps", "2"])
    rows = list(csv.DictReader((path / "requests.csv").open()))
    # The loader leaves out a requests.csv row edited to a TTFT of 0 (its summary's
    # figures no longer agree), so the figure is given one in the loaded frame.
    res = _load(path)
    res.requests.loc[res.requests.index[0], "ttft_s"] = 0.0
    fig = plots.latency_cdfs(res)
    d = plots.drawn(fig)
    assert d["nonpositive"] == {"ttft": 1}
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_xlim()[0] > 0
    first = [line.get_ydata()[0] for line in ax.get_lines()
             if line.get_label().startswith(rows[0]["policy"])]
    assert first and first[0] > 1 / len([r for r in rows if r["policy"] == rows[0]["policy"]
                                         and r["codec"] == rows[0]["codec"]]) - 1e-9
    assert ("1 TTFT value at or below 0 cannot be placed on the log axis"
            in caption("latency_cdfs", d))


def test_a_run_without_an_arm_leaves_no_empty_slot(tmp_path, shared_two_case_run):
    """Two runs, one of both policies (a copy of the session's, ``shared_two_case_run``)
    and one of cached alone: each run's group shares its slot among the arms it has (no
    space kept for the send it lacks), and each arm keeps its colour and label in both."""
    shutil.copytree(shared_two_case_run, tmp_path / "both")
    run_bench(tmp_path / "cached", TWO_CASE_ARGS + ["--policies", "cached"])
    fig = plots.throughput(_load(tmp_path / "both", tmp_path / "cached"))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "both\nnum_running=4", "cached\nnum_running=4"]
    # one repetition: markers alone (no interval, no error-bar container)
    assert ax.containers == []
    drawn_points = {c.get_label(): ([round(float(x), 3) for x in c.get_xdata()],
                                    c.get_color()) for c in ax.get_lines()}
    assert drawn_points == {"send / msgpack": ([-0.2], plots.POLICY_COLORS["send"]),
                            "cached / msgpack": ([0.2, 1.0], plots.POLICY_COLORS["cached"])}
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "send / msgpack", "cached / msgpack"]
    # The ratio panel: one codec per group, in the middle of its group.
    assert [round(float(x), 3) for x in fig.axes[1].get_lines()[0].get_xdata()] == [0.0]


def test_slots_are_shared_among_the_series_a_group_has():
    assert plots._slot_x(0, 0, 1) == 0.0
    assert [round(plots._slot_x(2, k, 4), 3) for k in range(4)] == [1.7, 1.9, 2.1, 2.3]
    # The ratio panel: run a paired both codecs, run b msgpack alone.
    rows = [dict(run_id=r, workload="num_running=4", codec=c, ratio=1.1, ratio_low=1.0,
                 ratio_high=1.2) for r, c in (("a", "msgpack"), ("a", "pickle"),
                                              ("b", "msgpack"))]
    fig, axes = plots._figure()
    groups = ["a\nnum_running=4", "b\nnum_running=4"]
    plots._ratio_panel(axes[0][0], rows, groups, True, groups)
    assert {c.get_label(): [round(float(x), 3) for x in c.lines[0].get_xdata()]
            for c in axes[0][0].containers} == {"msgpack": [-0.2, 1.0], "pickle": [0.2]}


def _share_rows(steps: dict[int, float]) -> list[dict]:
    """Two repetitions of send and cached at each running count of ``steps`` (cached's
    median step, ns) with msgpack and with pickle: send's step 2 % and 3 % longer, its
    SchedulerOutput path 20 and 30 µs more."""
    from test_metrics import _summary

    rows = []
    for b, step in steps.items():
        for codec in ("msgpack", "pickle"):
            for rep, k in enumerate((0.02, 0.03)):
                for policy, median, s2r in (("send", step * (1 + k), 40_000.0 + 1e6 * k),
                                            ("cached", step, 20_000.0)):
                    s = _summary(policy, rep, 50_000.0, median + 1000)
                    s.update(workload=f"num_running={b}", num_running=b, codec=codec,
                             case_id=f"num_running={b}/{policy}/{codec}#{rep}", run_id="run",
                             s2r_build_encode_decode_ns_median=s2r)
                    rows.append(s)
    return rows


def _share_results(rows):
    from ipc_bench.analysis.results import Results

    empty = pd.DataFrame(columns=["run_id", "case_id"])
    return Results(cases=pd.DataFrame(rows), steps=empty, requests=empty, floor=empty,
                   itl=empty, metadata={"run": {"cases": [{"labels": {"num_running": 4}}]}},
                   status={"run": "complete"}, problems={"run": []}, paths={"run": "run"})


def test_the_send_cost_share_codecs_keep_their_line_style_and_marker():
    # every codec was drawn in send's orange, told apart by a marker of this figure's
    # own: each now has its line style and marker of every figure (msgpack solid with
    # diamonds, pickle dashed with triangles down); the whole step filled on a thick
    # line, the SchedulerOutput path hollow on a thin one
    fig = plots.send_cost_share(_share_results(_share_rows({64: 6.2e6, 256: 13.1e6})))
    orange = plots.POLICY_COLORS["send"]
    for ax in fig.axes[:2]:
        drawn = sorted((c.lines[0].get_linestyle(), c.lines[0].get_marker(),
                        c.lines[0].get_linewidth(), c.lines[0].get_markerfacecolor(),
                        c.lines[0].get_color()) for c in ax.containers)
        assert drawn == [("-", "D", 1.0, "white", orange), ("-", "D", 2.2, orange, orange),
                         ("--", "v", 1.0, "white", orange), ("--", "v", 2.2, orange, orange)]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        "msgpack: whole step", "msgpack: build+encode+decode", "pickle: whole step",
        "pickle: build+encode+decode"]
    assert fig._suptitle.get_text().replace("\n", " ").endswith(
        "whole median step (filled, thick), SchedulerOutput build + encode + decode "
        "(hollow, thin); codecs by line style and marker")
    d = plots.drawn(fig)
    assert (
        "each difference send's figure less cached's in the same repetition (bars: 95 % "
        "Student-t interval, which carries the noise of cached's step as well as the "
        "difference's); filled markers on thick lines: the whole median step, hollow "
        "markers on thin lines: the SchedulerOutput's build + encode + decode alone "
        "(per-step medians); each codec keeps its line style and marker, as in the other "
        "figures (msgpack solid with diamonds, pickle dashed with triangles down). The "
        "grey dotted line marks 1 %.") in caption("send_cost_share", d)


def _shown_ticks(ax) -> list[str]:
    """The x tick labels ``ax`` shows (inside its view, with text), major and minor."""
    lo, hi = ax.get_xlim()
    return [t.get_text() for t in ax.xaxis.get_ticklabels(which="both")
            if t.get_text() and lo <= t.get_position()[0] <= hi]


def test_the_send_cost_share_step_axis_is_labelled_across_its_points():
    # cached's steps of 6.2 and 13.1 ms: the log axis was labelled 6 to 10 alone, none
    # by the point at 13.1 ms; under a decade it now steps evenly across the view
    fig = plots.send_cost_share(_share_results(_share_rows({64: 6.2e6, 256: 13.1e6})))
    ax = fig.axes[0]
    fig.canvas.draw()
    lo, hi = ax.get_xlim()
    assert ax.get_xscale() == "log" and lo < 6.2 and 13.1 < hi < 14
    assert _shown_ticks(ax) == ["6", "8", "10", "12"]
    assert ax.xaxis.get_minorticklocs().size == 0
    assert _overlaps(fig) == []
    # over more than a decade: the powers of ten and the 2 and 5 between them
    fig = plots.send_cost_share(_share_results(_share_rows({4: 0.3e6, 64: 6.2e6,
                                                            256: 13.1e6})))
    fig.canvas.draw()
    assert _shown_ticks(fig.axes[0]) == ["1", "10", "0.5", "2", "5"]


def test_plain_log_ticks_step_evenly_under_a_decade():
    locator = plots._plain_log_locator()
    assert list(locator.tick_values(5.9, 13.7)) == [4.0, 6.0, 8.0, 10.0, 12.0, 14.0]
    assert plots._plain_log_locator(minor=True).tick_values(5.9, 13.7) == []
    # over a decade: LogLocator's powers of ten
    assert list(locator.tick_values(0.3, 14.0)) == pytest.approx([0.1, 1.0, 10.0, 100.0])


def test_plain_log_ticks_label_the_bottom_of_a_view_of_3_to_10x():
    """A ratio panel from 0.45 to 3.5 was labelled 1, 2 and 3 alone, the lower third
    of its height (0.45 to 1 on a log axis) bare: 1, 2, 3 and 5 times a power of ten
    spread over the whole view."""
    locator = plots._plain_log_locator()
    assert locator.tick_values(0.45, 3.5) == [0.5, 1.0, 2.0, 3.0]
    assert locator.tick_values(3.0, 25.0) == [3.0, 5.0, 10.0, 20.0]
    assert plots._plain_log_locator(minor=True).tick_values(0.45, 3.5) == []


def test_a_point_without_an_interval_gets_no_cap_beside_points_with_one():
    """A series whose points are partly repeated (a run of one repetition beside one of
    three): the point with no interval is drawn without caps, not with a zero-width bar
    that reads as a tight interval."""
    import math

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        cut = plots._bounded_errorbar(ax, [0, 1], [100.0, 200.0], [90.0, math.nan],
                                      [110.0, math.nan], 1.0, 1000.0, "C0", fmt="o",
                                      capsize=3)
        assert cut == 0
        caps = ax.containers[0].lines[1]
        low, high = (list(c.get_ydata()) for c in caps)
        assert low[0] == 90.0 and high[0] == 110.0
        assert math.isnan(low[1]) and math.isnan(high[1])
    finally:
        plt.close(fig)
