"""``scripts/verify_step_bench.py``'s error lines start ``verify_step_bench.py: error:``, as
``gpu_check.py: error:`` and ``bench.py: error:`` do: bad input, a CUDA device torch does
not see, and a size the model refuses once the timing started; each one line, exit 2."""

from __future__ import annotations

import pytest
from script_module import load_script

from ipc_bench.engine.config import ConfigError


@pytest.fixture
def bench():
    return load_script("verify_step_bench")


def test_bad_input_starts_with_error(bench, capsys):
    assert bench.main(["--threads", "0"]) == 2
    assert capsys.readouterr() == (
        "", "verify_step_bench.py: error: --threads: must be at least 1, got 0\n")


def test_a_cuda_device_torch_does_not_see_starts_with_error(bench, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert bench.main(["--device", "cuda"]) == 2
    assert capsys.readouterr() == (
        "", "verify_step_bench.py: error: --device: cuda, but torch sees no CUDA device\n")


def test_a_size_refused_while_timing_starts_with_error_in_one_line(bench, capsys,
                                                                  monkeypatch):
    def refused(torch, args, n):
        raise ConfigError(f"num_running {n}: refused\nby the model")

    monkeypatch.setattr(bench, "run_size", refused)
    assert bench.main(["--num-running", "2", "--reps", "1", "--warmup", "0"]) == 2
    out, err = capsys.readouterr()
    assert err == "verify_step_bench.py: error: num_running 2: refused\\nby the model\n"
    assert out.splitlines()[1].split() == ["running", "batched", "ms", "one-by-one", "ms",
                                           "ratio", "same", "ids", "max", "|dlogit|"]
