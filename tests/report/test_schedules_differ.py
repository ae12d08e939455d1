"""Arms that ran different schedules (a timed replay: schedule digests differ) did not
do the same work, so their per-step byte difference is not the policy's saving: the
findings give send's own new_token_ids (the policy's share) and say the totals differ
by schedule too; the terminal's ratio line, the comparison block, the report's pair
table and the bytes figure's caption give no bytes ratio or verdict as the policy's,
nor any per-step time's (encode, decode, build, step: other batches), which the Holm family
leaves out; tokens/s, over the whole run, stays compared."""

from __future__ import annotations

import pandas as pd

from ipc_bench.analysis import stats
from ipc_bench.report import blocks, findings, tables
from test_metrics import _summary

WORKLOAD = "trace=azure-conv-timed:60"


def _timed(policy: str, rep: int, s2r: float, steps: int, digest: str,
           waiting: float = 0.6) -> dict:
    """A timed replay's case; load-bound (``waiting``: a request left waiting after 60 %
    of its steps) unless ``waiting`` is below 0.5 (its last request arrives 90 % of the
    way into the wall time: arrival-bound)."""
    send = policy == "send"
    return dict(_summary(policy, rep, 1900.0 - 10 * rep if send else 1500.0 + 10 * rep,
                         6.0e6),
                case_id=f"{WORKLOAD}/{policy}/msgpack#{rep}", workload=WORKLOAD,
                num_running=None, trace_speedup=20.0, num_steps=steps,
                waiting_step_share=waiting, arrival_span_share=0.9,
                schedule_digest=digest, sched_to_runner_payload_bytes_per_step=s2r,
                decode_token_bytes_per_step=62.8 if send else 0.0,
                prompt_chunk_bytes_per_step=68.7 if send else 0.0)


#: Two repetitions; the arms' schedules differ in both (other batches), and their
#: per-step totals are 1,862 against 1,577 B: 285 B, far more than send's ids add.
DIFFERENT = [_timed("send", 0, 1862.0, 606, "a0"), _timed("cached", 0, 1577.0, 546, "b0"),
             _timed("send", 1, 1862.0, 606, "a1"), _timed("cached", 1, 1577.0, 546, "b1")]
#: The same with equal schedules (a logical-clock replay): the difference is the policy's.
SAME = [dict(s, schedule_digest=f"x{s['repetition']}") for s in DIFFERENT]


def _results(rows: list[dict]):
    res = type("R", (), {})()
    res.cases = pd.DataFrame([dict(r, run_id="run") for r in rows])
    res.labels, res.metadata = ["num_running"], {"run": {}}
    res.paths = {}  # no run folder: no recorded comparisons to read
    return res


def _where(workload: str) -> str:
    return f"On `{workload}`"


def _bytes_part(rows: list[dict]) -> str:
    res = _results(rows)
    tables_ = findings._pair_tables(res)
    key = next(iter(tables_["tput"]))
    text = findings._pair_finding(res.cases, tables_, key, _where, timed=True)
    return text.split("; latency")[0].split("; shows no latency")[0]


def test_the_bytes_finding_gives_the_policys_share_where_schedules_differ():
    assert _bytes_part(DIFFERENT) == (
        "On `trace=azure-conv-timed:60` (msgpack), cached leaves out send's new_token_ids, "
        "131.5 bytes per step (7.1 % of send's scheduler → runner payload); the arms' "
        "per-step totals to the "
        "runner (1,862 against 1,577 bytes) differ also because the schedules differ "
        "(606 and 546 steps per case, other batches: schedule digests differ), so the "
        "difference of the totals is not the policy's saving; per-step times not "
        "compared (encode, decode, build, step: other batches)")


def test_the_bytes_finding_is_the_difference_where_schedules_match():
    assert _bytes_part(SAME) == (
        "On `trace=azure-conv-timed:60` (msgpack), cached sends 285 fewer bytes per step "
        "to the runner (15.3 % of send's scheduler → runner payload), encodes the "
        "SchedulerOutput and the ModelRunnerOutput within noise of send's time per step "
        "(+0.0 % [+0.0, +0.0] %; send - cached: +0.00 µs), decodes them within noise of "
        "send's time per step (+0.0 % [+0.0, +0.0] %; send - cached: +0.00 µs) and saves "
        "4.90 µs per step building the SchedulerOutput and the ModelRunnerOutput (-60.5 % "
        "[-60.5, -60.5] %)")


