"""The run command (the default): ``python bench.py --scenario NAME [options]``, and
``--list``.

Parses the options (``ipc_bench.cli.options``), builds the scenario's cases and checks
every setting against them before a process starts (bad input: one line, exit 2),
then hands the cases to ``ipc_bench.cli.execute``.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import shutil
import sys
import tempfile
from types import ModuleType
from typing import Any, Callable, Optional

from ipc_bench.cli.console import closed_stdout_refusal
from ipc_bench.cli.once import COMMAND_WORDS, did_you_mean
from ipc_bench.cli.options import SCHEDULER_OVERRIDES, UsageError, build_parser
from ipc_bench.engine.config import (ASYNC_CACHED_ONLY, CACHED, DEFAULT_VLLM_LAYOUT, POLICIES,
                                     SEND, SPEC_MODELS, ConfigError)
from ipc_bench.engine.traces import TraceError
from ipc_bench.errors import fd_shortage_text, one_line, out_of_fds, startup_shortage_text
from ipc_bench.harness.memory import HeapReport, check_step_memory
from ipc_bench.harness.signals import deferred
from ipc_bench.harness.spec import INPROC
from ipc_bench.wire.codecs import DEFAULT_CODECS, LAYOUT_CODECS, PICKLED_CODECS, STATEFUL_CODECS
from ipc_bench.wire.frontend import FRONTEND_SOCKET_NAMES
from ipc_bench.wire.shm_ring import RING_TRANSPORTS, check_ring
from ipc_bench.wire.tp import tp_socket_names
from ipc_bench.wire.transport import (TRANSPORTS, EndpointError, case_fds, check_endpoints,
                                      set_sweep_sink)

#: The runner's buffers may take at most this share of the machine's available memory.
MAX_MEMORY_SHARE = 0.5

#: Why ``--pp`` refuses drafts: vLLM does not combine them at the commits this harness
#: mirrors (7f280d69c, d4d309409; v0.9.2's docs: "not compatible with pipeline
#: parallelism"); EAGLE3-style drafts with PP came with PR #50514 (Model Runner V2:
#: drafter on the last stage, its drafts broadcast to the other stages).
PP_SPEC_REFUSAL = ("vLLM does not run speculative decoding with pipeline parallelism at "
                   "the commits mirrored here (its docs: \"not composable ... as of "
                   "vllm<=0.15.0\"; added later by PR #50514)")


def main(argv: list[str]) -> int:
    """The run command; returns the exit code (2 on bad input). ``Interrupted``
    propagates to ``ipc_bench.cli.main``. What the socket folders' sweep removes
    (``transport.EndpointDir``) is said in a ``note:`` line after the run's first line
    (``execute.run_cases``; not with ``--quiet``)."""
    swept: list[str] = []
    previous = set_sweep_sink(swept.append)
    try:
        return _main(argv, swept)
    except (UsageError, ConfigError, TraceError, EndpointError) as exc:
        print(f"bench.py: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except Exception as exc:  # no descriptor left wherever the system said so
        if not out_of_fds(exc):
            raise
        print(f"bench.py: error: {fd_shortage_text(exc)}", file=sys.stderr)
        return 2
    finally:
        set_sweep_sink(previous)


#: A run's timed replays get a ``note:`` line on how long they take from this many
#: seconds of wall time in all.
REPLAY_NOTE_FROM_S = 60.0


def replay_note(opts, cases: list) -> Optional[str]:
    """Check the run's timed replays against the cap (``check_timed_replays``:
    ``opts.timed_replay`` once per timed case of ``cases``, ``ConfigError`` past it),
    then the note on how long they take in all when over ``REPLAY_NOTE_FROM_S``: ``the
    timed replays will take about 12 h 37 min (4 cases of 3 requests at 0.0001x)``;
    else ``None``. Their steps' own time beyond the last arrival is not counted."""
    from ipc_bench.harness.scenario import check_timed_replays, timed_cases
    from ipc_bench.harness.progress import duration_words

    check_timed_replays(opts, cases)
    replay, n = opts.timed_replay, timed_cases(cases)
    if replay is None or replay.duration_s * n <= REPLAY_NOTE_FROM_S:
        return None
    return (f"the timed replay{'' if n == 1 else 's'} will take about "
            f"{duration_words(replay.duration_s * n)} ({n:,} case{'' if n == 1 else 's'} "
            f"of {replay.num_requests:,} requests at {replay.speedup:g}x)")


def tmpdir_note() -> Optional[str]:
    """The note for a ``TMPDIR`` that is set but not the folder Python's ``tempfile``
    uses (it is not a folder this user can write to, so ``tempfile`` fell back to
    another, ``/tmp`` most often): where the socket folders go instead. ``None`` when
    ``TMPDIR`` is unset or used, or no folder is usable (``EndpointDir`` then says so)."""
    wanted = os.environ.get("TMPDIR")
    if not wanted:
        return None
    try:
        used = tempfile.gettempdir()
    except OSError:
        return None
    if os.path.realpath(wanted) == os.path.realpath(used):
        return None
    return (f"TMPDIR={wanted} is not a folder this user can write to: the socket "
            f"folders go to {used}")


def _list_alone(args, parser) -> None:
    """``--list`` takes no other option (it runs nothing): raises ``UsageError`` naming
    the options given beside it, as their ``--`` names, in the parser's order."""
    alone = vars(parser.parse_args(["--list"]))
    given = [name for name, value in vars(args).items() if value != alone.get(name)]
    if given:
        names = [max(a.option_strings, key=len) for a in parser._actions
                 if a.dest in given and a.option_strings]
        raise UsageError(f"--list takes no other option (it runs nothing): got "
                         f"{', '.join(names)}")


def _main(argv: list[str], swept: list[str]) -> int:
    from ipc_bench.engine.token_ids import forget_histograms
    from ipc_bench.harness.scenario import discover

    forget_histograms()  # each run reads its --token-ids hist: file afresh, once
    parser = build_parser()
    parser.commands = COMMAND_WORDS  # bench.py reprot RUN: (did you mean report?)
    args = parser.parse_args(argv)
    problems: dict[str, str] = {}
    scenarios = discover(problems)
    if args.list:
        _list_alone(args, parser)
        return list_scenarios(scenarios, problems)
    module = _scenario(args, scenarios, problems)
    opts, cases, trace_warnings = _cases_checked(args, parser, module)
    note = replay_note(opts, cases)  # every K of --num-spec-tokens replays too
    if note is not None:
        opts.notes.append(note)
    opts.notes.extend(_check_cases(args, cases))
    note = tcp_codecs_note(args, module, cases)
    if note is not None:
        opts.notes.append(note)
    _check_order_seed(args, opts, cases)
    # the per-step records of the largest case against the memory free now
    step_warning = check_step_memory(cases, available_memory_bytes(), args.remote_runners)
    cases = with_cpu_affinity(cases, args.cpu_affinity, args.remote_runners)
    note = shared_cpu_note(cases, args.remote_runners)
    if note is not None:
        opts.notes.append(note)
    for line in trace_warnings + ([step_warning] if step_warning else []):
        print(f"bench.py: warning: {line}", file=sys.stderr)
    if args.input_oracle_interval == 0:
        print("bench.py: warning: --input-oracle-interval 0: the input oracle is off, the "
              "token ids the runner feeds are not checked (the summary and tables say so)",
              file=sys.stderr)
    refusal = closed_stdout_refusal("the run's tables", "the run folder")
    if refusal is not None:
        raise UsageError(refusal)
    line = ci_method_warning(args.ci_method, opts.repeat) if compares_arms(cases) else None
    if line is not None:  # --aa's pair included
        print(f"bench.py: warning: {line}", file=sys.stderr)
    elif args.aa and opts.repeat < 2:
        print("bench.py: warning: --aa with one repetition gives the A/A pair no verdict "
              "(its comparison's interval needs >= 2 pairs): add --repeat 2 or more to "
              "see this machine's noise; bytes and times are measured all the same",
              file=sys.stderr)
    remote = _remote_runners(args, cases)
    pinned_from = os.sched_getaffinity(0) if args.cpu_affinity else None
    if pinned_from is not None:  # every check passed: the scheduler runs on its set from now
        os.sched_setaffinity(0, args.cpu_affinity[0])
    try:
        return _run(args, cases, module, opts, swept, remote)
    finally:  # main() called in-process (a notebook, a test) gets its CPUs back
        if pinned_from is not None:
            os.sched_setaffinity(0, pinned_from)


