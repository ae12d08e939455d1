"""Fixed-step sweep: what send costs per step against 2, 5 and 20 ms GPU steps.

Why: on the null model a step is only the control plane, so send's extra bytes and
slicing look large; a real GPU decode step takes milliseconds (2, 5, 20 ms span real
decode steps; vLLM's V1 post reports about 5 ms for Llama 8B on an H100). Here the
runner busy-waits a fixed step time (``fixed-step`` model, then samples as the null
model: same tokens, same digests), so send's cost can be read as a share of a
realistic step, and the running-request count at which that share passes 1 % found.

The runner busy-waits by default, as when these figures were measured
(``--step-wait sleep`` leaves its core free instead, as a runner blocked on a GPU does;
the other scenarios' fixed-step model sleeps by default).

Grid: step times 2, 5, 20 ms (``--step-time-ms``) x running requests 16, 64, 256
(``--num-running``) x both policies and codecs, steady decode as in decode-steady
(``--steps`` default 200 counted steps, ``--warmup-steps`` default 20: about two
minutes on 2 cores).

Reported after the tables, per step time, B and codec (and added to each send
case's summary, paired with the cached case of the same repetition):

- ``send_cost_step_ns``: send's median ``step_ns`` minus cached's: the whole cost seen
  by the scheduler loop (slicing, bigger frames, the runner's per-request writes in
  update_states instead of write_back), subject to the machine's noise;
- ``send_cost_s2r_ns``: the difference in the SchedulerOutput's build + encode
  (scheduler) + decode (runner) time, median over steps
  (``s2r_build_encode_decode_ns_median``): the serialization cost alone, less noisy;
- ``send_cost_share_of_step`` / ``send_cost_s2r_share_of_step``: each as a share of
  the step time;
- the running-request count at which each share passes 1 %, interpolated linearly
  between the sweep's B values (extrapolated from the last two when no B reaches it).

Measured on the 2-core development machine, saturated by other jobs at the time
(load ~4, 100 % busy, so a 2 ms step took a median 2.7-3.0 ms): at B=256, send's s2r
cost was about 30-35 us with msgpack and 60-120 us with pickle at 2 ms steps (1.4-1.8 %
/ 3-6 %), 45-50 / 65-75 us at 5 ms (0.9-1.0 % / 1.3-1.5 %), 85 / 95-135 us at 20 ms
(0.4 % / 0.5-0.7 %); the s2r times of both policies grow with the step time (probably colder caches
after a longer wait on a shared machine). The s2r share passed 1 % at about 136
(msgpack) / 67 (pickle) running requests for 2 ms steps, 290 / 190 for 5 ms and
~570 for 20 ms (extrapolated). (The pickle figures predate the codec's vLLM RPC
envelope and dataclasses; send's extra pickle bytes per request are unchanged.) The whole-step difference was lost in that machine's
noise (hundreds of us either way); on a quiet machine it is the figure to read.
(``python bench.py --scenario step-time --repeat 3`` and ``--num-running 256
--steps 600 --repeat 3``.)
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Optional

from ipc_bench.harness.spec import CaseSpec
from ipc_bench.engine.config import CACHED, SEND, ConfigError
from ipc_bench.harness.scenario import STEADY, ScenarioOptions, grid, steady_case
from ipc_bench.analysis.stats import arms_by_repetition
from ipc_bench.report.tables import render

NAME = "step-time"
OPTIONS = STEADY
DEFAULT_STEP_TIMES_MS = [2.0, 5.0, 20.0]
DEFAULT_NUM_RUNNING = [16, 64, 256]
THRESHOLD = 0.01  # 1 % of the step time
#: The runner busy-waits its step unless --step-wait says otherwise: the figures above
#: were measured that way (the default of other scenarios' fixed-step model is sleep).
STEP_WAIT = "spin"


def cases(opts: ScenarioOptions) -> list[CaseSpec]:
    if opts.model not in (None, "fixed-step"):
        raise ConfigError(f"scenario {NAME} uses the fixed-step model; drop --model {opts.model}")
    steps = opts.steps or 200
    warmup = 20 if opts.warmup_steps is None else opts.warmup_steps
    step_times = opts.step_time_ms or DEFAULT_STEP_TIMES_MS
    models = {t: opts.model_config("fixed-step", step_time_ms=t, step_wait=STEP_WAIT)
              for t in step_times}

    def make(labels, policy, codec, rep):
        return steady_case(opts, NAME, labels, policy, codec, rep,
                           model=models[labels["step_time_ms"]], steps=steps, warmup=warmup)

    return grid(opts, [{"step_time_ms": t, "num_running": b}
                       for t in step_times
                       for b in (opts.num_running or DEFAULT_NUM_RUNNING)], make)


def _send_costs(send: dict[str, Any], cached: dict[str, Any], step_ns: float
                ) -> tuple[float, Optional[float]]:
    """(step diff, s2r diff) in ns, send minus cached, of one repetition's pair; adds
    them to ``send`` as ``send_cost_*`` fields (shares of ``step_ns``, the fixed step
    time). The s2r diff is ``None`` when a case lacks its median."""
    d_step = send["step_ns_median"] - cached["step_ns_median"]
    s2r_send = send.get("s2r_build_encode_decode_ns_median")
    s2r_cached = cached.get("s2r_build_encode_decode_ns_median")
    d_s2r = None if s2r_send is None or s2r_cached is None else s2r_send - s2r_cached
    send.update(send_cost_step_ns=d_step, send_cost_share_of_step=d_step / step_ns,
                send_cost_s2r_ns=d_s2r,
                send_cost_s2r_share_of_step=None if d_s2r is None else d_s2r / step_ns)
    return d_step, d_s2r


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


def report(summaries: list[dict[str, Any]]) -> str:
    """Adds ``send_cost_*`` fields to each send summary (paired with the cached case of
    the same workload, codec and repetition) and returns the cost table and the
    1 % crossings (see the module docstring)."""
    groups = arms_by_repetition(
        (s for s in summaries
         if s.get("scenario") == NAME and s.get("complete") and s.get("num_steps")),
        ("step_time_ms", "num_running", "codec"))
    # (step_time_ms, B, codec) -> lists of (step diff ns, s2r diff ns) over repetitions
    diffs: dict[tuple, list[tuple[float, Optional[float]]]] = defaultdict(list)
    for (t, b, codec), arms in groups.items():
        sends, cacheds = arms.get(SEND, {}), arms.get(CACHED, {})
        for rep in sorted(set(sends) & set(cacheds)):
            send, cached = sends[rep], cacheds[rep]
            diffs[(t, b, codec)].append(_send_costs(send, cached, step_ns=t * 1e6))
    if not diffs:
        return ""

    def mean(values):
        values = [v for v in values if v is not None]
        return sum(values) / len(values) if values else None

    header = ["step ms", "B", "codec", "step diff us", "% of step", "s2r diff us", "% of step"]
    rows = []
    curves: dict[tuple, dict[str, list]] = defaultdict(lambda: {"step": [], "s2r": []})
    for (t, b, codec) in sorted(diffs):
        d_step = mean(d for d, _ in diffs[(t, b, codec)])
        d_s2r = mean(d for _, d in diffs[(t, b, codec)])
        step_ns = t * 1e6
        rows.append([f"{t:g}", str(b), codec, f"{d_step / 1e3:.1f}",
                     f"{100 * d_step / step_ns:.2f}",
                     "-" if d_s2r is None else f"{d_s2r / 1e3:.1f}",
                     "-" if d_s2r is None else f"{100 * d_s2r / step_ns:.2f}"])
        curves[(t, codec)]["step"].append((b, d_step / step_ns))
        if d_s2r is not None:
            curves[(t, codec)]["s2r"].append((b, d_s2r / step_ns))
    out = ["", "send's cost per step (send minus cached, mean over repetitions; step: "
           "median step_ns; s2r: median SchedulerOutput build + encode + decode):",
           render(header, rows, left=0)]
    out.append("")
    out.append(f"running requests at which send's cost passes {100 * THRESHOLD:g} % of the step:")
    for (t, codec), curve in sorted(curves.items()):
        out.append(f"  {t:g} ms, {codec}: whole step {crossing(curve['step'])}; "
                   f"s2r {crossing(curve['s2r'])}")
    return "\n".join(out)