def test_the_ratio_line_gives_no_per_step_ratio_where_schedules_differ():
    # bytes and times per step compare other batches: no ratio; tok/s stays compared
    line, note = tables._ratio_lines("msgpack", DIFFERENT)
    # a timed replay: its tok/s are over wall time
    assert line.split("): ", 1)[1] == ("tok/s (wall) 0.794 [0.736, 0.857], s2r B, build, "
                                       "encode, decode, mean step - (schedules differ)")
    assert note == (
        "    per-step ratios (bytes and times): none, the arms ran different schedules "
        "(schedule digests differ: a timed replay follows wall-clock arrivals), so their "
        "bytes and times per step "
        "differ by batch as well as by policy; send's new_token_ids take 131.5 B/step "
        "(tok B/step + prompt B/step), what cached leaves out; tok/s (wall), over the whole "
        "run, stays compared")
    (same,) = tables._ratio_lines("msgpack", SAME)
    assert ", s2r B 0.847 [0.847, 0.847], build 0.395" in same


def test_the_comparison_block_gives_no_per_step_verdict_where_schedules_differ():
    (c,) = stats.compare_cases(DIFFERENT)
    assert c["schedules_differ"] is True
    # the per-step metrics are out of the Holm family: tokens/s alone is adjusted
    assert c["family"] == ["output_tokens_per_s"]
    step = c["metrics"]["step_ns_mean"]
    assert (step["verdict"], step["significant"], step["ratio_geomean"],
            step["p_value"], step["baseline_median"]) == ("schedules differ", None, None,
                                                          None, 6.0e6)
    assert c["metrics"]["output_tokens_per_s"]["verdict"] == (
        "significant: cached 20.6 % lower than send")
    title, _, rows, under = tables.comparison_parts(c)
    assert title.endswith("; 2 pairs; verdicts Holm-adjusted over 1 timed metric")
    by_name = {r[0]: r for r in rows}
    for name in ("step mean", "step median", "build", "encode", "decode", "sched cpu",
                 "s2r bytes", "r2s bytes"):
        assert by_name[name][4:] == ["-"] * 5 + ["schedules differ"], name
    assert by_name["build"][2:4] == ["8.10 [0]", "3.20 [0]"]  # each arm's own
    assert by_name["out tok/s (wall)"][4:] == ["0.794", "[0.736, 0.857]", "390.0",
                                        "[262.9, 517.1]", "0.016 [0.016]",
                                        "significant: cached 20.6 % lower than send"]
    assert c["timed"] is True
    assert under.splitlines()[0] == (
        "schedules differ: the arms ran different batches (schedule digests differ: a "
        "timed replay follows wall-clock arrivals), so their per-step bytes and times "
        "differ by batch as well as by policy: those rows give each arm's median, no "
        "paired figure or verdict, and are left out of the Holm adjustment; out tok/s "
        "(wall), over the whole run, stays compared. The s2r bytes' difference is not the "
        "policy's saving (send's own new_token_ids are tok B/step + prompt B/step in the "
        "case table)")
    # a summary written before: its per-step verdicts are withheld when shown
    old = dict(c, metrics=dict(c["metrics"], build_ns_per_step=dict(
        c["metrics"]["output_tokens_per_s"], verdict="significant: cached 60.5 % lower")))
    assert {r[0]: r for r in tables.comparison_parts(old)[2]}["build"][-1] == (
        "schedules differ")
    (same,) = stats.compare_cases(SAME)
    assert "schedules_differ" not in same
    assert next(r for r in tables.comparison_parts(same)[2]
                if r[0] == "s2r bytes")[-1] == "exact: cached 15.3 % lower than send"
    assert len(same["family"]) == 7  # the timed metrics, bytes apart


