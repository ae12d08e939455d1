"""One benchmark case: what to run (``CaseSpec``), what it measured (``CaseResult``) and
how it failed (``CaseError``)."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Optional

import numpy as np

from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.errors import one_line

#: ``CaseSpec.transport`` and ``codec`` of the single-process baseline: scheduler and
#: runner objects in one process, no serialization (the two-process transports are
#: ``wire.transport.TRANSPORTS``, the codecs ``wire.codecs.CODECS``).
INPROC = "inproc"
NO_CODEC = "none"
#: The arm of a case run with async scheduling (``cached`` policy, two steps in
#: flight); its A/A copy is ``cached+async'``.
ASYNC_ARM = "cached+async"
#: ``CaseSpec.instrumentation`` values: every step recorded, or the loop's totals only
#: (the ``overhead`` scenario runs one arm of each, named after it).
INSTRUMENTATIONS = ("steps", "totals")
#: Default of ``CaseSpec.input_oracle_interval``: steps between two input checks.
INPUT_ORACLE_INTERVAL = 128
from ipc_bench.engine.workloads import Workload

#: Columns of the scheduler's per-step records, in tuple order. Times in ns, sizes in bytes.
SCHED_COLUMNS = (
    "seq",                  # exchange number within the case, from 0
    "step",                 # logical scheduler step (the clock of the workload)
    "warmup",               # 1 for warm-up steps (excluded from every figure)
    "counted",              # 1 for steps the case's figures are computed over
    "num_reqs",             # requests scheduled this step
    "num_new_reqs",         # of which scheduled for the first time (NewRequestData)
    "num_scheduled_tokens",
    "num_output_tokens",    # tokens sampled this step (partial prefills sample none)
    "num_finished",
    "num_preempted",        # requests preempted (by recompute) while scheduling this step
    "num_resumed",          # requests resumed from preemption this step
    "num_waiting",          # requests left waiting once this step was scheduled:
                            # arrived (or preempted), not scheduled (vLLM's
                            # len(scheduler.waiting), SchedulerStats.num_waiting_reqs)
    "sched_ns",             # Scheduler.schedule()
    "build_ns",             # building the SchedulerOutput (send's slicing lands here)
    "encode_ns",            # serializer call on the SchedulerOutput
    "send_ns",              # socket send of the frame
    "wait_ns",              # from the end of send to the ModelRunnerOutput frame's arrival
    "decode_ns",            # serializer call on the ModelRunnerOutput
    "update_ns",            # Scheduler.update_from_output()
    "step_ns",              # whole iteration: schedule .. update
    "sched_cpu_ns",         # scheduler thread CPU time over the step
    "s2r_payload_bytes",    # SchedulerOutput frame length
    "r2s_payload_bytes",    # ModelRunnerOutput frame length
    "gc_collections",       # collections in the scheduler process during the step
    "gc_ns",                # time in those collections (gc.callbacks start to stop)
    "t_end_ns",             # end of the step, since the start of the case's loop (a
                            # timed replay: on its replay clock, scheduler_loop)
)

#: Columns of the runner's per-step records (one list each, in the RunnerReport).
RUNNER_COLUMNS = (
    "runner_idle_ns",       # waiting for the SchedulerOutput frame
    "runner_decode_ns",     # serializer call on the SchedulerOutput
    "runner_update_ns",     # ModelRunner.update_states
    "runner_prepare_ns",    # ModelRunner.prepare_inputs
    "runner_forward_ns",    # ModelRunner.sample (forward + sampling)
    "runner_writeback_ns",  # ModelRunner.write_back
    "runner_build_ns",      # ModelRunner.build_output
    "runner_encode_ns",     # serializer call on the ModelRunnerOutput
    "runner_send_ns",       # socket send of the frame
    "runner_gc_collections",
    "runner_gc_ns",         # time in those collections
    "runner_t0_ns",         # start of the runner's wait for this step, since its loop began
    "runner_forward_start_ns",  # start of the step's forward (model execution), since the
                                # runner's TimedModelRunner was built
)
#: The runner's per-step columns that only some cases have, in its report where it has
#: them (the model's own, ``engine.models.model_step_columns``; the replicated codec's
#: replica; the device-input path's), written to ``steps.csv`` after
#: ``RUNNER_COLUMNS``, empty where the case has none.
OPTIONAL_RUNNER_COLUMNS = (
    "gpu_busy_ns",          # torch on CUDA: the step's first to last GPU op (CUDA events)
    "gpu_idle_ns",          # torch on CUDA: GPU idle since the previous step's last op
                            # (-1: no previous step, or a step without GPU work)
    "roofline_ns",          # torch: the step's roofline time on the measured figures
    "emulated_step_ns",     # emulated: the roofline time the runner waited
    "emulated_context_tokens",  # emulated: the KV context that time was computed for
                                # (tokens: the sum of the step's seq_lens)
    "draft_ns",             # torch with drafts: the drafter's time, in runner_writeback_ns
    "replica_schedule_ns",  # replicated codec: the replica's schedule(), in runner_decode_ns
    "replica_update_ns",    # replicated codec: its update_from_output(), in runner_encode_ns
    "runner_lookahead",     # device-input path (torch, --async-scheduling): 1 where the
                            # runner launched the next step before it finished this one
)
#: The runner's columns that are moments, not durations or counts: a mean of them per
#: step means nothing, so the summary has no ``*_per_step`` figure of them.
RUNNER_TIMESTAMP_COLUMNS = ("runner_t0_ns", "runner_forward_start_ns")


class StepRows:
    """The scheduler's per-step rows of a case (``CaseResult.sched_rows``), packed: one
    int64 per ``SCHED_COLUMNS`` value in one ``array('q')``, 8 bytes a value (208 bytes
    a row), where a list of tuples held about 470 bytes a row (the tuple, the list's
    pointer and an int object per large value) in many small blocks.

    Reads as the list of tuples it replaces: ``len``, ``rows[i]`` (a tuple of ints,
    negative ``i`` too), ``rows[a:b]`` (a list of tuples), iteration, truth, ``==``
    with any sequence of rows, ``del rows[a:b]``, ``np.asarray(rows)`` (an int64 copy
    ``[len(rows), len(SCHED_COLUMNS)]``). ``append(row)`` checks the row's length;
    the loops record through ``record`` (the array's own ``extend``, a C call, as
    ``list.append`` was), which does not. ``IndexError`` for a row out of range,
    ``ValueError`` for a row of another length."""

    __slots__ = ("_values",)
    width = len(SCHED_COLUMNS)

    def __init__(self, rows: Iterable[Iterable[int]] = ()):
        self._values = array("q")
        for row in rows:
            self.append(row)

    @property
    def record(self) -> Callable[[Iterable[int]], None]:
        """The hot loops' ``append``: ``extend`` of the packed values (no check)."""
        return self._values.extend

    def append(self, row: Iterable[int]) -> None:
        row = tuple(row)
        if len(row) != self.width:
            raise ValueError(f"a step row has {self.width} values, got {len(row)}")
        self._values.extend(row)

    def __len__(self) -> int:
        return len(self._values) // self.width

    def __bool__(self) -> bool:
        return len(self._values) > 0

    def _row(self, i: int) -> tuple:
        w = self.width
        return tuple(self._values[i * w:(i + 1) * w])

    def __getitem__(self, index):
        n = len(self)
        if isinstance(index, slice):
            return [self._row(i) for i in range(*index.indices(n))]
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError(f"step row {index} of {n}")
        return self._row(i)

    def __delitem__(self, index: slice) -> None:
        start, stop, step = index.indices(len(self))
        if step != 1:
            raise ValueError("StepRows deletes contiguous rows only")
        if stop > start:
            del self._values[start * self.width:stop * self.width]

    def __iter__(self) -> Iterator[tuple]:
        return (self._row(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StepRows):
            return self._values == other._values
        try:
            return list(self) == [tuple(r) for r in other]  # type: ignore[union-attr]
        except TypeError:
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as the list was

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        view = np.frombuffer(self._values, dtype=np.int64) if self._values else \
            np.zeros(0, dtype=np.int64)
        out = view.reshape(-1, self.width).astype(dtype or np.int64, copy=True)
        del view  # the array can grow again once no view of it is left
        return out

    def __repr__(self) -> str:
        return f"StepRows({len(self)} rows)"


@dataclass
class CaseSpec:
    """One case of a scenario: a policy and codec on one workload.

    ``labels``: what tells this case's workload apart inside the scenario (e.g.
    ``{"num_running": 256}``); cases with equal labels must produce equal token
    digests. ``max_steps``: stop after that many logical steps (``None``: when the
    workload is drained). ``counted_steps``: stop after that many counted steps
    (``count`` says which; ``None``: no such limit), ``max_steps`` still capping the
    steps in all. ``arm``: the comparison side this case belongs to, when it is
    not simply ``policy`` (A/A runs label the second copy of a policy ``send'``).
    ``count``: ``"decode_only"`` counts only steps where every
    scheduled request decodes one token; ``"all"`` counts every non-warm-up step.
    ``instrumentation``: ``"steps"`` records every step (the default); ``"totals"``
    runs the same steps through loops that record nothing per step, only the loop's
    total time after warm-up (``CaseResult.loop_totals``), to measure what the
    per-step recording itself costs (logical clock, two processes only).
    ``transport``: ``ipc``, ``tcp``, ``shm`` or ``shm-block`` (two processes; ``shm*``:
    the scheduler's frames through a shared-memory ring) or ``inproc`` (the
    single-process baseline; ``codec`` is then ``"none"``). ``trace_speedup``: ``None``
    for the logical clock, else the timed clock at that many times real time.
    ``floor``: replay the floor (the bare exchange of the recorded messages,
    ``harness.floor``) after the case. ``no_floor``: the case runs no floor because the
    run was given ``--no-floor`` (``floor`` is then false): a case that runs none
    whatever the options (a timed replay, the single-process case, a ``--pp`` case,
    scenarios overhead, soak and pp) leaves it false. The summary records it (its
    ``no_floor``), so that the tables say why the floor columns are empty.

    Reliability settings: ``peer_timeout_s``: longest wait for the runner's reply to a
    step (and the runner's wait for the scheduler); ``startup_timeout_s``: longest wait
    for the handshake and for the first step (the scheduler's wait for its reply and
    the runner's and frontend's for it), which pay one-time costs (imports, model load,
    CUDA context and kernel loading on the first forward; admitting, scheduling and
    encoding a large first batch). ``host``: the
    address tcp sockets bind to. ``allow_pickle_over_tcp``: see
    ``wire.handshake.check_pickle_transport``. ``stream``: long runs: the case's records go to
    the run folder as the run goes and leave memory (no floor, no runner per-step
    columns; see ``recording.StepFlusher``). ``sample_rss_s``: sample both processes'
    RSS every that many seconds (``None``: off). ``input_oracle_interval``: steps between
    two checks of the input oracle (``harness.oracle``; a bad step fails the case at most
    that many steps late); 0 turns the oracle off on both sides (nothing digested or
    checked: the summary's ``input_oracle_interval`` says 0 and the tables say so).
    ``tp``: ``None`` for one runner; 1, 2 or 4 for that many runner ranks receiving one
    broadcast (``harness.tp_case``, ``wire.tp``; two-process transports only).
    ``async_scheduling``: schedule step n+1 before step n's output is applied, two
    steps in flight (``engine.scheduler.AsyncScheduler``,
    ``harness.async_loop.run_async_scheduler_loop``; ``cached`` only).
    ``frontend``: a third process, the frontend, receives the engine core's
    ``EngineCoreOutputs`` every step (``harness.frontend_hop``); its bytes and times are
    reported beside the scheduler <-> runner hop's. Not with ``tp`` or ``pp`` (any
    value, 1 included: the ranks' and stages' supervisors start no frontend):
    ``supervisor.run_case`` raises ``ConfigError`` (``tp=2 runner ranks run no frontend
    (their supervisor starts none): set frontend=False``), as ``bench.py`` refuses
    ``--frontend`` with them.
    ``pp``: ``None`` for one runner; 1, 2 or 4 pipeline stages (``harness.pp_case``,
    ``engine.pipeline``): ``pp`` micro-batches in flight through the async loop.
    ``pp_direct``: the last stage sends its sampled ids to the other stages
    (``policy`` is then ``cached`` and ``arm`` ``direct``).
    ``cpu_affinity``: ``None``, or the CPU set of each of the case's processes in
    process order (scheduler, runner or rank 0, further ranks or stages;
    ``harness.affinity``, ``--cpu-affinity``); the runners pin themselves to theirs.
    ``frontend_cpus``: ``None`` (a frontend inherits the scheduler's set), or the CPU
    set the ``frontend`` process pins itself to (``--cpu-affinity``'s extra last set).
    ``output_len_mean``: a steady case's mean output in tokens, read from its workload
    with its ``max_steps`` (``scenario.set_steady_cap``): the summary records it for the
    advice when the case stops at that cap (``None``: not a steady case).
    ``runner_need``: what the scheduler knows of the run's workload for its runner's
    memory refusal (``RunnerConfig``'s ``blocks_needed``, ``needed_by``, ``need_words``,
    ``running_sized`` and ``steady_shape``, set by ``cli.run``); ``{}``: nothing to add.
    """

    scenario: str
    labels: dict[str, Any]
    policy: str
    codec: str
    scheduler: SchedulerConfig
    model: ModelConfig
    make_workload: Callable[[], Workload]
    warmup_steps: int = 50
    max_steps: Optional[int] = None
    counted_steps: Optional[int] = None
    count: str = "all"
    transport: str = "ipc"
    peer_timeout_s: float = 10.0
    startup_timeout_s: float = 120.0
    host: str = "127.0.0.1"
    allow_pickle_over_tcp: bool = False
    stream: bool = False
    sample_rss_s: Optional[float] = None
    floor: bool = True
    no_floor: bool = False
    repetition: int = 0
    trace_speedup: Optional[float] = None
    arm: str = ""
    instrumentation: str = "steps"
    input_oracle_interval: int = INPUT_ORACLE_INTERVAL
    tp: Optional[int] = None
    async_scheduling: bool = False
    frontend: bool = False
    pp: Optional[int] = None
    pp_direct: bool = False
    cpu_affinity: Optional[tuple[frozenset[int], ...]] = None
    frontend_cpus: Optional[frozenset[int]] = None
    output_len_mean: Optional[float] = None
    runner_need: dict[str, Any] = field(default_factory=dict)

    @property
    def arm_label(self) -> str:
        """``arm`` if set, else ``ASYNC_ARM`` for an async-scheduling case, else
        ``policy``: the name comparisons and case ids use (an async case is never
        labelled as a synchronous one)."""
        return self.arm or (ASYNC_ARM if self.async_scheduling else self.policy)

    @property
    def workload_key(self) -> str:
        return ",".join(f"{k}={v}" for k, v in sorted(self.labels.items()))

    @property
    def case_id(self) -> str:
        labels = ",".join(f"{k}={v}" for k, v in self.labels.items())
        return f"{labels}/{self.arm_label}/{self.codec}#{self.repetition}"


@dataclass
class CaseResult:
    """Everything one case measured. ``sched_rows``: one row per step in
    ``SCHED_COLUMNS`` order (``StepRows``, packed int64; reads as a list of tuples); ``runner_columns``: ``RUNNER_COLUMNS`` -> per-step list (same step order);
    ``floor_step_ns``: per replayed step of the floor; ``requests``: per-request dicts;
    ``s2r_frames``: the counted steps' SchedulerOutput frames (for byte analysis);
    ``r2s_frames``: the ModelRunnerOutput frames of the same steps, as received;
    ``counted_seqs``: the ``seq`` of each of those steps; ``model_info``: what the
    model measured about its device at start-up (``engine.models.model_info``)."""

    spec: CaseSpec
    sched_rows: StepRows = field(default_factory=StepRows)
    runner_columns: dict[str, list[int]] = field(default_factory=dict)
    floor_step_ns: list[int] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    token_digest: str = ""
    schedule_digest: str = ""  # harness.oracle.ScheduleDigest ("" from the bare loop)
    runner_device: str = ""
    model_info: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0
    # A timed replay's idle time: the loop waited for the next arrival with nothing to
    # schedule and no step in flight (``scheduler_loop.wait_for_arrival``), ns, summed
    # over the replay (warm-up included, as ``wall_s``).
    idle_ns: int = 0
    # The end of warm-up's pause (heap collected and frozen; before step
    # ``warmup_steps - 1``, or ``warmup_steps`` when < 2), ns; None: the loop ended
    # before it. A timed replay's clock stops during it (``harness.scheduler_loop``).
    warmup_pause_ns: Optional[int] = None
    # Each runner process's own collection and freeze in that pause (ns, one per --tp
    # rank / --pp stage, rank order; ``wire.control.WarmupEnded``); None: no runner
    # process (the single process: the scheduler's collection is the runner's too) or
    # the loop ended before the pause.
    runner_warmup_collect_ns: Optional[list[int]] = None
    num_rejected: int = 0
    token_bytes: dict[str, float] = field(default_factory=dict)
    s2r_frames: list[bytes] = field(default_factory=list)
    r2s_frames: list[bytes] = field(default_factory=list)
    counted_seqs: list[int] = field(default_factory=list)
    prompt_lens: dict[str, int] = field(default_factory=dict)
    loop_totals: dict[str, int] = field(default_factory=dict)
    s2r_marker_frames: int = 0  # empty frames sent on s2r (phase changes), 2 wire bytes each
    error: Optional[str] = None
    failed_step: Optional[int] = None     # seq of the step the case failed at
    # A signal arrived while the floor replayed (``supervisor.run_phases``): every
    # counted step was measured; the case is kept as finished, without its floor.
    floor_interrupted: bool = False
    # A signal arrived after the floor (or after the loop, without one), while the
    # runner was told to stop and its report awaited (``supervisor.run_phases``): every
    # counted step and the floor were measured; the case is kept as finished, without
    # the runner's per-step columns (they come in that report).
    report_interrupted: bool = False
    # The runner failed (died, stopped answering, answered garbage) while the floor
    # replayed: every counted step was measured; the case is kept as finished, without
    # its floor. The channel's message (``supervisor.run_phases``), then the line
    # printed for it (``cli.execute``).
    floor_failed: Optional[str] = None
    # The runner failed (died, stopped answering, reported an error) after the floor
    # (after the loop, without one), while it was told to stop and its report awaited:
    # every counted step and the floor were measured; the case is kept as finished,
    # without the runner's per-step columns. The channel's message, as ``floor_failed``.
    report_failed: Optional[str] = None
    # Every file of a finished case was written but floor.csv, which could not take the
    # floor's rows (a full disk, a file size limit): the case is kept as finished,
    # without its floor. The write error's line (``cli.execute``).
    floor_unwritten: Optional[str] = None
    runner_pid: Optional[int] = None
    rss_samples: list[tuple] = field(default_factory=list)  # harness.memory.SAMPLE_COLUMNS tuples
    stream_stats: Optional[Any] = None    # harness.recording.StreamStats of a streamed case
    heap_reports: dict[str, str] = field(default_factory=dict)  # process -> memory.HeapReport text
    tp_rank_columns: list[dict[str, list[int]]] = field(default_factory=list)  # per rank (--tp)
    tp_sent_ns: list[int] = field(default_factory=list)  # --tp: each data frame's send, ns
    # --frontend: the scheduler's per-step columns of the hop (frontend_hop.FRONTEND_COLUMNS),
    # the frontend's decode ns per message received, the scheduler's request streams
    # (engine.outputs.request_streams) and the frontend's pid
    frontend_columns: dict[str, list[int]] = field(default_factory=dict)
    frontend_decode_ns: list[int] = field(default_factory=list)
    frontend_expected_streams: dict[str, tuple[int, str]] = field(default_factory=dict)
    frontend_pid: Optional[int] = None
    frontend_token_digest: str = ""  # engine.outputs.streams_digest of the frontend's report
    # --cpu-affinity (or a runner started by hand with it): process ("scheduler",
    # "runner", "rank N", "frontend") -> the CPUs the kernel let it run on after the
    # handshake (harness.affinity.cpus_allowed; a runner started by hand reads its own)
    cpus_allowed: dict[str, str] = field(default_factory=dict)
    # --remote-runners: the seconds the case waited for its runners started by hand to
    # connect (``case_lifecycle.CaseLifecycle._await_remote``; ``time.monotonic``): a
    # person starting them, in the first case that needs them; printed on the case's
    # line and kept in its summary as ``runner_wait_s`` (``cli.execute``)
    runner_wait_s: float = 0.0


#: What a case's line adds for a process found stopped (state ``T``/``t``) when a wait
#: on it ran out: more time would not help, so no timeout is named.
STOPPED_NOT_SLOW = "it was stopped (SIGSTOP or a debugger), not slow"


class CaseError(RuntimeError):
    """A case failed; the message is one line saying which process, how, and the step.

    ``step``: the exchange (``seq``) the case failed at, when known.
    """

    def __init__(self, message: str, step: Optional[int] = None):
        super().__init__(one_line(message))
        self.step = step
