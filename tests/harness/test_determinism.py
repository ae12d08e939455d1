"""``ipc_bench.harness.determinism``: the torch model on CUDA runs with cuDNN's
scaled-dot-product attention off; nothing changes for any other model or device."""

from __future__ import annotations

import pytest

from ipc_bench.engine import models
from ipc_bench.engine.config import ModelConfig
from ipc_bench.harness.determinism import CUDNN_SDPA_OFF, deterministic_torch, device_label


def test_cudnn_sdpa_is_turned_off_for_the_torch_model_on_cuda(monkeypatch):
    torch = pytest.importorskip("torch")
    asked = []
    monkeypatch.setattr(models, "resolve_device", lambda d: asked.append(d) or "cuda")
    was = torch.backends.cuda.cudnn_sdp_enabled()
    try:
        torch.backends.cuda.enable_cudnn_sdp(True)
        assert deterministic_torch(ModelConfig(name="torch", device="auto")) == CUDNN_SDPA_OFF
        assert torch.backends.cuda.cudnn_sdp_enabled() is False and asked == ["auto"]
    finally:
        torch.backends.cuda.enable_cudnn_sdp(was)
    assert device_label("cuda (NVIDIA H200)", CUDNN_SDPA_OFF) == \
        "cuda (NVIDIA H200), cuDNN SDPA off"


def test_nothing_changes_for_other_models_or_devices(monkeypatch):
    monkeypatch.setattr(models, "resolve_device", lambda d: "cpu")  # auto on a CPU machine
    for config in (ModelConfig(name="null"), ModelConfig(name="fixed-step"),
                   ModelConfig(name="torch", device="cpu"),
                   ModelConfig(name="torch", device="auto")):
        assert deterministic_torch(config) == ""
    assert device_label("cpu", "") == "cpu"
