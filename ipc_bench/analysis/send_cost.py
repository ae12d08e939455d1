"""Send's cost per step as a share of the step the case measured, and the fixed-step
model's check that its step was the one asked for: one definition for the summary, the
terminal (``scenarios/step_time``) and the report (``report.findings``).

Per send/cached pair of one repetition (``pair_cost``, fields added to the send case):

- ``send_cost_step_ns``: send's median ``step_ns`` minus cached's (the whole cost seen
  by the scheduler loop, noisy);
- ``send_cost_s2r_ns``: the same for ``s2r_build_encode_decode_ns_median`` (the
  SchedulerOutput's build + encode + decode alone, less noisy);
- ``send_cost_measured_step_ns``: the denominator of both shares, the cached case's
  median ``step_ns``: the step the case actually had, not the nominal
  ``--step-time-ms`` (on a loaded machine a 5 ms fixed step can take 17 ms, and a share
  of the nominal step then overstates the cost several times);
- ``send_cost_share_of_step`` / ``send_cost_s2r_share_of_step``: the two differences
  over ``send_cost_measured_step_ns``;
- ``send_cost_off_nominal``: the off-nominal warnings (``off_nominal_warning``) of
  either case of the pair, each once, ``[]`` when both ran their fixed step;
- ``send_cost_whole_step_off``: the whole-step warning (``whole_step_warning``) of the
  cached case, ``[]`` when its median step was within its nominal step + 10 % + the
  control plane's allowance. Cached's only: it is the denominator, and send's longer
  step is the cost being measured;
- ``send_cost_send_step_off``: the check on send's side (``send_step_warning``),
  ``[]`` when send's whole-step difference is explained by its SchedulerOutput path's
  difference within the same allowance (10 % of the nominal step + the control plane's
  allowance): a larger excess is send's case descheduled alone, not send's cost;
- ``send_cost_step_noisy``: whether either case's step times are noisy by a rule of
  ``summary.noise_warnings``' "the machine may be noisy" step warnings
  (``step_noise.step_time_noisy``): its 50-step mean step times varied by more than
  10 % (``step_ns_block_cv``), or its mean step is over 1.5 times its median
  (``summary.skewed_steps_warning``): its whole-step difference is then machine noise
  as much as send's cost, and the whole-step crossing is marked so (naming the rule:
  ``cost_rows`` reads each rule from the pair's cases).

Over repetitions (``cost_rows``) each difference and the measured step are the means
of the pairs' figures, and each share is the mean difference over the mean measured
step (``mean_share``, ``share_of_means``), so a line's share is its printed µs over its
printed step (a mean of per-pair shares is not); with ``--ci-method sign`` or
``bootstrap`` they are the medians, the share the median difference over the median
step (``SHARE_STATISTICS``), and the lines say which. Each share's interval carries the
noise of the step it is over as well as the difference's (``mean_share``: the ratio
estimator's t-interval, the sign test's of the per-pair shares, or the bootstrap's of
the pairs resampled together). ``report.plots.send_cost_share`` draws
that same share, and the decode-steady findings give it (``mean_share``).
``share_line`` words one row (the report gives one per row, the terminal those of the
rows with a warning, ``CostRow.warnings``); ``crossing_lines`` says where the share
passes 1 % of the step, withheld for a step time whose cases ran off their nominal step
(the runner's wait, ``off_nominal_warning``, or cached's whole step,
``whole_step_warning``), the whole step's withheld where send's whole-step difference is
not explained by its SchedulerOutput path (``send_step_warning``), and marked
unreliable for the whole step when it rests on one repetition. The terminal and
the report print these same strings.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Optional

from ipc_bench.analysis.step_noise import (NOISY_STEP_BLOCK_CV, SKEWED_STEP_RATIO,
                                           block_cv_noisy, float_or_none, ratio_text,
                                           skew_ratio, step_time_noisy)
from ipc_bench.engine.config import CACHED, SEND

THRESHOLD = 0.01  # 1 % of the step
#: How far a fixed-step case's median ``runner_forward_ns`` may be from its nominal
#: step before the case is flagged: 10 %. The fixed-step model waits exactly the step
#: (a spin, or a sleep finished by a spin) and then samples as the null model, which
#: took a median 22-55 µs at 16-256 running requests (the null model's
#: ``runner_forward_ns_median``; ``python bench.py --scenario decode-steady
#: --num-running 16,256 --steps 100 --warmup-steps 10 --codecs msgpack --no-floor`` on
#: the 2-core machine loaded by other jobs, load average ~7, 2026-12-01): at most 2.8 %
#: of the sweep's shortest step (2 ms), well under 10 %. A median further off means the
#: runner was descheduled during its wait (CPU contention), so the case did not have
#: the step its label says.
#: 10 % is also the noise threshold ``summary.noise_warnings`` applies to step-time
#: block means (pyperf's).
OFF_NOMINAL_TOLERANCE = 0.10
#: A nominal step below this (0.1 ms) is shorter than what the fixed-step model does
#: around its wait (sampling as the null model: a median 22-55 µs, above): a case that
#: runs long there says so, not that its runner was descheduled.
SHORT_STEP_NS = 100_000
#: The whole step's check (``whole_step_warning``): a fixed-step case's median
#: ``step_ns`` (the whole step the scheduler loop timed: schedule, send, the runner's
#: wait, the reply) may exceed its nominal step by the 10 % above plus what the control
#: plane costs around the model at B running requests, allowed as
#: ``CONTROL_PLANE_BASE_NS + CONTROL_PLANE_PER_REQUEST_NS * B`` = 0.25 ms + 3 µs per
#: running request (0.30 ms at 16, 0.44 ms at 64, 1.02 ms at 256). The null model's whole
#: step, its forward included, is that control plane: a median 0.12 ms at 16, 0.22 ms at
#: 64 and 0.77 ms at 256 running requests (cached, msgpack; ``python bench.py --scenario
#: decode-steady --num-running 16,64,256 --steps 100 --warmup-steps 10 --codecs msgpack
#: --no-floor`` on the 2-core machine loaded by other jobs, load average ~6,
#: 2026-12-01); the allowance is above each. A step longer than that means a process
#: was descheduled outside the runner's wait (the wait alone can be on time: a 2 ms
#: step ran 3.74 ms whole at 64 running with a 2.05 ms median wait), so the case did
#: not have the step its label says either.
CONTROL_PLANE_BASE_NS = 250_000
CONTROL_PLANE_PER_REQUEST_NS = 3_000
#: ``step_ns_block_cv`` above which a pair's whole-step difference is marked noisy (the
#: 10 % of ``summary.noise_warnings``).
NOISY_BLOCK_CV = NOISY_STEP_BLOCK_CV


def off_nominal_warning(summary: dict[str, Any],
                        tolerance: float = OFF_NOMINAL_TOLERANCE) -> Optional[str]:
    """The warning of a fixed-step case whose median model step (``runner_forward_ns_median``)
    is off its nominal ``fixed_step_ms`` by more than ``tolerance``, else ``None``. E.g.
    ``fixed step 5 ms ran a median 17.6 ms (+252 %): the runner was descheduled; its
    shares are of the measured step``."""
    nominal_ms = float_or_none(summary.get("fixed_step_ms"))
    forward_ns = float_or_none(summary.get("runner_forward_ns_median"))
    if not nominal_ms or forward_ns is None:
        return None
    off = forward_ns / (nominal_ms * 1e6) - 1.0
    if abs(off) <= tolerance:
        return None
    if off <= 0:
        why = "the runner's wait ended early"
    elif nominal_ms * 1e6 < SHORT_STEP_NS:
        why = ("a step this short is less than the model's own sampling and timer reads "
               "take, not a wait")
    else:
        why = "the runner was descheduled"
    median_ms = forward_ns / 1e6  # 0.0272, not 0.0, for a step far below 0.1 ms
    shown = f"{median_ms:.1f}" if median_ms >= 0.095 else f"{median_ms:.3g}"
    return (f"fixed step {nominal_ms:g} ms ran a median {shown} ms "
            f"({100 * off:+.0f} %): {why}; {_measured(summary)}")


#: How a ``step-time`` case's off-nominal warnings end: its row's shares are withheld
#: (``CostRow.step_off``), as its table and share line show them (``WITHHELD``).
STEP_TIME_WITHHELD = ("its shares are withheld (-* in the step-time table): the step it "
                      "measured is not the nominal one")


def _measured(summary: dict[str, Any]) -> str:
    """How an off-nominal case's figures read: a ``step-time`` case's shares are
    withheld (``STEP_TIME_WITHHELD``: its table reads ``-*`` there, ``CostRow.step_off``);
    another steady case's shares of the step (``decode-steady`` with ``--model
    fixed-step``) are kept, of the step it measured; a trace replay (a ``trace``
    workload) computes no shares, its figures are of that step."""
    if str(summary.get("workload", "")).startswith("trace="):
        return "its figures are of the measured step, not the nominal one"
    if summary.get("scenario") == "step-time":
        return STEP_TIME_WITHHELD
    return "its shares are of the measured step"


def control_plane_allowance_ns(num_running: Optional[float]) -> float:
    """What the whole-step check allows the control plane at ``num_running`` running
    requests (``CONTROL_PLANE_BASE_NS`` + ``CONTROL_PLANE_PER_REQUEST_NS`` per request;
    the base alone when the count is unknown)."""
    return CONTROL_PLANE_BASE_NS + CONTROL_PLANE_PER_REQUEST_NS * (num_running or 0)


def over_control_plane(step_ns: float, model_ns: float, num_running: Optional[float],
                       tolerance: float = OFF_NOMINAL_TOLERANCE) -> bool:
    """Whether a whole step of ``step_ns`` exceeds the model's time in it, ``model_ns``,
    by more than ``tolerance`` of that time plus what the control plane may cost around
    it at ``num_running`` running requests (``control_plane_allowance_ns``): the rule of
    the fixed step's whole-step check (``whole_step_warning``) and of the emulated
    model's (``emulated_step_warning``)."""
    return step_ns > model_ns * (1.0 + tolerance) + control_plane_allowance_ns(num_running)


