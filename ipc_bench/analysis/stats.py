"""Paired comparison statistics over repetitions (one sample per repetition).

Steps within a case are autocorrelated (caches, allocator, frequency), so a case's
per-step figures are *one* sample; the unit of replication is the repetition. Runs
with ``--repeat N`` (N >= 2) run the arms of repetition ``r`` next to each other, in
orders counterbalanced over the repetitions (``ipc_bench.harness.scenario.grid``: each
arm first in as many repetitions as N allows, the rows' sequence shuffled), and
repetition ``r`` of arm A is paired with repetition ``r`` of arm B: the pair shares
machine conditions, so the analysis works on per-pair ratios ``B_r / A_r`` and
differences ``A_r - B_r``. Counterbalancing keeps running first or second from
favouring one arm; the shuffle keeps one burst of machine noise that spans a pair
boundary from pushing two neighbouring ratios the same way as a fixed A B, B A order
would.

Reported per metric and arm: the median and the interquartile range (numpy's
``linear`` percentiles, type 7 of Hyndman & Fan, "Sample quantiles in statistical
packages", The American Statistician 50(4), 1996). Per pair of arms:

- ``ratio_median``: the median of the per-pair ratios ``treatment / baseline``;
- ``ratio_ci``: a 95 % confidence interval for the ratio, by ``method``:

  * ``t`` (default): Student's t-interval on the log ratios, exponentiated, i.e. the
    interval of the geometric-mean ratio, ``exp(mean(log r) +/- t_{n-1, 0.975} *
    sd(log r) / sqrt(n))``. Summarising ratios with the geometric mean is what
    Fleming & Wallace, "How not to lie with statistics: the correct way to summarize
    benchmark results" (CACM 29(3), 1986) argue for; the t-interval on paired
    log-transformed data is the standard analysis of a ratio in paired designs
    (e.g. the bioequivalence test of Schuirmann, J. Pharmacokin. Biopharm. 15(6),
    1987). It assumes the log ratios are roughly normal, which per-repetition means
    over hundreds of steps are (central limit theorem); it is exact for n >= 2.
    The interval's centre is the geometric mean, which equals the median ratio
    when the log ratios are symmetric.
  * ``bootstrap``: percentile bootstrap of the median ratio (Efron & Tibshirani, An
    Introduction to the Bootstrap, 1993, ch. 13), resampling pairs 10,000 times
    with a fixed seed, so the same samples always give the same interval. With few
    pairs the resampled medians take a handful of values and the interval is far
    too narrow: on iid data a 95 % interval excludes the true median 50 % of the
    time at 2 pairs, 25 % at 3, 11 % at 4, 12.5 % at 7 and still 9.3 % at 23
    (``BOOTSTRAP_MIN_PAIRS`` gives the figures), so it gives no verdict below
    ``BOOTSTRAP_MIN_PAIRS`` (34) pairs.
  * ``sign``: the distribution-free interval of the median ratio from the order
    statistics of the sign test (Conover 1999, sec. 3.2); coverage >= 95 % whatever
    the distribution, so one descheduled repetition cannot widen it much, which the
    t-interval's standard deviation does on a loaded machine. Needs >= 6 pairs;
    its smallest two-sided p is 2/2^n (``sign_min_p``), so after Holm over the 7
    timed metrics it can find none significant below 9 pairs (``sign_pairs_needed``,
    ``unreachable_note``, which the comparison block prints).

- ``diff_mean`` / ``diff_ci``: the paired difference ``baseline - treatment`` (what
  ``treatment`` saves; for ``step_ns_mean`` that is ns saved per step) with the same
  method on the raw differences (t-interval of the mean, or bootstrap or sign-test
  interval of the median);
- ``p_value``: the method's two-sided p-value for "no difference" (ratio 1, or
  difference 0 where a ratio is undefined): Student's t test on the log ratios, the
  exact sign test, or the bootstrap's share of resampled medians on the far side
  of 1, doubled;
- ``significant``: ``False`` when the ratio interval contains 1, worded "no
  significant difference" when the interval lies within +/-10 % (``DETECTABLE``: a
  factor of 1.1 either way, 0.9091 to 1.1) and
  "inconclusive: ..." when it reaches further (``inconclusive``: too few repetitions
  or too noisy to tell a 10 % difference from none, so no reassurance; the same
  after Holm's adjustment); ``None`` with fewer pairs than the method needs
  (``min_pairs``: t 2, sign 6, bootstrap ``BOOTSTRAP_MIN_PAIRS``), worded "no
  verdict: <method> needs >= N pairs, have n".

Several metrics compared at once (``compare_cases``) are one family: each verdict
there comes from Holm's step-down adjustment of the metrics' p-values (Holm, "A
simple sequentially rejective multiple test procedure", Scand. J. Statistics 6(2),
1979; ``holm``), so the chance that *any* timed metric of a comparison is called
significant when none differs stays at most 5 %. The payload bytes are outside the
family: for a given seed they are exact, not samples of a noisy quantity, so they get
no p-value and the verdict "exact: ..." under every method (``exact``).

An A/A comparison (one arm against a copy of itself) is flagged significant 5 % of the
time at 95 % by construction; ``scripts/aa_false_positive.py`` measures that rate
(per metric, before the adjustment, and over the family, after it).

This module owns every paired statistic of the project, and one convention: ratios
are ``treatment / baseline`` and differences ``baseline - treatment``; for send against
cached, ``cached / send`` and ``send - cached`` (what ``cached`` saves). Two front ends
pair cases the same way (``arms_by_repetition``) and compute with ``compare_paired``:

- ``compare_cases``: the summary dicts of one run (the CLI's comparison block after
  ``--repeat``, ``--aa``, ``summary.json`` ``comparisons``; no pandas);
- ``paired`` / ``summarize_pairs``: a ``Results.cases`` table (pandas), one row per
  send/cached pair and one per group of pairs (``ipc_bench.report.findings``,
  ``ipc_bench.report.blocks``, ``ipc_bench.report.plots``),
  so the report's intervals are the CLI's for the same run and method.

Wherever a ratio of two arms is printed it is ``PairedComparison.ratio`` with its
interval (``paired_ratio``: the geometric mean of the per-repetition ratios for ``t``,
their median otherwise), named by ``ratio_phrase``: the terminal's ``cached/send`` line
under each case table (``ipc_bench.report.tables``) as much as the comparison block
and the report. The arms' means divided by each other is another number, which
differs with noisy repetitions; nothing prints it as the arms' ratio.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from ipc_bench.analysis.cores import TIMING_UNITS, footnote, marked_comparison_note
from ipc_bench.analysis.frames import frame_records
from ipc_bench.analysis.metrics import metric
from ipc_bench.analysis.pace import all_load_bound, as_record
from ipc_bench.engine.config import CACHED, POLICIES, SEND

CONFIDENCE = 0.95
METHODS = ("t", "bootstrap", "sign")
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20291  # fixed: the same samples always give the same interval

NO_DIFFERENCE = "no significant difference"
#: The verdict of a Holm-adjusted comparison with no significant difference whose
#: unadjusted ratio interval excludes 1 (``unadjusted_excludes_one``) and stays within
#: ``DETECTABLE``: the interval printed beside it is not the adjusted test's, which the
#: verdict says (the tables' line under them, ``report.tables.HOLM_NOTE``, says why).
#: The words of the report's findings and of their legend
#: (``report.findings.findings_legend``), which defines them; the terminal's comparison
#: block and ``summary.json``'s ``comparisons`` give the same. (Summaries written
#: before recorded ``no significant difference after Holm adjustment``, and before that
#: ``no significant difference``; ``verdict_of`` reads either as this.)
NOT_SIGNIFICANT_HOLM = "not significant after Holm"

#: How the verdict of a Holm-adjusted comparison with no significant difference whose
#: unadjusted ratio interval excludes 1 and reaches beyond ``DETECTABLE`` starts
#: (``holm_inconclusive_verdict``); the comparison block's cell for it, in the words of
#: the findings' legend as ``NOT_SIGNIFICANT_HOLM`` (summaries written before recorded
#: ``inconclusive: not significant after Holm adjustment; ...``).
INCONCLUSIVE_HOLM = f"inconclusive: {NOT_SIGNIFICANT_HOLM}"

#: The smallest difference a verdict of no difference must be able to see: a
#: comparison with no significant difference whose ratio interval reaches below ``1 -
#: DETECTABLE`` or above ``1 + DETECTABLE`` cannot tell a 10 % difference from none, so
#: its verdict is "inconclusive" (too few repetitions or too noisy), never "no
#: significant difference", which would read as reassurance (an A/A check that passed).
#: 10 %: send's cost is a few % of a step at most, and a 10 % swing of tokens/s would
#: change a review's conclusion. The band is a factor of ``1 + DETECTABLE`` either way
#: (symmetric on the log scale): a ratio in [1/1.1, 1.1] = [0.9091, 1.1], a change of
#: -9.09 % to +10 %, which is what "1.1x either way" means in every message. A ratio
#: and its reciprocal (cached/send and send/cached; a share send/cached - 1) therefore read alike.
DETECTABLE = 0.10


def geometric_mean(values: np.ndarray) -> float:
    """The geometric mean of ``values`` (float array, shape (n,), every one > 0):
    exp of the mean log, except that values all equal give that value itself, not
    its round trip through ``log`` and ``exp`` (5646.5 would come back
    5646.500000000003, shown 5,647 beside a table's 5,646: exact bytes stay exact)."""
    if values.size and np.all(values == values[0]):
        return float(values[0])
    return float(np.exp(np.mean(np.log(values))))


def inconclusive(low: Optional[float], high: Optional[float],
                 detectable: float = DETECTABLE) -> bool:
    """Whether a ratio interval ``[low, high]`` reaches beyond a factor of ``1 +
    detectable`` either way (below ``1 / (1 + detectable)``, 0.9091, or above ``1 +
    detectable``, 1.1: the "1.1x either way" of every message), so that a comparison
    with no significant difference cannot rule out a difference of that size. The band is
    symmetric on the log scale, so ``[low, high]`` and its reciprocal ``[1/high, 1/low]``
    read alike (up to rounding at the edge); a share ``s`` (send/cached - 1) is read as
    the ratio ``1 + s`` (``send_cost.too_wide``). False without an interval (``None`` or
    NaN)."""
    if low is None or high is None or low != low or high != high:
        return False
    factor = 1.0 + detectable
    return low * factor < 1.0 or high > factor


#: What an inconclusive difference means, the same words wherever one is worded (the
#: findings' time clauses, the share lines, the terminal's step-time lines): a
#: difference whose interval holds 0 % reads "within noise" only where that interval
#: also stays within 1.1x either way (``inconclusive``), and this beyond it.
INCONCLUSIVE_CLAUSE = (f"inconclusive: the interval reaches beyond {1 + DETECTABLE:g}x "
                       f"either way, too few repetitions or too noisy to tell a "
                       f"{100 * DETECTABLE:.0f} % difference from none")


#: Interval ends of a ratio beyond these are printed as ``>1000`` and ``<0.001``
#: (``ratio_interval``): with two or three noisy repetitions a Student-t interval of the
#: log ratio can run to 1e12 or 1e-12 (an end printed 0.000 is such a positive end
#: rounded), and its digits say nothing but that the interval is unbounded in practice.
RATIO_END_MAX = 1000.0
RATIO_END_MIN = 0.001


#: The most decimals an interval end is printed with where its usual decimals would
#: round it onto the null (``interval_end``): beyond them such an end is printed as a
#: bound on the null's side, ``<1`` or ``>0``.
NULL_END_DIGITS = 6


#: The noise band's edges as the messages and docs print them (``DETECTABLE``): a ratio
#: within [0.9091, 1.1], a change in percent within [-9.09, +10] %. A printed interval
#: end is read against these: one is printed with the decimals that put it on the
#: band's side it truly lies on, and onto an edge only where it is that edge
#: (``end_digits``).
BAND_SHOWN = {"ratio": (0.9091, 1.1), "percent": (-9.09, 10.0)}


def band_side(value: float, band: str) -> int:
    """Where an interval end ``value`` lies against the noise band's exact edges: -1
    below it, 1 above it, 0 strictly within, 2 on an edge (``in_band``'s edges: a
    ratio, ``band`` ``"ratio"``, against 1/1.1 and 1.1; a change in percent,
    ``"percent"``, a share of cached's step alike, as the ratio 1 + value/100)."""
    ratio = value if band == "ratio" else 1.0 + value / 100.0
    factor = 1.0 + DETECTABLE
    if ratio * factor == 1.0 or ratio == factor:
        return 2
    return -1 if ratio * factor < 1.0 else 1 if ratio > factor else 0


def in_band(value: float, band: str) -> bool:
    """Whether an interval end ``value`` lies within the noise band, edges included
    (``band_side``): ``inconclusive``'s rule for one end."""
    return band_side(value, band) in (0, 2)


def _shown_side(shown: float, band: str) -> int:
    """``band_side`` of a printed end ``shown``, read against the band's edges as
    printed (``BAND_SHOWN``: 0.9091 and 1.1, -9.09 and +10 %)."""
    low, high = BAND_SHOWN[band]
    if shown in (low, high):
        return 2
    return -1 if shown < low else 1 if shown > high else 0


def _shown_side_ok(value: float, shown: float, null: float, band: Optional[str]) -> bool:
    """Whether ``shown`` (``value`` rounded) reads on ``value``'s side of ``null`` (or
    at it only where ``value`` is) and, with a ``band``, on ``value``'s side of the
    band's printed edges, or onto one only where ``value`` is on the band's edge."""
    if value != null and shown == null:
        return False
    return band is None or _shown_side(shown, band) == band_side(value, band)


def end_digits(value: float, digits: int, null: float = 0.0,
               band: Optional[str] = None) -> Optional[int]:
    """The decimals an interval end ``value`` is printed with (``interval_end``):
    ``digits``, or where ``value`` rounded to ``digits`` decimals lands on ``null``
    while it is not ``null`` (an upper end of 0.99999 printed ``1.000`` beside a
    verdict that the interval excludes 1), or, with a ``band`` (``"ratio"`` or
    ``"percent"``), on the other side of the noise band's printed edge (or onto it)
    than ``value`` lies (``BAND_SHOWN``, ``in_band``: -9.0887 % printed ``-9.1``
    beyond -9.09 %, 1.1004 printed ``1.10``), the fewest more, up to
    ``NULL_END_DIGITS``, that show its side; ``None`` where even those do not (the end
    is then printed as a bound, ``<1``, ``>1.1``). An end equal to ``null`` (or NaN)
    keeps ``digits``."""
    if value == null or value != value:
        return digits
    for d in range(digits, max(digits, NULL_END_DIGITS) + 1):
        if _shown_side_ok(value, float(f"{value:.{d}f}"), null, band):
            return d
    return None


def interval_end(value: float, digits: int, null: float = 0.0, sign: bool = False,
                 band: Optional[str] = None, grouped: bool = False) -> str:
    """One end of an interval to ``digits`` decimals (``+`` signed with ``sign``),
    never rounded onto the interval's ``null`` (1 for a ratio, 0 for a change or a
    difference) unless it is the null, nor, with a ``band`` (``"ratio"``,
    ``"percent"``), across or onto the noise band's printed edge (``end_digits``):
    ``interval_end(0.99999, 3, 1.0)`` is ``0.99999``, ``interval_end(-4e-5, 1,
    sign=True)`` is ``-0.00004``, ``interval_end(1.0, 3, 1.0)`` is ``1.000``,
    ``interval_end(-9.0887, 1, sign=True, band="percent")`` is ``-9.089``,
    ``interval_end(1.1004, 2, 1.0, band="ratio")`` is ``1.1004``; one within
    ``0.5e-6`` of the null, its side and the null: ``<1``, ``>0``; one that close
    beyond the band's upper edge, ``>1.1`` (``>+10``). So a printed interval excludes
    the null, and reaches beyond the band, exactly where its true ends do. ``grouped``:
    thousands separators (``+1,234.5``)."""
    d = end_digits(value, digits, null, band)
    if d is None:
        if float(f"{value:.{NULL_END_DIGITS}f}") == null:
            return f"{'<' if value < null else '>'}{null:g}"
        low, high = BAND_SHOWN[band]
        edge = f"{high if value > null else low:{'+' if sign else ''}g}"
        if in_band(value, band):  # between the exact edge and the printed one
            return edge
        return f"{'>' if value > null else '<'}{edge}"
    return f"{value:{'+' if sign else ''}{',' if grouped else ''}.{d}f}"


def point_text(value: float, digits: int, null: float = 0.0, sign: bool = False,
               grouped: bool = False) -> str:
    """A point (the ratio, change, difference or share an interval is around, or one
    with none) to ``digits`` decimals (``+`` signed with ``sign``), never rounded onto
    ``null`` (1 for a ratio, 0 for a change, difference or share) unless it is it: the
    null rule of ``interval_end``, without the band's (a point is not read against it):
    ``point_text(1.000012, 2, 1.0)`` is ``1.00001``, ``point_text(-0.02, 1, sign=True)``
    is ``-0.02``, not ``-0.0``, ``point_text(0.004, 2)`` is ``0.004``, not ``0.00``;
    ``point_text(1.0, 3, 1.0)`` is ``1.000``. So a point beside an interval that
    excludes the null shows the side that interval is on. ``grouped``: thousands
    separators (``1,534.00``, ``-1,234.5``)."""
    return interval_end(value, digits, null, sign, grouped=grouped)


def shown_end(value: float, digits: int, null: float = 0.0,
              band: Optional[str] = None) -> float:
    """An interval end as ``interval_end`` prints it, as a number: ``value`` rounded to
    its ``end_digits``, or ``value`` itself where it is printed as a bound (``<1``: its
    side of the null is all it shows). For readings of an interval "as printed": the
    shown end is on the same side of ``null`` as ``value``, or at it only where
    ``value`` is, and with a ``band`` within the band's printed edges exactly where
    ``value`` is within the band."""
    d = end_digits(value, digits, null, band)
    return value if d is None else round(value, d)


def ratio_end(value: float, digits: int = 3, percent: bool = False) -> str:
    """One end of a ratio's interval as ``ratio_interval`` prints it: ``0.920`` (to
    ``digits`` decimals), ``>1000`` above ``RATIO_END_MAX``, ``<0.001`` below
    ``RATIO_END_MIN``; with ``percent``, as a change in percent to one decimal:
    ``-8.0``, ``>+99900.0``, ``<-99.9``. An end that those decimals would round onto 1
    (0 %) while it is not 1 gets more (``interval_end``): ``0.99999``, ``1.00001``,
    ``-0.00004``, ``<1``, ``>0``; an end of exactly 1 prints ``1.000`` (``+0.0``); so
    does one that they would put across or onto the noise band's printed edge
    (``BAND_SHOWN``): ``0.9092`` (not ``0.909``), ``1.1004`` (not ``1.100``),
    ``-9.089`` (not ``-9.1``), ``+10.04`` (not ``+10.0``)."""
    if percent:
        if value > RATIO_END_MAX:
            return f">{100 * (RATIO_END_MAX - 1):+.1f}"
        if value < RATIO_END_MIN:
            return f"<{100 * (RATIO_END_MIN - 1):+.1f}"
        return interval_end(100 * (value - 1), 1, 0.0, sign=True, band="percent")
    if value > RATIO_END_MAX:
        return f">{RATIO_END_MAX:g}"
    if value < RATIO_END_MIN:
        return f"<{RATIO_END_MIN:g}"
    return interval_end(value, digits, 1.0, band="ratio")


def ratio_interval(low: float, high: float, digits: int = 3, percent: bool = False) -> str:
    """A ratio's interval wherever one is printed (the terminal's tables and ratio lines,
    the report's tables and findings, verdicts): ``[0.920, 1.012]``; an end beyond
    ``RATIO_END_MAX`` or ``RATIO_END_MIN`` bounded (``ratio_end``): ``[<0.001, >1000]``;
    with ``percent``, as changes in percent: ``[-8.0, +1.2] %``, ``[<-99.9, >+99900.0]
    %``; an end never rounded onto 1 (0 %) unless it is 1: ``[0.812, 0.99999]``,
    ``[-18.8, -0.00004] %`` (``ratio_end``)."""
    text = f"[{ratio_end(low, digits, percent)}, {ratio_end(high, digits, percent)}]"
    return text + " %" if percent else text


def inconclusive_verdict(low: float, high: float, detectable: float = DETECTABLE,
                         confidence: float = CONFIDENCE) -> str:
    """The verdict of a comparison with no significant difference whose ratio interval
    is too wide (``inconclusive``), e.g. "inconclusive: the 95 % interval [-81.2,
    +1175.0] % reaches beyond 1.1x either way: too few repetitions or too noisy to
    tell a 10 % difference from none"."""
    pct = f"{100 * detectable:.0f} %"
    return (f"inconclusive: the {100 * confidence:.0f} % interval "
            f"{ratio_interval(low, high, percent=True)} reaches beyond "
            f"{1 + detectable:g}x either way: too few repetitions or "
            f"too noisy to tell a {pct} difference from none")


def holm_inconclusive_verdict(low: float, high: float,
                              confidence: float = CONFIDENCE) -> str:
    """The verdict of a Holm-adjusted comparison with no significant difference whose
    unadjusted ratio interval ``[low, high]`` excludes 1 (``unadjusted_excludes_one``)
    and reaches beyond ``DETECTABLE`` (``inconclusive``): its reason is the adjustment,
    not the interval, which may lie wholly beyond 1.1x either way, e.g. "inconclusive: not
    significant after Holm; the 95 % interval [-89.2, -30.4] % does not include 0 % but
    is unadjusted"."""
    return (f"{INCONCLUSIVE_HOLM}; the {100 * confidence:.0f} % interval "
            f"{ratio_interval(low, high, percent=True)} does not include 0 % but is "
            "unadjusted")


def holm_verdict(m: dict[str, Any]) -> Optional[str]:
    """The verdict of a recorded comparison metric ``m`` (``PairedComparison.to_dict``)
    that Holm's adjustment found not significant while its unadjusted ratio interval
    excludes 1 (``unadjusted_excludes_one``): ``NOT_SIGNIFICANT_HOLM`` where that interval
    stays within ``DETECTABLE``, else ``holm_inconclusive_verdict``; ``None`` for any
    other metric."""
    if not unadjusted_excludes_one(m):
        return None
    low, high = m["ratio_ci_low"], m["ratio_ci_high"]
    if not inconclusive(low, high):
        return NOT_SIGNIFICANT_HOLM
    return holm_inconclusive_verdict(low, high, m.get("confidence") or CONFIDENCE)


#: Metrics that a case of a codec does not perform, so that no ratio or comparison of
#: them is printed: the single-process baseline (codec ``none``: scheduler and runner in
#: one process) serializes nothing and sends no bytes, so its encode and decode times
#: are a few clock reads around no work (0.2 against 4.3 µs, a ratio of 20 that means
#: nothing) and its bytes, token-id bytes included, are 0: the tables show ``-``; with
#: no scheduler -> runner message it has no send - cached difference of one either (the
#: frontend table's ``send_saving_*``, 0 in its summary).
NOT_PERFORMED: dict[str, frozenset[str]] = {
    "none": frozenset({"encode_ns_per_step", "decode_ns_per_step",
                       "sched_encode_ns_per_step", "runner_decode_ns_per_step",
                       "sched_to_runner_payload_bytes_per_step",
                       "runner_to_sched_payload_bytes_per_step",
                       "sched_to_runner_wire_bytes_per_step",
                       "runner_to_sched_wire_bytes_per_step",
                       "decode_token_bytes_per_step", "prompt_chunk_bytes_per_step",
                       "send_saving_bytes_per_step",
                       "send_saving_share_of_control_plane"}),
}


def performed(key: str, codec: Any) -> bool:
    """Whether cases of ``codec`` perform what metric ``key`` measures
    (``NOT_PERFORMED``); a ratio of a metric not performed is left out."""
    return key not in NOT_PERFORMED.get(codec, ())


def _digest(record: dict[str, Any]) -> Optional[str]:
    d = record.get("schedule_digest")
    return d if isinstance(d, str) and d else None


def schedules_differ(pairs: Iterable[tuple[dict[str, Any], dict[str, Any]]]) -> bool:
    """Whether any ``(baseline, treatment)`` pair of case records ran different
    schedules: both carry a ``schedule_digest`` (``harness.oracle.ScheduleDigest``) and
    the two differ (a timed replay, whose batches follow wall-clock arrivals; async
    scheduling against sync, which starts a finished request's successor a step later). Their
    per-step bytes and times then differ by batch as well as by policy, so the
    difference is not the policy's alone. A record without a digest (the bare loop)
    tells nothing: False for it."""
    return any(_digest(a) is not None and _digest(b) is not None and _digest(a) != _digest(b)
               for a, b in pairs)


#: What a figure of one repetition (one send/cached pair) carries in its own text: a
#: single sample, no interval (the findings' paired tokens/s, the step-time share lines).
ONE_PAIR = "one repetition, no interval"


#: What send's new_token_ids add to a SchedulerOutput, per step: decode tokens and
#: prompt chunks re-sent during chunked prefill (``analysis.summary``: measured on
#: send's own frames, so it is the policy's share whatever the schedules).
TOKEN_BYTES_KEYS = ("decode_token_bytes_per_step", "prompt_chunk_bytes_per_step")


def token_ids_bytes(records: Iterable[dict[str, Any]]) -> Optional[float]:
    """Mean over ``records`` (send's cases) of the bytes per step its new_token_ids
    take (``TOKEN_BYTES_KEYS`` summed); ``None`` when no record has them."""
    values = []
    for r in records:
        parts = [r.get(k) for k in TOKEN_BYTES_KEYS]
        if all(isinstance(v, (int, float)) and v == v for v in parts):
            values.append(float(sum(parts)))
    return float(np.mean(values)) if values else None


def verdict_of(m: dict[str, Any]) -> str:
    """A recorded comparison's verdict (``PairedComparison.to_dict``, e.g. a
    ``summary.json`` ``comparisons`` metric): "inconclusive: ..." where it found no
    significant difference with a ratio interval reaching beyond ``DETECTABLE``
    (summaries written before that verdict existed say "no significant difference"
    there); ``NOT_SIGNIFICANT_HOLM`` where it found none after Holm's adjustment while its
    unadjusted ratio interval excludes 1 and stays within ``DETECTABLE``, and
    ``holm_inconclusive_verdict`` where that interval reaches beyond it (``holm_verdict``;
    summaries written before these verdicts say "no significant difference" or
    "inconclusive: the 95 % interval ... reaches beyond 1.1x either way" there, and those written
    before their present words "no significant difference after Holm adjustment" or
    "inconclusive: not significant after Holm adjustment; ..."); else its
    ``verdict``."""
    holm = holm_verdict(m)
    if holm is not None:
        return holm
    if m.get("significant") is False and inconclusive(m.get("ratio_ci_low"),
                                                      m.get("ratio_ci_high")):
        return inconclusive_verdict(m["ratio_ci_low"], m["ratio_ci_high"],
                                    confidence=m.get("confidence") or CONFIDENCE)
    return m["verdict"]


def unadjusted_excludes_one(m: dict[str, Any]) -> bool:
    """Whether a recorded comparison metric ``m`` (``PairedComparison.to_dict``) found
    no significant difference after Holm's adjustment while its unadjusted ratio
    interval excludes 1: its verdict comes from the adjusted p-value, the printed
    interval does not, so the two seem to disagree unless this is said."""
    low, high = m.get("ratio_ci_low"), m.get("ratio_ci_high")
    return (m.get("adjustment") == "holm" and m.get("significant") is False
            and m.get("p_value") is not None and m.get("p_adjusted") is not None
            and low is not None and high is not None and (low > 1 or high < 1))


def diff_disagrees(m: dict[str, Any]) -> bool:
    """Whether a recorded comparison metric ``m`` (``PairedComparison.to_dict``) has a
    difference interval on the other side of "no difference" from its ratio interval:
    one excludes 0 (difference) or 1 (ratio) and the other holds it. Both come from
    the same pairs but are separate intervals on different scales (the per-pair
    differences, the per-pair log ratios), and they part where a pair far from the
    others weighs more on one scale; the verdict follows the ratio's. ``False`` where
    either interval is missing."""
    r_lo, r_hi = m.get("ratio_ci_low"), m.get("ratio_ci_high")
    d_lo, d_hi = m.get("diff_ci_low"), m.get("diff_ci_high")
    if None in (r_lo, r_hi, d_lo, d_hi):
        return False
    return (r_lo <= 1 <= r_hi) != (d_lo <= 0 <= d_hi)


#: Fewest pairs for a bootstrap verdict: the smallest n from which the 95 %
#: percentile-bootstrap interval of the median (``bootstrap_median_interval``) wrongly
#: excludes the true median of iid data at most 8 % of the time. For odd n the
#: resampled median is an order statistic ``x_(j)`` with ``P(median* <= x_(j)) =
#: P(Binomial(n, j/n) >= (n+1)/2)``, so the interval is ``[x_(a), x_(b)]`` and its
#: error rate ``P(Binomial(n, 1/2) < a) + P(Binomial(n, 1/2) >= b)`` is exact; it
#: saw-tooths: n = 5: 6.2 %, 7: 12.5 %, 9: 3.9 %, 13: 9.2 %, 21: 7.8 %, 23: 9.3 %,
#: 25: 4.3 %, 33: 8.0 %, then at most 7.3 % (45) and falling. Even n, simulated (3,000
#: samples each, standard error 0.4 points): 2: 50 %, 4: 11 %, 6: 6.2 %, 8: 7.4 %, 22:
#: 6.9 %, 24 to 44: 4.9 % to 5.8 %. ``tests/analysis/test_stats.py`` recomputes the odd
#: n figures.
BOOTSTRAP_MIN_PAIRS = 34

#: What each method is called in a withheld verdict.
METHOD_NAMES = {"t": "the t-interval", "bootstrap": "the bootstrap",
                "sign": "the sign test"}


def median_iqr(values: Sequence[float]) -> tuple[float, float]:
    """(median, interquartile range) of ``values`` (type-7 quantiles).

    Raises ``ValueError`` on an empty sequence.
    """
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        raise ValueError("median_iqr of an empty sample")
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return float(med), float(q3 - q1)


def t_interval(values: Sequence[float], confidence: float = CONFIDENCE
               ) -> tuple[float, float, float]:
    """(mean, low, high): Student's t-interval of the mean of ``values``.

    ``mean +/- t_{n-1,(1+confidence)/2} * s / sqrt(n)`` with ``s`` the sample standard
    deviation (``ddof=1``). Raises ``ValueError`` with fewer than two values.
    """
    from scipy.special import stdtrit  # Student's t quantile: scipy.stats.t.ppf's own

    a = np.asarray(values, dtype=float)
    n = a.size
    if n < 2:
        raise ValueError(f"a t-interval needs at least 2 values, got {n}")
    mean = float(a.mean())
    sd = float(a.std(ddof=1))
    half = float(stdtrit(n - 1, (1 + confidence) / 2)) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def _bootstrap_medians(values: Sequence[float], resamples: int, seed: int) -> np.ndarray:
    """Medians of ``resamples`` resamples (with replacement) of ``values``, drawn from
    ``numpy.random.default_rng(seed)``."""
    a = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, a.size, size=(resamples, a.size))
    return np.median(a[idx], axis=1)


