"""One rule for "within noise" (an interval holding 0 that stays within 1.1x either way, else
"inconclusive"), in the share lines as in the findings; a multi-run throughput caption
that says which points have error bars; a timed replay called arrival-bound only where
its engine kept up with the arrivals (by ``num_waiting`` where recorded, else by
``arrival_span_share``), the report naming the measure; and the case's whole time in
``summary.json``."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from analysis_run import bench_in_process, run_bench
from fault_helpers import one_runner_mark
from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning
from ipc_bench.analysis.send_cost import path_difference, step_difference
from ipc_bench.analysis.pace import (arrived_at_start, idle_figures, idled_between_bursts,
                                     replay_pace, replay_pace_basis, replay_pace_evidence,
                                     replay_pace_figures)
from ipc_bench.analysis.summary import waiting_figures
from ipc_bench.report import blocks
from ipc_bench.report.findings import TIMED_AT_START
from ipc_bench.report.tables import PACE_NOT_RECORDED_NOTE, arrival_bound_note

INCONCLUSIVE = (", inconclusive: the interval reaches beyond 1.1x either way, too few repetitions or "
                "too noisy to tell a 10 % difference from none")


def test_a_share_interval_holding_0_past_10_pct_is_inconclusive_not_noise():
    # the user's --repeat 3 figures: +1.35 % in [-14.41, +17.11] %
    assert step_difference(0.0135, (-0.1441, 0.1711), "t", 3) == (
        "differs from cached's by +1.35 % (send - cached: [-14.41, +17.11] %, 95 % "
        "Student-t interval)" + INCONCLUSIVE)
    assert step_difference(0.0135, (-0.0441, 0.0711), "t", 3) == (
        "is not resolved from cached's: +1.35 % (send - cached: [-4.41, +7.11] %, 95 % "
        "Student-t interval): the interval holds 0 but reaches beyond 1 % of the step, so it "
        "does not show the cost is small")
    assert path_difference(4000.0, 0.04, (-0.0871, 0.1671), "cached's step", "t", 2) == (
        "differs from cached's by +4.00 µs per step, +4.00 % of cached's step (send - "
        "cached: [-8.71, +16.71] %, 95 % Student-t interval)" + INCONCLUSIVE)
    assert path_difference(4000.0, 0.016, (-0.0856, 0.0976), "cached's step", "t", 2) == (
        "is not resolved from cached's: +4.00 µs per step, +1.60 % of cached's step (send - "
        "cached: [-8.56, +9.76] %, 95 % Student-t interval): the interval holds 0 but "
        "reaches beyond 1 % of the step, so it does not show the cost is small")
    # an interval excluding 0 is a cost, however wide
    assert step_difference(0.20, (0.05, 0.35), "t", 3) == (
        "is 20.00 % longer than cached's (send - cached: [+5.00, +35.00] %, 95 % "
        "Student-t interval)")


def test_the_caption_names_the_run_without_error_bars():
    d = dict(series=[("send", "msgpack"), ("cached", "msgpack")], panels=["tokens/s"],
             repeated=True, partly_repeated=True, single_runs=["r1"])
    assert blocks._throughput_caption(d) == (
        "Output tokens/s of every case (tokens sampled in counted steps over their busy "
        "wall time), one point per arm and codec: `send` and `cached`; each point is the "
        "geometric mean over a case's repetitions; error bars, where "
        "a case repeated, are 95 % Student-t intervals of the log tokens/s; run `r1` has one "
        "repetition per case, so no error bars.")
    assert blocks._error_bar_words(dict(d, single_runs=[])) == (
        "each point is the geometric mean over a case's repetitions; error bars, where a "
        "case repeated, are 95 % Student-t intervals of the log tokens/s; a point of one "
        "repetition has none.")
    assert blocks._error_bar_words(dict(d, partly_repeated=False)) == (
        "each point is the geometric mean over a case's repetitions; error bars are 95 % "
        "Student-t intervals of the log tokens/s.")


ARGS = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "30",
        "--warmup-steps", "5", "--codecs", "msgpack", "--no-single-process", "--no-floor"]


def test_a_report_of_a_one_and_a_three_repetition_run(tmp_path):
    # not --quiet: the line printed as each case ends goes to stderr
    proc = bench_in_process([*ARGS, "--output", str(tmp_path / "r1")])
    assert proc.returncode == 0, proc.stderr
    run_bench(tmp_path / "r3", ARGS + ["--repeat", "3"])
    # the figure the terminal prints as each case ends is the stored case_elapsed_s
    cases = json.loads((tmp_path / "r1" / "summary.json").read_text())["cases"]
    printed = re.findall(r"\(([\d.]+) s for the whole case\)", proc.stderr)
    assert len(printed) == len(cases) == 2
    assert printed == [f"{c['case_elapsed_s']:.1f}" for c in cases]
    assert all(c["case_elapsed_s"] > 0 for c in cases)
    assert cli.main(["report", str(tmp_path / "r1"), str(tmp_path / "r3"),
                     "--output", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text().split("\n\n")
    caption = next(md[i + 1] for i, p in enumerate(md) if "(compare-throughput.png)" in p)
    assert ("; error bars, where a case repeated, are 95 % Student-t intervals of the "
            "log tokens/s; run `r1` has one repetition per case, so no error bars.") in caption
    assert "error bars are 95 % Student-t intervals" not in caption


def _replay(share_of_wall: float, case_id: str = "w/send/msgpack", num_waiting=None,
            idle_s=None) -> dict:
    """A timed replay's summary case of 3.2 s of wall time whose last request arrived
    ``share_of_wall`` of the way into it; with ``num_waiting`` (one per step) its
    waiting figures too, else none (a run before them); with ``idle_s`` its idle time
    (s) too, else none (a run before it)."""
    wall = 3.2
    case = dict(case_id=case_id, trace_speedup=1000.0, wall_s=wall,
                **replay_pace_figures([dict(arrival_s=0.0),
                                       dict(arrival_s=share_of_wall * wall)], wall))
    if num_waiting is not None:
        case.update(waiting_figures(np.asarray(num_waiting, dtype=np.int64)))
    if idle_s is not None:
        case.update(idle_figures(int(idle_s * 1e9), wall))
    return case


LOAD_BOUND_WORDS = (
    "the requests arrived faster than the engine served them and queued, so the "
    "engine, not the trace, set the pace; there tokens/s (wall) is the engine's "
    "throughput under that backlog, comparable between arms as such, and TTFT is "
    "mostly queueing delay.")
BY_NUM_WAITING = ("num_waiting (load-bound where every request arrived at the start, or "
                  "where a request was left waiting after at least 50 % of a replay's "
                  "steps (or after fewer, with 0.1 or more per step on average, where the "
                  "last request arrived less than 50 % of the way into the wall time) and "
                  "the engine idled less than 10 % of the wall time)")
BY_SPAN = ("arrival_span_share (a run before num_waiting: load-bound where the last "
           "request arrived less than 50 % of the way into the wall time)")


def test_a_replay_is_arrival_bound_only_where_the_engine_kept_up():
    """Before num_waiting, by arrival_span_share (a stand-in: the last arrival's share
    of the wall time)."""
    assert replay_pace_figures([dict(arrival_s=0.0), dict(arrival_s=0.1)], 3.2) == dict(
        last_arrival_s=0.1, arrival_span_share=0.1 / 3.2)
    assert replay_pace_figures([], 3.2) == {}
    kept_up, queued = _replay(0.9), _replay(0.1 / 3.2, "w/cached/msgpack")
    assert replay_pace(kept_up) == "arrival-bound"
    assert replay_pace(queued) == "load-bound"
    assert replay_pace_basis(queued) == "arrival_span_share"
    assert replay_pace(dict(trace_speedup=1000.0)) is None  # a run before the field
    assert replay_pace_basis(dict(trace_speedup=1000.0)) is None
    assert arrival_bound_note([kept_up]) == (
        "1 timed replay case is arrival-bound: the engine kept up with the arrivals, so the "
        "trace, not the engine, set the pace; its tokens/s (wall) is not a throughput "
        f"comparison between arms. Pace by {BY_SPAN} for 1 case.")
    assert arrival_bound_note([dict(trace_speedup=1000.0)]) == (
        "pace not recorded (a run before the figures that label it): tokens/s (wall) may "
        "be arrival-bound, and then not a throughput comparison between arms.")
    # beside labelled ones, the cases of a run before the figures are counted, not left out
    old = dict(trace_speedup=1000.0, case_id="old/send/msgpack")
    assert arrival_bound_note([kept_up, old]) == arrival_bound_note([kept_up]) + (
        " 1 more timed replay case records no pace (a run before the figures that label "
        "it): its tokens/s (wall) may be arrival-bound.")
    assert arrival_bound_note([queued, old, old]).endswith(
        " 2 more timed replay cases record no pace (a run before the figures that label "
        "it): their tokens/s (wall) may be arrival-bound.")
    assert arrival_bound_note([kept_up, queued]) == (
        "1 of 2 timed replay cases is load-bound, not arrival-bound (w/cached/msgpack: by "
        "arrival_span_share (recorded before num_waiting): its last request arrived 0.10 s "
        f"into 3.20 s of wall time): {LOAD_BOUND_WORDS} The others are arrival-bound: their "
        f"tokens/s is not a throughput comparison between arms. Pace by {BY_SPAN} for "
        "2 cases.")


def test_num_waiting_labels_a_replay_whatever_its_last_arrival():
    """Where recorded, the steps with a request left waiting decide: one long request at
    the end (nothing waited, the last arrival early in the wall time) is arrival-bound;
    a backlog over most steps whose last request arrived late is load-bound."""
    assert waiting_figures(np.array([0, 3, 2, 0], dtype=np.int64)) == dict(
        num_waiting_mean=1.25, waiting_step_share=0.5)
    assert waiting_figures(np.zeros(0, dtype=np.int64)) == {}
    long_tail = _replay(0.1, "w/send/msgpack", [0] * 10)
    backlog = _replay(0.9, "w/cached/msgpack", [4, 3, 3, 2, 2, 1, 0, 0])
    just_under = _replay(0.9, "w/send/msgpack", [1, 0, 0, 0, 0, 0, 0, 1, 0, 1])
    burst = _replay(0.01, "w/send/pickle", [5, 3, 0, 0, 0, 0, 0, 0, 0, 0])
    assert [replay_pace_basis(c) for c in (long_tail, backlog)] == ["num_waiting"] * 2
    assert replay_pace(long_tail) == "arrival-bound"  # arrival_span_share 0.1 said load
    assert replay_pace(backlog) == "load-bound"  # arrival_span_share 0.9 said arrival
    assert (replay_pace(just_under), just_under["waiting_step_share"]) == (
        "arrival-bound", 0.3)
    # a burst over in the first 1 % of the wall time, queued for its first 2 steps: the
    # engine drained the queue it built
    assert (replay_pace(burst), burst["waiting_step_share"]) == ("load-bound", 0.2)
    assert replay_pace_evidence(burst) == (
        "by num_waiting: a request was left waiting after 20 % of its steps, 0.8 per step "
        "on average, and its last request arrived 1 % of the way into its wall time")
    assert replay_pace_evidence(backlog).endswith("on average")
    # one request left waiting after one step of 181, the arrivals over at 46 % of the
    # wall time: too small a queue (0.0055 per step, under BURST_QUEUE_MIN), arrival-bound
    stray = _replay(0.46, "w/send'/msgpack", [0] * 90 + [1] + [0] * 90)
    assert (replay_pace(stray), round(stray["num_waiting_mean"], 4)) == (
        "arrival-bound", 0.0055)
    # two requests at once, served one at a time: the second waits 49 of 100 steps
    two = _replay(0.0, "w/send'/msgpack", [1] * 49 + [0] * 51)
    assert (replay_pace(two), two["waiting_step_share"]) == ("load-bound", 0.49)
    assert arrival_bound_note([long_tail]) == (
        "1 timed replay case is arrival-bound: the engine kept up with the arrivals, so the "
        "trace, not the engine, set the pace; its tokens/s (wall) is not a throughput "
        f"comparison between arms. Pace by {BY_NUM_WAITING} for 1 case.")
    # a run of each kind: the case named is the one labelled by num_waiting
    older = _replay(0.01, "v/send/msgpack")
    assert arrival_bound_note([long_tail, backlog, older]) == (
        "2 of 3 timed replay cases are load-bound, not arrival-bound (w/cached/msgpack: by "
        "num_waiting: a request was left waiting after 75 % of its steps, 1.9 per step on "
        "average): "
        f"{LOAD_BOUND_WORDS} The others are arrival-bound: their tokens/s is not a "
        f"throughput comparison between arms. Pace by {BY_NUM_WAITING} for 2 cases and "
        f"by {BY_SPAN} for 1 case.")


def test_a_drained_burst_is_not_called_a_saturated_engines_throughput():
    """A burst over early and queued for a few steps is load-bound, but its wall time
    ends with its longest requests' tails: the note and the finding say so, not that
    its tokens/s (wall) is the engine's throughput under a backlog."""
    from ipc_bench.analysis.pace import drained_a_burst
    from ipc_bench.report import findings

    burst = _replay(0.01, "w/send/pickle", [5, 3, 0, 0, 0, 0, 0, 0, 0, 0])
    backlog = _replay(0.9, "w/cached/msgpack", [4, 3, 3, 2, 2, 1, 0, 0])
    two = _replay(0.0, "w/send'/msgpack", [1] * 49 + [0] * 51)  # one at a time
    bursty = _replay(0.01, "w/send/msgpack", [5, 3, 0, 0], idle_s=0.8)  # idled: arrival-bound
    assert [replay_pace(c) for c in (burst, backlog, two, bursty)] == [
        "load-bound", "load-bound", "load-bound", "arrival-bound"]
    assert [drained_a_burst(c) for c in (burst, backlog, two, bursty)] == [
        True, False, True, False]
    assert not drained_a_burst(_replay(0.01, "v/send/msgpack"))  # a run before num_waiting
    evidence = ("by num_waiting: a request was left waiting after 20 % of its steps, 0.8 "
                "per step on average, and its last request arrived 1 % of the way into "
                "its wall time")
    assert arrival_bound_note([burst, dict(burst, case_id="w/cached/pickle")]) == (
        f"Both timed replay cases are load-bound, not arrival-bound (w/send/pickle: "
        f"{evidence}): a burst of requests arrived faster than the engine served them and "
        "queued, and the engine drained it, so the engine, not the trace, set the pace; "
        "there tokens/s (wall) compares the arms' times to drain the same burst but is no "
        "saturated engine's throughput: a drained burst's wall time ends with the tails of "
        "its longest requests, few requests running, so it depends on the trace's longest "
        "outputs (the engine's throughput while busy is busy_output_tokens_per_s in "
        "summary.json, over the counted steps, those tails among them), and TTFT is mostly "
        f"queueing delay. Pace by {BY_NUM_WAITING} for 2 cases.")
    assert findings._timed_replay_words(pd.DataFrame([burst])) == (
        "This is a timed replay, but load-bound: a burst of its requests arrived faster "
        f"than the engine served them (in w/send/pickle, {evidence}) and queued, and the "
        "engine drained it, so the engine, not the trace, set the pace; its tokens/s "
        "(wall), every output token over the wall time from the first arrival to the "
        "last completion, compares the arms' times to drain the same burst but is no "
        "saturated engine's throughput: a drained burst's wall time ends with the tails "
        "of its longest requests, few requests running, so it depends on the trace's "
        "longest outputs (the engine's throughput while busy is "
        "`busy_output_tokens_per_s` in summary.json, over the counted steps, those tails "
        "among them), and its TTFT (the Latency section) is mostly queueing delay.")
    # beside a backlog, the case named is the backlog, and so are the words
    assert arrival_bound_note([burst, backlog]).startswith(
        "Both timed replay cases are load-bound, not arrival-bound (w/cached/msgpack: by "
        "num_waiting: a request was left waiting after 75 % of its steps, 1.9 per step on "
        f"average): {LOAD_BOUND_WORDS}")
    assert findings._timed_replay_words(pd.DataFrame([burst, backlog])).startswith(
        "This is a timed replay, but load-bound: its requests arrived faster than the "
        "engine served them (in w/cached/msgpack, by num_waiting:")


