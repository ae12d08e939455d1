"""The emulated note's "rest" (the mean step less the emulated model's time) invites no
comparison the findings refuse: it says once that the rest is a mean without an
interval, not an arm's cost (the findings compare arms, with intervals), and, where a
workload's arms ran different schedules (async against sync scheduling), that their
rests do not compare."""
from ipc_bench.report import tables
from ipc_bench.report.tables import emulated_step_split

HEAD = ("Mean step per workload, the emulated model's time and the rest, the harness's "
        "own (scheduler, messages, runner and sampler on this machine's CPU): the mean "
        "step less the model's, a mean over repetitions without an interval, not what one "
        "arm costs against another (the findings compare arms, with intervals): ")


def _case(arm, rep, step_ns, digest, workload="num_running=256"):
    return dict(run_id="a", policy="cached", arm=arm, codec="msgpack", repetition=rep,
                workload=workload, emulated=True, emulated_gpu="NVIDIA H200",
                emulated_preset="llama-3.2-1b", gpu_figures="uncalibrated",
                emulated_step_ns_per_step=2_111_200.0, step_ns_mean=step_ns,
                emulated_context_tokens_per_request_mean=671.9, schedule_digest=digest)


def test_arms_of_different_schedules_are_said_not_to_compare():
    cases = [_case("cached+async", 0, 2_781_100.0, "ac1a2b0c"),
             _case("cached", 0, 3_375_600.0, "aed1066d"),
             _case("cached+async", 1, 2_781_100.0, "ac1a2b0c"),
             _case("cached", 1, 3_375_600.0, "aed1066d")]
    assert emulated_step_split(cases) == (
        HEAD + "[num_running=256] the emulated model 2,111.2 µs at a mean context of "
        "671.9 tokens per request, the rest cached+async/msgpack 669.9 µs, "
        "cached/msgpack 1,264.4 µs (the arms ran different schedules: their rests do not "
        "compare).")
    assert tables.schedules_differ_in(cases)


def test_arms_of_one_schedule_get_no_such_clause():
    # a digest per repetition: repetitions' differ, a repetition's arms do not
    cases = [_case("send", 0, 3_352_800.0, "aed1066d"),
             _case("cached", 0, 3_417_800.0, "aed1066d"),
             _case("send", 1, 3_352_800.0, "bbbb0000"),
             _case("cached", 1, 3_417_800.0, "bbbb0000")]
    cases = [dict(c, policy=c["arm"]) for c in cases]
    assert emulated_step_split(cases) == (
        HEAD + "[num_running=256] the emulated model 2,111.2 µs at a mean context of "
        "671.9 tokens per request, the rest send/msgpack 1,241.6 µs, cached/msgpack "
        "1,306.6 µs.")
    assert not tables.schedules_differ_in(cases)
