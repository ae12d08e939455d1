"""Control messages: their own socket, a tagged union, never counted as measured traffic.

Handshake, phase changes (floor, keep-alive, stop), the input oracle's checks (every
``harness.oracle.CHECK_INTERVAL_STEPS`` steps, between steps), the runner's report and
errors travel here, so the measured data sockets carry nothing but ``SchedulerOutput`` and
``ModelRunnerOutput`` frames. ``decode_control`` refuses anything that is not exactly
one of these types (unknown fields too).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from typing import Any, Callable, Iterator, Optional, Union

import msgspec
import zmq

from ipc_bench.errors import one_line
from ipc_bench.wire.transport import PeerError, recv_frame, send_frame

#: Bumped whenever a field of a wire or control message changes.
#: 2: ``KeepAlive`` control message. 4: the input oracle's ``CheckInputs``,
#: ``InputDigests``, ``RecheckInputs`` and ``StepInputIds``. 5: ``ModelConfig``'s roofline,
#: attention and CUDA-graph fields
#: in the handshake, ``Ready.model_info``, ``RunnerConfig.s2r_ring`` and
#: ``RunnerConfig.check_inputs``. 6: ``Goodbye`` (the end of a run, to runners started
#: by hand on other hosts, ``wire.remote``). 7: a runner started by hand serves ``--pp``
#: stages (``RunnerConfig.pp_store`` may name the scheduler's tcp store). 8: the runner
#: sends ``KeepAlive`` while it prepares the floor's replies and its report (the scheduler
#: skips it in every control wait). 9: ``RunnerConfig.startup_timeout_s`` (the runner's
#: wait for the first step). 10: ``EndWarmup`` / ``WarmupEnded`` (the runner collects and
#: freezes its heap when the scheduler ends warm-up, inside the scheduler's pause).
#: 11: ``BeginFloor.chunk_steps`` (the floor's messages decoded a chunk at a time, a
#: ``FloorReady`` per chunk, ``KeepAlive`` markers before a chunk's first frame). 12: a
#: marker and ``KeepAlive`` after a chunk's last step, before the runner decodes the next.
#: 13: ``RunnerConfig.blocks_needed``, ``needed_by``, ``need_words`` and
#: ``running_sized`` (the least ``--num-blocks`` a runner's memory refusal names).
#: 14: ``RunnerConfig.steady_shape`` (the most ``--num-running`` it names, as the
#: scheduler's check finds it).
PROTOCOL_VERSION = 14

#: Counted steps whose recorded messages each end of the floor holds decoded at a time
#: (``BeginFloor.chunk_steps``'s default; ``harness.floor``): a case of up to this many
#: counted steps replays its floor in one chunk, as before chunks, and a longer one
#: pays a chunk's slow first steps once per 4,096.
FLOOR_CHUNK_STEPS = 4096


_CTL = dict(tag_field="kind", forbid_unknown_fields=True)


class Handshake(msgspec.Struct, tag="handshake", **_CTL):
    """Scheduler -> runner, first message: protocol version and the runner's config.

    ``config`` is an encoded ``ipc_bench.wire.handshake.RunnerConfig`` (msgpack
    bytes), decoded only once the protocol version is known to match.
    """

    protocol_version: int
    config: bytes


class Ready(msgspec.Struct, tag="ready", **_CTL):
    """Runner -> scheduler: handshake accepted; ``device`` is where the model runs;
    ``model_info``: what the model measured about its device at start-up
    (``engine.models.model_info``: the torch model's roofline figures), else empty."""

    protocol_version: int
    pid: int
    device: str
    model_info: dict[str, Any] = {}


class BeginFloor(msgspec.Struct, tag="begin_floor", **_CTL):
    """Scheduler -> runner: replay the recorded outputs of ``steps`` (the floor case),
    decoding them ``chunk_steps`` at a time (at least 1), a ``FloorReady`` per chunk."""

    steps: list[int]
    chunk_steps: int = FLOOR_CHUNK_STEPS


class FloorReady(msgspec.Struct, tag="floor_ready", **_CTL):
    """Runner -> scheduler: the replies of the floor's next chunk of steps are decoded
    and ready; the scheduler starts the clock of the chunk's first step only after this
    (and after decoding its own frames of the chunk), so no floor step pays for it."""


class Stop(msgspec.Struct, tag="stop", **_CTL):
    """Scheduler -> runner: send your report and exit."""


class Goodbye(msgspec.Struct, tag="goodbye", **_CTL):
    """Scheduler -> a runner started by hand (``--remote-runners``), as it closes: the
    run is over, no case follows; ``reason`` is empty after a complete run, else one
    line saying why it ended. The runner exits. Sent between cases, or in the middle of
    one whose run ended between a marker and the control message it announced (the
    runner reads it where that message was due: ``RunnerChannel.recv_control``)."""

    reason: str = ""


class EndWarmup(msgspec.Struct, tag="end_warmup", **_CTL):
    """Scheduler -> runner (every ``--tp`` rank, every ``--pp`` stage), before the frame
    of step ``warmup_steps - 1`` (with 2 or more warm-up steps, so that the last
    warm-up step, not the first counted one, runs on the caches the pause cooled; else
    of step ``warmup_steps``: ``harness.scheduler_loop.warmup_pause_seq``): warm-up ends;
    collect and freeze your heap now (``gc.collect()``, ``gc.freeze()``, as vLLM's
    ``freeze_gc_heap``) and answer ``WarmupEnded``. The scheduler collects its own heap
    meanwhile, so both collections fall in its end-of-warm-up pause, outside every
    step (``harness.scheduler_loop``'s ``end_warmup``)."""


class WarmupEnded(msgspec.Struct, tag="warmup_ended", **_CTL):
    """Runner -> scheduler, the answer to ``EndWarmup``: ``collect_ns``, how long the
    runner's collection and freeze took (ns, its own ``perf_counter_ns``)."""

    collect_ns: int


class KeepAlive(msgspec.Struct, tag="keepalive", **_CTL):
    """Either end, while the other waits under its peer timeout: I am alive, keep
    waiting (``Heartbeat``). Scheduler -> runner (after an empty frame) while no step
    is due (timed replay between arrivals), while it collects its heap at the end of
    warm-up and while it prepares the floor (the end of the case's records, its heap
    report, collecting and decoding the recorded frames); runner -> scheduler while it
    decodes the floor's replies and builds its report (its heap report too). The scheduler skips it in every
    control wait, each one restarting the wait's timeout."""


class Heartbeat:
    """A long preparation's ``KeepAlive``: ``beat()``, called between pieces of the
    work, calls ``send`` (which sends one) once a quarter of ``timeout_s`` (the peer's
    timeout) has passed since the last one or since this object was made, so the peer
    never waits longer than that quarter plus one piece. ``sent``: how many it sent.
    ``last_ns``: when the peer last heard from this end (``clock``'s ns), if not now."""

    def __init__(self, send: Callable[[], None], timeout_s: float,
                 clock: Callable[[], int] = time.monotonic_ns,
                 last_ns: Optional[int] = None):
        self.send = send
        self.interval_ns = int(timeout_s / 4 * 1e9)
        self.clock = clock
        self.last_ns = clock() if last_ns is None else last_ns
        self.sent = 0

    def beat(self) -> None:
        """Send a ``KeepAlive`` (through ``send``) if one is due."""
        now = self.clock()
        if now - self.last_ns >= self.interval_ns:
            self.send()
            self.last_ns = self.clock()
            self.sent += 1


def no_beat() -> None:
    """``Heartbeat.beat`` where no peer waits: nothing."""


#: How often ``beating``'s thread calls ``beat`` (seconds); ``Heartbeat.beat`` itself
#: sends only once a quarter of the peer timeout has passed.
BEAT_POLL_S = 0.02


@contextlib.contextmanager
def beating(beat: Callable[[], None]) -> Iterator[None]:
    """The keep-alive of one long call that cannot beat between pieces (a collection,
    a heap report): ``beat()`` before the block, from a thread every ``BEAT_POLL_S``
    seconds while it runs, and after it. The block must not use the sockets ``beat``
    sends on; the thread is joined before the block's end returns, and an error it
    raised (``transport.PeerError``: the peer has gone) is raised then, if the block
    raised none. The thread runs while the block runs Python code or waits; a call
    that holds the interpreter lock throughout (a collection's walk of the heap) keeps
    it out, so such a call must end within three quarters of the peer timeout (it
    starts at most a quarter after the last ``KeepAlive``). ``no_beat``: no thread."""
    if beat is no_beat:
        yield
        return
    beat()
    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            while not stop.wait(BEAT_POLL_S):
                beat()
        except BaseException as exc:  # noqa: BLE001 (raised in the caller's thread)
            errors.append(exc)

    thread = threading.Thread(target=run, name="keepalive", daemon=True)
    try:
        with _signals_held():  # a handler's exception inside start() breaks its locks
            thread.start()
        yield
    finally:
        with _signals_held():  # ... and inside set(), which join() then waits on forever
            stop.set()
        if thread.ident is not None:
            thread.join()
    if errors:
        raise errors[0]
    beat()


#: The signals ``bench.py`` turns into exceptions (``harness.signals.HANDLED``).
_HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1,
                 signal.SIGUSR2, signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF,
                 signal.SIGXCPU)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Block ``_HELD_SIGNALS`` in this thread for the block (a few µs: starting a
    thread, setting an event), so that a handler that raises (``bench.py``'s) never
    raises inside ``threading``'s own lock handling, which an exception there leaves
    broken (``RuntimeError: release unlocked lock``, or an event never set); one that
    arrived meanwhile is delivered, and raises, as the block ends."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class CheckInputs(msgspec.Struct, tag="check_inputs", **_CTL):
    """Scheduler -> runner, between steps: send the input digests of the steps run
    since the last ``CheckInputs`` (the input oracle, ``ipc_bench.harness.oracle``)."""


class InputDigests(msgspec.Struct, tag="input_digests", **_CTL):
    """Runner -> scheduler, the answer to ``CheckInputs``: one 64-bit input digest
    (``harness.oracle.input_digest``, unsigned) per step, for steps ``first_seq``,
    ``first_seq + 1``, ... in order; empty (``first_seq`` -1) when no step ran since
    the last check."""

    first_seq: int
    digests: list[int]


class RecheckInputs(msgspec.Struct, tag="recheck_inputs", **_CTL):
    """Scheduler -> runner after a digest mismatch: send the token ids fed at step
    ``seq`` (one of the steps of the last ``InputDigests``)."""

    seq: int


class StepInputIds(msgspec.Struct, tag="step_input_ids", **_CTL):
    """Runner -> scheduler, the answer to ``RecheckInputs``: what the runner fed the
    model at step ``seq``. ``req_ids``: the scheduled requests in the order of the
    step's ``SchedulerOutput.num_scheduled_tokens``; ``offsets``: ``[len(req_ids) + 1]``
    offsets of each request's ids in ``input_ids``. ``found`` is false (and the lists
    empty) when the runner no longer holds that step."""

    seq: int
    found: bool
    req_ids: list[str] = []
    offsets: list[int] = []
    input_ids: list[int] = []


class RunnerReport(msgspec.Struct, tag="runner_report", **_CTL):
    """Runner -> scheduler at the end: per-step runner timings, column-major.

    ``columns`` maps a column name (``ipc_bench.harness.spec.RUNNER_COLUMNS``) to one
    int per step the runner executed, in step order.
    """

    columns: dict[str, list[int]]
    floor_step_ns: list[int] = []


class ErrorReport(msgspec.Struct, tag="error", **_CTL):
    """Either side: a fatal error, one line, and the step where it happened."""

    message: str
    step: int = -1


ControlMessage = Union[Handshake, Ready, BeginFloor, FloorReady, Stop, Goodbye, KeepAlive,
                       EndWarmup, WarmupEnded, CheckInputs, InputDigests, RecheckInputs,
                       StepInputIds, RunnerReport, ErrorReport]

_ctl_encoder = msgspec.msgpack.Encoder()
_ctl_decoder = msgspec.msgpack.Decoder(ControlMessage)


def encode_control(msg: ControlMessage) -> bytes:
    """One control message -> msgpack bytes."""
    return _ctl_encoder.encode(msg)


def decode_control(frame: bytes, what: str = "a control message") -> ControlMessage:
    """Decode one control frame; ``PeerError`` (one line) for anything that is not
    exactly one of the ``ControlMessage`` types (unknown fields are refused too)."""
    try:
        return _ctl_decoder.decode(frame)
    except msgspec.DecodeError as exc:
        raise PeerError(one_line(
            f"malformed control message while waiting for {what}: {exc}")) from None


def _no_problem() -> Optional[str]:
    return None


def send_control(sock: zmq.Socket, msg: ControlMessage, timeout_s: float = 10.0,
                 peer_problem: Callable[[], Optional[str]] = _no_problem) -> None:
    """Encode and send one control message (``send_frame``: bounded, peer checked)."""
    send_frame(sock, encode_control(msg), timeout_s, peer_problem, type(msg).__name__)


def recv_control(sock: zmq.Socket, timeout_s: float, peer_problem: Callable[[], Optional[str]],
                 what: str) -> ControlMessage:
    """Receive and decode one control message; ``PeerError`` on timeout or garbage."""
    return decode_control(recv_frame(sock, timeout_s, peer_problem, what), what)