def bootstrap_median_interval(values: Sequence[float], confidence: float = CONFIDENCE,
                              resamples: int = BOOTSTRAP_RESAMPLES,
                              seed: int = BOOTSTRAP_SEED) -> tuple[float, float, float]:
    """(median, low, high): percentile-bootstrap interval of the median of ``values``.

    Resamples ``values`` with replacement ``resamples`` times from
    ``numpy.random.default_rng(seed)``; the bounds are the ``(1 - confidence) / 2``
    and ``(1 + confidence) / 2`` percentiles of the resampled medians. Raises
    ``ValueError`` with fewer than two values. Too narrow below ``BOOTSTRAP_MIN_PAIRS``
    values (``compare_paired`` gives no verdict there).
    """
    a = np.asarray(values, dtype=float)
    n = a.size
    if n < 2:
        raise ValueError(f"a bootstrap interval needs at least 2 values, got {n}")
    medians = _bootstrap_medians(a, resamples, seed)
    lo, hi = np.percentile(medians, [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2])
    return float(np.median(a)), float(lo), float(hi)


def sign_interval(values: Sequence[float], confidence: float = CONFIDENCE
                  ) -> tuple[float, float, float]:
    """(median, low, high): distribution-free interval of the median of ``values``.

    The sign-test interval ``[x_(k), x_(n-k+1)]`` of the order statistics, ``k`` the
    largest integer with ``P(Binomial(n, 1/2) <= k - 1) <= (1 - confidence) / 2``
    (Conover, Practical Nonparametric Statistics, 3rd ed., 1999, section 3.2): its
    coverage is at least ``confidence`` for any continuous distribution, outliers
    included. Raises ``ValueError`` when ``n`` is too small for any such interval
    (at 95 %: fewer than 6 values).
    """
    from scipy.special import bdtr  # the binomial CDF

    a = np.sort(np.asarray(values, dtype=float))
    n = a.size
    alpha_half = (1 - confidence) / 2
    k = 0
    while k + 1 <= n // 2 and bdtr(k, n, 0.5) <= alpha_half:
        k += 1
    if k == 0:
        raise ValueError(f"a {confidence:.0%} sign-test interval needs more values, got {n}")
    return float(np.median(a)), float(a[k - 1]), float(a[n - k])


