"""A run's header (the notebook's first output) says which model ran: null, emulated
(its step times a roofline sleep) or torch and its device."""
from ipc_bench.report.tables import model_line

EMULATED = dict(model="emulated", emulated_preset="llama-3.1-8b", emulated_gpu="NVIDIA H200",
                gpu_figures="uncalibrated",
                runner_device="emulated llama-3.1-8b on NVIDIA H200 (roofline, uncalibrated)")


def test_each_model_is_named_once():
    cases = [dict(model="null", runner_device="cpu")] * 2
    assert model_line(cases) == "null (no model computed: the step is the harness's own)"
    in_process = dict(EMULATED, runner_device=EMULATED["runner_device"] + " (in-process)")
    assert model_line([EMULATED, in_process, EMULATED]) == (
        "emulated (llama-3.1-8b on NVIDIA H200 figures, uncalibrated): its step times are "
        "a roofline sleep, no GPU computed them")
    assert model_line([dict(model="torch", runner_device="cuda"),
                       dict(model="null", runner_device="cpu"),
                       dict(model="torch", runner_device="cuda (in-process)")]) == (
        "torch on cuda | null (no model computed: the step is the harness's own)")


def test_a_model_not_recorded_is_said_so():
    assert model_line([]) == "not recorded"
    assert model_line([dict(model=None), dict(model=float("nan"))]) == "not recorded"
    assert model_line([dict(model="emulated")]) == (
        "emulated (? figures, ?): its step times are a roofline sleep, no GPU computed them")
    assert model_line([dict(model="fixed-step", runner_device=None)]) == "fixed-step"
