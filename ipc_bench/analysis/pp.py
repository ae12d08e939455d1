"""Figures of a ``--pp N`` case (``harness.pp_case``): bytes and time per hop.

Per counted step (means unless named ``_median``; bytes exact, times in ns), added to
the case's summary:

- ``pp``: N stages; ``pp_direct``: whether the last stage sends its ids to the others;
  ``pp_cores``: CPUs of the scheduler's affinity mask; ``pp_oversubscribed``: fewer
  than N + 1 of them (timings not comparable); ``pp_timings_withheld``: fewer than
  N + 2 (``analysis.cores``: the tables leave the timings out, this file keeps them);
Every byte figure is payload: the serialized message (ZeroMQ hops) or the tensor
bytes handed to / received from gloo (stage hops), each measured where the harness
sends or receives it; the ZeroMQ frame heads are a figure of their own.

- scheduler -> stages: ``pp_s2r_bytes_per_step`` (the encoded ``SchedulerOutput``,
  handed once to XPUB, which copies it to each stage),
  ``pp_s2r_wire_bytes_all_stages_per_step`` (N ZMTP frames, head and payload, one per
  stage), ``pp_s2r_ready_ns_median`` (stage 0: from the later of the scheduler's send
  and the stage starting to wait, to the stage having decoded the step);
- stage i -> stage i + 1: ``pp_hidden_bytes_per_step`` (per hop, the tensor bytes
  stage 1 received: ``num_scheduled_tokens x engine.pipeline.HIDDEN_BYTES_PER_TOKEN``
  with the null and fixed-step models, ``x hidden_size x 4`` with the torch model;
  every hop carries the same) and ``pp_hidden_ns_median`` (``[N - 1]``: from the later
  of the sender's ``isend`` and the receiver starting to wait, to the tensor being
  there);
- last stage -> scheduler: ``pp_r2s_bytes_per_step`` (the encoded ModelRunnerOutput);
- last stage -> other stages (``direct``): ``pp_direct_bytes_per_step`` (the int32 ids'
  tensor bytes the last stage handed to ``isend``, its ``pp_direct_out_bytes``: one
  per scheduled request to each of the N - 1 other stages, the sum) and
  ``pp_direct_ns_median`` (``[N - 1]``, per receiving stage, as the hidden hop);
- wire overhead: ``pp_zmq_frame_head_bytes_per_step``, the ZMTP frame heads of the two
  ZeroMQ hops (``wire.transport.zmtp_frame_bytes``: 2 bytes up to 255 of payload, else
  9): N on the broadcast (one per stage) and one on the reply. gloo's own headers are
  not counted.

Stage times are ``perf_counter_ns`` (CLOCK_MONOTONIC, one clock for every process of the
machine); ``analysis.tp._rank_times`` puts the stages' loop times on it.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ipc_bench.analysis.cores import MARK, is_withheld, withheld
from ipc_bench.analysis.tp import _rank_times
from ipc_bench.engine.config import SEND
from ipc_bench.engine.pipeline import DIRECT
from ipc_bench.harness.spec import SCHED_COLUMNS, CaseResult
from ipc_bench.wire.transport import zmtp_frame_bytes

_COL = {name: i for i, name in enumerate(SCHED_COLUMNS)}
#: The arms a pp run compares (``scenarios/pp``: ``direct`` runs the cached policy).
SEND_ARM, DIRECT_ARM = SEND, DIRECT
#: The per-hop keys the scenario's table shows, in order.
HOP_KEYS = ("pp_s2r_bytes_per_step", "pp_hidden_bytes_per_step", "pp_r2s_bytes_per_step",
            "pp_direct_bytes_per_step", "pp_zmq_frame_head_bytes_per_step")


def _frame_heads(payload: np.ndarray) -> np.ndarray:
    """ZMTP frame head bytes of one-frame messages of ``payload`` bytes each."""
    return np.asarray([zmtp_frame_bytes(int(b)) - int(b) for b in payload], dtype=np.int64)


def _col(cols: dict, name: str, seqs: np.ndarray) -> Optional[np.ndarray]:
    values = cols.get(name)
    if not values or len(values) <= int(seqs.max()):
        return None
    return np.asarray(values, dtype=np.int64)[seqs]


def _hop_ns(sent: Optional[np.ndarray], wait: Optional[np.ndarray],
            done: Optional[np.ndarray]) -> Optional[float]:
    """Median of ``done - max(sent, wait)`` (``None`` if a column is missing)."""
    if sent is None or wait is None or done is None:
        return None
    return float(np.median(done - np.maximum(sent, wait)))


def pp_figures(result: CaseResult, c: np.ndarray) -> dict[str, Any]:
    """The ``pp_*`` summary fields (module docstring) of a ``--pp`` case over its counted
    sched rows ``c``; only the first four when the stages' reports are missing."""
    spec = result.spec
    n = spec.pp
    out: dict[str, Any] = {"pp": n, "pp_direct": bool(spec.pp_direct)}
    cores = result.model_info.get("tp_cores")
    if cores is not None:
        out.update(pp_cores=cores, pp_oversubscribed=cores < n + 1,
                   pp_timings_withheld=withheld(n, cores))
    if len(c) == 0:
        return out
    payload = c[:, _COL["s2r_payload_bytes"]]
    reply = c[:, _COL["r2s_payload_bytes"]]
    head = _frame_heads(payload)
    out.update(pp_s2r_bytes_per_step=float(payload.mean()),
               pp_s2r_wire_bytes_all_stages_per_step=float((payload + head).mean() * n),
               pp_r2s_bytes_per_step=float(reply.mean()),
               pp_zmq_frame_head_bytes_per_step=float((head * n + _frame_heads(reply)).mean()))
    if not spec.pp_direct:
        out["pp_direct_bytes_per_step"] = 0.0
    seqs = c[:, _COL["seq"]]
    stages = result.tp_rank_columns
    if len(stages) != n or len(result.tp_sent_ns) <= int(seqs.max()):
        return out
    received = _col(stages[1], "pp_in_bytes", seqs) if n > 1 else None
    if n == 1:
        out["pp_hidden_bytes_per_step"] = 0.0
    elif received is not None:  # as stage 1 received them (every hop carries the same)
        out["pp_hidden_bytes_per_step"] = float(received.mean())
    if spec.pp_direct:  # as the last stage handed them to isend, all receiving stages
        sent_ids = _col(stages[-1], "pp_direct_out_bytes", seqs)
        if sent_ids is not None:
            out["pp_direct_bytes_per_step"] = float(sent_ids.mean())
    times = _rank_times(result, seqs)
    if times is not None:
        asked, ready = times
        sent = np.asarray(result.tp_sent_ns, dtype=np.int64)[seqs]
        out["pp_s2r_ready_ns_median"] = float(np.median(ready[:, 0] - np.maximum(sent,
                                                                                 asked[:, 0])))
    hidden = [_hop_ns(_col(stages[i], "pp_out_start_ns", seqs),
                      _col(stages[i + 1], "pp_in_wait_ns", seqs),
                      _col(stages[i + 1], "pp_in_done_ns", seqs)) for i in range(n - 1)]
    if n > 1 and None not in hidden:
        out["pp_hidden_ns_median"] = hidden
    if spec.pp_direct and n > 1:
        direct = [_hop_ns(_col(stages[-1], "pp_direct_out_start_ns", seqs),
                          _col(stages[i], "pp_direct_in_wait_ns", seqs),
                          _col(stages[i], "pp_direct_in_done_ns", seqs)) for i in range(n - 1)]
        if None not in direct:
            out["pp_direct_ns_median"] = direct
    return out


