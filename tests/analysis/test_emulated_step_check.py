"""The emulated model's step check (``send_cost.emulated_step_warning``): a cached
case's median whole step over its emulated model time by more than the fixed step's
whole-step rule allows (10 % + the control plane's allowance, ``over_control_plane``)
is warned of, with the ratio, in the case's warnings and in the share line, whose
words say the model time is at assumed GPU rates (not a bound on a GPU's) and give
the mean context per request it was computed for. Figures of a loaded 2-core run:
8B at 256 running, an 11.69 ms step against a 7.93 ms model time."""
from ipc_bench.analysis import send_cost
from ipc_bench.analysis.send_cost import (emulated_step_warning, emulated_words,
                                          over_control_plane, whole_step_warning)
from ipc_bench.analysis.summary import noise_warnings

WARNED = ("emulated model step 7.93 ms (a mean): the whole step ran a median 11.69 ms "
          "(1.47x), more than 10 % + 1.02 ms (control plane at B = 256) over the model's "
          "time: the runner's forward or this machine's control plane lengthened the step "
          "(the forward's overrun was not recorded); send's shares are of that lengthened "
          "step, not of the model's")


def _case(policy="cached", step_ns=11_694_800.0, model_ns=7_930_000.0, **kw):
    return dict(dict(emulated=True, gpu_figures="uncalibrated", policy=policy,
                     workload="num_running=256", num_running=256, step_ns_median=step_ns,
                     emulated_step_ns_per_step=model_ns,
                     emulated_context_tokens_per_request_mean=391.04, num_steps=300), **kw)


def test_a_cached_step_the_control_plane_lengthened_is_warned_of_with_its_ratio():
    assert emulated_step_warning(_case()) == WARNED
    # the 1B case: 4.68 ms against 1.56 ms
    assert emulated_step_warning(_case(step_ns=4_680_000.0, model_ns=1_563_000.0)) == (
        "emulated model step 1.56 ms (a mean): the whole step ran a median 4.68 ms "
        "(2.99x), more than 10 % + 1.02 ms (control plane at B = 256) over the model's "
        "time: the runner's forward or this machine's control plane lengthened the step "
        "(the forward's overrun was not recorded); send's shares are of that lengthened "
        "step, not of the model's")
    # in the case's warnings, as the run prints and records them
    assert WARNED in noise_warnings(_case())


def test_the_check_is_the_fixed_steps_rule():
    # 7.93 ms * 1.1 + 1.018 ms = 9.741 ms: at it, no warning; just over, one
    edge = 7_930_000.0 * 1.1 + 1_018_000.0
    assert emulated_step_warning(_case(step_ns=edge)) is None
    assert emulated_step_warning(_case(step_ns=edge + 1)) is not None
    assert over_control_plane(edge + 1, 7_930_000.0, 256)
    assert not over_control_plane(edge, 7_930_000.0, 256)
    # the fixed step's check says the same at the same figures
    fixed = dict(fixed_step_ms=7.93, num_running=256, step_ns_median=edge + 1)
    assert whole_step_warning(fixed) is not None
    assert whole_step_warning(dict(fixed, step_ns_median=edge)) is None


def test_no_warning_for_send_a_replay_or_another_model():
    assert emulated_step_warning(_case("send")) is None
    assert emulated_step_warning(_case(workload="trace=azure-conv")) is None
    assert emulated_step_warning(_case(emulated=False)) is None
    assert emulated_step_warning(_case(emulated_step_ns_per_step=None)) is None


def test_the_share_words_give_assumed_rates_the_context_and_the_lengthened_step():
    assert emulated_words([_case("send", 11_852_000.0), _case()]) == (
        " (measured here: an emulated model time at assumed GPU rates, uncalibrated, for "
        "a mean 391.0 context tokens per request, and this machine's control plane, "
        "which lengthened cached's median step to 1.47x the model's time, more than the "
        "control plane accounts for (warned): the share is of that lengthened step (the "
        "case's warning says by what))")
    on_time = _case(step_ns=8_500_000.0)
    assert emulated_words([on_time]) == (
        " (measured here: an emulated model time at assumed GPU rates, uncalibrated, for "
        "a mean 391.0 context tokens per request, and this machine's control plane)")
    # a run before the context was recorded; calibrated figures
    assert emulated_words([dict(on_time, emulated_context_tokens_per_request_mean=None,
                                gpu_figures="calibrated")]) == (
        " (measured here: an emulated model time, and this machine's control plane)")
    # several repetitions lengthened: the largest ratio
    assert "to up to 2.00x the model's time" in emulated_words(
        [_case(), _case(step_ns=15_860_000.0)])
    assert send_cost.CONTEXT_KEY == "emulated_context_tokens_per_request_mean"