def whole_step_warning(summary: dict[str, Any],
                       tolerance: float = OFF_NOMINAL_TOLERANCE) -> Optional[str]:
    """The warning of a fixed-step case whose median whole step (``step_ns_median``)
    exceeds its nominal ``fixed_step_ms`` by more than ``tolerance`` of it plus the
    control plane's allowance (``control_plane_allowance_ns`` at its ``num_running``),
    else ``None``. E.g. ``fixed step 2 ms: the whole step ran a median 3.74 ms (+87 %),
    more than 10 % + 0.44 ms (control plane at B = 64) over nominal: a process was
    descheduled outside the runner's wait; its shares are of the measured step``."""
    nominal_ms = float_or_none(summary.get("fixed_step_ms"))
    step_ns = float_or_none(summary.get("step_ns_median"))
    if not nominal_ms or step_ns is None:
        return None
    b = float_or_none(summary.get("num_running"))
    allowance = control_plane_allowance_ns(b)
    if not over_control_plane(step_ns, nominal_ms * 1e6, b, tolerance):
        return None
    off = step_ns / (nominal_ms * 1e6) - 1.0
    at = f" at B = {b:g}" if b is not None else ""
    return (f"fixed step {nominal_ms:g} ms: the whole step ran a median "
            f"{step_ns / 1e6:.2f} ms ({100 * off:+.0f} %), more than "
            f"{100 * tolerance:.0f} % + {allowance / 1e6:.2f} ms (control plane{at}) over "
            f"nominal: a process was descheduled outside the runner's wait; "
            f"{_measured(summary)}")


def emulated_step_warning(summary: dict[str, Any],
                          tolerance: float = OFF_NOMINAL_TOLERANCE) -> Optional[str]:
    """The warning of an emulated cached case of a steady workload whose median whole
    step (``step_ns_median``, the base of send's shares) exceeds its mean emulated model
    time (``emulated_step_ns_per_step``) by more than the control plane accounts for,
    by the fixed step's rule (``over_control_plane``: 10 % of the model time plus
    ``control_plane_allowance_ns`` at its ``num_running``), else ``None`` (also for a
    send case, whose longer step is the cost measured; a trace replay, which gives no
    share; or a case without either figure). E.g. ``emulated model step 7.93 ms (a
    mean): the whole step ran a median 11.69 ms (1.47x), more than 10 % + 1.02 ms
    (control plane at B = 256) over the model's time, of which the runner's forward (its
    sleep and sampling) overran it by a mean 0.20 ms a step: the rest is this machine's
    control plane, lengthened by CPU contention or its own work; send's shares are of
    that lengthened step, not of the model's`` (why: ``_why_lengthened``). The shares are kept, not withheld as the step-time table's
    are: an emulated share is of the measured step, which its line names (model time
    and this machine's control plane) and this warning qualifies, where a step-time
    row's label names the nominal step its crossing is read at."""
    if (summary.get("emulated") is not True or summary.get("policy") != CACHED
            or str(summary.get("workload", "")).startswith("trace=")):
        return None
    model_ns = float_or_none(summary.get("emulated_step_ns_per_step"))
    step_ns = float_or_none(summary.get("step_ns_median"))
    if not model_ns or step_ns is None:
        return None
    b = float_or_none(summary.get("num_running"))
    if not over_control_plane(step_ns, model_ns, b, tolerance):
        return None
    at = f" at B = {b:g}" if b is not None else ""
    return (f"emulated model step {model_ns / 1e6:.2f} ms (a mean): the whole step ran a "
            f"median {step_ns / 1e6:.2f} ms ({step_ns / model_ns:.2f}x), more than "
            f"{100 * tolerance:.0f} % + {control_plane_allowance_ns(b) / 1e6:.2f} ms "
            f"(control plane{at}) over the model's time{_why_lengthened(summary, tolerance)}"
            "; send's shares are of that lengthened step, not of the model's")


#: The summary's mean time per counted step by which an emulated runner's forward
#: (``runner_forward_ns``: its sleep plus sampling) overran the model's time.
EXCESS_KEY = "emulated_forward_excess_ns_per_step"


def _why_lengthened(summary: dict[str, Any], tolerance: float) -> str:
    """Why an emulated cached step ran over its model's time (``emulated_step_warning``),
    by the runner's recorded overrun (``EXCESS_KEY``): ``: the runner's forward (its
    sleep and sampling) overran the model's time by a mean 3.40 ms a step, which
    accounts for it: the runner's sleep ran late, not the control plane`` where the step less that overrun is
    within the rule (``over_control_plane``); ``, of which the runner's forward (...)
    overran it by a mean 0.20 ms a step: the rest is this machine's control plane,
    lengthened by CPU contention or its own work`` where it is not; ``: the runner's
    forward or this machine's control plane lengthened the step (the forward's overrun
    was not recorded)`` without the figure."""
    model_ns = float(summary["emulated_step_ns_per_step"])
    step_ns = float(summary["step_ns_median"])
    excess = float_or_none(summary.get(EXCESS_KEY))
    if excess is None:
        return (": the runner's forward or this machine's control plane lengthened the "
                "step (the forward's overrun was not recorded)")
    overran = ("the runner's forward (its sleep and sampling) overran {} by a mean "
               f"{excess / 1e6:.2f} ms a step")
    if not over_control_plane(step_ns - max(excess, 0.0), model_ns,
                              float_or_none(summary.get("num_running")), tolerance):
        return (": " + overran.format("the model's time") + ", which accounts for it: the "
                "runner's sleep ran late, not the control plane")
    return (f", of which {overran.format('it')}: the rest is this machine's control plane, "
            "lengthened by CPU contention or its own work")


def send_step_warning(send: dict[str, Any], cached: dict[str, Any],
                      tolerance: float = OFF_NOMINAL_TOLERANCE) -> Optional[str]:
    """The warning of a fixed-step pair whose whole-step difference (send's median
    ``step_ns`` minus cached's) exceeds its SchedulerOutput path's difference
    (``s2r_build_encode_decode_ns_median``, send's minus cached's; 0 when either is
    missing) by more than ``tolerance`` of the nominal ``fixed_step_ms`` plus the control
    plane's allowance at its ``num_running`` (``control_plane_allowance_ns``), else
    ``None`` (also without a fixed step or either median step). Times in ns.

    Why this rule: send's cost in the whole step is its SchedulerOutput path (build +
    encode + decode, measured apart: the s2r difference) plus what that path's timers
    do not see: the bigger frames' transport and the runner's per-request writes. Those
    are part of the control plane, and the whole control plane, the null model's whole
    step, stays under the allowance (0.12 / 0.22 / 0.77 ms at 16 / 64 / 256 running
    against 0.30 / 0.44 / 1.02 ms), so a real send cost never exceeds the s2r
    difference by it; the 10 % of nominal covers the two runners' waits, each on its
    nominal step within the off-nominal check's 10 %. A larger excess is send's case
    descheduled alone (CPU contention: send's step ran 3.95 ms against cached's 2.35 ms
    at a 2 ms step and 64 running, its SchedulerOutput path 32 µs longer), which
    ``whole_step_warning`` does not see (it checks cached's step, the denominator). The
    whole-step difference is what is judged, not send's step against nominal: send's
    longer step is the cost measured. One-sided: a send step shorter than cached's by
    that much leaves cached's step over nominal + the same allowance, which
    ``whole_step_warning`` warns of. E.g. ``fixed step 2 ms: send's whole step
    ran a median 3.95 ms, 1,601 µs longer than cached's 2.35 ms, but its SchedulerOutput
    path only 32 µs longer: the other 1,569 µs are more than 10 % + 0.44 ms (control
    plane at B = 64): send's case was descheduled; its whole-step difference is not
    send's cost``."""
    nominal_ms = float_or_none(send.get("fixed_step_ms"))
    step_send, step_cached = float_or_none(send.get("step_ns_median")), float_or_none(cached.get("step_ns_median"))
    if not nominal_ms or step_send is None or step_cached is None:
        return None
    s2r_send = float_or_none(send.get("s2r_build_encode_decode_ns_median"))
    s2r_cached = float_or_none(cached.get("s2r_build_encode_decode_ns_median"))
    d_s2r = 0.0 if s2r_send is None or s2r_cached is None else s2r_send - s2r_cached
    b = float_or_none(send.get("num_running"))
    allowance = control_plane_allowance_ns(b)
    d_step = step_send - step_cached
    if d_step - d_s2r <= tolerance * nominal_ms * 1e6 + allowance:
        return None
    at = f" at B = {b:g}" if b is not None else ""
    path = ("its SchedulerOutput path's difference is missing" if s2r_send is None
            or s2r_cached is None else
            f"but its SchedulerOutput path only {abs(d_s2r) / 1e3:,.0f} µs "
            f"{'longer' if d_s2r >= 0 else 'shorter'}")
    return (f"fixed step {nominal_ms:g} ms: send's whole step ran a median "
            f"{step_send / 1e6:.2f} ms, {d_step / 1e3:,.0f} µs longer than cached's "
            f"{step_cached / 1e6:.2f} ms, {path}: the other {(d_step - d_s2r) / 1e3:,.0f} µs "
            f"are more than {100 * tolerance:.0f} % + {allowance / 1e6:.2f} ms (control "
            f"plane{at}): send's case was descheduled; its whole-step "
            f"difference is not send's cost")


def case_off_nominal(summary: dict[str, Any]) -> list[str]:
    """A fixed-step case's off-nominal warnings, as its summary's ``warnings`` give them:
    the runner's wait (``off_nominal_warning``) and, for a cached case, the whole step
    (``whole_step_warning``; send's longer step is the cost being measured). ``[]`` when
    none, or for a case without a fixed step."""
    out = [off_nominal_warning(summary)]
    if summary.get("policy") == CACHED:
        out.append(whole_step_warning(summary))
    return [w for w in out if w]


def pair_cost(send: dict[str, Any], cached: dict[str, Any]) -> dict[str, Any]:
    """The ``send_cost_*`` fields (module docstring) of one repetition's pair; shares are
    ``None`` when cached's median step is missing or zero, the s2r figures when a case
    lacks its median."""
    step_send, base = float_or_none(send.get("step_ns_median")), float_or_none(cached.get("step_ns_median"))
    d_step = None if step_send is None or base is None else step_send - base
    s2r_send = float_or_none(send.get("s2r_build_encode_decode_ns_median"))
    s2r_cached = float_or_none(cached.get("s2r_build_encode_decode_ns_median"))
    d_s2r = None if s2r_send is None or s2r_cached is None else s2r_send - s2r_cached
    ok = bool(base)
    off = list(dict.fromkeys(w for w in (off_nominal_warning(send),
                                         off_nominal_warning(cached)) if w))
    whole = whole_step_warning(cached)
    send_off = send_step_warning(send, cached)
    noisy = any(step_time_noisy(c) for c in (send, cached))
    return dict(send_cost_step_ns=d_step, send_cost_s2r_ns=d_s2r,
                send_cost_measured_step_ns=base,
                send_cost_share_of_step=d_step / base if ok and d_step is not None else None,
                send_cost_s2r_share_of_step=d_s2r / base if ok and d_s2r is not None else None,
                send_cost_off_nominal=off, send_cost_whole_step_off=[whole] if whole else [],
                send_cost_send_step_off=[send_off] if send_off else [],
                send_cost_step_noisy=noisy)


