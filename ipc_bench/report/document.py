"""``python bench.py report RUN_DIR [RUN_DIR ...] [--output DIR]``: a report of runs.

Writes ``report.md`` and ``report.html`` (self-contained: the figures are embedded
as base64 PNG, so the file reads offline and can be mailed alone), the figures as
PNG files beside them, and a copy of each run's ``summary.json``
(``<run_id>.summary.json``) so a reader can check every number. Contents: findings
stated as numbers (with 95 % intervals when the run has repetitions), the figures
of ``ipc_bench.report.plots`` (a figure whose data the run lacks is replaced by a line
saying what is missing), per-case tables, the configuration and the environment.
With two or more runs the report starts with a side-by-side comparison and warns
when their environments differ (``ipc_bench.harness.environment.compare_metadata``).

Default output folder: ``RUN_DIR/report`` for one run; ``report-<UTC time>`` beside
the first run for several. Bad input (a missing folder, not a run folder, an
unsupported result format) is one line on stderr and exit code 2.
"""

from __future__ import annotations

import base64
import datetime
import html
import math
import re
import shutil
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from ipc_bench.analysis.results import ResultsError, check_run_dir

# A report is a list of blocks, rendered to Markdown and to HTML:
#   ("h", level, text) ("p", text) ("ul", [text]) ("table", header, rows)
#   ("fig", file name, title, caption, png bytes) ("note", text) ("code", text)
Block = tuple

CAPTIONS = {
    "bytes_per_step": (
        "Payload bytes per step in each direction against the number of running "
        "requests (mean over counted steps). `send` ships each request's new token ids "
        "to the runner, so its scheduler → runner line rises above `cached`'s; the "
        "runner → scheduler message is the same for both policies."),
    "codec_time_per_step": (
        "Serializer time per step, both directions summed (the scheduler's "
        "SchedulerOutput and the runner's ModelRunnerOutput), one panel per codec."),
    "throughput": (
        "Output tokens/s of every case (tokens sampled in counted steps over their "
        "busy wall time); error bars are 95 % intervals over repetitions when the run "
        "has them. Right: cached / send paired by repetition (above 1: cached faster)."),
    "step_breakdown": (
        "Where a scheduler step's time goes, mean µs per counted step: the stack sums "
        "to the mean step time; transport is the send call plus the wait for the reply "
        "minus the runner's busy time. The hatched bar beside each stack is the "
        "runner's idle time (waiting for work), which overlaps the scheduler's parts."),
    "send_cost_share": (
        "What `send` costs as a share of its step: (send's mean step - cached's mean "
        "step) / send's mean step, against the step time (the cached case's mean step) "
        "and the running requests. The dotted line marks 1 %. A fixed-step sweep "
        "spreads the step-time axis; with the null model every step is the bare "
        "control plane's, the worst case for send's share."),
    "latency_cdfs": (
        "TTFT (from each request's intended arrival, so queueing counts) and "
        "inter-token latency distributions per policy, from a timed replay."),
}


# --------------------------------------------------------------------------------------
# formatting helpers


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, float):
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _pct(ratio: float) -> str:
    return f"{100 * (ratio - 1):+.1f} %"


def _interval(row: dict[str, Any], kind: str = "ratio", sign: float = 1.0) -> str:
    """' [lo, hi] %' of a ``summarize_pairs`` row's ratio interval (as % change), or
    ' [lo, hi] µs' of its difference interval (ns in the row) times ``sign`` (-1: the
    interval of cached - send); '' when the row has no interval."""
    lo, hi = row.get(f"{kind}_low"), row.get(f"{kind}_high")
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return ""
    if kind == "ratio":
        return f" [{100 * (lo - 1):+.1f}, {100 * (hi - 1):+.1f}] %"
    lo, hi = sorted((sign * lo, sign * hi))
    return f" [{lo / 1e3:+.2f}, {hi / 1e3:+.2f}] µs"


