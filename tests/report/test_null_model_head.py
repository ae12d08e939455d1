"""A case table's head says the null model where its cases ran it, as the report's NULL
MODEL note does: ``device=cpu`` alone read as if a model ran on the CPU."""

from __future__ import annotations

from ipc_bench.report.tables import format_tables, null_head


def _case(policy: str, model, device: str = "cpu") -> dict:
    return dict(case_id=f"num_running=4/{policy}/msgpack#0", scenario="decode-steady",
                workload="num_running=4", policy=policy, codec="msgpack", transport="ipc",
                model=model, runner_device=device, complete=True, num_steps=20,
                output_tokens_per_s=1000.0)


def _head(*cases) -> str:
    return format_tables(list(cases)).splitlines()[0]


def test_a_null_model_table_names_the_model_after_the_device():
    assert _head(_case("send", "null"), _case("cached", "null")) == (
        "decode-steady  [num_running=4]  device=cpu  model=null (no model computed: the "
        "step is the harness's own)")
    assert _head(_case("send", "null", "cpu (remote runner)")) == (
        "decode-steady  [num_running=4]  device=cpu (remote runner)  model=null (no model "
        "computed: the step is the harness's own)")


def test_other_models_keep_the_device_alone():
    emulated = "emulated llama-3.1-8b on NVIDIA H200 (roofline, uncalibrated)"
    assert _head(_case("send", "emulated", emulated)) == (
        f"decode-steady  [num_running=4]  device={emulated}")
    assert _head(_case("send", "fixed-step", "cpu (fixed step: sleep wait)")) == (
        "decode-steady  [num_running=4]  device=cpu (fixed step: sleep wait)")
    assert _head(_case("send", "torch")) == "decode-steady  [num_running=4]  device=cpu"
    # no model recorded (an older summary), or not every case the null model's
    assert null_head([dict(_case("send", None))]) == ""
    assert null_head([_case("send", "null"), _case("cached", "torch")]) == ""
    assert null_head([]) == ""