@dataclass
class CostRow:
    """One (step time, B, codec) of a step-time run, means over its repetitions
    (medians with ``method`` ``sign`` or ``bootstrap``: ``SHARE_STATISTICS``)."""
    step_time_ms: float
    num_running: int
    codec: str
    step_ns: Optional[float]        # send_cost_step_ns
    s2r_ns: Optional[float]         # send_cost_s2r_ns
    measured_step_ns: Optional[float]
    share_step: Optional[float]
    share_s2r: Optional[float]
    off_nominal: list[str] = field(default_factory=list)
    step_noisy: bool = False        # a repetition's send_cost_step_noisy
    whole_step_off: list[str] = field(default_factory=list)  # send_cost_whole_step_off
    repetitions: int = 1            # pairs the means are over
    send_step_off: list[str] = field(default_factory=list)  # send_cost_send_step_off
    #: the 95 % intervals of share_step and share_s2r by ``method`` (``mean_share``:
    #: None with one repetition or fewer pairs than the method needs), as (low, high)
    step_interval: Optional[tuple[float, float]] = None
    s2r_interval: Optional[tuple[float, float]] = None
    method: str = "t"               # the run's --ci-method
    #: the comparison block's ratio of the same median steps, cached/send (point, low,
    #: high; ``stats.paired_ratio``: send's step is cached's plus the difference), which
    #: ``share_line`` checks the whole step's reading against (``ratio_clause``)
    block_ratio: Optional[tuple[Optional[float], Optional[float], Optional[float]]] = None
    #: the highest mean step over median step (a ratio) of the repetitions' send and
    #: cached cases that have the skew warning (over 1.5, ``step_noise.skew_ratio``),
    #: by which ``step_noisy`` is set too; ``None`` where none has it
    step_skewed: Optional[float] = None
    #: the label its send cases ran under (their ``workload``, e.g.
    #: ``num_running=16,step_time_ms=2.0``) where they share one, else ``None``: what the
    #: report's summary table keys the row's shares by
    workload: Optional[str] = None
    #: the row's two shares as the report's summary table gives them (``StepShares``:
    #: the same ``MeanShare`` objects ``share_step``/``step_interval`` and
    #: ``share_s2r``/``s2r_interval`` are read from, so the table's cells state the
    #: figures ``share_line`` does); ``None`` where either share is missing
    shares: Optional["StepShares"] = None

    @property
    def statistic(self) -> str:
        """``mean`` or ``median`` (``SHARE_STATISTICS``): what the row's figures are."""
        return SHARE_STATISTICS[self.method]

    @property
    def warnings(self) -> list[str]:
        """The row's warnings, in the order its share line gives them: off nominal
        (the runner's wait), cached's whole step, send's whole-step difference."""
        return self.off_nominal + self.whole_step_off + self.send_step_off

    @property
    def step_off(self) -> bool:
        """Whether the row's fixed step ran off nominal (the runner's wait,
        ``off_nominal``, or cached's whole step, ``whole_step_off``: its measured step is
        marked ``!``): it did not have the step its label names, so neither share is
        send's cost at that step and both are withheld (``WITHHELD``)."""
        return bool(self.off_nominal or self.whole_step_off)

    @property
    def step_share_withheld(self) -> bool:
        """Whether the whole step's share is withheld: the step ran off nominal
        (``step_off``), or send's whole-step difference is not explained by its
        SchedulerOutput path (``send_step_off``: its step diff is marked ``!``)."""
        return self.step_off or bool(self.send_step_off)


def share_of_means(diff: Optional[float], base: Optional[float]) -> Optional[float]:
    """``diff / base`` (a mean difference over the mean step it is a share of), ``None``
    when either is missing or ``base`` is zero: the one share the terminal and the
    report print beside those two figures."""
    return None if diff is None or not base else diff / base


#: The statistic of the pairs' differences (and of cached's steps, the share's base)
#: each ``--ci-method`` gives a share of, its point and its interval alike: ``t`` the
#: mean (the Student-t interval is of the mean), ``sign`` and ``bootstrap`` the median.
SHARE_STATISTICS = {"t": "mean", "bootstrap": "median", "sign": "median"}


def share_formula(method: str = "t", step: str = "median") -> str:
    """What ``mean_share`` gives by ``method`` (the run's ``--ci-method``) over a
    workload's send/cached pairs, one a repetition, in the words of
    ``report.plots.send_cost_share``'s title and caption: ``mean(send - cached) /
    mean(cached's median step) over repetitions``, each difference send's figure (its
    ``step`` step, ``median`` or ``mean``: ``step_ns_median``, else ``step_ns_mean``; or
    its SchedulerOutput path) less cached's of the same repetition, the base cached's
    ``step`` step; ``median(...)`` for ``sign`` and ``bootstrap``."""
    stat = SHARE_STATISTICS[method]
    return f"{stat}(send - cached) / {stat}(cached's {step} step) over repetitions"


@dataclass(frozen=True)
class MeanShare:
    """Send's cost over a group of send/cached pairs (``mean_share``), in the units of
    its inputs (ns) and as shares of the step (fractions, 0.0123 = 1.23 %), each of
    ``statistic`` (``SHARE_STATISTICS[method]``: mean or median)."""
    diff_ns: Optional[float]        # the pairs' mean (median) difference
    base_ns: Optional[float]        # the pairs' mean (median) measured step (cached's)
    share: Optional[float]          # share_of_means(diff_ns, base_ns)
    low: Optional[float] = None     # share's 95 % interval (``share_bounds``)
    high: Optional[float] = None
    pairs: int = 0                  # pairs the statistic is over
    method: str = "t"               # the interval's method (``--ci-method``)

    @property
    def statistic(self) -> str:
        """``mean`` or ``median``: what ``diff_ns``, ``base_ns`` and the interval are."""
        return SHARE_STATISTICS[self.method]


def mean_share(diffs_ns: Iterable[Any], bases_ns: Iterable[Any],
               method: str = "t") -> MeanShare:
    """Send's cost as a share of the step over repetitions, the one definition the
    findings, the terminal and ``report.plots.send_cost_share`` give, by ``method``
    (the run's ``--ci-method``), whose statistic (``SHARE_STATISTICS``) the point is
    of: ``t``, the mean of the per-pair differences ``diffs_ns`` (send - cached, ns)
    over the mean of the pairs' measured steps ``bases_ns`` (cached's, ns)
    (``share_of_means``, not the mean of the per-pair shares); ``bootstrap`` or
    ``sign``, the median difference over the median step. ``diffs_ns`` and
    ``bases_ns`` are paired by position (one repetition each); a pair missing either
    value (``None``, NaN) is left out.

    The share is a ratio of two noisy figures of the same pairs, and its 95 % interval
    (``share_bounds``) carries the step's noise as well as the difference's, where
    dividing the difference's interval by a fixed step would not: ``t``, the ratio
    estimator's interval for paired samples, ``R +/- t_{n-1,0.975} * sd(d_i - R c_i)
    / (sqrt(n) mean(c))`` (``R`` the share, ``d`` the differences, ``c`` the steps;
    the delta method, Cochran, Sampling Techniques, 3rd ed., 1977, sec. 6.4);
    ``sign``, the shares ``R`` at which the sign test does not reject a median 0 of
    ``d_i - R c_i`` (every step is positive, so the sign-test interval of the per-pair
    shares ``d_i / c_i``, ``stats.sign_interval``); ``bootstrap``, the percentile
    interval of median(d*) / median(c*) over the pairs resampled together
    (``stats.BOOTSTRAP_RESAMPLES``, ``stats.BOOTSTRAP_SEED``). With every step equal
    each is the difference's own interval over that step. No interval with fewer than
    two pairs or fewer than the method needs (``stats.min_pairs``), or where a step is
    not positive. Raises ``ValueError`` on an unknown ``method``."""
    from ipc_bench.analysis.stats import min_pairs

    if method not in SHARE_STATISTICS:
        raise ValueError(f"unknown interval method {method!r}")
    centre = _mean if method == "t" else _median
    pairs = [(d, c) for d, c in ((float_or_none(x), float_or_none(y))
                                 for x, y in zip(list(diffs_ns), list(bases_ns)))
             if d is not None and c is not None]
    diffs, bases = [d for d, _ in pairs], [c for _, c in pairs]
    diff, base = centre(diffs), centre(bases)
    share = share_of_means(diff, base)
    if (share is None or len(pairs) < max(2, min_pairs(method))
            or min(bases) <= 0):
        return MeanShare(diff, base, share, pairs=len(pairs), method=method)
    low, high = share_bounds(diffs, bases, share, method)
    return MeanShare(diff, base, share, low, high, len(pairs), method)


@dataclass(frozen=True)
class StepShares:
    """Send's two shares of cached's step over one workload and codec's send/cached
    pairs (``step_shares``): its SchedulerOutput path's (``s2r``) and its whole step's
    (``whole``), each a ``MeanShare``; ``send_step_ns``, send's own step (cached's
    plus the mean difference, or the median of send's steps under ``sign`` and
    ``bootstrap``); ``step``, which step (``median`` or ``mean``); ``pairs``, the pairs
    given (one a repetition); ``block_ratio``, the comparison block's ratio of the same
    steps, cached's over send's paired by repetition, ``(point, low, high)`` by the
    same method (``stats.paired_ratio``: the block's ``step median`` row), ``low`` and
    ``high`` ``None`` without an interval, ``None`` where a step is missing or not
    positive."""
    s2r: MeanShare
    whole: MeanShare
    send_step_ns: float
    step: str
    pairs: int
    block_ratio: Optional[tuple[Optional[float], Optional[float], Optional[float]]] = None
    #: which of the two shares (``"s2r"``, ``"whole"``) a step-time row withholds
    #: (``CostRow.step_off``: both; ``CostRow.step_share_withheld``: the whole step's),
    #: whose ``MeanShare`` then holds no figure: the report's summary table shows
    #: ``WITHHELD`` there, as the row's share line does; ``()`` for none
    withheld: tuple[str, ...] = ()
    #: the net share (``net_words``): the SchedulerOutput path plus the runner's token-id
    #: bookkeeping (``NET_MEDIAN``), send - cached over the same cached steps, a
    #: ``MeanShare``; ``None`` where no pair has that figure (a summary written before
    #: it, or without the runner's columns)
    net: Optional[MeanShare] = None


