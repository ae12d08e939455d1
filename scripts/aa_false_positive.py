#!/usr/bin/env python3
"""A/A false-positive rate and precision of the paired comparison (``ipc_bench.analysis.stats``).

For each load condition (``--load idle,busy``: as the machine is, and with one busy
process pinned to one core, started and stopped by this script), it

1. runs one policy against a copy of itself (``bench.py --aa``) for ``--pairs``
   repetition pairs in one invocation (arms in the harness's counterbalanced order, its
   rows shuffled), splits the
   pairs into disjoint groups of K consecutive pairs (``--group-sizes``) and compares
   each group as a ``--repeat K`` run would. Both arms run the same code on the same
   workload, so every "significant" verdict is a false positive; at 95 % the rate
   should be 5 %. Reported per metric and K for the t-interval (and the sign test
   where K >= 6), with a Clopper-Pearson 95 % interval for the rate; the family-wise
   rate (any of the comparison block's timed metrics significant after Holm's
   adjustment, as the CLI prints them); the lag-1 correlation of the per-pair log
   ratios; and the same figures with the same cases re-paired as a fixed A B, B A
   (ABBA) or A B, A B order would have labelled them, so the designs can be compared
   on one series of cases;
2. runs ``send`` against ``cached`` at ``--reference-running`` (default 256) running
   requests for each ``--reference-steps`` / ``--reference-pairs`` design and
   reports, per metric, the saving (send - cached), its 95 % half-width as a share of
   the saving at the pairs run, after 1 and 2 minutes of run (projected from the
   per-pair spread and the measured seconds per pair) and the minutes needed for a
   10 % half-width.

Metrics: the timed metrics of the comparison block, plus 10 % trimmed means of the
counted steps' ``step_ns``, ``sched_cpu_ns``, ``build_ns`` and ``encode_ns`` per case
(``*_trim10``, computed here from ``steps.csv``; candidates for a cheaper variance). The load average, machine busy share and CPU steal are sampled
every 5 s and written with the results.

Usage (a script, kept out of CI: each case costs about 0.75 s on an idle 2-core
machine, mostly process start-up, and 1.5 to 4 s on a loaded one; 400 busy-condition
pairs took 27 minutes there):

    python scripts/aa_false_positive.py [--load idle,busy] [--pairs 600]
        [--group-sizes 2,3,4,6] [--num-running 64] [--steps 150] [--codec msgpack]
        [--policy send] [--reference-running 256] [--reference-steps 100,400]
        [--reference-pairs 40,20] [--busy-cpu N] [--seed 0] [--output DIR]
        [--from-run DIR]

``--from-run DIR`` re-analyses an earlier study folder instead of running one (an
interrupted study's too: a run of it that is not complete is said so in one line,
``aa_false_positive.py: warning: DIR/busy/aa: this run is incomplete: ...``, and its
pairs that finished are analysed; each condition's record, ``condition.json``, is
written as the condition starts, and a condition without one is said to be so).
Writes ``aa_false_positive.json`` into the study folder.

Exit 0; 1 if a run fails; 2 for bad input (one line); 130 / 143 / 129 when interrupted
by SIGINT / SIGTERM / SIGHUP: the running ``bench.py`` gets the same signal, writes what
it measured and is reaped, the busy process is stopped, and one line on stderr says
where the study so far is and which run it stopped (``aa_false_positive.py: interrupted
by SIGINT; the study so far is in DIR (0 bench.py runs complete); bench.py's run
DIR/busy/aa is incomplete (17 cases complete) (exit 130)``).
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
import contextlib
import json
import math
import os
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Optional

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ipc_bench.analysis.microbench import incomplete_run_text  # noqa: E402
from ipc_bench.analysis.results import (RunStatusWarning, load, read_summary,  # noqa: E402
                                        run_state)
from ipc_bench.analysis.run_files import ResultsError, ResultsWarning  # noqa: E402
from ipc_bench.cli.console import one_write, script_main, write_output  # noqa: E402
from ipc_bench.cli.once import OnceParser  # noqa: E402
from ipc_bench.cli.options import (MAX_NUM_SEQS, MAX_SEED, MAX_STEPS,  # noqa: E402
                                   _int_in, _parse_int, list_items, no_repeats,
                                   nonempty_path, writable_folder)
from ipc_bench.engine.config import POLICIES  # noqa: E402
from ipc_bench.errors import module_doc, one_line  # noqa: E402
from ipc_bench.wire.codecs import CODECS  # noqa: E402
from ipc_bench.analysis.stats import (COMPARED_KEYS, EXACT_KEYS, compare_paired,  # noqa: E402
                                      holm, min_pairs)
from ipc_bench.harness.environment import cpu_usage_between, read_cpu_times  # noqa: E402
from ipc_bench.harness import signals  # noqa: E402

#: The comparison block's timed metrics: the family Holm's adjustment covers.
FAMILY = tuple(k for k in COMPARED_KEYS if k not in EXACT_KEYS)
#: Per-case 10 % trimmed means of a per-step column (``scipy.stats.trim_mean``).
TRIMMED = {"step_ns_trim10": "step_ns", "sched_cpu_ns_trim10": "sched_cpu_ns",
           "build_ns_trim10": "build_ns", "encode_ns_trim10": "encode_ns"}
TRIM = 0.1
METRICS = FAMILY + tuple(TRIMMED)
#: How the per-pair log ratios are formed from the cases in run order.
DESIGNS = ("as-run", "abba", "ab")
ALPHA = 0.05
SAMPLE_S = 5.0


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact binomial interval of a rate k/n (Clopper & Pearson, Biometrika 1934)."""
    from scipy.stats import beta

    a = (1 - confidence) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


