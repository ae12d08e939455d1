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
requests each (B a multiple of every N, else refused: with a remainder some steps would
schedule nothing and count against the cap on the steps in all).

Grid: 256 running requests (``--num-running``) x N (``--pp``, default 1, 2, and 4
where the machine has 5 cores; asked for on fewer, N runs, each of its cases warning
that its N + 1 processes share the cores (logged once a run), and rows with fewer than N + 2 cores are
marked ``*``) x policy x codec. ``--policies``: ``send``, and
``cached``, which runs as ``direct`` (at N = 1, where the first stage is the last,
``direct`` is vLLM #20291's cached). Null model by default; ``--model fixed-step
--step-time-ms MS`` splits MS evenly over the stages; ``--model torch`` is
split by layers, evenly, the hidden states then float32 ``[tokens, hidden_size]`` (on
CUDA staged through page-locked host memory for gloo: not yet run on a GPU); the
emulated model is refused (not split by layers here). ``--steps`` default 300 counted steps,
``--warmup-steps`` default 30. There is no floor.

After the tables: per N, codec and policy, payload bytes per step of every hop
(scheduler -> stages, stage -> stage hidden states, last stage -> scheduler, last ->
other stages for direct; the ZeroMQ frame heads in a column of their own), the median
time of each hop and output tokens/s; then send against direct per B, N and codec;
then whether send and direct produced the same token stream at each N (``bench.py
report`` says the same in its findings). (Across N the schedules differ, B / N
requests per step, and a steady run stops mid-request, so the streams are compared
where the schedules are equal; ``tests/harness/test_pp.py`` compares N = 1, 2, 4 on a
workload that finishes.)
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from ipc_bench.analysis.cores import footnote, marked_footnote
from ipc_bench.analysis.pp import (HOP_BYTES_NOTE, hop_table, send_direct_lines,
                                   token_check_line)
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
    """``--pp``; else 1, 2 and, where the machine has 5 cores, 4 (pp = 2 runs on 2 cores
    too: the stages block in their waits, none spins, and its rows are marked). A size
    with N + 1 > cores runs; each of its cases carries the warning
    (``analysis.summary.core_warnings``: ``pp_oversubscribed``; logged once a run, after
    the first of them), so a run refused later says only why."""
    if opts.pp:
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
    for b in opts.num_running or DEFAULT_NUM_RUNNING:
        uneven = [n for n in stages if b % n]
        if uneven:
            raise ConfigError(
                f"--num-running {b} is not a multiple of --pp {uneven[0]}: the scheduler "
                f"splits the batch into {uneven[0]} micro-batches of B / {uneven[0]} "
                f"requests, and with a remainder some steps schedule nothing, count "
                f"against the cap on the steps in all and leave fewer counted steps "
                f"than --steps")
    steps = opts.steps or 300
    warmup = 30 if opts.warmup_steps is None else opts.warmup_steps

    def make(labels, policy, codec, rep):
        case = steady_case(opts, NAME, labels, policy, codec, rep, model=model,
                           steps=steps, warmup=warmup)
        direct = policy == CACHED
        # no floor, --no-floor or not (``pp_case``): recorded so, not as the flag's
        return replace(case, transport=transport, pp=labels["pp"], pp_direct=direct,
                       floor=False, no_floor=False)

    workloads = [{"num_running": b, "pp": n}
                 for b in (opts.num_running or DEFAULT_NUM_RUNNING) for n in stages]
    out = grid(opts, workloads, make)
    for case in out:  # grid sets the arm (A/A copies: direct')
        if case.pp_direct:
            case.arm = DIRECT + case.arm[len(CACHED):] if case.arm else DIRECT
    return out


#: The intro of the hop table (terminal and report).
HOPS_INTRO = ("pipeline hops per counted step (" + HOP_BYTES_NOTE + "; times: medians, "
              "from the later of send and the receiver's wait to the data being there; "
              "hidden and direct: one figure per hop / receiving stage):")


def report(summaries: list[dict[str, Any]]) -> str:
    """The per-hop table (module docstring), send against direct
    (``analysis.pp.send_direct_lines``) and the send/direct token check
    (``analysis.pp.token_check_line``); ``bench.py report`` says the same."""
    mine = [s for s in summaries if s.get("scenario") == NAME and s.get("pp") is not None]
    if not mine:
        return ""
    header, rows = hop_table(mine)
    out = ["", HOPS_INTRO, render(header, rows, left=0)]
    out += [note for note in (footnote(mine), marked_footnote(mine)) if note]
    compared = send_direct_lines(mine)
    if compared:
        out += ["send against direct per step (means over repetitions):"] + compared
    out.append(token_check_line(mine))
    return "\n".join(out)
