"""The emulated step's warning (``send_cost.emulated_step_warning``) says why the cached
step ran over its model's time by the runner's recorded overrun
(``emulated_forward_excess_ns_per_step``: its forward, sleep and sampling, past the
model's time): the runner's sleep where that overrun, taken off the median step, leaves
it within the rule; else this machine's control plane, lengthened by CPU contention or
its own work; and, without the figure, either, not a cause it cannot tell."""
from ipc_bench.analysis.send_cost import emulated_step_warning, emulated_words
from ipc_bench.analysis.summary import noise_warnings

HEAD = ("emulated model step 7.93 ms (a mean): the whole step ran a median 11.69 ms "
        "(1.47x), more than 10 % + 1.02 ms (control plane at B = 256) over the model's time")
TAIL = "; send's shares are of that lengthened step, not of the model's"


def _case(**kw):
    return dict(dict(emulated=True, gpu_figures="uncalibrated", policy="cached",
                     workload="num_running=256", num_running=256,
                     step_ns_median=11_694_800.0, emulated_step_ns_per_step=7_930_000.0,
                     emulated_context_tokens_per_request_mean=391.04, num_steps=300), **kw)


def test_an_overrun_that_accounts_for_the_excess_is_the_runners_sleep():
    case = _case(emulated_forward_excess_ns_per_step=3_400_000.0)
    assert emulated_step_warning(case) == (
        HEAD + ": the runner's forward (its sleep and sampling) overran the model's time "
        "by a mean 3.40 ms a step, which accounts for it: the runner's sleep ran late, not "
        "the control plane" + TAIL)
    assert emulated_step_warning(case) in noise_warnings(case)


def test_an_overrun_that_leaves_the_step_over_the_rule_is_the_control_plane():
    case = _case(emulated_forward_excess_ns_per_step=200_000.0)
    assert emulated_step_warning(case) == (
        HEAD + ", of which the runner's forward (its sleep and sampling) overran it by a "
        "mean 0.20 ms a step: the rest is this machine's control plane, lengthened by CPU "
        "contention or its own work" + TAIL)
    assert emulated_step_warning(case) in noise_warnings(case)


def test_without_the_overrun_the_warning_names_both_and_the_share_line_neither():
    assert emulated_step_warning(_case()) == (
        HEAD + ": the runner's forward or this machine's control plane lengthened the "
        "step (the forward's overrun was not recorded)" + TAIL)
    assert emulated_words([_case()]).endswith(
        ", which lengthened cached's median step to 1.47x the model's time, more than the "
        "control plane accounts for (warned): the share is of that lengthened step (the "
        "case's warning says by what))")
