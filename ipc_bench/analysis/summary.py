"""Per-case figures from the raw per-step records (``ipc_bench.harness.spec``).

Every figure is computed over the case's *counted* steps only (warm-up excluded;
for steady-state scenarios, only pure-decode steps), except the request counts
(``num_requests``, ``num_rejected``, ``num_finished``, and ``num_preemptions``:
preemptions by recompute over the whole case, warm-up included). Times are ns,
sizes bytes.

- ``output_tokens_per_s`` = tokens sampled in counted steps / sum of their
  ``step_ns`` (a step is a whole scheduler iteration, so this is busy wall time);
- ``floor_output_tokens_per_s``: the same tokens over the floor's time for the same
  recorded messages, so ``step_to_floor_ratio`` is the harness's overhead measured
  side by side;
- ``encode_ns_per_step`` / ``decode_ns_per_step`` / ``build_ns_per_step``: both
  directions summed (scheduler's SchedulerOutput + runner's ModelRunnerOutput); each
  direction is also given on its own;
- the model's own columns (emulated step times, CUDA event times, the torch model's
  roofline and its compute / roofline ratio) and the marks of an emulated case:
  ``_model_column_figures``, ``_roofline_figures``, ``_model_marks``;
- with ``--frontend``, the engine core -> frontend hop and the whole control plane
  (``analysis.frontend``: ``frontend_bytes_per_step``, ``control_plane_bytes_per_step``
  ...);
- a one-runner case over the spinning ring (``--transport shm``): ``shm_cores``, CPUs
  of the scheduler's affinity mask (with ``--cpu-affinity``: of the case's sets
  together, ``affinity.cores_in_use``), and ``shm_oversubscribed``: fewer than 2 of them
  (the spinning runner and the scheduler share a core: timings not comparable; the
  rule of ``--tp``'s N spinning readers, N + 1 cores, at N = 1);
- a case with one runner process on this machine (not ``--tp`` / ``--pp``), and the
  single-process case with ``--frontend``: ``runner_readers`` (N: 1, or 2 with
  ``--frontend``, whose process is busy beside the runner; 1 for the single process
  with a frontend), ``runner_cores`` (counted as ``shm_cores``, a frontend's own
  ``--cpu-affinity`` set with them), ``runner_oversubscribed`` (fewer than N + 1),
  ``runner_timings_withheld`` (fewer than N + 2 but N = 1 on exactly 2: fewer than 2,
  or than 4 with a runner and a frontend: the tables leave the timings out) and
  ``runner_timings_marked`` (N = 1 on exactly 2: shown, marked ``°``;
  ``analysis.cores``);
- with ``--cpu-affinity``: ``cpus_allowed``, the CPUs each of the case's processes
  may run on as the kernel reported them after the handshake (``os.sched_getaffinity``
  of each pid), ``scheduler: 0; runner: 1`` (``--tp`` / ``--pp``: ``rank N``), then
  ``frontend: 1`` with ``--frontend``; a runner started by hand with ``bench.py runner
  --cpu-affinity`` reports its own (then recorded with or without the scheduler's
  option); absent otherwise;
- ``decode_token_bytes_per_step`` / ``prompt_chunk_bytes_per_step``: bytes that
  ``new_token_ids`` add to the SchedulerOutput frames over the ``cached`` policy's
  empty list, split into decode tokens (with every request's list header) and
  prompt chunks re-sent during chunked prefill (with the whole lists of requests
  resumed after preemption, prompt and outputs). Exact (``token_bytes_split``): the
  frame's length less the same message re-encoded with those lists emptied, then
  with ``new_token_ids = []``; together, what ``send`` adds to each frame.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ipc_bench.analysis.cores import core_fields, is_withheld
from ipc_bench.analysis.frontend import frontend_figures
from ipc_bench.analysis.pace import (arrival_span_figures, idle_figures,
                                    replay_pace_figures)
from ipc_bench.analysis.soak import rss_summary, stream_summary
from ipc_bench.analysis.stats import percentiles_ms
from ipc_bench.analysis.step_noise import (NOISE_MIN_STEPS, NOISY_STEP_BLOCK_CV,
                                          SKEWED_STEP_RATIO, STEP_BLOCK)
from ipc_bench.analysis.pp import pp_figures
from ipc_bench.analysis.send_cost import (case_off_nominal, emulated_step_warning,
                                          float_or_none)
from ipc_bench.analysis.tp import tp_core_warning, tp_figures
from ipc_bench.analysis.replay_stall import (STALL_BIN_RATIO, stalled_share,
                                             workload_stall_figures)
from ipc_bench.harness.spec import (INPROC, RUNNER_COLUMNS, RUNNER_TIMESTAMP_COLUMNS,
                                    SCHED_COLUMNS, CaseResult)
from ipc_bench.harness.recording import cut_at_max_model_len
from ipc_bench.harness.scenario import OUTPUT_LEN_MEAN, output_len_text
from ipc_bench.harness.trace_checks import more_steps_advice
from ipc_bench.wire.codecs import STATEFUL_CODECS, scheduler_output_codec
from ipc_bench.engine.config import CACHED, DEFAULT_VLLM_LAYOUT, SEND
from ipc_bench.engine.roofline import EMULATED_GPU, load_gpu_figures
from ipc_bench.engine.messages import SchedulerOutput
from ipc_bench.wire.remote import CODE_KEY
from ipc_bench.wire.shm_ring import RING_TRANSPORTS, ring_message_bytes
from ipc_bench.wire.transport import zmtp_frame_bytes, zmtp_handshake_bytes

_COL = {name: i for i, name in enumerate(SCHED_COLUMNS)}


def all_of(n: int, one: str, many: str) -> str:
    """``n`` things named as a whole, in words that fit small counts: ``the only case``
    (1), ``both cases`` (2), ``all 3 cases`` (thousands separated: ``all 1,200 steps``);
    ``one`` and ``many`` are the singular and plural nouns."""
    if n == 1:
        return f"the only {one}"
    return f"both {many}" if n == 2 else f"all {n:,} {many}"


def sched_array(result: CaseResult) -> np.ndarray:
    """``[num_steps, len(SCHED_COLUMNS)]`` int64 array of the scheduler's records."""
    if not result.sched_rows:
        return np.zeros((0, len(SCHED_COLUMNS)), dtype=np.int64)
    return np.asarray(result.sched_rows, dtype=np.int64)


def token_bytes_split(codec_name: str, frames: list[bytes],
                      prompt_lens: dict[str, int],
                      layout: str = DEFAULT_VLLM_LAYOUT) -> tuple[int, int]:
    """Total (decode-token bytes, prompt-chunk bytes) that ``new_token_ids`` add to
    ``frames`` over the ``cached`` policy's empty list (``[]``, PR #20291): together,
    what ``send`` adds to each frame.

    A cached request's slice is a prompt chunk when it starts inside the prompt
    (``num_computed_tokens < num_prompt_tokens``), else decode tokens; a request resumed
    after preemption re-sends prompt + outputs from token 0, all counted as prompt chunk.
    Prompt-chunk bytes are the frame's length less the same message with the prompt
    slices emptied; decode-token bytes are the rest: the decode ids and every
    request's list header (one list per scheduled cached request under ``send``).
    ``layout``: the frames' ``SchedulerOutput`` layout (``config.VLLM_LAYOUTS``; the
    1d37eb37 layout's ``all_token_ids`` are not ``new_token_ids`` and not counted here).
    """
    codec = scheduler_output_codec(codec_name, layout)
    decode_bytes = prompt_bytes = 0
    replace = codec.messages.replace  # msgspec Structs or vLLM-shaped dataclasses
    for frame in frames:
        so: SchedulerOutput = codec.decode(frame)
        cached = so.scheduled_cached_reqs
        if not cached.new_token_ids:
            continue
        is_prompt = [nc < prompt_lens[r] for r, nc in
                     zip(cached.req_ids, cached.num_computed_tokens)]
        no_prompt = [[] if p else ids for ids, p in zip(cached.new_token_ids, is_prompt)]
        n_full = len(frame)
        n_no_prompt = len(codec.encode(replace(so, scheduled_cached_reqs=replace(
            cached, new_token_ids=no_prompt))))
        n_none = len(codec.encode(replace(so, scheduled_cached_reqs=replace(
            cached, new_token_ids=[]))))  # as the cached policy sends it
        prompt_bytes += n_full - n_no_prompt
        decode_bytes += n_no_prompt - n_none
    return decode_bytes, prompt_bytes


def _wire(payload: np.ndarray) -> np.ndarray:
    return payload + np.where(payload <= 255, 2, 9)


def _ring(payload: np.ndarray) -> np.ndarray:
    return np.fromiter(map(ring_message_bytes, payload.tolist()), np.int64, len(payload))


def wire_bytes_per_step(s2r_payload_bytes: np.ndarray, r2s_payload_bytes: np.ndarray,
                        transport: str) -> dict[str, float]:
    """A two-process case's wire bytes per counted step, from its counted steps'
    ``s2r_payload_bytes`` and ``r2s_payload_bytes`` (int64, one per step): the mean of
    each payload with its ZMTP frame head (``sched_to_runner_wire_bytes_per_step``,
    ``runner_to_sched_wire_bytes_per_step``; ``wire.transport.zmtp_frame_bytes``: 2
    bytes up to 255 of payload, else 9), the scheduler -> runner one on a ring
    ``transport`` (``shm*``) the ring's chunk head and payload
    (``shm_ring.ring_message_bytes``). Bytes. ``_wire_bytes`` writes them; the results
    loader checks a summary's against its ``steps.csv`` rows."""
    s2r_wire = _ring if transport in RING_TRANSPORTS else _wire
    return dict(sched_to_runner_wire_bytes_per_step=float(s2r_wire(s2r_payload_bytes).mean()),
                runner_to_sched_wire_bytes_per_step=float(_wire(r2s_payload_bytes).mean()))


def r2s_wire_bytes_total(r2s_payload_bytes: np.ndarray,
                         floor_r2s_payload_bytes: np.ndarray | None = None) -> int:
    """A two-process case's ``r2s_wire_bytes_total``: the ZMTP stream bytes of every
    ``ModelRunnerOutput`` the runner sent, from every step's ``r2s_payload_bytes``
    (int64, warm-up included), each with its frame head (``wire_bytes_per_step``'
    frames), and the floor's replies where it ran (``floor_r2s_payload_bytes``: its
    counted steps', which the floor replays; ``None`` without a floor). Bytes.
    ``_wire_bytes`` writes it; the results loader checks a summary's against its
    ``steps.csv`` rows."""
    total = int(_wire(r2s_payload_bytes).sum())
    if floor_r2s_payload_bytes is not None:
        total += int(_wire(floor_r2s_payload_bytes).sum())
    return total


def _wire_bytes(result: CaseResult, a: np.ndarray, c: np.ndarray) -> dict[str, Any]:
    """ZMTP stream bytes: per counted step, and totals of everything that crossed the
    data sockets (all steps, floor replays of the counted steps, empty phase markers),
    the connection handshakes given apart. With ``--transport shm*`` the scheduler ->
    runner figures are the ring's (``shm_ring.ring_message_bytes``: chunk head and
    payload)."""
    shm = result.spec.transport in RING_TRANSPORTS
    s2r_wire = _ring if shm else _wire
    marker = ring_message_bytes(0) if shm else zmtp_frame_bytes(0)
    s2r, r2s = a[:, _COL["s2r_payload_bytes"]], a[:, _COL["r2s_payload_bytes"]]
    s2r_total = int(s2r_wire(s2r).sum()) + result.s2r_marker_frames * marker
    r2s_total = r2s_wire_bytes_total(
        r2s, c[:, _COL["r2s_payload_bytes"]] if result.floor_step_ns else None)
    if result.floor_step_ns:
        s2r_total += int(s2r_wire(c[:, _COL["s2r_payload_bytes"]]).sum())
    return dict(
        **wire_bytes_per_step(c[:, _COL["s2r_payload_bytes"]], c[:, _COL["r2s_payload_bytes"]],
                              result.spec.transport),
        s2r_wire_bytes_total=s2r_total, r2s_wire_bytes_total=r2s_total,
        zmtp_handshake_bytes={"PUSH": zmtp_handshake_bytes("PUSH"),
                              "PULL": zmtp_handshake_bytes("PULL")},
    )