def test_the_bytes_caption_says_the_gap_is_not_the_policys():
    drawn = dict(series=[("send", "msgpack"), ("cached", "msgpack")], largest=32.0,
                 notes=["msgpack: send's new_token_ids 131.5 B/step (whole run; schedules "
                        "differ)"], schedules_differ=["msgpack"])
    assert blocks._bytes_caption(drawn).endswith(
        "the runner → scheduler message is the same for both policies. The arms of "
        "msgpack ran different schedules (a timed replay: other batches), so their lines "
        "differ by batch as well as by policy and the gap between them is not the "
        "policy's saving; the box gives send's own new_token_ids instead, per counted "
        "step over the whole run.")


def test_the_pair_table_gives_no_per_step_difference_where_schedules_differ():
    import numpy as np

    (_, _, rows), (_, note) = blocks._pair_table(_results(DIFFERENT))
    # the arms are geometric means over the pairs (the tokens/s vary by repetition)
    cases = pd.DataFrame(DIFFERENT)
    geo = {p: float(np.exp(np.log(cases[cases["policy"] == p]["output_tokens_per_s"]).mean()))
           for p in ("send", "cached")}
    assert (f"{geo['send']:,.2f}", f"{geo['cached']:,.2f}") == ("1,894.99", "1,504.99")
    assert [r[2:] for r in rows] == [  # tokens/s whole, as elsewhere in the report
        ["output tokens/s (wall)", "2", "1,895", "1,505", "390",
         "0.794 [0.736, 0.857]"],
        ["s2r payload B/step", "2", "1,862.00", "1,577.00", "-", "- (schedules differ)"],
        ["build µs/step", "2", "8.10", "3.20", "-", "- (schedules differ)"],
        ["encode µs/step", "2", "5.40", "5.40", "-", "- (schedules differ)"],
        ["decode µs/step", "2", "16.50", "16.50", "-", "- (schedules differ)"],
        ["step µs (mean)", "2", "6,000.00", "6,000.00", "-", "- (schedules differ)"],
        ["step µs (median)", "2", "5,999.00", "5,999.00", "-", "- (schedules differ)"],
        ["scheduler CPU µs/step", "2", "3,000.00", "3,000.00", "-", "- (schedules differ)"]]
    assert note.endswith(
        " The arms of msgpack ran different schedules (schedule digests differ: a timed "
        "replay follows wall-clock arrivals), so their per-step rows (bytes and times per "
        "step) would compare other batches as well as the policies: they give each arm's "
        "geometric mean, no difference or ratio (`- (schedules differ)`), as the comparison block "
        "withholds their verdicts; output tokens/s (wall), over the whole run, stays compared. "
        "The s2r bytes' difference is not the policy's saving; send's own new_token_ids "
        "are in the findings.")
    same = blocks._pair_table(_results(SAME))[0][2]
    assert [r[6:] for r in same if r[2] == "build µs/step"] == [["4.90", "0.395 [0.395, 0.395]"]]
    assert "different schedules" not in blocks._pair_table(_results(SAME))[-1][1]


def test_the_pair_tables_means_share_one_format_per_column():
    assert [blocks.pair_value(v) for v in (102.0, 45.678, -89.72, 22588.4, float("nan"))] == [
        "102.00", "45.68", "-89.72", "22,588.40", "-"]


def test_the_pair_tables_tokens_per_s_are_whole_numbers():
    # tokens/s printed 62,756.65 and a difference 49.41 where every other tokens/s
    # figure of the report is whole: the tokens/s rows print whole numbers, a figure
    # that would round onto 0 while it is not 0 with the digits that show its side
    assert [blocks.pair_value(v, 0) for v in (62_756.65, 49.41, -8_274.05, 0.4, 0.0)] == [
        "62,757", "49", "-8,274", "0.4", "0"]
    assert blocks.pair_value(0.004) == "0.004"
    rows = blocks._pair_table(_results(SAME))[0][2]
    (tok,) = [r for r in rows if r[2] == "output tokens/s (wall)"]
    assert tok[4:] == ["1,895", "1,505", "390", "0.794 [0.736, 0.857]"]