def _interval(values: Sequence[float], method: str, confidence: float
              ) -> tuple[float, float, float]:
    if method == "t":
        return t_interval(values, confidence)
    if method == "bootstrap":
        return bootstrap_median_interval(values, confidence)
    if method == "sign":
        return sign_interval(values, confidence)
    raise ValueError(f"unknown interval method {method!r}; choose from {', '.join(METHODS)}")


def min_pairs(method: str, confidence: float = CONFIDENCE) -> int:
    """Fewest pairs for a verdict by ``method``: ``t`` 2 (exact for normal log ratios
    at any n; ``tests/analysis/test_stats.py`` simulates it), ``sign`` the fewest with
    an interval (6 at 95 %), ``bootstrap`` ``BOOTSTRAP_MIN_PAIRS`` (found by
    simulation at 95 %). Raises ``ValueError`` on an unknown method."""
    if method == "t":
        return 2
    if method == "bootstrap":
        return BOOTSTRAP_MIN_PAIRS
    if method != "sign":
        raise ValueError(f"unknown interval method {method!r}; choose from {', '.join(METHODS)}")
    from scipy.special import bdtr

    n = 2
    while bdtr(0, n, 0.5) > (1 - confidence) / 2:
        n += 1
    return n


def sign_min_p(n: int) -> float:
    """The smallest two-sided p-value the exact sign test can give with ``n`` pairs
    (all on one side): ``2 / 2**n``, at most 1 (0.031 at 6 pairs, 0.0039 at 9)."""
    return min(1.0, 2 * 0.5 ** n)