def _run(args, cases: list, module: ModuleType, opts, swept: list[str], remote) -> int:
    """Runs the checked ``cases`` (``execute.run_cases``) and returns the exit code; with
    hand-started runners (``remote``), closes them after, saying how the run ended."""
    from ipc_bench.cli.execute import run_cases

    report = getattr(module, "report", None)
    note = tmpdir_note()
    if note is not None:
        opts.notes.append(note)
    if remote is None:
        return run_cases(args, cases, report, notes=opts.notes, swept=swept,
                         trace_sha256=opts.trace_sha256,
                         trace_resolved_path=opts.trace_resolved_path)
    code = None
    try:
        code = run_cases(args, cases, report, remote=remote, notes=opts.notes, swept=swept,
                         trace_sha256=opts.trace_sha256,
                         trace_resolved_path=opts.trace_resolved_path)
        return code
    finally:
        remote.close("" if code == 0 else "the scheduler's run was interrupted"
                     if code is None else f"the scheduler's run ended with exit code {code}")


def _cases_checked(args, parser, module: ModuleType) -> tuple[Any, list, list[str]]:
    """``(options, cases, trace warnings)`` of the parsed command line ``args`` for
    scenario ``module``: its scenario options checked (``_check_options``), its cases
    built (``_build_cases``, then ``with_spec_decoding``) and its trace replays checked
    (``_check_trace_cases``). ``UsageError``, ``ConfigError`` or ``TraceError`` (one
    line) for what ``bench.py`` refuses there."""
    _check_options(args, parser, module)
    opts = _scenario_options(args, getattr(module, "DEFAULT_REPEAT", 1))
    cases = with_spec_decoding(_build_cases(args.scenario, module, opts),
                               args.num_spec_tokens, args.spec_acceptance)
    cases = with_vllm_layout(cases, args.vllm_layout or DEFAULT_VLLM_LAYOUT)
    return opts, cases, _check_trace_cases(args, module, opts, cases)


def trace_replay_problem(argv: list[str]) -> Optional[str]:
    """Why ``bench.py ARGV`` (a run command line, without ``--output``) would refuse
    to start, as far as its options, its scenario's cases and their trace replays
    tell (``_cases_checked``: a trace it cannot read, every request rejected as
    longer than ``max_model_len`` or its KV cache, a served request that outgrows the
    cache, every step in the warm-up), in its words (one line, what follows its
    ``bench.py: error: ``); ``None`` where it would pass them. Builds the cases as
    that ``bench.py`` does, on this machine, and runs or writes nothing; the checks
    of the cases against the machine (sockets, memory, the torch device) are not
    made."""
    from ipc_bench.harness.scenario import discover

    parser = build_parser()
    problems: dict[str, str] = {}
    try:
        args = parser.parse_args(argv)
        module = _scenario(args, discover(problems), problems)
        _cases_checked(args, parser, module)
    except (UsageError, ConfigError, TraceError) as exc:
        return one_line(str(exc))
    return None


def _check_trace_cases(args, module: ModuleType, opts, cases: list) -> list[str]:
    """``harness.trace_checks.check_trace_cases`` of the run's trace replays: refuses
    (``ConfigError``, exit 2) one whose every request would be rejected on arrival, one
    with a served request that outgrows the whole KV cache at its last step (without
    drafts, or with every draft where that is certain), or one whose every step would
    fall in the warm-up (not a timed replay); returns the warnings (printed once every
    check passed, before the first case): requests some of which will be rejected, a
    timed replay that will count no step, served requests that outgrow the cache if
    their last step schedules all its drafts. The ``--max-requests`` in effect is the
    given one, else the scenario's default (``OPTION_DEFAULTS``; not a number: the
    whole trace)."""
    from ipc_bench.harness.scenario import option_defaults
    from ipc_bench.harness.trace_checks import check_trace_cases

    limit = opts.max_requests
    if limit is None:
        default = option_defaults(module).get("max_requests")
        limit = default if isinstance(default, int) else None
    return check_trace_cases(cases, limit, opts.max_requests is not None,
                             args.warmup_steps is not None)


def case_processes(case, remote_runners: bool = False) -> tuple[str, ...]:
    """The processes of ``case`` that ``--cpu-affinity`` pins, in its order: the
    scheduler, then (none for a single-process case, or with ``remote_runners``:
    started by hand elsewhere) the runner, or each ``--tp`` rank / ``--pp`` stage
    (``rank N``, as their heap reports are named)."""
    if case.transport == INPROC or remote_runners:
        return ("scheduler",)
    ranks = case.tp or case.pp
    if ranks is None:
        return ("scheduler", "runner")
    return ("scheduler", *(f"rank {r}" for r in range(ranks)))


def with_cpu_affinity(cases: list, sets, remote_runners: bool = False) -> list:
    """``cases`` with ``CaseSpec.cpu_affinity`` set to the first ``len(
    case_processes(case))`` of ``sets`` (``--cpu-affinity``; ``None``: as they are).
    With ``--frontend`` one set more than the largest case has processes may be given:
    the last, ``CaseSpec.frontend_cpus`` of each case with a frontend (without it the
    frontend inherits the scheduler's set). ``UsageError`` (one line) on a platform
    without ``os.sched_setaffinity``, for a CPU this process may not run on, for fewer
    sets than a case has processes, or for more than the largest case has (plus its
    frontend's; a set no process would use)."""
    from ipc_bench.harness.affinity import AffinityError, check_affinity

    if sets is None:
        return cases
    try:
        check_affinity(sets)
    except AffinityError as exc:
        raise UsageError(str(exc)) from None
    widest = max(cases, key=lambda c: len(case_processes(c, remote_runners)))
    names = case_processes(widest, remote_runners)
    frontend = any(c.frontend for c in cases)
    if not len(names) <= len(sets) <= len(names) + frontend:
        raise UsageError(_count_refusal(len(sets), widest.case_id, names, frontend,
                                        remote_runners))
    frontend_cpus = sets[-1] if len(sets) > len(names) else None
    return [dataclasses.replace(
        c, cpu_affinity=tuple(sets[:len(case_processes(c, remote_runners))]),
        frontend_cpus=frontend_cpus if c.frontend else None) for c in cases]


def shared_cpu_note(cases: list, remote_runners: bool = False) -> Optional[str]:
    """The note for ``--cpu-affinity`` sets that give a case's pinned processes fewer
    CPUs together than there are processes: ``--cpu-affinity 0,0 runs the 2 processes
    of 2 cases (scheduler, runner) on 1 CPU (0): they take turns on it, so each one's
    times include the other's ...``, named by the widest such case of ``cases``
    (``CaseSpec.cpu_affinity`` set: ``with_cpu_affinity``). A ``--frontend`` case's
    frontend is one of its processes here, on its own set (``CaseSpec.frontend_cpus``)
    or on the scheduler's, which it inherits (``0,1``: 3 processes on 2 CPUs), where the
    cores rules of ``--tp`` / ``--pp`` / shm cases (``affinity.cores_in_use``) count the
    scheduler and runners alone. The option is quoted whole, as the metadata records it
    (``format_cpus`` of each set, the frontend's own last). ``None`` when every pinned
    process may have a CPU of its own (a single-process case's one set among them) or
    nothing is pinned. Raises nothing."""
    from ipc_bench.harness.affinity import format_cpus

    pinned = [(c, *_pinned_processes(c, remote_runners)) for c in cases if c.cpu_affinity]
    shared = [(c, names, sets) for c, names, sets in pinned
              if len(frozenset().union(*sets)) < len(sets)]
    if not shared:
        return None
    widest, names, sets = max(shared, key=lambda p: len(p[2]))
    own = getattr(widest, "frontend_cpus", None)
    given = ",".join(format_cpus(s) for s in (*widest.cpu_affinity, *([own] if own else [])))
    cpus = frozenset().union(*sets)
    k, n, m = len(names), len(shared), len(cpus)
    others = "the other's" if k == 2 else "the others'"
    return (f"--cpu-affinity {given} runs the {k} processes of {n} case{'s' * (n > 1)} "
            f"({', '.join(names)}) on {m} CPU{'s' * (m > 1)} ({format_cpus(cpus)}): they "
            f"take turns on {'it' if m == 1 else 'them'}, so each one's times include "
            f"{others} and are not comparable with a run that gives each process its own "
            "CPU (bytes and the oracles hold)")


