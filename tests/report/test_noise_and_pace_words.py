"""One rule for "within noise" (an interval holding 0 that stays within ±10 %, else
"inconclusive"), in the share lines as in the findings; a multi-run throughput caption
that says which points have error bars; a timed replay called arrival-bound only where
its engine kept up with the arrivals; and the case's whole time in ``summary.json``."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from analysis_run import REPO, run_bench
from ipc_bench import cli
from ipc_bench.analysis.send_cost import path_difference, step_difference
from ipc_bench.analysis.summary import replay_pace, replay_pace_figures
from ipc_bench.report import blocks
from ipc_bench.report.tables import ARRIVAL_BOUND_NOTE, arrival_bound_note

INCONCLUSIVE = (", inconclusive: the interval reaches beyond ±10 %, too few repetitions or "
                "too noisy to tell a 10 % difference from none")


def test_a_share_interval_holding_0_past_10_pct_is_inconclusive_not_noise():
    # the user's --repeat 3 figures: +1.35 % in [-14.41, +17.11] %
    assert step_difference(0.0135, (-0.1441, 0.1711), "t", 3) == (
        "differs from cached's by +1.35 % (send - cached: [-14.41, +17.11] %, 95 % "
        "Student-t interval)" + INCONCLUSIVE)
    assert step_difference(0.0135, (-0.0441, 0.0711), "t", 3) == (
        "is within noise of cached's: +1.35 % (send - cached: [-4.41, +7.11] %, 95 % "
        "Student-t interval)")
    assert path_difference(4000.0, 0.04, (-0.0871, 0.1671), "cached's step", "t", 2) == (
        "differs from cached's by +4.00 µs per step, +4.00 % of cached's step (send - "
        "cached: [-8.71, +16.71] %, 95 % Student-t interval)" + INCONCLUSIVE)
    assert path_difference(4000.0, 0.016, (-0.0856, 0.0976), "cached's step", "t", 2) == (
        "is within noise of cached's: +4.00 µs per step, +1.60 % of cached's step (send - "
        "cached: [-8.56, +9.76] %, 95 % Student-t interval)")
    # an interval excluding 0 is a cost, however wide
    assert step_difference(0.20, (0.05, 0.35), "t", 3) == (
        "is 20.00 % longer than cached's (send - cached: [+5.00, +35.00] %, 95 % "
        "Student-t interval)")


def test_the_caption_names_the_run_without_error_bars():
    d = dict(series=[("send", "msgpack"), ("cached", "msgpack")], panels=["tokens/s"],
             repeated=True, partly_repeated=True, single_runs=["r1"])
    assert blocks._throughput_caption(d) == (
        "Output tokens/s of every case (tokens sampled in counted steps over their busy "
        "wall time), one point per arm and codec: `send` and `cached`; error bars, where "
        "a case repeated, are 95 % intervals over repetitions; run `r1` has one "
        "repetition per case, so no error bars.")
    assert blocks._error_bar_words(dict(d, single_runs=[])) == (
        "error bars, where a case repeated, are 95 % intervals over repetitions; a point "
        "of one repetition has none.")
    assert blocks._error_bar_words(dict(d, partly_repeated=False)) == (
        "error bars are 95 % intervals over repetitions.")


ARGS = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "30",
        "--warmup-steps", "5", "--codecs", "msgpack", "--no-single-process", "--no-floor"]


def test_a_report_of_a_one_and_a_three_repetition_run(tmp_path):
    # not --quiet: the line printed as each case ends goes to stderr
    proc = subprocess.run([sys.executable, "bench.py", *ARGS, "--output",
                           str(tmp_path / "r1")], cwd=REPO, capture_output=True, text=True,
                          timeout=240)
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
    assert ("; error bars, where a case repeated, are 95 % intervals over repetitions; "
            "run `r1` has one repetition per case, so no error bars.") in caption
    assert "error bars are 95 % intervals" not in caption


def _replay(share_of_wall: float, case_id: str = "w/send/msgpack") -> dict:
    wall = 3.2
    return dict(case_id=case_id, trace_speedup=1000.0, wall_s=wall,
                **replay_pace_figures([dict(arrival_s=0.0),
                                       dict(arrival_s=share_of_wall * wall)], wall))


def test_a_replay_is_arrival_bound_only_where_the_engine_kept_up():
    assert replay_pace_figures([dict(arrival_s=0.0), dict(arrival_s=0.1)], 3.2) == dict(
        last_arrival_s=0.1, arrival_span_share=0.1 / 3.2)
    assert replay_pace_figures([], 3.2) == {}
    kept_up, queued = _replay(0.9), _replay(0.1 / 3.2, "w/cached/msgpack")
    assert replay_pace(kept_up) == "arrival-bound"
    assert replay_pace(queued) == "load-bound"
    assert replay_pace(dict(trace_speedup=1000.0)) is None  # a run before the field
    assert arrival_bound_note([kept_up]) == ARRIVAL_BOUND_NOTE
    assert arrival_bound_note([dict(trace_speedup=1000.0)]) == ARRIVAL_BOUND_NOTE
    assert arrival_bound_note([kept_up, queued]) == (
        "1 of 2 timed replay cases is load-bound, not arrival-bound (their last request "
        "arrived less than 50 % of the way into the wall time; w/cached/msgpack: 0.10 s "
        "into 3.20 s): the requests arrived faster than the engine served them and "
        "queued, so the engine, not the trace, set the pace; there tokens/s (wall) is "
        "the engine's throughput under that backlog, comparable between policies as "
        "such, and TTFT is mostly queueing delay. The others are arrival-bound: their "
        "tokens/s is not a throughput comparison between policies.")


@pytest.mark.parametrize("load", [["g"], []])
def test_the_throughput_caption_says_which_replay_is_load_bound(load):
    d = dict(series=[("send", "msgpack")], panels=["tokens/s"], timed=["g"], groups=1,
             load_bound=load)
    assert blocks._timed_note_sentence(d) == (
        " The red note marks each timed replay's points: `g` is load-bound: the requests "
        "arrived faster than the engine served them and queued, so the engine, not the "
        "trace, set the pace, and its tokens/s (wall) are the engine's throughput under "
        "that backlog." if load else
        " The red note marks each timed replay's points: arrival-bound, so its tokens/s "
        "follow the trace, not the policy.")


def test_an_overloaded_replay_is_called_load_bound(tmp_path):
    # 20 requests within 19 ms of trace time (0.02 ms at 1000x), while serving them takes
    # 100+ fixed 5 ms steps: they queue, whatever the machine's load
    trace = tmp_path / "trace.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
        f"2023-11-16 18:15:46.{i:03d}0000,100,100\n" for i in range(20)))
    out = run_bench(tmp_path / "run", [
        "--scenario", "azure-conv-timed", "--model", "fixed-step", "--step-time-ms", "5",
        "--trace", str(trace),
        "--max-requests", "20", "--trace-speedup", "1000", "--codecs", "msgpack",
        "--no-single-process"])
    cases = json.loads((tmp_path / "run" / "summary.json").read_text())["cases"]
    assert [replay_pace(c) for c in cases] == ["load-bound", "load-bound"]
    worst = min(cases, key=lambda c: c["arrival_span_share"])
    assert worst["arrival_span_share"] == worst["last_arrival_s"] / worst["wall_s"]
    assert ("Note: 2 of 2 timed replay cases are load-bound, not arrival-bound (their "
            "last request arrived less than 50 % of the way into the wall time; "
            f"{worst['case_id']}: {worst['last_arrival_s']:.2f} s into "
            f"{worst['wall_s']:.2f} s): the requests arrived faster") in out
    assert ARRIVAL_BOUND_NOTE not in out


def test_the_finding_calls_a_load_bound_replay_so():
    import pandas as pd

    from ipc_bench.report import findings

    queued = pd.DataFrame([_replay(0.1 / 3.2, "w/send/msgpack")])
    assert findings._timed_replay_words(queued, findings.TIMED_REPLAY_ONE_ARM) == (
        "This is a timed replay, but load-bound: its requests arrived faster than the "
        "engine served them (the last 0.10 s into 3.20 s of wall time, in w/send/msgpack) "
        "and queued, so the engine, not the trace, set the pace; its tokens/s (wall), "
        "every output token over the wall time from the first arrival to the last "
        "completion, is the engine's throughput under that backlog, comparable between "
        "policies as such, and its latencies (the Latency section) are mostly queueing "
        "delay.")
    kept_up = pd.DataFrame([_replay(0.9)])
    assert findings._timed_replay_words(kept_up) == findings.TIMED_REPLAY
    assert (findings._timed_replay_words(kept_up, findings.TIMED_REPLAY_ONE_ARM)
            == findings.TIMED_REPLAY_ONE_ARM)
