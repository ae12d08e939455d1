"""A stall line's share of the time where it is just over the rule's 5 %
(``summary.STALL_SHARE_MIN``): one decimal under 10 %, more where one would read 5.0,
so a share over the rule never reads as equal to it (``5 %`` was printed for 5.12 %)."""

from __future__ import annotations

from ipc_bench.analysis.summary import stall_warnings

CAUSES = ("the process did not run: stopped, preempted on a busy machine or paused with "
          "its VM")


def _replay(share: float) -> dict:
    """A logical replay's summary with 9 stalled steps holding ``share`` of its time."""
    return dict(num_steps=1_000, step_ns_median=100_000.0, step_ns_mean=120_000.0,
                step_ns_max=3_000_000.0, step_ns_max_seq=402, stalled_steps=9,
                stalled_step_share=share, stalled_step_ns_max=3_000_000.0,
                stalled_step_ns_max_seq=402, stalled_step_ns_max_ratio=30.0,
                output_tokens_per_s_without_stalled=9_000.0)


def _replay_line(share: str) -> str:
    return (f"9 counted steps took over 10x the median step of their workload (the "
            f"counted steps that scheduled as many tokens, to within a power of 2), "
            f"{share} of the counted steps' time: stalls ({CAUSES}), which the mean step, "
            "out tok/s and the comparisons hold; the longest, step 402 (steps.csv seq), "
            "took 3.0 ms, 30x its workload's median; out tok/s without them: 9,000")


def test_a_replays_share_just_over_5_percent_reads_over_it():
    assert stall_warnings(_replay(0.0512)) == [_replay_line("5.1 %")]
    assert stall_warnings(_replay(0.0501)) == [_replay_line("5.01 %")]
    assert stall_warnings(_replay(0.05004)) == [_replay_line("5.004 %")]
    assert stall_warnings(_replay(0.0986)) == [_replay_line("9.9 %")]
    assert stall_warnings(_replay(0.125)) == [_replay_line("12 %")]


def test_the_longest_step_and_the_loops_standstill_read_over_it_too():
    # 200 steps of a mean 1 ms, a median 0.1 ms: a 5 % share is 10 ms
    short = dict(num_steps=200, step_ns_median=100_000.0, step_ns_mean=1_000_000.0,
                 step_ns_max=10_100_000.0, step_ns_max_seq=77)
    assert stall_warnings(short) == [
        f"counted step 77 (steps.csv seq) took 10.1 ms, 101x the median step, 5.1 % of "
        f"the counted steps' time: a stall ({CAUSES}), which the mean step, out tok/s and "
        "the comparisons hold"]
    loop = dict(num_steps=200, step_ns_median=100_000.0, step_ns_mean=110_000.0,
                loop_steps=200, loop_step_ns_mean=1_000_000.0,
                between_steps_ns_max=10_240_000.0, between_steps_ns_max_seq=88)
    assert stall_warnings(loop) == [
        "the scheduler loop stood still for 10.2 ms before step 88 (steps.csv seq), "
        f"5.1 % of its time: a stall ({CAUSES}) between two steps, which out tok/s, over "
        "the steps' time, leaves out"]
