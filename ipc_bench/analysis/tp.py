"""Figures of a ``--tp N`` case (``harness.tp_case``) and send's saving against N.

Per counted step (means unless named ``_median``), added to the case's summary:

- ``tp``: N, the number of runner ranks; ``tp_cores``: CPUs of the scheduler's
  affinity mask; ``tp_oversubscribed``: fewer than N + 1 of them (the ranks and the
  scheduler share cores: timings not comparable);
- ``tp_s2r_bytes_written_per_step``: bytes the scheduler writes once per step: on
  the ring (``shm*``) the chunk head and payload (``shm_ring.ring_message_bytes``),
  over XPUB the ZMTP frame it hands to ZeroMQ once;
- ``tp_s2r_wire_bytes_all_ranks_per_step``: bytes that reach the ranks in all: the
  ring's once (the ranks read the same shared memory), XPUB's N times (one ZMTP
  frame per subscriber connection);
- ``tp_encode_ns_per_step``: the scheduler's one encode of the ``SchedulerOutput``;
- ``tp_rank_decode_ns_per_step``: each rank's decode, ``[N]``;
  ``tp_decode_ns_all_ranks_per_step``: their sum (CPU the N decodes take);
- ``tp_ready_ns_per_step`` / ``_median``: receive-to-ready of the slowest rank: from
  the moment the scheduler hands the encoded frame to the transport (its
  ``tp_sent_ns``) to the moment the last rank has decoded it (rank's loop origin
  ``wire.tp.ORIGIN_COLUMN`` + ``runner_t0_ns`` + ``runner_idle_ns`` +
  ``runner_decode_ns``), both on ``perf_counter_ns`` (CLOCK_MONOTONIC, one clock for
  the machine's processes); ``tp_slowest_rank_share``: per rank, the share of steps
  on which it was the last ready.

``tp_saving`` pairs each send case with the cached case of the same workload, codec,
transport, N and repetition: send minus cached of the bytes written, the encode, the
N decodes and the slowest rank's receive-to-ready time.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ipc_bench.harness.spec import SCHED_COLUMNS, CaseResult
from ipc_bench.wire.shm_ring import RING_TRANSPORTS, ring_message_bytes
from ipc_bench.wire.tp import ORIGIN_COLUMN

_COL = {name: i for i, name in enumerate(SCHED_COLUMNS)}
#: Summary keys whose send-minus-cached difference ``tp_saving`` reports.
SAVING_KEYS = ("tp_s2r_bytes_written_per_step", "tp_encode_ns_per_step",
               "tp_decode_ns_all_ranks_per_step", "tp_ready_ns_median")


def _ready_ns(result: CaseResult, seqs: np.ndarray) -> Optional[np.ndarray]:
    """``[steps, N]`` absolute ns at which each rank had decoded each step ``seqs``,
    or ``None`` when a rank's report lacks a column (a failed case)."""
    out = []
    for cols in result.tp_rank_columns:
        try:
            origin = cols[ORIGIN_COLUMN][0]
            parts = [np.asarray(cols[k], dtype=np.int64)[seqs]
                     for k in ("runner_t0_ns", "runner_idle_ns", "runner_decode_ns")]
        except (KeyError, IndexError):
            return None
        out.append(origin + parts[0] + parts[1] + parts[2])
    return np.stack(out, axis=1)


def tp_figures(result: CaseResult, c: np.ndarray) -> dict[str, Any]:
    """The ``tp_*`` summary fields (module docstring) of a ``--tp`` case, over its
    counted sched rows ``c`` (``[steps, len(SCHED_COLUMNS)]``); only ``tp`` when the
    ranks' reports are missing. Units: bytes, ns."""
    spec = result.spec
    n = spec.tp
    out: dict[str, Any] = {"tp": n}
    cores = result.model_info.get("tp_cores")
    if cores is not None:
        out.update(tp_cores=cores, tp_oversubscribed=cores < n + 1)
    if len(c) == 0:
        return out
    payload = c[:, _COL["s2r_payload_bytes"]]
    if spec.transport in RING_TRANSPORTS:
        written = np.fromiter(map(ring_message_bytes, payload.tolist()), np.int64, len(payload))
        all_ranks = written
    else:
        written = payload + np.where(payload <= 255, 2, 9)
        all_ranks = written * n
    out.update(tp_s2r_bytes_written_per_step=float(written.mean()),
               tp_s2r_wire_bytes_all_ranks_per_step=float(all_ranks.mean()),
               tp_encode_ns_per_step=float(c[:, _COL["encode_ns"]].mean()))
    seqs = c[:, _COL["seq"]]
    if len(result.tp_rank_columns) != n or len(result.tp_sent_ns) <= int(seqs.max()):
        return out
    try:
        decodes = [float(np.asarray(cols["runner_decode_ns"], dtype=np.int64)[seqs].mean())
                   for cols in result.tp_rank_columns]
    except (KeyError, IndexError):
        return out
    out.update(tp_rank_decode_ns_per_step=decodes,
               tp_decode_ns_all_ranks_per_step=float(sum(decodes)))
    ready = _ready_ns(result, seqs)
    if ready is not None:
        latency = ready.max(axis=1) - np.asarray(result.tp_sent_ns, dtype=np.int64)[seqs]
        slowest = np.bincount(ready.argmax(axis=1), minlength=n) / len(seqs)
        out.update(tp_ready_ns_per_step=float(latency.mean()),
                   tp_ready_ns_median=float(np.median(latency)),
                   tp_slowest_rank_share=[float(x) for x in slowest])
    return out


def tp_saving(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send minus cached per (workload, codec, transport, N, repetition) of the
    complete ``--tp`` cases in ``summaries``: one dict per pair with ``num_running``,
    ``codec``, ``transport``, ``tp``, ``repetition`` and, for each of ``SAVING_KEYS``
    both cases have, ``saving_<key>`` (bytes or ns per step; positive: send costs
    more). Sorted by transport, codec, N."""
    pairs: dict[tuple, dict[str, dict[str, Any]]] = {}
    for s in summaries:
        if s.get("tp") is None or not s.get("complete") or not s.get("num_steps"):
            continue
        key = (s.get("num_running"), s["codec"], s["transport"], s["tp"], s["repetition"])
        pairs.setdefault(key, {})[s["policy"]] = s
    rows = []
    for key in sorted(pairs, key=lambda k: (k[2], k[1], k[3], k[4], str(k[0]))):
        send, cached = pairs[key].get("send"), pairs[key].get("cached")
        if send is None or cached is None:
            continue
        row = dict(zip(("num_running", "codec", "transport", "tp", "repetition"), key))
        for k in SAVING_KEYS:
            if send.get(k) is not None and cached.get(k) is not None:
                row["saving_" + k] = send[k] - cached[k]
        rows.append(row)
    return rows