def _where(row: dict[str, Any]) -> str:
    """'At 256 running requests[, k=v...]' from a ``num_running`` label, else 'On
    `workload`'. ``row``: ``workload``, optional ``num_running`` and ``labels`` (the
    workload's other labels)."""
    n = row.get("num_running")
    if n is not None and n == n:
        extra = "".join(f", {k}={v:g}" if isinstance(v, float) else f", {k}={v}"
                        for k, v in (row.get("labels") or {}).items())
        return f"At {int(n):,} running request{'' if int(n) == 1 else 's'}{extra}"
    return f"On `{row.get('workload')}`"


def _workload_labels(cases) -> dict[str, dict[str, Any]]:
    """workload -> {label: value} for the run's label columns."""
    from ipc_bench.analysis.stats import label_columns

    cols = label_columns(cases)
    out = {}
    for rec in cases.drop_duplicates("workload").to_dict("records"):
        out[rec["workload"]] = {c: rec[c] for c in cols}
    return out


def _codec_name(codec: str) -> str:
    return "single process, no serialization" if codec == "none" else codec


# --------------------------------------------------------------------------------------
# content


def _latency_clause(cases, key: tuple) -> str:
    """'TTFT p50 a → b ms, p99 ...; ITL ...' for the send/cached cases of ``key``."""
    workload, codec = key[0], key[1]
    sel = cases[(cases["workload"] == workload) & (cases["codec"] == codec)]
    parts = []
    for name, label in (("ttft", "TTFT"), ("itl", "ITL"), ("tpot", "TPOT")):
        stats = []
        for q in ("p50", "p99") if name != "tpot" else ("mean",):
            col = f"{name}_ms_{q}"
            if col not in sel.columns:
                continue
            send = sel.loc[sel["policy"] == "send", col].mean()
            cached = sel.loc[sel["policy"] == "cached", col].mean()
            if send == send and cached == cached:
                stats.append(f"{q} {send:.3g} → {cached:.3g} ms")
        if stats:
            parts.append(f"{label} " + ", ".join(stats))
    return ("latency send → cached: " + "; ".join(parts)) if parts else ""


def _share_findings(cases, where) -> list[str]:
    """Send's cost as a share of the step at the largest running count of each codec
    (and other workload label), from ``plots.send_cost_table``."""
    from ipc_bench.report.plots import send_cost_table
    from ipc_bench.analysis.stats import label_columns

    table = send_cost_table(cases)
    if len(table) == 0 or table["share_s2r"].isna().all():
        return []
    table = table[table["codec"] != "none"]
    from ipc_bench.report.plots import S2R_MEDIAN_COLUMN

    median = ", medians" if S2R_MEDIAN_COLUMN in cases.columns else ""
    other = [c for c in label_columns(cases) if c != "num_running" and c in table.columns]
    out = []
    for _, g in table.groupby(["codec"] + other, sort=False):
        top = g[g["running"] == g["running"].max()]
        s2r_us = float(top["_s2r_diff"].mean()) / 1e3
        step_ms = float(top["step_ms"].mean())
        share_s2r = float(top["share_s2r"].mean())
        share_step = float(top["share_step"].mean())
        codec = top["codec"].iloc[0]
        out.append(f"{where(top['workload'].iloc[0])} ({codec}), send's SchedulerOutput path "
                   f"(build + encode + decode{median}) costs {s2r_us:.2f} µs per step, "
                   f"{share_s2r:.2f} % of the {step_ms * 1e3:,.0f} µs median step; the whole "
                   f"median step differs by {share_step:+.2f} % (noisier).")
    return out


