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
pyperf holds the spread of its values, each a mean over loops of the same work, arm by
arm: one arm over it makes its workload noisy, and the repetition that stands out
(``_outlier``) is named. The report gives one line per replay workload
(``replay_noise_findings``), and a noisy arm's cases a warning each
(``noisy_arm_warnings``), listed and counted with the recorded ones.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from ipc_bench.analysis.frames import frame_records, listed
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


def _missing(value: Any) -> bool:
    """Whether a case's field is a gap: absent (``None``) or NaN (a table's)."""
    return value is None or (isinstance(value, float) and value != value)


class _Rows:
    """One table's values by case, each case's in its rows' order: the counted steps'
    ``step_ns`` by ``seq``, or ``floor_step_ns`` by ``i``. ``parts``: ``(run_id,
    case_id)`` -> ``(order, values)``, two float arrays of one length; a ``run_id`` of
    ``None`` where the table names no run (it matches any)."""

    def __init__(self, parts: dict[tuple[Any, str], tuple[np.ndarray, np.ndarray]]):
        self.parts = parts

    def _of(self, run: Any, cid: str) -> list[tuple[np.ndarray, np.ndarray]]:
        return [p for (r, c), p in self.parts.items()
                if c == cid and (run is None or r is None or r == run)]

    def series(self, run: Any, ids: list[str]) -> list[np.ndarray]:
        """Per case of ``ids`` (in order), its values sorted by their order (of run
        ``run``'s rows, or every run's where it is ``None``); an empty array for a case
        without rows."""
        out = []
        for cid in ids:
            found = self._of(run, cid)
            if not found:
                out.append(np.zeros(0))
                continue
            order = np.concatenate([o for o, _ in found])
            values = np.concatenate([v for _, v in found])
            out.append(values[np.argsort(order, kind="stable")])
        return out

    def has_rows(self, run: Any, ids: list[str]) -> bool:
        """Whether any case of ``ids`` has a row (of run ``run``, or any run)."""
        return any(self._of(run, cid) for cid in ids)


def _frame_rows(frame, value: str, order: str) -> _Rows:
    """``_Rows`` of a ``Results`` table (``frame``, a DataFrame): its ``value`` column
    by case (and run, where it has ``run_id``), in ``order``'s order."""
    if frame is None or not len(frame) or "case_id" not in frame.columns:
        return _Rows({})
    runs = "run_id" in frame.columns
    orders = frame[order].to_numpy(dtype=float)
    values = frame[value].to_numpy(dtype=float)
    groups = frame.groupby(["run_id", "case_id"] if runs else ["case_id"], sort=False,
                           observed=True).indices
    return _Rows({(key if runs else (None, key)): (orders[at], values[at])
                  for key, at in groups.items()})


def _why_not(group: list[dict[str, Any]], has_digest: bool) -> Optional[str]:
    """Why a group of cases (one arm's repetitions, as records) gives no measure, else
    ``None``. A timed replay records its ``trace_speedup``
    (``summary._timed_replay_figures``), a logical-clock one none."""
    if len(group) < 2:
        return "one repetition"
    if not has_digest:
        return "no schedule digest"
    digests = [d if isinstance(d, str) and d else None
               for d in (c.get("schedule_digest") for c in group)]
    if None in digests or len(set(digests)) > 1:
        timed = any(not _missing(c.get("trace_speedup")) for c in group)
        return "different schedules" if timed else "digests differ"
    return None


