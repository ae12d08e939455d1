"""Figures leave out the times of cases whose timings are withheld (``analysis.cores``:
N readers on fewer than N + 2 cores) and say so; figures of bytes keep those cases."""

from __future__ import annotations

import pandas as pd
import pytest

from ipc_bench.analysis.results import Results
from ipc_bench.report import plots
from test_withheld_timings import tp_summary

NOTE = ("not drawn: the timings of 2 cases: N ranks need N + 2 free cores, one each for "
        "them and the scheduler, a spare for the kernel and the harness's threads (N = 2 "
        "needs 4); the run's machine had 2. Bytes and the oracles hold.")


def results_of(summaries: list[dict]) -> Results:
    """A one-run ``Results`` whose ``cases`` are ``summaries`` (no per-step tables)."""
    cases = pd.DataFrame([dict(s, run_id="run") for s in summaries])
    empty = pd.DataFrame(columns=["run_id", "case_id"])
    return Results(cases=cases, steps=empty, requests=empty, floor=empty, itl=empty,
                   metadata={"run": {"cases": [{"labels": {"broadcast": "ipc", "num_running": 8,
                                                           "tp": 1}}]}},
                   status={"run": "complete"}, problems={"run": []},
                   paths={"run": "run"})


def points(fig) -> list[float]:
    """The tokens/s the throughput panel draws, one per case, sorted."""
    return sorted(round(y) for c in fig.axes[0].containers for y in c.lines[0].get_ydata()) \
        or sorted(round(y) for line in fig.axes[0].get_lines() for y in line.get_ydata())


def test_throughput_leaves_out_the_withheld_cases_and_says_so():
    withheld = [tp_summary(p, 2, 2, output_tokens_per_s=70_000.0) for p in ("send", "cached")]
    kept = [tp_summary(p, 1, 16, case_id=f"{p}-1", workload="broadcast=ipc,num_running=8,tp=1")
            for p in ("send", "cached")]
    fig = plots.throughput(results_of(withheld + kept))
    # in lines of at most 110 characters in the figure (wider ones ran past its edges)
    assert fig._suptitle.get_text() == (
        "not drawn: the timings of 2 cases: N ranks need N + 2 free cores, one each for "
        "them and the scheduler, a spare\nfor the kernel and the harness's threads (N = 2 "
        "needs 4); the run's machine had 2. Bytes and the oracles hold.")
    assert fig._suptitle.get_text().replace("\n", " ") == NOTE
    assert points(fig) == [50_000, 50_000]
    assert [t.get_text().replace("\n", "") for t in fig.axes[0].get_xticklabels()] == [
        "broadcast=ipc,num_running=8,tp=1"]  # long labels are wrapped
    fig = plots.throughput(results_of(kept))  # nothing withheld: no note
    assert fig._suptitle is None
    with pytest.raises(plots.NoData) as info:
        plots.throughput(results_of(withheld))
    assert str(info.value) == NOTE


def panel_lines(fig) -> list[list[str]]:
    return [[ln.get_label() for ln in ax.lines if not ln.get_label().startswith("_")]
            for ax in fig.axes]


def panel_texts(fig) -> list[list[str]]:
    return [[t.get_text() for t in ax.texts] for ax in fig.axes]


def test_tp_saving_draws_bytes_of_withheld_cases_but_not_their_times():
    withheld = [tp_summary(p, 2, 2) for p in ("send", "cached")]
    fig = plots.tp_saving_figure(results_of(withheld))
    assert panel_lines(fig) == [["ipc / msgpack"], ["ipc / msgpack"], [], []]
    assert panel_texts(fig) == [[], [], ["timings left out\n(why: above)"],
                                ["timings left out\n(why: above)"]]
    assert fig.axes[0].lines[0].get_ydata().tolist() == [20.0]  # 402 - 382 B written
    assert fig._suptitle.get_text().endswith(
        "\ntimes not drawn for 2 cases: N ranks need N + 2 free cores, one each for them "
        "and the scheduler, a spare for\nthe kernel and the harness's threads (N = 2 needs "
        "4); the run's machine had 2. Bytes and the oracles hold.")
    published = [tp_summary(p, 2, 16) for p in ("send", "cached")]
    fig = plots.tp_saving_figure(results_of(published))
    assert panel_lines(fig) == [["ipc / msgpack"]] * 4
    assert panel_texts(fig) == [[], [], [], []]
    assert fig.axes[3].lines[0].get_ydata().tolist() == [1.0]  # 1,000 ns later, in µs
    assert "\n" not in fig._suptitle.get_text()


