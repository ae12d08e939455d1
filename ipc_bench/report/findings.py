"""Findings of one run: sentences with numbers, the report's first section.

Per workload and codec: bytes per step, encode, decode and build µs per step (both
messages of a step summed, the SchedulerOutput and the ModelRunnerOutput) and output
tokens/s (% change) of ``cached`` against ``send``, with intervals over repetitions
when there are 2+ (``stats.summarize_pairs`` with the run's ``--ci-method``, so they
are the CLI comparison block's; unadjusted, and a time or tokens/s clause whose
difference the run's Holm-adjusted verdict does not find significant says so; one
with no interval says it has none; each difference is send - cached, as the pair
table's, each ratio cached/send, their statistics and the short verdicts named once in
a legend under the findings, ``findings_legend``); a summary table of those figures, one
row per workload and codec, opens the section (``Findings``, ``_summary_table``,
``findings_blocks``); timed replays give latencies instead of tokens/s,
and one finding gives each pair's wall times and wall tok/s as what they are, a measure
of the arrivals (``_timed_replay_finding``).
A pair whose arms' garbage collections per step differ by 1 or more in either process
gets a line on the collector after its finding (``_gc_findings``, ``collector.gc_line``).
Then send's token bytes split, the single-process and floor baselines, and send's cost
as a share of the step (a step-time run: the lines its terminal printed, from the
``send_cost_*`` fields it recorded, ``analysis.send_cost``). A ``--pp`` run compares
send with ``direct`` (cached policy, ids last stage -> other stages over gloo)
instead: the lines its terminal printed (``analysis.pp``), first. An ``overhead`` run
leads with what per-step recording costs (``_overhead_findings``). Every other paired
comparison the run recorded (an ``--aa`` run's send' against send, cached+async
against cached) gets a sentence of its own (``_comparison_finding``); an A/A pair's
says whether the machine's noise alone produced a verdict. A workload whose cases
rejected requests on arrival or cut them at max_model_len gets the terminal's line on
it first, saying what its findings then cover (``_request_findings``). A comparison
of 3 or more pairs one of whose arms ran first in more of them than a balanced order
allows gets a line naming the split, before the measurement warnings' line
(``order_findings``). A trace replay's workload gets a line on its machine's noise,
measured across the repetitions of one schedule, its own block CV being the trace's
(``replay_noise.replay_noise_findings``), before that line, which does not count a
replay's block-CV warnings.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

import pandas as pd
from typing import Any, Callable

from ipc_bench.analysis.frames import frame_records, listed
from ipc_bench.analysis.pace import is_missing
from ipc_bench.analysis import cores
from ipc_bench.analysis.results import SINGLE_PROCESS_CODEC as SINGLE_PROCESS
from ipc_bench.analysis.replay_noise import (is_replay, noisy_arm_warnings,
                                             replay_noise_findings,
                                             workload_spread_line)
from ipc_bench.analysis.stats import (ARRIVAL_BOUND, CONFIDENCE, DETECTABLE, INTERVAL_NAMES, ONE_PAIR,
                                      RATIO_POINTS, arm_geomeans, arrival_bound, inconclusive,
                                      compare_paired, geometric_mean, interval_end, min_pairs, paired,
                                      paired_ratio, point_text, ratio_interval, ratio_phrase,
                                      results_ci_method, schedules_differ, shown_end,
                                      summarize_pairs, token_ids_bytes,
                                      unadjusted_excludes_one, verdict_of)
from ipc_bench.engine.config import CACHED, SEND
from ipc_bench.report.tables import model_steps

#: Why a run of one repetition gives no interval, and what that leaves a difference.
NO_INTERVAL_TAIL = ("so no intervals: a difference of any size may be the machine's "
                    "noise, which can reach tens of % between two runs of one case on a "
                    "loaded machine (run with `--repeat N` for 95 % intervals).")
ONE_REPETITION = f"One repetition per case, {NO_INTERVAL_TAIL}"
TIMED_REPLAY = ("This is a timed replay: arrivals follow the trace's clock, so its "
                "tokens/s (wall), every output token over the wall time from the first "
                "arrival to the last completion, measures the arrivals, not throughput; "
                "the latencies (the Latency section) are the result.")
#: ``TIMED_REPLAY`` for a load-bound replay (``pace.replay_pace``); ``{}``: the
#: figures that labelled it, naming the measure (``_timed_replay_words``).
TIMED_LOAD_BOUND = ("This is a timed replay, but load-bound: its requests arrived faster "
                    "than the engine served them ({}) and queued, so the engine, not the "
                    "trace, set the pace; its tokens/s (wall), every output token over the "
                    "wall time from the first arrival to the last completion, is the "
                    "engine's throughput under that backlog, comparable between arms "
                    "as such, and its TTFT (the Latency section) is mostly queueing "
                    "delay.")
#: ``TIMED_LOAD_BOUND`` for a replay load-bound only as a burst the engine drained
#: (``pace.drained_a_burst``): its wall time ends with its longest requests' tails.
TIMED_BURST = ("This is a timed replay, but load-bound: a burst of its requests arrived "
               "faster than the engine served them ({}) and queued, and the engine "
               "drained it, so the engine, not the trace, set the pace; its tokens/s "
               "(wall), every output token over the wall time from the first arrival to "
               "the last completion, compares the arms' times to drain the same burst but "
               "is no saturated engine's throughput: a drained burst's wall time ends "
               "with the tails of its longest requests, few requests running, so it "
               "depends on the trace's longest outputs (the engine's throughput while "
               "busy is `busy_output_tokens_per_s` in summary.json, over the counted "
               "steps, those tails among them), and its TTFT (the Latency section) is "
               "mostly queueing delay.")
#: ``TIMED_LOAD_BOUND`` for a replay load-bound only as an offline batch (every
#: request arrived at its start: ``pace.arrived_at_start``).
TIMED_AT_START = ("This is a timed replay, but load-bound: every request arrived at its "
                  "start ({}), so the engine's time on that batch, not the trace, set the "
                  "pace; its tokens/s (wall), every output token over the wall time from "
                  "the first arrival to the last completion, is the engine's throughput "
                  "on that batch, comparable between arms as such.")
#: ``TIMED_LOAD_BOUND`` where only some timed cases are load-bound (``n`` of ``m``):
#: the others' tokens/s (wall) follow the arrivals, so a comparison over all of them is
#: no throughput comparison (``stats.arrival_bound`` withholds it).
TIMED_MIXED = ("This is a timed replay, load-bound in {n} of its {m} cases ({evidence}) "
               "and arrival-bound in the others: its tokens/s (wall) mixes the engine's "
               "throughput under a backlog with the trace's arrivals, so it is no "
               "throughput comparison between arms; the latencies (the Latency section) "
               "are the result.")
#: The words of a timed replay's wall-time clause (``_wall_time_clause``) whose interval
#: holds 0 % and reaches no further than 1.1x either way (``stats.inconclusive``): the one case in
#: which it says the wall times are about the same.
WALL_WITHIN_NOISE = "within noise: about the same wall time"
#: The same for a timed replay that ran one arm, or arms other than send and cached.
TIMED_REPLAY_ONE_ARM = ("This is a timed replay: arrivals follow the trace's clock, so a "
                        "case's tokens/s follows the trace, not the harness, and is no "
                        "throughput figure; the latencies (the Latency section) are the "
                        "result.")

#: After ``TIMED_REPLAY`` (or ``TIMED_REPLAY_ONE_ARM``) where no case records the
#: figures that label a pace (``pace.replay_pace``: a run before them).
PACE_UNKNOWN = (" Its pace was not recorded (a run before the figures that label it): "
                "had its requests queued, its tokens/s (wall) would be the engine's "
                "throughput under that backlog instead.")


Where = Callable[[str], str]


def _pct(ratio: float) -> str:
    """A ratio as a % change to one decimal, never rounded onto 0 % unless it is 1
    (``stats.point_text``): ``+13.4 %``, ``-0.02 %``, not ``-0.0 %``."""
    return f"{point_text(100 * (ratio - 1), 1, sign=True)} %"


def _interval(row: dict[str, Any]) -> str:
    """' [lo, hi] %' of a ``summarize_pairs`` row's ratio interval (cached/send) as %
    change, the interval the pair table's cached/send column shows; '' when the row has
    no interval."""
    lo, hi = row.get("ratio_low"), row.get("ratio_high")
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return ""
    return " " + ratio_interval(lo, hi, percent=True)


def _where(row: dict[str, Any]) -> str:
    """'At 256 running requests[, k=v...]' from a ``num_running`` label, else 'On
    `workload`'. ``row``: ``workload``, optional ``num_running`` and ``labels`` (the
    workload's other labels; one with a gap, ``pace.is_missing``, the workload lacks:
    left out)."""
    n = row.get("num_running")
    if not is_missing(n):
        extra = "".join(f", {k}={v:g}" if isinstance(v, float) else f", {k}={v}"
                        for k, v in (row.get("labels") or {}).items() if not is_missing(v))
        return f"At {int(n):,} running request{'' if int(n) == 1 else 's'}{extra}"
    return f"On `{row.get('workload')}`"


def _where_of(cases, labels: list[str]) -> Where:
    """workload -> 'At 256 running requests...' from the run's label columns."""
    wl_labels = {rec["workload"]: {c: rec[c] for c in labels}
                 for rec in frame_records(cases.drop_duplicates("workload"))}

    def where(workload: str) -> str:
        lab = dict(wl_labels.get(workload, {}))
        return _where(dict(workload=workload, num_running=lab.pop("num_running", None),
                           labels=lab))
    return where


def _codec_name(codec: str) -> str:
    return "single process, no serialization" if codec == SINGLE_PROCESS else codec


def _latency_clause(cases, key: tuple, method: str = "t") -> str:
    """'latency send → cached: TTFT p50 a → b ms, p99 ...; ITL ...; E2E ...' for the
    send/cached arms of ``key`` (workload, codec, transport, model), each figure the
    mean of the arm's per-repetition percentiles in the Latency table's cells
    (``metrics.metric(...).cell``), with ``(means over 3 repetitions, no interval)``
    after them when an arm ran more than once (the repetitions a mean is over: a figure
    the loader withheld, NaN, is left out and said so); an A/A copy (``send'``) or an async arm
    is not one of them (``_arms``). Where the repetitions both arms have a figure of
    are enough pairs for ``method``'s interval (``stats.min_pairs``), that figure's
    paired change, cached against send, follows it as an interval in % (``p50 3.95 →
    4.05 ms [-1.2, +6.3] %``, ``stats.paired_ratio``: the same statistic as the pair
    table's), and the closing words name it."""
    from ipc_bench.analysis.metrics import metric

    workload, codec = key[0], key[1]
    sel = cases[(cases["workload"] == workload) & (cases["codec"] == codec)]
    for col, value in (("transport", key[2]), ("model", key[3])):
        if col in sel.columns and value is not None and value == value:
            sel = sel[sel[col] == value]
    arm = pd.Series(_arms(sel) if len(sel) else [], index=sel.index, dtype=object)
    parts, counts, intervals, excluding = [], set(), 0, []
    for name, label in LATENCY_CLAUSE_FIGURES:
        stats = []
        for q in ("p50", "p99") if name != "tpot" else ("mean",):
            col = f"{name}_ms_{q}"
            if col not in sel.columns:
                continue
            send = sel.loc[arm == SEND, col].mean()
            cached = sel.loc[arm == CACHED, col].mean()
            if send == send and cached == cached:
                cell = metric(col).cell
                change, excludes = _latency_interval(sel, arm, col, method)
                intervals += bool(change)
                if excludes:
                    excluding.append(f"{label} {q}")
                stats.append(f"{q} {cell(send)} → {cell(cached)} ms{change}")
                counts |= {int(sel.loc[arm == a, col].notna().sum()) for a in (SEND, CACHED)}
        if stats:
            parts.append(f"{label} " + ", ".join(stats))
    if not parts:
        return ""
    # the repetitions each mean is over: a figure the loader withheld (NaN) is in none
    ran = {int((arm == SEND).sum()), int((arm == CACHED).sum())}
    counts = sorted(counts)
    withheld = "" if counts[0] == min(ran) and counts[-1] == max(ran) else (
        "; a repetition's withheld figures left out")
    over = ("" if max(ran) <= 1 else
            f" (means over {' and '.join(map(str, counts))} repetitions{withheld}, "
            + ("no interval)" if not intervals else
               f"[low, high] %: {CONFIDENCE * 100:.0f} % {INTERVAL_NAMES[method]} interval "
               "of cached's change from send, paired by repetition"
               + (f", each figure's own, not adjusted for the {intervals} together"
                  if intervals > 1 else "") + _latency_verdict(intervals, excluding) + ")"))
    return "latency send → cached: " + "; ".join(parts) + over


def _latency_interval(sel, arm, col: str, method: str) -> tuple[str, bool]:
    """(' [-1.2, +6.3] %', whether it excludes 0): the interval of the paired change of
    latency figure ``col`` (cached / send by repetition, ``stats.paired_ratio``) over
    the repetitions both arms have it for (``sel``'s cases, ``arm`` their arm labels);
    ``('', False)`` with fewer pairs than ``method`` needs or a figure of 0."""
    send = sel.loc[arm == SEND].dropna(subset=[col]).drop_duplicates("repetition")
    cached = sel.loc[arm == CACHED].dropna(subset=[col]).drop_duplicates("repetition")
    both = send.merge(cached, on="repetition", suffixes=("_send", "_cached"))
    if len(both) < min_pairs(method):
        return "", False
    _, low, high = paired_ratio(both[f"{col}_send"].tolist(), both[f"{col}_cached"].tolist(),
                                method=method)
    if low is None or high is None:
        return "", False
    return " " + ratio_interval(low, high, percent=True), low > 1 or high < 1


def _latency_verdict(intervals: int, excluding: list[str]) -> str:
    """What ``intervals`` latency intervals say together, each unadjusted: none, some
    or all of them exclude 0 (``excluding``: the figures whose do, ``TTFT p99``):
    ``; only ITL p99's excludes 0, the others include it``."""
    if not excluding:
        return ("; it includes 0: no difference shown" if intervals == 1 else
                "; every one includes 0: no difference shown")
    if len(excluding) == intervals:
        return "; it excludes 0" if intervals == 1 else "; every one excludes 0"
    whose = _and([name + "'s" for name in excluding])
    return (f"; only {whose} exclude"
            f"{'s' if len(excluding) == 1 else ''} 0, the others include it")


#: The latencies a timed replay's pair finding gives (all the Latency table's), in order.
LATENCY_CLAUSE_FIGURES = (("ttft", "TTFT"), ("itl", "ITL"), ("tpot", "TPOT"),
                          ("e2e", "E2E"))


# --------------------------------------------------------------------------------------
# cached against send, per workload and codec

#: The pair tables a finding reads, by role.
PAIR_METRICS = dict(tput="output_tokens_per_s", s2r="sched_to_runner_payload_bytes_per_step",
                     enc="encode_ns_per_step", dec="decode_ns_per_step",
                     build="build_ns_per_step")


def _repetitions_note(cases, keys) -> str:
    """The finding on a run whose send/cached pairs (``keys``: ``_pair_tables``'s) have
    fewer than two repetitions each: ``ONE_REPETITION`` when every send and cached case
    of those pairs ran once, else how many repetitions its cases kept (a ``--repeat``
    run cut short: send kept 2, cached 1), in the same words."""
    counts = []
    for workload, codec, transport, model in keys:
        sel = cases[(cases["workload"] == workload) & (cases["codec"] == codec)]
        if transport is not None and transport == transport and "transport" in sel:
            sel = sel[sel["transport"] == transport]
        if model is not None and model == model and "model" in sel:
            sel = sel[sel["model"] == model]
        counts += [int((sel["policy"] == policy).sum()) for policy in (SEND, CACHED)]
    lo, hi = min(counts, default=1), max(counts, default=1)
    if hi <= 1:
        return ONE_REPETITION
    many = f"{lo} to {hi}" if lo != hi else f"{lo}"
    return (f"{many} repetitions per case, but fewer than two pairs of send and cached "
            f"in each workload, {NO_INTERVAL_TAIL}")


def _arm_rates(t: dict[str, Any]) -> str:
    """``; geometric means 256,372 → 235,704 tok/s`` for a tokens/s
    pair row (``summarize_pairs``): the arms' geometric means, whose quotient is the
    ``t`` ratio and which the pair table shows; their arithmetic means (``means over
    repetitions``) where a value was 0 (no geometric mean)."""
    send, cached = t.get("send_geomean"), t.get("cached_geomean")
    if send is None or cached is None or send != send or cached != cached:
        return f"; means over repetitions: {t[SEND]:,.0f} → {t[CACHED]:,.0f} tok/s"
    return f"; geometric means {send:,.0f} → {cached:,.0f} tok/s"


def _pair_tables(results) -> dict[str, dict[tuple, dict[str, Any]]]:
    """role -> {(workload, codec, transport, model): ``summarize_pairs`` row}."""
    method = results_ci_method(results.metadata)
    out = {}
    for role, key in PAIR_METRICS.items():
        # no label columns: summarize_pairs keeps the pair keys alone (joining the
        # labels on cost 3 ms a call)
        rows = summarize_pairs(paired(results.cases, key), method=method)
        out[role] = {(r["workload"], r["codec"], r.get("transport"), r.get("model")):
                     dict(r, method=method) for r in rows}
    return out


def pair_records(cases, key: tuple, arms: tuple[str, str] = (SEND, CACHED),
                 repetitions: list | None = None) -> list[tuple[dict, dict]]:
    """The (send, cached) case records of ``key`` (workload, codec, transport, model),
    paired by run and repetition (``stats.arms_by_repetition``); of the two ``arms``
    given (a recorded comparison's treatment and baseline: ``comparison_pairs``), and
    of ``repetitions`` alone where given."""
    from ipc_bench.analysis.stats import arms_by_repetition

    sel = cases[(cases["workload"] == key[0]) & (cases["codec"] == key[1])]
    for col, value in (("transport", key[2]), ("model", key[3])):
        if col in sel.columns and value is not None and value == value:
            sel = sel[sel[col] == value]
    out = []
    by_run = ("run_id",) if "run_id" in sel.columns else ()  # a report of several runs
    for by_arm in arms_by_repetition(frame_records(sel), by_run).values():
        send, cached = by_arm.get(arms[0], {}), by_arm.get(arms[1], {})
        out += [(send[r], cached[r]) for r in sorted(set(send) & set(cached))
                if repetitions is None or r in repetitions]
    return out


def comparison_pairs(cases, comparison: dict[str, Any]) -> list[tuple[dict, dict]]:
    """The (treatment, baseline) case records of a recorded comparison (``stats.
    compare_cases``' shape: ``other_comparisons``, an ``overhead`` run's), its arms at
    its workload, codec, transport and model in each of its ``repetitions`` (all
    where it records none), from ``cases`` (``pair_records``)."""
    reps = comparison.get("repetitions")
    key = tuple(comparison.get(k) for k in ("workload", "codec", "transport", "model"))
    return pair_records(cases, key, (comparison["treatment"], comparison["baseline"]),
                        reps if isinstance(reps, list) and reps else None)


def _schedules_differ_clause(b: dict[str, Any], pairs: list[tuple[dict, dict]]) -> str:
    """The bytes clause of a pair whose arms ran different schedules: the policy's own
    share (send's new_token_ids, ``stats.token_ids_bytes``), then why the per-step
    totals are no saving of the policy's."""
    ids = token_ids_bytes(s for s, _ in pairs)
    steps = " and ".join(f"{sum(float(r.get('num_steps') or 0) for r in arm) / len(arm):,.0f}"
                         for arm in ([s for s, _ in pairs], [c for _, c in pairs]))
    a, c = f"{b[SEND]:,.0f}", f"{b[CACHED]:,.0f}"
    why = ("differ also because the schedules differ" if a != c
           else "come from different schedules")
    per = " per case" if len(pairs) > 1 else ""
    totals = (f"per-step totals to the runner ({a} against {c} bytes) {why} ({steps} "
              f"steps{per}, other batches: schedule digests differ), so the difference of "
              f"the totals is not the policy's saving")
    if ids is None:
        return f"ran a different schedule from send: the {totals}"
    share = f" ({100 * ids / b[SEND]:.1f} % {OF_SEND_PAYLOAD})" if b[SEND] else ""
    return (f"leaves out send's new_token_ids, {ids:,.1f} bytes per step{share}; the "
            f"arms' {totals}")


#: What the encode, decode and build figures of a finding time: both messages of a
#: step, the scheduler's SchedulerOutput and the runner's ModelRunnerOutput, summed
#: (``encode_ns_per_step``, ``decode_ns_per_step``: the runner's decode of the
#: SchedulerOutput and the scheduler's of the ModelRunnerOutput, ``build_ns_per_step``:
#: the pair table's ``encode µs/step``, ``decode µs/step`` and ``build µs/step`` rows,
#: whose intervals the clauses carry). None is the SchedulerOutput's alone
#: (``sched_*_ns_per_step``), so no clause names it alone.
BOTH_MESSAGES = "the SchedulerOutput and the ModelRunnerOutput"


def _clause_words(doing: str, does: str, noun: str,
                  messages: str = BOTH_MESSAGES) -> tuple[str, str, str, str, str]:
    """``_time_clause``'s ``saves``, ``spends``, ``noise``, ``noun`` and ``same`` words
    for a time of ``messages`` (``BOTH_MESSAGES``, or ``them`` after a clause that named
    them: ``their decode time per step``)."""
    what = f"their {noun} time per step" if messages == "them" else \
        f"{noun} time per step of {messages}"
    return (f"saves {{}} per step {doing} {messages}",
            f"spends {{}} more per step than send {doing} {messages}",
            f"{does} {messages} within noise of send's time per step",
            what, f"{does} {messages} in the same time per step as send")