def sign_pairs_needed(family_size: int, confidence: float = CONFIDENCE) -> int:
    """Fewest pairs with which the sign test can call a metric significant after Holm's
    adjustment over ``family_size`` metrics: the smallest ``n`` with ``family_size *
    sign_min_p(n) <= 1 - confidence`` (Holm multiplies the smallest p by the family
    size): 6 for one metric, 9 for the seven timed metrics (7 x 2^-8 = 0.027)."""
    n = 1
    while max(1, family_size) * sign_min_p(n) > 1 - confidence:
        n += 1
    return n


def unreachable_note(method: str, n: int, family_size: int,
                     confidence: float = CONFIDENCE) -> str:
    """The line saying that ``method`` with ``n`` pairs cannot call any metric of a
    Holm family of ``family_size`` significant, e.g. "with 6 pairs the sign test's
    smallest p is 0.031, 0.219 after Holm over 7 timed metrics: no timed metric can be
    significant; --repeat 9 or more"; '' where it can, or gives no verdict at all
    (fewer than ``min_pairs``). Only the sign test has such a floor: its p-values
    take the values of a binomial tail, the smallest ``sign_min_p(n)``. The t test's p
    goes to 0 as the log ratios' spread does, and the bootstrap's (twice the share of
    resampled medians beyond 1) is 0 when every resampled median falls on one side,
    so neither has one."""
    if method != "sign" or family_size < 1 or n < min_pairs(method, confidence):
        return ""
    smallest = sign_min_p(n)
    if family_size * smallest <= 1 - confidence:
        return ""
    many = "" if family_size == 1 else "s"
    return (f"with {n} pairs the sign test's smallest p is {smallest:.3f}, "
            f"{min(1.0, family_size * smallest):.3f} after Holm over {family_size} timed "
            f"metric{many}: no timed metric can be significant; --repeat "
            f"{sign_pairs_needed(family_size, confidence)} or more")


def p_value(values: Sequence[float], method: str, null: float = 0.0) -> float:
    """Two-sided p-value of "the centre of ``values`` is ``null``" by ``method``.

    ``t``: Student's one-sample t test of the mean (``scipy.stats.ttest_1samp``'s p,
    from ``scipy.special.stdtr``); ``sign``: the exact sign test of the median
    (``scipy.stats.binomtest``'s two-sided p at 1/2: twice the smaller binomial tail,
    from ``scipy.special.bdtr``, at most 1; values equal to ``null`` left out);
    ``bootstrap``: twice the smaller share of the resampled medians
    (``bootstrap_median_interval``'s resamples) at or below and at or above ``null``, at
    most 1. ``scipy.special`` rather than ``scipy.stats``: the same functions, without
    the import of every distribution (2 s of CPU against 7 s on a slow 2-core machine,
    paid by every ``bench.py report``). With no spread (all values equal, to rounding) the t
    test's and the bootstrap's p is 0 when they differ from ``null`` and 1 when they
    equal it; the sign test's is still the binomial one (``sign_min_p(n)`` at the
    least, values within rounding of ``null`` left out). Needs two or more values
    (``ValueError``); for the t test on log ratios pass ``log(ratios)``.
    """
    a = np.asarray(values, dtype=float)
    if a.size < 2:
        raise ValueError(f"a p-value needs at least 2 values, got {a.size}")
    tol = 8 * np.finfo(float).eps * max(1.0, float(np.max(np.abs(a))))
    if method == "sign":  # counts signs only: no spread needed, none gives p = 0
        from scipy.special import bdtr

        above, below = int(np.sum(a > null + tol)), int(np.sum(a < null - tol))
        return min(1.0, 2 * float(bdtr(min(above, below), above + below, 0.5)))
    if np.ptp(a) <= tol:  # no spread beyond rounding (e.g. log ratios of a scaled copy)
        return 1.0 if abs(float(a.mean()) - null) <= tol else 0.0
    if method == "t":
        from scipy.special import stdtr  # Student's t CDF

        t = (float(a.mean()) - null) / (float(a.std(ddof=1)) / math.sqrt(a.size))
        return min(1.0, 2 * float(stdtr(a.size - 1, -abs(t))))
    if method == "bootstrap":
        medians = _bootstrap_medians(a, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED)
        return float(min(1.0, 2 * min(np.mean(medians <= null), np.mean(medians >= null))))
    raise ValueError(f"unknown interval method {method!r}; choose from {', '.join(METHODS)}")


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979), in the order given.

    With the ``m`` p-values sorted ascending, the ``i``-th (from 1) becomes
    ``max_{j <= i} min(1, (m - j + 1) p_(j))``; rejecting where the adjusted value is
    at most ``alpha`` keeps the chance of any false rejection at most ``alpha``
    whatever the dependence between the tests. Same as R's ``p.adjust(p, "holm")``.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(p_values[i])))
        out[i] = running
    return out


