"""A summary row whose tokens/s change (of mean steps) is significant but made by a few
slow steps, its median step's share far smaller, says so in its verdict cell: with two
repetitions of noisy pairs the cell read `significant after Holm` beside a +43.6 %
change whose median-step share was +3.42 %, the reason only in the note under the
table."""

from __future__ import annotations

from ipc_bench.report import findings
from test_findings_summary import BASES, OVER_REPS, _results


def _slow_send(send_means: tuple, send_tps: tuple):
    """``_results``' three repetitions with send's mean steps and tok/s as given, its
    median 262.1 µs; cached's mean 260.0 µs, median 258.1 µs, tok/s 69,154 to 69,354."""
    res = _results()
    cases = res.cases
    for rep, (mean, tps) in enumerate(zip(send_means, send_tps)):
        send = (cases["policy"] == "send") & (cases["repetition"] == rep)
        cached = (cases["policy"] == "cached") & (cases["repetition"] == rep)
        cases.loc[send, ["step_ns_mean", "step_ns_median", "output_tokens_per_s"]] = (
            mean, 262_100.0, tps)
        cases.loc[cached, ["step_ns_mean", "step_ns_median", "output_tokens_per_s"]] = (
            260_000.0, 258_100.0, 69_154.0 + 100 * rep)
    return res


def test_a_significant_change_the_slow_steps_make_is_qualified_in_its_cell():
    items = findings.findings(_slow_send((458_200.0, 460_000.0, 455_000.0),
                                         (39_250.0, 39_100.0, 39_500.0)))
    (row,) = items.summary[1]
    assert row[3] == "+76.3 % [+74.4, +78.2] %"
    assert row[4] == ("significant (unadjusted test) (of mean steps, which a few slow "
                      "steps move: the note under the table)")
    assert row[6] == "+1.55 % [+1.55, +1.55] %"
    assert items.caption == (
        f"{BASES}{OVER_REPS} num_running=4 (msgpack): the tok/s "
        "change (+76.3 %, of mean steps) and the whole step's share (+1.55 %, of median "
        "steps) disagree: a few slow steps move the mean (num_running=4/send/msgpack#1's mean "
        "step is 460.0 µs, its median 262.1 µs); the median's share is the typical step's.")


def test_a_change_the_steps_do_not_explain_or_one_not_significant_keeps_its_cell():
    # send's mean steps at its median: the change is of tokens per step, not slow steps
    items = findings.findings(_slow_send((262_100.0,) * 3, (39_250.0, 39_100.0, 39_500.0)))
    assert items.summary[1][0][4] == "significant (unadjusted test)"
    assert "not by the step times" in items.caption
    # the slow steps there, but the change not significant: nothing added
    items = findings.findings(_slow_send((458_200.0, 460_000.0, 455_000.0),
                                         (39_250.0, 69_000.0, 120_000.0)))
    # no noise or slow-step qualifier; the interval is too wide for the path share
    assert items.summary[1][0][4] == (
        "inconclusive (interval beyond 1.1x either way); the tok/s interval spans a "
        "factor of 3.99 either way of its centre, more than the 1.16 % change (cached "
        "faster) the SchedulerOutput path share implies: this run cannot tell a change "
        "of that size from none in tokens/s")
