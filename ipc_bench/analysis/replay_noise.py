"""The machine's noise in a trace replay, apart from the trace's own variation.

A case's ``step_ns_block_cv`` (``summary._block_cv``) is the coefficient of variation of
the means of its consecutive ``STEP_BLOCK``-step blocks of counted steps. In a steady
case every counted step does the same work, so the block means move with the machine
alone, and over 10 % (``summary.NOISY_STEP_BLOCK_CV``) the case warns that the machine
may be noisy. A trace replay (a case with a ``trace`` label: ``azure-conv``,
``azure-code`` and their timed forms, whose counted steps are every step past the
warm-up) schedules the trace's batches, which change from step to step by design: its
block means move with the workload too (``results/azure-conv-r5``: 21 to 36 % in every
case, where the machine's share is about 3 %), and so do its floor's, which replays the
same steps' frames. That spread says nothing about the machine, and a replay's case
carries no noise warning from it (``summary.noise_warnings``; ``summary.is_replay``).

What measures the machine there is the repetitions: the cases of one workload, arm,
codec, transport and model that ran the same schedule (equal ``schedule_digest``: a
replay on the logical clock) did the same work in their k-th block of counted steps, so
the spread of that block's mean across the repetitions is the machine's. Its
coefficient of variation (standard deviation, ``ddof=1``, over the mean), block by
block, and its median over the blocks is ``step_ns_rep_block_cv`` (and
``floor_step_ns_rep_block_cv`` of the floor's steps, ``floor.csv``'s ``i`` being the
replayed counted step): a ratio, held to the same 10 % (``NOISY_REP_BLOCK_CV``), as
pyperf holds the spread of its values, each a mean over loops of the same work. The
report gives one line per replay workload (``replay_noise_findings``).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ipc_bench.analysis.summary import NOISY_STEP_BLOCK_CV, STEP_BLOCK, is_replay

#: A replay's ``step_ns_rep_block_cv`` (or ``floor_step_ns_rep_block_cv``) over this
#: says its machine was noisy: the threshold of the steady cases' ``step_ns_block_cv``
#: (pyperf's 10 %), applied to block means of the same work, as there.
NOISY_REP_BLOCK_CV = NOISY_STEP_BLOCK_CV

#: The fewest whole blocks the measure takes, as ``summary._block_cv`` does (150 steps).
MIN_BLOCKS = 3

#: How a case's recorded block-CV noise warnings begin (``summary.noise_warnings``,
#: ``summary.floor_noise_warning``): a replay's, recorded by runs before these were
#: left out, are the trace's spread, not the machine's (``workload_spread_line``).
STEP_SPREAD_HEAD = f"the standard deviation of {STEP_BLOCK}-step mean step times is "
FLOOR_SPREAD_HEAD = f"the standard deviation of {STEP_BLOCK}-step mean floor step times is "

#: The columns besides ``repetition`` that tell a replay's arms apart: the cases of one
#: group are the repetitions of one arm.
GROUP_COLUMNS = ("run_id", "workload", "arm", "codec", "transport", "model")


def workload_spread_line(line: Any) -> bool:
    """Whether a recorded warning ``line`` is a block-CV noise warning (the step times'
    or the floor's, ``STEP_SPREAD_HEAD``, ``FLOOR_SPREAD_HEAD``): on a replay's case,
    where a run recorded one, it measures the trace's batches as well as the machine.
    Raises nothing."""
    text = str(line)
    return text.startswith(STEP_SPREAD_HEAD) or text.startswith(FLOOR_SPREAD_HEAD)


def block_rep_cvs(series: list[Any], block: int = STEP_BLOCK) -> np.ndarray:
    """The coefficient of variation across repetitions of each ``block``-step block's
    mean: ``series``, one sequence of per-step times (ns, in step order) per repetition
    of the same schedule, at least two; of each the first ``k * block`` values, ``k``
    the whole blocks of the shortest; for block ``b`` the means ``m[r, b]`` of the
    repetitions ``r``, their standard deviation (``ddof=1``) over their mean. Returns
    ``k`` ratios (an empty array under one whole block). Raises ``ValueError`` for
    fewer than 2 series."""
    if len(series) < 2:
        raise ValueError(f"block_rep_cvs needs 2 repetitions or more, got {len(series)}")
    arrays = [np.asarray(s, dtype=float) for s in series]
    k = min(len(a) for a in arrays) // block
    if k == 0:
        return np.zeros(0)
    means = np.array([a[:k * block].reshape(k, block).mean(axis=1) for a in arrays])
    with np.errstate(divide="ignore", invalid="ignore"):
        return means.std(axis=0, ddof=1) / means.mean(axis=0)


def _median(values: np.ndarray) -> Optional[float]:
    return float(np.median(values)) if len(values) else None


def _group_keys(cases) -> list[str]:
    return [c for c in GROUP_COLUMNS if c in cases.columns]


def _series(frame, case_ids: list[str], value: str, order: str) -> list[np.ndarray]:
    """Per case of ``case_ids`` (in order), ``frame``'s ``value`` column sorted by
    ``order``; an empty array for a case without rows."""
    out = []
    for cid in case_ids:
        rows = frame[frame["case_id"] == cid]
        out.append(rows.sort_values(order)[value].to_numpy(dtype=float) if len(rows)
                   else np.zeros(0))
    return out


def _why_not(group, has_digest: bool) -> Optional[str]:
    """Why a group of cases (one arm's repetitions) gives no measure, else ``None``."""
    if len(group) < 2:
        return "one repetition"
    if not has_digest:
        return "no schedule digest"
    digests = [d if isinstance(d, str) and d else None for d in group["schedule_digest"]]
    if None in digests or len(set(digests)) > 1:
        return "different schedules"
    return None


def repetition_noise(results) -> list[dict[str, Any]]:
    """Per arm of each replay workload (``is_replay``) in ``results`` (a
    ``results.Results``; its finished cases are used, ``Results.finished``): the
    repetitions' spread block by block (``block_rep_cvs``). Each a dict of the
    ``GROUP_COLUMNS`` it has, ``repetitions`` (cases), ``blocks`` (whole blocks
    compared, 0 when not measured), ``step_block_cvs`` and ``floor_block_cvs`` (the
    per-block ratios, arrays; the floor's empty without floor rows),
    ``step_ns_rep_block_cv`` and ``floor_step_ns_rep_block_cv`` (their medians, ratios;
    ``None`` when not measured), ``step_ns_block_cv`` (the cases' own, a list, those
    recorded) and ``why``: ``None`` when measured, else ``one repetition``, ``no
    schedule digest`` (a run before it), ``different schedules`` (a timed replay's
    follow the wall clock) or ``too few steps`` (under ``MIN_BLOCKS`` whole blocks of
    counted steps). ``[]`` without replay cases. Raises nothing."""
    results = results.finished()
    cases = results.cases
    if cases.empty or "trace" not in cases.columns:
        return []
    cases = cases[[is_replay({"trace": t}) for t in cases["trace"]]]
    if "num_steps" in cases.columns:
        cases = cases[cases["num_steps"].fillna(0) > 0]
    if cases.empty:
        return []
    keys = _group_keys(cases)
    steps = results.steps
    if "counted" in steps.columns:
        steps = steps[steps["counted"].astype(bool)]
    floor = results.floor
    has_digest = "schedule_digest" in cases.columns
    out = []
    for values, group in cases.groupby(keys, sort=False, observed=True):
        values = values if isinstance(values, tuple) else (values,)
        group = group.sort_values("repetition")
        ids = list(group["case_id"])
        own = [float(v) for v in group.get("step_ns_block_cv", [])
               if v is not None and v == v]
        rec: dict[str, Any] = dict(zip(keys, values))
        rec.update(repetitions=len(group), blocks=0, step_block_cvs=np.zeros(0),
                   floor_block_cvs=np.zeros(0), step_ns_rep_block_cv=None,
                   floor_step_ns_rep_block_cv=None, step_ns_block_cv=own,
                   why=_why_not(group, has_digest))
        if rec["why"] is None:
            run = steps[steps["run_id"] == rec["run_id"]] if "run_id" in keys else steps
            step_cvs = block_rep_cvs(_series(run, ids, "step_ns", "seq"))
            if len(step_cvs) < MIN_BLOCKS:
                rec["why"] = "too few steps"
            else:
                rec.update(blocks=len(step_cvs), step_block_cvs=step_cvs,
                           step_ns_rep_block_cv=_median(step_cvs))
                fl = floor[floor["run_id"] == rec["run_id"]] if "run_id" in keys else floor
                floor_cvs = block_rep_cvs(_series(fl, ids, "floor_step_ns", "i"))
                if len(floor_cvs) >= MIN_BLOCKS:
                    rec.update(floor_block_cvs=floor_cvs,
                               floor_step_ns_rep_block_cv=_median(floor_cvs))
        out.append(rec)
    return out


def _pct(ratio: float) -> str:
    return f"{ratio * 100:.1f}"


def _span(values: list[float]) -> str:
    """``21.2-35.5 %`` (or ``3.3 %`` where they are one) of ratios ``values``."""
    lo, hi = min(values), max(values)
    return f"{_pct(lo)} %" if _pct(lo) == _pct(hi) else f"{_pct(lo)}-{_pct(hi)} %"


#: ``repetition_noise``'s ``why`` in a finding's words: why the machine's share of a
#: replay's spread is not measured.
WHY_WORDS = {
    "one repetition": "one repetition (the measure compares repetitions of one "
                      "schedule: --repeat 2 or more)",
    "no schedule digest": "no `schedule_digest` recorded to show that its repetitions "
                          "ran the same schedule",
    "different schedules": "its repetitions ran different schedules (`schedule_digest` "
                           "differs, as a timed replay's do: its batches follow the wall "
                           "clock)",
    "too few steps": f"fewer than {MIN_BLOCKS * STEP_BLOCK} counted steps "
                     f"({MIN_BLOCKS} blocks of {STEP_BLOCK})",
}


def _arms(n: int) -> str:
    return f"{n} arm-codec pair{'' if n == 1 else 's'}"


def _measured_words(measured: list[dict[str, Any]], total: int) -> str:
    """The clause of a workload's measured arms (of its ``total``): the pooled median
    over their blocks, the range of the arms' medians, the floor's, and the verdict
    against ``NOISY_REP_BLOCK_CV``."""
    reps = sorted({m["repetitions"] for m in measured})
    rep_words = (f"{reps[0]} repetitions" if len(reps) == 1
                 else f"{reps[0]}-{reps[-1]} repetitions")
    pooled = _median(np.concatenate([m["step_block_cvs"] for m in measured]))
    by_arm = [m["step_ns_rep_block_cv"] for m in measured]
    n = len(measured)
    each = ("its arm-codec pair" if n == total == 1 else f"each of its {_arms(n)}"
            if n == total else f"{n} of its {_arms(total)}" if n == 1
            else f"each of {n} of its {_arms(total)}")
    text = (f"across the {rep_words} of {each}, "
            f"which ran the same schedule (one `schedule_digest`), a {STEP_BLOCK}-step "
            f"block's mean step time varied by a median {_pct(pooled)} % (CV across "
            "repetitions, `step_ns_rep_block_cv`"
            + (f"; {_span(by_arm)} by arm" if len(measured) > 1 else "") + ")")
    floors = [m for m in measured if m["floor_step_ns_rep_block_cv"] is not None]
    floor_pooled = (_median(np.concatenate([m["floor_block_cvs"] for m in floors]))
                    if floors else None)
    if floor_pooled is not None:
        text += (f", its floor's by a median {_pct(floor_pooled)} % "
                 "(`floor_step_ns_rep_block_cv`)")
    limit = f"{NOISY_REP_BLOCK_CV * 100:g} %"
    over = [w for w, v in (("step times", pooled), ("floor", floor_pooled))
            if v is not None and v > NOISY_REP_BLOCK_CV]
    if not over:
        return text + f": under the {limit} that marks noise"
    return (text + f": over the {limit} that marks noise, the machine may be noisy, and "
            "its " + " and ".join(over) + " with it")


def _workload_line(workload: str, arms: list[dict[str, Any]], recorded: int) -> str:
    """One replay workload's finding (``replay_noise_findings``); ``recorded``: its
    cases that carry a block-CV warning an older run recorded."""
    cases = sum(a["repetitions"] for a in arms)
    own = [v for a in arms for v in a["step_ns_block_cv"]]
    head = (f"On `{workload}` the step times vary with the trace's batches, so their "
            f"{STEP_BLOCK}-step block means do too (`step_ns_block_cv` {_span(own)}, the "
            "workload's spread as well as the machine's, not held to the "
            f"{NOISY_STEP_BLOCK_CV * 100:g} % noise threshold)")
    measured = [a for a in arms if a["why"] is None]
    missed = [a for a in arms if a["why"] is not None]
    if measured:
        text = f"{head}; {_measured_words(measured, len(arms))}"
        if missed:
            whys = list(dict.fromkeys(WHY_WORDS[a["why"]] for a in missed))
            text += (f"; not measured for {_arms(len(missed))}: " + "; ".join(whys))
    else:
        whys = list(dict.fromkeys(WHY_WORDS[a["why"]] for a in missed))
        text = f"{head}; the machine's own share cannot be measured: " + "; ".join(whys)
    if recorded:
        text += (f" ({recorded} of its {cases} case{'' if cases == 1 else 's'} "
                 f"carr{'ies' if recorded == 1 else 'y'} the \"may be noisy\" warnings "
                 "the run recorded from that spread, listed under Measurement warnings "
                 "and not counted as noise)")
    return text + "."


def replay_noise_findings(results) -> list[str]:
    """One finding per replay workload of ``results`` (a ``results.Results``) whose
    cases recorded a ``step_ns_block_cv``: that its block CV is the trace's as well as
    the machine's, with its range over the cases, then the machine's share measured
    across repetitions (``repetition_noise``: the median of the per-block CVs over
    every measured arm, the range of the arms' medians where there are several, the
    floor's, and whether it is over ``NOISY_REP_BLOCK_CV``), or why it cannot be, and
    how many cases carry a block-CV warning recorded by an older run. E.g. ``On
    `trace=azure-conv:300` the step times vary with the trace's batches, ...; across
    the 5 repetitions of each of its 4 arms (policy, codec), ..., a 50-step block's
    mean step time varied by a median 3.3 % (...): under 10 %, the noise threshold, so
    the machine was not noisy.`` ``[]`` without such a workload. Raises nothing."""
    arms = repetition_noise(results)
    cases = results.finished().cases
    out = []
    for workload in dict.fromkeys(a["workload"] for a in arms):
        mine = [a for a in arms if a["workload"] == workload]
        if not any(a["step_ns_block_cv"] for a in mine):
            continue
        recorded = 0
        if "warnings" in cases.columns:
            of = cases[cases["workload"] == workload]["warnings"]
            recorded = sum(isinstance(w, (list, tuple)) and any(map(workload_spread_line, w))
                           for w in of)
        out.append(_workload_line(str(workload), mine, recorded))
    return out