@dataclass(frozen=True)
class PairedComparison:
    """One metric, two arms, ``n_pairs`` paired repetitions (see the module docstring).

    Ratios are ``treatment / baseline``; differences ``baseline - treatment`` (in the
    metric's unit). Interval fields and ``p_value`` are ``None`` when the method gives
    no verdict (fewer than ``min_pairs`` pairs; a ratio with a zero or negative value
    in it has no ratio interval). ``p_adjusted`` is the p-value after the multiplicity
    adjustment named by ``adjustment`` (``"holm"`` in ``compare_cases``; ``None`` and
    ``"none"`` for a comparison on its own); ``significant`` and ``verdict`` follow it.
    """

    metric: str
    baseline: str
    treatment: str
    n_pairs: int
    method: str
    confidence: float
    baseline_median: float
    baseline_iqr: float
    treatment_median: float
    treatment_iqr: float
    ratio_median: Optional[float]
    ratio_geomean: Optional[float]
    ratio_ci_low: Optional[float]
    ratio_ci_high: Optional[float]
    diff_mean: float
    diff_median: float
    diff_ci_low: Optional[float]
    diff_ci_high: Optional[float]
    significant: Optional[bool]
    verdict: str
    p_value: Optional[float] = None
    p_adjusted: Optional[float] = None
    adjustment: str = "none"
    #: Each arm's geometric mean over the pairs (``None`` where a value is zero or
    #: negative): their quotient is ``ratio_geomean`` exactly, so an arm's figure
    #: printed beside the ``t`` ratio points the same way (medians need not).
    baseline_geomean: Optional[float] = None
    treatment_geomean: Optional[float] = None
    #: Each arm's arithmetic mean over the pairs: what the comparison block and the
    #: pair table show, marked, for an arm without a geometric mean (``arm_cell``).
    baseline_mean: Optional[float] = None
    treatment_mean: Optional[float] = None

    @property
    def diff_half_width(self) -> Optional[float]:
        """Half the width of the difference interval (same unit as the metric)."""
        if self.diff_ci_low is None or self.diff_ci_high is None:
            return None
        return (self.diff_ci_high - self.diff_ci_low) / 2

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (JSON-ready), plus ``diff_half_width``."""
        d = asdict(self)
        d["diff_half_width"] = self.diff_half_width
        return d

    def adjusted(self, p_adjusted: float, adjustment: str) -> "PairedComparison":
        """This comparison with its verdict taken from ``p_adjusted`` (significant when
        it is at most ``1 - confidence``), recorded as ``adjustment`` (e.g. ``holm``);
        where Holm's finds no significant difference while the unadjusted ratio interval
        excludes 1, ``NOT_SIGNIFICANT_HOLM`` or, where that interval reaches beyond
        ``DETECTABLE``, ``holm_inconclusive_verdict`` (``holm_verdict``): the reason is
        the adjustment, not the interval.
        Raises ``ValueError`` on a comparison without a p-value."""
        if self.p_value is None:
            raise ValueError(f"{self.metric or 'comparison'} has no p-value to adjust")
        significant = p_adjusted <= 1 - self.confidence
        out = replace(self, p_adjusted=p_adjusted, adjustment=adjustment,
                      significant=significant,
                      verdict=_verdict(significant, self._point(), self.baseline,
                                       self.treatment,
                                       (self.ratio_ci_low, self.ratio_ci_high),
                                       self.confidence))
        holm = holm_verdict(out.to_dict()) if adjustment == "holm" else None
        return out if holm is None else replace(out, verdict=holm)

    def _point(self) -> Optional[float]:
        return self.ratio

    @property
    def inconclusive(self) -> bool:
        """No significant difference, but a ratio interval too wide to detect a
        ``DETECTABLE`` (10 %) difference (``inconclusive``)."""
        return self.significant is False and inconclusive(self.ratio_ci_low,
                                                          self.ratio_ci_high)

    @property
    def ratio(self) -> Optional[float]:
        """The ratio's point estimate that ``method``'s interval is centred on: the
        geometric mean of the per-pair ratios for ``t``, their median for ``bootstrap``
        and ``sign`` (``None`` where a value is zero or negative)."""
        return self.ratio_geomean if self.method == "t" else self.ratio_median


#: What each method's ratio point estimate is (``PairedComparison.ratio``) and what its
#: interval is called, in ``ratio_phrase``.
RATIO_POINTS = {"t": "geometric mean", "bootstrap": "median", "sign": "median"}
INTERVAL_NAMES = {"t": "Student-t", "bootstrap": "percentile-bootstrap", "sign": "sign-test"}


def ratio_phrase(method: str = "t", confidence: float = CONFIDENCE,
                 interval: bool = True) -> str:
    """How a paired ratio of two arms (``paired_ratio``) is named wherever one is
    printed, the terminal's ``cached/send`` line and the report's pair table alike:
    "paired by repetition: geometric mean of the per-repetition ratios [95 % Student-t
    interval]" for ``t``; without ``interval`` (ratios too few for one, e.g. one pair)
    no interval is named: "paired by repetition: geometric mean of the per-repetition
    ratios". Raises ``KeyError`` on an unknown method."""
    point = f"paired by repetition: {RATIO_POINTS[method]} of the per-repetition ratios"
    if not interval:
        return point
    return (point + f" [{confidence:.0%} {INTERVAL_NAMES[method]} interval]"
            ).replace("%", " %", 1)


def paired_ratio(baseline: Sequence[float], treatment: Sequence[float], method: str = "t",
                 confidence: float = CONFIDENCE
                 ) -> tuple[Optional[float], Optional[float], Optional[float]]:
    """``(point, low, high)`` of the ratio ``treatment / baseline`` over paired
    repetitions (``baseline[i]`` with ``treatment[i]``), as ``compare_paired`` gives it
    (``PairedComparison.ratio`` and its interval): the one ratio statistic that the
    terminal's ratio line, the comparison block, the report's pair table, findings and
    figures print. ``low`` and ``high`` are ``None`` with fewer pairs than ``method``
    needs (``min_pairs``); all three are ``None`` when a value is zero or negative.
    Raises ``ValueError`` as ``compare_paired`` does."""
    cmp = compare_paired(baseline, treatment, method=method, confidence=confidence)
    return cmp.ratio, cmp.ratio_ci_low, cmp.ratio_ci_high


def arm_geomeans(m: dict[str, Any], between: str = "vs", unit: str = "us/step",
                 scale: float = 1e-3) -> str:
    """'; 400.1 vs 410.1 us/step (steps vs totals, geometric means over the pairs: the
    ratio is their quotient)' for a recorded comparison metric ``m``
    (``PairedComparison.to_dict``), ``scale`` times its values ('' for a comparison
    without the arms' geometric means, e.g. one recorded before they were)."""
    b, t = m.get("baseline_geomean"), m.get("treatment_geomean")
    if b is None or t is None:
        return ""
    return (f"; {t * scale:.1f} {between} {b * scale:.1f} {unit} ({m['treatment']} "
            f"{between} {m['baseline']}, geometric means over the pairs: the ratio is "
            f"their quotient)")


def withheld_verdict(method: str, n: int, confidence: float = CONFIDENCE) -> str:
    """The verdict printed instead of one ``method`` cannot support with ``n`` pairs,
    e.g. "no verdict: the bootstrap needs >= 34 pairs, have 6 (use --repeat 34 or
    more, or --ci-method t)". Raises ``ValueError`` on an unknown method."""
    need = min_pairs(method, confidence)
    other = "" if method == "t" else ", or --ci-method t"
    return (f"no verdict: {METHOD_NAMES[method]} needs >= {need} pairs, have {n} "
            f"(use --repeat {need} or more{other})")


#: The p cell and the verdict's start of an exact metric (``EXACT_KEYS``, the payload
#: bytes): measured, not sampled, so no test and no p-value, under every method.
EXACT = "exact"


def exact_verdict(point: Optional[float], diff: float, baseline_name: str,
                  treatment_name: str) -> str:
    """The verdict of an exact metric (``EXACT_KEYS``), whatever the method: "exact:
    cached 5.3 % lower than send" from the ratio ``point``, "exact: no difference" where
    the difference ``diff`` (baseline - treatment) is 0, "exact: send - cached = 81"
    where there is no ratio (a zero value)."""
    if diff == 0:
        return f"{EXACT}: no difference"
    if point is None:
        return f"{EXACT}: {baseline_name} - {treatment_name} = {diff:g}"
    change = (point - 1.0) * 100
    return (f"{EXACT}: {treatment_name} {abs(change):.1f} % "
            f"{'lower' if change < 0 else 'higher'} than {baseline_name}")


def exact(c: "PairedComparison") -> "PairedComparison":
    """Comparison ``c`` of an exact metric (``EXACT_KEYS``): no p-value, no
    significance, and ``exact_verdict``'s verdict, the same under every method."""
    diff = c.diff_mean if c.method == "t" else c.diff_median
    return replace(c, p_value=None, p_adjusted=None, significant=None,
                   verdict=exact_verdict(c.ratio, diff, c.baseline, c.treatment))


