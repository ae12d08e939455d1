"""Repeatable torch runs on CUDA: the setting applied before the torch model is built.

Measured on one H200 (torch 2.11, ``shared/measurements/h200-2026-11-30``): the torch
model's batched decode attention, padded to the batch's longest context so that its
shapes change every step, gave different greedy tokens for the same schedule in two
runs (send/msgpack against send/pickle) with torch's default settings, and equal
tokens with cuDNN's scaled-dot-product attention disabled
(``torch.backends.cuda.enable_cudnn_sdp(False)``) or with
``torch.use_deterministic_algorithms(True)``. ``deterministic_torch`` applies the first
(the narrower change: the other SDPA backends stay, no ``CUBLAS_WORKSPACE_CONFIG``)
in the process that builds the model: the runner process, and the scheduler's process
for the single-process case. Cases with equal schedule digests can then be held to
bitwise-equal tokens on CUDA too (``analysis.summary.check_digests``).
"""

from __future__ import annotations

from ipc_bench.engine.config import ModelConfig

#: Appended to the runner's device string (``Ready.device``, ``runner_device`` in the
#: results) when the setting was applied.
CUDNN_SDPA_OFF = "cuDNN SDPA off"


def deterministic_torch(model: ModelConfig) -> str:
    """For the torch model on CUDA (``device`` ``cuda``, or ``auto`` with a GPU):
    disable cuDNN's scaled-dot-product attention for this process and return
    ``CUDNN_SDPA_OFF``; otherwise change nothing (torch is not even imported for the
    null and fixed-step models) and return ``""``. ``ConfigError`` when CUDA is asked
    for and absent (as the model itself would raise)."""
    if model.name != "torch" or model.device == "cpu":
        return ""
    from ipc_bench.engine import models

    if models.resolve_device(model.device) != "cuda":
        return ""
    import torch

    torch.backends.cuda.enable_cudnn_sdp(False)
    return CUDNN_SDPA_OFF


def device_label(device: str, note: str) -> str:
    """The runner's device string with ``deterministic_torch``'s note, if any."""
    return f"{device}, {note}" if note else device