def findings(results) -> list[str]:
    """Findings of one run as sentences with numbers, one per workload and codec:
    bytes per step, encode/build µs per step and output tokens/s (% change) of
    ``cached`` against ``send``
    (intervals over repetitions when there are 2+: ``stats.summarize_pairs`` with the
    run's ``--ci-method``, so they are the CLI comparison block's), then send's token
    bytes split, the single-process and floor baselines. ``results``: one run
    (``load``)."""
    from ipc_bench.analysis.stats import paired, results_ci_method, summarize_pairs

    cases = results.cases
    out: list[str] = []
    if cases.empty:
        return ["The run has no finished case."]

    method = results_ci_method(results.metadata)

    def table(metric: str) -> dict[tuple, dict[str, Any]]:
        rows = summarize_pairs(paired(cases, metric), method=method)
        return {(r["workload"], r["codec"], r.get("transport"), r.get("model")): r
                for r in rows}

    timed = "trace_speedup" in cases.columns and cases["trace_speedup"].notna().any()
    tput = table("output_tokens_per_s")
    s2r = table("sched_to_runner_payload_bytes_per_step")
    enc = table("encode_ns_per_step")
    build = table("build_ns_per_step")
    wl_labels = _workload_labels(cases)

    def where(workload: str) -> str:
        lab = dict(wl_labels.get(workload, {}))
        return _where(dict(workload=workload, num_running=lab.pop("num_running", None),
                           labels=lab))
    for key, t in tput.items():
        workload, codec, model = key[0], key[1], key[3]
        what = _codec_name(codec) + (f", {model} model" if model and model != "null" else "")
        clauses = []
        b = s2r.get(key)
        if b and codec != "none" and b["send"]:
            fewer = b["diff"]
            clauses.append(f"sends {abs(fewer):,.0f} {'fewer' if fewer >= 0 else 'more'} "
                           f"bytes per step to the runner ({100 * abs(fewer) / b['send']:.1f} % "
                           f"{'less' if fewer >= 0 else 'more'})")
        e = enc.get(key)
        if e and codec != "none":
            saved = e["diff"] / 1e3
            interval = _interval(e, "diff", 1.0 if saved >= 0 else -1.0) if e["n"] > 1 else ""
            clauses.append(f"{'saves' if saved >= 0 else 'spends'} {abs(saved):.2f} µs of "
                           f"encode per step{interval}")
        bl = build.get(key)
        if bl:
            saved = bl["diff"] / 1e3
            clauses.append(f"{'saves' if saved >= 0 else 'spends'} {abs(saved):.2f} µs "
                           f"building the SchedulerOutput")
        text = f"{where(workload)} ({what}), cached "
        joined = (", ".join(clauses[:-1]) + " and " + clauses[-1] if len(clauses) > 1
                  else "".join(clauses))
        if timed:
            lat = _latency_clause(cases, key)
            text += (joined + "; " if joined else "") + (lat or "shows no latency data") + "."
            out.append(text)
            continue
        if clauses:
            text += joined + "; output tokens/s changes by "
        else:
            text += "changes output tokens/s by "
        text += f"{_pct(t['ratio'])}"
        if t["n"] > 1:
            text += (_interval(t) + f" over {t['n']} repetitions"
                     + (", no significant difference" if t["significant"] is False else ""))
        text += f" ({t['send']:,.0f} → {t['cached']:,.0f} tok/s)."
        out.append(text)
    if timed:
        out.append("This is a timed replay: arrivals follow the trace's clock, so both "
                   "policies produce the same tokens in about the same wall time and its "
                   "tokens/s is not a throughput comparison; the latencies are the result.")
    if tput and all(t["n"] < 2 for t in tput.values()) and not timed:
        out.insert(0, "One repetition per case, so no intervals: differences of a few % "
                      "may be noise (run with `--repeat N` for 95 % intervals).")

    ok = cases[cases["output_tokens_per_s"].notna()] if "output_tokens_per_s" in cases else cases
    send = ok[(ok["policy"] == "send") & (ok["codec"] != "none")]
    if "prompt_chunk_bytes_per_step" in send.columns:
        for (workload, codec), g in send.groupby(["workload", "codec"], sort=False):
            tok = float(g["decode_token_bytes_per_step"].mean())
            prompt = float(g["prompt_chunk_bytes_per_step"].mean())
            total = float(g["sched_to_runner_payload_bytes_per_step"].mean())
            if prompt > 0:
                out.append(
                    f"On `{workload}` ({codec}), send's new_token_ids take {tok + prompt:,.1f} "
                    f"of {total:,.0f} bytes per step: {tok:,.1f} B decode tokens and "
                    f"{prompt:,.1f} B prompt chunks re-sent during chunked prefill.")
    if (ok["codec"] == "none").any():
        for workload, g in ok.groupby("workload", sort=False):
            single = g[g["codec"] == "none"]["output_tokens_per_s"].mean()
            two = g[g["codec"] == "msgpack"]["output_tokens_per_s"].mean()
            if single == single and two == two and two > 0:
                out.append(f"{where(workload)}, the single-process baseline (no IPC, no serialization) "
                           f"runs {single:,.0f} tok/s, {single / two:.2f}x the two-process "
                           f"msgpack cases ({two:,.0f} tok/s; means over policies): the "
                           "cost of having IPC at all.")
    if not timed:
        out.extend(_share_findings(cases, where))
    if "step_to_floor_ratio" in ok.columns and ok["step_to_floor_ratio"].notna().any():
        r = ok["step_to_floor_ratio"].dropna()
        out.append(f"The harness's measured steps take {r.min():.2f}x to {r.max():.2f}x the "
                   "floor (the same recorded messages exchanged bare) across cases.")
    return out


