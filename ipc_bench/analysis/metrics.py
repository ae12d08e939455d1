"""The metrics registry: one entry per case-summary figure that a table, the report,
a figure or the paired statistics shows or compares.

A ``Metric`` names a key of a ``summary.json`` case entry (a ``Results.cases``
column; ``ipc_bench.analysis.summary`` computes them) and says how to show it: its
``unit`` as recorded, the ``scale`` that turns a recorded value into ``display_unit``
(``None``: shown as recorded, e.g. a count), the ``fmt`` of a table cell, and its
names in each place it appears (they differ because the places are of different
widths; each is written once, here):

- ``label``: the long name, in the report's tables and in axis labels
  (``output tokens/s``, ``step µs (mean)``);
- ``header``: the column header of the plain-text case tables (``out tok/s``);
- ``name``: the row name of the paired-comparison block (``step mean``);
- ``ratio_name``: the name in the one-line cached / send ratios (``mean step``; default
  ``name``).

Consumers choose *which* metrics and in what order as tuples of keys
(``ipc_bench.report.tables.CASE_TABLE``, ``ipc_bench.analysis.stats.COMPARED_KEYS``,
...); every key they list is in ``METRICS``. This module imports nothing of the
project: any layer above the engine may read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional


@dataclass(frozen=True)
class Metric:
    """One summary figure (see the module docstring)."""

    key: str
    unit: str
    label: str
    header: str
    scale: Optional[float] = 1.0
    display_unit: str = ""
    fmt: str = "{}"
    name: str = ""
    ratio_name: str = ""
    #: What the figure is, in words (Markdown), where a column legend gives it: the
    #: report's legend under its case tables and docs/metrics.md's table quote it.
    meaning: str = ""

    def display(self, value: Any) -> Any:
        """``value`` (recorded unit) in ``display_unit``; ``None`` stays ``None``."""
        if value is None or self.scale is None:
            return value
        return value * self.scale

    def cell(self, value: Any) -> str:
        """A table cell: ``fmt`` of the display value, ``-`` for ``None``."""
        return "-" if value is None else self.fmt.format(self.display(value))

    @property
    def short(self) -> str:
        """``name``, else ``header``."""
        return self.name or self.header

    @property
    def ratio_short(self) -> str:
        """``ratio_name``, else ``short``."""
        return self.ratio_name or self.short


def _ns(key: str, label: str, header: str, **kw) -> Metric:
    """A time recorded in ns, shown in µs with one decimal and thousands separators
    (``1,039.3``, as the byte and tok/s columns beside it)."""
    return Metric(key, "ns", label, header, scale=1e-3, display_unit="us", fmt="{:,.1f}",
                  **kw)


def _bytes(key: str, label: str, header: str, **kw) -> Metric:
    """A byte count per step, shown as a whole number with thousands separators."""
    return Metric(key, "B", label, header, display_unit="B", fmt="{:,.0f}", **kw)


#: ``output_tokens_per_s`` in words: what it means for a timed replay differs.
OUTPUT_TOKENS_MEANING = (
    "output tokens sampled in the counted steps over the busy wall time of those steps "
    "(the sum of their `step_ns`); in a timed replay (`azure-conv-timed`, "
    "`azure-code-timed`), every request's output tokens, warm-up included, over the wall "
    "time from the first arrival to the last completion (`wall_s`, which includes the "
    "warm-up too; arrival-bound where the arrivals set the pace, load-bound where "
    "requests queued and kept the engine busy: judged by `waiting_step_share` and "
    "`idle_share`, or by `arrival_span_share` for a run that predates them; "
    "`out tok/s (wall)` in its tables)")
#: ``wall_s`` in words: what ``harness.scheduler_loop`` measures (``finish``), and what
#: "over wall time, first arrival to last completion" means wherever a timed replay's
#: ``out tok/s (wall)`` is described.
WALL_S_MEANING = (
    "the scheduler loop's wall time in s, warm-up included: from its start to a moment "
    "taken just after its last step; a timed replay's is on the replay clock, which "
    "stops during the end-of-warm-up pause (`warmup_pause_s`), and its loop starts at "
    "the first arrival "
    "(`arrival_s` 0) and its last step completes the last request, so there it runs "
    "from the first arrival to just after the last completion (the last step's row and "
    "the input oracle's last check: milliseconds past it)")
#: ``busy_output_tokens_per_s`` in words.
BUSY_TOKENS_MEANING = (
    "timed replays only: output tokens sampled in the counted steps over the busy wall "
    "time of those steps, what `output_tokens_per_s` is in the other scenarios; absent "
    "when no step was counted")


#: What each request latency is, in words (Markdown): the one definition docs/metrics.md's
#: summary-field table, the report's latency table and the docstrings that compute them
#: (``harness.recording.request_record``, ``analysis.summary.latency_summary``) give.
#: As vLLM's ``benchmarks/benchmark_serving.py``: TTFT, TPOT and E2E per request, then
#: over requests; ITL over every gap between two steps that gave a request tokens (vLLM
#: streams one step's tokens as one chunk, and benchmark_serving takes a gap per chunk),
#: all requests' gaps pooled.
LATENCY_MEANINGS = {
    "ttft": ("time to first token, per request: from its intended arrival (trace time / "
             "`--trace-speedup`, so queueing counts) to the end of the step that sampled "
             "its first output token; over requests"),
    "tpot": ("time per output token, per request: (E2E - TTFT) / (n - 1), n its output "
             "tokens, requests with one output token left out; over requests, so each "
             "request weighs the same"),
    "itl": ("inter-token latency: every gap between the ends of two consecutive steps "
            "that gave a request output tokens (n - 1 per request of n tokens without "
            "drafts; with `--num-spec-tokens` one per step after its first, whatever "
            "tokens that step gave, as vLLM streams them in one chunk), all requests' "
            "gaps pooled; over gaps, so a long request weighs more"),
    "e2e": ("end-to-end latency, per request: from its intended arrival to the end of "
            "the step that sampled its last output token; over requests"),
}
#: Why ``tpot_ms_mean`` and ``itl_ms_mean`` differ, where both are defined.
TPOT_ITL_DIFFER = (
    "Without drafts a request's TPOT is the mean of its own gaps, so TPOT averages "
    "requests and ITL averages gaps: a request of n tokens counts once in TPOT and n - 1 "
    "times in ITL, and a single slow gap (a step that also prefilled another request, "
    "with a model whose step grows with the tokens it schedules: torch, emulated) "
    "shows in ITL's p99 while TPOT spreads it over its request. With drafts "
    "(`--num-spec-tokens`) a step can give a request several tokens: TPOT still divides "
    "by its tokens, ITL has one gap per step, so ITL stays near the step time while TPOT "
    "falls with the tokens a step accepts. These are vLLM's benchmark_serving "
    "definitions.")


def _ms(key: str, fmt: str) -> Metric:
    """A latency statistic recorded in ms (timed replays and soak), e.g.
    ``ttft_ms_p50``; its meaning is ``LATENCY_MEANINGS``' of its latency."""
    what, _, stat = key.partition("_ms_")
    header = f"{what.upper()} {stat} ms"
    return Metric(key, "ms", header, header, display_unit="ms", fmt=fmt,
                  meaning=LATENCY_MEANINGS[what])


