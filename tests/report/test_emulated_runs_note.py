"""A report of several runs says the emulated note once, each emulated run named with
what is its own (its cases counted against its own, its figures where they differ)."""
import pandas as pd

from ipc_bench.report.blocks import _emulated_runs_blocks
from ipc_bench.report.tables import emulated_note, emulated_runs_note

#: A one-sided claim on send's share ("larger than beside the GPU's real model time")
#: is not made: the step's control plane and send's µs are this machine's too.
BOUND = ("; uncalibrated figures take every op at the assumed rates (not measured here; a "
         "kernel may exceed them by the datasheet peaks' margin at most, 1.12x bandwidth "
         "and 1.25x bf16, and the ops left out add time) with no per-step launch or host "
         "time, so each step's "
         "model time is the time at those rates, not a bound on that GPU's: a real GPU's "
         "longer model time alone would make send's share of a step smaller, a shorter "
         "one larger; and send's µs and the rest of each step, the control plane, are "
         "this machine's CPU's, so the share on a GPU host also depends on that host's CPU")
TAIL = (": the runner waited each step's roofline time on those figures "
        "(ipc_bench/engine/gpu_figures.json), so step times and tokens/s are what `send` "
        "and `cached` cost next to that step, not a measured GPU run.")


def _cases(run, n, preset=None, figures="uncalibrated", emulated=True):
    return [dict(run_id=run, policy=p, codec="msgpack", emulated=emulated,
                 emulated_gpu="NVIDIA H200" if emulated else None,
                 emulated_preset=preset if emulated else None,
                 gpu_figures=figures if emulated else None)
            for p in ("send", "cached")[:n]]


def test_several_emulated_runs_share_one_note_each_named_with_its_own_figures():
    cases = pd.DataFrame(_cases("a", 2, emulated=False) + _cases("e1", 2, "llama-3.2-1b")
                         + _cases("e2", 2, "llama-3.1-8b"))
    blocks = _emulated_runs_blocks(cases, ["a", "e1", "e2"])
    assert blocks == [("note", (
        "EMULATED: runs `e1` (2 of 2 cases; llama-3.2-1b on NVIDIA H200 figures "
        "UNCALIBRATED) and `e2` (2 of 2 cases; llama-3.1-8b on NVIDIA H200 figures "
        "UNCALIBRATED) slept a roofline step time; no GPU computed their steps"
        + BOUND + TAIL))]


def test_runs_on_the_same_figures_name_them_once_after_the_runs():
    runs = [("e1", _cases("e1", 2, "llama-3.2-1b")),
            ("e2", _cases("e2", 1, "llama-3.2-1b") + _cases("e2", 1, emulated=False)),
            ("e3", _cases("e3", 2, "llama-3.2-1b", "calibrated")),
            ("e4", _cases("e4", 1, "llama-3.2-1b", "calibrated"))]
    assert emulated_runs_note(runs[:2]) == (
        "EMULATED: runs `e1` (2 of 2 cases) and `e2` (1 of 2 cases) slept a roofline step "
        "time (llama-3.2-1b on NVIDIA H200 figures UNCALIBRATED); no GPU computed their "
        "steps" + BOUND)
    # calibrated figures alone: no assumed rates said
    assert emulated_runs_note(runs[2:]) == (
        "EMULATED: runs `e3` (2 of 2 cases) and `e4` (1 of 1 cases) slept a roofline step "
        "time (llama-3.2-1b on NVIDIA H200 figures CALIBRATED); no GPU computed their steps")
    assert emulated_runs_note([("a", _cases("a", 2, emulated=False))]) is None


def test_one_emulated_run_among_several_keeps_its_own_note_named_by_run():
    cases = pd.DataFrame(_cases("a", 2, emulated=False) + _cases("e1", 2, "llama-3.2-1b"))
    blocks = _emulated_runs_blocks(cases, ["a", "e1"])
    own = emulated_note(_cases("e1", 2, "llama-3.2-1b"))
    assert blocks == [("note", "In run `e1`: " + own + TAIL)]
    assert own == ("EMULATED: 2 of 2 cases slept a roofline step time (llama-3.2-1b on "
                   "NVIDIA H200 figures UNCALIBRATED); no GPU computed their steps" + BOUND)
    assert _emulated_runs_blocks(pd.DataFrame(_cases("a", 2, emulated=False)), ["a"]) == []
