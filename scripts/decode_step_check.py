#!/usr/bin/env python3
r"""The torch model's decode step on its own: each attention backend with and without
CUDA graphs, its GPU and host time per step, and the ratio of GPU time to the step's
roofline on this device's measured figures.

For each configuration (``--configs``, e.g. ``gather``, ``flex``, ``flex+graphs``,
``varlen+graphs``) one ``TorchModel`` of ``--preset`` is built in this process (so the
flex kernels compile once for all of them), its whole KV cache filled with random
values, and for each batch size of ``--num-running`` a batch of that many requests with
contexts drawn uniformly from ``[--context-min, --context-max]`` (seeded; each request's
blocks scattered over the cache, as after many allocations and frees) decodes
``--warmup`` + ``--steps`` steps: every row one token, its context one longer each step.
Each size ``B`` (a power of two, so its own bucket) is also run at ``B + 1`` rows, which
pads to the next bucket (``2B``): the difference is what padding costs at that
boundary. Every size starts from the same random cache and batch in every
configuration.

Per configuration and size it prints the medians over the counted steps of:

- ``step ms``: wall time of ``TorchModel.sample_step`` (host preparation, input copies,
  the forward and the synchronising copy of the sampled ids back);
- ``GPU ms``: CUDA events around the step's GPU work (``cuda_step.StepEventTimer``;
  ``-`` on CPU);
- ``host ms``: ``step`` minus ``GPU``: the host preparation before the first event
  and the final sync; the Python dispatch between an eager forward's kernels falls
  inside ``GPU`` wherever the GPU waited on it, so a launch-bound step reads low here;
- ``host launch ms``: the host's own time to launch the step, on the CPU clock from
  the step's start until its last launch returned, without a sync
  (``cuda_step.StepEventTimer.ended_at_ns``; ``host_launch_ns`` in the ``--json``
  rows): host preparation, input copies enqueued and every kernel's dispatch (or the
  graph replay). The goal on an H200 is judged on this: at most 1 ms; ``-`` on CPU,
  where every operation runs as it is launched;
- ``roofline ms``: ``roofline.RooflineStep`` of the step's actual contexts on the
  figures measured at the start (``roofline.measure_device_figures``: copy bandwidth and
  matmul rate in the model's dtype);
- ``x roofline``: GPU (on CPU: step) time over the roofline, per step, then the median
  (the goals on an H200 for the Llama-3.2-1B shape: at most 2 at 256 running, 3 at 16);
  below 1 it is marked ``!`` with a line under the table: the start-up figures
  underestimated the device (e.g. measured under load), shown as measured;
- ``same tokens``: the share of sampled ids equal to the first configuration's at the
  same size (all configurations start from the same cache and batch; bitwise equality
  is promised only between equal settings, see docs/oracles.md).

Under the table, ``goal_lines`` judges each configuration at 16 and 256 running against
those goals (``met`` / ``NOT met``; also the ``--json`` file's ``goals``), or says in
one line why the run is not judged (another preset or contexts, no CUDA events).

On CPU (no CUDA) graphs are replayed by ``cuda_step.strict_capture`` (the same work over
the same persistent buffers, with what a CUDA graph capture forbids refused: host syncs,
random draws, buffers that move after the capture), ``varlen`` is skipped with a line
saying it needs CUDA (no CPU kernel) while other configurations remain to run, and
refused (exit 2) when
``--configs`` names varlen only, since the run would measure nothing; the defaults
shrink to the ``tiny`` preset, 4 and 8 running and short contexts, so the script runs
anywhere: ``python scripts/decode_step_check.py``. On CUDA with a torch whose
``varlen_attn`` has no paged KV (torch 2.11: no ``block_table``, ``seqused_k``,
``enable_gqa`` or ``num_splits``; ``paged_attention.varlen_unsupported``), or whose
kernel refuses one paged call with the run's 16-token blocks
(``paged_attention.varlen_kernel_problem``: PyTorch's FlashAttention-2 takes blocks of a
multiple of 256 tokens only), ``varlen`` is skipped the same way, with a line naming
what is missing or the kernel's words; on CUDA without the C compiler and Python
headers Triton builds its modules with (``paged_attention.triton_toolchain_problem``),
``flex`` is skipped the same way. On an H200::

    python scripts/decode_step_check.py --preset llama-3.2-1b --num-running 16,256 \
        --configs gather,flex,flex+graphs,varlen,varlen+graphs --json out.json

Exit status: 0 when every configuration ran; 1 when one failed (it is reported and the
others still run) or the ``--json`` file could not be written at the end; 2 for bad
input, one line on stderr before anything runs (a value out of range, such as
``--context-min 0`` or a ``--context-min`` above ``--context-max``, an unknown
``--preset`` or configuration, a ``--preset`` whose weights and KV cache do not fit
the device (checked once, before any configuration), a ``--json`` path that cannot be
written, ``--device cuda`` without CUDA); 130 / 143 / 129 when interrupted by SIGINT /
SIGTERM / SIGHUP, with one line. The ``--json`` file is written after each
configuration, so an interrupted run (``gpu_check.py`` cuts stage 0 at its limit)
leaves the rows of the configurations it finished, and once more as an interrupt ends
the run; a ``--json`` that is this process's stdout or stderr, a pipe or a device
(``--json /dev/stdout > out.txt``) keeps every write, so it gets one document, at the
end (``console.replaced_whole``). Beside the rows it says how far the run got
(``Progress.record``):
``complete`` (false while a configuration is still to run: in a file left by an
interrupted or killed run), ``interrupted_by`` (``SIGINT``, ``SIGTERM``, ``SIGHUP`` or
null), ``not_run`` (the configurations not finished, the one running when the run
ended first), ``skipped`` (configuration: why it cannot run here) and ``failed``
(configuration: its error), so a configuration cut off reads apart from one skipped.
"""