# ------------------------------------------------------------------ the cases


def case_records(run_dir: Path) -> list[dict[str, Any]]:
    """The run's complete cases in run order (``summary.json``), each with the
    ``TRIMMED`` metrics added from its counted steps (``steps.csv``)."""
    from scipy.stats import trim_mean

    summary = read_summary(run_dir)
    cases = [c for c in summary["cases"] if c.get("complete") and c.get("num_steps")]
    steps = load_steps(run_dir, summary)
    counted = steps[steps["counted"]]
    by_case = dict(tuple(counted.groupby("case_id", observed=True)))
    for c in cases:
        rows = by_case.get(c["case_id"])
        for name, column in TRIMMED.items():
            c[name] = (float(trim_mean(rows[column].to_numpy(float), TRIM))
                       if rows is not None and len(rows) else None)
    return cases


#: What the warning line of a run that is not complete says the analysis covers
#: (``incomplete_run_text``'s ``tail``).
ANALYSIS_COVERS = "the analysis covers the pairs it finished"


def load_steps(run_dir: Path, summary: dict[str, Any]):
    """``steps.csv`` of ``run_dir`` (``results.load``; ``summary``: its
    ``summary.json``), each of ``load``'s warnings one line on stderr,
    ``aa_false_positive.py: warning: ...``; for a run that is not complete (an
    interrupted study's), the line ``bench.py report`` and ``bench.py microbench``
    warn with (``results.incomplete_run_line``) in place of ``load``'s own:
    ``aa_false_positive.py: warning: DIR: this run is incomplete: CASE: interrupted by
    SIGINT; 9 of its 20 cases finished: the analysis covers the pairs it finished``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        steps = load(run_dir).steps
    incomplete = incomplete_run_text(str(run_dir), summary, tail=ANALYSIS_COVERS)
    if incomplete is not None:
        print(f"{PROG}: warning: {incomplete}", file=sys.stderr)
    for w in caught:
        if not issubclass(w.category, ResultsWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        elif incomplete is None or not issubclass(w.category, RunStatusWarning):
            print(f"{PROG}: warning: {one_line(str(w.message))}", file=sys.stderr)
    return steps


def pair_sequence(cases: list[dict[str, Any]]) -> tuple[list[str], list[tuple[dict, dict]]]:
    """(arms, pairs): the two arms (first seen = baseline) and, per repetition in run
    order, its two cases (first run, second run). Raises ``SystemExit`` unless there
    are exactly two arms and each repetition's two cases ran one after the other."""
    arms = list(dict.fromkeys(c["arm"] for c in cases))
    if len(arms) != 2:
        raise SystemExit(f"{PROG}: error: expected two arms, got {arms}")
    pairs = []
    for i in range(0, len(cases) - 1, 2):
        first, second = cases[i], cases[i + 1]
        if first["repetition"] != second["repetition"] or first["arm"] == second["arm"]:
            raise SystemExit(f"{PROG}: error: cases {i} and {i + 1} are not one pair "
                             "run back to back")
        pairs.append((first, second))
    return arms, pairs


def log_ratios(arms: list[str], pairs: list[tuple[dict, dict]], metric: str,
               design: str) -> Optional[np.ndarray]:
    """Per-pair log ratios of ``metric`` (``None`` where a value is missing or not
    positive). ``as-run``: log(treatment / baseline) by the arms' labels; ``abba``:
    as a fixed A B, B A, A B ... order labels the same cases (pair i: second / first
    for even i, first / second for odd i); ``ab``: second / first throughout."""
    values = [(f.get(metric), s.get(metric)) for f, s in pairs]
    if any(a is None or b is None or a <= 0 or b <= 0 for a, b in values):
        return None
    first = np.log([a for a, _ in values])
    second = np.log([b for _, b in values])
    if design == "as-run":
        sign = np.array([1.0 if f["arm"] == arms[0] else -1.0 for f, _ in pairs])
    elif design == "abba":
        sign = np.where(np.arange(len(pairs)) % 2 == 0, 1.0, -1.0)
    elif design == "ab":
        sign = np.ones(len(pairs))
    else:
        raise ValueError(f"unknown design {design!r}")
    return sign * (second - first)