def _pinned_processes(case, remote_runners: bool) -> tuple[tuple[str, ...], tuple]:
    """``shared_cpu_note``'s processes of a pinned ``case`` and their CPU sets, in
    ``--cpu-affinity``'s order: ``case_processes``, then a ``--frontend`` case's
    frontend, on its own set or (named ``frontend on the scheduler's set``) on the
    scheduler's, which it inherits."""
    names = case_processes(case, remote_runners)[:len(case.cpu_affinity)]
    sets = tuple(case.cpu_affinity)
    if getattr(case, "frontend", False):
        own = getattr(case, "frontend_cpus", None)
        names += ("frontend" if own else "frontend on the scheduler's set",)
        sets += (own or case.cpu_affinity[0],)
    return names, sets


def _count_refusal(given: int, case_id: str, names: tuple[str, ...], frontend: bool,
                   remote_runners: bool) -> str:
    """The line refusing ``given`` sets of ``--cpu-affinity`` for a run whose largest
    case (``case_id``) runs the processes ``names`` (and, with ``frontend``, a frontend,
    which takes one more set or none: both counts are named)."""
    said = f"--cpu-affinity gives {given} CPU set{'s' if given > 1 else ''}"
    n = len(names)
    which = f"({', '.join(names)})" + (" and a frontend" if frontend else "")
    counts = (f"give {n} set{'s' if n > 1 else ''} (the frontend inherits the "
              f"scheduler's set) or {n + 1} (the last one pins the frontend)")
    if given < n:
        return (f"{said}, but case {case_id} runs {n} processes {which}: "
                + (counts if frontend else "give one set per process"))
    return (f"{said}, but this run's cases run at most {n} process{'es' if n > 1 else ''} "
            f"{which}" + (f": {counts}" if frontend else "")
            + (f"{'; ' if frontend else ': '}runners on other hosts are not pinned from "
               f"here (bench.py runner --cpu-affinity pins one where it starts)"
               if remote_runners else ""))


def _remote_runners(args, cases):
    """With ``--remote-runners``: the run's ``wire.remote.RemoteRunners`` (one per rank
    or stage: the largest ``--tp`` or ``--pp`` of the cases, else 1; with ``--pp`` also
    the stages' store port), its control ports bound and its data ports checked
    (``EndpointError``, one line, exit 2, when one is taken), and one line on stderr
    with the command that starts each runner; else ``None``. The run folder is
    checked first, as the run will claim it: a given ``--output`` looked at
    (``execute._check_new_run_dir``: a folder that is not empty, a file, a broken
    link), else the default one tried (``_try_default_run_dir``: ``results/`` a file,
    read-only); its refusal comes before any port is bound or the user is told to
    start a runner, which would then find no scheduler."""
    if not args.remote_runners:
        return None
    from pathlib import Path

    from ipc_bench.cli.execute import _check_new_run_dir
    from ipc_bench.wire.remote import DEFAULT_PORT, RemoteRunners, runner_command

    if args.output:  # only looks: the run claims it later (execute.claim_run_dir)
        _check_new_run_dir(Path(args.output), given=True)
    else:
        _try_default_run_dir(args)

    n = max((c.tp or c.pp or 1) for c in cases)
    remote = RemoteRunners(args.host or "127.0.0.1", args.port or DEFAULT_PORT, n,
                           store=any(c.pp is not None for c in cases))
    commands = "; ".join(runner_command(remote.host, p) for p in remote.ports.ctls)
    print(f"bench.py: waiting up to {args.startup_timeout:g} s for {n} runner(s) started by "
          f"hand; on each runner's host run: {commands}", file=sys.stderr, flush=True)
    return remote


def _try_default_run_dir(args) -> None:
    """Claim the default run folder (``results/<scenario>-<time>``) as the run will
    (``execute.claim_run_dir``, whose refusal, one line, is the run's own: ``cannot
    create a results folder under DIR: Read-only file system; write it elsewhere with
    --output DIR``), then let the claim go and remove the folder, and ``results/``
    where this made it and it is still empty: the run makes its own folder later."""
    from ipc_bench.cli.execute import REPO_ROOT, _topmost_missing, claim_run_dir
    from ipc_bench.harness.run_folder import release_claim

    root = REPO_ROOT / "results"
    made = _topmost_missing(root)
    run_dir, _ = claim_run_dir(args)
    release_claim(run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    folder = root
    while made is not None and folder.is_relative_to(made):
        try:
            folder.rmdir()  # empty only: a run started meanwhile keeps its folder
        except OSError:
            break
        folder = folder.parent


def list_scenarios(scenarios: dict[str, ModuleType], problems: dict[str, str]) -> int:
    """``--list``: one line per scenario, its name and the first line of its docstring;
    then one line on stderr per scenario module that cannot be used (``problems``)."""
    from ipc_bench.harness.scenario import summary_line

    width = max((len(n) for n in scenarios), default=0)
    # one write: a reader that closes its end after the first line (``| head -1``)
    # then meets no second write, whatever stdout's buffering
    sys.stdout.write("".join(f"{name.ljust(width)}  {summary_line(module)}\n"
                             for name, module in scenarios.items()))
    sys.stdout.flush()
    for name, problem in problems.items():
        print(f"bench.py: warning: scenario {name} is left out: {problem}", file=sys.stderr)
    return 0


def _build_cases(name: str, module: ModuleType, opts) -> list:
    """``module.cases(opts)``. Its own refusals (``UsageError``, ``ConfigError``,
    ``TraceError``, ``EndpointError``) pass through; any other exception is reported as a
    module that cannot be imported is (``harness.scenario.discover``): one line naming
    the module's file and the exception, ``UsageError`` (exit 2). So is a result that
    is not a list (or tuple) of ``CaseSpec``: ``scenario NAME cannot be used: FILE
    cases() returned [1, 'x'] (item 0 is an int, not a CaseSpec)``, the value
    shortened as ``reprlib.repr`` shortens it (6 items of a list, 60 characters of a
    string or other value). Each steady case's cap is then set from its workload
    (``_with_steady_caps``)."""
    import reprlib

    from ipc_bench.harness.spec import CaseSpec

    cases = _call_scenario(name, module, "cases()", lambda: module.cases(opts))
    if isinstance(cases, (list, tuple)):
        bad = next((i for i, c in enumerate(cases) if not isinstance(c, CaseSpec)), None)
        if bad is None:
            return _with_steady_caps(name, module, list(cases))
        why = f"item {bad} is {_a_type(cases[bad])}, not a CaseSpec"
    else:
        why = f"{_a_type(cases)}, not a list of CaseSpec"
    shown = reprlib.Repr()
    shown.maxstring = shown.maxother = 60
    raise UsageError(f"scenario {name} cannot be used: {module.__file__} cases() "
                     f"returned {shown.repr(cases)} ({why})")


def _with_steady_caps(name: str, module: ModuleType, cases: list) -> list:
    """``cases`` with each steady case's (``scenario.is_steady``) ``max_steps`` and
    ``output_len_mean`` set again from the workload its ``make_workload`` returns
    (``scenario.set_steady_cap``), so that one a scenario swapped in after
    ``steady_case`` sizes the cap and the advice; a ``max_steps`` the scenario set on a
    steady case is replaced (the cap is the harness's, from the simulated schedule).
    An exception ``make_workload`` raises (``ConfigError`` and the other refusals pass
    through), or the simulation of its workload, is refused in one line:
    ``scenario NAME cannot be used: FILE case ID: make_workload() raised TYPE: MESSAGE``
    (``... the simulation of its workload raised ...``)."""
    from ipc_bench.harness.scenario import is_steady, set_steady_cap

    for case in cases:
        if is_steady(case):
            _call_scenario(name, module, f"case {case.case_id}: make_workload()",
                           case.make_workload)
            _call_scenario(name, module, f"case {case.case_id}: the simulation of its "
                           "workload", lambda: set_steady_cap(case))
    return cases


def _call_scenario(name: str, module: ModuleType, what: str, call: Callable[[], Any]) -> Any:
    """``call()``, a call into scenario ``name``'s code (``module``); the refusals
    (``UsageError``, ``ConfigError``, ``TraceError``, ``EndpointError``) pass through,
    any other exception is ``UsageError``: ``scenario NAME cannot be used: FILE WHAT
    raised TYPE: MESSAGE``. A memory shortage (``errors.startup_shortage_text``: a
    ``MemoryError``; under a ``ulimit -v`` a ``SystemError``, or the ``ImportError`` of a
    library that cannot be mapped, numpy.random's as the scenario builds its workload)
    passes through too: ``bench.py`` ends it with the out-of-memory line naming the
    limit, exit 1, not the scenario's fault."""
    try:
        return call()
    except (UsageError, ConfigError, TraceError, EndpointError):
        raise
    except Exception as exc:
        if startup_shortage_text(exc) is not None:
            raise
        raised = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise UsageError(f"scenario {name} cannot be used: {module.__file__} {what} "
                         f"raised {raised}") from None


def _a_type(value) -> str:
    """``value``'s type with its article: ``an int``, ``a str``, ``a NoneType``."""
    kind = type(value).__name__
    return f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind}"