def test_a_replay_that_queued_bursts_and_idled_between_them_is_arrival_bound():
    """Requests that waited after most steps make a replay load-bound only where the
    engine was busy: one that idled 10 % of its wall time or more queued the bursts its
    arrivals brought and waited for the next, so the trace set its wall time."""
    assert idle_figures(800_000_000, 3.2) == dict(idle_s=0.8, idle_share=0.25)
    assert idle_figures(0, 0.0) == dict(idle_s=0.0, idle_share=None)
    waited = [1, 1, 1, 0]  # a request waiting after 75 % of the steps
    bursty = _replay(0.9, "w/send/msgpack", waited, idle_s=0.8)
    busy = _replay(0.9, "w/cached/msgpack", waited, idle_s=0.3)  # 9.4 %: busy enough
    before = _replay(0.9, "v/send/msgpack", waited)  # a run before idle_s
    calm = _replay(0.9, "w/send/pickle", [0, 0, 0, 1], idle_s=2.0)  # never queued long
    assert [replay_pace(c) for c in (bursty, busy, before, calm)] == [
        "arrival-bound", "load-bound", "load-bound", "arrival-bound"]
    assert [idled_between_bursts(c) for c in (bursty, busy, before, calm)] == [
        True, False, False, False]
    assert replay_pace_evidence(bursty) == (
        "by num_waiting: a request was left waiting after 75 % of its steps, 0.8 per step "
        "on average, but the engine idled 25 % of its wall time, waiting for arrivals")
    assert replay_pace_evidence(busy) == (
        "by num_waiting: a request was left waiting after 75 % of its steps, 0.8 per step "
        "on average, the engine idle 9 % of its wall time")
    assert replay_pace_evidence(calm) == (
        "by num_waiting: a request was left waiting after 25 % of its steps, 0.2 per step "
        "on average")
    bursts = ("queued the bursts the arrivals brought and idled between them "
              "(w/send/msgpack: by num_waiting: a request was left waiting after 75 % of "
              "its steps, 0.8 per step on average, but the engine idled 25 % of its wall time, "
              "waiting for arrivals)")
    tail = ("so the trace, not the engine, set the pace; their tokens/s (wall) is not a "
            "throughput comparison between arms.")
    assert arrival_bound_note([bursty, calm]) == (
        f"Both timed replay cases are arrival-bound: the engine kept up with the arrivals "
        f"or, in 1 of 2 cases, {bursts}, {tail} Pace by {BY_NUM_WAITING} for 2 cases.")
    assert arrival_bound_note([bursty, dict(bursty, case_id="x")]).startswith(
        f"Both timed replay cases are arrival-bound: the engine {bursts}, {tail}")
    assert arrival_bound_note([bursty, busy]) == (
        "1 of 2 timed replay cases is load-bound, not arrival-bound (w/cached/msgpack: by "
        "num_waiting: a request was left waiting after 75 % of its steps, 0.8 per step on "
        "average, "
        f"the engine idle 9 % of its wall time): {LOAD_BOUND_WORDS} The others are "
        f"arrival-bound (the engine {bursts}): their tokens/s is not a throughput "
        f"comparison between arms. Pace by {BY_NUM_WAITING} for 2 cases.")