def step_shares(s2r_diffs_ns: Iterable[Any], step_diffs_ns: Iterable[Any],
                cached_steps_ns: Iterable[Any], method: str = "t",
                step: str = "median", net_diffs_ns: Iterable[Any] = ()
                ) -> Optional[StepShares]:
    """Send's shares of cached's step over one workload and codec's pairs, paired by
    position (one repetition each): the SchedulerOutput path's differences
    ``s2r_diffs_ns`` and the whole steps' ``step_diffs_ns`` (send - cached, ns) over
    cached's ``step`` step ``cached_steps_ns`` (``mean_share`` by ``method``: the
    share ``share_formula`` names); ``None`` where either share is missing. Beside them,
    the comparison block's ratio of the same steps (``StepShares.block_ratio``: send's
    step is cached's plus the difference), which ``steady_share_words`` checks the whole
    step's reading against; and the net share (``StepShares.net``) of ``net_diffs_ns``
    (the path plus the runner's id bookkeeping, send - cached, ns, paired alike, a
    missing one ``None``), by the same ``mean_share``, ``None`` where none is given.
    The one computation of the report's share findings and summary table and of the
    terminal's ``send's share`` line (``steady_share_words`` words it)."""
    s2r_diffs, diffs, cached = list(s2r_diffs_ns), list(step_diffs_ns), list(cached_steps_ns)
    s2r, whole = mean_share(s2r_diffs, cached, method), mean_share(diffs, cached, method)
    if s2r.share is None or whole.share is None:
        return None
    nets = list(net_diffs_ns)
    net = mean_share(nets, cached, method) if nets else None
    # send's own figure: the mean of its steps is cached's mean plus the mean difference;
    # a median is not, so send's median is taken from send's steps
    send_ns = (whole.base_ns + whole.diff_ns if whole.statistic == "mean" else
               _median(s for s, _ in _step_pairs(diffs, cached)))
    return StepShares(s2r, whole, send_ns, step, len(diffs),
                      _block_ratio(diffs, cached, method, min_pairs=1),
                      net=net if net is not None and net.share is not None else None)


def steady_share_words(shares: StepShares, s2r_median: bool = True, emulated: str = "",
                       verdict: str = "") -> str:
    """``step_shares`` in words, the same in the report's findings and the terminal's
    ``send's share`` line: ``send's SchedulerOutput path (build + encode + decode,
    medians) costs 6.10 µs per step more than cached's, 0.80 % of cached's 765.3 µs
    median step (EMULATED); send's whole median step, 785.3 µs, is 2.61 % longer than
    cached's (noisier; one repetition, no interval).`` ``s2r_median``: the path's
    differences are of per-step medians; ``emulated``: what the step holds
    (``emulated_words``); ``verdict``: a clause after the whole step's difference (the
    report's recorded comparison). Without one, where the comparison block's ratio of
    the same steps reads otherwise than the whole step's share (``block_clause``), a
    clause names it: a share within noise whose block ratio reaches beyond 1.1x either way or
    excludes 1 is not called within noise alone. With 2+ repetitions a median step is
    named by the statistic over them (``as the mean of its 3 repetitions' median
    steps``); where the SchedulerOutput path's pairs are fewer than the whole step's (a
    case whose floor replay was cut short lost the runner's per-step columns), the
    count it is over is named (``_step_names``)."""
    from ipc_bench.analysis.stats import ONE_PAIR

    s2r, whole, n, step = shares.s2r, shares.whole, shares.pairs, shares.step
    over = (f"{whole.statistic}s over {n} repetitions of each case's figures" if n > 1
            else ONE_PAIR)
    base, send_whole = _step_names(shares)
    if n > 1 and step == "median":
        stat = whole.statistic
        over += (", not the geometric means over repetitions that `bench.py`'s comparison "
                 "block prints as `step median`" if stat == "mean" else
                 ", not the geometric means the comparison block prints as `step "
                 "median`; each % is the paired "
                 "differences' median over cached's median step, not the two medians' gap")
    path = (f"send's SchedulerOutput path (build + encode + decode"
            f"{', medians' if s2r_median else ''}) "
            + path_difference(s2r.diff_ns, s2r.share, bounds(s2r), base + emulated,
                              s2r.method, s2r.pairs, s2r.base_ns))
    longer = step_difference(whole.share, bounds(whole), whole.method, whole.pairs)
    block = "" if verdict else block_clause(shares)  # a verdict: the block disagrees
    net = net_words(shares)
    return f"{path}; {send_whole} {longer}{verdict}{block} (noisier; {over})." + (
        f" {net}" if net else "")


#: What the net share counts (``net_words``, the report's summary table's note).
NET_COUNTS = ("the SchedulerOutput path plus the runner's token-id bookkeeping, "
              "update_states + write_back, per-step medians of the sum: update_states "
              "writes the ids received under send, write_back the ids sampled under "
              "cached")


def net_words(shares: StepShares) -> str:
    """The net share (``shares.net``) in words, the sentence after
    ``steady_share_words``' line: ``Net share (NET_COUNTS): send's policy work costs
    42.29 µs per step more than cached's, 0.42 % of cached's step (send - cached:
    [+0.21, +0.64] %, 95 % Student-t interval).`` (``path_difference``' words and
    rule, of the same cached steps as the path's share), `` (over 2 of 3
    repetitions)`` after the step where fewer pairs have the figure; '' without a
    net share. Raises nothing."""
    net = shares.net
    if net is None or net.share is None:
        return ""
    fewer = (f" (over {'one' if net.pairs == 1 else net.pairs} of {shares.pairs} "
             "repetitions)" if net.pairs < shares.pairs else "")
    return (f"Net share ({NET_COUNTS}): send's policy work "
            + path_difference(net.diff_ns, net.share, bounds(net), "cached's step" + fewer,
                              net.method, net.pairs, net.base_ns) + ".")


def _step_names(shares: StepShares) -> tuple[str, str]:
    """The steps ``steady_share_words`` gives its shares of: cached's (the SchedulerOutput
    path's base, ``shares.s2r.base_ns``) and send's whole step, ending ``,``. One
    repetition: ``cached's 765.3 µs median step``, ``send's whole median step, 785.3
    µs,``. With 2+ repetitions a median step is named by the statistic over them:
    ``cached's step, 132.5 µs as the mean of its 3 repetitions' median steps``, ``send's
    whole step, 129.0 µs as the same mean,``. Where the path's pairs (``s2r.pairs``) are
    fewer than the repetitions (``shares.pairs``: a case that lost the runner's per-step
    columns has no path), cached's step is over those pairs alone and says so (``as the
    mean of 2 of its 3 repetitions' median steps``, ``as the median step of one of its
    3 repetitions``; ``cached's 309.2 µs mean step (2 of 3 repetitions)`` of a mean
    step), and send's names its own count and the cached step its share is of, which
    is over every repetition (``send's whole step, 456.7 µs as the mean of its 3
    repetitions' median steps (cached's 301.5 µs),``)."""
    s2r, whole, n, step = shares.s2r, shares.whole, shares.pairs, shares.step
    cached, send = f"{s2r.base_ns / 1e3:,.1f} µs", f"{shares.send_step_ns / 1e3:,.1f} µs"
    fewer = 0 < s2r.pairs < n
    whole_base = f" (cached's {whole.base_ns / 1e3:,.1f} µs)" if fewer else ""
    if n < 2 or step != "median":
        count = f" ({'one' if s2r.pairs == 1 else s2r.pairs} of {n} repetitions)"
        return (f"cached's {cached} {step} step{count if fewer else ''}",
                f"send's whole {step} step, {send}{whole_base},")
    stat = whole.statistic  # named by the statistic over repetitions
    if not fewer:
        return (f"cached's step, {cached} as the {stat} of its {n} repetitions' median "
                "steps", f"send's whole step, {send} as the same {stat},")
    of = (f"the median step of one of its {n} repetitions" if s2r.pairs == 1 else
          f"the {stat} of {s2r.pairs} of its {n} repetitions' median steps")
    return (f"cached's step, {cached} as {of}",
            f"send's whole step, {send} as the {stat} of its {n} repetitions' median "
            f"steps{whole_base},")


def reading(interval: Optional[tuple[float, float]], null: float = 0.0) -> Optional[str]:
    """What an interval says of a difference (``null`` 0: a share, send - cached over
    cached's step; 1: a ratio, whose 1.1x either way is about 1):
    ``within noise`` where it holds
    ``null`` and stays within 1.1x either way (``holds_zero``, ``too_wide``), ``inconclusive``
    where it holds ``null`` but reaches beyond, ``differs`` where it excludes
    ``null``; ``None`` without an interval."""
    if interval is None or None in interval:
        return None
    low, high = interval[0] - null, interval[1] - null
    if not holds_zero((low, high)):
        return "differs"
    return "inconclusive" if too_wide((low, high)) else "within noise"


#: What the comparison block's ratio interval does, by its ``reading``, in
#: ``block_clause``.
BLOCK_READS = {"within noise": "holds 1 and stays within 1.1x either way",
               "inconclusive": "holds 1 but reaches beyond 1.1x either way",
               "differs": "excludes 1"}


def block_clause(shares: StepShares) -> str:
    """Where the whole step's share (``shares.whole``) and the comparison block's ratio
    of the same steps (``shares.block_ratio``) read differently (``reading``: within
    noise, inconclusive, differs), the clause after the share's words naming the
    block's ratio (``stats.paired_ratio``, cached's step over send's) and interval: ``
    by this share, but the comparison block's step median, cached/send 1.003 [0.912,
    1.102], holds 1 but reaches beyond 1.1x either way: within noise is not established`` where
    the share is within noise; ``, but ..., holds 1 ...: the difference is not
    established`` where it excludes 0; ``, though ..., holds 1 and stays within 1.1x either way``
    (or ``excludes 1``) where it is inconclusive (the stricter reading, kept); ``; ...``
    with the block's words alone where the share is not resolved (``unresolved``). ``''``
    where they agree or either has no interval (``ratio_clause``)."""
    return ratio_clause(bounds(shares.whole), shares.block_ratio, shares.step)