def _case_warnings(results) -> list[str]:
    """``case_id: warning`` for every warning recorded in the run's cases."""
    cases = results.cases
    if "warnings" not in cases.columns:
        return []
    out = []
    for case_id, warnings in zip(cases["case_id"], cases["warnings"]):
        if isinstance(warnings, (list, tuple)):
            out.extend(f"`{case_id}`: {w}" for w in warnings)
    return out


def _case_tables(results) -> list[Block]:
    from ipc_bench.report.tables import COLUMNS, cells

    blocks: list[Block] = []
    cases = results.cases
    if cases.empty:
        return [("note", "No case finished.")]
    header = ["rep"] + [h for h, *_ in COLUMNS]
    records = cases.to_dict("records")
    for workload in dict.fromkeys(cases["workload"]):
        rows = []
        for s in records:
            if s["workload"] != workload:
                continue
            s = {k: (None if isinstance(v, float) and v != v else v) for k, v in s.items()}
            rows.append([str(s.get("repetition", 0))] + cells(s, COLUMNS))
        blocks.append(("p", f"**{workload}**"))
        blocks.append(("table", header, rows))
    blocks.append(("p", "Bytes are payload bytes per counted step (`s2r`: scheduler → "
                        "runner, `r2s`: back), times are µs per counted step, both "
                        "directions summed for build/encode/decode; `x floor` is the "
                        "measured step time over the floor's."))
    return blocks