def _scenario(args, scenarios: dict[str, ModuleType], problems: dict[str, str]) -> ModuleType:
    if not args.scenario:
        raise UsageError("give --scenario NAME (or --list)")
    if args.scenario in scenarios:
        return scenarios[args.scenario]
    if args.scenario in problems:
        raise UsageError(f"scenario {args.scenario} cannot be used: {problems[args.scenario]}")
    left_out = f" ({', '.join(problems)} left out: see --list)" if problems else ""
    raise UsageError(f"unknown scenario {args.scenario!r}"
                     f"{did_you_mean(args.scenario, list(scenarios))}; choose from "
                     f"{', '.join(scenarios)}{left_out}")


def _check_options(args, parser, module: ModuleType) -> None:
    """Refuse (``UsageError``) a scenario-specific option (``SCENARIO_OPTIONS``) given
    on the command line (a value other than its default) that the scenario does not
    take (its ``OPTIONS``)."""
    from ipc_bench.harness.scenario import SCENARIO_OPTIONS, options_taken

    taken = options_taken(module)
    for field, purpose in SCENARIO_OPTIONS.items():
        if field not in taken and getattr(args, field) != parser.get_default(field):
            raise UsageError(f"scenario {args.scenario} does not take "
                             f"--{field.replace('_', '-')} ({purpose})")
    if getattr(module, "ONE_CASE", False):
        _check_one_case(args, parser)


def ci_method_warning(method: str, repeat: int) -> Optional[str]:
    """The warning a run gives before its first case where the ``--ci-method`` a user
    chose (``bootstrap`` or ``sign``; ``t``, the default, needs 2 pairs, as ``--aa``'s
    warning says) needs more pairs than ``repeat`` repetitions give (one pair each), e.g.
    "--ci-method bootstrap with --repeat 3 gives the comparisons no verdict (the
    bootstrap needs >= 34 pairs, one a repetition): add --repeat 34 or more, or use
    --ci-method t; bytes and times are measured all the same" (the verdict the findings
    give at the end, ``analysis.stats.withheld_verdict``); None where they suffice."""
    from ipc_bench.analysis.stats import METHOD_NAMES, min_pairs

    need = min_pairs(method)
    if method == "t" or repeat >= need:
        return None
    return (f"--ci-method {method} with --repeat {repeat} gives the comparisons no verdict "
            f"({METHOD_NAMES[method]} needs >= {need} pairs, one a repetition): add "
            f"--repeat {need} or more, or use --ci-method t; bytes and times are measured "
            f"all the same")


def compares_arms(cases: list) -> bool:
    """Whether the run's ``cases`` (``CaseSpec``) pair two arms anywhere: two
    ``arm_label`` values among the cases of one comparison group (scenario, workload,
    codec, transport and model, as ``analysis.stats.compare_cases`` groups them)."""
    arms: dict[tuple, set[str]] = {}
    for case in cases:
        key = (case.scenario, case.workload_key, case.codec, case.transport,
               case.model.name)
        arms.setdefault(key, set()).add(case.arm_label)
    return any(len(labels) > 1 for labels in arms.values())


def _check_one_case(args, parser) -> None:
    """Refuse (``UsageError``) what a scenario that runs one case (its ``ONE_CASE``:
    soak) would drop: ``--repeat`` above 1, ``--aa``, more than one policy in
    ``--policies`` or codec in ``--codecs``, a ``--ci-method`` (it compares
    nothing; its default, ``t``, passes) and an ``--order-seed`` (it orders nothing).
    ``--async-scheduling`` is a choice of that case (cached+async) and passes; so do ``--no-floor`` and ``--no-single-process``,
    which leave out what a soak does not run, and ``--num-spec-tokens K,...``, each K
    a workload, so a soak, of its own, run one after the other."""
    head = f"scenario {args.scenario} runs one case (one policy, one codec)"
    if args.repeat is not None and args.repeat > 1:
        raise UsageError(f"{head} once: drop --repeat {args.repeat}")
    if args.aa:
        raise UsageError(f"{head}, not a policy against a copy of itself: drop --aa")
    if args.policies and len(args.policies) > 1:
        one = ("--policies cached" if args.async_scheduling
               else "--policies send or --policies cached")
        raise UsageError(f"{head}: give one policy, {one}, not --policies "
                         f"{','.join(args.policies)} (without --policies it runs "
                         f"{CACHED if args.async_scheduling else POLICIES[0]})")
    if args.codecs and len(args.codecs) > 1:
        raise UsageError(f"{head}: give one codec, e.g. --codecs {args.codecs[0]}, not "
                         f"--codecs {','.join(args.codecs)} (without --codecs it runs "
                         f"{DEFAULT_CODECS[0]})")
    if args.ci_method != parser.get_default("ci_method"):
        raise UsageError(f"{head}, compared with nothing: drop --ci-method "
                         f"{args.ci_method}")
    if args.order_seed is not None:
        raise UsageError(f"{head}, in no order: drop --order-seed {args.order_seed}")


def _check_order_seed(args, opts, cases) -> None:
    """Refuse (``UsageError``) an ``--order-seed`` that orders nothing, once the
    scenario built its cases (its own refusals first: overhead's): one repetition keeps
    the order given (``scenario.grid``), and a repetition with one arm per workload and
    codec (``--policies send``) has no order to draw."""
    if args.order_seed is None:
        return
    drop = f"drop --order-seed {args.order_seed}"
    blocks: dict[tuple, set[str]] = {}
    for case in cases:
        blocks.setdefault((case.repetition, case.workload_key, case.codec),
                          set()).add(case.arm or case.policy)
    if all(len(arms) < 2 for arms in blocks.values()):  # whatever --repeat: said first
        raise UsageError(f"--order-seed draws the order of the arms of each repetition, "
                         f"and this run has one arm per workload and codec "
                         f"({', '.join(opts.policies)}): nothing to order; {drop}")
    if opts.repeat == 1:
        raise UsageError(f"--order-seed draws the arms' order of each repetition, and one "
                         f"repetition keeps the order given (--policies): give --repeat 2 "
                         f"or more, or {drop}")


