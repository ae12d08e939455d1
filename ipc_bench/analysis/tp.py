"""Figures of a ``--tp N`` case (``harness.tp_case``) and send's saving against N.

Per counted step (means unless named ``_median``), added to the case's summary:

- ``tp``: N, the number of runner ranks; ``tp_cores``: CPUs of the scheduler's
  affinity mask, with ``--cpu-affinity`` of the case's sets together (absent, with the two flags below, when ranks started by hand read
  another machine's clock: they do not share this machine's cores); ``tp_oversubscribed``: fewer than N + 1 of them (the ranks and the
  scheduler share cores: timings not comparable, whatever the broadcast;
  ``tp_core_warning`` words it); ``tp_timings_withheld``: fewer than
  N + 2 (``analysis.cores``: the tables leave the timings out, this file keeps them);
- ``tp_s2r_bytes_written_per_step``: bytes the scheduler writes once per step: on
  the ring (``shm*``) the chunk head and payload (``shm_ring.ring_message_bytes``),
  over XPUB the ZMTP frame it hands to ZeroMQ once;
- ``tp_s2r_wire_bytes_all_ranks_per_step``: bytes that reach the ranks in all: the
  ring's once (the ranks read the same shared memory), XPUB's N times (one ZMTP
  frame per subscriber connection);
- ``tp_encode_ns_per_step``: the scheduler's one encode of the ``SchedulerOutput``;
- ``tp_rank_decode_ns_per_step``: each rank's decode, ``[N]``;
  ``tp_decode_ns_all_ranks_per_step``: their sum (CPU the N decodes take);
- ``tp_replica_scheduler_ns_per_rank`` (``--codecs replicated`` only): each rank's
  replica scheduler per step (schedule + build + update: every rank runs the
  scheduler), ``[N]``; ``tp_replica_scheduler_ns_all_ranks_per_step``: their sum, the
  machine-wide cost (about N times one rank's);
- ``tp_ready_ns_per_step`` / ``_median``: receive-to-ready of the slowest rank: per
  rank, from the later of the scheduler handing the encoded frame to the transport
  (its ``tp_sent_ns``) and the rank starting to wait for it (``runner_t0_ns``), to
  the rank having decoded it (``+ runner_idle_ns + runner_decode_ns``); the largest
  over the ranks. Rank times are put on the scheduler's clock by the rank's loop
  origin (``wire.tp.ORIGIN_COLUMN``); every process reads ``perf_counter_ns``
  (CLOCK_MONOTONIC, one clock for the machine).
  With ranks started by hand on other machines (``--remote-runners``) these and
  ``tp_lag_ns_median`` need one clock: they are left out, and ``tp_ready_note`` says why,
  unless every rank reports this machine's clock (``wire.remote.clock_id``).
- ``tp_lag_ns_median``: from the send to the last rank having decoded the step,
  backlog included. The scheduler waits for rank 0 only (the null and fixed-step
  models have no collective operation that would hold every rank to each step, as
  an all-reduce does in vLLM), so a slower rank can fall behind: by up to the ring's
  10 chunks, or over XPUB until the next control exchange (the input oracle's check,
  every 128 steps by default). ``tp_slowest_rank_share``: per rank, the share of
  steps on which it was the last ready.

``tp_saving`` pairs each send case with the cached case of the same workload, codec,
transport, N, draft count K (``num_spec_tokens``, 0 without speculative decoding) and
repetition: send minus cached of the bytes written, the encode, the
N decodes and the slowest rank's receive-to-ready time; ``tp_saving_means`` averages
those pairs over repetitions.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ipc_bench.analysis.cores import core_fields
from ipc_bench.harness.spec import SCHED_COLUMNS, CaseResult
from ipc_bench.wire.shm_ring import RING_TRANSPORTS, ring_message_bytes
from ipc_bench.wire.tp import ORIGIN_COLUMN

_COL = {name: i for i, name in enumerate(SCHED_COLUMNS)}
#: Summary keys whose send-minus-cached difference ``tp_saving`` reports.
SAVING_KEYS = ("tp_s2r_bytes_written_per_step", "tp_s2r_wire_bytes_all_ranks_per_step",
               "tp_encode_ns_per_step", "tp_decode_ns_all_ranks_per_step",
               "tp_ready_ns_median")


def _rank_times(result: CaseResult, seqs: np.ndarray
                ) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """``(asked, ready)``, each ``[steps, N]`` absolute ns: when each rank began to
    wait for each step ``seqs`` and when it had decoded it; ``None`` when a rank's
    report lacks a column (a failed case)."""
    asked, ready = [], []
    for cols in result.tp_rank_columns:
        try:
            origin = cols[ORIGIN_COLUMN][0]
            t0, idle, decode = (np.asarray(cols[k], dtype=np.int64)[seqs]
                                for k in ("runner_t0_ns", "runner_idle_ns",
                                          "runner_decode_ns"))
        except (KeyError, IndexError):
            return None
        asked.append(origin + t0)
        ready.append(origin + t0 + idle + decode)
    return np.stack(asked, axis=1), np.stack(ready, axis=1)


def _replica_per_rank(result: CaseResult, seqs: np.ndarray) -> Optional[list[float]]:
    """Per rank, its replica scheduler's ns per counted step (``replica_schedule_ns``
    + ``replica_update_ns``: the replicated codec); ``None`` for other codecs or when a
    rank's report lacks them."""
    out = []
    for cols in result.tp_rank_columns:
        try:
            sched, update = (np.asarray(cols[k], dtype=np.int64)[seqs]
                             for k in ("replica_schedule_ns", "replica_update_ns"))
        except (KeyError, IndexError):
            return None
        out.append(float((sched + update).mean()))
    return out


