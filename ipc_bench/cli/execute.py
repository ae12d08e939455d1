"""Running checked cases into a run folder: claim the folder, write the metadata, run
the cases one by one (each written whole, or marked incomplete when it fails or is
interrupted), then check the token digests, compare the arms, fit the byte model and
print the tables.

Exit codes: 0 success; 1 a case failed, the checks found a problem, or the run folder
or stdout could not be written (the error lines say which; a stdout that failed for
any reason but a broken pipe is recorded in ``summary.json`` after the tables); 2 a
case's sockets could not be set up (``EndpointError``: the socket folder or an
endpoint), or this process or a runner ran out of file descriptors, in a case or
writing the run folder (``errors.fd_shortage_text``'s line);
``Interrupted`` propagates after the partial results are written. The
run's status goes to ``summary.json`` before the tables are printed, so a closed
stdout or a signal while printing costs nothing.
"""

from __future__ import annotations

import errno
import inspect
import json
import os
import re
import shutil
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import msgspec

from ipc_bench.analysis.bytemodel import byte_model_report
from ipc_bench.analysis.cores import is_withheld
from ipc_bench.analysis.capture import MESSAGES_DIR, build_captures, save_captures
from ipc_bench.analysis.stats import compare_cases
from ipc_bench.analysis.frontend import pair_send_savings
from ipc_bench.analysis.summary import (FLOOR_ABSENT_WORDS, FLOOR_UNWRITTEN_WORDS, all_of,
                                        attach_token_bytes, check_digests, core_warnings,
                                        floor_pair_notes,
                                        no_request_served, no_step_counted,
                                        is_replay, noise_shorthand, noise_warnings,
                                        summarize_case)
from ipc_bench.cli.command_line import recorded as recorded_command, recorded_cwd
from ipc_bench.cli.console import one_write, stdout_failure, written_elsewhere
from ipc_bench.cli.options import SCHEDULER_OVERRIDES, UsageError
from ipc_bench.engine.config import ConfigError
from ipc_bench.engine.scheduler import SchedulerError
from ipc_bench.engine.token_ids import histogram_digest
from ipc_bench.errors import (STEP_NUMBERING, broken_link_text, command_shell_line,
                              dangling_link_text, fd_shortage_text, folder_names_text, link_text,
                              names_fd_limit, one_line, out_of_fds, output_kind_text,
                              path_word, resource_shortage_text, scenario_frames)
from ipc_bench.harness import signals
from ipc_bench.harness.environment import (collect_metadata, cpu_usage_between,
                                           loaded_note, nice_note, read_cpu_times,
                                           trace_record)
from ipc_bench.harness.spec import CaseError
from ipc_bench.harness.supervisor import run_case
from ipc_bench.harness.progress import (RunPace, case_progress, duration_words,
                                        progress_enabled)
from ipc_bench.harness.run_folder import (CLAIM_FILE, DIR_MODE, RunFolderError, RunWriter,
                                         create_claim, default_run_dir, release_claim,
                                         run_in_progress)
from ipc_bench.harness.scenario import ARM_ORDER, SCENARIO_OPTIONS
from ipc_bench.harness.signals import Interrupted
from ipc_bench.harness.spec import CaseResult
from ipc_bench.report.render import plain_text
from ipc_bench.report.tables import format_byte_model, format_comparisons, format_tables
from ipc_bench.wire.remote import RemoteRunners
from ipc_bench.wire.transport import EndpointError, set_sweep_sink

REPO_ROOT = Path(__file__).resolve().parents[2]



def run_cases(args, cases, scenario_report: Optional[Callable] = None,
              remote: Optional[RemoteRunners] = None, notes: Sequence[str] = (),
              trace_sha256: Optional[str] = None,
              trace_resolved_path: Optional[str] = None, swept: Sequence[str] = ()) -> int:
    """Run ``cases`` (checked) as the command line ``args`` asks; returns the exit code.
    ``scenario_report``: the scenario's ``report`` (its text is printed after the
    tables). ``remote``: the runners started by hand (``--remote-runners``), passed to
    every case (``supervisor.run_case``). ``notes``: lines about the run as asked
    (``ScenarioOptions.notes``), each printed as ``note: ...`` after the first line
    (unless ``--quiet``) and kept in the metadata's ``notes``, followed by those of
    the environment (``collect_metadata``: a failed ``git status``). ``trace_sha256``: the
    SHA-256 of the trace bytes the cases replay (``ScenarioOptions.trace_sha256``);
    ``trace_resolved_path``: its path resolved as it was read
    (``ScenarioOptions.trace_resolved_path``). ``swept``: what the socket folders'
    sweep removed before the run started (``leftovers.sweep_note`` lines), each printed
    as ``note: ...`` after the notes (unless ``--quiet``; never in the metadata), as is
    what a case's sweep removes (``transport.set_sweep_sink``, until the run ends). A
    write error of the run folder ends the run with one line and exit 1 (2 for want
    of a file descriptor: ``RunFolderError.exit_code``); ``Interrupted`` propagates
    once ``summary.json`` names it."""
    # Nothing this run writes (results, captures, socket files) is group- or
    # world-writable, whatever umask it was started with.
    os.umask(os.umask(0) | 0o022)
    metadata = run_metadata(args, cases, trace_sha256, trace_resolved_path)
    # The scenario's notes, then those of the environment (``collect_metadata``).
    metadata["notes"] = list(notes) + metadata.pop("notes", [])
    if remote is not None:
        metadata["remote_runners"] = dict(count=remote.n, host=remote.host,
                                          ports=remote.ports._asdict())
    run: Optional[_Run] = None
    try:
        with signals.deferred():  # a signal here leaves no folder or a valid one
            writer = open_run_dir(args, metadata)
            run = _Run(writer.run_dir, writer, quiet=args.quiet, num_cases=len(cases),
                       progress_bar=progress_enabled(args.quiet), remote=remote,
                       pace=RunPace(cases))
        run.log(f"ipc-bench: {args.scenario}, {len(cases)} case{'' if len(cases) == 1 else 's'}"
                f" -> {one_line(str(run.run_dir))}")  # a line break in DIR escaped
        for note in metadata["notes"]:
            run.log(f"note: {note}")
        for line in swept:
            run.log(f"note: {line}")
        for line in (loaded_note(metadata), nice_note(metadata)):
            if line:
                run.log(f"note: {line}")
        previous = set_sweep_sink(lambda line: run.log(f"note: {line}"))
        try:
            for i, case in enumerate(cases, 1):
                code = run.case(i, case)
                if code is not None:
                    return code
            return run.finish(args.ci_method, scenario_report)
        finally:
            set_sweep_sink(previous)
    except RunFolderError as exc:
        return run.write_failed(exc)
    except Interrupted as exc:
        if run is not None:
            run.interrupted(exc)
        raise


def open_run_dir(args, metadata: dict[str, Any]) -> RunWriter:
    """Claim the run folder (``claim_run_dir``) and write its first files; when they
    cannot be written, the folders this created are removed (an ``--output`` that
    existed is emptied) and ``UsageError`` says why (one line)."""
    run_dir, created = claim_run_dir(args)
    try:
        return RunWriter(run_dir, metadata)  # it holds the claim (run_folder._hold_claim)
    except BaseException as exc:
        release_claim(run_dir)
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        else:
            _remove_run_files(run_dir)
        if isinstance(exc, RunFolderError):
            raise UsageError(str(exc)) from None
        raise


def _remove_run_files(run_dir: Path) -> None:
    """Empty an ``--output`` folder that was empty before this run claimed it."""
    for entry in run_dir.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _topmost_missing(path: Path) -> Optional[Path]:
    """The highest folder of ``path`` (itself included) that does not exist yet."""
    missing = None
    while not path.exists() and path != path.parent:
        missing, path = path, path.parent
    return missing


def claim_run_dir(args) -> tuple[Path, Optional[Path]]:
    """Create the run folder (``--output``, else ``results/<scenario>-<time>``) and claim
    it with a ``.claimed`` file: of two runs given the same folder, one is refused
    (``UsageError``), as is a folder that is not empty. Returns the folder and the
    highest folder this created for it (``None`` for an ``--output`` that existed). The
    claim is locked from the moment it exists (``run_folder.create_claim``), for the
    folder's ``RunWriter`` to hold (``open_run_dir``). A default ``results/`` that is a
    symbolic link to nothing is named as an ``--output``'s is
    (``errors.dangling_link_text``): ``cannot create a results folder under DIR: it is
    a symbolic link to TARGET, which does not exist; write it elsewhere with --output
    DIR``; one that is a link to a file as ``it is a symbolic link to TARGET, which is
    not a folder``."""
    try:
        run_dir = (Path(args.output) if args.output
                   else default_run_dir(REPO_ROOT / "results", args.scenario))
    except OSError as exc:  # the default place refused: another is a flag away
        results = REPO_ROOT / "results"
        not_folder = results.exists() and not results.is_dir()
        # a link to nothing (a scratch disk not mounted): named as an --output's is
        dangling = not results.exists() and results.is_symlink()
        hint = ("; write it elsewhere with --output DIR"
                if not_folder or dangling
                or exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM)
                else "")
        reason = (f"it is {link_text(results)}, which is not a folder"
                  if not_folder and results.is_symlink()
                  else "it exists and is not a folder" if not_folder
                  else f"it is {dangling_link_text(results)}" if dangling
                  else _write_reason(exc))
        raise UsageError(f"cannot create a results folder under {results}: "
                         f"{reason}{hint}") from None
    created = _check_new_run_dir(run_dir, given=bool(args.output))
    claiming = False
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        if created is not None:  # a folder this run made: 0755 whatever the umask
            os.chmod(run_dir, DIR_MODE)
        # claim the folder: of two runs given the same --output, one is refused
        claiming = True
        create_claim(run_dir)
    except OSError as exc:
        if claiming and isinstance(exc, FileExistsError):
            raise UsageError(f"output folder {run_dir} is in use by another run") from None
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        raise UsageError(f"cannot write results to {run_dir}: {_write_reason(exc)}") from None
    return run_dir, created


