"""pyperf micro-benchmarks of captured messages: ``python bench.py microbench RUN_DIR``.

For every captured case (``ipc_bench.analysis.capture``: up to 200 real frames per direction
from repetition 0 of each case), every direction and the case's codec, pyperf times
``encode`` of the decoded messages and ``decode`` of the frames, cycling through all
captured messages in each loop (not one hot message), with pyperf's worker processes,
loop calibration and warm-ups. One pyperf JSON file per arm (policy) is written to
``--output DIR`` (default ``RUN_DIR/microbench``): ``send.json``, ``cached.json``
(an A/A run gives ``send.json`` and ``send-prime.json``), each benchmark named
``<workload>/<direction>/<codec>/<encode|decode>``, so that::

    python -m pyperf compare_to send.json cached.json --table
    python -m pyperf stats send.json

work on them unchanged. Values are seconds per message (``inner_loops`` = messages).
The arms' benchmarks of the same name run next to each other, interleaved, which arm
goes first alternating (``interleaved_order``), so that a change of the machine's load
meets both alike; the r2s messages are byte-identical between the policies, so their
ratios are an A/A check of the machine's noise. After the run one line says how many
benchmarks pyperf would call unstable (``unstable_line``): their ratios are not to be
quoted.

Before anything is timed or written, every selected frame is decoded once with its
codec's own decoder (``check_captures``), a frame that fails stopping the run in one line
naming its file, message and why (exit 2); the pickled codecs' frames are unpickled
there with only the globals the harness's messages refer to, so a run folder from
elsewhere runs no code, and only frames that passed meet the timed ``pickle.loads``.

Which benchmarks: all captured cases by default; ``Selection`` narrows them to some
running-request counts (the ``num_running`` workload label), codecs, directions
(``s2r``: SchedulerOutput, ``r2s``: ModelRunnerOutput) and operations. How long:
``DEFAULT_SETTINGS`` (3 worker processes x (1 warm-up + 3 values) of at least 50 ms,
loops calibrated by pyperf: about 1.2 s of CPU per benchmark); ``rigorous``:
pyperf's own defaults in its ``--rigorous`` mode (40 processes x (1 warm-up + 3
values) of at least 100 ms: about 18 s of CPU per benchmark). Every other pyperf
option (``--fast``, ``-p``, ``-n``, ``-w``, ``-l``, ``--min-time``, ``--affinity`` ...)
is passed through and applies on top of these; the counts pyperf would take without
end are capped (``PYPERF_COUNT_CAPS``), as is ``--min-time`` (``MAX_MIN_TIME_S``).

Then the in-loop figures the run measured for the very same messages (the
``encode_ns`` / ``decode_ns`` of those steps) are printed next to pyperf's, and saved
as ``in_loop_vs_pyperf.json``. They are not expected to agree: in the loop each call
meets caches and branch predictors cooled by a whole scheduler or runner step, and
pays two ``perf_counter_ns`` calls; pyperf's loop runs the serializer back to back
over a working set of up to 200 messages (several MiB at 256 requests, more than
the L2 cache). Both run with the garbage collector on and the set-up heap frozen.
The ratio is reported as a finding. The in-loop figures of a case whose run withheld
its timings (``analysis.cores``: a ``--tp`` / ``--pp`` case with N readers on fewer
than N + 2 cores) are not shown, as the run's own tables do not show them: each such
row is marked ``timings_withheld`` in ``in_loop_vs_pyperf.json`` (its raw numbers
kept) and reads ``-*`` in the table, its ratio ``-``; pyperf's figures, timed here
apart from the run, are shown.

How the processes fit: this command (the coordinator) starts, per arm, at once,
``bench.py microbench RUN_DIR --policy ARM [selection] [pyperf options]
--arm-json=FILE`` (a relative path that begins with "-" as ``./-x``:
``errors.path_word``); that process (the arm) creates the ``pyperf.Runner``, which
spawns its workers by re-running ``bench.py microbench RUN_DIR --policy ARM [selection] --worker ...``
(``program_args``). A worker reads the names of all captures but the frames of the
one it times only. An arm runs its next benchmark when the coordinator writes
``GO_LINE`` to its stdin (and ends at the end of it). After each benchmark the arm
rewrites its JSON file atomically (SIGINT / SIGTERM deferred meanwhile) and prints a ``DONE_TAG`` line, from which the
coordinator shows the progress. The arms write ``NAME.json.new`` beside the earlier
``NAME.json`` (``NEW_SUFFIX``), as the coordinator does ``in_loop_vs_pyperf.json``;
once all are written each is renamed over the earlier file (``os.replace``), and the
coordinator says which earlier files it replaced. Interrupted or failed (a full disk:
one line naming the file), the coordinator stops the arm, leaves the earlier results
as they were, removes every new and temporary file (keeping the finished benchmarks,
each file loadable, only where there were no earlier results) and removes an output
folder it made and left empty. The coordinator holds a lock on its output folder
(``LOCK_FILE``, as ``bench.py report`` locks its own) while it runs: a second
microbench into the same folder is refused (one line, exit 2), and the next one into a
folder where a killed microbench left its new files removes them. The arms, and their
pyperf workers, are started SIGKILLed when the process that started them dies
(``killed_with_parent``), whenever that is: none times on, or writes a file, after
its coordinator is gone.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterable, Optional, Sequence

from ipc_bench.analysis.capture import (DIRECTIONS, CaptureFile, CaptureInfo, arms_in,
                                        load_capture)
from ipc_bench.errors import broken_link_text, output_kind_text, path_word
from ipc_bench.harness import signals
from ipc_bench.harness.run_folder import probe_write

BENCH_PY = str(Path(__file__).resolve().parents[2] / "bench.py")
#: pyperf options the coordinator sets itself.
RESERVED = ("-o", "--output", "--append", "--worker", "--pipe", "--worker-task",
            "--compare-to")
#: The operations timed per captured case and direction.
OPS = ("encode", "decode")
#: pyperf ``Runner`` settings of a default run: 3 worker processes (the fewest pyperf's
#: own ``--fast`` mode uses: three hash seeds) x (1 warm-up + 3 values), each value at
#: least 50 ms of loops; pyperf calibrates the loops. ``--rigorous`` uses pyperf's own
#: defaults instead (20 processes, 3 values, 100 ms), doubled in processes by its
#: ``--rigorous`` mode.
DEFAULT_SETTINGS = dict(processes=3, values=3, warmups=1, min_time=0.05)
#: The largest pyperf ``--min-time`` (seconds) microbench accepts. pyperf calibrates
#: each benchmark's loops until one value takes at least that long, so every value
#: (warm-ups included) takes at least that long, and calibrating the loops about twice
#: that: at 10 s a benchmark of the default settings takes over 3 x (1 + 3) x 10 s = 2
#: minutes, decode-steady's 64 benchmarks over 2 hours; pyperf's own default is 0.1 s.
MAX_MIN_TIME_S = 10.0
#: The largest pyperf counts microbench accepts, by pyperf's name of each: (its options,
#: the cap as said, what it counts). pyperf takes any whole number >= 1 (``-p``, ``-n``)
#: or >= 0 (``-w``, ``-l``, also as ``X^Y``) and would run them all: its worker
#: processes one after another, per benchmark. The caps are far above any real use; the
#: last two are pyperf's own calibration limits (``MAX_WARMUP_VALUES``, ``MAX_LOOPS``).
PYPERF_COUNT_CAPS: dict[str, tuple[str, int, str, str]] = {
    "processes": ("-p/--processes", 1000, "1000",
                  "worker processes per benchmark, run one after another; --rigorous "
                  "runs 40"),
    "values": ("-n/--values", 1000, "1000",
               "values per worker process; pyperf's default is 3"),
    "warmups": ("-w/--warmups", 300, "300",
                "warm-up values per worker process, where pyperf's own calibration of "
                "them stops"),
    "loops": ("-l/--loops", 2 ** 32, "2^32",
              "loops per value, where pyperf's own calibration of them stops"),
}
#: Start of the line an arm process prints on stdout after each benchmark, followed by
#: JSON: ``{"name", "mean_s", "stdev_s"}`` (seconds per message).
DONE_TAG = "ipc-bench-microbench-done "
#: The line the coordinator writes to an arm process's stdin to let it run its next
#: benchmark (``interleaved_order``); the arm stops, exit code 0, at the end of stdin.
GO_LINE = "go\n"
#: Seconds an arm may take to stop after the coordinator forwards a signal.
STOP_TIMEOUT_S = 10.0
#: The table of in-loop against pyperf figures a run writes beside its pyperf files.
IN_LOOP_FILE = "in_loop_vs_pyperf.json"
#: Suffix of the files a run writes beside the earlier ones (``send.json.new``); they
#: replace the earlier files only once every file of the run is written.
NEW_SUFFIX = ".new"
#: Start of every error line of this command (an arm's own line is shown as it is).
ERROR_PREFIX = "bench.py microbench: error: "
#: The file in the output folder whose ``flock`` a run holds from the moment it takes
#: the folder until it ends (``_take_output_lock``); the kernel drops the lock when the
#: process ends, SIGKILL included, so a lock file a killed run left locks nothing.
LOCK_FILE = ".microbench.lock"
#: The start of the file's name a run writes ``run_folder.PROBE_BYTES`` to and removes
#: as it takes the output folder, before anything is timed (``_probe_write``).
PROBE_PREFIX = ".microbench.probe-"


class MicrobenchError(Exception):
    """Bad input to ``microbench``; one line, exit code 2."""


def arm_file_name(arm: str) -> str:
    """``send`` -> ``send.json``; ``send'`` -> ``send-prime.json``."""
    return arm.replace("'", "-prime") + ".json"


def bench_name(cap: CaptureFile | CaptureInfo, op: str) -> str:
    """pyperf benchmark name: ``<workload>/<direction>/<codec>/<op>`` (as a pyperf
    metadata value can hold it: ``metadata_text``)."""
    return metadata_text(f"{cap.workload}/{cap.direction}/{cap.codec}/{op}")


def metadata_text(text: str) -> str:
    """``text`` as a pyperf metadata value (a benchmark's name included) can hold it:
    on one line, each line break or other unprintable character escaped
    (``errors.one_line``: a run folder named ``t_nl<newline>x y`` -> ``t_nl\\nx y``),
    which pyperf refuses in a value (``newline characters are not allowed in metadata
    values``); quoted as ``repr`` writes it (``' x'``, ``''``) where pyperf would strip
    its leading or trailing blanks or refuse it empty."""
    from ipc_bench.errors import one_line

    line = one_line(text)
    return line if line and line == line.strip() else repr(line)


