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
    python scripts/codec_fit.py --fit-run DIR --check-run DIR   # re-analyse

The fit run is ``bench.py --scenario decode-steady --num-running 16,64,128,256,512
--steps S --repeat N``; the check run the same at ``--num-running 1024``. With
``--repeat`` the median over repetitions is used per batch size.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ipc_bench.analysis.bytemodel import fit_linear  # noqa: E402
from ipc_bench.analysis.results import ResultsError, read_summary  # noqa: E402
from ipc_bench.harness.run_folder import default_run_dir  # noqa: E402

PARTS = ("sched_encode_ns_per_step", "runner_decode_ns_per_step",
         "runner_encode_ns_per_step", "sched_decode_ns_per_step")
FIT_SIZES = "16,64,128,256,512"
CHECK_SIZE = 1024


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
    med = steps.groupby("case_id")[cols].median()
    codec = steps[cols].sum(axis=1).groupby(steps["case_id"]).median()
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
    instead of the summary's means."""
    acc: dict[tuple[str, str], dict[int, list[float]]] = {}
    for c in summary["cases"]:
        if not c.get("complete") or not c.get("num_steps") or "encode_ns_per_step" not in c:
            continue
        case = medians[c["case_id"]] if medians is not None else c
        acc.setdefault((c["policy"], c["codec"]), {}).setdefault(
            int(c["num_running"]), []).append(key(case))
    return {k: {b: statistics.median(v) for b, v in sorted(d.items())} for k, d in acc.items()}


def run(sizes: str, steps: int, repeat: int, out: Path) -> None:
    cmd = [sys.executable, str(ROOT / "bench.py"), "--scenario", "decode-steady",
           "--num-running", sizes, "--steps", str(steps), "--repeat", str(repeat),
           "--no-floor", "--no-single-process", "--quiet", "--output", str(out)]
    print("running:", " ".join(cmd), file=sys.stderr, flush=True)
    if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
        raise SystemExit(f"codec_fit: run failed: {' '.join(cmd)}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fit-run", metavar="DIR", help="decode-steady run to fit (several B)")
    p.add_argument("--check-run", metavar="DIR", help="decode-steady run at 1,024")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--stat", choices=("median", "mean"), default="median",
                   help="per case: the median over its counted steps (default; robust "
                   "to steps where the process was descheduled) or the summary's mean")
    p.add_argument("--json", metavar="PATH", help="write fits and checks as JSON")
    args = p.parse_args()
    fit_dir = Path(args.fit_run) if args.fit_run else default_run_dir(ROOT / "results", "fit")
    if not args.fit_run:
        run(FIT_SIZES, args.steps, args.repeat, fit_dir)
    check_dir = Path(args.check_run) if args.check_run else default_run_dir(ROOT / "results",
                                                                            "check1024")
    if not args.check_run:
        run(str(CHECK_SIZE), args.steps, args.repeat, check_dir)
    try:
        fit_summary, check_summary = read_summary(fit_dir), read_summary(check_dir)
    except ResultsError as exc:
        print(f"codec_fit: error: {exc}", file=sys.stderr)
        return 2
    keys = {"codec_ns_per_step": codec_ns}
    keys.update({part: (lambda c, part=part: c[part]) for part in PARTS})
    fit_med = check_med = None
    if args.stat == "median":
        fit_med, check_med = step_medians(fit_dir), step_medians(check_dir)
    report = dict(fit_run=str(fit_dir), check_run=str(check_dir), stat=args.stat, fits=[])
    print(f"codec time per step ({args.stat} over each case's counted steps, median over "
          f"repetitions) = fixed + per_request x B; fit on {fit_dir}, checked at "
          f"B = {CHECK_SIZE} on {check_dir}")
    print(f"{'policy':7} {'codec':8} {'fixed us':>9} {'ns/request':>10} {'R^2':>7} "
          f"{'pred. us':>9} {'meas. us':>9} {'error':>7}")
    for name, key in keys.items():
        fit_pts = points(fit_summary, key, fit_med)
        check_pts = points(check_summary, key, check_med)
        for (policy, codec), pts in fit_pts.items():
            xs, ys = list(pts), list(pts.values())
            fit = fit_linear(xs, ys)
            predicted = fit["fixed"] + fit["per_unit"] * CHECK_SIZE
            measured = check_pts.get((policy, codec), {}).get(CHECK_SIZE)
            err = (predicted - measured) / measured if measured else None
            report["fits"].append(dict(quantity=name, policy=policy, codec=codec,
                                       num_running=xs, values_ns=ys, **fit,
                                       predicted_ns_at_1024=predicted,
                                       measured_ns_at_1024=measured, relative_error=err))
            if name == "codec_ns_per_step":
                print(f"{policy:7} {codec:8} {fit['fixed'] / 1e3:>9.2f} {fit['per_unit']:>10.1f} "
                      f"{fit['r2']:>7.4f} {predicted / 1e3:>9.1f} "
                      f"{(measured or 0) / 1e3:>9.1f} "
                      f"{'' if err is None else f'{err:+.1%}':>7}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