def _write_reason(exc: OSError) -> str:
    """Why the run folder could not be made or claimed, as ``RunFolderError.reason``
    says it: the limit's line for want of a file descriptor
    (``errors.fd_shortage_text``), else the system's words."""
    return fd_shortage_text(exc) or exc.strerror or str(exc)


def _holds_a_run(run_dir: Path) -> str:
    """What the refusal of a folder that is not empty adds where it holds a run (a
    ``summary.json``): that it is still going (``run_in_progress``), else (a killed
    run's folder, given again) its status and the way out; ``''`` otherwise."""
    summary = run_dir / "summary.json"
    if not summary.is_file():
        return ""
    if run_in_progress(run_dir):
        return ": it holds a run still going (summary.json); give another --output"
    try:
        status = json.loads(summary.read_bytes()).get("status")
    except (OSError, ValueError, AttributeError):
        status = None
    said = f", status {status}" if isinstance(status, str) and status.isidentifier() else ""
    return (f": it holds a run (summary.json{said}); give another --output, or remove "
            "that run first")


def _holds_files(run_dir: Path) -> str:
    """What the refusal of a folder that is not empty and holds no run's
    ``summary.json`` adds: what it holds, named as ``bench.py report`` names what an
    output folder holds (``errors.folder_names_text``: hidden files too, which ``ls``
    does not show), `` (it holds .DS_Store, notes.txt); give --output a new or empty
    folder``. A run's claim (``.claimed``)
    alone says whose it is: a run still going holds its lock (``run_in_progress``: it
    is locked from the moment it exists, ``run_folder.create_claim``); one whose lock
    no process holds was left by a run that ended before writing anything (killed, or
    crashed), and the folder may be removed."""
    names = [entry.name for entry in run_dir.iterdir()]
    held = f" (it holds {folder_names_text(names)})"
    if CLAIM_FILE in names and run_in_progress(run_dir):
        return f": it holds a run still going ({CLAIM_FILE}); give another --output"
    if names == [CLAIM_FILE]:
        return (f"{held}: the claim of a run that ended before writing anything (killed or "
                "crashed; no process holds it now); remove the folder, or give another "
                "--output")
    return f"{held}; give --output a new or empty folder"


def _check_new_run_dir(run_dir: Path, given: bool) -> Optional[Path]:
    """Refuse (``UsageError``, one line) a run folder that cannot be claimed: a link
    that cannot be followed (``_check_links``), a path that is not a folder
    (``errors.output_kind_text``: a link to a file named as a link, and where it points)
    or a folder that is not empty, or a path the system will not look up (a name over 255
    bytes, a file or a link loop on the way, a folder that cannot be searched: ``cannot
    write results to DIR: REASON``). Returns the highest folder the run will create
    (``_topmost_missing`` of a ``given`` ``--output``, else ``run_dir`` itself, which
    ``default_run_dir`` created)."""
    try:
        _check_links(run_dir)
        created = _topmost_missing(run_dir) if given else run_dir
        kind = output_kind_text(run_dir)
        if kind is not None:
            raise UsageError(kind)
        if run_dir.exists() and any(run_dir.iterdir()):
            raise UsageError(f"output folder {run_dir} exists and is not empty"
                             + (_holds_a_run(run_dir) or _holds_files(run_dir)))
    except OSError as exc:
        if not given:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise UsageError(f"cannot write results to {run_dir}: {_write_reason(exc)}") from None
    return created


def _check_links(run_dir: Path) -> None:
    """Refuse (``UsageError``) a run folder that is, or lies under, a symbolic link
    that cannot be followed (``errors.broken_link_text``). A link to an existing folder
    is followed (the run is written there); a link's missing target is not created."""
    problem = broken_link_text(run_dir, "results")
    if problem is not None:
        raise UsageError(problem)


def run_metadata(args, cases, trace_sha256: Optional[str] = None,
                 trace_resolved_path: Optional[str] = None) -> dict[str, Any]:
    """The run's metadata: the environment (its ``command_line`` the one
    ``cli.main`` runs, ``command_line.recorded``: ``bench.py``'s absolute path and the
    arguments of an in-process call, else ``sys.argv``; with ``cwd``, the folder it
    ran in, which their relative paths are relative to), the scenario and seed, how the arms were
    ordered, the scenario options and those that choose the cases (``--policies``,
    ``--codecs``...) as given (``options``), the replayed trace's path as
    given and ``trace_resolved_path`` as read, and ``trace_sha256``, the SHA-256 of the
    bytes replayed (``trace``,
    ``environment.trace_record``; only with ``--trace``), and every
    case's settings in the order the cases run (``summary.json``'s ``metadata``):
    ``floor`` whether it replays a floor, ``no_floor`` whether ``--no-floor`` left
    it out (neither: it runs none whatever the flag, ``CaseSpec.no_floor``)."""
    metadata = collect_metadata(include_hostname=not args.no_hostname,
                                command_line=recorded_command())
    if (cwd := recorded_cwd()) is not None:  # where its relative paths lead from
        metadata["cwd"] = cwd
    metadata["scenario"] = args.scenario
    metadata["seed"] = args.seed
    # the seed of the arms' orders in effect (``scenario.order_seed``), as --seed is;
    # options["order_seed"] below: as given (None: --seed's)
    given_order = getattr(args, "order_seed", None)
    metadata["order_seed"] = args.seed if given_order is None else given_order
    metadata["aa"] = bool(args.aa)
    metadata["ci_method"] = args.ci_method
    metadata["arm_order"] = ARM_ORDER  # the order itself: ``cases`` below, as run
    # What changes the numbers beyond each case's settings, for comparing runs
    # (``environment.compare_settings``): the scenario options as given (None: the
    # scenario's default) and the replayed trace's content.
    metadata["options"] = {f: getattr(args, f, None) for f in SCENARIO_OPTIONS
                           if f != "trace"}
    # ... and --warmup-steps, which every scenario takes (``environment.EVERY_SCENARIO``).
    metadata["options"]["warmup_steps"] = getattr(args, "warmup_steps", None)
    # ... and --order-seed, which orders the arms alone (``environment.compare_settings``
    # lists it apart, marking no workload).
    metadata["options"]["order_seed"] = given_order
    # ... and those that choose the cases in every scenario (``environment.
    # CASE_SELECTION_OPTIONS``): None where not given, a flag as given.
    metadata["options"].update(
        policies=args.policies, codecs=args.codecs, aa=bool(args.aa),
        async_scheduling=bool(args.async_scheduling),
        num_spec_tokens=getattr(args, "num_spec_tokens", None),
        vllm_layout=getattr(args, "vllm_layout", None),
        no_single_process=not getattr(args, "single_process", True),
        transport=args.transport)
    # ... and --no-floor, which leaves out each case's floor (``environment.
    # MEASUREMENT_FLAGS``): whether it was given.
    metadata["options"]["no_floor"] = not getattr(args, "floor", True)
    # ... and the scheduler limits every scenario takes (``--max-num-seqs`` ...), None
    # where not given: compared even between runs that share no workload.
    metadata["options"].update({k: getattr(args, k, None) for k in SCHEDULER_OVERRIDES})
    if getattr(args, "trace", None):
        metadata["trace"] = trace_record(args.trace, trace_sha256, trace_resolved_path)
    metadata["cases"] = [dict(case_id=c.case_id, labels=c.labels, policy=c.policy,
                              arm=c.arm_label, codec=c.codec,
                              scheduler=msgspec.to_builtins(c.scheduler),
                              model=_model_metadata(c.model), warmup_steps=c.warmup_steps,
                              max_steps=c.max_steps, counted_steps=c.counted_steps,
                              count=c.count, transport=c.transport,
                              repetition=c.repetition, peer_timeout_s=c.peer_timeout_s,
                              startup_timeout_s=c.startup_timeout_s, stream=c.stream,
                              input_oracle_interval=c.input_oracle_interval,
                              async_scheduling=c.async_scheduling, frontend=c.frontend,
                              tp=c.tp, pp=c.pp, trace_speedup=c.trace_speedup,
                              floor=c.floor, no_floor=c.no_floor,
                              cpu_affinity=_affinity_text(c.cpu_affinity, c.frontend_cpus))
                         for c in cases]
    return metadata


def _affinity_text(sets, frontend_cpus=None) -> Optional[list[str]]:
    """A case's ``cpu_affinity`` as recorded in the metadata: each process's CPU set as
    ``--cpu-affinity`` reads it (``affinity.format_cpus``), in process order, then the
    frontend's own set (``frontend_cpus``) when it has one; ``None`` without the
    option."""
    from ipc_bench.harness.affinity import format_cpus

    if sets is None:
        return None
    return [format_cpus(s) for s in (*sets, *([frontend_cpus] if frontend_cpus else []))]