def case_autocorrelation(pairs: list[tuple[dict, dict]], metric: str,
                         lags: tuple[int, ...] = (1, 2, 3)) -> Optional[list[float]]:
    """Autocorrelation of the log of ``metric`` over the cases in run order, at
    ``lags`` cases. A fixed A B, B A order makes neighbouring pairs' log ratios
    correlate by about (r1 - 2 r2 + r3) / (2 (1 - r1)) (positive when a burst of noise
    lasts about one case, zero under a slow drift); a random order, 0 on average."""
    values = [c.get(metric) for pair in pairs for c in pair]
    if any(v is None or v <= 0 for v in values):
        return None
    x = np.log(values)
    x = x - x.mean()
    var = float(np.mean(x * x))
    if var == 0:
        return None
    return [float(np.mean(x[:-k] * x[k:]) / var) for k in lags]


def lag1(x: np.ndarray) -> float:
    """Pearson correlation of consecutive values (NaN under three values)."""
    if len(x) < 3 or np.std(x[:-1]) == 0 or np.std(x[1:]) == 0:
        return math.nan
    return float(np.corrcoef(x[:-1], x[1:])[0, 1])


# ------------------------------------------------------------------ false positives


def _rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = clopper_pearson(k, n)
    return dict(false_positives=k, comparisons=n, rate=k / n if n else math.nan,
                rate_ci_low=lo, rate_ci_high=hi)


def false_positives(ratios: dict[str, np.ndarray], k: int, method: str) -> dict[str, Any]:
    """Per metric of ``ratios`` (metric -> per-pair log ratios), how many disjoint
    groups of ``k`` consecutive pairs ``method`` calls significant (unadjusted), and
    ``family``: how many groups have any ``FAMILY`` metric significant after Holm."""
    n_groups = min(len(r) for r in ratios.values()) // k
    flagged = {m: 0 for m in ratios}
    any_holm = 0
    for g in range(n_groups):
        p = {}
        for m, r in ratios.items():
            cmp = compare_paired(np.ones(k), np.exp(r[g * k:(g + 1) * k]), method=method)
            flagged[m] += bool(cmp.significant)
            p[m] = cmp.p_value
        fam = [m for m in FAMILY if m in p]
        any_holm += any(q <= ALPHA for q in holm([p[m] for m in fam]))
    out = {m: _rate(f, n_groups) for m, f in flagged.items()}
    out["family"] = dict(_rate(any_holm, n_groups), metrics=[m for m in FAMILY if m in ratios])
    return out