def arm_identity(run_dir: str, arm: str) -> dict[str, str]:
    """The metadata naming ``arm``'s pyperf file (``metadata_text`` each):
    ``description`` (``ipc-bench captured messages, arm ARM``), ``ipc_bench_run`` (the
    run folder's name) and ``ipc_bench_arm``."""
    return {"description": metadata_text(f"ipc-bench captured messages, arm {arm}"),
            "ipc_bench_run": metadata_text(os.path.basename(os.path.abspath(run_dir))),
            "ipc_bench_arm": metadata_text(arm)}


def arm_metadata(run_dir: str, arm: str) -> dict[str, Any]:
    """The metadata of every benchmark of ``arm``'s pyperf file (``metadata_text``
    each): ``arm_identity``'s, and, from the run's
    ``summary.json`` where it can be read, ``ipc_bench_run_status`` (``complete``,
    ``incomplete``, ``failed``) and, for a run that is not complete,
    ``ipc_bench_run_warning`` (``incomplete_run_text``: what it recorded, the cases
    finished of those planned), which names the run by its absolute path, not by the
    path as given (``.``, which says nothing once the file is elsewhere)."""
    from ipc_bench.analysis.results import read_summary
    from ipc_bench.analysis.run_files import ResultsError

    meta = arm_identity(run_dir, arm)
    try:
        summary = read_summary(run_dir)
    except ResultsError:
        return meta
    meta["ipc_bench_run_status"] = metadata_text(str(summary.get("status", "unknown")))
    warning = incomplete_run_text(run_dir, summary, os.path.abspath(run_dir))
    if warning is not None:
        meta["ipc_bench_run_warning"] = metadata_text(warning)
    return meta


#: What ``incomplete_run_text``'s line says of the cases a run did not finish, for
#: ``bench.py microbench`` (its ``tail`` by default).
MICROBENCH_TAIL = "the cases it did not finish are not timed"


def incomplete_run_text(run_dir: str, summary: dict[str, Any],
                        name: Optional[str] = None,
                        tail: str = MICROBENCH_TAIL) -> Optional[str]:
    """For a run (``run_dir``, its ``summary.json`` read as ``summary``; the line names
    it ``name``, the folder as given where ``None``) that is not
    complete (killed, stopped, failed: its captures hold the cases that finished only),
    one line saying so, in ``bench.py report``'s words (``results.incomplete_run_line``,
    which ``bench.py report`` warns with too: the run's state, its problems or what its
    files tell, ``results.unfinished_detail``), and how many of its planned cases
    finished: ``RUN: this run is incomplete: stopped without
    finishing its summary (...): no process holds its lock, no end was recorded, summary
    status incomplete, 1 of 2 cases recorded, ...; 1 of its 2 cases finished: the cases
    it did not finish are not timed``; ``None`` for a complete run. ``tail``: what
    follows for the command that reads the run (``MICROBENCH_TAIL`` by default; a
    script's own, ``scripts/codec_fit.py``'s: ``the fits cover the cases it
    finished``)."""
    from ipc_bench.analysis.results import (_problems_detail, case_unfinished,
                                            incomplete_run_line, unfinished_detail)

    status = summary.get("status")
    if status == "complete":
        return None
    cases = [c for c in summary.get("cases") or [] if isinstance(c, dict)]
    done = sum(not case_unfinished(c) for c in cases)
    metadata = summary.get("metadata")
    planned = metadata.get("cases") if isinstance(metadata, dict) else None
    problems = summary.get("problems")
    try:
        detail = (_problems_detail(summary, problems if isinstance(problems, list) else [],
                                   Path(run_dir)) or unfinished_detail(summary, Path(run_dir)))
    except (AttributeError, TypeError, KeyError, ValueError, OSError):  # an edited summary
        detail = ""
    return incomplete_run_line(run_dir if name is None else name, str(status), detail, done,
                               len(planned) if isinstance(planned, list) else None,
                               tail)


def workload_labels(workload: str) -> dict[str, str]:
    """A workload key's labels: ``"num_running=16,step_time_ms=5"`` ->
    ``{"num_running": "16", "step_time_ms": "5"}`` (a part without ``=`` is skipped)."""
    return dict(part.split("=", 1) for part in workload.split(",") if "=" in part)