#: ``_time_clause``'s words per pair table role (``PAIR_METRICS``): each names both
#: messages (``BOTH_MESSAGES``).
TIME_CLAUSE_WORDS: dict[str, tuple[str, str, str, str, str]] = {
    role: _clause_words(doing, does, noun)
    for role, doing, does, noun in (("enc", "encoding", "encodes", "encode"),
                                    ("dec", "decoding", "decodes", "decode"),
                                    ("build", "building", "builds", "build"))}
#: The decode clause's words where it follows the encode clause, which named both
#: messages: ``decodes them within noise of send's time per step``, ``changes their
#: decode time per step by ...``, so that the finding does not name them twice running.
DECODE_AFTER_ENCODE = _clause_words("decoding", "decodes", "decode", "them")
#: The clause that stands for the per-step times of arms that ran different schedules.
TIMES_NOT_COMPARED = ("per-step times not compared (encode, decode, build, step: other "
                      "batches)")
#: The short verdict of a difference with no significant difference whose interval
#: reaches beyond 1.1x either way (``stats.inconclusive``), defined once in the legend under the
#: findings (``findings_legend``, in ``stats.INCONCLUSIVE_CLAUSE``'s words).
SHORT_INCONCLUSIVE = f"inconclusive (interval beyond {1 + DETECTABLE:g}x either way)"
#: What the bytes share of a finding is of: send's scheduler → runner payload per step
#: (the pair table's ``s2r payload B/step`` row).
OF_SEND_PAYLOAD = "of send's scheduler → runner payload"


