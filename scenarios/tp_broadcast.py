"""Tensor-parallel broadcast: one scheduler, N = 1, 2, 4 runner ranks, send's saving against N.

Why: with one GPU vLLM calls its worker in-process, so PR #20291's wire saving lands
where the scheduler's output is encoded once and read by every tensor-parallel worker
(the multiprocess executor's shared-memory ``MessageQueue``). Here N runner processes
(``--tp``) each receive every ``SchedulerOutput``, keep their own persistent batch and
token buffer and compute the same step; rank 0 replies. The input oracle checks every
rank's fed ids, so a rank that drifts fails the case naming it.

Grid: 256 running requests (``--num-running``) x N (``--tp``, default 1, 2, 4) x both
policies x codec (``--codecs``, default msgpack and pickle; ``packed``, ``slots`` and
``replicated`` when asked for: every rank keeps its own slot table or replica
scheduler and decodes the one broadcast) x broadcast transport (``--tp-transports``): ``ipc``
(ZeroMQ XPUB -> SUB: one send call, N copies on the wire), ``shm-block`` (the ring with N
readers sleeping on FIFOs) and ``shm`` (the ring with N spinning readers, vLLM's wait);
with ranks started by hand on other hosts (``--remote-runners``, ``wire.remote``)
``tcp`` only: XPUB -> SUB over tcp, as vLLM's ``MessageQueue`` does for readers on other
nodes.
Every case goes through the broadcast path, N = 1 included, so the rows differ only
in N. Null model by default; ``--model fixed-step --step-time-ms MS`` adds a step time
(the torch and emulated models are refused: each rank would hold a full copy of the
model). ``--steps`` default 300 counted steps, ``--warmup-steps`` default 30.
``--num-spec-tokens K[,K...]``: every rank verifies the drafts and proposes the next
ones (``harness.tp_case``); each K is its own workload, so the tables gain a K column
and the token-stream line one entry per K (drafts change the schedule).

Spinning readers and cores: N spinning ranks and the scheduler need N + 1 cores, or a
spinning rank takes the core the scheduler (or another rank) needs. Where the
process's CPU affinity has fewer than N + 1 cores, ``shm`` is left out of the
default transports for that N (the ring's block wait, ``shm-block``, is what runs);
asked for with ``--tp-transports``, it runs, each of its cases warns (in its summary's
warnings; logged once a run, after the first such case, so a run refused later prints
its error alone), and the table marks
the row ``*`` (its timings are not comparable). Byte figures and the oracles hold
whatever the cores.

After the tables: per case (mean over repetitions) the bytes the scheduler writes once
per step and delivers to all ranks, the N decodes summed and, for ``replicated``, the
replica scheduler one rank runs per step and the N ranks together (every rank pays
it: the machine's cost); then per transport, codec and N, send minus cached per step of the bytes
the scheduler writes once, its one encode, the N ranks' decodes summed and the
slowest rank's receive-to-ready time (``analysis.tp``), and whether every case's
token stream was the same across N, transports and policies.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, Optional

from ipc_bench.analysis.cores import (MARK, SHARED_MARK, footnote, is_marked, is_withheld,
                                      marked_footnote)
from ipc_bench.analysis.tp import tp_saving, tp_saving_means
from ipc_bench.engine.config import ConfigError
from ipc_bench.harness.scenario import STEADY, ScenarioOptions, grid, steady_case
from ipc_bench.harness.spec import CaseSpec
from ipc_bench.harness.tp_case import TP_MODELS
from ipc_bench.report.tables import render
from ipc_bench.wire.tp import TP_SIZES

NAME = "tp-broadcast"
OPTIONS = STEADY | {"tp", "tp_transports"}
DEFAULT_NUM_RUNNING = [256]
TRANSPORTS = ("ipc", "shm-block", "shm")


def cores() -> int:
    """CPUs this process may run on (its affinity mask)."""
    return len(os.sched_getaffinity(0))


def transports_for(n: int, opts: ScenarioOptions) -> list[str]:
    """The broadcast transports of N ranks: ``tcp`` (XPUB/SUB) with ranks on other
    hosts (``--remote-runners``); else ``--tp-transports``, else ``TRANSPORTS``
    less the spinning ``shm`` where fewer than N + 1 cores are available (asked for
    there, it runs, and each case warns: ``analysis.summary.noise_warnings``)."""
    if opts.remote_runners:
        return ["tcp"]
    if opts.tp_transports:
        return list(opts.tp_transports)
    return [t for t in TRANSPORTS if t != "shm" or cores() >= n + 1]


def check_transport(opts: ScenarioOptions) -> None:
    """Refuse ``--transport`` other than the default ipc (``ConfigError``, one line):
    the broadcast's transports are ``--tp-transports``' (``transports_for``), and tcp's
    is for ranks started by hand (``--remote-runners``, which needs ``--transport tcp``),
    so ``--transport`` would otherwise be ignored without a word. The line names the
    default as ``transports_for`` decides it, with this machine's cores."""
    if opts.remote_runners or opts.transport == "ipc":
        return
    why = (f"scenario {NAME} broadcasts each SchedulerOutput to its ranks over each "
           f"transport of --tp-transports (default ipc and shm-block, and shm for --tp N "
           f"where N + 1 cores are available: {cores()} here)")
    if opts.transport in TRANSPORTS:
        raise ConfigError(f"{why}: drop --transport {opts.transport} (--tp-transports "
                          f"{opts.transport} runs that broadcast alone)")
    raise ConfigError(f"{why}, over {opts.transport} only to ranks started by hand "
                      f"(--remote-runners): drop --transport {opts.transport}")