def _natural(text: str) -> tuple:
    """Sort key that orders the numbers inside ``text`` by value (16 before 256)."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text))


@dataclass(frozen=True)
class Selection:
    """Which captured cases, directions and operations to re-time; ``None``: all.

    ``num_running``: running-request counts (the workload label ``num_running``);
    ``codecs``: codec names (``msgpack``, ``pickle``); ``directions``: ``s2r``
    (SchedulerOutput) and / or ``r2s`` (ModelRunnerOutput); ``ops``: ``encode`` and / or
    ``decode``. ``argv()`` gives the same selection as ``bench.py microbench`` options.
    """

    num_running: Optional[tuple[int, ...]] = None
    codecs: Optional[tuple[str, ...]] = None
    directions: Optional[tuple[str, ...]] = None
    ops: Optional[tuple[str, ...]] = None

    def argv(self) -> list[str]:
        """The selection as command-line options (empty for everything)."""
        out: list[str] = []
        for opt, values in (("--num-running", self.num_running), ("--codecs", self.codecs),
                            ("--directions", self.directions), ("--ops", self.ops)):
            if values is not None:
                out += [opt, ",".join(map(str, values))]
        return out

    def keeps(self, cap: CaptureFile | CaptureInfo) -> bool:
        """Whether ``cap`` (a capture of one case and direction) is selected."""
        if self.codecs is not None and cap.codec not in self.codecs:
            return False
        if self.directions is not None and cap.direction not in self.directions:
            return False
        if self.num_running is not None:
            value = workload_labels(cap.workload).get("num_running")
            if value is None or not value.isdigit() or int(value) not in self.num_running:
                return False
        return True

    def op_list(self) -> tuple[str, ...]:
        """The selected operations, in ``OPS`` order."""
        return tuple(op for op in OPS if self.ops is None or op in self.ops)


def _check_available(infos: list[CaptureInfo], selection: Selection, run_dir: str) -> None:
    """``MicrobenchError`` naming the first selected value no capture has, with what
    the run did capture; ``--num-running`` on captures none of which has a
    ``num_running`` label (a trace replay's ``trace=NAME:N``) says so instead."""
    def have(values) -> list[str]:
        return sorted({str(v) for v in values}, key=_natural)

    running = [workload_labels(i.workload).get("num_running") for i in infos]
    checks = (("--num-running", selection.num_running, have(r for r in running if r)),
              ("--codecs", selection.codecs, have(i.codec for i in infos)),
              ("--directions", selection.directions, have(i.direction for i in infos)))
    for opt, wanted, available in checks:
        missing = [str(v) for v in wanted or () if str(v) not in available]
        if missing and opt == "--num-running" and infos and not available:
            raise MicrobenchError(f"{opt} {','.join(missing)}: the messages captured in "
                                  f"{run_dir} carry no num_running label (a trace "
                                  f"replay): leave out {opt}")
        if missing:
            what = ", ".join(available) if available else "none"
            raise MicrobenchError(f"{opt} {','.join(missing)}: not among the messages "
                                  f"captured in {run_dir} (available: {what})")


def select_captures(run_dir: str, selection: Selection) -> list[tuple[Path, CaptureInfo]]:
    """The ``(path, CaptureInfo)`` of ``run_dir``'s repetition-0 captures that
    ``selection`` keeps, sorted by workload (numbers by value), direction and codec.
    Raises ``CaptureError`` when the run has no captures or one the selection could
    keep is unreadable (one its file name says it leaves out is passed over,
    ``_capture_infos``), and ``MicrobenchError`` (one line, listing what is available)
    when the selection keeps none."""
    infos = [(p, i) for p, i in _capture_infos(run_dir, selection) if i.repetition == 0]
    _check_available([i for _, i in infos], selection, run_dir)
    kept = [(p, i) for p, i in infos if selection.keeps(i)]
    if not kept or not selection.op_list():
        cases = sorted({f"{i.workload} {i.codec}" for _, i in infos}, key=_natural)
        raise MicrobenchError(f"the selection {' '.join(selection.argv())} matches no "
                              f"captured messages in {run_dir} (captured: {'; '.join(cases)})")
    _check_distinct(kept)
    order = {d: k for k, d in enumerate(DIRECTIONS)}
    return sorted(kept, key=lambda pi: (_natural(pi[1].workload), order[pi[1].direction],
                                        pi[1].codec))


def _check_distinct(kept: list[tuple[Path, CaptureInfo]]) -> None:
    """Raise ``MicrobenchError`` where two of the ``kept`` captures say they are the same
    one (workload, arm, codec, repetition and direction, as their contents give them): a
    file copied over another's name, or renamed; a run writes each once."""
    seen: dict[tuple, Path] = {}
    for path, i in kept:
        key = (i.workload, i.arm, i.codec, i.repetition, i.direction)
        if key in seen:
            raise MicrobenchError(
                f"{seen[key]} and {path} hold the same capture ({i.direction} of "
                f"{i.workload}, arm {i.arm}, {i.codec}, repetition {i.repetition}): one of "
                "them was copied over another file's name or renamed")
        seen[key] = path


def _capture_infos(run_dir: str, selection: Selection) -> list[tuple[Path, CaptureInfo]]:
    """``capture.load_capture_infos`` of ``run_dir``, but a file that cannot be read
    whose name (``capture.case_slug``: ``<workload>.<arm>.<codec>.r<N>.<direction>
    .msgpack``) says the selection leaves it out (another workload, codec, direction
    or a repetition above 0) is passed over: a damaged capture of a case not asked for
    does not stop the others. ``CaptureError`` for any other unreadable file."""
    from types import SimpleNamespace

    from ipc_bench.analysis.capture import CaptureError, capture_paths, load_capture_info

    out = []
    for path in capture_paths(run_dir):
        try:
            out.append((path, load_capture_info(path)))
        except CaptureError:
            parts = path.name[:-len(".msgpack")].rsplit(".", 4)
            if len(parts) == 5 and parts[4] in DIRECTIONS and re.fullmatch(r"r\d+", parts[3]):
                named = SimpleNamespace(workload=parts[0], codec=parts[2], direction=parts[4])
                if parts[3] != "r0" or not selection.keeps(named):
                    continue
            raise
    return out


def uncaptured_cases(run_dir: str, selection: Selection,
                     captured: Iterable[CaptureInfo]) -> list[str]:
    """The ids of ``run_dir``'s cases that ``summary.json`` lists finished (repetition
    0, two processes, counted steps, not streamed: those a run captures) and
    ``selection`` would keep, but that have no capture of a selected direction among
    ``captured``: a run that could not write them (a full disk as the case ended, which
    removes the case's capture whole). ``[]`` where ``summary.json`` cannot be read."""
    from types import SimpleNamespace

    from ipc_bench.analysis.results import read_summary
    from ipc_bench.analysis.run_files import ResultsError
    from ipc_bench.harness.spec import NO_CODEC

    try:
        summary = read_summary(run_dir)
    except ResultsError:
        return []
    md = summary.get("metadata") if isinstance(summary.get("metadata"), dict) else {}
    streamed = {c.get("case_id") for c in md.get("cases") or []
                if isinstance(c, dict) and c.get("stream")}
    have = {(i.case_id, i.direction) for i in captured}
    out = []
    for c in summary.get("cases") or []:
        if not (isinstance(c, dict) and c.get("complete") is True and not c.get("repetition")
                and c.get("codec") not in (None, NO_CODEC) and c.get("num_steps")
                and c.get("case_id") not in streamed):
            continue
        wanted = [d for d in DIRECTIONS if selection.keeps(SimpleNamespace(
            codec=c["codec"], direction=d, workload=str(c.get("workload", ""))))]
        if any((c["case_id"], d) not in have for d in wanted):
            out.append(str(c["case_id"]))
    return out


def arm_benchmarks(selected: list[tuple[Path, CaptureInfo]], arm: str,
                   selection: Selection) -> list[tuple[Path, CaptureInfo, str]]:
    """``(path, info, op)`` of every benchmark of ``arm``, in the order pyperf runs
    them (the arm process and its workers must agree on it)."""
    return [(p, i, op) for p, i in selected if i.arm == arm for op in selection.op_list()]


def interleaved_order(plan: dict[str, list[str]]) -> list[tuple[str, str]]:
    """The order the coordinator runs the benchmarks in: ``(arm, name)`` pairs, from
    ``plan`` (each arm's benchmark names, in the order its process runs them). The
    arms' benchmarks of the same name (workload, direction, codec, op) run next to each
    other, so that a change of the machine's load meets both alike; which arm goes first
    alternates from one name to the next (the arms in ``plan``'s order for the 1st,
    3rd ... name, reversed for the 2nd, 4th ...). Each arm keeps its own order; a name
    only some arms have runs alone among them, as a name of its own. E.g.
    ``{"send": ["a", "b"], "cached": ["a", "b"]}`` -> ``[("send", "a"), ("cached",
    "a"), ("cached", "b"), ("send", "b")]``."""
    left = {arm: list(names) for arm, names in plan.items()}
    order: list[tuple[str, str]] = []
    k = 0
    while any(left.values()):
        head = next(names[0] for names in left.values() if names)
        # an arm that has ``head`` later runs its earlier names first, each alone
        blocked = next((names for names in left.values() if head in names[1:]), None)
        name = blocked[0] if blocked is not None else head
        arms = [a for a, names in left.items() if names and names[0] == name
                and not (blocked is not None and name in names[1:])]
        if not arms:  # a name twice in one arm's list (select_captures refuses that)
            arms = [next(a for a, names in left.items() if names and names[0] == name)]
        for arm in arms if k % 2 == 0 else arms[::-1]:
            order.append((arm, name))
            left[arm].pop(0)
        k += 1
    return order


# ------------------------------------------------------------------ one arm (pyperf)


class _TimedOp:
    """``pyperf`` time function: ``op`` (``encode`` or ``decode``) over every captured
    message of the capture file ``path`` per loop; returns seconds.

    Set-up happens on the first call, before the clock starts, so only the worker that
    runs this benchmark pays it (pyperf re-runs every ``bench_time_func`` call in each
    worker but times one): reading the frames, checking each (``check_frames``: this
    process reads the file again, after the coordinator checked it), decoding them into
    message objects for
    ``encode``, then ``gc.collect(); gc.freeze()``, as the harness freezes its heap
    after warm-up, so collections during timing see the same small young heap as in
    the loop.
    """

    def __init__(self, path: Path, op: str, cap: Optional[CaptureFile] = None):
        self.path = path
        self.op = op
        self.cap = cap
        self.fn: Optional[Callable] = None
        self.items: Optional[list] = None

    def _set_up(self) -> None:
        import gc

        from ipc_bench.wire.codecs import model_runner_output_codec, scheduler_output_codec

        cap = self.cap if self.cap is not None else load_capture(self.path)
        check_frames(self.path, cap)  # in this process too, before the plain decode
        make = {"s2r": scheduler_output_codec, "r2s": model_runner_output_codec}
        codec = make[cap.direction](cap.codec)
        frames = [bytes(f) for f in cap.frames]
        self.items = [codec.decode(f) for f in frames] if self.op == "encode" else frames
        self.fn = codec.encode if self.op == "encode" else codec.decode
        self.cap = None
        gc.collect()
        gc.freeze()

    def __call__(self, loops: int) -> float:
        if self.items is None:
            self._set_up()
        fn, items = self.fn, self.items
        perf = time.perf_counter
        sink = deque(maxlen=0).extend
        t0 = perf()
        for _ in range(loops):
            sink(map(fn, items))
        return perf() - t0


def check_frames(path: Path, cap: CaptureFile) -> None:
    """Decode every frame of ``cap`` (the capture file ``path``) once, before any is
    timed, with its codec's own decoder; the pickled codecs unpickle them with only the
    globals the harness's messages refer to (``codecs.PickleCodec.decode_checked``), so
    that no code in a run folder from elsewhere runs, and only frames that passed meet
    the timed plain ``pickle.loads``. ``CaptureError`` (one line) for the first frame
    that fails: ``PATH: message 6 of 20 (step 25): cannot be decoded: SchedulerOutput:
    Input data was truncated``, ``PATH: message 1 of 20 (step 20): a pickle frame refers
    to posix.system, which no SchedulerOutput or ModelRunnerOutput holds: not unpickled
    (a run folder from elsewhere can run code through pickle)``; a frame the pickled
    codecs' checks refuse (``codecs.RefusedPickle``) with their words; a frame that
    decodes as the other direction's message says so (``cannot be decoded: a
    ModelRunnerOutput, not a SchedulerOutput: a capture of the other direction? (the
    file says s2r)``); a codec or direction this ipc-bench does not know is named
    likewise."""
    from ipc_bench.analysis.capture import CaptureError
    from ipc_bench.errors import one_line
    from ipc_bench.wire.codecs import (CODECS, DecodeError, RefusedPickle, UnsafePickle,
                                       model_runner_output_codec, scheduler_output_codec)

    make = {"s2r": scheduler_output_codec, "r2s": model_runner_output_codec}
    if cap.direction not in make or cap.codec not in CODECS:
        what, known = (("direction", make) if cap.direction not in make else
                       ("codec", CODECS))
        value = cap.direction if what == "direction" else cap.codec
        raise CaptureError(one_line(f"{path}: {what} {value!r} is not one this ipc-bench "
                                    f"decodes ({', '.join(known)})"))
    codec = make[cap.direction](cap.codec)
    other_direction = {"s2r": "r2s", "r2s": "s2r"}[cap.direction]
    for k, frame in enumerate(cap.frames):
        try:
            codec.decode_checked(frame)
        except Exception as exc:  # DecodeError, or whatever a damaged frame raises
            step = f" (step {cap.seqs[k]})" if k < len(cap.seqs) else ""
            where = f"{path}: message {k + 1} of {len(cap.frames)}{step}"
            if isinstance(exc, UnsafePickle):
                raise CaptureError(one_line(f"{where}: {exc} (a run folder from elsewhere "
                                            "can run code through pickle)")) from None
            if isinstance(exc, RefusedPickle):
                raise CaptureError(one_line(f"{where}: {exc}")) from None
            if isinstance(exc, DecodeError):
                other = make[other_direction](cap.codec)
                try:
                    other.decode_checked(frame)
                except Exception:  # not the other direction's message either
                    pass
                else:
                    raise CaptureError(one_line(
                        f"{where}: cannot be decoded: a {other.msg_type.__name__}, not a "
                        f"{codec.msg_type.__name__}: a capture of the other direction? "
                        f"(the file says {cap.direction})")) from None
            why = str(exc) if isinstance(exc, DecodeError) else f"{type(exc).__name__}: {exc}"
            raise CaptureError(one_line(f"{where}: cannot be decoded: {why}")) from None


def check_captures(selected: list[tuple[Path, CaptureInfo]]) -> None:
    """``check_frames`` of every capture file of ``selected`` (``select_captures``),
    one after another, before anything is timed or written. ``CaptureError`` (one line)
    for the first file that cannot be read or frame that cannot be decoded."""
    for path, _info in selected:
        check_frames(path, load_capture(path))


def _bench_metadata(info: CaptureInfo, cap: Optional[CaptureFile]) -> dict[str, Any]:
    meta: dict[str, Any] = {"ipc_bench_case": metadata_text(info.case_id),
                            "ipc_bench_messages": len(info.seqs)}
    if cap is not None and cap.frames:
        meta["ipc_bench_mean_payload_bytes"] = sum(map(len, cap.frames)) / len(cap.frames)
    return meta


def _write_suite(benches: list, path: str, shown: str) -> None:
    """Write ``benches`` (pyperf ``Benchmark``s) to ``path`` atomically, through
    ``PATH.tmp``, as pyperf writes them (``BenchmarkSuite.dump``); when that fails (a
    full disk, the file-size limit) the temporary file is removed and the ``OSError``
    names ``shown`` (the file the run is writing, not its temporary name), its
    ``strerror`` the reason (``write_failure_reason``: the file's size and the limit)."""
    import pyperf

    buf = io.StringIO()
    pyperf.BenchmarkSuite(benches).dump(buf)
    data = buf.getvalue().encode()
    tmp = path + ".tmp"
    with signals.deferred():
        try:
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise OSError(exc.errno, write_failure_reason(exc, len(data)), shown) from None


def runner_settings(rigorous: bool) -> tuple[dict[str, Any], list[str]]:
    """``(pyperf.Runner keyword arguments, extra pyperf options)`` of a run:
    ``DEFAULT_SETTINGS`` and none, or for ``rigorous`` pyperf's own defaults and
    ``["--rigorous"]``."""
    return ({}, ["--rigorous"]) if rigorous else (dict(DEFAULT_SETTINGS), [])


def run_arm(ns: argparse.Namespace, rest: list[str], selection: Selection) -> int:
    """Time one arm (``ns.policy``) with a ``pyperf.Runner``: in the arm process
    (``ns.arm_json`` set) the manager, writing the JSON file and a ``DONE_TAG`` line
    after each benchmark; in a worker (pyperf's ``--worker``) the one benchmark its
    ``--worker-task`` names. Returns the exit code."""
    import pyperf

    items = arm_benchmarks(select_captures(ns.run_dir, selection), ns.policy, selection)
    if not items:
        raise MicrobenchError(f"no captured messages of arm {ns.policy!r} in {ns.run_dir}")
    settings, extra = runner_settings(ns.rigorous)
    runner = pyperf.Runner(
        **settings,
        program_args=(BENCH_PY, "microbench", ns.run_dir, "--policy", ns.policy,
                      *selection.argv()),
        metadata=arm_metadata(ns.run_dir, ns.policy))
    runner.parse_args(rest + extra)
    if runner.args.worker:
        return _run_benchmarks(ns, runner, items)
    import pyperf._manager

    manager_subprocess = pyperf._manager.subprocess
    pyperf._manager.subprocess = _workers_killed_with_arm(manager_subprocess)
    try:
        return _run_benchmarks(ns, runner, items)
    finally:
        pyperf._manager.subprocess = manager_subprocess


def _run_benchmarks(ns: argparse.Namespace, runner, items: list) -> int:
    """``run_arm``'s loop over its benchmarks ``items`` (``arm_benchmarks``) with the
    ``pyperf.Runner`` ``runner``, its options parsed."""
    mine = runner.args.worker_task if runner.args.worker else None
    done = []
    gated = bool(ns.arm_json) and not runner.args.worker
    for task, (path, info, op) in enumerate(items):
        if gated and not sys.stdin.readline():  # the coordinator's turn: GO_LINE or EOF
            return 0
        # the frames now only where this process times the benchmark (metadata)
        timed_here = runner.args.in_process or mine == task
        cap = load_capture(path) if timed_here else None
        bench = runner.bench_time_func(bench_name(info, op), _TimedOp(path, op, cap),
                                       inner_loops=len(info.seqs),
                                       metadata=_bench_metadata(info, cap))
        if bench is None or not ns.arm_json:
            continue
        done.append(bench)
        _write_suite(done, ns.arm_json, ns.arm_json.removesuffix(NEW_SUFFIX))
        stdev = bench.stdev() if bench.get_nvalue() > 1 else 0.0
        print(DONE_TAG + json.dumps({"name": bench.get_name(), "mean_s": bench.mean(),
                                     "stdev_s": stdev}), flush=True)
    return 0


# ------------------------------------------------------------------ coordinator


def probe_runner(**kwargs):
    """A ``pyperf.Runner`` of a class of its own, built with ``kwargs``, only to parse
    options. pyperf allows one Runner per class and process and remembers each class by
    ``id(cls)``, which a freed class passes on to a later one: the probe's class is
    forgotten at once, so neither it nor a later class with its id blocks a Runner."""
    import pyperf

    cls = type("OptionProbe", (pyperf.Runner,), {})
    runner = cls(**kwargs)
    getattr(pyperf.Runner, "_created", set()).discard(id(cls))
    return runner


def pyperf_option_strings() -> list[str]:
    """Every option string pyperf's ``Runner`` parses (``-p``, ``--processes``,
    ``--fast`` ...): those ``bench.py microbench`` passes on to it."""
    parser = argparse.ArgumentParser(prog="pyperf", add_help=False)
    probe_runner(_argparser=parser)
    return [o for a in parser._actions for o in a.option_strings]


def check_pyperf_options(rest: Sequence[str], parser_class: type, rigorous: bool) -> None:
    """Raise ``MicrobenchError`` (one line) when ``rest`` holds an option pyperf does not
    know, a bad value, one microbench sets itself (``RESERVED``), or ``--fast`` with
    ``rigorous``; pyperf's parser takes any count, any float as ``--min-time`` and any
    text as ``--affinity``, so these are checked here (``_check_counts``: at most
    ``PYPERF_COUNT_CAPS``, ``_check_min_time``, ``_check_pyperf_affinity``: an empty one
    too). ``parser_class``: an
    ``argparse.ArgumentParser`` subclass whose ``error`` raises ``MicrobenchError``;
    pyperf's own parser is built on it."""
    for opt in rest:
        if opt.split("=", 1)[0] in RESERVED:
            raise MicrobenchError(f"option {opt} is set by microbench itself")
    parser = parser_class(prog="bench.py microbench")
    probe_runner(_argparser=parser)
    for action in parser._actions:  # argparse keeps no public list of them
        if action.dest in ("warmups", "loops"):
            action.type = _count_words(_no_huge_power(action.type), 0)
        elif action.dest in ("processes", "values", "timeout"):
            action.type = _count_words(action.type, 1)
    args = parser.parse_args(list(rest))
    if rigorous and args.fast:
        raise MicrobenchError("--fast and --rigorous exclude each other")
    _check_counts(args)
    _check_min_time(args.min_time)
    if args.affinity is not None:  # pyperf reads "" as not given: isolated CPUs
        _check_pyperf_affinity(args.affinity)


def _no_huge_power(convert: Callable[[str], int]) -> Callable[[str], int]:
    """pyperf's ``positive_or_nul`` (``convert``) for ``-w`` / ``-l``, but an ``X^Y``
    beyond 2^64 (|X| >= 2, Y > 64) is not computed (``10^100000000`` would take minutes):
    it reads as 2^65, above every cap (``_check_counts``), or as a refusal where it is
    negative (worded by ``_count_words``). Keeps ``convert``'s name."""
    def parse(text: str) -> int:
        x, hat, y = text.partition("^")
        with contextlib.suppress(ValueError):  # not whole numbers: pyperf's refusal
            base, exp = int(x), int(y)
            if hat and abs(base) >= 2 and exp > 64:
                if base < 0 and exp % 2:
                    raise argparse.ArgumentTypeError(
                        f"invalid {convert.__name__} value: {text!r}")
                return 2 ** 65
        return convert(text)
    parse.__name__ = convert.__name__
    return parse


def _count_words(convert: Callable[[str], int], lo: int) -> Callable[[str], int]:
    """pyperf's type of a count option (``convert``: ``strictly_positive``, ``lo`` 1:
    ``-p``, ``-n``, ``--timeout``; ``positive_or_nul``, ``lo`` 0, which also reads
    ``X^Y``: ``-w``, ``-l``), its refusals in the words of the run's options of one whole
    number: ``must be at least 1, got 0``, ``expected an integer, got 'x'`` (after
    argparse's ``argument -p/--processes: ``), where pyperf's read ``invalid
    strictly_positive value: '0'``."""
    def parse(text: str) -> int:
        try:
            return convert(text)
        except (ValueError, argparse.ArgumentTypeError):
            pass
        x, hat, y = text.partition("^")
        try:
            if hat and lo == 0:
                int(x), int(y)
            else:
                int(text)
        except ValueError:
            powers = " (or X^Y)" if lo == 0 else ""
            raise argparse.ArgumentTypeError(
                f"expected an integer{powers}, got {text!r}") from None
        raise argparse.ArgumentTypeError(f"must be at least {lo}, got {text}")
    parse.__name__ = convert.__name__
    return parse


def _check_counts(args: argparse.Namespace) -> None:
    """``MicrobenchError`` (one line) for a pyperf ``-p``, ``-n``, ``-w`` or ``-l`` (as
    pyperf parsed them into ``args``) above its cap in ``PYPERF_COUNT_CAPS``: ``-p/--processes
    100000: expected at most 1000 (worker processes per benchmark, ...)``."""
    for dest, (options, cap, cap_text, what) in PYPERF_COUNT_CAPS.items():
        n = getattr(args, dest, None)
        if n is not None and n > cap:
            shown = str(n) if n.bit_length() <= 64 else "over 2^64"
            raise MicrobenchError(f"{options} {shown}: expected at most {cap_text} ({what})")


def _check_min_time(seconds: float) -> None:
    """``MicrobenchError`` (one line) for a pyperf ``--min-time`` (seconds, a float as
    pyperf parsed it) that is not a number > 0 and at most ``MAX_MIN_TIME_S``: pyperf
    would run a negative or NaN one as if it were 0 and calibrate an infinite one
    forever."""
    if not 0 < seconds <= MAX_MIN_TIME_S:  # False for NaN too
        raise MicrobenchError(
            f"--min-time {seconds:g}: expected seconds above 0 and at most "
            f"{MAX_MIN_TIME_S:g} (the least time of each value pyperf times; at "
            f"{MAX_MIN_TIME_S:g} a benchmark of the default settings takes over 2 minutes)")


#: pyperf's ``--affinity CPU_LIST``: CPUs and ranges joined by commas (``0-3,5``).
_CPU_LIST = re.compile(r"[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*")


def _check_pyperf_affinity(text: str) -> None:
    """``MicrobenchError`` (one line) for a pyperf ``--affinity`` that its workers
    would fail on: not a CPU list (``_CPU_LIST``), a range that runs backwards, or a
    CPU this process may not run on (``os.sched_getaffinity``, where there is one)."""
    value = text.strip()
    if not _CPU_LIST.fullmatch(value):
        raise MicrobenchError(f"--affinity: expected a CPU list such as 0-3,5, got {text!r}")
    cpus: set[int] = set()
    for part in value.split(","):
        first, _, last = part.partition("-")
        if last and int(last) < int(first):
            raise MicrobenchError(f"--affinity: range {part} runs backwards: give N-M "
                                  "with N <= M")
        cpus.update(range(int(first), int(last or first) + 1))
    if hasattr(os, "sched_getaffinity"):
        outside = sorted(cpus - os.sched_getaffinity(0))
        if outside:
            from ipc_bench.harness.affinity import format_cpus

            def listed(ids) -> str:  # in pyperf's syntax: 0-1,3
                return format_cpus(ids).replace("+", ",")

            raise MicrobenchError(
                f"--affinity: CPU {listed(outside)} is not among those this process may "
                f"run on ({listed(os.sched_getaffinity(0))})")


def arm_failed_line(arm: str, code: int, line: str) -> str:
    """The error line of arm process ``arm`` that exited with ``code`` (a ``Popen``
    return code: negative, killed by that signal), ``line`` its last line of stderr,
    each negative exit code in it (pyperf's ``... failed with exit code -9`` of a
    worker) followed by its signal's name: ``bench.py microbench: error: pyperf run of
    arm cached exited with 1: RuntimeError: ... failed with exit code -9 (killed by
    SIGKILL)``; ``... pyperf run of arm cached was killed by SIGKILL: ...``."""
    def name(n: int) -> str:
        try:
            return signal.Signals(n).name
        except ValueError:
            return f"signal {n}"

    line = re.sub(r"(exit code -(\d+))\b(?! \(killed)",
                  lambda m: f"{m.group(1)} (killed by {name(int(m.group(2)))})", line)
    how = f"was killed by {name(-code)}" if code < 0 else f"exited with {code}"
    return f"{ERROR_PREFIX}pyperf run of arm {arm} {how}: {line}"


#: pyperf's error when one of its worker processes fails (``Master``'s RuntimeError).
_WORKER_FAILED = re.compile(r"failed with exit code -?[0-9]+")
#: Lines of a traceback that are not an error line.
_NOT_AN_ERROR = re.compile(r"Traceback \(most recent call last\):|During handling of the "
                           r"above exception|The above exception was the direct cause")


def arm_error_line(stderr: str, default: str) -> str:
    """The line an arm process's ``stderr`` (all of it) ends with (stripped;
    ``default`` when it wrote none) and, where that is pyperf's ``RuntimeError: ...
    failed with exit code N`` for a worker process, whose stderr the arm shares, the
    worker's own error line (the last unindented line before it that is not a
    traceback heading): ``RuntimeError: /usr/bin/python failed with exit code 1; the
    worker's error: TypeError: 'str' object is not callable``."""
    lines = [ln.rstrip() for ln in stderr.splitlines() if ln.strip()]
    if not lines:
        return default
    last = lines[-1].strip()
    if _WORKER_FAILED.search(last):
        for line in reversed(lines[:-1]):
            if not line[0].isspace() and not _NOT_AN_ERROR.match(line):
                return f"{last}; the worker's error: {line}"
    return last


def killed_with_parent(parent: int) -> Callable[[], None]:
    """A ``subprocess.Popen`` ``preexec_fn`` (run in the child between fork and exec)
    that has the child SIGKILLed when its parent, pid ``parent``, dies
    (``signals.set_parent_death_signal``, kept across the exec), also when that parent
    died before ``prctl`` ran (the child then kills itself at once), as
    ``signals.terminated_with_parent`` does with SIGTERM: an arm process, or a pyperf
    worker of one, never times on, or writes its file, after the process that started
    it is gone, whenever that one was killed (its start included, before the child's
    own ``set_parent_death_signal``). Linux; elsewhere it does nothing."""
    def preexec() -> None:
        if signals.set_parent_death_signal() and os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


def _workers_killed_with_arm(subprocess_module):
    """``subprocess`` as pyperf's ``Manager`` uses it to start its worker processes
    (``subprocess.Popen``), its ``Popen`` starting each one ``killed_with_parent`` of
    this process (the arm)."""
    import types

    def popen(*args, **kwargs):
        return subprocess_module.Popen(*args, preexec_fn=killed_with_parent(os.getpid()),
                                       **kwargs)

    shim = types.SimpleNamespace(**vars(subprocess_module))
    shim.Popen = popen
    return shim


class _ArmFailed(Exception):
    """An arm process exited with an error (not interrupted): its code, last line."""

    def __init__(self, code: int, line: str):
        super().__init__(line)
        self.code, self.line, self.arm = code, line, ""


class _ArmProcess:
    """One arm process, started at once and kept waiting on its stdin: ``step`` lets
    it run its next benchmark (``GO_LINE``) and reads its stdout up to that
    benchmark's ``DONE_TAG`` record; ``finish`` ends its stdin and waits for it to
    exit; ``stop`` stops it (``signals.stop_child``). ``_ArmFailed`` when it fails (its exit
    code and last line of stderr)."""

    def __init__(self, cmd: list[str], verbose: bool):
        self.verbose = verbose
        self.err = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, text=True,
                                     preexec_fn=killed_with_parent(os.getpid()))

    def step(self) -> dict:
        """Run the arm's next benchmark; its ``DONE_TAG`` record."""
        try:
            self.proc.stdin.write(GO_LINE)
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # it has exited: read on to its end and its exit code
        for line in self.proc.stdout:
            if line.startswith(DONE_TAG):
                return json.loads(line[len(DONE_TAG):])
            if self.verbose:
                sys.stderr.write(line)
        self.proc.wait()
        self._check("exited before its next benchmark")
        raise _ArmFailed(0, "exited before its next benchmark")

    def finish(self) -> None:
        """No more benchmarks: end its stdin and wait for it to exit."""
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        for line in self.proc.stdout:
            if self.verbose and not line.startswith(DONE_TAG):
                sys.stderr.write(line)
        self.proc.wait()
        self._check("no message")

    def _check(self, default: str) -> None:
        if self.proc.returncode != 0:
            self.err.seek(0)
            raise _ArmFailed(self.proc.returncode, arm_error_line(self.err.read(), default))

    def stop(self, signum: int) -> None:
        """Stop it with ``signum`` (if still running) and release its pipes."""
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                stream.close()
        signals.stop_child(self.proc, signum, STOP_TIMEOUT_S)
        self.err.close()


