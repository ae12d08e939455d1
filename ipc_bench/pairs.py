"""send/cached pairs from a ``Results.cases`` table, and intervals over repetitions.

A *pair* is the ``send`` case and the ``cached`` case of one run, workload, codec,
transport, model and repetition: they ran next to each other (``scenario.grid``
interleaves them) on the same workload, so each repetition gives one paired sample
(steps within a case are correlated and are not samples). Over repetitions:

- differences (``cached - send``): mean and a Student-t 95 % interval of the mean;
- ratios (``cached / send``): geometric mean and the t interval of the mean of
  ``log(ratio)``, transformed back (so the interval of a ratio is never negative).

With one repetition there is no interval (``low`` and ``high`` are NaN). Used by
``ipc_bench.plots`` and ``ipc_bench.report``; pandas and numpy are imported inside.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

#: Two-sided 95 % Student-t quantiles t(0.975, df) for df = 1..30 (beyond: 1.96 at
#: df = inf, interpolated in 1/df, which is exact to 3 decimals for df > 30).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)

#: Columns that identify a pair's two cases apart from their policy.
PAIR_KEYS = ("run_id", "scenario", "workload", "codec", "transport", "model", "repetition")


def t_quantile_975(df: int) -> float:
    """Two-sided 95 % Student-t critical value for ``df`` degrees of freedom (>= 1)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    # Between df=30 (2.042) and infinity (1.960), linear in 1/df.
    return 1.959964 + (2.042 - 1.959964) * 30.0 / df


def mean_ci(values: Sequence[float]) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean of ``values`` and its two-sided 95 % Student-t
    interval; ``low``/``high`` are NaN with fewer than 2 finite values."""
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not xs:
        return (math.nan, math.nan, math.nan)
    n = len(xs)
    mean = sum(xs) / n
    if n < 2:
        return (mean, math.nan, math.nan)
    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    half = t_quantile_975(n - 1) * math.sqrt(var / n)
    return (mean, mean - half, mean + half)


def ratio_ci(ratios: Sequence[float]) -> tuple[float, float, float]:
    """``(geometric mean, low, high)`` of positive ratios: ``mean_ci`` of their logs,
    transformed back. Non-positive or non-finite ratios are left out."""
    logs = [math.log(r) for r in ratios
            if r is not None and math.isfinite(float(r)) and r > 0]
    m, lo, hi = mean_ci(logs)
    return tuple(math.exp(v) if math.isfinite(v) else math.nan for v in (m, lo, hi))


def paired(cases, metric: str):
    """One row per send/cached pair with ``send``, ``cached`` (the two cases'
    ``metric``), ``diff`` (cached - send) and ``ratio`` (cached / send), plus the
    ``PAIR_KEYS`` columns present in ``cases`` and the workload's label columns.
    Cases without ``metric`` (or incomplete ones) are left out; an empty frame when
    no pair exists."""
    import pandas as pd

    keys = [k for k in PAIR_KEYS if k in cases.columns]
    cols = ["send", "cached", "diff", "ratio"]
    if metric not in cases.columns or cases.empty:
        return pd.DataFrame(columns=keys + cols)
    ok = cases[cases[metric].notna()]
    if "complete" in ok.columns:
        ok = ok[ok["complete"].astype(bool)]
    send = ok[ok["policy"] == "send"].set_index(keys)[metric].rename("send")
    cached = ok[ok["policy"] == "cached"].set_index(keys)[metric].rename("cached")
    both = pd.concat([send, cached], axis=1, join="inner").reset_index()
    if both.empty:
        return pd.DataFrame(columns=keys + cols)
    both["send"] = both["send"].astype(float)
    both["cached"] = both["cached"].astype(float)
    both["diff"] = both["cached"] - both["send"]
    both["ratio"] = both["cached"] / both["send"].where(both["send"] != 0)
    labels = [c for c in cases.columns if c not in both.columns and c in _label_columns(cases)]
    if labels:
        first = cases.drop_duplicates(keys).set_index(keys)[labels]
        both = both.join(first, on=keys)
    return both


def _label_columns(cases) -> list[str]:
    """Workload label columns of ``cases``: those whose ``k=v`` appears in ``workload``."""
    if "workload" not in cases.columns or cases.empty:
        return []
    sample = str(cases["workload"].iloc[0])
    keys = [part.split("=", 1)[0] for part in sample.split(",") if "=" in part]
    return [k for k in keys if k in cases.columns]


def summarize(pairs, group: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Per group of ``pairs`` (default: all ``PAIR_KEYS`` but ``repetition``): ``n``,
    ``send``, ``cached`` (means), ``diff``/``diff_low``/``diff_high`` (``mean_ci``) and
    ``ratio``/``ratio_low``/``ratio_high`` (``ratio_ci``), plus the group's keys."""
    if pairs is None or len(pairs) == 0:
        return []
    if group is None:
        group = [k for k in PAIR_KEYS if k in pairs.columns and k != "repetition"]
    out = []
    for key, g in pairs.groupby(list(group), sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        d, d_lo, d_hi = mean_ci(g["diff"].tolist())
        r, r_lo, r_hi = ratio_ci(g["ratio"].tolist())
        row = dict(zip(group, key))
        row.update(n=len(g), send=float(g["send"].mean()), cached=float(g["cached"].mean()),
                   diff=d, diff_low=d_lo, diff_high=d_hi,
                   ratio=r, ratio_low=r_lo, ratio_high=r_hi)
        out.append(row)
    return out