def _pair_table(results) -> list[Block]:
    """The cached-against-send table: per workload, codec and metric, the pairs, the
    means, send - cached and cached / send with its interval (``stats.summarize_pairs``
    with the run's ``--ci-method``: the numbers of the CLI's comparison block)."""
    from ipc_bench.analysis.stats import paired, results_ci_method, summarize_pairs

    metrics = (("output tokens/s", "output_tokens_per_s", 1.0),
               ("s2r payload B/step", "sched_to_runner_payload_bytes_per_step", 1.0),
               ("s2r wire B/step", "sched_to_runner_wire_bytes_per_step", 1.0),
               ("build µs/step", "build_ns_per_step", 1e-3),
               ("encode µs/step", "encode_ns_per_step", 1e-3),
               ("decode µs/step", "decode_ns_per_step", 1e-3),
               ("step µs (mean)", "step_ns_mean", 1e-3))
    method = results_ci_method(results.metadata)
    rows = []
    for label, metric, scale in metrics:
        for r in summarize_pairs(paired(results.cases, metric), method=method):
            interval = ""
            if r["n"] > 1 and math.isfinite(r["ratio_low"]):
                interval = f" [{r['ratio_low']:.3f}, {r['ratio_high']:.3f}]"
            rows.append([str(r["workload"]), r["codec"], label, str(r["n"]),
                         _fmt(r["send"] * scale, 2), _fmt(r["cached"] * scale, 2),
                         _fmt(r["diff"] * scale, 2),
                         (f"{r['ratio']:.3f}" if math.isfinite(r["ratio"]) else "-")
                         + interval])
    if not rows:
        return [("note", "No send/cached pair in this run.")]
    order = {w: i for i, w in enumerate(dict.fromkeys(results.cases["workload"]))}
    codec_order = {"msgpack": 0, "pickle": 1, "none": 9}
    rows = [r for r in rows if not (r[1] == "none" and "B/step" in r[2])]  # no bytes in-process
    rows.sort(key=lambda r: (order.get(r[0], 0), codec_order.get(r[1], 5), r[1]))
    point = {"t": "the geometric mean of the ratios and the mean of the differences, "
                  "with Student-t intervals (the ratio's on the log ratios)",
             "bootstrap": "medians, with percentile-bootstrap intervals",
             "sign": "medians, with sign-test intervals"}[method]
    return [("table", ["workload", "codec", "metric", "n", "send", "cached",
                       "send - cached", "cached / send [95 %]"], rows),
            ("p", f"send, cached: means over the n repetitions. send - cached, cached / "
                  f"send: paired by repetition, {point} (`--ci-method {method}`, as the "
                  "comparison block `bench.py` prints after a `--repeat` run).")]


def _config_blocks(results, run_id: str) -> list[Block]:
    import json

    md = results.metadata[run_id]
    blocks: list[Block] = [("ul", [
        f"scenario: `{md.get('scenario', '?')}`, seed {md.get('seed', '?')}",
        "command: `" + " ".join(md.get("command_line") or []) + "`",
        f"status: {results.status[run_id]}",
    ])]
    groups: dict[str, list[str]] = {}
    for c in md.get("cases") or []:
        conf = {k: v for k, v in c.items() if k not in ("case_id", "labels", "policy",
                                                         "codec", "repetition")}
        groups.setdefault(json.dumps(conf, sort_keys=True), []).append(c["case_id"])
    rows = []
    for conf, ids in groups.items():
        c = json.loads(conf)
        sched = c.pop("scheduler", {})
        model = c.pop("model", {})
        rows.append([f"{len(ids)}: {ids[0]}" + (f" … {ids[-1]}" if len(ids) > 1 else ""),
                     ", ".join(f"{k}={v}" for k, v in sched.items()),
                     ", ".join(f"{k}={v}" for k, v in model.items()),
                     ", ".join(f"{k}={v}" for k, v in c.items())])
    if rows:
        blocks.append(("table", ["cases", "scheduler", "model", "run"], rows))
    return blocks


def _env_rows(md: dict[str, Any]) -> list[list[str]]:
    rows = []
    git = md.get("git") or {}
    if git:
        rows.append(["git", f"{git.get('commit', '?')[:12]}"
                     + (" (dirty)" if git.get("dirty") else "")
                     + (f" on {git['branch']}" if git.get("branch") else "")])
    for key in ("start_time_utc", "hostname", "python_version", "python_implementation",
                "platform", "kernel", "cpu_model", "cpu_count", "cpu_affinity",
                "cpu_freq_mhz", "cpu_governor", "load_avg"):
        if key in md:
            v = md[key]
            rows.append([key, ", ".join(map(str, v)) if isinstance(v, list) else str(v)])
    gpu = md.get("gpu")
    if gpu:
        rows.append(["gpu", ", ".join(f"{k}={v}" for k, v in gpu.items())])
    pk = md.get("packages") or {}
    if pk:
        rows.append(["packages", ", ".join(f"{k} {v}" for k, v in sorted(pk.items()))])
    return rows


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "run"