def _run_interleaved(cmds: dict[str, list[str]], order: list[tuple[str, str]],
                     on_done: Callable[[str, dict], None], verbose: bool) -> None:
    """Start one arm process per ``cmds`` entry and run their benchmarks in ``order``
    (``interleaved_order``), calling ``on_done(arm, record)`` after each. ``_ArmFailed``
    (with ``arm`` set) when one fails; ``signals.Interrupted`` propagates after every
    arm has been stopped (their JSON files then hold the finished benchmarks)."""
    import signal

    procs: dict[str, _ArmProcess] = {}
    arm = ""
    try:
        for arm, cmd in cmds.items():
            procs[arm] = _ArmProcess(cmd, verbose)
        for arm, _name in order:
            on_done(arm, procs[arm].step())
        for arm, proc in procs.items():
            proc.finish()
    except _ArmFailed as exc:
        exc.arm = arm
        raise
    except signals.Interrupted as exc:
        for proc in procs.values():
            proc.stop(exc.code - 128)
        procs = {}
        raise
    finally:
        for proc in procs.values():
            proc.stop(signal.SIGTERM)


@dataclass
class _Output:
    """A run's output folder: ``arms`` (whose pyperf files it writes, then
    ``IN_LOOP_FILE``: ``names``), ``earlier`` (those names already there, kept whole
    until the run is complete), ``created`` (whether the run made the folder) and
    ``committed`` (whether the new files have replaced the earlier ones), ``kept``
    (the arms' files of finished benchmarks a run that stopped short kept:
    ``_stopped_short``), ``lock`` (the file descriptor holding ``LOCK_FILE``'s lock,
    ``None`` once released or where the file system has no locks) and ``removed``
    (the names of the new files of a killed run that the run removed: ``_stale_files``)."""

    dir: Path
    arms: list[str]
    earlier: list[str]
    created: bool
    committed: bool = False
    kept: list[Path] = field(default_factory=list)
    lock: Optional[int] = None
    removed: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [arm_file_name(a) for a in self.arms] + [IN_LOOP_FILE]

    @property
    def shown(self) -> str:
        """``dir`` as the lines printed name it, a path to paste: a relative one that
        begins with "-" as ``./-x/microbench`` (``errors.path_word``; ``Path`` drops
        the ``./`` of ``./-x``)."""
        return path_word(str(self.dir))

    def new(self, name: str) -> Path:
        """Where the run writes ``name`` until it is complete (``NAME.new``)."""
        return self.dir / (name + NEW_SUFFIX)

    def leftovers(self) -> list[Path]:
        """The run's new and temporary files (``NAME.new``, ``NAME.new.tmp``)."""
        return [p for n in self.names for p in (self.new(n), self.dir / f"{n}.new.tmp")]

    def release(self) -> None:
        """Give up the output folder's lock (``lock``), removing ``LOCK_FILE`` where it
        is still the file locked (not one another run has made since)."""
        if self.lock is None:
            return
        with contextlib.suppress(OSError):
            held, now = os.fstat(self.lock), os.stat(self.dir / LOCK_FILE)
            if (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino):
                os.unlink(self.dir / LOCK_FILE)  # while locked: an opener sees another
        os.close(self.lock)
        self.lock = None