def cases(opts: ScenarioOptions) -> list[CaseSpec]:
    model = opts.model_config()
    if model.name not in TP_MODELS:
        raise ConfigError(f"scenario {NAME} runs the null and fixed-step models; "
                          f"--model {model.name} is not replicated across ranks here")
    check_transport(opts)
    steps = opts.steps or 300
    warmup = 30 if opts.warmup_steps is None else opts.warmup_steps

    def make(labels, policy, codec, rep):
        case = steady_case(opts, NAME, labels, policy, codec, rep, model=model,
                           steps=steps, warmup=warmup)
        return replace(case, transport=labels["broadcast"], tp=labels["tp"])

    workloads = [{"num_running": b, "tp": n, "broadcast": t}
                 for b in (opts.num_running or DEFAULT_NUM_RUNNING)
                 for n in (opts.tp or list(TP_SIZES))
                 for t in transports_for(n, opts)]
    return grid(opts, workloads, make)


def _us(row: dict[str, Any], key: str) -> str:
    """Mean and range over repetitions of ``saving_<key>`` (ns) in us."""
    value = row.get("saving_" + key)
    if value is None:
        return "-"
    lo, hi = row["saving_" + key + "_range"]
    return _fixed(value / 1e3, 1) if row["n"] == 1 else \
        f"{_fixed(value / 1e3, 1)} ({_fixed(lo / 1e3, 1)}..{_fixed(hi / 1e3, 1)})"


def _fixed(v: float, digits: int) -> str:
    """``v`` to ``digits`` decimals with thousands separators; a value that rounds to
    zero from below prints ``0.0``, not ``-0.0`` (a -30 ns saving is no saving)."""
    return f"{round(v, digits) + 0.0:,.{digits}f}"


def _same_tokens(summaries: list[dict[str, Any]]) -> str:
    """One line: whether every complete case of each batch size and draft count K
    (``--num-spec-tokens``; named where above 0) produced the same token stream (all
    N, transports and policies schedule the same batches; different K schedule
    different ones, so their streams are not compared here)."""
    by_b: dict[Any, set] = {}
    for s in summaries:
        if s.get("scenario") == NAME and s.get("complete"):
            key = (s.get("num_running"), s.get("num_spec_tokens") or 0)
            by_b.setdefault(key, set()).add(s.get("token_digest"))
    parts = [f"B={b}" + (f" K={k}" if k else "") + ": "
             + ("one token stream" if len(d) == 1 else f"{len(d)} DIFFERENT streams")
             for (b, k), d in sorted(by_b.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))]
    return "token streams across N, transports and policies: " + ("; ".join(parts) or "none")


def _mean(cases: list[dict[str, Any]], key: str) -> Optional[float]:
    values = [c[key] for c in cases if c.get(key) is not None]
    return sum(values) / len(values) if values else None