def test_findings_and_the_pair_table_give_bytes_only_where_timings_are_withheld():
    from ipc_bench.report.blocks import _pair_table
    from ipc_bench.report.findings import findings

    withheld = [tp_summary(p, 2, 2) for p in ("send", "cached")]
    kept = [tp_summary(p, 1, 16, case_id=f"{p}-1", workload="broadcast=ipc,num_running=8,tp=1")
            for p in ("send", "cached")]
    lines = findings(results_of(withheld + kept))
    assert lines[0] == "One repetition per case, so no intervals: a difference of any " \
                       "size may be the machine's noise, which can reach tens of % between " \
                       "two runs of one case on a loaded machine (run with `--repeat N` " \
                       "for 95 % intervals)."
    assert "At 8 running requests, tp=2 (msgpack), cached writes 20 fewer " \
           "bytes per step into the broadcast to the 2 ranks, once for all of them " \
           "(5.0 % of send's scheduler → runner payload); " \
           "times and tokens/s left out (fewer " \
           "than N + 2 cores: see `*` below)." in lines
    published = [ln for ln in lines if ln.startswith("At 8 running requests, "
                                                     "tp=1 (msgpack)")]
    assert len(published) == 1 and "tok/s" in published[0] and \
        "µs per step encoding the SchedulerOutput and the ModelRunnerOutput" in published[0]
    assert lines[-1] == ("`*` timings left out: N ranks need N + 2 free cores, one each "
                         "for them and the scheduler, a spare for the kernel and the "
                         "harness's threads (N = 2 needs 4); the run's machine had 2. Bytes and "
                         "the oracles hold.")
    assert not any("OVERSUBSCRIBED" in ln for ln in lines)
    # all withheld: no tokens/s anywhere, and no "one repetition" caveat about differences
    lines = findings(results_of(withheld))
    assert not any("tok/s" in ln or "µs" in ln or "One repetition" in ln for ln in lines)
    table = _pair_table(results_of(withheld + kept))[0][2]
    metrics = {(row[0], row[2]) for row in table}
    assert ("broadcast=ipc,num_running=8,tp=2", "s2r payload B/step") in metrics
    assert not any(w.endswith("tp=2") and ("µs" in m or "tok/s" in m) for w, m in metrics)
    assert ("broadcast=ipc,num_running=8,tp=1", "output tokens/s") in metrics


def test_the_report_line_of_a_figure_not_drawn_ends_with_one_period(monkeypatch):
    from ipc_bench.report import blocks

    withheld = [tp_summary(p, 2, 2, output_tokens_per_s=70_000.0) for p in ("send", "cached")]
    monkeypatch.setattr(plots, "FIGURES", [("throughput", plots.throughput, "Output tokens/s")])
    assert blocks._figure_blocks(results_of(withheld), "") == [
        ("p", "**Not shown**, and why:"),
        ("ul", [f"Output tokens/s: {NOTE}"])]


def replicated(policy: str, n: int, n_cores: int) -> dict:
    """A ``--codecs replicated`` ``--tp`` case whose N replica schedulers take 10 µs per
    step each (20,000 ns at N = 2)."""
    return tp_summary(policy, n, n_cores, codec="replicated",
                      tp_replica_scheduler_ns_all_ranks_per_step=10_000.0 * n)


def test_tp_per_step_draws_bytes_of_withheld_cases_but_not_their_replica_times():
    from ipc_bench.report import blocks

    fig = plots.tp_per_step_figure(results_of([replicated(p, 2, 2) for p in ("send",
                                                                              "cached")]))
    assert panel_lines(fig) == [["ipc / replicated / send", "ipc / replicated / cached"], []]
    assert panel_texts(fig) == [[], ["timings left out\n(why: above)"]]
    assert fig._suptitle.get_text().replace("\n", " ") == (
        "Per step against N (tensor-parallel broadcast): bytes written once, and the "
        "scheduler every replicated rank runs times not drawn for 2 cases: N ranks need "
        "N + 2 free cores, one each for them and the scheduler, a spare for the kernel and "
        "the harness's threads (N = 2 needs 4); the run's machine had 2. Bytes and the oracles "
        "hold.")
    assert blocks.caption("tp_per_step", plots.drawn(fig)).endswith(
        "one rank's (dashed) and the N ranks' together (solid), what the machine pays. The "
        "times of 2 cases are not drawn: N ranks need N + 2 free cores (the title says how "
        "many the run's machine had); their bytes are.")
    fig = plots.tp_per_step_figure(results_of([replicated(p, 2, 16) for p in ("send",
                                                                               "cached")]))
    assert panel_lines(fig)[1] == ["ipc / send: N ranks", "ipc / send: one rank",
                                   "ipc / cached: N ranks", "ipc / cached: one rank"]
    assert [ln.get_ydata().tolist() for ln in fig.axes[1].lines[:2]] == [[20.0], [10.0]]
    assert panel_texts(fig) == [[], []]
    assert blocks.caption("tp_per_step", plots.drawn(fig)).endswith(
        "one rank's (dashed) and the N ranks' together (solid), what the machine pays.")