def _take_output_lock(out_dir: Path) -> Optional[int]:
    """A file descriptor holding an exclusive ``flock`` on ``out_dir``'s ``LOCK_FILE``
    (made where missing), taken without waiting, as ``bench.py report`` locks its
    output folder; ``None`` on a file system without locks (the run goes on without
    one). ``MicrobenchError`` where another microbench holds it: ``output folder DIR is
    being written by another microbench still going; give another --output, or run
    this one again once it ends`` (both would time on the same CPUs, and each replace
    the other's files). ``OSError`` where the file cannot be made (a read-only
    folder). A file unlinked by its holder between the open and the lock is opened
    again."""
    path = out_dir / LOCK_FILE
    while True:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held, now = os.fstat(fd), os.stat(path)
        except BlockingIOError:
            os.close(fd)
            raise MicrobenchError(f"output folder {out_dir} is being written by another "
                                  "microbench still going; give another --output, or run "
                                  "this one again once it ends") from None
        except FileNotFoundError:  # unlinked as its holder released it: the next one
            os.close(fd)
            continue
        except OSError:  # no locks on this file system
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(path)
            return None
        if (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino):
            return fd
        os.close(fd)


def _stale_files(out_dir: Path) -> list[str]:
    """The names of the new and temporary files (``ARM.json.new``, ``ARM.json.new.tmp``
    of any arm: ``POLICIES``, an A/A copy's ``-prime`` included;
    ``in_loop_vs_pyperf.json.new``) in ``out_dir``: what a microbench killed (SIGKILL)
    before it finished left there, for the next one, holding the folder's lock, to
    remove. Sorted by name."""
    from ipc_bench.engine.config import POLICIES

    names = "|".join([f"(?:{re.escape(p)})(?:-prime)*\\.json" for p in POLICIES]
                     + [re.escape(IN_LOOP_FILE)])
    pattern = re.compile(f"(?:{names}){re.escape(NEW_SUFFIX)}(?:\\.tmp)?")
    return sorted(e.name for e in out_dir.iterdir()
                  if pattern.fullmatch(e.name) and not e.is_dir())


def _probe_write(out_dir: Path) -> None:
    """``run_folder.probe_write`` in ``out_dir`` (``PROBE_PREFIX``): the ``OSError`` of a
    folder whose file system is full (``ENOSPC``), over its quota (``EDQUOT``),
    read-only or not writable, found before the benchmarks are timed rather than after
    (the lock file, empty, is made on a full disk too). A write the file-size limit
    refuses (``EFBIG``) is not the folder's: ``file_size_refusal`` judges that limit
    against the files themselves."""
    try:
        probe_write(out_dir, PROBE_PREFIX)
    except OSError as exc:
        if exc.errno != errno.EFBIG:
            raise