from __future__ import annotations

import signal

if __name__ == "__main__":
    # As bench.py: the signals of ipc_bench.harness.signals.HANDLED, spelt out
    # (tests/cli/test_script_first_mask.py compares), stay pending until main() has
    # installed its handlers (ipc_bench.harness.signals), so none lands in an import.
    signal.pthread_sigmask(signal.SIG_BLOCK, (
        signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
        signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGXCPU))

import argparse
import gc
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ipc_bench.engine.config import (ConfigError, ModelConfig,  # noqa: E402
                                     ModelMemoryError, SchedulerConfig, check_max_position,
                                     check_model_memory, script_memory_refusal)
from ipc_bench.cli.options import list_items, no_repeats, writable_file  # noqa: E402
from ipc_bench.cli.console import replaced_whole, script_main, write_output  # noqa: E402
from ipc_bench.cli.once import OnceParser  # noqa: E402
from ipc_bench.harness import signals  # noqa: E402
from ipc_bench.report.tables import (ROOFLINE_BELOW_ONE_NOTE, below_roofline,  # noqa: E402
                                     roofline_ratio)
from ipc_bench.errors import module_doc  # noqa: E402

PROG = "decode_step_check.py"

#: Tokens per KV block (the scheduler's default, as vLLM's).
BLOCK_SIZE = 16


def parse_configs(text: str) -> list[tuple[str, bool]]:
    """``"gather,flex+graphs"`` -> ``[("gather", False), ("flex", True)]``;
    ``ConfigError`` for an unknown backend or graphs on ``gather``."""
    out = []
    for item in text.split(","):
        backend, _, graphs = item.strip().partition("+")
        if backend not in ("gather", "flex", "varlen") or graphs not in ("", "graphs"):
            raise ConfigError(f"unknown configuration {item!r}: use BACKEND or "
                              "BACKEND+graphs, BACKEND one of gather, flex, varlen")
        if backend == "gather" and graphs:
            raise ConfigError("gather+graphs: the gather backend's shapes change every "
                              "step, so it cannot be captured")
        out.append((backend, bool(graphs)))
    return out