def _saving_clauses(tables, key: tuple, pairs: list[tuple[dict, dict]] = (),
                    recorded: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """What cached saves (or spends) against send for ``key``: bytes (as a share of
    send's scheduler → runner payload, ``OF_SEND_PAYLOAD``, the base of the bytes
    figure's box too), encode, decode, build (both of the step's messages summed,
    ``BOTH_MESSAGES``; the decode clause, after the encode one, calls them ``them``:
    ``DECODE_AFTER_ENCODE``), each a difference with the pair table's interval
    (``_time_clause``: ``saves 3.24 µs per step encoding the SchedulerOutput and the
    ModelRunnerOutput (-28.4 % [-40.0, -15.0] %)``, or within noise where that
    interval holds 0 %, or not significant after Holm's correction where ``recorded``,
    the run's recorded metrics of ``key`` (``recorded_metrics``), says so). Where the
    arms ran different schedules (``pairs``, ``pair_records``: ``stats.schedules_differ``)
    the bytes are send's new_token_ids, the policy's own share
    (``_schedules_differ_clause``), and the per-step times are not compared
    (``TIMES_NOT_COMPARED``: they would compare other batches, as the comparison block
    and the terminal's ratio line withhold them, ``stats.SCHEDULE_BOUND_KEYS``)."""
    codec = key[1]
    clauses = []
    b = tables["s2r"].get(key)
    differ = schedules_differ(pairs)
    if differ:
        if b and codec != SINGLE_PROCESS:
            clauses.append(_schedules_differ_clause(b, pairs))
        return clauses + [TIMES_NOT_COMPARED]
    if b and codec != SINGLE_PROCESS and b[SEND]:
        fewer = b["diff"]
        sends, to, once = _bytes_words(pairs)
        if fewer == 0:  # a codec whose messages carry no token ids either way (replicated)
            clauses.append(f"{sends} as many bytes per step {to} as send{once}")
        else:
            clauses.append(f"{sends} {abs(fewer):,.0f} {'fewer' if fewer > 0 else 'more'} "
                           f"bytes per step {to}{once} ({100 * abs(fewer) / b[SEND]:.1f} "
                           f"% {OF_SEND_PAYLOAD})")
    e, d = tables["enc"].get(key), tables["dec"].get(key)
    of = (tables["tput"].get(key) or {}).get("n") or 0  # the finding's repetitions
    if e and codec != SINGLE_PROCESS:
        clauses.append(_time_clause(e, *TIME_CLAUSE_WORDS["enc"],
                                    (recorded or {}).get(PAIR_METRICS["enc"]), of=of))
    if d and codec != SINGLE_PROCESS:
        words = DECODE_AFTER_ENCODE if e else TIME_CLAUSE_WORDS["dec"]
        clauses.append(_time_clause(d, *words, (recorded or {}).get(PAIR_METRICS["dec"]),
                                    of=of))
    bl = tables["build"].get(key)
    if bl:
        clauses.append(_time_clause(bl, *TIME_CLAUSE_WORDS["build"],
                                    (recorded or {}).get(PAIR_METRICS["build"]), of=of))
    return clauses


def _bytes_words(pairs: list[tuple[dict, dict]]) -> tuple[str, str, str]:
    """The verb, destination and tail of a pair finding's bytes clause: ``("sends", "to
    the runner", "")``, or, for ``--tp`` N > 1 cases (``pairs``' ``tp``), the broadcast
    the scheduler writes once for the N ranks: ``("writes", "into the broadcast to the
    2 ranks", ", once for all of them")`` (what reaches the ranks in all, N copies over
    XPUB, is the tp delivery line's: ``_tp_delivery_findings``)."""
    tps = {r.get("tp") for pair in pairs for r in pair}
    n = next(iter(tps)) if len(tps) == 1 else None
    if is_missing(n) or int(n) <= 1:
        return "sends", "to the runner", ""
    return "writes", f"into the broadcast to the {int(n)} ranks", ", once for all of them"


def _time_clause(row: dict[str, Any], saves: str, spends: str, noise: str,
                 noun: str, same: str, m: dict[str, Any] | None = None,
                 of: int = 0) -> str:
    """What cached saves or spends of a per-step time against send, from its
    ``summarize_pairs`` row (``diff``: send - cached, ns, what send costs, the pair
    table's ``send - cached`` column), with the interval the pair table's cached/send
    column shows (``ratio_low``/``ratio_high``, as % change, the tokens/s clause's form;
    unadjusted); the statistics of both are named once, in the legend under the
    findings (``findings_legend``): ``saves 3.15 µs per step building the
    SchedulerOutput and the ModelRunnerOutput (-28.4 % [-40.0, -15.0] %)``
    (``TIME_CLAUSE_WORDS``). Where that interval holds 0 % the difference is worded as
    noise, never as a saving or cost: ``builds the SchedulerOutput and the
    ModelRunnerOutput within noise of send's time per step (+0.2 % [-4.5, +5.2] %;
    send - cached: -0.03 µs)``, or, where that interval also reaches beyond 1.1x either way
    (``stats.inconclusive``), with the short verdict ``SHORT_INCONCLUSIVE``:
    ``changes encode time per step of the SchedulerOutput and the ModelRunnerOutput by
    +1.4 % [-9.4, +13.4] % (send - cached: -0.04 µs; inconclusive (interval beyond
    1.1x either way))``; where it excludes 0 % but the difference points the other way (pairs of
    unlike size), or where ``m``, the run's recorded comparison of this metric
    (``recorded_metrics``), finds no significant difference after Holm's correction
    (``_short_holm``), no saving or cost either: ``changes build time per step of ...
    by -5.0 % [-8.0, -2.0] % (send - cached: -0.10 µs)``, with ``; not significant
    after Holm (p 0.022, adjusted 0.131)`` before its closing parenthesis in the second
    case (``inconclusive: not significant after Holm (...)`` where the interval reaches
    beyond 1.1x either way, as the legend and the comparison block say). A row with no interval
    (one repetition, or too few pairs for the method) gives the difference as
    ``saves``/``spends`` and says it has none: ``saves 3.15 µs per step ... (one
    repetition, no interval)`` (``_no_interval``), or, where that
    difference prints as 0.00 µs, no saving or cost: ``encodes the SchedulerOutput and
    the ModelRunnerOutput in the same time per step as send (0.00 µs difference; one
    repetition, no interval)`` (``same``), as equal bytes read ``sends as many bytes
    per step``. A saving or cost the run's comparison ``m`` finds significant after
    Holm's correction says so: ``(-44.1 % [-52.5, -34.2] %; significant after Holm (p
    <0.001, adjusted 0.004))``. Where ``row``'s pairs are fewer than ``of``, the
    repetitions the finding's tokens/s is over (a case lost the runner's per-step
    columns, its floor replay cut short), its figures say how many they are over:
    ``(-28.4 % [-40.0, -15.0] % over 2 of 3 repetitions)``, ``(2 of 3 repetitions, no
    interval)``."""
    saved_us = row["diff"] / 1e3
    interval = _interval(row) if row["n"] > 1 else ""
    if not interval and f"{abs(saved_us):.2f}" == "0.00":
        return f"{same} (0.00 µs difference; {_no_interval(row, of)})"
    if not interval:
        return ((saves if saved_us >= 0 else spends).format(f"{abs(saved_us):.2f} µs")
                + f" ({_no_interval(row, of)})")
    change = f"{_pct(row['ratio'])}{interval}" + (
        f" over {row['n']} of {of} repetitions" if of > row["n"] else "")
    lo, hi = row["ratio_low"], row["ratio_high"]
    costs = f"send - cached: {point_text(saved_us + 0.0, 2, sign=True)} µs"
    if lo <= 1.0 <= hi and inconclusive(lo, hi):
        return f"changes {noun} by {change} ({costs}; {SHORT_INCONCLUSIVE})"
    if lo <= 1.0 <= hi:
        return f"{noise} ({change}; {costs})"
    holm = (_short_holm(m, "inconclusive: not significant" if inconclusive(lo, hi)
                        else "not significant")
            if m and unadjusted_excludes_one(m) else None)
    if holm or (hi < 1.0) != (saved_us > 0):
        return f"changes {noun} by {change} ({costs}" + (f"; {holm}" if holm else "") + ")"
    verdict = (f"; {_short_holm(m, 'significant')}" if m and m.get("significant")
               and m.get("adjustment") == "holm" and m.get("p_adjusted") is not None
               else "")
    return (saves if saved_us > 0 else spends).format(
        f"{point_text(abs(saved_us), 2)} µs") + f" ({change}{verdict})"


def _no_interval(row: dict[str, Any], of: int = 0) -> str:
    """Why a ``summarize_pairs`` row (with the pair table's ``method``) shows a
    difference with no interval: ``one repetition, no interval`` (``ONE_PAIR``) for one
    pair, else ``3 repetitions, no interval`` and, where the pairs are fewer than the
    method's interval needs (``stats.min_pairs``), ``: a sign-test interval needs >= 6
    pairs``. Where the row's pairs are fewer than ``of`` (the repetitions its finding
    is over), ``one of 3 repetitions, no interval``, ``2 of 3 repetitions, ...``."""
    n = row["n"]
    if of > n:
        return (f"{'one' if n <= 1 else n} of {of} repetitions, no interval"
                + (_too_few_pairs(row) if n > 1 else ""))
    if n <= 1:
        return ONE_PAIR
    return f"{n} repetitions, no interval{_too_few_pairs(row)}"


def _too_few_pairs(row: dict[str, Any]) -> str:
    """``': a sign-test interval needs >= 6 pairs'`` for a ``summarize_pairs`` row (with
    ``method``) of fewer pairs than its method's interval needs (``stats.min_pairs``),
    else ``''``."""
    method = row.get("method", "t")
    need = min_pairs(method)
    return (f": a {INTERVAL_NAMES[method]} interval needs >= {need} pairs"
            if row["n"] < need else "")

#: The clause a finding ends with when its cases' timings are withheld.
WITHHELD_CLAUSE = "times and tokens/s left out (fewer than N + 2 cores: see `*` below)"


def withheld_keys(cases) -> set[tuple]:
    """``(workload, codec, transport)`` of the cases whose timings are withheld
    (``analysis.cores``: N readers on fewer than N + 2 cores)."""
    from ipc_bench.analysis.cores import is_withheld

    return {(r["workload"], r["codec"], r.get("transport"))
            for r in frame_records(cases) if is_withheld(r)}


def marked_keys(cases) -> set[tuple]:
    """``(workload, codec, transport)`` of the cases whose paired comparisons compare
    timings shown marked ``°`` (``analysis.cores.comparison_marked``: N = 1 on exactly 2
    cores, none of them withheld); their findings and pair table rows carry the mark
    (``mark_of``)."""
    from ipc_bench.analysis.cores import comparison_marked

    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in frame_records(cases):
        groups.setdefault((r["workload"], r["codec"], r.get("transport")), []).append(r)
    return {k for k, g in groups.items() if comparison_marked(g)}


def mark_of(cases, key: tuple) -> str:
    """``°`` where the cases of ``key`` (workload, codec, and transport where ``key`` has
    one) are among ``marked_keys``, else ``""``: what a finding or pair table row of
    theirs puts after its codec."""
    from ipc_bench.analysis.cores import SHARED_MARK

    return SHARED_MARK if any(k[:len(key[:3])] == tuple(key[:3])
                              for k in marked_keys(cases)) else ""


def marked_note(cases) -> str | None:
    """The ``°`` line under findings or a pair table that give timings of ``marked_keys``
    (``cores.marked_comparison_note`` of their cases, its mark in code), ``None``
    where none is marked."""
    from ipc_bench.analysis.cores import SHARED_MARK, marked_comparison_note

    keys = marked_keys(cases)
    line = marked_comparison_note(r for r in frame_records(cases)
                                  if (r["workload"], r["codec"], r.get("transport")) in keys)
    return line.replace(f"{SHARED_MARK} ", f"`{SHARED_MARK}` ", 1) if line else None


def _marked_line(cases, lines: list[str]) -> list[str]:
    """The ``°`` line (``marked_note``) where one of the findings ``lines`` carries the
    mark (N = 1 on exactly 2 cores); none where none does: a run whose cases counted no
    step has no line to mark, and its list says why instead (``blocks._no_findings``)."""
    shared = marked_note(cases)
    return [shared] if shared and any(cores.SHARED_MARK in line for line in lines) else []


def recorded_metrics(results) -> dict[tuple, dict[str, dict[str, Any]]]:
    """``(workload, codec, transport, model)`` -> metric -> that metric of the
    cached-against-send comparison its run recorded (``run_comparisons``: recomputed
    over the cases loaded where the loader left one out; the terminal's block: verdict
    Holm-adjusted over the comparison's ``family``), each with ``family_size`` added;
    ``{}`` for a report of several runs (their pair tables pool runs that no recorded
    comparison covers) or unreadable summaries."""
    if len(results.paths) != 1:
        return {}
    (run_id,) = results.paths
    out = {}
    for c in run_comparisons(results).get(run_id, []):
        if (c.get("baseline"), c.get("treatment")) != (SEND, CACHED) or not c.get("metrics"):
            continue
        family = len(c.get("family") or [])
        out[(c.get("workload"), c.get("codec"), c.get("transport"), c.get("model"))] = {
            k: dict(m, family_size=family) for k, m in c["metrics"].items()}
    return out


def recorded_tput(results) -> dict[tuple, dict[str, Any]]:
    """``(workload, codec, transport, model)`` -> the output tokens/s metric of the
    cached-against-send comparison its run recorded (``recorded_metrics``), with
    ``family_size`` added; ``{}`` for a report of several runs or unreadable
    summaries."""
    return {k: ms["output_tokens_per_s"] for k, ms in recorded_metrics(results).items()
            if ms.get("output_tokens_per_s")}


def run_comparisons(results) -> dict[str, list[dict[str, Any]]]:
    """Run id -> the paired comparisons its ``summary.json`` recorded
    (``comparisons``, shapes checked: ``metadata_checks.check_shapes``), the run left out where
    its summary cannot be read. Where the loader left out a case of the run
    (``results.cases`` lacks a case id ``summary.json`` lists), every recorded
    comparison is recomputed from the cases loaded with the function and settings the
    run used (``stats.compare_cases``, its ``method`` and ``confidence``), so that no
    interval, p-value or Holm family is of a case the report does not show; a
    comparison with no pair left is dropped. A run that recorded none (stopped before
    its end, where a run compares its cases) has them computed here the same way, with
    its ``--ci-method`` (``metadata.ci_method``), so that its findings' verdicts are
    Holm-adjusted as a finished run's are. A comparison recorded before comparisons
    carried the ``°`` mark of their cases gets the ``timings_marked`` line it would
    carry now (``stats.with_timings_marked``)."""
    from ipc_bench.analysis.metadata_checks import check_shapes
    from ipc_bench.analysis.results import read_summary
    from ipc_bench.analysis.run_files import ResultsError
    from ipc_bench.analysis.stats import compare_cases, with_timings_marked

    out: dict[str, list[dict[str, Any]]] = {}
    for run_id, run_dir in results.paths.items():
        try:
            summary = read_summary(run_dir)
        except ResultsError:
            continue
        check_shapes(summary, run_dir)  # (the loader has warned of what it drops)
        recorded = summary.get("comparisons") or []
        cases = [c for c in summary.get("cases") or [] if isinstance(c, dict)]
        loaded = set(results.cases.loc[results.cases["run_id"] == run_id, "case_id"])
        kept = [c for c in cases if isinstance(c.get("case_id"), str)
                and c["case_id"] in loaded]
        if not recorded:  # a run stopped before it compared: as it would have
            md = summary.get("metadata") if isinstance(summary.get("metadata"), dict) else {}
            method = md.get("ci_method") if md.get("ci_method") in INTERVAL_NAMES else "t"
            out[run_id] = compare_cases(kept, method=method)
            continue
        if len(kept) == len(cases):  # recorded before the ° mark: given it
            out[run_id] = [with_timings_marked(c, kept) for c in recorded]
            continue
        first = recorded[0]
        again = {_comparison_key(c): c for c in compare_cases(
            kept, method=first.get("method") or "t",
            **({"confidence": first["confidence"]} if first.get("confidence") else {}))}
        out[run_id] = [again[_comparison_key(c)] for c in recorded
                       if _comparison_key(c) in again]
    return out


def _comparison_key(c: dict[str, Any]) -> tuple:
    """What names a recorded comparison: its group (``stats.COMPARED_GROUP``) and arms."""
    from ipc_bench.analysis.stats import COMPARED_GROUP

    return tuple(c.get(k) for k in COMPARED_GROUP + ("baseline", "treatment"))


def _verdict_clause(t: dict[str, Any], m: dict[str, Any] | None) -> str:
    """The verdict of a pair finding's tokens/s change, always stated, in the short
    words the legend under the findings defines (``findings_legend``): from the run's
    recorded comparison ``m`` (``recorded_tput``) when it has one, Holm-adjusted, with
    its p-values (``_short_holm``: ``, not significant after Holm (p 0.040, adjusted
    0.282)`` where the unadjusted interval excludes zero but the adjusted test finds no
    significant difference, ``inconclusive: not significant after Holm (...)`` where
    the run's verdict adds that it reaches beyond 1.1x either way). Without ``m``: ``t``'s own
    (unadjusted) test."""
    excludes = (t["ratio_low"] == t["ratio_low"] and t["ratio_high"] == t["ratio_high"]
                and (t["ratio_low"] > 1 or t["ratio_high"] < 1))
    if m and m.get("adjustment") == "holm" and m.get("p_value") is not None \
            and m.get("p_adjusted") is not None and m.get("significant") is not None:
        if m["significant"]:
            return ", " + _short_holm(m, "significant")
        if excludes:  # the run's verdict says inconclusive where it reaches beyond 1.1x either way
            inconclusive = str(m.get("verdict", "")).startswith("inconclusive")
            return ", " + _short_holm(m, "inconclusive: not significant" if inconclusive
                                      else "not significant")
        if t.get("inconclusive"):
            return _inconclusive_clause(t) + "; " + _short_holm(m, "no significant difference")
        return ", " + _short_holm(m, "no significant difference")
    if t.get("inconclusive"):
        return _inconclusive_clause(t)
    if t["significant"] is False:
        return ", no significant difference"
    if t["significant"]:
        return ", significant (unadjusted test)"
    return ""


def _pair_finding(cases, tables, key: tuple, where: Where, timed: bool,
                  withheld: frozenset = frozenset(),
                  recorded: dict[tuple, dict[str, dict[str, Any]]] | None = None) -> str:
    """One sentence on cached against send for ``key`` (workload, codec, transport,
    model): its savings (``_saving_clauses``), then its tokens/s change with its verdict
    (``_verdict_clause``), both from ``recorded`` (``recorded_metrics``: the run's
    Holm-adjusted verdicts) where it has ``key`` (or, timed, its latencies); its bytes
    alone when ``key[:3]`` is in ``withheld`` (``withheld_keys``)."""
    workload, codec, model = key[0], key[1], key[3]
    t = tables["tput"][key]
    what = _codec_name(codec) + (f", {model} model" if model and model != "null" else "")
    what += mark_of(cases, key)  # N = 1 on exactly 2 cores, as its cases' rows
    pairs = pair_records(cases, key)
    metrics = (recorded or {}).get(key) or {}
    if key[:3] in withheld:
        clauses = _saving_clauses(tables, key, pairs)[:1]  # the bytes
        return (f"{where(workload)} ({what}), cached "
                + (clauses[0] + "; " if clauses else "") + WITHHELD_CLAUSE + ".")
    clauses = _saving_clauses(tables, key, pairs, metrics)
    off = _off_nominal_clause(pairs)
    text = f"{where(workload)} ({what}), cached "
    if schedules_differ(pairs):
        # the bytes clause ends on the schedules; the times are withheld after it
        joined = "; ".join(clauses)
        if clauses[0] == TIMES_NOT_COMPARED:  # no bytes clause (single process)
            text = f"{where(workload)} ({what}), cached against send: "
    else:
        joined = _and(clauses)
    if timed:
        lat = _latency_clause(cases, key, t.get("method", "t"))
        if not joined:  # no bytes clause (no counted step): "cached" names no subject
            return (f"{where(workload)} ({what}), "
                    + (lat or "cached against send shows no latency data") + "." + off)
        return text + joined + "; " + (lat or "shows no latency data") + "." + off
    if clauses:
        text += joined + "; output tokens/s changes by "
    else:
        text += "changes output tokens/s by "
    text += f"{_pct(t['ratio'])}"
    if t["n"] > 1:
        interval = _interval(t)
        return (text + interval + f" (over {t['n']} repetitions"
                + ("" if interval else f", no interval{_too_few_pairs(t)}")
                + _verdict_clause(t, metrics.get("output_tokens_per_s"))
                + _arm_rates(t) + ")."
                + off + _oversubscribed(cases, workload, codec, key[2]))
    return text + f" ({ONE_PAIR}: {t[SEND]:,.0f} → {t[CACHED]:,.0f} tok/s)." + off + \
        _oversubscribed(cases, workload, codec, key[2])


def _gc_findings(cases, key: tuple, where: Where, withheld: frozenset) -> list[str]:
    """``collector.gc_line`` of ``key``'s send/cached pairs (workload, codec, transport,
    model), as one line or none; none for the single process (one process, no
    scheduler and runner to name) or where the pair's timings are withheld."""
    from ipc_bench.report.collector import gc_line

    workload, codec, model = key[0], key[1], key[3]
    if codec == SINGLE_PROCESS or key[:3] in withheld:
        return []
    what = _codec_name(codec) + (f", {model} model" if model and model != "null" else "")
    line = gc_line(f"{where(workload)} ({what}{mark_of(cases, key)})",
                   pair_records(cases, key))
    return [line] if line else []


def _timed_replay_finding(cases, tput: dict[tuple, dict[str, Any]], where: Where,
                          recorded: dict[tuple, dict[str, dict[str, Any]]]) -> str:
    """A timed replay's finding on its tokens/s: ``TIMED_REPLAY`` (what the figure
    measures), then per send/cached pair of ``tput`` (``_pair_tables``' ``tput``: the
    wall tok/s, ``output_tokens_per_s``) its wall times and wall tok/s
    (``_wall_time_clause``), each with ``_rough_caveat`` of its cases."""
    return " ".join([_timed_replay_words(cases)] + [
        _rough_caveat(_wall_time_clause(
            cases, key, t, where, ((recorded or {}).get(key) or {}).get(PAIR_METRICS["tput"])),
            pair_records(cases, key))
        for key, t in tput.items()])


def _timed_replay_words(cases, arrival_bound: str = TIMED_REPLAY) -> str:
    """What a timed replay's tokens/s (wall) measure: ``arrival_bound`` (``TIMED_REPLAY``,
    or ``TIMED_REPLAY_ONE_ARM`` for a run of one policy) where no case of
    ``cases`` (``Results.cases``) is load-bound (``pace.replay_pace``), followed by
    ``PACE_UNKNOWN`` where none records the figures that label a pace, else
    ``TIMED_LOAD_BOUND`` where every timed case is load-bound (``TIMED_AT_START``
    where the case named is so only as an offline batch, ``TIMED_BURST`` only as a
    burst the engine drained, ``pace.drained_a_burst``; ``TIMED_MIXED`` where
    only some are), with the case ``tables.most_load_bound`` picks and the
    figures that labelled it (``pace.replay_pace_evidence``): ``This is a timed
    replay, but load-bound: its requests arrived faster than the engine served them (in
    CASE, by num_waiting: a request was left waiting after 78 % of its steps, 12.3 per step on
    average) and queued, ...``."""
    from ipc_bench.analysis.pace import (arrived_at_start, drained_a_burst, replay_pace,
                                         replay_pace_evidence)
    from ipc_bench.report.tables import most_load_bound

    from ipc_bench.analysis.run_files import records as case_records

    records = case_records(cases) if hasattr(cases, "to_dict") else []
    load = [r for r in records if replay_pace(r) == "load-bound"]
    timed = [r for r in records if r.get("trace_speedup") is not None]
    if not load:
        if timed and all(replay_pace(r) is None for r in timed):
            return arrival_bound + PACE_UNKNOWN
        return arrival_bound
    worst = most_load_bound(load)
    evidence = f"in {worst.get('case_id')}, {replay_pace_evidence(worst)}"
    if len(load) < len(timed):  # some repetitions kept up: no throughput figure
        return TIMED_MIXED.format(n=len(load), m=len(timed), evidence=evidence)
    return (TIMED_AT_START if arrived_at_start(worst) else
            TIMED_BURST if drained_a_burst(worst) else TIMED_LOAD_BOUND).format(evidence)


def _wall_time_clause(cases, key: tuple, t: dict[str, Any], where: Where,
                      m: dict[str, Any] | None = None) -> str:
    """``On `W` (msgpack), send ran 2.70 s and cached 3.40 s of wall time, first
    arrival to last completion: 667 → 480 tok/s (wall), -28.0 % (one repetition, no
    interval).`` for ``key`` (workload, codec, transport, model): each arm's mean
    ``wall_s`` over its paired cases (``pair_records``) and ``t``, its
    ``summarize_pairs`` row of ``output_tokens_per_s`` (arm means, ratio, interval).
    With an interval it carries the verdict of the other tokens/s findings
    (``_verdict_clause``: ``m``, the run's recorded comparison, Holm-adjusted, else the
    row's own test; ``stats.inconclusive`` past 1.1x either way), and only where that interval
    holds 0 % and is not inconclusive does it say ``WALL_WITHIN_NOISE``. Where ``m``
    withheld the figure as arrival-bound (``stats.arrival_bound``), each arm's tokens/s
    alone, no ratio or verdict, as the tables give them; so too where the pairs' cases
    are arrival-bound by their own pace figures and no comparison was recorded (a run
    recorded before those figures keeps its ratio, its pace unknown)."""
    pairs = pair_records(cases, key)
    walls = [[float(p[i].get("wall_s") or "nan") for p in pairs] for i in (0, 1)]
    send_s, cached_s = (sum(w) / len(w) if w else float("nan") for w in walls)
    model = key[3]
    what = _codec_name(key[1]) + (f", {model} model" if model and model != "null" else "")
    what += mark_of(cases, key)
    text = (f"{where(key[0])} ({what}), send ran {send_s:,.2f} s and cached "
            f"{cached_s:,.2f} s of wall time, first arrival to last completion"
            f"{' (means over repetitions)' if len(pairs) > 1 else ''}: ")
    records = [c for pair in pairs for c in pair]
    paced = all(c.get("waiting_step_share") is not None for c in records)
    if (m or {}).get("verdict") == ARRIVAL_BOUND or (m is None and paced and records
                                                     and arrival_bound(records)):
        # arrival-bound (stats.arrival_bound), recorded so or not (a run that compared
        # nothing, its cases counting no step): withheld, as in the tables
        return (text + f"{t[SEND]:,.0f} and {t[CACHED]:,.0f} tok/s (wall); "
                f"{ARRIVAL_BOUND}: the trace's arrivals set both, so no ratio or verdict.")
    text += f"{t[SEND]:,.0f} → {t[CACHED]:,.0f} tok/s (wall), {_pct(t['ratio'])}"
    interval = _interval(t) if t["n"] > 1 else ""
    if not interval:
        return text + f" ({_no_interval(t)})."
    point = RATIO_POINTS.get(t.get("method", "t"), "geometric mean")
    verdict = _verdict_clause(t, m)
    lo, hi = t["ratio_low"], t["ratio_high"]
    noise = (lo <= 1.0 <= hi and not inconclusive(lo, hi)
             and not (m or {}).get("significant"))
    return (text + interval + f" (paired {point} over {t['n']} repetitions{verdict})"
            + (f", {WALL_WITHIN_NOISE}" if noise else "") + ".")


def _off_nominal_clause(pairs: list[tuple[dict, dict]]) -> str:
    """' Off nominal (warned): send: ...; cached: ...; ...' naming the fixed-step warnings
    (``send_cost.case_off_nominal``: the runner's wait, cached's whole step; and a send
    case's ``send_cost_send_step_off``, ``send_cost.send_step_warning``: its whole step
    longer than its SchedulerOutput path explains) of the pairs' cases, each once (with
    its repetition where the pairs are of several: ``cached (repetition 1): ...``), else
    ''. Such a case did not have the step its label says, so its change is of other
    steps than the one named."""
    from ipc_bench.analysis.send_cost import case_off_nominal, whole_step_warning

    said: list[str] = []
    whole = False  # a cached case's whole step is named
    reps = len({case.get("repetition") for pair in pairs for case in pair}) > 1
    for pair in pairs:
        for case in pair:
            sent = case.get("send_cost_send_step_off")
            for w in case_off_nominal(case) + listed(sent):
                whole = whole or w == whole_step_warning(case)
                rep = f" (repetition {case.get('repetition')})" if reps else ""
                w = f"{case.get('policy')}{rep}: {w}"
                if w not in said:
                    said.append(w)
    if not said:
        return ""
    return (" Off nominal (warned): " + "; ".join(said)
            + "; so these cases did not run the nominal step (--step-time-ms)"
            + (WHOLE_STEP_CACHED_ONLY if whole else "") + ".")


#: After a finding's off-nominal clause naming cached's whole step: why send's is not
#: named (``send_cost.case_off_nominal``), so that one arm does not read as at fault.
WHOLE_STEP_CACHED_ONLY = (" (only cached's whole step is checked against the nominal "
                          "step: send's, longer by what send costs, stands on the same "
                          "step, and is checked for what its SchedulerOutput path does "
                          "not explain)")


def _inconclusive_clause(row: dict[str, Any]) -> str:
    """', inconclusive (interval beyond 1.1x either way)' (``SHORT_INCONCLUSIVE``, defined in the
    legend under the findings) for a ``summarize_pairs`` row with no significant
    difference whose interval reaches beyond 1.1x either way (``stats.inconclusive``), so that
    "no significant difference" is not read as "no difference"."""
    return f", {SHORT_INCONCLUSIVE}"


def _and(clauses: list[str]) -> str:
    """'a, b and c'."""
    return (", ".join(clauses[:-1]) + " and " + clauses[-1] if len(clauses) > 1
            else "".join(clauses))


def _oversubscribed(cases, workload: str, codec=None, transport=None) -> str:
    """' OVERSUBSCRIBED: ...' when a ``--tp`` case of ``workload`` (and ``codec``,
    ``transport`` when given) ran more processes than it had cores
    (``tp_oversubscribed``), else ''."""
    if "tp_oversubscribed" not in cases.columns:
        return ""
    over = cases["tp_oversubscribed"] == True  # noqa: E712 (NaN where not a --tp case)
    sel = cases[(cases["workload"] == workload) & over]
    if codec is not None:
        sel = sel[sel["codec"] == codec]
    if transport is not None and "transport" in sel.columns:
        sel = sel[sel["transport"] == transport]
    if sel.empty:
        return ""
    row = sel.iloc[0]
    n = int(row["tp"])
    cores = row.get("tp_cores")
    on = ("" if is_missing(cores) else
          f" on {int(cores)} core{'' if int(cores) == 1 else 's'}")
    return (f" OVERSUBSCRIBED: tp={n} ran {n + 1} processes (the scheduler and {n} ranks)"
            f"{on}, so they shared cores: its times and tokens/s are not comparable "
            "with the other cases', only its bytes are.")


# --------------------------------------------------------------------------------------
# baselines and shares


def _token_bytes_findings(ok) -> list[str]:
    """send's new_token_ids bytes split into decode tokens and re-sent prompt chunks."""
    if ok.empty:
        return []
    is_send = [a == SEND for a in _arms(ok)]  # not send'
    send = ok[[s and c != SINGLE_PROCESS for s, c in zip(is_send, ok["codec"])]]
    if "prompt_chunk_bytes_per_step" not in send.columns:
        return []
    out = []
    for (workload, codec), g in send.groupby(["workload", "codec"], sort=False, observed=True):
        tok = float(g["decode_token_bytes_per_step"].mean())
        prompt = float(g["prompt_chunk_bytes_per_step"].mean())
        total = float(g["sched_to_runner_payload_bytes_per_step"].mean())
        if prompt > 0:
            out.append(
                f"On `{workload}` ({codec}), send's new_token_ids take {tok + prompt:,.1f} "
                f"of {total:,.0f} bytes per step: {tok:,.1f} B decode tokens and "
                f"{prompt:,.1f} B prompt chunks re-sent during chunked prefill"
                f"{_resumed_words(g)}.")
    return out


def _resumed_words(cases) -> str:
    """`` and the whole lists of requests resumed after preemption in the counted
    steps, if any (up to 12 preemptions a case, warm-up included)`` where ``cases``
    (one workload's send cases) preempted (``num_preemptions``, over the whole case,
    warm-up included: a resumed list in a counted step is counted with the prompt
    chunks), else ``''``."""
    if "num_preemptions" not in cases.columns:
        return ""
    n = pd.to_numeric(cases["num_preemptions"], errors="coerce").max()
    if not n or n != n:
        return ""
    return (" and the whole lists of requests resumed after preemption in the counted "
            f"steps, if any (up to {int(n):,} preemption{'' if n == 1 else 's'} a case, "
            "warm-up included)")


def _arms(frame) -> list[str]:
    """Each case's arm (``arm`` where set, else its policy), as ``Results.by_arm``
    labels it: ``send'`` of an ``--aa`` run, ``cached+async`` beside ``cached``."""
    arms = frame["arm"] if "arm" in frame.columns else [None] * len(frame)
    return [a if isinstance(a, str) and a else p for a, p in zip(arms, frame["policy"])]


def _single_process_findings(ok, where: Where, method: str = "t", ran=None) -> list[str]:
    """The single-process baseline's tokens/s against the two-process case of the same
    arm with each two-process codec the workload's finished cases have (``msgpack``,
    ``pickle``: what vLLM's multiprocess executor writes; ``_single_process_codecs``
    says which and why only one, ``ran`` being every case of the run, finished or not,
    default ``ok``), each arm apart (an async arm or an A/A copy is never averaged with
    another), over the arm's repetitions that both cases have (one of an interrupted
    run left out with its twin, so the ratio is never of other samples), paired by
    repetition as the comparisons are (``_single_process_arm``): with 2+ pairs the
    ratio is ``method``'s point (``t``: the geometric mean of the per-repetition
    ratios, each arm's tok/s its geometric mean, whose quotient it is) with its
    interval, the run's ``--ci-method``, unadjusted (two or more are counted:
    ``_unadjusted_note``); with one repetition, one sample and no interval. Per codec,
    only a ratio whose interval lies above 1 is called the cost of having IPC; one
    whose interval holds 1 is said not to tell a cost from none, one above 1 with no
    interval not to establish one, one at or below 1 to measure none; arms read
    differently whose intervals overlap are said to show no difference between the
    arms (``_ipc_cost_clause``). Cases whose timings are withheld
    (``analysis.cores.is_withheld``) are compared with none: a workload whose
    single-process or two-process cases are all withheld has no line. The baseline
    carries ``°`` where its cases' timings are shown marked, and so does "two-process
    case" where those it is compared with are (``mark_of``)."""
    from ipc_bench.analysis.cores import SHARED_MARK, is_withheld

    ran = ok if ran is None else ran
    ok = ok[[not is_withheld(r) for r in frame_records(ok)]] if len(ok) else ok
    if not (ok["codec"] == SINGLE_PROCESS).any():
        return []
    out = []
    for workload, g in ok.groupby("workload", sort=False, observed=True):
        g = g.assign(_arm=_arms(g))
        compared, steps, unpaired = {}, {}, False  # codec -> arm -> comparison
        # each policy's own arm first, then its A/A copy or async arm
        arms = sorted(set(g["_arm"]), key=lambda a: (a != a.split("+")[0].rstrip("'"), a))
        for codec in _two_process_codecs(g):
            for arm in arms:
                one, two = (_tokens_by_repetition(g[(g["_arm"] == arm) & (g["codec"] == c)])
                            for c in (SINGLE_PROCESS, codec))
                paired = one.index.intersection(two.index)
                cmp = _single_process_arm(one[paired], two[paired], method)
                if cmp is not None:
                    compared.setdefault(codec, {})[arm] = cmp
                    steps.setdefault(codec, {})[arm] = _single_process_step(
                        g, arm, codec, paired, method)
                    unpaired |= len(paired) < max(len(one), len(two))
        if not compared:
            continue
        cmps = [c for by_arm in compared.values() for c in by_arm.values()]
        counts = {c.n_pairs for c in cmps}
        intervals = sum(c.ratio_ci_low is not None for c in cmps)
        arms = [a for a in arms if any(a in by_arm for by_arm in compared.values())]
        parts = [f"{arm}: " + _single_process_arm_parts(
            {c: by_arm[arm] for c, by_arm in compared.items() if arm in by_arm},
            max(counts) > 1, {c: by_arm[arm] for c, by_arm in steps.items() if arm in by_arm})
            for arm in arms]
        over = _single_process_over(counts, unpaired, intervals, method) + (
            _step_cost_over(method, intervals, max(counts) > 1) if any(
                s is not None for by_arm in steps.values() for s in by_arm.values()) else "")
        against = _single_process_codecs(list(compared), _two_process_codecs(
            ran[ran["workload"] == workload]))
        by_clause: dict[str, list[str]] = {}  # codecs of one reading said together
        for codec, by_arm in compared.items():
            by_clause.setdefault(_ipc_cost_clause(by_arm), []).append(codec)
        clauses = [f"against {_and(codecs)}, {words}" for words, codecs in by_clause.items()]
        one_mark = mark_of(g, (workload, SINGLE_PROCESS))
        two_mark = SHARED_MARK if any(mark_of(g, (workload, c)) for c in compared) else ""
        out.append(f"{where(workload)}, the single-process baseline{one_mark} (no IPC, no "
                   f"serialization{_model_words(g)}) runs, each arm against its own "
                   f"two-process case{two_mark} "
                   f"{against} ({over}{_unadjusted_note(intervals, len(arms), len(compared))}"
                   "): " + "; ".join(parts) + ": "
                   + ". ".join(c[0].upper() + c[1:] if i else c
                               for i, c in enumerate(clauses)) + ".")
    return out


def _two_process_codecs(cases) -> list[str]:
    """The two-process codecs of ``cases`` (every codec but the single process's), in
    the order the cases list them."""
    return [c for c in dict.fromkeys(cases["codec"]) if c != SINGLE_PROCESS]


def _single_process_codecs(compared: list[str], ran: list[str]) -> str:
    """Which two-process codecs the single-process finding compares against,
    ``compared``, of those the workload's cases ran, ``ran`` (finished or not):
    ``with each two-process codec the run has, msgpack and pickle``; one alone says why:
    ``with msgpack, the run's only two-process codec`` or ``with msgpack alone: pickle
    has no finished pair of cases here``."""
    missing = [c for c in ran if c not in compared]
    if len(compared) > 1:
        head = f"with each two-process codec, {_and(compared)}"
    elif not missing:
        return f"with {compared[0]}, the run's only two-process codec"
    else:
        head = f"with {compared[0]} alone"
    return head + ("" if not missing else
                   f": {_and(missing)} {'has' if len(missing) == 1 else 'have'} no "
                   "finished pair of cases here")


def _unadjusted_note(intervals: int, arms: int, codecs: int) -> str:
    """``; 4 ratio intervals in this line (2 arms x 2 codecs), each unadjusted: were every
    true ratio 1.00x, the chance that one or more excludes 1.00x is up to 20 % (4 x 5
    %)`` for the
    single-process finding's ``intervals`` intervals over ``arms`` arms and ``codecs``
    codecs (Bonferroni's bound, whatever their dependence; no Holm correction is made
    over them); ``''`` with fewer than 2."""
    if intervals < 2:
        return ""
    alpha = round(100 * (1 - CONFIDENCE))
    grid = (f"{arms} arm{'s' if arms > 1 else ''} x {codecs} "
            f"codec{'s' if codecs > 1 else ''}")
    grid = grid if intervals == arms * codecs else f"of {grid}"
    return (f"; {intervals} ratio intervals in this line ({grid}),"
            f" each unadjusted: were every true ratio 1.00x, the chance that one or more "
            f"excludes 1.00x is up to {min(100, intervals * alpha)} % ({intervals} x "
            f"{alpha} %)")


def _single_process_arm(one, two, method: str):
    """``stats.compare_paired`` of one arm's two-process tok/s ``two`` (baseline) and
    single-process tok/s ``one``, both by repetition over the same repetitions (the
    statistic of ``stats.paired_ratio``: ``ratio`` is ``method``'s point, its interval
    there where the pairs are enough, ``stats.min_pairs``); ``None`` without a pair or
    with a value that is not positive."""
    if len(one) == 0 or not ((one > 0).all() and (two > 0).all()):
        return None
    cmp = compare_paired(two.tolist(), one.tolist(), method=method)
    return None if cmp.ratio is None else cmp


def _model_words(cases) -> str:
    """``; with the null model, whose step computes nothing`` (the default ``--model``)
    or ``; with the fixed-step model`` for the models ``cases`` ran (one workload's);
    ``''`` where they do not say. The single-process ratio and step cost are of the
    control plane alone under the null model, a real model's step dividing both."""
    if "model" not in cases.columns:
        return ""
    models = [m for m in dict.fromkeys(cases["model"]) if isinstance(m, str) and m]
    if not models:
        return ""
    words = [f"the {m} model" + (", whose step computes nothing" if m == "null" else "")
             for m in models]
    return "; with " + _and(words)


def _single_process_step(g, arm: str, codec: str, reps, method: str):
    """``stats.compare_paired`` of one arm's mean step (``step_ns_mean``, ns), its
    two-process case with ``codec`` (baseline) against its single-process case, over
    the repetitions ``reps`` its tok/s ratio is over: ``diff_mean`` (``t``) or
    ``diff_median`` is the two-process step less the single-process step, the time the
    hop costs each step, with ``method``'s interval where the pairs are enough; ``None``
    where ``g`` (one workload's cases, ``_arm`` assigned) lacks a step of those."""
    if "step_ns_mean" not in g.columns:
        return None
    one, two = (_tokens_by_repetition(g[(g["_arm"] == arm) & (g["codec"] == c)],
                                      "step_ns_mean") for c in (SINGLE_PROCESS, codec))
    if not (set(reps) <= set(one.index) and set(reps) <= set(two.index)):
        return None
    return compare_paired(two[reps].tolist(), one[reps].tolist(), method=method)


def _step_cost_words(cmp, method: str) -> str:
    """``; its mean step +152.3 µs [+140.1, +164.5] over the single process's`` of a
    ``_single_process_step`` comparison (its point, ``method``'s, and interval where it
    has one, in µs; its ends joined by `` to `` where one has a thousands separator,
    ``[+932.7 to +1,279.2]``, as the tables' diff CI, so that it does not read as four
    numbers); ``''`` for ``None``."""
    if cmp is None:
        return ""

    def us(ns: float) -> str:  # never rounded onto 0 µs unless it is 0 (point_text)
        return point_text(ns / 1e3, 1, sign=True, grouped=True)

    point = cmp.diff_mean if method == "t" else cmp.diff_median
    text = f"; its mean step {us(point)} µs"
    if cmp.diff_ci_low is not None and cmp.diff_ci_high is not None:
        ends = (us(cmp.diff_ci_low), us(cmp.diff_ci_high))
        text += f" [{(' to ' if any(',' in e for e in ends) else ', ').join(ends)}]"
    return text + " over the single process's"


def _step_cost_over(method: str, intervals: int, repeated: bool = True) -> str:
    """What the single-process finding's step cost (``_step_cost_words``) is: ``; µs
    per step: the two-process case's mean step less the single process's, the mean of
    the per-repetition differences [95 % Student-t interval]`` (the median under
    ``sign`` and ``bootstrap``), with intervals followed by why one can read otherwise
    than the ratio's (``STEP_COST_APART``); no interval named where the line has none;
    without repetitions (``repeated`` false) no statistic over them is named."""
    head = "; µs per step: the two-process case's mean step less the single process's"
    if not repeated:
        return head
    point = "mean" if method == "t" else "median"
    return (f"{head}, the {point} of the per-repetition differences" + (
        f" [{CONFIDENCE * 100:.0f} % {INTERVAL_NAMES[method]} interval], "
        + STEP_COST_APART if intervals else ""))


#: Why the single-process finding's µs interval and its ratio's may read apart.
STEP_COST_APART = ("an interval of the step times' differences, not of the tokens/s "
                   "ratios' logs, so it can exclude 0 where the ratio's holds 1")


def _single_process_arm_parts(by_codec: dict[str, Any], repeated: bool,
                              steps: dict[str, Any] | None = None) -> str:
    """``64,858 tok/s, 4.84x [4.10, 5.71] two processes with msgpack (13,408 tok/s),
    5.02x [4.20, 6.00] two processes with pickle (12,921 tok/s)`` of one arm's
    comparisons ``by_codec`` (codec -> ``_single_process_arm``): the single-process
    tok/s once (its geometric mean over the pairs; one repetition: the sample itself),
    then per codec the ratio with its interval and the two-process tok/s; a codec whose
    pairs give the single process another figure (an interrupted run) carries its own
    (``; single process 60,000 tok/s over these pairs``); an arm without an interval in
    a finding of several repetitions (``repeated``) says why: ``(one repetition, no
    interval)``. ``steps`` (codec -> ``_single_process_step``), where given, adds each
    codec's step cost after its tok/s (``_step_cost_words``)."""
    first = f"{next(iter(by_codec.values())).treatment_geomean:,.0f}"
    parts = []
    for codec, cmp in by_codec.items():
        n = cmp.n_pairs
        interval = (f" {ratio_interval(cmp.ratio_ci_low, cmp.ratio_ci_high, digits=2)}"
                    if cmp.ratio_ci_low is not None else "" if not repeated else
                    f" ({'one repetition' if n == 1 else f'{n} repetitions'}, no interval)")
        own = f"{cmp.treatment_geomean:,.0f}"
        parts.append(f"{point_text(cmp.ratio, 2, 1.0)}x{interval} two processes with {codec} "
                     f"({cmp.baseline_geomean:,.0f} tok/s"
                     + ("" if own == first else f"; single process {own} tok/s over these "
                        "pairs")
                     + _step_cost_words((steps or {}).get(codec), cmp.method) + ")")
    return f"{first} tok/s, " + ", ".join(parts)


def _single_process_over(counts: set[int], unpaired: bool, intervals: int,
                         method: str) -> str:
    """What the single-process finding's figures are over: ``one repetition: one
    sample, no interval``, or with 2+ the repetitions (``up to 3`` where arms differ),
    the ratio's statistic and interval (``stats.ratio_phrase``; none where the pairs
    are fewer than ``method``'s interval needs) and what each tok/s figure is."""
    n = max(counts)
    if n == 1:
        over = "one repetition: one sample, no interval"
    else:
        over = (f"{n} repetitions" if len(counts) == 1 else f"up to {n} repetitions"
                ) + ", " + ratio_phrase(method, interval=bool(intervals))
        if not intervals:
            over += (f", no interval: a {INTERVAL_NAMES[method]} interval needs >= "
                     f"{min_pairs(method)} pairs")
        over += "; tok/s: each case's geometric mean over them" + (
            ", whose quotient is the ratio" if method == "t" else "")
    return over + ("" if not unpaired else
                   ", each arm's over the repetitions both its cases finished")


def _tokens_by_repetition(cases, field: str = "output_tokens_per_s") -> "pd.Series":
    """The ``field`` (``output_tokens_per_s``, or ``step_ns_mean``) of ``cases`` (one
    arm and codec) by repetition, the cases without the figure left out (a frame
    without ``repetition``: repetition 0)."""
    cases = cases.dropna(subset=[field])
    reps = cases["repetition"] if "repetition" in cases.columns else pd.Series(
        0, index=cases.index)
    return pd.Series(cases[field].to_numpy(),
                     index=reps.fillna(0).astype(int).to_numpy()).groupby(
                         level=0, observed=True).mean()


#: The single-process finding's reading of an arm whose ratio's interval holds 1.00x
#: (``_ipc_cost_clause``), after its verdict (``within noise`` or
#: ``SHORT_INCONCLUSIVE``, defined in the legend under the findings).
HOLDS_NO_COST = ("the interval holding 1.00x: the data cannot tell a cost of having IPC "
                 "from none")
#: The same for an arm whose ratio has no interval and is above 1.00x, after what it is
#: over (``one repetition``, ``3 repetitions``).
NO_INTERVAL_COST = ("no interval to tell it from noise: not established as the cost of "
                    "having IPC")


def _ipc_cost_reading(cmp) -> tuple[str, bool]:
    """One arm's reading in the single-process finding, ``cmp`` its
    ``_single_process_arm`` comparison, as ``(words, said_measurable)``, read on the
    ratio and interval as printed (2 decimals, more for an end that 2 decimals would
    round onto 1.00 while it is not 1, or across or onto the noise band's edge,
    ``stats.shown_end``: so ``[0.95, 0.999]`` lies below 1.00x and ``[1.004, 1.05]``
    above it, and bounds of 0.9050 and 1.1004, printed ``[0.905, 1.1004]``, reach
    beyond 1.1x either way, as their true values do, the reading of every "within
    noise"): an interval above 1.00x, ``the cost of
    having IPC at all``; one that holds 1.00x, ``within noise`` (within 1.1x either way) or
    ``SHORT_INCONCLUSIVE`` (beyond it) with ``HOLDS_NO_COST``; no interval and a ratio
    above 1.00x, ``one repetition, `` + ``NO_INTERVAL_COST``; otherwise (a ratio at or
    below 1.00x with no interval, or an interval below 1.00x) ``slower`` or ``no faster``
    (``said_measurable`` true: the clause words those)."""
    ratio, lo, hi = cmp.ratio, cmp.ratio_ci_low, cmp.ratio_ci_high
    if lo is not None and hi is not None:
        lo, hi = shown_end(lo, 2, 1.0, "ratio"), shown_end(hi, 2, 1.0, "ratio")
        if lo > 1.0:
            return "the cost of having IPC at all", False
        if hi >= 1.0:
            verdict = SHORT_INCONCLUSIVE if inconclusive(lo, hi) else "within noise"
            return f"{verdict}, {HOLDS_NO_COST}", False
    elif ratio > 1.0:  # as printed: stats.point_text shows its side of 1
        n = cmp.n_pairs
        return f"{'one repetition' if n == 1 else f'{n} repetitions'}, {NO_INTERVAL_COST}", False
    return ("slower" if ratio < 1.0 else "no faster"), True


def _ipc_cost_clause(compared: dict[str, Any]) -> str:
    """What the single-process finding's ratios show, ``compared``: arm -> its
    ``_single_process_arm`` comparison, each arm read by ``_ipc_cost_reading``. Only an
    interval above 1.00x is called the cost of having IPC; one that holds 1.00x says the
    data cannot tell a cost from none, a ratio above 1.00x with no interval that it is
    not established as one; where the single process was not faster, the run measures
    no such cost there (the single process's own overhead or the machine's noise
    outweighed it), never called a cost. Arms of the same reading are named together
    (``for cached and send, ...``) where the arms' readings differ; where two or more
    arms with intervals read differently but their intervals, as printed, share a point,
    a last clause says the data do not establish a difference between the arms
    (``_arms_overlap``)."""
    readings = {arm: _ipc_cost_reading(c) for arm, c in compared.items()}
    said = [r for r in dict.fromkeys(words for words, m in readings.values() if not m)]
    notfaster = [a for a, (_, m) in readings.items() if m]
    what = ""
    if notfaster:
        slower = all(readings[a][0] == "slower" for a in notfaster)
        what = (f"the single process was {'slower than' if slower else 'no faster than'} "
                "the two-process case, so no cost of having IPC is measurable")
    if not said:
        return what + " here"
    if len(said) == 1 and not notfaster:
        return said[0]
    parts = [f"for {_and([a for a, (w, m) in readings.items() if w == words and not m])}, "
             f"{words}" for words in said]
    if notfaster:
        parts.append(f"for {_and(notfaster)}, {what} there")
    return "; ".join(parts) + _arms_overlap(compared, readings)


def _arms_overlap(compared: dict[str, Any], readings: dict[str, tuple[str, bool]]) -> str:
    """``; the arms' readings differ, but their intervals overlap ([1.04, 1.13] and
    [0.96, 1.17]): the data do not establish a difference between the arms`` where the
    arms of
    ``compared`` (arm -> ``_single_process_arm`` comparison) that have an interval are
    two or more, read differently (``readings``: ``_ipc_cost_reading``) and their
    intervals, as printed (``stats.shown_end``: 2 decimals, more for an end that would
    round onto 1.00 or across the noise band's edge), share a point; ``''`` otherwise (a
    verdict of one arm and not the other is not a difference between them; overlapping
    intervals do not show the arms equal either, only that these data do not tell
    them apart)."""
    with_ci = [a for a, c in compared.items() if c.ratio_ci_low is not None]
    if len(with_ci) < 2 or len({readings[a] for a in with_ci}) < 2:
        return ""
    ends = [(shown_end(compared[a].ratio_ci_low, 2, 1.0, "ratio"),
             shown_end(compared[a].ratio_ci_high, 2, 1.0, "ratio")) for a in with_ci]
    if max(lo for lo, _ in ends) > min(hi for _, hi in ends):
        return ""
    shown = _and([ratio_interval(compared[a].ratio_ci_low, compared[a].ratio_ci_high,
                                 digits=2) for a in with_ci])
    return (f"; the arms' readings differ, but their intervals overlap ({shown}): the "
            "data do not establish a difference between the arms")


def _share_findings(cases, where: Where, labels: list[str], method: str = "t",
                    recorded: dict[tuple, dict[str, dict[str, Any]]] | None = None,
                    shares: dict[tuple, Any] | None = None) -> list[str]:
    """Send's cost as a share of the step at every running count of each codec (and
    other workload label), one line each, in that order, from ``plots.send_cost_table``:
    the means over repetitions of the SchedulerOutput path's difference and of each
    arm's step, each share the mean difference over the mean of cached's step (medians
    under ``--ci-method sign`` or ``bootstrap``: ``send_cost.mean_share``, the share
    ``plots.send_cost_share`` draws), its interval
    by ``method``, the run's ``--ci-method`` (none where the method needs more pairs,
    said so in the pair tables' words, ``send_cost.share_interval``); cases whose
    timings are withheld (``analysis.cores``) are left out. With 2+ repetitions a
    step is named by its statistic, ``cached's step, 132.5 µs as the mean of its 3
    repetitions' median steps``, not ``median step``: ``bench.py``'s comparison block
    gives the geometric mean over repetitions of the same per-case medians as ``step
    median`` (a share under ``sign`` or ``bootstrap`` is of their median: ``as the
    median of its 6 repetitions' median steps``). Where the whole step's share has an
    interval that excludes 0 but the run's recorded comparison of that step
    (``recorded``: ``recorded_metrics``) finds no significant difference after Holm's
    correction, the line says so (``_step_verdict``). ``shares``, where given, gets
    each line's shares (``send_cost.StepShares``: the SchedulerOutput path's and the
    whole step's ``MeanShare``, the step they are of) by (workload, codec), for the
    summary table (``_summary_table``, ``_summary_caption``)."""
    from ipc_bench.analysis.cores import is_withheld
    from ipc_bench.report.plots import S2R_MEDIAN_COLUMN, send_cost_table

    cases = cases[[not is_withheld(r) for r in frame_records(cases)]]

    table = send_cost_table(cases, labels=labels)
    if len(table) == 0 or table["share_s2r"].isna().all():
        return []
    table = table[table["codec"] != SINGLE_PROCESS]
    other = [c for c in labels if c != "num_running" and c in table.columns]
    out = []
    for _, g in table.groupby(["codec"] + other, sort=False, observed=True):
        counts = sorted(g.groupby("workload", sort=False, observed=True),
                        key=lambda w: w[1]["running"].mean())
        for _, at in counts:  # each workload: one running count
            line = _share_line(at, where, cases, S2R_MEDIAN_COLUMN in cases.columns,
                               method, recorded, shares)
            if line:
                out.append(_short_words(line))
    return out


def _short_words(line: str) -> str:
    """``line`` (a share line of ``analysis.send_cost``, whose words the terminal prints
    too) with its inconclusive verdict in the findings' short words
    (``SHORT_INCONCLUSIVE``, ``stats.INCONCLUSIVE_CLAUSE`` in the legend)."""
    from ipc_bench.analysis.stats import INCONCLUSIVE_CLAUSE

    return line.replace(f", {INCONCLUSIVE_CLAUSE}", f", {SHORT_INCONCLUSIVE}")


def _share_line(at, where: Where, cases, s2r_median: bool, method: str = "t",
                recorded: dict[tuple, dict[str, dict[str, Any]]] | None = None,
                shares: dict[tuple, Any] | None = None) -> str:
    """``_share_findings``' line of one running count's pairs ``at`` (rows of
    ``plots.send_cost_table``), intervals by ``method``; '' when they have no
    SchedulerOutput path's difference. Its shares (``send_cost.StepShares``) go into
    ``shares`` (where given) by (workload, codec). The whole step's reading is checked
    against the comparison's: where its interval excludes 0 and the run's recorded
    comparison is not significant after Holm, the line says so (``_step_verdict``);
    elsewhere, where the comparison block's ratio of the same steps reads otherwise,
    it names that ratio (``send_cost.block_clause``: a share within noise beside a
    ratio beyond 1.1x either way is not called within noise alone)."""
    from ipc_bench.analysis.send_cost import (bounds, holds_zero, steady_share_words,
                                              step_shares)

    step = "median" if "step_ns_median" in cases.columns else "mean"
    nets = at["_net_diff"] if "_net_diff" in at else ()
    shared = step_shares(at["_s2r_diff"], at["diff"], at[CACHED], method, step,
                         [None if x != x else x for x in nets] if len(nets)
                         and any(x == x for x in nets) else ())
    if shared is None:
        return ""
    codec, workload = at["codec"].iloc[0], at["workload"].iloc[0]
    if shares is not None:
        shares[(workload, codec)] = shared
    whole = bounds(shared.whole)
    verdict = ("" if whole is None or holds_zero(whole) else
               _step_verdict(recorded, workload, codec, f"step_ns_{step}"))
    words = steady_share_words(shared, s2r_median, _emulated_words(cases, workload, codec),
                               verdict)
    return (f"{where(workload)} ({codec}{mark_of(cases, (workload, codec))}), {words}"
            + _oversubscribed(cases, workload, codec))


def _emulated_words(cases, workload: Any, codec: Any) -> str:
    """``send_cost.emulated_words`` of the cases of ``workload`` and ``codec``."""
    from ipc_bench.analysis.send_cost import emulated_words

    if "emulated" not in cases.columns:
        return ""
    mine = cases[(cases["workload"] == workload) & (cases["codec"] == codec)]
    return emulated_words(frame_records(mine))


def _step_verdict(recorded: dict[tuple, dict[str, dict[str, Any]]] | None, workload: Any,
                  codec: Any, key: str) -> str:
    """``, but the comparison's step median is not significant after Holm (p 0.023,
    adjusted 0.093)`` (``_short_holm``: this interval is unadjusted) where the run's
    recorded comparison of ``workload`` and ``codec`` (one, whatever its transport and
    model) finds metric ``key`` (``step_ns_median`` or ``step_ns_mean``) not significant
    after Holm's correction; ``''`` otherwise, or where none was recorded."""
    found = [ms.get(key) for k, ms in (recorded or {}).items()
             if k[0] == workload and k[1] == codec]
    if len(found) != 1 or not found[0]:
        return ""
    m = found[0]
    if m.get("adjustment") != "holm" or m.get("significant") is not False \
            or m.get("p_value") is None or m.get("p_adjusted") is None:
        return ""
    name = "step median" if key.endswith("median") else "mean step"
    return f", but the comparison's {name} is {_short_holm(m, 'not significant')}"


def _step_time_findings(cases, method: str = "t",
                        shares: dict[tuple, Any] | None = None) -> list[str]:
    """A step-time run's share lines, one per step time, running count and codec, and
    its 1 % crossings, from the ``send_cost_*`` fields its run recorded
    (``analysis.send_cost``: the same lines as the terminal's, shares of the measured
    step, means or medians and intervals by ``method``, the run's ``--ci-method``);
    ``[]`` for a run without them. ``shares``, where given, gets each line's shares
    (``send_cost.CostRow.shares``, a withheld one blank and named in its ``withheld``)
    by (workload, codec), the key the summary table reads them by (``_summary_table``),
    the workload the label the row's cases ran under (``num_running=16,step_time_ms=2.0``)."""
    from ipc_bench.analysis.send_cost import (cost_rows, crossing_lines, share_line,
                                              step_length_line)

    if "send_cost_share_of_step" not in cases.columns:
        return []
    rows = cost_rows(frame_records(cases), method)
    if not rows:
        return []
    if shares is not None:
        shares.update(((r.workload, r.codec), r.shares) for r in rows
                      if r.workload is not None and r.shares is not None)
    out = [_short_words(share_line(r)) for r in rows]
    length = step_length_line(rows)
    if length:
        out.append(length[0].upper() + length[1:])
    out.append("Running requests at which send's cost passes 1 % of the measured step: "
               + "; ".join(crossing_lines(rows)) + ".")
    return out


def _noisy_floors(cases) -> str:
    """`` (12 of them with a noisy floor, whose 50-step block means vary over 10 % of
    their mean, as their warnings say, and their `x floor` with it)`` for the ``cases``
    a floor range covers whose ``floor_step_ns_block_cv`` is over
    ``summary.NOISY_FLOOR_BLOCK_CV``, trace replays left out (``replay_noise.is_replay``:
    their floors replay the trace's batches, whose block means move with them);
    ``''`` where none is."""
    from ipc_bench.analysis.summary import NOISY_FLOOR_BLOCK_CV, STEP_BLOCK

    if "floor_step_ns_block_cv" not in cases.columns:
        return ""
    steady = ([not is_replay({"trace": t}) for t in cases["trace"]] if "trace" in cases
              else [True] * len(cases))
    noisy = cases["floor_step_ns_block_cv"] > NOISY_FLOOR_BLOCK_CV
    n = sum(bool(x) and keep for x, keep in zip(noisy, steady))
    if not n:
        return ""
    blocks = (f"{STEP_BLOCK}-step block means vary over {NOISY_FLOOR_BLOCK_CV * 100:g} % "
              "of their mean")
    if len(cases) == 1:
        return f" (its floor is noisy: its {blocks}, as its warning says, and its `x floor` with it)"
    their = "its" if n == 1 else "their"
    return (f" ({'both' if n == len(cases) == 2 else n} of them with a noisy floor, whose "
            f"{blocks}, as {their} warning{'' if n == 1 else 's'} say{'s' if n == 1 else ''}, "
            f"and {their} `x floor` with it)")


def _floor_findings(ok) -> list[str]:
    """The range of measured step time over the floor's (``x floor``) across the
    synchronous cases at or above 1, saying which cases it covers (one value when its
    ends print alike, e.g. a single case). Left out of it and counted, each with its
    cause as the table's note and the case's warning give it
    (``tables.floor_below_one_note``): a synchronous case below 1, where the floor ran
    slower than the case (noise); and every async case (``async_scheduling``), on
    either side of 1, since the floor replays the frames one at a time while the case
    overlapped its steps, so its ``x floor`` is not the harness's overhead. Where the
    cases it covers ran a model that waits or computes (``tables.model_steps``: fixed-step,
    emulated, torch), the floor ran no model, so the finding says that the range
    includes that model's step instead of calling it the harness's overhead. Two cases
    read ``both``, one ``the one`` (``_the_n``). Also left out and counted: the cases of
    each send / cached pair whose floors the run's notes call not comparable
    (``_incomparable_floors``), so that the range is of comparable floors alone."""
    if "step_to_floor_ratio" not in ok.columns or not ok["step_to_floor_ratio"].notna().any():
        return []
    known = ok[ok["step_to_floor_ratio"].notna()]
    unlike = known["case_id"].isin(_incomparable_floors(ok)) if "case_id" in known.columns \
        else pd.Series(False, index=known.index)
    r = known["step_to_floor_ratio"]
    is_async = (known["async_scheduling"] == True if "async_scheduling" in known.columns  # noqa: E712
                else pd.Series(False, index=known.index))
    below_sync = int(((r < 1) & ~is_async).sum())
    causes = []
    if below_sync:
        causes.append(f"the floor ran slower than the case in {below_sync} "
                      f"case{'' if below_sync == 1 else 's'} (`x floor` below 1, marked "
                      "`!`): that overhead is noise")
    if is_async.any():
        causes.append(_async_floor_cause(r[is_async]))
    unlike &= ~is_async & (r >= 1)  # counted once, by the first cause that has it
    if unlike.any():
        causes.append(_incomparable_cause(int(unlike.sum())))
    noise = "; ".join(causes)
    r = r[(r >= 1) & ~is_async & ~unlike]
    if r.empty:
        return [f"No overhead over the floor can be read from this run: {noise}."]
    n = len(r)
    which = (("synchronous " if is_async.any() else "") + ("case" if n == 1 else "cases")
             + (" with `x floor` at or above 1" if below_sync
                else " with a comparable floor" if unlike.any()
                else " with a floor" if len(known) < len(ok) else ""))  # not the inproc ones
    low, high = f"{r.min():.2f}x", f"{r.max():.2f}x"
    floor = "the floor (the same recorded messages exchanged bare)"
    if low == high:
        span = f"take {low} {floor} in {_the_n(n, causes)} {which}"
    else:
        span = f"take {low} to {high} {floor} across {_the_n(n, causes)} {which}"
    span += _noisy_floors(known.loc[r.index])
    steps = model_steps(frame_records(known.loc[r.index]))
    if steps is None:
        return [f"The harness's measured steps {span}"
                + (f"; {noise}, left out." if causes else ".")]
    return [f"The measured steps {span}; they include {steps}, which the floor does not "
            "run, so that ratio is not the harness's overhead alone"
            + (f"; {noise}, left out." if causes else ".")]


def _incomparable_cause(k: int) -> str:
    """Why ``_floor_findings`` leaves out ``k`` cases of ``_incomparable_floors``."""
    if k == 1:
        whose = "1 case whose floor is not comparable with its send / cached twin's"
    else:
        whose = f"{k} cases whose floors are not comparable with their send / cached twins'"
    return (whose + ", as the notes under Measurement warnings say (the two floors differ "
            "by more than their frames explain: the machine's noise)")


def _incomparable_floors(ok) -> set[str]:
    """The case ids of the send / cached pairs of ``ok`` (``Results.cases``) whose
    floors ``summary.floor_pair_notes`` (the run's ``note:`` lines, the report's under
    Measurement warnings) calls not comparable: both cases of each pair it notes."""
    from ipc_bench.analysis.summary import floor_pair_notes

    if "case_id" not in ok.columns:
        return set()
    records = frame_records(ok)
    sends = [r for r in records if r.get("policy") == SEND]
    out: set[str] = set()
    for c in (r for r in records if r.get("policy") == CACHED):
        for note in floor_pair_notes(sends + [c]):
            for s in sends:
                if note.startswith(f"the floors of {s['case_id']} and {c['case_id']} "):
                    out |= {s["case_id"], c["case_id"]}
    return out


def _the_n(n: int, counted: bool) -> str:
    """How the floor finding names its ``n`` cases: ``the one`` for 1, ``both`` for 2,
    else ``all n``, or ``the n`` where others were left out (``counted``)."""
    if n == 1:
        return "the one"
    if counted:
        return f"the {n}"
    return "both" if n == 2 else f"all {n}"


def _async_floor_cause(r) -> str:
    """Why ``_floor_findings`` leaves out the async cases whose ``x floor`` values are
    ``r``, with their range (those below 1 are marked ``!`` in the tables)."""
    n = len(r)
    low, high = f"{r.min():.2f}x", f"{r.max():.2f}x"
    values = low if low == high else f"{low} to {high}"
    marked = "; below 1 marked `!`" if (r < 1).any() else ""
    return (f"{n} async case{'' if n == 1 else 's'} (`x floor` {values}{marked}) "
            f"overlapped {'its' if n == 1 else 'their'} steps while the floor replays the "
            f"frames one at a time: {'that' if n == 1 else 'their'} `x floor` is not the "
            "harness's overhead on either side of 1")


def _overhead_findings(cases, added: dict | None = None) -> list[str]:
    """An ``overhead`` run's findings: per workload and codec, the paired ratio of loop
    time per step (``loop_step_ns_mean``) with per-step recording and checks (arm
    ``steps``) to without (``totals``), its 95 % interval and verdict
    (``stats.compare_cases``, as ``scenarios/overhead`` prints it), with ``_caveated``'s
    caveats (``added``: the report's own warning lines, ``_noisy_step_cases``)."""
    from ipc_bench.analysis.stats import compare_cases

    if "instrumentation" not in cases.columns or not (cases["instrumentation"] == "totals").any():
        return []
    out = []
    for cmp in compare_cases(frame_records(cases), metrics=(("loop_step_ns_mean", "ns"),)):
        m = cmp["metrics"].get("loop_step_ns_mean")
        if not m:
            continue
        ci = (ratio_interval(m["ratio_ci_low"], m["ratio_ci_high"])
              if m["ratio_ci_low"] is not None else "(no interval)")
        out.append(f"At {cmp['workload']} ({_codec_name(cmp['codec'])}), per-step recording "
                   f"and checks make the loop's step {point_text(m['ratio_geomean'], 3, 1.0)}x as long "
                   f"({m['treatment']}/{m['baseline']}, 95 % interval {ci} over "
                   f"{m['n_pairs']} pairs"
                   + arm_geomeans(m, "against", "us per step") + f"): {verdict_of(m)}.")
        out[-1] = _caveated(out[-1], comparison_pairs(cases, cmp),
                            _comparison_tput_significant(cmp), added)
    return out


# --------------------------------------------------------------------------------------
# the run's other paired comparisons (A/A, cached+async against cached, ...)

def other_comparisons(results) -> list[dict[str, Any]]:
    """The paired comparisons the run recorded (``summary.json`` ``comparisons``, those
    the terminal printed) that no other part of the report gives: all but cached
    against send, a ``--pp`` run's direct against send (``_pp_findings``; its A/A
    comparisons are given here) and those of an ``overhead`` run
    (``_overhead_findings``). ``[]`` when a summary cannot be read.
    Each is as ``run_comparisons`` gives it (recomputed over the cases loaded where the
    loader left one out); one of whose cases (its arms at its workload and codec, in
    each of its ``repetitions``) ``results`` does not hold finished (unfinished) is not
    given: its figures are of cases the report does not show."""
    from ipc_bench.engine.pipeline import DIRECT

    cases = results.cases
    if "instrumentation" in cases.columns and (cases["instrumentation"] == "totals").any():
        return []
    given = {(SEND, CACHED)}  # the pair section's, and a --pp run's send against direct
    if "pp" in cases.columns and cases["pp"].notna().any():
        given.add((SEND, DIRECT))
    out = []
    done = results.finished().cases
    for run_id, recorded in run_comparisons(results).items():
        run = done[done["run_id"] == run_id]
        held = _held_cases(run)
        out.extend(_arrival_bound_marked(c, run) for c in recorded
                   if (c.get("baseline"), c.get("treatment")) not in given
                   and _cases_held(c, held))
    return out


def _arrival_bound_marked(c: dict[str, Any], run) -> dict[str, Any]:
    """Recorded comparison ``c`` of a timed replay as ``stats.compare_cases`` records it
    now: where ``c`` has no ``arrival_bound`` mark (a summary written before it) but the
    cases it pairs, of ``run`` (one run's ``Results.cases``), are all timed replays none
    of which is load-bound (``stats.arrival_bound``), marked so, with its output tokens/s
    withheld (verdict ``arrival-bound``; its family, over which the other verdicts were
    adjusted, as recorded). Any other ``c`` as it is."""
    from ipc_bench.analysis.stats import ARRIVAL_BOUND_KEYS, arrival_bound, schedule_bound

    if not c.get("timed") or c.get("arrival_bound"):
        return c
    arms = run["arm"] if "arm" in run.columns else run["policy"]
    arms = [a if isinstance(a, str) and a else p for a, p in zip(arms, run["policy"])]
    reps = c.get("repetitions")
    records = [r for r, arm in zip(frame_records(run), arms)
               if arm in (c.get("baseline"), c.get("treatment"))
               and (r.get("workload"), r.get("codec")) == (c.get("workload"), c.get("codec"))
               and all(c.get(k) is None or r.get(k) == c.get(k) for k in ("transport", "model"))
               and (not isinstance(reps, list) or r.get("repetition", 0) in reps)]
    if not arrival_bound(records):
        return c
    metrics = {k: schedule_bound(m, ARRIVAL_BOUND) if k in ARRIVAL_BOUND_KEYS else m
               for k, m in (c.get("metrics") or {}).items()}
    return dict(c, arrival_bound=True, metrics=metrics)


def _held_cases(cases) -> set[tuple]:
    """(arm, workload, codec, repetition) of each row of ``cases`` (the arm: its
    ``arm``, else its policy)."""
    arms = cases["arm"] if "arm" in cases.columns else cases["policy"]
    reps = cases["repetition"] if "repetition" in cases.columns else [0] * len(cases)
    return {(a if isinstance(a, str) and a else p, w, c, int(r) if r == r else 0)
            for a, p, w, c, r in zip(arms, cases["policy"], cases["workload"],
                                     cases["codec"], reps)}


def _cases_held(comparison: dict[str, Any], held: set[tuple]) -> bool:
    """Whether every case recorded comparison ``comparison`` pairs is in ``held``
    (``_held_cases``): both arms at its workload and codec in each of its
    ``repetitions`` (any one, when it records none)."""
    w, c = comparison.get("workload"), comparison.get("codec")
    arms = (comparison.get("baseline"), comparison.get("treatment"))
    reps = comparison.get("repetitions")
    if not isinstance(reps, list) or not reps:
        return all(any(h[:3] == (a, w, c) for h in held) for a in arms)
    return all((a, w, c, r) in held for a in arms for r in reps)


def is_aa(comparison: dict[str, Any]) -> bool:
    """Whether ``comparison`` pairs an arm with a copy of itself (``--aa``: send')."""
    return comparison["treatment"] == comparison["baseline"] + "'"


#: Metrics the finding on a comparison gives, with their names there.
COMPARISON_FINDING_METRICS = (("output_tokens_per_s", "output tokens/s"),
                              ("step_ns_mean", "mean step"))


def _holm_p(m: dict[str, Any]) -> bool:
    """Whether recorded metric ``m`` has a Holm-adjusted verdict with its p-values."""
    return (m.get("adjustment") == "holm" and m.get("p_value") is not None
            and m.get("p_adjusted") is not None and m.get("significant") is not None)


def short_verdict(m: dict[str, Any]) -> str:
    """The verdict of a recorded comparison metric ``m`` (``PairedComparison.to_dict``)
    in the short words the legend under the findings defines (``findings_legend``), as
    the pair findings' tokens/s clause gives it (``_verdict_clause``): Holm-adjusted,
    with its p-values (``_short_holm``), ``significant after Holm (p 0.001, adjusted
    0.006)``, ``not significant after Holm (...)`` where the unadjusted interval
    excludes 1 (``stats.NOT_SIGNIFICANT_HOLM``; ``inconclusive: not significant after
    Holm (...)`` where it also reaches beyond 1.1x either way, ``stats.INCONCLUSIVE_HOLM``),
    ``inconclusive (interval beyond 1.1x either way); no significant difference after Holm
    (...)`` where it holds 1 and reaches beyond 1.1x either way (``SHORT_INCONCLUSIVE``), else
    ``no significant difference after Holm (...)``. A metric without Holm's p-values
    (a summary written before them) gives its recorded verdict (``verdict_of``) in the
    same words where they have them (``stats.INCONCLUSIVE_HOLM``,
    ``stats.NOT_SIGNIFICANT_HOLM``, also for the older ``no significant difference after
    Holm adjustment``; ``SHORT_INCONCLUSIVE``); any other (``no verdict: ...``) as
    recorded."""
    from ipc_bench.analysis.stats import INCONCLUSIVE_HOLM, NO_DIFFERENCE, NOT_SIGNIFICANT_HOLM

    wide = inconclusive(m.get("ratio_ci_low"), m.get("ratio_ci_high"))
    if _holm_p(m):
        if m["significant"]:
            return _short_holm(m, "significant")
        if unadjusted_excludes_one(m):
            return _short_holm(m, "inconclusive: not significant" if wide
                               else "not significant")
        if wide:
            return f"{SHORT_INCONCLUSIVE}; " + _short_holm(m, "no significant difference")
        return _short_holm(m, "no significant difference")
    recorded = str(m.get("verdict", ""))
    if recorded.startswith(INCONCLUSIVE_HOLM):
        return INCONCLUSIVE_HOLM
    if recorded.startswith((NOT_SIGNIFICANT_HOLM, f"{NO_DIFFERENCE} after Holm")):
        return NOT_SIGNIFICANT_HOLM
    said = verdict_of(m)
    return SHORT_INCONCLUSIVE if said.startswith("inconclusive: ") else said


def _short_holm(m: dict[str, Any], verdict: str) -> str:
    """``not significant after Holm (p 0.040, adjusted 0.282)``: ``verdict`` of a
    recorded metric ``m`` (with its ``p_value`` and ``p_adjusted``) in the short words
    the legend under the findings defines, with the family Holm's correction is over
    (``findings_legend``, ``_holm_families``); a p below 0.001 as ``<0.001``."""
    def p(v: float) -> str:
        return "<0.001" if v < 0.001 else f"{v:.3f}"

    return f"{verdict} after Holm (p {p(m['p_value'])}, adjusted {p(m['p_adjusted'])})"


def _ratio_clause(m: dict[str, Any], name: str, verdict: bool = True) -> str:
    """'output tokens/s -2.5 % [-6.8, +2.0] % (no significant difference after Holm (p
    0.354, adjusted 1.000))', the verdict (``short_verdict``: the legend's words) only
    with ``verdict``."""
    ratio = m["ratio_geomean"] if m["method"] == "t" else m["ratio_median"]
    if ratio is None:
        return f"{name}: {m['verdict']}"
    interval = ""
    if m["ratio_ci_low"] is not None and m["ratio_ci_high"] is not None:
        interval = " " + ratio_interval(m["ratio_ci_low"], m["ratio_ci_high"],
                                        percent=True)
    return f"{name} {_pct(ratio)}{interval}" + (f" ({short_verdict(m)})" if verdict else "")


def _comparison_finding(c: dict[str, Any], where: Where) -> str:
    """One sentence on comparison ``c`` (``other_comparisons``): tokens/s and mean step
    time of the treatment against the baseline with their intervals and verdicts; for
    an A/A pair (``is_aa``) whether any metric differed significantly, which would
    mean the machine's noise alone produces verdicts."""
    base, treat, n = c["baseline"], c["treatment"], c["n_pairs"]
    from ipc_bench.analysis.cores import SHARED_MARK
    from ipc_bench.report.tables import tokens_name, transport_of

    mark = SHARED_MARK if c.get("timings_marked") else ""  # N = 1 on exactly 2 cores
    head = (f"{where(c['workload'])} ({_codec_name(c['codec'])}{transport_of(c)}{mark}), "
            f"{treat} against {base} "
            f"over {n} paired repetition{'' if n == 1 else 's'}")
    metrics = c.get("metrics") or {}
    # a timed replay's tokens/s are over wall time: "output tokens/s (wall)"
    names = [(k, tokens_name(k, name, bool(c.get("timed"))))
             for k, name in COMPARISON_FINDING_METRICS]
    shown = [(metrics[k], name) for k, name in names if k in metrics]
    verdicts = {m["verdict"] for m, _ in shown}
    if not is_aa(c):
        if len(verdicts) == 1 and next(iter(verdicts)).startswith("no verdict"):
            # one reason for every metric: said once, after them
            return (head + ": " + ", ".join(_ratio_clause(m, name, verdict=False)
                                           for m, name in shown)
                    + f" ({next(iter(verdicts))}).")
        clauses = [_ratio_clause(m, name) for m, name in shown]
        return head + (": " + "; ".join(clauses) if clauses else
                       ": no metric compared") + "."
    judged = {k: m for k, m in metrics.items() if m.get("significant") is not None}
    differ = [k for k, m in judged.items() if m["significant"]]
    head = head.replace(f"{treat} against {base}",
                        f"the A/A pair {treat} against {base} (one policy run twice)", 1)
    if not judged:  # the bytes are exact (no test): a reason is a timed metric's
        why = next((m["verdict"] for m in metrics.values()
                    if m["verdict"].startswith("no verdict")), None)
        return f"{head} gives no verdict ({why.removeprefix('no verdict: ')})." \
            if why else f"{head} compared no timed metric."
    # a figure's own verdict where Holm's adjustment, not its interval, decided it
    shown_clauses = ", ".join(_ratio_clause(metrics[k], name,
                                            unadjusted_excludes_one(metrics[k]))
                              for k, name in names if k in metrics)
    # too wide to see a 10 % difference: not one the Holm adjustment left unjudged
    wide = [k for k, m in judged.items() if verdict_of(m).startswith("inconclusive")
            and not unadjusted_excludes_one(m)]
    if not differ and wide:
        from ipc_bench.analysis.metrics import metric

        pct = f"{100 * DETECTABLE:.0f} %"
        return (f"{head} is inconclusive: no compared metric differs significantly, but "
                f"the intervals of {len(wide)} of its {len(judged)} compared metrics "
                f"({', '.join(metric(k).short for k in wide)}) reach beyond "
                f"{1 + DETECTABLE:g}x either way, so "
                f"this run could not have seen a {pct} difference (too few repetitions or "
                f"too noisy) and does not show that the machine's noise is small: "
                + shown_clauses + ".")
    if not differ:
        return (f"{head} shows no significant difference in any of its {len(judged)} "
                "compared metrics, so the machine's noise alone gave no verdict: "
                + shown_clauses + ".")
    from ipc_bench.analysis.metrics import metric

    named = ", ".join(f"{metric(k).short} ({short_verdict(metrics[k])})" for k in differ)
    return (f"{head} shows a significant difference in {len(differ)} of its "
            f"{len(judged)} compared metrics: {named}. The machine's noise alone "
            "produces verdicts here: read this run's verdicts with care.")


#: After an A/A pair's shares whose interval excludes 0 (``_aa_share_words``).
AA_SHARE_EXCLUDES_0 = ("for identical code, an interval that excludes 0: this machine's "
                       "noise exceeds what this run's share intervals claim, so a send "
                       "against cached share interval excluding 0 by as little does not "
                       "establish a cost here")
#: After an A/A pair's shares whose intervals all hold 0.
AA_SHARE_HOLDS_0 = ("what identical code gives on this machine: a send against cached "
                    "share within these bounds is no more than the machine alone gives")


def _aa_share_words(c: dict[str, Any], pairs: list[tuple[dict, dict]],
                    method: str = "t") -> str:
    """The shares of an A/A pair (``is_aa``: one policy run twice), by the computation
    send's against cached's are read by (``send_cost.pair_step_shares``, the pairing
    ``record_step_shares`` uses, ``path_difference``'s words, the baseline in send's
    place and the treatment in cached's, as send is the baseline and cached the
    treatment of send against cached), so that a reader sees what identical code gives
    on this machine, in the orientation of the comparison table's difference column
    (baseline - treatment: ``send-send'``): `` A/A shares, by the computation of send's
    against cached's: the SchedulerOutput path, send against send', costs 33.00 µs per
    step more than that of send', 3.41 % of the step of send' (send - send': [+2.80,
    +4.03] %, ...); the net share (...), send against send', ... That is, for identical
    code, an interval that excludes 0: ...`` (``AA_SHARE_EXCLUDES_0``, where the path's
    or the net share's interval excludes 0; ``AA_SHARE_HOLDS_0`` where they hold it);
    ``''`` where the pairs have no path figures. A treatment named with a prime (the
    copy, ``send'``) is ``that of send'`` and ``the step of send'``, not ``send''s``."""
    from ipc_bench.analysis.send_cost import (bounds, holds_zero, pair_step_shares,
                                              path_difference)

    shares = pair_step_shares([(b, t) for t, b in pairs], method)
    if shares is None:
        return ""
    treat, base = c["treatment"], c["baseline"]
    copy = treat.endswith("'")
    of_treat, treat_step = ((f"that of {treat}", f"the step of {treat}") if copy
                            else (f"{treat}'s", f"{treat}'s step"))

    def words(share, what: str) -> str:
        text = path_difference(share.diff_ns, share.share, bounds(share), treat_step,
                               share.method, share.pairs, share.base_ns)
        return f"{what}, {base} against {treat}, " + text.replace(
            "send - cached", f"{base} - {treat}").replace("cached's", of_treat)

    said = [words(shares.s2r, "the SchedulerOutput path")]
    if shares.net is not None:
        said.append(words(shares.net, "the net share (the path plus the runner's token-id "
                                      "bookkeeping)"))
    judged = [bounds(x) for x in (shares.s2r, shares.net) if x is not None and bounds(x)]
    if not judged:
        close = ""
    elif all(holds_zero(i) for i in judged):
        close = f" This is {AA_SHARE_HOLDS_0}."
    else:
        close = f" That is, {AA_SHARE_EXCLUDES_0}."
    return (" A/A shares, by the computation of send's against cached's: "
            + "; ".join(said) + "." + close)


def _pp_findings(cases) -> list[str]:
    """A ``--pp`` run's findings, the lines its terminal printed after the hop table
    (``analysis.pp``): send against direct per B, N and codec (bytes; times only where
    not withheld; ``°`` after the codec where they are shown marked), the footnote when
    some are withheld (``analysis.cores``), the ``°`` line when some are marked
    (``marked_note``), and the send/direct token check."""
    from ipc_bench.analysis.cores import footnote
    from ipc_bench.analysis.pp import send_direct_lines, token_check_line

    if "pp" not in cases.columns or not cases["pp"].notna().any():
        return []
    records = [r for r in frame_records(cases) if not is_missing(r.get("pp"))]
    out = send_direct_lines(records)
    withheld = footnote(records)
    if withheld:
        out.append(withheld.replace("* ", "`*` ", 1))
    shared = marked_note(cases[cases["pp"].notna()])
    if shared:
        out.append(shared)
    out.append(token_check_line(records) + ".")
    return out


#: What a ``--tp`` broadcast delivers to its N ranks, per kind of transport, as the tp
#: delivery finding says it (``_tp_delivery_findings``): the shared-memory ring's one
#: copy, XPUB's N ZMTP frames (``analysis.tp``: ``tp_s2r_wire_bytes_all_ranks_per_step``).
TP_RING_DELIVERY = "the shared-memory ring: written once, read by every rank, one copy"
TP_XPUB_DELIVERY = "ZeroMQ XPUB: the frame written once goes to each rank, N copies"


def _at_each_n(values: dict[int, float]) -> str:
    """``1,274 / 2,548 / 5,096 at N = 1 / 2 / 4`` of N -> bytes (``1,274 at N = 1`` for
    one N), in the order of N."""
    ns = sorted(values)
    return (" / ".join(f"{values[n]:,.0f}" for n in ns) + " at N = "
            + " / ".join(str(n) for n in ns))


def _tp_delivery_findings(cases) -> list[str]:
    """A ``--tp`` run's bytes that reach the N ranks in all, send - cached per step
    (``analysis.tp.tp_saving_means`` of ``tp_s2r_wire_bytes_all_ranks_per_step``: means
    over repetitions), one line per running requests, codec and draft count K, each
    transport as measured: over the ring (``wire.shm_ring.RING_TRANSPORTS``) the bytes
    written once serve every rank (``TP_RING_DELIVERY``), over XPUB each rank gets its
    copy (``TP_XPUB_DELIVERY``), e.g. ``At 256 running requests (msgpack), send - cached
    in bytes per step that reach the N ranks in all: over ipc 1,274 / 2,548 / 5,096 at
    N = 1 / 2 / 4 (ZeroMQ XPUB: ...); over shm 1,274 at N = 1 and over shm-block 1,274 /
    1,274 / 1,274 at N = 1 / 2 / 4 (the shared-memory ring: ...).`` Bytes, whatever the
    cores (timings withheld or not). None without a send/cached pair of ``--tp``
    cases."""
    from ipc_bench.analysis.tp import tp_saving, tp_saving_means
    from ipc_bench.wire.shm_ring import RING_TRANSPORTS

    if "tp" not in cases.columns or not cases["tp"].notna().any():
        return []
    records = [r for r in frame_records(cases) if not is_missing(r.get("tp"))]
    key = "saving_tp_s2r_wire_bytes_all_ranks_per_step"
    groups: dict[tuple, dict[str, dict[int, float]]] = {}
    for row in tp_saving_means(tp_saving(records)):
        if key in row:
            where = (row["num_running"], row["codec"], row["num_spec_tokens"])
            groups.setdefault(where, {}).setdefault(row["transport"], {})[int(row["tp"])] = \
                row[key]
    out = []
    for (b, codec, k), by_transport in groups.items():
        what = codec + (f", K = {k}" if k else "")
        head = (f"At {int(b)} running requests ({what})" if not is_missing(b)
                else f"With {what}")
        clauses = []
        for ring, words in ((False, TP_XPUB_DELIVERY), (True, TP_RING_DELIVERY)):
            over = [f"over {t} {_at_each_n(v)}" for t, v in by_transport.items()
                    if (t in RING_TRANSPORTS) == ring]
            if over:
                clauses.append(" and ".join(over) + f" ({words})")
        out.append(f"{head}, send - cached in bytes per step that reach the N ranks in "
                   f"all: {'; '.join(clauses)}.")
    return out


def _async_findings(cases) -> list[str]:
    """Where the run has ``--async-scheduling`` cases (``async_scheduling``) and no
    ``send`` case, the line that says why it has no send arm, in the command line's
    refusal's words (``engine.config.ASYNC_CACHED_ONLY``): ``No send arm:
    --async-scheduling runs the cached policy only (under send the ids sampled at step n
    are unknown when step n+1 is scheduled).``; none otherwise."""
    from ipc_bench.engine.config import ASYNC_CACHED_ONLY

    if "async_scheduling" not in cases.columns or SEND in set(cases["policy"]):
        return []
    if not any(v is True or (not is_missing(v) and bool(v))
               for v in cases["async_scheduling"]):
        return []
    return [f"No send arm: {ASYNC_CACHED_ONLY}."]


def _comparison_findings(compared, cases, where, method: str, added) -> list[str]:
    """One finding per comparison of ``compared`` (``other_comparisons``) other than
    send / cached, an A/A pair's with its shares (``_aa_share_words``), each caveated
    as the pair findings are (``_caveated``)."""
    return [_caveated(_comparison_finding(c, where)
                      + (_aa_share_words(c, comparison_pairs(cases, c), method)
                         if is_aa(c) else ""),
                      comparison_pairs(cases, c), _comparison_tput_significant(c), added)
            for c in compared]


def findings(results) -> list[str]:
    """Findings of one run as sentences with numbers (see the module docstring; a
    ``--pp`` run: ``_pp_findings``). ``results``: one run (``load``); cases that did
    not finish (``Results.unfinished``) are left out of every finding."""
    results = results.finished()
    cases = results.cases
    if cases.empty:
        return ["None: no case finished."]
    cases = with_net_figure(cases, results.steps)
    pp = _pp_findings(cases)
    timed = "trace_speedup" in cases.columns and cases["trace_speedup"].notna().any()
    tables = _pair_tables(results)
    where = _where_of(cases, results.labels)
    withheld = frozenset(withheld_keys(cases))
    recorded = recorded_metrics(results)
    added = noisy_arm_warnings(results)
    out = _request_findings(cases, where)
    pair_lines: dict[tuple, int] = {}  # key -> its pair finding's index in out
    for key in tables["tput"]:
        pairs = pair_records(cases, key)
        pair_lines[key] = len(out)
        out.append(_caveated(
            _pair_finding(cases, tables, key, where, timed, withheld, recorded), pairs,
            _tput_significant(tables["tput"][key], key, recorded, timed, withheld), added))
        out.extend(_gc_findings(cases, key, where, withheld))
    out.extend(_tp_delivery_findings(cases))
    if timed:
        out.append(_timed_replay_finding(cases, tables["tput"], where, recorded)
                   if {SEND, CACHED} <= set(cases["policy"])
                   else _timed_replay_words(cases, TIMED_REPLAY_ONE_ARM))
    # before any figure of one repetition: its tokens/s change or, timed, its latency
    # percentiles (a p99 of one replay is one sample of it too)
    if tables["tput"] and all(t["n"] < 2 for t in tables["tput"].values()) \
            and any(k[:3] not in withheld for k in tables["tput"]):
        out.insert(0, _repetitions_note(cases, tables["tput"]))
    ok = cases[cases["output_tokens_per_s"].notna()] if "output_tokens_per_s" in cases else cases
    out.extend(_token_bytes_findings(ok))
    method = results_ci_method(results.metadata)
    out.extend(_single_process_findings(ok, where, method, cases))
    shares: dict[tuple, Any] = {}
    step_time = False
    if not timed:
        step_lines = _step_time_findings(cases, method, shares)
        step_time = bool(step_lines)
        out.extend(step_lines or _share_findings(
            cases, where, results.labels, method, recorded, shares))
        for key, i in pair_lines.items():  # the tok/s verdict against the share's effect
            t = tables["tput"][key]
            if key[:3] not in withheld and t["n"] > 1 and \
                    not _tput_significant(t, key, recorded, timed, withheld):
                out[i] += _resolution(t, shares.get((key[0], key[1])))
    if withheld:
        timed_ok = ok[[(w, c, t) not in withheld for w, c, t in
                       zip(ok["workload"], ok["codec"], ok.get("transport", [None] * len(ok)))]]
        out.extend(_floor_findings(timed_ok))
        if not pp:  # a pp run's lines carry the footnote already
            from ipc_bench.analysis.cores import footnote

            out.append(footnote(frame_records(cases)).replace("* ", "`*` ", 1))
    else:
        out.extend(_floor_findings(ok))
    compared = other_comparisons(results)
    others = _comparison_findings(compared, cases, where, method, added)
    out.extend(_marked_line(cases, out + others) if not pp else [])
    lines = (pp + _soak_findings(cases) + _overhead_findings(cases, added)
             + _async_findings(cases) + others + out
             + order_findings(results, where) + block_order_findings(results, where)
             + replay_noise_findings(results)
             + _noise_findings(cases, added))
    summary = _summary_table(cases, tables, withheld, recorded, shares, timed, step_time,
                             added)
    caption = _summary_caption(cases, tables, withheld, shares, timed) if summary else ""
    if summary and any(r[6].endswith(UNESTABLISHED_MARK) for r in summary[1]):
        caption = f"{caption} {UNESTABLISHED_NOTE}".strip()
    # without a cached/send pair, a legend only of the verdict words the lines use (the
    # comparisons', the single-process baseline's)
    counts = [r["n"] for rows in tables.values() for r in rows.values()]
    return Findings(lines, summary, findings_legend(lines, method, recorded, compared,
                                                    pairs=bool(summary), counts=counts),
                    caption)


#: A verdict that calls a difference significant (after Holm, by its unadjusted test,
#: or a recorded verdict's ``significant: ...``, ``stats.verdict_of``), not one that
#: finds none (``not significant``, ``no significant difference``).
SIGNIFICANT = re.compile(
    r"(?<!not )(?<!no )\bsignificant( after Holm| \(unadjusted test\)|: )")


def _rough_caveat(text: str, pairs: list[tuple[dict, dict]], cell: bool = False) -> str:
    """``text`` (a finding of a comparison: cached against send's, a timed replay's
    wall-time clause, another recorded comparison's such as ``cached+async`` against
    ``cached`` or an A/A pair, an ``overhead`` run's; or with ``cell`` the summary
    table's verdict of cached against send)
    with a caveat where it calls a difference significant (``SIGNIFICANT``) while some
    of its ``pairs``' cases (``pair_records``) counted fewer steps than
    ``summary.MIN_STEPS`` (their warning ends ``summary.ROUGH_WORDS``), as their
    warnings say lower down: `` Its cases' figures are rough: only 1 counted step each
    (< 100), as their warnings say.`` (``1 of its 6 cases' figures are rough: only 50
    counted steps (< 100), as its warning says.``; ``only 1 to 50 counted steps
    each``); the cell: ``significant after Holm (rough: only 1 counted step each)``.
    ``text`` as it is elsewhere."""
    from ipc_bench.analysis.summary import MIN_STEPS, ROUGH_WORDS

    if not SIGNIFICANT.search(text):
        return text
    cases = [c for pair in pairs for c in pair]
    steps = [int(c.get("num_steps") or 0) for c in cases
             if any(str(w).endswith(ROUGH_WORDS) for w in listed(c.get("warnings")))]
    if not steps:
        return text
    lo, hi = min(steps), max(steps)
    many = len(steps) > 1
    counted = (f"only {lo:,}{'' if lo == hi else f' to {hi:,}'} counted "
               f"step{'' if hi == 1 else 's'}{' each' if many else ''}")
    if cell:
        return f"{text} (rough: {counted})"
    who = ("Its cases'" if len(steps) == len(cases)
           else f"{len(steps):,} of its {len(cases):,} cases'")
    return (f"{text} {who} figures are rough: {counted} (< {MIN_STEPS}), as "
            f"{'their warnings say' if many else 'its warning says'}.")


#: What a case's warnings on its step times say (``summary.step_spread_warnings``: its
#: 50-step mean step times spread over 10 % of their mean, or its mean step over 1.5
#: medians; ``replay_noise.noisy_arm_warnings``: a replay arm's repetitions' block means
#: apart over 10 %); a noisy floor's warning says it too, but ends
#: ``summary.FLOOR_NOISE_WORDS``: its step times are not the noisy ones.
NOISY_STEPS_WORDS = "the machine may be noisy"


def _noisy_step_cases(pairs: list[tuple[dict, dict]], added: dict | None = None
                      ) -> tuple[int, int]:
    """How many of the cases of ``pairs`` (``pair_records``) carry a warning that their
    step times are noisy (``NOISY_STEPS_WORDS``, not a noisy floor's), among their
    ``warnings`` and the lines the report ``added`` to them (case id -> lines:
    ``replay_noise.noisy_arm_warnings``), and how many cases there are. A trace
    replay's recorded block-CV warnings (``replay_noise.workload_spread_line``), which
    move with its batches, are not counted, as ``_noise_findings`` does not count
    them. Raises nothing."""
    from ipc_bench.analysis.summary import FLOOR_NOISE_WORDS

    added = added or {}
    cases = [c for pair in pairs for c in pair]

    def noisy(c: dict) -> bool:
        replay = is_replay({"trace": c.get("trace")})
        lines = [x for x in listed(c.get("warnings"))
                 if not (replay and workload_spread_line(x))]
        lines += added.get(c.get("case_id"), [])
        return any(NOISY_STEPS_WORDS in str(x) and not str(x).endswith(FLOOR_NOISE_WORDS)
                   for x in lines)

    return sum(map(noisy, cases)), len(cases)


def _noisy_caveat(text: str, pairs: list[tuple[dict, dict]], cell: bool = False,
                  added: dict | None = None) -> str:
    """``text`` (the summary table's tok/s verdict of cached against send with ``cell``;
    else a comparison's finding, cached against send's or another recorded one's, which
    ``_caveated`` gives this only where its tok/s verdict calls the change significant) with a caveat where it calls a difference
    significant (``SIGNIFICANT``) while some of its ``pairs``' cases (``pair_records``)
    carry warnings that their step times are noisy (``_noisy_step_cases``, with the
    lines the report ``added``), as the Measurement warnings list them: the cell
    ``significant after Holm (2 of its 10 cases' step times noisy: Measurement
    warnings)`` (``all 10 of its cases'``); the line `` 2 of its 10 cases' step times
    are noisy, as their warnings say (Measurement warnings): the machine's noise can
    make a tok/s change significant on its own.`` (``Its cases'``; ``1 of its 10
    cases' ..., as its warning says``). Within one run, pairing by repetition does not
    cancel a load that comes and goes, so two runs of one command can give verdicts of
    opposite signs. ``text`` as it is elsewhere. Raises nothing."""
    if not SIGNIFICANT.search(text):
        return text
    k, n = _noisy_step_cases(pairs, added)
    if not k:
        return text
    if cell:
        who = f"all {n:,} of its cases'" if k == n else f"{k:,} of its {n:,} cases'"
        return f"{text} ({who} step times noisy: Measurement warnings)"
    who = "Its cases'" if k == n else f"{k:,} of its {n:,} cases'"
    return (f"{text} {who} step times are noisy, as "
            f"{'their warnings say' if k > 1 else 'its warning says'} (Measurement "
            "warnings): the machine's noise can make a tok/s change significant on its "
            "own.")


def _caveated(text: str, pairs: list[tuple[dict, dict]], tput: bool,
              added: dict | None = None) -> str:
    """The one way a comparison's finding ``text`` (cached against send's line, another
    recorded comparison's, an ``overhead`` run's) gets its caveats over its ``pairs``'
    cases (``pair_records``, ``comparison_pairs``): ``_rough_caveat`` where it calls a
    difference significant, then, where ``tput`` (its verdict calls its tokens/s
    difference significant: ``_tput_significant``, ``_comparison_tput_significant``),
    ``_noisy_caveat`` (with the report's ``added`` warning lines). Raises nothing."""
    text = _rough_caveat(text, pairs)
    return _noisy_caveat(text, pairs, added=added) if tput else text


def _comparison_tput_significant(c: dict[str, Any]) -> bool:
    """Whether recorded comparison ``c`` (``stats.compare_cases``' shape: ``other_
    comparisons``, an ``overhead`` run's) has a tokens/s verdict, in the words its
    finding gives it (``short_verdict``), that calls the difference significant
    (``SIGNIFICANT``); False without one (an ``overhead`` comparison compares loop time
    alone)."""
    m = (c.get("metrics") or {}).get("output_tokens_per_s")
    return bool(m) and bool(SIGNIFICANT.search(str(short_verdict(m))))


def _tput_significant(t: dict[str, Any], key: tuple, recorded: dict | None, timed: bool,
                      withheld: frozenset) -> bool:
    """Whether the pair finding of ``key`` gives its tokens/s change (``t``, a
    ``summarize_pairs`` row, over 2+ repetitions; not timed, not withheld) a verdict
    that calls it significant (``_verdict_clause`` with ``recorded``'s comparison)."""
    if timed or key[:3] in withheld or t["n"] < 2:
        return False
    m = ((recorded or {}).get(key) or {}).get("output_tokens_per_s")
    return bool(SIGNIFICANT.search(_verdict_clause(t, m)))


def _balanced_firsts(n: int) -> str:
    """How often a balanced order of ``n`` pairs runs each arm first: ``2`` (4 pairs),
    ``2 or 3`` (5 pairs)."""
    return f"{n // 2:,}" if n % 2 == 0 else f"{n // 2:,} or {n // 2 + 1:,}"


#: How an arm-order finding (``order_findings``) ends for a two-process comparison,
#: and for the single-process block's (codec ``none``), which serialises nothing.
BYTES_ORDER = "its bytes are exact whatever the order."
NO_BYTES_ORDER = ("its arms run in one process and serialise nothing, so it has no "
                  "bytes for the order to lean.")


def order_findings(results, where: Where) -> list[str]:
    """One line per paired comparison of ``results`` (each run's, ``run_comparisons``:
    cached against send, A/A, cached+async against cached...) over 3 or more complete
    pairs that ``results`` holds finished (``comparison_pairs``: a comparison one of
    whose cases is missing is judged by the pairs it still has) where one arm ran first in more pairs than ``ceil(n / 2)`` of
    its ``n`` (not as balanced as ``n`` allows, as ``scenario.balanced_orders`` orders
    them): ``At 4 running requests (msgpack), cached ran first in 5 of 5 pairs of
    cached against send, where a balanced order puts each arm first in 2 or 3: ...``,
    ending ``BYTES_ORDER``, or ``NO_BYTES_ORDER`` for the single-process block;
    ``where``: workload -> its words (``_where_of``). Which case of a pair ran first is
    read from the order of the run's cases in ``summary.json`` (``results.cases``, in
    the order the cases ran), so runs written before the orders were counterbalanced,
    and hand-made summaries, are judged by what they ran. ``[]`` where every
    comparison is balanced. Raises nothing."""
    from ipc_bench.report.tables import transport_of

    done = results.finished().cases
    if done.empty or "case_id" not in done.columns:
        return []
    runs = done["run_id"] if "run_id" in done.columns else [None] * len(done)
    ran = {(r, c): i for i, (r, c) in enumerate(zip(runs, done["case_id"]))}
    out = []
    for run_id, recorded in run_comparisons(results).items():
        run = done[done["run_id"] == run_id] if "run_id" in done.columns else done
        for c in recorded:
            if not (c.get("baseline") and c.get("treatment")):
                continue
            pairs = comparison_pairs(run, c)  # the complete pairs held
            n = len(pairs)
            if n < 3:
                continue
            at = [(ran.get((t.get("run_id"), t.get("case_id"))),
                   ran.get((b.get("run_id"), b.get("case_id")))) for t, b in pairs]
            if any(i is None or j is None for i, j in at):
                continue
            treatment_first = sum(i < j for i, j in at)
            first, k = ((c["treatment"], treatment_first) if 2 * treatment_first > n
                        else (c["baseline"], n - treatment_first))
            if k <= -(-n // 2):
                continue
            out.append(
                f"{where(c['workload'])} ({_codec_name(c['codec'])}{transport_of(c)}), "
                f"{first} ran first in {k:,} of {n:,} pairs of {c['treatment']} against "
                f"{c['baseline']}, where a balanced order puts each arm first in "
                f"{_balanced_firsts(n)}: whatever favours running first or second (a "
                "drift, a warmer parent process) leans this comparison's times and "
                "tokens/s to one arm, and its intervals do not allow for it; "
                + (NO_BYTES_ORDER if c["codec"] == SINGLE_PROCESS else BYTES_ORDER))
    return out


def block_order_findings(results, where: Where) -> list[str]:
    """One line per run and workload of ``results`` whose single-process block (codec
    ``none``) ran after every two-process case of its workload in each of 3 or more
    repetitions, or before every one (read from the order of the run's finished cases
    in ``summary.json``, as ``order_findings`` reads the arms'): ``At 4 running
    requests, the single process ran after its two-process cases (msgpack, pickle) in
    each of its 5 repetitions, where a balanced order of the codec blocks runs it
    earlier in some: ...``. Runs made since the codec blocks were counterbalanced
    (``scenario.codec_block_orders``) never get one with 3 or more repetitions; runs
    made before, which ran the single process last every time, do. ``[]`` where there
    is none. Raises nothing."""
    done = results.finished().cases
    need = {"case_id", "codec", "repetition", "workload"}
    if done.empty or not need <= set(done.columns):
        return []
    runs = done["run_id"] if "run_id" in done.columns else [None] * len(done)
    # (run, workload) -> repetition -> codec -> the places its cases ran in
    places: dict[tuple, dict] = {}
    order = {codec: i for i, codec in enumerate(dict.fromkeys(done["codec"]))}
    for i, (run, wl, rep, codec) in enumerate(zip(runs, done["workload"], done["repetition"],
                                                  done["codec"])):
        places.setdefault((run, wl), {}).setdefault(rep, {}).setdefault(codec, []).append(i)
    out = []
    for (_, wl), reps in places.items():
        sides, codecs = [], set()
        for blocks in reps.values():
            alone = blocks.get(SINGLE_PROCESS)
            others = [i for c, at in blocks.items() if c != SINGLE_PROCESS for i in at]
            if not alone or not others:
                continue
            codecs.update(c for c in blocks if c != SINGLE_PROCESS)
            sides.append("after" if min(alone) > max(others)
                         else "before" if max(alone) < min(others) else "among")
        if len(sides) < 3 or len(set(sides)) > 1 or sides[0] == "among":
            continue
        side, words = sides[0], ("earlier" if sides[0] == "after" else "later")
        out.append(
            f"{where(wl)}, the single process ran {side} its two-process cases "
            f"({', '.join(sorted(codecs, key=order.get))}) in each of its {len(sides):,} "
            f"repetitions, where a balanced order of the codec blocks runs it {words} "
            "in some: whatever favours running earlier or later (a drift, a warmer "
            "parent process) leans the single-process ratio to one side, and its "
            "intervals do not allow for it.")
    return out


def _warning_kinds(marks) -> tuple[int, int, int, int, int]:
    """Of ``marks`` (each a case's non-empty ``warnings``): how many cases carry a
    warning on their steps, how many only warnings of a noisy floor (ending
    ``summary.FLOOR_NOISE_WORDS``), how many the warning that their floor replay was cut
    short (holding ``summary.FLOOR_ABSENT_WORDS``: their floor's figures absent, their
    step times as measured), whatever else they carry, how many of those last are
    counted in one of the first two too, and how many the warning that floor.csv could
    not take their floor's rows (beginning ``summary.FLOOR_UNWRITTEN_WORDS``: their
    floor's figures absent, their floor replayed whole), whatever else they carry."""
    from ipc_bench.analysis.summary import (FLOOR_ABSENT_WORDS, FLOOR_NOISE_WORDS,
                                            FLOOR_UNWRITTEN_WORDS)

    steps = noisy = lost = both = unwritten = 0
    for w in marks:
        kept = [x for x in w if not str(x).startswith(FLOOR_UNWRITTEN_WORDS)]
        unwritten += len(kept) < len(w)
        rest = [x for x in kept if FLOOR_ABSENT_WORDS not in str(x)]
        cut = len(rest) < len(kept)
        lost += cut
        both += cut and bool(rest)
        if not rest:
            continue
        if all(str(x).endswith(FLOOR_NOISE_WORDS) for x in rest):
            noisy += 1
        else:
            steps += 1
    return steps, noisy, lost, both, unwritten


def _noise_findings(cases, added: dict | None = None) -> list[str]:
    """The sentence on how many of ``cases`` carry measurement warnings (their
    ``warnings``, which the report lists under Measurement warnings), so that the
    findings say how far their figures can be leaned on: those with a warning on their
    steps (their times, intervals and verdicts less certain), those whose only
    warnings are of a noisy floor (``summary.floor_noise_warning``, ending
    ``FLOOR_NOISE_WORDS``: their ``x floor`` and floor tok/s less certain, their times
    not) and those whose only warning is that their floor replay was cut short
    (``FLOOR_ABSENT_WORDS``: their floor's figures and the runner's per-step columns
    absent, their times not less certain), then those whose floor's rows floor.csv
    could not take (``FLOOR_UNWRITTEN_WORDS``: ``1 of 2 cases lost its floor to a
    failed write, floor.csv not taking its rows: its x floor and floor tok/s are
    absent``, whatever else they carry), ``_warning_kinds``; ``[]`` when none has
    one. Cases that counted no step (``num_steps`` 0) are left out: their warnings say
    why. A trace replay's block-CV warnings, which runs made before ``replay_noise``
    recorded (``replay_noise.workload_spread_line``), are not counted: its block means
    move with the trace's batches, and ``replay_noise_findings`` says what its
    machine's noise was; the warnings the report ``added`` (case id -> lines:
    ``replay_noise.noisy_arm_warnings``, a replay arm whose repetitions vary over 10 %)
    are counted with the case's. Raises nothing."""
    added = added or {}
    if cases.empty or ("warnings" not in cases.columns and not added):
        return []
    if "warnings" not in cases.columns:
        cases = cases.assign(warnings=[None] * len(cases))
    if "num_steps" in cases.columns:  # no step counted: the warnings say why, not noise
        cases = cases[cases["num_steps"].fillna(0) > 0]
    replays = (cases["trace"].map(lambda t: is_replay({"trace": t})) if "trace" in cases
               else [False] * len(cases))
    marks = [[x for x in listed(w) if not (replay and workload_spread_line(x))]
             for w, replay in zip(cases["warnings"], replays)]
    marks = [w + added.get(cid, [])
             for w, cid in zip(marks, cases["case_id"] if "case_id" in cases
                               else [None] * len(cases))]
    marks = [w for w in marks if w]
    if not marks:
        return []
    timed, floor_only, lost, both, unwritten = _warning_kinds(marks)
    n = len(cases)
    parts = []
    if timed:
        its = "its" if timed == 1 else "their"
        parts.append(f"{timed:,} of {n:,} case{'' if n == 1 else 's'} "
                     f"carr{'ies' if timed == 1 else 'y'} measurement warnings on {its} "
                     f"steps: {its} times, and the intervals and verdicts drawn from them, "
                     "are less certain than the figures alone say")
    if floor_only:
        parts.append(f"{floor_only:,} {'more ' if parts else f'of {n:,} '}"
                     f"case{'' if (floor_only if parts else n) == 1 else 's'} "
                     f"{'has' if floor_only == 1 else 'have'} a noisy floor alone: "
                     f"{'its' if floor_only == 1 else 'their'} x floor and floor tok/s are "
                     f"less certain, {'its' if floor_only == 1 else 'their'} times not")
    if lost:
        parts.append(_lost_floor_words(lost, both, n, more=bool(parts)))
    if unwritten:
        its = "its" if unwritten == 1 else "their"
        parts.append(f"{unwritten:,} of {n:,} case{'' if n == 1 else 's'} "
                     f"lost {its} floor to a failed write, floor.csv not taking {its} "
                     f"rows: {its} x floor and floor tok/s are absent")
    return ["; ".join(parts) + " (all listed under Measurement warnings); bytes are "
            "exact whatever the load."]


def _lost_floor_words(lost: int, both: int, n: int, more: bool) -> str:
    """``_noise_findings``' words on the ``lost`` of ``n`` cases whose floor replay was
    cut short: ``1 more case lost its floor, ...`` after the other counts (``more``)
    where none of them is among those, else ``2 of 4 cases lost their floor, ...``, with
    the ``both`` of them counted above too said so (``1 of them also among those
    above``), so that each count is true of its own kind. The loss of the floor leaves
    their times as they were: ``its times not less certain``, ``no less certain for that
    loss`` where some are among those whose step warnings make them so."""
    its = "its" if lost == 1 else "their"
    head = (f"{lost:,} more case{'' if lost == 1 else 's'}" if more and not both
            else f"{lost:,} of {n:,} case{'' if n == 1 else 's'}")
    also = times = ""
    if both:
        who = ("" if lost == 1 else "both of them " if both == lost == 2 else
               "all of them " if both == lost else f"{both:,} of them ")
        also = f" ({who}also among those above)"
        times = " no less certain for that loss"
    return (f"{head} lost {its} floor, {its} replay cut short{also}: {its} x floor, floor "
            f"tok/s and the runner's per-step columns are absent, {its} times"
            + (times or " not less certain"))


class Findings(list):
    """The findings of one run (``findings``): its sentences, a list, with what the
    report shows around them: ``summary``, the table at the top of the section
    (``_summary_table``: header and rows) or ``None``, ``caption``, the line right
    under it (``_summary_caption``: what each column's figures are of, and where the
    mean-based and the median-based ones disagree), '' without one, and ``legend``, the paragraph
    under the sentences that names their statistics and defines their short verdicts
    (``findings_legend``), '' without one. ``findings_blocks`` gives the section."""

    def __init__(self, lines=(), summary: tuple | None = None, legend: str = "",
                 caption: str = ""):
        super().__init__(lines)
        self.summary, self.legend, self.caption = summary, legend, caption


#: The paragraph under the summary table (``_summary_table``).
SUMMARY_NOTE = (
    "One row per workload and codec, the figures of the findings below: the "
    "scheduler → runner payload bytes per step that cached saves, and their share "
    f"{OF_SEND_PAYLOAD}; output tokens/s as cached/send, a % change with its interval "
    "and verdict (defined under the findings); send - cached as a share of cached's "
    "step, of the SchedulerOutput path (build + encode + decode) and of the whole step, "
    "with their intervals, unadjusted; last, the net share: send - cached of that path plus "
    "the runner's token-id bookkeeping (update_states, which writes the ids received under "
    "send, + write_back, which writes the ids sampled under cached), the policy's net work "
    "on the step's critical path, with its interval by the same method. A tok/s verdict "
    "that finds no significant difference says where its interval spans a factor either "
    "way of its centre over the change the net share (else the path's) implies (a positive "
    "share: cached faster; a negative one: cached slower): the run cannot tell a change of "
    "that size from none in tokens/s, so the verdict is no evidence of no change. The "
    "bullets give the tok/s "
    "change its verdict (its column), and the whole step's share one where its interval excludes 0 but the run's "
    "Holm-adjusted comparison of the step finds no significant difference; the "
    "SchedulerOutput path is not a metric of that comparison, so its share has no "
    "tested verdict, only its interval's reading (within noise, or inconclusive, where "
    "it holds 0); nor has the net share. —: the run has no such figure (the single process "
    "sends no "
    "bytes, nor arms that ran different schedules a saving; no tokens/s change where "
    "timings are withheld or in a timed replay; no share where the findings give no "
    "share line: the single process's shares are drawn in the send-cost figure "
    "only; no net share in a step-time run, and an unavailable one where the run "
    "records neither its summary figure nor the runner's columns in steps.csv).")


def findings_blocks(items: list[str]) -> list[tuple]:
    """The Findings section's blocks (``render.Block``) of ``items``, the list
    ``findings`` returns: the summary table, its caption (``Findings.caption``) where
    the list carries one and its note (``SUMMARY_NOTE``) where the list carries a table
    (``Findings.summary``), the sentences, then the legend (``Findings.legend``) where
    it carries one. Raises nothing."""
    summary, legend = getattr(items, "summary", None), getattr(items, "legend", "")
    caption = getattr(items, "caption", "")
    out: list[tuple] = []
    if summary:
        out += [("table", summary[0], summary[1])] + ([("p", caption)] if caption else [])
        out.append(("p", SUMMARY_NOTE))
    out.append(("ul", list(items)))
    if legend:
        out.append(("p", legend))
    return out


#: The summary table's header (``_summary_table``).
SUMMARY_HEADER = ["workload", "codec", "s2r B/step saved by cached (% of send's payload)",
                  f"output tok/s change, cached/send [{CONFIDENCE * 100:.0f} %]",
                  "tok/s verdict",
                  f"send - cached, SchedulerOutput path (% of cached's step) "
                  f"[{CONFIDENCE * 100:.0f} %]",
                  f"send - cached, whole step (% of cached's step) [{CONFIDENCE * 100:.0f} %]",
                  f"send - cached, net share: path + runner update_states + write_back "
                  f"(% of cached's step) [{CONFIDENCE * 100:.0f} %]"]
#: The net share's cell of a row whose path has a share but whose cases do not record
#: the net figure (``send_cost.NET_MEDIAN``: a summary.json written before it).
NET_UNAVAILABLE = ("— (unavailable: neither summary.json's s2r_net_ns_median nor steps.csv's "
                   "runner_update_ns and runner_writeback_ns)")
#: ``steps.csv``'s columns whose per-step sum's median over a case's counted rows is
#: the net figure (``send_cost.NET_MEDIAN``; ``analysis.summary`` records it).
NET_STEP_COLUMNS = ("build_ns", "encode_ns", "runner_decode_ns", "runner_update_ns",
                    "runner_writeback_ns")


def with_net_figure(cases, steps):
    """``cases`` with the net figure (``send_cost.NET_MEDIAN``) of each case that has
    a SchedulerOutput path but not that figure (a summary.json written before it)
    taken from ``steps`` (its rows of ``steps.csv``): the median over its counted rows
    of the sum of ``NET_STEP_COLUMNS``, as ``analysis.summary`` computes it; NaN where
    ``steps`` lacks a column or the case's rows (a published folder holds no
    ``steps.csv``), or a counted row lacks a value. A case has a path where it records
    the path's median (``send_cost.S2R_MEDIAN``) or, in a summary.json older than
    that median too, the means of its parts (``plots.S2R_COST_COLUMNS``), the path's
    share then being of those means. ``cases`` itself where no case needs it. Raises
    nothing."""
    from ipc_bench.analysis.send_cost import NET_MEDIAN, S2R_MEDIAN
    from ipc_bench.report.plots import S2R_COST_COLUMNS

    nan = pd.Series(math.nan, index=cases.index)
    path = (cases[S2R_MEDIAN] if S2R_MEDIAN in cases.columns else nan).notna()
    if all(c in cases.columns for c in S2R_COST_COLUMNS):
        path |= cases[list(S2R_COST_COLUMNS)].notna().all(axis=1)
    have = cases[NET_MEDIAN] if NET_MEDIAN in cases.columns else nan
    need = have.isna() & path
    keys = ["run_id", "case_id"]
    if not need.any() or steps is None or not all(
            c in steps.columns for c in (*NET_STEP_COLUMNS, "counted", *keys)):
        return cases
    counted = steps[steps["counted"] == True]  # noqa: E712 (a column, not a bool)
    total = counted[list(NET_STEP_COLUMNS)].sum(axis=1, min_count=len(NET_STEP_COLUMNS))
    medians = total.groupby([counted[k] for k in keys], observed=True).agg(
        lambda x: math.nan if x.isna().any() else float(x.median()))
    filled = [float(medians.get((r, k), math.nan)) if n else h for r, k, n, h in
              zip(cases["run_id"], cases["case_id"], need, have)]
    return cases.assign(**{NET_MEDIAN: filled})


#: A summary table cell of a figure the run does not have.
ABSENT = "—"
#: A summary table cell of a share a step-time run's line withholds
#: (``send_cost.WITHHELD``: its fixed step ran off nominal, or send's whole step ran
#: longer than its SchedulerOutput path explains), the line saying why.
WITHHELD_CELL = "-* (withheld: its line below says why)"
#: Marks a summary table's whole-step share whose interval excludes 0 while the
#: findings' line says the difference is not established (``_unestablished``), so that
#: the table alone does not read as an established cost; ``UNESTABLISHED_NOTE`` under
#: the table says so.
UNESTABLISHED_MARK = " §"
#: The line under the summary table on its ``UNESTABLISHED_MARK`` cells.
UNESTABLISHED_NOTE = (
    f"`{UNESTABLISHED_MARK.strip()}`: the whole step's share's interval, unadjusted, "
    "excludes 0, but the difference is not established: the run's comparison of the "
    "same steps is not significant after Holm, or its ratio interval holds 1 (the "
    "finding's line below says which).")


def _unestablished(shared, recorded: dict | None, workload: Any, codec: Any) -> bool:
    """Whether the whole step's share of ``shared`` (``send_cost.StepShares``; ``None``:
    False) has an interval that excludes 0 while its findings' line says the difference
    is not established (``_share_line``): the run's recorded comparison of the step is
    not significant after Holm (``_step_verdict``), or the comparison block's ratio of
    the same steps holds 1 (``send_cost.block_clause``)."""
    from ipc_bench.analysis.send_cost import bounds, holds_zero, reading

    whole = None if shared is None else bounds(shared.whole)
    if whole is None or holds_zero(whole):
        return False
    if _step_verdict(recorded, workload, codec, f"step_ns_{shared.step}"):
        return True
    ratio = shared.block_ratio
    return ratio is not None and None not in ratio and \
        reading((ratio[1], ratio[2]), 1.0) != "differs"


def _summary_table(cases, tables, withheld: frozenset, recorded: dict,
                   shares: dict[tuple, Any], timed: bool, step_time: bool = False,
                   added: dict | None = None) -> tuple | None:
    """``(SUMMARY_HEADER, rows)``: one row per send/cached pair of ``tables``
    (``_pair_tables``; keys as the pair findings', in their order), each cell the
    figure its finding states, computed once: the bytes cached saves and their share of
    send's (``_saving_clauses``; none for the single process or arms of different
    schedules, whose totals are no saving), the tokens/s change with its interval and
    short verdict (``_pair_finding``, ``_verdict_clause``; none where timings are
    withheld or in a timed replay; a significant one whose change the mean steps make,
    ``_mean_median_note``'s ``SLOW_STEPS``, ends ``SLOW_STEPS_CELL``; one not rough
    nor so, over cases whose step times are noisy, ends ``_noisy_caveat``'s words, of
    the warnings with those the report ``added``: one qualifier a cell), and send's
    shares of cached's step (``shares``: ``_share_findings``' ``send_cost.StepShares``,
    or with ``step_time`` ``_step_time_findings``', a share its line withholds
    ``WITHHELD_CELL``), the whole step's marked
    ``UNESTABLISHED_MARK`` where its interval excludes 0 but its line says the
    difference is not established (``_unestablished``; a step-time line reads no
    recorded comparison of the step, only the block ratio); last, the net share
    (``_net_cell``). A verdict that does not call the change significant gets
    ``_resolution``'s words where its interval is wider than the change the row's net
    (else path) share implies. ``ABSENT`` where there is no figure; ``None`` without
    pairs."""
    rows = []
    for key, t in tables["tput"].items():
        workload, codec, model = key[0], key[1], key[3]
        name = ("single process" if codec == SINGLE_PROCESS else codec) + (
            f", {model} model" if model and model != "null" else "") + mark_of(cases, key)
        b = tables["s2r"].get(key)
        saved = ABSENT
        if b and codec != SINGLE_PROCESS and b[SEND] \
                and not schedules_differ(pair_records(cases, key)):
            saved = f"{b['diff']:,.0f} ({100 * b['diff'] / b[SEND]:.1f} %)"
        change = verdict = ABSENT
        interval = ""
        if not timed and key[:3] not in withheld:
            interval = _interval(t) if t["n"] > 1 else ""
            change = _pct(t["ratio"]) + (interval or f" ({_no_interval(t)})")
        shared = shares.get((workload, codec))
        if interval:
            m = ((recorded or {}).get(key) or {}).get("output_tokens_per_s")
            pairs = pair_records(cases, key)
            label = _verdict_label(_verdict_clause(t, m))
            verdict = _rough_caveat(label, pairs, cell=True)
            if SIGNIFICANT.search(verdict) and \
                    SLOW_STEPS in _mean_median_note(cases, key, t, shared):
                verdict += SLOW_STEPS_CELL
            elif verdict == label:
                verdict = _noisy_caveat(verdict, pairs, cell=True, added=added)
        held = shared.withheld if shared else ()
        path, whole = (WITHHELD_CELL if name in held else _share_cell(x, t["n"])
                       for name, x in zip(("s2r", "whole"), (shared.s2r, shared.whole)
                                          if shared else (None, None)))
        if _unestablished(shared, None if step_time else recorded, workload, codec):
            whole += UNESTABLISHED_MARK
        if verdict != ABSENT and not SIGNIFICANT.search(verdict):
            verdict += _resolution(t, shared, cell=True)
        rows.append([workload, name, saved, change, verdict, path, whole,
                     _net_cell(shared, path, t["n"], step_time)])
    return (SUMMARY_HEADER, rows) if rows else None


def _net_cell(shared, path: str, of: int, step_time: bool) -> str:
    """The summary table's net share cell (``send_cost.StepShares.net``, ``_share_cell``
    of it): ``path``'s own cell where the path's share is withheld or absent,
    ``ABSENT`` in a step-time run (its lines give no net share), ``NET_UNAVAILABLE``
    where the path has a share but the cases do not record the net figure."""
    if shared is None or step_time or path == ABSENT or path == WITHHELD_CELL:
        return ABSENT if shared is None or step_time else path
    return NET_UNAVAILABLE if shared.net is None else _share_cell(shared.net, of)


def _effect_text(pct: float) -> str:
    """``0.42``, ``0.007``, ``0.00004``: a share's size in % (>= 0) to 2 decimals, to
    its first significant digit below 0.005 % (2 decimals would round it onto 0)."""
    if pct >= 0.005 or pct == 0 or not math.isfinite(pct):
        return f"{pct:.2f}"
    return f"{pct:.{-math.floor(math.log10(pct))}f}"


def _factor_apart(factor: float, effect: float) -> tuple[str, str]:
    """``factor`` (the interval's e^h, over 1 + ``abs(effect)`` / 100) and ``effect``
    (a signed change in %) as the tok/s note prints them (``_resolution``): ``factor``
    to 2 decimals, with thousands separators, ``effect``'s size as ``_effect_text``
    gives it (no sign: the note names the direction); where the printed factor would
    not be over 1 + the printed size / 100 (``1.05`` beside ``5.02 %``, ``1.00``
    beside ``0.004 %``), the factor to more decimals, the fewest from 3 that are, and
    the size to 2 fewer where that is more than it has (``1.0504`` beside ``5.02 %``,
    ``1.00005`` beside ``0.004 %``). Raises nothing."""
    size = abs(effect)
    f, e = f"{factor:,.2f}", _effect_text(size)
    places = len(e.partition(".")[2])
    for d in range(3, 20):
        if Decimal(f.replace(",", "")) > 1 + Decimal(e) / 100:
            break
        f = f"{factor:,.{d}f}"
        if d - 2 > places:
            e = f"{size:.{d - 2}f}"
    return f, e


def _resolution(t: dict[str, Any], shared, cell: bool = False) -> str:
    """Where the tok/s change's interval (``t``'s cached/send ratio interval, [low,
    high]) is too wide to see the change the same row's share implies (the net share,
    ``shared.net``, else the SchedulerOutput path's, ``shared.s2r``: cached/send of
    tok/s is about 1 + that share s, send's step being cached's plus it), so that even
    an interval of its width centred on that change would hold no change: on the log
    scale, on which the ratio intervals are made, its half-width h = ln(high / low) / 2
    is over |ln(1 + s)|. Words: ``; the tok/s interval spans a factor of 1.02 either
    way of its centre, more than the 0.42 % change (cached faster) the net share
    implies: this run cannot tell a change of that size from none in tokens/s``
    (``cell``, the summary table's verdict cell), or that sentence on its own (`` The
    tok/s interval ...: ... in tokens/s, so its verdict is no evidence of no
    change.``, the tok/s finding): the factor e^h (the interval runs from its centre,
    the square root of low * high, divided by it to times it), the change's size 100
    |s| % and its direction (s > 0: send's work costs more, ``cached faster``; s < 0:
    ``cached slower``; none named at 0), digits by ``_factor_apart``; '' otherwise,
    without an interval or a share."""
    lo, hi = t.get("ratio_low"), t.get("ratio_high")
    if shared is None or lo is None or hi is None or not (
            math.isfinite(lo) and math.isfinite(hi) and 0 < lo <= hi):
        return ""
    net = shared.net is not None and shared.net.share is not None
    share = shared.net.share if net else shared.s2r.share
    if share is None or not share > -1:
        return ""
    h = math.log(hi / lo) / 2
    if h <= abs(math.log1p(share)):
        return ""
    factor, size = _factor_apart(math.exp(h), 100 * share)
    way = " (cached faster)" if share > 0 else " (cached slower)" if share < 0 else ""
    text = (f"the tok/s interval spans a factor of {factor} either way of its centre, more "
            f"than the {size} % change{way} the {'net' if net else 'SchedulerOutput path'} "
            "share implies: this run cannot tell a change of that size from none in "
            "tokens/s")
    return f"; {text}" if cell else f" {text[0].upper()}{text[1:]}, so its verdict is no " \
        "evidence of no change."


#: Where the summary table's tok/s change (of mean steps) and whole step's share (of
#: median steps) disagree (``_mean_median_note``): the change over this many times the
#: share, or of the other sign, ...
MEAN_MEDIAN_FACTOR = 10
#: ... one of them at least this large (a fraction): below, neither size tells much.
MEAN_MEDIAN_FLOOR = 0.02
#: Where they disagree, the mean steps explain it (a few slow steps) only where send's mean
#: step over cached's (``_mean_step_share``) is within this fraction of the gap between
#: the tok/s change and the share of the change, nearer it than the share by 2 to 1
#: (equal tokens per counted step make the two the same); further off, the arms' output
#: tokens per counted step differ, and no step is blamed.
MEAN_STEP_TOLERANCE = 1 / 3
#: ``_mean_median_note``'s words where the mean steps explain the tok/s change ...
SLOW_STEPS = "a few slow steps move the mean"
#: ... and what the summary table's verdict cell then adds to a verdict that calls the
#: change significant: it is of mean steps, as the note under the table says, so not
#: read as send's cost where the typical (median) step's share is far smaller.
SLOW_STEPS_CELL = " (of mean steps, which a few slow steps move: the note under the table)"


def _summary_caption(cases, tables, withheld: frozenset, shares: dict[tuple, Any],
                     timed: bool) -> str:
    """The line under the summary table: what its figures are of (``_summary_basis``),
    then a ``_mean_median_note`` for each row whose tok/s change and whole step's share
    disagree; '' where the table shows neither figure. Raises nothing."""
    shown = [(key, t) for key, t in tables["tput"].items()
             if not timed and key[:3] not in withheld]
    basis = _summary_basis(cases, [t for _, t in shown], shares)
    notes = [_mean_median_note(cases, key, t, shares.get((key[0], key[1])))
             for key, t in shown]
    notes += [_whole_path_note(where, s) for where, s in shares.items()]
    notes.append(_emulated_context_note(cases, shares))
    return " ".join([basis] + [n for n in notes if n]) if basis else ""


def _emulated_context_note(cases, shares: dict[tuple, Any]) -> str:
    """The mean context per request the emulated model time of the shares' steps was
    computed for (``send_cost.CONTEXT_KEY``), per workload with a share whose cases ran
    the emulated model and record it, as a reader quoting a share needs it: ``Emulated
    steps at a mean context of 171.5 tokens per request (num_running=64), 391.0
    (num_running=256).``; '' where none."""
    from ipc_bench.analysis.send_cost import CONTEXT_KEY, float_or_none

    if CONTEXT_KEY not in cases.columns:
        return ""
    records = frame_records(cases)
    said = []
    for workload in dict.fromkeys(w for w, _ in shares):
        mine = [float_or_none(r.get(CONTEXT_KEY)) for r in records
                if r.get("workload") == workload and r.get("emulated") is True]
        if mine and None not in mine:
            said.append((sum(mine) / len(mine), workload))
    if not said:
        return ""
    first, rest = said[0], said[1:]
    return (f"Emulated steps at a mean context of {first[0]:,.1f} tokens per request "
            f"({first[1]})" + "".join(f", {t:,.1f} ({w})" for t, w in rest) + ".")


def _whole_path_note(where: tuple, shared) -> str:
    """Where a row's whole step's share (``shared.whole``, a ``send_cost.StepShares``'),
    ``MEAN_MEDIAN_FLOOR`` or more, is over ``MEAN_MEDIAN_FACTOR`` times its
    SchedulerOutput path's (``shared.s2r``) and has no interval (one repetition, or
    fewer pairs than ``--ci-method`` needs): ``azure (msgpack): the whole step's share
    (+59.19 %) is over 10 times its SchedulerOutput path's (+3.11 %): ...``, saying the
    rest is not send's work (the two arms run the same batches) but what one repetition
    cannot tell from the machine's noise (``quote the path's share, or run --repeat
    5``), or ``5 repetitions cannot tell from the machine's noise without an interval
    (a percentile-bootstrap interval needs >= 34 pairs): quote the path's share, or run
    --repeat 34 (or --ci-method t)``; '' otherwise. ``where``: (workload, codec)."""
    whole, path = shared.whole.share, shared.s2r.share
    if (whole is None or path is None or shared.whole.low is not None
            or abs(whole) < MEAN_MEDIAN_FLOOR or abs(whole) <= MEAN_MEDIAN_FACTOR * abs(path)):
        return ""
    workload, codec = where
    name = "single process" if codec == SINGLE_PROCESS else codec
    pairs, method = shared.whole.pairs, shared.whole.method
    if pairs > 1:  # its method's interval needs more pairs than the run has
        need = min_pairs(method)
        why = (f"{pairs} repetitions cannot tell from the machine's noise without an "
               f"interval (a {INTERVAL_NAMES[method]} interval needs >= {need} pairs): "
               f"quote the path's share, or run --repeat {need} (or --ci-method t)")
    else:
        why = ("one repetition cannot tell from the machine's noise (no interval): quote "
               "the path's share, or run --repeat 5")
    return (f"{workload} ({name}): the whole step's share ({100 * whole:+.2f} %) is over "
            f"{MEAN_MEDIAN_FACTOR} times its SchedulerOutput path's ({100 * path:+.2f} %): "
            "the two arms run the same batches, so the rest is not send's work but a "
            f"difference between the two cases that {why}.")


def _summary_basis(cases, changes: list[dict], shared: dict[tuple, Any]) -> str:
    """``Bases: tok/s, counted output tokens over the counted steps' summed time (of mean
    steps: a few slow steps move it); shares, send - cached in each case's median step
    and in its SchedulerOutput path's per-step median, over cached's step; over
    repetitions, the mean of the differences over the mean of cached's steps, not the
    mean of the per-repetition shares.`` (``send_cost.mean_share``): what
    the tok/s changes shown (``changes``, ``summarize_pairs`` rows) and the shares
    (``shared``: (workload, codec) -> ``send_cost.StepShares``) are of, each row's step
    where they differ (``in each case's median step (mean step: num_running=4
    (pickle))``); '' where there are neither."""
    from ipc_bench.report.plots import S2R_MEDIAN_COLUMN

    parts = []
    if changes:
        parts.append("tok/s, counted output tokens over the counted steps' summed time "
                     "(of mean steps: a few slow steps move it)")
    if shared:
        step = "median" if any(s.step == "median" for s in shared.values()) else "mean"
        others = [f"{w} ({'single process' if c == SINGLE_PROCESS else c})"
                  for (w, c), s in shared.items() if s.step != step]
        step += " step" + (f" (mean step: {', '.join(others)})" if others else "")
        path = "median" if S2R_MEDIAN_COLUMN in cases.columns else "mean"
        reps = [s.whole.statistic for s in shared.values() if s.pairs > 1]
        parts.append(f"shares, send - cached in each case's {step} and in its "
                     f"SchedulerOutput path's per-step {path}, over cached's step"
                     + (f"; over repetitions, the {reps[0]} of the differences over the "
                        f"{reps[0]} of cached's steps, not the {reps[0]} of the "
                        "per-repetition shares" if reps else ""))
    return f"Bases: {'; '.join(parts)}." if parts else ""


def _mean_median_note(cases, key: tuple, t: dict[str, Any], shared) -> str:
    """Where a summary row's tok/s change (``t``'s cached/send ratio, of mean steps) and
    its whole step's share (``shared.whole``, of median steps) disagree, by
    ``MEAN_MEDIAN_FACTOR`` or in sign (one of them ``MEAN_MEDIAN_FLOOR`` or more), the
    line saying why. Where the mean steps explain the change (``_mean_step_share``
    within ``MEAN_STEP_TOLERANCE`` of the gap between the change and the share, of the
    change):
    ``num_running=4 (pickle): the tok/s change (+76.2 %, of mean steps) and the whole
    step's share (+1.55 %, of median steps) disagree: a few slow steps move the mean (ID's
    mean step is 458.2 µs, its median 262.1 µs); the median's share is the typical
    step's.``, naming the case whose mean step is the most over its median of the arm
    whose skew moves the change that way (send's where the change is above the share,
    cached's where below); otherwise ``...disagree: not by the step times (send's mean
    step +0.77 % over cached's): the arms' output tokens per counted step differ.``;
    ``...disagree: no mean steps to tell why.`` without them. '' where they agree or there is no median
    share."""
    if shared is None or shared.step != "median" or shared.whole.share is None:
        return ""
    change, share = t["ratio"] - 1, shared.whole.share
    if not (math.isfinite(change) and max(abs(change), abs(share)) >= MEAN_MEDIAN_FLOOR
            and (change * share < 0 or abs(change) > MEAN_MEDIAN_FACTOR * abs(share))):
        return ""
    name = key[1] if key[1] != SINGLE_PROCESS else "single process"
    text = (f"{key[0]} ({name}): the tok/s change ({_pct(t['ratio'])}, of mean steps) and "
            f"the whole step's share ({100 * share:+.2f} %, of median steps) disagree: ")
    pairs = pair_records(cases, key)
    means = _mean_step_share(pairs, t.get("method", "t"))
    if means is None:
        return text + "no mean steps to tell why."
    if abs(means - change) > MEAN_STEP_TOLERANCE * abs(change - share):
        return text + (f"not by the step times (send's mean step {100 * means:+.2f} % over "
                       "cached's): the arms' output tokens per counted step differ.")
    arm = 0 if change > share else 1  # send's slow steps raise the change, cached's lower it
    skews = [(float(p[arm]["step_ns_mean"]) / float(p[arm]["step_ns_median"]), p[arm])
             for p in pairs if _positive(p[arm].get("step_ns_mean"))
             and _positive(p[arm].get("step_ns_median"))]
    text += SLOW_STEPS
    if skews:
        _, r = max(skews, key=lambda x: x[0])
        text += (f" ({r['case_id']}'s mean step is {float(r['step_ns_mean']) / 1e3:,.1f} µs, "
                 f"its median {float(r['step_ns_median']) / 1e3:,.1f} µs)")
    return text + "; the median's share is the typical step's."


def _positive(value) -> bool:
    """Whether ``value`` is a number above 0 (not missing)."""
    return not is_missing(value) and float(value) > 0


def _mean_step_share(pairs: list[tuple[dict, dict]], method: str) -> float | None:
    """Send's mean step over cached's, less 1, over the (send, cached) ``pairs``
    (``pair_records``) by the tok/s change's statistic (``method``'s point: the
    geometric mean of the per-pair ratios for ``t``, their median otherwise), so that
    where the arms' output tokens per counted step are the same it is the tok/s change
    itself (tok/s: those tokens over the mean step); ``None`` without a pair that has
    both mean steps."""
    import numpy as np

    ratios = [float(s["step_ns_mean"]) / float(c["step_ns_mean"]) for s, c in pairs
              if _positive(s.get("step_ns_mean")) and _positive(c.get("step_ns_mean"))]
    if not ratios:
        return None
    point = geometric_mean(np.array(ratios)) if method == "t" else np.median(ratios)
    return float(point) - 1


def _verdict_label(clause: str) -> str:
    """The summary table's verdict of a ``_verdict_clause``: its first verdict without
    its p-values (``inconclusive (interval beyond 1.1x either way)``, ``not significant after
    Holm``); ``ABSENT`` for none."""
    import re

    first = clause.removeprefix(", ").split(";")[0]
    return re.sub(r" \(p [^)]*\)$", "", first) or ABSENT


def _share_cell(share, of: int = 0) -> str:
    """``+2.70 % [-2.79, +8.20] %``: a ``send_cost.MeanShare`` of cached's step, send -
    cached, with its interval (``send_cost.share_interval``'s figures) where it has
    one, else why not as the tok/s column says it (``_no_interval``): ``+0.45 % (one
    repetition, no interval)``, ``+0.45 % (3 repetitions, no interval: a sign-test
    interval needs >= 6 pairs)``; ``ABSENT`` for none. Over fewer pairs than ``of``
    (the row's tok/s pairs: a case's floor replay cut short), it says how many, as
    the share line does: ``+2.70 % [-2.79, +8.20] % (over 2 of 3 repetitions)``,
    ``+0.45 % (one of 3 repetitions, no interval)``. An interval end that 2 decimals
    would round onto 0 % while it is not 0, or across or onto the noise band's edge
    (-9.09 %, +10 %), gets more (``stats.interval_end``)."""
    if share is None or share.share is None:
        return ABSENT
    text = f"{point_text(100 * share.share, 2, sign=True)} %"
    if share.low is not None and share.high is not None:
        ends = (interval_end(100 * end, 2, sign=True, band="percent")
                for end in (share.low, share.high))
        fewer = f" (over {share.pairs} of {of} repetitions)" if of > share.pairs else ""
        return text + f" [{', '.join(ends)}] %" + fewer
    return text + f" ({_no_interval({'n': share.pairs, 'method': share.method}, of)})"


def findings_legend(lines: list[str], method: str,
                    recorded: dict[tuple, dict[str, dict[str, Any]]],
                    comparisons: list[dict[str, Any]] = (), pairs: bool = True,
                    counts: list[int] | None = None) -> str:
    """The paragraph under the findings (``lines``) that names their statistics once,
    by ``method`` (the run's ``--ci-method``: ``stats.ratio_phrase``; with ``counts``,
    the pair counts of its pair rows, the interval only where some row has one:
    ``_legend_ratio``), and defines each
    short verdict they use (``VERDICT_WORDS``), the Holm verdicts with the families
    their corrections are over (``_holm_families``: those of ``recorded`` and of the
    run's other ``comparisons``, ``other_comparisons``). ``pairs`` false (a run with no
    cached/send pair, whose findings give no cached/send % change): the verdicts alone,
    ``''`` where the lines use none. Raises nothing."""
    from ipc_bench.analysis.stats import (INCONCLUSIVE_CLAUSE, INCONCLUSIVE_HOLM,
                                          NOT_SIGNIFICANT_HOLM)

    point = "mean" if method == "t" else "median"
    text = [f"Reading the findings: a % change is cached/send, "
            f"{_legend_ratio(method, counts)}, "
            "unadjusted (the pair table's cached/send column); `send - cached` is the "
            f"{point} of the per-repetition differences (its send - cached column): for "
            "times and bytes what send costs, for tokens/s what send gains; tok/s "
            "`a → b`: send's, then cached's." if pairs else "Reading the findings:"]
    said = INCONCLUSIVE_CLAUSE.removeprefix("inconclusive: ")
    words = {SHORT_INCONCLUSIVE: f"no significant difference, but {said}",
             "within noise": "the interval holds no change and stays within "
                             f"{1 + DETECTABLE:g}x either way",
             "after Holm (p ": (
                 "the verdict of the run's comparison (the one `bench.py` printed), by "
                 f"Holm's correction over {_holm_families(recorded, comparisons)}: p "
                 "unadjusted, then "
                 f"Holm-adjusted; `{NOT_SIGNIFICANT_HOLM}` where the unadjusted "
                 "interval shown does not include 0 % but the adjusted test finds no "
                 f"significant difference (`{INCONCLUSIVE_HOLM}` "
                 f"where that interval also reaches beyond {1 + DETECTABLE:g}x either way), "
                 "`no significant difference after Holm` where it includes 0 %")}
    names = {"after Holm (p ": "significant, not significant or no significant "
                               "difference after Holm (p, adjusted)"}
    for marker, meaning in words.items():
        if any(marker in line for line in lines):
            text.append(f"**{names.get(marker, marker)}**: {meaning}.")
    return " ".join(text) if pairs or len(text) > 1 else ""


def _legend_ratio(method: str, counts: list[int] | None) -> str:
    """How the findings' legend names their cached/send ratio, by ``method`` and the
    pair ``counts`` of the run's pair rows (``None``: not known, the interval named):
    ``stats.ratio_phrase`` with its interval where some row has enough pairs for one
    (``stats.min_pairs``), and where others do not, ``; the point alone where the pairs
    are fewer (a sign-test interval needs >= 6 pairs)``; where none has, the point alone
    and why: ``paired by repetition: median of the per-repetition ratios, no interval (a
    percentile-bootstrap interval needs >= 34 pairs)``, or ``..., no interval (one
    repetition)``."""
    need = min_pairs(method)
    if counts is None or all(n >= need for n in counts):
        return ratio_phrase(method)
    why = f"a {INTERVAL_NAMES[method]} interval needs >= {need} pairs"
    if any(n >= need for n in counts):
        return f"{ratio_phrase(method)}; the point alone where the pairs are fewer ({why})"
    if all(n <= 1 for n in counts):
        why = "one repetition"
    return f"{ratio_phrase(method, interval=False)}, no interval ({why})"


def _holm_families(recorded: dict[tuple, dict[str, dict[str, Any]]],
                   comparisons: list[dict[str, Any]] = ()) -> str:
    """The families of the run's recorded cached-against-send comparisons
    (``recorded_metrics``' ``family_size``) and of its other ``comparisons``
    (``other_comparisons``: their ``family``): ``the 7 timed metrics its comparison
    tests together``, or where they differ, ``the timed metrics its comparison tests
    together (7 for msgpack and pickle, 5 for the single process)`` (another
    comparison named by its arms: ``6 for cached+async against cached``)."""
    sizes: dict[int, list[str]] = {}
    for key, ms in (recorded or {}).items():
        size = next((m.get("family_size") for m in ms.values() if m.get("family_size")), 0)
        name = "the single process" if key[1] == SINGLE_PROCESS else str(key[1])
        if size and name not in sizes.setdefault(size, []):
            sizes[size].append(name)
    for c in comparisons:
        name = f"{c.get('treatment')} against {c.get('baseline')}"
        size = len(c.get("family") or [])
        if size and name not in sizes.setdefault(size, []):
            sizes[size].append(name)
    if len(sizes) == 1:
        return f"the {next(iter(sizes))} timed metrics its comparison tests together"
    return "the timed metrics its comparison tests together" + (
        " (" + ", ".join(f"{n} for {_and(names)}" for n, names in sizes.items()) + ")"
        if sizes else "")


def _request_findings(cases, where: Where) -> list[str]:
    """Per workload whose cases rejected requests on arrival, cut them at max_model_len
    or preempted them, the terminal's line (``tables.rejected_note``, ``tables.cut_note``,
    ``tables.preempted_note``)
    and what it means for the findings on that workload, whose figures are of the
    requests served (and as far as they were served) alone; before those findings."""
    from ipc_bench.report.tables import cut_note, preempted_note, rejected_note

    out = []
    records = frame_records(cases)
    for workload in dict.fromkeys(cases["workload"]):
        shown = [r for r in records if r["workload"] == workload]
        rejected, cut = rejected_note(shown), cut_note(shown)
        if rejected:
            out.append(f"{where(workload)}, {rejected}: every finding on it is of the "
                       "requests served" + _alike(rejected))
        if cut:
            out.append(f"{where(workload)}, {cut}: every finding on it counts those "
                       "requests' tokens up to max_model_len only" + _alike(cut))
        preempted = preempted_note(shown)
        if preempted:
            out.append(f"{where(workload)}, {preempted}: its steps and latencies include "
                       "the preempted requests' waits and recomputation"
                       + _alike(preempted))
    return out


def _alike(note: str) -> str:
    """The end of a ``_request_findings`` sentence: whether its cases counted alike
    (a note naming counts per case did not)."""
    return (", which differ between its cases, so its cases' figures do not compare."
            if "(per case: " in note else ", alike in every case.")


def _soak_findings(cases) -> list[str]:
    """A soak case's memory (its headline): the verdict against the growth goal and the
    terminal's memory lines, unpadded (``analysis.soak.memory_finding``); then its byte
    drift, the terminal's drift lines (``analysis.soak.drift_finding``)."""
    from ipc_bench.analysis.soak import drift_finding, memory_finding

    if "scenario" not in cases.columns:
        return []
    out = []
    for r in frame_records(cases[cases["scenario"] == "soak"]):
        out += [line for line in (memory_finding(r), drift_finding(r)) if line]
    return out