def test_a_real_replay_of_bursts_is_arrival_bound(tmp_path):
    # three bursts of 3 requests (5 output tokens each: 5 steps), 0.3 s apart at 1000x,
    # served one at a time (--max-num-seqs 1): in each burst 10 of its 15 steps leave a
    # request waiting, then the engine idles about 0.2 s until the next burst
    rows = [(f"18:{15 + 5 * b}:46.0000000", 100, 5) for b in range(3) for _ in range(3)]
    out, cases = _timed_run(tmp_path, "bursts", rows, ["--max-num-seqs", "1"])
    for c in cases:
        assert (c["num_total_steps"], c["waiting_step_share"]) == (45, 30 / 45)
        assert 0.3 < c["idle_share"] < 0.9, c["idle_share"]  # two gaps of about 0.22 s
        assert c["idle_s"] == pytest.approx(c["idle_share"] * c["wall_s"])
    assert [replay_pace(c) for c in cases] == ["arrival-bound", "arrival-bound"]
    assert ("Note: Both timed replay cases are arrival-bound: the engine queued the bursts "
            "the arrivals brought and idled between them (") in out
    assert "load-bound, not arrival-bound" not in out
    # idle and arrival figures typed over so as to flip the label: the case is left out
    import shutil
    first = cases[0]
    wall = first["wall_s"]
    last = max(r["arrival_s"] for r in pd.read_csv(tmp_path / "bursts" / "requests.csv")
               .to_dict("records") if r["case_id"] == first["case_id"])
    edits = {"idle_share": (dict(idle_share=0.0),
                            f"has idle_share 0, but its idle_s {first['idle_s']:,.6g} over "
                            f"its wall_s {wall:,.6g} is {first['idle_share']:,.6g} (left out)"),
             "idle_s": (dict(idle_s=100.0), f"has idle_s 100, outside 0 to its wall_s "
                                            f"{wall:,.6g} (left out)"),
             "arrival_span_share": (dict(arrival_span_share=0.1),
                                    f"has arrival_span_share 0.1, but its last_arrival_s "
                                    f"{last:,.6g} over its wall_s {wall:,.6g} is "
                                    f"{last / wall:,.6g} (left out)"),
             "last_arrival_s": (dict(last_arrival_s=0.01, arrival_span_share=0.01 / wall),
                                "has last_arrival_s 0.01, but the latest arrival_s of its 9 "
                                f"requests in requests.csv is {last:,.6g} (left out)"),
             "text": (dict(idle_s="abc"), 'has idle_s "abc", not a number (left out)')}
    rows = pd.read_csv(tmp_path / "bursts" / "steps.csv")
    busy_s = rows[rows["case_id"] == first["case_id"]]["step_ns"].sum() / 1e9
    edits["idle-and-steps"] = (
        dict(idle_s=0.99 * wall, idle_share=0.99),
        f"has idle_s {0.99 * wall:,.6g}, but its 45 steps took {busy_s:,.6g} s of its "
        f"wall_s {wall:,.6g} (steps.csv step_ns), leaving at most {wall - busy_s:,.6g} s "
        "(left out)")
    for name, (values, why) in edits.items():
        run = tmp_path / f"edited-{name}"
        shutil.copytree(tmp_path / "bursts", run)
        summary = json.loads((run / "summary.json").read_text())
        summary["cases"][0].update(values)
        (run / "summary.json").write_text(json.dumps(summary))
        with pytest.warns(ResultsWarning) as caught:
            loaded = load(run)
        head = f"{run / 'summary.json'}: case"
        assert [str(w.message) for w in caught] == [f"{head} '{first['case_id']}' {why}"], name
        assert list(loaded.cases["case_id"]) == [cases[1]["case_id"]]