def _run_blocks(results, run_id: str, level: int, prefix: str,
                only_figures: Optional[set[str]] = None) -> list[Block]:
    from ipc_bench.report import plots

    one = results.select(run_id) if len(results.run_ids) > 1 else results
    md = one.metadata[run_id]
    blocks: list[Block] = []
    status = one.status[run_id]
    if status != "complete":
        problems = "; ".join(one.problems[run_id]) or "no reason recorded"
        blocks.append(("note", f"This run is {status}: {problems}. Its figures cover the "
                               "cases that finished."))
    load = md.get("load_avg")
    cpus = md.get("cpu_count")
    if load and cpus and load[0] >= 0.5 * cpus:
        blocks.append(("note", f"The machine was loaded when this run started (1-minute load "
                               f"average {load[0]:.1f} on {cpus} CPUs): other work "
                               "competed with the two processes, so times and tokens/s are "
                               "noisy; bytes are exact whatever the load."))
    blocks.append(("h", level, "Findings"))
    blocks.append(("ul", findings(one)))
    warn = _case_warnings(one)
    if warn:
        blocks.append(("h", level, "Measurement warnings"))
        blocks.append(("p", "Recorded by the run for these cases (in the style of "
                            "`python -m pyperf check`); their figures are less certain."))
        blocks.append(("ul", warn))
    blocks.append(("h", level, "Figures"))
    for name, fn, title in plots.FIGURES:
        if only_figures is not None and name not in only_figures:
            continue
        try:
            fig = fn(one)
        except plots.NoData as exc:
            blocks.append(("note", f"{title}: not shown, {exc}."))
            continue
        png = plots.figure_png(fig)
        blocks.append(("fig", f"{prefix}{name}.png", title, CAPTIONS.get(name, ""), png))
    blocks.append(("h", level, "cached against send"))
    blocks.extend(_pair_table(one))
    blocks.append(("h", level, "Cases"))
    blocks.extend(_case_tables(one))
    blocks.append(("h", level, "Configuration"))
    blocks.extend(_config_blocks(one, run_id))
    blocks.append(("h", level, "Environment"))
    blocks.append(("table", ["field", "value"], _env_rows(md)))
    return blocks


