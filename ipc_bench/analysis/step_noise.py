"""Whether a case's step times are noisy, by the two rules of its "may be noisy" step
warnings (``summary.step_spread_warnings``): the standard deviation of its 50-step mean
step times over 10 % of their mean (``step_ns_block_cv`` over ``NOISY_STEP_BLOCK_CV``),
or its mean step over 1.5 times its median (``summary.skewed_steps_warning``,
``SKEWED_STEP_RATIO``). The report's counts and marks of noisy step times
(``report.blocks.machine_load``, ``send_cost.pair_cost`` and ``send_cost.cost_rows``)
read them here, so that a case whose long steps are spread evenly through it (its block
means alike, its tok/s cut) is counted as one whose block means vary.

A trace replay is noisy by neither rule here: its block means move with the trace's
batches (``analysis.replay_noise`` measures its machine's noise across repetitions), and
its steps are judged against their workload's (``replay_stall``).

The module imports nothing of the project: ``send_cost``, which ``summary`` imports,
reads it. It holds the thresholds (``summary`` takes them from here), and ``skewed``
decides as ``summary.skewed_steps_warning`` warns; ``tests/report/test_skewed_step_noise.py``
holds the two rules equal.
"""

from __future__ import annotations

from typing import Any, Optional

#: The steps of a block whose mean step time the block CV (``summary._block_cv``) and
#: the replay's repetition CV (``replay_noise``) compare.
STEP_BLOCK = 50
#: ``summary.case_warnings`` warns that a case's step times are noisy where the standard
#: deviation of its 50-step mean step times exceeds this share of their mean
#: (``step_ns_block_cv``; pyperf's 10 %).
NOISY_STEP_BLOCK_CV = 0.10

#: Fewer counted steps than this leave a case's step-time noise unmeasured: the block
#: CV (``step_ns_block_cv``) needs 3 blocks of ``STEP_BLOCK`` steps (``summary._block_cv``).
NOISE_MIN_STEPS = 3 * STEP_BLOCK

#: ``summary.skewed_steps_warning`` warns where a case's mean step is over this many times its
#: median step (``step_ns_mean`` / ``step_ns_median``). Long steps spread evenly through
#: a case (a loaded machine taking the CPU from its processes now and then) raise its
#: mean, and so cut its tok/s, while its 50-step block means stay alike (the block CV
#: sees nothing) and no step is long enough to be called stalled. Steady null-model
#: and emulated cases of 150 to 1,000 counted steps whose block CV was under 10 % gave
#: 1.00x to 1.16x on a loaded 2-core machine; one at 1.97x (block CV 7.4 %) halved its
#: tok/s against its pair's.
SKEWED_STEP_RATIO = 1.5


def float_or_none(value: Any) -> Optional[float]:
    """``value`` as a float; ``None`` when it is missing, a bool, not a number or NaN (a
    pandas record's empty cell). ``send_cost`` and ``summary`` read figures through it."""
    if value is None or isinstance(value, bool):
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return None if v != v else v


def _replay(case: dict[str, Any]) -> bool:
    """Whether ``case`` has a ``trace`` label (``summary.is_replay``)."""
    trace = case.get("trace")
    return isinstance(trace, str) and bool(trace)


def block_cv_noisy(case: dict[str, Any]) -> bool:
    """Whether ``case`` (a summary or a pandas record), not a trace replay, has a
    ``step_ns_block_cv`` (a ratio) over ``NOISY_STEP_BLOCK_CV`` (0.10). ``False``
    without one (``None``, NaN: under 150 counted steps). Raises nothing."""
    cv = float_or_none(case.get("step_ns_block_cv"))
    return not _replay(case) and cv is not None and cv > NOISY_STEP_BLOCK_CV


def skew_ratio(case: dict[str, Any]) -> Optional[float]:
    """``case``'s ``step_ns_mean`` over its ``step_ns_median`` (a ratio) where it carries
    the skew warning (``summary.skewed_steps_warning``): ``NOISE_MIN_STEPS`` (150)
    counted steps or more, not a trace replay nor a bare loop (``instrumentation``
    ``totals``), the ratio over ``SKEWED_STEP_RATIO`` (1.5); else ``None``. Decided from
    those fields, so a summary written before the warning is judged alike. Raises
    nothing."""
    n = float_or_none(case.get("num_steps"))
    if _replay(case) or case.get("instrumentation") == "totals" or n is None \
            or n < NOISE_MIN_STEPS:
        return None
    mean = float_or_none(case.get("step_ns_mean"))
    median = float_or_none(case.get("step_ns_median"))
    if not mean or not median or mean <= SKEWED_STEP_RATIO * median:
        return None
    return mean / median


def skewed(case: dict[str, Any]) -> bool:
    """Whether ``case`` carries the skew warning (``skew_ratio`` not ``None``). Raises
    nothing."""
    return skew_ratio(case) is not None


def step_time_noisy(case: dict[str, Any]) -> bool:
    """Whether ``case``'s step times are noisy: ``block_cv_noisy`` or ``skewed``, the
    two rules of its "the machine may be noisy" step warnings. Raises nothing."""
    return block_cv_noisy(case) or skewed(case)


def ratio_text(ratio: float) -> str:
    """A skewed case's mean/median ``ratio`` as ``summary.skewed_steps_warning`` prints
    it: ``1.97x``, with as many decimals (2 to 5) as it takes to read over
    ``SKEWED_STEP_RATIO``, ``1.50000x`` where five do not. Raises nothing."""
    return next((t for d in range(2, 6) if float(t := f"{ratio:.{d}f}") > SKEWED_STEP_RATIO),
                f"{ratio:.5f}") + "x"
