"""The emulated note splits each workload's mean step into the emulated model's time
and the rest, the harness's own, and says whether the mean context the roofline was
computed for is recorded."""
import pandas as pd

from ipc_bench.report.blocks import _emulated_block, _emulated_runs_blocks
from ipc_bench.report.tables import emulated_step_split

HEAD = ("Mean step per workload, the emulated model's time and the rest, the harness's "
        "own (scheduler, messages, runner and sampler on this machine's CPU): the mean "
        "step less the model's, a mean over repetitions without an interval, not what one "
        "arm costs against another (the findings compare arms, with intervals): ")
UNRECORDED = (" The mean context the roofline was computed for (KV tokens per request) "
              "is not recorded in this run's summary.json.")


def _case(policy, workload, model_ns, step_ns, rep=0, codec="msgpack", **extra):
    return dict(run_id="e", policy=policy, codec=codec, repetition=rep, workload=workload,
                emulated=True, emulated_gpu="NVIDIA H200", emulated_preset="llama-3.1-8b",
                gpu_figures="uncalibrated", emulated_step_ns_per_step=model_ns,
                step_ns_mean=step_ns, **extra)


def test_each_workload_gives_the_model_time_and_each_arm_s_rest():
    cases = [_case("send", "num_running=1", 3_500_800.0, 3_700_000.0),
             _case("cached", "num_running=1", 3_500_800.0, 3_690_000.0),
             _case("send", "num_running=256", 6_898_930.5, 7_940_000.0),
             _case("cached", "num_running=256", 6_898_930.5, 7_880_000.0),
             _case("cached", "num_running=256", 6_898_930.5, 7_900_000.0, rep=1)]
    assert emulated_step_split(cases) == (
        HEAD + "[num_running=1] the emulated model 3,500.8 µs, the rest send/msgpack "
        "199.2 µs, cached/msgpack 189.2 µs; [num_running=256] the emulated model "
        "6,898.9 µs, the rest send/msgpack 1,041.1 µs, cached/msgpack 991.1 µs."
        + UNRECORDED)


def test_a_recorded_mean_context_is_given_and_the_sentence_on_it_left_out():
    cases = [_case(p, "num_running=256", 6_898_930.5, 7_900_000.0,
                   emulated_context_tokens_per_request_mean=251.25)
             for p in ("send", "cached")]
    assert emulated_step_split(cases) == (
        HEAD + "[num_running=256] the emulated model 6,898.9 µs at a mean context of "
        "251.2 tokens per request, the rest send/msgpack 1,001.1 µs, cached/msgpack "
        "1,001.1 µs.")


def test_the_split_follows_the_note_and_is_absent_without_the_figures():
    cases = [_case("send", "num_running=4", 600_000.0, 700_000.0)]
    kind, text = _emulated_block(pd.DataFrame(cases))
    assert kind == "note"
    assert text.endswith("not a measured GPU run. " + HEAD + "[num_running=4] the "
                         "emulated model 600.0 µs, the rest send/msgpack 100.0 µs."
                         + UNRECORDED)
    bare = [dict(c, emulated_step_ns_per_step=None) for c in cases]
    assert emulated_step_split(bare) is None
    assert _emulated_block(pd.DataFrame(bare))[1].endswith("not a measured GPU run.")
    assert emulated_step_split([dict(c, emulated=False) for c in cases]) is None


def test_several_runs_each_give_their_own_split():
    cases = pd.DataFrame([_case("send", "num_running=4", 600_000.0, 700_000.0),
                          dict(_case("send", "num_running=4", 3_000_000.0, 3_300_000.0),
                               run_id="f")])
    ((kind, text),) = _emulated_runs_blocks(cases, ["e", "f"])
    assert text.endswith(
        "not a measured GPU run. In run `e`: " + HEAD + "[num_running=4] the emulated "
        "model 600.0 µs, the rest send/msgpack 100.0 µs." + UNRECORDED + " In run `f`: "
        + HEAD + "[num_running=4] the emulated model 3,000.0 µs, the rest send/msgpack "
        "300.0 µs." + UNRECORDED)