@pytest.mark.parametrize("load", [["g"], []])
def test_the_throughput_caption_says_which_replay_is_load_bound(load):
    d = dict(series=[("send", "msgpack")], panels=["tokens/s"], timed=["g"], groups=1,
             load_bound=load)
    assert blocks._timed_note_sentence(d) == (
        " The red note marks each timed replay's points: `g` is load-bound: the engine, "
        "not the trace, set the pace (requests arrived faster than it served them and "
        "queued, or every request arrived at the start), so its tokens/s (wall) are the "
        "engine's under that load; where it drained a burst, its wall time ends with the "
        "tails of its longest requests, few running, so they are no saturated engine's "
        "throughput (the latency table's note says which)." if load else
        " The red note marks each timed replay's points: arrival-bound, so its tokens/s "
        "follow the trace, not the policy.")


def _timed_run(tmp_path, name: str, rows: list[tuple[str, int, int]],
               extra: list[str]) -> tuple[str, list[dict]]:
    """A real timed replay at 1000x of the trace ``rows`` (timestamp, prompt, output
    tokens) on the fixed 5 ms step model: (stdout, summary cases)."""
    trace = tmp_path / f"{name}.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
        f"2023-11-16 {t},{p},{o}\n" for t, p, o in rows))
    out = run_bench(tmp_path / name, [
        "--scenario", "azure-conv-timed", "--model", "fixed-step", "--step-time-ms", "5",
        "--trace", str(trace), "--max-requests", str(len(rows)), "--trace-speedup",
        "1000", "--codecs", "msgpack", "--no-single-process", "--warmup-steps", "2",
        *extra])
    return out, json.loads((tmp_path / name / "summary.json").read_text())["cases"]