def analyse_aa(cases: list[dict[str, Any]], group_sizes: list[int]) -> dict[str, Any]:
    """False positives, lag-1 correlations and a bias check of one A/A run's cases (in
    run order, ``case_records``), per design (``DESIGNS``), group size and method (t;
    sign where the groups are large enough)."""
    arms, pairs = pair_sequence(cases)
    out: dict[str, Any] = dict(baseline=arms[0], treatment=arms[1], pairs=len(pairs),
                               designs={}, case_autocorrelation={
                                   m: case_autocorrelation(pairs, m) for m in METRICS})
    for design in DESIGNS:
        ratios = {m: r for m in METRICS
                  if (r := log_ratios(arms, pairs, m, design)) is not None}
        entry: dict[str, Any] = dict(lag1={m: lag1(r) for m, r in ratios.items()})
        for method in ("t", "sign"):
            entry[method] = {str(k): false_positives(ratios, k, method) for k in group_sizes
                             if k >= min_pairs(method) and len(pairs) // k >= 1}
        out["designs"][design] = entry
        if design == "as-run":  # all pairs at once: is one arm favoured (e.g. by position)?
            out["all_pairs"] = {}
            for m, r in ratios.items():
                cmp = compare_paired(np.ones(len(r)), np.exp(r))
                out["all_pairs"][m] = dict(ratio_geomean=cmp.ratio_geomean,
                                           ratio_ci_low=cmp.ratio_ci_low,
                                           ratio_ci_high=cmp.ratio_ci_high)
    return out


# ------------------------------------------------------------------ precision


def _half_width(sd: float, n: float) -> float:
    from scipy.stats import t

    return float(t.ppf(0.975, n - 1)) * sd / math.sqrt(n) if n >= 2 else math.inf


def precision(cases: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
    """Per metric of a send/cached run's cases: the mean saving (send - cached, the
    metric's unit; ``saving_share`` of send's mean), its 95 % half-width as a share of
    the saving at the pairs run and projected to 1 and 2 minutes of run at the
    measured seconds per pair (``wall_s`` / pairs), and the minutes a 10 % half-width
    needs."""
    by = {(c["arm"], c["repetition"]): c for c in cases}
    reps = sorted(r for (a, r) in by if a == "send" and ("cached", r) in by)
    pair_s = wall_s / len(reps) if reps else math.nan
    out: dict[str, Any] = dict(pairs=len(reps), wall_s=wall_s, pair_s=pair_s, metrics={})
    for m in METRICS:
        d = np.array([by[("send", r)][m] - by[("cached", r)][m] for r in reps
                      if by[("send", r)].get(m) is not None
                      and by[("cached", r)].get(m) is not None])
        if len(d) < 2 or d.mean() == 0:
            continue
        sd, eff = float(d.std(ddof=1)), float(abs(d.mean()))
        send = float(np.mean([by[("send", r)][m] for r in reps]))
        share = {f"{mins}min": _half_width(sd, mins * 60 / pair_s) / eff for mins in (1, 2)}
        need = 2
        while _half_width(sd, need) > 0.1 * eff and need < 1_000_000:
            need = max(need + 1, int(need * 1.1))
        out["metrics"][m] = dict(saving=float(d.mean()), saving_share=float(d.mean()) / send,
                                 sd=sd, half_width_share=_half_width(sd, len(d)) / eff,
                                 half_width_share_1min=share["1min"],
                                 half_width_share_2min=share["2min"],
                                 minutes_to_10pct=need * pair_s / 60)
    return out


# ------------------------------------------------------------------ running


class BackgroundLoad:
    """One busy-looping Python process pinned to ``cpu`` (a bounded load: one core),
    stopped on ``stop``/exit of the ``with`` block whatever happens (started and
    stopped with signals deferred, so an interrupt cannot leave it running); it also
    exits by itself within about a second of this process dying (it polls its parent).
    It ignores SIGINT and SIGHUP: a Ctrl-C reaches the whole process group, and this
    script stops it."""

    CODE = ("import os, signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
            "os.sched_setaffinity(0, {{{cpu}}})\nparent = os.getppid()\n"
            "deadline = time.monotonic()\nwhile True:\n"
            "    if time.monotonic() > deadline:\n"
            "        if os.getppid() != parent:\n            break\n"
            "        deadline = time.monotonic() + 1.0\n")

    def __init__(self, cpu: int):
        self.cpu = cpu
        self.proc: Optional[subprocess.Popen] = None

    def __enter__(self) -> "BackgroundLoad":
        with signals.deferred():  # no signal between the fork and holding the handle
            self.proc = subprocess.Popen([sys.executable, "-c",
                                          self.CODE.format(cpu=self.cpu)])
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        with signals.deferred():
            if self.proc is not None and self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()


class MachineSampler:
    """Samples the 1-minute load average, machine busy share and CPU steal (both % of
    all CPU time, ``cpu_usage_between``) every ``SAMPLE_S`` seconds in a thread."""

    def __init__(self):
        self.samples: list[dict[str, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        before, t0 = read_cpu_times(), time.monotonic()
        while not self._stop.wait(SAMPLE_S):
            after = read_cpu_times()
            usage = cpu_usage_between(before, after)
            self.samples.append(dict(t_s=round(time.monotonic() - t0, 1),
                                     load1=os.getloadavg()[0],
                                     busy_pct=usage.get("busy_pct", math.nan),
                                     steal_pct=usage.get("steal_pct", math.nan)))
            before = after

    def __enter__(self) -> "MachineSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, Any]:
        """Means and maxima of the samples, and the samples."""
        out: dict[str, Any] = dict(samples=self.samples)
        for key in ("load1", "busy_pct", "steal_pct"):
            vals = [s[key] for s in self.samples if not math.isnan(s[key])]
            out[f"{key}_mean"] = float(np.mean(vals)) if vals else None
            out[f"{key}_max"] = float(np.max(vals)) if vals else None
        return out


def run_bench(extra: list[str], out_dir: Path) -> float:
    """``bench.py --scenario decode-steady`` with ``extra`` options into ``out_dir``;
    its wall time in seconds. Exits (``SystemExit``) if the run fails. A signal
    meanwhile is passed on to ``bench.py`` (``signals.call``: it writes what it
    measured; its own interrupt line is left out), which is reaped before the
    ``signals.Interrupted`` goes on."""
    cmd = [sys.executable, str(ROOT / "bench.py"), "--scenario", "decode-steady",
           "--no-floor", "--no-single-process", "--quiet", "--output", str(out_dir)] + extra
    print("running:", " ".join(cmd[1:]), file=sys.stderr, flush=True)
    t0 = time.monotonic()
    code = signals.call(cmd, stdout=subprocess.DEVNULL, child_line=False)
    if code != 0:
        raise SystemExit(f"{PROG}: error: bench.py exited {code} ({out_dir})")
    return time.monotonic() - t0


def run_condition(args, condition: str, study: Path) -> None:
    """Run one load condition's A/A run and reference runs, recording the condition
    (its added load) in ``condition.json`` before its first run, and the machine state,
    the run folders and their wall times after each run (so an interrupted study keeps
    what its condition was and what it finished)."""
    where = study / condition
    where.mkdir(parents=True, exist_ok=True)
    cpu = args.busy_cpu if args.busy_cpu is not None else max(os.sched_getaffinity(0))
    info: dict[str, Any] = dict(condition=condition, reference=[],
                                background_load=dict(cpu=cpu) if condition == "busy" else None)
    busy = BackgroundLoad(cpu) if condition == "busy" else contextlib.nullcontext()

    def save() -> None:
        info["machine"] = sampler.summary()
        with signals.deferred():  # written whole
            write_output(where / "condition.json", json.dumps(info, indent=1) + "\n", PROG,
                         f"the study is in {study}")

    with MachineSampler() as sampler, busy:
        save()  # the condition kept, however soon the study is interrupted
        info["aa_wall_s"] = run_bench(
            ["--aa", "--policies", args.policy, "--codecs", args.codec, "--seed",
             str(args.seed), "--num-running", str(args.num_running), "--steps",
             str(args.steps), "--repeat", str(args.pairs)], where / "aa")
        save()
        for steps, pairs in zip(args.reference_steps, args.reference_pairs):
            folder = where / f"ref-steps{steps}"
            wall = run_bench(["--policies", "send,cached", "--codecs", args.codec,
                              "--seed", str(args.seed), "--num-running",
                              str(args.reference_running), "--steps", str(steps),
                              "--repeat", str(pairs)], folder)
            info["reference"].append(dict(run_dir=folder.name, steps=steps, wall_s=wall,
                                          num_running=args.reference_running))
            save()
    save()


def machine_from_cases(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Means and maxima of the cases' own machine records (``machine_busy_pct`` and
    ``cpu_steal_pct``, measured by the harness over each case)."""
    out: dict[str, Any] = dict(cases=len(cases))
    for key in ("machine_busy_pct", "cpu_steal_pct"):
        vals = [c[key] for c in cases if isinstance(c.get(key), (int, float))]
        out[f"{key}_mean"] = float(np.mean(vals)) if vals else None
        out[f"{key}_max"] = float(np.max(vals)) if vals else None
    return out


def missing_record(aa_dir: Path) -> str:
    """Why a condition has no ``condition.json`` beside its A/A run ``aa_dir``:
    ``missing (the study was interrupted before writing it)`` where that run is not
    complete, else ``missing (no condition.json)``."""
    try:
        complete = read_summary(aa_dir).get("status") == "complete"
    except ResultsError:
        complete = False
    return ("missing (no condition.json)" if complete
            else "missing (the study was interrupted before writing it)")


def analyse_study(study: Path, conditions: list[str], group_sizes: list[int]) -> dict:
    """Every condition folder of ``study``: its machine record (``condition.json``,
    written as the condition starts; a condition of a study interrupted before that,
    or of one made before it was written then, has none: its ``condition_record``
    says so, ``missing_record``, and it is analysed on the pairs it finished), A/A
    analysis and precision per reference run."""
    out: dict[str, Any] = dict(study=str(study), group_sizes=group_sizes, conditions={})
    for condition in conditions:
        where = study / condition
        try:
            info = json.loads((where / "condition.json").read_text())
        except FileNotFoundError:
            info = dict(condition=condition, reference=[], stopped_early=True,
                        background_load=None if condition == "idle" else "unknown",
                        condition_record=missing_record(where / "aa"))
        except (OSError, ValueError) as exc:
            raise SystemExit(f"{PROG}: error: cannot read {where / 'condition.json'}: "
                             f"{exc}") from None
        cases = case_records(where / "aa")
        info["aa"] = dict(analyse_aa(cases[:len(cases) // 2 * 2], group_sizes),
                          run_dir=str(where / "aa"), load_avg_at_start=read_summary(
                              where / "aa")["metadata"].get("load_avg"))
        info["machine_per_case"] = machine_from_cases(cases)
        info["precision"] = [dict(precision(case_records(where / r["run_dir"]), r["wall_s"]),
                                  steps=r["steps"], num_running=r["num_running"],
                                  run_dir=str(where / r["run_dir"]))
                             for r in info.get("reference", [])]
        out["conditions"][condition] = info
    return out


# ------------------------------------------------------------------ printing


def _pct(rate: dict[str, Any]) -> str:
    return (f"{rate['rate']:5.1%} [{rate['rate_ci_low']:.1%}, {rate['rate_ci_high']:.1%}]"
            .replace("%", ""))


def load_label(info: dict[str, Any]) -> str:
    """The load a condition (``analyse_study``'s entry) ran under: ``busy loop pinned
    to cpu 1``, ``no added load``; for one whose record is missing
    (``condition_record``), ``condition record missing (the study was interrupted
    before writing it): added load unknown`` (a busy condition's busy process is not
    recorded), ``...: no added load`` for idle (which adds none)."""
    background = info.get("background_load")
    if isinstance(background, dict):
        return f"busy loop pinned to cpu {background.get('cpu')}"
    record = info.get("condition_record")
    if isinstance(record, str) and record.startswith("missing"):
        added = "no added load" if info.get("condition") == "idle" else "added load unknown"
        return f"condition record {record}: {added}"
    return "no added load"


def load_at_start(load_avg: Any) -> str:
    """The A/A run's load average as it started (its metadata's ``load_avg``: 1, 5
    and 15 minutes), as the sampled one is printed: ``load avg (1, 5, 15 min) at start
    2.45, 2.37, 2.56``; ``load avg at start not recorded`` where it is not three
    numbers."""
    if (isinstance(load_avg, list) and len(load_avg) == 3
            and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                    for v in load_avg)):
        return "load avg (1, 5, 15 min) at start " + ", ".join(f"{v:.2f}" for v in load_avg)
    return "load avg at start not recorded"


def print_condition(info: dict[str, Any]) -> None:
    """The tables of one condition (rates in %, intervals 95 % Clopper-Pearson)."""
    aa, per_case = info["aa"], info["machine_per_case"]
    m = info.get("machine")
    sampled = (f"load avg (1 min) mean {m['load1_mean']:.2f} max {m['load1_max']:.2f}; "
               if m and m.get("load1_mean") is not None
               else f"{load_at_start(aa.get('load_avg_at_start'))}; ")
    print(f"\n== {info['condition']}: {load_label(info)}; {sampled}machine busy "
          f"{per_case['machine_busy_pct_mean']:.0f} % and steal "
          f"{per_case['cpu_steal_pct_mean']:.2f} % (means over the cases)")
    minutes = (f"{info['aa_wall_s'] / 60:.1f} min" if info.get("aa_wall_s")
               else "a run stopped early")
    run = aa["designs"]["as-run"]
    sizes = list(run["t"])
    print(f"A/A {aa['treatment']} vs {aa['baseline']}: {aa['pairs']} pairs in "
          f"{minutes}; false positives of 95 % verdicts, % "
          f"[Clopper-Pearson 95 %], groups of K pairs (t; sign at K >= 6)")
    head = f"{'metric':22} {'lag-1 r':>7}  " + "  ".join(
        f"{'K=' + k + ' (' + str(run['t'][k]['family']['comparisons']) + ')':>19}" for k in sizes)
    sign = list(run["sign"])
    print(head + "".join(f"  {'sign K=' + k:>19}" for k in sign))
    for metric in list(run["lag1"]) + ["family"]:
        label = "any timed, Holm" if metric == "family" else metric
        r = run["lag1"].get(metric, math.nan)
        row = f"{label:22} {r:+7.3f}  " if metric != "family" else f"{label:22} {'':7}  "
        row += "  ".join(f"{_pct(run['t'][k][metric]):>19}" for k in sizes)
        row += "".join(f"  {_pct(run['sign'][k][metric]):>19}" for k in sign)
        print(row)
    k = sizes[-1]
    print(f"same cases re-paired: lag-1 r and K={k} t rate, as run / fixed ABBA / fixed AB; "
          "autocorrelation of the cases at lags 1, 2, 3")
    for metric in run["lag1"]:
        cells = [f"{aa['designs'][d]['lag1'][metric]:+.3f} {_pct(aa['designs'][d]['t'][k][metric])}"
                 for d in DESIGNS]
        auto = aa["case_autocorrelation"].get(metric) or []
        print(f"  {metric:22} " + "  |  ".join(cells) + "  |  "
              + " ".join(f"{v:+.2f}" for v in auto))
    for p in info["precision"]:
        print(f"precision: send - cached at {p['num_running']} running, {p['steps']} steps, "
              f"{p['pairs']} pairs, "
              f"{p['pair_s']:.1f} s per pair: half-width as % of the saving")
        print(f"  {'metric':22} {'(send-cached)/send':>18} {'at n':>6} {'1 min':>6} "
              f"{'2 min':>6} {'min to 10 %':>11}")
        for metric, e in p["metrics"].items():
            print(f"  {metric:22} {e['saving_share']:+18.1%} {e['half_width_share']:6.0%} "
                  f"{e['half_width_share_1min']:6.0%} {e['half_width_share_2min']:6.0%} "
                  f"{e['minutes_to_10pct']:11.1f}")


# ------------------------------------------------------------------ command line


PROG = "aa_false_positive.py"
CONDITIONS = ("idle", "busy")
#: The fewest pairs a group may hold: a paired comparison's fewest (the t-interval's,
#: ``min_pairs("t")``); a group of 1 gives no verdict.
MIN_GROUP = min_pairs("t")


class _Parser(OnceParser):
    """Bad input: one line on stderr (``aa_false_positive.py: error: ...``), exit 2; an option
    given twice is refused (``OnceParser``)."""

    def error(self, message: str):
        print(one_line(f"{PROG}: error: {message}"), file=sys.stderr)
        raise SystemExit(2)


def _ints(lo: int, why: str = ""):
    """A parser of comma-separated integers of at least ``lo`` (``why``: the reason,
    in the refusal); no empty item (``list_items``)."""
    def parse(text: str) -> list[int]:
        values = [_parse_int(v, -2**63, 2**63 - 1) for v in list_items(text, "integers")]
        low = [v for v in values if v < lo]
        if low:
            raise argparse.ArgumentTypeError(
                f"must be at least {lo}{why}, got {low[0]}")
        return values
    return parse


def no_repeats_of(parse):
    """``parse``, its list refused where a value is in it twice (``no_repeats``)."""
    return lambda text: no_repeats(parse(text))


def _conditions(text: str) -> list[str]:
    """``--load``: comma-separated conditions of ``CONDITIONS``; no empty item
    (``list_items``), none given twice."""
    names = list_items(text, "conditions")
    bad = [c for c in names if c not in CONDITIONS]
    if bad:
        raise argparse.ArgumentTypeError(f"{','.join(bad)!r}: choose from idle, busy")
    return no_repeats(names)


def _add_study_options(p: argparse.ArgumentParser) -> None:
    """The study's own options: conditions, pairs, groups."""
    p.add_argument("--load", default="idle,busy", type=_conditions,
                   help="conditions, comma-separated: idle (the machine as it is), busy "
                   "(plus one busy process pinned to one core); default both")
    p.add_argument("--pairs", type=_int_in(1, 1_000_000), default=600,
                   help="A/A pairs per condition")
    p.add_argument("--group-sizes", type=no_repeats_of(_ints(
                   MIN_GROUP, f" (a paired comparison needs at least {MIN_GROUP} pairs)")),
                   default=[2, 3, 4, 6],
                   help=f"pairs per A/A comparison, as --repeat, each at least {MIN_GROUP} "
                   "(default 2,3,4,6)")


def _add_folder_options(p: argparse.ArgumentParser) -> None:
    """The busy core and the study folder (to write, or to analyse)."""
    p.add_argument("--busy-cpu", type=_int_in(0, 2**20), help="core for the busy process "
                   "(default the highest this process may use)")
    p.add_argument("--output", type=writable_folder,
                   help="study folder (default results/aa-<time>)")
    p.add_argument("--from-run", metavar="DIR", type=nonempty_path("folder"),
                   help="analyse this study folder")


def _add_run_options(p: argparse.ArgumentParser) -> None:
    """The options of the ``bench.py`` runs: the A/A cases and the reference runs."""
    p.add_argument("--num-running", type=_int_in(1, MAX_NUM_SEQS), default=64)
    p.add_argument("--steps", type=_int_in(1, MAX_STEPS), default=150,
                   help="counted steps per A/A case")
    p.add_argument("--codec", default="msgpack", choices=CODECS)
    p.add_argument("--policy", default="send", choices=POLICIES)
    p.add_argument("--seed", type=_int_in(0, MAX_SEED), default=0)
    p.add_argument("--reference-running", type=_int_in(1, MAX_NUM_SEQS), default=256)
    p.add_argument("--reference-steps", type=no_repeats_of(_ints(1)), default=[100, 400],
                   help="counted steps of each reference run (one run, and folder, per "
                   "value: none given twice; default 100,400)")
    p.add_argument("--reference-pairs", type=_ints(2, " (a half-width needs 2 pairs)"),
                   default=[40, 20], help="pairs of each reference run, at least 2 each "
                   "(default 40,20)")


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    p = _Parser(prog=PROG, description=module_doc(sys.modules[__name__]).splitlines()[0])
    _add_study_options(p)
    _add_run_options(p)
    _add_folder_options(p)
    args = p.parse_args(argv)
    if len(args.reference_steps) != len(args.reference_pairs):
        p.error("--reference-steps and --reference-pairs need as many values each "
                f"(got {len(args.reference_steps)} and {len(args.reference_pairs)})")
    if args.pairs < max(args.group_sizes):
        p.error(f"argument --pairs: must be at least the largest --group-sizes value "
                f"({max(args.group_sizes)}), got {args.pairs}")
    if args.from_run:
        problem = study_problem(Path(args.from_run), args.load)
        if problem:
            p.error(f"argument --from-run: {problem}")
    elif args.busy_cpu is not None and "busy" in args.load:
        usable = sorted(os.sched_getaffinity(0))
        if args.busy_cpu not in usable:
            p.error(f"argument --busy-cpu: {args.busy_cpu} is not a core this process may "
                    f"use ({', '.join(map(str, usable))})")
    return args


def study_problem(study: Path, conditions: list[str]) -> Optional[str]:
    """Why ``study`` is not a study folder with an A/A run of each of ``conditions``
    (``CONDITION/aa/summary.json``), or ``None``."""
    if not study.exists():
        return f"{study}: no such folder"
    if not study.is_dir():
        return f"{study}: not a folder"
    missing = [c for c in conditions if not (study / c / "aa" / "summary.json").is_file()]
    if missing:
        ran = [c for c in CONDITIONS if (study / c / "aa" / "summary.json").is_file()]
        hint = (f"give --load {','.join(ran)}, the conditions it ran" if ran
                else "not a study folder of this script")
        return f"{study} has no A/A run of {', '.join(missing)} ({hint})"
    return None


def main(argv: Optional[list[str]] = None, exiting: bool = False) -> int:
    """The study, or with ``--from-run`` its analysis; exit 0, 1 (a run failed, a
    run folder cannot be read, or a file cannot be written: ``aa_false_positive.py:
    error: cannot write PATH: REASON``), 2 (bad input). SIGINT / SIGTERM / SIGHUP: the running
    ``bench.py`` gets the same signal, writes what it measured and is reaped, the busy
    process is stopped, then one line on stderr saying where the study so far is and
    which run it stopped (``interrupt_line``), exit 130 / 143 / 129.
    ``exiting``: the process exits once this returns (the script run as a command): a
    signal leaves further ones ignored on its way out, as ``bench.py``'s; ``False``
    (``main`` called in process) puts the caller's handlers back whatever happened
    (``signals.restore``)."""
    old = signals.install(keep_blocked=not exiting)
    args = study = None
    try:
        args = parse_args(argv)
        signals.unblock()
        if args.from_run:
            study = Path(args.from_run)
        else:
            from ipc_bench.harness.run_folder import default_run_dir

            study = Path(args.output) if args.output else default_run_dir(ROOT / "results",
                                                                          "aa")
            study.mkdir(parents=True, exist_ok=True)
            for condition in args.load:
                run_condition(args, condition, study)
        code = _analyse(args, study)
        signals.finish()  # a dropped one is raised; a later one leaves the code alone
        return code
    except signals.Interrupted as exc:
        print(interrupt_line(exc, args, study), file=sys.stderr)
        return exc.code
    finally:
        signals.restore(old, ignore_after_signal=exiting)


def study_runs(args: argparse.Namespace, study: Path) -> list[Path]:
    """The ``bench.py`` run folders of ``study`` that exist, in the order they run."""
    names = ["aa"] + [f"ref-steps{steps}" for steps in args.reference_steps]
    return [study / c / n for c in args.load for n in names if (study / c / n).is_dir()]


def run_kept(folder: Path) -> tuple[bool, str]:
    """(whether complete, what a ``bench.py`` run folder holds): ``DIR is incomplete
    (17 cases complete)``; ``DIR has no readable summary.json`` where it cannot be
    read."""
    try:
        summary = read_summary(folder)
    except ResultsError:
        return False, f"{folder} has no readable summary.json"
    cases = summary.get("cases") if isinstance(summary.get("cases"), list) else []
    done = sum(1 for c in cases if isinstance(c, dict) and c.get("complete") is True)
    n = f"{done} case{'' if done == 1 else 's'}"
    if summary.get("status") == "complete":
        return True, f"{folder} is complete ({n})"
    return False, f"{folder} {run_state(summary.get('status'))} ({n} complete)"


def interrupt_line(exc: signals.Interrupted, args: Optional[argparse.Namespace],
                   study: Optional[Path]) -> str:
    """``aa_false_positive.py: interrupted by SIGINT (exit 130)`` (``Interrupted.line``);
    for a study run here, before ``(exit 130)``, where it is and what its runs hold:
    ``; the study so far is in DIR (1 bench.py run complete); bench.py's run
    DIR/busy/aa is incomplete (17 cases complete)``, and how the running ``bench.py``
    ended where it did not exit with the signal's code (``; bench.py had not exited
    15 s later and was killed by SIGKILL``)."""
    if args is None or study is None or args.from_run or not study.is_dir():
        return exc.line(PROG)
    kept = [run_kept(folder) for folder in study_runs(args, study)]
    whole = sum(complete for complete, _ in kept)
    parts = [f"the study so far is in {study} ({whole} bench.py "
             f"run{'' if whole == 1 else 's'} complete)"]
    parts += [f"bench.py's run {what}" for complete, what in kept if not complete]
    if exc.child is not None and exc.child != f"exited {exc.code}":
        parts.append(f"bench.py {exc.child}")
    return exc.line(PROG, parts)


def _analyse(args: argparse.Namespace, study: Path) -> int:
    """``main``'s analysis of ``study``: ``aa_false_positive.json`` (written whole or
    not at all) and the tables."""
    try:
        result = analyse_study(study, args.load, args.group_sizes)
    except ResultsError as exc:
        # a folder given to --from-run is input: its problem is bad input (exit 2)
        print(one_line(f"{PROG}: error: {exc}"), file=sys.stderr)
        return 2 if args.from_run else 1
    with signals.deferred():
        write_output(study / "aa_false_positive.json", json.dumps(result, indent=1) + "\n",
                     PROG, f"the analysis is in {study / 'aa_false_positive.json'}")
    with one_write():  # the tables in one write: | head -1 takes them whole
        print(f"A/A study {study}")
        for info in result["conditions"].values():
            print_condition(info)
    return 0


if __name__ == "__main__":
    sys.exit(script_main(PROG, lambda: main(exiting=True), "the study's tables",
                         "the study folder"))
