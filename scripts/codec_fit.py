#!/usr/bin/env python3
"""Codec time per step as fixed + per-request cost, fitted and checked at 1,024.

Fits ``codec_ns_per_step = fixed + per_request * num_running`` (least squares, with
R^2; ``ipc_bench.analysis.bytemodel.fit_linear``) per policy and codec, where codec time is
the in-loop serializer time of one step in both directions (scheduler encode +
runner decode of the SchedulerOutput, runner encode + scheduler decode of the
ModelRunnerOutput), per case the median over its counted steps (``--stat mean``:
the mean, ``encode_ns_per_step + decode_ns_per_step`` of ``summary.json``, which
steps where a process was descheduled inflate on a loaded machine),
on a decode-steady run at several batch sizes, then compares the line's prediction
at 1,024 running requests with a separate measured run at 1,024. Each direction's
encode and decode is fitted too (in the JSON output).

Usage (about 2-3 minutes on 2 cores):

    python scripts/codec_fit.py                     # runs both decode-steady runs
    python scripts/codec_fit.py --output DIR        # the runs into DIR, not results/
    python scripts/codec_fit.py --fit-run DIR --check-run DIR   # re-analyse

The fit run is ``bench.py --scenario decode-steady --num-running 16,64,128,256,512
--steps S --repeat N``; the check run the same at ``--num-running 1024``. The runs made here go
into ``fit-<time>`` and ``check1024-<time>`` folders under ``--output DIR`` (default
the checkout's ``results/``; DIR is made if missing, where its parent exists: one
whose parent is missing is refused, exit 2). With
``--repeat`` the median over repetitions is used per batch size. Given one run, the
other is run with its policies and codecs. Only two-process cases are fitted: a
single-process case (codec ``none``) has no codec. A fitted fixed or per-request cost
below 0 is not physical (noise or load on the machine bent the line): a warning line
says so. A run given that is not complete (an interrupted one) is fitted over the
cases it finished, and a warning line says so in ``bench.py report``'s words
(``codec_fit.py: warning: DIR: this run is incomplete: CASE: interrupted by SIGTERM;
13 of its 20 cases finished: the fits cover the cases it finished``); where the fits'
batch sizes differ, the table gives each fit's (``fitted at B``).

Exit status 0; 1 if a run fails (``codec_fit.py: error: run failed (exit 2): COMMAND``;
``(bench.py was killed by SIGKILL)`` where a signal ended it; ``; kept: the fit run DIR is
incomplete (2 cases complete)`` at the end where its folder is kept) or the ``--json`` file cannot be written once the fit
is made (disk full: ``codec_fit.py: error: cannot write PATH: REASON``); 2 for bad
input (one line, before any run): an option out of range, a ``--json`` path that cannot be written, an ``--output`` folder that
cannot be written in (or ``--output``, ``--steps`` or ``--repeat`` with both runs
given: nothing is run), a run
folder that cannot be read or lacks what the fit needs (a policy and codec at fewer than 3 batch sizes, a
fitted policy and codec without a complete case at 1,024 in the check run, no case at a
fixed number of running requests: a trace replay's run, ``azure-conv``), or a run of
another scenario than decode-steady, the one fitted (``step-time``, ``overhead``,
``tp-broadcast``, ``pp`` record codec times and ``num_running`` too, but their cases at
one batch size differ in more: ``codec_fit.py: error: argument --fit-run: DIR has no
complete two-process case to fit; its step-time cases are not decode-steady ones
(codec_fit fits decode-steady runs)``); 130 / 143 /
129 when interrupted by SIGINT / SIGTERM / SIGHUP: the running ``bench.py`` gets the
same signal, writes what it measured and is reaped, then one line on stderr names the
run folders made here that are kept and what they hold (``codec_fit.py: interrupted by
SIGINT; kept: the fit run DIR is incomplete (2 cases complete) (exit 130)``); an
``--output`` folder made here that nothing was written to (a run that left its folder
empty removes it) is removed again, and the line says so (``codec_fit.py: interrupted
by SIGINT; the --output folder DIR made here is removed: nothing was written to it
(exit 130)``; one that was there is left as it was); a ``--json`` file is written whole or
not at all.
"""

from __future__ import annotations

import signal