def _scenario_options(args, default_repeat: int = 1):
    """The ``ScenarioOptions`` of the command line (policies, codecs and transport
    checked first: ``UsageError``); ``default_repeat`` repetitions when ``--repeat`` is
    not given (a scenario's ``DEFAULT_REPEAT``, else 1)."""
    from ipc_bench.harness.scenario import ScenarioOptions

    policies = args.policies or list(POLICIES)
    spec = any(args.num_spec_tokens or ())
    if args.spec_acceptance is not None and not spec:
        raise UsageError("--spec-acceptance applies to speculative decoding: give "
                         "--num-spec-tokens K with K above 0")
    if args.async_scheduling:
        if args.policies and SEND in args.policies:
            raise UsageError(f"{ASYNC_CACHED_ONLY}: use --policies cached")
        policies = [CACHED]
    # --async-scheduling alone: each case also runs synchronously, next to it (paired).
    counterpart = args.async_scheduling and not args.policies and not args.aa
    if args.aa:
        if args.policies and len(args.policies) > 1:
            raise UsageError("--aa compares one policy with itself: give --policies send "
                             "or --policies cached (without --policies it runs send and "
                             "send')")
        policies = [args.policies[0] if args.policies else policies[0]]
    codecs = _check_transport(args)
    repeat = default_repeat if args.repeat is None else args.repeat
    return ScenarioOptions(
        seed=args.seed, order_seed=args.order_seed, steps=args.steps,
        warmup_steps=args.warmup_steps,
        num_running=args.num_running, trace=args.trace, max_requests=args.max_requests,
        logical_step_ms=args.logical_step_ms, policies=policies, codecs=codecs,
        transport=args.transport, floor=args.floor, peer_timeout_s=args.peer_timeout,
        repeat=repeat, single_process=args.single_process,
        trace_speedup=args.trace_speedup, scheduler_overrides=_overrides(args),
        startup_timeout_s=args.startup_timeout, host=args.host or "127.0.0.1",
        allow_pickle_over_tcp=args.allow_pickle_over_tcp, model=args.model,
        step_time_ms=args.step_time_ms, step_wait=args.step_wait,
        model_preset=args.model_preset,
        torch_threads=args.torch_threads, device=args.device, roofline=args.roofline,
        attention=args.attention, cuda_graphs=args.cuda_graphs,
        cuda_graph_sizes=args.cuda_graph_sizes, num_blocks=args.num_blocks,
        aa=args.aa, req_id_format=args.req_id_format, vocab_size=args.vocab_size,
        token_ids=args.token_ids,
        input_oracle_interval=args.input_oracle_interval, tp=args.tp,
        tp_transports=args.tp_transports, remote_runners=args.remote_runners,
        async_scheduling=args.async_scheduling, sync_counterpart=counterpart,
        frontend=args.frontend, pp=args.pp)


def with_spec_decoding(cases: list, num_spec_tokens: Optional[list[int]],
                       spec_acceptance: Optional[float]) -> list:
    """The scenario's ``cases`` once per draft count of ``--num-spec-tokens`` (``None``:
    as they are): each copy's ``SchedulerConfig.num_spec_tokens`` set, its
    ``ModelConfig.spec_acceptance`` set when ``spec_acceptance`` is given and K is above
    0, and the label ``num_spec_tokens`` added, so each K is a workload of its own (its
    own table; its policies paired with each other, never with another K's; token
    streams of different K are compared only through the input oracle). K = 0 adds no
    label and keeps the case's model as it is (nothing is drafted, so no acceptance is
    recorded for it): it runs as the case without ``--num-spec-tokens`` does (no drafts,
    the same messages and model config byte for byte), so it keeps that case's id and
    workload and pairs with it across
    runs (a side-by-side report's rows, ``environment.ran_selection`` reading a case
    without the label as K = 0); within a run the K are distinct (``no_repeats``), so
    no two cases share an id. With the torch model the
    scheduler also allocates K lookahead slots (``num_lookahead_tokens``: its drafter
    writes K/V ahead, ``TorchModel.propose``; K slots cover it under async scheduling
    too). A steady case's cap on the steps in all is computed again with its drafts
    (``scenario.steady_case_max_steps``: a decode takes K + 1 tokens of budget and
    gains more than one, so more requests finish a step and prefill takes longer).
    Cases stay in the scenario's order within each K, the K in the order given."""
    if num_spec_tokens is None:
        return cases
    import dataclasses

    import msgspec

    from ipc_bench.harness.scenario import is_steady, steady_case_max_steps

    out = []
    for k in num_spec_tokens:
        for case in cases:
            model = case.model
            if spec_acceptance is not None and k:
                model = msgspec.structs.replace(model, spec_acceptance=spec_acceptance)
            lookahead = k if model.name == "torch" else 0
            labels = {**case.labels, "num_spec_tokens": k} if k else case.labels
            copy = dataclasses.replace(
                case, labels=labels, model=model,
                scheduler=msgspec.structs.replace(case.scheduler, num_spec_tokens=k,
                                                  num_lookahead_tokens=lookahead))
            if is_steady(copy):
                copy.max_steps = steady_case_max_steps(copy)  # K + 1 tokens a decode
            out.append(copy)
    return out


def with_vllm_layout(cases: list, layout: str) -> list:
    """The scenario's ``cases`` with their messages in ``layout`` (``--vllm-layout``:
    each case's ``SchedulerConfig.vllm_layout``); as they are for the default layout,
    whose messages, bytes and case ids stay those of a run without the option."""
    if layout == DEFAULT_VLLM_LAYOUT:
        return cases
    import msgspec

    return [dataclasses.replace(case, scheduler=msgspec.structs.replace(
        case.scheduler, vllm_layout=layout)) for case in cases]


def _check_layout(case, args) -> None:
    """Refuse (``UsageError``) what the 1d37eb37 layout does not run: a codec that
    packs or rewrites the 7f280d69c fields, async scheduling (its placeholders, which
    that layout counts in ``num_output_tokens``, are not modelled), the pp scenario's
    pipeline stages (with or without ``--pp``, which only that scenario takes) and draft
    tokens (neither is checked in it)."""
    layout = case.scheduler.vllm_layout
    head = f"--vllm-layout {layout}"
    if case.transport != INPROC and case.codec not in LAYOUT_CODECS:
        raise UsageError(f"{head} runs with --codecs {','.join(sorted(LAYOUT_CODECS))}, "
                         f"not {case.codec}")
    if case.async_scheduling:
        raise UsageError(f"{head} runs synchronously only: drop --async-scheduling")
    if case.pp is not None:  # only the pp scenario takes --pp: dropping it is no way out
        raise UsageError(f"{head} does not run scenario {args.scenario}'s pipeline "
                         f"stages: drop --vllm-layout or run another scenario")
    if case.scheduler.num_spec_tokens:
        raise UsageError(f"{head} runs without draft tokens: drop --num-spec-tokens")


def _overrides(args) -> dict[str, int]:
    """The scheduler limits given on the command line (``SCHEDULER_OVERRIDES``)."""
    return {k: getattr(args, k) for k in SCHEDULER_OVERRIDES if getattr(args, k) is not None}


def _check_transport(args) -> list[str]:
    """The codecs to run; refuses ``--host`` and ``--allow-pickle-over-tcp`` without
    tcp, and pickle over tcp unless ``--allow-pickle-over-tcp`` (then pickle is left out
    of the default codecs)."""
    if args.host is not None and args.transport != "tcp":
        raise UsageError("--host applies to --transport tcp only")
    if args.allow_pickle_over_tcp and args.transport != "tcp":
        raise UsageError("--allow-pickle-over-tcp applies to --transport tcp only")
    _check_remote(args)
    if args.host is not None and ipaddress.ip_address(args.host).is_unspecified:
        print(f"bench.py: warning: --host {args.host} binds every interface of this machine: "
              "the case's sockets can be reached from the network", file=sys.stderr)
    if args.codecs is None:
        if args.transport == "tcp" and not args.allow_pickle_over_tcp:
            return ["msgpack"]
        return list(DEFAULT_CODECS)
    pickled = [c for c in args.codecs if c in PICKLED_CODECS]
    if pickled and args.transport == "tcp" and not args.allow_pickle_over_tcp:
        raise UsageError(f"refusing to decode pickle from a TCP peer ({_pickle_words(pickled)}):"
                         " pickle runs code on load and any local user can connect to a TCP "
                         "port; use --codecs msgpack or --transport ipc, or pass "
                         "--allow-pickle-over-tcp if every host that can reach the port is "
                         "trusted")
    return args.codecs