def tp_broadcast_figures(payload_bytes: np.ndarray, encode_ns: np.ndarray, transport: str,
                         n: int) -> dict[str, float]:
    """The scheduler's side of a ``--tp`` case's broadcast over its counted steps, from
    their ``s2r_payload_bytes`` (``payload_bytes``, int64) and ``encode_ns`` (module
    docstring): ``tp_s2r_bytes_written_per_step`` and
    ``tp_s2r_wire_bytes_all_ranks_per_step`` (bytes: on a ring ``transport``,
    ``shm_ring.ring_message_bytes`` once; else one ZMTP frame, head and payload, to each
    of the ``n`` ranks) and ``tp_encode_ns_per_step`` (ns). ``tp_figures`` writes them;
    the results loader checks a summary's against its ``steps.csv`` rows."""
    if transport in RING_TRANSPORTS:
        written = np.fromiter(map(ring_message_bytes, payload_bytes.tolist()), np.int64,
                              len(payload_bytes))
        all_ranks = written
    else:
        written = payload_bytes + np.where(payload_bytes <= 255, 2, 9)
        all_ranks = written * n
    return dict(tp_s2r_bytes_written_per_step=float(written.mean()),
                tp_s2r_wire_bytes_all_ranks_per_step=float(all_ranks.mean()),
                tp_encode_ns_per_step=float(encode_ns.mean()))


def rank_decode_ns_per_step(decode_ns: np.ndarray) -> float:
    """One rank's entry of ``tp_rank_decode_ns_per_step``: the mean of its
    ``runner_decode_ns`` (int64) over the counted steps, ns. ``tp_figures`` writes it for
    every rank; the results loader checks rank 0's, the one ``steps.csv`` holds."""
    return float(np.asarray(decode_ns, dtype=np.int64).mean())


def tp_figures(result: CaseResult, c: np.ndarray) -> dict[str, Any]:
    """The ``tp_*`` summary fields (module docstring) of a ``--tp`` case, over its
    counted sched rows ``c`` (``[steps, len(SCHED_COLUMNS)]``); only ``tp`` when the
    ranks' reports are missing. Units: bytes, ns."""
    spec = result.spec
    n = spec.tp
    out: dict[str, Any] = {"tp": n}
    cores = result.model_info.get("tp_cores")
    if cores is not None:
        out.update(core_fields("tp", n, cores))
    if len(c) == 0:
        return out
    out.update(tp_broadcast_figures(c[:, _COL["s2r_payload_bytes"]], c[:, _COL["encode_ns"]],
                                    spec.transport, n))
    seqs = c[:, _COL["seq"]]
    if len(result.tp_rank_columns) != n or len(result.tp_sent_ns) <= int(seqs.max()):
        return out
    try:
        decodes = [rank_decode_ns_per_step(np.asarray(cols["runner_decode_ns"],
                                                      dtype=np.int64)[seqs])
                   for cols in result.tp_rank_columns]
    except (KeyError, IndexError):
        return out
    out.update(tp_rank_decode_ns_per_step=decodes,
               tp_decode_ns_all_ranks_per_step=float(sum(decodes)))
    replica = _replica_per_rank(result, seqs)
    if replica is not None:
        out.update(tp_replica_scheduler_ns_per_rank=replica,
                   tp_replica_scheduler_ns_all_ranks_per_step=float(sum(replica)))
    times = _rank_times(result, seqs)
    if not result.model_info.get("tp_one_clock", True):  # ranks on other machines
        out["tp_ready_note"] = ("not computed: ranks on other machines read other clocks "
                                "than the scheduler's")
    elif times is not None:
        asked, ready = times
        sent = np.asarray(result.tp_sent_ns, dtype=np.int64)[seqs][:, None]
        latency = (ready - np.maximum(sent, asked)).max(axis=1)
        lag = ready.max(axis=1) - sent[:, 0]
        slowest = np.bincount(ready.argmax(axis=1), minlength=n) / len(seqs)
        out.update(tp_ready_ns_per_step=float(latency.mean()),
                   tp_ready_ns_median=float(np.median(latency)),
                   tp_lag_ns_median=float(np.median(lag)),
                   tp_slowest_rank_share=[float(x) for x in slowest])
    return out