def _outlier(series: list[np.ndarray], ids: list[str],
             block: int = STEP_BLOCK) -> Optional[dict[str, Any]]:
    """The repetition that stands out of ``series`` (per case of ``ids``, its step
    times, ns): per repetition, the median over the whole blocks of how far its block
    mean sits from the median of the other repetitions' for that block (a ratio of
    theirs); the largest, where there are 3 repetitions or more and it is over
    ``NOISY_REP_BLOCK_CV`` and over twice the next. A dict of ``case_id``, ``index``
    (in ``ids``) and ``deviation`` (the ratio), else ``None``."""
    if len(series) < 3:
        return None
    k = min(len(a) for a in series) // block
    if k == 0:
        return None
    means = np.array([a[:k * block].reshape(k, block).mean(axis=1) for a in series])
    devs = []
    for r in range(len(means)):
        others = np.median(np.delete(means, r, axis=0), axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            devs.append(float(np.median(np.abs(means[r] - others) / others)))
    order = sorted(range(len(devs)), key=lambda r: -devs[r])
    top, next_ = devs[order[0]], devs[order[1]]
    if not top > NOISY_REP_BLOCK_CV or not top > 2 * next_:
        return None
    return {"case_id": ids[order[0]], "index": order[0], "deviation": top}


def _floor_why(floor: _Rows, run: Any, ids: list[str],
               group: list[dict[str, Any]]) -> str:
    """Why no floor figure was measured for the cases ``ids`` of ``group`` (of run
    ``run``): ``no floor`` (each recorded ``no_floor``: ``--no-floor``), ``no floor
    rows`` (``floor.csv`` has none of theirs) or ``too few floor steps``."""
    if all(c.get("no_floor") is True for c in group):
        return "no floor"
    if not floor.has_rows(run, ids):
        return "no floor rows"
    return "too few floor steps"


def _measure(rec: dict[str, Any], group: list[dict[str, Any]], run: Any,
             steps: _Rows, floor: _Rows) -> None:
    """Fill ``rec`` (``repetition_noise``'s, its ``why`` ``None``) with the measure
    over the repetitions of ``group`` that have counted steps in ``steps`` (of run
    ``run``: ``None``, any), and the floor's from ``floor``; ``why`` ``steps
    missing`` where fewer than 2 have, ``too few steps`` under ``MIN_BLOCKS`` whole
    blocks."""
    ids = [c.get("case_id") for c in group]
    series = steps.series(run, ids)
    rec["missing_steps"] = [c for c, s in zip(ids, series) if not len(s)]
    kept = [(c, s) for c, s in zip(ids, series) if len(s)]
    if len(kept) < 2:
        rec["why"] = "steps missing"
        return
    ids, series = [c for c, _ in kept], [s for _, s in kept]
    step_cvs = block_rep_cvs(series)
    if len(step_cvs) < MIN_BLOCKS:
        rec["why"] = "too few steps"
        return
    rec.update(blocks=len(step_cvs), step_block_cvs=step_cvs, compared=len(ids),
               step_ns_rep_block_cv=_median(step_cvs), case_ids=ids,
               outlier=_outlier(series, ids))
    floor_cvs = block_rep_cvs(floor.series(run, ids))
    if len(floor_cvs) >= MIN_BLOCKS:
        rec.update(floor_block_cvs=floor_cvs,
                   floor_step_ns_rep_block_cv=_median(floor_cvs))
    else:
        rec["floor_why"] = _floor_why(floor, run, ids, group)


def _arm_groups(cases: list[dict[str, Any]], keys: list[str]
                ) -> dict[tuple, list[dict[str, Any]]]:
    """``cases`` by their values of ``keys`` (a case with a gap in one left out, as
    pandas' ``groupby`` leaves it), in the order of each group's first case, each
    group's cases in ``repetition`` order (gaps last)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for c in cases:
        values = tuple(c.get(k) for k in keys)
        if not any(map(_missing, values)):
            groups.setdefault(values, []).append(c)
    return {values: sorted(group, key=lambda c: (1, 0) if _missing(c.get("repetition"))
                           else (0, c["repetition"]))
            for values, group in groups.items()}


def arm_noise(cases: list[dict[str, Any]], steps: _Rows,
              floor: _Rows) -> list[dict[str, Any]]:
    """``repetition_noise`` of finished ``cases`` (case records: ``summary.json``
    entries, or ``Results.cases`` rows as dicts, a gap ``None`` or NaN), with the
    counted steps' ``step_ns`` by case (``steps``) and ``floor.csv``'s
    ``floor_step_ns`` (``floor``): ``_Rows``. Its groups and fields as there; a case
    without a ``GROUP_COLUMNS`` field that another case has is in no group. Raises
    nothing."""
    columns = dict.fromkeys(k for c in cases for k in c)
    if "trace" not in columns:
        return []
    cases = [c for c in cases if is_replay(c)]
    if "num_steps" in columns:
        cases = [c for c in cases if not _missing(c.get("num_steps")) and c["num_steps"] > 0]
    keys = [k for k in GROUP_COLUMNS if k in columns]
    has_digest = "schedule_digest" in columns
    out = []
    for values, group in _arm_groups(cases, keys).items():
        own = [float(c["step_ns_block_cv"]) for c in group
               if not _missing(c.get("step_ns_block_cv"))]
        rec: dict[str, Any] = dict(zip(keys, values))
        rec.update(repetitions=len(group), compared=0, blocks=0,
                   step_block_cvs=np.zeros(0), floor_block_cvs=np.zeros(0),
                   step_ns_rep_block_cv=None, floor_step_ns_rep_block_cv=None,
                   step_ns_block_cv=own, case_ids=[c.get("case_id") for c in group],
                   missing_steps=[], outlier=None, floor_why=None,
                   why=_why_not(group, has_digest))
        if rec["why"] is None:
            _measure(rec, group, rec.get("run_id"), steps, floor)
        out.append(rec)
    return out


def repetition_noise(results) -> list[dict[str, Any]]:
    """Per arm of each replay workload (``is_replay``) in ``results`` (a
    ``results.Results``; its finished cases are used, ``Results.finished``): the
    repetitions' spread block by block (``block_rep_cvs``). Each a dict of the
    ``GROUP_COLUMNS`` it has, ``repetitions`` (cases), ``case_ids`` (those compared
    where measured, else all), ``compared`` (repetitions compared: those with step
    rows; 0 when not measured), ``missing_steps`` (case ids without counted rows in
    ``steps.csv``), ``blocks`` (whole blocks compared, 0 when not measured),
    ``step_block_cvs`` and ``floor_block_cvs`` (the per-block ratios, arrays; the
    floor's empty without floor rows), ``step_ns_rep_block_cv`` and
    ``floor_step_ns_rep_block_cv`` (their medians, ratios; ``None`` when not measured),
    ``floor_why`` (why the floor's is not, where the steps' is: ``no floor``, ``no
    floor rows``, ``too few floor steps``), ``outlier`` (the repetition that stands
    out, ``_outlier``, or ``None``), ``step_ns_block_cv`` (the cases' own, a list,
    those recorded) and ``why``: ``None`` when measured, else ``one repetition``, ``no
    schedule digest`` (a run before it), ``different schedules`` (a timed replay's
    follow the wall clock), ``digests differ`` (on the logical clock, where they
    should not), ``steps missing`` (fewer than 2 repetitions with counted rows in
    ``steps.csv``) or ``too few steps`` (under ``MIN_BLOCKS`` whole blocks of counted
    steps). ``[]`` without replay cases. The same as ``arm_noise``, which a run's end
    uses without pandas (``run_noisy_arm_warnings``). Raises nothing."""
    from ipc_bench.analysis.pace import as_record

    results = results.finished()
    cases = results.cases
    if cases.empty or "trace" not in cases.columns:
        return []
    steps = results.steps
    if "counted" in steps.columns:
        steps = steps[steps["counted"].astype(bool)]
    return arm_noise([as_record(r) for r in frame_records(cases)],
                     _frame_rows(steps, "step_ns", "seq"),
                     _frame_rows(results.floor, "floor_step_ns", "i"))


def _pct(ratio: float) -> str:
    return f"{ratio * 100:.1f}"


def _span(values: list[float]) -> str:
    """``21.2-35.5 %`` (or ``3.3 %`` where they are one) of ratios ``values``."""
    lo, hi = min(values), max(values)
    return f"{_pct(lo)} %" if _pct(lo) == _pct(hi) else f"{_pct(lo)}-{_pct(hi)} %"


#: ``repetition_noise``'s ``why`` in a finding's words: why the machine's share of a
#: replay's spread is not measured (``steps missing`` names its cases: ``_why_words``).
WHY_WORDS = {
    "one repetition": "one repetition (the measure compares repetitions of one "
                      "schedule: --repeat 2 or more)",
    "no schedule digest": "no `schedule_digest` recorded to show that its repetitions "
                          "ran the same schedule",
    "different schedules": "its repetitions ran different schedules (`schedule_digest` "
                           "differs, as a timed replay's do: its batches follow the wall "
                           "clock)",
    "digests differ": "their `schedule_digest` differs although they replayed on the "
                      "logical clock: the schedules should be equal; a hand-edited "
                      "summary or a harness bug",
    "too few steps": f"fewer than {MIN_BLOCKS * STEP_BLOCK} counted steps "
                     f"({MIN_BLOCKS} blocks of {STEP_BLOCK})",
}

#: ``repetition_noise``'s ``floor_why`` in a finding's words: why a measured
#: workload's line has no floor figure.
FLOOR_WHY_WORDS = {
    "no floor": "the run's --no-floor left its cases without a floor",
    "no floor rows": "floor.csv holds no rows for its cases (their floor replays cut "
                     "short, or the rows removed)",
    "too few floor steps": f"fewer than {MIN_BLOCKS * STEP_BLOCK} floor steps "
                           f"({MIN_BLOCKS} blocks of {STEP_BLOCK})",
}


def _ids(ids: list[str]) -> str:
    return ", ".join(f"`{c}`" for c in ids)


def _missing_words(ids: list[str]) -> str:
    """``steps.csv`` holds no counted rows of the cases ``ids``."""
    return f"steps.csv lacks the counted rows of {_ids(ids)}"


def _why_words(arm: dict[str, Any]) -> str:
    """Why ``arm`` (``repetition_noise``'s) is not measured, in a finding's words."""
    if arm["why"] == "steps missing":
        return (_missing_words(arm["missing_steps"]) + ", which leaves fewer than the 2 "
                "repetitions the measure compares")
    return WHY_WORDS[arm["why"]]


def _arms(n: int) -> str:
    return f"{n} arm-codec pair{'' if n == 1 else 's'}"


def _label(arm: dict[str, Any], arms: list[dict[str, Any]]) -> str:
    """``send/msgpack``: ``arm``'s arm and codec, and its transport and model where the
    workload's ``arms`` differ in them."""
    keys = ["arm", "codec"] + [k for k in ("transport", "model")
                               if len({str(a.get(k)) for a in arms}) > 1]
    return "/".join(str(arm.get(k)) for k in keys)


def noisy(arm: dict[str, Any]) -> list[str]:
    """Which of ``arm``'s measures (``repetition_noise``'s) are over
    ``NOISY_REP_BLOCK_CV``: ``step times``, ``floor``, in that order."""
    return [w for w, k in (("step times", "step_ns_rep_block_cv"),
                           ("floor", "floor_step_ns_rep_block_cv"))
            if arm[k] is not None and arm[k] > NOISY_REP_BLOCK_CV]


def _standout_words(arm: dict[str, Any]) -> str:
    out = arm["outlier"]
    return (f"`{out['case_id']}` stands out: its blocks sit a median "
            f"{_pct(out['deviation'])} % from the other repetitions'" if out else "")


def _noisy_words(measured: list[dict[str, Any]], arms: list[dict[str, Any]]) -> str:
    """The verdict of a workload's ``measured`` arms (of all its ``arms``) against
    ``NOISY_REP_BLOCK_CV``, arm by arm: under it, or the arms over it with their
    figures and the repetition that stands out (``_outlier``)."""
    limit = f"{NOISY_REP_BLOCK_CV * 100:g} %"
    over = [a for a in measured if noisy(a)]
    if not over:
        return f": under the {limit} that marks noise"
    named = []
    for a in over:
        parts = ([f"{_pct(a['step_ns_rep_block_cv'])} %"] if "step times" in noisy(a)
                 else []) + ([f"its floor's {_pct(a['floor_step_ns_rep_block_cv'])} %"]
                             if "floor" in noisy(a) else [])
        standout = _standout_words(a) if "step times" in noisy(a) else ""
        named.append(f"`{_label(a, arms)}` ({', '.join(parts)}"
                     + (f"; {standout}" if standout else "") + ")")
    what = list(dict.fromkeys(w for a in over for w in noisy(a)))
    return (f": over the {limit} that marks noise in " + " and ".join(named)
            + ": the machine may be noisy, and " + ("its " if len(over) == 1 else "their ")
            + " and ".join(what) + " with it")


def _measured_words(measured: list[dict[str, Any]], arms: list[dict[str, Any]]) -> str:
    """The clause of a workload's measured arms (of its ``arms``): the pooled median
    over their blocks, the range of the arms' medians, the floor's (or why it is
    absent), the cases left out for want of step rows, and the verdict
    (``_noisy_words``)."""
    total = len(arms)
    reps = sorted({m["compared"] for m in measured})
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
    if floors:
        floor_pooled = _median(np.concatenate([m["floor_block_cvs"] for m in floors]))
        text += (f", its floor's by a median {_pct(floor_pooled)} % "
                 "(`floor_step_ns_rep_block_cv`)")
    else:
        whys = dict.fromkeys(FLOOR_WHY_WORDS[m["floor_why"]] for m in measured)
        text += ", no floor figure: " + "; ".join(whys)
    missing = [c for m in measured for c in m["missing_steps"]]
    if missing:
        text += f" ({_missing_words(missing)}: left out)"
    return text + _noisy_words(measured, arms)


def _head(workload: str, own: list[float]) -> str:
    """A replay workload's finding's opening: its cases' ``step_ns_block_cv`` ``own``
    (ratios, those recorded) are the trace's spread as well as the machine's."""
    if not own:
        return (f"On `{workload}` the step times vary with the trace's batches (no case "
                "recorded a `step_ns_block_cv`)")
    return (f"On `{workload}` the step times vary with the trace's batches, so their "
            f"{STEP_BLOCK}-step block means do too (`step_ns_block_cv` {_span(own)}, the "
            "workload's spread as well as the machine's, not held to the "
            f"{NOISY_STEP_BLOCK_CV * 100:g} % noise threshold)")


def _workload_line(workload: str, arms: list[dict[str, Any]], recorded: int) -> str:
    """One replay workload's finding (``replay_noise_findings``); ``recorded``: its
    cases that carry a block-CV warning an older run recorded."""
    cases = sum(a["repetitions"] for a in arms)
    head = _head(workload, [v for a in arms for v in a["step_ns_block_cv"]])
    measured = [a for a in arms if a["why"] is None]
    missed = [a for a in arms if a["why"] is not None]
    whys = list(dict.fromkeys(_why_words(a) for a in missed))
    if measured:
        text = f"{head}; {_measured_words(measured, arms)}"
        if missed:
            text += (f"; not measured for {_arms(len(missed))}: " + "; ".join(whys))
    else:
        text = f"{head}; the machine's own share cannot be measured: " + "; ".join(whys)
    if recorded:
        text += (f" ({recorded} of its {cases} case{'' if cases == 1 else 's'} "
                 f"carr{'ies' if recorded == 1 else 'y'} the \"may be noisy\" warnings "
                 "the run recorded from that spread, listed under Measurement warnings "
                 "and not counted as noise)")
    return text + "."


def replay_noise_findings(results) -> list[str]:
    """One finding per replay workload of ``results`` (a ``results.Results``) with a
    counted step: that its block CV is the trace's as well as the machine's, with its
    range over the cases (where they recorded one), then the machine's share measured
    across repetitions (``repetition_noise``: the median of the per-block CVs over
    every measured arm, the range of the arms' medians where there are several, the
    floor's or why it is absent, and each arm over ``NOISY_REP_BLOCK_CV`` with the
    repetition that stands out), or why it cannot be, and how many cases carry a
    block-CV warning recorded by an older run; a workload with neither a recorded
    block CV nor step rows (a streamed ``soak``) gets none. E.g. ``On `trace=azure-conv:30` the
    step times vary with the trace's batches, ...; across the 3 repetitions of its
    arm-codec pair, ..., a 50-step block's mean step time varied by a median 46.2 %
    (...): over the 10 % that marks noise in `send/msgpack` (46.2 %; ...): the machine
    may be noisy, and its step times with it.`` ``[]`` without such a workload. Raises
    nothing."""
    arms = repetition_noise(results)
    cases = results.finished().cases
    steps = results.finished().steps
    stepped = set(steps["case_id"]) if "case_id" in steps.columns else set()
    out = []
    for workload in dict.fromkeys(a["workload"] for a in arms):
        mine = [a for a in arms if a["workload"] == workload]
        if not any(a["step_ns_block_cv"] or stepped.intersection(a["case_ids"])
                   for a in mine):
            continue  # no block CV and no step rows (a streamed soak): nothing to say
        recorded = 0
        if "warnings" in cases.columns:
            of = cases[cases["workload"] == workload]["warnings"]
            recorded = sum(any(map(workload_spread_line, listed(w))) for w in of)
        out.append(_workload_line(str(workload), mine, recorded))
    return out


def noisy_arm_warnings(results) -> dict[str, list[str]]:
    """The measurement warnings of the cases of each replay arm whose repetitions'
    spread is over ``NOISY_REP_BLOCK_CV`` (``repetition_noise``, ``noisy``), by case
    id: the step times' (``across the 3 repetitions of its arm, its 50-step block
    means vary by a median 46.2 % (`step_ns_rep_block_cv`, > 10 %): the machine may be
    noisy``, and on the repetition that stands out ``; this repetition stands out: its
    blocks sit a median 52.0 % from the others'``) and the floor's (ending
    ``summary.FLOOR_NOISE_WORDS``, a noisy floor's, as ``_warning_kinds`` counts them).
    The findings of one run count them. For ``results`` of one run: of several, whose
    runs may share case ids, ``noisy_arm_warnings_by_run`` keeps each run's apart
    (here they would be pooled). ``{}`` without such an arm, or where ``results``
    holds no step rows. A run's end gives the same lines without pandas
    (``run_noisy_arm_warnings``). Raises nothing."""
    out: dict[str, list[str]] = {}
    for (_, cid), lines in noisy_arm_warnings_by_run(results).items():
        out.setdefault(cid, []).extend(lines)
    return out


def noisy_arm_warnings_by_run(results) -> dict[tuple[Any, str], list[str]]:
    """``noisy_arm_warnings`` by run and case id (``(run_id, case_id)``; the run
    ``None`` where the cases carry none), as the report's Measurement warnings list
    them and compare them with the run's end's (``run_end_differences``): each arm is
    one run's (``GROUP_COLUMNS``), so two runs with the same case ids keep their own
    lines. Raises nothing."""
    if not hasattr(results, "steps"):
        return {}
    return _arm_warnings(repetition_noise(results))


def _arm_warnings(arms: list[dict[str, Any]]) -> dict[tuple[Any, str], list[str]]:
    """``noisy_arm_warnings_by_run`` of ``arms`` (``repetition_noise``'s, or
    ``arm_noise``'s): (run id, case id) -> lines."""
    from ipc_bench.analysis.summary import FLOOR_NOISE_WORDS

    out: dict[tuple[Any, str], list[str]] = {}
    for a in arms:
        if a["why"] is not None or not noisy(a):
            continue
        for cid in a["case_ids"]:
            lines = out.setdefault((a.get("run_id"), cid), [])
            head = f"across the {a['compared']} repetitions of its arm, its {STEP_BLOCK}-step"
            if "step times" in noisy(a):
                standout = (a["outlier"] or {}).get("case_id") == cid
                lines.append(
                    f"{head} block means vary by a median "
                    f"{_pct(a['step_ns_rep_block_cv'])} % (`step_ns_rep_block_cv`, > "
                    f"{NOISY_REP_BLOCK_CV * 100:g} %): the machine may be noisy"
                    + (f"; this repetition stands out: its blocks sit a median "
                       f"{_pct(a['outlier']['deviation'])} % from the others'"
                       if standout else ""))
            if "floor" in noisy(a):
                lines.append(
                    f"{head} mean floor step times vary by a median "
                    f"{_pct(a['floor_step_ns_rep_block_cv'])} % "
                    f"(`floor_step_ns_rep_block_cv`, > {NOISY_REP_BLOCK_CV * 100:g} %): "
                    f"the machine may be noisy, and {FLOOR_NOISE_WORDS}")
    return out


def _flag(text: str) -> bool:
    """A CSV cell of a 0/1 column as pandas' ``astype(bool)`` reads it (an empty one,
    NaN, true)."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    return bool(float(text or "nan"))


def _csv_rows(path: Path, value: str, order: str, ids: set[str],
              counted: bool = False) -> _Rows:
    """``_Rows`` of the CSV file ``path`` (``steps.csv``, ``floor.csv``) read with the
    csv module, of the cases ``ids``: its ``value`` column in ``order``'s order, only
    the rows whose ``counted`` is true where ``counted``. A row without the header's
    fields, or whose figures are not numbers, is left out (as ``results.load`` leaves
    it); a file without those columns gives no rows. Raises ``OSError``, and
    ``ValueError`` where the file cannot be read as CSV text."""
    parts: dict[tuple[Any, str], tuple[list[float], list[float]]] = {}
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        try:
            header = next(reader, [])
            need = ["case_id", order, value] + (["counted"] if counted else [])
            if not set(need) <= set(header):
                return _Rows({})
            at = [header.index(n) for n in need]
            for row in reader:
                if len(row) != len(header) or row[at[0]] not in ids:
                    continue
                try:
                    if counted and not _flag(row[at[3]]):
                        continue
                    o, v = float(row[at[1]] or "nan"), float(row[at[2]] or "nan")
                except ValueError:
                    continue
                got = parts.setdefault((None, row[at[0]]), ([], []))
                got[0].append(o)
                got[1].append(v)
        except csv.Error as exc:
            raise ValueError(f"cannot read {path}: {exc}") from None
    return _Rows({k: (np.array(o, dtype=float), np.array(v, dtype=float))
                  for k, (o, v) in parts.items()})


#: A finished replay case's field in ``summary.json`` where the run's end measured its
#: arms (``record_run_end_warnings``): the lines the run's end printed on it, a list
#: (``[]``: none); absent where it did not (a run before it, a timed replay, one
#: repetition).
RUN_END_FIELD = "run_end_arm_warnings"


def record_run_end_warnings(cases: Sequence[dict[str, Any]],
                            printed: dict[str, list[str]]) -> None:
    """Record, in place, on each finished replay case of ``cases`` (the run's summaries,
    before they are written the last time) the lines its run's end prints on it
    (``printed``: ``run_noisy_arm_warnings``' case id -> lines) as ``RUN_END_FIELD``,
    so that the report can say where its own, from the files as ``results.load``
    checked them, differ (``run_end_differences``). For a run whose end measured its
    arms only. Raises nothing."""
    from ipc_bench.analysis.results import case_unfinished

    for c in cases:
        if is_replay(c) and not case_unfinished(c) and isinstance(c.get("case_id"), str):
            c[RUN_END_FIELD] = list(printed.get(c["case_id"], ()))


def run_end_differences(results) -> list[str]:
    """The cases of ``results`` whose recorded run-end lines (``RUN_END_FIELD``)
    differ from the report's (``noisy_arm_warnings_by_run``, from the files as loaded
    and checked), one line each, compared run by run: ```ID`: the run's end printed 2
    lines on the repetitions of its arm, where the report finds 0`` (``... finds 2
    with other figures``; of several runs, ```ID` of run `RUN`: ...``): a ``steps.csv``
    or ``floor.csv`` changed after the run ended, or rows or cases that the loader's
    checks left out. ``[]`` where they agree or nothing was recorded (a value that is
    not a list is as none). Raises nothing."""
    cases = getattr(results, "cases", None)
    if cases is None or RUN_END_FIELD not in cases.columns:
        return []
    found = noisy_arm_warnings_by_run(results)
    runs = (list(cases["run_id"]) if "run_id" in cases.columns
            else [None] * len(cases))
    several = len(set(runs)) > 1
    out = []
    for run, cid, printed in zip(runs, cases["case_id"], cases[RUN_END_FIELD]):
        if not isinstance(printed, (list, tuple)):
            continue
        printed = [str(line) for line in printed]
        mine = found.get((run, cid), [])
        if printed != mine:
            out.append(f"`{cid}`" + (f" of run `{run}`" if several else "")
                       + f": the run's end printed {len(printed)} "
                       f"line{'' if len(printed) == 1 else 's'} on the repetitions of its "
                       f"arm, where the report finds {len(mine)}"
                       + (" with other figures" if len(printed) == len(mine) else ""))
    return out


def run_noisy_arm_warnings(cases: Sequence[dict[str, Any]],
                           run_dir: Path) -> dict[str, list[str]]:
    """``noisy_arm_warnings`` of the run in ``run_dir`` as it ends, without pandas (a
    measuring run imports none): ``cases``, its ``summary.json`` case entries (those
    that did not finish, ``results.case_unfinished``, left out, as ``Results.finished``
    leaves them), the counted ``step_ns`` of its ``steps.csv`` by ``seq`` and its
    ``floor.csv``'s ``floor_step_ns`` by ``i``, read with the csv module
    (``_csv_rows``); the same figures and lines as the report's on the folder read back
    (``results.load``), whose checks a run's own files pass. Case id -> lines; ``{}``
    without a noisy arm. Raises ``OSError`` and ``ValueError`` where a file cannot be
    read."""
    from ipc_bench.analysis.results import case_unfinished

    cases = [c for c in cases if not case_unfinished(c)]
    ids = {c["case_id"] for c in cases if is_replay(c) and isinstance(c.get("case_id"), str)}
    if not ids:
        return {}
    steps = _csv_rows(Path(run_dir) / "steps.csv", "step_ns", "seq", ids, counted=True)
    floor_path = Path(run_dir) / "floor.csv"
    floor = (_csv_rows(floor_path, "floor_step_ns", "i", ids) if floor_path.is_file()
             else _Rows({}))
    found = _arm_warnings(arm_noise(cases, steps, floor))
    return {cid: lines for (_, cid), lines in found.items()}  # one run