if __name__ == "__main__":
    # As bench.py: the signals of ipc_bench.harness.signals.HANDLED, spelt out
    # (tests/cli/test_script_first_mask.py compares), stay pending until main() has
    # installed its handlers (ipc_bench.harness.signals), so none lands in an import.
    signal.pthread_sigmask(signal.SIG_BLOCK, (
        signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
        signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGXCPU))

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ipc_bench.analysis.bytemodel import fit_linear  # noqa: E402
from ipc_bench.analysis.microbench import incomplete_run_text  # noqa: E402
from ipc_bench.analysis.results import read_summary, run_state  # noqa: E402
from ipc_bench.analysis.run_files import ResultsError  # noqa: E402
from ipc_bench.cli.console import (one_write, script_main, write_output,  # noqa: E402
                                   written_elsewhere)
from ipc_bench.cli.once import OnceParser  # noqa: E402
from ipc_bench.cli.options import (MAX_STEPS, _int_in, writable_file,  # noqa: E402
                                   writable_folder)
from ipc_bench.errors import module_doc, one_line  # noqa: E402
from ipc_bench.harness.run_folder import default_run_dir  # noqa: E402
from ipc_bench.harness.spec import NO_CODEC  # noqa: E402
from ipc_bench.harness import signals  # noqa: E402

PARTS = ("sched_encode_ns_per_step", "runner_decode_ns_per_step",
         "runner_encode_ns_per_step", "sched_decode_ns_per_step")
FIT_SIZES = "16,64,128,256,512"
CHECK_SIZE = 1024
#: Batch sizes a line fit needs (``fit_linear``).
MIN_FIT_SIZES = 3
#: The scenarios whose runs are fitted: cases at the same number of running requests
#: differ in nothing else. The others that record codec times and ``num_running``
#: (step-time: also the step time; overhead: recording on and off; tp-broadcast and
#: pp: the ranks or stages) would be pooled across what they vary; a trace replay
#: (azure-conv) has no fixed number of running requests.
FIT_SCENARIOS = ("decode-steady",)
PROG = "codec_fit.py"


def codec_ns(case: dict) -> float:
    return case["encode_ns_per_step"] + case["decode_ns_per_step"]


STEP_COLUMNS = {  # summary field -> steps.csv column
    "sched_encode_ns_per_step": "encode_ns", "runner_decode_ns_per_step": "runner_decode_ns",
    "runner_encode_ns_per_step": "runner_encode_ns", "sched_decode_ns_per_step": "decode_ns"}


def step_medians(run_dir: Path) -> dict[str, dict[str, float]]:
    """case_id -> summary-style field -> median over the case's counted steps."""
    import pandas as pd

    steps = pd.read_csv(run_dir / "steps.csv")
    steps = steps[steps["counted"] == 1]
    cols = list(STEP_COLUMNS.values())
    med = steps.groupby("case_id", observed=True)[cols].median()
    codec = steps[cols].sum(axis=1).groupby(steps["case_id"], observed=True).median()
    out = {}
    for case_id, row in med.iterrows():
        entry = {field: float(row[col]) for field, col in STEP_COLUMNS.items()}
        entry["encode_ns_per_step"] = float(codec[case_id])  # whole codec time ...
        entry["decode_ns_per_step"] = 0.0                      # ... so codec_ns() sums it
        out[case_id] = entry
    return out


def points(summary: dict, key, medians: dict | None = None
           ) -> dict[tuple[str, str], dict[int, float]]:
    """(policy, codec) -> num_running -> median over repetitions of ``key(case)``;
    with ``medians`` (``step_medians``) the per-case values are per-step medians
    instead of the summary's means. Complete two-process cases at a fixed number of
    running requests of a scenario fitted (``FIT_SCENARIOS``; a case that records
    none is taken) only: a single-process case (codec ``none``) has no codec to
    time, a trace replay's case (``azure-conv``) no ``num_running`` to fit against,
    and another scenario's cases vary more than that (``unfit_note``)."""
    acc: dict[tuple[str, str], dict[int, list[float]]] = {}
    for c in summary["cases"]:
        if not _timed(c) or c.get("num_running") is None or not _fitted_scenario(c):
            continue
        case = medians[c["case_id"]] if medians is not None else c
        acc.setdefault((c["policy"], c["codec"]), {}).setdefault(
            int(c["num_running"]), []).append(key(case))
    return {k: {b: statistics.median(v) for b, v in sorted(d.items())} for k, d in acc.items()}