def _comparison_blocks(results) -> list[Block]:
    from ipc_bench.report import plots
    from ipc_bench.harness.environment import compare_metadata

    ids = results.run_ids
    blocks: list[Block] = [("h", 2, "Runs")]
    rows = []
    for r in ids:
        md = results.metadata[r]
        git = (md.get("git") or {}).get("commit", "")[:12]
        n = int((results.cases["run_id"] == r).sum())
        rows.append([r, str(md.get("scenario", "?")), results.status[r],
                     str(md.get("start_time_utc", "?"))[:19], git or "-", str(n)])
    blocks.append(("table", ["run", "scenario", "status", "start (UTC)", "commit", "cases"],
                   rows))
    warnings = []
    base = results.metadata[ids[0]]
    for r in ids[1:]:
        for line in compare_metadata(base, results.metadata[r]):
            warnings.append(f"{r} against {ids[0]}: {line}")
        if results.metadata[r].get("scenario") != base.get("scenario"):
            warnings.append(f"{r} ran scenario {results.metadata[r].get('scenario')!r}, "
                            f"{ids[0]} ran {base.get('scenario')!r}")
    if warnings:
        blocks.append(("note", "The runs differ in ways that can change the numbers: "
                               "compare with care."))
        blocks.append(("ul", warnings))
    else:
        blocks.append(("p", "Same machine, software and commit by their metadata."))
    blocks.append(("h", 2, "Side by side"))
    cases = results.cases
    metrics = (("output tokens/s", "output_tokens_per_s", 1.0),
               ("s2r payload B/step", "sched_to_runner_payload_bytes_per_step", 1.0),
               ("step µs (mean)", "step_ns_mean", 1e-3))
    for label, metric, scale in metrics:
        if metric not in cases.columns:
            continue
        means = cases.groupby(["workload", "policy", "codec", "run_id"], sort=False)[
            metric].mean()
        keys = list(dict.fromkeys((w, p, c) for w, p, c, _ in means.index))
        header = ["workload", "policy", "codec"] + ids + [f"{r} / {ids[0]}" for r in ids[1:]]
        rows = []
        for key in keys:
            vals = [means.get(key + (r,), math.nan) * scale for r in ids]
            ratios = [f"{v / vals[0]:.3f}" if vals[0] and vals[0] == vals[0] and v == v
                      else "-" for v in vals[1:]]
            rows.append([str(key[0]), key[1], key[2]] + [_fmt(v, 2) for v in vals] + ratios)
        blocks.append(("p", f"**{label}** (mean over repetitions)"))
        blocks.append(("table", header, rows))
    try:
        fig = plots.throughput(results)
        blocks.append(("fig", "compare-throughput.png", "Output tokens/s, all runs",
                       CAPTIONS["throughput"], plots.figure_png(fig)))
    except plots.NoData as exc:
        blocks.append(("note", f"Output tokens/s, all runs: not shown, {exc}."))
    return blocks


def build_blocks(results, command: str) -> list[Block]:
    """All blocks of the report of ``results`` (one run or several), in order: a list
    of ``Block`` tuples (see the comment above ``Block``); ``command`` is quoted as the
    command that rendered it. Figures are rendered here (PNG bytes in the blocks)."""
    ids = results.run_ids
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    if len(ids) == 1:
        md = results.metadata[ids[0]]
        blocks: list[Block] = [
            ("h", 1, f"ipc-bench report: {md.get('scenario', '?')} ({ids[0]})"),
            ("p", f"Rendered {now} by `{command}` from run folder `{ids[0]}` "
                  f"(raw data: `{ids[0]}.summary.json` beside this file)."),
        ]
        blocks.extend(_run_blocks(results, ids[0], 2, ""))
        return blocks
    blocks = [("h", 1, f"ipc-bench report: {len(ids)} runs compared"),
              ("p", f"Rendered {now} by `{command}`.")]
    blocks.extend(_comparison_blocks(results))
    for r in ids:
        md = results.metadata[r]
        blocks.append(("h", 2, f"Run {r} ({md.get('scenario', '?')})"))
        blocks.extend(_run_blocks(results, r, 3, f"{_slug(r)}-"))
    return blocks


# --------------------------------------------------------------------------------------
# rendering


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(blocks: Sequence[Block]) -> str:
    """Markdown (GitHub flavour) of ``blocks``; figures link to their PNG files."""
    out: list[str] = []
    for b in blocks:
        kind = b[0]
        if kind == "h":
            out.append("#" * b[1] + " " + b[2])
        elif kind == "p":
            out.append(b[1])
        elif kind == "note":
            out.append(f"> **Note:** {b[1]}")
        elif kind == "code":
            out.append(f"```\n{b[1]}\n```")
        elif kind == "ul":
            out.append("\n".join(f"- {item}" for item in b[1]) if b[1] else "- (none)")
        elif kind == "table":
            header, rows = b[1], b[2]
            lines = ["| " + " | ".join(_md_cell(h) for h in header) + " |",
                     "|" + "|".join("---" for _ in header) + "|"]
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
            out.append("\n".join(lines))
        elif kind == "fig":
            _, name, title, caption, _png = b
            out.append(f"**{title}**\n\n![{title}]({name})\n\n{caption}")
    return "\n\n".join(out) + "\n"