def test_an_overloaded_replay_is_called_load_bound(tmp_path):
    # 20 requests at once, 2 served at a time (--max-num-seqs 2), each 1 prefill step
    # and 19 decode steps: 10 batches of 20 steps, 18, 16, ..., 0 requests left waiting
    out, cases = _timed_run(tmp_path, "queued", [("18:15:46.0000000", 100, 20)] * 20,
                            ["--max-num-seqs", "2"])
    for c in cases:
        assert (c["num_total_steps"], c["num_waiting_mean"], c["waiting_step_share"],
                c["idle_s"], c["idle_share"]) == (200, 9.0, 0.9, 0.0, 0.0)
    steps = pd.read_csv(tmp_path / "queued" / "steps.csv")
    assert list(steps["num_waiting"][steps["case_id"] == cases[0]["case_id"]]) == [
        18 - 2 * (i // 20) for i in range(200)]
    assert [replay_pace(c) for c in cases] == ["load-bound", "load-bound"]
    assert ("Note: Both timed replay cases are load-bound, not arrival-bound "
            f"({cases[0]['case_id']}: by num_waiting: a request was left waiting after 90 % "
            f"of its steps, 9.0 per step on average, the engine idle 0 % of its wall time): "
            f"{LOAD_BOUND_WORDS} Pace by {BY_NUM_WAITING} "
            "for 2 cases.") in out
    assert PACE_NOT_RECORDED_NOTE not in out
    # a waiting figure typed over is not its steps': the case is left out, not labelled
    run = tmp_path / "queued"
    summary = json.loads((run / "summary.json").read_text())
    summary["cases"][0]["waiting_step_share"] = 0.1
    (run / "summary.json").write_text(json.dumps(summary))
    with pytest.warns(ResultsWarning) as caught:
        loaded = load(run)
    assert [str(w.message) for w in caught] == [
        f"{run / 'steps.csv'}: case '{cases[0]['case_id']}' has a waiting_step_share of 0.9 "
        "over its 200 steps' num_waiting, but summary.json has waiting_step_share 0.1 "
        "(left out)"]
    assert list(loaded.cases["case_id"]) == [cases[1]["case_id"]]


def test_a_soak_that_queued_is_called_load_bound(tmp_path):
    """A soak (a streamed timed replay) recorded none of the figures that label a pace,
    so its note called it arrival-bound whatever its TTFT: it records them from its
    running sums, as a replay from its rows, and its note says load-bound."""
    # as the queued replay above: 20 requests at once, 2 served at a time
    trace = tmp_path / "soak.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                     + "2023-11-16 18:15:46.0000000,100,20\n" * 20)
    out = run_bench(tmp_path / "soak", [
        "--scenario", "soak", "--trace", str(trace), "--max-requests", "20",
        "--trace-speedup", "1000", "--max-num-seqs", "2", "--warmup-steps", "2"])
    [case] = json.loads((tmp_path / "soak" / "summary.json").read_text())["cases"]
    assert (case["num_total_steps"], case["num_waiting_mean"], case["waiting_step_share"],
            case["last_arrival_s"], case["arrival_span_share"], case["idle_s"],
            case["idle_share"]) == (200, 9.0, 0.9, 0.0, 0.0, 0.0, 0.0)
    steps = pd.read_csv(tmp_path / "soak" / "steps.csv")
    assert list(steps["num_waiting"]) == [18 - 2 * (i // 20) for i in range(200)]
    assert replay_pace(case) == "load-bound"
    assert ("Note: 1 timed replay case is load-bound, not arrival-bound "
            f"({case['case_id']}: by num_waiting: a request was left waiting after 90 % of "
            f"its steps, 9.0 per step on average, the engine idle 0 % of its wall time): "
            f"{LOAD_BOUND_WORDS} Pace by {BY_NUM_WAITING} for "
            "1 case.") in out
    assert "arrival-bound;" not in out and PACE_NOT_RECORDED_NOTE not in out
    with warnings.catch_warnings():  # its figures are its steps' (row_checks._waiting_problem)
        warnings.simplefilter("error")
        assert list(load(tmp_path / "soak").cases["case_id"]) == [case["case_id"]]
    # too short for memory figures, it still has its Soak section, saying so
    assert cli.main(["report", str(tmp_path / "soak"), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    section = md.split("## Soak\n\n", 1)[1].split("\n## ", 1)[0]
    assert section.splitlines()[0].startswith(f"Soak {case['case_id']}: 200 steps (2 warm-up")
    assert "- sched VmRSS: too few samples\n" in section


def test_one_long_request_at_the_end_is_arrival_bound(tmp_path):
    # a short request, then 0.1 s later (trace time 100 s at 1000x) one of 200 output
    # tokens: its 1 s of decode ends the replay, with nothing ever waiting
    out, cases = _timed_run(tmp_path, "tail", [("18:15:46.0000000", 100, 5),
                                               ("18:17:26.0000000", 10, 200)], [])
    for c in cases:
        assert (c["num_waiting_mean"], c["waiting_step_share"]) == (0.0, 0.0)
        assert c["arrival_span_share"] < 0.5  # the older measure called it load-bound
    assert [replay_pace(c) for c in cases] == ["arrival-bound", "arrival-bound"]
    assert ("Note: Both timed replay cases are arrival-bound: the engine kept up with the "
            "arrivals, so the trace, not the engine, set the pace; their tokens/s (wall) is "
            f"not a throughput comparison between arms. Pace by {BY_NUM_WAITING} for 2 "
            "cases.") in out


def test_the_finding_calls_a_load_bound_replay_so():
    from ipc_bench.report import findings

    queued = pd.DataFrame([_replay(0.1 / 3.2, "w/send/msgpack")])
    assert findings._timed_replay_words(queued, findings.TIMED_REPLAY_ONE_ARM) == (
        "This is a timed replay, but load-bound: its requests arrived faster than the "
        "engine served them (in w/send/msgpack, by arrival_span_share (recorded before "
        "num_waiting): its last request arrived 0.10 s into 3.20 s of wall time) and "
        "queued, so the engine, not the trace, set the pace; its tokens/s (wall), "
        "every output token over the wall time from the first arrival to the last "
        "completion, is the engine's throughput under that backlog, comparable between "
        "arms as such, and its TTFT (the Latency section) is mostly queueing "
        "delay.")
    backlog = pd.DataFrame([_replay(0.9, "w/send/msgpack", [2, 1, 0])])
    assert findings._timed_replay_words(backlog).startswith(
        "This is a timed replay, but load-bound: its requests arrived faster than the "
        "engine served them (in w/send/msgpack, by num_waiting: a request was left waiting "
        "after 67 % of its steps, 1.0 per step on average) and queued, so the engine")
    kept_up = pd.DataFrame([_replay(0.9)])
    assert findings._timed_replay_words(kept_up) == findings.TIMED_REPLAY
    assert (findings._timed_replay_words(kept_up, findings.TIMED_REPLAY_ONE_ARM)
            == findings.TIMED_REPLAY_ONE_ARM)
    # a run before the pace figures: what it measures is said as a condition
    older = pd.DataFrame([dict(case_id="v/send/msgpack", trace_speedup=1000.0, wall_s=3.2)])
    assert findings._timed_replay_words(older) == findings.TIMED_REPLAY + (
        " Its pace was not recorded (a run before the figures that label it): had its "
        "requests queued, its tokens/s (wall) would be the engine's throughput under "
        "that backlog instead.")
    assert findings._timed_replay_words(pd.concat([older, kept_up])) == findings.TIMED_REPLAY
    # repetitions labelled apart (one queued, one kept up): no throughput comparison,
    # and the comparison withholds it as arrival-bound
    from ipc_bench.analysis.stats import arrival_bound
    mixed = pd.concat([backlog, pd.DataFrame([_replay(0.9, "w/cached/msgpack")])])
    assert findings._timed_replay_words(mixed) == (
        "This is a timed replay, load-bound in 1 of its 2 cases (in w/send/msgpack, by "
        "num_waiting: a request was left waiting after 67 % of its steps, 1.0 per step "
        "on average) and arrival-bound in the others: its tokens/s (wall) mixes the "
        "engine's throughput under a backlog with the trace's arrivals, so it is no "
        "throughput comparison between arms; the latencies (the Latency section) are the "
        "result.")
    assert arrival_bound(mixed.to_dict("records"))
    assert not arrival_bound(backlog.to_dict("records"))


def _batch(case_id: str = "w/send/msgpack", num_waiting=(0, 0, 0, 0), wall=0.03) -> dict:
    """A timed replay's summary case whose requests all arrived at its start (one
    timestamp), ``wall`` s of wall time, no idle time."""
    case = dict(case_id=case_id, trace_speedup=10.0, wall_s=wall,
                **replay_pace_figures([dict(arrival_s=0.0)] * 3, wall))
    case.update(waiting_figures(np.asarray(num_waiting, dtype=np.int64)))
    case.update(idle_figures(0, wall))
    return case


def test_a_replay_whose_requests_all_arrived_at_its_start_is_load_bound():
    """An offline batch (every timestamp equal, one request included): nothing waited
    and the engine never idled, yet no arrival paced it; the engine's time on the batch
    set the wall time, so its tokens/s (wall) compare between arms."""
    batch = _batch()
    assert (replay_pace(batch), arrived_at_start(batch)) == ("load-bound", True)
    evidence = ("by num_waiting and last_arrival_s: no request was left waiting after any "
                "of its steps, and every request arrived at its start, 0 s into 0.03 s of "
                "wall time")
    assert replay_pace_evidence(batch) == evidence
    assert arrival_bound_note([batch, _batch("w/cached/msgpack")]) == (
        f"Both timed replay cases are load-bound, not arrival-bound (w/send/msgpack: "
        f"{evidence}): every request arrived at the start, so the engine's time on that "
        "batch, not the trace, set the pace; there tokens/s (wall) is the engine's "
        f"throughput on that batch, comparable between arms as such. Pace by "
        f"{BY_NUM_WAITING} for 2 cases.")
    assert TIMED_AT_START.format(f"in w/send/msgpack, {evidence}").startswith(
        "This is a timed replay, but load-bound: every request arrived at its start (in ")
    # one that queued is labelled by that rule (and named first): a batch larger than
    # the engine's batch waits after most steps
    queued = _batch("w/cached/msgpack", num_waiting=(2, 1, 1, 0))
    assert (replay_pace(queued), arrived_at_start(queued)) == ("load-bound", False)
    assert arrival_bound_note([batch, queued]).startswith(
        "Both timed replay cases are load-bound, not arrival-bound (w/cached/msgpack: by "
        "num_waiting: a request was left waiting after 75 % of its steps, 1.0 per step on "
        f"average, the engine idle 0 % of its wall time): {LOAD_BOUND_WORDS}")
    # a later arrival, however early, is a trace that paced something
    later = _replay(0.01, num_waiting=[0, 0, 0, 0], idle_s=0.0)
    assert (replay_pace(later), arrived_at_start(later)) == ("arrival-bound", False)
    # a run before num_waiting keeps its old rule (span 0 < 0.5: load-bound)
    old = {k: v for k, v in batch.items() if k not in ("waiting_step_share",
                                                       "num_waiting_mean")}
    assert (replay_pace(old), arrived_at_start(old)) == ("load-bound", False)


def test_an_offline_batch_replayed_is_load_bound_and_its_ratio_given(tmp_path):
    """Three requests at one timestamp, both policies: the note and the finding call
    it load-bound as a batch, and the comparison gives a wall tok/s ratio."""
    trace = tmp_path / "batch.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
        f"2023-11-16 18:15:46.6805900,{p},{n}\n" for p, n in ((374, 40), (100, 30),
                                                              (50, 20))))
    run = tmp_path / "run"
    run_bench(run, ["--scenario", "azure-conv-timed", "--trace", str(trace),
                    "--codecs", "msgpack"])
    cases = json.loads((run / "summary.json").read_text())["cases"]
    assert [(c["last_arrival_s"], replay_pace(c)) for c in cases] == [
        (0.0, "load-bound")] * 2
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "every request arrived at the start, so the engine's time on that batch" in md
    assert "- This is a timed replay, but load-bound: every request arrived at its start" in md
    assert "arrival-bound" not in md.split("## ")[1]  # the findings
    # its 40 steps are all warm-up (50 by default): no bytes clause, the latencies alone
    assert (f"- On `trace=azure-conv-timed:3` (msgpack{one_runner_mark()}), latency send → "
            "cached: TTFT p50 ") in md


def test_a_queue_too_small_to_round_keeps_its_figures():
    """One request left waiting after 1 step of 160 (0.6 %), 0.006 per step on
    average: the evidence keeps both figures, not ``1 %`` beside ``0.0 per step``."""
    case = dict(case_id="w/send/msgpack", trace_speedup=10.0, wall_s=1.0,
                **replay_pace_figures([dict(arrival_s=0.0), dict(arrival_s=0.9)], 1.0))
    case.update(waiting_figures(np.asarray([0] * 159 + [1], dtype=np.int64)))
    case.update(idle_figures(0, 1.0))
    assert (case["waiting_step_share"], case["num_waiting_mean"]) == (1 / 160, 1 / 160)
    assert replay_pace(case) == "arrival-bound"
    assert replay_pace_evidence(case) == (
        "by num_waiting: a request was left waiting after 0.6 % of its steps, 0.006 per "
        "step on average")


def test_a_rounded_arrival_is_shown_with_the_digits_that_tell_it_apart():
    """A requests.csv saved with its arrivals rounded: the refusal shows both figures
    with as many digits as differ, not two equal ones."""
    import pandas as pd

    from ipc_bench.analysis.row_checks import _pace_problem

    case = dict(case_id="w/send/msgpack#0", trace_speedup=10.0, wall_s=1.0,
                last_arrival_s=0.013025137, num_requests=2)
    rows = pd.DataFrame({"arrival_s": [0.0, 0.0130251]})
    why = _pace_problem(case, rows, "requests.csv")
    assert why == ("requests.csv: case 'w/send/msgpack#0' has last_arrival_s 0.01302514, "
                   "but the latest arrival_s of its 2 requests in requests.csv is 0.0130251 "
                   "(left out)")