def _output_dir(ns: argparse.Namespace, arms: list[str]) -> _Output:
    """Create the output folder if needed, take its lock (``_take_output_lock``:
    ``MicrobenchError`` where another microbench holds it) and note this command's
    earlier files there (pyperf files of these arms, ``in_loop_vs_pyperf.json``), which
    stay as they are until the new set is complete; new files a killed run left
    (``_stale_files``) are removed, their names kept in ``removed``; then a small file
    is written there and removed (``_probe_write``), so that a full disk is refused
    before anything is timed, the folder removed where the run made it.
    ``MicrobenchError``: ``output path PATH exists and is not a folder`` (or ``output
    path PATH is a symbolic link to TARGET, which is not a folder``:
    ``errors.output_kind_text``) and ``output
    folder PATH is a symbolic link to TARGET, which does not exist`` (or ``cannot write
    the pyperf files to PATH: LINK is ...``; ``errors.broken_link_text``: as run and
    report say), else ``cannot write to PATH: REASON``, ending ``; write it elsewhere
    with --output DIR`` where the default ``RUN_DIR/microbench`` was refused for its
    permissions or a read-only file system (as report says)."""
    out_dir = Path(ns.output) if ns.output else Path(ns.run_dir) / "microbench"
    out: Optional[_Output] = None
    try:
        problem = broken_link_text(out_dir, "the pyperf files")  # the run's words
        if problem is not None:  # mkdir: No such file or directory
            raise MicrobenchError(problem)
        try:
            out_dir.mkdir(parents=True)
            created = True
        except FileExistsError:  # a folder already (or a file: refused below)
            created = False
        out = _Output(out_dir, arms, [], created)
        out.lock = _take_output_lock(out_dir)
        out.earlier = [n for n in out.names if (out_dir / n).exists()]
        out.removed = sorted(set(_stale_files(out_dir))
                             | {p.name for p in out.leftovers() if os.path.lexists(p)})
        for name in out.removed:
            (out_dir / name).unlink(missing_ok=True)
        _probe_write(out_dir)
    except OSError as exc:
        if out is not None:
            out.release()
            if out.created:  # nothing was written: the folder goes, as it came
                with contextlib.suppress(OSError):
                    out_dir.rmdir()
        kind = output_kind_text(out_dir)  # a file, /dev/null, a link to either
        if kind is not None:
            raise MicrobenchError(kind) from None
        # the default place (RUN_DIR/microbench) refused: another is a flag away
        hint = ("; write it elsewhere with --output DIR" if ns.output is None
                and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM) else "")
        raise MicrobenchError(f"cannot write to {out_dir}: {exc.strerror}{hint}") from None
    return out


def _commit(out: _Output) -> list[str]:
    """Rename the run's new files over the earlier ones, each atomically, with SIGINT /
    SIGTERM deferred meanwhile; returns the names of the earlier files replaced."""
    replaced = []
    with signals.deferred():
        for name in out.names:
            if (out.dir / name).exists():
                replaced.append(name)
            os.replace(out.new(name), out.dir / name)
        out.committed = True
    return replaced


def _stopped_short(out: Optional[_Output]) -> str:
    """Tidy up after a run that stopped short (interrupted, failed) and say what is
    left. Earlier results stay as they were and every new file goes; where there were
    none, the finished benchmarks are kept under the arms' names (each file loadable).
    A folder the run made and left empty is removed."""
    if out is None:
        return "nothing was written"
    if out.committed:
        return f"the results are in {out.shown}"
    kept = []
    with signals.deferred():
        for path in out.leftovers():
            final = out.dir / path.name.removesuffix(NEW_SUFFIX)
            if (not out.earlier and path.suffix == NEW_SUFFIX and final.name != IN_LOOP_FILE
                    and path.exists()):
                os.replace(path, final)
                kept.append(final)
            else:
                path.unlink(missing_ok=True)
        out.release()  # its lock file goes: the folder may be left empty
        if out.created and out.dir.is_dir() and not any(out.dir.iterdir()):
            out.dir.rmdir()
    out.kept = kept
    if kept:
        kept_words = ", ".join(path_word(str(k)) for k in kept)
        return f"the benchmarks finished until then are kept in {kept_words}"
    if out.earlier:
        return f"nothing was written, the earlier results in {out.shown} are kept"
    return "nothing was written"


def _failed(out: _Output, line: str) -> int:
    """Print ``line`` (an error) with what is left (``_stopped_short``); returns 1."""
    print(f"{line}; {_stopped_short(out)}", file=sys.stderr)
    return 1


@dataclass
class Coordination:
    """What ``coordinate`` needs besides the command line: ``format_rows`` turns
    ``in_loop_vs_pyperf``'s rows into text (``ipc_bench.report.microbench``);
    ``progress(total)`` returns an object with ``done(arm, name, mean_s, stdev_s)`` and
    ``close()`` (called more than once); ``written(text)`` is told, once the new files
    have replaced the earlier ones and before anything is printed on stdout, where they
    are (``the results are in DIR (send.json, cached.json, in_loop_vs_pyperf.json)``),
    for the line of a stdout that then fails (``cli.console.written_elsewhere``);
    ``one_write()`` a context manager under which the end text is printed, reaching
    stdout in one write as a run's end does (``cli.console.one_write``: a reader that
    reads once, ``| head -1``, takes it all before it goes)."""

    format_rows: Callable[[list[dict[str, Any]]], str]
    progress: Callable[[int], Any]
    one_write: Callable[[], ContextManager[None]]
    written: Callable[[str], None] = lambda _text: None


def effective_settings(rigorous: bool, rest: Sequence[str]) -> Optional[dict[str, Any]]:
    """What each arm's ``pyperf.Runner`` will use with ``runner_settings(rigorous)`` and
    the pyperf options ``rest`` (``--fast``, ``-p``, ``-n``, ``-w``, ``--min-time``
    ...): ``processes``, ``values``, ``warmups``, ``min_time`` (s) and ``loops`` (0:
    calibrated by pyperf), as pyperf itself derives them (a probe ``Runner`` parses the
    same arguments); ``None`` when pyperf refuses the combination (the arm then says
    why)."""
    settings, extra = runner_settings(rigorous)
    runner = probe_runner(**settings)
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # pyperf prints its refusal
            args = runner.parse_args(list(rest) + extra)
    except SystemExit:
        return None
    return dict(processes=args.processes, values=args.values, warmups=args.warmups,
                min_time=args.min_time, loops=args.loops)


def _plural(n: int, word: str, plural: str = "") -> str:
    """``1 value``, ``3 values`` (``plural``: the plural when not ``word + "s"``)."""
    return f"{n} {word}" if n == 1 else f"{n} {plural or word + 's'}"


def settings_text(rigorous: bool, rest: Sequence[str]) -> str:
    """The pyperf settings in words, for the first line of a run: the processes,
    warm-ups, values and minimum time per value that ``rest`` and ``rigorous`` give
    (``effective_settings``), then the pyperf options as given. E.g. ``3 processes x
    (1 warm-up + 3 values) of >= 50 ms: the default settings, not pyperf's rigorous
    mode (--rigorous for that)``."""
    s = effective_settings(rigorous, rest)
    shape = ("pyperf's settings" if s is None else
             f"{_plural(s['processes'], 'process', 'processes')} x "
             f"({_plural(s['warmups'], 'warm-up')} + {_plural(s['values'], 'value')}) "
             f"of >= {s['min_time'] * 1e3:g} ms")
    if rigorous:
        base = f"pyperf --rigorous ({shape})"
    else:
        base = shape + ("" if rest else ": the default settings, not pyperf's rigorous "
                                        "mode (--rigorous for that)")
    return base + (f"; pyperf options: {' '.join(rest)}" if rest else "")


def least_arm_file_bytes(run_dir: str, arm: str,
                         items: Sequence[tuple[Path, CaptureInfo, str]],
                         settings: dict[str, Any]) -> int:
    """The fewest bytes the pyperf file of ``arm`` (``arm_file_name``) can take once its
    benchmarks ``items`` (``arm_benchmarks``) are all timed with ``settings``
    (``effective_settings``: ``processes`` runs of ``warmups`` warm-ups, none where not
    given, and ``values`` values each, one more run of one warm-up where pyperf
    calibrates the loops, ``loops`` 0): the file pyperf writes (``BenchmarkSuite.dump``,
    metadata common to every run or benchmark stored once) of what every such file
    holds: each benchmark's name, case, messages (``inner_loops``), loops and unit, the
    arm's description, run and arm, pyperf's version, and each run's date and duration,
    every value and warm-up ``1.0`` of 1 loop, every date of the shortest form pyperf
    writes and every run's duration the same. The file written is larger (timings have
    more digits; pyperf adds the machine, the Python, the memory and load; the run's
    status, ``arm_metadata``), so a limit below this is one the file cannot fit."""
    import datetime

    import pyperf

    common = dict(arm_identity(run_dir, arm), perf_version=pyperf.__version__,
                  unit="second")
    start = datetime.datetime(2000, 1, 1)
    benches, k = [], 0
    calibrating = [[(1, 1.0)]] if settings.get("loops", 1) == 0 else []
    for _, info, op in items:
        meta = dict(common, name=bench_name(info, op),
                    ipc_bench_case=metadata_text(info.case_id),
                    ipc_bench_messages=len(info.seqs), inner_loops=len(info.seqs),
                    loops=1, duration=1.0)
        runs = []
        # every run is a worker process of its own, one after another: its date (to the
        # microsecond) differs from every other's; the shortest has no microseconds
        for warmups, values in ([(w, []) for w in calibrating] + [
                ([(1, 1.0)] * settings.get("warmups", 0), [1.0] * settings["values"])]
                * settings["processes"]):
            date = (start + datetime.timedelta(seconds=k)).isoformat(" ")
            k += 1
            runs.append(pyperf.Run(values, warmups=warmups, metadata=dict(meta, date=date),
                                   collect_metadata=False))
        benches.append(pyperf.Benchmark(runs))
    if not benches:
        return 0
    buf = io.StringIO()
    pyperf.BenchmarkSuite(benches).dump(buf)
    return len(buf.getvalue().encode())


class _InLoopTimes(CaptureInfo):
    """A capture file's ``CaptureInfo`` and in-loop timings, its frames skipped: whether
    a benchmark of it gets a row of ``IN_LOOP_FILE`` (``in_loop_vs_pyperf``)."""

    in_loop_encode_ns: list[int]
    in_loop_decode_ns: list[int]