def _timed(case: dict) -> bool:
    """Whether ``case`` is complete, has counted steps and codec times (two processes)."""
    return bool(case.get("complete") and case.get("num_steps")
                and "encode_ns_per_step" in case and case.get("codec") != NO_CODEC)


def _fitted_scenario(case: dict) -> bool:
    """Whether ``case`` is of a scenario fitted (``FIT_SCENARIOS``) or records none."""
    scenario = case.get("scenario")
    return scenario is None or str(scenario) in FIT_SCENARIOS


def unfit_note(summary: dict) -> str:
    """The end of a refusal's line for a run with cases ``points`` leaves out for their
    scenario, each named: any of a scenario not fitted (``FIT_SCENARIOS``), ``; its
    step-time cases are not decode-steady ones``, a trace replay's (timed ones,
    ``_timed``, without ``num_running``) saying why too, ``; its azure-conv cases are
    not decode-steady ones and have no fixed number of running requests``; then what is fitted, `` (codec_fit fits decode-steady
    runs)``; ``""`` where there is none."""
    cases = summary["cases"]
    batchless = {str(c.get("scenario") or "unnamed") for c in cases
                 if _timed(c) and c.get("num_running") is None}
    other = {str(c["scenario"]) for c in cases if not _fitted_scenario(c)}
    fitted = " or ".join(FIT_SCENARIOS)
    notes = []
    if batchless - other:
        notes.append(f"its {', '.join(sorted(batchless - other))} cases have no fixed "
                     "number of running requests")
    if batchless & other:
        notes.append(f"its {', '.join(sorted(batchless & other))} cases are not {fitted} "
                     "ones and have no fixed number of running requests")
    if other - batchless:
        notes.append(f"its {', '.join(sorted(other - batchless))} cases are not {fitted} "
                     "ones")
    if not notes:
        return ""
    return ("; " + "; ".join(notes)
            + f" (codec_fit fits {' and '.join(FIT_SCENARIOS)} runs)")


def _sizes(pts) -> str:
    """The batch sizes of ``pts`` (a dict by batch size, or a list of them): ``16,
    64, 128``; ``none`` where empty."""
    return ", ".join(f"{b:,}" for b in pts) or "none"


def _pair(key: tuple[str, str]) -> str:
    return " ".join(key)


def fit_problem(fit_dir: Path, fit_pts: dict, summary: dict) -> Optional[str]:
    """Why the fit run's cases (``points`` of its ``summary``) cannot be fitted, or
    ``None``: no two-process case (at a fixed number of running requests, of a
    scenario fitted: ``unfit_note``), or a policy and codec at fewer than
    ``MIN_FIT_SIZES`` batch sizes."""
    if not fit_pts:
        return (f"{fit_dir} has no complete two-process case to fit"
                + unfit_note(summary))
    for key, pts in fit_pts.items():
        if len(pts) < MIN_FIT_SIZES:
            return (f"{fit_dir}: {_pair(key)} at {len(pts)} batch size(s) ({_sizes(pts)}); "
                    f"a line fit needs at least {MIN_FIT_SIZES}")
    return None


def check_problem(check_dir: Path, check_pts: dict, needed, summary: dict) -> Optional[str]:
    """Why the check run's cases (``points`` of its ``summary``) cannot check the fits
    of the ``needed`` (policy, codec) pairs, or ``None``: a pair without a complete
    two-process case at ``CHECK_SIZE``, or (``needed`` empty) no such case at all
    (with ``unfit_note``'s end for a trace replay's cases or another scenario's)."""
    missing = [k for k in sorted(needed) if CHECK_SIZE not in check_pts.get(k, {})]
    if needed and not missing:
        return None
    there = "; ".join(f"{_pair(k)} at {_sizes(pts)}" for k, pts in sorted(check_pts.items()))
    return (f"{check_dir} has no complete two-process case at {CHECK_SIZE:,} running "
            "requests" + (f" for {', '.join(map(_pair, missing))}" if missing else "")
            + f" (it has {there or 'none'})" + unfit_note(summary))


def _product(pairs) -> set[tuple[str, str]]:
    """Every policy of ``pairs`` with every codec of them: what a run of their
    ``--policies`` and ``--codecs`` makes."""
    return {(p, c) for p in {p for p, _ in pairs} for c in {c for _, c in pairs}}


