"""Stalled steps of a trace replay, judged against steps of the same workload.

A trace replay's counted steps change with the trace (a 2,000-token prefill, then
decodes of 1 to 200 requests), so neither the case's 50-step block spread
(``summary.noise_warnings`` gives a replay none) nor its median step tells a
stalled step from a big one; ``summary.stall_warnings``' longest-step line catches one
step over 100 median steps only. Here each counted step is judged against the steps
that did the same work: steps are put in bins of their ``num_scheduled_tokens``, by
powers of 2 (1, 2-3, 4-7, ..., a step of 0 tokens with those of 1), and a bin's
reference is its median ``step_ns``. A bin of fewer than ``STALL_BIN_MIN_STEPS``
steps, whose median several stalls could move, takes the reference of the nearest
bin above it that has that many (steps of more tokens, whose median is not below
its own unless the model's cost is not monotone in tokens, so a step is not called
stalled for being big); a sparse bin with none above is left unjudged. A step over
``STALL_BIN_RATIO`` times its reference is stalled.

On a quiet machine a bin's steps spread little (azure-conv, 100 requests, logical
clock, null model: the 99th percentile at most 1.6x the bin's median and the
longest 5x; the ``torch`` preset on CPU: at most 2.6x and 3.5x, its decodes' context
lengths differing), while a process that did not run for a few ms (a busy machine's
preemption, a ``SIGSTOP``) takes 30 to 200 times a 100 µs step; ``summary`` warns
when the stalled steps hold over ``summary.STALL_SHARE_MIN`` of the counted steps'
time (``replay_stall_warning``)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

#: A counted step over this many times its workload bin's median step is stalled.
STALL_BIN_RATIO = 10
#: A bin of fewer counted steps than this takes the reference of the nearest bin
#: above it with this many (or is left unjudged where there is none).
STALL_BIN_MIN_STEPS = 8


def workload_bins(tokens: np.ndarray) -> np.ndarray:
    """The bin of each step: ``floor(log2(num_scheduled_tokens))``, a step of 0 tokens
    in bin 0 with those of 1. ``tokens``: int ``[n]``; returns int64 ``[n]``."""
    t = np.maximum(np.asarray(tokens, dtype=np.int64), 1)
    return (np.frexp(t.astype(np.float64))[1] - 1).astype(np.int64)


def workload_references(tokens: np.ndarray, step_ns: np.ndarray) -> np.ndarray:
    """Each step's reference step time (ns, float ``[n]``): its bin's median
    ``step_ns`` where the bin (``workload_bins``) holds ``STALL_BIN_MIN_STEPS`` steps
    or more, else the median of the nearest such bin above it, else NaN (unjudged; so
    too a bin whose median is 0 ns, and the sparse bins below it).
    ``tokens``, ``step_ns``: ``[n]`` arrays of the counted steps. Raises nothing."""
    bins = workload_bins(tokens)
    step_ns = np.asarray(step_ns, dtype=np.float64)
    ref = np.full(len(bins), np.nan)
    keys, counts = np.unique(bins, return_counts=True)
    above = np.nan
    for key, count in zip(keys[::-1], counts[::-1]):  # highest bin first
        mask = bins == key
        if count >= STALL_BIN_MIN_STEPS:
            median = float(np.median(step_ns[mask]))
            above = median if median > 0 else np.nan  # no ratio to a 0 ns step
        ref[mask] = above
    return ref


def workload_stall_figures(tokens: np.ndarray, step_ns: np.ndarray, seq: np.ndarray,
                           output_tokens: np.ndarray) -> dict[str, Any]:
    """A trace replay's stall figures over its counted steps (``[n]`` arrays, n >= 1:
    ``num_scheduled_tokens``, ``step_ns``, ``seq``, ``num_output_tokens``):
    ``stalled_steps`` (the steps over ``STALL_BIN_RATIO`` times their reference,
    ``workload_references``), ``stalled_step_share`` (their share of the steps' time),
    ``stalled_step_ns_max``, ``stalled_step_ns_max_seq`` and
    ``stalled_step_ns_max_ratio`` (the longest stalled step: ns, its ``seq``, over its
    reference), ``output_tokens_per_s_without_stalled`` (out tok/s over the other
    steps' time; these four ``None`` when no step stalled, or every step did),
    ``step_ns_bin_ratio_max`` (the highest step time over its reference; ``None`` when
    no step is judged) and ``stall_unjudged_steps`` (steps without a reference)."""
    step_ns = np.asarray(step_ns, dtype=np.float64)
    ref = workload_references(tokens, step_ns)
    judged = ~np.isnan(ref)
    ratio = np.where(judged, step_ns / np.where(judged, ref, 1.0), 0.0)
    stalled = judged & (ratio > STALL_BIN_RATIO)
    total = float(step_ns.sum())
    out: dict[str, Any] = dict(
        stalled_steps=int(stalled.sum()),
        stalled_step_share=float(step_ns[stalled].sum() / total) if total > 0 else 0.0,
        stalled_step_ns_max=None, stalled_step_ns_max_seq=None,
        stalled_step_ns_max_ratio=None, output_tokens_per_s_without_stalled=None,
        step_ns_bin_ratio_max=float(ratio[judged].max()) if judged.any() else None,
        stall_unjudged_steps=int((~judged).sum()))
    rest_ns = float(step_ns[~stalled].sum())
    if stalled.any():
        i = int(np.flatnonzero(stalled)[np.argmax(step_ns[stalled])])
        out.update(stalled_step_ns_max=float(step_ns[i]),
                   stalled_step_ns_max_seq=int(seq[i]),
                   stalled_step_ns_max_ratio=float(ratio[i]))
        if rest_ns > 0:
            out["output_tokens_per_s_without_stalled"] = (
                int(np.asarray(output_tokens)[~stalled].sum()) / (rest_ns / 1e9))
    return out


def stalled_share(summary: dict[str, Any]) -> Optional[float]:
    """``stalled_step_share`` of a ``summary.json`` case, or ``None`` where it has
    none (a steady case, a streamed one, a summary written before it) or it is not
    a number. Raises nothing."""
    share = summary.get("stalled_step_share")
    if isinstance(share, bool) or not isinstance(share, (int, float)) or share != share:
        return None
    return float(share)