def least_in_loop_file_bytes(run_dir: str, plan: dict[str, list]) -> tuple[int, int]:
    """``(bytes, rows)``: the fewest bytes ``IN_LOOP_FILE`` can take once the benchmarks
    of ``plan`` (arm -> ``arm_benchmarks``) are all timed, and how many rows it holds:
    ``in_loop_vs_pyperf``'s rows, one per benchmark whose capture has in-loop timings
    of its operation, with every field but the figures as they will be (the case's
    ``timings_withheld``, ``readers_kind``, ``readers`` and ``cores`` from
    ``summary.json``), every
    figure the shortest number JSON has for it (``1.0``; the in-loop median, which can be
    a whole number, ``0``), written as ``_report`` writes it. ``CaptureError`` for a
    capture that cannot be read."""
    import msgspec

    from ipc_bench.analysis import cores as core_rule
    from ipc_bench.analysis.capture import _read_capture

    cases = run_cases(run_dir)
    times: dict[Path, _InLoopTimes] = {}
    rows = []
    for arm, items in plan.items():
        for path, info, op in items:
            if path not in times:
                times[path] = _read_capture(path, _InLoopTimes, (msgspec.ValidationError,
                                                                 msgspec.DecodeError))
            cap = times[path]
            if not (cap.in_loop_encode_ns if op == "encode" else cap.in_loop_decode_ns):
                continue
            held = core_rule.kind_readers_and_cores(cases.get(cap.case_id) or {})
            rows.append(dict(
                arm=arm, workload=cap.workload, direction=cap.direction, codec=cap.codec,
                op=op, case_id=cap.case_id, messages=len(cap.seqs), mean_payload_bytes=1.0,
                in_loop_mean_ns=1.0, in_loop_median_ns=0, pyperf_mean_ns=1.0,
                pyperf_stdev_ns=1.0, pyperf_median_ns=1.0, in_loop_to_pyperf=1.0,
                timings_withheld=held is not None, readers_kind=held[0] if held else None,
                readers=held[1] if held else None, cores=held[2] if held else None))
    return len((json.dumps(rows, indent=1) + "\n").encode()), len(rows)


def _limit_words(soft: int, exact: bool = False) -> str:
    """The file-size limit ``soft`` (bytes) as the lines of this command say it:
    ``ulimit -f 2: 2 KiB a file`` (``exact``: ``ulimit -f 2: 2,048 bytes a file``), or
    ``1,000 bytes a file`` where it is not whole KiB (set in bytes, not by the shell)."""
    if soft % 1024:
        return f"{soft:,} bytes a file"
    return (f"ulimit -f {soft // 1024}: "
            f"{f'{soft:,} bytes' if exact else f'{soft // 1024:,} KiB'} a file")


def write_failure_reason(exc: OSError, size: Optional[int] = None) -> str:
    """Why writing a file of the run failed, for the line naming it: where the
    process's file-size limit (``RLIMIT_FSIZE``) refused it (``EFBIG``), ``File too
    large: 1,454 bytes, above the file-size limit (ulimit -f 1: 1,024 bytes a file)``
    (``size``: the bytes the file takes, left out where ``None``); for too few file
    descriptors ``errors.fd_shortage_text``'s line; otherwise the system's words (``No
    space left on device``)."""
    import resource

    from ipc_bench.errors import fd_shortage_text

    words = exc.strerror or str(exc)
    if exc.errno == errno.EFBIG:
        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if soft != resource.RLIM_INFINITY:
            taken = "" if size is None else f"{size:,} bytes, "
            return f"{words}: {taken}above the file-size limit ({_limit_words(soft, True)})"
    return fd_shortage_text(exc) or words