def test_the_environment_tables_load_averages_have_two_decimals():
    assert blocks._env_rows({"load_avg": [0.3369140625, 1.291015625, 1.75927734375]}) == [
        ["load_avg", "0.34, 1.29, 1.76"]]


def _async(arm: str, rep: int, steps: int, digest: str, **extra) -> dict:
    """A decode-steady case of cached (sync) or cached+async, no timed replay."""
    return dict(_summary("cached", rep, 30000.0 + 500 * rep, 8.0e6), arm=arm,
                case_id=f"num_running=4/{arm}/msgpack#{rep}", num_steps=steps,
                schedule_digest=digest, **extra)


#: cached against cached+async on decode-steady: a finished request's successor starts
#: a step later under async scheduling, so the schedule digests differ.
ASYNC = [_async("cached", 0, 1000, "s0"), _async("cached+async", 0, 1000, "a0"),
         _async("cached", 1, 1000, "s1"), _async("cached+async", 1, 1000, "a1")]


def test_async_against_sync_names_async_scheduling_not_a_timed_replay_nor_send():
    (c,) = stats.compare_cases(ASYNC)
    assert (c["baseline"], c["treatment"], c.get("schedules_differ"), c.get("timed")) == (
        "cached", "cached+async", True, None)
    assert tables.comparison_parts(c)[3].splitlines()[-1] == (
        "schedules differ: the arms ran different batches (schedule digests differ: async "
        "scheduling starts the request that takes a finished one's slot a step later than "
        "sync scheduling), so their per-step bytes and times differ by batch as well as by "
        "scheduling: those rows give each arm's median, no paired figure or verdict, and "
        "are left out of the Holm adjustment; out tok/s, over the whole run, stays compared")
    # the ratio line marks the per-step metrics and adds no send line under it
    lines = tables._ratio_lines("msgpack", ASYNC)
    assert len(lines) == 1 and lines[0].endswith(
        "s2r B, build, encode, decode, mean step - (schedules differ)")


def test_the_cause_names_each_reason_the_arms_have_and_no_other():
    assert tables.schedules_differ_cause(False, ("cached", "cached+async")) == (
        "schedule digests differ: " + tables.ASYNC_CAUSE)
    assert tables.schedules_differ_cause(True, ("cached", "cached+async")) == (
        "schedule digests differ: a timed replay follows wall-clock arrivals, and async "
        "scheduling starts the request that takes a finished one's slot a step later than "
        "sync scheduling")
    # both arms async (an A/A pair of cached+async): not async against sync
    assert tables.schedules_differ_cause(False, ("cached+async", "cached+async'")) == (
        "schedule digests differ")
    assert tables.schedules_differ_note(False, ("send", "send'")) == (
        "schedules differ: the arms ran different batches (schedule digests differ), so "
        "their per-step bytes and times differ by batch as well as by policy: those rows "
        "give each arm's median, no paired figure or verdict, and are left out of the Holm "
        "adjustment; out tok/s, over the whole run, stays compared. The s2r bytes' "
        "difference is not the policy's saving (send's own new_token_ids are tok B/step + "
        "prompt B/step in the case table)")
    assert tables.schedules_differ_note(True, ("cached+async", "cached+async'")) == (
        "schedules differ: the arms ran different batches (schedule digests differ: a "
        "timed replay follows wall-clock arrivals), so their per-step bytes and times "
        "differ by batch as well as by arm: those rows give each arm's median, no paired "
        "figure or verdict, and are left out of the Holm adjustment; out tok/s (wall), over "
        "the whole run, stays compared")


def test_the_pair_table_names_no_timed_replay_where_none_ran():
    # send against cached with different schedules outside a timed replay (no cause
    # known): the caption says the digests differ, and no timed replay
    steady = [dict(s, trace_speedup=None, workload="num_running=4") for s in DIFFERENT]
    note = blocks._pair_table(_results(steady))[-1][1]
    assert (" The arms of msgpack ran different schedules (schedule digests differ), so "
            "their per-step rows") in note
    assert "timed replay" not in note
