"""Figures of the engine core -> frontend hop (``--frontend``) and of the whole per-step
control plane.

Per case (``frontend_figures``, over the case's counted steps; a step that sent no
``EngineCoreOutputs`` counts 0 bytes and 0 ns of encode and decode):

- ``frontend_bytes_per_step``: the ``EngineCoreOutputs`` payload (msgpack) per step;
  ``frontend_wire_bytes_per_step``: the same with its ZMTP frame header;
- ``frontend_build_ns_per_step`` / ``frontend_encode_ns_per_step`` /
  ``frontend_send_ns_per_step``: in the scheduler's process (after the step's timed
  region); ``frontend_decode_ns_per_step``: in the frontend process;
- ``control_plane_bytes_per_step``: the whole per-step control plane's payload:
  ``SchedulerOutput`` + ``ModelRunnerOutput`` + ``EngineCoreOutputs`` (in the
  single-process baseline the first two are not serialized: 0);
  ``control_plane_wire_bytes_per_step`` the same on the wire (two processes);
  ``frontend_share_of_control_plane``: the frontend's part of it;
- ``control_plane_codec_ns_per_step``: encode + decode of the three messages per step
  (in the single-process baseline the frontend hop's alone); absent in a two-process
  case without the runner's report (``encode_ns_per_step`` absent), whose side of the
  other two messages is unknown;
- ``frontend_token_digest``: one digest of every request's token stream as the
  frontend received it (``engine.outputs.streams_digest``; the frontend oracle has
  checked it request by request against the scheduler's streams). Cases that ran the
  same schedule have equal ones.

Per pair (``pair_send_savings``: a ``send`` case and the ``cached`` case of the same
scenario, workload, codec, transport, repetition and scheduling that scheduled the
same batches, i.e. have equal schedule digests; a timed replay's policies schedule
different batches and get no saving figure), set on both:
``send_saving_bytes_per_step`` (``SchedulerOutput`` payload, send minus cached) and
``send_saving_share_of_control_plane`` (send's control plane minus cached's, over
send's): what PR #20291 saves, stated against everything that crosses a process
boundary each step and not just one hop.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipc_bench.engine.config import CACHED, SEND
from ipc_bench.harness.spec import NO_CODEC
from ipc_bench.wire.transport import zmtp_frame_bytes


def frontend_figures(result, seqs: np.ndarray, out: dict[str, Any]) -> dict[str, Any]:
    """The case's frontend figures at the counted steps ``seqs`` (``out``: the
    figures computed so far); ``{}`` without a complete frontend record."""
    cols = result.frontend_columns
    n = len(result.sched_rows)
    if not cols or any(len(v) != n for v in cols.values()) or not len(seqs):
        return {}
    nbytes = np.asarray(cols["frontend_payload_bytes"], dtype=np.int64)
    decode = np.zeros(n, dtype=np.int64)
    sent = np.flatnonzero(nbytes)
    if len(result.frontend_decode_ns) != len(sent):
        return {}
    decode[sent] = result.frontend_decode_ns
    wire = np.where(nbytes > 0, [zmtp_frame_bytes(int(b)) for b in nbytes], 0)

    def mean(values) -> float:
        return float(np.asarray(values, dtype=np.int64)[seqs].mean())

    fig = dict(frontend=True, frontend_token_digest=result.frontend_token_digest or None,
               frontend_bytes_per_step=mean(nbytes), frontend_wire_bytes_per_step=mean(wire),
               frontend_messages_per_step=float((nbytes[seqs] > 0).mean()),
               frontend_build_ns_per_step=mean(cols["frontend_build_ns"]),
               frontend_encode_ns_per_step=mean(cols["frontend_encode_ns"]),
               frontend_send_ns_per_step=mean(cols["frontend_send_ns"]),
               frontend_decode_ns_per_step=mean(decode))
    s2r = out.get("sched_to_runner_payload_bytes_per_step") or 0.0
    r2s = out.get("runner_to_sched_payload_bytes_per_step") or 0.0
    fig["control_plane_bytes_per_step"] = s2r + r2s + fig["frontend_bytes_per_step"]
    if out.get("sched_to_runner_wire_bytes_per_step") is not None:
        fig["control_plane_wire_bytes_per_step"] = (
            out["sched_to_runner_wire_bytes_per_step"]
            + out["runner_to_sched_wire_bytes_per_step"] + fig["frontend_wire_bytes_per_step"])
    total = fig["control_plane_bytes_per_step"]
    fig["frontend_share_of_control_plane"] = (fig["frontend_bytes_per_step"] / total
                                              if total else None)
    # the single process serializes neither SchedulerOutput nor ModelRunnerOutput: its
    # encode and decode figures are clock reads around no work, not codec time
    if result.spec.codec == NO_CODEC:
        hop_ns: float | None = 0.0
    elif out.get("encode_ns_per_step") is None or out.get("decode_ns_per_step") is None:
        hop_ns = None  # without the runner's report: its sides unknown, not 0
    else:
        hop_ns = out["encode_ns_per_step"] + out["decode_ns_per_step"]
    if hop_ns is not None:
        fig["control_plane_codec_ns_per_step"] = (
            hop_ns + fig["frontend_encode_ns_per_step"] + fig["frontend_decode_ns_per_step"])
    return fig


def _pair_key(s: dict[str, Any]) -> tuple:
    return (s.get("scenario"), s.get("workload"), s.get("codec"), s.get("transport"),
            s.get("repetition"), s.get("async_scheduling") is True
            or s.get("async_scheduling") == 1)


def schedules_apart(cases: list[dict[str, Any]]) -> bool:
    """Whether a send case of ``cases`` (frontend cases' summaries, or a table's
    records: NaN read as absent) with a scheduler -> runner message has no
    ``send_saving_bytes_per_step`` because the cached case of its pair (``_pair_key``)
    scheduled other batches (unequal schedule digests, as a timed replay's arms do:
    ``pair_send_savings`` gives such a pair no saving figure)."""
    from ipc_bench.analysis.pace import is_missing

    def known(c: dict[str, Any], key: str) -> Any:
        value = c.get(key)
        return None if is_missing(value) else value

    cached = {_pair_key(c): c for c in cases if c.get("policy") == CACHED
              and known(c, "schedule_digest") is not None}
    for s in cases:
        if s.get("policy") != SEND or s.get("codec") == NO_CODEC \
                or known(s, "send_saving_bytes_per_step") is not None \
                or known(s, "schedule_digest") is None:
            continue
        c = cached.get(_pair_key(s))
        if c is not None and s["schedule_digest"] != c["schedule_digest"]:
            return True
    return False


def pair_send_savings(summaries: list[dict[str, Any]]) -> None:
    """Set ``send_saving_bytes_per_step`` and ``send_saving_share_of_control_plane``
    on each send / cached pair of frontend cases (module docstring), in place."""
    send = {_pair_key(s): s for s in summaries
            if s.get("policy") == SEND and s.get("arm", SEND) == SEND
            and s.get("control_plane_bytes_per_step")}
    for c in summaries:
        if c.get("policy") != CACHED or c.get("arm", CACHED) != CACHED \
                or c.get("control_plane_bytes_per_step") is None:
            continue
        s = send.get(_pair_key(c))
        if s is None or not c.get("schedule_digest") \
                or s.get("schedule_digest") != c["schedule_digest"]:
            continue  # other batches (a timed replay): not a like-for-like saving
        saving = s["control_plane_bytes_per_step"] - c["control_plane_bytes_per_step"]
        figs = dict(send_saving_bytes_per_step=(
                        s.get("sched_to_runner_payload_bytes_per_step", 0.0)
                        - c.get("sched_to_runner_payload_bytes_per_step", 0.0)),
                    send_saving_share_of_control_plane=saving / s["control_plane_bytes_per_step"])
        s.update(figs)
        c.update(figs)