def tcp_codecs_note(args, module: ModuleType, cases: list) -> Optional[str]:
    """The note for the default codecs run over ``--transport tcp`` without
    ``--allow-pickle-over-tcp`` (``_check_transport`` leaves the pickled ones out):
    ``--transport tcp leaves pickle out of the default codecs (msgpack,pickle): pickle
    runs code on load ...``. ``None`` when ``--codecs`` is given (a pickled one given is
    refused), for another transport, with ``--allow-pickle-over-tcp``, for a scenario
    that runs one case (``ONE_CASE``: the first default codec, which is not pickled) and
    where no case of ``cases`` runs a codec (only the single-process case)."""
    if (args.codecs is not None or args.transport != "tcp" or args.allow_pickle_over_tcp
            or getattr(module, "ONE_CASE", False)
            or not any(c.codec in DEFAULT_CODECS for c in cases)):
        return None
    dropped = [c for c in DEFAULT_CODECS if c in PICKLED_CODECS]
    return (f"--transport tcp leaves {', '.join(dropped)} out of the default codecs "
            f"({','.join(DEFAULT_CODECS)}): pickle runs code on load and any local user "
            "can connect to a TCP port; --allow-pickle-over-tcp runs it too, if every "
            "host that can reach the port is trusted")


def _pickle_words(codecs: list[str]) -> str:
    """Which of ``--codecs`` are pickled (``codecs``: the ``PICKLED_CODECS`` ones, in
    the order given): ``--codecs packed is pickled``, ``--codecs pickle, packed are
    pickled``. Raises nothing."""
    return f"--codecs {', '.join(codecs)} {'is' if len(codecs) == 1 else 'are'} pickled"


def _check_remote(args) -> None:
    """``--remote-runners`` needs ``--transport tcp`` (the shared-memory ring and ipc
    sockets are local only) and takes no ``--tp-transports``; ``--port`` applies to it
    only, and its ports must fit below 65536 (``UsageError``)."""
    if args.port is not None and not args.remote_runners:
        raise UsageError("--port applies to --remote-runners only (the spawned runner's "
                         "tcp ports are ephemeral)")
    if not args.remote_runners:
        return
    if args.transport != "tcp":
        raise UsageError(f"--remote-runners needs --transport tcp, not {args.transport}: "
                         f"runners on other hosts reach the scheduler over tcp only (the "
                         f"shared-memory ring and ipc sockets are local)")
    if args.tp_transports:
        raise UsageError("--remote-runners broadcasts to the ranks over tcp (XPUB/SUB): "
                         "drop --tp-transports")
    from ipc_bench.wire.remote import DEFAULT_PORT, remote_ports

    try:
        remote_ports(args.port or DEFAULT_PORT, max(args.tp or args.pp or [1]),
                     store=bool(args.pp))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


# ------------------------------------------------------------------ case checks


def _check_cases(args, cases) -> list[str]:
    """Refuses (``UsageError``, ``ConfigError``, ``EndpointError``) cases that could
    not run: none at all, a model option the case's model does not use (the
    scenario's own defaults are not checked), a scheduler override the scenario
    ignores, async scheduling in a scenario of bare loops (overhead) or with --tp
    ranks, the replicated codec with async scheduling, a stateful codec (slots,
    replicated) with drafts or --pp, bad limits, a steady batch whose KV cache cannot
    hold all of its requests (``scenario.check_steady_cache``), a steady batch too
    large to count its steps in ten steps each (``scenario.check_steady_steps``), a
    fixed step not shorter than the peer timeout, runner
    buffers or a KV cache that do not fit, sockets that cannot be set up. Returns the
    notes of cases that can run but slowly (``_cpu_preset_note``)."""
    from ipc_bench.harness.scenario import check_steady_cache, check_steady_steps

    if not cases:
        raise UsageError(f"scenario {args.scenario} has no cases for these options")
    overrides = _overrides(args)
    for case in cases:
        _check_model_options(args, case.model.name)
        for name, value in overrides.items():
            if getattr(case.scheduler, name) != value:
                raise UsageError(f"scenario {args.scenario} does not take "
                                 f"--{name.replace('_', '-')}")
        if case.async_scheduling and case.instrumentation == "totals":
            raise UsageError(f"scenario {args.scenario} measures the bare loop, which has "
                             "no async-scheduling form: drop --async-scheduling")
        if case.scheduler.num_spec_tokens:
            if case.model.name not in SPEC_MODELS:
                raise UsageError(f"--num-spec-tokens needs a model whose drafts can be "
                                 f"verified ({', '.join(SPEC_MODELS)}), not {case.model.name}")
            if case.instrumentation == "totals":
                raise UsageError(f"scenario {args.scenario} measures the bare loop, which "
                                 "has no speculative decoding: drop --num-spec-tokens")
        if case.pp is not None:
            _check_pp(args, case)
        if case.async_scheduling and case.pp is not None:
            raise UsageError(f"scenario {args.scenario} keeps --pp micro-batches in flight "
                             "with its own batch queue: drop --async-scheduling")
        if case.async_scheduling and case.tp is not None:
            raise UsageError(f"scenario {args.scenario} broadcasts to --tp runner ranks, "
                             "which run synchronously only: drop --async-scheduling")
        if case.async_scheduling and case.codec == "replicated":
            raise UsageError("--codecs replicated runs synchronously only (the runner's "
                             "replica applies step n's output before it schedules n+1): "
                             "drop --async-scheduling")
        if case.codec in STATEFUL_CODECS:
            _check_stateful_codec(args, case)
        if case.scheduler.vllm_layout != DEFAULT_VLLM_LAYOUT:
            _check_layout(case, args)
        _check_frontend(args, case)
        case.scheduler.validate()
        check_steady_steps(case)
        check_steady_cache(case, num_blocks_given=args.num_blocks is not None)
        case.model.validate()
        step_s = getattr(case.model, "step_time_ms", 0) / 1e3 if case.model.name == "fixed-step" \
            else 0.0
        if step_s >= case.peer_timeout_s:
            raise UsageError(f"a fixed step of {step_s * 1e3:g} ms is not shorter than "
                             f"--peer-timeout {case.peer_timeout_s:g} s")
    # A runner started by hand checks its own memory and device in the handshake (this
    # machine is not its): only the cases that run here are checked here, and the
    # emulated model's, whose GPU (gpu_figures.json) is the same on every host.
    local = [c for c in cases if not args.remote_runners or c.transport == INPROC]
    _check_memory(local)
    sized = [c for c in cases if not args.remote_runners or c.transport == INPROC
             or c.model.name == "emulated"]
    need = _memory_need(cases)
    _give_runners_the_need(cases, need, num_blocks_given=args.num_blocks is not None)
    notes = _check_torch_cases(sized, num_blocks_given=args.num_blocks is not None,
                               need=need)
    HeapReport.from_env()  # a bad IPC_BENCH_HEAP_REPORT is refused before a case starts
    _check_sockets(cases)
    return notes


def _check_stateful_codec(args, case) -> None:
    """Refuse (``UsageError``) what ``--codecs slots`` and ``replicated`` do not encode:
    draft tokens (``scheduled_spec_decode_tokens``) and ``--pp`` stages."""
    if case.scheduler.num_spec_tokens:
        raise UsageError(f"--codecs {case.codec} does not carry draft tokens "
                         "(scheduled_spec_decode_tokens): use --codecs msgpack,pickle,packed "
                         "with --num-spec-tokens")
    if case.pp is not None:
        raise UsageError(f"--codecs {case.codec} does not run with --pp stages: use --codecs "
                         "msgpack,pickle,packed")