def is_replay(case: dict[str, Any]) -> bool:
    """Whether the case (a ``summary.json`` case entry, or a ``Results.cases`` row as a
    dict) is a trace replay, whose counted steps vary with the trace's batches: it has
    a ``trace`` label (``trace=azure-conv:300``); steady cases have none. Their block
    CV moves with the workload (``analysis.replay_noise`` measures a replay's machine
    across repetitions). Raises nothing."""
    trace = case.get("trace")
    return isinstance(trace, str) and bool(trace)


def _block_cv(step_ns: np.ndarray) -> float | None:
    """Coefficient of variation of the means of consecutive ``STEP_BLOCK``-step blocks
    (pyperf's values are likewise means over loops); ``None`` under 3 blocks."""
    k = len(step_ns) // STEP_BLOCK
    if k < 3:
        return None
    blocks = step_ns[:k * STEP_BLOCK].reshape(k, STEP_BLOCK).mean(axis=1)
    return float(blocks.std(ddof=1) / blocks.mean())


def _warmup_token_share(a: np.ndarray) -> Optional[float]:
    """The share of all the tokens a case scheduled (``num_scheduled_tokens`` summed over
    every step of ``a``, its ``sched_array``) that its warm-up steps scheduled; ``None``
    without a scheduled token."""
    if not len(a):
        return None
    tokens = a[:, _COL["num_scheduled_tokens"]]
    total = int(tokens.sum())
    if not total:
        return None
    return int(tokens[a[:, _COL["warmup"]] == 1].sum()) / total


def _case_identity(result: CaseResult, a: np.ndarray, counted: np.ndarray) -> dict[str, Any]:
    """The case's identity, labels, outcome and request counts."""
    spec = result.spec
    # With --num-spec-tokens the draft count is also a label (the same value).
    labels = {k: v for k, v in spec.labels.items() if k != "num_spec_tokens"}
    return dict(
        case_id=spec.case_id, scenario=spec.scenario, policy=spec.policy, arm=spec.arm_label,
        codec=spec.codec,
        model=spec.model.name, transport=spec.transport, repetition=spec.repetition,
        **labels,
        workload=spec.workload_key,
        complete=result.error is None, error=result.error,
        num_steps=int(counted.sum()), counted_steps_asked=spec.counted_steps,
        max_steps=spec.max_steps, output_len_mean=spec.output_len_mean,
        num_warmup_steps=int(a[:, _COL["warmup"]].sum()) if len(a) else 0,
        warmup_token_share=_warmup_token_share(a),
        num_total_steps=len(a), wall_s=result.wall_s,
        warmup_pause_s=(None if result.warmup_pause_ns is None
                        else result.warmup_pause_ns / 1e9),
        runner_warmup_collect_s=(None if not result.runner_warmup_collect_ns
                                 else max(result.runner_warmup_collect_ns) / 1e9),
        num_requests=len(result.requests), num_rejected=result.num_rejected,
        num_finished=sum(1 for r in result.requests if r["finish_reason"] == "length"),
        num_cut_at_max_model_len=sum(map(cut_at_max_model_len, result.requests)),
        num_preemptions=sum(r.get("preemptions", 0) for r in result.requests),
        token_digest=result.token_digest, schedule_digest=result.schedule_digest or None,
        runner_device=result.runner_device, no_floor=spec.no_floor,
        input_oracle_interval=(0 if spec.instrumentation == "totals"
                               else spec.input_oracle_interval),
        async_scheduling=spec.async_scheduling,
        async_scheduling_mode=async_scheduling_mode(spec, result.runner_device),
        num_spec_tokens=spec.scheduler.num_spec_tokens,
        vllm_layout=spec.scheduler.vllm_layout,
        spec_acceptance=(spec.model.spec_acceptance if spec.scheduler.num_spec_tokens
                         else None),
    )


#: ``async_scheduling_mode`` values (the summary, the gap tables, the report)
PROCESS_PIPELINING = "process pipelining"
PROCESS_PIPELINING_DRAFTS = "process pipelining (drafts: host path)"
RUNNER_THREAD = "runner thread"
DEVICE_PIPELINING = "device pipelining"
DEVICE_INPUT_CPU = "device-input path (CPU: process overlap only)"
DEVICE_INPUT_NO_LOOKAHEAD = "device-input path (shm ring: no lookahead)"


def async_scheduling_mode(spec, runner_device: Optional[str] = None) -> Optional[str]:
    """What overlaps in an async-scheduling case (``None`` for a synchronous one).

    - ``runner thread``: the single-process case (the runner's worker thread; host
      token buffer, as below).
    - ``process pipelining``: the null, fixed-step and emulated models: the runner
      process serves a queued frame while the scheduler schedules the next, and reads
      step n + 1's input ids from its host token buffer once step n's ids are there.
    - ``process pipelining (drafts: host path)``: the torch model with draft tokens
      (``--num-spec-tokens`` K > 0), two processes: the host path above (step n's
      verification and drafter done and its ids in the host token buffer before step
      n + 1 is prepared); the device-input path takes no drafts.
    - Otherwise the torch model takes the device-input path (``harness.supervisor.
      uses_device_inputs``: step n + 1's placeholder ids filled on the device from step
      n's sampled ids, copied back to the host without blocking, step n + 1 launched
      before step n is finished when its frame is queued; vLLM PR #23569):
      ``device pipelining`` only when the runner's device was CUDA (``runner_device``
      starts with ``cuda``), where the GPU computes step n + 1 while the runner's host
      finishes step n; ``device-input path (CPU: process overlap only)`` on CPU, where
      the same code runs but every op and copy completes as it is called (only the
      scheduler's work on step n + 1 overlaps the runner's step n); ``device-input path
      (shm ring: no lookahead)`` with ``--transport shm`` or ``shm-block``, whose
      runner cannot poll for the next frame and so finishes each step before it reads
      the next.
    """
    if not spec.async_scheduling:
        return None
    if spec.transport == INPROC:
        return RUNNER_THREAD
    if spec.model.name != "torch":
        return PROCESS_PIPELINING
    if spec.scheduler.num_spec_tokens:  # supervisor.uses_device_inputs: the host path
        return PROCESS_PIPELINING_DRAFTS
    if spec.transport.startswith("shm"):  # shm, shm-block
        return DEVICE_INPUT_NO_LOOKAHEAD
    if runner_device and runner_device.startswith("cuda"):
        return DEVICE_PIPELINING
    return DEVICE_INPUT_CPU


def _step_figures(c: np.ndarray) -> dict[str, Any]:
    """Tokens, step times, bytes and scheduler phases over the counted steps ``c``."""
    def mean(col: str) -> float:
        return float(c[:, _COL[col]].mean())

    tokens = int(c[:, _COL["num_output_tokens"]].sum())
    step_ns = c[:, _COL["step_ns"]]
    scheduled = int(c[:, _COL["num_scheduled_tokens"]].sum())
    return dict(
        output_tokens=tokens,
        output_tokens_per_step=tokens / len(c),
        scheduled_tokens_per_step=scheduled / len(c),
        output_tokens_per_s=tokens / (step_ns.sum() / 1e9),
        num_running_mean=mean("num_reqs"),
        step_ns_median=float(np.median(step_ns)), step_ns_mean=float(step_ns.mean()),
        step_ns_block_cv=_block_cv(step_ns),
        **_longest_step(c, step_ns, tokens),
        sched_to_runner_payload_bytes_per_step=mean("s2r_payload_bytes"),
        runner_to_sched_payload_bytes_per_step=mean("r2s_payload_bytes"),
        sched_ns_per_step=mean("sched_ns"),
        sched_build_ns_per_step=mean("build_ns"),
        sched_encode_ns_per_step=mean("encode_ns"),
        sched_send_ns_per_step=mean("send_ns"),
        sched_wait_ns_per_step=mean("wait_ns"),
        sched_decode_ns_per_step=mean("decode_ns"),
        sched_update_ns_per_step=mean("update_ns"),
        sched_cpu_ns_per_step=mean("sched_cpu_ns"),
        sched_gc_collections_per_step=mean("gc_collections"),
        sched_gc_ns_per_step=mean("gc_ns"),
    )


def _spec_figures(c: np.ndarray) -> dict[str, Any]:
    """Speculative decoding over pure-decode counted steps ``c``, where each scheduled
    request feeds one real token and its drafts and samples one target token beside
    its accepted drafts: draft tokens scheduled and accepted per step, and accepted /
    drafted (vLLM's draft acceptance rate). A request that stops on an accepted
    draft keeps only the ids up to its stop, so near the end of requests the count
    is a lower bound. Cases counting every step (mixed prefill) have none of these."""
    tokens = int(c[:, _COL["num_output_tokens"]].sum())
    reqs = int(c[:, _COL["num_reqs"]].sum())
    drafts = int(c[:, _COL["num_scheduled_tokens"]].sum()) - reqs
    return dict(spec_draft_tokens_per_step=drafts / len(c),
                spec_accepted_tokens_per_step=(tokens - reqs) / len(c),
                spec_draft_acceptance_rate=(tokens - reqs) / drafts if drafts > 0 else None)


def _runner_figures(result: CaseResult, a: np.ndarray, c: np.ndarray,
                    out: dict[str, Any]) -> dict[str, Any]:
    """The runner's phases per counted step and both directions summed (``out`` holds
    the scheduler's); empty without a full runner report."""
    runner = result.runner_columns
    if not runner or not all(len(runner[k]) == len(a) for k in RUNNER_COLUMNS):
        return {}
    seqs = c[:, _COL["seq"]]
    fig: dict[str, Any] = {}
    for k in RUNNER_COLUMNS:
        if k in RUNNER_TIMESTAMP_COLUMNS:
            continue
        per_step = k.replace("_collections", "_collections_per_step").replace(
            "_ns", "_ns_per_step")
        fig[per_step] = float(np.asarray(runner[k], dtype=np.int64)[seqs].mean())
    fig["build_ns_per_step"] = out["sched_build_ns_per_step"] + fig["runner_build_ns_per_step"]
    fig["encode_ns_per_step"] = (out["sched_encode_ns_per_step"]
                                 + fig["runner_encode_ns_per_step"])
    fig["decode_ns_per_step"] = (fig["runner_decode_ns_per_step"]
                                 + out["sched_decode_ns_per_step"])
    # The SchedulerOutput's build + encode (scheduler) + decode (runner) per step:
    # where send's extra work lies; the median resists descheduling spikes.
    s2r_ns = (c[:, _COL["build_ns"]] + c[:, _COL["encode_ns"]]
              + np.asarray(runner["runner_decode_ns"], dtype=np.int64)[seqs])
    fig["s2r_build_encode_decode_ns_median"] = float(np.median(s2r_ns))
    # The same path plus the runner's id bookkeeping (update_states writes the ids
    # received under send, write_back those sampled under cached): the policy-dependent
    # work on the step's critical path, whose send - cached nets out cached's writes.
    fig["s2r_net_ns_median"] = float(np.median(
        s2r_ns + np.asarray(runner["runner_update_ns"], dtype=np.int64)[seqs]
        + np.asarray(runner["runner_writeback_ns"], dtype=np.int64)[seqs]))
    # The model's step as the runner timed it (forward + sampling): a fixed-step case
    # compares it with its nominal step (``send_cost.off_nominal_warning``).
    fig["runner_forward_ns_median"] = float(np.median(
        np.asarray(runner["runner_forward_ns"], dtype=np.int64)[seqs]))
    return fig


def shm_cores_figures(result: CaseResult) -> dict[str, Any]:
    """``shm_cores`` and ``shm_oversubscribed`` (module docstring) of a one-runner case
    whose runner spins on the ring (``--transport shm``, no ``--tp`` / ``--pp``: those
    count their readers themselves, ``analysis.tp`` / ``analysis.pp``); ``{}`` for any
    other case or when the cores were not recorded."""
    spec = result.spec
    cores = result.model_info.get("shm_cores")
    if (RING_TRANSPORTS.get(spec.transport) != "spin" or spec.tp is not None
            or spec.pp is not None or cores is None):
        return {}
    return dict(shm_cores=cores, shm_oversubscribed=cores < 2)