def _inline_html(text: str) -> str:
    text = html.escape(str(text))
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1200px;
margin:2em auto;padding:0 1em;line-height:1.45;color:#222}
table{border-collapse:collapse;margin:.6em 0;font-size:.86em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right;vertical-align:top}
th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}
code{background:#f4f4f4;padding:0 .2em;border-radius:3px}
figure{margin:1.2em 0}figure img{max-width:100%;border:1px solid #eee}
figcaption{font-size:.9em;color:#444}
.note{background:#fff6e0;border-left:4px solid #e69f00;padding:.4em .8em}
"""


def render_html(blocks: Sequence[Block], title: str) -> str:
    """A self-contained HTML page of ``blocks``: figures embedded as base64 PNG."""
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"]
    for b in blocks:
        kind = b[0]
        if kind == "h":
            out.append(f"<h{b[1]}>{_inline_html(b[2])}</h{b[1]}>")
        elif kind == "p":
            out.append(f"<p>{_inline_html(b[1])}</p>")
        elif kind == "note":
            out.append(f'<p class="note"><strong>Note:</strong> {_inline_html(b[1])}</p>')
        elif kind == "code":
            out.append(f"<pre>{html.escape(b[1])}</pre>")
        elif kind == "ul":
            items = "".join(f"<li>{_inline_html(i)}</li>" for i in b[1]) or "<li>(none)</li>"
            out.append(f"<ul>{items}</ul>")
        elif kind == "table":
            head = "".join(f"<th>{_inline_html(h)}</th>" for h in b[1])
            body = "".join("<tr>" + "".join(f"<td>{_inline_html(c)}</td>" for c in row)
                           + "</tr>" for row in b[2])
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif kind == "fig":
            _, name, ftitle, caption, png = b
            data = base64.b64encode(png).decode("ascii")
            out.append(f'<figure><img alt="{html.escape(ftitle)}" '
                       f'src="data:image/png;base64,{data}"><figcaption><strong>'
                       f"{html.escape(ftitle)}</strong> ({html.escape(name)}). "
                       f"{_inline_html(caption)}</figcaption></figure>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def write_report(run_dirs: Sequence[str], output: Optional[str] = None,
                 command: Optional[str] = None) -> Path:
    """Load ``run_dirs``, write the report into ``output`` (see the module docstring)
    and return the folder. Raises ``ResultsError`` (one line) on bad input and
    ``OSError`` when the output folder cannot be written."""
    from ipc_bench.analysis.results import load

    dirs = [check_run_dir(d) for d in run_dirs]
    results = load(dirs)
    if output:
        out = Path(output)
    elif len(dirs) == 1:
        out = dirs[0] / "report"
    else:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        out = dirs[0].resolve().parent / f"report-{stamp}"
    if out.exists() and not out.is_dir():
        raise ResultsError(f"{out}: exists and is not a folder")
    command = command or "python bench.py report " + " ".join(str(d) for d in run_dirs)
    blocks = build_blocks(results, command)
    out.mkdir(parents=True, exist_ok=True)
    from ipc_bench.report.plots import FIGURES

    names = tuple(f"{n}.png" for n, *_ in FIGURES) + ("compare-throughput.png",)
    for old in out.glob("*.png"):  # figures of an earlier render that may be gone now
        if old.name.endswith(names):
            old.unlink()
    for b in blocks:
        if b[0] == "fig":
            (out / b[1]).write_bytes(b[4])
    title = next((b[2] for b in blocks if b[0] == "h"), "ipc-bench report")
    (out / "report.md").write_text(render_markdown(blocks), encoding="utf-8")
    (out / "report.html").write_text(render_html(blocks, title), encoding="utf-8")
    for run_id, path in results.paths.items():
        shutil.copyfile(path / "summary.json", out / f"{_slug(run_id)}.summary.json")
    return out
