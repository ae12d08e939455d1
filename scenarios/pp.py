"""Pipeline stages: N = 1, 2, 4 stage processes over torch.distributed, bytes and time per hop.

Why: PR #20291 stopped sending sampled ids to the runner, except under pipeline
parallelism, where the first stage never sees the last stage's sampler: there the ids
still travel last stage -> scheduler -> first stage in the next SchedulerOutput
(``send``). vLLM later sent them last stage -> first stage over the device (#32618,
``direct`` here). This scenario runs both on N pipeline stages (``--pp``; processes
``harness.pp_stage``, ``engine.pipeline``): every stage reads every SchedulerOutput
(the XPUB broadcast of ``--tp``), stage i passes stage i + 1 hidden states over
``torch.distributed`` (gloo; on 127.0.0.1, or with ``--remote-runners`` on each
stage's address towards the scheduler, meeting through the scheduler's tcp store), 4,096 bytes per scheduled token (2,048
int16 elements, Llama-3.2-1B's hidden size in bf16); the last stage samples and
replies; the scheduler keeps N micro-batches in flight (vLLM's batch queue), B / N
requests each.

Grid: 256 running requests (``--num-running``) x N (``--pp``, default 1, 2, and 4
where the machine has 5 cores; asked for on fewer, N runs with a warning, and rows
with N + 1 processes on fewer cores are marked ``*``) x policy x codec. ``--policies``: ``send``, and
``cached``, which runs as ``direct`` (at N = 1, where the first stage is the last,
``direct`` is vLLM #20291's cached). Null model by default; ``--model fixed-step
--step-time-ms MS`` splits MS evenly over the stages; ``--model torch`` is
split by layers, evenly, the hidden states then float32 ``[tokens, hidden_size]`` (on
CUDA staged through page-locked host memory for gloo: not yet run on a GPU); the
emulated model is refused (not split by layers here). ``--steps`` default 300 counted steps,
``--warmup-steps`` default 30. There is no floor.

After the tables: per N, codec and policy, bytes per step of every hop (scheduler ->
stages, stage -> stage hidden states, last stage -> scheduler, last -> other stages
for direct), the median time of each hop and output tokens/s; then whether send and
direct produced the same token stream at each N. (Across N the schedules differ, B / N
requests per step, and a steady run stops mid-request, so the streams are compared
where the schedules are equal; ``tests/harness/test_pp.py`` compares N = 1, 2, 4 on a
workload that finishes.)
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from typing import Any

from ipc_bench.analysis.cores import MARK, footnote, is_withheld
from ipc_bench.analysis.pp import hop_table
from ipc_bench.engine.config import CACHED, TORCH_PRESETS, ConfigError
from ipc_bench.engine.pipeline import DIRECT, PP_MODELS, PP_SIZES, check_pp_model
from ipc_bench.harness.scenario import STEADY, ScenarioOptions, grid, steady_case
from ipc_bench.harness.spec import CaseSpec
from ipc_bench.report.tables import render

NAME = "pp"
OPTIONS = STEADY | {"pp"}
DEFAULT_NUM_RUNNING = [256]


def cores() -> int:
    """CPUs this process may run on (its affinity mask)."""
    return len(os.sched_getaffinity(0))


def sizes(opts: ScenarioOptions) -> list[int]:
    """``--pp``, with a warning where N + 1 > cores (a stage beside the scheduler on
    each core is what the figures assume); else 1, 2 and, where the machine has 5
    cores, 4 (pp = 2 runs on 2 cores too: the stages block in their waits, none spins,
    and its rows are marked)."""
    if opts.pp:
        for n in opts.pp:
            if n + 1 > cores():
                print(f"bench.py: warning: --pp {n} on {cores()} core(s): {n + 1} processes "
                      "share them; those timings are not comparable", file=sys.stderr)
        return list(opts.pp)
    return [n for n in PP_SIZES if n <= 2 or n + 1 <= cores()]


def cases(opts: ScenarioOptions) -> list[CaseSpec]:
    model = opts.model_config()
    if model.name not in PP_MODELS:
        raise ConfigError(f"scenario {NAME} runs the {', '.join(PP_MODELS)} models; "
                          f"--model {model.name} is not split by layers here")
    check_pp_model(model)
    # stages started by hand read the broadcast over tcp (--remote-runners needs it)
    transport = "tcp" if opts.remote_runners else "ipc"
    if opts.transport != transport and not opts.remote_runners:
        raise ConfigError(f"scenario {NAME} broadcasts each SchedulerOutput to its stages "
                          f"over ipc and passes hidden states over gloo: drop --transport "
                          f"{opts.transport}")
    layers = TORCH_PRESETS[model.preset].num_layers if model.name == "torch" else None
    if layers is not None and opts.pp and max(opts.pp) > layers:  # a stage holds a layer
        raise ConfigError(f"--pp {max(opts.pp)}: the {model.preset} preset has {layers} "
                          f"layers, fewer than the stages (each stage holds at least one)")
    stages = [n for n in sizes(opts) if layers is None or n <= layers]
    steps = opts.steps or 300
    warmup = 30 if opts.warmup_steps is None else opts.warmup_steps

    def make(labels, policy, codec, rep):
        case = steady_case(opts, NAME, labels, policy, codec, rep, model=model,
                           steps=steps, warmup=warmup)
        direct = policy == CACHED
        return replace(case, transport=transport, pp=labels["pp"], pp_direct=direct,
                       floor=False)

    workloads = [{"num_running": b, "pp": n}
                 for b in (opts.num_running or DEFAULT_NUM_RUNNING) for n in stages]
    out = grid(opts, workloads, make)
    for case in out:  # grid sets the arm (A/A copies: direct')
        if case.pp_direct:
            case.arm = DIRECT + case.arm[len(CACHED):] if case.arm else DIRECT
    return out


def _same_tokens(mine: list[dict[str, Any]]) -> str:
    """One line: per (B, N), whether send and direct produced one token stream, or that
    only one of them ran (nothing compared)."""
    by: dict[tuple, dict[str, set]] = {}
    for s in mine:
        if s.get("complete"):
            arms = by.setdefault((s.get("num_running"), s["pp"]), {})
            arms.setdefault(s.get("arm") or s["policy"], set()).add(s.get("token_digest"))
    parts = []
    for (b, n), arms in sorted(by.items(), key=lambda kv: str(kv[0])):
        digests = set().union(*arms.values())
        if len(arms) < 2:
            parts.append(f"B={b} N={n}: only {', '.join(sorted(arms))} ran, nothing compared"
                         + ("" if len(digests) == 1 else f" ({len(digests)} DIFFERENT "
                            "streams among its copies)"))
        else:
            parts.append(f"B={b} N={n}: " + ("one token stream" if len(digests) == 1
                                             else f"{len(digests)} DIFFERENT streams"))
    return "token streams of send and direct: " + ("; ".join(parts) or "none")


def report(summaries: list[dict[str, Any]]) -> str:
    """The per-hop table (module docstring) and the send/direct token check."""
    mine = [s for s in summaries if s.get("scenario") == NAME and s.get("pp") is not None]
    if not mine:
        return ""
    header, rows = hop_table(mine)
    out = ["", "pipeline hops per counted step (bytes: means, exact; times: medians, "
           "from the later of send and the receiver's wait to the data being there; "
           "hidden and direct: one figure per hop / receiving stage):",
           render(header, rows, left=0)]
    withheld = footnote(mine)
    if withheld:
        out.append(withheld)
    out.append(_same_tokens(mine))
    return "\n".join(out)