def tp_core_warning(summary: dict[str, Any]) -> Optional[str]:
    """The warning of a ``--tp N`` case summary whose scheduler and N ranks
    outnumbered its cores (``tp_oversubscribed``: fewer than N + 1 ``tp_cores``),
    saying how they shared them, whatever the broadcast: spinning ring readers
    (``shm``) hold a core each while they wait, ``--tp 4 with spinning readers (shm)
    on 2 core(s): 5 processes share them; those timings are not comparable``; readers
    that sleep while they wait (``ipc``, ``shm-block``, ``tcp``) all wake for the
    same frame, so the ranks decode and run each step at once, ``--tp 4 over ipc on
    2 core(s): the 4 ranks sleep between steps but wake together for each step's
    broadcast, so 5 processes share the cores while they run it; those timings are
    not comparable``. ``None`` for another case, one with enough cores, or one
    without ``tp_cores`` (ranks started by hand on other machines). Raises nothing."""
    n, cores = summary.get("tp"), summary.get("tp_cores")
    if not summary.get("tp_oversubscribed") or n is None or cores is None:
        return None
    transport = summary.get("transport")
    if RING_TRANSPORTS.get(transport) == "spin":
        return (f"--tp {n} with spinning readers ({transport}) on {cores} core(s): "
                f"{n + 1} processes share them; those timings are not comparable")
    return (f"--tp {n} over {transport} on {cores} core(s): the {n} ranks sleep between "
            "steps but wake together for each step's broadcast, so "
            f"{n + 1} processes share the cores while they run it; those timings are not "
            "comparable")


def tp_saving(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send minus cached per (workload, codec, transport, N, K, repetition) of the
    complete ``--tp`` cases in ``summaries``: one dict per pair with ``num_running``,
    ``codec``, ``transport``, ``tp``, ``num_spec_tokens`` (K; 0 where a summary has
    none), ``repetition`` and, for each of ``SAVING_KEYS`` both cases have,
    ``saving_<key>`` (bytes or ns per step; positive: send costs more). Sorted by
    transport, codec, K, N."""
    pairs: dict[tuple, dict[str, dict[str, Any]]] = {}
    for s in summaries:
        if s.get("tp") is None or not s.get("complete") or not s.get("num_steps"):
            continue
        key = (s.get("num_running"), s["codec"], s["transport"], s["tp"],
               s.get("num_spec_tokens") or 0, s["repetition"])
        pairs.setdefault(key, {})[s["policy"]] = s
    rows = []
    for key in sorted(pairs, key=lambda k: (k[2], k[1], k[4], k[3], k[5], str(k[0]))):
        send, cached = pairs[key].get("send"), pairs[key].get("cached")
        if send is None or cached is None:
            continue
        row = dict(zip(("num_running", "codec", "transport", "tp", "num_spec_tokens",
                        "repetition"), key))
        for k in SAVING_KEYS:
            if send.get(k) is not None and cached.get(k) is not None:
                row["saving_" + k] = send[k] - cached[k]
        rows.append(row)
    return rows


def tp_saving_means(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``tp_saving`` rows averaged over repetitions: one dict per (workload, codec,
    transport, N, K) with ``n`` (repetitions) and, per ``saving_<key>``, its mean and
    ``saving_<key>_range`` (min, max). Order as ``rows``."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["num_running"], r["codec"], r["transport"], r["tp"],
                           r.get("num_spec_tokens", 0)), []).append(r)
    out = []
    for (b, codec, transport, n, k), group in groups.items():
        row: dict[str, Any] = dict(num_running=b, codec=codec, transport=transport, tp=n,
                                   num_spec_tokens=k, n=len(group))
        for k in SAVING_KEYS:
            values = [r["saving_" + k] for r in group if "saving_" + k in r]
            if values:
                row["saving_" + k] = sum(values) / len(values)
                row[f"saving_{k}_range"] = (min(values), max(values))
        out.append(row)
    return out