def runner_cores_figures(result: CaseResult) -> dict[str, Any]:
    """``runner_readers``, ``runner_cores``, ``runner_oversubscribed``,
    ``runner_timings_withheld`` and ``runner_timings_marked``
    (``analysis.cores.core_fields``) of a case with one runner process on this machine
    (no ``--tp`` / ``--pp``: those count their readers themselves): N = 1, or 2 with
    ``--frontend`` (the frontend reads each step's outputs beside the runner); of the
    single-process case with ``--frontend``, N = 1 (the frontend, busy beside the one
    process as a runner is); ``{}`` for any other case or when the cores were not
    recorded (a single-process case without a frontend, a runner started by hand)."""
    spec = result.spec
    cores = result.model_info.get("runner_cores")
    if spec.tp is not None or spec.pp is not None or cores is None:
        return {}
    n = int(bool(spec.frontend)) + (spec.transport != INPROC)
    return dict(runner_readers=n, **core_fields("runner", n, int(cores)))


def _model_marks(result: CaseResult) -> dict[str, Any]:
    """An emulated case says so: ``emulated`` (True), ``emulated_gpu`` (the GPU whose
    figures the roofline used), ``emulated_preset`` (the model shape whose steps it
    slept, ``--model-preset``), ``gpu_figures`` (``calibrated`` or ``uncalibrated``)
    and those figures (``emulated_memory_bandwidth_bytes_per_s``,
    ``emulated_bf16_flops_per_s``, ``emulated_efficiency``, ``emulated_fixed_step_ns``:
    this checkout's ``gpu_figures.json`` as the summary is written, which the runners
    it spawned slept on, kept with the run when the file changes later); a fixed-step case gives its ``step_wait`` (``sleep`` or
    ``spin``) and its nominal step, ``fixed_step_ms``; ``{}`` for the other models."""
    model = result.spec.model
    if model.name == "fixed-step":
        return dict(step_wait=model.step_wait, fixed_step_ms=float(model.step_time_ms))
    if model.name != "emulated":
        return {}
    gpu = load_gpu_figures(EMULATED_GPU)
    return dict(emulated=True, emulated_gpu=gpu.name, emulated_preset=model.preset,
                gpu_figures=gpu.status,
                emulated_memory_bandwidth_bytes_per_s=gpu.memory_bandwidth_bytes_per_s,
                emulated_bf16_flops_per_s=gpu.bf16_flops_per_s,
                emulated_efficiency=gpu.efficiency,
                emulated_fixed_step_ns=gpu.fixed_step_ns)


def _counted_column(result: CaseResult, a: np.ndarray, c: np.ndarray, name: str
                    ) -> Optional[np.ndarray]:
    """The runner's column ``name`` at the counted steps ``c`` (int64), or ``None`` when
    it is absent or does not have one value per step of ``a``."""
    values = result.runner_columns.get(name)
    if values is None or len(values) != len(a):
        return None
    return np.asarray(values, dtype=np.int64)[c[:, _COL["seq"]]]


def _model_column_figures(result: CaseResult, a: np.ndarray, c: np.ndarray
                          ) -> dict[str, Any]:
    """Figures of the model's own per-step columns over the counted steps; a column the
    runner did not report (CPU, other models) gives no key, never a zero.

    Emulated: ``emulated_step_ns_per_step`` (mean roofline time),
    ``emulated_forward_excess_ns_per_step`` (``runner_forward_ns`` over it: the sleep's
    lateness plus sampling) and ``emulated_context_tokens_per_request_mean`` (tokens:
    the mean, over the counted steps with requests, of a step's
    ``emulated_context_tokens`` over its ``num_reqs``: the mean ``seq_len`` the roofline
    computed that step for; absent for a run before the column). CUDA
    (``engine.cuda_step``): ``gpu_busy_ns_per_step``,
    ``gpu_idle_ns_per_step`` (steps with a previous one), ``host_ns_per_step`` (mean
    ``step_ns - gpu_busy_ns``: a two-process case's whole step, scheduler and IPC
    included), ``host_ns_per_decode_step`` (the same over the counted steps where every
    scheduled request decodes one token; absent when there is none), ``gpu_busy_share``
    (busy over step time) and, beside the steady-state ``output_tokens_per_s``,
    ``run_output_tokens_per_s``: every sampled token over the case's wall time, warm-up
    and start-up steps included. Device-input path (async scheduling, torch model):
    ``runner_lookahead_share``, the share of counted steps whose successor the runner
    launched before it finished them (``RunnerLoop.run_pipelined``). The torch model's
    drafter (speculative decoding): ``draft_ns_per_step``, its mean time per step
    (``runner_writeback_ns`` includes it; ``runner_forward_ns`` is the verification
    forward alone). The torch model's roofline: ``_roofline_figures``.
    """
    def column(name: str) -> Optional[np.ndarray]:
        return _counted_column(result, a, c, name)

    out: dict[str, Any] = {}
    replica = column("replica_schedule_ns"), column("replica_update_ns")
    if replica[0] is not None and replica[1] is not None:  # the replicated codec
        out["replica_scheduler_ns_per_step"] = float((replica[0] + replica[1]).mean())
    emulated = column("emulated_step_ns")
    if emulated is not None:
        out["emulated_step_ns_per_step"] = float(emulated.mean())
        forward = column("runner_forward_ns")
        if forward is not None:
            out["emulated_forward_excess_ns_per_step"] = float((forward - emulated).mean())
    context = column("emulated_context_tokens")
    if context is not None:
        reqs = c[:, _COL["num_reqs"]]
        if (reqs > 0).any():  # the roofline's per-request context: seq_lens' mean
            out["emulated_context_tokens_per_request_mean"] = float(
                (context[reqs > 0] / reqs[reqs > 0]).mean())
    busy = column("gpu_busy_ns")
    if busy is not None:
        step_ns = c[:, _COL["step_ns"]]
        idle = column("gpu_idle_ns")
        out["gpu_busy_ns_per_step"] = float(busy.mean())
        if idle is not None and (idle >= 0).any():
            out["gpu_idle_ns_per_step"] = float(idle[idle >= 0].mean())
        out["host_ns_per_step"] = float((step_ns - busy).mean())
        reqs = c[:, _COL["num_reqs"]]
        decode = (reqs > 0) & (c[:, _COL["num_scheduled_tokens"]] == reqs)
        if decode.any():
            out["host_ns_per_decode_step"] = float((step_ns - busy)[decode].mean())
        out["gpu_busy_share"] = float(busy.sum() / step_ns.sum())
        if result.wall_s:
            out["run_output_tokens_per_s"] = (
                float(a[:, _COL["num_output_tokens"]].sum()) / result.wall_s)
    draft = column("draft_ns")
    if draft is not None:  # the torch model's drafter (speculative decoding)
        out["draft_ns_per_step"] = float(draft.mean())
    ahead = column("runner_lookahead")
    if ahead is not None and len(ahead):
        out["runner_lookahead_share"] = float(ahead.mean())
    out.update(_roofline_figures(result, a, c))
    return out


def _roofline_figures(result: CaseResult, a: np.ndarray, c: np.ndarray) -> dict[str, Any]:
    """The torch model's roofline (``engine.roofline.StepRoofline``) over the counted
    steps; no key where the runner kept none (roofline off, other models).

    ``roofline_figures``: the device figures it was computed on, as measured in the
    runner at start-up (bandwidth, matmul rate, dtype, sizes, provenance).
    ``roofline_ns_per_step``: mean ``roofline_ns``. ``compute_to_roofline_ratio``: the
    median over counted steps with a non-zero roofline of the model's compute time over
    the step's roofline, the compute time being ``gpu_busy_ns`` where the runner
    reported it (CUDA), else ``runner_forward_ns`` (``ModelRunner.sample``: forward and
    sampling, on CPU); ``compute_to_roofline_basis`` names which.
    """
    out: dict[str, Any] = {}
    if result.model_info.get("roofline_figures"):
        out["roofline_figures"] = result.model_info["roofline_figures"]
    roofline = _counted_column(result, a, c, "roofline_ns")
    if roofline is None or len(roofline) == 0:
        return out
    out["roofline_ns_per_step"] = float(roofline.mean())
    for basis in ("gpu_busy_ns", "runner_forward_ns"):
        compute = _counted_column(result, a, c, basis)
        if compute is not None:
            break
    steps = roofline > 0
    if compute is not None and steps.any():
        out["compute_to_roofline_ratio"] = float(np.median(compute[steps] / roofline[steps]))
        out["compute_to_roofline_basis"] = basis
    return out


def _floor_figures(result: CaseResult, c: np.ndarray) -> dict[str, Any]:
    """The floor's step times and the harness's overhead over it; empty without a floor."""
    if not result.floor_step_ns:
        return {}
    return floor_figures(np.asarray(result.floor_step_ns, dtype=np.int64),
                         int(c[:, _COL["num_output_tokens"]].sum()),
                         c[:, _COL["step_ns"]].sum())


def floor_figures(floor_step_ns: np.ndarray, output_tokens: Optional[float] = None,
                  counted_step_ns: Optional[float] = None) -> dict[str, Optional[float]]:
    """A case's floor figures from its floor steps ``floor_step_ns`` (ns, one per
    counted step replayed, at least one): ``floor_step_ns_median`` and
    ``floor_step_ns_mean`` (ns), ``floor_output_tokens_per_s`` (its counted steps'
    ``output_tokens`` over the floor's total time) and ``step_to_floor_ratio`` (its
    counted steps' total time ``counted_step_ns``, ns, over the floor's); each of the
    last two ``None`` when its input is; ``floor_step_ns_block_cv``, the coefficient of
    variation of its ``STEP_BLOCK``-step means (a ratio, as ``step_ns_block_cv`` of the
    case's steps; ``None`` under 3 blocks), which ``floor_noise_warning`` reads.
    ``summarize_case`` writes them; the results loader checks a summary's median, mean,
    tok/s and ratio against its ``floor.csv`` rows."""
    total = floor_step_ns.sum()
    return dict(
        floor_step_ns_median=float(np.median(floor_step_ns)),
        floor_step_ns_mean=float(floor_step_ns.mean()),
        floor_step_ns_block_cv=_block_cv(floor_step_ns),
        floor_output_tokens_per_s=(None if output_tokens is None
                                   else output_tokens / (total / 1e9)),
        step_to_floor_ratio=(None if counted_step_ns is None
                             else float(counted_step_ns / total)),
    )


def _timed_replay_figures(result: CaseResult, out: dict[str, Any],
                          a: np.ndarray) -> dict[str, Any]:
    """Timed replay: the output tokens of every request, warm-up included, over
    ``wall_s``, the wall time from the first arrival (the loop's start: the warm-up's
    time is in it, so its tokens are too) to the last completion, on the replay clock
    (the end-of-warm-up pause, ``warmup_pause_s``, left out; arrival-bound;
    ``row_checks._wall_rate_problem`` recomputes it from ``requests.csv``); not
    ``output_tokens``, which counts the counted steps alone. The busy figure over
    counted steps stays as busy_output_tokens_per_s, absent when no step was counted;
    then the served requests (those that got an output token) over ``wall_s``,
    ``requests_per_s``, and their prompt and output tokens over it,
    ``total_tokens_per_s`` (``served_rates``); then the latencies. Both come from every request, warm-up or not, so they exist
    without counted steps; so do the waiting figures (``waiting_figures``, over every
    step in ``a``, the case's ``sched_array``, warm-up included as in ``wall_s``) and
    the idle time (``pace.idle_figures``)."""
    total = sum(r["num_output_tokens"] for r in result.requests)
    fig: dict[str, Any] = dict(
        output_tokens_per_s=total / result.wall_s if result.wall_s else None)
    if "output_tokens_per_s" in out:
        fig["busy_output_tokens_per_s"] = out["output_tokens_per_s"]
    fig.update(served_rates(result.requests, result.wall_s))
    fig.update(latency_summary(result.requests))
    fig.update(latency_counts(result.requests))
    fig["trace_speedup"] = result.spec.trace_speedup
    fig.update(replay_pace_figures(result.requests, result.wall_s))
    fig.update(waiting_figures(a[:, _COL["num_waiting"]]))
    fig.update(idle_figures(result.idle_ns, result.wall_s))
    return fig


def served_rates(requests: list[dict[str, Any]], wall_s: Optional[float]) -> dict[str, float]:
    """A timed replay's request and total-token rates over its wall time ``wall_s`` (s),
    as vLLM's ``benchmarks/benchmark_serving.py`` reports them ("Request throughput",
    "Total Token throughput"): ``requests_per_s``, the requests of ``requests``
    (``recording.request_record``'s records) that were served, those with an E2E
    (``e2e_s``: they got an output token; a rejected prompt did not), over ``wall_s``;
    ``total_tokens_per_s``, those requests' prompt tokens (``num_prompt_tokens``) and
    output tokens (``num_output_tokens``) over ``wall_s``. Arrival-bound where the
    trace sets the pace, as ``output_tokens_per_s`` is. ``{}`` without a positive
    ``wall_s``."""
    if not wall_s or wall_s <= 0:
        return {}
    served = [r for r in requests if r.get("e2e_s") is not None]
    tokens = sum(r["num_prompt_tokens"] + r["num_output_tokens"] for r in served)
    return dict(requests_per_s=len(served) / wall_s, total_tokens_per_s=tokens / wall_s)