def _check_pp(args, case) -> None:
    """Refuse (``UsageError``) what ``--pp`` stages do not run: drafts (as vLLM at the
    mirrored commits: ``PP_SPEC_REFUSAL``), a frontend."""
    where = f"scenario {args.scenario} runs --pp pipeline stages"
    if case.scheduler.num_spec_tokens:
        raise UsageError(f"{where} without speculative decoding: {PP_SPEC_REFUSAL}: drop "
                         "--num-spec-tokens")
    if case.frontend:
        raise UsageError(f"{where}, whose cases do not run a frontend: drop --frontend")


def _check_frontend(args, case) -> None:
    """Refuse (``UsageError``) ``--frontend`` where its process is not wired in: the
    --tp ranks' supervisor, a streamed case (its finished requests leave memory
    before the frontend's streams are compared) and the bare loops."""
    if not case.frontend:
        return
    if case.tp is not None:
        raise UsageError(f"scenario {args.scenario} broadcasts to --tp runner ranks, whose "
                         "cases do not run a frontend: drop --frontend")
    if case.stream:
        raise UsageError(f"scenario {args.scenario} streams its records (finished requests "
                         "leave memory), so the frontend's token streams could not be "
                         "checked: drop --frontend")
    if case.instrumentation == "totals":
        raise UsageError(f"scenario {args.scenario} measures the bare loop, which sends "
                         "nothing to a frontend: drop --frontend")


def _check_model_options(args, model: str) -> None:
    """Refuse (``UsageError``) a model option given on the command line that ``model``
    does not use (``scenario.MODEL_OPTIONS``: ``--step-time-ms`` and ``--step-wait``
    but for fixed-step, ``--model-preset`` but for torch and emulated, ``--torch-threads``,
    ``--device``, ``--attention``, ``--cuda-graphs``, ``--cuda-graph-sizes`` and
    ``--roofline`` but for torch)."""
    from ipc_bench.harness.scenario import MODEL_OPTIONS

    for field, (models, purpose) in MODEL_OPTIONS.items():
        if model not in models and getattr(args, field) not in (None, False):
            raise UsageError(f"model {model} does not take --{field.replace('_', '-')} "
                             f"({purpose})")


def _check_sockets(cases) -> None:
    """Set up each transport's sockets once (``transport.check_endpoints``, with the
    free file descriptors its cases need: ``transport.case_fds`` of their ``--tp``
    ranks, ``--pp`` stages and ``--frontend``, and the ``ipc://`` socket names they
    bind: ``_socket_names``), and a ring for ``shm*`` (``shm_ring.check_ring``):
    ``EndpointError`` for a socket folder, ``--host``, socket path (the longest a case
    binds), ring socket path or shared memory that cannot work, or too few
    descriptors."""
    needs: dict[tuple, int] = {}
    names: dict[tuple, set[str]] = {}
    for c in cases:
        if c.transport in TRANSPORTS:
            need = case_fds(c.transport, c.tp or c.pp or 1, c.frontend)
            needs[c.transport, c.host] = max(needs.get((c.transport, c.host), 0), need)
            names.setdefault((c.transport, c.host), set()).update(_socket_names(c))
    for transport, host in dict.fromkeys((c.transport, c.host) for c in cases):
        with deferred():  # milliseconds; a signal there must not leave its socket folder
            if transport in TRANSPORTS:
                check_endpoints(transport, host, needs[transport, host],
                                sorted(names[transport, host]))
            if transport in RING_TRANSPORTS:
                check_ring()


def _socket_names(case) -> tuple[str, ...]:
    """The ``ipc://`` socket names ``case`` binds in its socket folders beyond the
    scheduler's own three (``transport.SCHEDULER_SOCKET_NAMES``, which
    ``check_endpoints`` checks itself), from the code that binds them: its ``--pp``
    stages' or ``--tp`` ranks' (``tp.tp_socket_names``: ``ctl0`` ...) and its
    ``--frontend`` hop's (``frontend.FRONTEND_SOCKET_NAMES``: ``frontend-out``,
    ``frontend-back``)."""
    ranks = case.pp if case.pp is not None else case.tp
    return ((tp_socket_names(ranks) if ranks is not None else ())
            + (FRONTEND_SOCKET_NAMES if case.frontend else ()))


def _memory_need(cases) -> tuple[Optional[int], Optional[str], Optional[str]]:
    """What a memory refusal of ``cases``' model names beside the most blocks that fit
    (``check_model_memory``'s ``blocks_needed``, ``needed_by``, ``need_words``): the
    most any steady case holds (``_largest_steady_need``), else the most a trace
    replay needs (``_replay_need``); one ``--num-blocks`` serves every case. ``(None,
    None, None)`` without either."""
    from ipc_bench.harness.scenario import steady_blocks_needed

    need, needed_by = _largest_steady_need(cases, steady_blocks_needed)
    if need is not None:
        return need, needed_by, None
    need, need_words = _replay_need(cases)
    return need, None, need_words


def _give_runners_the_need(cases, need: tuple, num_blocks_given: bool = False) -> None:
    """Set each torch or emulated case's ``runner_need`` (``CaseSpec``) from ``need``
    (``_memory_need``'s), and whether its ``--num-running`` sizes its KV cache
    (``_running_for_blocks``, not with ``num_blocks_given``): its runner, which
    alone knows its device's memory (a GPU's free memory, a runner on another host),
    refuses a model that does not fit with the same advice as the scheduler's check
    (``runner_loop.memory_refusal``), the most ``--num-running`` that runs with the
    blocks that fit there found as that check finds it (``steady_shape``:
    ``scenario.steady_shape`` of ``_steady_fit_case``'s)."""
    from ipc_bench.harness.scenario import steady_shape

    blocks_needed, needed_by, need_words = need
    fit_case = _steady_fit_case(cases)
    shape = steady_shape(fit_case) if fit_case is not None else None
    for case in cases:
        if case.model.name not in ("torch", "emulated"):
            continue
        sized = not num_blocks_given and _running_for_blocks(case) is not None
        case.runner_need = dict(blocks_needed=blocks_needed, needed_by=needed_by,
                                need_words=need_words, running_sized=sized,
                                steady_shape=shape)


