"""A case whose mean step is over 1.5 times its median (``summary.skewed_steps_warning``)
has noisy step times in the report as one whose 50-step block CV is over 10 % does
(``analysis.step_noise.step_time_noisy``): the machine-load lines count it, naming each
rule's count, and a step-time pair with it marks its whole-step crossing unreliable,
quoting its mean/median ratio, not a block CV it does not have."""

from __future__ import annotations

import pandas as pd

from ipc_bench.analysis import summary
from ipc_bench.analysis.step_noise import (block_cv_noisy, ratio_text, skew_ratio,
                                           skewed, step_time_noisy)
from ipc_bench.report import blocks
from ipc_bench.report.findings import _step_time_findings
from ipc_bench.scenarios.step_time import report


def _case(policy, b, step_ns, s2r_ns, forward_ns, step_time_ms=5.0, rep=0):
    """A finished step-time case's summary, with the fields the run records (as
    ``test_step_time_shares``')."""
    return dict(scenario="step-time", complete=True, num_steps=200, step_time_ms=step_time_ms,
                num_running=b, codec="msgpack", repetition=rep, policy=policy,
                case_id=f"{policy}-{b}-{rep}", fixed_step_ms=step_time_ms,
                step_ns_median=step_ns, s2r_build_encode_decode_ns_median=s2r_ns,
                runner_forward_ns_median=forward_ns)

#: The null-model case that went unwarned by its block CV: 7.4 %, mean 1.97x the median.
SKEWED = dict(num_steps=300, step_ns_block_cv=0.074, step_ns_mean=462_900.0,
              step_ns_median=234_900.0)
BLOCKY = dict(num_steps=300, step_ns_block_cv=0.2, step_ns_mean=250_000.0,
              step_ns_median=240_000.0)
QUIET = dict(num_steps=300, step_ns_block_cv=0.05, step_ns_mean=250_000.0,
             step_ns_median=240_000.0)
HEAD = ("`r`: the machine 90.0 % busy (mean `machine_busy_pct` over {n} cases); 1-minute "
        "load average 1.5 on 2 CPUs at its start; ")


def test_the_predicate_takes_either_rule_and_no_replay():
    assert [step_time_noisy(c) for c in (SKEWED, BLOCKY, QUIET)] == [True, True, False]
    assert [block_cv_noisy(c) for c in (SKEWED, BLOCKY, QUIET)] == [False, True, False]
    assert [skewed(c) for c in (SKEWED, BLOCKY, QUIET)] == [True, False, False]
    assert step_time_noisy(dict(SKEWED, trace="azure-conv:300")) is False
    assert step_time_noisy(dict(SKEWED, num_steps=149)) is False
    assert step_time_noisy(dict(SKEWED, step_ns_mean=float("nan"))) is False
    assert skew_ratio(SKEWED) == 462_900.0 / 234_900.0
    assert ratio_text(skew_ratio(SKEWED)) == "1.97x"
    assert ratio_text(1.500001) == "1.50000x"
    assert ratio_text(1.5004) == "1.5004x"


def test_the_rules_are_the_summarys():
    # step_noise imports nothing of the project (send_cost, below summary, reads it):
    # its skew rule is the summary's warning's
    cases = [dict(SKEWED, **extra) for extra in (
        {}, {"num_steps": 149}, {"num_steps": 150}, {"trace": "azure-conv:300"},
        {"instrumentation": "totals"}, {"step_ns_mean": 352_350.0},
        {"step_ns_mean": 352_351.0}, {"step_ns_median": None}, {"step_ns_mean": 0.0})]
    assert [skewed(c) for c in cases] == [
        summary.skewed_steps_warning(c) is not None for c in cases] == [
        True, False, True, False, False, False, True, False, False]
    for c in cases:
        for cv in (0.1, 0.1001, None):
            c = dict(c, step_ns_block_cv=cv)
            assert step_time_noisy(c) == bool(summary.step_spread_warnings(c))


def _load(*cases):
    frame = pd.DataFrame([dict(c, machine_busy_pct=90.0) for c in cases])
    return blocks.machine_load(frame, {"load_avg": [1.5], "cpu_count": 2})


def test_the_machine_load_line_counts_a_skewed_case_under_10_percent_block_cv():
    load = _load(SKEWED, BLOCKY, QUIET)
    assert {k: load[k] for k in ("noisy", "timed", "over_cv", "skewed", "replays")} == dict(
        noisy=2, timed=3, over_cv=1, skewed=1, replays=0)
    assert blocks.machine_load_line("r", load) == HEAD.format(n=3) + (
        "noisy step times in 2 of 3 cases (`step_ns_block_cv` over 10 % in 1, the mean "
        "step over 1.5x the median in 1)")


def test_a_case_under_both_rules_is_counted_once_and_said_so():
    both = dict(SKEWED, step_ns_block_cv=0.3)
    assert blocks.machine_load_line("r", _load(both, SKEWED, QUIET, QUIET)) == (
        HEAD.format(n=4) + "noisy step times in 2 of 4 cases (`step_ns_block_cv` over "
        "10 % in 1, the mean step over 1.5x the median in 2, both in 1)")


def test_without_a_skewed_case_the_line_reads_as_before():
    assert blocks.machine_load_line("r", _load(BLOCKY, QUIET)) == HEAD.format(n=2) + (
        "noisy step times (`step_ns_block_cv` over 10 %) in 1 of 2 cases")


def test_a_skewed_replay_is_not_counted():
    load = _load(dict(SKEWED, trace="azure-conv:300"), QUIET)
    assert (load["noisy"], load["timed"], load["replays"]) == (0, 1, 1)


SKEW_LINE = (
    "2 ms, msgpack: whole step <= 16 (already at the smallest B) (unreliable: at B = 16 "
    "a case's mean step was 2.00x its median (> 1.5x: long steps spread through it), so "
    "its whole-step difference is the machine's noise as much as send's; at B = 16 one "
    "repetition, no interval: one draw of the noisy whole-step difference; at B = 16 "
    "send's whole step is 340 µs (13.82 %) longer than cached's, its SchedulerOutput "
    "path 1 µs (0.03 %) longer); s2r n/a (one B only)")


def _skewed_pair():
    # cached's 200 steps: block CV 7.4 %, under the 10 %, but a mean step of 4.92 ms
    # against its 2.46 ms median
    summaries = [_case("send", 16, 2_800_000, 28_000, 2_048_000, step_time_ms=2.0),
                 _case("cached", 16, 2_460_000, 27_270, 2_045_000, step_time_ms=2.0)]
    summaries[1].update(step_ns_block_cv=0.074, step_ns_mean=4_920_000.0)
    return summaries


def test_a_skewed_pairs_whole_step_crossing_is_marked_unreliable_with_its_ratio():
    summaries = _skewed_pair()
    text = report(summaries)
    assert summaries[0]["send_cost_step_noisy"] is True
    assert f"  {SKEW_LINE}" in text.splitlines()
    assert _step_time_findings(pd.DataFrame(summaries))[1].endswith(f": {SKEW_LINE}.")


def test_a_summary_recorded_before_the_skew_rule_is_marked_by_the_report():
    summaries = _skewed_pair()
    report(summaries)
    summaries[0]["send_cost_step_noisy"] = False  # as the block-CV rule alone recorded it
    assert _step_time_findings(pd.DataFrame(summaries))[1].endswith(f": {SKEW_LINE}.")