def ratio_clause(share_interval: Optional[tuple[float, float]],
                 ratio: Optional[tuple[Optional[float], Optional[float], Optional[float]]],
                 step: str = "median") -> str:
    """``block_clause`` of a whole step's share interval (fractions, send - cached over
    cached's step) and the comparison block's ratio of the same ``step`` steps
    (cached/send ``(point, low, high)``), for the steady share lines and the step-time
    scenario's (``share_line``) alike; ``''`` where they read alike or either has no
    interval."""
    from ipc_bench.analysis.metrics import metric
    from ipc_bench.analysis.stats import point_text, ratio_interval

    if ratio is None or None in ratio:
        return ""
    mine, theirs = reading(share_interval), reading((ratio[1], ratio[2]), 1.0)
    if mine is None or mine == theirs:
        return ""
    block = (f"the comparison block's {metric(f'step_ns_{step}').name}, cached/send "
             f"{point_text(ratio[0], 3, 1.0)} {ratio_interval(ratio[1], ratio[2])}, "
             f"{BLOCK_READS[theirs]}")
    if mine == "within noise" and unresolved(share_interval):
        return f"; {block}"
    if mine == "within noise":
        return f" by this share, but {block}: within noise is not established"
    if mine == "differs":
        return f", but {block}: the difference is not established"
    return f", though {block}"


#: The summary's mean context per request of an emulated case's counted steps (tokens),
#: which the model time a share's step holds was computed for.
CONTEXT_KEY = "emulated_context_tokens_per_request_mean"


def emulated_words(records: Iterable[dict[str, Any]]) -> str:
    """What the step a share is of holds where the case ``records`` (one workload and
    codec's) ran the emulated model: the emulated model time (uncalibrated: the time at
    the GPU rates ``engine/gpu_figures.json`` assumes, not measured here, no bound on a
    GPU's), at the cases' mean context per request (``CONTEXT_KEY``, where every case
    records it), and this machine's control plane, both measured here: ``(measured
    here: an emulated model time at assumed GPU rates, uncalibrated, for a mean 391.0
    context tokens per request, and this machine's control plane)``; ``''`` where none
    did."""
    marked = [r for r in records if r.get("emulated") is True]
    if not marked:
        return ""
    context = [float_or_none(r.get(CONTEXT_KEY)) for r in marked]
    at = ("" if None in context else
          f", for a mean {sum(context) / len(context):,.1f} context tokens per request")
    rates = (" at assumed GPU rates, uncalibrated" if any(
        r.get("gpu_figures") != "calibrated" for r in marked) else "")
    return (f" (measured here: an emulated model time{rates}{at}, and this machine's "
            f"control plane{_lengthened(marked)})")


def _lengthened(records: list[dict[str, Any]]) -> str:
    """``emulated_words``' clause where a cached case of ``records`` has the emulated
    step's warning (``emulated_step_warning``): ``, which lengthened cached's median
    step to 1.47x the model's time, more than the control plane accounts for (warned):
    the share is of that lengthened step (the case's warning says by what)`` (``up to`` the
    largest ratio where several did); ``''`` where none has it."""
    ratios = [r["step_ns_median"] / r["emulated_step_ns_per_step"] for r in records
              if emulated_step_warning(r)]
    if not ratios:
        return ""
    upto = "up to " if len(ratios) > 1 else ""
    return (f", which lengthened cached's median step to {upto}{max(ratios):.2f}x the "
            "model's time, more than the control plane accounts for (warned): the share "
            "is of that lengthened step (the case's warning says by what)")


#: The field of a case's SchedulerOutput path, per-step medians (build + encode + decode).
S2R_MEDIAN = "s2r_build_encode_decode_ns_median"
#: The field of the same path plus the runner's token-id bookkeeping (update_states +
#: write_back), per-step medians of the sum: the net share's (``net_words``).
NET_MEDIAN = "s2r_net_ns_median"


def net_difference(send: dict[str, Any], cached: dict[str, Any]) -> Optional[float]:
    """Send's ``NET_MEDIAN`` less cached's (ns), ``None`` where either lacks it."""
    a, b = float_or_none(send.get(NET_MEDIAN)), float_or_none(cached.get(NET_MEDIAN))
    return None if a is None or b is None else a - b