def run(sizes: str, steps: int, repeat: int, out: Path,
        pairs: Optional[set[tuple[str, str]]] = None) -> None:
    """``bench.py --scenario decode-steady`` into ``out`` (removed again if the run
    leaves it empty); with ``pairs``, their policies and codecs only. ``SystemExit``
    (exit 1) if the run fails: ``codec_fit.py: error: run failed (exit 2): COMMAND``,
    ``run failed (bench.py was killed by SIGKILL): COMMAND`` where a signal ended it. A signal meanwhile is passed on to ``bench.py``
    (``signals.call``: it writes what it measured), which is reaped before the
    ``signals.Interrupted`` goes on."""
    cmd = [sys.executable, str(ROOT / "bench.py"), "--scenario", "decode-steady",
           "--num-running", sizes, "--steps", str(steps), "--repeat", str(repeat),
           "--no-floor", "--no-single-process", "--quiet", "--output", str(out)]
    if pairs:
        cmd += ["--policies", ",".join(sorted({p for p, _ in pairs})),
                "--codecs", ",".join(sorted({c for _, c in pairs}))]
    print("running:", " ".join(cmd), file=sys.stderr, flush=True)
    try:
        code = signals.call(cmd, stdout=subprocess.DEVNULL, child_line=False)
    finally:
        if out.is_dir() and not any(out.iterdir()):
            out.rmdir()
    if code != 0:
        how = f"exit {code}" if code > 0 else f"bench.py {signals.child_ended(code)}"
        raise SystemExit(f"{PROG}: error: run failed ({how}): {' '.join(cmd)}")


class _Parser(OnceParser):
    """Bad input: one line on stderr (``codec_fit.py: error: ...``), exit 2; an option
    given twice is refused (``OnceParser``)."""

    def error(self, message: str):
        print(one_line(f"{PROG}: error: {message}"), file=sys.stderr)
        raise SystemExit(2)


def parse_args(argv=None) -> argparse.Namespace:
    p = _Parser(prog=PROG, description=module_doc(sys.modules[__name__]).splitlines()[0])
    p.add_argument("--fit-run", metavar="DIR", help="decode-steady run to fit (several B)")
    p.add_argument("--check-run", metavar="DIR", help="decode-steady run at 1,024")
    p.add_argument("--steps", type=_int_in(1, MAX_STEPS), default=None, metavar="N",
                   help="counted steps per case of the runs made here (default 300)")
    p.add_argument("--repeat", type=_int_in(1, 1000), default=None, metavar="N",
                   help="repetitions of each case of the runs made here, 1 to 1000 "
                   "(default 3)")
    p.add_argument("--stat", choices=("median", "mean"), default="median",
                   help="per case: the median over its counted steps (default; robust "
                   "to steps where the process was descheduled) or the summary's mean")
    p.add_argument("--json", metavar="PATH", type=writable_file,
                   help="write fits and checks as JSON")
    p.add_argument("--output", metavar="DIR", type=writable_folder,
                   help="folder the runs made here go in, as fit-<time> and "
                   "check1024-<time> (default results/ of the checkout); made if missing, "
                   "in a folder that exists: one whose parent is missing is refused")
    args = p.parse_args(argv)
    if args.fit_run and args.check_run:
        given = [o for o, v in (("--output", args.output), ("--steps", args.steps),
                                ("--repeat", args.repeat)) if v is not None]
        if given:
            p.error(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to the "
                    "runs made here: with --fit-run and --check-run both given none is made")
    args.steps = 300 if args.steps is None else args.steps
    args.repeat = 3 if args.repeat is None else args.repeat
    args.error = p.error
    args.made = []  # (name, folder) of each run made here, as it starts (``_made``)
    args.made_root = None  # the folder of the runs, where made here (``_made``)
    args.removed_root = False  # ... and removed again, nothing written to it (``_fit``)
    return args


def read_given(args, option: str) -> Optional[tuple[Path, dict]]:
    """The folder given to ``option`` (``--fit-run``, ``--check-run``) and its
    summary, or ``None`` where it is not given; ``args.error`` (exit 2) for a folder
    that cannot be read (``--stat median`` reads its ``steps.csv`` too)."""
    given = getattr(args, option[2:].replace("-", "_"))
    if given is None:
        return None
    try:
        summary = read_summary(given)
    except ResultsError as exc:
        args.error(f"argument {option}: {exc}")
    if args.stat == "median" and not (Path(given) / "steps.csv").is_file():
        args.error(f"argument {option}: no steps.csv in {given} (--stat mean reads "
                   "summary.json alone)")
    return Path(given), summary