def waiting_figures(num_waiting: np.ndarray) -> dict[str, float]:
    """A timed replay's queueing as its scheduler saw it, from ``num_waiting`` (int,
    one per step of the replay, warm-up included: the steps ``wall_s`` spans; each the
    requests left waiting once that step was scheduled, vLLM's ``len(scheduler.waiting)``
    / ``SchedulerStats.num_waiting_reqs``): ``num_waiting_mean`` (requests, the mean
    over those steps) and ``waiting_step_share`` (the share of them with a request
    waiting, ``num_waiting`` above 0), which ``replay_pace`` reads. ``{}`` without a
    step."""
    return waiting_sums_figures(int(num_waiting.sum()), int((num_waiting > 0).sum()),
                                len(num_waiting))


def waiting_sums_figures(num_waiting_total: int, waiting_steps: int,
                         steps: int) -> dict[str, float]:
    """``waiting_figures`` from running sums over ``steps`` steps, as a streamed case
    (soak, ``harness.recording.StreamStats``) keeps them: ``num_waiting_total`` (the
    steps' ``num_waiting`` summed) and ``waiting_steps`` (the steps with one above 0).
    ``{}`` without a step."""
    if steps == 0:
        return {}
    return dict(num_waiting_mean=num_waiting_total / steps,
                waiting_step_share=waiting_steps / steps)


def _between_steps_ns(result: CaseResult, a: np.ndarray) -> Optional[float]:
    """The scheduler loop's time outside its timed steps, in ns a step: the loop's wall
    time (``loop_ns``) less the ``step_ns`` of its steps (rows from ``--warmup-steps``
    on), over ``loop_steps``: the per-step recording, the input oracle's checks and any
    pause of the process between steps. ``None`` where it says nothing of the harness:
    a timed replay (it waits there for arrivals), steps in flight (``--async-scheduling``,
    ``--pp``: a row's ``step_ns`` runs from the previous row's end) or no loop totals."""
    spec, lt = result.spec, result.loop_totals
    if (spec.trace_speedup is not None or spec.async_scheduling or (spec.pp or 1) > 1
            or not lt.get("loop_steps") or not len(a)):
        return None
    rows = a[a[:, _COL["seq"]] >= spec.warmup_steps]
    if len(rows) != lt["loop_steps"]:
        return None
    return max(0.0, (lt["loop_ns"] - float(rows[:, _COL["step_ns"]].sum())) / len(rows))


#: ``between_steps_warning`` warns when the loop spent more than this share of its time
#: between its timed steps.
BETWEEN_STEPS_SHARE_MAX = 0.3


#: A counted step longer than this many median steps that also holds more than
#: ``STALL_SHARE_MIN`` of the counted steps' time is a stall (``stall_warnings``): the
#: process stopped (SIGSTOP, a debugger) or the machine paused it (a VM's pause, swap).
STALL_MEDIANS = 100
STALL_SHARE_MIN = 0.05
#: What a stall may be, in its warning's words.
STALL_CAUSES = ("the process did not run: stopped, preempted on a busy machine or paused "
                "with its VM")


def _longest_step(c: np.ndarray, step_ns: np.ndarray, tokens: int) -> dict[str, Any]:
    """``step_ns_max``, the longest counted step (ns), its ``seq``
    (``step_ns_max_seq``), and ``output_tokens_per_s_without_longest``: out tok/s over
    the other counted steps (``None`` for a single counted step)."""
    i = int(np.argmax(step_ns))
    rest_ns = float(step_ns.sum() - step_ns[i])
    rest_tokens = tokens - int(c[i, _COL["num_output_tokens"]])
    return dict(step_ns_max=float(step_ns[i]), step_ns_max_seq=int(c[i, _COL["seq"]]),
                output_tokens_per_s_without_longest=(
                    rest_tokens / (rest_ns / 1e9) if len(c) > 1 and rest_ns > 0 else None))


def _longest_gap(rows: np.ndarray) -> dict[str, Any]:
    """``between_steps_ns_max``, the longest time the loop spent between two of its
    timed steps ``rows`` (from ``--warmup-steps`` on: a row's start, ``t_end_ns`` less
    its ``step_ns``, less the previous row's ``t_end_ns``), and the ``seq`` of the step
    after it (``between_steps_ns_max_seq``); nothing under two rows."""
    if len(rows) < 2:
        return {}
    ends = rows[:, _COL["t_end_ns"]]
    gaps = (ends[1:] - rows[1:, _COL["step_ns"]]) - ends[:-1]
    i = int(np.argmax(gaps))
    return dict(between_steps_ns_max=float(max(0, gaps[i])),
                between_steps_ns_max_seq=int(rows[i + 1, _COL["seq"]]))


def stall_warnings(summary: dict[str, Any]) -> list[str]:
    """A line for each stall: the longest counted step (``step_ns_max``) or the longest
    time between two steps (``between_steps_ns_max``) over ``STALL_MEDIANS`` median
    steps and over ``STALL_SHARE_MIN`` of the counted steps' (the loop's) time. A stalled
    step is held by the mean step, out tok/s and the comparisons, whatever the block
    spread says, and its line gives out tok/s without it (a timed replay's: the mean
    step and the latencies, its tokens/s being over wall time); a stall between steps is
    left out of out tok/s, and its line gives the loop's. A trace replay's stalled
    steps, each judged against its workload's median (``replay_stall_warning``), come
    first; where that line is given and its longest stalled step is the longest step,
    the longest step's own line is not (the replay's names it). ``[]`` otherwise (in
    summaries written before these figures, and in a streamed case, ``soak``, which
    keeps no per-step figures)."""
    median, mean = summary.get("step_ns_median"), summary.get("step_ns_mean")
    n, out = summary.get("num_steps") or 0, []
    if not median or not mean or n < 2:
        return out
    stalled = replay_stall_warning(summary)
    if stalled:
        out.append(stalled)
    longest = summary.get("step_ns_max")
    if stalled and summary.get("stalled_step_ns_max_seq") == summary.get("step_ns_max_seq"):
        pass  # the replay's line names the longest step, a stalled one
    elif longest and longest > STALL_MEDIANS * median and longest > STALL_SHARE_MIN * mean * n:
        # a timed replay's tokens/s is over its wall time, which the stall barely moves
        timed = summary.get("trace_speedup") is not None
        without = None if timed else summary.get("output_tokens_per_s_without_longest")
        out.append(
            f"counted step {summary.get('step_ns_max_seq')} (steps.csv seq) took "
            f"{_time_words(longest)}, {longest / median:,.0f}x the median step, "
            f"{_share_words(longest / (mean * n))} of the counted steps' time: a stall ("
            f"{STALL_CAUSES}), which the mean step"
            + (" and the requests' latencies hold" if timed
               else ", out tok/s and the comparisons hold")
            + (f"; out tok/s without it: {without:,.0f}" if without else ""))
    gap, loop = summary.get("between_steps_ns_max"), summary.get("loop_step_ns_mean")
    steps = summary.get("loop_steps") or 0
    if gap and loop and gap > STALL_MEDIANS * median and gap > STALL_SHARE_MIN * loop * steps:
        rate = summary.get("loop_output_tokens_per_s")
        out.append(
            f"the scheduler loop stood still for {_time_words(gap)} before step "
            f"{summary.get('between_steps_ns_max_seq')} (steps.csv seq), "
            f"{_share_words(gap / (loop * steps))} of its time: a stall ({STALL_CAUSES}) "
            "between two steps, which out tok/s, over the steps' time, leaves out"
            + (f"; over the loop's wall time it was {rate:,.0f} tok/s" if rate else ""))
    return out


def replay_stall_warning(summary: dict[str, Any]) -> Optional[str]:
    """The line of a trace replay whose stalled steps (``stalled_steps``: counted steps
    over ``STALL_BIN_RATIO`` times the median step of their workload,
    ``analysis.replay_stall``) hold over ``STALL_SHARE_MIN`` of its counted steps' time
    (``stalled_step_share``): their count and share, the longest of them (``seq``, time,
    over its workload's median) and out tok/s without them (a timed replay's: the mean
    step and the latencies, its tokens/s being over wall time). ``None`` otherwise, in
    a steady case and in summaries written before these figures."""
    count, share = summary.get("stalled_steps"), stalled_share(summary)
    longest, ratio = summary.get("stalled_step_ns_max"), summary.get("stalled_step_ns_max_ratio")
    if not count or share is None or share <= STALL_SHARE_MIN or not longest or not ratio:
        return None
    timed = summary.get("trace_speedup") is not None
    without = None if timed else summary.get("output_tokens_per_s_without_stalled")
    them = "them" if count > 1 else "it"
    return (f"{count:,} counted step{'s' * (count > 1)} took over {STALL_BIN_RATIO}x the "
            "median step of their workload (the counted steps that scheduled as many "
            f"tokens, to within a power of 2), {_share_words(share)} of the counted steps' "
            f"time: {'stalls' if count > 1 else 'a stall'} ({STALL_CAUSES}), which the "
            "mean step" + (" and the requests' latencies hold" if timed
                           else ", out tok/s and the comparisons hold")
            + f"; {'the longest, ' * (count > 1)}step "
            f"{summary.get('stalled_step_ns_max_seq')} (steps.csv seq){',' * (count > 1)} took "
            f"{_time_words(longest)}, {ratio:,.0f}x its workload's median"
            + (f"; out tok/s without {them}: {without:,.0f}" if without else ""))


def _share_words(share: float, least: float = STALL_SHARE_MIN) -> str:
    """``share`` (a ratio over ``least``, the stall lines' ``STALL_SHARE_MIN``) in
    percent for a stall line: whole from 10 % (``43 %``), one decimal under it
    (``5.1 %``), and more where fewer would read as ``least`` or under it
    (``5.004 %``, not ``5.0 %``), so that a share over the rule never reads as equal
    to it."""
    pct, digits = 100 * share, 0 if 100 * share >= 10 else 1
    while float(f"{pct:.{digits}f}") <= 100 * least and digits < 9:
        digits += 1
    return f"{pct:.{digits}f} %"


def _time_words(ns: float) -> str:
    """``6.02 s``, ``41.3 ms``, ``812.0 µs``."""
    if ns >= 1e9:
        return f"{ns / 1e9:,.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:,.1f} ms"
    return f"{ns / 1e3:,.1f} µs"


def between_steps_warning(summary: dict[str, Any]) -> Optional[str]:
    """One line when the scheduler loop spent more than ``BETWEEN_STEPS_SHARE_MAX`` of
    its wall time between its timed steps (``between_steps_ns_per_step``): the output
    tokens/s over step time, which leaves that out, then reads well above the loop's
    (``loop_output_tokens_per_s``, given); a process paused between steps on a busy
    machine, usually. ``None`` otherwise."""
    between, loop = summary.get("between_steps_ns_per_step"), summary.get("loop_step_ns_mean")
    if not between or not loop or between / loop <= BETWEEN_STEPS_SHARE_MAX:
        return None
    rate = summary.get("loop_output_tokens_per_s")
    return (f"the scheduler loop spent {100 * between / loop:.0f} % of its time between "
            f"its timed steps ({between / 1e3:,.1f} µs a step: the process paused, or the "
            "per-step recording ran long; the machine may be busy): out tok/s, over the "
            "steps' time, leaves that out"
            + (f"; over the loop's wall time it was {rate:,.0f} tok/s" if rate else ""))


