"""Captured messages: a bounded sample of the real frames a case exchanged.

A run keeps, per case of repetition 0, up to ``MAX_MESSAGES`` frames per direction
(fewer past ``MAX_CAPTURE_BYTES``) from its counted steps, evenly spaced over them, in
``messages/`` of the run folder:

    messages/<case slug>.s2r.msgpack   SchedulerOutput frames (scheduler -> runner)
    messages/<case slug>.r2s.msgpack   ModelRunnerOutput frames (runner -> scheduler)

Each file is one MessagePack map (``CaptureFile``): the case's identity, the codec,
the ``seq`` of each sampled step, the in-loop ``encode_ns`` / ``decode_ns`` the run
measured for each of those very frames (the sender's serializer call and the
receiver's), and the frames themselves as MessagePack ``bin`` values (so each frame
carries its length). ``python bench.py microbench RUN_DIR`` re-times them with pyperf
(``ipc_bench.analysis.microbench``).

Format history:
- 1: first version.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import msgspec

if TYPE_CHECKING:  # imported where used: reading captures needs neither it nor numpy
    from ipc_bench.harness.spec import CaseResult

CAPTURE_FORMAT_VERSION = 1
#: Frames kept per case and direction, at most...
MAX_MESSAGES = 200
#: ... and at most about this many bytes of frames (but never fewer than MIN_MESSAGES).
MAX_CAPTURE_BYTES = 8 * 1024 * 1024
MIN_MESSAGES = 20
#: Directions and the message type each carries.
DIRECTIONS = {"s2r": "SchedulerOutput", "r2s": "ModelRunnerOutput"}
MESSAGES_DIR = "messages"


class CaptureError(ValueError):
    """A capture file is missing, unreadable or of an unknown format; one line."""


class CaptureInfo(msgspec.Struct):
    """The identity of a capture file without its frames and timings: what choosing
    which captures to re-time needs (``load_capture_infos``), read without copying the
    frames. Field meanings as in ``CaptureFile``."""

    format_version: int
    case_id: str
    scenario: str
    workload: str
    policy: str
    arm: str
    codec: str
    repetition: int
    direction: str
    message_type: str
    num_counted_steps: int
    seqs: list[int]


class CaptureFile(CaptureInfo, forbid_unknown_fields=True):
    """One direction of one case: ``CaptureInfo`` plus, parallel to ``seqs`` (the
    sampled steps), ``in_loop_encode_ns``, ``in_loop_decode_ns`` (ns) and ``frames``
    (the encoded messages, bytes)."""

    in_loop_encode_ns: list[int]
    in_loop_decode_ns: list[int]
    frames: list[bytes]


def sample_indices(n: int, k: int = MAX_MESSAGES) -> list[int]:
    """Up to ``k`` indices into ``range(n)``, evenly spaced, first and last included."""
    if n <= 0 or k <= 0:
        return []
    if n <= k:
        return list(range(n))
    if k == 1:
        return [0]
    return [round(i * (n - 1) / (k - 1)) for i in range(k)]


def case_slug(case_id: str) -> str:
    """File-name-safe form of a case id (``num_running=256/send'/msgpack#0`` ->
    ``num_running=256.send-prime.msgpack.r0``)."""
    base, _, rep = case_id.rpartition("#")
    text = base.replace("'", "-prime").replace("/", ".") + f".r{rep}"
    return re.sub(r"[^A-Za-z0-9=,._+-]", "_", text)


def build_captures(result: CaseResult, max_messages: int = MAX_MESSAGES) -> list[CaptureFile]:
    """The two ``CaptureFile`` of ``result`` (empty list if it has no counted frames).

    Keeps ``max_messages`` evenly spaced counted steps, fewer when their frames would
    exceed ``MAX_CAPTURE_BYTES`` per direction (``MIN_MESSAGES`` at least).

    In-loop figures per direction: ``s2r`` encode is the scheduler's ``encode_ns``,
    decode the runner's ``runner_decode_ns``; ``r2s`` encode is the runner's
    ``runner_encode_ns``, decode the scheduler's ``decode_ns``.

    None for a case in another layout than 7f280d69c (``--vllm-layout``): a capture
    file does not record the layout, and ``bench.py microbench`` and the byte model
    decode its frames as 7f280d69c's.
    """
    from ipc_bench.engine.config import DEFAULT_VLLM_LAYOUT
    from ipc_bench.harness.spec import SCHED_COLUMNS

    col = {name: i for i, name in enumerate(SCHED_COLUMNS)}
    spec = result.spec
    seqs = result.counted_seqs
    if spec.scheduler.vllm_layout != DEFAULT_VLLM_LAYOUT:
        return []
    if not seqs or len(result.s2r_frames) != len(seqs) or len(result.r2s_frames) != len(seqs):
        return []
    rows = result.sched_rows
    runner = result.runner_columns
    have_runner = all(len(runner.get(k, ())) == len(rows)
                      for k in ("runner_decode_ns", "runner_encode_ns"))
    biggest = max(sum(map(len, result.s2r_frames)), sum(map(len, result.r2s_frames)))
    mean_len = biggest / len(seqs)
    budget = max(MIN_MESSAGES, int(MAX_CAPTURE_BYTES // mean_len)) if mean_len else max_messages
    picks = sample_indices(len(seqs), min(max_messages, budget))
    picked_seqs = [seqs[i] for i in picks]

    def sched(name: str) -> list[int]:
        return [int(rows[s][col[name]]) for s in picked_seqs]

    def run(name: str) -> list[int]:
        return [int(runner[name][s]) for s in picked_seqs] if have_runner else []

    common = dict(format_version=CAPTURE_FORMAT_VERSION, case_id=spec.case_id,
                  scenario=spec.scenario, workload=spec.workload_key, policy=spec.policy,
                  arm=spec.arm_label, codec=spec.codec, repetition=spec.repetition,
                  num_counted_steps=len(seqs), seqs=picked_seqs)
    return [
        CaptureFile(direction="s2r", message_type=DIRECTIONS["s2r"],
                    in_loop_encode_ns=sched("encode_ns"), in_loop_decode_ns=run("runner_decode_ns"),
                    frames=[result.s2r_frames[i] for i in picks], **common),
        CaptureFile(direction="r2s", message_type=DIRECTIONS["r2s"],
                    in_loop_encode_ns=run("runner_encode_ns"), in_loop_decode_ns=sched("decode_ns"),
                    frames=[result.r2s_frames[i] for i in picks], **common),
    ]


def _write_file(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def save_captures(run_dir: str | os.PathLike, result: CaseResult,
                  max_messages: int = MAX_MESSAGES) -> list[Path]:
    """Write ``result``'s capture files under ``run_dir/messages``; returns their paths.
    On an error the file being written is removed, and so are the case's files this
    call wrote before it: a case's capture is whole (both directions) or absent, never
    one direction that a microbench would time alone."""
    out = Path(run_dir) / MESSAGES_DIR
    paths = []
    encoder = msgspec.msgpack.Encoder()
    for cap in build_captures(result, max_messages):
        out.mkdir(exist_ok=True)
        path = out / f"{case_slug(cap.case_id)}.{cap.direction}.msgpack"
        tmp = path.with_name(path.name + ".tmp")
        try:
            _write_file(tmp, encoder.encode(cap))
            os.replace(tmp, path)
        except BaseException:
            # A disk that filled leaves a partial file: removing it gives the space
            # back, so that summary.json can still say why the run failed.
            for done in (tmp, *paths):
                try:
                    os.unlink(done)
                except OSError:
                    pass
            raise
        paths.append(path)
    return paths


#: msgspec's words for input whose end is missing (a capture file cut short).
TRUNCATED = "Input data was truncated"


#: The largest capture file read (bytes), checked before it is read: a run keeps
#: about ``MAX_CAPTURE_BYTES`` (8 MiB) of frames a file, more only where its
#: ``MIN_MESSAGES`` frames are larger (20 frames of over 50 MiB each to reach this).
CAPTURE_MAX_FILE_BYTES = 1 << 30


def _capture_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of the capture file ``path``; ``CaptureError`` (one line) for one
    that cannot be opened, is not a regular file (looked up before it is opened and
    never read: a FIFO would wait for a writer, a device such as ``/dev/zero`` never
    ends, a socket cannot be opened, a folder opens but cannot be read), in the words of ``bench.py
    report`` on a run's own files (``RUN/messages: NAME is a FIFO, not a regular
    file``; ``run_files.why_not_a_file``), is a dangling link (``RUN/messages: NAME is a
    dangling link (to TARGET), not a regular file``, as ``not_a_messages_folder`` words
    ``messages`` that is one: ``run_files.dangling_link``), or is larger than ``CAPTURE_MAX_FILE_BYTES``
    (``PATH: 2,147,483,648 bytes, more than the 1,073,741,824 a capture file is read
    up to ...``), which is checked before it is read and again as it is read (a file
    that grows meanwhile)."""
    from ipc_bench.analysis.run_files import dangling_link, why_not_a_file

    path = Path(path)
    try:  # its kind first: a socket cannot be opened, a folder opens but not to read
        mode = os.stat(path).st_mode
    except OSError as exc:
        dangling = dangling_link(path)
        if dangling is not None:  # as messages that is one (not_a_messages_folder)
            raise CaptureError(f"{path.parent}: {path.name} is {dangling}, not a "
                               "regular file") from None
        raise CaptureError(f"cannot read {path}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        raise CaptureError(f"{path.parent}: {why_not_a_file(path)}")
    try:  # O_NONBLOCK: a FIFO put there since the look-up opens without waiting
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise CaptureError(f"cannot read {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # put there since the look-up
            raise CaptureError(f"{path.parent}: {why_not_a_file(path)}")
        f, fd = open(fd, "rb"), -1  # the file object closes it from here on
        with f:
            data = b"" if st.st_size > CAPTURE_MAX_FILE_BYTES else \
                f.read(CAPTURE_MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise CaptureError(f"cannot read {path}: {exc.strerror}") from None
    finally:
        if fd >= 0:
            os.close(fd)
    size = max(st.st_size, len(data))
    if size > CAPTURE_MAX_FILE_BYTES:
        raise CaptureError(f"{path}: {size:,} bytes, more than the "
                           f"{CAPTURE_MAX_FILE_BYTES:,} a capture file is read up to "
                           "(CAPTURE_MAX_FILE_BYTES: a run keeps about 8 MiB of frames "
                           "a file): not a capture file a run wrote")
    return data


def _read_capture(path: str | os.PathLike, kind: type, decode_errors: tuple) -> Any:
    """One capture file decoded as ``kind``; ``CaptureError`` (one line) when it is
    unreadable, not a regular file or too large (``_capture_bytes``), cut short
    (``TRUNCATED``), not msgpack, or of another format.
    ``decode_errors``: the msgspec errors reported as "not a capture file of format N"
    (others as "not a capture file")."""
    data = _capture_bytes(path)
    try:
        cap = msgspec.msgpack.decode(data, type=kind)
    except msgspec.DecodeError as exc:
        if str(exc) == TRUNCATED:  # data that runs past the file's end
            raise CaptureError(f"{path}: cut short or altered ({len(data):,} bytes, its "
                               "data running past its end): not a whole capture file"
                               ) from None
        if isinstance(exc, decode_errors):
            raise CaptureError(f"{path}: not a capture file of format "
                               f"{CAPTURE_FORMAT_VERSION}: {exc}") from None
        raise CaptureError(f"{path}: not a capture file: {exc}") from None
    if cap.format_version != CAPTURE_FORMAT_VERSION:
        raise CaptureError(f"{path}: capture format {cap.format_version} is not supported "
                           f"(this ipc-bench reads {CAPTURE_FORMAT_VERSION})")
    return cap


def load_capture(path: str | os.PathLike) -> CaptureFile:
    """Read one capture file; ``CaptureError`` (one line) if unreadable, of another
    format, or not as a run writes one (``capture_problem``: ``PATH: 200 seqs but 10
    frames: not a capture file a run wrote``)."""
    cap = _read_capture(path, CaptureFile, (msgspec.ValidationError,))
    problem = capture_problem(cap)
    if problem is not None:
        raise CaptureError(f"{path}: {problem}: not a capture file a run wrote")
    return cap


#: The longest in-loop time a capture file may hold (ns): ``metadata_checks.MAX_CASE_VALUE``,
#: the largest figure a run's summary takes (1e15 ns is 11 days).
MAX_IN_LOOP_NS = 10**15


def capture_problem(cap: CaptureFile) -> str | None:
    """What in ``cap`` no run writes, in words, or ``None``: lists that should run
    parallel to ``seqs`` of other lengths (``200 seqs but 10 frames``: a re-timing would
    average frames over one set of steps and in-loop times over another), no frames,
    a negative in-loop time (``in_loop_encode_ns[3] is -1000, a negative time``) or one
    over ``MAX_IN_LOOP_NS``, a negative step, ``seqs`` not strictly increasing or more
    of them than ``num_counted_steps``
    (``build_captures`` samples distinct counted steps in order). Raises nothing."""
    n = len(cap.seqs)
    lengths = {"in_loop_encode_ns": len(cap.in_loop_encode_ns),
               "in_loop_decode_ns": len(cap.in_loop_decode_ns), "frames": len(cap.frames)}
    other = [f"{count:,} {name}" for name, count in lengths.items() if count != n]
    if other:
        return f"{n:,} seqs but {' and '.join(other)}"
    if n == 0:
        return "no frames"
    if n > cap.num_counted_steps:
        return f"{n:,} seqs, more than its num_counted_steps ({cap.num_counted_steps:,})"
    if cap.seqs[0] < 0:
        return f"seqs[0] is {cap.seqs[0]}, a negative step"
    for k in range(1, n):
        if cap.seqs[k] <= cap.seqs[k - 1]:
            return (f"seqs not increasing (seqs[{k - 1}] is {cap.seqs[k - 1]}, seqs[{k}] "
                    f"is {cap.seqs[k]})")
    for name in ("in_loop_encode_ns", "in_loop_decode_ns"):
        for k, ns in enumerate(getattr(cap, name)):
            if ns < 0:
                return f"{name}[{k}] is {ns}, a negative time"
            if ns > MAX_IN_LOOP_NS:
                return (f"{name}[{k}] is {ns:,} ns, more than {MAX_IN_LOOP_NS:.0e} (a "
                        "run's summary takes no larger time)")
    return None


def capture_paths(run_dir: str | os.PathLike) -> list[Path]:
    """The capture files of ``run_dir``, sorted by file name; ``CaptureError`` if the
    run folder has none (``why_no_captures``), or if its ``messages`` is there but not
    a folder (``not_a_messages_folder``)."""
    folder = Path(run_dir) / MESSAGES_DIR
    not_folder = not_a_messages_folder(run_dir)
    if not_folder is not None:
        raise CaptureError(not_folder)
    paths = sorted(folder.glob("*.msgpack")) if folder.is_dir() else []
    if not paths:
        why = why_no_captures(run_dir)
        yet = " yet" if why.startswith(STILL_RUNNING_WORDS) else ""
        raise CaptureError(f"no captured messages in {folder}{yet}: {why}")
    return paths


def not_a_messages_folder(run_dir: str | os.PathLike) -> str | None:
    """The line refusing ``run_dir``'s ``messages`` where it is there but is not a
    folder (links followed), said before anything in it is looked for: ``RUN: messages
    is a FIFO, not a folder of captured messages`` (a regular file, a socket, a device
    alike, in the words of ``bench.py report``: ``run_files.file_kind``), ``RUN:
    messages is a dangling link (to TARGET), not a folder of captured messages``
    (``run_files.dangling_link``, as a capture file that is one: ``_capture_bytes``),
    ``RUN: messages cannot be read: REASON`` (a link loop); ``None`` for a folder or
    nothing there (``why_no_captures`` then says why)."""
    from ipc_bench.analysis.run_files import dangling_link, file_kind
    from ipc_bench.errors import one_line

    folder = Path(run_dir) / MESSAGES_DIR
    try:
        mode = os.stat(folder).st_mode
    except FileNotFoundError:
        kind = dangling_link(folder)
        if kind is None:
            return None
    except OSError as exc:
        return one_line(f"{run_dir}: {MESSAGES_DIR} cannot be read: {exc.strerror or exc}")
    else:
        if stat.S_ISDIR(mode):
            return None
        kind = file_kind(mode)
    return one_line(f"{run_dir}: {MESSAGES_DIR} is {kind}, not a folder of captured "
                    "messages")


#: The scenarios whose cases stream their records (``CaseSpec.stream``) and so keep no
#: messages (``cli.execute``: a case keeps them at repetition 0 unless streamed).
STREAMED_SCENARIOS = ("soak",)
#: Which cases keep messages, said when a run has none.
CAPTURE_RULE = ("repetition 0 of each case keeps its counted steps' messages when it "
                "finishes, except the streamed cases of soak")
#: ``why_no_captures``' words for a run still going (a process holds its lock, as
#: ``bench.py report`` reads it: ``results.unfinished_state``) that finished no case.
STILL_RUNNING_WORDS = "the run is still running (no case has finished)"


def why_no_captures(run_dir: str | os.PathLike) -> str:
    """Why the run folder ``run_dir`` holds no captured messages, from its
    ``summary.json`` (one clause; read by ``results.read_summary``, as ``bench.py
    report`` reads it): a streamed scenario (``STREAMED_SCENARIOS``), a run of a
    ``--vllm-layout`` other than the default (``the run's cases used --vllm-layout
    1d37eb37, whose cases keep no messages (bench.py microbench times the 7f280d69c
    layout only)``: ``_later_layout``), or, followed by
    ``CAPTURE_RULE``, a run still going that finished no case (``STILL_RUNNING_WORDS``,
    as ``bench.py report`` tells a run still going: ``still_running``; the line of
    ``capture_paths`` then says ``no captured messages in DIR yet``), a run stopped or
    failed before a case finished (``complete`` false counts as not finished; the
    failed case and its error named where the summary records them), finished cases
    that all counted no step (``num_steps`` 0), or finished cases none of which kept
    messages (with what the run recorded where it failed or was stopped after them:
    ``, and the run failed (CASE: cannot write results to RUN/messages: No space left
    on device)``, as ``_why_ended`` words it); a folder without a readable ``summary.json`` is said not to be a run
    folder. The last two count the finished cases that could keep messages, those
    that never do named apart (``_could_keep``): ``none of the run's 2 finished cases
    that could keep messages kept any (its 2 single-process cases keep none)``, ``none
    of the run's 2 finished cases could keep messages (its 2 single-process cases keep
    none)``."""
    from ipc_bench.analysis.results import case_unfinished, read_summary
    from ipc_bench.analysis.run_files import ResultsError
    from ipc_bench.errors import one_line

    try:
        summary = read_summary(run_dir)
        scenario = (summary.get("metadata") or {}).get("scenario")
        cases = [c for c in list(summary.get("cases") or []) if isinstance(c, dict)]
        finished = [c for c in cases if not case_unfinished(c)]
        status = summary.get("status")
    except (ResultsError, AttributeError, TypeError):
        return ("not a run folder (no readable summary.json): give the folder a "
                "scenario's run wrote")
    if scenario in STREAMED_SCENARIOS:
        return (f"scenario {scenario} streams its cases' records to the run folder and "
                f"keeps no messages (the other scenarios keep them for repetition 0 of "
                f"each case)")
    layout = _later_layout(summary, cases)
    if layout is not None:  # build_captures keeps none: a capture records no layout
        from ipc_bench.engine.config import DEFAULT_VLLM_LAYOUT

        return (f"the run's cases used --vllm-layout {layout}, whose cases keep no "
                f"messages (bench.py microbench times the {DEFAULT_VLLM_LAYOUT} layout "
                f"only)")
    if not finished and still_running(summary, run_dir):
        return f"{STILL_RUNNING_WORDS}; {CAPTURE_RULE}"
    if not finished:
        how = {"incomplete": "was stopped", "failed": "failed"}.get(status, "ended")
        why = _why_ended(summary, cases)
        return (f"the run {how} before any case finished"
                f"{f' ({one_line(why)})' if why else ''}; {CAPTURE_RULE}")
    how = {"incomplete": "was stopped", "failed": "failed"}.get(status)
    why = _why_ended(summary, cases) if how else ""
    ended = f", and the run {how}{f' ({one_line(why)})' if why else ''}" if how else ""
    could, apart = _could_keep(finished)
    n = len(could)
    if not could:  # single-process cases and later repetitions only
        return (f"none of the run's {len(finished):,} finished "
                f"case{'' if len(finished) == 1 else 's'} could keep messages ({apart})"
                f"{ended}; {CAPTURE_RULE}")
    which = " that could keep messages" if apart else ""
    apart = f" ({apart})" if apart else ""
    if all(c.get("num_steps") == 0 for c in could):  # nothing counted, nothing kept
        return (f"the run's {n:,} finished case{'' if n == 1 else 's'}{which} counted no "
                f"step (num_steps 0{'' if n == 1 else ' in each'}), and a case keeps only "
                f"its counted steps' messages{apart}")
    return (f"none of the run's {n:,} finished case{'' if n == 1 else 's'}{which} kept "
            f"{'any' if which else 'messages'}{apart}{ended}; {CAPTURE_RULE}")


def _later_layout(summary: dict, cases: list[dict]) -> str | None:
    """The ``--vllm-layout`` other than ``DEFAULT_VLLM_LAYOUT`` the run of ``summary``
    used (its ``metadata.options.vllm_layout``, else the one its ``cases`` record),
    whose cases keep no messages (``build_captures``); ``None`` for the default layout
    or none recorded (a run from before the option ran the default)."""
    from ipc_bench.engine.config import DEFAULT_VLLM_LAYOUT, VLLM_LAYOUTS

    metadata = summary.get("metadata")
    options = metadata.get("options") if isinstance(metadata, dict) else None
    layout = options.get("vllm_layout") if isinstance(options, dict) else None
    if layout is None:
        recorded = {c.get("vllm_layout") for c in cases
                    if isinstance(c.get("vllm_layout"), str)}
        layout = recorded.pop() if len(recorded) == 1 else None
    return layout if layout in VLLM_LAYOUTS and layout != DEFAULT_VLLM_LAYOUT else None


def _could_keep(finished: list[dict]) -> tuple[list[dict], str]:
    """Of a run's ``finished`` case summaries, those that could keep messages (two
    processes, repetition 0: a ``codec`` other than ``spec.NO_CODEC``, a
    ``repetition`` 0 or none recorded) and the others in words, ``""`` where there are
    none: ``its 2 single-process cases keep none`` (scheduler and runner in one
    process: no message crosses), ``its 1 later repetition keeps none``, ``its 2
    single-process cases and 4 later repetitions keep none``."""
    from ipc_bench.harness.spec import NO_CODEC

    single = [c for c in finished if c.get("codec") == NO_CODEC]
    later = [c for c in finished if c.get("codec") != NO_CODEC and c.get("repetition")]
    could = [c for c in finished if c.get("codec") != NO_CODEC and not c.get("repetition")]
    kinds = ((single, "single-process case", "single-process cases"),
             (later, "later repetition", "later repetitions"))
    parts = [f"{len(group):,} {one if len(group) == 1 else many}"
             for group, one, many in kinds if group]
    if not parts:
        return could, ""
    verb = "keeps" if len(single) + len(later) == 1 else "keep"
    return could, f"its {' and '.join(parts)} {verb} none"


def still_running(summary: dict, run_dir: str | os.PathLike) -> bool:
    """Whether the run that wrote ``summary`` (its ``summary.json``) is still going, as
    ``bench.py report`` tells it (``results.unfinished_detail``): not complete nor
    failed, no end recorded, and a process holding the lock on its claim file
    (``results.unfinished_state``: ``STILL_RUNNING``)."""
    from ipc_bench.analysis.results import STILL_RUNNING, unfinished_state

    metadata = summary.get("metadata")
    end = metadata.get("end_time_utc") if isinstance(metadata, dict) else None
    return (summary.get("status") not in ("complete", "failed") and not end
            and unfinished_state(Path(run_dir)) == STILL_RUNNING)


def _why_ended(summary: dict, cases: list[dict]) -> str:
    """What ended a run that was stopped or failed, as its ``summary.json`` records
    it: ``CASE: ERROR`` (the failed or stopped case and its ``error``), else ``CASE:
    PROBLEM`` (that case and the first of the run's ``problems``, which a run that
    could not write a finished case's files records: ``cannot write results to
    RUN/messages: No space left on device``; the problem alone where it names the case
    already or no case is named), else the case alone; empty when it records none."""
    failed = summary.get("failed_case")
    for case in cases:
        if case.get("case_id") == failed or (failed is None and case.get("error")):
            error = case.get("error")
            if error:
                return f"{case.get('case_id')}: {error}"
            failed = case.get("case_id")
            break
    problems = summary.get("problems")
    first = str(problems[0]) if isinstance(problems, list) and problems else ""
    if failed and first and not first.startswith(str(failed)):
        return f"{failed}: {first}"
    return first or (str(failed) if failed else "")


def load_captures(run_dir: str | os.PathLike) -> list[CaptureFile]:
    """Every capture file of ``run_dir``, sorted by file name; ``CaptureError`` if the
    run folder has none."""
    return [load_capture(p) for p in capture_paths(run_dir)]


def load_capture_info(path: str | os.PathLike) -> CaptureInfo:
    """The ``CaptureInfo`` of one capture file (its frames skipped, not copied);
    ``CaptureError`` as ``load_capture``."""
    return _read_capture(path, CaptureInfo, (msgspec.ValidationError, msgspec.DecodeError))


def load_capture_infos(run_dir: str | os.PathLike) -> list[tuple[Path, CaptureInfo]]:
    """``(path, CaptureInfo)`` of every capture file of ``run_dir``, sorted by file
    name; ``CaptureError`` if it has none or one is unreadable."""
    return [(p, load_capture_info(p)) for p in capture_paths(run_dir)]


def arms_in(captures: Iterable[CaptureFile | CaptureInfo]) -> list[str]:
    """The arms (policies, or A/A labels) present: ``send`` before ``cached``, an A/A
    copy (``send'``) after its original."""
    from ipc_bench.engine.config import POLICIES

    arms = {c.arm: c.policy for c in captures}
    order = {p: i for i, p in enumerate(POLICIES)}
    return sorted(arms, key=lambda a: (order.get(arms[a], len(order)), a))