def prepare(args) -> tuple[Path, dict, Path, dict]:
    """The fit and check runs' folders and summaries: those given, checked before any
    run (``args.error``: one line, exit 2); those not given run here, with the other
    run's policies and codecs (exit 1 if a run fails or lacks what the fit needs)."""
    fit, check = read_given(args, "--fit-run"), read_given(args, "--check-run")
    pairs: set[tuple[str, str]] = set()
    if fit:
        fit_pts = points(fit[1], codec_ns)
        problem = fit_problem(fit[0], fit_pts, fit[1])
        if problem:
            args.error(f"argument --fit-run: {problem}")
        pairs = set(fit_pts)
    if check:
        check_pts = points(check[1], codec_ns)
        if not fit:  # the fit run made here: the policies and codecs checked at 1,024
            pairs = _product(k for k, pts in check_pts.items() if CHECK_SIZE in pts)
        problem = check_problem(check[0], check_pts, pairs, check[1])
        if problem:
            args.error(f"argument --check-run: {problem}")
    if not fit:
        fit = _made(args, FIT_SIZES, "fit", pairs)
        problem = fit_problem(fit[0], points(fit[1], codec_ns), fit[1])
        if problem:
            raise SystemExit(f"{PROG}: error: {problem}")
    if not check:
        pairs = set(points(fit[1], codec_ns))
        check = _made(args, str(CHECK_SIZE), "check1024", pairs)
        problem = check_problem(check[0], points(check[1], codec_ns), pairs, check[1])
        if problem:
            raise SystemExit(f"{PROG}: error: {problem}")
    return fit[0], fit[1], check[0], check[1]


def _made(args, sizes: str, name: str, pairs: set[tuple[str, str]]) -> tuple[Path, dict]:
    """A decode-steady run at ``sizes`` made here into ``<name>-<time>`` under
    ``--output`` (default ``results/`` of the checkout; made if missing, and kept at
    ``args.made_root`` then), of ``pairs``' policies and codecs, or the scenario's
    where empty: its folder and summary. A run that fails (``run``) and leaves its
    folder says so at the end of its line: ``...; kept: the fit run DIR is incomplete
    (2 cases complete)``."""
    root = Path(args.output) if args.output is not None else ROOT / "results"
    with signals.deferred():  # the folders noted as soon as made: none goes unnoticed
        existed = root.is_dir()
        try:
            out = default_run_dir(root, name)
        except OSError as exc:
            raise SystemExit(f"{PROG}: error: cannot make a run folder in {root}: "
                             f"{exc.strerror or exc}") from None
        if not existed and args.made_root is None:
            args.made_root = root
        args.made.append((name.removesuffix(str(CHECK_SIZE)), out))
    try:
        run(sizes, args.steps, args.repeat, out, pairs)
    except SystemExit as exc:  # a failed run's folder that is kept: said, as an interrupt's
        if isinstance(exc.code, str) and out.is_dir():
            raise SystemExit(f"{exc.code}; kept: the {args.made[-1][0]} run "
                             f"{run_kept(out)}") from None
        raise
    written_elsewhere(f"the {args.made[-1][0]} run is in {out}")  # stdout that fails says so
    try:
        return out, read_summary(out)
    except ResultsError as exc:
        raise SystemExit(f"{PROG}: error: {exc}") from None


def fit_rows(fit_summary: dict, check_summary: dict, fit_med, check_med) -> list[dict]:
    """One fit per quantity (codec time, then each of ``PARTS``), policy and codec, with
    its prediction at ``CHECK_SIZE`` and the check run's measurement there;
    ``physical``: neither fitted cost below 0."""
    keys = {"codec_ns_per_step": codec_ns}
    keys.update({part: (lambda c, part=part: c[part]) for part in PARTS})
    rows = []
    for name, key in keys.items():
        check_pts = points(check_summary, key, check_med)
        for (policy, codec), pts in points(fit_summary, key, fit_med).items():
            xs, ys = list(pts), list(pts.values())
            fit = fit_linear(xs, ys)
            predicted = fit["fixed"] + fit["per_unit"] * CHECK_SIZE
            measured = check_pts[(policy, codec)][CHECK_SIZE]
            err = (predicted - measured) / measured if measured else None
            rows.append(dict(quantity=name, policy=policy, codec=codec,
                             num_running=xs, values_ns=ys, **fit,
                             physical=fit["fixed"] >= 0 and fit["per_unit"] >= 0,
                             predicted_ns_at_1024=predicted,
                             measured_ns_at_1024=measured, relative_error=err))
    return rows