def record_step_shares(records: Iterable[dict[str, Any]], method: str = "t"
                       ) -> dict[tuple, StepShares]:
    """``step_shares`` of the send/cached pairs of summary ``records`` (one run's
    cases, no pandas: the terminal's), by (workload, codec), from the complete cases
    that have a median step (``step_ns_median``) and a SchedulerOutput path
    (``S2R_MEDIAN``), paired by repetition within their scenario, workload, codec,
    transport and model (``stats.arms_by_repetition``, as ``stats.paired`` pairs the
    report's): the pairs the report's findings and summary table give the shares of,
    with the net share of those that have ``NET_MEDIAN`` (``net_difference``)."""
    from ipc_bench.analysis.stats import COMPARED_GROUP, arms_by_repetition

    ok = [r for r in records if r.get("complete") and
          float_or_none(r.get("step_ns_median")) is not None and
          float_or_none(r.get(S2R_MEDIAN)) is not None]
    pairs: dict[tuple, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    for key, arms in arms_by_repetition(ok, COMPARED_GROUP).items():
        sends, cacheds = arms.get(SEND, {}), arms.get(CACHED, {})
        for rep in sorted(set(sends) & set(cacheds)):
            pairs[(key[1], key[2])].append((sends[rep], cacheds[rep]))
    out = {}
    for key, rows in pairs.items():
        shares = pair_step_shares(rows, method)
        if shares is not None:
            out[key] = shares
    return out


def pair_step_shares(pairs: Iterable[tuple[dict[str, Any], dict[str, Any]]],
                     method: str = "t") -> Optional[StepShares]:
    """``step_shares`` of (first, second) summary record ``pairs``, the first in send's
    place and the second in cached's (first - second over the second's step), over the
    pairs where both have a median step (``step_ns_median``) and a SchedulerOutput path
    (``S2R_MEDIAN``), with the net share of those that have ``NET_MEDIAN``
    (``net_difference``): the one pairing of send against cached
    (``record_step_shares``) and of an A/A pair's baseline against its copy
    (``findings._aa_share_words``). ``None`` where no pair has the figures."""
    ok = [(t, b) for t, b in pairs
          if None not in (float_or_none(t.get("step_ns_median")),
                          float_or_none(b.get("step_ns_median")),
                          float_or_none(t.get(S2R_MEDIAN)), float_or_none(b.get(S2R_MEDIAN)))]
    if not ok:
        return None
    nets = [net_difference(t, b) for t, b in ok]
    return step_shares([float(t[S2R_MEDIAN]) - float(b[S2R_MEDIAN]) for t, b in ok],
                       [float(t["step_ns_median"]) - float(b["step_ns_median"])
                        for t, b in ok],
                       [float(b["step_ns_median"]) for _, b in ok], method=method,
                       net_diffs_ns=nets if any(x is not None for x in nets) else ())


def share_bounds(diffs: list[float], bases: list[float], share: float,
                 method: str) -> tuple[float, float]:
    """The 95 % interval (fractions) of ``share`` (``mean_share``'s point) over the
    pairs (``diffs[i]``, ``bases[i]``), by ``method`` (``mean_share`` says how), the
    steps all positive and the pairs as many as the method needs."""
    import numpy as np

    from ipc_bench.analysis.stats import (BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, CONFIDENCE,
                                          sign_interval, t_interval)

    d, c = np.asarray(diffs, dtype=float), np.asarray(bases, dtype=float)
    if method == "t":
        _, low, high = t_interval(d - share * c)  # residuals of mean 0
        return share + low / float(c.mean()), share + high / float(c.mean())
    if method == "sign":
        _, low, high = sign_interval(d / c)
        return low, high
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    idx = rng.integers(0, d.size, size=(BOOTSTRAP_RESAMPLES, d.size))
    ratios = np.median(d[idx], axis=1) / np.median(c[idx], axis=1)
    low, high = np.percentile(ratios, [100 * (1 - CONFIDENCE) / 2,
                                       100 * (1 + CONFIDENCE) / 2])
    return float(low), float(high)


def _mean(values: Iterable[Any]) -> Optional[float]:
    vals = [v for v in (float_or_none(x) for x in values) if v is not None]
    return sum(vals) / len(vals) if vals else None


def _median(values: Iterable[Any]) -> Optional[float]:
    vals = sorted(v for v in (float_or_none(x) for x in values) if v is not None)
    if not vals:
        return None
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2


def cost_rows(records: Iterable[dict[str, Any]], method: str = "t") -> list[CostRow]:
    """The send records carrying ``send_cost_*`` fields, grouped by ``step_time_ms``,
    ``num_running`` and ``codec`` (sorted): differences and measured step the means
    over repetitions, shares the mean difference over the mean step, with ``t``
    intervals; with ``method`` ``sign`` or ``bootstrap`` (the run's ``--ci-method``),
    medians and that method's intervals (``mean_share``)."""
    records = list(records)
    cached = {_pair_key(r): r for r in records if r.get("policy") == CACHED}

    def noise(r: dict[str, Any]) -> tuple[bool, Optional[float]]:
        # (noisy, the highest skew ratio or None) of a send record's pair: the block CV
        # or the skew rule of either case; where its cached case is not among
        # ``records``, its recorded send_cost_step_noisy and send's own skew
        pair = [r] + ([cached[_pair_key(r)]] if _pair_key(r) in cached else [])
        skew = max((x for x in map(skew_ratio, pair) if x is not None), default=None)
        noisy = (any(block_cv_noisy(c) for c in pair) if len(pair) == 2
                 else r.get("send_cost_step_noisy") is True)
        return noisy or skew is not None, skew

    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("policy") != SEND or "send_cost_share_of_step" not in r:
            continue
        t, b = float_or_none(r.get("step_time_ms")), float_or_none(r.get("num_running"))
        if t is None or b is None or float_or_none(r.get("send_cost_step_ns")) is None:
            continue
        groups[(t, int(b), str(r.get("codec")))].append(r)
    rows = []
    for (t, b, codec), rs in sorted(groups.items()):
        off, whole, send_off = (_each_once(rs, f"send_cost_{k}")
                                for k in ("off_nominal", "whole_step_off", "send_step_off"))
        bases = [r.get("send_cost_measured_step_ns") for r in rs]
        diffs = [r.get("send_cost_step_ns") for r in rs]
        step = mean_share(diffs, bases, method)
        s2r = mean_share((r.get("send_cost_s2r_ns") for r in rs), bases, method)
        marks = [noise(r) for r in rs]
        block = _block_ratio(diffs, bases, method)
        row = CostRow(
            t, b, codec, step.diff_ns, s2r.diff_ns, step.base_ns, step.share, s2r.share,
            off, any(n for n, _ in marks), whole, len(rs),
            send_off, bounds(step), bounds(s2r), method, block,
            step_skewed=max((k for _, k in marks if k is not None), default=None))
        labels = {str(r["workload"]) for r in rs if r.get("workload") is not None}
        row.workload = labels.pop() if len(labels) == 1 else None
        row.shares = _row_shares(row, s2r, step, diffs, bases)
        rows.append(row)
    return rows


def _row_shares(row: CostRow, s2r: MeanShare, step: MeanShare, diffs: list[Any],
                bases: list[Any]) -> Optional[StepShares]:
    """``CostRow.shares`` of a step-time row: its SchedulerOutput path's share ``s2r``
    and its whole median step's ``step`` (``mean_share`` of the send-cost ``diffs`` over
    cached's measured steps ``bases``, ns), send's step as ``step_shares`` gives it, a
    withheld share (``CostRow.step_off``, ``CostRow.step_share_withheld``) blank and
    named in ``StepShares.withheld``; ``None`` where either share is missing."""
    if s2r.share is None or step.share is None:
        return None
    send_ns = (step.base_ns + step.diff_ns if step.statistic == "mean" else
               _median(s for s, _ in _step_pairs(diffs, bases)))
    shares = StepShares(s2r, step, send_ns, "median", row.repetitions, row.block_ratio)
    withheld = (("s2r", "whole") if row.step_off else ("whole",)
                if row.step_share_withheld else ())
    if not withheld:
        return shares
    blank = MeanShare(None, None, None, pairs=row.repetitions, method=row.method)
    return replace(shares, withheld=withheld, whole=blank,
                   s2r=blank if "s2r" in withheld else s2r)


def _pair_key(r: dict[str, Any]) -> tuple:
    """The run, scenario, step time, running count, codec and repetition of a case
    record, gaps (``None``, NaN) as ``None``: a send case's and its cached pair's are
    equal."""
    return tuple(None if v is None or (isinstance(v, float) and v != v) else v
                 for v in (r.get(k) for k in ("run_id", "scenario", "step_time_ms",
                                              "num_running", "codec", "repetition")))


def _step_pairs(step_diffs_ns: list[Any], cached_steps_ns: list[Any]
                ) -> list[tuple[float, float]]:
    """(send's step, cached's step) in ns per pair with both figures: send's is cached's
    plus the difference (send - cached)."""
    return [(c + d, c) for c, d in zip((float_or_none(x) for x in cached_steps_ns),
                                        (float_or_none(x) for x in step_diffs_ns))
            if c is not None and d is not None]


def _block_ratio(step_diffs_ns: list[Any], cached_steps_ns: list[Any], method: str,
                 min_pairs: int = 2
                 ) -> Optional[tuple[Optional[float], Optional[float], Optional[float]]]:
    """The comparison block's cached/send ratio of the median steps of the pairs
    (``_step_pairs``; ``stats.paired_ratio`` by ``method``), for ``step_shares`` and
    the step-time rows (``cost_rows``); ``None`` with fewer than ``min_pairs`` whole
    pairs or where a step is 0 or less (no ratio)."""
    from ipc_bench.analysis.stats import paired_ratio

    steps = _step_pairs(step_diffs_ns, cached_steps_ns)
    if len(steps) < min_pairs:
        return None
    ratio = paired_ratio([s for s, _ in steps], [c for _, c in steps], method)
    return None if ratio[0] is None else ratio


def bounds(share: MeanShare) -> Optional[tuple[float, float]]:
    """``(low, high)`` of ``share``'s interval, ``None`` without one."""
    return None if share.low is None or share.high is None else (share.low, share.high)


#: What a share's interval is of, after its method's name (``share_interval``): the
#: sign test's the per-pair shares, the bootstrap's the pairs resampled together
#: (``share_bounds``); the t-interval's is the share's own (no words).
SHARE_INTERVAL_OF = {"t": "", "sign": " of the per-pair shares",
                     "bootstrap": ", pairs resampled"}


def share_interval(interval: Optional[tuple[float, float]], method: str = "t",
                   pairs: int = 0) -> str:
    """`` (send - cached: [+1.02, +3.40] %, 95 % Student-t interval)`` of a share's
    interval (fractions: ``MeanShare.low``/``high``, signed send - cached over cached's
    step) by ``method`` (``MeanShare.method``; ``sign``: ``95 % sign-test interval of
    the per-pair shares``, ``SHARE_INTERVAL_OF``); without one, where ``pairs`` (2 or
    more) are fewer than ``method`` needs (``stats.min_pairs``), `` (no interval: a
    sign-test interval needs >= 6 pairs)``, the pair tables' words, else '' (one
    repetition). An end that 2 decimals would round onto 0 % while it is not 0, or
    across or onto the noise band's edge (-9.09 %, +10 %: ``too_wide``), gets more
    (``stats.interval_end``): ``[-3.10, -0.0004] %``, ``[-9.089, +4.00] %``."""
    from ipc_bench.analysis.stats import INTERVAL_NAMES, interval_end, min_pairs

    name = INTERVAL_NAMES[method]
    if interval is None:
        need = min_pairs(method)
        return (f" (no interval: a {name} interval needs >= {need} pairs)"
                if 2 <= pairs < need else "")
    low, high = interval
    of = SHARE_INTERVAL_OF.get(method, "")
    ends = ", ".join(interval_end(100 * end, 2, sign=True, band="percent")
                     for end in (low, high))
    return (f" (send - cached: [{ends}] %, "
            f"95 % {name} interval{of})")


def holds_zero(interval: Optional[tuple[float, float]]) -> bool:
    """Whether a share's interval holds 0 (no interval: False): its difference is then
    never worded as a cost or saving, but as noise where the interval also stays within
    1.1x either way (``within noise of cached's``), else as inconclusive (``too_wide``)."""
    return interval is not None and interval[0] <= 0 <= interval[1]


def too_wide(interval: Optional[tuple[float, float]]) -> bool:
    """Whether a share's interval (fractions of cached's step) reaches beyond a factor
    of 1.1 either way: below -9.09 % or above +10 % (``stats.inconclusive`` on the ratio
    send/cached = 1 + share, the rule of every "within noise" the terminal and the report
    print, so that the share and the comparison block's cached/send ratio of the same
    steps, nearly its reciprocal, read alike), so that one holding 0 is inconclusive, not
    noise. False without an interval."""
    from ipc_bench.analysis.stats import inconclusive

    return interval is not None and inconclusive(1 + interval[0], 1 + interval[1])


def _inconclusive(interval: Optional[tuple[float, float]]) -> str:
    """``, inconclusive: the interval reaches beyond 1.1x either way, ...`` (``stats.
    INCONCLUSIVE_CLAUSE``) where ``interval`` holds 0 and is ``too_wide``, else ''."""
    from ipc_bench.analysis.stats import INCONCLUSIVE_CLAUSE

    return f", {INCONCLUSIVE_CLAUSE}" if holds_zero(interval) and too_wide(interval) else ""


def unresolved(interval: Optional[tuple[float, float]],
               threshold: float = THRESHOLD) -> bool:
    """Whether a share's interval holds 0 and stays within 1.1x either way (``holds_zero``,
    not ``too_wide``) but reaches beyond ``threshold`` (1 % of the step, the share the
    step-time crossings read) either way: the difference is then not resolved, neither a
    cost nor shown small, and is not called within noise (``_holds_zero_words``)."""
    return (holds_zero(interval) and not too_wide(interval)
            and max(-interval[0], interval[1]) > threshold)


def _holds_zero_words(interval: tuple[float, float], base_ns: Optional[float]
                      ) -> tuple[str, str]:
    """The verb and the trailing clause of a path's share whose ``interval`` holds 0
    (``path_difference``): ``differs from cached's by`` where it is
    ``too_wide``; ``is not resolved from cached's:`` with, after the interval, the
    interval in µs per step of ``base_ns`` (cached's step the share is of) and why,
    where it is ``unresolved`` (``, [-49, +363] µs per step: the interval holds 0 but
    reaches beyond 1 % of the step, so it does not show the cost is small``); ``is
    within noise of cached's:`` otherwise."""
    if too_wide(interval):
        return "differs from cached's by", ""
    if not unresolved(interval):
        return "is within noise of cached's:", ""
    us = ""
    if base_ns:
        ends = [end * base_ns / 1e3 for end in interval]
        digits = 1 if max(map(abs, ends)) < 10 else 0
        us = ", [" + ", ".join(f"{e:+,.{digits}f}" for e in ends) + "] µs per step"
    return ("is not resolved from cached's:",
            f"{us}: the interval holds 0 but reaches beyond {100 * THRESHOLD:g} % of the "
            "step, so it does not show the cost is small")


def path_difference(diff_ns: float, share: float,
                    interval: Optional[tuple[float, float]], base: str,
                    method: str = "t", pairs: int = 0,
                    base_ns: Optional[float] = None) -> str:
    """Send's SchedulerOutput path against cached's in words, the same in the terminal's
    share lines and the report's findings: ``costs 1.96 µs per step more than cached's,
    0.03 % of BASE (send - cached: [...] %, ...)``, or, where ``interval`` holds 0 and
    stays within 1.1x either way (``holds_zero``, ``too_wide``), ``is within noise of cached's:
    +1.96 µs per step, +0.03 % of BASE ...``, or, where it holds 0 but reaches beyond
    1.1x either way, ``differs from cached's by +1.96 µs per step, +0.03 % of BASE (...),
    inconclusive: the interval reaches beyond 1.1x either way, ...``; where it holds 0
    within 1.1x but reaches beyond 1 % of the step (``unresolved``), ``is not resolved
    from cached's: +157.16 µs per step, +1.34 % of BASE (...), [-49, +363] µs per step:
    the interval holds 0 but reaches beyond 1 % of the step, ...`` (the µs with
    ``base_ns``, cached's step in ns). ``diff_ns``: send - cached
    (ns); ``share``: of the step (fraction); ``method``, ``pairs``: the interval's
    (``share_interval``)."""
    from ipc_bench.analysis.stats import point_text

    after = ""
    if holds_zero(interval):
        verb, after = _holds_zero_words(interval, base_ns)
        text = (f"{verb} {point_text(diff_ns / 1e3, 2, sign=True)} µs per step, "
                f"{point_text(100 * share, 2, sign=True)} % of {base}")
    else:
        text = f"costs {more_or_less(diff_ns)}, {unsigned_pct(share)} % of {base}"
    return text + share_interval(interval, method, pairs) + after + _inconclusive(interval)


def step_difference(share: float, interval: Optional[tuple[float, float]],
                    method: str = "t", pairs: int = 0) -> str:
    """Send's whole step against cached's in words (``share``: send - cached over
    cached's step, a fraction): ``is 41.56 % longer than cached's (send - cached: [...]
    %, ...)`` (or ``shorter``), or, where ``interval`` holds 0 and stays within 1.1x either way,
    ``is within noise of cached's: +1.56 % (...)``, or, where it holds 0 but reaches
    beyond 1.1x either way, ``differs from cached's by +1.35 % (send - cached: [-14.41, +17.11] %,
    ...), inconclusive: the interval reaches beyond 1.1x either way, ...``, or, where it holds
    0 within 1.1x but reaches beyond 1 % of the step (``unresolved``), ``is not resolved
    from cached's: +4.06 % (send - cached: [-0.20, +8.33] %, ...): the interval holds 0
    but reaches beyond 1 % of the step, so it does not show the cost is small``: the
    words of ``path_difference``, by the one ``_holds_zero_words``; ``method``,
    ``pairs``: the interval's (``share_interval``)."""
    from ipc_bench.analysis.stats import point_text

    after = ""
    if holds_zero(interval):
        verb, after = _holds_zero_words(interval, None)
        text = f"{verb} {point_text(100 * share, 2, sign=True)} %"
    else:
        text = (f"is {unsigned_pct(share)} % {'longer' if share >= 0 else 'shorter'} than "
                "cached's")
    return text + share_interval(interval, method, pairs) + after + _inconclusive(interval)


def _each_once(records: list[dict[str, Any]], key: str) -> list[str]:
    """The warnings listed under ``key`` in ``records``, each once, in order."""
    return list(dict.fromkeys(w for r in records for w in (r.get(key) or ())))


def pct(share: Optional[float]) -> str:
    """A share as the terminal's and the report's percentage figure: ``"41.56"``."""
    return "-" if share is None else f"{100 * share:.2f}"


def more_or_less(diff_ns: float, than: str = "cached's") -> str:
    """A signed difference in ns as words, its size in µs and its sign as ``more`` or
    ``less``: ``"3.24 µs per step less than cached's"`` for -3,240 ns (never "-3.24 µs
    ... more"); one that 2 decimals would round onto 0 while it is not 0 gets more
    (``stats.point_text``): ``"0.004 µs per step more ..."``. Its share is worded with
    ``unsigned_pct``."""
    from ipc_bench.analysis.stats import point_text

    return (f"{point_text(abs(diff_ns) / 1e3, 2)} µs per step "
            f"{'more' if diff_ns >= 0 else 'less'} "
            f"than {than}")


def unsigned_pct(share: Optional[float]) -> str:
    """``pct`` of the size of ``share``, for a share worded after ``more_or_less``
    (whose ``more`` or ``less`` carries the sign): ``"1.30"`` for -0.013; one that 2
    decimals would round onto 0 while it is not 0 gets more (``stats.point_text``):
    ``"0.004"`` for 0.00004."""
    from ipc_bench.analysis.stats import point_text

    return "-" if share is None else point_text(100 * abs(share), 2)


TABLE_HEADER = ["step ms", "B", "codec", "measured step ms", "step diff us",
                "% of measured step", "s2r diff us", "% of measured step"]
#: A share withheld (``CostRow.step_off``, ``CostRow.step_share_withheld``), in the
#: table's cells and the share lines alike; ``WITHHELD_NOTE`` says why.
WITHHELD = "-*"
#: The line under the terminal's table when a share is withheld (``WITHHELD``).
WITHHELD_NOTE = ("-* = a share withheld: in a row whose measured step is marked ! the "
                 "fixed step ran off nominal, so the row did not have the step its label "
                 "names and neither share is send's cost at that step; in a row whose step "
                 "diff is marked ! send's whole step ran longer than its SchedulerOutput "
                 "path explains (send's case descheduled), so its whole-step share is not "
                 "send's cost. The rows' warnings below say why.")


def table_cells(row: CostRow) -> list[str]:
    """The terminal table's cells of one row (``TABLE_HEADER``); an off-nominal row's
    ``measured step ms`` is marked ``!`` (the runner's wait or the whole step off nominal:
    ``off_nominal_warning``, ``whole_step_warning``), and its ``step diff us`` where
    send's whole-step difference is not explained by its SchedulerOutput path
    (``send_step_warning``); a share such a mark makes unquotable shows ``WITHHELD``
    (``CostRow.step_off``: both; ``CostRow.step_share_withheld``: the whole step's)."""
    measured = ("-" if row.measured_step_ns is None
                else f"{row.measured_step_ns / 1e6:.2f}" + ("!" if row.step_off else ""))
    step = ("-" if row.step_ns is None
            else f"{row.step_ns / 1e3:.1f}" + ("!" if row.send_step_off else ""))
    return [f"{row.step_time_ms:g}", str(row.num_running), row.codec, measured,
            step, WITHHELD if row.step_share_withheld else pct(row.share_step),
            "-" if row.s2r_ns is None else f"{row.s2r_ns / 1e3:.2f}",
            WITHHELD if row.step_off else pct(row.share_s2r)]


def share_line(row: CostRow) -> str:
    """One row in words, the same in the terminal and the report, e.g. ``fixed step 2 ms,
    B = 16, msgpack: send's SchedulerOutput path (build + encode + decode, medians) costs
    1.96 µs per step more than cached's, 0.03 % of the measured step (cached's median,
    5.61 ms); send's whole median step is 41.56 % longer than cached's (noisier). One
    repetition, no interval.``; a negative difference reads ``less than cached's``
    (``more_or_less``) or ``shorter than cached's``, its share unsigned: a row of one
    repetition says so (``stats.ONE_PAIR``, the words of the findings' paired tokens/s),
    one of several gives its aggregation (means, or medians under ``--ci-method sign``
    or ``bootstrap``: ``CostRow.statistic``) and each share's interval by the row's
    method (``share_interval``: ``no interval: a sign-test interval needs >= 6 pairs``
    with fewer), and a difference whose interval holds 0 is worded as noise where it
    stays within 1.1x either way (``holds_zero``: ``is within noise of cached's: +0.41 %``), else
    as inconclusive (``too_wide``: ``differs from cached's by +1.35 % (...),
    inconclusive: ...``). A share the row's
    warnings make unquotable reads ``WITHHELD`` (``CostRow.step_off``: both, e.g. ``its
    share of the measured step (cached's median, 6.66 ms): -*; send's whole median step
    against cached's: -*``; ``CostRow.step_share_withheld``: the whole step's), with a
    sentence saying why (``_withheld_why``)."""
    from ipc_bench.analysis.stats import ONE_PAIR

    where = f"fixed step {row.step_time_ms:g} ms, B = {row.num_running}, {row.codec}"
    step = ("" if row.measured_step_ns is None
            else f" (cached's median, {row.measured_step_ns / 1e6:.2f} ms)"
            if row.repetitions < 2 else f" (cached's median, {row.measured_step_ns / 1e6:.2f}"
            f" ms as the {row.statistic} of its {row.repetitions} repetitions' medians)")
    s2r = ("the SchedulerOutput path's difference is missing" if row.s2r_ns is None else
           "send's SchedulerOutput path (build + encode + decode, medians) ")
    method, n, stat = row.method, row.repetitions, row.statistic
    if row.s2r_ns is not None and row.step_off:
        s2r += (f"costs {more_or_less(row.s2r_ns)}; its share of the measured step{step}: "
                f"{WITHHELD}")
    elif row.s2r_ns is not None:
        s2r += path_difference(row.s2r_ns, row.share_s2r, row.s2r_interval,
                               f"the measured step{step}", method, n, row.measured_step_ns)
    whole = ("" if row.share_step is None else
             f"; send's whole median step against cached's: {WITHHELD}"
             if row.step_share_withheld else "; send's whole median step "
             f"{step_difference(row.share_step, row.step_interval, method, n)}"
             f"{ratio_clause(row.step_interval, row.block_ratio)} (noisier)")
    off = "".join(f" Warning: {w}." for w in row.warnings)
    over = (f" {ONE_PAIR[0].upper()}{ONE_PAIR[1:]}." if n < 2 else
            f" {stat.capitalize()}s over {n} repetitions; each share is the {stat} "
            f"difference over the {stat} step.")
    return f"{where}: {s2r}{whole}.{_withheld_why(row)}{over}{off}"


def _withheld_why(row: CostRow) -> str:
    """The sentence of a share line saying why its shares are withheld (``WITHHELD``),
    ``''`` when none is: the step ran off nominal (``CostRow.step_off``), or send's
    whole-step difference is not send's cost (``send_step_off``)."""
    if row.step_off:
        return (f" {WITHHELD}: withheld, as the fixed step ran off nominal (the warning "
                f"below): this row did not have a {row.step_time_ms:g} ms step, so a share "
                f"of the step it measured is not send's cost at {row.step_time_ms:g} ms.")
    if row.step_share_withheld:
        return (f" {WITHHELD}: withheld, as send's whole step ran longer than its "
                "SchedulerOutput path explains (the warning below): its whole-step "
                "difference is not send's cost.")
    return ""


def crossing(points: list[tuple[float, float]], threshold: float = THRESHOLD) -> str:
    """Where ``share`` passes ``threshold`` along ``points`` = [(B, share), ...]:
    linear interpolation between the first two neighbouring B values that bracket it,
    else extrapolation from the last two points. Returns a short text."""
    pts = sorted(points)
    if not pts:
        return "n/a"
    if pts[0][1] >= threshold:
        return f"<= {pts[0][0]:,.0f} (already at the smallest B)"
    for (b0, s0), (b1, s1) in zip(pts, pts[1:]):
        if s0 < threshold <= s1:
            return f"~{b0 + (threshold - s0) * (b1 - b0) / (s1 - s0):,.0f} (interpolated)"
    if len(pts) < 2:
        return "n/a (one B only)"
    (b0, s0), (b1, s1) = pts[-2], pts[-1]
    if s1 <= s0:
        return "n/a (the cost does not grow with B here)"
    return f"~{b1 + (threshold - s1) * (b1 - b0) / (s1 - s0):,.0f} (extrapolated)"


#: How far send's SchedulerOutput path difference (``CostRow.s2r_ns``) may differ
#: between two step times at one B and codec before ``step_length_line`` says so: a
#: factor of 1.5, where both differences are resolved from 0 and their intervals do not
#: overlap. The messages are the same at every step time (the same batches), so a path
#: cost that changes by half or more with the step's length is this machine's (a
#: loaded 2-core run: 86 µs at 2 ms, 172 µs at 5 ms, msgpack at 256 running).
STEP_LENGTH_FACTOR = 1.5


def path_cost_interval_ns(row: CostRow) -> Optional[tuple[float, float]]:
    """The interval of ``row``'s SchedulerOutput path difference in ns per step: its
    share's interval (``CostRow.s2r_interval``, the one its share line prints) times
    cached's measured step, as ``_holds_zero_words`` gives it in µs; ``None`` without an
    interval or a measured step."""
    if row.s2r_interval is None or None in row.s2r_interval or not row.measured_step_ns:
        return None
    return (row.s2r_interval[0] * row.measured_step_ns,
            row.s2r_interval[1] * row.measured_step_ns)


def _cost_text(row: CostRow, digits: int) -> str:
    """``86.0 µs [74.3, 99.7] at 2 ms``: a row's path cost per step, its interval
    (``path_cost_interval_ns``) and step time, for ``step_length_line``."""
    low, high = path_cost_interval_ns(row)
    return (f"{row.s2r_ns / 1e3:,.{digits}f} µs [{low / 1e3:,.{digits}f}, "
            f"{high / 1e3:,.{digits}f}] at {row.step_time_ms:g} ms")


def step_length_line(rows: list[CostRow], factor: float = STEP_LENGTH_FACTOR
                     ) -> Optional[str]:
    """Where send's SchedulerOutput path difference (``s2r_ns``) at one B and codec is a
    cost resolved from 0 at two step times of ``rows`` (its interval above 0, not
    ``holds_zero``), the larger ``factor`` or more times the smaller and their intervals
    apart (``path_cost_interval_ns``: the larger's low end above the smaller's high
    end), the line saying that send's cost per step depends on the step's length on this
    machine, each figure with its interval and the digits that show the ratio:
    ``send's SchedulerOutput path cost per step changed with the step time at the same
    B and codec (msgpack at B = 256: 87.0 µs [74.3, 99.7] at 2 ms, 174.0 µs [148.6,
    199.4] at 5 ms): the messages are the same, so on this machine the cost per step
    depends on the step's length, not on the messages alone, and a share at one step
    time does not carry to another.``; ``None`` where none does (or with one step time,
    or rows of one repetition, which have no interval)."""
    by: dict[tuple, list[CostRow]] = defaultdict(list)
    for r in rows:
        interval = path_cost_interval_ns(r)
        if r.s2r_ns is not None and interval is not None and interval[0] > 0:
            by[(r.codec, r.num_running)].append(r)
    said = []
    for (codec, b), rs in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if len(rs) < 2:
            continue
        low, high = min(rs, key=lambda r: r.s2r_ns), max(rs, key=lambda r: r.s2r_ns)
        if (high.s2r_ns < factor * low.s2r_ns or
                path_cost_interval_ns(high)[0] <= path_cost_interval_ns(low)[1]):
            continue
        smallest = min(path_cost_interval_ns(r)[0] for r in rs) / 1e3
        digits = 2 if smallest < 10 else 1 if smallest < 100 else 0
        each = ", ".join(_cost_text(r, digits)
                         for r in sorted((low, high), key=lambda r: r.step_time_ms))
        said.append(f"{codec} at B = {b}: {each}")
    if not said:
        return None
    return ("send's SchedulerOutput path cost per step changed with the step time at the "
            f"same B and codec ({'; '.join(said)}): the messages are the same, so on this "
            "machine the cost per step depends on the step's length, not on the messages "
            "alone, and a share at one step time does not carry to another.")


def crossing_lines(rows: list[CostRow], threshold: float = THRESHOLD) -> list[str]:
    """Per step time and codec, the running-request count at which each share passes
    ``threshold`` of the measured step (``crossing``); withheld, saying why, when a case
    of that step time and codec ran off its nominal step (the B axis then mixes steps
    of other lengths than the one named) or when cached's whole step ran over nominal
    + 10 % + the control plane's allowance (``whole_step_warning``); the whole step's
    crossing alone is withheld (``whole step not read (unreliable: ...)``) when at a B
    send's whole-step difference exceeds its SchedulerOutput path's by more than that
    allowance (``send_step_warning``: send's case descheduled, so the whole-step curve
    is not send's cost there; the s2r crossing is still read). The whole step's
    crossing is marked unreliable when a pair's step times were noisy
    (``send_cost_step_noisy``) or when a B of the curve has one repetition only (no
    interval: the whole-step difference is one draw, often many times the s2r
    difference; the mark gives the B where they differ most). The s2r crossing is
    not marked for one repetition: its medians are far less noisy."""
    curves: dict[tuple, list[CostRow]] = defaultdict(list)
    for row in rows:
        curves[(row.step_time_ms, row.codec)].append(row)
    out = []
    for (t, codec), rs in sorted(curves.items()):
        head = f"{t:g} ms, {codec}:"
        why = _off_nominal_why(rs, t)
        if why:
            out.append(f"{head} not read (unreliable): " + "; ".join(why)
                       + f", so these cases did not have a {t:g} ms step")
            continue
        s2r = [(r.num_running, r.share_s2r) for r in rs if r.share_s2r is not None]
        send_off = [r for r in rs if r.send_step_off]
        if send_off:
            whole = f"whole step not read (unreliable: {_send_step_why(send_off)})"
        else:
            step = [(r.num_running, r.share_step) for r in rs if r.share_step is not None]
            marks = _whole_step_marks(rs)
            whole = (f"whole step {crossing(step, threshold)}"
                     + (f" (unreliable: {'; '.join(marks)})" if marks else ""))
        out.append(f"{head} {whole}; s2r {crossing(s2r, threshold)}")
    return out


def _off_nominal_why(rs: list[CostRow], t: float) -> list[str]:
    """Why ``crossing_lines`` reads no crossing of the step time ``t`` (ms): the B
    values of ``rs`` whose runner's wait, or cached's whole step, ran off nominal;
    ``[]`` when none did."""
    why = []
    off = [r for r in rs if r.off_nominal]
    if off:
        bs = ", ".join(str(r.num_running) for r in off)
        why.append(f"at B = {bs} the fixed step ran off its nominal {t:g} ms by more "
                   f"than {100 * OFF_NOMINAL_TOLERANCE:.0f} % (runner descheduled)")
    whole_off = [r for r in rs if r.whole_step_off]
    if whole_off:
        bs = ", ".join(str(r.num_running) for r in whole_off)
        why.append(f"at B = {bs} cached's whole step ran more than "
                   f"{100 * OFF_NOMINAL_TOLERANCE:.0f} % + the control plane's "
                   f"allowance over {t:g} ms (a process descheduled outside the "
                   "runner's wait)")
    return why


def _send_step_why(rs: list[CostRow]) -> str:
    """Why the whole step's crossing is withheld at the B values of ``rs`` (rows with
    ``send_step_off``)."""
    bs = ", ".join(str(r.num_running) for r in rs)
    return (f"at B = {bs} send's whole step ran longer than cached's by more than its "
            f"SchedulerOutput path's difference + {100 * OFF_NOMINAL_TOLERANCE:.0f} % + the "
            "control plane's allowance (send's case descheduled), so the whole-step "
            "difference is not send's cost there")


def _longer(diff_ns: float, share: Optional[float]) -> str:
    """A signed difference send - cached as its size and direction: ``"100 µs (4.17 %)
    longer"`` for +100,000 ns, ``"13 µs (0.57 %) shorter"`` for -13,000 ns."""
    return (f"{abs(diff_ns) / 1e3:,.0f} µs ({unsigned_pct(share)} %) "
            f"{'longer' if diff_ns >= 0 else 'shorter'}")


def _whole_step_marks(rs: list[CostRow]) -> list[str]:
    """Why a read whole-step crossing of ``rs`` is unreliable: noisy pairs, by the block
    CV (``CostRow.step_noisy``) or, naming each B's highest mean/median ratio, by the
    skew warning (``CostRow.step_skewed``: such a B is named there alone), B values of
    one repetition (with the B where the whole step and s2r differ most); ``[]``."""
    why = []
    noisy = ", ".join(str(r.num_running) for r in rs
                      if r.step_noisy and r.step_skewed is None)
    if noisy:
        why.append(f"at B = {noisy} a case's 50-step mean step times varied by more than "
                   f"{100 * NOISY_BLOCK_CV:.0f} %, so its whole-step difference is the "
                   "machine's noise as much as send's")
    skewed = [r for r in rs if r.step_skewed is not None]
    if skewed:
        why.append(f"at B = {', '.join(str(r.num_running) for r in skewed)} a case's mean "
                   f"step was {', '.join(ratio_text(r.step_skewed) for r in skewed)} its "
                   f"median (> {SKEWED_STEP_RATIO:g}x: long steps spread through it), so its "
                   "whole-step difference is the machine's noise as much as send's")
    single = [r for r in rs if r.repetitions < 2 and r.step_ns is not None]
    if single:
        worst = max(single, key=lambda r: abs(r.step_ns - (r.s2r_ns or 0.0)))
        gap = ("" if worst.s2r_ns is None else
               f"; at B = {worst.num_running} send's whole step is "
               f"{_longer(worst.step_ns, worst.share_step)} than cached's, its "
               f"SchedulerOutput path {_longer(worst.s2r_ns, worst.share_s2r)}")
        bs = ", ".join(str(r.num_running) for r in single)
        why.append(f"at B = {bs} one repetition, no interval: one draw of the noisy "
                   f"whole-step difference{gap}")
    return why


def pair_records(records: Iterable[dict[str, Any]], scenario: str
                 ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(send, cached) of each repetition of each (step_time_ms, num_running, codec) of
    ``scenario``'s complete cases with counted steps."""
    from ipc_bench.analysis.stats import arms_by_repetition

    groups = arms_by_repetition(
        (s for s in records
         if s.get("scenario") == scenario and s.get("complete") and s.get("num_steps")),
        ("step_time_ms", "num_running", "codec"))
    out = []
    for arms in groups.values():
        sends, cacheds = arms.get(SEND, {}), arms.get(CACHED, {})
        out.extend((sends[rep], cacheds[rep]) for rep in sorted(set(sends) & set(cacheds)))
    return out