class DecodeBatch:
    """``num_rows`` requests decoding together: contexts uniform in ``[lo, hi]``
    (``rng``), blocks drawn without replacement from ``num_blocks``; ``step()`` gives one
    decode step's arrays (``input_ids``, ``positions``, ``query_start_loc``,
    ``seq_lens``, ``block_table``) and grows every context by one token."""

    def __init__(self, rng: np.random.Generator, num_rows: int, lo: int, hi: int,
                 max_len: int, num_blocks: int, vocab_size: int):
        self.rng = rng
        self.vocab_size = vocab_size
        self.context = rng.integers(lo, hi + 1, num_rows)  # tokens before this step
        width = -(-max_len // BLOCK_SIZE)
        if num_rows * width > num_blocks:
            raise ConfigError(f"{num_rows} rows of up to {max_len} tokens need "
                              f"{num_rows * width} blocks; the cache has {num_blocks}")
        self.block_table = (rng.permutation(num_blocks)[:num_rows * width]
                            .reshape(num_rows, width).astype(np.int32))

    def step(self):
        n = len(self.context)
        positions = self.context.copy()
        self.context += 1
        return (self.rng.integers(0, self.vocab_size, n), positions, np.arange(n + 1),
                positions + 1, self.block_table)


#: The vocabulary of a preset that publishes none (``tiny``, ``cpu``).
DEFAULT_VOCAB_SIZE = 32000


def model_config(preset: str, device: str, **settings: Any) -> ModelConfig:
    """The torch model of ``preset`` on ``device`` as this script builds it (and checks
    its memory): the preset's published vocabulary, or ``DEFAULT_VOCAB_SIZE``."""
    vocab = ModelConfig(preset=preset).torch_preset.vocab_size or DEFAULT_VOCAB_SIZE
    return ModelConfig(name="torch", preset=preset, device=device, vocab_size=vocab,
                       **settings)


def run_config(torch, preset: str, device: str, backend: str, graphs: bool,
               runs: list[int], sched: SchedulerConfig, steps: int, warmup: int, lo: int,
               hi: int, seed: int, figures) -> list[dict[str, Any]]:
    """Rows of one configuration at each batch size of ``runs`` (see the module
    docstring). Every size starts from the same random cache and batch, whatever ran
    before it, so configurations compare token by token. The model (weights, KV cache,
    graphs) is freed before it returns."""
    from ipc_bench.engine.cuda_step import strict_capture
    from ipc_bench.engine.models import TorchModel
    from ipc_bench.engine.roofline import RooflineStep

    cfg = model_config(preset, device, seed=seed, attention=backend,
                       cuda_graphs=graphs and device == "cuda",
                       cuda_graph_sizes=tuple(sorted({1 << (b - 1).bit_length()
                                                      for b in runs})))
    model = TorchModel(cfg, sched)
    if graphs and device != "cuda":
        model.enable_graphs(strict_capture(torch))
    roofline = RooflineStep(model.preset, cfg.vocab_size, figures, figures.element_bytes)
    rows = []
    for b in runs:
        with torch.inference_mode():
            model.kv_cache.normal_(generator=torch.Generator(device=model.torch_device)
                                   .manual_seed(seed))
        batch = DecodeBatch(np.random.default_rng(seed + b), b, lo, hi, sched.max_model_len,
                            sched.num_blocks, cfg.vocab_size)
        wall, tokens, roof, launch = [], [], [], []
        first_busy = len(model.timer.gpu_busy_ns) if model.timer else 0
        for i in range(warmup + steps):
            ids, pos, qsl, lens, table = batch.step()
            t0 = time.perf_counter_ns()
            out = model.sample_step(ids, pos, qsl, lens, table)
            t1 = time.perf_counter_ns()
            if i >= warmup:
                wall.append(t1 - t0)
                tokens.append(out)
                roof.append(roofline.for_step(qsl, lens))
                if model.timer is not None:  # the last launch returned (no sync)
                    launch.append(model.timer.ended_at_ns - t0)
        busy = (np.array(model.timer.gpu_busy_ns[first_busy + warmup:], np.int64)
                if model.timer else None)
        wall_a, roof_a = np.array(wall, np.int64), np.array(roof, np.int64)
        measured = busy if busy is not None else wall_a
        rows.append(dict(
            config=backend + ("+graphs" if graphs else ""), num_running=b,
            bucket=model.attention.bucket(b), step_ns=float(np.median(wall_a)),
            gpu_busy_ns=None if busy is None else float(np.median(busy)),
            host_ns=None if busy is None else float(np.median(wall_a - busy)),
            host_launch_ns=float(np.median(launch)) if launch else None,
            roofline_ns=float(np.median(roof_a)),
            x_roofline=float(np.median(measured / roof_a)),
            tokens=np.concatenate(tokens).tolist(), device=model.device))
    # a model with decode graphs holds itself (DecodeGraphs.model): del alone leaves its
    # weights, KV cache and graph pool to a later collection, after the next
    # configuration has checked the free memory
    del model
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
    return rows


def _ms(v: Optional[float]) -> str:
    return "-" if v is None else f"{v / 1e6:.3f}"


def format_rows(rows: list[dict[str, Any]]) -> str:
    """The table, with ``same tokens`` against the first configuration per size."""
    first: dict[int, list[int]] = {}
    for r in rows:
        first.setdefault(r["num_running"], r["tokens"])
    header = ["config", "running", "bucket", "step ms", "GPU ms", "host ms",
              "host launch ms", "roofline ms", "x roofline", "same tokens"]
    table = [header]
    for r in rows:
        ref = first[r["num_running"]]
        same = sum(a == b for a, b in zip(r["tokens"], ref)) / max(len(ref), 1)
        table.append([r["config"], str(r["num_running"]), str(r["bucket"]), _ms(r["step_ns"]),
                      _ms(r["gpu_busy_ns"]), _ms(r["host_ns"]),
                      _ms(r.get("host_launch_ns")), _ms(r["roofline_ns"]),
                      roofline_ratio(r["x_roofline"]), f"{same:.1%}"])
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return "\n".join(["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                for i, (c, w) in enumerate(zip(row, widths))) for row in table]
                     + ([ROOFLINE_BELOW_ONE_NOTE]
                        if below_roofline(r["x_roofline"] for r in rows) else []))


class _Parser(OnceParser):
    """Bad input: one line on stderr (``decode_step_check.py: error: ...``), exit 2; an option
    given twice is refused (``OnceParser``)."""

    def error(self, message: str):
        print(f"{PROG}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def whole_number(low: int):
    """argparse type: a whole number >= ``low``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value
    return parse


def batch_sizes(text: str) -> list[int]:
    """argparse type of ``--num-running``: comma-separated whole numbers >= 1, sorted,
    none given twice (``no_repeats``); no empty item (``list_items``)."""
    return sorted(no_repeats([whole_number(1)(t) for t in list_items(text, "whole numbers")]))


def preset_name(text: str) -> str:
    """argparse type of ``--preset``: a ``TORCH_PRESETS`` name."""
    from ipc_bench.engine.config import RETIRED_PRESETS, TORCH_PRESETS

    if text in RETIRED_PRESETS:
        raise argparse.ArgumentTypeError(f"preset {text!r} was retired: use "
                                         f"{RETIRED_PRESETS[text]}")
    if text not in TORCH_PRESETS:
        raise argparse.ArgumentTypeError(f"unknown preset {text!r}; choose from "
                                         f"{', '.join(TORCH_PRESETS)}")
    return text


def config_list(text: str) -> list[tuple[str, bool]]:
    """argparse type of ``--configs`` (``parse_configs``); no empty item
    (``list_items``), none given twice (``no_repeats``)."""
    no_repeats(list_items(text, "configurations"))
    try:
        return parse_configs(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(description=module_doc(sys.modules[__name__]).split("\n\n")[0],
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", type=preset_name,
                   help="model shape (default: llama-3.2-1b on CUDA, tiny on CPU)")
    p.add_argument("--num-running", type=batch_sizes, metavar="B[,B...]",
                   help="batch sizes, e.g. 16,256 (default 16,256 on CUDA, 4,8 on CPU); "
                   "each B also runs at B + 1 rows, which flex and varlen pad to the next "
                   "bucket (the powers of two: 2B where B is one; gather does not pad), so "
                   "the two rows show what one row past a bucket costs; the KV cache is "
                   "sized for the largest B + 1")
    p.add_argument("--configs", type=config_list, help="BACKEND[+graphs],... (default: every "
                   "one this device runs: gather, flex, flex+graphs and on CUDA varlen, "
                   "varlen+graphs; varlen needs CUDA)")
    p.add_argument("--steps", type=whole_number(1), default=30, help="counted steps per size")
    p.add_argument("--warmup", type=whole_number(0), default=5, help="steps before counting")
    p.add_argument("--context-min", type=whole_number(1),
                   help="shortest context (CUDA 300, CPU 30)")
    p.add_argument("--context-max", type=whole_number(1),
                   help="longest context (CUDA 2000, CPU 100)")
    p.add_argument("--seed", type=whole_number(0), default=0)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--json", metavar="PATH", type=writable_file,
                   help="also write the rows (tokens left out)")
    return p


def main(argv=None, exiting: bool = False) -> int:
    """The check; returns the exit code: 0, 1 (a configuration failed, or the JSON file
    could not be written), 2 (bad input, one line), 130 / 143 / 129 (interrupted by
    SIGINT / SIGTERM / SIGHUP, one line: ``decode_step_check.py: interrupted by SIGINT
    (exit 130)``, ``Interrupted.line``; one that came while the script started, kept
    pending by the block of its first statement, at the end of the parsing).
    ``exiting``: the process exits once this returns (the script run as a command): a
    signal leaves further ones ignored on its way out, as ``bench.py``'s; ``False``
    (``main`` called in process) puts the caller's handlers back whatever happened
    (``signals.run_command``)."""
    return signals.run_command(lambda: _parse(argv), _check,
                               lambda exc, _: exc.line(PROG), exiting=exiting)


def _parse(argv) -> "argparse.Namespace | int":
    """``argv`` parsed, or the exit code of ``--help`` (0) or of a bad option (2, its
    one line printed)."""
    try:
        return build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, or the one-line error
        return exc.code if isinstance(exc.code, int) else 2


def _error(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


def _settings(args: argparse.Namespace, cuda: bool):
    """(preset, sizes, configs, lo, hi) with the device's defaults, or the one-line
    error for a setting that cannot run here."""
    where = "CUDA" if cuda else "CPU"
    lo = args.context_min if args.context_min is not None else (300 if cuda else 30)
    hi = args.context_max if args.context_max is not None else (2000 if cuda else 100)
    if lo > hi:
        def shown(value, given) -> str:
            return f"{value}" if given is not None else f"{value} (the {where} default)"
        return (f"--context-min {shown(lo, args.context_min)} is larger than "
                f"--context-max {shown(hi, args.context_max)}")
    configs = args.configs or parse_configs(
        "gather,flex,flex+graphs,varlen,varlen+graphs" if cuda else "gather,flex,flex+graphs")
    if not cuda and all(backend == "varlen" for backend, _ in configs):
        return ("varlen needs CUDA (FlashAttention's paged kernel has no CPU version) and "
                "--configs has nothing else to run here; on CPU use gather, flex or "
                "flex+graphs")
    return (args.preset or ("llama-3.2-1b" if cuda else "tiny"),
            args.num_running or ([16, 256] if cuda else [4, 8]), configs, lo, hi)


def memory_refusal(sched: SchedulerConfig, model: ModelConfig, device: str,
                   free_bytes: Optional[int], hi: int, extra: int, lo: int) -> Optional[str]:
    """``None`` where ``check_model_memory`` lets the model's weights and KV cache be
    built on ``device`` (``free_bytes``: a GPU's free memory); otherwise the one line
    refusing it: the engine's figures (``ModelMemoryError.needs``: what the model
    needs, the device's limit) and this script's advice, made from the blocks that fit
    (``script_memory_refusal``; the engine's advice names ``bench.py``'s options): the
    largest --num-running and
    --context-max that fit, each at the other's value (one left out where none fits),
    or a smaller --preset.

    The KV cache here is ``sched.max_num_seqs`` rows (the largest --num-running plus
    one: ``B + 1`` runs beside each ``B``) of ``ceil((hi + extra) / BLOCK_SIZE)``
    blocks (``hi``: --context-max; ``extra``: the warm-up and counted steps, plus one);
    ``lo``: --context-min, the least --context-max there can be."""
    try:
        check_model_memory(sched, model, device, free_bytes)
    except ModelMemoryError as exc:
        return script_memory_refusal(exc, block_size=BLOCK_SIZE, rows=sched.max_num_seqs,
                                     context_max=hi, context_min=lo, extra_rows=1,
                                     extra_tokens=extra)
    return None


#: The decode step's goals (docs/models-and-gpu.md, "Decode attention"): on one H200, for
#: the Llama-3.2-1B shape at contexts uniform in ``GOAL_CONTEXTS``, GPU busy time at most
#: ``GOAL_X_ROOFLINE[B]`` times the step's roofline at ``B`` running, and host time per
#: decode step at most ``GOAL_HOST_NS``.
GOAL_PRESET = "llama-3.2-1b"
GOAL_CONTEXTS = (300, 2000)
GOAL_X_ROOFLINE = {16: 3.0, 256: 2.0}
GOAL_HOST_NS = 1_000_000


def goal_lines(rows: list[dict[str, Any]], preset: str, lo: int, hi: int,
               device: str) -> list[str]:
    """The rows judged against the goals (``GOAL_*``), printed under the table and kept
    in the ``--json`` file's ``goals``: a heading naming them and ``device`` (the
    goals are an H200's), then per configuration, at each goal size it ran, ``x
    roofline`` and ``host launch`` (``host_launch_ns``: the step's start until its
    last launch returned; not ``host ms``, which counts the dispatch between eager
    kernels as GPU busy) with ``met`` or ``NOT met`` (judged as printed: 2.00x
    at a goal of 2 is met, whatever the third decimal). One line saying why
    nothing is judged where the run is not the goals' (another preset or contexts), or
    measured no GPU time at a goal size (the CPU, which has no CUDA events)."""
    if preset != GOAL_PRESET or (lo, hi) != GOAL_CONTEXTS:
        return [f"goals: not judged: they are stated for {GOAL_PRESET} at contexts uniform "
                f"in [{GOAL_CONTEXTS[0]}, {GOAL_CONTEXTS[1]}]; this run is {preset} at "
                f"[{lo}, {hi}]"]
    judged = [r for r in rows if r["num_running"] in GOAL_X_ROOFLINE
              and r.get("gpu_busy_ns") is not None]
    if not judged:
        return ["goals: not judged: no GPU busy time (CUDA events) was measured at "
                + " or ".join(str(b) for b in GOAL_X_ROOFLINE) + " running"]
    lines = [f"goals (stated for one H200; this device: {device}): GPU busy at most "
             + ", ".join(f"{x:g}x its roofline at {b} running"
                         for b, x in sorted(GOAL_X_ROOFLINE.items(), reverse=True))
             + f"; host at most {GOAL_HOST_NS / 1e6:g} ms per decode step (host launch: "
             "from the step's start until its last launch returns)"]
    for config in dict.fromkeys(r["config"] for r in judged):
        parts = []
        for r in sorted((r for r in judged if r["config"] == config),
                        key=lambda r: r["num_running"]):
            x = round(r["x_roofline"], 2)
            launch = r.get("host_launch_ns")
            host = ("host launch not measured" if launch is None else
                    f"host launch {round(launch / 1e6, 3):.3f} ms ("
                    + ("met" if round(launch / 1e6, 3) <= GOAL_HOST_NS / 1e6 else "NOT met")
                    + ")")
            parts.append(f"{r['num_running']} running: {x:.2f}x roofline "
                         f"({'met' if x <= GOAL_X_ROOFLINE[r['num_running']] else 'NOT met'})"
                         f", {host}")
        lines.append(f"  {config}: " + "; ".join(parts))
    return lines


def _check(args: argparse.Namespace) -> int:
    """``main``'s run, signals routed to ``signals.Interrupted``."""
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        return _error("--device cuda: no CUDA device here (torch.cuda.is_available() is "
                      "False); use --device cpu or auto")
    device = args.device if args.device != "auto" else (
        "cuda" if torch.cuda.is_available() else "cpu")
    cuda = device == "cuda"
    settings = _settings(args, cuda)
    if isinstance(settings, str):
        return _error(settings)
    preset, sizes, configs, lo, hi = settings
    from ipc_bench.engine.roofline import measure_device_figures

    # every configuration runs every size, and B + 1 (padded to the next bucket) beside
    # each B, on one cache shape, so the rows compare token by token
    runs = sorted(set(sizes) | {b + 1 for b in sizes})
    max_len = hi + args.warmup + args.steps + 1
    sched = SchedulerConfig(max_num_seqs=max(runs), max_model_len=max_len,
                            block_size=BLOCK_SIZE,
                            num_blocks=max(runs) * -(-max_len // BLOCK_SIZE))
    # once, before anything runs: every configuration builds the same model
    try:  # contexts past --context-max by the warm-up and counted steps, plus one
        check_max_position(sched, model_config(preset, device), lambda most: (
            f"--context-max {most - (max_len - hi):,} at most (with --warmup "
            f"{args.warmup} and --steps {args.steps})"))
    except ConfigError as exc:
        return _error(str(exc))
    refusal = memory_refusal(sched, model_config(preset, device), device,
                             torch.cuda.mem_get_info()[0] if cuda else None, hi,
                             max_len - hi, lo)
    if refusal:
        return _error(refusal)

    torch.set_num_threads(1 if not cuda else torch.get_num_threads())
    dtype = getattr(torch, ModelConfig(preset=preset).torch_preset.cuda_dtype) if cuda \
        else torch.float32
    progress = Progress([b + ("+graphs" if g else "") for b, g in configs])
    try:
        figures = progress.figures = measure_device_figures(torch, device, dtype)
        print(f"device {figures.name}: copy {figures.memory_bandwidth_bytes_per_s / 1e9:,.1f} "
              f"GB/s, matmul {figures.flops_per_s / 1e12:,.2f} TFLOP/s ({figures.dtype}); "
              f"preset {preset}, contexts uniform in [{lo}, {hi}], {args.steps} counted steps"
              + ("" if cuda else "; graphs replayed eagerly (no CUDA)"), flush=True)
        rows, failed = _run_configs(torch, preset, device, configs, runs, sched, args, lo,
                                    hi, figures, progress)
    except signals.Interrupted as exc:  # further signals are ignored: the write ends
        progress.interrupted_by = exc.signal_name
        if args.json:
            write_json(args.json, progress)
        raise
    if rows:
        print(format_rows(rows))
        progress.goals = goal_lines(rows, preset, lo, hi, figures.name)
        print("\n".join(progress.goals))
    elif not failed:
        print(f"{PROG}: error: every configuration was skipped: nothing measured",
              file=sys.stderr)
        failed = 1
    if args.json:
        error = write_json(args.json, progress)  # stdout that fails names the file
        if error is not None:
            print(error, file=sys.stderr)
            return 1
    return 1 if failed else 0


@dataclass
class Progress:
    """How far a run got: the ``configs`` it is to run (``gather``, ``flex+graphs``,
    ...), the device's measured ``figures`` (``None`` until measured), the ``rows`` so
    far, the configurations ``skipped`` (-> why) and ``failed`` (-> the error), and the
    signal that ended the run (``interrupted_by``; ``None``: none)."""

    configs: list[str]
    figures: Any = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    interrupted_by: Optional[str] = None
    goals: list[str] = field(default_factory=list)

    def not_run(self) -> list[str]:
        """The configurations neither measured, skipped nor failed, in run order."""
        done = {r["config"] for r in self.rows} | set(self.skipped) | set(self.failed)
        return [c for c in self.configs if c not in done]

    def record(self) -> dict[str, Any]:
        """The ``--json`` file's fields beside ``figures`` and ``rows``: ``complete``
        (every configuration measured, skipped or failed), ``interrupted_by``,
        ``not_run``, ``skipped``, ``failed`` and ``goals`` (``goal_lines``, once the
        table is printed; ``[]`` before)."""
        not_run = self.not_run()
        return dict(complete=not not_run, interrupted_by=self.interrupted_by,
                    not_run=not_run, skipped=self.skipped, failed=self.failed,
                    goals=self.goals)


def write_json(path: str, progress: Progress) -> Optional[str]:
    """Write ``progress``: how far the run got (``Progress.record``), the device's
    measured figures (null before they were measured) and the rows (tokens left out)
    to ``path``, whole or not at all (``console.write_output``: a write that fails
    leaves the earlier file as it was; a stdout that fails later names the file);
    ``None``, or the one-line error (``decode_step_check.py: error: cannot write PATH:
    REASON``)."""
    figures = progress.figures
    text = json.dumps(dict(
        **progress.record(),
        figures=None if figures is None else dict(
            name=figures.name, bandwidth=figures.memory_bandwidth_bytes_per_s,
            flops=figures.flops_per_s, dtype=figures.dtype),
        rows=[{k: v for k, v in r.items() if k != "tokens"} for r in progress.rows]),
        indent=1)
    try:
        with signals.deferred():  # a signal meanwhile is raised once the file is whole
            write_output(path, text, PROG, f"the rows are in {path}")
    except SystemExit as exc:  # write_output's line
        return str(exc.code)
    return None


def _run_configs(torch, preset, device, configs, runs, sched, args, lo, hi, figures,
                 progress: Optional[Progress] = None) -> tuple[list[dict[str, Any]], int]:
    """(rows, number of configurations that failed), also kept in ``progress`` (with
    the skipped and failed ones); a backend that cannot run here is skipped with the
    reason (varlen on CPU, or whose kernel refuses the block size; flex on CUDA without
    Triton's C compiler and Python headers). With ``--json`` the file is written after
    each configuration that ran, so an interrupted run leaves the rows of the
    configurations it finished."""
    if progress is None:
        progress = Progress([b + ("+graphs" if g else "") for b, g in configs], figures)
    from ipc_bench.engine.paged_attention import (flex_unsupported, varlen_kernel_problem,
                                                  varlen_unsupported)

    cannot = {}  # backend -> why it cannot run here (skipped, not failed)
    if device != "cuda":
        cannot["varlen"] = "varlen needs CUDA: no CPU kernel"
    elif any(backend == "varlen" for backend, _ in configs):
        dtype = getattr(torch, ModelConfig(preset=preset).torch_preset.cuda_dtype)
        cannot["varlen"] = varlen_unsupported() or varlen_kernel_problem(
            torch, device, sched.block_size, dtype)
    if any(backend == "flex" for backend, _ in configs):
        cannot["flex"] = flex_unsupported(device, sched.block_size)  # Triton's toolchain
    for backend, graphs in configs:
        name = backend + ("+graphs" if graphs else "")
        if cannot.get(backend):
            progress.skipped[name] = cannot[backend]
            print(f"  {name}: skipped ({cannot[backend]})")
        else:
            t0 = time.monotonic()
            try:
                got = run_config(torch, preset, device, backend, graphs, runs, sched,
                                 args.steps, args.warmup, lo, hi, args.seed, figures)
            except Exception as exc:  # one failing backend must not hide the others
                line = str(exc).strip().splitlines()[:1]  # no message: the type alone
                progress.failed[name] = ": ".join([type(exc).__name__, *line])[:400]
                print(f"  {name}: FAILED {progress.failed[name]}", flush=True)
            else:
                progress.rows += got
                print(f"  {name}: {time.monotonic() - t0:.1f} s (build, compile, capture and "
                      f"steps); {got[0]['device']}", flush=True)
            if args.json and replaced_whole(args.json):  # so far: a run cut short
                write_json(args.json, progress)  # (gpu_check's limit) keeps these rows
    return progress.rows, len(progress.failed)


if __name__ == "__main__":
    sys.exit(script_main(PROG, lambda: main(exiting=True), "the table", "the --json file"))