def file_size_refusal(run_dir: str, plan: dict[str, list],
                      settings: Optional[dict[str, Any]]) -> Optional[str]:
    """Where the process's file-size limit (``RLIMIT_FSIZE``, ``ulimit -f``) is below
    what a file of the run needs, the line refusing the run before anything is
    measured: an arm's pyperf file (``least_arm_file_bytes`` of ``plan``: arm -> its
    benchmarks, timed with ``settings``), then ``IN_LOOP_FILE``
    (``least_in_loop_file_bytes``), the first that cannot fit: ``the file-size limit
    (ulimit -f 2: 2 KiB a file) is below what send.json needs (at least 2,345 bytes for
    its 16 benchmarks); raise it (e.g. ulimit -f unlimited), or time fewer benchmarks``
    (``... what in_loop_vs_pyperf.json needs (at least 9,876 bytes for its 32 rows)
    ...``; a limit not in whole KiB: ``(1,000 bytes a file)``, as
    ``errors.file_size_text`` words it); ``None`` otherwise (no limit, one the files
    fit, or ``settings`` ``None``: pyperf refuses its options, which the arm then says).
    A limit these pass can still be too small for the files as written (their timings'
    digits, pyperf's metadata of the machine): that write fails late, one line naming the
    file (``write_failure_reason``). ``CaptureError`` for a capture that cannot be
    read."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if soft == resource.RLIM_INFINITY or settings is None:
        return None
    needs = [(arm_file_name(arm), least_arm_file_bytes(run_dir, arm, items, settings),
              _plural(len(items), "benchmark")) for arm, items in plan.items()]
    if all(need <= soft for _, need, _ in needs):
        need, rows = least_in_loop_file_bytes(run_dir, plan)
        needs.append((IN_LOOP_FILE, need, _plural(rows, "row")))
    for name, need, what in needs:
        if need > soft:
            return (f"the file-size limit ({_limit_words(soft)}) is below what {name} "
                    f"needs (at least {need:,} bytes for its {what}); raise it (e.g. "
                    "ulimit -f unlimited), or time fewer benchmarks")
    return None


def coordinate(ns: argparse.Namespace, rest: list[str], selection: Selection,
               how: Coordination) -> int:
    """Run pyperf once per arm over the selected captures, the arms' benchmarks
    interleaved (``interleaved_order``), showing the progress, then
    save and print ``in_loop_vs_pyperf``'s rows. Returns the exit code: 0; 1 when an
    arm failed or a file could not be written; 130 / 143 when interrupted by SIGINT /
    SIGTERM, with the interrupt line (``Interrupted.line``) saying how many benchmarks
    had finished and what was kept: ``bench.py microbench: interrupted by SIGINT after
    3 of 16 benchmarks; nothing was written (exit 130)``. Earlier results in the output
    folder are replaced only once the new files are all written; a run that stops
    short leaves them as they were (``_stopped_short``). The output folder is locked
    from the moment it is taken until the run ends (``_output_dir``): a second
    microbench into it meanwhile is refused, and new files a killed one left there are
    removed, one line naming them (``microbench: removed send.json.new in DIR, left by a
    microbench killed before it finished``). An interrupt before the
    benchmarks are planned propagates (``bench.py`` prints its own line). Raises
    ``MicrobenchError`` or ``CaptureError`` (one line) on bad input: the run folder and
    its ``summary.json`` are checked first as ``bench.py report`` checks them
    (``results.check_run_dir``, ``results.read_summary``), with its words."""
    from ipc_bench.analysis.results import check_run_dir, read_summary
    from ipc_bench.analysis.run_files import ResultsError
    from ipc_bench.errors import one_line

    state: dict[str, Any] = {"done": 0, "total": None, "out": None}
    try:
        try:
            check_run_dir(ns.run_dir, several=False)  # one RUN_DIR
            read_summary(ns.run_dir)  # cut short, not an object, another format version
        except ResultsError as exc:  # the words of bench.py report
            raise MicrobenchError(one_line(str(exc))) from None
        return _coordinate(ns, rest, selection, how, state)
    except signals.Interrupted as exc:
        if state["total"] is None:  # nothing planned yet: bench.py's own line
            raise
        left = _stopped_short(state["out"])
        # an arm writes its file as a benchmark ends, before the coordinator hears of it:
        # a signal between the two keeps a benchmark not counted yet
        done = max(state["done"], _benchmarks_in(state["out"].kept if state["out"] else []))
        print(exc.line("bench.py microbench", left,
                       when=f"after {done} of {state['total']} benchmarks"), file=sys.stderr)
        return exc.code
    finally:
        if state["out"] is not None:  # its output folder's lock (_output_dir)
            state["out"].release()


def _benchmarks_in(paths: list[Path]) -> int:
    """How many benchmarks the pyperf files ``paths`` hold together (0 for one that
    cannot be read)."""
    import pyperf

    count = 0
    for path in paths:
        try:
            count += len(pyperf.BenchmarkSuite.load(str(path)).get_benchmarks())
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return count


def still_running_refusal(run_dir: str) -> Optional[str]:
    """The line refusing to time the captures of ``run_dir`` while its run is still
    going (a process holds its lock, no end recorded: ``capture.still_running``, as
    ``bench.py report`` tells a run still going), ``None`` otherwise: ``RUN is still
    running (it holds its lock; 4 of 8 cases recorded): timed now, pyperf's workers
    would compete with it for the CPU and the cases it has not finished would be left
    out; run microbench once the run ends``. A refusal, not the warning ``report``
    gives (whose tables are the run's own, measured before): the timings made here
    would be skewed by the run's processes, and saved as if they were not.
    ``MicrobenchError`` for a ``summary.json`` that cannot be read (in the words of
    ``bench.py report``), as ``coordinate`` refuses one."""
    from ipc_bench.analysis.capture import still_running
    from ipc_bench.analysis.results import read_summary
    from ipc_bench.analysis.run_files import ResultsError
    from ipc_bench.errors import one_line

    try:
        summary = read_summary(run_dir)
    except ResultsError as exc:
        raise MicrobenchError(one_line(str(exc))) from None
    if not still_running(summary, run_dir):
        return None
    recorded = summary.get("cases")
    planned = (summary.get("metadata") or {}).get("cases")
    count = (f"; {len(recorded)} of {len(planned)} cases recorded"
             if isinstance(recorded, list) and isinstance(planned, list) else "")
    return one_line(f"{run_dir} is still running (it holds its lock{count}): timed now, "
                    "pyperf's workers would compete with it for the CPU and the cases it "
                    "has not finished would be left out; run microbench once the run ends")


def _coordinate(ns: argparse.Namespace, rest: list[str], selection: Selection,
                how: Coordination, state: dict[str, Any]) -> int:
    """``coordinate``'s work; ``state`` (``done``, ``total``, ``out``) tells
    ``coordinate`` how far it got when a signal arrives."""
    selected = select_captures(ns.run_dir, selection)
    refusal = still_running_refusal(ns.run_dir)
    if refusal is not None:  # after select_captures: it says a run with none finished yet
        raise MicrobenchError(refusal)
    check_captures(selected)  # every frame decodes, no pickle runs code: before timing
    arms = arms_in(i for _, i in selected)
    plan = {arm: arm_benchmarks(selected, arm, selection) for arm in arms}
    state["total"] = total = sum(map(len, plan.values()))
    order = interleaved_order({a: [bench_name(i, op) for _, i, op in plan[a]] for a in arms})
    refusal = file_size_refusal(ns.run_dir, plan, effective_settings(ns.rigorous, rest))
    if refusal is not None:  # before anything is measured or made, as a run refuses
        raise MicrobenchError(refusal)
    with signals.deferred():
        state["out"] = out = _output_dir(ns, arms)
    verbose = any(o in ("-v", "--verbose") for o in rest)
    print(f"microbench: {total} benchmarks ({', '.join(f'{a}: {len(plan[a])}' for a in arms)}"
          f"{'; the arms interleaved' if len(arms) > 1 else ''}) -> {out.shown}; "
          f"{settings_text(ns.rigorous, rest)}", file=sys.stderr, flush=True)
    if out.removed:
        print(f"microbench: removed {', '.join(out.removed)} in {out.shown}, left by a "
              "microbench killed before it finished", file=sys.stderr, flush=True)
    _warn_incomplete(ns.run_dir)
    missing = uncaptured_cases(ns.run_dir, selection, (i for _, i in selected))
    if missing:
        print(f"microbench: note: {len(missing)} finished case{'s' * (len(missing) > 1)} "
              f"of the run {'have' if len(missing) > 1 else 'has'} no captured messages, so "
              f"{'they are' if len(missing) > 1 else 'it is'} not timed (the run could not "
              f"write them; summary.json says why): {', '.join(missing)}",
              file=sys.stderr, flush=True)
    progress = how.progress(total)
    # the paths as words no parser reads as an option: a RUN_DIR or --output given as
    # ./-x reaches here as -x/... (Path drops the ./), which the arm's parser, and
    # pyperf's workers after it, would take for an option
    cmds = {arm: [sys.executable, BENCH_PY, "microbench", path_word(ns.run_dir),
                  "--policy", arm, *selection.argv(),
                  *(["--rigorous"] if ns.rigorous else []),
                  *([] if verbose else ["--quiet"]), *rest,
                  "--arm-json=" + path_word(str(out.new(arm_file_name(arm))))]
            for arm in arms}

    def on_done(arm: str, rec: dict) -> None:
        state["done"] += 1
        progress.done(arm, rec["name"], rec["mean_s"], rec["stdev_s"])
    try:
        _run_interleaved(cmds, order, on_done, verbose)
    except _ArmFailed as exc:
        progress.close()
        return _failed(out, exc.line if exc.line.startswith(ERROR_PREFIX) else
                       arm_failed_line(exc.arm, exc.code, exc.line))
    finally:
        progress.close()
    return _report(selected, out, how, run_cases(ns.run_dir))


def _warn_incomplete(run_dir: str) -> None:
    """Print ``bench.py microbench: warning: LINE`` on stderr (every command's
    warnings start with its name) for a run that is not complete
    (``incomplete_run_text``; its pyperf files say it too: ``arm_metadata``)."""
    from ipc_bench.analysis.results import read_summary

    warning = incomplete_run_text(run_dir, read_summary(run_dir))
    if warning is not None:
        print(f"bench.py microbench: warning: {warning}", file=sys.stderr, flush=True)


def run_cases(run_dir: str) -> dict[str, dict[str, Any]]:
    """The case summaries of ``run_dir``'s ``summary.json`` by ``case_id`` (those that
    are objects with one), as ``in_loop_vs_pyperf`` reads them."""
    from ipc_bench.analysis.results import read_summary

    cases = read_summary(run_dir).get("cases")
    return {c["case_id"]: c for c in cases if isinstance(c, dict) and "case_id" in c} \
        if isinstance(cases, list) else {}


def _write_text(path: Path, text: str, shown: Path) -> None:
    """Write ``text`` to ``path`` (SIGINT / SIGTERM deferred); when that fails the file
    is removed and the ``OSError`` names ``shown``, its ``strerror`` the reason
    (``write_failure_reason``)."""
    with signals.deferred():
        try:
            path.write_text(text)
        except OSError as exc:
            with contextlib.suppress(OSError):
                path.unlink()
            reason = write_failure_reason(exc, len(text.encode()))
            raise OSError(exc.errno, reason, str(shown)) from None


def _report(selected: list[tuple[Path, CaptureInfo]], out: _Output, how: Coordination,
            cases: Optional[dict[str, dict[str, Any]]] = None) -> int:
    """Write the in-loop against pyperf rows, put the run's files in place of the
    earlier ones (saying which were replaced, and telling ``how.written`` where they
    are), print the rows (``how.format_rows``) and the pyperf commands; returns 0, or 1
    when a file could not be written."""
    caps = [load_capture(p) for p, _ in selected]
    rows = in_loop_vs_pyperf(caps, {a: out.new(arm_file_name(a)) for a in out.arms}, cases)
    try:
        _write_text(out.new(IN_LOOP_FILE), json.dumps(rows, indent=1) + "\n",
                    out.dir / IN_LOOP_FILE)
    except OSError as exc:
        return _failed(out, f"{ERROR_PREFIX}cannot write {exc.filename}: {exc.strerror}")
    replaced = _commit(out)
    how.written(f"the results are in {out.shown} ({', '.join(out.names)})")
    if replaced:
        print(f"microbench: replaced the earlier {', '.join(replaced)} in {out.shown}",
              file=sys.stderr, flush=True)
    names = [str(out.dir / arm_file_name(a)) for a in out.arms]
    text = [how.format_rows(rows)]
    line = unstable_line(names)
    if line:
        text.append(f"\n{line}")
    text += pyperf_command_lines(names)
    with how.one_write():
        for t in text:
            print(t)
    return 0


def pyperf_command_lines(names: Sequence[str]) -> list[str]:
    """The pyperf commands printed after a run over its pyperf files ``names``, each a
    shell line to paste (``errors.shell_line``: ``--output '/r/mb dir'`` gives
    ``python -m pyperf stats '/r/mb dir/send.json'``): ``compare`` (two files or more,
    after a blank line), ``stats`` and ``check`` of the first; a relative name that
    begins with "-" as ``./-x/send.json`` (``errors.path_word``), which pyperf reads as
    no option."""
    from ipc_bench.errors import path_word, shell_line

    pyperf = ["python", "-m", "pyperf"]
    names = [path_word(name) for name in names]
    lines = []
    if len(names) >= 2:
        lines.append(f"\ncompare: {shell_line([*pyperf, 'compare_to', *names, '--table'])}")
    lines.append(f"stats:   {shell_line([*pyperf, 'stats', names[0]])}")
    lines.append(f"check:   {shell_line([*pyperf, 'check', names[0]])}")
    return lines


def pyperf_would_warn(bench) -> bool:
    """Whether ``python -m pyperf check`` marks the pyperf ``Benchmark`` ``bench``
    unstable ("the benchmark result may be unstable"): pyperf's own check
    (``pyperf._cli.format_checks``) where this pyperf has it, else its first rule: a
    standard deviation of 10 % of the mean or more."""
    try:
        from pyperf._cli import format_checks
    except ImportError:  # pyperf moved it: its main rule
        values = bench.get_values()
        return len(values) >= 2 and bench.stdev() >= 0.1 * bench.mean()
    return any("may be unstable" in ln for ln in format_checks(bench))


def unstable_line(files: Sequence[str | Path]) -> Optional[str]:
    """One line on the benchmarks of the pyperf files ``files`` that pyperf would call
    unstable (``pyperf_would_warn``), or ``None`` when there are none: ``microbench:
    pyperf would call 3 of 64 benchmarks unstable (python -m pyperf check FILE lists
    them); do not quote their ratios``."""
    import pyperf

    benches = [b for f in files for b in pyperf.BenchmarkSuite.load(str(f)).get_benchmarks()]
    n = sum(map(pyperf_would_warn, benches))
    if not n:
        return None
    return (f"microbench: pyperf would call {n} of {len(benches)} benchmarks unstable "
            "(python -m pyperf check FILE lists them); do not quote their ratios")


def in_loop_vs_pyperf(caps: list[CaptureFile], files: dict[str, Path],
                      cases: Optional[dict[str, dict[str, Any]]] = None
                      ) -> list[dict[str, Any]]:
    """One row per (arm, workload, direction, codec, op): the run's in-loop ns per
    message (mean, median) over the captured steps and pyperf's (mean, stdev, median)
    for the same messages, with ``in_loop_to_pyperf`` = in-loop mean / pyperf mean,
    and ``timings_withheld``: whether the run withheld the timings of the row's case
    (``cases``, the run's case summaries by ``case_id``; ``cores.kind_readers_and_cores``),
    with its ``readers_kind`` (``"tp"``, ``"pp"``), ``readers`` (N) and ``cores`` then
    (``None`` otherwise); such a row keeps
    its in-loop numbers, which the table does not show."""
    import statistics

    import pyperf

    from ipc_bench.analysis import cores as core_rule

    cases = cases or {}
    rows = []
    for arm, path in files.items():
        suite = pyperf.BenchmarkSuite.load(str(path))
        benches = {b.get_name(): b for b in suite.get_benchmarks()}
        for cap in caps:
            if cap.arm != arm:
                continue
            for op, in_loop in (("encode", cap.in_loop_encode_ns),
                                ("decode", cap.in_loop_decode_ns)):
                bench = benches.get(bench_name(cap, op))
                if bench is None or not in_loop:
                    continue
                py_mean = bench.mean() * 1e9
                py_stdev = bench.stdev() * 1e9 if bench.get_nvalue() > 1 else 0.0
                loop_mean = statistics.fmean(in_loop)
                held = core_rule.kind_readers_and_cores(cases.get(cap.case_id) or {})
                rows.append(dict(
                    arm=arm, workload=cap.workload, direction=cap.direction,
                    codec=cap.codec, op=op, case_id=cap.case_id, messages=len(cap.frames),
                    mean_payload_bytes=sum(map(len, cap.frames)) / len(cap.frames),
                    in_loop_mean_ns=loop_mean, in_loop_median_ns=statistics.median(in_loop),
                    pyperf_mean_ns=py_mean, pyperf_stdev_ns=py_stdev,
                    pyperf_median_ns=bench.median() * 1e9,
                    in_loop_to_pyperf=loop_mean / py_mean if py_mean else None,
                    timings_withheld=held is not None,
                    readers_kind=held[0] if held else None,
                    readers=held[1] if held else None, cores=held[2] if held else None))
    return rows