def _verdict(significant: bool, point: Optional[float], baseline_name: str,
             treatment_name: str, interval: tuple = (None, None),
             confidence: float = CONFIDENCE) -> str:
    if not significant:
        if inconclusive(*interval):
            return inconclusive_verdict(*interval, confidence=confidence)
        return NO_DIFFERENCE
    if point is None:
        return f"significant: {treatment_name} - {baseline_name} differs from 0"
    change = (point - 1.0) * 100
    return (f"significant: {treatment_name} {abs(change):.1f} % "
            f"{'lower' if change < 0 else 'higher'} than {baseline_name}")


def compare_paired(baseline: Sequence[float], treatment: Sequence[float], *,
                   metric: str = "", baseline_name: str = "A", treatment_name: str = "B",
                   method: str = "t", confidence: float = CONFIDENCE) -> PairedComparison:
    """Compare paired samples ``baseline[i]`` / ``treatment[i]`` (one per repetition).

    With fewer than ``min_pairs(method)`` pairs there is no interval, p-value or
    verdict (``withheld_verdict`` says why). Raises ``ValueError`` if the samples
    differ in length or are empty, or on an unknown ``method``.
    """
    if method not in METHODS:
        raise ValueError(f"unknown interval method {method!r}; choose from {', '.join(METHODS)}")
    a = np.asarray(baseline, dtype=float)
    b = np.asarray(treatment, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired samples must have equal length, got {a.size} and {b.size}")
    n = int(a.size)
    if n == 0:
        raise ValueError("no pairs to compare")
    a_med, a_iqr = median_iqr(a)
    b_med, b_iqr = median_iqr(b)
    diff = a - b
    positive = bool(np.all(a > 0) and np.all(b > 0))
    ratios = b / a if positive else None
    ratio_median = float(np.median(ratios)) if ratios is not None else None
    ratio_geomean = geometric_mean(ratios) if ratios is not None else None
    r_lo = r_hi = d_lo = d_hi = p = None
    significant: Optional[bool] = None
    if n >= min_pairs(method, confidence):
        _, d_lo, d_hi = _interval(diff, method, confidence)
        if ratios is not None:
            if method == "t":
                _, lo, hi = t_interval(np.log(ratios), confidence)
                r_lo, r_hi = math.exp(lo), math.exp(hi)
                p = p_value(np.log(ratios), method)
            else:
                _, r_lo, r_hi = _interval(ratios, method, confidence)
                p = p_value(ratios, method, null=1.0)
            significant = not (r_lo <= 1.0 <= r_hi)
        else:
            p = p_value(diff, method)
            significant = not (d_lo <= 0.0 <= d_hi)
    point = ratio_geomean if method == "t" else ratio_median
    verdict = (withheld_verdict(method, n, confidence) if significant is None
               else _verdict(significant, point, baseline_name, treatment_name,
                             (r_lo, r_hi), confidence))
    return PairedComparison(
        metric=metric, baseline=baseline_name, treatment=treatment_name, n_pairs=n,
        method=method, confidence=confidence,
        baseline_median=a_med, baseline_iqr=a_iqr, treatment_median=b_med,
        treatment_iqr=b_iqr, ratio_median=ratio_median, ratio_geomean=ratio_geomean,
        ratio_ci_low=r_lo, ratio_ci_high=r_hi,
        diff_mean=float(diff.mean()), diff_median=float(np.median(diff)),
        diff_ci_low=d_lo, diff_ci_high=d_hi, significant=significant, verdict=verdict,
        p_value=p,
        baseline_geomean=geometric_mean(a) if positive else None,
        treatment_geomean=geometric_mean(b) if positive else None,
        baseline_mean=float(a.mean()), treatment_mean=float(b.mean()))


#: Summary fields compared between arms, in the order the comparison block shows them
#: (each in the metrics registry).
COMPARED_KEYS: tuple[str, ...] = (
    "step_ns_mean", "step_ns_median", "output_tokens_per_s", "build_ns_per_step",
    "encode_ns_per_step", "decode_ns_per_step", "sched_cpu_ns_per_step",
    "sched_to_runner_payload_bytes_per_step", "runner_to_sched_payload_bytes_per_step",
)
#: ``COMPARED_KEYS`` with the unit each is recorded in (``compare_cases``' default).
COMPARED_METRICS: tuple[tuple[str, str], ...] = tuple((k, metric(k).unit)
                                                      for k in COMPARED_KEYS)
#: Compared fields that are exact for a given seed (the payload bytes): outside the
#: multiplicity family of ``compare_cases``, with no p-value and the verdict
#: ``exact_verdict`` under every method (``exact``).
EXACT_KEYS: tuple[str, ...] = ("sched_to_runner_payload_bytes_per_step",
                               "runner_to_sched_payload_bytes_per_step")


#: Compared fields of one step's work (bytes and times per step): where a pair's arms
#: ran different schedules (``schedules_differ``: a timed replay) they compare other
#: batches, so ``compare_cases`` withholds their paired figures and verdict
#: (``schedule_bound``) and leaves them out of the Holm family. Output tokens/s, an
#: end-to-end figure of the whole run, stays compared (as do a timed replay's
#: latencies, which the findings give).
SCHEDULE_BOUND_KEYS: tuple[str, ...] = tuple(k for k in COMPARED_KEYS
                                             if k != "output_tokens_per_s")
#: The verdict of a ``SCHEDULE_BOUND_KEYS`` metric whose arms ran different schedules.
SCHEDULES_DIFFER = "schedules differ"
#: The paired figures ``schedule_bound`` withholds (each arm's own median, IQR and
#: geometric mean stay: they describe that arm's batches).
PAIRED_FIELDS = ("ratio_median", "ratio_geomean", "ratio_ci_low", "ratio_ci_high",
                 "diff_mean", "diff_median", "diff_ci_low", "diff_ci_high",
                 "diff_half_width", "p_value", "p_adjusted")


def schedule_bound(m: dict[str, Any], verdict: str = SCHEDULES_DIFFER) -> dict[str, Any]:
    """A recorded comparison metric ``m`` (``PairedComparison.to_dict``) of arms that ran
    different schedules, with its paired figures (``PAIRED_FIELDS``) ``None``, no
    adjustment, ``significant`` ``None`` and the verdict ``verdict`` (``SCHEDULES_DIFFER``:
    the pairs compare other batches, not the arms; ``ARRIVAL_BOUND``: a timed replay's
    tokens/s that follows the trace's arrivals). Returns a new dict."""
    return dict(m, **dict.fromkeys(PAIRED_FIELDS), significant=None, adjustment="none",
                verdict=verdict)


#: The verdict of a timed replay's output tokens/s (wall) whose cases were all
#: arrival-bound (``arrival_bound``): the trace's arrivals set the pace (the engine kept
#: up with them, or queued their bursts and idled between them), so the figure measures the arrivals, not throughput, and no ratio of it is a throughput
#: comparison (docs/usage.md, "Timed replays: arrival- or load-bound").
ARRIVAL_BOUND = "arrival-bound"
#: The compared fields an arrival-bound replay withholds (``ARRIVAL_BOUND``).
ARRIVAL_BOUND_KEYS: tuple[str, ...] = ("output_tokens_per_s",)


def arrival_bound(cases: Iterable[dict[str, Any]]) -> bool:
    """Whether the case records ``cases`` (the cases one comparison pairs; a
    ``Results.cases`` record's NaN reads as missing) are timed replays (``trace_speedup``
    set) not all of which are load-bound (``pace.replay_pace``; one that records neither
    ``waiting_step_share`` nor ``arrival_span_share`` is called arrival-bound, as the
    report's notes call it): the tokens/s (wall) of at least one follow the trace's
    arrivals, no throughput figure, so a ratio over them all is none either (a
    repetition that kept up beside one that queued mixes the two). False without
    cases."""
    clean = [as_record(c) for c in cases]
    return bool(clean) and all(c.get("trace_speedup") is not None for c in clean) and \
        not all_load_bound(clean)


def arms_by_repetition(records: Iterable[dict[str, Any]], keys: Sequence[str]
                       ) -> dict[tuple, dict[str, dict[int, dict[str, Any]]]]:
    """Case records grouped for pairing: ``{group: {arm: {repetition: record}}}``.

    ``group`` is the tuple of the record's ``keys`` values (``None`` where one is
    missing), ``arm`` its ``arm`` field when that is a non-empty string, else its
    ``policy`` (so an A/A run's ``send`` and ``send'`` are two arms), ``repetition``
    its ``repetition`` as an int (0 when missing). Groups and arms keep the order in
    which they first appear. The caller
    filters the records (complete cases, a metric present); a later record of the same
    group, arm and repetition replaces an earlier one.
    """
    groups: dict[tuple, dict[str, dict[int, dict[str, Any]]]] = {}
    for r in records:
        key = tuple(r.get(k) for k in keys)
        arm = r.get("arm")
        if not isinstance(arm, str) or not arm:  # absent, or NaN in a pandas record
            arm = r["policy"]
        rep = r.get("repetition")
        rep = 0 if rep is None or rep != rep else int(rep)  # null, or NaN in a pandas record
        groups.setdefault(key, {}).setdefault(arm, {})[rep] = r
    return groups


def arm_rank(arm: str) -> tuple[int, bool]:
    """Sort key of an arm name: the policies in ``POLICIES`` order, each copy (``send'``)
    after its policy, other arms (e.g. the overhead scenario's) after them; a stable
    sort keeps those in the order given."""
    policy = arm.rstrip("'")
    return (POLICIES.index(policy) if policy in POLICIES else len(POLICIES), arm != policy)


#: The fields that identify a group of cases ``compare_cases`` pairs arms within.
COMPARED_GROUP = ("scenario", "workload", "codec", "transport", "model")


def compare_cases(summaries: Sequence[dict[str, Any]], method: str = "t",
                  confidence: float = CONFIDENCE,
                  metrics: Sequence[tuple[str, str]] = COMPARED_METRICS) -> list[dict[str, Any]]:
    """Paired comparisons of the case summaries of one run (``summary.json`` cases).

    Groups complete cases by ``COMPARED_GROUP`` (scenario, workload, codec, transport,
    model: the cases of one transport or model are never paired with another's, as in
    the terminal's ratio line and ``paired``); within a group the arms are ranked by
    ``arm_rank`` (send, send', cached, cached', then other arms in the order first
    seen; not by run order, which is random), the first is the baseline and every
    other arm is compared with it, pairing cases of equal ``repetition``
    (``arms_by_repetition``). Returns one dict per (group, treatment arm): identity
    (the group's fields, and ``paired_apart``: those of transport and model that take
    several values within the scenario, workload and codec, which the comparison
    block's title names), ``n_pairs``, ``repetitions``, ``metrics`` (metric ->
    ``PairedComparison.to_dict`` plus its ``unit``) and ``family`` (the metrics whose
    verdicts were adjusted together by Holm's method: every compared metric with a
    p-value but the ``EXACT_KEYS``; their ``adjustment`` is ``"holm"``) and, where a
    pair ran different schedules (``schedules_differ``: a timed replay),
    ``schedules_differ`` true: its per-step metrics (``SCHEDULE_BOUND_KEYS``: bytes
    and times per step) compare other batches, so they are recorded with their paired
    figures and verdict withheld (``schedule_bound``: verdict ``schedules differ``)
    and left out of the family; output tokens/s stays compared; where a case of the pair
    is a timed replay (``trace_speedup`` set), ``timed`` true: its output tokens/s are
    over wall time (the comparison block names them ``out tok/s (wall)``); where every
    case of the pair is a timed replay, not all of them load-bound (``arrival_bound``),
    ``arrival_bound`` true: its output tokens/s follow the trace's arrivals, so they are
    recorded with their paired figures and verdict withheld (verdict ``arrival-bound``)
    and left out of the family. Left out: groups with a single arm, metrics the codec
    does not perform (``performed``: the single-process case's encode, decode and
    bytes), arm pairs with no metric of ``metrics`` that both record (the overhead
    scenario's ``totals`` arm, loop totals only, against ``steps``). Raises
    ``ValueError`` on an unknown ``method``. Marks of the cores rule: ``cores_marks``."""
    groups = arms_by_repetition(
        (s for s in summaries
         if s.get("complete") and (s.get("num_steps") or s.get("loop_steps"))),
        COMPARED_GROUP)
    # transport / model values per (scenario, workload, codec): titles name those that vary
    values: dict[tuple, list[set]] = {}
    for key in groups:
        for seen, v in zip(values.setdefault(key[:3], [set(), set()]), key[3:]):
            seen.add(v)
    out = []
    for (scenario, workload, codec, transport, model), arms in groups.items():
        names = sorted(arms, key=arm_rank)
        base = names[0]
        apart = [k for k, seen in zip(("transport", "model"), values[(scenario, workload,
                                                                      codec)])
                 if len(seen) > 1]
        for treat in names[1:]:
            reps = sorted(set(arms[base]) & set(arms[treat]))
            entry: dict[str, Any] = dict(scenario=scenario, workload=workload, codec=codec,
                                         transport=transport, model=model,
                                         paired_apart=apart,
                                         baseline=base, treatment=treat, n_pairs=len(reps),
                                         repetitions=reps, method=method,
                                         confidence=confidence, metrics={})
            found: dict[str, PairedComparison] = {}
            # N readers on fewer than N + 2 cores: no timing is compared (analysis.cores)
            marks = cores_marks([arms[arm][r] for arm in (base, treat) for r in reps])
            held = marks.get("timings_withheld")
            entry.update(marks)
            for key, unit in metrics:
                if (held and unit in TIMING_UNITS) or not performed(key, codec):
                    continue
                a = [arms[base][r].get(key) for r in reps]
                b = [arms[treat][r].get(key) for r in reps]
                if reps and not any(v is None for v in a + b):
                    found[key] = compare_paired(a, b, metric=key, baseline_name=base,
                                                treatment_name=treat, method=method,
                                                confidence=confidence)
            if not found:  # no metric both arms record (overhead's totals arm records
                continue   # loop totals only): nothing to compare, no entry
            marks = _pair_marks([(arms[base][r], arms[treat][r]) for r in reps])
            entry.update(marks)
            entry["family"], entry["metrics"] = _adjusted_metrics(
                found, dict(metrics), bool(marks.get("schedules_differ")),
                bool(marks.get("arrival_bound")))
            out.append(entry)
    return out


def cores_marks(cases: list[dict[str, Any]]) -> dict[str, str]:
    """What the cores rule (``analysis.cores``) adds to a ``compare_cases`` entry of
    ``cases`` (both arms, every repetition): ``timings_withheld``, the footnote
    (``cores.footnote``), where a case's timings are withheld (no timing is compared);
    else ``timings_marked``, the ``°`` line (``cores.marked_comparison_note``), where a
    case's timings are shown marked, N = 1 on exactly 2 cores (they are compared, and
    the comparison carries the mark); ``{}`` otherwise."""
    held = footnote(cases)
    if held:
        return {"timings_withheld": held}
    shared = marked_comparison_note(cases)
    return {"timings_marked": shared} if shared else {}


def with_timings_marked(c: dict[str, Any], summaries: Iterable[dict[str, Any]]
                        ) -> dict[str, Any]:
    """A recorded comparison ``c`` (a ``summary.json`` ``comparisons`` entry) with the
    ``timings_marked`` line ``compare_cases`` gives it now, from its run's case
    summaries ``summaries`` (its group's cases of its two arms in its repetitions:
    ``cores.marked_comparison_note``), where it was recorded before comparisons carried
    the mark; ``c`` itself where it records either cores field (``timings_withheld``,
    ``timings_marked``) or is not marked."""
    if c.get("timings_withheld") or c.get("timings_marked"):
        return c
    key = tuple(c.get(k) for k in COMPARED_GROUP)
    arms = arms_by_repetition((s for s in summaries if s.get("complete")),
                              COMPARED_GROUP).get(key, {})
    reps = c.get("repetitions") or ()
    cases = [arms[arm][r] for arm in (c.get("baseline"), c.get("treatment"))
             for r in reps if r in arms.get(arm, {})]
    shared = cores_marks(cases).get("timings_marked")
    return dict(c, timings_marked=shared) if shared else c


def _pair_marks(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, bool]:
    """What ``compare_cases`` marks an arm pair's entry with, from its (baseline,
    treatment) case summaries ``pairs``, each only where true: ``schedules_differ``
    (``schedules_differ``), ``timed`` (a case is a timed replay, ``trace_speedup``
    set, not ``None`` nor a table's NaN: its tokens/s are over wall time) and
    ``arrival_bound`` (``arrival_bound``: every case a timed replay, not all load-bound)."""
    speedups = [c.get("trace_speedup") for pair in pairs for c in pair]
    marks = dict(schedules_differ=schedules_differ(pairs),
                 timed=any(v is not None and v == v for v in speedups),
                 arrival_bound=arrival_bound(c for pair in pairs for c in pair))
    return {k: True for k, v in marks.items() if v}


def _adjusted_metrics(found: dict[str, PairedComparison], units: dict[str, str],
                      differ: bool, arrival: bool = False
                      ) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """``compare_cases``' ``(family, metrics)`` of one arm pair's comparisons ``found``:
    the family (every metric with a p-value but the ``EXACT_KEYS``, where the arms'
    schedules ``differ`` the ``SCHEDULE_BOUND_KEYS`` and, for an ``arrival``-bound
    timed replay, the ``ARRIVAL_BOUND_KEYS``), its verdicts Holm-adjusted, and each
    metric as a dict with its ``unit`` (``schedule_bound`` where ``differ``: verdict
    ``SCHEDULES_DIFFER``; where ``arrival``: verdict ``ARRIVAL_BOUND``)."""
    bound = SCHEDULE_BOUND_KEYS if differ else ()
    held = ARRIVAL_BOUND_KEYS if arrival else ()
    family = [k for k, c in found.items() if k not in EXACT_KEYS and k not in bound
              and k not in held and c.p_value is not None]
    for key, p_adj in zip(family, holm([found[k].p_value for k in family])):
        found[key] = found[key].adjusted(p_adj, "holm")
    for key in found:
        if key in EXACT_KEYS and key not in bound:
            found[key] = exact(found[key])
    return family, {k: dict(schedule_bound(c.to_dict()) if k in bound else
                            schedule_bound(c.to_dict(), ARRIVAL_BOUND) if k in held else
                            c.to_dict(), unit=units[k]) for k, c in found.items()}


# --------------------------------------------------------------------------------------
# send/cached pairs of a ``Results.cases`` table (pandas; the report and its figures)

#: Columns that identify a pair's two cases apart from their arm.
PAIR_KEYS = ("run_id", "scenario", "workload", "codec", "transport", "model", "repetition")

#: ``paired``'s value columns: the two cases' metric, ``diff`` (send - cached) and
#: ``ratio`` (cached / send; NaN where send is 0).
PAIR_COLUMNS = (SEND, CACHED, "diff", "ratio")


def paired(cases, metric: str, baseline: str = SEND, treatment: str = CACHED,
           labels: Sequence[str] = ()):
    """One row per send/cached pair of a ``Results.cases`` table, for ``metric``.

    The two cases of a pair share every ``PAIR_KEYS`` column present (repetition
    included) and are the arms ``baseline`` and ``treatment`` (``arm`` column, else
    ``policy``; see ``arms_by_repetition``). Columns: those keys, ``send``/``cached``
    (the two cases' ``metric``, in its unit; named after the default arms),
    ``diff`` = send - cached (same unit), ``ratio`` = cached / send (NaN where send is
    0), then the columns ``labels`` names (the run's workload labels, ``Results.labels``)
    that ``cases`` has. Incomplete cases and cases without
    ``metric`` are left out; an empty frame (with those columns) when no pair exists.
    Groups keep their first appearance order, repetitions ascend.
    """
    import pandas as pd

    keys = [k for k in PAIR_KEYS if k in cases.columns]
    empty = pd.DataFrame(columns=keys + list(PAIR_COLUMNS))
    if metric not in cases.columns or cases.empty:
        return empty
    # the columns read here alone: the rows kept are the same, and the table's other
    # hundred columns are neither copied nor turned into records for each metric
    ok = cases.loc[:, cases.columns.isin(
        [*keys, "arm", "policy", "repetition", "complete", metric])]
    ok = ok[ok[metric].notna()]
    if "complete" in ok.columns:
        ok = ok[ok["complete"].astype(bool)]
    group_keys = [k for k in keys if k != "repetition"]
    rows = []
    for key, arms in arms_by_repetition(frame_records(ok), group_keys).items():
        a, b = arms.get(baseline, {}), arms.get(treatment, {})
        for rep in sorted(set(a) & set(b)):
            send, cached = float(a[rep][metric]), float(b[rep][metric])
            row = dict(zip(group_keys, key))
            if "repetition" in keys:
                row["repetition"] = rep
            row.update({SEND: send, CACHED: cached}, diff=send - cached,
                       ratio=cached / send if send != 0 else math.nan)
            rows.append(row)
    if not rows:
        return empty
    both = pd.DataFrame(rows, columns=keys + list(PAIR_COLUMNS))
    labels = [c for c in labels if c in cases.columns and c not in both.columns]
    if labels:
        # the key and label columns alone: the rows kept are the same, and the frame's
        # other hundred columns are not copied twice
        first = cases[keys + labels].drop_duplicates(keys).set_index(keys)
        both = both.join(first, on=keys)
    return both


def summarize_pairs(pairs, group: Sequence[str] | None = None, method: str = "t",
                    confidence: float = CONFIDENCE) -> list[dict[str, Any]]:
    """Per group of ``paired`` rows (default: every ``PAIR_KEYS`` column but
    ``repetition``), ``compare_paired(send, cached)`` over the group's pairs.

    Each dict: the group's keys, ``n`` (pairs), ``send``/``cached`` (means, the
    metric's unit), ``send_geomean``/``cached_geomean`` (each arm's geometric mean over
    the pairs, ``PairedComparison.baseline_geomean``: their quotient is the ``t`` ratio,
    so they point its way; NaN where a value is 0 or negative), the point estimates that match ``method`` (``t``: ``diff`` the mean
    of send - cached and ``ratio`` the geometric mean of cached / send; ``bootstrap``
    and ``sign``: their medians), their ``confidence`` intervals ``diff_low``/
    ``diff_high`` and ``ratio_low``/``ratio_high`` (NaN with too few pairs, or for the
    ratio when a value is 0 or negative; ``ratio`` is then NaN too), and
    ``significant`` (``compare_paired``'s: ``None`` without an interval) and
    ``inconclusive`` (``PairedComparison.inconclusive``: no significant difference but
    an interval too wide to see a 10 % one). Empty for no pairs. Raises ``ValueError``
    on an unknown ``method``.
    """
    if pairs is None or len(pairs) == 0:
        return []
    if group is None:
        group = [k for k in PAIR_KEYS if k in pairs.columns and k != "repetition"]

    def nan(v: Optional[float]) -> float:
        return math.nan if v is None else float(v)

    out = []
    for key, g in pairs.groupby(list(group), sort=False, dropna=False, observed=True):
        key = key if isinstance(key, tuple) else (key,)
        cmp = compare_paired(g[SEND].tolist(), g[CACHED].tolist(), baseline_name=SEND,
                             treatment_name=CACHED, method=method, confidence=confidence)
        t_method = method == "t"
        row = dict(zip(group, key))
        row["n"] = cmp.n_pairs
        row.update({SEND: float(g[SEND].mean()), CACHED: float(g[CACHED].mean()),
                    f"{SEND}_geomean": nan(cmp.baseline_geomean),
                    f"{CACHED}_geomean": nan(cmp.treatment_geomean)})
        row.update(diff=cmp.diff_mean if t_method else cmp.diff_median,
                   diff_low=nan(cmp.diff_ci_low), diff_high=nan(cmp.diff_ci_high),
                   ratio=nan(cmp.ratio),
                   ratio_low=nan(cmp.ratio_ci_low), ratio_high=nan(cmp.ratio_ci_high),
                   significant=cmp.significant, inconclusive=cmp.inconclusive)
        out.append(row)
    return out


def mean_interval(values: Iterable[Optional[float]], confidence: float = CONFIDENCE
                  ) -> tuple[float, float, float]:
    """(mean, low, high): ``t_interval`` of the finite values among ``values`` (``None``
    and NaN left out, e.g. error bars over repetitions); ``low``/``high`` are NaN with
    fewer than two such values, all three NaN with none. Never raises on short input."""
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if len(xs) < 2:
        return (xs[0] if xs else math.nan, math.nan, math.nan)
    return t_interval(xs, confidence)


def geomean_interval(values: Iterable[Optional[float]], confidence: float = CONFIDENCE
                     ) -> tuple[float, float, float]:
    """(geometric mean, low, high) of the finite values among ``values`` (``None`` and
    NaN left out; e.g. one case's tokens/s over its repetitions): exp(mean(log x)) with
    the Student-t interval of the logs, exp(mean(log x) ± t(n-1) · sd(log x) / sqrt(n)),
    the statistic whose quotient is the paired ``t`` ratio (``compare_paired``:
    ``baseline_geomean``, ``treatment_geomean``), so an arm's point beside that ratio
    points its way. One value: that value, ``low``/``high`` NaN; none: all three NaN.
    Where a value is 0 or less (no logarithm) it is ``mean_interval``'s arithmetic mean
    and interval instead. Never raises on short input."""
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not xs or min(xs) <= 0:
        return mean_interval(xs, confidence)
    if len(xs) < 2:
        return xs[0], math.nan, math.nan
    if min(xs) == max(xs):  # exactly that value, not its round trip through log and exp
        return xs[0], xs[0], xs[0]
    centre, low, high = t_interval(np.log(xs), confidence)
    return math.exp(centre), math.exp(low), math.exp(high)


def welch_ratio(baseline: Iterable[Optional[float]], treatment: Iterable[Optional[float]],
                confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(ratio, low, high): the geometric mean of ``treatment``'s finite values over that
    of ``baseline``'s (``None``, NaN and infinities left out; e.g. one case's tokens/s
    over the repetitions of two runs), with the unpaired (Welch) t interval of the
    difference of their mean logs d: exp(d ± t(ν) · sqrt(s_b²/n_b + s_t²/n_t)), ``s`` the samples'
    standard deviations of the logs (``ddof=1``), ν the Welch-Satterthwaite degrees of
    freedom: the interval ``scipy.stats.ttest_ind(..., equal_var=False)
    .confidence_interval`` gives, computed with scipy's t quantile
    (``scipy.special.stdtrit``, as ``t_interval``). For samples not paired by repetition
    (two runs, separate in time), so the interval carries both samples' noise. ``low``/``high`` NaN where either sample has fewer than
    2 values or neither has any spread (all its values equal: ``ratio`` is then exact);
    all three NaN where either has no value or one of 0 or less (no logarithm). Never
    raises on short input."""
    from scipy.special import stdtrit

    b, t = ([float(v) for v in vs if v is not None and math.isfinite(float(v))]
            for vs in (baseline, treatment))
    if not b or not t or min(b + t) <= 0:
        return math.nan, math.nan, math.nan
    lb, lt = np.log(b), np.log(t)
    ratio = math.exp(float(lt.mean() - lb.mean()))
    if len(b) < 2 or len(t) < 2:
        return ratio, math.nan, math.nan
    # a sample of equal values has no spread (numpy's variance of their logs may not be 0)
    vb, vt = (0.0 if min(x) == max(x) else float(lx.var(ddof=1)) / len(x)
              for x, lx in ((b, lb), (t, lt)))
    if vb + vt == 0:
        return ratio, math.nan, math.nan
    df = (vb + vt) ** 2 / (vb ** 2 / (len(b) - 1) + vt ** 2 / (len(t) - 1))
    half = float(stdtrit(df, (1 + confidence) / 2)) * math.sqrt(vb + vt)
    return ratio, ratio * math.exp(-half), ratio * math.exp(half)


def arm_cell(m: dict[str, Any], arm: str) -> tuple[Optional[float], bool]:
    """``(value, arithmetic)``: the figure a recorded comparison metric ``m``
    (``PairedComparison.to_dict``) shows for its ``arm`` (``baseline`` or
    ``treatment``) beside its ratio: the arm's geometric mean over the pairs, whose
    quotient is the ``t`` ratio; where it has none (a value of 0 or less), its
    arithmetic mean with ``arithmetic`` true (``(None, True)`` in a comparison recorded
    before the means were)."""
    g = m.get(f"{arm}_geomean")
    if g is not None:
        return float(g), False
    mean = m.get(f"{arm}_mean")
    return (None if mean is None else float(mean)), True


def results_ci_method(metadata: dict[str, dict[str, Any]]) -> str:
    """The interval method the loaded runs were compared with (``--ci-method``, recorded
    as ``ci_method`` in each run's metadata): the runs' common one, else ``t``.
    ``metadata``: ``Results.metadata`` (run id -> metadata dict)."""
    found = {md.get("ci_method") or "t" for md in metadata.values()}
    if len(found) == 1:
        (method,) = found
        if method in METHODS:
            return method
    return "t"


def percentiles_ms(values_s, prefix: str) -> dict[str, float]:
    """``{prefix}_ms_mean`` / ``_p50`` / ``_p90`` / ``_p99`` of ``values_s`` (seconds,
    any sequence or array), in ms; empty when there are no values."""
    if len(values_s) == 0:
        return {}
    v = np.asarray(values_s, dtype=np.float64) * 1e3
    return {f"{prefix}_ms_mean": float(v.mean()), f"{prefix}_ms_p50": float(np.percentile(v, 50)),
            f"{prefix}_ms_p90": float(np.percentile(v, 90)),
            f"{prefix}_ms_p99": float(np.percentile(v, 99))}