#: What the warning line of a fit run and a check run that is not complete says the
#: fits cover (``incomplete_run_text``'s ``tail``).
RUN_TAILS = {"fit": "the fits cover the cases it finished",
             "check": f"the check at {CHECK_SIZE:,} covers the cases it finished"}


def warn_incomplete(which: str, run_dir: Path, summary: dict) -> None:
    """For a ``which`` (``fit``, ``check``) run that is not complete (an interrupted
    one), one line on stderr in ``bench.py report``'s words
    (``results.incomplete_run_line``): ``codec_fit.py: warning: DIR: this run is
    incomplete: CASE: interrupted by SIGTERM; 13 of its 20 cases finished: the fits
    cover the cases it finished``; nothing for a complete run, nor for a summary that
    records no ``status`` (written by hand: ``bench.py`` records one in each)."""
    if "status" not in summary:
        return
    line = incomplete_run_text(str(run_dir), summary, tail=RUN_TAILS[which])
    if line is not None:
        print(f"{PROG}: warning: {line}", file=sys.stderr, flush=True)


def print_fits(rows: list[dict]) -> None:
    """The codec-time fits, one line each (with the batch sizes each was fitted over
    where they differ between the fits: an interrupted fit run's), then a warning line
    (stderr) per fit with a cost below 0."""
    shown = [r for r in rows if r["quantity"] == "codec_ns_per_step"]
    differ = len({tuple(r["num_running"]) for r in shown}) > 1
    print(f"{'policy':7} {'codec':8} {'fixed us':>9} {'ns/request':>10} {'R^2':>7} "
          f"{'pred. us':>9} {'meas. us':>9} {'error':>7}" + ("  fitted at B" if differ
                                                              else ""))
    for r in shown:
        err = r["relative_error"]
        print(f"{r['policy']:7} {r['codec']:8} {r['fixed'] / 1e3:>9.2f} "
              f"{r['per_unit']:>10.1f} {r['r2']:>7.4f} "
              f"{r['predicted_ns_at_1024'] / 1e3:>9.1f} "
              f"{r['measured_ns_at_1024'] / 1e3:>9.1f} "
              f"{'' if err is None else f'{err:+.1%}':>7}"
              + (f"  {_sizes(r['num_running'])}" if differ else ""))
    sys.stdout.flush()
    for r in shown:
        negative = [f"{what} {value}" for what, value, below in (
            ("fixed cost", f"{r['fixed'] / 1e3:.2f} us", r["fixed"] < 0),
            ("per-request cost", f"{r['per_unit']:.1f} ns", r["per_unit"] < 0)) if below]
        if negative:
            print(f"{PROG}: warning: {r['policy']} {r['codec']}: fitted "
                  f"{' and '.join(negative)} below 0: the fit is not physical (likely "
                  "noise or load on the machine; rerun with more --steps or --repeat on "
                  "a quieter machine)", file=sys.stderr)


def main(argv=None, exiting: bool = False) -> int:
    """The fit; returns the exit code (the module's docstring). SIGINT / SIGTERM /
    SIGHUP: the running ``bench.py`` gets the same signal, writes what it measured and
    is reaped (``run``), then one line naming the runs made here that are kept
    (``interrupt_line``), exit 130 / 143 / 129; ``--json`` is written whole or not
    at all.
    ``exiting``: the process exits once this returns (the script run as a command): a
    signal leaves further ones ignored on its way out, as ``bench.py``'s; ``False``
    (``main`` called in process) puts the caller's handlers back whatever happened
    (``signals.run_command``)."""
    return signals.run_command(
        lambda: parse_args(argv), _fit,
        lambda exc, args: interrupt_line(exc, [], None) if args is None else interrupt_line(
            exc, args.made, _root_name(args) if args.removed_root else None),
        exiting=exiting)