def per_step_rows(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (B, transport, codec, policy, N, K) of the complete cases (K: draft tokens,
    ``num_spec_tokens``, 0 without), means over repetitions: ``written`` and ``to_ranks`` (bytes per step written once and
    delivered to all ranks), ``decodes_ns`` (the N decodes summed), and for
    ``replicated`` ``replica_rank_ns`` (one rank's replica scheduler per step, the mean
    over ranks) and ``replica_all_ns`` (summed over the N ranks: what the machine
    pays), ``withheld`` (a case's timings are withheld: ``analysis.cores``), ``marked``
    (shown on N + 1 cores, N = 1: ``analysis.cores.is_marked``). Sorted
    by transport, codec, policy, K, N."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for c in summaries:
        if c.get("tp") is None or not c.get("complete") or not c.get("num_steps"):
            continue
        key = (c.get("num_running"), c["transport"], c["codec"], c["policy"], c["tp"],
               c.get("num_spec_tokens") or 0)
        groups.setdefault(key, []).append(c)
    rows = []
    for key in sorted(groups, key=lambda k: (k[1], k[2], k[3], k[5], k[4], str(k[0]))):
        cases = groups[key]
        ranks = [sum(v) / len(v) for v in (c.get("tp_replica_scheduler_ns_per_rank")
                                             for c in cases) if v]
        rows.append(dict(zip(("num_running", "transport", "codec", "policy", "tp",
                              "num_spec_tokens"), key),
                         n=len(cases), withheld=any(is_withheld(c) for c in cases),
                         marked=any(is_marked(c) for c in cases),
                         written=_mean(cases, "tp_s2r_bytes_written_per_step"),
                         to_ranks=_mean(cases, "tp_s2r_wire_bytes_all_ranks_per_step"),
                         decodes_ns=_mean(cases, "tp_decode_ns_all_ranks_per_step"),
                         replica_rank_ns=sum(ranks) / len(ranks) if ranks else None,
                         replica_all_ns=_mean(cases,
                                              "tp_replica_scheduler_ns_all_ranks_per_step")))
    return rows


def _cell(value: Optional[float], scale: float = 1.0, digits: int = 1) -> str:
    if value is None:
        return "-"
    return _fixed(value * scale, digits)


def _mark(withheld: bool, marked: bool) -> str:
    """A row's mark after its transport: ``*`` withheld, ``°`` shown on N + 1 cores."""
    return MARK if withheld else SHARED_MARK if marked else ""


def per_step_table(summaries: list[dict[str, Any]]) -> list[str]:
    """The lines of ``per_step_rows``' table: bytes written once per step and, for
    ``replicated``, the replica scheduler one rank pays and the N ranks together."""
    rows = per_step_rows(summaries)
    if not rows:
        return []
    def timing(r: dict[str, Any], key: str) -> str:  # bytes only where withheld
        return "-" if r["withheld"] else _cell(r[key], 1e-3)

    spec = any(r["num_spec_tokens"] for r in rows)  # a K column only with drafts
    cells = [[r["transport"] + _mark(r["withheld"], r["marked"]), r["codec"], r["policy"],
              str(r["tp"]), *([str(r["num_spec_tokens"])] if spec else []),
              str(r["num_running"]), str(r["n"]), _cell(r["written"]),
              _cell(r["to_ranks"]), timing(r, "decodes_ns"), timing(r, "replica_rank_ns"),
              timing(r, "replica_all_ns")]
             for r in rows]
    header = ["transport", "codec", "policy", "N", *(["K"] if spec else []), "B", "reps",
              "B written once", "B to ranks", "N decodes us", "replica sched us/rank",
              "x N ranks us"]
    return ["", "per step, per case (mean over repetitions): bytes the scheduler writes once "
            "and bytes delivered to all ranks, the N ranks' decodes summed; replicated: "
            "each rank runs the scheduler (schedule + build + update), one rank's time and "
            "the N ranks' together (the machine's cost):",
            render(header, cells, left=0)]


def report(summaries: list[dict[str, Any]]) -> str:
    """The per-case table (``per_step_table``), the saving table (module docstring)
    and the cross-N token check."""
    mine = [s for s in summaries if s.get("scenario") == NAME]
    rows = []
    over = {(s["transport"], s["tp"]) for s in mine if is_withheld(s)}
    shared = {(s["transport"], s["tp"]) for s in mine if is_marked(s)}
    means = tp_saving_means(tp_saving(mine))
    spec = any(r["num_spec_tokens"] for r in means)  # a K column only with drafts
    for r in means:
        hide = (r["transport"], r["tp"]) in over  # bytes only (analysis.cores)
        if hide:
            r = {k: v for k, v in r.items() if "_ns_" not in k}
        mark = _mark(hide, (r["transport"], r["tp"]) in shared)
        rows.append([r["transport"] + mark, r["codec"], str(r["tp"]),
                     *([str(r["num_spec_tokens"])] if spec else []), str(r["num_running"]),
                     str(r["n"]),
                     _fixed(r.get('saving_tp_s2r_bytes_written_per_step', 0), 0),
                     _fixed(r.get('saving_tp_s2r_wire_bytes_all_ranks_per_step', 0), 0),
                     _us(r, "tp_encode_ns_per_step"),
                     _us(r, "tp_decode_ns_all_ranks_per_step"),
                     _us(r, "tp_ready_ns_median")])
    out = per_step_table(mine)
    if not rows and not out:
        return ""
    if rows:
        header = ["transport", "codec", "N", *(["K"] if spec else []), "B", "reps",
                  "B written", "B to ranks", "encode us", "N decodes us", "slowest ready us"]
        out += ["", "send's saving per step against N (send minus cached; mean over "
                "repetitions, (min..max); bytes written once and delivered to all ranks, one "
                "encode, the N ranks' decodes summed, median receive-to-ready of the slowest "
                "rank):", render(header, rows, left=0)]
    out += [note for note in (footnote(mine), marked_footnote(mine)) if note]
    out.append(_same_tokens(mine))
    return "\n".join(out)