def summarize_case(result: CaseResult) -> dict[str, Any]:
    """One ``summary.json`` case entry (see the module docstring for definitions)."""
    spec = result.spec
    a = sched_array(result)
    counted = a[:, _COL["counted"]] == 1 if len(a) else np.zeros(0, dtype=bool)
    c = a[counted]
    out = _case_identity(result, a, counted)
    out.update(_model_marks(result))
    out.update(shm_cores_figures(result))
    out.update(runner_cores_figures(result))
    if result.model_info.get(CODE_KEY):  # a runner started by hand: the code it ran
        out["runner_code"] = str(result.model_info[CODE_KEY])
    if result.cpus_allowed:
        out["cpus_allowed"] = "; ".join(f"{k}: {v}" for k, v in result.cpus_allowed.items())
    if result.failed_step is not None or result.error is not None:
        out["failed_step"] = result.failed_step
    if result.floor_interrupted:  # finished, its floor cut short by a signal: no floor
        out["floor_interrupted"] = True
    if result.report_interrupted:  # finished, floor and all: no runner columns
        out["report_interrupted"] = True
    if result.floor_failed is not None:  # finished, its floor cut short by the runner
        out["floor_failed"] = result.floor_failed
    if result.report_failed is not None:  # finished, the runner's report lost
        out["report_failed"] = result.report_failed
    if result.floor_unwritten is not None:  # finished, its floor's rows not written
        out["floor_unwritten"] = result.floor_unwritten
    if result.rss_samples:
        out.update(rss_summary(result.rss_samples))
    if result.stream_stats is not None:
        return _summarize_streamed(result, out)
    lt = result.loop_totals
    if lt.get("loop_steps"):
        # Whole-loop figures, the same for both instrumentation modes: what the
        # per-step recording costs is the ratio of loop_step_ns_mean between them.
        out.update(instrumentation=spec.instrumentation,
                   loop_steps=lt["loop_steps"],
                   loop_step_ns_mean=lt["loop_ns"] / lt["loop_steps"],
                   loop_output_tokens_per_s=lt["loop_output_tokens"] / (lt["loop_ns"] / 1e9))
        between = _between_steps_ns(result, a)
        if between is not None:
            out["between_steps_ns_per_step"] = between
            out.update(_longest_gap(a[a[:, _COL["seq"]] >= spec.warmup_steps]))
    if len(c) == 0:  # per-step figures absent (not 0); noise_warnings says why
        if spec.trace_speedup is not None:
            out.update(_timed_replay_figures(result, out, a))
        return out
    if spec.transport != INPROC:
        out.update(_wire_bytes(result, a, c))
    out.update(_step_figures(c))
    if is_replay(out):  # its steps change with the trace: each judged by its workload's
        out.update(workload_stall_figures(*(c[:, _COL[k]] for k in (
            "num_scheduled_tokens", "step_ns", "seq", "num_output_tokens"))))
    if spec.scheduler.num_spec_tokens and spec.count == "decode_only":
        out.update(_spec_figures(c))
    out.update(_runner_figures(result, a, c, out))
    out.update(_model_column_figures(result, a, c))
    out.update(_floor_figures(result, c))
    out.update(result.token_bytes)
    out.update(_breakdown_coverage(result, a, counted))
    out.update(runner_gap_figures(result.runner_columns, counted))
    out.update(frontend_figures(result, c[:, _COL["seq"]], out))
    if spec.tp is not None:
        out.update(tp_figures(result, c))
    if spec.pp is not None:
        out.update(pp_figures(result, c))
    if spec.trace_speedup is not None:
        out.update(_timed_replay_figures(result, out, a))
    return out


def _summarize_streamed(result: CaseResult, out: dict[str, Any]) -> dict[str, Any]:
    """Summary of a streamed case (``CaseSpec.stream``): its rows left memory as it
    ran, so the figures come from ``harness.recording.StreamStats``'s running sums; no medians,
    no runner columns, no floor. Timed replays: ``output_tokens_per_s`` over wall time
    and the figures that label the pace (``pace.replay_pace``) as a replay's
    (``_timed_replay_figures``): ``last_arrival_s``, ``arrival_span_share``,
    ``num_waiting_mean`` and ``waiting_step_share`` over every step, warm-up included,
    from the sums ``StreamStats`` keeps, and ``idle_s``, ``idle_share``."""
    stats = result.stream_stats
    out.update(stream_summary(stats))
    out["num_rejected"] = result.num_rejected
    if result.spec.trace_speedup is not None:
        out["output_tokens_per_s"] = (stats.output_tokens_all / result.wall_s
                                      if result.wall_s else None)
        out["trace_speedup"] = result.spec.trace_speedup
        out.update(arrival_span_figures(stats.last_arrival_s, result.wall_s))
        out.update(waiting_sums_figures(stats.num_waiting_total, stats.num_waiting_steps,
                                        stats.num_total_steps))
        out.update(idle_figures(result.idle_ns, result.wall_s))
    return out


def runner_gap_figures(runner: dict[str, Any], counted: np.ndarray) -> dict[str, float]:
    """The runner's idle time between model executions: for each counted step n > 0,
    ``gap[n] = forward_start[n] - (forward_start[n - 1] + forward[n - 1])`` (ns, from
    the end of step n - 1's forward + sampling to the start of step n's) and its share
    of the runner's step, ``gap[n] / (forward_start[n] - forward_start[n - 1])``.

    ``runner``: the runner's columns (``runner_forward_start_ns``, ``runner_forward_ns``,
    one value per step); ``counted``: bool ``[num_steps]``. Returns
    ``runner_gap_count`` (the counted steps the figures are over), ``runner_gap_ns_median`` / ``_p99`` / ``_mean``, ``runner_gap_share_median`` /
    ``_p99``, ``runner_gap_share`` (total gap over total runner step time) and
    ``runner_step_ns_median`` (the runner's step the shares divide by, forward start to
    forward start, ns); ``{}``
    when the columns are missing, of another length, or no counted step has a
    predecessor with a positive period."""
    start = runner.get("runner_forward_start_ns")
    forward = runner.get("runner_forward_ns")
    n = len(counted)
    if start is None or forward is None or len(start) != n or len(forward) != n or n < 2:
        return {}
    start = np.asarray(start, dtype=np.int64)
    forward = np.asarray(forward, dtype=np.int64)
    period = np.diff(start)
    gap = period - forward[:-1]
    mask = counted[1:] & (period > 0)
    if not mask.any():
        return {}
    gap, period = gap[mask], period[mask]
    share = gap / period
    return dict(runner_gap_count=int(len(gap)), runner_gap_ns_median=float(np.median(gap)),
                runner_gap_ns_p99=float(np.percentile(gap, 99)),
                runner_gap_ns_mean=float(gap.mean()),
                runner_gap_share_median=float(np.median(share)),
                runner_gap_share_p99=float(np.percentile(share, 99)),
                runner_gap_share=float(gap.sum() / period.sum()),
                runner_step_ns_median=float(np.median(period)))


SCHED_PARTS = ("sched_ns", "build_ns", "encode_ns", "send_ns", "wait_ns", "decode_ns",
               "update_ns")
RUNNER_PARTS = ("runner_idle_ns", "runner_decode_ns", "runner_update_ns", "runner_prepare_ns",
                "runner_forward_ns", "runner_writeback_ns", "runner_build_ns",
                "runner_encode_ns", "runner_send_ns")


def _breakdown_coverage(result: CaseResult, a: np.ndarray, counted: np.ndarray) -> dict:
    """Share of each side's measured step that its named parts account for.

    Scheduler: parts / ``step_ns``. Runner: parts / the time from the start of one
    wait to the start of the next (``runner_t0_ns`` differences), over counted steps
    that have a successor.
    """
    out: dict[str, float] = {}
    c = a[counted]
    parts = sum(c[:, _COL[k]] for k in SCHED_PARTS)
    out["sched_breakdown_coverage"] = float(parts.sum() / c[:, _COL["step_ns"]].sum())
    runner = result.runner_columns
    t0 = np.asarray(runner.get("runner_t0_ns", []), dtype=np.int64)
    if len(t0) == len(a) and len(a) > 1 and t0.any():
        period = np.diff(t0)
        rparts = sum(np.asarray(runner[k], dtype=np.int64)[:-1] for k in RUNNER_PARTS)
        mask = counted[:-1]
        if mask.any():
            out["runner_breakdown_coverage"] = float(rparts[mask].sum() / period[mask].sum())
    return out


def latency_summary(requests: list[dict[str, Any]]) -> dict[str, float]:
    """``ttft|tpot|itl|e2e_ms_mean|_p50|_p90|_p99`` (ms) over the request records of a
    timed replay (``recording.request_record``: ``ttft_s``, ``tpot_s``, ``e2e_s``,
    ``itl_s``, seconds); a latency no request has is left out.

    As vLLM's serving benchmark (benchmarks/benchmark_serving.py,
    ``metrics.LATENCY_MEANINGS``): TTFT, E2E and TPOT = (E2E - TTFT) / (n - 1) per
    request (one-token requests have no TPOT), then their mean and percentiles over
    requests; ITL over every gap between two consecutive steps that gave a request
    tokens (one step's tokens are one streamed chunk), all requests' gaps pooled. So
    ``tpot_ms_mean`` weighs each request the same and ``itl_ms_mean`` each gap: a
    request of n tokens counts n - 1 times in it without drafts, fewer with them.
    """
    ttft = [r["ttft_s"] for r in requests if r.get("ttft_s") is not None]
    tpot = [r["tpot_s"] for r in requests if r.get("tpot_s") is not None]
    e2e = [r["e2e_s"] for r in requests if r.get("e2e_s") is not None]
    itl = [x for r in requests for x in r.get("itl_s") or ()]
    out: dict[str, float] = {}
    for name, values in (("ttft", ttft), ("tpot", tpot), ("itl", itl), ("e2e", e2e)):
        out.update(percentiles_ms(values, name))
    return out


def latency_counts(requests: list[dict[str, Any]]) -> dict[str, int]:
    """``ttft|tpot|itl|e2e_count``: how many values each latency of ``latency_summary``
    is over (requests with a TTFT or an E2E; with a TPOT, those of two output tokens or
    more; ITL gaps, every request's pooled), so that a reader can tell a p99 over 100
    or fewer values, which lies between the two largest (``tables.p99_note``); a
    latency no request has is left out, as its figures are."""
    counts = {name: sum(1 for r in requests if r.get(f"{name}_s") is not None)
              for name in ("ttft", "tpot", "e2e")}
    counts["itl"] = sum(len(r.get("itl_s") or ()) for r in requests)
    return {f"{name}_count": counts[name] for name in ("ttft", "tpot", "itl", "e2e")
            if counts[name]}


def slots_token_bytes(frames: list[bytes]) -> int:
    """Bytes of the ``tokens`` arrays of slots frames: 4 per id, all counted as decode
    tokens (telling prompt chunks apart needs the runner's slot table)."""
    from ipc_bench.wire.slots import SlotsStep, unpack_frame
    import msgspec
    decoder = msgspec.msgpack.Decoder(SlotsStep)
    total = 0
    for frame in frames:
        msg, oob = unpack_frame(frame, decoder)
        t = msg.tokens
        total += len(t) if type(t) is bytes else 4 * len(oob[t])
    return total


def attach_token_bytes(result: CaseResult) -> None:
    """Fill ``result.token_bytes`` from its recorded frames (send policy only)."""
    frames = result.s2r_frames
    n = int((sched_array(result)[:, _COL["counted"]] == 1).sum()) if result.sched_rows else 0
    if result.spec.policy != SEND or not frames or n == 0 or result.spec.transport == INPROC:
        result.token_bytes = dict(decode_token_bytes_per_step=0.0,
                                  prompt_chunk_bytes_per_step=0.0)
        return
    if result.spec.codec == "replicated":  # the replica has every token: none travels
        decode_b, prompt_b = 0, 0
    elif result.spec.codec in STATEFUL_CODECS:
        decode_b, prompt_b = slots_token_bytes(frames), 0
    else:
        decode_b, prompt_b = token_bytes_split(result.spec.codec, frames,
                                               result.prompt_lens,
                                               result.spec.scheduler.vllm_layout)
    result.token_bytes = dict(decode_token_bytes_per_step=decode_b / n,
                              prompt_chunk_bytes_per_step=prompt_b / n)