def _model_metadata(model) -> dict[str, Any]:
    """A case's ``ModelConfig`` as recorded in the metadata: with ``--token-ids
    hist:PATH``, the histogram's text is replaced by its SHA-256, ``token_ids_sha256``
    (``engine.token_ids.histogram_digest``), beside ``token_ids`` (the path)."""
    d = msgspec.to_builtins(model)
    text = d.pop("token_id_histogram", "")
    if text:
        d["token_ids_sha256"] = histogram_digest(text)
    return d


def partial_summary(result: CaseResult) -> dict[str, Any]:
    """Summary of a case that did not finish; never raises."""
    try:
        return summarize_case(result)
    except Exception as exc:  # the partial data itself may be what is broken
        return dict(case_id=result.spec.case_id, scenario=result.spec.scenario,
                    policy=result.spec.policy, codec=result.spec.codec,
                    workload=result.spec.workload_key, complete=False,
                    error=result.error, failed_step=result.failed_step,
                    num_total_steps=len(result.sched_rows),
                    summary_error=f"{type(exc).__name__}: {exc}")


def quiet_warnings_line(cases: Sequence[dict[str, Any]], run_dir: Path,
                        added: Optional[dict[str, list[str]]] = None) -> Optional[str]:
    """The line ``--quiet`` prints after the tables (stdout, where they are: a script that
    reads stderr as the errors still finds it empty) in place of the per-case warning
    lines it drops: how many the cases' ``warnings`` hold and where, ``3 warnings
    recorded in DIR/summary.json (not shown: --quiet)``, then those on a trace replay
    arm whose repetitions vary over 10 % (``added``: case id -> lines,
    ``replay_arm_warnings``), which the report adds, ``; 2 more on the repetitions of
    a trace replay arm that vary over 10 % (in python bench.py report DIR)``; ``None``
    when there are none."""
    count = sum(len(s.get("warnings") or ()) for s in cases)
    more = sum(len(v) for v in (added or {}).values())
    if not count and not more:
        return None
    parts = [f"{count:,} warning{'' if count == 1 else 's'} recorded in "
             f"{one_line(str(run_dir / 'summary.json'))} (not shown: --quiet)"] if count \
        else []
    if more:
        parts.append(f"{more:,}{' more' if count else ''} "
                     f"warning{'' if more == 1 else 's'} on the repetitions of a trace "
                     f"replay arm that vary over 10 % (in {report_command(run_dir)})")
    return "; ".join(parts)


def report_command(run_dir: Path) -> str:
    """The command a run's end points at for its report, ``python bench.py report
    DIR``, as the user can type it where the run was started (the same terminal and
    folder, so no ``cd``): ``bench.py`` as the run named it (``command_line.recorded``:
    ``sys.argv[0]``, ``python ../head2/bench.py report DIR``; ``command_line.SCRIPT``,
    the absolute path, in-process), quoted where a shell needs it
    (``errors.command_shell_line``, as ``DIR`` is: ``python bench.py report 'w
    d/r1'``), a relative ``DIR`` that begins with "-" as ``./-x`` (``errors.path_word``:
    ``report -x`` would read it as an option); ``bench.py`` outside ``cli.main``. Raises
    nothing."""
    words = recorded_command()
    return command_shell_line([words[0] if words else "bench.py", "report",
                               path_word(str(run_dir))])


def _one_schedule_twice(cases: Sequence[dict[str, Any]]) -> bool:
    """Whether two replay cases (``summary.is_replay``) of one workload, arm (or
    policy) and codec recorded the same non-empty ``schedule_digest``: the repetitions
    of an arm that ``replay_noise`` can compare (its ``_why_not``), counted over fewer
    keys than its groups, so never ``False`` where it measures one. A timed replay
    follows the wall clock, and its repetitions' digests differ. Raises nothing."""
    seen = set()
    for c in cases:
        digest = c.get("schedule_digest")
        if not is_replay(c) or not isinstance(digest, str) or not digest:
            continue
        key = (str(c.get("workload")), str(c.get("arm") or c.get("policy")),
               str(c.get("codec")), digest)
        if key in seen:
            return True
        seen.add(key)
    return False


def replay_arm_warnings(cases: Sequence[dict[str, Any]],
                        run_dir: Path) -> dict[str, list[str]]:
    """The warnings the report adds to the cases of a trace replay arm whose repetitions
    vary over 10 % (``replay_noise.noisy_arm_warnings``), as the run in ``run_dir``
    ends: ``replay_noise.run_noisy_arm_warnings`` of ``cases`` (the run's summaries)
    and its ``steps.csv`` and ``floor.csv``, read with the csv module (a measuring run
    imports no pandas): case id -> lines. ``{}`` where ``cases`` hold fewer than two
    replay cases (``summary.is_replay``), where no arm is noisy, or where the files
    cannot be read (the report says why). The files are read only where two replay
    cases of one arm ran one schedule (``_one_schedule_twice``), the only arms measured
    (``replay_noise.repetition_noise``): a timed replay's arms, or one repetition,
    return ``{}`` without it. Where it reads them, each finished replay case of
    ``cases`` records the lines printed on it (``replay_noise.record_run_end_warnings``:
    ``run_end_arm_warnings``, before ``summary.json`` is written the last time), which
    the report compares with its own (``replay_noise.run_end_differences``). Raises
    nothing."""
    if sum(1 for c in cases if is_replay(c)) < 2 or not _one_schedule_twice(cases):
        return {}
    from ipc_bench.analysis.replay_noise import (record_run_end_warnings,
                                                 run_noisy_arm_warnings)

    try:
        added = run_noisy_arm_warnings(cases, run_dir)
    except (OSError, ValueError):
        added = {}
    record_run_end_warnings(cases, added)
    return added


def warnings_count_line(cases: Sequence[dict[str, Any]], run_dir: Path,
                        floor_notes: int = 0, on_stdout: bool = False,
                        added: Optional[dict[str, list[str]]] = None,
                        stdout_lost: bool = False, in_short: int = 0,
                        late: int = 0, added_short: int = 0,
                        stdout_gone: bool = False) -> Optional[str]:
    """The line a run (not ``--quiet``) ends with when its cases recorded warnings, so
    that a log's end says what its middle holds: ``23 measurement warnings in 16 of 24
    cases (printed under their case lines above): see DIR/summary.json, or Measurement
    warnings in python bench.py report DIR``; ``None`` when they recorded none. A core
    warning (``summary.core_warnings``) is printed under the first case that has it
    only (``_Run.case``): its repeats are said to be, ``(printed under their case lines
    above; 5 of them core warnings repeated from an earlier case, printed there only)``.
    ``in_short``: how many machine-noise warnings were printed in short, their kind
    having been printed in full under an earlier case (``_Run._log_warnings``), ``(...;
    52 of them in short, on "as above" lines)``. ``late``: how many the scenario's
    report (``scenario_text``) added to the cases after their lines were printed
    (step-time's descheduled send case), printed after the run's time line, ``warning:
    CASE: TEXT``: ``(...; 2 of them found after the last case by the scenario's report,
    printed after it)``, or, none printed under a case line, ``(found after the last case
    by the scenario's report, printed after it)``. ``floor_notes``: how many ``note:``
    lines said a send / cached pair's floors are not comparable
    (``summary.floor_pair_notes``), counted after the warnings, ``; 7 pairs of floors
    not comparable (the run's note: lines, on stdout)``. ``on_stdout``: the line for
    stdout where it goes elsewhere than stderr (``_apart``), whose log would hold no
    warning: ``... (printed on stderr under their case lines) ...; 7 pairs of floors
    not comparable (the note: lines above): ...``. ``stdout_lost``, ``stdout_gone``:
    stdout failed, or its reader had gone: those lines went unread
    (``_floor_notes_words``). ``added``: the warnings of the cases of a trace replay arm
    whose repetitions vary over 10 % (case id -> lines, ``replay_arm_warnings``), which
    the report lists and counts with the recorded ones: counted so here too, and said
    where they were printed, ``(...; 2 of them on the repetitions of a trace replay arm
    that vary over 10 %, printed after the last case)``, or, all of them so, ``(on the
    repetitions of ..., printed after the last case)``; as summary.json does not hold
    them, the line's end then says where each kind is, ``: the recorded ones in
    DIR/summary.json, all of them under Measurement warnings in python bench.py report
    DIR``, or, all of them added, ``: see Measurement warnings in python bench.py report
    DIR, which adds them (they are not in DIR/summary.json)``. ``added_short``: how many
    ``added`` were printed in short (``_Run._arm_lines``), counted with ``in_short``
    after the replay arm's words, ``(..., printed after the last case; 16 of them in
    short, on "as above" lines)``. ``floor_notes``, which the report alone holds (it
    works them out again), send the end there for them: ``: see Measurement warnings in
    python bench.py report DIR, which lists them (they are not in DIR/summary.json)``
    without warnings (``_pointer_tail``). The command is ``report_command``'s:
    ``bench.py`` as the run named it. Raises nothing."""
    added = added or {}
    counts = [len(s.get("warnings") or ()) + len(added.get(s.get("case_id"), ()))
              for s in cases]
    count, noted = sum(counts), sum(1 for n in counts if n)
    if not count and not floor_notes:
        return None
    cores = [w for s in cases for w in core_warnings(s) if w in (s.get("warnings") or ())]
    repeats = len(cores) - len(set(cores))
    once = (f"; {repeats:,} of them core warnings repeated from an earlier case, printed "
            "there only" if repeats else "")
    more = sum(len(v) for v in added.values())
    shortened = in_short + (added_short if more else 0)
    short = f'; {shortened:,} of them in short, on "as above" lines' if shortened else ""
    if not more:
        once += short
    late_words = ("found after the last case by the scenario's report, printed "
                  f"{'on stderr ' if on_stdout else ''}after it")
    where = "printed on stderr under their case lines" if on_stdout else \
        "printed under their case lines above"
    if late and late == count - more:  # none of the recorded ones under a case line
        where, once = late_words, ""
    elif late:
        once += f"; {late:,} of them {late_words}"
    if more:
        replay = ("on the repetitions of a trace replay arm that vary over 10 %, printed "
                  + ("on stderr " if on_stdout else "") + "after the last case")
        where = (f"{where}{once}; {more:,} of them {replay}{short}" if more < count
                 else f"{replay}{short}")
        once = ""
    parts = [f"{count:,} measurement warning{'' if count == 1 else 's'} in {noted:,} of "
             f"{len(cases):,} case{'' if len(cases) == 1 else 's'} ({where}"
             f"{once})"] if count else []
    if floor_notes:
        parts.append(_floor_notes_words(floor_notes, on_stdout, stdout_lost, stdout_gone))
    return "; ".join(parts) + f": {_pointer_tail(run_dir, count, more, floor_notes)}"


