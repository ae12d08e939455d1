#!/usr/bin/env python3
r"""GPU smoke test: ``decode-steady`` with the torch model on CUDA, tokens/s per policy.

Runs, in a few minutes on one GPU::

    python bench.py --scenario decode-steady --model torch --model-preset gpu-small \
        --device cuda --num-running 16,64,256 --steps 300 --warmup-steps 30 --codecs msgpack \
        --no-single-process

then prints output tokens/s and the median step per running-request count and policy.
The figures are a smoke test of the CUDA path (the same digests under both policies
on a real decoder), not a headline. Options: ``--preset`` (default gpu-small),
``--num-running``, ``--steps``, ``--output``.

Without CUDA (``torch.cuda.is_available()`` false, checked in a child process) it says
so, runs the ``cpu`` preset briefly instead (B = 1 and 4, 20 steps) and exits 0 when
that run passes, so the script is testable anywhere. Exit codes are otherwise
``bench.py``'s.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ipc_bench.cli import main as bench_main  # noqa: E402
from ipc_bench.engine.config import ConfigError  # noqa: E402
from ipc_bench.engine.models import probe_torch_device  # noqa: E402
from ipc_bench.analysis.results import read_summary  # noqa: E402


def bench_args(cuda: bool, preset: str, num_running: str, steps: int, output: str) -> list[str]:
    """The ``bench.py`` arguments of the check (CUDA) or of its CPU fallback."""
    if cuda:
        model = ["--model-preset", preset, "--device", "cuda", "--num-running", num_running,
                 "--steps", str(steps), "--warmup-steps", "30"]
    else:
        model = ["--model-preset", "cpu", "--device", "cpu", "--num-running", "1,4",
                 "--steps", "20", "--warmup-steps", "5", "--no-floor"]
    return ["--scenario", "decode-steady", "--model", "torch", *model, "--codecs", "msgpack",
            "--no-single-process", "--output", output, "--quiet", "--no-hostname"]


def format_summary(run_dir: str) -> str:
    """Tokens/s and median step per (running requests, policy) from ``summary.json``."""
    cases = read_summary(run_dir)["cases"]
    lines = [f"{'B':>5}  {'policy':<7} {'out tok/s':>10}  {'step ms':>8}  device"]
    for s in sorted(cases, key=lambda s: (s["num_running"], s["policy"] != "send")):
        lines.append(f"{s['num_running']:>5}  {s['policy']:<7} "
                     f"{s.get('output_tokens_per_s', 0):>10,.0f}  "
                     f"{s.get('step_ns_median', 0) / 1e6:>8.2f}  {s.get('runner_device', '?')}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="gpu-small", choices=("gpu-small", "gpu-1b", "cpu"))
    p.add_argument("--num-running", default="16,64,256")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--output", help="run folder (default: a temporary folder)")
    args = p.parse_args(argv)
    try:
        device, memory = probe_torch_device("auto")
    except ConfigError as exc:
        print(f"gpu_check: error: {exc}", file=sys.stderr)
        return 2
    cuda = device == "cuda"
    if cuda:
        print(f"gpu_check: CUDA present ({memory / 2**30:.0f} GiB); decode-steady, torch "
              f"model preset {args.preset}", flush=True)
    else:
        print("gpu_check: no CUDA device (torch.cuda.is_available() is False): running the "
              "cpu preset briefly instead", flush=True)
    # Without --output the run goes to a fresh folder that is kept (bench.py prints it).
    out = args.output or tempfile.mkdtemp(prefix="gpu-check-")
    bargs = bench_args(cuda, args.preset, args.num_running, args.steps, out)
    print("gpu_check: python bench.py " + " ".join(bargs), flush=True)
    code = bench_main(bargs)
    if Path(out, "summary.json").exists():
        print(format_summary(out))
    return code


if __name__ == "__main__":
    sys.exit(main())
