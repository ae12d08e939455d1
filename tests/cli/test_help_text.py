"""The run command's help states the limits its checks apply, word for word."""

from __future__ import annotations

from ipc_bench.cli.options import build_parser


def _help_of(option: str) -> str:
    """The help of ``option`` as ``--help`` prints it, on one line."""
    action = next(a for a in build_parser()._actions if option in a.option_strings)
    return " ".join(action.help.split())


def test_scheduler_limits_state_their_true_minimum():
    assert _help_of("--max-model-len") == (
        "vLLM's max_model_len (2 to 1,048,576; at least --block-size; the steady scenarios: "
        "more than 256, their longest prompt)")
    assert _help_of("--num-blocks") == (
        "vLLM's num_blocks (1 to 4,194,304; a steady scenario (--num-running) defaults to "
        "4,096 tokens per running request, plus 4,096, in whole blocks (256 x (B + 1) at "
        "--block-size 16), at most this bound, and refuses a cache that cannot hold all of "
        "its requests at once at the longest context each can reach in the case (the figures and the --num-blocks that fits are in the error); "
        "the trace scenarios reject a prompt that, with its first sampled token, needs more "
        "blocks than the cache, and a request that outgrows it fails the case; real memory "
        "with the torch model)")


def test_the_lowest_values_the_help_gives_are_accepted():
    args = build_parser().parse_args(["--max-model-len", "2", "--num-blocks", "1"])
    assert (args.max_model_len, args.num_blocks) == (2, 1)


def test_steps_says_exactly_what_is_run():
    assert _help_of("--steps") == (
        "counted steps per case (steady scenarios): after the warm-up the case runs exactly "
        "this many pure-decode steps, and between them, uncounted, the mixed steps (a "
        "finished request's replacement prefilling, a preempted one resuming); default "
        "1000 for decode-steady and overhead, 300 for tp-broadcast and pp, 200 for "
        "step-time; the azure-* replays and soak refuse it: they run until their requests "
        "finish")


def test_steps_states_the_default_each_scenario_uses():
    from ipc_bench.harness.scenario import ScenarioOptions, discover

    scenarios = discover()
    used = {name: {c.counted_steps for c in scenarios[name].cases(
        ScenarioOptions(repeat=2, pp=[1], tp=[1]))}
        for name in ("decode-steady", "overhead", "tp-broadcast", "pp", "step-time")}
    assert used == {"decode-steady": {1000}, "overhead": {1000}, "tp-broadcast": {300},
                    "pp": {300}, "step-time": {200}}


def test_max_requests_states_its_default():
    assert _help_of("--max-requests") == (
        "replay the first N requests of the trace (default 300; soak: the whole trace); a "
        "trace with fewer than a given N is replayed whole, with a note")


def test_warmup_steps_states_each_scenarios_default_and_the_scenarios_use_it():
    from ipc_bench.harness.scenario import ScenarioOptions, discover

    assert _help_of("--warmup-steps") == (
        "warm-up steps per case (default 100 for decode-steady and overhead, 30 for "
        "tp-broadcast and pp, 20 for step-time, 50 for the azure-* replays and soak); a "
        "trace replay whose every step would fall in the warm-up is refused before its "
        "first case (a timed one warned)")
    scenarios = discover()
    used = {name: {c.warmup_steps for c in scenarios[name].cases(
        ScenarioOptions(repeat=2, steps=10, pp=[1], tp=[1]))}
        for name in ("decode-steady", "overhead", "tp-broadcast", "pp", "step-time")}
    assert used == {"decode-steady": {100}, "overhead": {100}, "tp-broadcast": {30},
                    "pp": {30}, "step-time": {20}}


def test_repeat_and_peer_timeout_state_their_defaults_and_limits():
    assert _help_of("--repeat") == (
        "repetitions of each case (default 1; overhead: 8 when --repeat is not given, and "
        "at least 2; soak: 1 only, it runs one case); the arms of a repetition run next to "
        "each other, their orders counterbalanced over the repetitions (seeded by "
        "--order-seed); with 2 or more the summary compares the arms with paired "
        "95 %% intervals, verdicts Holm-adjusted over the timed metrics")
    assert _help_of("--order-seed") == (
        "seed of the arms' counterbalanced orders over the repetitions (--repeat 2 or "
        "more; default: the --seed value, so the same --seed gives the same orders); it "
        "draws other orders of the "
        "same cases, the workload and model left as --seed makes them, so a rerun with "
        "another order seed stays comparable with the first; refused where it orders "
        "nothing: one repetition, one arm per workload and codec, overhead (its arms "
        "alternate) and soak (one case)")
    assert _help_of("--seed") == ("workload and model seed (and the arms' order, without "
                                  "--order-seed)")
    assert _help_of("--peer-timeout") == (
        "seconds to wait for the other process's reply to a step before failing the case "
        "(default 10, at least 0.1: the waits run in 0.1 s slices, so a timeout fires up "
        "to two slices after it; at most 86400, 24 h; raise it for a large model on CPU)")
    assert _help_of("--startup-timeout") == (
        "seconds allowed for the runner's start-up and first step: imports, model load, "
        "CUDA init (default 120, at least 0.1, at most 86400: 24 h)")


def test_logical_step_and_pickle_over_tcp_state_their_limits():
    assert _help_of("--logical-step-ms") == (
        "trace time per scheduler step on the logical clock (default 20; 0.001 to "
        "8.64e+07: at least 1 us, so the arrival step numbers of any trace, whose "
        "timestamps span at most 10,000 years, fit in 64 bits)")
    assert _help_of("--allow-pickle-over-tcp").startswith("with --transport tcp: ")


def test_trace_speedup_caps_the_run_s_replays_in_all():
    assert _help_of("--trace-speedup") == (
        "timed replays: arrivals at X times real time (default 10; the run's timed replays, "
        "every case and repetition, may last at most 24 h in all)")
