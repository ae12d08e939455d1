"""Series that share their x are drawn so that each shows: ``send_cost_share`` offsets
them sideways by a fixed, small amount (``plots._dodge_bars``; the running-request
ticks and ``drawn`` keep the true counts), and the bytes figure draws ``send`` small and
filled over every other arm's larger hollow marker, noting where the runner ->
scheduler bytes of the two are equal (they are: the ModelRunnerOutput is the same under
both policies), so neither line hides the other."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from analysis_run import run_bench
from ipc_bench.analysis.results import load
from ipc_bench.report import blocks, plots
from test_figure_layout import _share_results, _share_rows

WHOLE, S2R = plots.SHARE_LINEWIDTHS


def _xs(ax) -> list[list[float]]:
    """The x of every point of each series of ``ax``, in drawing order."""
    return [[float(x) for x in c.lines[0].get_xdata()] for c in ax.containers]


def test_the_running_panel_offsets_each_series_on_a_log_axis():
    # 4, 64 and 256 running: a log axis (base 2) spanning 6 octaves; 4 series (msgpack,
    # pickle; whole step, s2r path) 2 % of that apart, 0.12 octave: -0.18, -0.06, +0.06,
    # +0.18 octave (the narrowest gap, 2 octaves, bounds them at 0.2 each: not reached)
    fig = plots.send_cost_share(_share_results(_share_rows({4: 0.3e6, 64: 6.2e6,
                                                            256: 13.1e6})))
    ax = fig.axes[1]
    assert ax.get_xscale() == "log"
    factors = [2 ** -0.18, 2 ** -0.06, 2 ** 0.06, 2 ** 0.18]
    assert _xs(ax) == [pytest.approx([4 * f, 64 * f, 256 * f], rel=1e-12) for f in factors]
    assert [round(xs[0], 4) for xs in _xs(ax)] == [3.5308, 3.8371, 4.1699, 4.5315]
    assert [c.lines[0].get_linewidth() for c in ax.containers] == [WHOLE, S2R, WHOLE, S2R]
    assert list(ax.get_xticks()) == [4.0, 64.0, 256.0]  # the ticks at the true counts
    d = plots.drawn(fig)
    assert d["running"] == [4.0, 64.0, 256.0]
    assert d["dodge"]["running_log"] is True
    assert d["dodge"]["running"] == pytest.approx(factors, rel=1e-12)
    assert ax.get_title() == ("against running requests\npoints offset sideways for "
                              "legibility: x is the running count at the tick")


def test_the_step_panel_sets_apart_only_the_two_series_of_one_step():
    # cached's steps 0.3, 6.2 and 13.1 ms: each codec's whole step and s2r path share
    # that x; the whole step is drawn left, the s2r right, each half of 2 % of the
    # axis' log2 span away; the codecs stay at their measured steps
    fig = plots.send_cost_share(_share_results(_share_rows({4: 0.3e6, 64: 6.2e6,
                                                            256: 13.1e6})))
    half = plots.DODGE_STEP * math.log2(13.1 / 0.3) / 2
    assert round(half, 6) == 0.054485
    steps = [0.3, 6.2, 13.1]
    left = pytest.approx([x * 2 ** -half for x in steps], rel=1e-12)
    right = pytest.approx([x * 2 ** half for x in steps], rel=1e-12)
    assert _xs(fig.axes[0]) == [left, right, left, right]
    assert plots.drawn(fig)["dodge"]["step"] == pytest.approx(
        [2 ** -half, 2 ** half] * 2, rel=1e-12)
    assert fig.axes[0].get_title() == ("against step time (dotted: 1 %)\nwhole step and "
                                       "SchedulerOutput path offset sideways for legibility")


def test_the_running_panel_offsets_are_added_on_a_linear_axis():
    # 64 and 256: a linear axis (a factor of 4); 2 % of its 192 span, 3.84 apart
    fig = plots.send_cost_share(_share_results(_share_rows({64: 6.2e6, 256: 13.1e6})))
    ax = fig.axes[1]
    assert ax.get_xscale() == "linear"
    assert _xs(ax) == [pytest.approx([64 + o, 256 + o], abs=1e-9)
                       for o in (-5.76, -1.92, 1.92, 5.76)]
    assert plots.drawn(fig)["dodge"]["running"] == pytest.approx(
        [-5.76, -1.92, 1.92, 5.76], abs=1e-12)
    assert (
        "The grey dotted line marks 1 %. In the right panel the series are drawn a little "
        "apart at each running count, for legibility: each stands for the count at its "
        "nearest tick. In the left panel each codec's whole-step point is drawn a little left of "
        "its SchedulerOutput point, the two sharing cached's step. The y axis"
    ) in blocks.caption("send_cost_share", plots.drawn(fig))


def test_a_narrow_gap_between_counts_bounds_the_offsets():
    # 16 and 20 running are 0.32 octave apart: 4 series at 2 % of the 4-octave span
    # (0.08) would put 16's outermost point 0.12 octave over, past the third of the way
    # to 20; the gap bounds the step to 0.3 of it over the 3 steps, 0.1 * log2(1.25)
    fig = plots.send_cost_share(_share_results(_share_rows({16: 1e6, 20: 1.2e6,
                                                            256: 13.1e6})))
    step = 0.1 * math.log2(1.25)
    factors = [2 ** (k * step) for k in (-1.5, -0.5, 0.5, 1.5)]
    assert plots.drawn(fig)["dodge"]["running"] == pytest.approx(factors, rel=1e-12)
    assert max(xs[0] for xs in _xs(fig.axes[1])) == pytest.approx(16 * 1.25 ** 0.15)
    assert min(xs[1] for xs in _xs(fig.axes[1])) == pytest.approx(20 * 1.25 ** -0.15)


def test_dodge_offsets():
    assert plots._dodge([4.0, 16.0], 1, log=True) == [1.0]  # one series: no offset
    assert plots._dodge([], 3, log=False) == [0.0, 0.0, 0.0]
    # one count alone: 2 % of its own size (linear), of an octave (log)
    assert plots._dodge([50.0], 2, log=False) == [-0.5, 0.5]
    assert plots._dodge([50.0], 3, log=True) == [2 ** -0.02, 1.0, 2 ** 0.02]
    # a continuous axis (the step panel): no gap bound
    assert plots._dodge([1.0, 1.01, 2.0], 2, log=True, bound_by_gap=False) == [
        2 ** -0.01, 2 ** 0.01]


@pytest.fixture(scope="module")
def bytes_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("bytesmarkers") / "run"
    run_bench(path, ["--scenario", "decode-steady", "--num-running", "4,16", "--steps", "20",
                     "--warmup-steps", "5", "--codecs", "msgpack,pickle",
                     "--no-single-process", "--no-floor"])
    return path


def test_the_bytes_figure_rings_send_with_cached_where_they_are_equal(bytes_run):
    res = load(bytes_run)
    fig = plots.bytes_per_step(res)
    for ax in fig.axes[:2]:
        looks = {ln.get_label(): (ln.get_marker(), ln.get_markersize(),
                                  ln.get_markerfacecolor(), ln.get_zorder())
                 for ln in ax.lines}
        send, cached = plots.POLICY_COLORS["send"], plots.POLICY_COLORS["cached"]
        assert looks == {"send / msgpack": ("o", 5.0, send, 3),
                         "cached / msgpack": ("s", 10.0, "white", 2),
                         "send / pickle": ("o", 5.0, send, 3),
                         "cached / pickle": ("s", 10.0, "white", 2)}
    r2s = fig.axes[1]
    by = {ln.get_label(): list(ln.get_ydata()) for ln in r2s.lines}
    assert by["send / msgpack"] == by["cached / msgpack"]  # byte-identical messages
    assert [t.get_text() for t in r2s.texts] == [
        "cached's bytes = send's: msgpack, pickle at every count\n"
        "send's dots lie inside cached's hollow markers"]
    d = plots.drawn(fig)
    assert d["r2s_equal"] == {"cached": {"msgpack": [4.0, 16.0], "pickle": [4.0, 16.0]}}
    assert ("message is the same for both policies. Where their bytes are equal the two "
            "lines coincide: `send`'s small filled dots lie inside `cached`'s larger hollow "
            "squares, and the runner → scheduler panel's note names the codecs and "
            "counts.") in blocks.caption("bytes_per_step", d)


def test_the_bytes_note_names_only_the_counts_where_they_are_equal(bytes_run):
    res = load(bytes_run)
    st = res.steps
    bump = (st["policy"] == "cached") & (st["num_reqs"] == 16) & (st["codec"] == "pickle")
    st = st.assign(r2s_payload_bytes=st["r2s_payload_bytes"] + bump * 7)
    fig = plots.bytes_per_step(replace(res, steps=st))
    assert [t.get_text() for t in fig.axes[1].texts] == [
        "cached's bytes = send's: msgpack at every count; pickle at 4 running\n"
        "send's dots lie inside cached's hollow markers"]
    assert plots.drawn(fig)["r2s_equal"] == {"cached": {"msgpack": [4.0, 16.0],
                                                        "pickle": [4.0]}}


def _looks(ax) -> dict:
    return {ln.get_label(): (ln.get_marker(), ln.get_markersize(), ln.get_markerfacecolor(),
                             ln.get_zorder()) for ln in ax.lines}


def test_an_aa_run_notes_send_prime_equal_to_send_in_both_panels(tmp_path):
    run_bench(tmp_path / "aa", ["--scenario", "decode-steady", "--num-running", "4,16",
                                "--steps", "20", "--warmup-steps", "5", "--codecs",
                                "msgpack", "--aa", "--no-single-process", "--no-floor"])
    fig = plots.bytes_per_step(load(tmp_path / "aa").by_arm())
    send = plots.POLICY_COLORS["send"]
    note = ("the bytes of send' = send's: msgpack at every count\n"
            "send's dots lie inside the hollow markers of send'")
    for ax in fig.axes[:2]:
        assert _looks(ax) == {"send / msgpack": ("o", 5.0, send, 3),
                              "send' / msgpack": ("^", 10.0, "white", 2)}
        assert [t.get_text() for t in ax.texts][-1] == note
    d = plots.drawn(fig)
    assert d["r2s_equal"] == d["s2r_equal"] == {"send'": {"msgpack": [4.0, 16.0]}}
    assert blocks.EQUAL_LINES in blocks.caption("bytes_per_step", d)


def _two_running_counts(results):
    """``results`` (a run of one running count) as if it had run 8 and 16 running: its
    steps twice, labelled ``num_running`` 8 and 16 (their case ids and workloads too),
    the 16's scheduler -> runner bytes doubled. The bytes figure reads only the steps
    (tests/report/test_pp_bytes_figure's second running count is made the same way)."""
    import pandas as pd

    st = results.steps
    eight = st.assign(num_running=8, case_id=st["case_id"] + "-8",
                      workload=st["workload"].str.replace("num_running=4", "num_running=8"))
    sixteen = st.assign(num_running=16, case_id=st["case_id"] + "-16",
                        workload=st["workload"].str.replace("num_running=4", "num_running=16"),
                        s2r_payload_bytes=st["s2r_payload_bytes"] * 2)
    return replace(results, steps=pd.concat([eight, sixteen], ignore_index=True))


def test_the_pipeline_size_bytes_figure_rings_send_too(shared_pp_run):
    # the shared --pp 1,2 run (4 running, send and direct, msgpack: conftest's
    # shared_pp_run) drawn as a run of 8 and 16 running: its stages import torch, so
    # one run serves every pipeline figure test of the worker
    results = load(shared_pp_run).by_arm()
    assert set(results.steps["num_running"]) == {4} and set(results.steps["pp"]) == {1, 2}
    fig = plots.bytes_per_step(_two_running_counts(results))
    send = plots.POLICY_COLORS["send"]
    for ax in fig.axes[:2]:  # each running count its own marker, send's small and filled
        assert _looks(ax) == {"send / msgpack, B = 8": ("o", 5.0, send, 3),
                              "send / msgpack, B = 16": ("s", 5.0, send, 3),
                              "direct / msgpack, B = 8": ("o", 10.0, "white", 2),
                              "direct / msgpack, B = 16": ("s", 10.0, "white", 2)}
    assert [t.get_text() for t in fig.axes[1].texts] == [
        "direct's bytes = send's: msgpack (B = 8, 16) at every N\n"
        "send's dots lie inside direct's hollow markers"]
    assert list(fig.axes[0].texts) == []  # direct sends no new token ids: never equal
    d = plots.drawn(fig)
    assert (d["r2s_equal"], d["s2r_equal"]) == (
        {"direct": {"msgpack (B = 8, 16)": [1.0, 2.0]}}, {})
    assert blocks.caption("bytes_per_step", d).endswith(
        "The runner → scheduler message is the same for both arms." + blocks.EQUAL_LINES)