def _floor_notes_words(floor_notes: int, on_stdout: bool, stdout_lost: bool,
                       stdout_gone: bool) -> str:
    """``warnings_count_line``'s words on its ``floor_notes`` pairs of floors not
    comparable and where their ``note:`` lines are: ``7 pairs of floors not comparable
    (the run's note: lines, on stdout)``; ``(the note: lines above)`` in the line for
    stdout (``on_stdout``); on stderr where stdout failed (``stdout_lost``: ``>
    /dev/full``, ``console.stdout_failure``), ``(the run's note: lines, lost with
    stdout; the report lists them)``, and where its reader had gone when they were
    written (``stdout_gone``: ``| true``, ``_stdout_gone``), so that no one read them,
    ``(the run's note: lines, unread: stdout's reader had gone; the report lists
    them)``."""
    notes = ("the note: lines above" if on_stdout else "the run's note: lines, lost "
             "with stdout; the report lists them" if stdout_lost
             else "the run's note: lines, unread: stdout's reader had gone; the "
             "report lists them" if stdout_gone
             else "the run's note: lines, on stdout")
    return (f"{floor_notes:,} pair{'' if floor_notes == 1 else 's'} of floors not "
            f"comparable ({notes})")


def _pointer_tail(run_dir: Path, count: int, more: int, floor_notes: int) -> str:
    """The end of ``warnings_count_line``: where its ``count`` warnings (``more`` of
    them the report's own, on a noisy replay arm) and its ``floor_notes`` are.
    ``summary.json`` holds the recorded warnings only; the report (under Measurement
    warnings) all of them and the floor notes, which it works out again from the cases:
    ``see DIR/summary.json, or Measurement warnings in python bench.py report DIR``
    without floor notes, ``see Measurement warnings in python bench.py report DIR,
    which lists them (they are not in DIR/summary.json)`` with floor notes alone."""
    summary = one_line(path_word(str(run_dir / "summary.json")))
    report = f"Measurement warnings in {report_command(run_dir)}"
    if not floor_notes:
        return (f"see {summary}, or {report}" if not more
                else f"the recorded ones in {summary}, all of them under {report}"
                if more < count else
                f"see {report}, which adds them (they are not in {summary})")
    if not count:
        return f"see {report}, which lists them (they are not in {summary})"
    if not more:
        return f"the warnings in {summary}, the warnings and the floor notes under {report}"
    if more < count:
        return (f"the recorded warnings in {summary}, all of them and the floor notes "
                f"under {report}")
    return (f"see {report}, which adds the warnings and lists the floor notes (neither "
            f"is in {summary})")


def _code_warnings(summary: dict[str, Any], metadata: dict[str, Any]) -> list[str]:
    """The warning of a case whose runner, started by hand, named other code
    (``runner_code``: ``environment.code_identity`` of its checkout) than this
    scheduler's (``metadata["git"]``): the runner's columns and model are of that
    code, the run's metadata of this one's; ``[]`` otherwise."""
    from ipc_bench.harness.environment import code_identity

    theirs, mine = summary.get("runner_code"), code_identity(metadata.get("git"))
    if theirs is None or theirs == mine:
        return []
    return [f"{CODE_WARNING_START}{theirs}; this scheduler {mine}: the "
            "runner's timings and model are of that code, the run's metadata of this "
            "one's (start it from the same checkout to compare like with like)"]


#: How ``_code_warnings``' warning begins; the run prints it in full under the first
#: case that has it, in short under later ones (``_Run._log_warnings``).
CODE_WARNING_START = "its runner, started by hand, ran "

#: The figure of a trace replay arm's warning (``replay_noise.noisy_arm_warnings``),
#: ``vary by a median 26.1 % (`step_ns_rep_block_cv`, > 10 %)``, and the words on the
#: repetition that stands out, for ``_Run._arm_lines``' short forms.
_ARM_FIGURE = re.compile(r"vary by a median ([0-9.,]+) % \(`(\w+)`, > [0-9.]+ %\)")
_ARM_STANDOUT = re.compile(r"; this repetition stands out: its blocks sit a median "
                           r"([0-9.,]+) % from the others'")


def with_pointer(reason: str, pointer: str) -> str:
    """``reason`` followed by ``pointer``, the end of a stop's line (``_Run.pointer``:
    ``; partial results: DIR``). A reason that ends its sentence, as a peer's or the
    system's own message may (``Read error [127.0.0.1]:45754: Connection reset by
    peer.``), loses that period and any whitespace after it first, so the line reads
    ``... by peer; partial results: DIR``, not ``peer.; partial results``; an ellipsis
    (``..``) stays. ``reason`` unchanged when ``pointer`` is empty (no folder to name)."""
    if not pointer:
        return reason
    reason = reason.rstrip()
    if reason.endswith(".") and not reason.endswith(".."):
        reason = reason[:-1].rstrip()
    return reason + pointer


