"""Instrumentation overhead: the same decode-steady case with per-step recording on and off.

Why: every figure the harness prints comes from per-step timestamps and records; this
scenario measures what recording them costs. Arm ``steps`` is the normal loop (about
ten clock reads, one record and a kept frame per step on the scheduler, as many clock
reads per step on the runner, and the correctness checks: the schedule digest and both
sides of the input oracle, with its check every 128 steps); arm ``totals`` runs the
same steps through loops that record and check nothing per step, only the loop's
total time after warm-up. Both arms report
``loop_step_ns_mean`` (loop time after warm-up / steps) and the scenario prints the
paired ratio steps/totals with its 95 % interval per policy.

Defaults: 256 running requests (``--num-running``), msgpack (``--codecs``), 1,000
counted steps (``--steps``), 8 repetitions (``DEFAULT_REPEAT``, when ``--repeat`` is
not given; alternating which arm runs first; ``--repeat 1`` is refused: one repetition
gives the paired ratio no interval), no floor and no single-process case. ``--aa`` is
refused (the arms are recording on and off, not a policy against itself), and so is
``--order-seed`` (the arms alternate, in no random order).
"""

from __future__ import annotations

from dataclasses import replace

from ipc_bench.engine.config import ConfigError
from ipc_bench.harness.spec import INSTRUMENTATIONS, CaseSpec
from ipc_bench.harness.scenario import STEADY, ScenarioOptions, steady_cases

NAME = "overhead"
OPTIONS = STEADY
ARMS = INSTRUMENTATIONS[::-1]  # totals first (alternating by repetition)
#: Repetitions when ``--repeat`` is not given (``cli.run`` reads it).
DEFAULT_REPEAT = 8


def cases(opts: ScenarioOptions) -> list[CaseSpec]:
    """Arms ``totals`` and ``steps`` of each steady case, ``opts.repeat`` repetitions
    (module docstring); ``ConfigError`` on ``--aa``, ``--order-seed`` or fewer than 2
    repetitions."""
    if opts.aa:
        raise ConfigError(f"scenario {NAME} compares per-step recording on and off (arms "
                          f"steps and totals), not a policy against itself: drop --aa")
    if opts.order_seed is not None:
        raise ConfigError(f"scenario {NAME} alternates its arms (steps, totals) from one "
                          f"repetition to the next, in no random order: drop --order-seed "
                          f"{opts.order_seed}")
    if opts.repeat < 2:
        raise ConfigError(f"--repeat {opts.repeat}: scenario {NAME} gives steps/totals a "
                          f"paired interval, which needs 2 or more repetitions (default "
                          f"{DEFAULT_REPEAT})")
    repeat = opts.repeat
    base = replace(opts, num_running=opts.num_running or [256], repeat=1,
                   codecs=opts.codecs if opts.codecs != ["msgpack", "pickle"] else ["msgpack"],
                   floor=False, single_process=False)
    templates = steady_cases(base, NAME, base.num_running)
    out = []
    for rep in range(repeat):
        for t in templates:
            for arm in (ARMS if rep % 2 == 0 else ARMS[::-1]):
                # no floor, --no-floor or not (the summary's no_floor stays false)
                case = replace(t, labels=dict(t.labels, of=t.policy), repetition=rep,
                               scenario=NAME, instrumentation=arm, arm=arm, no_floor=False)
                out.append(case)
    return out


def report(summaries, method: str = "t") -> str:
    """steps/totals ratio of loop time per step, per policy, with its 95 % interval by
    ``method`` (the run's ``--ci-method``: ``stats.compare_cases``; fewer pairs than it
    needs give no interval and a withheld verdict), and each arm's geometric mean over
    the pairs, whose quotient the ratio is (their medians can point the other way and
    read as contradicting it)."""
    from ipc_bench.analysis.stats import arm_geomeans, compare_cases, ratio_interval, verdict_of

    lines = ["", "Instrumentation overhead (loop time per step, per-step recording and "
             "correctness checks on / off):"]
    for cmp in compare_cases(summaries, method=method,
                             metrics=(("loop_step_ns_mean", "ns"),)):
        m = cmp["metrics"].get("loop_step_ns_mean")
        if not m:
            continue
        ci = (ratio_interval(m["ratio_ci_low"], m["ratio_ci_high"], digits=4)
              if m["ratio_ci_low"] is not None else "(no interval)")
        lines.append(
            f"  {cmp['workload']} {cmp['codec']}: {m['treatment']}/{m['baseline']} = "
            f"{m['ratio_geomean']:.4f} {ci} over {m['n_pairs']} pairs"
            + arm_geomeans(m, "vs", "us/step") + f"; {verdict_of(m)}")
    return "\n".join(lines)