_ALL = (
    Metric("num_steps", "steps", "counted steps", "steps", scale=None, display_unit="steps",
           fmt="{:,.0f}"),
    Metric("output_tokens_per_s", "tok/s", "output tokens/s", "out tok/s",
           display_unit="tok/s", fmt="{:,.0f}", name="out tok/s", ratio_name="tok/s",
           meaning=OUTPUT_TOKENS_MEANING),
    Metric("busy_output_tokens_per_s", "tok/s", "busy output tokens/s", "busy tok/s",
           display_unit="tok/s", fmt="{:,.0f}", meaning=BUSY_TOKENS_MEANING),
    Metric("floor_output_tokens_per_s", "tok/s", "floor output tokens/s", "floor tok/s",
           display_unit="tok/s", fmt="{:,.0f}",
           meaning="the counted steps' output tokens over the floor's time: the same "
                   "recorded messages exchanged bare (same codec, same sockets, no "
                   "scheduling, no runner work, no metrics)"),
    Metric("step_to_floor_ratio", "x", "step time / floor step time", "x floor",
           display_unit="x", fmt="{:.2f}"),
    _bytes("sched_to_runner_payload_bytes_per_step", "s2r payload B/step", "s2r B/step",
           name="s2r bytes", ratio_name="s2r B"),
    _bytes("runner_to_sched_payload_bytes_per_step", "r2s payload B/step", "r2s B/step",
           name="r2s bytes"),
    _bytes("sched_to_runner_wire_bytes_per_step", "s2r wire B/step", "s2r wire B/step"),
    _bytes("runner_to_sched_wire_bytes_per_step", "r2s wire B/step", "r2s wire B/step"),
    _bytes("decode_token_bytes_per_step", "decode-token B/step", "tok B/step",
           meaning="`send` only: bytes the decode tokens of `new_token_ids` (with each "
                   "request's list header) add to each SchedulerOutput over `cached`'s "
                   "empty list, per counted step"),
    _bytes("prompt_chunk_bytes_per_step", "prompt-chunk B/step", "prompt B/step",
           meaning="`send` only: bytes the prompt chunks re-sent in `new_token_ids` "
                   "during chunked prefill, and the whole token lists of requests resumed "
                   "after preemption (prompt and outputs, recomputed from token 0), add "
                   "to each SchedulerOutput, per counted step"),
    _ns("build_ns_per_step", "build µs/step", "build us", name="build"),
    _ns("encode_ns_per_step", "encode µs/step", "encode us", name="encode"),
    _ns("decode_ns_per_step", "decode µs/step", "decode us", name="decode"),
    _ns("step_ns_mean", "step µs (mean)", "mean step us", name="step mean", ratio_name="mean step"),
    _ns("step_ns_median", "step µs (median)", "median step us", name="step median"),
    _ns("sched_cpu_ns_per_step", "scheduler CPU µs/step", "sched cpu us", name="sched cpu"),
    _ns("sched_build_ns_per_step", "scheduler build µs/step", "sched build us"),
    _ns("sched_encode_ns_per_step", "scheduler encode µs/step", "sched encode us"),
    _ns("runner_decode_ns_per_step", "runner decode µs/step", "runner decode us"),
    _ns("s2r_build_encode_decode_ns_median",
        "SchedulerOutput build + encode + decode µs (median)", "s2r path us"),
    _ms("ttft_ms_p50", "{:,.2f}"),
    _ms("ttft_ms_p99", "{:,.2f}"),
    _ms("tpot_ms_mean", "{:,.3f}"),
    _ms("itl_ms_p50", "{:,.3f}"),
    _ms("itl_ms_p99", "{:,.3f}"),
    _ms("e2e_ms_p50", "{:,.1f}"),
    _ms("e2e_ms_p99", "{:,.1f}"),
)

#: Every metric by summary key, in a fixed order.
METRICS: dict[str, Metric] = {m.key: m for m in _ALL}


def metric(key: str) -> Metric:
    """The registry entry of ``key``; ``KeyError`` naming the key when there is none."""
    try:
        return METRICS[key]
    except KeyError:
        raise KeyError(f"{key!r} is not in the metrics registry "
                       "(ipc_bench.analysis.metrics.METRICS)") from None