def check_digests(summaries: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The token oracle across cases: ``(problems, notes)``, one line each.

    Complete cases of one workload (scenario and labels) are compared only when their
    ``schedule_digest`` is equal (``harness.oracle.ScheduleDigest``: the same batches
    at every step), since only then must their token streams be bitwise equal; a
    group of such cases that disagree on ``token_digest`` is a problem. Where a
    workload's cases ran different schedules (timed replays), or a case has no schedule
    digest (the bare loop of ``instrumentation == "totals"`` keeps none), the note says
    which token streams were not compared, except between cases whose streams cannot
    depend on the schedule (``_row_only_drained``: a model of ``ROW_ONLY_MODELS``, every
    request finished), which are compared across schedules. Each complete summary gets
    ``token_streams_compared_with`` and ``token_streams_not_compared_with`` (case ids).
    ``digest_disagreements`` gives the problems with the case ids of each digest.
    """
    found, notes = digest_disagreements(summaries)
    return [line for line, _ in found], notes


def digest_disagreements(summaries: list[dict[str, Any]]
                         ) -> tuple[list[tuple[str, dict[str, list[str]]]], list[str]]:
    """``check_digests``'s oracle: ``(found, notes)``, ``found`` one
    ``(problem line, {token_digest: [case_id, ...]})`` per group of compared cases that
    disagree (the cases of each digest, in ``summaries``' order), ``notes`` its notes.
    Sets each complete summary's ``token_streams_compared_with`` and
    ``token_streams_not_compared_with`` as ``check_digests`` says."""
    by_key: dict[tuple, dict[Any, list[dict[str, Any]]]] = {}
    for s in summaries:
        if s.get("complete"):
            by_key.setdefault((s["scenario"], s["workload"]), {}).setdefault(
                s.get("schedule_digest"), []).append(s)
    found, notes = [], []
    for (scenario, workload), groups in by_key.items():
        where = f"{scenario} [{workload}]"
        for schedule, cases in groups.items():
            for s in cases:
                s["token_streams_compared_with"] = [
                    c["case_id"] for c in cases if c is not s] if schedule else []
                s["token_streams_not_compared_with"] = [
                    c["case_id"] for sch, cs in groups.items() for c in cs
                    if c is not s and not (schedule and sch == schedule)]
            digests: dict[str, list[str]] = {}
            for s in cases:
                digests.setdefault(s["token_digest"], []).append(s["case_id"])
            if schedule and len(digests) > 1:
                parts = "; ".join(f"{d[:12]}: {', '.join(ids)}" for d, ids in digests.items())
                found.append((f"token streams differ in {where}: {parts}", digests))
        drained = _row_only_drained(groups)
        if drained:
            found.extend(_compare_across_schedules(where, drained))
            groups = {k: [c for c in v if c not in drained] for k, v in groups.items()}
            groups = {k: v for k, v in groups.items() if v}
        notes.extend(_not_compared_notes(where, groups))
    return found, notes


#: Models whose every token is computed from its request's own row (a hash of its last
#: tokens and position: ``engine.models``), so a request's stream does not depend on
#: the batches it ran in.
ROW_ONLY_MODELS = ("null", "fixed-step", "emulated")


def _row_only_drained(groups: dict[Any, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The cases of one workload whose token streams must be equal whatever their
    schedules: a ``ROW_ONLY_MODELS`` model, every request finished or rejected (none
    cut short by ``max_steps``), a schedule digest; ``[]`` unless they span two or
    more schedules (equal schedules are compared anyway)."""
    cases = [s for schedule, cs in groups.items() if schedule for s in cs
             if s.get("model") in ROW_ONLY_MODELS and s.get("num_requests")
             and (s.get("num_finished") or 0) + (s.get("num_rejected") or 0)
             == s["num_requests"]]
    return cases if len({s["schedule_digest"] for s in cases}) > 1 else []


def _compare_across_schedules(where: str, cases: list[dict[str, Any]]
                              ) -> list[tuple[str, dict[str, list[str]]]]:
    """``check_digests`` for ``_row_only_drained`` cases: each is compared with all the
    others (its ``token_streams_*`` fields say so); one problem line, with the case ids
    of each digest (``digest_disagreements``), if they differ. Async scheduling and
    timed replays change the batches, not such a stream."""
    ids = {s["case_id"] for s in cases}
    for s in cases:
        s["token_streams_compared_with"] = sorted(ids - {s["case_id"]})
        s["token_streams_not_compared_with"] = [
            c for c in s["token_streams_not_compared_with"] if c not in ids]
    digests: dict[str, list[str]] = {}
    for s in cases:
        digests.setdefault(s["token_digest"], []).append(s["case_id"])
    if len(digests) < 2:
        return []
    parts = "; ".join(f"{d[:12]}: {', '.join(c)}" for d, c in digests.items())
    return [(f"token streams differ in {where} (every request finished and the model "
             f"computes each token from its request's row, so the schedule cannot change "
             f"them): {parts}", digests)]


def no_request_served(summaries: list[dict[str, Any]]) -> list[str]:
    """One problem line per workload (scenario and labels) whose complete cases all
    rejected every request on arrival (``num_rejected == num_requests > 0``: a prompt
    of ``max_model_len`` tokens or more, or more KV blocks than the cache has), so
    they measured nothing; empty when some request was served."""
    by_key: dict[tuple, list[dict[str, Any]]] = {}
    for s in summaries:
        if s.get("complete"):
            by_key.setdefault((s["scenario"], s["workload"]), []).append(s)
    problems = []
    for (scenario, workload), cases in by_key.items():
        total = max((s.get("num_requests") or 0) for s in cases)
        if total and all(s.get("num_rejected") == s.get("num_requests") for s in cases):
            who = ("the only one was" if total == 1 else "both were" if total == 2
                   else f"all {total} were")
            problems.append(f"no request was served in {scenario} [{workload}]: {who} "
                            "rejected on arrival (prompt >= max_model_len, or more KV "
                            "blocks than the cache has)")
    return problems


def no_step_counted(summaries: list[dict[str, Any]],
                    warmup_steps: Optional[dict[str, int]] = None) -> list[str]:
    """One problem line per complete case that counted no step, so that its per-step
    figures are absent (``num_steps == 0``; not a bare-loop ``totals`` case, which keeps
    no per-step rows by design, nor one whose every request was rejected:
    ``no_request_served`` says that, nor a timed replay, whose latencies and wall-time
    tokens/s cover every request whatever was counted: its warning says it):
    ``CASE counted no step: all 47 steps fell in the warm-up of 50 steps; ...`` naming
    the ``--warmup-steps`` that would count some.
    ``warmup_steps``: each case's warm-up as set (``case_id`` -> steps); a case not in
    it is said to have had its warm-up, of unstated length."""
    problems = []
    warmup_steps = warmup_steps or {}
    for s in summaries:
        if (not s.get("complete") or s.get("num_steps")
                or s.get("instrumentation") == "totals"
                or s.get("trace_speedup") is not None
                or 0 < (s.get("num_requests") or 0) == s.get("num_rejected")):
            continue
        total = s.get("num_total_steps") or 0
        warm = s.get("num_warmup_steps") or 0
        if total and warm >= total:
            of = warmup_steps.get(s["case_id"])
            of = "" if of is None else f" of {of:,} step{'' if of == 1 else 's'}"
            why = (f"{all_of(total, 'step', 'steps')} fell in the warm-up{of}; its per-step "
                   f"figures are absent: {more_steps_advice(total, None)}")
        else:
            why = (f"{total:,} steps, {warm:,} in the warm-up, none of the rest of the kind "
                   "this scenario counts; its per-step figures are absent")
            if s.get("max_steps") and total >= s["max_steps"]:
                why += ": " + stopped_at_limit(s["max_steps"], s.get("output_len_mean"))
        problems.append(f"{s['case_id']} counted no step: {why}")
    return problems


def _not_compared_notes(where: str, groups: dict[Any, list[dict[str, Any]]]) -> list[str]:
    """The notes of one workload's schedule groups (``check_digests``)."""
    notes = []
    if None in groups:
        bare = [s for s in groups[None] if s.get("instrumentation") == "totals"]
        if bare:
            notes.append(f"token streams not compared in {where} for the {len(bare)} "
                         "bare-loop case(s) (instrumentation totals): they keep no schedule "
                         "digest, by design")
        ids = ", ".join(s["case_id"] for s in groups[None] if s not in bare)
        if ids:
            notes.append(f"token streams not compared in {where}: no schedule digest for "
                         f"{ids}")
    known = [[s["case_id"] for s in cases] for schedule, cases in groups.items() if schedule]
    if len(known) > 1:
        parts = " and ".join(f"({', '.join(ids)})" if len(ids) > 1 else ids[0]
                             for ids in known)
        notes.append(f"token streams not compared in {where}: schedules differ between "
                     f"{parts}")
    return notes


def stopped_at_limit(max_steps: int, output_len_mean: Optional[float] = None) -> str:
    """Why a steady case counted fewer steps than ``--steps`` asked, and what to change:
    it reached its cap of ``max_steps`` steps in all (``scenario.steady_max_steps``:
    the warm-up, the first prompts' prefill, the counted steps and twice the mixed
    steps a simulation of its schedule finds, ``harness.steady_steps``). Outputs
    average ``output_len_mean`` tokens (the case's workload's; ``None``, a summary
    that does not record it: the default workload's 1,280, ``STEADY_OUTPUT_LEN_RANGE``):
    a batch of thousands finishes
    requests at nearly every step, so nearly every step is mixed (``bench.py`` refuses
    such a case up front: ``scenario.check_steady_steps``); a run with drafts, whose
    accepted tokens the simulation takes at their mean, may still reach it."""
    mean = output_len_text(OUTPUT_LEN_MEAN if output_len_mean is None else output_len_mean)
    return (f"the case stopped at its limit of {max_steps:,} steps in all, the others "
            f"mixed steps (the first prompts prefilling, replacements prefilling, "
            f"preemptions); raise --max-num-batched-tokens (the prompts prefill in fewer "
            f"steps) or --warmup-steps (each warm-up step raises the limit by one), or "
            f"lower --num-running (B requests see about B / {mean} finishes a step, and "
            f"the step after one prefills its replacement)")


def no_counted_steps_warning(summary: dict[str, Any]) -> str:
    """The line for a case that counted no step: its per-step figures (tok/s over
    counted steps, bytes, times) are absent, not 0. When every step fell in the
    warm-up it names ``--warmup-steps`` and a value that leaves half the steps."""
    total = summary.get("num_total_steps") or 0
    warm = summary.get("num_warmup_steps") or 0
    timed = " (the latencies and tok/s over wall time cover every request)" if (
        summary.get("trace_speedup") is not None) else ""
    if total and warm >= total:
        return (f"{all_of(total, 'step', 'steps')} fell in the warm-up, so no step was counted and the "
                f"per-step figures are absent{timed}: {more_steps_advice(total, None)}")
    return (f"no step was counted ({total} steps, {warm} in the warm-up, none of the rest "
            f"of the kind this scenario counts): the per-step figures are absent{timed}")


#: ``warmup_tokens_warning`` warns when a replay's warm-up steps scheduled more than
#: this share of all its tokens.
WARMUP_TOKEN_SHARE_MAX = 0.5


def warmup_tokens_warning(summary: dict[str, Any]) -> Optional[str]:
    """One line when a trace replay's case (a ``trace`` label: the timed and logical
    replays, soak) with counted steps had more than ``WARMUP_TOKEN_SHARE_MAX`` of the
    tokens it scheduled in its warm-up (``warmup_token_share``): its per-step bytes,
    times and busy tok/s, over counted steps, leave most of its prefill out, while a
    timed replay's latencies and wall tok/s count it (e.g. 60 conversation requests at 1000x: 50
    warm-up steps of about 900 tokens each, 14 a counted step after them). ``None``
    otherwise; a steady case's warm-up holds its prefill by design (it counts decode
    steps)."""
    share = summary.get("warmup_token_share")
    if (share is None or share <= WARMUP_TOKEN_SHARE_MAX or not summary.get("num_steps")
            or not str(summary.get("workload", "")).startswith("trace=")):
        return None
    left_out = ("the per-step bytes and times, over counted steps, leave them out, while "
                "the latencies and tok/s (wall) count them"
                if summary.get("trace_speedup") is not None else
                "the per-step bytes, times and tok/s, over counted steps, leave them out")
    return (f"the {summary.get('num_warmup_steps')} warm-up steps scheduled "
            f"{100 * share:.0f} % of the replay's tokens (most of its prefill): {left_out}; "
            "lower --warmup-steps to count them")


#: ``running_shortfall_warning`` warns when a steady case's mean running requests per
#: counted step fall more than this share below the number asked.
RUNNING_SHORTFALL = 0.05


def running_shortfall_warning(summary: dict[str, Any]) -> Optional[str]:
    """One line when a steady case (a ``num_running`` label: B asked for) scheduled on
    average more than ``RUNNING_SHORTFALL`` fewer requests per counted step
    (``num_running_mean``) than B, or than B / N with ``--pp`` N (each step one of N
    micro-batches), whatever the cause (a KV cache that preempts, a token budget, a
    bug); else ``None``, also for a case without counted steps or a batch label."""
    asked, ran = summary.get("num_running"), summary.get("num_running_mean")
    if not isinstance(asked, int) or ran is None:
        return None
    pp = summary.get("pp") or 1
    expected = asked / pp
    if ran >= expected * (1 - RUNNING_SHORTFALL):
        return None
    short = f"{(1 - ran / expected) * 100:.1f} % fewer than"
    if pp > 1:
        short += f" the {expected:g} per micro-batch of --num-running {asked} with --pp {pp}"
    else:
        short += f" --num-running {asked}"
    preempted = summary.get("num_preemptions") or 0
    why = f" ({preempted:,} preemptions)" if preempted else ""
    return (f"{ran:.1f} requests ran per counted step on average, {short}{why}: these "
            f"figures are not those of a batch of {asked}")


def floor_below_one_warning(summary: dict[str, Any]) -> str | None:
    """The warning of a case whose ``step_to_floor_ratio`` (``x floor``) is below 1:
    the floor, the same recorded messages exchanged bare (less work), took longer
    than the case, so that case's overhead over the floor is noise (for an async
    case: the floor replays its frames one at a time while the case overlapped its
    steps, so it is no overhead figure at all); ``None`` at 1 or above, or without
    a floor."""
    ratio = summary.get("step_to_floor_ratio")
    if ratio is None or ratio != ratio or ratio >= 1:
        return None
    if summary.get("async_scheduling"):
        return (f"x floor {ratio:.2f}: the floor replays the frames one at a time while "
                "this async case overlapped its steps, so x floor is not the harness's "
                "overhead here")
    return (f"the floor (the same messages exchanged bare, less work) ran slower than the "
            f"case (x floor {ratio:.2f}, below 1): the machine's noise outweighed what "
            "the harness's logic adds, so this case's overhead over the floor is noise")


#: ``floor_noise_warning`` warns when the standard deviation of a case's 50-step mean
#: floor step times (``floor_step_ns_block_cv``) exceeds this share of their mean: the
#: threshold the step times' warning applies (pyperf's 10 %), so that "noisy" means the
#: same for both. The floor replays the same recorded frames one after the other with no
#: other work, so its block means should barely move; when they do, the machine's noise
#: moved them, and the floor's median, its tok/s and the case's ``x floor`` carry it.
NOISY_FLOOR_BLOCK_CV = 0.10


#: How ``floor_noise_warning`` ends: what a noisy floor makes less certain (the report
#: tells a case whose only warnings end so from one whose steps are noisy).
FLOOR_NOISE_WORDS = "the floor tok/s and x floor with it"


#: What the warning of a case whose floor replay was cut short (interrupted, or the
#: runner failed while it ran: ``cli.execute``) says is absent; the report tells such a
#: case, whose step times are as measured, from one whose steps are noisy.
FLOOR_ABSENT_WORDS = "the floor's figures (floor tok/s, x floor) are absent"

#: How the warning of a finished case whose floor rows floor.csv could not take
#: (``cli.execute``: a full disk, a file size limit) begins; the report counts such a
#: case apart (its floor was replayed whole, its rows lost to the write).
FLOOR_UNWRITTEN_WORDS = "floor.csv could not take the floor's rows"

#: Fewer counted steps than this make a case's figures rough (``noise_warnings``).
MIN_STEPS = 100
#: How the warning of a case of fewer counted steps than ``MIN_STEPS`` ends (the report
#: tells its findings' verdicts over such cases apart).
ROUGH_WORDS = "figures are rough"
#: What the warning of a steady case of fewer counted steps than ``NOISE_MIN_STEPS``
#: says is missing.
UNMEASURED_WORDS = "step-time noise not measured"




def skewed_steps_warning(summary: dict[str, Any]) -> str | None:
    """The warning of a case of ``NOISE_MIN_STEPS`` (150) counted steps or more, not a
    trace replay (its steps change with the trace: ``replay_stall`` judges them) nor a
    bare loop, whose mean step (``step_ns_mean``, ns) is over ``SKEWED_STEP_RATIO``
    times its median (``step_ns_median``): ``the mean step is 1.97x the median (462.9
    against 234.9 µs, > 1.5x): long steps spread through the case raise its mean and
    lower its tok/s: the machine may be noisy``. The ratio is printed with as many decimals (2 to 5) as it takes to read
    above the limit. ``None`` otherwise, or without both figures (a pandas record's
    NaN). Raises nothing. (A shorter case's ratio is in ``short_case_warning``.)"""
    n = summary.get("num_steps") or 0
    if is_replay(summary) or summary.get("instrumentation") == "totals" \
            or n < NOISE_MIN_STEPS:
        return None
    mean = float_or_none(summary.get("step_ns_mean"))
    median = float_or_none(summary.get("step_ns_median"))
    if not mean or not median or mean <= SKEWED_STEP_RATIO * median:
        return None
    shown = _skew_shown(mean / median)
    return (f"the mean step is {shown}x the median ({mean / 1e3:,.1f} against "
            f"{median / 1e3:,.1f} µs, > {SKEWED_STEP_RATIO:g}x): long steps spread through "
            "the case raise its mean and lower its tok/s: the machine may be noisy")


def _skew_shown(ratio: float) -> str:
    """``ratio`` (over ``SKEWED_STEP_RATIO``) with as many decimals, 2 to 5, as it takes
    to read above it: ``1.97``, ``1.50001``."""
    return next((t for d in range(2, 6) if float(t := f"{ratio:.{d}f}") > SKEWED_STEP_RATIO),
                f"{ratio:.5f}")


def step_spread_warnings(summary: dict[str, Any]) -> list[str]:
    """The "may be noisy" warnings of a case's step times (part of ``noise_warnings``):
    the standard deviation of its ``STEP_BLOCK``-step mean step times over
    ``NOISY_STEP_BLOCK_CV`` of their mean (``step_ns_block_cv``), then its mean step
    over ``SKEWED_STEP_RATIO`` medians (``skewed_steps_warning``); neither for a trace
    replay, whose block means move with its batches: their spread is not the
    machine's, which the report measures across repetitions (``analysis.replay_noise``).
    Empty when none. Raises nothing."""
    warnings = []
    cv = None if is_replay(summary) else summary.get("step_ns_block_cv")
    if cv is not None and cv > NOISY_STEP_BLOCK_CV:
        warnings.append(f"the standard deviation of {STEP_BLOCK}-step mean step times is "
                        f"{above_percent(cv, 10)} % of their mean (> 10 %): the machine "
                        "may be noisy")
    skewed = skewed_steps_warning(summary)
    if skewed:
        warnings.append(skewed)
    return warnings


def short_case_warning(summary: dict[str, Any], min_steps: int = MIN_STEPS) -> str | None:
    """The warning of a case of too few counted steps (``num_steps``, 1 or more): under
    ``min_steps`` (``MIN_STEPS``, 100) its figures are rough (the line ends
    ``ROUGH_WORDS``); under ``NOISE_MIN_STEPS`` (150: the 3 blocks of ``STEP_BLOCK``
    steps ``step_ns_block_cv`` needs) a case that is not a trace replay says too that
    its step-time noise is not measured (``UNMEASURED_WORDS``); from ``min_steps`` on,
    where its figures are not called rough, with its mean step over its median
    (``step_ns_mean`` / ``step_ns_median``), which a few long steps raise where no stall
    warning catches them (a step under ``STALL_MEDIANS`` medians):
    ``only 120 counted steps (< 150: 3 blocks of 50): step-time noise not measured
    (mean step 2.89x the median)``, ``only 40 counted steps (< 100): step-time noise not
    measured (under 150: 3 blocks of 50) and figures are rough``. A trace replay's
    block means move with the trace's batches (``replay_noise`` measures its machine
    across repetitions), so its line is the rough one alone (``only 40 counted steps (< 100): figures are rough``). ``None``
    at 0 counted steps (``no_counted_steps_warning``) and from ``NOISE_MIN_STEPS`` on
    (a replay's: from ``min_steps`` on). Raises nothing."""
    n = summary.get("num_steps") or 0
    steps = f"only {n} counted step{'s' * (n != 1)}"
    unmeasured = not is_replay(summary) and n < NOISE_MIN_STEPS
    if n <= 0 or (n >= min_steps and not unmeasured):
        return None
    blocks = f"3 blocks of {STEP_BLOCK}"
    if n >= min_steps:
        mean, median = summary.get("step_ns_mean"), summary.get("step_ns_median")
        known = bool(mean and median and mean == mean and median == median)
        return (f"{steps} (< {NOISE_MIN_STEPS}: {blocks}): {UNMEASURED_WORDS}"
                + (f" (mean step {mean / median:.2f}x the median)" if known else ""))
    if not unmeasured:
        return f"{steps} (< {min_steps}): {ROUGH_WORDS}"
    return (f"{steps} (< {min_steps}): {UNMEASURED_WORDS} (under {NOISE_MIN_STEPS}: "
            f"{blocks}) and {ROUGH_WORDS}")


def floor_noise_warning(summary: dict[str, Any]) -> str | None:
    """The warning of a case whose floor is noisy: the standard deviation of its
    ``STEP_BLOCK``-step mean floor step times (``floor_step_ns_block_cv``) is over
    ``NOISY_FLOOR_BLOCK_CV`` of their mean, so its ``floor tok/s`` and ``x floor`` carry
    the machine's noise; ``None`` when it is not, or without a floor of 3 blocks
    (``floor_figures``)."""
    cv = summary.get("floor_step_ns_block_cv")
    if cv is None or cv != cv or cv <= NOISY_FLOOR_BLOCK_CV:
        return None
    limit = f"{NOISY_FLOOR_BLOCK_CV * 100:g}"
    return (f"the standard deviation of {STEP_BLOCK}-step mean floor step times is "
            f"{above_percent(cv, NOISY_FLOOR_BLOCK_CV * 100)} % of their mean (> {limit} %): "
            f"the machine may be noisy, and {FLOOR_NOISE_WORDS}")


#: ``floor_pair_notes`` notes a send / cached pair whose mean floor steps differ by
#: more than their cases' encode + decode per step differ, by over this share of the
#: faster floor. The two floors replay the same steps' messages, cached's without the
#: token ids send adds, over the same sockets: what their frames make differ is the
#: encoding and decoding (and a few bytes' copy, nanoseconds), so a larger gap is the
#: machine's. A quarter leaves room for a floor's ordinary jitter.
FLOOR_PAIR_EXCESS = 0.25


def _floor_pair_key(s: dict[str, Any]) -> tuple:
    return (s.get("scenario"), s.get("workload"), s.get("codec"), s.get("transport"),
            s.get("repetition"), bool(s.get("async_scheduling")), s.get("schedule_digest"))


def _codec_ns(s: dict[str, Any]) -> Optional[float]:
    encode, decode = float_or_none(s.get("encode_ns_per_step")), float_or_none(s.get("decode_ns_per_step"))
    return None if encode is None or decode is None else encode + decode


def floor_pair_notes(summaries: list[dict[str, Any]]) -> list[str]:
    """One line per send / cached pair (same scenario, workload, codec, transport,
    repetition, scheduling and schedule digest: the same batches) whose mean floor
    steps (``floor_step_ns_mean``) differ by other than their cases' encode + decode
    per step (``encode_ns_per_step`` + ``decode_ns_per_step``, both directions) differ,
    send - cached each, signed (a floor gap the other way from the frames' leaves all
    of both unexplained), the rest being over ``FLOOR_PAIR_EXCESS`` of the faster floor: that rest is the
    machine's noise, not the frames, so their ``floor tok/s`` and ``x floor`` are not
    comparable. Pairs without both figures, of a stateful codec (``slots``,
    ``replicated``: the floor encodes their wire part alone, so the cases' encode +
    decode is not the floor's), or with a case whose timings are withheld
    (``analysis.cores.is_withheld``: its floor tok/s and x floor are ``-`` already) are
    skipped; empty when none is noted.
    Accepts ``summary.json`` entries or pandas records (NaN: absent)."""
    def arm(s: dict[str, Any]) -> Any:  # a pandas record's NaN: no arm, the policy's
        value = s.get("arm")
        return s.get("policy") if value is None or value != value else value

    send = {_floor_pair_key(s): s for s in summaries
            if s.get("policy") == SEND and arm(s) == SEND}
    notes = []
    for c in summaries:
        s = send.get(_floor_pair_key(c))
        if c.get("policy") != CACHED or arm(c) != CACHED or s is None \
                or not isinstance(c.get("schedule_digest"), str) \
                or c.get("codec") in STATEFUL_CODECS or is_withheld(s) or is_withheld(c):
            continue  # a stateful codec's floor encodes its wire part alone
        floors = float_or_none(s.get("floor_step_ns_mean")), float_or_none(c.get("floor_step_ns_mean"))
        codecs = _codec_ns(s), _codec_ns(c)
        if None in floors or None in codecs:
            continue
        gap_ns, codec_gap_ns = floors[0] - floors[1], codecs[0] - codecs[1]  # send - cached
        unexplained_ns = abs(gap_ns - codec_gap_ns)
        if unexplained_ns <= FLOOR_PAIR_EXCESS * min(floors):
            continue
        notes.append(
            f"the floors of {s['case_id']} and {c['case_id']} differ "
            f"{_unlike_frames(gap_ns, codec_gap_ns)}: mean floor step {floors[0] / 1e3:,.1f} µs against "
            f"{floors[1] / 1e3:,.1f} µs ({_longer(gap_ns)}) while their encode + decode "
            f"per step {'are equal' if not codec_gap_ns else 'make ' + _longer(codec_gap_ns)}:"
            f" the {unexplained_ns / 1e3:,.1f} µs the frames do not explain, over "
            f"{FLOOR_PAIR_EXCESS * 100:g} % of the faster floor, are the machine's noise, "
            "so their floor tok/s and x floor are not comparable")
    return notes


def _unlike_frames(gap_ns: float, codec_gap_ns: float) -> str:
    """How a floor pair's send - cached gap (``gap_ns``) stands to the one their
    frames' encode + decode make (``codec_gap_ns``): ``by more than their frames
    explain``, ``by less than ...`` or ``the other way from what ...``."""
    if gap_ns * codec_gap_ns < 0:
        return "the other way from what their frames explain"
    return ("by more than" if abs(gap_ns) > abs(codec_gap_ns) else "by less than") + \
        " their frames explain"


def _longer(send_minus_cached_ns: float) -> str:
    """``send's 3.2 µs longer`` (or cached's) of a send - cached difference in ns."""
    who = SEND if send_minus_cached_ns > 0 else CACHED
    return f"{who}'s {abs(send_minus_cached_ns) / 1e3:,.1f} µs longer"


def above_percent(share: float, limit_pct: float) -> str:
    """``share`` (a fraction above ``limit_pct`` / 100) as a percentage with one decimal,
    or as many more (up to 4) as it takes to print above ``limit_pct``: 0.104 ->
    ``10.4``, 0.10004 -> ``10.004``, never a ``10.0`` that reads as not above 10."""
    pct = 100 * share
    for digits in range(1, 5):
        text = f"{pct:.{digits}f}"
        if float(text) > limit_pct:
            return text
    return text


def core_warnings(summary: dict[str, Any]) -> list[str]:
    """The warnings of a case whose processes outnumbered its cores (a fact of the
    machine and the case's N, the same for every case of that N; part of
    ``noise_warnings``): a ``--pp`` case's N stages and scheduler
    (``pp_oversubscribed``), a ``--tp`` case's N ranks and scheduler, whatever the
    broadcast (``tp_oversubscribed``, ``tp.tp_core_warning``), a one-runner ``shm`` case's reader and scheduler
    (``shm_oversubscribed``). ``--pp 2 on 2 core(s): 3 processes share them; those
    timings are not comparable``. Empty when none."""
    warnings = []
    if summary.get("pp_oversubscribed") and summary.get("pp_cores") is not None:
        n, n_cores = summary["pp"], summary["pp_cores"]
        warnings.append(f"--pp {n} on {n_cores} core(s): {n + 1} processes share them; "
                        "those timings are not comparable")
    tp = tp_core_warning(summary)
    if tp:
        warnings.append(tp)
    if summary.get("shm_oversubscribed") and summary.get("shm_cores") is not None:
        warnings.append(f"--transport shm with a spinning reader on {summary['shm_cores']} "
                        "core(s): 2 processes share them; those timings are not comparable")
    return warnings


def noise_warnings(summary: dict[str, Any], cpu_usage: dict[str, float] | None = None,
                   min_steps: int = MIN_STEPS) -> list[str]:
    """Warnings in the style of ``python -m pyperf check`` for one case summary.

    Flags: fewer requests per counted step than the batch asked for
    (``running_shortfall_warning``); no counted step (``no_counted_steps_warning``);
    too few counted steps (``short_case_warning``: under 100 rough, under 150 a case
    other than a trace replay with its step-time noise not measured); fewer counted
    steps than ``--steps`` asked for
    (``counted_steps_asked``: a steady case that reached its ``max_steps`` cap,
    ``scenario.steady_max_steps``); a
    standard deviation of 50-step mean step times over 10 % of their mean (pyperf's
    threshold, applied to block means as pyperf applies it to its values, themselves
    means over loops); the same of 50-step mean floor step times
    (``floor_noise_warning``, ``NOISY_FLOOR_BLOCK_CV``), neither of these two in a
    trace replay (``is_replay``), whose block means move with the trace's
    batches (``replay_noise`` measures its machine across repetitions); CPU steal time
    over 1 % of the machine's time during the case
    (``cpu_usage`` from ``environment.cpu_usage_between``); ``core_warnings``: a ``--pp`` case whose N
    stages and scheduler outnumbered the cores (``pp_oversubscribed``: the warning
    ``scenarios/pp`` printed before the run once, now with the case, so a run refused
    later prints its error alone); likewise a ``--tp`` case with fewer than N + 1 cores
    (``tp_oversubscribed``, any broadcast) and a one-runner ``shm`` case
    with fewer than 2 (``shm_oversubscribed``); an ``x floor`` below 1
    (``floor_below_one_warning``); a replay whose warm-up scheduled most of its tokens
    (``warmup_tokens_warning``); a fixed-step case whose median model step is off its
    nominal step by more than 10 % (``send_cost.off_nominal_warning``); a fixed-step
    cached case whose median whole step exceeds its nominal step by more than 10 % plus
    the control plane's allowance (``send_cost.whole_step_warning``); an emulated
    cached case whose median whole step exceeds its model's time by as much
    (``send_cost.emulated_step_warning``); a loop that
    spent much of its time between its timed steps (``between_steps_warning``); a
    counted step, a time between steps or a trace replay's steps that stalled
    (``stall_warnings``; ``replay_stall_warning``: against their workload's); a mean
    step over 1.5 times the median step (``skewed_steps_warning``). Returns
    one line per problem; an empty list means none was seen.
    """
    warnings = []
    shortfall = running_shortfall_warning(summary)
    if shortfall:
        warnings.append(shortfall)
    warnings.extend(core_warnings(summary))
    n = summary.get("num_steps", 0)
    if summary.get("instrumentation") == "totals":  # the bare loop: totals only, by design
        pass
    elif n == 0:
        warnings.append(no_counted_steps_warning(summary))
    else:
        short = short_case_warning(summary, min_steps)
        if short:
            warnings.append(short)
    warm_heavy = warmup_tokens_warning(summary)
    if warm_heavy:
        warnings.append(warm_heavy)
    asked = summary.get("counted_steps_asked")
    if (asked and n < asked and summary.get("complete") and summary.get("max_steps")
            and summary.get("instrumentation") != "totals"):  # (it counts no step)
        warnings.append(f"{n} of the {asked} counted steps asked for (--steps): "
                        + stopped_at_limit(summary['max_steps'],
                                           summary.get('output_len_mean')))
    floor = floor_below_one_warning(summary)
    if floor:
        warnings.append(floor)
    between = between_steps_warning(summary)
    if between:
        warnings.append(between)
    warnings.extend(stall_warnings(summary))
    warnings.extend(case_off_nominal(summary))  # the runner's wait; cached's whole step
    lengthened = emulated_step_warning(summary)  # an emulated cached step over its model's
    if lengthened:
        warnings.append(lengthened)
    warnings.extend(step_spread_warnings(summary))
    floor_noise = None if is_replay(summary) else floor_noise_warning(summary)
    if floor_noise:
        warnings.append(floor_noise)
    if cpu_usage:
        steal = cpu_usage.get("steal_pct", 0.0)
        if steal > 1.0:
            warnings.append(f"CPU steal time was {steal:.1f} % of the machine during the case")
    return warnings


def noise_shorthand(summary: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """The machine-noise warnings ``noise_warnings`` gives ``summary`` (a case summary),
    each to its kind and a short form naming its figure, for the terminal: a run prints
    a kind's first warning in full under its case's line and, under later cases, the
    short forms of the kinds already said on one line (``cli.execute``: ``warning: as
    above (the machine may be noisy): step_ns_block_cv 28.0 %, mean step 1.98x the
    median``); ``summary.json`` and the report keep every warning in full. Kinds and
    short forms, the figures as their warnings print them: ``step_ns_block_cv`` (``step_ns_block_cv
    28.0 %``, ``step_spread_warnings``), ``skew`` (``mean step 1.98x the median``,
    ``skewed_steps_warning``), ``floor_step_ns_block_cv`` (``floor_noise_warning``),
    ``x_floor`` (``x floor 0.80``, ``floor_below_one_warning``, not an async case's),
    ``between_steps`` (``67 % of the loop between steps``, ``between_steps_warning``),
    ``stalled_step`` (``counted step 843 took 11.5 ms``), ``stood_still`` (``stood
    still 6.6 ms before step 1020``) and ``replay_stalls`` (a trace replay's stalled
    steps, each judged against its workload's median, ``replay_stall_warning``: ``9
    counted steps over 10x their workload's median, 30 % of the counted steps' time``)
    of ``stall_warnings``, ``cpu_steal`` (``CPU steal 2.0 %``, from
    ``cpu_steal_pct``). Keyed by the warning's full text: a warning not found among a
    summary's own is printed in full. Raises nothing."""
    out: dict[str, tuple[str, str]] = {}
    spread = step_spread_warnings(summary)
    cv = None if is_replay(summary) else summary.get("step_ns_block_cv")
    if cv is not None and cv > NOISY_STEP_BLOCK_CV:
        out[spread[0]] = ("step_ns_block_cv", f"step_ns_block_cv {above_percent(cv, 10)} %")
    skewed = skewed_steps_warning(summary)
    if skewed:
        ratio = float_or_none(summary["step_ns_mean"]) / float_or_none(summary["step_ns_median"])
        out[skewed] = ("skew", f"mean step {_skew_shown(ratio)}x the median")
    floor = floor_noise_warning(summary)
    if floor:
        floor_cv = above_percent(summary["floor_step_ns_block_cv"], NOISY_FLOOR_BLOCK_CV * 100)
        out[floor] = ("floor_step_ns_block_cv", f"floor_step_ns_block_cv {floor_cv} %")
    below = floor_below_one_warning(summary)
    if below and not summary.get("async_scheduling"):  # an async case's is no noise
        out[below] = ("x_floor", f"x floor {summary['step_to_floor_ratio']:.2f}")
    between = between_steps_warning(summary)
    if between:
        share = summary["between_steps_ns_per_step"] / summary["loop_step_ns_mean"]
        out[between] = ("between_steps", f"{100 * share:.0f} % of the loop between steps")
    stalled = replay_stall_warning(summary)
    for w in stall_warnings(summary):
        if w == stalled:  # a trace replay's, each step judged against its workload's
            count = summary["stalled_steps"]
            out[w] = ("replay_stalls", f"{count:,} counted step{'s' * (count > 1)} over "
                      f"{STALL_BIN_RATIO}x their workload's median, "
                      f"{_share_words(stalled_share(summary))} of the counted steps' time")
        elif w.startswith("counted step "):
            out[w] = ("stalled_step", f"counted step {summary.get('step_ns_max_seq')} took "
                      f"{_time_words(summary['step_ns_max'])}")
        elif w.startswith("the scheduler loop stood still "):
            out[w] = ("stood_still", f"stood still {_time_words(summary['between_steps_ns_max'])} "
                      f"before step {summary.get('between_steps_ns_max_seq')}")
    steal = float_or_none(summary.get("cpu_steal_pct"))
    if steal is not None and steal > 1.0:
        out[f"CPU steal time was {steal:.1f} % of the machine during the case"] = (
            "cpu_steal", f"CPU steal {steal:.1f} %")
    return out