def _root_name(args: argparse.Namespace) -> str:
    """The folder of the runs made here (``args.made_root``) as a line names it: ``the
    --output folder DIR``, or ``the results folder DIR`` where ``--output`` was not
    given."""
    what = "--output" if args.output is not None else "results"
    return f"the {what} folder {args.made_root}"


def run_kept(folder: Path) -> str:
    """What a ``bench.py`` run folder holds, for an interrupt's line: ``DIR is
    complete (15 cases)``, ``DIR is incomplete (2 cases complete)``; ``DIR has no
    readable summary.json`` where it cannot be read."""
    try:
        summary = read_summary(folder)
    except ResultsError:
        return f"{folder} has no readable summary.json"
    cases = summary.get("cases") if isinstance(summary.get("cases"), list) else []
    done = sum(1 for c in cases if isinstance(c, dict) and c.get("complete") is True)
    status = summary.get("status")
    if status == "complete":
        return f"{folder} is complete ({done} case{'' if done == 1 else 's'})"
    return f"{folder} {run_state(status)} ({done} case{'' if done == 1 else 's'} complete)"


def interrupt_line(exc: signals.Interrupted, made: list[tuple[str, Path]],
                   removed: Optional[str] = None) -> str:
    """``codec_fit.py: interrupted by SIGINT (exit 130)`` (``Interrupted.line``), with
    what was kept of the runs made here before ``(exit 130)`` (``made``: (name,
    folder) each; one that left its folder empty is gone): ``; kept: the fit run DIR is
    complete (15 cases), the check run DIR is incomplete (1 case complete)``; or, where the folder of the runs was made here and
    is removed again, nothing written to it (``removed``: how to name it, ``the
    --output folder DIR``), ``; the --output folder DIR made here is removed: nothing
    was written to it``; and how the running ``bench.py`` ended where it did not exit
    with the signal's code (``; bench.py had not exited 15 s later and was killed by
    SIGKILL``)."""
    parts = []
    kept = [f"the {name} run {run_kept(folder)}" for name, folder in made if folder.is_dir()]
    if kept:
        parts.append("kept: " + ", ".join(kept))
    if removed is not None:
        parts.append(f"{removed} made here is removed: nothing was written to it")
    if exc.child is not None and exc.child != f"exited {exc.code}":
        parts.append(f"bench.py {exc.child}")
    return exc.line(PROG, parts)


def _fit(args: argparse.Namespace) -> int:
    """``main``'s work (``_fit_runs``); then the folder of the runs, where made here
    (``args.made_root``) and left empty (an interrupt, or a run that failed, before
    ``bench.py`` wrote to it: each run made here removes its own folder left empty), is
    removed again (``args.removed_root``); a folder that was there is left as it
    was."""
    try:
        return _fit_runs(args)
    finally:
        with signals.deferred():
            if args.made_root is not None:
                try:
                    args.made_root.rmdir()  # only an empty folder goes
                except OSError:
                    pass
                else:
                    args.removed_root = True


def _fit_runs(args: argparse.Namespace) -> int:
    """The runs (``prepare``), the fits printed, ``--json``."""
    fit_dir, fit_summary, check_dir, check_summary = prepare(args)
    warn_incomplete("fit", fit_dir, fit_summary)
    warn_incomplete("check", check_dir, check_summary)
    fit_med = check_med = None
    if args.stat == "median":
        fit_med, check_med = step_medians(fit_dir), step_medians(check_dir)
    rows = fit_rows(fit_summary, check_summary, fit_med, check_med)
    with one_write():  # the table in one write: | head -1 takes it whole
        print(f"codec time per step ({args.stat} over each case's counted steps, median "
              f"over repetitions) = fixed + per_request x B; fit on {fit_dir}, checked at "
              f"B = {CHECK_SIZE} on {check_dir}")
        print_fits(rows)
    if args.json:
        report = dict(fit_run=str(fit_dir), check_run=str(check_dir), stat=args.stat,
                      fits=rows)
        with signals.deferred():  # written whole, a signal meanwhile raised after it
            write_output(args.json, json.dumps(report, indent=1) + "\n", PROG,
                         f"the fits are in {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(script_main(PROG, lambda: main(exiting=True), "the fits' table",
                         "the run folders and the --json file"))