def test_a_run_without_latencies_says_not_a_timed_replay_before_withheld_timings():
    withheld = [tp_summary(p, 2, 2) for p in ("send", "cached")]
    with pytest.raises(plots.NoData) as info:
        plots.latency_cdfs(results_of(withheld))
    assert str(info.value) == "no per-request latencies (ttft_s, itl.csv): not a timed replay"


def test_the_throughput_caption_does_not_say_every_case_when_some_are_not_drawn():
    from ipc_bench.report import blocks

    withheld = [tp_summary(p, 2, 2, output_tokens_per_s=70_000.0) for p in ("send", "cached")]
    kept = [tp_summary(p, 1, 16, case_id=f"{p}-1", workload="broadcast=ipc,num_running=8,tp=1")
            for p in ("send", "cached")]
    text = blocks.caption("throughput", plots.drawn(plots.throughput(results_of(withheld
                                                                                + kept))))
    assert text.startswith(
        "Output tokens/s of the cases whose timings are published (tokens sampled in "
        "counted steps over their busy wall time), one point per arm and codec: `send` and "
        "`cached`; one repetition per case, so no error bars. The title says which cases "
        "are not drawn, and why. Right: cached/send")
    text = blocks.caption("throughput", plots.drawn(plots.throughput(results_of(kept))))
    assert text.startswith("Output tokens/s of every case (tokens sampled in counted steps")


def test_the_reasons_a_figure_is_not_drawn_fit_the_run():
    # a soak records no runner columns by design; any other run lost its runners' reports
    assert plots.no_runner_timings(pd.DataFrame({"scenario": ["soak"]})) == \
        plots.NO_RUNNER_TIMINGS
    assert plots.no_runner_timings(pd.DataFrame({"scenario": ["decode-steady"]})) == (
        "no per-step runner timings: the runners' reports of their steps never arrived "
        "(the run was stopped before they were collected)")
    # a send/cached pair with no counted step is said so, not that the pair is missing
    pair = pd.DataFrame({"policy": ["send", "cached"], "workload": ["w", "w"],
                         "codec": ["msgpack", "msgpack"]})
    assert plots._no_pair_reason(pair) == (
        "its send and cached cases have no counted step (every step was warm-up: "
        "--warmup-steps)")
    assert plots._no_pair_reason(pair.assign(codec=["msgpack", "pickle"])) == \
        "needs send and cached cases of the same workload and codec"
    assert plots._no_pair_reason(pair[:1]) == \
        "needs send and cached cases of the same workload and codec"


def test_a_figure_of_counted_steps_says_when_every_step_was_warm_up():
    """Steps of finished cases, none counted: all warm-up (--warmup-steps at least the
    replay's steps) is said so; a run that counted none otherwise is not told that."""
    class Run:
        def __init__(self, warmup):
            self.steps = pd.DataFrame({"codec": ["msgpack"] * 3, "counted": [False] * 3,
                                       "warmup": warmup})

    with pytest.raises(plots.NoData) as err:
        plots._counted(Run([True] * 3))
    assert str(err.value) == ("no counted two-process steps of a finished case in this "
                              "run (every step was warm-up: --warmup-steps)")
    with pytest.raises(plots.NoData) as err:
        plots._counted(Run([True, True, False]), two_process=False)
    assert str(err.value) == "no counted steps of a finished case in this run"


def test_a_pair_planned_but_not_finished_is_said_so():
    """The run's grid holds send and cached of msgpack, but only send finished: the
    pair table says the run stopped before the pair was done, not that it has none."""
    from ipc_bench.report import blocks

    send = tp_summary("send", 1, 16)
    results = results_of([send])
    results.metadata["run"]["cases"] = [dict(policy=p, arm=p, codec=send["codec"])
                                        for p in ("send", "cached")]
    assert blocks._pair_table(results) == [(
        "note", "No send/cached pair finished in this run: its grid has send and cached of a "
                "codec, but it stopped before both had finished (the note at the top says "
                "where).")]
    results.metadata["run"]["cases"] = results.metadata["run"]["cases"][:1]
    assert blocks._pair_table(results) == [("note", "No send/cached pair in this run.")]
