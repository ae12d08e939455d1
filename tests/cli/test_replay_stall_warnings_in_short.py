"""A trace replay's stalled-steps warning (``summary.replay_stall_warning``: its steps
judged against their workload's median), which comes up under every repetition of a
replay on a busy machine, is a machine-noise kind (``summary.noise_shorthand``:
``replay_stalls``): in full under the first case that has it, then in short on the
``as above`` line (``execute._Run._log_warnings``); summary.json keeps it whole."""

from __future__ import annotations

from ipc_bench.analysis.summary import noise_shorthand, replay_stall_warning
from ipc_bench.cli.execute import _Run

#: A replay case of 585 counted steps, 12 of them stalls, 32 % of its steps' time.
REPLAY = dict(
    case_id="trace=azure-conv:20/cached/msgpack#0", trace="azure-conv:20",
    workload="trace=azure-conv:20", num_steps=585, step_ns_median=128_231.0,
    step_ns_mean=211_959.2, step_ns_max=5_345_823.0, step_ns_max_seq=449,
    stalled_steps=12, stalled_step_share=0.3157, stalled_step_ns_max=5_345_823.0,
    stalled_step_ns_max_ratio=40.6, stalled_step_ns_max_seq=449,
    output_tokens_per_s_without_stalled=18_726.7)
FULL = ("12 counted steps took over 10x the median step of their workload (the counted "
        "steps that scheduled as many tokens, to within a power of 2), 32 % of the "
        "counted steps' time: stalls (the process did not run: stopped, preempted on a "
        "busy machine or paused with its VM), which the mean step, out tok/s and the "
        "comparisons hold; the longest, step 449 (steps.csv seq), took 5.3 ms, 41x its "
        "workload's median; out tok/s without them: 18,727")


def test_a_replays_stall_warning_has_a_kind_and_a_short_form():
    assert replay_stall_warning(REPLAY) == FULL
    assert noise_shorthand(REPLAY) == {FULL: (
        "replay_stalls", "12 counted steps over 10x their workload's median, 32 % of the "
        "counted steps' time")}
    one = dict(REPLAY, stalled_steps=1, stalled_step_share=0.068)
    (short,) = noise_shorthand(one).values()
    assert short == ("replay_stalls", "1 counted step over 10x their workload's median, "
                                      "6.8 % of the counted steps' time")


def test_it_is_said_in_full_once_then_in_short(tmp_path, capsys):
    run = _Run(run_dir=tmp_path, writer=None, quiet=False, num_cases=2, progress_bar=False)
    run._log_warnings(dict(REPLAY, warnings=[FULL]))
    second = dict(REPLAY, case_id="trace=azure-conv:20/cached/msgpack#1", stalled_steps=11,
                  stalled_step_share=0.28)
    run._log_warnings(dict(second, warnings=[replay_stall_warning(second)]))
    assert capsys.readouterr().err.splitlines() == [
        f"  warning: {FULL}",
        "  warning: as above (the machine may be noisy): 11 counted steps over 10x their "
        "workload's median, 28 % of the counted steps' time"]
    assert run.in_short == 1