#: Columns of ``hop_table``.
HOP_TABLE_HEADER = ["N", "policy", "codec", "rep", "sched->stages B", "s->st0 us",
                    "hidden B/hop", "hidden us/hop", "last->sched B", "direct B", "direct us",
                    "ZMTP heads B", "tok/s"]
#: What the byte columns of ``hop_table`` count (the terminal and the report say it).
HOP_BYTES_NOTE = ("bytes: payload, means over counted steps, exact (the encoded "
                  "SchedulerOutput handed once to XPUB, each hop's hidden-state tensor, "
                  "the encoded ModelRunnerOutput, the direct ids' tensors to all N - 1 "
                  "other stages); ZMTP heads: the ZeroMQ frame heads of a step, N on the "
                  "broadcast and one on the reply (gloo's headers not counted)")


def _us(value) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(f"{v / 1e3:.1f}" for v in value) or "-"
    return f"{value / 1e3:.1f}"


def _b(value) -> str:
    return "-" if value is None or value != value else f"{value:,.0f}"


def _hop_row(s: dict[str, Any]) -> list[str]:
    n = int(s["pp"])
    direct = bool(s.get("pp_direct")) and n > 1
    tok = s.get("output_tokens_per_s")
    hide = is_withheld(s)
    if hide:  # bytes only (analysis.cores)
        s = {k: v for k, v in s.items() if not k.endswith("_ns_median")}
        tok = None
    return [f"{n}{MARK if hide else ''}",
            s.get("arm") or s["policy"], s["codec"], str(s.get("repetition", 0)),
            _b(s.get("pp_s2r_bytes_per_step")), _us(s.get("pp_s2r_ready_ns_median")),
            _b(s.get("pp_hidden_bytes_per_step")) if n > 1 else "-",
            _us(s.get("pp_hidden_ns_median")), _b(s.get("pp_r2s_bytes_per_step")),
            _b(s.get("pp_direct_bytes_per_step")) if direct else "-",
            _us(s.get("pp_direct_ns_median")), _b(s.get("pp_zmq_frame_head_bytes_per_step")),
            "-" if tok is None or tok != tok else f"{tok:,.0f}"]


def hop_table(summaries: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """``(header, rows)``: one row per ``--pp`` case summary (those with ``pp``), by
    batch size, N, codec, policy and repetition: the payload bytes and median times of
    every hop, the ZeroMQ frame heads (``HOP_BYTES_NOTE``) and the output tokens/s
    (``*`` after N: fewer than N + 2 cores, the times and
    tokens/s left out as ``-``, ``analysis.cores``)."""
    mine = [s for s in summaries if s.get("pp") is not None and s.get("pp") == s.get("pp")]
    mine.sort(key=lambda s: (s.get("num_running") or 0, s["pp"], s["codec"],
                             s.get("arm") or s["policy"], s.get("repetition", 0)))
    return list(HOP_TABLE_HEADER), [_hop_row(s) for s in mine]
