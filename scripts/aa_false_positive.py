#!/usr/bin/env python3
"""A/A false-positive rate of the paired comparison (``ipc_bench.analysis.stats``).

Runs one policy against a copy of itself (``bench.py --aa``) for G x K interleaved
repetition pairs (A A', A' A, ...) in one invocation, splits the pairs into G disjoint
groups of K consecutive pairs, and compares each group the way a ``--repeat K`` run
would. Both arms run the same code on the same workload, so every "significant"
verdict is a false positive; at 95 % the rate should be about 5 %. Reported per
metric and interval method (t on log ratios, bootstrap, sign test), with a
Clopper-Pearson 95 % interval for the rate itself (with G = 20 verdicts that interval
is wide: 1/20 false positives is compatible with a true rate of 0.1 % to 25 %).

Usage (about 5 minutes on 2 cores with the defaults, 120 pairs):

    python scripts/aa_false_positive.py [--groups 20] [--pairs-per-group 6]
        [--num-running 256] [--steps 300] [--codec msgpack] [--policy send]
        [--output DIR] [--from-run DIR]

``--from-run DIR`` re-analyses an earlier A/A run folder instead of running one.
Writes ``aa_false_positive.json`` into the run folder.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ipc_bench.analysis.results import read_summary  # noqa: E402
from ipc_bench.analysis.stats import METHODS, compare_paired, min_pairs  # noqa: E402

METRICS = ("step_ns_mean", "step_ns_median", "output_tokens_per_s", "build_ns_per_step",
           "encode_ns_per_step", "decode_ns_per_step", "sched_cpu_ns_per_step")


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact binomial interval of a rate k/n (Clopper & Pearson, Biometrika 1934)."""
    from scipy.stats import beta

    a = (1 - confidence) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def analyse(summary: dict, groups: int, per_group: int) -> dict:
    """False-positive counts per metric and method over ``groups`` groups of pairs."""
    cases = [c for c in summary["cases"] if c.get("complete") and c.get("num_steps")]
    arms = list(dict.fromkeys(c["arm"] for c in cases))
    if len(arms) != 2:
        raise SystemExit(f"aa_false_positive: expected two arms (an --aa run), got {arms}")
    by = {(c["arm"], c["repetition"]): c for c in cases}
    reps = sorted(r for (a, r) in by if a == arms[0] and (arms[1], r) in by)
    if len(reps) < groups * per_group:
        raise SystemExit(f"aa_false_positive: {len(reps)} pairs, need {groups * per_group}")
    out = dict(baseline=arms[0], treatment=arms[1], groups=groups,
               pairs_per_group=per_group, pairs=groups * per_group, metrics={})
    for metric in METRICS:
        entry = {}
        for method in METHODS:
            if min_pairs(method) > per_group:
                continue  # no interval from so few pairs
            flagged = []
            for g in range(groups):
                rs = reps[g * per_group:(g + 1) * per_group]
                a = [by[(arms[0], r)][metric] for r in rs]
                b = [by[(arms[1], r)][metric] for r in rs]
                flagged.append(bool(compare_paired(a, b, method=method).significant))
            k = sum(flagged)
            lo, hi = clopper_pearson(k, groups)
            entry[method] = dict(false_positives=k, comparisons=groups, rate=k / groups,
                                 rate_ci_low=lo, rate_ci_high=hi, flagged_groups=[
                                     g for g, f in enumerate(flagged) if f])
        # all pairs at once: is there a bias between the arms (e.g. of position)?
        a = [by[(arms[0], r)][metric] for r in reps]
        b = [by[(arms[1], r)][metric] for r in reps]
        allp = compare_paired(a, b, method="t")
        entry["all_pairs"] = dict(ratio_geomean=allp.ratio_geomean,
                                  ratio_ci_low=allp.ratio_ci_low,
                                  ratio_ci_high=allp.ratio_ci_high, verdict=allp.verdict)
        out["metrics"][metric] = entry
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--groups", type=int, default=20, help="A/A comparisons (default 20)")
    p.add_argument("--pairs-per-group", type=int, default=6,
                   help="repetition pairs per comparison, as --repeat (default 6, the "
                   "fewest the sign-test interval needs)")
    p.add_argument("--num-running", type=int, default=256)
    p.add_argument("--steps", type=int, default=300, help="counted steps per case")
    p.add_argument("--codec", default="msgpack")
    p.add_argument("--policy", default="send")
    p.add_argument("--output", help="run folder (default results/aa-<time>)")
    p.add_argument("--from-run", metavar="DIR", help="analyse this A/A run folder")
    args = p.parse_args()
    if args.groups < 1 or args.pairs_per_group < 2:
        p.error("need --groups >= 1 and --pairs-per-group >= 2")
    if args.from_run:
        run_dir = Path(args.from_run)
    else:
        from ipc_bench.harness.run_folder import default_run_dir

        run_dir = Path(args.output) if args.output else default_run_dir(ROOT / "results", "aa")
        cmd = [sys.executable, str(ROOT / "bench.py"), "--scenario", "decode-steady", "--aa",
               "--policies", args.policy, "--codecs", args.codec,
               "--num-running", str(args.num_running), "--steps", str(args.steps),
               "--repeat", str(args.groups * args.pairs_per_group), "--no-floor",
               "--no-single-process", "--quiet",
               "--output", str(run_dir)]
        print("running:", " ".join(cmd), file=sys.stderr, flush=True)
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL)
        if proc.returncode != 0:
            return proc.returncode
    result = analyse(read_summary(run_dir), args.groups, args.pairs_per_group)
    (run_dir / "aa_false_positive.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"A/A false positives: {result['baseline']} vs {result['treatment']}, "
          f"{result['groups']} comparisons of {result['pairs_per_group']} pairs "
          f"({result['pairs']} pairs), 95 % intervals; run {run_dir}")
    print(f"{'metric':24} {'method':10} {'flagged':>8} {'rate':>6}  rate 95 % CI      "
          f"all {result['pairs']} pairs: ratio [CI]")
    for metric, entry in result["metrics"].items():
        allp = entry["all_pairs"]
        for method in METHODS:
            if method not in entry:
                continue
            e = entry[method]
            tail = ""
            if method == "t" and allp["ratio_ci_low"] is not None:
                tail = (f"{allp['ratio_geomean']:.4f} [{allp['ratio_ci_low']:.4f}, "
                        f"{allp['ratio_ci_high']:.4f}]")
            print(f"{metric:24} {method:10} {e['false_positives']:>3}/{e['comparisons']:<4} "
                  f"{e['rate']:>6.1%}  [{e['rate_ci_low']:.1%}, {e['rate_ci_high']:.1%}]"
                  f"{'':4} {tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
