"""The bytes figure of a ``--pp 1,2`` run is drawn against the pipeline stages N, what
differs between its cases: each N its own point, one line per arm and codec (and per
running count B where the run has several), not one line over "running requests"
joining N = 1's B requests per step to N = 2's B / 2."""

from __future__ import annotations

import pytest

from ipc_bench.analysis.results import load
from ipc_bench.report import blocks, plots


@pytest.fixture
def pp_run(shared_pp_run):
    """``analysis_run.PP_RUN_ARGS``' run: --pp 1,2, 4 running, send and direct, msgpack."""
    return shared_pp_run


def test_the_bytes_figure_of_several_pipeline_sizes_is_drawn_against_n(pp_run):
    results = load(pp_run).by_arm()
    fig = plots.bytes_per_step(results)
    steps = results.steps[results.steps["counted"]]
    for ax, col in zip(fig.axes, ("s2r_payload_bytes", "r2s_payload_bytes")):
        assert ax.get_xlabel() == ("pipeline stages N (each step carries one micro-batch: "
                                   "B / N requests)")
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2"]
        assert [ln.get_label() for ln in ax.lines] == ["send / msgpack", "direct / msgpack"]
        for line, arm in zip(ax.lines, ("send", "direct")):
            assert list(line.get_xdata()) == [1, 2]  # N, not the 4 and 2 requests per step
            mine = steps[steps["policy"] == arm]
            assert list(line.get_ydata()) == [mine[mine["pp"] == n][col].mean() for n in (1, 2)]
    assert fig._suptitle.get_text() == "Bytes per step against pipeline stages (B = 4 running)"
    assert blocks.caption("bytes_per_step", plots.drawn(fig)) == (
        "Payload bytes per step in each direction against the number of pipeline stages N "
        "(1, 2) at 4 running requests: each step carries one micro-batch of B / N requests, "
        "so a step's message shrinks with N (mean over counted steps, repetitions pooled), "
        "one line per arm and "
        "codec: `send` and `direct` (msgpack). The runner → scheduler message is the same "
        "for both arms. Where an arm's bytes equal `send`'s the lines coincide: `send`'s "
        "small filled dots lie inside the other arm's larger hollow markers, and the "
        "panel's note names the codecs and counts.")


def test_several_running_counts_get_a_line_each(pp_run):
    """A second running count: a copy of the run's steps labelled B = 8 (twice the
    scheduler -> runner bytes) stands in for it; each (arm, codec, B) is its own line
    over N, with B's marker."""
    from dataclasses import replace

    import pandas as pd

    results = load(pp_run).by_arm()
    more = results.steps.assign(num_running=8, s2r_payload_bytes=results.steps[
        "s2r_payload_bytes"] * 2, case_id=results.steps["case_id"] + "-8")
    fig = plots.bytes_per_step(replace(results, steps=pd.concat([results.steps, more])))
    assert [ln.get_label() for ln in fig.axes[0].lines] == [
        "send / msgpack, B = 4", "send / msgpack, B = 8", "direct / msgpack, B = 4",
        "direct / msgpack, B = 8"]
    assert [ln.get_marker() for ln in fig.axes[0].lines] == ["o", "s", "o", "s"]
    assert fig._suptitle.get_text() == "Bytes per step against pipeline stages"
    assert "one line per arm and codec and per running count B (4, 8; each its own marker)" \
        in blocks.caption("bytes_per_step", plots.drawn(fig))


def test_the_serializer_time_figure_of_several_pipeline_sizes_is_drawn_against_n(pp_run):
    """On a machine with N + 2 cores the times are drawn (here: the cases' records say
    16 cores, so nothing is withheld); they too are drawn against N."""
    from dataclasses import replace

    results = load(pp_run).by_arm()
    cases = results.cases.assign(pp_cores=16, pp_timings_withheld=False)
    fig = plots.codec_time_per_step(replace(results, cases=cases))
    steps = results.steps[results.steps["counted"]]
    encode = (steps["encode_ns"] + steps["runner_encode_ns"]) / 1e3
    enc_ax, dec_ax = fig.axes
    assert dec_ax.get_xlabel() == plots.PP_XLABEL
    assert [ln.get_label() for ln in enc_ax.lines] == ["send", "direct"]
    for line, arm in zip(enc_ax.lines, ("send", "direct")):
        assert list(line.get_xdata()) == [1, 2]
        assert list(line.get_ydata()) == pytest.approx([
            encode[(steps["policy"] == arm) & (steps["pp"] == n)].mean() for n in (1, 2)])
    assert fig._suptitle.get_text() == "Serializer time per step against pipeline stages"
    assert blocks.caption("codec_time_per_step", plots.drawn(fig)).startswith(
        "Serializer time per step (mean over counted steps, repetitions pooled), both "
        "directions summed (the scheduler's SchedulerOutput "
        "and the runner's ModelRunnerOutput), against the number of pipeline stages N (each "
        "step carries one micro-batch of B / N requests), one panel per codec (msgpack), one "
        "line per arm: `send` and `direct`.")