@dataclass
class _Run:
    """One run in progress: its folder, writer, log and the captures kept for the
    byte model."""

    run_dir: Path
    writer: RunWriter
    quiet: bool
    num_cases: int
    progress_bar: bool  # a tqdm bar per case; else, unless quiet, a line a minute
    captured: list = field(default_factory=list)
    num_done: int = 0
    stopped: bool = False  # the run's status is written (``_stop``, ``finish``)
    final_status: Optional[str] = None  # the status ``finish`` wrote
    current: Optional[str] = None  # the case being run or written
    remote: Optional[RemoteRunners] = None  # runners started by hand (--remote-runners)
    #: The cores warnings (``summary.core_warnings``) logged so far: each is logged
    #: under the first case that carries it (every case's summary keeps its own).
    cores_logged: set = field(default_factory=set)
    #: The kinds of machine-noise warning (``summary.noise_shorthand``) logged in full
    #: so far, and how many warnings were logged in short after them (``_log_warnings``).
    noise_kinds_said: set = field(default_factory=set)
    in_short: int = 0
    #: The warnings of a runner started by hand that ran other code (``_code_warnings``)
    #: logged in full so far: each is logged in short under later cases.
    code_said: set = field(default_factory=set)
    #: The run's pace, for the heartbeat's estimate of the run left (off a terminal).
    pace: Optional[RunPace] = None
    #: ``time.monotonic()`` as the run began, for ``finish``'s line of the run's time.
    t_start: float = field(default_factory=time.monotonic)
    #: The seconds the cases written so far waited for runners started by hand
    #: (``CaseResult.runner_wait_s``), for ``finish``'s line of the run's time.
    runner_wait_s: float = 0.0
    #: Whether the run's warnings' count line was printed (``stop_count``, on stderr;
    #: with ``--quiet``, ``quiet_count``, on stdout; or ``finish``'s before
    #: ``_stdout_lost``): a run prints it once.
    count_said: bool = False

    def log(self, msg: str) -> None:
        if not self.quiet:
            print(msg, file=sys.stderr, flush=True)

    def case(self, i: int, case) -> Optional[int]:
        """Run case ``i`` and write it whole; the exit code when it failed, else
        ``None``. ``Interrupted`` propagates once the partial case is written;
        ``RunFolderError`` once the run is closed as far as the folder allows."""
        tag = f"[{i}/{self.num_cases}]"
        t0 = time.perf_counter()
        cpu_before = read_cpu_times()
        result = CaseResult(spec=case)
        self.current = case.case_id
        bar = None
        try:
            # A signal once the summary names the case running is the case's: it is
            # written as interrupted before its first step, not left named running.
            self.writer.begin_case(case)
            if not self.quiet:
                bar = case_progress(case, f"{tag} {case.case_id}", bar=self.progress_bar,
                                    run=self.pace, index=i - 1,
                                    waited=lambda: result.runner_wait_s)
            run_case(case, on_step=bar, result=result, sink=self.writer, remote=self.remote)
        except Interrupted as exc:
            if (result.floor_interrupted or result.report_interrupted) and result.sched_rows:
                if bar is not None:  # closed before the case's line, as a finished case's
                    bar.close()
                    bar = None
                self._interrupted_after_steps(result, exc, cpu_before, tag, t0)
                raise
            self._stop(result, f"interrupted by {exc.signal_name}", "incomplete")
            recorded = result.failed_step is not None
            where = (f"at step {result.failed_step} ({STEP_NUMBERING})" if recorded
                     else "before its first step")
            kept = self.place(bool(self.num_done or recorded))
            self.stop_count()
            print(exc.line("bench.py", kept, what=case.case_id, when=where),
                  file=sys.stderr)
            exc.reported = True
            self.quiet_count()
            raise
        except RunFolderError as exc:
            return self.write_failed(exc, result)
        except Exception as exc:  # written, then exit code 1
            if ((result.floor_failed is not None or result.report_failed is not None)
                    and result.sched_rows and isinstance(exc, CaseError)):
                if bar is not None:  # closed before the case's line, as a finished case's
                    bar.close()
                    bar = None
                return self._floor_failed(result, exc, cpu_before, tag, t0)
            return self._failed(result, exc)
        finally:
            if bar is not None:
                bar.close()
        # A finished case is written whole, counted and announced; then a signal that
        # came meanwhile acts (``interrupted`` then names it among the cases done).
        with signals.deferred():
            try:
                summary = self._record(result, cpu_before, t0=t0)
            except RunFolderError as exc:  # written as far as the folder takes it
                return self.write_failed(exc, result, tag)
            self.num_done, self.current = self.num_done + 1, None
            self._announce(tag, result, summary)
        return None

    def _announce(self, tag: str, result: CaseResult, summary: dict[str, Any]) -> None:
        """The line of a case written as finished (``[3/4] CASE: 1,000 steps, 218,098
        tok/s (2.8 s for the whole case)``) and its warnings under it
        (``_log_warnings``); its wait for runners started by hand added to the run's."""
        self.runner_wait_s += result.runner_wait_s
        rate = summary.get("output_tokens_per_s")  # absent without counted steps
        if is_withheld(summary):  # fewer than N + 2 cores for N readers
            rate = None
        timed = summary.get("trace_speedup") is not None  # tokens over wall time
        wall = " (wall)" if rate is not None and timed else ""
        if summary.get("emulated"):  # slept roofline steps
            wall += f" emulated ({summary.get('gpu_figures')})"
        steps = int(summary.get('num_steps') or 0)
        elapsed = summary.get("case_elapsed_s")
        took = "" if elapsed is None else (
            f" ({_seconds(elapsed)} for the whole case"
            f"{_hand_wait(result.runner_wait_s, _seconds)})")
        self.log(f"{tag} {result.spec.case_id}: {steps:,} step{'' if steps == 1 else 's'}, "
                 f"{'-' if rate is None else f'{rate:,.0f}'} tok/s{wall}{took}")
        self._log_warnings(summary)

    def _log_warnings(self, summary: dict[str, Any]) -> None:
        """``summary``'s warnings under its case's line: each in full, but a core
        warning (``summary.core_warnings``) only under the first case that has it, and
        a machine-noise warning (``summary.noise_shorthand``) in full only as the first
        of its kind in the run: later ones go, in short, on one line after the case's
        others, ``  warning: as above (the machine may be noisy): step_ns_block_cv
        28.0 %, mean step 1.98x the median`` (counted in ``in_short``). The warning of
        a runner started by hand that ran other code (``_code_warnings``), the same
        under every case that runner serves, is printed in full under the first case
        that has it and in short, in its place, under later ones, ``  warning: as
        above: its runner, started by hand, ran ecfd261... (dirty), not this
        scheduler's code`` (counted in ``in_short`` too)."""
        shorthand, short = noise_shorthand(summary), []
        for w in summary["warnings"]:
            if w in self.cores_logged:
                continue
            if w in self.code_said:
                theirs = w[len(CODE_WARNING_START):].split("; this scheduler ")[0]
                self.log(f"  warning: as above: {CODE_WARNING_START}{theirs}, not this "
                         "scheduler's code")
                self.in_short += 1
                continue
            if w.startswith(CODE_WARNING_START):
                self.code_said.add(w)
            kind, text = shorthand.get(w, (None, ""))
            if kind in self.noise_kinds_said:
                short.append(text)
                continue
            if kind is not None:
                self.noise_kinds_said.add(kind)
            self.log(f"  warning: {w}")
        if short:
            self.log(f"  warning: as above (the machine may be noisy): {', '.join(short)}")
            self.in_short += len(short)
        self.cores_logged.update(core_warnings(summary))  # once a run: the same fact

    def _arm_lines(self, added: dict[str, list[str]]) -> tuple[list[str], int]:
        """The lines ``finish`` prints after the last case for the warnings of a trace
        replay arm whose repetitions vary over 10 % (``added``: case id -> lines,
        ``replay_arm_warnings``), and how many of them are in short: each kind (its
        figure, ``step_ns_rep_block_cv`` or ``floor_step_ns_rep_block_cv``) in full the
        first time it comes up in the run, its Markdown code spans as plain text,
        ``warning: CASE: across the 3 repetitions of its arm, its 50-step block means
        vary by a median 26.1 % (step_ns_rep_block_cv, > 10 %): the machine may be
        noisy``; later ones, as a case's machine-noise warnings (``_log_warnings``), in
        short on one line a case, ``warning: CASE: as above (the machine may be noisy):
        step_ns_rep_block_cv 26.1 % (this repetition stands out: 52.0 % from the
        others'), floor_step_ns_rep_block_cv 75.6 %``. A line of no known kind is
        printed in full."""
        out, n_short = [], 0
        for case_id, lines in added.items():
            short = []
            for w in lines:
                found = _ARM_FIGURE.search(w)
                kind = found.group(2) if found else None
                if kind is not None and kind in self.noise_kinds_said:
                    standout = _ARM_STANDOUT.search(w)
                    short.append(f"{kind} {found.group(1)} %" + (
                        f" (this repetition stands out: {standout.group(1)} % from the "
                        "others')" if standout else ""))
                    continue
                if kind is not None:
                    self.noise_kinds_said.add(kind)
                out.append(f"warning: {case_id}: {plain_text(w)}")
            if short:
                out.append(f"warning: {case_id}: as above (the machine may be noisy): "
                           f"{', '.join(short)}")
                n_short += len(short)
        return out, n_short

    def _interrupted_after_steps(self, result: CaseResult, exc: Interrupted,
                                 cpu_before, tag: str = "",
                                 t0: Optional[float] = None) -> None:
        """A signal that landed after the case's last counted step: while it replayed
        its floor (``CaseResult.floor_interrupted``), or after that (after the last
        step without a floor) while the runner was stopped and its report awaited
        (``CaseResult.report_interrupted``). The case is written as finished, its
        counted figures kept, without the floor's (a floor cut short) and without the
        runner's per-step columns (they come in the report; a warning says why), the
        run closed ``incomplete``; one line (``Interrupted.line``), ``bench.py: CASE:
        interrupted by SIGINT while replaying the floor after step N (STEP_NUMBERING);
        partial results: DIR (exit 130)`` (``while waiting for the runner's report
        after the floor, after step N``; ``after step N`` alone without a floor), N the
        case's last step (``STEP_NUMBERING``). A write error is reported
        (``write_failed``)."""
        case_id = result.spec.case_id
        last = result.sched_rows[-1][0]
        if result.floor_interrupted:
            when = f"while replaying the floor after step {last}"
            line = f"interrupted by {exc.signal_name} {when}"
            warning = (f"{line}: {FLOOR_ABSENT_WORDS}, and so are the runner's per-step "
                       "columns (its report comes after the floor)")
            result.floor_step_ns = []  # a floor cut short is no floor
        else:
            after = "after the floor, after" if result.floor_step_ns else "after"
            when = f"while waiting for the runner's report {after} step {last}"
            line = f"interrupted by {exc.signal_name} {when}"
            warning = f"{line}: the runner's per-step columns (its report) are absent"
        self.stopped = True
        try:
            with signals.deferred():
                summary = self._record(result, cpu_before, extra_warnings=[warning], t0=t0)
                self.num_done, self.current = self.num_done + 1, None
                self.writer.finish("incomplete", [f"{case_id}: {line}"])
        except RunFolderError as exc_write:
            self.write_failed(exc_write)
            exc.reported = True
            return
        self._announce(tag, result, summary)  # a finished case: its line and warnings
        self.stop_count()
        print(exc.line("bench.py", self.place(True), what=case_id,
                       when=f"{when} ({STEP_NUMBERING})"), file=sys.stderr)
        exc.reported = True
        self.quiet_count()

    def _floor_failed(self, result: CaseResult, exc: CaseError, cpu_before,
                      tag: str = "", t0: Optional[float] = None) -> int:
        """The runner failed while the case replayed its floor, after its last counted
        step (``CaseResult.floor_failed``: it died, stopped answering or answered
        garbage): as a signal there (``_interrupted_after_steps``), the case is written as
        finished, its counted figures kept, without the floor's or the runner's per-step
        columns (a warning says why, ``floor_failed`` holds the line); the run is closed
        ``failed`` and the line is the failure's, as for any failed case,
        ``bench.py: error: CASE: REASON; partial results: DIR``. A runner that failed
        after the floor (after the last step without one), while its report was awaited
        (``CaseResult.report_failed``), likewise, its floor kept: only the runner's
        per-step columns are absent (they come in that report); the same line:
        ``bench.py: error: CASE: REASON; partial results: DIR``. Returns the exit code:
        1 (2 where the runner's report names the file descriptor limit,
        ``errors.names_fd_limit``). A write error is reported (``write_failed``)."""
        case_id = result.spec.case_id
        message = str(exc)
        last = result.sched_rows[-1][0]
        if result.floor_failed is not None:
            warning = (f"the runner failed while replaying the floor after step {last} "
                       f"({STEP_NUMBERING}): {message}: {FLOOR_ABSENT_WORDS}, and so are the "
                       "runner's per-step columns (its report comes after the floor)")
            result.floor_failed = message
            result.floor_step_ns = []  # a floor cut short is no floor
        else:
            after = "after the floor, after" if result.floor_step_ns else "after"
            warning = (f"the runner failed while its report was awaited {after} step "
                       f"{last} ({STEP_NUMBERING}): {message}: the runner's per-step "
                       "columns (its report) are absent")
            result.report_failed = message
        result.failed_step = result.error = None  # every counted step was measured
        self.stopped = True
        try:
            with signals.deferred():
                summary = self._record(result, cpu_before, extra_warnings=[warning], t0=t0)
                self.num_done, self.current = self.num_done + 1, None
                self.writer.finish("failed", [f"{case_id}: {message}"],
                                   failed_case=case_id)
        except RunFolderError as exc_write:
            return self.write_failed(exc_write)
        self._announce(tag, result, summary)  # a finished case: its line and warnings
        self.stop_count()
        print(one_line(with_pointer(f"bench.py: error: {case_id}: {message}",
                                    self.pointer(True))), file=sys.stderr)
        self.quiet_count()
        return 2 if names_fd_limit(message) else 1

    def _failed(self, result: CaseResult, exc: Exception) -> int:
        """A case that raised (called while handling ``exc``): write what it measured,
        say why in one line, ``bench.py: error: CASE: REASON``, which names the folder
        as an interrupt's line does (``pointer``): ``; partial results: DIR`` when it
        holds measured rows (cases that finished before it, or steps of this one: its
        ``failed_step`` past 0), else ``; run folder (nothing measured): DIR`` (a case
        that failed at its handshake: the folder stays, so a rerun needs another
        ``--output``); exit code 1 (2 for sockets that could not be set up and for a
        process out of file descriptors, ``errors.fd_shortage_text``: an ``EMFILE`` or
        ``ENFILE`` here, a runner's report naming the limit, or the case's files that
        could not be written for want of one). A thread that could not start or a
        ``MemoryError`` is a resource limit, not a bug: its one line is
        ``errors.resource_shortage_text``'s, exit 1; so is an exception a scenario
        module's own code raised (``errors.scenario_frames``: ``the scenario's code
        raised TYPE: MESSAGE (scenarios/x.py line 12, in arrivals)``). A bug (any other
        exception) prints its traceback, then ``bench.py: internal error in CASE: TYPE:
        MESSAGE`` with the same folder pointer (``error under the scenario's code
        (WHERE)`` in place of ``internal error`` when a scenario's code called what
        raised it)."""
        case_id = result.spec.case_id
        under, raised_there = scenario_frames(exc)
        if isinstance(exc, (CaseError, SchedulerError, ConfigError, EndpointError)):
            message = str(exc)
        elif out_of_fds(exc):  # OSError or zmq.ZMQError: the limit, not a bug
            message = fd_shortage_text(exc)
        elif resource_shortage_text(exc):  # no thread, no memory: a limit, not a bug
            message = resource_shortage_text(exc)
        elif isinstance(exc, OSError):  # the system refused (no space in TMPDIR, no fds)
            message = one_line(f"{type(exc).__name__}: {exc}")
        elif raised_there:  # raised by a scenario's own code: where, not a bug
            message = one_line(f"the scenario's code raised {type(exc).__name__}: {exc} "
                               f"({under})")
        else:  # a bug: keep what was measured, show where it broke
            traceback.print_exc(file=sys.stderr)
            what = ("internal error" if under is None
                    else f"error under the scenario's code ({under})")
            written = self._stop(result, f"{what}: {type(exc).__name__}: {exc}", "failed")
            kept = self.pointer(bool(self.num_done or result.failed_step))
            self.stop_count()
            print(one_line(with_pointer(f"bench.py: {what} in {case_id}: "
                                        f"{type(exc).__name__}: {exc}", kept)),
                  file=sys.stderr)
            self.quiet_count()
            return max(1, written)
        written = self._stop(result, message, "failed")
        kept = self.pointer(bool(self.num_done or result.failed_step))
        self.stop_count()
        print(one_line(with_pointer(f"bench.py: error: {case_id}: {message}", kept)),
              file=sys.stderr)
        self.quiet_count()
        # 2: sockets that could not be set up, or too few file descriptors (here, in
        # a runner, whose report names the limit, or writing the case: ``written``)
        fds = out_of_fds(exc) or names_fd_limit(message)
        return max(written, 2 if isinstance(exc, EndpointError) or fds else 1)

    def _stop(self, result: CaseResult, message: str, status: str) -> int:
        """Write a case that did not finish (``_write_unfinished``) and close the run
        with ``status``; a write error here is reported (``write_failed``). Returns
        ``write_failed``'s exit code, 0 when the writes went through."""
        self.stopped = True
        try:
            with signals.deferred():
                self._write_unfinished(result, message)
                self.writer.finish(status, [f"{result.spec.case_id}: {message}"],
                                   failed_case=result.spec.case_id)
        except RunFolderError as exc:
            return self.write_failed(exc)
        return 0

    def _write_unfinished(self, result: CaseResult, message: str) -> None:
        """Record a case that did not finish, ``message`` its ``error``: its failed
        step, its records and its summary (``complete: false``). Where its records
        cannot all be written, its summary is listed still (``RunWriter.list_case``:
        scheduler rows that ``steps.csv`` did not take stay in ``steps.partial.csv``,
        as a killed run leaves them) and the write's ``RunFolderError`` raised. A
        case already listed (its captures failed after it was written) is left
        as it is."""
        if any(c.get("case_id") == result.spec.case_id for c in self.writer.cases):
            return
        result.error = message
        stats = result.stream_stats  # a streamed case: its rows may have left memory
        if result.failed_step is None and result.sched_rows:
            result.failed_step = result.sched_rows[-1][0] + 1
        elif result.failed_step is None and stats is not None and stats.num_total_steps:
            result.failed_step = stats.num_total_steps  # steps 0 .. N-1 were written
        summary = partial_summary(result)
        try:
            self.writer.add_case(result, summary)
        except RunFolderError:
            self.writer.list_case(summary)
            raise

    def write_failed(self, exc: RunFolderError, result: Optional[CaseResult] = None,
                     tag: Optional[str] = None) -> int:
        """The run folder could not be written (``exc``): keep what the folder still
        takes (``result``, the case that was running or being written, as every case
        that did not finish: ``_write_unfinished``; ``status: failed`` and the
        reason, with the rows of that case its files could not take,
        ``RunWriter.unwritten_note``: ``cannot write results to DIR: No space left on
        device; rows not written: 2 of requests.csv``), say so in one line ending, where
        ``summary.json`` took the failure, with ``pointer``'s ``; partial results: DIR``
        (or ``; run folder (nothing measured): DIR``); exit
        code 1, 2 where a file descriptor was wanting (``RunFolderError.exit_code``:
        ``cannot write results to DIR: too many open files (ulimit -n 64): raise it
        (e.g. ulimit -n 1024) and run again``). ``tag`` (``[2/4]``): ``result`` failed
        as it was written after it finished; where ``summary.json`` holds it as
        finished (its captured messages could not be saved), its line and warnings are
        printed, as a finished case's (``_announce``), before the count line
        (``stop_count``) and the error's."""
        message = str(exc)
        self.stopped = True
        with signals.deferred():
            if result is not None:
                try:
                    self._write_unfinished(result, message)
                except RunFolderError:
                    pass
            case_id = result.spec.case_id if result is not None else self.current
            if self.run_dir.is_dir():  # else nothing of the case is there to count
                message += self.writer.unwritten_note(case_id)
            try:
                self.writer.finish("failed", [message], failed_case=self.current)
            except RunFolderError as again:
                measured = len(result.sched_rows) if result is not None else 0
                message += f" ({self._left_behind(again.reason, case_id, measured)})"
            else:  # where the folder's summary.json says what was kept, as other stops do
                message = with_pointer(message, self.pointer(
                    bool(self.num_done or _steps_measured(result))))
        held = [c for c in self._recorded_cases() or () if tag is not None
                and c.get("case_id") == case_id and c.get("complete") is True]
        if held and isinstance(held[0].get("warnings"), list):  # written as finished
            self._announce(tag, result, held[0])
        self.stop_count()
        print(f"bench.py: error: {message}", file=sys.stderr)
        self.quiet_count()
        return exc.exit_code

    def _left_behind(self, reason: str, case_id: Optional[str] = None,
                     measured_steps: int = 0) -> str:
        """What the folder holds once ``summary.json`` could not be rewritten (for
        ``reason``), said only as far as it is true: the last complete version, which
        still says the run is incomplete, with the cases it lists and what is on disk
        of each other case run (the cases written, then ``case_id``, the one running or
        being written, ``measured_steps`` its steps in memory: ``RunWriter.held_note``);
        no summary at all; or no folder at its path (moved, with what was written, or
        removed: which, ``bench.py`` cannot tell)."""
        if (self.run_dir / "summary.json").is_file():
            run = list(dict.fromkeys(  # a case listed twice in memory: once
                [c["case_id"] for c in self.writer.cases if isinstance(c.get("case_id"), str)]
                + ([case_id] if case_id is not None else [])))
            return (f"summary.json could not be updated either: {reason}; it still says "
                    f"the run is incomplete{self.writer.held_note(run, measured_steps)}")
        if self.run_dir.is_dir():
            return (f"summary.json could not be written either: {reason}; the folder has "
                    "no summary.json")
        return (f"{self.run_dir} no longer exists: it was moved or removed; what was "
                "written before is wherever it went")

    def kept(self) -> bool:
        """Whether the run folder still holds a ``summary.json`` (results to point at)."""
        return (self.run_dir / "summary.json").is_file()

    def _recorded_cases(self) -> Optional[list]:
        """The cases the folder's ``summary.json`` holds, read back from it (where a
        write failed, it may hold fewer cases than were run); ``None`` where it cannot
        be read."""
        try:
            cases = json.loads((self.run_dir / "summary.json").read_text())["cases"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return cases if isinstance(cases, list) else None

    def stop_count(self) -> None:
        """Not with ``--quiet`` (``quiet_count`` then prints its own line after the
        stop's): for a run that stops before its tables (an interrupt, a failed case, a
        write failure), ``warnings_count_line`` of the cases the folder's
        ``summary.json`` holds (``_recorded_cases``), on stderr under their case lines
        and before the stop's line (the interrupt's, or the error's), which stays the
        run's last: ``1 measurement warning in 1 of 2 cases (printed under their case
        lines above): see DIR/summary.json, or Measurement warnings in python bench.py
        report DIR``; nothing when they hold no warning or it cannot be read, or once
        the run printed its count line (``count_said``: a write failure reported after
        another stop's line, or after ``finish``'s)."""
        if self.quiet or self.count_said:
            return
        self.count_said = True
        cases = self._recorded_cases()
        try:
            line = None if cases is None else warnings_count_line(
                cases, self.run_dir, in_short=self.in_short)
        except (TypeError, AttributeError, ValueError):
            return
        if line:
            self.log(line)

    def quiet_count(self) -> None:
        """With ``--quiet``, for a run that stops before its tables (a failed case, an
        interrupt, a write failure): ``quiet_warnings_line`` of the cases the folder's
        ``summary.json`` holds (``_recorded_cases``), on stdout; nothing when they hold
        no warning or it cannot be read, or once the run printed its line
        (``count_said``, as ``stop_count``: a write failure reported before a failed
        case's line printed one, the case's line none more). A stdout that cannot be
        written to changes nothing."""
        if not self.quiet or self.count_said:
            return
        self.count_said = True
        cases = self._recorded_cases()
        try:
            line = None if cases is None else quiet_warnings_line(cases, self.run_dir)
        except (TypeError, AttributeError, ValueError):
            return
        if line:
            try:
                print(line, flush=True)
            except (OSError, ValueError):  # a closed pipe: the error line says the rest
                pass

    def pointer(self, measured: bool) -> str:
        """The end of a stop's line (joined by ``with_pointer``, which drops a period
        that ends the reason): ``; partial results: DIR`` when steps were
        ``measured`` (a case finished, or the interrupted one recorded steps), else
        ``; run folder (nothing measured): DIR``, since the folder stays and a rerun
        needs another ``--output`` or the folder removed; ``""`` when the folder no
        longer holds a ``summary.json``."""
        place = self.place(measured)
        return f"; {place}" if place else ""

    def place(self, measured: bool) -> str:
        """``pointer`` without its ``; ``: ``partial results: DIR``, ``run folder
        (nothing measured): DIR`` or ``""``; what an interrupt's line
        (``Interrupted.line``) is given as what was kept."""
        if not self.kept():
            return ""
        if measured:
            return f"partial results: {path_word(str(self.run_dir))}"
        return f"run folder (nothing measured): {path_word(str(self.run_dir))}"

    def interrupted(self, exc: Interrupted) -> None:
        """Name an interrupt that came between cases in ``summary.json`` (one inside a
        case is written by ``case``); a write error here changes nothing. When cases
        finished before it, say so in one line ending ``; partial results: DIR``, with
        the count ``summary.json``'s ``problems`` records (one text for both):
        ``bench.py: interrupted by SIGHUP after 3 of 4 cases; partial results: DIR
        (exit 129)``. One
        that came after the final status was written (while the tables print) leaves
        the run as written, and its line says so. One that came before any case
        finished names the folder as holding nothing measured (``pointer``)."""
        if self.stopped:
            if self.final_status is not None and not exc.reported and self.kept():
                where = path_word(str(self.run_dir))
                print(exc.line("bench.py", f"the run is {self.final_status}: {where}",
                               when="while the results printed"), file=sys.stderr)
                exc.reported = True
            return
        every = 0 < self.num_done == self.num_cases  # only the checks across cases were left
        when = (f"after {all_of(self.num_cases, 'case', 'cases')}, before the checks "
                "across them"
                if every else f"after {self.num_done} of {self.num_cases} cases")
        try:
            with signals.deferred():
                self.writer.finish("incomplete", [f"interrupted by {exc.signal_name} {when}"])
        except RunFolderError:
            pass
        if exc.reported or not self.kept():
            return
        self.stop_count()
        print(exc.line("bench.py", f"results: {path_word(str(self.run_dir))}" if every
                       else self.place(self.num_done > 0), when=when),
              file=sys.stderr)
        exc.reported = True
        self.quiet_count()

    def _record(self, result: CaseResult, cpu_before,
                extra_warnings: Sequence[str] = (),
                t0: Optional[float] = None) -> dict[str, Any]:
        """Summarize a finished case (``extra_warnings`` added to its ``warnings``),
        write it, keep its captures; its summary. ``t0``: ``time.perf_counter()`` when
        the case began (before its processes started): its ``case_elapsed_s``, the
        seconds from then to now (processes, steps, floor and teardown; not the writing
        of its files), the figure of the terminal's ``(1.3 s for the whole case)``; its
        ``runner_wait_s``, the part of them spent waiting for runners started by hand
        (``CaseResult.runner_wait_s``; 0.0 where there was none), to the same
        millisecond. A finished case whose files were all written but floor.csv is
        listed as finished without its floor (``_without_floor``) and the write's
        ``RunFolderError`` raised, its captures not saved."""
        case = result.spec
        elapsed_s = None if t0 is None else round(time.perf_counter() - t0, 3)
        usage = cpu_usage_between(cpu_before, read_cpu_times())
        attach_token_bytes(result)

        def summarized(extra: Sequence[str]) -> dict[str, Any]:
            summary = summarize_case(result)
            summary["machine_busy_pct"] = usage.get("busy_pct")
            summary["cpu_steal_pct"] = usage.get("steal_pct")
            summary["warnings"] = (noise_warnings(summary, usage) + list(extra)
                                   + _code_warnings(summary, self.writer.metadata))
            summary["case_elapsed_s"] = elapsed_s
            summary["runner_wait_s"] = round(result.runner_wait_s, 3)
            return summary

        summary = summarized(extra_warnings)
        try:
            self.writer.add_case(result, summary)
        except RunFolderError as exc:
            if not self._floor_alone_unwritten(result):
                raise
            floor = result.floor_step_ns
            listed = summarized([*extra_warnings, self._without_floor(result, exc)])
            try:
                self.writer.list_case(listed)
            except RunFolderError:  # summary.json refused too: unfinished, as before
                self.writer.cases.pop()  # list_case's, last
                result.floor_step_ns, result.floor_unwritten = floor, None
                raise exc from None
            raise
        if case.repetition == 0 and not case.stream:  # a streamed case kept no frames
            captures = build_captures(result)
            try:
                save_captures(self.run_dir, result)
            except OSError as exc:
                raise RunFolderError(self.run_dir / MESSAGES_DIR, exc) from None
            if case.count == "decode_only":
                self.captured.append((case, captures))
        return summary

    def _floor_alone_unwritten(self, result: CaseResult) -> bool:
        """Whether ``add_case`` failed for a finished case (no ``error``) on a write
        floor.csv refused, alone (``RunWriter.failed_alone``; not a floor.csv found
        removed, whose earlier cases' rows are lost too): its other files (steps.csv,
        requests.csv, itl.csv...) hold all its rows, so every figure but the floor's
        is that of rows on disk."""
        return (result.error is None and bool(result.floor_step_ns)
                and self.writer.failed_alone(result.spec.case_id, "floor.csv"))

    def _without_floor(self, result: CaseResult, exc: RunFolderError) -> str:
        """A finished case whose floor rows floor.csv could not take (``exc``, a full
        disk or a file size limit; ``_floor_alone_unwritten``): it is kept as finished
        without its floor (``CaseResult.floor_unwritten``: ``exc``'s line), as one
        whose floor was cut short; the warning that says why, ``floor.csv could not
        take the floor's rows (1,000 of them: No space left on device): the floor's
        figures (floor tok/s, x floor) are absent; its counted steps are all in
        steps.csv``. The run still fails on ``exc`` (``write_failed``)."""
        n = self.writer.rows_not_written[result.spec.case_id]["floor.csv"]
        result.floor_unwritten = str(exc)
        result.floor_step_ns = []  # rows not on disk: no figure drawn from them
        return (f"{FLOOR_UNWRITTEN_WORDS} ({n:,} of {'it' if n == 1 else 'them'}: "
                f"{exc.reason}): {FLOOR_ABSENT_WORDS}; its counted steps are all in "
                "steps.csv")

    def finish(self, ci_method: str, scenario_report: Optional[Callable]) -> int:
        """After the last case: digests, paired comparisons, byte model and the
        scenario's report, the final status in ``summary.json``, then the tables, the
        ``note:`` lines (the digests'; ``floor_pair_notes``, not with ``--quiet``) (and
        after them, with ``--quiet``, ``quiet_warnings_line``, else, where stdout goes
        elsewhere than stderr, ``warnings_count_line``'s for stdout), the ``results:``
        line, then (not with ``--quiet``) on stderr the run's time from its first line to here
        (``ipc-bench: 8 cases run in 3 min 12 s``; ``, 31.0 s of it waiting for runners
        started by hand`` after it where its cases waited for them, ``_hand_wait``), the
        warnings the scenario's report added to the cases (``warning: CASE: TEXT``), the warnings of a trace replay arm
        whose repetitions vary over 10 % (``replay_arm_warnings``, as the report adds
        them, without the backticks of its Markdown: ``warning: CASE: across the 2
        repetitions of its arm, ... (step_ns_rep_block_cv, > 10 %) ...``; each kind in
        full once, then in short, ``_arm_lines``) and ``warnings_count_line``, which
        counts them; 1
        when a check found a problem, or when the tables could not be written to
        stdout (``_stdout_lost``)."""
        writer = self.writer
        problems, notes = check_digests(writer.cases)
        pair_notes = [] if self.quiet else floor_pair_notes(writer.cases)
        notes += pair_notes  # --quiet prints no note: lines
        pair_send_savings(writer.cases)
        problems += no_request_served(writer.cases)
        problems += no_step_counted(writer.cases, {
            c["case_id"]: c["warmup_steps"] for c in writer.metadata.get("cases", ())})
        writer.comparisons = compare_cases(writer.cases, method=ci_method)
        writer.byte_model = byte_model_report(self.captured, writer.cases)
        problems += [f"byte model: {r['workload']} {r['codec']} {r['arm']}: "
                     f"{r['mismatches']} of {r['messages_checked']} captured messages differ "
                     "from the formula" for r in writer.byte_model if r["mismatches"]]
        # The scenario's report may add fields to the summaries: before they are written.
        # Warnings it adds come after the case lines: printed after the last case.
        held = [len(c.get("warnings") or ()) for c in writer.cases]
        extra = scenario_text(scenario_report, writer.cases, ci_method, problems)
        late = {c["case_id"]: list(c["warnings"][n:]) for c, n in zip(writer.cases, held)
                if len(c.get("warnings") or ()) > n}
        num_late = sum(len(v) for v in late.values())
        added = replay_arm_warnings(writer.cases, self.run_dir)  # recorded on its cases
        arm_lines, arm_short = self._arm_lines(added)  # printed after the last case
        self.stopped = True
        with signals.deferred():
            self.final_status = "failed" if problems else "complete"
            writer.finish(self.final_status, problems)
        # every file is written: a stdout that fails below says where they are
        written_elsewhere(f"the results are in {one_line(path_word(str(self.run_dir)))}")
        text = [format_tables(writer.cases, ci_method)]
        if any(c["n_pairs"] >= 2 for c in writer.comparisons):
            text.append(format_comparisons(c for c in writer.comparisons if c["n_pairs"] >= 2))
        if writer.byte_model:
            text.append(format_byte_model(writer.byte_model))
        text.append(extra)
        text += [f"note: {note}" for note in notes]
        counted = dict(added=added, in_short=self.in_short, late=num_late,
                       added_short=arm_short)  # the count line's, on stdout and stderr
        text.append(quiet_warnings_line(writer.cases, self.run_dir, added) if self.quiet
                    else warnings_count_line(writer.cases, self.run_dir, len(pair_notes),
                                             on_stdout=True, **counted)
                    if _apart() else None)
        # a line break escaped; a relative folder that begins with "-" as ./-x
        text.append(f"\nresults: {one_line(path_word(str(self.run_dir)))}\n")
        # one write, the whole text: a reader that reads once and leaves (``| head -1``)
        # takes it before it goes, where it fits the pipe (64 KiB on Linux)
        with one_write():
            print("\n".join(t for t in text if t), end="")
        n = len(writer.cases)
        self.log(f"ipc-bench: {n:,} case{'' if n == 1 else 's'} run in "
                 f"{run_seconds(time.monotonic() - self.t_start)}"
                 f"{_hand_wait(self.runner_wait_s, run_seconds)}")
        # the scenario's report's, then the report's (``_arm_lines``), after the last case
        for line in [f"warning: {c}: {w}" for c, ws in late.items() for w in ws] + arm_lines:
            self.log(line)
        count = warnings_count_line(writer.cases, self.run_dir, len(pair_notes),
                                    stdout_lost=stdout_failure(sys.stdout) is not None,
                                    stdout_gone=_stdout_gone(), **counted)
        if count is not None:  # on stderr, under the warnings' lines (not with --quiet)
            self.log(count)
        for p in problems:
            print(one_line(f"bench.py: error: {p}"), file=sys.stderr)
        lost = self._stdout_lost()
        return lost if lost is not None else 1 if problems else 0

    def _stdout_lost(self) -> Optional[int]:
        """After the run's last line: where its tables could not be written to stdout
        (``console.stdout_failure``: ``> /dev/full``, not a reader gone), the reason
        (``cannot write to stdout: No space left on device``) is added to the
        ``problems`` of ``summary.json`` and its status left as it was: ``complete``
        where every case was measured and written (its results are all there,
        ``bench.py report`` prints its tables; ``results.load`` says it once, as a
        ``RunStatusWarning`` that does not call the run failed), ``failed`` where a
        check failed it; exit code 1 (the line is ``Console``'s, ending ``; the
        results are in DIR``). ``None`` where stdout took everything. A write failure
        here is reported (``write_failed``) without a second count line
        (``count_said``: ``finish`` printed it, or ``--quiet``'s)."""
        self.count_said = True
        lost = stdout_failure(sys.stdout)
        if lost is None:
            return None
        try:
            with signals.deferred():
                self.writer.finish(self.final_status, [lost])
        except RunFolderError as exc:
            return self.write_failed(exc)
        return 1


def _stdout_gone() -> bool:
    """Whether a write to stdout found its reader gone (a broken pipe, ``| true``: the
    run then exits 141), which ``console.stdout_failure`` does not count as a failure:
    what it was given was read by no one."""
    error = getattr(sys.stdout, "error", None)  # a GuardedStream's first lost write
    return isinstance(error, OSError) and error.errno == errno.EPIPE


def _apart() -> bool:
    """Whether stdout and stderr go to different places (``> out.log 2> err.log``, a
    pipe for each), so that stdout's log would hold none of the warnings stderr has;
    not for one file or terminal both write to (``2>&1``, a terminal: they would be
    read twice). A stream that cannot be told (no descriptor) counts as apart."""
    try:
        out, err = os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        return True
    if os.isatty(sys.stdout.fileno()) and os.isatty(sys.stderr.fileno()):
        return False
    return (out.st_dev, out.st_ino) != (err.st_dev, err.st_ino)


def scenario_text(scenario_report: Optional[Callable], cases: list[dict[str, Any]],
                  ci_method: str, problems: list[str]) -> str:
    """The text of the scenario's ``report(cases[, method=ci_method])`` (``""`` without
    one). One that raises costs the run nothing else: its exception is added to
    ``problems`` (``the scenario's report() raised TYPE: MESSAGE (scenarios/x.py line
    12, in report)``: the run is then ``failed``, exit 1) and ``""`` returned, so the
    tables still print and ``summary.json`` is finished."""
    if scenario_report is None:
        return ""
    try:
        if "method" in inspect.signature(scenario_report).parameters:
            return scenario_report(cases, method=ci_method)
        return scenario_report(cases)
    except Exception as exc:
        where = scenario_frames(exc)[0] or getattr(scenario_report, "__module__", "?")
        problems.append(one_line(f"the scenario's report() raised {type(exc).__name__}: "
                                 f"{exc} ({where}); the cases' results are complete"))
        return ""


def _seconds(value: float) -> str:
    """A case's whole time in the terminal's progress line: ``1.3 s``, or, below
    0.1 s (a single-process case of a short run), ``0.04 s``, not ``0.0 s``."""
    return f"{value:.1f} s" if value >= 0.095 else f"{value:.2g} s"


def _hand_wait(wait_s: float, seconds: Callable[[float], str]) -> str:
    """What a case's line (``(33.3 s for the whole case, 31.0 s of it waiting for
    runners started by hand)``) and the run's last line (``ipc-bench: 2 cases run in
    34.8 s, 31.0 s of it waiting for runners started by hand``) add for ``wait_s``
    seconds spent waiting for runners started by hand to connect
    (``CaseResult.runner_wait_s``: a person starting them), written by ``seconds``
    as that line writes its own time (``_seconds``, ``run_seconds``): nothing below
    0.1 s (a spawned runner's case, or one whose runners had connected already)."""
    if wait_s < 0.095:
        return ""
    return f", {seconds(wait_s)} of it waiting for runners started by hand"


def run_seconds(value: float) -> str:
    """A run's whole time (``value`` in seconds) in its last line, ``ipc-bench: 1 case
    run in 0.3 s``: under a minute to the case line's precision (``_seconds``: ``0.3
    s``, ``12.4 s``), so no case's printed time exceeds the run's; from a minute on
    ``duration_words``'s (``1 min 5 s``)."""
    return _seconds(value) if value < 59.95 else duration_words(value)


def _steps_measured(result: Optional[CaseResult]) -> bool:
    """Whether ``result`` (the case running or being written, if any) measured a step:
    rows in memory, or rows streamed to its files (``recording.StreamStats``)."""
    if result is None:
        return False
    stream = result.stream_stats
    return bool(result.sched_rows or (stream is not None and stream.num_total_steps))
