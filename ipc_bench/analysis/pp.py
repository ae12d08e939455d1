"""Figures of a ``--pp N`` case (``harness.pp_case``): bytes and time per hop.

Per counted step (means unless named ``_median``; bytes exact, times in ns), added to
the case's summary:

- ``pp``: N stages; ``pp_direct``: whether the last stage sends its ids to the others;
  ``pp_cores``: CPUs of the scheduler's affinity mask (with ``--cpu-affinity``: of the case's sets together); ``pp_oversubscribed``: fewer
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

from ipc_bench.analysis.cores import (MARK, SHARED_MARK, comparison_marked, core_fields,
                                     is_marked, is_withheld)
from ipc_bench.analysis.pace import is_missing
from ipc_bench.analysis.stats import arm_rank
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


def pp_hop_byte_figures(payload_bytes: np.ndarray, reply_bytes: np.ndarray, n: int,
                        direct: bool) -> dict[str, float]:
    """The byte figures of a ``--pp`` case's two ZeroMQ hops over its counted steps, from
    their ``s2r_payload_bytes`` (``payload_bytes``) and ``r2s_payload_bytes``
    (``reply_bytes``), int64, with ``n`` stages (module docstring):
    ``pp_s2r_bytes_per_step``, ``pp_s2r_wire_bytes_all_stages_per_step``,
    ``pp_r2s_bytes_per_step``, ``pp_zmq_frame_head_bytes_per_step`` and, without
    ``direct`` (no ids sent between stages), ``pp_direct_bytes_per_step`` 0. Bytes.
    ``pp_figures`` writes them; the results loader checks a summary's against its
    ``steps.csv`` rows."""
    head = _frame_heads(payload_bytes)
    out = dict(pp_s2r_bytes_per_step=float(payload_bytes.mean()),
               pp_s2r_wire_bytes_all_stages_per_step=float((payload_bytes + head).mean() * n),
               pp_r2s_bytes_per_step=float(reply_bytes.mean()),
               pp_zmq_frame_head_bytes_per_step=float(
                   (head * n + _frame_heads(reply_bytes)).mean()))
    if not direct:
        out["pp_direct_bytes_per_step"] = 0.0
    return out


def pp_figures(result: CaseResult, c: np.ndarray) -> dict[str, Any]:
    """The ``pp_*`` summary fields (module docstring) of a ``--pp`` case over its counted
    sched rows ``c``; only the first four when the stages' reports are missing."""
    spec = result.spec
    n = spec.pp
    out: dict[str, Any] = {"pp": n, "pp_direct": bool(spec.pp_direct)}
    cores = result.model_info.get("tp_cores")
    if cores is not None:
        out.update(core_fields("pp", n, cores))
    if len(c) == 0:
        return out
    out.update(pp_hop_byte_figures(c[:, _COL["s2r_payload_bytes"]],
                                   c[:, _COL["r2s_payload_bytes"]], n, bool(spec.pp_direct)))
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
    mark = MARK if hide else SHARED_MARK if is_marked(s) else ""
    return [f"{n}{mark}",
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
    tokens/s left out as ``-``, ``analysis.cores``; ``°``: N = 1 on 2 cores, shown)."""
    mine = [s for s in summaries if _value(s, "pp") is not None]
    mine.sort(key=lambda s: (_value(s, "num_running") or 0, s["pp"], s["codec"],
                             s.get("arm") or s["policy"], s.get("repetition", 0)))
    return list(HOP_TABLE_HEADER), [_hop_row(s) for s in mine]


def _value(s: dict[str, Any], key: str) -> Any:
    """``s[key]``, ``None`` for a missing or NaN value (a pandas record's gap)."""
    v = s.get(key)
    return None if is_missing(v) else v


def _pp_cases(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The complete ``--pp`` case summaries of ``summaries``."""
    return [s for s in summaries if _value(s, "pp") is not None and _value(s, "complete")]


def _arm(s: dict[str, Any]) -> str:
    arm = _value(s, "arm")
    return arm if isinstance(arm, str) and arm else s["policy"]


def token_check_line(summaries: list[dict[str, Any]]) -> str:
    """One line: per (B, N) of the complete ``--pp`` cases, whether the arms that ran
    (named first, as the tables name them: ``send``, ``send'``, ``direct``, ...)
    produced one token stream, or that only one of them ran (nothing compared), e.g.
    ``token streams of send and direct: B=8 N=1: one token stream; B=8 N=2: only send
    ran, nothing compared``, or ``token streams of send and send': ...`` in an A/A
    run."""
    by: dict[tuple, dict[str, set]] = {}
    names: list[str] = []
    for s in _pp_cases(summaries):
        arms = by.setdefault((_value(s, "num_running"), int(s["pp"])), {})
        arms.setdefault(_arm(s), set()).add(_value(s, "token_digest"))
        if _arm(s) not in names:
            names.append(_arm(s))
    names.sort(key=arm_rank)
    parts = []
    for (b, n), arms in sorted(by.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        digests = set().union(*arms.values())
        b = "-" if b is None else int(b)
        if len(arms) < 2:
            parts.append(f"B={b} N={n}: only {', '.join(sorted(arms))} ran, nothing compared"
                         + ("" if len(digests) == 1 else f" ({len(digests)} DIFFERENT "
                            "streams among its copies)"))
        else:
            parts.append(f"B={b} N={n}: " + ("one token stream" if len(digests) == 1
                                             else f"{len(digests)} DIFFERENT streams"))
    heading = (", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1
               else "".join(names) or "the pp cases")
    return f"token streams of {heading}: " + ("; ".join(parts) or "none")


def _mean_of(cases: list[dict[str, Any]], key: str) -> Optional[float]:
    """Mean over ``cases`` of ``key`` (a list value: its mean first); ``None`` when a
    case lacks it."""
    values = [_value(c, key) for c in cases]
    if not values or any(v is None for v in values):
        return None
    values = [float(np.mean(v)) if isinstance(v, (list, tuple)) else float(v) for v in values]
    return sum(values) / len(values)


def _nb(value: float) -> str:
    """Bytes (a mean) for a sentence: whole, or with one decimal when not whole."""
    return f"{value:,.0f}" if value == round(value) else f"{value:,.1f}"


def _bytes_pair(label: str, unit: str, a: Optional[float], b: Optional[float]
                ) -> Optional[str]:
    """'the reply 362 B under both' (or each arm's figure); ``None`` when one lacks it."""
    if a is None or b is None:
        return None
    if a == b:
        return f"{label} {_nb(a)} {unit} under both"
    return f"{label} {_nb(a)} {unit} under send, {_nb(b)} {unit} under direct"


def send_direct_lines(summaries: list[dict[str, Any]]) -> list[str]:
    """One sentence per (B, N, codec) with both a ``send`` and a ``direct`` complete
    ``--pp`` case (means over repetitions): the payload bytes per step each sends the
    stages, the ids direct moves over gloo instead, the payload all stages receive per
    step under each and send - direct of it, the hops that carry the same; then, where no case's timings are withheld
    (``analysis.cores``), stage 0's receive median, the direct ids' and the output
    tokens/s of each, else that they are left out; where they are shown marked ``°``
    (N = 1 on exactly 2 cores: ``cores.comparison_marked``) the mark follows the codec,
    as it does the hop table's N. The terminal (``scenarios/pp``) and the report's
    findings print these lines."""
    groups: dict[tuple, dict[str, list[dict[str, Any]]]] = {}
    for s in _pp_cases(summaries):
        key = (_value(s, "num_running"), int(s["pp"]), s["codec"])
        groups.setdefault(key, {}).setdefault(_arm(s), []).append(s)
    out = []
    for (b, n, codec), arms in sorted(groups.items(),
                                      key=lambda kv: (str(kv[0][0]), kv[0][1], kv[0][2])):
        send, direct = arms.get(SEND_ARM), arms.get(DIRECT_ARM)
        if not send or not direct:
            continue
        s_b, d_b = (_mean_of(arms_, "pp_s2r_bytes_per_step") for arms_ in (send, direct))
        if s_b is None or d_b is None:
            continue
        ids = _mean_of(direct, "pp_direct_bytes_per_step") or 0.0
        fewer = s_b - d_b
        mark = SHARED_MARK if comparison_marked(send + direct) else ""  # N = 1 on 2 cores
        where = f"B={'-' if b is None else int(b)} N={n} ({codec}{mark}): "
        text = where + ("direct runs as cached (one stage samples and reads its own "
                        "ids), and " if n == 1 else "direct ")
        text += (f"sends {_nb(abs(fewer))} {'fewer' if fewer >= 0 else 'more'} payload "
                 f"bytes per step to the stages than send ({_nb(s_b)} -> {_nb(d_b)} B, "
                 f"{100 * abs(fewer) / s_b:.1f} % of send's bytes: no "
                 "new_token_ids)" if s_b else f"sends {_nb(d_b)} B per step to the stages")
        if n > 1:
            others = "the other stage" if n == 2 else f"the other {n - 1} stages"
            text += (f" and {_nb(ids)} B of sampled ids per step over gloo, last stage -> "
                     f"{others}; payload all stages receive per step: send {_nb(n * s_b)} B "
                     f"({n} x {_nb(s_b)}), direct {_nb(n * d_b + ids)} B ({n} x {_nb(d_b)} "
                     f"+ {_nb(ids)}), send - direct {_nb(n * s_b - (n * d_b + ids))} B")
        same = [p for p in (_bytes_pair("hidden states", "B per hop", *(
            _mean_of(a, "pp_hidden_bytes_per_step") for a in (send, direct))) if n > 1 else None,
                            _bytes_pair("the reply", "B", *(_mean_of(a, "pp_r2s_bytes_per_step")
                                                         for a in (send, direct))))
                if p]
        if same:
            text += "; " + ", ".join(same)
        if any(is_withheld(c) for c in send + direct):
            text += "; times and tokens/s left out (fewer than N + 2 cores)."
        else:
            times = []
            a, d = (_mean_of(x, "pp_s2r_ready_ns_median") for x in (send, direct))
            if a is not None and d is not None:
                times.append(f"scheduler -> stage 0 median {a / 1e3:.1f} -> {d / 1e3:.1f} us")
            ids_ns = _mean_of(direct, "pp_direct_ns_median") if n > 1 else None
            if ids_ns is not None:
                times.append(f"direct ids median {ids_ns / 1e3:.1f} us (mean over receiving "
                             "stages)")
            ta, td = (_mean_of(x, "output_tokens_per_s") for x in (send, direct))
            if ta and td is not None:
                times.append(f"output tokens/s {ta:,.0f} -> {td:,.0f} "
                             f"({100 * (td / ta - 1):+.1f} %)")
            text += ("; send -> direct: " + ", ".join(times) + "." if times else ".")
        out.append(text)
    return out
