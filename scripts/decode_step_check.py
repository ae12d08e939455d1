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
- ``host ms``: ``step`` minus ``GPU`` (the goal on an H200: at most 1 ms);
- ``roofline ms``: ``roofline.RooflineStep`` of the step's actual contexts on the
  figures measured at the start (``roofline.measure_device_figures``: copy bandwidth and
  matmul rate in the model's dtype);
- ``x roofline``: GPU (on CPU: step) time over the roofline, per step, then the median
  (the goals on an H200 for the Llama-3.2-1B shape: at most 2 at 256 running, 3 at 16);
- ``same tokens``: the share of sampled ids equal to the first configuration's at the
  same size (all configurations start from the same cache and batch; bitwise equality
  is promised only between equal settings, see README "Correctness oracles").

On CPU (no CUDA) graphs are replayed by ``cuda_step.eager_capture`` (the same work over
the same persistent buffers), ``varlen`` is skipped (no CPU kernel), and the defaults
shrink to the ``tiny`` preset, 4 and 8 running and short contexts, so the script runs
anywhere: ``python scripts/decode_step_check.py``. On an H200::

    python scripts/decode_step_check.py --preset llama-3.2-1b --num-running 16,256 \
        --configs gather,flex,flex+graphs,varlen,varlen+graphs --json out.json

Exit status: 0 when every configuration ran; 1 when one failed (it is reported and the
others still run); 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ipc_bench.engine.config import ConfigError, ModelConfig, SchedulerConfig  # noqa: E402

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


def run_config(torch, preset: str, device: str, backend: str, graphs: bool,
               runs: list[int], sched: SchedulerConfig, steps: int, warmup: int, lo: int,
               hi: int, seed: int, figures) -> list[dict[str, Any]]:
    """Rows of one configuration at each batch size of ``runs`` (see the module
    docstring). Every size starts from the same random cache and batch, whatever ran
    before it, so configurations compare token by token."""
    from ipc_bench.engine.cuda_step import eager_capture
    from ipc_bench.engine.models import TorchModel
    from ipc_bench.engine.roofline import RooflineStep

    cfg = ModelConfig(name="torch", preset=preset, device=device, seed=seed,
                      attention=backend, cuda_graphs=graphs and device == "cuda",
                      cuda_graph_sizes=tuple(sorted({1 << (b - 1).bit_length() for b in runs})),
                      vocab_size=ModelConfig(preset=preset).torch_preset.vocab_size or 32000)
    model = TorchModel(cfg, sched)
    if graphs and device != "cuda":
        model.enable_graphs(eager_capture)
    roofline = RooflineStep(model.preset, cfg.vocab_size, figures, figures.element_bytes)
    rows = []
    for b in runs:
        with torch.inference_mode():
            model.kv_cache.normal_(generator=torch.Generator(device=model.torch_device)
                                   .manual_seed(seed))
        batch = DecodeBatch(np.random.default_rng(seed + b), b, lo, hi, sched.max_model_len,
                            sched.num_blocks, cfg.vocab_size)
        wall, tokens, roof = [], [], []
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
        busy = (np.array(model.timer.gpu_busy_ns[first_busy + warmup:], np.int64)
                if model.timer else None)
        wall_a, roof_a = np.array(wall, np.int64), np.array(roof, np.int64)
        measured = busy if busy is not None else wall_a
        rows.append(dict(
            config=backend + ("+graphs" if graphs else ""), num_running=b,
            bucket=model.attention.bucket(b), step_ns=float(np.median(wall_a)),
            gpu_busy_ns=None if busy is None else float(np.median(busy)),
            host_ns=None if busy is None else float(np.median(wall_a - busy)),
            roofline_ns=float(np.median(roof_a)),
            x_roofline=float(np.median(measured / roof_a)),
            tokens=np.concatenate(tokens).tolist(), device=model.device))
    del model
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
              "roofline ms", "x roofline", "same tokens"]
    table = [header]
    for r in rows:
        ref = first[r["num_running"]]
        same = sum(a == b for a, b in zip(r["tokens"], ref)) / max(len(ref), 1)
        table.append([r["config"], str(r["num_running"]), str(r["bucket"]), _ms(r["step_ns"]),
                      _ms(r["gpu_busy_ns"]), _ms(r["host_ns"]), _ms(r["roofline_ns"]),
                      f"{r['x_roofline']:.2f}", f"{same:.1%}"])
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths))) for row in table)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", help="model shape (default: llama-3.2-1b on CUDA, tiny on CPU)")
    p.add_argument("--num-running", help="batch sizes, e.g. 16,256 (CPU default 4,8)")
    p.add_argument("--configs", help="BACKEND[+graphs],... (default: every one this "
                   "device runs: gather, flex, flex+graphs and on CUDA varlen, varlen+graphs)")
    p.add_argument("--steps", type=int, default=30, help="counted steps per size")
    p.add_argument("--warmup", type=int, default=5, help="steps before counting")
    p.add_argument("--context-min", type=int, help="shortest context (CUDA 300, CPU 30)")
    p.add_argument("--context-max", type=int, help="longest context (CUDA 2000, CPU 100)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--json", metavar="PATH", help="also write the rows (tokens left out)")
    args = p.parse_args(argv)
    import torch

    device = args.device if args.device != "auto" else (
        "cuda" if torch.cuda.is_available() else "cpu")
    cuda = device == "cuda"
    try:
        preset = args.preset or ("llama-3.2-1b" if cuda else "tiny")
        sizes = [int(x) for x in (args.num_running or ("16,256" if cuda else "4,8")).split(",")]
        configs = parse_configs(args.configs or (
            "gather,flex,flex+graphs,varlen,varlen+graphs" if cuda else "gather,flex,flex+graphs"))
        lo = args.context_min or (300 if cuda else 30)
        hi = args.context_max or (2000 if cuda else 100)
        if min(sizes) < 1 or args.steps < 1 or args.warmup < 0 or not 1 <= lo <= hi:
            raise ConfigError("sizes and --steps must be at least 1, --warmup at least 0, "
                              "1 <= --context-min <= --context-max")
    except (ConfigError, ValueError) as exc:
        print(f"decode_step_check: error: {exc}", file=sys.stderr)
        return 2
    from ipc_bench.engine.roofline import measure_device_figures

    torch.set_num_threads(1 if not cuda else torch.get_num_threads())
    dtype = getattr(torch, ModelConfig(preset=preset).torch_preset.cuda_dtype) if cuda \
        else torch.float32
    figures = measure_device_figures(torch, device, dtype)
    print(f"device {figures.name}: copy {figures.memory_bandwidth_bytes_per_s / 1e9:,.1f} GB/s, "
          f"matmul {figures.flops_per_s / 1e12:,.2f} TFLOP/s ({figures.dtype}); preset {preset}, "
          f"contexts uniform in [{lo}, {hi}], {args.steps} counted steps"
          + ("" if cuda else "; graphs replayed eagerly (no CUDA)"), flush=True)
    # every configuration runs every size, and B + 1 (padded to the next bucket) beside
    # each B, on one cache shape, so the rows compare token by token
    runs = sorted(set(sizes) | {b + 1 for b in sizes})
    max_len = hi + args.warmup + args.steps + 1
    sched = SchedulerConfig(max_num_seqs=max(runs), max_model_len=max_len,
                            block_size=BLOCK_SIZE,
                            num_blocks=max(runs) * -(-max_len // BLOCK_SIZE))
    rows, failed = [], 0
    for backend, graphs in configs:
        if backend == "varlen" and not cuda:
            print(f"  {backend}{'+graphs' if graphs else ''}: skipped (no CPU kernel)")
            continue
        t0 = time.monotonic()
        try:
            got = run_config(torch, preset, device, backend, graphs, runs, sched, args.steps,
                             args.warmup, lo, hi, args.seed, figures)
        except Exception as exc:  # one failing backend must not hide the others
            failed += 1
            line = str(exc).strip().splitlines()
            print(f"  {backend}{'+graphs' if graphs else ''}: FAILED "
                  f"{type(exc).__name__}: {line[0] if line else ''}"[:400], flush=True)
            continue
        rows += got
        print(f"  {got[0]['config']}: {time.monotonic() - t0:.1f} s "
              f"(build, compile, capture and steps); {got[0]['device']}", flush=True)
    if rows:
        print(format_rows(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(dict(
            figures=dict(name=figures.name, bandwidth=figures.memory_bandwidth_bytes_per_s,
                         flops=figures.flops_per_s, dtype=figures.dtype),
            rows=[{k: v for k, v in r.items() if k != "tokens"} for r in rows]), indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