def _check_torch_cases(cases, num_blocks_given: bool = False,
                       need: Optional[tuple] = None) -> list[str]:
    """Check every torch and emulated case's ``max_model_len`` against its preset's
    (``check_max_position``) and that its weights + KV cache fit (``ConfigError`` with
    the figures): the torch model's device probed once (in a child process, so
    this process never imports torch; free GPU memory), the emulated GPU's memory,
    and the torch model's attention options on that device (``--cuda-graph-sizes``
    only where the attention pads to buckets, ``--cuda-graphs`` only on CUDA with a
    backend that can be captured). Without ``num_blocks_given`` (``--num-blocks``) a
    steady case's advice also names ``--num-running``, which then sizes its KV cache.
    ``need``: the advice's least blocks (``_memory_need``'s; default: of ``cases``);
    where no ``--num-blocks`` serves it, the advice names the most ``--num-running``
    that runs with the blocks that fit given (``_running_with_blocks``).
    Returns a note for a public preset run on the CPU (``_cpu_preset_note``)."""
    from ipc_bench.engine.config import ConfigError, check_max_position, check_model_memory
    from ipc_bench.engine.paged_attention import (GRAPH_BACKENDS, decode_buckets,
                                                  resolve_attention)
    from ipc_bench.engine.models import probe_torch_device
    from ipc_bench.engine.roofline import EMULATED_GPU, load_gpu_figures

    probed: dict[str, tuple] = {}
    on_cpu: list = []
    need, needed_by, need_words = need if need is not None else _memory_need(cases)
    fits = _running_with_blocks(cases)
    for case in cases:
        model = case.model
        sized = None if num_blocks_given else _running_for_blocks(case)
        check_max_position(case.scheduler, model)
        if model.name == "emulated":
            gpu = load_gpu_figures(EMULATED_GPU)
            check_model_memory(case.scheduler, model, EMULATED_GPU, gpu.memory_bytes,
                               f"an emulated {gpu.name}", running_for_blocks=sized,
                               blocks_needed=need, needed_by=needed_by,
                               need_words=need_words, running_with_blocks=fits)
        if model.name != "torch":
            continue
        if model.device not in probed:
            probed[model.device] = probe_torch_device(model.device)
        device, memory = probed[model.device]
        check_model_memory(case.scheduler, model, device, memory, running_for_blocks=sized,
                           blocks_needed=need, needed_by=needed_by, need_words=need_words,
                           running_with_blocks=fits)
        if device == "cpu":
            on_cpu.append(case)
        attention = resolve_attention(model.attention, device)
        if model.cuda_graph_sizes and attention not in GRAPH_BACKENDS:
            raise ConfigError(
                f"--cuda-graph-sizes sets the decode batch buckets of the "
                f"{' and '.join(GRAPH_BACKENDS)} attention (padding, compiles, CUDA graphs); "
                f"this run's is {attention}"
                + (f" (--attention auto on {device})" if model.attention == "auto" else "")
                + ", which does not pad, so the sizes would go "
                f"unused: leave them out or use --attention {' or '.join(GRAPH_BACKENDS)}")
        decode_buckets(case.scheduler.max_num_seqs, model.cuda_graph_sizes or None)
        if model.cuda_graphs and device != "cuda":
            raise ConfigError(f"--cuda-graphs needs CUDA; the torch model's device is {device}")
        if model.cuda_graphs and attention not in GRAPH_BACKENDS:
            raise ConfigError(f"--cuda-graphs needs --attention {' or '.join(GRAPH_BACKENDS)}; "
                              f"this run's is {attention}")
    note = _cpu_preset_note(on_cpu)
    return [note] if note else []


#: The torch model's presets sized for the CPU (test shapes): the others are public
#: models' shapes, which a CPU runs slowly.
CPU_PRESETS = ("tiny", "cpu")


def _cpu_preset_note(cases) -> Optional[str]:
    """A note when torch ``cases`` that run on the CPU use a public model's preset
    (not ``CPU_PRESETS``): every step reads all of its float32 weights, so a step takes
    of the order of a second and the run's steps (warm-up included) minutes; ``None``
    when none does."""
    from ipc_bench.engine.config import weight_bytes

    big = [c for c in cases if c.model.preset not in CPU_PRESETS]
    if not big:
        return None
    presets = list(dict.fromkeys(c.model.preset for c in big))
    most = max(weight_bytes(c.model, "cpu") for c in big)
    steps = sum(c.max_steps or 0 for c in big)
    where = (f"; {'its case runs' if len(big) == 1 else f'its {len(big)} cases run'} "
             f"{steps:,} steps, warm-up included" if steps else "")
    return (f"the torch model runs {' and '.join(presets)} on the CPU ({most / 2**30:.1f} GiB "
            "of float32 weights, every one read each step): expect about a second a step or "
            f"more{where}; presets {' and '.join(CPU_PRESETS)} are sized for CPU runs")


def _largest_steady_need(cases, blocks_needed) -> tuple[Optional[int], Optional[str]]:
    """The most KV blocks any steady case of ``cases`` holds (``blocks_needed``:
    ``scenario.steady_blocks_needed``), since one ``--num-blocks`` serves them all, and
    the case that holds it (``"--num-running 256"``) where the run's steady cases run
    more than one count, else ``None``; ``(None, None)`` without a steady case."""
    needs = [(n, c.labels["num_running"]) for c in cases
             if (n := blocks_needed(c)) is not None]
    if not needs:
        return None, None
    need, running = max(needs, key=lambda x: x[0])
    several = len({b for _, b in needs}) > 1
    return need, (f"--num-running {running}" if several else None)


def _running_with_blocks(cases):
    """For ``check_model_memory``'s ``running_with_blocks``: the largest ``--num-running``
    whose case runs with ``--num-blocks N`` given (``scenario.steady_running_that_fits``)
    of the steady case that needs the most blocks (``scenario.steady_blocks_needed``, the
    first such, as ``_largest_steady_need`` takes it); ``None`` where that case is not a
    steady one (``scenario.is_steady``) or there is none (``_steady_fit_case``).
    Computed when called."""
    from ipc_bench.harness.scenario import steady_running_that_fits

    case = _steady_fit_case(cases)
    if case is None:
        return None
    return lambda num_blocks: steady_running_that_fits(case, num_blocks)


def _steady_fit_case(cases):
    """The steady case of ``cases`` that needs the most blocks
    (``scenario.steady_blocks_needed``, the first such, as ``_largest_steady_need``
    takes it), of which a memory refusal names the most ``--num-running`` that runs with
    the blocks that fit (``_running_with_blocks``, ``RunnerConfig.steady_shape``);
    ``None`` where that case is not a steady one (``scenario.is_steady``) or there is
    none."""
    from ipc_bench.harness.scenario import is_steady, steady_blocks_needed

    needs = [(n, c) for c in cases if (n := steady_blocks_needed(c)) is not None]
    if not needs:
        return None
    case = max(needs, key=lambda x: x[0])[1]
    return case if is_steady(case) else None


#: What a trace replay's least ``--num-blocks`` (``trace_checks.replay_blocks_needed``)
#: is, in a memory refusal's advice.
REPLAY_NEED_WORDS = ("the blocks the longest request replayed holds at its last step; a "
                     "smaller cache rejects it on arrival or cannot hold it")


def _replay_need(cases) -> tuple[Optional[int], Optional[str]]:
    """The most KV blocks any trace replay among ``cases`` needs to serve every request
    its ``max_model_len`` admits (``trace_checks.replay_blocks_needed``), one
    ``--num-blocks`` serving them all, and ``REPLAY_NEED_WORDS``; ``(None, None)``
    without a replay whose model ``check_model_memory`` sizes (emulated, torch)."""
    from ipc_bench.engine.workloads import TraceWorkload
    from ipc_bench.harness.trace_checks import replay_blocks_needed

    needs = []
    for case in cases:
        if case.model.name not in ("emulated", "torch") or case.max_steps is not None:
            continue
        workload = case.make_workload()
        if isinstance(workload, TraceWorkload):
            needs.append(replay_blocks_needed(workload.trace, case.scheduler))
    if not needs or max(needs) < 1:
        return None, None
    return max(needs), REPLAY_NEED_WORDS


def _running_for_blocks(case):
    """``scenario.steady_running_for_blocks`` at the case's block size for a steady case
    whose KV cache is ``scenario.steady_num_blocks`` of its running requests, else
    ``None``."""
    from ipc_bench.harness.scenario import steady_num_blocks, steady_running_for_blocks

    b = case.labels.get("num_running")
    block_size = case.scheduler.block_size
    if isinstance(b, int) and case.scheduler.num_blocks == steady_num_blocks(b, block_size):
        return lambda num_blocks: steady_running_for_blocks(num_blocks, block_size)
    return None


def available_memory_bytes() -> Optional[int]:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes; ``None`` where it cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _check_memory(cases) -> None:
    """Refuse limits whose runner buffers (int32 ``[max_num_seqs, max_model_len]``
    tokens + ``[max_num_seqs, max_blocks_per_req]`` block table) would take more than
    ``MAX_MEMORY_SHARE`` of the available memory."""
    avail = available_memory_bytes()
    if avail is None:
        return
    for case in cases:
        cfg = case.scheduler
        need = 4 * cfg.max_num_seqs * (cfg.max_model_len + cfg.max_blocks_per_req)
        if need > MAX_MEMORY_SHARE * avail:
            raise UsageError(
                f"max_num_seqs {cfg.max_num_seqs} x max_model_len {cfg.max_model_len} needs "
                f"{need / 2**20:,.0f} MiB of runner buffers, more than "
                f"{MAX_MEMORY_SHARE:.0%} of the {avail / 2**20:,.0f} MiB available")
