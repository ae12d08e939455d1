"""The blocks of a report (``ipc_bench.report.render`` turns them into Markdown and
HTML): per run, notes on its state, the findings, measurement warnings, the figures,
the cached-against-send table (left out when the run has no such pair but other
comparisons), the run's other paired comparisons (A/A, cached+async against cached,
each under a heading naming its arms), the case tables, the configuration and the
environment; with several runs, first a side-by-side comparison.
"""

from __future__ import annotations

import datetime
import math
import re
import warnings
from typing import Any, Collection, Optional

from ipc_bench.analysis import cores
from ipc_bench.analysis.frames import frame_records, listed
from ipc_bench.analysis.metrics import metric
from ipc_bench.analysis.pace import as_record, is_missing
from ipc_bench.analysis.results import (SINGLE_PROCESS_CODEC, STDOUT_PROBLEM,
                                        complete_problems_line, grouped_warnings, run_state)
from ipc_bench.analysis.run_files import ResultsWarning
from ipc_bench.analysis.run_files import records as case_records
from ipc_bench.analysis.stats import DETECTABLE, INCONCLUSIVE_CLAUSE, inconclusive
from ipc_bench.analysis.summary import NOISY_STEP_BLOCK_CV, SKEWED_STEP_RATIO, STEP_BLOCK
from ipc_bench.engine.config import CACHED, SEND
from ipc_bench.errors import command_shell_line, one_line
from ipc_bench.harness.environment import (FLAG_CASES, LOADED_SHARE, NARROWED_POLICIES,
                                          SYNC_CACHED_CASES, TIMING_ONLY_SETTINGS,
                                          loaded_at_start, nice_note,
                                          remote_ports_text, remote_runners_shape)
from ipc_bench.harness.spec import ASYNC_ARM
from ipc_bench.report.findings import findings
from ipc_bench.report.names import run_slugs
from ipc_bench.report.render import Block, code_span, verbatim

#: Metrics of the cached-against-send table, in order (keys of the metrics registry):
#: every timed metric of the family Holm's adjustment is taken over in ``compare_cases``
#: (``stats.COMPARED_KEYS`` less the exact bytes; the findings quote their tests, the
#: step median's among them) and the scheduler -> runner bytes; ``PAIR_FAMILY_NOTE``
#: says so under the table.
PAIR_TABLE = ("output_tokens_per_s", "sched_to_runner_payload_bytes_per_step",
              "sched_to_runner_wire_bytes_per_step", "build_ns_per_step",
              "encode_ns_per_step", "decode_ns_per_step", "step_ns_mean",
              "step_ns_median", "sched_cpu_ns_per_step")
#: The pair table caption's sentence on the Holm family its timed rows are.
PAIR_FAMILY_NOTE = (" The timed rows (all but the bytes) are the tests the findings' "
                    "verdicts adjust together by Holm's method, per workload and codec; "
                    "the intervals here are unadjusted, and a verdict that names Holm "
                    "gives its test's p and adjusted p.")
#: ``PAIR_TABLE`` rows that sum both directions: the scheduler's SchedulerOutput and the
#: runner's ModelRunnerOutput (the findings' encode, decode and build clauses quote them,
#: ``findings.BOTH_MESSAGES``); ``PAIR_TIMES_NOTE`` says so under the table.
SUMMED_PAIR_ROWS = ("build_ns_per_step", "encode_ns_per_step", "decode_ns_per_step")
#: What the pair table's caption says of ``SUMMED_PAIR_ROWS`` where it shows one.
PAIR_TIMES_NOTE = (" The build, encode and decode µs/step rows sum both directions: the "
                   "scheduler's SchedulerOutput and the runner's ModelRunnerOutput.")
#: ``PAIR_TABLE`` rows of one step's work (bytes and times per step): where a pair's
#: arms ran different schedules they show no difference or ratio (the comparison
#: block's ``stats.SCHEDULE_BOUND_KEYS``, and the wire bytes).
SCHEDULE_BOUND_PAIR_ROWS = tuple(k for k in PAIR_TABLE if k != "output_tokens_per_s")
#: Metrics of the side-by-side tables of a multi-run report, in order.
SIDE_BY_SIDE = ("output_tokens_per_s", "sched_to_runner_payload_bytes_per_step",
                "step_ns_mean")

def _listed(names, code: bool = True) -> str:
    """```a```, ```a` and `b```, ```a`, `b` and `c``` (each once; without ``code``, no
    backticks: ``a, b and c``)."""
    names = [f"`{n}`" if code else str(n) for n in dict.fromkeys(names)]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _lost_arms(arms: list[str], missing, said=()) -> list[str]:
    """The arms of ``missing`` (``plots.missing_steps``) whose counted steps
    ``steps.csv`` holds none of, which a figure of ``arms`` does not draw, less those in
    ``said`` (already named as left out)."""
    return [a for a, (held, _) in (missing or {}).items()
            if not held and a not in arms and a not in said]


def _missing_steps_sentences(arms: list[str], missing, against: bool = True,
                             said=(), what: str = "counted steps",
                             name: str = "steps.csv") -> str:
    """What a figure of counted steps lacks because ``steps.csv`` does not hold them
    (``missing``: ``plots.missing_steps``, arm -> (held, recorded)): the arms it does not
    draw (``_lost_arms``), said to be missing from ``steps.csv`` (``plots.csv_short``),
    never to have not run, with ``against`` and a single arm drawn that no other line is
    set against it; then, per arm drawn (``arms``) from part of its counted steps, how
    many ``steps.csv`` holds. ``what`` and ``name`` say it of other rows and another
    file (``ITL rows``, ``itl.csv``: ``plots.missing_itl``). ``""`` where ``missing`` is
    empty."""
    from ipc_bench.report.plots import csv_short

    missing = missing or {}
    lost = _lost_arms(arms, missing, said)
    out = []
    if lost:
        out.append(f" The {what} of {_listed(lost)} are missing from {csv_short(name)}"
                   + (f", so no other line is set against `{arms[0]}`."
                      if against and len(arms) == 1 else "."))
    for arm in (a for a in arms if a in missing):
        held, recorded = missing[arm]
        out.append(f" Of `{arm}`'s {recorded:,} {what}, {name} holds only "
                   f"{held:,}" + ("." if out else " (it is short: see the loading note "
                                                "above)."))
    return "".join(out)


def _arm_sentences(arms: list[str], unfinished=(), missing=None) -> str:
    """What the arms of a figure are, beyond send and cached: each A/A copy (``send'``:
    the same policy run a second time) and each async arm (``cached+async``); a single
    arm says it has nothing to be set against, or, when another arm's cases ran but did
    not finish (``unfinished``: the (arm, codec) the figure left out, ``plots.drawn``),
    that they are left out, or, when ``steps.csv`` lacks another arm's counted steps
    (``missing``: ``plots.missing_steps``), that they are missing from it
    (``_missing_steps_sentences``)."""
    out = []
    gone = [a for a in dict.fromkeys(a for a, _ in unfinished) if a not in arms]
    if gone:
        out.append(f" {_listed(gone)} did not finish: "
                   + ("it ran but is" if len(gone) == 1 else "they ran but are")
                   + " left out" + (f", so no other line is set against `{arms[0]}`."
                                    if len(arms) == 1 else "."))
    out.append(_missing_steps_sentences(arms, missing, against=not gone, said=gone))
    for arm in arms:
        base = arm.rstrip("'")
        if arm != base and base in arms:
            out.append(f" `{arm}` is `{base}` run a second time (A/A: one policy against "
                       "a copy of itself).")
        elif arm.endswith("+async") and arm[:-len("+async")] in arms:
            out.append(f" `{arm}` is `{arm[:-len('+async')]}` with async scheduling.")
    if len(arms) == 1 and not gone and not _lost_arms(arms, missing):
        out.append(f" Only `{arms[0]}` ran, so no other line is set against it.")
    return "".join(out)


def _pp_bytes_caption(d: dict, arms: list[str], codecs: list[str]) -> str:
    """The caption of a bytes figure drawn against the pipeline stages N (``d``:
    ``plots._pp_bytes``'s record)."""
    counts = d.get("num_running") or []
    per = (f" and per running count B ({', '.join(str(b) for b in counts)}; each its own "
           "marker)" if len(counts) > 1 else "")
    at = f" at {counts[0]} running requests" if len(counts) == 1 else ""
    return ("Payload bytes per step in each direction against the number of pipeline "
            f"stages N ({', '.join(str(n) for n in d.get('pp') or [])}){at}: each step "
            "carries one micro-batch of B / N requests, so a step's message shrinks with N "
            "(mean over counted steps, repetitions pooled), one line per arm and codec"
            f"{per}: {_listed(arms)} ({', '.join(codecs)}). The runner → scheduler "
            "message is the same for both arms."
            + (EQUAL_LINES if d.get("r2s_equal") or d.get("s2r_equal") else "")
            + _arm_sentences(arms, d.get("unfinished") or (), d.get("steps_missing")))


#: The bytes figures' caption where an arm's bytes equal send's in a panel (``plots.
#: _equal_note``): a pipeline-size figure's, an ``--aa`` run's.
EQUAL_LINES = (" Where an arm's bytes equal `send`'s the lines coincide: `send`'s small "
               "filled dots lie inside the other arm's larger hollow markers, and the "
               "panel's note names the codecs and counts.")


def _bytes_caption(d: dict) -> str:
    arms = list(dict.fromkeys(a for a, _ in d["series"]))
    codecs = [c for c in dict.fromkeys(c for _, c in d["series"]) if c != SINGLE_PROCESS_CODEC]
    if d.get("x") == "pp":
        return _pp_bytes_caption(d, arms, codecs)
    text = ("Payload bytes per step in each direction against the number of running "
            f"requests (mean over counted steps, repetitions pooled), one line per arm and "
            f"codec: "
            f"{_listed(arms)} ({', '.join(codecs)}).")
    if SEND in arms and CACHED in arms:
        text += (" `send` ships each request's new token ids to the runner, so its "
                 "scheduler → runner line rises above `cached`'s; the runner → scheduler "
                 "message is the same for both policies.")
        if (d.get("r2s_equal") or {}).get(CACHED):
            text += (" Where their bytes are equal the two lines coincide: `send`'s small "
                     "filled dots lie inside `cached`'s larger hollow squares, and the "
                     "runner → scheduler panel's note names the codecs and counts.")
    elif d.get("r2s_equal") or d.get("s2r_equal"):  # an --aa run: send' = send
        text += EQUAL_LINES
    if SEND in arms and CACHED in arms:
        differ = d.get("schedules_differ") or []
        codecs = {c for _, c in d["series"]} - {SINGLE_PROCESS_CODEC}
        if d.get("notes") and len(differ) < len(codecs):
            text += (f" The box gives send - cached at {d['largest']:g} running, as a share "
                     "of send's bytes" + (", for the codecs whose arms ran the same "
                                         "schedules." if differ else "."))
        if differ:
            text += (f" The arms of {_listed(differ, code=False)} ran different schedules (a timed "
                     "replay: other batches), so their lines differ by batch as well as by "
                     "policy and the gap between them is not the policy's saving; the box "
                     "gives send's own new_token_ids instead, per counted step over the "
                     "whole run.")
    return text + _arm_sentences(arms, d.get("unfinished") or (), d.get("steps_missing"))


#: The codec time caption's words on its markers where `send` is drawn beside another arm
#: (``plots.bytes_marker``).
CODEC_TIME_MARKERS = (" `send`'s markers are small and filled, drawn over the other arms' "
                      "larger hollow ones, so where an arm's time equals `send`'s both "
                      "show.")


def _codec_time_caption(d: dict) -> str:
    """``plots.codec_time_per_step``'s caption: what it draws, per codec and arm, and,
    where `send` is drawn beside another arm, its filled markers over their hollow ones
    (``CODEC_TIME_MARKERS``)."""
    arms = list(dict.fromkeys(a for a, _ in d["series"]))
    against = (", against the number of pipeline stages N (each step carries one "
               "micro-batch of B / N requests)" if d.get("x") == "pp" else "")
    return ("Serializer time per step (mean over counted steps, repetitions pooled), both "
            "directions summed (the scheduler's "
            f"SchedulerOutput and the runner's ModelRunnerOutput){against}, one panel per codec "
            f"({', '.join(d['panels'])}), one line per arm: {_listed(arms)}."
            + (CODEC_TIME_MARKERS if SEND in arms and len(arms) > 1 else "")
            + _arm_sentences(arms, d.get("unfinished") or (), d.get("steps_missing")))


def ratio_panel_phrase(d: dict) -> str:
    """How the throughput figure's caption names its cached/send ratios (``d``: what the
    figure drew): with ``ratio_interval`` (some ratio has an interval; older records
    without it: ``repeated``) the ratio and its interval kind (``stats.ratio_phrase``),
    else the point alone and why: one pair each, or pairs too few for the method's
    interval (``stats.min_pairs``: ``paired by repetition: median of the per-repetition
    ratios; too few pairs for a percentile-bootstrap interval (>= 34), so no
    interval``)."""
    from ipc_bench.analysis.stats import INTERVAL_NAMES, min_pairs, ratio_phrase

    method = d.get("method", "t")
    interval = bool(d.get("ratio_interval", d.get("repeated")))
    phrase = ratio_phrase(method, interval=interval)
    if interval:
        return phrase
    if not d.get("repeated"):
        return phrase + "; one pair each, so no interval"
    return (phrase + f"; too few pairs for a {INTERVAL_NAMES[method]} interval "
            f"(>= {min_pairs(method)}), so no interval")


#: What a steady case's tokens/s are, and a timed replay's (the throughput figure).
_STEADY_TPUT = "tokens sampled in counted steps over their busy wall time"
_TIMED_TPUT = ("every output token over the wall time from the first arrival to the last "
               "completion, `out tok/s (wall)`")


def _throughput_measure(d: dict) -> str:
    """What the throughput figure's tokens/s are: the steady cases', the timed replays'
    (``d["timed"]``: their groups, of ``d["groups"]``), or each kind's when both are
    drawn."""
    timed = len(d.get("timed") or ())
    if not timed:
        return f" ({_STEADY_TPUT})"
    if timed == d.get("groups", timed):
        return f" (a timed replay: {_TIMED_TPUT})"
    return f" (steady cases: {_STEADY_TPUT}; timed replays: {_TIMED_TPUT})"


def ratio_panel_name(d: dict) -> Optional[str]:
    """The throughput figure's ratio panel as it recorded it (``d["panels"]``' second:
    ``cached/send``, or ``cached+async/cached`` in an ``--async-scheduling`` run,
    ``plots.throughput_ratio_rows``); ``None`` where it drew none."""
    panels = list(d.get("panels") or ())
    return panels[1] if len(panels) > 1 else None


def _ratio_words(d: dict) -> tuple[str, str]:
    """How the caption names the ratio (``ratio_panel_name``: cached/send, or
    cached+async/cached) and how to read it: a speed verdict,
    for a load-bound timed replay of its wall tok/s under that load; an arrival-bound
    timed replay (``d["ratio_withheld"]``: its groups) has no ratio drawn, as the tables
    give none (``ratio_withheld_sentence``)."""
    name = ratio_panel_name(d) or f"{CACHED}/{SEND}"
    arm = name.rsplit("/", 1)[0]
    withheld = list(d.get("ratio_withheld") or ())
    load = len(d.get("load_bound") or ())
    drawn = d.get("groups", 0) - len(withheld)
    if not load:
        return name, f" (above 1: {arm} faster)." + ratio_withheld_sentence(d)
    if load >= drawn:
        return (f"{name} of the wall tok/s",
                " (load-bound: the engine, not the trace, set the pace, so above 1: "
                f"{arm} faster under that load)." + ratio_withheld_sentence(d))
    return (name, f" (above 1: {arm} faster; for the load-bound timed replays a "
            "ratio of wall tok/s, under that load)." + ratio_withheld_sentence(d))


def _group_name(group: str) -> str:
    """A throughput figure group's name (``plots._row_group``: a run's id and its
    workload on two lines where several runs are drawn) on one line, for a caption."""
    return group.replace("\n", " ")


def ratio_withheld_sentence(d: dict) -> str:
    """The throughput caption's sentence on the arrival-bound timed replays
    (``d["ratio_withheld"]``) that get no cached/send point: their wall tok/s follow
    the trace, so their ratio would be no speed verdict, and the tables withhold it
    too (``stats.arrival_bound``). ``""`` where there is none."""
    withheld = list(d.get("ratio_withheld") or ())
    if not withheld:
        return ""
    names = _listed(map(_group_name, withheld))
    one = len(withheld) == 1
    return (f" No cached/send for {names}: {'it is' if one else 'they are'} arrival-bound, "
            f"so {'its' if one else 'their'} wall tok/s follow the trace, and the tables "
            "give no ratio either.")


def _error_bar_words(d: dict) -> str:
    """What the throughput figure's points are and which have error bars (``d``: what it
    drew): with repetitions, each point the geometric mean over a case's repetitions
    (``stats.geomean_interval``; where a cached/send panel is drawn, said to be the pair
    table's arms, whose quotient is its ratio), with 95 % Student-t bars of the log
    tokens/s on all points (``error bars are 95 % Student-t intervals of the log
    tokens/s.``) or some (``partly_repeated``: ``error bars, where a case repeated,
    are 95 % Student-t intervals of the log tokens/s; run r1 has one repetition per
    case, so no error bars.``,
    naming each run of one repetition, ``single_runs``); none (``one repetition per
    case, so no error bars.``)."""
    if not d.get("repeated"):
        return "one repetition per case, so no error bars."
    text = "each point is the geometric mean over a case's repetitions"
    name = ratio_panel_name(d)
    if name == f"{CACHED}/{SEND}":
        text += (" (the pair table's and the comparison block's arms, whose quotient is "
                 "the cached/send panel's ratio)")
    elif name:
        text += (f" (the comparison's arms, whose quotient is the {name} panel's "
                 "ratio)")
    bars = "95 % Student-t intervals of the log tokens/s"
    if not d.get("partly_repeated"):
        return text + f"; error bars are {bars}."
    runs = list(d.get("single_runs") or ())
    text += f"; error bars, where a case repeated, are {bars}"
    if runs:
        text += (f"; run{'s' if len(runs) > 1 else ''} {_listed(runs)} "
                 f"{'have' if len(runs) > 1 else 'has'} one repetition per case, so no "
                 "error bars")
    else:
        text += "; a point of one repetition has none"
    return text + "."


def _throughput_caption(d: dict) -> str:
    from ipc_bench.report.plots import RATIO_LOG_SPAN

    arms = list(dict.fromkeys(a for a, _ in d["series"]))
    which = "the cases whose timings are published" if d.get("withheld") else "every case"
    text = (f"Output tokens/s of {which}" + _throughput_measure(d)
            + f", one point per arm and codec: {_listed(arms)}; "
            + _error_bar_words(d)
            + (" The title says which cases are not drawn, and why." if d.get("withheld")
               else ""))
    if ratio_panel_name(d) is None:
        text += ratio_withheld_sentence(d)
    else:
        ratio, verdict = _ratio_words(d)
        text += (f" {'Below' if d.get('stacked') else 'Right'}: {ratio}, "
                 + ratio_panel_phrase(d) + verdict
                 + (" Its axis is on a log scale, as what it holds spans more than a "
                    f"factor of {RATIO_LOG_SPAN:g}." if d.get("ratio_log") else ""))
        text += _cut_sentence(d.get("ratio_cut") or 0, "The ratio axis holds every ratio",
                              "far beyond them")
        text += ratio_also_sentence(d)
    text += _cut_sentence(d.get("cut") or 0, "The tokens/s axis is bounded to its points",
                          "beyond it" + (" (a lower end at or below 0 cannot be placed on "
                                         "the log axis)" if d.get("log") else ""))
    if d.get("timed"):
        text += _timed_note_sentence(d)
    return text + _arm_sentences(arms, d.get("unfinished") or (), d.get("steps_missing"))


def ratio_also_sentence(d: dict) -> str:
    """The throughput caption's sentence on the other ratio that some of several runs
    pair and the ratio panel does not draw (``d["ratio_also"]``,
    ``plots.other_ratio_runs``): ``Not drawn: cached+async/cached, which run `b` pairs;
    its findings give it.`` ``""`` where there is none."""
    also = d.get("ratio_also")
    if not also:
        return ""
    name, runs = also
    one = len(runs) == 1
    return (f" Not drawn: {name}, which run{'' if one else 's'} {_listed(runs)} "
            f"pair{'s' if one else ''}; {'its' if one else 'their'} findings give it.")


def _timed_note_sentence(d: dict) -> str:
    """The throughput caption's sentence on the red notes beside the timed replays'
    points: arrival-bound ones follow the trace; a load-bound one (``d["load_bound"]``,
    ``pace.replay_pace``: its requests arrived faster than the engine served them)
    measures the engine under that backlog."""
    load = list(d.get("load_bound") or ())
    if not load:
        return (" The red note marks each timed replay's points: arrival-bound, so its "
                "tokens/s follow the trace, not the policy.")
    text = " The red note marks each timed replay's points"
    if len(load) < len(d.get("timed") or ()):
        text += ("; an arrival-bound one's tokens/s follow the trace, not the policy, "
                 f"while {_listed(map(_group_name, load))}")
    else:
        text += f": {_listed(map(_group_name, load))}"
    return (text + f" {'is' if len(load) == 1 else 'are'} load-bound: "
            f"{LOAD_BOUND_WORDS}.")


#: What a load-bound timed replay's wall tok/s are (``pace.replay_pace``).
LOAD_BOUND_WORDS = ("the engine, not the trace, set the pace (requests arrived faster "
                    "than it served them and queued, or every request arrived at the "
                    "start), so its tokens/s (wall) are the engine's under that load; "
                    "where it drained a burst, its wall time ends with the tails of its "
                    "longest requests, few running, so they are no saturated engine's "
                    "throughput (the latency table's note says which)")


def _cut_sentence(n: int, axis: str, where: str) -> str:
    """A caption's sentence on the ``n`` interval ends its axis cut (none: ""):
    "`axis`; 2 interval ends lie `where` and are cut at the edge, where an open arrow
    on the bar points the way the interval goes on."."""
    if not n:
        return ""
    return (f" {axis}; {n} interval end{'s' if n > 1 else ''} "
            f"{'lie' if n > 1 else 'lies'} {where} and {'are' if n > 1 else 'is'} cut at "
            "the edge, where an open arrow on the bar points the way the interval goes on.")


def _dodge_sentence(dodge: dict) -> str:
    """What ``send_cost_share`` offset sideways (``dodge``: ``drawn``'s ``dodge``, from
    ``plots._dodge_bars``), in words for its caption; ``""`` where nothing moved."""
    text = ""
    if any(o != (1.0 if dodge.get("running_log") else 0.0) for o in dodge.get("running", ())):
        text += (" In the right panel the series are drawn a little apart at each running "
                 "count, for legibility: each stands for the count at its nearest tick.")
    if any(o != 1.0 for o in dodge.get("step", ())):
        text += (" In the left panel each codec's whole-step point is drawn a little left "
                 "of its SchedulerOutput point, the two sharing cached's step.")
    return text


def _send_cost_caption(d: dict) -> str:
    """``send_cost_share``'s caption from what it drew (``plots.drawn``): the share in
    the title's words (``send_cost.share_formula`` of the run's ``method`` and cached's
    ``step``, and the title's ``bars``)."""
    from ipc_bench.analysis.send_cost import share_formula
    from ipc_bench.analysis.stats import INTERVAL_NAMES

    step, method = d.get("step", "median"), d.get("method", "t")
    bars = d.get("bars") or f"bars: 95 % {INTERVAL_NAMES[method]} interval"
    if bars.startswith("bars:"):  # of the share: cached's step is noisy too
        bars += ", which carries the noise of cached's step as well as the difference's"
    text = (f"What `send` costs as a share of the step, against the step time (cached's "
            f"{step} step, its mean over repetitions) and the running requests: the "
            f"findings' share, {share_formula(method, step)}, each difference send's "
            f"figure less cached's in the same repetition ({bars}); filled markers on "
            f"thick lines: the whole {step} step")
    if d.get("s2r"):
        text += (", hollow markers on thin lines: the SchedulerOutput's build + encode + "
                 "decode alone ("
                 + ("per-step medians" if d.get("s2r_median") else "means per step") + ")")
        if any(c == SINGLE_PROCESS_CODEC for _, c in d.get("series") or ()):
            text += " (the single process's: its build alone, as it has no encode or decode)"
    codecs = [c for _, c in d.get("series") or ()]
    if len(codecs) > 1:
        from ipc_bench.report.plots import CODEC_LOOKS

        text += ("; each codec keeps its line style and marker, as in the other figures ("
                 + ", ".join(f"{'single process' if c == SINGLE_PROCESS_CODEC else c} "
                             f"{CODEC_LOOKS.get(c, 'its own')}" for c in codecs) + ")")
    text += ". The grey dotted line marks 1 %." + _dodge_sentence(d.get("dodge") or {})
    text += _cut_sentence(d.get("cut") or 0, "The y axis is bounded to the points",
                          "beyond it")
    models = d.get("models") or []
    if "fixed-step" in models:
        text += " The fixed-step cases spread the step-time axis."
    if "null" in models:
        text += (" The null model's steps are the bare control plane's, the worst case for "
                 "send's share.")
    n = d.get("left_out") or 0
    if n:
        text += (f" {n} share{'s are' if n > 1 else ' is'} not drawn, as the step-time "
                 f"table and the findings withhold {'them' if n > 1 else 'it'} (`-*`): a "
                 "pair whose fixed step ran off nominal (the runner's wait, or cached's "
                 "whole step, more than 10 % over) did not have the step its label names, "
                 "so neither share is drawn; a pair whose send's whole step ran longer than "
                 "its SchedulerOutput path explains loses its whole-step share only. The "
                 "findings give the warnings.")
    return text


def _tp_saving_caption(d: dict) -> str:
    """``plots.tp_saving_figure``'s caption: its panels, what a line is (a transport and
    codec, and a workload where ``d["workloads"]`` names several running-request
    counts), and the lines it drew as one because they are equal (``d["merged_labels"]``:
    per panel title, each such line's legend label, naming its codec, K and workload as
    the legend does; ``d["merged"]``'s transports where a record lacks the labels)."""
    text = ("Send minus cached per step against the number of runner ranks N (scenario "
            "tp-broadcast), mean over repetitions: the bytes the scheduler writes once "
            "(the ring's chunk, or the frame handed once to ZeroMQ's XPUB, which then "
            "copies it to N connections), the bytes that reach the N ranks all together "
            "(tp_s2r_wire_bytes_all_ranks_per_step: the ring's chunk once, read by every "
            "rank; XPUB's frame N times, one per connection), the N ranks' decode times "
            "summed, and the "
            "slowest rank's receive-to-ready time, median over steps: from the later of "
            "the scheduler's send and the rank's asking for the step to the rank having "
            "decoded it (a backlog left out; tp_ready_ns_median).")
    text += _tp_workloads_sentence(d.get("workloads") or [], "one transport and codec")
    merged = d.get("merged_labels") or {
        panel: [" = ".join(t) for t in lines] for panel, lines in (d.get("merged") or {}).items()}
    if merged:
        text += (" Transports whose lines are equal at every N they share (of one workload "
                 "and codec) are drawn as one line in the first one's colour, its label "
                 "naming each (a transport run at fewer Ns with them): "
                 + "; ".join(f"{panel}: " + ", ".join(labels)
                             for panel, labels in merged.items()) + ".")
    return text + _times_withheld(d.get("withheld") or 0)


def _tp_workloads_sentence(workloads: list, line: str) -> str:
    """A ``--tp`` figure caption's sentence on what a line is where the run has several
    running-request counts (``workloads``, as ``plots.drawn`` records them), ``line``
    saying what else it is ("one transport and codec"); ``""`` for ``[]``."""
    if not workloads:
        return ""
    return (f" A line is {line} at one running-request count ("
            + ", ".join(map(str, workloads)) + f"; \"{workloads[0]} running\" in a label): "
            "workloads are drawn apart, never averaged together.")


def _tp_per_step_caption(d: dict) -> str:
    """``plots.tp_per_step_figure``'s caption: its panels, what a line is (a workload
    too where ``d["workloads"]`` names several running-request counts), and the cases
    whose times it does not draw (``d["withheld"]``)."""
    text = ("Per case against the number of runner ranks N (scenario tp-broadcast), mean "
            "over repetitions: the bytes the scheduler writes once per step (log scale; the "
            "ring's chunk head and payload, or the frame handed once to XPUB)")
    workloads = d.get("workloads") or []
    if d.get("replicated"):
        return text + (", and for --codecs replicated the scheduler every rank runs itself "
                       "(schedule + build + update per step): one rank's (dashed) and the "
                       "N ranks' together (solid), what the machine pays."
                       + _tp_workloads_sentence(workloads, "one transport, codec and "
                                                "policy (the replica scheduler's: one "
                                                "transport and policy)")
                       + _times_withheld(d.get("withheld") or 0))
    return (text + ". No case ran `--codecs replicated`, so the right panel is empty."
            + _tp_workloads_sentence(workloads, "one transport, codec and policy"))


def _times_withheld(n: int) -> str:
    """The caption's sentence on the ``n`` cases whose times a ``--tp`` figure does not
    draw (``analysis.cores``: N readers on fewer than N + 2 cores); ``""`` for none."""
    if not n:
        return ""
    return (f" The times of {n} case{'' if n == 1 else 's'} are not drawn: N ranks "
            f"need N + {cores.SPARE_CORES} free cores (the title says how many the run's "
            "machine had); their bytes are.")


def _latency_caption(d: dict) -> str:
    """The caption of ``plots.latency_cdfs``: its panels and the series each draws (the
    ITL panel's named apart where it draws fewer, ``itl_series``): its arms, or, where
    the series are of more than one codec, each arm and codec as the legend names them
    (``_latency_series``); why an arm's ITL rows are absent where ``itl.csv`` is short
    (``itl_missing``: ``plots.missing_itl``, ``_missing_steps_sentences``), values the
    log axis cannot place, and arms left out unfinished."""
    names = {"ttft": "TTFT (from each request's intended arrival, so queueing counts)",
             "itl": "inter-token latency"}
    what = " and ".join(names[p] for p in d["panels"])
    arms = list(dict.fromkeys(a for a, _ in d["series"]))
    itl_series = d.get("itl_series") or d["series"]
    itl_arms = list(dict.fromkeys(a for a, _ in itl_series))
    codecs = {c for _, c in list(d["series"]) + list(itl_series)}
    shown, itl_shown = (_latency_series(x, len(codecs) > 1) for x in (d["series"], itl_series))
    drawn = (_listed(shown) if "itl" not in d["panels"] or itl_shown == shown
             else f"TTFT: {_listed(shown)}; inter-token latency: {_listed(itl_shown)}")
    text = (f"{what[0].upper()}{what[1:]} distribution{'s' if len(d['panels']) > 1 else ''}"
            f" per arm and codec ({drawn}), from a timed replay.")
    if "itl" in d["panels"]:
        text += _missing_steps_sentences(itl_arms, d.get("itl_missing"), against=False,
                                         what="ITL rows", name="itl.csv")
    for panel, n in (d.get("nonpositive") or {}).items():
        text += (f" {n:,} {'TTFT' if panel == 'ttft' else 'inter-token latency'} "
                 f"value{'s' if n > 1 else ''} at or below 0 cannot be placed on the log "
                 "axis: the curve starts at their fraction.")
    if d.get("unfinished"):  # an arm that ran but did not finish is named as left out
        text += _arm_sentences(arms, d["unfinished"])
    return text


def _latency_series(series, by_codec: bool) -> list[str]:
    """The names of a latency panel's ``series`` ((arm, codec) pairs) in its caption:
    each arm once, or, ``by_codec`` (the figure draws more than one codec), each series
    as its legend names it (``plots.series_label``: ``send / msgpack``)."""
    from ipc_bench.report.plots import series_label

    return list(dict.fromkeys(series_label(a, c) if by_codec else a for a, c in series))


#: Captions that need nothing from the figure beyond its name.
FIXED_CAPTIONS = {
    "step_breakdown": (
        "Where a scheduler step's time goes, mean µs per counted step (repetitions "
        "pooled): the stack sums "
        "to the mean step time; transport is the send call plus the wait for the reply "
        "minus the runner's busy time. The hatched bar beside each stack is the "
        "runner's idle time (waiting for work), which overlaps the scheduler's parts."),
}


def _step_breakdown_caption(d: dict) -> str:
    """``plots.step_breakdown``'s caption: the fixed one (``FIXED_CAPTIONS``), then,
    where a bar's transport is negative (``d["overlap"]``: the runner's mean busy time
    beyond the scheduler's mean send + wait), how that bar is drawn and its figures, so
    that the hatched part is recomputable (``cached+async / msgpack: send + wait
    2,383.1 µs, runner busy 2,711.7 µs, 328.6 µs hidden``): for an async-scheduling
    bar the runner's work hidden by the overlap of steps, for a synchronous one, whose
    steps do not overlap, noise of the means (``_excess_sentences``); then the arms
    whose counted steps ``steps.csv`` lacks."""
    text = FIXED_CAPTIONS["step_breakdown"]
    overlap = list(d.get("overlap") or ())
    if overlap:
        text = text.replace("the stack sums to the mean step time",
                            "each stack sums to the mean step time, unless marked in red "
                            "(below)", 1)
        text += (" Where the runner's mean busy time exceeds the scheduler's mean send + "
                 "wait, the mean transport is negative; its band is drawn at 0, so that "
                 "bar's stack sums to the mean step plus the difference: the red line "
                 "marks the mean step and the red-hatched part above it is the "
                 "difference, means over counted steps.")
        text += _excess_sentences(overlap, len(d.get("panels") or ()) > 1)
    if d.get("steps_missing"):
        arms = list(dict.fromkeys(a for a, _ in d.get("series") or ()))
        text += _missing_steps_sentences(arms, d["steps_missing"], against=False)
    return text


def _excess_sentences(overlap: list, panels: bool) -> str:
    """The step breakdown caption's sentences on its bars whose runner busy time exceeds
    send + wait (``overlap``: ``plots.step_breakdown``'s records, ``(policy, codec,
    workload, send + wait µs, runner busy µs, async)``): the async ones' excess is the
    runner's work hidden by the overlap of steps, the synchronous ones' noise of the
    means, each with its bars' figures; a bar names its workload where the figure has
    several panels (``panels``) or the bars are of several workloads."""
    several = panels or len({o[2] for o in overlap}) > 1

    def bars(kind: bool, what: str) -> str:
        return "; ".join(
            f"{policy} / {'1 process' if codec == SINGLE_PROCESS_CODEC else codec}"
            + (f" ({wl})" if several else "") + f": send + wait {sw:,.1f} µs, "
            f"runner busy {busy:,.1f} µs, {busy - sw:,.1f} µs {what}"
            for policy, codec, wl, sw, busy, is_async in overlap if bool(is_async) == kind)
    text = ""
    if any(o[5] for o in overlap):
        text += (" With async scheduling the steps overlap (the runner computes step n "
                 "while the scheduler schedules step n + 1): the difference is the "
                 f"runner's work hidden by the overlap ({bars(True, 'hidden')}).")
    if not all(o[5] for o in overlap):
        text += (" A synchronous step does not overlap (the scheduler waits for the "
                 "runner's reply), so the difference there is noise of the means, not "
                 f"overlap ({bars(False, 'above the mean step')}).")
    return text


_CAPTION_BUILDERS = {
    "step_breakdown": _step_breakdown_caption,
    "bytes_per_step": _bytes_caption, "codec_time_per_step": _codec_time_caption,
    "throughput": _throughput_caption, "send_cost_share": _send_cost_caption,
    "tp_saving": _tp_saving_caption, "tp_per_step": _tp_per_step_caption,
    "latency_cdfs": _latency_caption,
}


def caption(name: str, drawn: dict) -> str:
    """The caption of figure ``name`` (``plots.FIGURES``), built from what its function
    drew (``drawn``: ``plots.drawn``), so that it names only the panels, arms and lines
    the figure has; ``""`` for a figure without a caption. A fixed caption
    (``FIXED_CAPTIONS``) of a figure of counted steps that ``steps.csv`` lacks
    (``drawn``'s ``steps_missing``) ends saying so (``_missing_steps_sentences``)."""
    build = _CAPTION_BUILDERS.get(name)
    if build is not None and drawn.get("series") is not None:
        return build(drawn)
    text = FIXED_CAPTIONS.get(name, "")
    if text and drawn.get("steps_missing"):
        arms = list(dict.fromkeys(a for a, _ in drawn.get("series") or ()))
        text += _missing_steps_sentences(arms, drawn["steps_missing"], against=False)
    return text


def format_value(value: Any, digits: int = 1) -> str:
    """A number for a report table: ``-`` for None or NaN, thousands separators, no
    decimals from 100 up, else ``digits`` decimals; anything else as ``str``."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, float):
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _case_warnings(results) -> list[str]:
    """``case_id: warning`` for every warning recorded in the run's cases, each case's
    followed by those of a trace replay arm whose repetitions vary over 10 %
    (``replay_noise.noisy_arm_warnings_by_run``: each run's own, where several share
    case ids), which the report adds."""
    from ipc_bench.analysis.replay_noise import noisy_arm_warnings_by_run

    cases = results.cases
    added = noisy_arm_warnings_by_run(results)
    if "warnings" not in cases.columns and not added:
        return []
    recorded = cases["warnings"] if "warnings" in cases.columns else [None] * len(cases)
    runs = cases["run_id"] if "run_id" in cases.columns else [None] * len(cases)
    out = []
    for run, case_id, lines in zip(runs, cases["case_id"], recorded):
        out.extend(f"`{case_id}`: {w}" for w in listed(lines))
        out.extend(f"`{case_id}`: {w}" for w in added.get((run, case_id), []))
    return out


#: Under the Measurement warnings of a run that recorded block-CV warnings on trace
#: replay cases (``_replay_spread_recorded``): what they are.
REPLAY_SPREAD_NOTE = (
    "The block-CV lines of the trace replay cases above (50-step mean step times, or "
    "floor step times, over 10 %) measure the trace as well as the machine: a replay's "
    "batches change from step to step by design, and its block means with them. The run "
    "recorded them before replays were left out of that warning; they are not counted "
    "as noise, and the findings give each replay workload's noise measured across its "
    "repetitions.")


#: Under the Measurement warnings of a run with a trace replay arm whose repetitions vary
#: over 10 % (``replay_noise.noisy_arm_warnings``): where its cases' lines come from.
REPLAY_ARM_NOTE = (
    "The lines on a trace replay arm's repetitions (`step_ns_rep_block_cv`, "
    "`floor_step_ns_rep_block_cv`) are the report's, not the run's: each 50-step block's "
    "mean compared across the repetitions of one schedule, over 10 % in that arm; the "
    "repetition that stands out, where one does, is named, and the findings give every "
    "arm's figures.")


#: Above the replay cases whose lines the run's end printed otherwise than the report
#: finds them (``replay_noise.run_end_differences``).
RUN_END_NOTE = (
    "The run's end printed other lines on the repetitions of a trace replay arm than "
    "the report finds for these cases (recorded in summary.json as "
    "`run_end_arm_warnings`): the report's come from steps.csv and floor.csv as loaded "
    "and checked, so one of them changed after the run ended, or the loader's checks "
    "left rows or cases out.")


def _replay_spread_recorded(cases) -> bool:
    """Whether a trace replay case of ``cases`` (``replay_noise.is_replay``) carries a
    block-CV warning (``replay_noise.workload_spread_line``), which runs before they
    were left out recorded."""
    from ipc_bench.analysis.replay_noise import is_replay, workload_spread_line

    if "trace" not in cases.columns or "warnings" not in cases.columns:
        return False
    return any(is_replay({"trace": t}) and any(map(workload_spread_line, listed(w)))
               for t, w in zip(cases["trace"], cases["warnings"]))


def _warning_blocks(results, level: int) -> list[Block]:
    """The "Measurement warnings" section: the cases' recorded warnings
    (``_case_warnings``), then the send / cached pairs whose floors differ by more
    than, or other than, their frames explain (``summary.floor_pair_notes``, which the run printed as
    ``note:`` lines), then the replay cases whose lines the run's end printed otherwise
    (``replay_noise.run_end_differences``, under ``RUN_END_NOTE``); nothing when there
    are none. A noisy replay arm's lines, which the report adds, get
    ``REPLAY_ARM_NOTE`` under them."""
    from ipc_bench.analysis.replay_noise import noisy_arm_warnings, run_end_differences
    from ipc_bench.analysis.summary import floor_pair_notes

    warn = _case_warnings(results)
    pairs = floor_pair_notes(frame_records(results.cases)) if not results.cases.empty \
        else []
    differ = run_end_differences(results)
    if not warn and not pairs and not differ:
        return []
    blocks: list[Block] = [("h", level, "Measurement warnings")]
    if warn:
        blocks.append(("p", "Recorded by the run for these cases (in the style of "
                            "`python -m pyperf check`); their figures are less certain."))
        blocks.append(("ul", warn))
        if _replay_spread_recorded(results.cases):
            blocks.append(("p", REPLAY_SPREAD_NOTE))
        if noisy_arm_warnings(results):
            blocks.append(("p", REPLAY_ARM_NOTE))
    if pairs:
        blocks.append(("p", _floor_notes_intro(results)))
        blocks.append(("ul", pairs))
    if differ:
        blocks.append(("p", RUN_END_NOTE))
        blocks.append(("ul", differ))
    return blocks


def _floor_notes_intro(results) -> str:
    """The line above the floor pairs' notes (``_warning_blocks``): where the run
    printed them, ``Floors of send / cached twins (the run printed these as `note:`
    lines):``; where its stdout failed (``> /dev/full``: a problem that begins with
    ``results.STDOUT_PROBLEM``), that they were lost with it, ``(the run's `note:` lines
    for these were lost with its stdout)``; of several runs, some of whose stdout
    failed, which (``(the runs printed these as `note:` lines, but `r2`, whose stdout
    failed, lost them)``). ``results`` without ``problems``: as printed."""
    problems = getattr(results, "problems", None) or {}
    lost = [run_id for run_id, items in problems.items()
            if isinstance(items, list) and any(str(p).startswith(STDOUT_PROBLEM) for p in items)]
    head = "Floors of send / cached twins"
    if not lost:
        return f"{head} (the run printed these as `note:` lines):"
    if len(lost) == len(problems):
        whose = "the run's `note:` lines for these were lost with its stdout" \
            if len(lost) == 1 else "the runs' `note:` lines for these were lost with their stdout"
        return f"{head} ({whose}):"
    return (f"{head} (the runs printed these as `note:` lines, but "
            f"{', '.join(code_span(r) for r in lost)}, whose stdout failed, lost them):")


def _case_tables(results) -> list[Block]:
    """Per workload, the case table (``tables.CASE_TABLE``) of ``results``' cases (a
    case of a model other than null names it after its codec, ``tables.model_words``:
    ``msgpack, emulated model``), its footnotes (``_table_notes``) and what the columns mean (``COLUMN_LEGEND``, then
    ``_metric_legend``)."""
    from ipc_bench.report.tables import CASE_TABLE, cells, header, is_timed, model_words

    blocks: list[Block] = []
    cases = results.cases
    if cases.empty:
        return [("note", "No case finished.")]
    records = frame_records(cases)
    for workload in dict.fromkeys(cases["workload"]):
        rows, shown = [], []
        for s in records:
            if s["workload"] != workload:
                continue
            s = as_record(s)
            row = cells(s, CASE_TABLE)
            row[CASE_TABLE.index("codec")] += model_words(s.get("model"))
            rows.append([str(s.get("repetition", 0))] + row)
            shown.append(s)
        blocks.append(("p", f"**{workload}**"))
        blocks.append(("table", ["rep"] + header(CASE_TABLE, is_timed(shown)), rows))
        blocks.extend(_table_notes(shown))
    blocks.append(("p", COLUMN_LEGEND + " " + _metric_legend()))
    return blocks


#: What the case table's bytes, times and ``x floor`` columns are (``_case_tables``).
COLUMN_LEGEND = ("Bytes are payload bytes per counted step (`s2r`: scheduler → runner, "
                 "`r2s`: back), times are µs per counted step, both directions summed for "
                 "build/encode/decode; `x floor` is the measured step time over the "
                 "floor's.")
#: The case-table columns the legend defines by their ``Metric.meaning`` (the words
#: docs/metrics.md's table gives them).
LEGEND_METRICS = ("output_tokens_per_s", "floor_output_tokens_per_s",
                  "decode_token_bytes_per_step", "prompt_chunk_bytes_per_step")


def _metric_legend() -> str:
    """``LEGEND_METRICS``' columns by header, each with its ``Metric.meaning``."""
    from ipc_bench.analysis.metrics import metric

    return " ".join(f"`{metric(k).header}`: {metric(k).meaning}." for k in LEGEND_METRICS)


def marked_note(records: list[dict]) -> Optional[Block]:
    """``cores.marked_footnote`` of ``records`` as a paragraph, its mark in code;
    ``None`` when no record is marked."""
    from ipc_bench.analysis import cores

    line = cores.marked_footnote(records)
    if line is None:
        return None
    return ("p", line.replace(f"{cores.SHARED_MARK} ", f"`{cores.SHARED_MARK}` ", 1))


def _table_notes(shown: list[dict]) -> list[Block]:
    """The footnotes under one workload's case table of the cases ``shown``: withheld
    timings, an ``x floor`` below 1 (marked ``!``), a timed replay's missing floor and
    wall-time tokens/s, ``--no-floor``'s missing floor, and an ``x floor`` that
    includes a model's step: the terminal's notes (``tables.format_tables``) with
    column names in code."""
    from ipc_bench.analysis.cores import footnote
    from ipc_bench.report.tables import (TIMED_NO_FLOOR_NOTE, WALL_TOKENS_NOTE,
                                         floor_below_one_note, is_timed, model_floor_note,
                                         timed_without_floor, without_floor_note)

    out: list[Block] = []
    withheld = footnote(shown)
    if withheld:
        out.append(("p", withheld.replace("* ", "`*` ", 1)))
    shared = marked_note(shown)
    if shared:
        out.append(shared)
    floor_note = floor_below_one_note(shown)
    if floor_note:
        out.append(("p", floor_note.replace("!: x floor", "`!`: `x floor`", 1)))
    if timed_without_floor(shown):
        out.append(("p", TIMED_NO_FLOOR_NOTE.replace(
            "floor tok/s, x floor", "`floor tok/s`, `x floor`", 1) + "."))
    if is_timed(shown):
        out.append(("p", WALL_TOKENS_NOTE.replace("out tok/s (wall):", "`out tok/s (wall)`:", 1)
                    .replace("as out tok/s", "as `out tok/s`", 1).replace(
                        "busy_output_tokens_per_s", "`busy_output_tokens_per_s`", 1) + "."))
    no_floor = without_floor_note(shown)
    if no_floor:
        out.append(("p", no_floor.replace("floor tok/s, x floor", "`floor tok/s`, `x floor`", 1)
                    .replace("--no-floor", "`--no-floor`") + "."))
    model_note = model_floor_note(shown)
    if model_note:
        out.append(("p", model_note.replace("x floor", "`x floor`", 1) + "."))
    return out + _request_notes(shown)


def _request_notes(shown: list[dict]) -> list[Block]:
    """Under one workload's case table: the terminal's lines on requests rejected on
    arrival, cut at max_model_len and preempted (``tables.rejected_note``,
    ``tables.cut_note``, ``tables.preempted_note``), each followed by what it means for
    the comparison (``REJECTED_MEANING``, ``CUT_MEANING``, ``PREEMPTED_MEANING``;
    ``UNEQUAL_REQUESTS`` where the cases counted differently)."""
    from ipc_bench.report.tables import (CUT_MEANING, PREEMPTED_MEANING, REJECTED_MEANING,
                                         cut_note, preempted_note, rejected_note)

    out: list[Block] = []
    for note, meaning, key in ((rejected_note(shown), REJECTED_MEANING, "num_rejected"),
                               (cut_note(shown), CUT_MEANING, "num_cut_at_max_model_len"),
                               (preempted_note(shown), PREEMPTED_MEANING,
                                "num_preemptions")):
        if note:
            equal = len({s.get(key) or 0 for s in shown}) == 1
            text = note.replace("max_model_len", "`max_model_len`").replace(
                "--max-model-len", "`--max-model-len`").replace("--num-blocks",
                                                                "`--num-blocks`")
            out.append(("p", f"{text[0].upper()}{text[1:]}. "
                        + (meaning if equal else UNEQUAL_REQUESTS)))
    return out


#: After a request note whose cases counted differently (``_request_notes``).
UNEQUAL_REQUESTS = ("The cases of this workload counted different numbers of such "
                    "requests, so their figures are of different work and do not compare.")


def _latency_blocks(results, level: int) -> list[Block]:
    """The request latencies of every timed-replay and soak case that has them, as the
    terminal's Latency table (``tables.format_latency``: the same columns, definitions
    and rounding), one table per workload under its own heading, then what each
    column is (``metrics.LATENCY_MEANINGS``); nothing when no case has them."""
    from ipc_bench.analysis.metrics import LATENCY_MEANINGS, TPOT_ITL_DIFFER
    from ipc_bench.report.tables import (LATENCY_TABLE, arrival_bound_note, cells,
                                         has_latency, header, latency_p99_note,
                                         latency_title)

    if results.cases.empty:
        return []
    records = case_records(results.cases)
    records = [r for r in records if has_latency(r)]
    if not records:
        return []
    blocks: list[Block] = [("h", level, "Latency"), ("p", latency_title(records) + ".")]
    for workload in dict.fromkeys(r["workload"] for r in records):
        shown = [r for r in records if r["workload"] == workload]
        blocks.append(("p", f"**{workload}**"))
        blocks.append(("table", ["rep"] + header(LATENCY_TABLE),
                       [[str(r.get("repetition", 0))] + cells(r, LATENCY_TABLE)
                        for r in shown]))
    note = arrival_bound_note(records)
    legend = " ".join(f"`{name.upper()}`: {meaning}." for name, meaning
                      in LATENCY_MEANINGS.items())
    few = latency_p99_note(records)
    shared = marked_note(records)
    if shared:
        blocks.append(shared)
    blocks.append(("p", f"{legend} p50 and p99 are percentiles, mean the mean, in ms. "
                        f"{TPOT_ITL_DIFFER} {note[:1].upper()}"
                        f"{note[1:]}" + (f" {few}" if few else "")))
    return blocks


def _gap_blocks(results, level: int) -> list[Block]:
    """The runner gap of every case that has it (``summary.runner_gap_figures``), with
    its scheduling (sync, or async and what overlapped), under its own heading, with
    the terminal's p99 note (``tables.runner_gap_p99_note``: a gap p99 over 100 or
    fewer counted steps); a note when cases ran with async scheduling; nothing when
    no case has a gap."""
    from ipc_bench.analysis import cores
    from ipc_bench.report.tables import (RUNNER_GAP_COLUMNS, arm_label, model_words,
                                         runner_gap_p99_note, runner_gap_withheld)

    cases = results.cases
    if cases.empty or "runner_gap_ns_median" not in cases.columns:
        return []
    records = case_records(cases)
    records = [r for r in records if r.get("runner_gap_ns_median") is not None]
    left_out = sum(map(cores.is_withheld, records))
    records = [r for r in records if not cores.is_withheld(r)]
    withheld = runner_gap_withheld(left_out) if left_out else ""
    withheld = withheld[:1].upper() + withheld[1:] + ("." if withheld else "")
    if not records:
        return [("h", level, "Runner gap"), ("p", withheld)] if left_out else []
    head = ["rep", "workload", "policy", "codec", "transport", "scheduling"] + [
        h for _, h, _ in RUNNER_GAP_COLUMNS]
    rows = [[str(r.get("repetition", 0)), str(r["workload"]),
             str(arm_label(r)),
             str(r["codec"]) + model_words(r.get("model")),
             str(r["transport"]) + (cores.SHARED_MARK if cores.is_marked(r) else ""),
             f"async ({r.get('async_scheduling_mode')})" if r.get("async_scheduling")
             else "sync"]
            + [format_value(None if r.get(k) is None else r[k] * scale)
               for k, _, scale in RUNNER_GAP_COLUMNS] for r in records]
    shared = marked_note(records)
    blocks: list[Block] = [("h", level, "Runner gap"), ("table", head, rows)] + (
        [shared] if shared else []) + [
                           ("p", "The runner's idle time between the end of one step's "
                                 "forward + sampling and the start of the next one's, per "
                                 "counted step: median and p99 in µs and as a share of the "
                                 "runner's step (forward start to forward start)."
                                 + (f" {withheld}" if withheld else "")
                                 + (f" {runner_gap_p99_note(records)}"
                                    if runner_gap_p99_note(records) else ""))]
    if any(r.get("async_scheduling") for r in records):
        blocks.append(("note", "Async scheduling: the scheduler sent step n+1 before "
                               "step n's output was applied (two steps in flight). "
                               "'process pipelining' (and 'runner thread', the single "
                               "process): the runner took step n+1's input ids from its "
                               "host token buffer; 'process pipelining (drafts: host "
                               "path)': the torch model with draft tokens, whose runner "
                               "takes that path too. 'device pipelining' (torch model on "
                               "CUDA): step n+1's input ids came from step n's sampled ids "
                               "on the GPU, copied back without blocking, and step n+1 was "
                               "launched before step n's reply, as vLLM's async scheduling; "
                               "there the gap is the host's time between launches, the "
                               "GPU's own idle time is gpu_idle_ns. 'device-input path "
                               "(CPU: process overlap only)': the same code on CPU, where "
                               "every op completes as it is called: only the scheduler's "
                               "work on step n+1 overlaps the runner's step n."))
    return blocks


def _spec_blocks(results, level: int) -> list[Block]:
    """Speculative decoding (``--num-spec-tokens``), under its own heading: per case
    with draft tokens and per case of the same run without (K = 0), K, the acceptance
    setting, tokens scheduled and produced per counted step, accepted drafts per step
    and accepted / drafted, s2r bytes per step, and per workload and codec send -
    cached s2r bytes per step and send's share of its own s2r bytes; nothing when no
    case ran with ``num_spec_tokens``."""
    from ipc_bench.report.tables import arm_label

    cases = results.cases
    if cases.empty or "num_spec_tokens" not in cases.columns:
        return []
    records = case_records(cases)
    if not any(r.get("num_spec_tokens") for r in records):
        return []
    s2r = "sched_to_runner_payload_bytes_per_step"
    means: dict[tuple, list[float]] = {}
    for r in records:
        if r.get(s2r) is not None:
            means.setdefault((r["workload"], r["codec"], r["policy"]), []).append(r[s2r])
    head = ["rep", "workload", "policy", "codec", "K", "P", "sched tok/step", "out tok/step",
            "accepted/step", "accepted/drafted", "s2r B/step", "send - cached B/step",
            "send's share"]
    rows = []
    for r in records:
        send = means.get((r["workload"], r["codec"], "send"))
        cached = means.get((r["workload"], r["codec"], "cached"))
        extra = share = None
        if send and cached and r["policy"] == "send" and sum(send) > 0:
            extra = sum(send) / len(send) - sum(cached) / len(cached)
            share = 100 * extra / (sum(send) / len(send))
        rows.append([str(r.get("repetition", 0)), str(r["workload"]), str(arm_label(r)),
                     str(r["codec"]), str(r.get("num_spec_tokens") or 0),
                     format_value(r.get("spec_acceptance"), 2)]
                    + [format_value(r.get(k), 2) for k in (
                        "scheduled_tokens_per_step", "output_tokens_per_step",
                        "spec_accepted_tokens_per_step", "spec_draft_acceptance_rate")]
                    + [format_value(r.get(s2r)), format_value(extra),
                       "-" if share is None else f"{share:.1f} %"])
    return [("h", level, "Speculative decoding"), ("table", head, rows),
            ("p", "Per counted step: K draft tokens per request, P the chance a draft is "
                  "the target's token; accepted/drafted is vLLM's draft acceptance rate "
                  "(pure-decode counted steps only). Drafts travel under both policies "
                  "(scheduled_spec_decode_tokens); send - cached is new_token_ids, one "
                  "real token per request whatever K, and its share is of send's own "
                  "s2r bytes (means over repetitions).")]


def _frontend_blocks(results, level: int) -> list[Block]:
    """The frontend hop of every case that ran one (``--frontend``,
    ``analysis.frontend``) beside the scheduler <-> runner hop, under its own heading;
    nothing when no case did. A case whose timings are withheld (``analysis.cores``)
    shows ``-`` for the µs columns (``tables.frontend_timing``; its bytes stay) and
    ``*`` after its transport, one shown on N + 1 cores ``°`` (``tables.cells``), with
    the case tables' footnotes under the table, as the replicated scheduler's has."""
    from ipc_bench.analysis.cores import footnote
    from ipc_bench.analysis.stats import performed
    from ipc_bench.report.tables import (FRONTEND_COLUMNS, SAVING_KEYS, arm_label, cells,
                                         frontend_timing, schedules_apart_text,
                                         shown_value)

    cases = results.cases
    if cases.empty or "frontend_bytes_per_step" not in cases.columns:
        return []
    records = case_records(cases)
    records = [r for r in records if r.get("frontend_bytes_per_step") is not None]
    if not records:
        return []
    head = ["rep", "workload", "policy", "codec", "transport"] + [
        h for _, h, _ in FRONTEND_COLUMNS]
    # a case whose timings are withheld (analysis.cores): its µs columns -, its
    # transport marked * (cells' mark; ° where shown on N + 1 cores), its bytes kept
    rows = [[str(r.get("repetition", 0)), str(r["workload"]),
             str(arm_label(r)),
             str(r["codec"]), cells(r, ("transport",))[0]]
            + [format_value(None if shown_value(r, k, frontend_timing) is None
                            or (k in SAVING_KEYS and (r.get("policy") == CACHED
                                                      or not performed(k, r["codec"])))
                            else r[k] * scale)
               for k, _, scale in FRONTEND_COLUMNS] for r in records]
    single = any(not performed(SAVING_KEYS[0], r["codec"]) for r in records)
    unsaved = schedules_apart_text(records, "`-`")  # why a send row shows - for the saving
    held, shared = footnote(records), marked_note(records)
    return [("h", level, "Frontend hop"), ("table", head, rows)] + (
        [("p", held.replace("* ", "`*` ", 1))] if held else []) + (
        [shared] if shared else []) + [
            ("p", "The engine core -> frontend hop (`EngineCoreOutputs`, msgspec msgpack "
                  "over ZeroMQ PUSH/PULL, as vLLM V1) beside the scheduler <-> runner hop: "
                  "payload bytes per counted step of each hop (`s2r`, `r2s`, `fe`) and of "
                  "the whole control plane (`control`), the frontend hop's encode (in the "
                  "scheduler) and decode (in the frontend) µs per step, the encode + "
                  "decode µs of all three messages, and send - cached, the bytes cached "
                  "saves, in bytes and as a share of send's whole control plane (send's "
                  "s2r bytes less cached's, of a pair that scheduled the same batches, "
                  "over send's `control`), a figure of the pair shown once, on its send "
                  "row" + (f"; {unsaved}" if unsaved else "") + ". The single-process "
                  "cases serialize only the frontend hop"
                  + (" (no s2r message: `-` for send - cached)" if single else "")
                  + ". The frontend's token streams equalled the scheduler's in every "
                  "case shown (a difference fails the case).")]


def _soak_blocks(results, level: int) -> list[Block]:
    """Each soak case as the terminal gives it (``analysis.soak``), under its own
    heading: its steps (``run_line``: warm-up and counted apart), its memory after
    warm-up per process and measure against the growth goal (``memory_table_rows``) and
    the live Python allocations (``python_line``), or, with too few samples for that,
    the terminal's memory lines saying so (``memory_lines``), then byte drift
    (``drift_lines``); nothing for a run without one."""
    from ipc_bench.analysis.soak import (DRIFT_WHAT, GROWTH_GOAL_PCT, MEMORY_TABLE_HEADER,
                                         drift_lines, memory_lines, memory_table_rows,
                                         python_line, run_line)

    cases = results.cases
    if cases.empty or "scenario" not in cases.columns:
        return []
    out: list[Block] = []
    for r in frame_records(cases[cases["scenario"] == "soak"]):
        memory = any(k.endswith("_growth_pct") and v == v and v is not None
                     for k, v in r.items())
        drift = drift_lines(r)
        if not out:
            out.append(("h", level, "Soak"))
        out.append(("p", run_line(r) + "."))
        if not memory:  # too short a soak: the terminal's lines say so
            lines = [" ".join(x.split()) for x in memory_lines(r, pad=False)]
            if lines:
                out.append(("ul", lines))
        if memory:
            out.append(("p", "Memory after warm-up (the first 10 % of the run): baseline = "
                             "mean over the next 10 %, end = mean over the last 10 %, "
                             "growth at the end = end / baseline - 1, judged against the "
                             f"goal of < {GROWTH_GOAL_PCT:g} %; the largest after warm-up "
                             "(one sample over the baseline) is shown beside it, not "
                             "judged. RssAnon (heap, buffers) is what a leak grows; VmRSS "
                             "also counts mapped file pages."))
            out.append(("table", MEMORY_TABLE_HEADER, memory_table_rows(r)))
            py = python_line(r)
            if py:
                out.append(("p", " ".join(py.split())))
        if drift:
            out.append(("p", f"Byte drift ({DRIFT_WHAT}):"))
            out.append(("ul", drift))
    return out


def _replica_blocks(results, level: int) -> list[Block]:
    """The ``replicated`` cases' bytes and replica scheduler time per step
    (``tables.REPLICA_COLUMNS``) under their own heading; nothing without one. The
    times of a case whose timings are withheld (``analysis.cores``) are ``-``, its
    workload marked ``*``, with the case tables' footnote under the table."""
    from ipc_bench.analysis.cores import MARK, SHARED_MARK, footnote, is_marked, is_withheld
    from ipc_bench.report.tables import REPLICA_COLUMNS, arm_label, shown_value

    cases = results.cases
    if cases.empty or "replica_scheduler_ns_per_step" not in cases.columns:
        return []
    records = case_records(cases)
    records = [r for r in records if r.get("replica_scheduler_ns_per_step") is not None]
    if not records:
        return []
    head = ["rep", "workload", "policy", "codec"] + [h for _, h, _ in REPLICA_COLUMNS]
    rows = [[str(r.get("repetition", 0)),
             str(r["workload"]) + (MARK if is_withheld(r) else
                                   SHARED_MARK if is_marked(r) else ""),
             str(arm_label(r)), str(r["codec"])]
            + [format_value(None if shown_value(r, k) is None else r[k] * scale)
               for k, _, scale in REPLICA_COLUMNS] for r in records]
    held, shared = footnote(records), marked_note(records)
    return [("h", level, "Replicated scheduler"), ("table", head, rows)] + (
        [("p", held.replace("* ", "`*` ", 1))] if held else []) + (
        [shared] if shared else []) + [
            ("p", "With the replicated codec (SGLang style) the runner runs a replica of "
                  "the scheduler: only arrivals and a step message (step number, 8-byte "
                  "schedule digest, checked by the replica every step) travel to it, and "
                  "the sampled tokens come back. `replica sched us`: the replica's "
                  "schedule + build + update per counted step, which every rank pays; "
                  "`sched cpu us`: the scheduler process's own CPU per step.")]


def _is_pp(cases) -> bool:
    """Whether ``cases`` (a ``Results.cases`` table) hold ``--pp`` cases."""
    return "pp" in cases.columns and bool(cases["pp"].notna().any())


def _no_pair_note(cases) -> str:
    """Why the pair section of a run with no send/cached pair is empty: a ``--pp`` run
    compares send with ``direct`` (or, with ``--aa`` alone, ran no ``direct`` case)."""
    if not _is_pp(cases):
        return "No send/cached pair in this run."
    return ("No send/cached pair in this run: a `--pp` run compares send with `direct` "
            "(the cached policy, the ids sent last stage → other stages over gloo), in "
            "the findings and under \"Pipeline hops\""
            + ("" if _ran_direct(cases) else "; this one ran no `direct` case") + ".")


def _ran_direct(cases) -> bool:
    """Whether ``cases`` hold a ``--pp`` run's ``direct`` case (not an ``--aa`` run of
    one policy)."""
    from ipc_bench.engine.pipeline import DIRECT

    return bool((cases["policy"] == DIRECT).any())


def _pair_keys(cases) -> list[tuple]:
    """(workload, codec, transport, model) of every case of ``cases`` (None where a
    column is missing), once each."""
    cols = [c if c in cases.columns else None for c in ("workload", "codec", "transport",
                                                         "model")]
    return list(dict.fromkeys(tuple(r.get(c) if c else None for c in cols)
                              for r in frame_records(cases)))


def _pair_rows(results, method: str) -> tuple[list[list[str]], dict[str, Any]]:
    """The rows of the cached-against-send table (``_pair_table``) and what its caption
    needs to say of them: ``intervals`` / ``points`` (rows whose ratio shows an
    interval / its point alone: pairs too few for ``method``'s interval), ``timed``
    (some row is a timed replay's: its tokens/s read ``output tokens/s (wall)``),
    ``arrival`` (some row is an arrival-bound replay's tokens/s, ``stats.arrival_bound``:
    each arm's geometric mean, no difference or ratio, ``- (arrival-bound)``), ``marked``
    (the rows, of times or tokens/s, whose timings are shown marked ``°``:
    ``findings.marked_keys``)."""
    from ipc_bench.analysis import cores
    from ipc_bench.analysis.stats import (ARRIVAL_BOUND, ARRIVAL_BOUND_KEYS,
                                          SCHEDULES_DIFFER, arrival_bound, paired,
                                          performed, schedules_differ, summarize_pairs)
    from ipc_bench.report.findings import marked_keys, pair_records, withheld_keys
    from ipc_bench.report.tables import is_timed, ratio_text, tokens_name

    withheld = withheld_keys(results.cases)
    marked = marked_keys(results.cases)
    rows, seen = [], {}
    said = dict(intervals=0, points=0, timed=False, arrival=False, marked=[])
    for key in PAIR_TABLE:
        scale = metric(key).scale
        pairs = paired(results.cases, key)  # (summarize_pairs reads no label column)
        for r in summarize_pairs(pairs, method=method):
            if metric(key).unit in cores.TIMING_UNITS and \
                    (r["workload"], r["codec"], r.get("transport")) in withheld:
                continue
            if not performed(key, r["codec"]):  # in-process: no encode, decode, bytes
                continue
            at = (r["workload"], r["codec"], r.get("transport"), r.get("model"))
            if at not in seen:  # (schedules differ, timed replay, arrival-bound)
                records = pair_records(results.cases, at)
                cases = [s for pair in records for s in pair]
                seen[at] = (schedules_differ(records), is_timed(cases),
                            arrival_bound(cases))
            bound = seen[at][0] and key in SCHEDULE_BOUND_PAIR_ROWS
            timed = seen[at][1] and key == "output_tokens_per_s"
            held = seen[at][2] and key in ARRIVAL_BOUND_KEYS
            said["timed"] = said["timed"] or timed
            said["arrival"] = said["arrival"] or held
            if not (bound or held) and r["ratio"] == r["ratio"] and not (
                    r["codec"] == SINGLE_PROCESS_CODEC and metric(key).unit == "B"):
                said["intervals" if r["ratio_low"] == r["ratio_low"] else "points"] += 1
            digits = 0 if key == "output_tokens_per_s" else 2  # tokens/s: 62,757
            if metric(key).unit in cores.TIMING_UNITS and \
                    (r["workload"], r["codec"], r.get("transport")) in marked:
                said["marked"].append(len(rows))  # the row appended next
            rows.append([str(r["workload"]), r["codec"],
                         tokens_name(key, metric(key).label, timed), str(r["n"]),
                         *arm_values(r, scale, digits),
                         "-" if bound or held else pair_value(r["diff"] * scale, digits),
                         f"- ({SCHEDULES_DIFFER})" if bound else
                         f"- ({ARRIVAL_BOUND})" if held else
                         ratio_text(r["ratio"], r["ratio_low"], r["ratio_high"])])
    said["marked"] = [rows[i] for i in said["marked"]]  # the rows themselves
    return rows, said


def arm_values(r: dict[str, Any], scale: float, digits: int = 2) -> list[str]:
    """The send and cached cells of a pair table row (a ``stats.summarize_pairs`` row
    ``r``, times ``scale``): each arm's geometric mean over the pairs, whose quotient is
    the paired geometric-mean ratio beside them, so the arms and the ratio point one way
    (arithmetic means need not: 508.53 against 477.81 µs beside a ratio of 1.006);
    where a value is 0 or negative (no geometric mean), the arm's mean marked ``†``
    (``PAIR_ARITHMETIC_MARK``)."""
    out = []
    for arm in (SEND, CACHED):
        g = r.get(f"{arm}_geomean")
        out.append(pair_value(g * scale, digits) if g is not None and g == g else
                   pair_value(r[arm] * scale, digits) + PAIR_ARITHMETIC_MARK)
    return out


def _arms_caption(method: str, arith: bool) -> str:
    """The pair table caption's sentence on its send and cached columns (``arm_values``),
    by ``method`` (``--ci-method``); ``arith``: some cell is an arithmetic mean."""
    return ("send, cached: each arm's geometric mean over the n repetitions, whose "
            "quotient is the paired geometric-mean ratio, so the arms point the way "
            "the `t` ratio does"
            + ("" if method == "t" else
               f" (the {method} ratio beside them is the median of the per-repetition "
               "ratios, which can differ from their quotient)")
            + (f"; `{PAIR_ARITHMETIC_MARK.strip()}`: a pair with a value of 0 or less, "
               "so neither arm has a geometric mean: each shows its arithmetic mean"
               if arith else "") + ".")


#: Marks an arm's arithmetic mean in the pair table where it has no geometric mean.
PAIR_ARITHMETIC_MARK = " †"


def pair_value(value: Any, digits: int = 2) -> str:
    """A mean or difference in the pair table: ``digits`` decimals with thousands
    separators (``1,534.00``, ``45.68``; 0 on the tokens/s rows, ``62,757``, as tokens/s
    print elsewhere), more for one that they would round onto 0 while it is not 0
    (``stats.point_text``: ``0.4``, ``0.004``); ``-`` for None or NaN."""
    from ipc_bench.analysis.stats import point_text

    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return point_text(value, digits, grouped=True)


def pair_ratio_caption(method: str, intervals: int, points: int) -> str:
    """What the pair table's cached/send column shows, by ``method`` (``--ci-method``),
    naming exactly the interval kind its rows show: ``intervals`` rows with an interval,
    ``points`` with the point alone (pairs fewer than ``stats.min_pairs``: 2 for
    ``t``, 6 for ``sign``, 34 for ``bootstrap``). With no row with an interval it names
    no interval kind: ``cached/send: paired by repetition: median of the
    per-repetition ratios, the point alone (a percentile-bootstrap interval needs >= 34
    pairs)``."""
    from ipc_bench.analysis.stats import INTERVAL_NAMES, min_pairs, ratio_phrase

    need = (f"a {INTERVAL_NAMES[method]} interval needs >= {min_pairs(method)} pairs")
    if not intervals:
        return (f"{CACHED}/{SEND}: {ratio_phrase(method, interval=False)}"
                + (f", the point alone ({need})" if points else ""))
    return (f"{CACHED}/{SEND}: {ratio_phrase(method)}"
            + (f"; the point alone where the pairs are fewer ({need})" if points else ""))


def verdict_floor_note(results) -> str:
    """' Verdicts: with 6 pairs the sign test's smallest p is 0.031, 0.219 after Holm
    over 7 timed metrics: no timed metric can be significant; --repeat 9 or more.' for
    a run whose recorded comparisons (``findings.run_comparisons``) used a method and a
    number of pairs that cannot reach significance after Holm's adjustment over their
    family (``stats.unreachable_note``), each such line once; '' otherwise."""
    from ipc_bench.analysis.stats import METHODS, CONFIDENCE, unreachable_note
    from ipc_bench.report.findings import run_comparisons

    lines = dict.fromkeys(
        unreachable_note(c.get("method"), int(c.get("n_pairs") or 0),
                         len(c.get("family") or []), c.get("confidence") or CONFIDENCE)
        for cs in run_comparisons(results).values() for c in cs
        if c.get("method") in METHODS)
    lines.pop("", None)
    return "".join(f" Verdicts: {line}." for line in lines)


def _model_cells(rows: list[list[str]], cases) -> list[list[str]]:
    """The pair table's ``rows`` (workload, codec, ...), each codec cell followed by
    the model its cases ran (``tables.model_words``: ``msgpack, emulated model``, as
    the findings' summary table names it) where the cases of that workload and codec
    (``cases``, a ``Results.cases`` frame) ran one model, not the null model."""
    from ipc_bench.report.tables import model_words

    if "model" not in cases.columns:
        return rows
    models: dict[tuple[str, str], set] = {}
    for w, c, m in zip(cases["workload"], cases["codec"], cases["model"]):
        models.setdefault((str(w), str(c)), set()).add(m)
    out = []
    for r in rows:
        found = models.get((r[0], r[1]), set())
        out.append(r[:1] + [r[1] + (model_words(min(found)) if len(found) == 1 else "")]
                   + r[2:])
    return out


def _pair_row_notes(rows: list[list[str]]) -> str:
    """What the pair table's caption says of its rows ``rows`` (metric label third):
    ``PAIR_FAMILY_NOTE`` where one is timed, ``PAIR_TIMES_NOTE`` where one is of
    ``SUMMED_PAIR_ROWS``; ``""`` for neither."""
    from ipc_bench.analysis import cores
    from ipc_bench.report.tables import tokens_name

    timed = {tokens_name(k, metric(k).label, wall) for k in PAIR_TABLE
             if metric(k).unit in cores.TIMING_UNITS for wall in (False, True)}
    summed = {metric(k).label for k in SUMMED_PAIR_ROWS}
    return ((PAIR_FAMILY_NOTE if any(r[2] in timed for r in rows) else "")
            + (PAIR_TIMES_NOTE if any(r[2] in summed for r in rows) else ""))


def _pair_planned(results) -> bool:
    """Whether a run of ``results`` (its metadata's case grid, ``metadata.cases``)
    planned a send case and a cached case of a codec of which its finished cases
    (``results.cases``) lack one: it stopped before the pair was done."""
    planned: dict[Any, set] = {}
    for md in results.metadata.values():
        for c in md.get("cases") or []:
            if isinstance(c, dict):
                planned.setdefault(c.get("codec"), set()).add(c.get("arm") or c.get("policy"))
    cases = results.cases
    done: dict[Any, set] = {}
    if not cases.empty and {"codec", "policy"} <= set(cases.columns):
        arms = cases["arm"] if "arm" in cases.columns else cases["policy"]
        for codec, arm, policy in zip(cases["codec"], arms, cases["policy"]):
            done.setdefault(codec, set()).add(arm if isinstance(arm, str) and arm
                                              else policy)
    return any({SEND, CACHED} <= arms and not {SEND, CACHED} <= done.get(codec, set())
               for codec, arms in planned.items())


def _why_unpaired(results) -> str:
    """Why a planned send/cached pair of ``results`` (one run) is not there: the run is
    still running, a case of it was left out on loading (a complete run with loading
    warnings), or the run stopped before both had finished."""
    from ipc_bench.analysis.results import STILL_RUNNING

    details = [d or "" for d in (results.status_detail or {}).values()]
    if any(d.startswith(STILL_RUNNING) for d in details):
        return "the run is still running (the note at the top says so)"
    complete = all(s == "complete" for s in (results.status or {}).values())
    if complete and any((results.warnings or {}).values()):
        return ("one of them was left out when the run was loaded (the loading notes "
                "at the top say why)")
    return "it stopped before both had finished (the note at the top says where)"


def _pair_uncounted(cases) -> bool:
    """Whether ``cases`` (a ``Results.cases`` table) hold a send case and a cached
    case of one workload and codec, each with no counted step (``num_steps`` 0: every
    step fell in the warm-up, or none after it was of the kind the scenario counts),
    so that no pair can be formed."""
    if cases.empty or not {"policy", "codec", "workload", "num_steps"} <= set(cases.columns):
        return False
    arms = cases["arm"] if "arm" in cases.columns else cases["policy"]
    none: dict[tuple, set] = {}
    for arm, policy, workload, codec, steps in zip(arms, cases["policy"], cases["workload"],
                                                   cases["codec"], cases["num_steps"]):
        if steps == 0:
            none.setdefault((workload, codec), set()).add(
                arm if isinstance(arm, str) and arm else policy)
    return any({SEND, CACHED} <= found for found in none.values())


def _pair_table(results) -> list[Block]:
    """The cached-against-send table: per workload, codec and metric, the pairs, the
    means, send - cached and cached / send with its interval (``stats.summarize_pairs``
    with the run's ``--ci-method``: the numbers of the CLI's comparison block), each
    column head naming its statistic (``send (mean)``, ``send - cached (mean)``,
    ``cached/send (geometric mean)``; ``median`` for the difference and the ratio with
    ``--ci-method`` sign or bootstrap), the last with `` [95 %]`` where a row shows an
    interval and its caption naming the interval kind shown (``pair_ratio_caption``); a
    timed replay's tokens/s row reads ``output tokens/s (wall)``; where it shows build,
    encode or decode rows its caption says they sum both directions
    (``PAIR_TIMES_NOTE``); a codec cell names the model after it (``_model_cells``) and
    its ``°`` (``_marked_cells``). Pairs whose timings are withheld keep their byte rows."""
    from ipc_bench.analysis import cores
    from ipc_bench.analysis.stats import (ARRIVAL_BOUND, RATIO_POINTS, SCHEDULES_DIFFER,
                                          results_ci_method, schedules_differ)
    from ipc_bench.report.findings import pair_records, withheld_keys
    from ipc_bench.report.plots import codec_rank
    from ipc_bench.report.tables import WALL, is_timed, schedules_differ_cause

    method = results_ci_method(results.metadata)
    rows, said = _pair_rows(results, method)
    if not rows and _pair_planned(results):
        return [("note", "No send/cached pair finished in this run: its grid has send "
                         f"and cached of a codec, but {_why_unpaired(results)}.")]
    if not rows and _pair_uncounted(results.cases):
        return [("note", "No send/cached pair to compare: send and cached ran, but "
                         "counted no step (the measurement warnings say why).")]
    if not rows:
        return [("note", _no_pair_note(results.cases))]
    order = {w: i for i, w in enumerate(dict.fromkeys(results.cases["workload"]))}
    # no bytes in-process
    rows = [r for r in rows if not (r[1] == SINGLE_PROCESS_CODEC and "B/step" in r[2])]
    rows.sort(key=lambda r: (order.get(r[0], 0), codec_rank(r[1]), r[1]))
    cells, shared = _marked_cells(results, rows, said["marked"])
    note = (cores.footnote(frame_records(results.cases))
            if withheld_keys(results.cases) else None)
    differ = sorted({f"{r[1]}" for r in rows} - {SINGLE_PROCESS_CODEC})
    differ_pairs = {c: [p for w, c2, t, m in _pair_keys(results.cases) if c2 == c
                        for p in [pair_records(results.cases, (w, c, t, m))]
                        if schedules_differ(p)] for c in differ}
    differ = [c for c in differ if differ_pairs[c]]
    # why they differ: a timed replay's arrivals where every such pair is one's
    differ_timed = bool(differ) and all(
        is_timed(s for pair in p for s in pair) for c in differ for p in differ_pairs[c])
    tokens = "output tokens/s" + (WALL if said["timed"] else "")
    point = "mean" if method == "t" else "median"
    arith = any(PAIR_ARITHMETIC_MARK in c for r in rows for c in r[4:6])
    return [("table", ["workload", "codec", "metric", "n", f"{SEND} (geometric mean)",
                       f"{CACHED} (geometric mean)", f"{SEND} - {CACHED} ({point})",
                       f"{CACHED}/{SEND} ({RATIO_POINTS.get(method, 'geometric mean')})"
                       + (" [95 %]" if said["intervals"] else "")],
             cells),
            ("p", _arms_caption(method, arith) + f" send - cached: paired by "
                  f"repetition, the {'mean' if method == 't' else 'median'} of the "
                  f"per-repetition differences. "
                  + pair_ratio_caption(method, said["intervals"], said["points"])
                  + f" (`--ci-method {method}`; the same figures as the "
                  "`cached/send` line under the case table and the comparison block "
                  "`bench.py` prints)."
                  + verdict_floor_note(results) + shared
                  + _pair_row_notes(rows)
                  + (" `output tokens/s (wall)`: a timed replay's output tokens, warm-up "
                     "included, over wall time, first arrival to last completion, as "
                     "`out tok/s (wall)` in its case table." if said["timed"] else "")
                  + (" Where the arrivals set the pace of every case of a pair "
                     "(arrival-bound, summary `replay_pace`), its output tokens/s (wall) follow the trace, "
                     "not the engine: no throughput figure, so each arm's geometric mean alone, no "
                     f"difference or ratio (`- ({ARRIVAL_BOUND})`)." if said["arrival"]
                     else "")
                  + (" Pairs whose timings are left out show their bytes only: "
                     + note.replace("* timings left out: ", "", 1) if note else "")
                  + (f" The arms of {_listed(differ, code=False)} ran different schedules "
                     f"({schedules_differ_cause(differ_timed, (SEND, CACHED))}), so their "
                     "per-step rows (bytes and times per step) would compare other batches "
                     "as well as the policies: they give each arm's geometric mean, no difference or "
                     f"ratio (`- ({SCHEDULES_DIFFER})`), as the comparison block withholds "
                     f"their verdicts; {tokens}, over the whole run, stays compared"
                     + (" unless arrival-bound" if said["arrival"] else "") + ". "
                     "The s2r bytes' difference is not the policy's saving; send's own "
                     "new_token_ids are in the findings." if differ else ""))]


def _marked_cells(results, rows: list[list[str]], marked: list[list[str]]
                  ) -> tuple[list[list[str]], str]:
    """The cached-against-send table's ``rows`` as ``_model_cells`` gives them, the codec
    cell of each of ``marked`` (rows of times or tokens/s whose timings are shown marked
    ``°``, N = 1 on exactly 2 cores: ``_pair_rows``) followed by ``°``, and what the
    caption says of it: `` `°` 2 cores: ...`` (``findings.marked_note``), ``""`` where
    none is marked."""
    from ipc_bench.analysis import cores
    from ipc_bench.report.findings import marked_note

    cells = [r[:1] + [r[1] + cores.SHARED_MARK] + r[2:] if any(row is m for m in marked)
             else r for row, r in zip(rows, _model_cells(rows, results.cases))]
    shared = marked_note(results.cases) if marked else None
    return cells, " " + shared if shared else ""


def _comparison_sections(results, level: int) -> list[Block]:
    """The run's other paired comparisons (``findings.other_comparisons``: A/A, cached+async
    against cached...), as the terminal printed them (``tables.comparison_parts``):
    a heading naming the arms per arm pair, then per workload and codec the
    comparison's first line and its table."""
    from ipc_bench.report.findings import other_comparisons
    from ipc_bench.report.tables import comparison_parts

    by_arms: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for c in other_comparisons(results):
        by_arms.setdefault((c["baseline"], c["treatment"]), []).append(c)
    blocks: list[Block] = []
    for (base, treat), comparisons in by_arms.items():
        parts = [p for p in map(comparison_parts, comparisons) if p is not None]
        if not parts:
            continue
        blocks.append(("h", level, f"{treat} against {base}"))
        for title, header, rows, held in parts:
            blocks.append(("p", title))
            if rows:
                blocks.append(("table", header, rows))
            if held:
                blocks.append(("p", held))
    return blocks


def _run_option_lines(md: dict[str, Any]) -> list[str]:
    """Lines for the options that shaped the whole run beyond each case's settings:
    runners started by hand (``--remote-runners``: ``remote runners: 1 on `10.0.0.5`
    (ports ctls 5600; s2r 5601; r2s 5602)``, the host escaped to one line and a code
    span; a value not as a run writes it, which the loader left out, none), with
    ``--token-ids hist:PATH``,
    the histogram's path and SHA-256 (also in each case's model column), and with
    ``--trace`` the trace's path as given, the path it resolved to when read where
    that is another text (``trace: `../t.csv` (read as `/w/t.csv`), sha256 `...```),
    and its SHA-256."""
    lines = []
    remote = md.get("remote_runners")
    if remote_runners_shape(remote):  # else the loader said so and left it out
        ports = remote_ports_text(remote.get("ports") or {})
        lines.append(f"remote runners: {remote['count']} on "
                     f"{code_span(one_line(remote['host']))}"
                     + (f" (ports {ports})" if ports else ""))
    hists = {(m.get("token_ids"), m.get("token_ids_sha256"))
             for m in (c.get("model") or {} for c in md.get("cases") or [])
             if m.get("token_ids_sha256")}
    for path, digest in sorted(hists):
        lines.append(f"token ids: {code_span(path)}, sha256 `{digest}`")
    trace = md.get("trace")
    if isinstance(trace, dict):
        resolved = trace.get("resolved_path")
        read_as = (f" (read as {code_span(resolved)})"
                   if resolved and resolved != trace.get("path") else "")
        lines.append(f"trace: {code_span(trace.get('path'))}{read_as}, "
                     f"sha256 `{trace.get('sha256')}`")
    return lines


#: Case settings shown in the configuration table only when they are not at their
#: default (``CaseSpec``'s): older runs, which lack them, show nothing for them.
_CASE_DEFAULTS = {"async_scheduling": False, "frontend": False, "tp": None, "pp": None,
                  "trace_speedup": None, "floor": True, "cpu_affinity": None,
                  "no_floor": False}


#: How the Configuration table marks a group of cases that did not run to the end
#: (``case_states``); finished cases carry no mark.
DID_NOT_FINISH, NOT_RUN, LEFT_OUT_ON_LOADING = ("did not finish", "not run",
                                                "left out on loading")
#: The marks of a run still going as it was read: its running case, and those of its
#: grid not started yet.
RUNNING, NOT_RUN_YET = "still running", "not run yet"
#: Under a Configuration table with such groups, one sentence per mark shown.
CASE_STATE_NOTES = {
    DID_NOT_FINISH: f"`{DID_NOT_FINISH}`: started but did not finish (the run's status "
                    "says why); left out of every finding, table and figure.",
    RUNNING: f"`{RUNNING}`: running as the run was read; left out of every finding, table "
             "and figure (report the run again once it ends).",
    NOT_RUN: f"`{NOT_RUN}`: in the run's grid, never started: the run stopped before it.",
    NOT_RUN_YET: f"`{NOT_RUN_YET}`: in the run's grid, not started as the run was read.",
    LEFT_OUT_ON_LOADING: f"`{LEFT_OUT_ON_LOADING}`: recorded, but left out when the run "
                         "was loaded (its warnings say why)."}


def case_states(results, run_id: str) -> dict[str, str]:
    """Each case id of run ``run_id``'s grid (``metadata["cases"]``) that did not run
    to the end -> why, as ``absent_base_cases`` tells it (of a run still going as it
    was read, ``RUNNING`` and ``NOT_RUN_YET`` in place of the first and the last):
    ``DID_NOT_FINISH`` (recorded
    not complete, ``Results.unfinished``; or not recorded but named by the run's
    problems or ``status_detail``: one stopped as it started), ``LEFT_OUT_ON_LOADING``
    (named by a warning of its loading), ``NOT_RUN`` (never recorded: the run stopped
    before it). A finished case is not in it. ``results`` without ``cases`` (a bare
    object with ``metadata`` and ``status``): every case counts as finished."""
    cases = getattr(results, "cases", None)
    if cases is None:
        return {}
    recorded = ({str(c) for r, c in zip(cases["run_id"], cases["case_id"]) if r == run_id}
                if not cases.empty else set())
    going = ((results.status_detail or {}).get(run_id) or "").startswith("still running")
    out = {u["case_id"]: RUNNING if going and u["error"].startswith("still running")
           else DID_NOT_FINISH for u in results.unfinished() if u["run_id"] == run_id}
    why = unrecorded_case(results, run_id, (RUNNING if going else DID_NOT_FINISH,
                                            LEFT_OUT_ON_LOADING,
                                            NOT_RUN_YET if going else NOT_RUN))
    for c in results.metadata[run_id].get("cases") or []:
        case_id = str(c.get("case_id")) if isinstance(c, dict) else None
        if case_id is None or case_id in recorded:
            continue
        out[case_id] = why(case_id)
    return out


def unrecorded_case(results, run_id: str, words: tuple[str, str, str]):
    """Why a case of run ``run_id``'s grid has no record: a function of its case id,
    giving ``words[0]`` where the run's problems or ``status_detail`` name it as the
    case that failed or was running (one stopped as it started), ``words[1]`` where a
    warning of its loading (``Results.warnings``) names it, else ``words[2]`` (the run
    stopped before it)."""
    warned = " ".join((results.warnings or {}).get(run_id) or [])
    stopped = " ".join([*((results.problems or {}).get(run_id) or []),
                        (results.status_detail or {}).get(run_id) or ""])

    def why(case_id: str) -> str:
        if re.search(rf"(^|\s){re.escape(case_id)}(:|\s|,|$)", stopped):
            return words[0]
        return words[1] if repr(case_id) in warned else words[2]
    return why


def _config_blocks(results, run_id: str) -> list[Block]:
    """The run's settings: a list (scenario, command, status, options) and a table of
    the case settings, one row per group of cases that share them and how they went
    (``case_states``), ``1 case: ID`` or ``3 cases: FIRST … LAST``, followed by the
    state of a group that did not finish (``(not run)``, ``(did not finish)``), with a
    line under the table for each state shown (``CASE_STATE_NOTES``); ``results``:
    every case loaded, unfinished ones included. A model setting
    the case's model does not use (``scenario.model_uses``: the null model's
    ``step_time_ms``), or ``spec_acceptance`` without drafts, is left out. A case's
    ``cpu_affinity`` (``--cpu-affinity``) is shown as the option reads it (``0,1``)."""
    import json

    from ipc_bench.harness.scenario import model_uses

    md = results.metadata[run_id]
    blocks: list[Block] = [("ul", [
        f"scenario: {code_span(md.get('scenario', '?'))}, seed {md.get('seed', '?')}",
        "command: " + code_span(command_shell_line(md.get("command_line"), md.get("cwd"))),
        f"status: {results.status[run_id]}",
    ] + _run_option_lines(md))]
    states = case_states(results, run_id)
    groups: dict[tuple[str, str], list[str]] = {}
    for c in md.get("cases") or []:
        conf = {k: v for k, v in c.items() if k not in ("case_id", "labels", "policy",
                                                         "codec", "repetition")
                and not (k in _CASE_DEFAULTS and v == _CASE_DEFAULTS[k])}
        state = states.get(str(c["case_id"]), "")
        groups.setdefault((json.dumps(conf, sort_keys=True), state), []).append(c["case_id"])
    rows = []
    for (conf, state), ids in groups.items():
        c = json.loads(conf)
        sched = c.pop("scheduler", {})
        model = c.pop("model", {})
        if isinstance(model, dict):
            model = {k: v for k, v in model.items() if model_uses(str(model.get("name")), k)
                     and not (k == "spec_acceptance" and not sched.get("num_spec_tokens"))}
        rows.append([f"{len(ids)} case{'' if len(ids) == 1 else 's'}: {ids[0]}"
                     + (f" … {ids[-1]}" if len(ids) > 1 else "")
                     + (f" ({state})" if state else ""),
                     ", ".join(f"{k}={v}" for k, v in sched.items()),
                     ", ".join(f"{k}={v}" for k, v in model.items()),
                     ", ".join(f"{k}={','.join(v) if k == 'cpu_affinity' else v}"
                               for k, v in c.items())])
    if rows:
        blocks.append(("table", ["cases", "scheduler", "model", "run"], rows))
        shown = [CASE_STATE_NOTES[s] for s in CASE_STATE_NOTES if s in states.values()]
        if shown:
            blocks.append(("p", " ".join(shown)))
    return blocks


def _env_rows(md: dict[str, Any]) -> list[list[str]]:
    from ipc_bench.harness.environment import commit_shown

    rows = []
    git = md.get("git") or {}
    if git:
        rows.append(["git", (commit_shown(git, 12) or "?")
                     + (f" on {git['branch']}" if git.get("branch") else "")])
    for key in ("start_time_utc", "end_time_utc", "hostname", "python_version",
                "python_implementation", "platform", "kernel", "cpu_model", "cpu_count", "cpu_affinity",
                "cpu_freq_mhz", "cpu_governor", "load_avg"):
        if key in md:
            v = md[key]
            if key == "load_avg" and isinstance(v, list):  # 0.3369140625: 2 decimals
                v = [f"{x:.2f}" if isinstance(x, float) else x for x in v]
            rows.append([key, ", ".join(map(str, v)) if isinstance(v, list) else str(v)])
    gpu = md.get("gpu")
    if gpu:
        rows.append(["gpu", ", ".join(f"{k}={v}" for k, v in gpu.items())])
    for i, smi in enumerate(md.get("gpus") or []):
        rows.append([f"gpu {smi.get('index', i)} (nvidia-smi)",
                     ", ".join(f"{k}={v}" for k, v in smi.items() if k != "index")])
    virt = md.get("virtualization")
    if virt:
        rows.append(["virtualization", ", ".join(f"{k}={v}" for k, v in virt.items())])
    pk = md.get("packages") or {}
    if pk:
        rows.append(["packages", ", ".join(f"{k} {v}" for k, v in sorted(pk.items()))])
    return rows


def unfinished_note(unfinished: list[dict[str, Any]]) -> Optional[str]:
    """The sentence naming the cases that did not finish (``Results.unfinished``) and
    why, which every finding, table and figure leaves out; ``None`` when there are
    none."""
    if not unfinished:
        return None
    named = "; ".join(f"`{c['case_id']}` ({c['error'] or 'no reason recorded'})"
                      for c in unfinished)
    they = "it" if len(unfinished) == 1 else "they"
    return f"Left out of every finding, table and figure, as {they} did not finish: {named}."


def no_case_finished(run_dir) -> str:
    """What a run in ``run_dir`` (a ``Path``, or ``None``) with no finished case shows:
    no figure, finding or table; where the case that was running left rows in
    ``steps.partial.csv`` (``harness.run_folder.PARTIAL_STEPS``: the process was
    killed), that those rows are not used."""
    from ipc_bench.harness.run_folder import PARTIAL_STEPS

    out = "No case finished, so it has no figures, findings or case tables"
    if run_dir is not None and (run_dir / PARTIAL_STEPS).is_file():
        out += (f"; the rows the unfinished case left in {PARTIAL_STEPS} are not used "
                "for any figure")
    return out + "."


def _finished_cover(one, run_id: str) -> str:
    """What an unfinished run's figures cover: the cases that finished; none (no case
    finished, ``no_case_finished``); or no per-step figure where no finished case
    counted a step (``num_steps`` 0: all warm-up, say; each case's warning says why)."""
    import pandas as pd

    finished = one.finished().cases
    if finished.empty:
        return no_case_finished(one.paths.get(run_id))
    if "num_steps" in finished and not (
            pd.to_numeric(finished["num_steps"], errors="coerce").fillna(0) > 0).any():
        one_case = len(finished) == 1
        return (f"{'The case' if one_case else f'The {len(finished)} cases'} that finished "
                f"counted no step ({'its' if one_case else 'their'} warnings say why), "
                "so it has no per-step figures.")
    return "Its figures cover the cases that finished."


def _state_notes(one, run_id: str) -> list[Block]:
    """Notes on a run that did not complete (why, or what its files tell when it
    recorded no reason: ``Results.status_detail``), or that completed with a problem
    of its end (``results.complete_problems_line``: its tables lost on a full stdout,
    said once, not as a failure), on the cases that did not finish
    (``unfinished_note``: left out of everything below), on files found cut short
    while loading, or on a loaded machine. ``one``: the run's whole tables, the
    unfinished cases included."""
    md = one.metadata[run_id]
    blocks: list[Block] = []
    status = one.status[run_id]
    if status != "complete":
        detail = (one.status_detail.get(run_id) or "; ".join(one.problems[run_id])
                  or "no reason recorded")
        state = run_state(status)
        covers = _finished_cover(one, run_id)
        blocks.append(("note", f"This run {state}: {detail}. {covers}"))
    elif one.status_warning.get(run_id):  # complete, with a problem of its end
        line = complete_problems_line(one.paths[run_id], one.problems[run_id], False)
        blocks.append(("note", f"{line[0].upper()}{line[1:]}."))
    left_out = unfinished_note(one.unfinished())
    if left_out:
        blocks.append(("note", left_out))
    # its status line: the note above says it; one hand edit repeated in every case is
    # one note, as it is one warning line (``grouped_warnings``), on one line as
    # ``bench.py report`` prints it (a newline in the run folder's name escaped)
    status_warning = one.status_warning.get(run_id)
    for line in grouped_warnings([w for w in one.warnings.get(run_id, [])
                                  if w != status_warning]):
        blocks.append(("note", f"Loading this run: {one_line(line)}."))
    shown = one.finished()
    emulated = _emulated_block(shown.cases)
    if emulated:
        blocks.append(emulated)
    null = _null_block(shown.cases)
    if null:
        blocks.append(null)
    layout = _layout_block(shown.cases)
    if layout:
        blocks.append(layout)
    unchecked = _unchecked_block(shown)
    if unchecked:
        blocks.append(unchecked)
    loaded = loaded_at_start(md)
    if loaded is not None:
        load, cpus = loaded
        blocks.append(("note", f"The machine was loaded when this run started, or had just "
                               f"been ({load_average_words(load, cpus)}, an "
                               "average that falls over about a minute): other work then "
                               f"may have competed with {_processes_phrase(one.cases)}, so "
                               "times and tokens/s may be noisy; bytes are exact whatever "
                               "the load."))
    busy = busy_during_note(shown.cases, md, start_said=loaded is not None)
    if busy:
        blocks.append(busy)
    nice = nice_note(md)
    if nice:
        blocks.append(("note", nice[0].upper() + nice[1:] + "."))
    return blocks


_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}


def _processes_phrase(cases) -> str:
    """What other work may have competed with, for the loaded-machine note: 'the two
    processes', with ``--frontend`` cases 'the three processes of each case (the
    scheduler, its runner and the frontend)', with ``--tp`` / ``--pp`` cases 'each
    case's 2 to 5 processes (the scheduler and its N runner ranks or stages)', and with
    counts that differ otherwise each kind named, e.g. a ``--frontend`` run with its
    single-process case 'each case's 2 to 3 processes (the scheduler, its runner and the
    frontend, or a single-process case's engine core and the frontend)'. A case runs one
    process (single-process baseline), else the scheduler and max(tp, pp, 1) runners,
    and a case whose own ``frontend`` is true one more, its frontend; a single-process
    case without it is left out of the count beside two-process cases (its one process
    is one of their two)."""
    records = frame_records(cases)
    multi = [rec for rec in records if rec.get("codec") != SINGLE_PROCESS_CODEC]
    counts = {_case_processes(rec) for rec in records}
    if multi:
        counts.discard(1)
    ranked = any(_case_processes(rec) - (rec.get("frontend") is True) > 2 for rec in multi)
    names = _process_names(records, multi, ranked)
    if len(counts) > 1:
        return (f"each case's {min(counts)} to {max(counts)} processes "
                f"({', or '.join(names)})")
    n = next(iter(counts), 2)
    if n == 2 and names in ([], ["the scheduler and its runner"]):
        return "the two processes"
    return (f"the {_WORDS.get(n, str(n))} process{'' if n == 1 else 'es'} of each case"
            + (f" ({', or '.join(names)})" if names and n > 1 and not ranked else ""))


def _case_processes(rec: dict) -> int:
    """The processes of the case whose record is ``rec``: 1 for the single-process
    baseline, else the scheduler and max(tp, pp, 1) runners; one more, its frontend,
    when the case's ``frontend`` is true."""
    front = int(rec.get("frontend") is True)
    if rec.get("codec") == SINGLE_PROCESS_CODEC:
        return 1 + front
    ranks = [v for v in (rec.get("tp"), rec.get("pp")) if not is_missing(v)]
    return 1 + int(max(ranks, default=1)) + front


def _process_names(records, multi, ranked: bool) -> list:
    """What ``_processes_phrase`` names its cases' processes: the two-process cases' (the
    scheduler, its runner or its N runner ranks or stages, the frontend if any of them
    runs one), then a single-process case's with the frontend ('its engine core and the
    frontend' when every case is one)."""
    names = []
    if multi:
        front = any(rec.get("frontend") is True for rec in multi)
        if ranked:
            names.append(f"the scheduler{', the frontend' if front else ''} and its N "
                         "runner ranks or stages")
        else:
            names.append("the scheduler, its runner and the frontend" if front
                         else "the scheduler and its runner")
    if any(rec.get("codec") == SINGLE_PROCESS_CODEC and rec.get("frontend") is True
           for rec in records):
        names.append(("a single-process case's" if multi else "its")
                     + " engine core and the frontend")
    return names


def _unchecked_block(one) -> Optional[Block]:
    """A note when cases ran with the input oracle off (``tables.unchecked_note``)."""
    from ipc_bench.report.tables import unchecked_note

    cases = one.cases
    if cases.empty or "input_oracle_interval" not in cases.columns:
        return None
    note = unchecked_note([{"input_oracle_interval": v}
                           for v in cases["input_oracle_interval"].fillna(128)])
    if note is None:
        return None
    return ("note", note + ": a runner that fed wrong token ids would have gone unnoticed "
                    "in them.")


def _emulated_block(cases) -> Optional[Block]:
    """A note when ``cases`` (one run's ``Results.cases``, which its ``N of M cases``
    counts) ran the emulated model (their step times are a roofline sleep, not a
    GPU's), naming the GPU figures, whether they are calibrated and the arms that ran
    it."""
    from ipc_bench.report.tables import emulated_note

    if cases.empty or "emulated" not in cases.columns:
        return None
    records = case_records(cases)
    note = emulated_note(records)
    if note is None:
        return None
    from ipc_bench.report.tables import arm_label, emulated_step_split

    arms = [str(a) for a in dict.fromkeys(arm_label(r) for r in records if r.get("emulated"))
            if a is not None]
    split = emulated_step_split(records)
    return ("note", note + _emulated_tail(arms) + (f" {split}" if split else ""))


def _null_block(cases) -> Optional[Block]:
    """A note when ``cases`` (one run's ``Results.cases``) ran the null model
    (``tables.null_note``)."""
    from ipc_bench.report.tables import null_note

    if cases.empty or "model" not in cases.columns:
        return None
    note = null_note(case_records(cases))
    return ("note", note) if note else None


def _layout_block(cases) -> Optional[Block]:
    """A note when ``cases`` (one run's ``Results.cases``) sent a later layout's
    messages (``tables.layout_note``)."""
    from ipc_bench.report.tables import layout_note

    if cases.empty or "vllm_layout" not in cases.columns:
        return None
    note = layout_note(case_records(cases))
    return ("note", note) if note else None


def _emulated_tail(arms: list[str]) -> str:
    """What an emulated note (``_emulated_block``) says the step times are, of the
    ``arms`` that ran the emulated model (``each case`` when none is named)."""
    return (": the runner waited each step's roofline time on those figures "
            "(ipc_bench/engine/gpu_figures.json), so step times and tokens/s are what "
            f"{_listed(arms) if arms else 'each case'} cost{'s' if len(arms) == 1 else ''} "
            "next to that step, not a measured GPU run.")


def _emulated_runs_blocks(cases, ids: list[str]) -> list[Block]:
    """The emulated note at the top of a report of several runs, before any figure:
    none where no run ran the emulated model; ``In run `emu`: `` and its run's
    ``_emulated_block`` where one did, its cases counted against its own; one note
    for several (``tables.emulated_runs_note``), said once, each run named with what
    is its own. ``cases``: every run's finished cases (``run_id``)."""
    from ipc_bench.report.tables import arm_label, emulated_runs_note, emulated_step_split

    if cases.empty or "emulated" not in cases.columns:
        return []
    runs = [(r, case_records(cases[cases["run_id"] == r])) for r in ids]
    runs = [(r, records) for r, records in runs if any(x.get("emulated") for x in records)]
    if not runs:
        return []
    if len(runs) == 1:
        return [("note", f"In run {code_span(runs[0][0])}: "
                         f"{_emulated_block(cases[cases['run_id'] == runs[0][0]])[1]}")]
    arms = [str(a) for a in dict.fromkeys(arm_label(x) for _, records in runs
                                          for x in records if x.get("emulated"))
            if a is not None]
    splits = [f" In run {code_span(r)}: {split}" for r, records in runs
              for split in [emulated_step_split(records)] if split]
    return [("note", emulated_runs_note(runs) + _emulated_tail(arms) + "".join(splits))]


#: The note a report rendered with ``--no-figures`` gives where its figures would be.
NO_FIGURES_NOTE = "Figures: not drawn (`--no-figures`)."


def _figure_blocks(one, prefix: str, figures: bool = True) -> list[Block]:
    """Every figure of ``plots.FIGURES`` the run can show, then a list of those it
    cannot, each with why (``NOT_SHOWN_LEAD``);
    ``NO_FIGURES_NOTE`` alone when ``figures`` is false (and a case finished).
    ``one``: the run with its unfinished cases, which each figure leaves out and its
    caption names (``plots._finished_cases``: `cached` did not finish, not "only
    `send` ran")."""
    from ipc_bench.report import plots

    if one.finished().cases.empty:
        return [("note", no_case_finished(
            next(iter(one.paths.values()), None) if len(one.paths) == 1 else None))]
    if not figures:
        return [("note", NO_FIGURES_NOTE)]
    blocks: list[Block] = []
    not_shown: list[str] = []
    for name, fn, title in plots.FIGURES:
        try:
            png, what = plots.draw(fn, one)
        except plots.NoData as exc:
            not_shown.append(f"{title}: {str(exc).rstrip('.')}.")
            continue
        blocks.append(("fig", f"{prefix}{name}.png", figure_title(name, title, what),
                       caption(name, what), png))
    if not_shown:
        blocks += [("p", NOT_SHOWN_LEAD), ("ul", not_shown)]
    return blocks


#: The line over the list of figures a run cannot show or withholds (``_figure_blocks``), one
#: item each, ``TITLE: why.``, after the figures drawn.
NOT_SHOWN_LEAD = "**Not shown**, and why:"


def figure_title(name: str, title: str, drawn: dict) -> str:
    """The heading of figure ``name``: its ``plots.FIGURES`` ``title``, but for the
    latency CDFs the panels it drew (``drawn``: ``plots.drawn``), so that it promises
    none it lacks: ``TTFT and ITL distributions``, ``TTFT distribution``."""
    panels = drawn.get("panels") or []
    if name != "latency_cdfs" or not panels:
        return title
    return (" and ".join({"ttft": "TTFT", "itl": "ITL"}[p] for p in panels)
            + " distribution" + ("s" if len(panels) > 1 else ""))


def _pp_blocks(results, level: int) -> list[Block]:
    """The ``--pp`` cases' hops (``analysis.pp.hop_table``) under their own heading;
    nothing when the run has none."""
    from ipc_bench.analysis.cores import footnote
    from ipc_bench.analysis.pp import hop_table, token_check_line

    cases = results.cases
    if cases.empty or "pp_s2r_bytes_per_step" not in cases.columns:
        return []
    header, rows = hop_table(frame_records(cases))
    if not rows:
        return []
    hops = [("h", level, "Pipeline hops"),
            ("p", "Per counted step of each `--pp` case: bytes (means, exact; payload: the "
                  "encoded SchedulerOutput handed once to XPUB, each hop's hidden-state "
                  "tensor, the encoded ModelRunnerOutput, the direct ids' tensors to all "
                  "N - 1 other stages; `ZMTP heads B`: the ZeroMQ frame heads of a step, N "
                  "on the broadcast and one on the reply, gloo's headers not counted) and "
                  "median µs of each hop, from the later of the send and the receiver "
                  "starting to wait to the data being there: scheduler → stages (µs: stage "
                  "0), stage → next stage hidden states (one time per hop), last stage → "
                  "scheduler, last stage → other stages under `direct` (one time per "
                  "receiving stage); `*`: fewer than N + 2 cores, times and tokens/s left "
                  "out (`-`)."),
            ("table", header, rows)]
    records = frame_records(cases)
    withheld = footnote(records)
    if withheld:
        hops.append(("p", withheld.replace("* ", "`*` ", 1)))
    shared = marked_note(records)
    if shared:
        hops.append(shared)
    hops.append(("p", token_check_line(records) + "."))
    return hops


def _run_notes(md: dict, level: int) -> list[Block]:
    """The notes the run printed as ``note: ...`` lines when it started (its
    metadata's ``notes``: a trace shorter than ``--max-requests``, a scenario that
    replays another's trace...) under a heading; nothing when it has none."""
    notes = md.get("notes")
    notes = [str(n) for n in notes if n] if isinstance(notes, list) else []
    if not notes:
        return []
    return [("h", level, "Notes"),
            ("p", "Printed by the run when it started (`note:` lines):"),
            ("ul", notes)]


def _no_findings(one) -> list[str]:
    """The Findings list of a run whose finished cases (``one``) give none: why, where
    no case counted a step; else empty."""
    cases = one.cases
    if "num_steps" in cases and len(cases) and bool((cases["num_steps"] == 0).all()):
        return ["None: no case counted a step (the measurement warnings say why)."]
    return []


def _run_blocks(results, run_id: str, level: int, prefix: str,
                figures: bool = True) -> list[Block]:
    """The sections of one run's report, headings at ``level``; figure files named
    ``prefix`` + figure name (none drawn when ``figures`` is false)."""
    whole = results.select(run_id) if len(results.run_ids) > 1 else results
    one = whole.finished()  # every finding, table and figure: finished cases only
    blocks = _state_notes(whole, run_id)
    blocks.extend(_run_notes(whole.metadata[run_id], level))
    blocks.append(("h", level, "Findings"))
    blocks.append(("ul", findings(one) or _no_findings(one)))
    blocks.extend(_warning_blocks(one, level))
    blocks.append(("h", level, "Figures"))
    blocks.extend(_figure_blocks(whole, prefix, figures))  # leave out and name the unfinished
    others = _comparison_sections(one, level)
    pairs = _pair_table(one)
    if not (others and pairs[0][0] == "note"):  # no send/cached pair: the others alone
        blocks.append(("h", level, "cached against send"))
        blocks.extend(pairs)
    blocks.extend(others)
    blocks.append(("h", level, "Cases"))
    blocks.extend(_case_tables(one))
    blocks.extend(_latency_blocks(one, level))
    blocks.extend(_gap_blocks(one, level))
    blocks.extend(_spec_blocks(one, level))
    blocks.extend(_frontend_blocks(one, level))
    blocks.extend(_soak_blocks(one, level))
    blocks.extend(_pp_blocks(one, level))
    blocks.extend(_replica_blocks(one, level))
    blocks.append(("h", level, "Configuration"))
    blocks.extend(_config_blocks(whole, run_id))  # every case of its grid, each as it went
    blocks.append(("h", level, "Environment"))
    blocks.append(("table", ["field", "value"], _env_rows(one.metadata[run_id])))
    return blocks


def _runs_blocks(results, base: str = "") -> list[Block]:
    """The loaded runs as a table, then how their environments differ from the
    reference run ``base`` (default: the first loaded; ``--baseline`` chooses another),
    ``environment.compare_metadata`` of each other run against it (a run-wide field that
    is not the same in every run differs from the reference somewhere), and the
    settings that change the numbers (``setting_differences``: every pair of runs,
    stated against the reference where it is one of them), under a line naming the
    reference (``reference_line``)."""
    from ipc_bench.harness.environment import commit_shown, run_interval

    ids = results.run_ids
    given, base = bool(base), base or ids[0]
    blocks: list[Block] = [("h", 2, "Runs")]
    rows = []
    for r in ids:
        md = results.metadata[r]
        git = commit_shown(md.get("git"), 12)
        n = int((results.cases["run_id"] == r).sum()) + (r in results.stopped_case)
        unfinished = sum(c["run_id"] == r for c in results.unfinished())
        end = run_interval(md)[1]
        rows.append([verbatim(r), str(md.get("scenario", "?")), results.status[r],
                     str(md.get("start_time_utc", "?"))[:19],
                     end.astimezone(datetime.timezone.utc).isoformat()[:19] if end else "unknown", git or "-",
                     str(n) + (f" ({unfinished} unfinished, left out)" if unfinished else "")])
    blocks.append(("table", ["run", "scenario", "status", "start (UTC)", "end (UTC)",
                             "commit", "cases"], rows))
    blocks.extend(machine_load_blocks(results))
    warnings = environment_differences(results, base) + setting_differences(results, base)[0]
    if warnings:
        orders_only = all(": option --order-seed differs: " in w for w in warnings)
        same_rows = comparable_rows_line(warnings, _unshared(results.finished(), base)[2])
        blocks.append(("p", ORDER_SEED_ONLY) if orders_only else
                      ("p", same_rows) if same_rows else
                      ("note", "The runs differ in ways that can change the numbers: "
                               "compare with care."))
        blocks.append(("p", reference_line(ids, base, given)))
        blocks.append(("ul", warnings))
    else:
        blocks.append(("p", "Same machine, software and commit by their metadata."))
        same = _same_changes(results, base)
        if same:
            blocks.append(("p", same))
    hosts = {results.metadata[r].get("hostname") for r in ids}
    if len(hosts) == 1 and None not in hosts:
        blocks.extend(("p", line) for line in _overlap_unknown(results))
    return blocks


#: The Runs section's line, for the care note's, where the runs differ in the seed of
#: their arms' order alone (``environment._order_seed_lines``).
ORDER_SEED_ONLY = ("The runs differ only in the seed of their arms' order (`--order-seed`), "
                   "which runs the same cases in other orders: their rows stay comparable, "
                   "the orders' part of the noise differing.")


#: ``SAME_ROWS_DIFFERENCES``' words for codecs that differ, given (``option --codecs
#: differs: ...``) or in effect (``codecs in effect differ: ...``).
CODECS_RAN = ("the codecs they ran (`--codecs` chooses cases alone: a codec's rows are "
              "measured alike whichever others ran, and a codec one run ran alone has its "
              "rows there alone)")


#: Differences between runs that change no figure of a row both have (the line under a
#: report's Runs table, ``comparable_rows_line``): the line's text after ``RUN against
#: OTHER: `` starts with the key, and the value says what differs. A flag of
#: ``environment.FLAG_CASES`` adds or leaves out cases (``single-process cases differ:
#: ...``; and, narrowing a run's default policies, ``environment.NARROWED_POLICIES``:
#: ``default policies differ: ...``), and so ``--policies`` given, which chooses which
#: policies' cases run (``option --policies differs: ...``), and ``--codecs``, which
#: chooses which codecs' cases run (``option --codecs differs: ...``, or ``codecs in
#: effect differ: ...`` where both runs were given one value), or a measurement taken
#: after a case's counted steps (``floors differ: ...``), so each run's cases are
#: measured alike; the order seed runs the same cases in other
#: orders (``ORDER_SEED_ONLY``, where it is the only difference).
SAME_ROWS_DIFFERENCES = {
    f"{FLAG_CASES['no_floor']} differ: ":
        "whether the cases replayed their floors (`--no-floor`: the floor runs after a "
        "case's counted steps, so only `floor tok/s` and `x floor` are missing where it "
        "did not)",
    f"{FLAG_CASES['no_single_process']} differ: ":
        "whether the single-process cases ran (`--no-single-process`: their rows are one "
        "run's alone)",
    NARROWED_POLICIES:
        "the policies their defaults ran (`--policies` not given, or given as what a "
        "run's flags run without it: `--aa` or "
        "`--async-scheduling` runs one policy alone, so the other policy's rows are one "
        "run's alone)",
    "option --policies differs: ":
        "the policies they ran (`--policies` chooses cases alone: a policy's rows are "
        "measured alike whichever others ran, and a policy one run ran alone has its "
        "rows there alone)",
    "option --codecs differs: ": CODECS_RAN,
    "codecs in effect differ: ": CODECS_RAN,
    f"{FLAG_CASES['aa']} differ: ":
        "whether A/A copies of the arms ran (`--aa`: their rows are one run's alone)",
    f"{FLAG_CASES['async_scheduling']} differ: ":
        "whether cached+async cases ran (`--async-scheduling`: their rows are one run's "
        "alone)",
    f"{SYNC_CACHED_CASES} differ: ":
        "whether synchronous cached cases ran (`--async-scheduling` runs them beside its "
        "async cases where given no `--policies` and no `--aa`: their rows are one run's "
        "alone)",
    "option --order-seed differs: ":
        "the seed of their arms' order (`--order-seed`: the same cases in other orders)",
}


def comparable_rows_line(warnings: list[str], apart: Collection[str] = ()) -> str:
    """The Runs section's line, for the care note's, where every difference of the runs
    (``warnings``: ``RUN against OTHER: ...`` lines of ``setting_differences``, and of
    ``environment_differences``, which are never such) is one of
    ``SAME_ROWS_DIFFERENCES``, naming what differs: ``The runs differ only in whether
    the single-process cases ran (...): options that change no figure of a row both runs
    have, so those rows stay comparable.``; ``""`` otherwise. Where runs ``apart`` share
    no case with the reference (``unshared_lines``: their options left them no row in
    common), the line ends by naming them instead: ``..., but run `b` has no row in
    common with the reference: Side by side says what to run.``"""
    found = []
    for line in warnings:
        key = next((k for k in SAME_ROWS_DIFFERENCES if f": {k}" in line), None)
        if key is None:
            return ""
        found.append(key)
    said = list(dict.fromkeys(SAME_ROWS_DIFFERENCES[k] for k in SAME_ROWS_DIFFERENCES
                              if k in found))
    if not said:
        return ""
    what = said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]
    head = (f"The runs differ only in {what}: "
            f"{'an option' if len(said) == 1 else 'options'} that change"
            f"{'s' if len(said) == 1 else ''} no figure of a row both runs have, ")
    if not apart:
        return head + "so those rows stay comparable."
    runs = ", ".join(map(code_span, apart))
    return (head + f"but run{'s' if len(apart) > 1 else ''} {runs} "
            f"{'have' if len(apart) > 1 else 'has'} no row in common with the reference: "
            "Side by side says what to run.")


#: A multi-run report says how the machine's load differed between its runs
#: (``machine_load_blocks``) where two runs' mean ``machine_busy_pct`` over their finished
#: cases are this many percentage points apart or more: on the 2-core development
#: machine runs of one grid on a quiet machine came 0.6 points apart (83.6 and 83.0 %),
#: one beside two busy loops 16 points above them (99.8 %).
BUSY_APART = 10.0
#: A case's step times are noisy, as its warning says, where the standard deviation of
#: its 50-step mean step times is over this share of their mean (``step_ns_block_cv``;
#: ``analysis.summary.case_warnings``), or where its mean step is over
#: ``SKEWED_STEP_RATIO`` times its median (``analysis.step_noise.step_time_noisy``).
NOISY_STEP_CV = NOISY_STEP_BLOCK_CV


def machine_load(cases, md: dict[str, Any]) -> Optional[dict[str, Any]]:
    """What one run recorded of the machine's load: ``busy``, the mean
    ``machine_busy_pct`` (%) over its cases ``cases`` (a ``Results.cases`` table, the
    run's finished cases) with a value above 0 (0: ``/proc/stat`` unread), and ``n``,
    those cases (``busy`` ``None`` where every case recorded 0); ``load`` and ``cpus``,
    the 1-minute load average at its start and its CPUs (metadata ``md``'s
    ``load_avg[0]`` and ``cpu_count``, each ``None`` where not recorded); ``noisy`` of
    ``timed``, the cases with noisy step times (``step_noise.step_time_noisy``: the
    noisy-step warnings, a ``step_ns_block_cv`` over ``NOISY_STEP_CV`` or a mean step
    over ``SKEWED_STEP_RATIO`` times the median) of those with a block CV or the skew
    warning (``timed`` 0: not recorded; ``short`` then: the column is there, every
    case too short for it), and of ``noisy`` those over the block CV, ``over_cv``, and
    those with the skew warning, ``skewed`` (a case can be both); trace replays left
    out (``replay_noise.is_replay``: their block means move with the trace's batches)
    and counted in ``replays``, those of them with a value. ``None`` where no case
    recorded ``machine_busy_pct``: ``cases`` is empty (the run finished no case), or
    its summary was written before the field."""
    from ipc_bench.analysis.replay_noise import is_replay
    from ipc_bench.analysis.step_noise import block_cv_noisy, skewed

    values = [float(v) for v in (cases["machine_busy_pct"] if "machine_busy_pct"
                                 in cases.columns else []) if v is not None and v == v]
    if not values:
        return None
    busy = [v for v in values if v > 0]
    rows = cases.to_dict("records")
    with_cv = [r for r in rows if not is_missing(r.get("step_ns_block_cv"))]
    replays = sum(is_replay(r) for r in with_cv)
    timed = [(block_cv_noisy(r), skewed(r)) for r in rows if not is_replay(r)
             and (not is_missing(r.get("step_ns_block_cv")) or skewed(r))]
    load, cpus = md.get("load_avg"), md.get("cpu_count")
    return dict(busy=sum(busy) / len(busy) if busy else None, n=len(busy),
                load=float(load[0]) if load else None, cpus=cpus,
                short="step_ns_block_cv" in cases.columns,
                noisy=sum(cv or sk for cv, sk in timed), timed=len(timed),
                over_cv=sum(cv for cv, _ in timed), skewed=sum(sk for _, sk in timed),
                replays=replays)


#: ``machine_load_line``'s words on the step-time noise of a run of trace replays alone.
REPLAY_LOAD_WORDS = ("step-time noise not read from `step_ns_block_cv` (trace replays, "
                     "whose block means move with the trace's batches: its findings give "
                     "the noise measured across repetitions)")


#: ``machine_load_line``'s words for a run that finished no case: each case records its
#: ``machine_busy_pct`` as it finishes, so there is nothing to read, whatever its age.
NO_CASE_FINISHED_WORDS = "no case finished, so none recorded `machine_busy_pct`"
#: ``machine_load_line``'s words for a run whose finished cases lack the field.
BEFORE_BUSY_WORDS = ("`machine_busy_pct` absent from its finished cases: a summary "
                     "written before the field existed")


def _noisy_steps_words(load: dict[str, Any]) -> str:
    """``machine_load_line``'s count of a run's cases with noisy step times (``load``, a
    ``machine_load`` with ``timed`` above 0; its ``%`` not yet spaced): ``noisy step
    times (`step_ns_block_cv` over 10%) in 21 of 40 cases`` where no case has the skew
    warning, else each rule's count, ``noisy step times in 3 of 40 cases
    (`step_ns_block_cv` over 10% in 2, the mean step over 1.5x the median in 1)``, with
    ``, both in 1`` where cases are counted under both rules."""
    of = f"{load['noisy']} of {load['timed']} cases"
    if not load.get("skewed"):
        return f"noisy step times (`step_ns_block_cv` over {NOISY_STEP_CV:.0%}) in {of}"
    both = load.get("over_cv", 0) + load["skewed"] - load["noisy"]
    return (f"noisy step times in {of} (`step_ns_block_cv` over {NOISY_STEP_CV:.0%} in "
            f"{load.get('over_cv', 0)}, the mean step over {SKEWED_STEP_RATIO:g}x the "
            f"median in {load['skewed']}{f', both in {both}' if both else ''})")


def machine_load_line(run: str, load: Optional[dict[str, Any]],
                      finished: Optional[int] = None) -> str:
    """A run's item under ``machine_load_blocks``: ```d`: the machine 99.8 % busy
    (mean `machine_busy_pct` over 40 cases); 1-minute load average 1.9 on 2 CPUs at its
    start; noisy step times (`step_ns_block_cv` over 10 %) in 21 of 40 cases``, the run's
    name and ``machine_load_words``."""
    return f"{code_span(run)}: {machine_load_words(load, finished)}"


def load_average_words(load: float, cpus: Optional[int]) -> str:
    """A run's 1-minute load average at its start as every note of the report gives it,
    to one decimal as the run's own ``note:`` line does (``environment.loaded_note``):
    ``1-minute load average 8.2 on 2 CPUs`` (``(its CPU count not recorded)`` without
    ``cpus``)."""
    where = f"on {cpus} CPUs" if cpus else "(its CPU count not recorded)"
    return f"1-minute load average {load:.1f} {where}"


def machine_load_words(load: Optional[dict[str, Any]],
                       finished: Optional[int] = None, start_said: bool = False) -> str:
    """What a run recorded of the machine's load (``load``, ``machine_load``'s), for
    ``machine_load_line`` and a run's own section (``busy_during_note``): ``the machine
    99.8 % busy (mean `machine_busy_pct` over 40 cases); 1-minute load average 1.9 on 2
    CPUs at its start; noisy step times (`step_ns_block_cv` over 10 %) in 21 of 40
    cases`` (``_noisy_steps_words``: each rule's count where a case has the skew
    warning), a figure it did not record said so (``not recorded``). Without ``load``
    (``machine_load``'s ``None``) it says why: no case finished where ``finished``, the
    run's finished cases, is 0 (``NO_CASE_FINISHED_WORDS``: a run killed or failed in
    its first case), else a summary written before the field (``BEFORE_BUSY_WORDS``;
    ``finished`` ``None``: not known). ``start_said``: a note above gave the start's
    load average already (the run's own section, loaded at its start), which is then
    left out."""
    if load is None:
        why = NO_CASE_FINISHED_WORDS if finished == 0 else BEFORE_BUSY_WORDS
        return f"not recorded ({why})"
    if load["busy"] is None:
        return ("not recorded (`machine_busy_pct` 0 in every case: "
                "`/proc/stat` could not be read)")
    start = (f"{load_average_words(load['load'], load['cpus'])} at its start"
             if load["load"] is not None else "load average at its start not recorded")
    short = (f"step-time noise not measured (no case counted {3 * STEP_BLOCK} steps, the "
             f"3 blocks of {STEP_BLOCK} `step_ns_block_cv` needs)")
    noisy = (_noisy_steps_words(load) if load["timed"]
             else REPLAY_LOAD_WORDS if load.get("replays")
             else short if load.get("short") else "step-time noise not recorded"
             ).replace("%", " %", 1)
    return (f"the machine {load['busy']:.1f} % busy (mean "
            f"`machine_busy_pct` over {load['n']} case{'' if load['n'] == 1 else 's'}); "
            + ("" if start_said else f"{start}; ") + noisy)


def busy_during_note(cases, md: dict[str, Any], start_said: bool = False
                     ) -> Optional[Block]:
    """A run's own section's note on how busy the machine was while it ran, after the
    note on its start's load: its finished cases ``cases`` and metadata ``md`` as
    ``machine_load_words`` gives them in a multi-run report's list, ``As this run
    recorded the machine's load: the machine 99.9 % busy (mean `machine_busy_pct` over
    120 cases); 1-minute load average 3.4 on 2 CPUs at its start; noisy step times
    (`step_ns_block_cv` over 10 %) in 113 of 120 cases.``, then that the share counts
    the run's own processes too; ``None`` where no finished case recorded
    ``machine_busy_pct`` (none finished, or a summary from before the field: the
    run's other notes say the one). ``start_said``: the note above gave the start's
    load average (``load_average_words``), which this one then leaves out."""
    load = machine_load(cases, md)
    if load is None:
        return None
    words = machine_load_words(load, start_said=start_said)
    return ("note", f"As this run recorded the machine's load: {words}. "
                    "The busy share counts every process, this run's own among them, "
                    "so it is not other work's alone.")


def machine_load_blocks(results) -> list[Block]:
    """Where the loaded runs' mean ``machine_busy_pct`` (``machine_load``, over each run's
    finished cases) are ``BUSY_APART`` points apart or more, a note naming the busiest
    run and the least busy and their shares, saying that their times and tokens/s differ
    for that reason as well as for any change in code, then each run's recorded figures
    (``machine_load_line``). Where they are closer, or fewer than two runs recorded
    the share, and some run started on a loaded machine (``loaded_at_start``), a note
    naming those runs (``_loaded_runs_note``) and each run's figures; ``[]`` otherwise,
    or for one run."""
    cases = results.finished().cases
    own = {r: cases[cases["run_id"] == r] if "run_id" in cases.columns else cases.iloc[:0]
           for r in results.run_ids}
    loads = {r: machine_load(own[r], results.metadata.get(r) or {}) for r in results.run_ids}
    known = {r: v["busy"] for r, v in loads.items() if v is not None and v["busy"] is not None}
    hi = max(known, key=known.get) if known else None
    lo = min(known, key=known.get) if known else None
    if len(known) < 2 or known[hi] - known[lo] < BUSY_APART:
        loaded = [r for r in results.run_ids if loaded_at_start(results.metadata.get(r) or {})]
        if not loaded or len(results.run_ids) < 2:
            return []
        return [("note", _loaded_runs_note(loaded)),
                ("ul", [machine_load_line(r, loads[r], len(own[r])) for r in results.run_ids])]
    who = (f"busier during run {code_span(hi)} than during run {code_span(lo)}"
           if len(known) == 2 else f"busiest during run {code_span(hi)} and least busy "
           f"during run {code_span(lo)}")
    return [("note", f"The machine was {who}: {known[hi]:.1f} % against {known[lo]:.1f} % "
                     f"of its CPU time busy on average over their cases (`machine_busy_pct`, "
                     f"{BUSY_APART:g} points apart or more), so the runs' times and "
                     "tokens/s may differ for that reason as well as for any change in "
                     "code (bytes per step do not). The share counts every process, the "
                     "runs' own among them: code that keeps the CPUs busier raises it "
                     "too. As each run recorded it:"),
            ("ul", [machine_load_line(r, loads[r], len(own[r])) for r in results.run_ids])]


def _loaded_runs_note(loaded: list[str]) -> str:
    """``machine_load_blocks``' note where runs' busy shares are close (or unrecorded)
    but runs ``loaded`` started on a loaded machine (``environment.loaded_at_start``,
    as their own ``note:`` line said): close shares do not make their loads alike, and
    a ratio between runs pairs no repetition, so it can stray from 1 for the load
    alone, significant or not."""
    names = [code_span(r) for r in loaded]
    who = (f"Run {names[0]}" if len(names) == 1 else
           "Runs " + ", ".join(names[:-1]) + f" and {names[-1]}")
    return (f"{who} started on a loaded machine (a 1-minute load average of "
            f"{LOADED_SHARE * 100:.0f} % of its CPUs or more, which counts work that had "
            "just ended too, such as a run before): other work may have competed with "
            f"{'its' if len(names) == 1 else 'their'} processes, by amounts that change "
            "from minute to minute, so ratios of times and tokens/s between the runs of "
            "this report can stray from 1 for that reason alone, called significant or not "
            "(the repetitions of one run are not paired with another's). Bytes per step "
            "are exact whatever the load; within a run, the arms a paired comparison pairs "
            "ran back to back, under much the same load. As each run recorded it:")


def _overlap_unknown(results) -> list[str]:
    """A sentence per run of one host that recorded no end time (``run_interval``:
    an older run, one killed, or one still going) naming the runs it may have
    overlapped in time: every other run but one that ended before it started, which
    it cannot have run beside. ``[]`` where there is none."""
    from ipc_bench.analysis.results import STILL_RUNNING
    from ipc_bench.harness.environment import run_interval

    ids = results.run_ids
    spans = {r: run_interval(results.metadata[r]) for r in ids}
    out = []
    for r in ids:
        start, end = spans[r]
        if end is not None:
            continue
        maybe = [o for o in ids if o != r and not (
            start is not None and spans[o][1] is not None and spans[o][1] < start)]
        if not maybe:
            continue
        live = STILL_RUNNING in str((results.status_detail or {}).get(r) or "")
        why = ("it is still running" if live else
               "an older run, or one stopped without finishing its summary")
        out.append(f"Whether {r} overlapped in time on this host with {_listed(maybe, code=False)} "
                   f"is unknown: {r} recorded no end time ({why}).")
    return out


def _same_changes(results, base: str) -> str:
    """After "Same machine, software and commit": where the runs were all made from a
    dirty tree at that commit, that their uncommitted changes were the same by the
    digest of their diff (``environment.uncommitted_changes``; runs whose changes
    differ, or cannot be told apart, are listed as differences instead); ``''``
    otherwise."""
    from ipc_bench.harness.environment import SAME_CHANGES, uncommitted_changes

    ref = results.metadata[base].get("git")
    others = [results.metadata[r].get("git") for r in results.run_ids if r != base]
    if others and all(uncommitted_changes(ref, g) == SAME_CHANGES for g in others):
        return ("Every run was made from uncommitted changes to that commit, the same "
                "changes by the SHA-256 of their diff.")
    return ""


def environment_differences(results, base: str) -> list[str]:
    """How each loaded run's machine, software and scenario differ from the reference
    run ``base`` (``environment.compare_metadata``, the run's value first): ``b against
    a: package torch differs: 2.13.0 vs 2.12.0``, ``b ran scenario 'soak', a ran
    'decode-steady'``; ``[]`` when none does."""
    from ipc_bench.harness.environment import compare_metadata

    ref = results.metadata[base]
    out = []
    for r in results.run_ids:
        if r == base:
            continue
        md = results.metadata[r]
        out += [f"{r} against {base}: {line}" for line in compare_metadata(md, ref, (r, base))]
        if md.get("scenario") != ref.get("scenario"):
            out.append(f"{r} ran {_scenario_said(md)}, {base} ran "
                       f"{_scenario_said(ref).removeprefix('scenario ')}")
    return out


def _scenario_said(md: dict[str, Any]) -> str:
    """``scenario 'soak'`` (as ``environment_differences`` says it), or ``a scenario its
    metadata does not record`` (a hand-edited or foreign summary.json)."""
    name = md.get("scenario")
    return f"scenario {name!r}" if name else "a scenario its metadata does not record"


def reference_line(run_ids: list[str], base: str, given: bool = False) -> str:
    """The line over the list of differences between runs ``run_ids``, naming the
    reference run ``base`` and why it is the one (the baseline given, ``given``:
    ``--baseline`` named it, the first loaded or not; else the first loaded), and how a
    line reads."""
    why = ("the baseline given (`--baseline`)" if given or base != run_ids[0]
           else "the first loaded (`--baseline RUN_DIR` chooses another)")
    return (f"Reference: run {code_span(base)}, {why}. Every other run's machine, software and "
            f"scenario are compared with it; the settings that change the numbers are "
            f"compared between every two runs (against {code_span(base)} where it is one of "
            f"them); a line `RUN against OTHER: ...` gives RUN's value first.")


#: After the workload of a side-by-side row whose runs ran it with other settings.
UNLIKE_MARK = " ≠"
#: Under a side-by-side table with such rows (``UNLIKE_MARK``).
UNLIKE_NOTE = ("`≠`: two or more of the runs ran this workload with other settings "
               "(listed under Runs): a ratio of two runs that ran it with other settings "
               "is not given (`- (not comparable)`), a ratio given in the row is of two "
               "runs that ran it alike; each run's value stands on its own.")
#: A side-by-side ratio cell of two runs that ran the row's workload with other
#: settings (``UNLIKE_MARK``): no ratio, which would be quoted as a comparison.
UNLIKE_CELL = "- (not comparable)"


def _pair_key(ids: list[str], r: str, s: str) -> tuple[str, str]:
    """The key of runs ``r`` and ``s`` in ``unlike_workloads``: (later, earlier) in the
    order loaded (``ids``), as ``_run_pairs`` gives them."""
    return (r, s) if ids.index(r) > ids.index(s) else (s, r)


def _run_pairs(ids: list[str]) -> list[tuple[str, str]]:
    """Every pair of runs ``ids``, (later, earlier), in the order loaded."""
    return [(r, s) for j, r in enumerate(ids) for s in ids[:j]]


def _rows_of_both(results, r: str, s: str) -> list[str]:
    """The workloads runs ``r`` and ``s`` both have case rows of in ``results.cases``."""
    cases = getattr(results, "cases", None)
    if cases is None or not {"run_id", "workload"} <= set(cases.columns):
        return []
    mine = set(cases.loc[cases["run_id"] == r, "workload"].astype(str))
    return sorted(mine & set(cases.loc[cases["run_id"] == s, "workload"].astype(str)))


def setting_differences(results, base: str = "", exact: bool = False
                        ) -> tuple[list[str], dict[tuple[str, str], set[str]]]:
    """The settings that change the numbers and differ between any two loaded runs
    (``environment.compare_settings`` of every pair, ``_run_pairs``: a difference
    between two later runs is found even where the reference run shares no arm with
    them), and per pair (later, earlier, in load order), the workloads both ran with
    other settings. Lines: each difference once, naming its runs, the named run's
    value first (``_stated_once``): one run against every run it differs from where
    that covers most (``B against C, D: case setting transport differs: shm vs ipc
    (workload num_running=4)``), runs with the same difference against the same runs
    together (``C, D against B: ...``). A difference with the reference run ``base``
    (default: the first loaded) is said against it, never with it named first
    (``C, D against B: ...`` where B is the reference, not ``B against C, D``): the
    reference's value second; the runs a line is against are in load order, the
    reference first. ``exact``: the workloads are those whose bytes per step are not
    comparable (``compare_settings``' ``exact``: a difference in CPU pinning leaves
    them be)."""
    from ipc_bench.harness.environment import compare_settings

    ids = results.run_ids
    base = base or ids[0]
    said: dict[tuple[str, str], list[str]] = {}  # (run, line) -> the runs it is against
    unlike: dict[tuple[str, str], set[str]] = {}
    for r, s in _run_pairs([base] + [r for r in ids if r != base]):
        lines, workloads = compare_settings(results.metadata[r], results.metadata[s],
                                            exact, _rows_of_both(results, r, s))
        unlike[(r, s) if ids.index(r) > ids.index(s) else (s, r)] = set(workloads)
        back = compare_settings(results.metadata[s], results.metadata[r])[0]
        for line in lines:
            said.setdefault((r, line), []).append(s)
            flipped = _flipped(line, back)
            if flipped is not None:
                said.setdefault((s, flipped), []).append(r)
    merged: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (run, line), against in _stated_once(said, base):
        merged.setdefault((line, tuple(against)), []).append(run)
    return ([f"{', '.join(runs)} against {', '.join(against)}: {line}"
             for (line, against), runs in merged.items()], unlike)


def _flipped(line: str, lines: list[str]) -> Optional[str]:
    """The line of ``lines`` that states difference ``line`` (``name: A vs B tail``)
    with its values the other way round (``name: B vs A tail``); ``None`` if none."""
    head, _, rest = line.partition(": ")
    for other in lines:
        if not other.startswith(head + ": "):
            continue
        want = other[len(head) + 2:]
        for i in range(len(rest)):
            if not rest.startswith(" vs ", i):
                continue
            va, vb_tail = rest[:i], rest[i + 4:]
            if any(want == f"{vb_tail[:j]} vs {va}{vb_tail[j:]}"
                   for j in range(len(vb_tail) + 1)):
                return other
    return None


def _stated_once(said: dict[tuple[str, str], list[str]], base: str = ""
                 ) -> list[tuple[tuple[str, str], list[str]]]:
    """From ``said`` ((run, line) -> the runs it is against; each difference of two
    runs under both, where it could be turned round), the statements that give each
    difference once: greedily the one against the most runs (the first such) among
    those whose run is not the reference run ``base``, then those of ``base`` (so that
    a difference with the reference is said against it), each later one against the
    runs no statement gave it with yet, in the order found."""
    left = {k: list(v) for k, v in said.items()}
    order = list(said)
    chosen = []
    while any(left.values()):
        key = max(order, key=lambda k: (bool(left[k]) and k[0] != base, len(left[k])))
        chosen.append((key, left[key]))
        run, line = key
        for other in left[key]:  # the same difference, turned round, is said
            for k in order:
                if k[0] == other and other != run and run in left[k] and \
                        _flipped(k[1], [line]) is not None:
                    left[k].remove(run)
        left[key] = []
    return sorted(chosen, key=lambda c: order.index(c[0]))


def unlike_workloads(results, exact: bool = False) -> dict[tuple[str, str], set[str]]:
    """Per pair of runs (later, earlier: ``_run_pairs``), the workloads they ran with
    other settings (``setting_differences``): their side-by-side rows are not
    comparable; with ``exact``, those whose bytes per step are not (a setting of
    ``environment.TIMING_ONLY_SETTINGS`` alone leaves a byte row comparable)."""
    return setting_differences(results, exact=exact)[1]


#: What stands between two run labels in a ratio column's name (``ratio_column``): not
#: ``/``, which a run label can hold (``results.run_labels``: ``x/run``).
RATIO_SIGN = " ÷ "


def ratio_column(run: str, base: str) -> str:
    """The name of the side-by-side ratio column of run ``run`` over run ``base``:
    ``b ÷ a``, ``y/run ÷ x/run`` (``RATIO_SIGN``: a ``/`` there would read
    ``y/run / x/run``); both names shown as typed in a Markdown table's header
    (``render.verbatim``)."""
    return verbatim(verbatim(run), RATIO_SIGN, verbatim(base))


def side_by_side_caption(label: str, run_ids: list[str], base: str = "",
                         given: bool = False) -> str:
    """The line over a side-by-side table of metric ``label`` of runs ``run_ids`` (in
    load order): what its values are and which run its ratio columns divide by,
    ``base`` (default: the first): ``**output tokens/s** (geometric mean over
    repetitions; the ratio columns, `b ÷ a`, divide each run's geometric mean by that
    of run `a`, the first loaded)``; another run chosen by ``--baseline`` reads ``...
    by that of run `b`, the baseline given)``, as does the first run when ``--baseline``
    named it (``given``, as ``reference_line``). The columns are named as the table
    heads them (``ratio_column``)."""
    base = base or run_ids[0]
    cols = ", ".join(f"{code_span(ratio_column(r, base))}" for r in run_ids if r != base)
    why = "the baseline given" if given or base != run_ids[0] else "the first loaded"
    return (f"**{label}** (geometric mean over repetitions; the ratio column"
            f"{'' if len(run_ids) == 2 else 's'}, {cols}, divide"
            f"{'s' if len(run_ids) == 2 else ''} each run's geometric mean by that of run "
            f"{code_span(base)}, {why})")


def no_base_note(base: str, planned: bool = False) -> str:
    """The note under a side-by-side table with rows that baseline run ``base`` did not
    run: their ratio columns show ``-``. ``planned``: ``base`` recorded its grid
    (``planned_cases``), which holds no such case."""
    grid = (" (its grid holds no case of that workload, arm and codec)" if planned
            else " (workload, arm and codec)")
    return (f"`-` in the ratio columns of a row: run {code_span(base)} has no such case{grid}, so "
            "there is no mean to divide by.")


#: Why a baseline run's case of a side-by-side row is absent (``absent_base_cases``):
#: recorded but not finished, in its grid but never recorded (the run stopped before
#: it), recorded but left out on loading.
UNFINISHED, NOT_REACHED, LEFT_OUT = "unfinished", "not reached", "left out"


def planned_cases(metadata: dict[str, Any]) -> Optional[dict[tuple, str]]:
    """The grid a run's ``metadata`` recorded when it started (``cases``: every case it
    was to run), as (workload, arm, codec) -> a case id of it (``workload``: the
    case's labels as sorted ``k=v`` pairs, as ``CaseSpec.workload_key``); ``None``
    when the run recorded no grid."""
    cases = metadata.get("cases") if isinstance(metadata, dict) else None
    if not isinstance(cases, list) or not cases:
        return None
    out: dict[tuple, str] = {}
    for c in cases:
        if not isinstance(c, dict) or not isinstance(c.get("labels"), dict):
            continue
        workload = ",".join(f"{k}={v}" for k, v in sorted(c["labels"].items()))
        out.setdefault((workload, c.get("arm") or c.get("policy"), c.get("codec")),
                       str(c.get("case_id")))
    return out


def absent_base_cases(results, base: str) -> tuple[dict[tuple, str], bool]:
    """Why baseline run ``base`` (of ``results``, every case loaded, grouped by arm) has
    no finished case of a (workload, arm, codec): ``UNFINISHED`` (recorded, not
    finished: ``Results.unfinished``; or not recorded but named by the run's problems or
    ``status_detail`` as the case that failed or was running: one interrupted as it
    started), ``LEFT_OUT`` (in its grid, named by a warning of its loading:
    ``Results.warnings``), ``NOT_REACHED`` (in its grid, never recorded: the run stopped
    before it); and whether ``base`` recorded its grid (``planned_cases``), so that a row
    missing from all three is one its grid lacks."""
    cut = {(u["run_id"], u["case_id"]) for u in results.unfinished()}
    cases = frame_records(results.cases) if not results.cases.empty else []
    mine = {(r["workload"], r["policy"], r["codec"]): (r["run_id"], r["case_id"]) in cut
            for r in cases if r["run_id"] == base}
    absent = {k: UNFINISHED for k, unfinished in mine.items() if unfinished}
    plan = planned_cases(results.metadata.get(base) or {})
    why = unrecorded_case(results, base, (UNFINISHED, LEFT_OUT, NOT_REACHED))
    for key, case_id in (plan or {}).items():
        if key not in mine:
            absent[key] = why(case_id)
    return absent, plan is not None


def base_absent_note(base: str, why: str, rows: list[tuple]) -> str:
    """The note under a side-by-side table whose ``rows`` ((workload, arm, codec) each)
    show ``-`` in their ratio columns because baseline run ``base``'s case of each is
    absent for reason ``why`` (``NOT_REACHED``: the run stopped before it;
    ``LEFT_OUT``: left out on loading); ``UNFINISHED``: ``base_unfinished_note``."""
    if why == UNFINISHED:
        return base_unfinished_note(base, rows)
    named = ", ".join(f"{w} / {a} / {c}" for w, a, c in rows)
    one = len(rows) == 1
    if why == NOT_REACHED:
        return (f"`-` in the ratio columns of {named}: run {code_span(base)} stopped before it ran "
                f"{'that case' if one else 'those cases'} ({'it is' if one else 'they are'}"
                " in its grid; its section says why it stopped), so there is no mean to "
                "divide by.")
    return (f"`-` in the ratio columns of {named}: run {code_span(base)}'s "
            f"{'case was' if one else 'cases were'} left out when loaded (its section's "
            "warnings say why), so there is no mean to divide by.")


def base_unfinished_note(base: str, rows: list[tuple]) -> str:
    """The note under a side-by-side table with rows whose case baseline run ``base``
    ran but did not finish (``Results.unfinished``: interrupted, failed, killed):
    ``rows`` ((workload, arm, codec) each) show ``-`` in their ratio columns; no
    ``rows``: ``base`` finished no case at all (killed in its first case, say), so
    every ratio column is ``-``."""
    if not rows:
        return (f"`-` in every ratio column: run {code_span(base)}, the baseline, finished no case "
                "(its section says why), so there is no mean to divide by.")
    named = ", ".join(f"{w} / {a} / {c}" for w, a, c in rows)
    which = "that case but it" if len(rows) == 1 else "those cases but they"
    return (f"`-` in the ratio columns of {named}: run {code_span(base)} ran {which} did not "
            "finish (its section says why), so there is no mean to divide by.")


def withheld_side_note(held: list[dict[str, Any]]) -> Optional[str]:
    """The note under a side-by-side table of a timing whose cells of cases with
    withheld timings (``held``: their records; ``analysis.cores``) show ``-*``: the
    case tables' footnote (``cores.footnote``), then that a ratio drawn from such a
    cell is ``-`` too; ``None`` when ``held`` is empty."""
    from ipc_bench.analysis.cores import MARK, footnote

    line = footnote(held)
    if line is None:
        return None
    return (line.replace(f"{MARK} ", f"`{MARK}` ", 1)
            + f" `-{MARK}`: the run's cell of such a case; a ratio drawn from it is `-` too.")


def _held_cells(results, key: str) -> dict[tuple, dict[str, Any]]:
    """``(workload, policy, codec, run_id)`` -> a case record of that cell whose
    timings are withheld (``analysis.cores.is_withheld``), for a timing ``key``
    (``cores.TIMING_UNITS``); empty for any other metric (bytes are shown whatever the
    cores)."""
    from ipc_bench.analysis import cores

    if metric(key).unit not in cores.TIMING_UNITS or results.cases.empty:
        return {}
    return {(r["workload"], r["policy"], r["codec"], r["run_id"]): r
            for r in frame_records(results.cases) if cores.is_withheld(r)}


#: Marks a side-by-side cell that is its run's arithmetic mean over repetitions, not
#: its geometric mean (a value of 0 or less: ``stats.geomean_interval``), as the
#: comparison block marks one (``tables.ARITHMETIC_MARK``).
SIDE_ARITHMETIC_MARK = " †"

#: Under a side-by-side table with a ``SIDE_ARITHMETIC_MARK`` cell.
SIDE_ARITHMETIC_NOTE = (
    f"`{SIDE_ARITHMETIC_MARK.strip()}`: that run has a repetition with a value of 0 or "
    "less, so no geometric mean: its arithmetic mean over repetitions, which the ratio "
    "columns use for it, with no interval (no logarithm of such a value).")


#: The readings of a side-by-side ratio's interval (``side_reading``), each defined by
#: ``SIDE_READINGS`` in the note under the table (``side_interval_note``).
SIDE_WITHIN_NOISE, SIDE_INCONCLUSIVE, SIDE_SIGNIFICANT = ("within noise", "inconclusive",
                                                          "significant")
#: A side-by-side ratio of two runs whose repetitions each agree exactly (``SIDE_READINGS``).
SIDE_EXACT = "exact"
SIDE_READINGS = {
    SIDE_WITHIN_NOISE: "the interval holds 1 and stays within "
                       f"{1 + DETECTABLE:g}x either way",
    SIDE_INCONCLUSIVE: "it holds 1 but "
                       + INCONCLUSIVE_CLAUSE.removeprefix("inconclusive: the interval "),
    SIDE_SIGNIFICANT: "it excludes 1 (the Welch t test's p below 0.05, unadjusted)",
    SIDE_EXACT: "every repetition of each run has the same value (as bytes per step for "
                "a seed), so the ratio has no spread to draw an interval from"}
#: Under a side-by-side table with a ratio that has no interval because a run has fewer
#: than two repetitions with a value of its row (``_side_ratio``).
SIDE_NO_INTERVAL_NOTE = (
    "A ratio with no interval (a bare number such as `1.042`): one of its two runs has "
    "only one repetition with a value in that row, so there is no spread to draw an "
    "interval from.")


def side_reading(low: float, high: float) -> str:
    """The reading of a side-by-side ratio's 95 % interval ``[low, high]``, on its true
    ends, which ``stats.ratio_interval`` prints on their side of 1 and of the band's
    edges (``stats.interval_end``), so the reading is that of the ends as printed:
    ``SIDE_SIGNIFICANT`` where it
    excludes 1, else ``SIDE_INCONCLUSIVE`` where it reaches beyond 1.1x either way
    (``stats.inconclusive``), else ``SIDE_WITHIN_NOISE``: the rule of every "within
    noise" of the report (docs/comparisons.md#within-noise)."""
    if low > 1.0 or high < 1.0:
        return SIDE_SIGNIFICANT
    return SIDE_INCONCLUSIVE if inconclusive(low, high) else SIDE_WITHIN_NOISE


def side_interval_note(readings: Collection[str]) -> str:
    """The note under a side-by-side table whose ratio cells include intervals or
    ``SIDE_EXACT`` (``readings``: the words used, ``SIDE_READINGS``): what the
    intervals are (unpaired Welch t intervals of the runs' repetitions, carrying both
    runs' noise and any drift between them, unadjusted for the rows, not a run's own
    paired comparison) and what each word used means; with ``SIDE_EXACT`` alone, its
    meaning alone."""
    return _reading_note(readings, SIDE_READINGS, (
        "Ratio intervals (`1.042 [0.981, 1.097] within noise`): the 95 % Welch t "
        "interval of the difference of the two runs' mean log values over their "
        "repetitions (Welch-Satterthwaite degrees of freedom), as a ratio of geometric "
        "means. It is unpaired: the runs ran at other times, so their repetitions are "
        "not pairs, and it carries both runs' noise and any drift between the times "
        "they ran; it is unadjusted for the number of rows, and is not the paired "
        "interval of a run's own comparison."))


def _reading_note(readings: Collection[str], meanings: dict[str, str], head: str) -> str:
    """``head`` (what the intervals are) then what each reading word of ``readings``
    means (``meanings``), ``; `` between them; the words alone where ``SIDE_EXACT`` is
    the only one (no interval to describe)."""
    words = "; ".join(f"`{w}`: {meaning}" for w, meaning in meanings.items()
                      if w in readings)
    return words + "." if not set(readings) - {SIDE_EXACT} else f"{head} {words}."


def _side_ratio(ratio: float, samples, cells: tuple[tuple, tuple], arith: set,
                said: set[str]) -> str:
    """A side-by-side ratio cell, ``ratio`` (run over baseline) of the cells ``cells``
    (run's, baseline's: (workload, policy, codec, run_id) each) whose values over
    repetitions ``samples`` holds: with its 95 % unpaired interval and reading
    (``stats.welch_ratio``, ``side_reading``: ``1.042 [0.981, 1.097] within noise``)
    where both have 2 or more positive values and some spread; ``1.000 exact`` where
    neither has any spread; the bare ratio (``1.042``) where either has fewer than 2 or
    is an arithmetic mean (``arith``: no logarithm). Adds to ``said`` the reading, or
    ``SIDE_NO_INTERVAL_NOTE`` where a run lacked repetitions."""
    from ipc_bench.analysis.stats import point_text, ratio_interval, welch_ratio

    # never rounded onto 1 beside an interval that excludes it (``stats.point_text``);
    # a quotient of equal means that floating point left a few ulps off 1 is 1
    text = point_text(1.0 if math.isclose(ratio, 1.0, rel_tol=1e-12) else ratio, 3, 1.0)
    if any(c in arith for c in cells):
        return text
    _, low, high = welch_ratio(samples.get(cells[1], []), samples.get(cells[0], []))
    if low == low:
        said.add(side_reading(low, high))
        return f"{text} {ratio_interval(low, high)} {side_reading(low, high)}"
    if min(sum(v is not None and math.isfinite(v) for v in samples.get(c, []))
           for c in cells) < 2:
        said.add(SIDE_NO_INTERVAL_NOTE)
        return text
    said.add(SIDE_EXACT)
    return f"{text} {SIDE_EXACT}"


def _arithmetic_cells(results, key: str) -> set[tuple[str, str, str, str]]:
    """The (workload, policy, codec, run_id) of ``results.cases`` whose metric ``key``
    has a finite value of 0 or less, so that its side-by-side cell is the arithmetic
    mean over repetitions (``stats.geomean_interval``), not the geometric mean."""
    out = set()
    for group, vals in results.cases.groupby(["workload", "policy", "codec", "run_id"],
                                             sort=False, observed=True)[key]:
        finite = [float(v) for v in vals if v is not None and math.isfinite(float(v))]
        if finite and min(finite) <= 0:
            out.add(group)
    return out


def _side_by_side(results, key: str,
                  unlike: Optional[dict[tuple[str, str], set[str]]] = None,
                  base: str = "", absent: tuple[dict[tuple, str], bool] = ({}, False)
                  ) -> list[Block]:
    """Per (workload, policy, codec), the geometric mean over repetitions of metric
    ``key`` in each run (``stats.geomean_interval``, the throughput figure's points and
    the comparison block's arms; the arithmetic mean where a value is 0) and its
    ratio to run ``base``'s (default: the first run; a cell that is an arithmetic mean
    is marked ``SIDE_ARITHMETIC_MARK``, with ``SIDE_ARITHMETIC_NOTE``, and its ratio is
    bare), with the ratio's 95 % unpaired Welch t interval and its reading where both
    runs have 2 or more repetitions with a value (``_side_ratio``: ``1.042 [0.981,
    1.097] within noise``, ``inconclusive`` or ``significant``; ``1.000 exact`` where
    neither run's repetitions differ; the bare ratio, ``1.042``, where one has one),
    said under the table last (``_interval_notes``), under a caption naming that run
    as the denominator (``side_by_side_caption``); a row ``base`` has no case for shows
    ``-`` there, with a note (``no_base_note``), or, where ``base``'s case of it is in
    ``absent`` (``absent_base_cases``: not finished, not reached, left out on loading)
    or ``base`` finished none, another saying which (``base_absent_note``,
    ``base_unfinished_note``); a timing of a case whose
    timings are withheld (``analysis.cores``) shows ``-*`` and a ratio drawn from it
    ``-``, under the case tables' footnote (``withheld_side_note``); a workload
    two runs that both ran the row's arm ran with other settings (``unlike``:
    ``unlike_workloads``) is marked ``UNLIKE_MARK``, with a note, and a ratio of two
    such runs reads ``UNLIKE_CELL``, not a number; the
    ``output_tokens_per_s`` of a timed replay's row (``tables.is_timed``: over wall
    time) reads ``1,234 (wall)`` (``tables.tokens_name``), with ``SIDE_WALL_NOTE``."""
    from ipc_bench.analysis import cores
    from ipc_bench.analysis.stats import geomean_interval, performed
    from ipc_bench.report.tables import is_timed, tokens_name

    ids = results.run_ids
    given, base = bool(base), base or ids[0]
    unlike = unlike or {}
    entry = metric(key)
    samples = results.cases.groupby(["workload", "policy", "codec", "run_id"], sort=False,
                                    observed=True)[key].agg(list)  # over repetitions
    means = samples.map(lambda v: geomean_interval(v)[0])  # the figure's and block's arms
    held, arith = _held_cells(results, key), _arithmetic_cells(results, key)
    groups = side_by_side_order(list(dict.fromkeys((w, p, c) for w, p, c, _ in means.index)),
                                results.cases["codec"])
    timed = {g for g, sel in results.cases.groupby(["workload", "policy", "codec"],
                                                   sort=False, observed=True)
             if is_timed(frame_records(sel))}
    paced = _arrival_paced(results) if key == "output_tokens_per_s" else set()
    others = [r for r in ids if r != base]
    header = (["workload", "arm", "codec"] + [verbatim(r) for r in ids]
              + [ratio_column(r, base) for r in others])
    rows, missing, cut, said = [], False, {}, set()
    for group in groups:
        vals = dict((r, math.nan if group + (r,) in held or not performed(key, group[2])
                     else means.get(group + (r,), math.nan) * entry.scale) for r in ids)
        den = vals[base]
        if group + (base,) not in means.index:
            if group in absent[0]:
                cut.setdefault(absent[0][group], []).append(group)
            else:
                missing = True
        ratios = [("-" if not (den and den == den and vals[r] == vals[r]) else
                   UNLIKE_CELL if group[0] in unlike.get(_pair_key(ids, r, base), ()) else
                   ARRIVAL_BOUND_CELL if {group + (r,), group + (base,)} & paced else
                   _side_ratio(vals[r] / den, samples, (group + (r,), group + (base,)),
                               arith, said)) for r in others]
        marked = any(group[0] in unlike.get(pair, ()) for pair in _run_pairs(ids)
                     if all(group + (r,) in means.index for r in pair))
        rows.append([str(group[0]) + (UNLIKE_MARK if marked else ""), group[1], group[2]]
                    + [f"-{cores.MARK}" if group + (r,) in held else
                       tokens_name(key, _side_value(entry, vals[r]), group in timed
                                   and vals[r] == vals[r])
                       + (SIDE_ARITHMETIC_MARK if group + (r,) in arith
                          and vals[r] == vals[r] else "") for r in ids] + ratios)
    blocks: list[Block] = [("p", side_by_side_caption(entry.label, ids, base, given)),
                           ("table", header, rows)]
    wall = _cell_notes(key, bool(timed & set(groups)), rows, len(ids),
                       any(not performed(key, g[2]) for g in groups))
    gaps = [("p", line) for line in _run_gaps(means, groups, ids, base,
                                              lambda g, r: g + (r,) in held
                                              or not performed(key, g[2]))]
    return (blocks + wall + gaps + _side_notes(results, base, (missing, cut, absent[1]),
                                               list(held.values()), rows)
            + _interval_notes(said))


def _side_value(entry, value: float) -> str:
    """A side-by-side table's cell of metric ``entry`` (``metrics.Metric``) whose
    display value (already at ``entry.scale``) is ``value``: as the case tables print
    that metric (``Metric.fmt``: µs with one decimal, bytes and tokens/s whole, with
    thousands separators), so one column holds one precision (``90.9`` above
    ``168.2``, not ``90.97`` above ``168``); ``-`` for NaN or infinity."""
    return entry.fmt.format(value) if math.isfinite(value) else "-"


def _cell_notes(key: str, timed: bool, rows: list[list[str]], runs: int,
                unperformed: bool) -> list[Block]:
    """The notes under a side-by-side table (``_side_by_side``) on its marked cells:
    ``SIDE_WALL_NOTE`` (``timed``: a timed replay's row of ``output_tokens_per_s``),
    ``SIDE_ARRIVAL_NOTE``, ``SIDE_ARITHMETIC_NOTE`` (a value cell of ``rows``, the
    first ``runs`` after workload, arm and codec, so marked), ``SIDE_NOT_PERFORMED_NOTE``
    (``unperformed``: a row of a codec without the figure), each where it applies."""
    out: list[Block] = [("p", SIDE_WALL_NOTE)] if key == "output_tokens_per_s" and timed else []
    if any(ARRIVAL_BOUND_CELL in row for row in rows):
        out.append(("p", SIDE_ARRIVAL_NOTE))
    if any(c.endswith(SIDE_ARITHMETIC_MARK) for row in rows for c in row[3:3 + runs]):
        out.append(("p", SIDE_ARITHMETIC_NOTE))
    if unperformed:
        out.append(("p", SIDE_NOT_PERFORMED_NOTE))
    return out


def _interval_notes(said: set[str]) -> list[Block]:
    """The last notes under a side-by-side table, on its ratio cells (``_side_ratio``'s
    ``said``): ``side_interval_note`` where a cell has an interval or is exact, and
    ``SIDE_NO_INTERVAL_NOTE`` where one has no interval for want of repetitions."""
    readings = said & SIDE_READINGS.keys()
    return ([("p", side_interval_note(readings))] if readings else []) + (
        [("p", SIDE_NO_INTERVAL_NOTE)] if SIDE_NO_INTERVAL_NOTE in said else [])


def side_by_side_order(groups: list[tuple], codecs) -> list[tuple]:
    """The rows of a side-by-side table, ``groups`` ((workload, arm, codec)), in order:
    by workload in its natural size order (``results.workload_order``: ``num_running=4``
    before ``num_running=16`` and ``256``, whichever run holds it), then codec in the
    order ``codecs`` (the runs' ``codec`` column, in the order loaded: each run's
    ``--codecs`` order) first holds it, the single-process baseline last, then arm as a
    run's tables rank them (``stats.arm_rank``: send, send', cached, cached', then other
    arms as first seen): a codec's arms side by side, as in a run's case tables."""
    from ipc_bench.analysis.results import workload_order
    from ipc_bench.analysis.stats import arm_rank

    seen = {a: i for i, a in enumerate(dict.fromkeys(g[1] for g in groups))}
    order = [c for c in dict.fromkeys(codecs) if c != SINGLE_PROCESS_CODEC]
    rank = {c: i for i, c in enumerate(order + [SINGLE_PROCESS_CODEC])}
    return sorted(groups, key=lambda g: (workload_order(g[0]), str(g[0]),
                                         rank.get(g[2], len(rank)), str(g[2]),
                                         arm_rank(str(g[1])), seen[g[1]]))


def _run_gaps(means, groups: list[tuple], ids: list[str], base: str,
              explained) -> list[str]:
    """The notes under a side-by-side table on its ``-`` value cells that no other note
    explains: a run other than ``base`` (whose gaps ``_side_notes`` names) with no case
    of a row (``groups``: (workload, arm, codec)), said once for the whole column where
    it finished no case at all (as ``base_unfinished_note`` says it of ``base``), or
    any run whose case of a row has
    no value of the figure (``means``: the means by group and run; a case that counted
    no step has no per-step figure). ``explained(group, run)``: a cell said elsewhere
    (withheld, or a figure the codec does not have)."""
    absent: dict[str, int] = {}
    empty: dict[str, int] = {}
    for group in groups:
        for r in ids:
            if explained(group, r):
                continue
            if group + (r,) not in means.index:
                if r != base:
                    absent[r] = absent.get(r, 0) + 1
            elif means[group + (r,)] != means[group + (r,)]:  # NaN
                empty[r] = empty.get(r, 0) + 1
    ran = {key[-1] for key in means.index}
    out = [f"`-` in run {code_span(r)}'s column on {n} row{'' if n == 1 else 's'}: that run ran no "
           "case of the row's workload, arm and codec, or finished none." if r in ran else
           f"`-` in run {code_span(r)}'s column: that run finished no case (its section says why)."
           for r, n in absent.items()]
    out += [f"`-` in run {code_span(r)}'s column on {n} row{'' if n == 1 else 's'} where "
            f"it has the case: the case has no value of this figure (one that counted no step has no "
            "per-step figures)." for r, n in empty.items()]
    return out


#: Under a side-by-side table of bytes with a row left unmarked that the timing tables
#: mark ``UNLIKE_MARK`` (``environment.TIMING_ONLY_SETTINGS``).
TIMING_ONLY_NOTE = (
    "Bytes rows are not marked `≠` for a difference in "
    + " or in ".join(f"{words} (`{name}`)" for name, words in TIMING_ONLY_SETTINGS.items())
    + ": those change how fast a step runs, not what it carries.")


def _marked(unlike: dict[tuple[str, str], set[str]]) -> set[str]:
    """The workloads that some pair of runs in ``unlike``
    (``unlike_workloads``) ran with other settings."""
    return set().union(*unlike.values()) if unlike else set()


def _arrival_paced(results) -> set[tuple]:
    """The (workload, policy, codec, run) of ``results``' timed replay cases not all
    load-bound (``pace.replay_pace``, as ``stats.arrival_bound``): their wall tok/s
    follow the trace, so no side-by-side ratio is drawn from them."""
    from ipc_bench.analysis.pace import all_load_bound

    cases = results.cases
    if cases.empty or "trace_speedup" not in cases.columns:
        return set()
    out = set()
    for g, sel in cases.groupby(["workload", "policy", "codec", "run_id"], sort=False,
                                observed=True):
        timed = [r for r in case_records(sel) if r.get("trace_speedup") is not None]
        if timed and not all_load_bound(timed):
            out.add(g)
    return out


#: A side-by-side ratio cell of a timed replay arrival-bound in either run
#: (``_arrival_paced``), as the comparison tables withhold it.
ARRIVAL_BOUND_CELL = "- (arrival-bound)"
#: Under a side-by-side table with such a cell.
SIDE_ARRIVAL_NOTE = (
    "`- (arrival-bound)`: a timed replay that is not load-bound in every case of both "
    "runs: its wall tok/s follow the trace's arrivals, so their ratio says nothing of "
    "the runs' speed, and none is given (as in each run's comparison).")
#: Under a side-by-side table of a figure the single-process baseline does not have.
SIDE_NOT_PERFORMED_NOTE = (
    "`-` in a row of codec `none`: the single-process baseline serializes and sends "
    "nothing, so it has no such figure.")
#: Under a side-by-side table of ``output_tokens_per_s`` with a timed replay's row.
SIDE_WALL_NOTE = (
    "`(wall)`: a timed replay's output tokens, warm-up included, over wall time, first "
    "arrival to last completion (arrival-bound where the arrivals set the pace, "
    "load-bound where requests queued and kept the engine busy), as `out tok/s (wall)` in its case "
    "table, and its ratio columns are of that figure where it is load-bound in both runs; "
    "the other rows' are over the busy time of their counted steps.")


def _side_notes(results, base: str, missing: tuple[bool, dict[str, list[tuple]], bool],
                held: list[dict[str, Any]], rows: list[list[str]]) -> list[Block]:
    """The notes under a side-by-side table (``_side_by_side``): why ratios are ``-``
    (``missing``: whether some row has no case of ``base``, the rows whose case of
    ``base`` is absent per reason, ``absent_base_cases``, and whether ``base`` recorded
    its grid), withheld timings (``held``) and rows marked ``UNLIKE_MARK``."""
    out: list[Block] = []
    none, cut, planned = missing
    if (none or cut) and not (results.cases["run_id"] == base).any():
        out.append(("p", base_unfinished_note(base, [])))
    else:
        for why in (UNFINISHED, NOT_REACHED, LEFT_OUT):
            if cut.get(why):
                out.append(("p", base_absent_note(base, why, cut[why])))
        if none:
            out.append(("p", no_base_note(base, planned)))
    held_note = withheld_side_note(held)
    if held_note:
        out.append(("p", held_note))
    if any(row[0].endswith(UNLIKE_MARK) for row in rows):
        out.append(("p", UNLIKE_NOTE))
    return out


#: The figure whose cached/send effect a report of several runs compares between runs
#: (``_effect_blocks``).
EFFECT_METRIC = "output_tokens_per_s"
#: Under the effect table (``_effect_blocks``): what a verdict that changed is not.
EFFECT_VERDICT_NOTE = (
    "A verdict that differs between runs (one run's comparison `significant`, another's "
    "`no significant difference after Holm`) is not by itself evidence that the effect "
    "changed: the interval of the effect's ratio is, and it reads `significant` only "
    "where it excludes 1.")


def run_effects(results, key: str = EFFECT_METRIC) -> dict[tuple, dict[str, Any]]:
    """Per (workload, codec, transport, model, run) of ``results.cases`` (several runs),
    the run's own cached/send comparison of metric ``key`` as its pair table gives it
    (``stats.summarize_pairs`` with its ``--ci-method``: ``ratio``, ``ratio_low``,
    ``ratio_high``, ``n``, and that ``method``) and ``logs``' source, ``ratios``: its
    per-repetition cached/send ratios (``stats.paired``); left out: a pair whose timings are withheld
    (``analysis.cores``) or an arrival-bound replay's (``stats.arrival_bound``), which
    its pair table gives no ratio."""
    from ipc_bench.analysis.stats import (arrival_bound, paired, results_ci_method,
                                          summarize_pairs)
    from ipc_bench.report.findings import pair_records, withheld_keys

    out = {}
    for run in results.run_ids:
        cases = results.cases[results.cases["run_id"] == run]
        pairs = paired(cases, key)
        if pairs.empty:
            continue
        method = results_ci_method({run: results.metadata.get(run) or {}})
        withheld = withheld_keys(cases) if metric(key).unit in cores.TIMING_UNITS else set()
        for r in summarize_pairs(pairs, method=method):
            at = (r["workload"], r["codec"], r.get("transport"), r.get("model"))
            if at[:3] in withheld or arrival_bound(
                    [c for p in pair_records(cases, at) for c in p]):
                continue
            sel = pairs[(pairs["workload"] == at[0]) & (pairs["codec"] == at[1])]
            for col, value in (("transport", at[2]), ("model", at[3])):
                if col in sel.columns and value is not None and value == value:
                    sel = sel[sel[col] == value]
            out[at + (run,)] = dict(r, ratios=list(sel["ratio"]), method=method)
    return out


def effect_caption(run_ids: list[str], base: str, given: bool = False) -> str:
    """The line over the effect table (``_effect_blocks``) of runs ``run_ids`` against
    run ``base`` (``given``: chosen by ``--baseline``)."""
    cols = ", ".join(code_span(ratio_column(r, base)) for r in run_ids if r != base)
    one = len(run_ids) == 2
    why = "the baseline given" if given or base != run_ids[0] else "the first loaded"
    return (f"**cached/send output tokens/s, run by run** (each run's cell: its paired "
            f"ratio over its repetitions with its interval where it has one, as in its "
            f"own `cached against send` table; the ratio column{'' if one else 's'}, {cols}, divide"
            f"{'s' if one else ''} the geometric mean of each run's per-repetition "
            f"ratios by that of run {code_span(base)}, {why}: whether the policy's effect changed "
            "between the runs)")


#: Why a run's cell of the effect table is ``-`` (``effect_no_base_note``,
#: ``effect_no_run_note``).
EFFECT_NONE = ("no such cached/send ratio (it did not compare cached with send in that "
               "workload and codec, or its own table gives that pair no ratio)")


def effect_no_base_note(base: str) -> str:
    """The note under the effect table (``_effect_blocks``) with rows in which baseline
    run ``base`` has no cell (``-``): their ratio columns show ``-``, as
    ``no_base_note`` says of a side-by-side table's row."""
    return (f"`-` in the ratio columns of a row where run {code_span(base)}'s cell is `-`: "
            f"that run has {EFFECT_NONE}, so there is no effect to divide by; the other "
            "runs' cells are their own effects.")


def effect_no_run_note(run: str, base: str, rows: int) -> str:
    """The note under the effect table (``_effect_blocks``) on the ``rows`` rows in which
    run ``run`` has no cell (``-``) but baseline run ``base`` has: their cells of
    ``run``'s ratio column show ``-`` for want of ``run``'s effect, not ``base``'s."""
    return (f"`-` in column {code_span(ratio_column(run, base))} on {rows} "
            f"row{'' if rows == 1 else 's'} where run {code_span(run)}'s cell is `-`: that "
            f"run has {EFFECT_NONE}, so it has no effect to divide by run "
            f"{code_span(base)}'s.")


def effect_interval_note(readings: Collection[str]) -> str:
    """The note under the effect table on its ratio cells' intervals and the readings
    used (``readings``, ``SIDE_READINGS``' words); with ``SIDE_EXACT`` alone, its
    meaning alone (as ``side_interval_note``)."""
    meanings = dict(SIDE_READINGS, **{SIDE_EXACT: (
        "every repetition of each run has the same cached/send ratio, so the ratio of "
        "the runs' effects has no spread to draw an interval from")})
    return _reading_note(readings, meanings, (
        "Effect ratios (`1.042 [0.981, 1.097] within noise`): the 95 % Welch t interval "
        "of the difference of the two runs' mean log cached/send ratios over their "
        "repetitions (Welch-Satterthwaite degrees of freedom), as a ratio of their "
        "geometric means. Each run's ratios pair its own arms, but the two runs' "
        "repetitions are not pairs, so it carries both runs' noise; it is unadjusted for "
        "the number of rows."))


def _merged_effects(effects: dict[tuple, dict]) -> tuple[dict[tuple, dict], dict]:
    """``run_effects``' ``effects`` keyed (workload, codec, None, None, run) where each
    run compared each workload and codec on one transport and model, so that runs that
    ran it on other ones meet in one row of the effect table, and ``origin``: (workload,
    codec, run) -> that run's (transport, model), from its cases, which tells such runs
    apart whatever their metadata records; else ``effects`` as they are and ``{}``."""
    keys: dict[tuple, list] = {}
    for k in effects:
        keys.setdefault((k[0], k[1], k[4]), []).append(k)
    if not all(len(v) == 1 for v in keys.values()):
        return effects, {}
    return ({(k[0], k[1], None, None, k[4]): v for k, v in effects.items()},
            {(k[0], k[1], k[4]): (k[2], k[3]) for k in effects})


def effect_cell(row: dict[str, Any]) -> str:
    """A run's own cell of the effect table: its ``run_effects`` row ``row`` (a
    ``stats.summarize_pairs`` row, with its ``method``) as its pair table prints the
    ratio (``tables.ratio_text``: ``1.100 [1.051, 1.151]``), and, where it has 2 or more
    pairs but fewer than its method's interval needs (``stats.min_pairs``), why there is
    no interval, in the findings' words: ``0.910 (no interval: a percentile-bootstrap
    interval needs >= 34 pairs)``. A run of one repetition keeps the bare ratio
    (``SIDE_NO_INTERVAL_NOTE``'s case)."""
    from ipc_bench.analysis.stats import INTERVAL_NAMES, min_pairs
    from ipc_bench.report.tables import ratio_text

    text = ratio_text(row["ratio"], row["ratio_low"], row["ratio_high"])
    method, low = row.get("method") or "t", row["ratio_low"]
    if (low is None or low != low) and row["ratio"] == row["ratio"] \
            and 2 <= int(row.get("n") or 0) < min_pairs(method):
        text += (f" (no interval: a {INTERVAL_NAMES[method]} interval needs >= "
                 f"{min_pairs(method)} pairs)")
    return text


def effect_method_notes(results, runs: Collection[str] = ()) -> list[str]:
    """Under the effect table, for each run of ``runs`` (default every run; the table's
    own, those with a cell) compared with ``--ci-method sign`` or
    ``bootstrap``: its cells are that method's point (the median of its per-repetition
    ratios) and interval, as its own pair table prints them, while the ratio columns
    divide geometric means, so a cell and its column can disagree (two runs' equal
    medians beside a ratio of 0.95). ``[]`` where every run used ``t``."""
    from ipc_bench.analysis.stats import RATIO_POINTS, results_ci_method

    out = []
    for r in (r for r in results.run_ids if not runs or r in runs):
        method = results_ci_method({r: results.metadata.get(r) or {}})
        if method != "t":
            out.append(f"Run {code_span(r)} was compared with `--ci-method {method}`: its "
                       f"cells are the {RATIO_POINTS[method]} of its per-repetition ratios "
                       "with that method's interval where it has pairs enough for one, "
                       "as its own pair table gives them, while the ratio columns divide "
                       "geometric means, so its cell and a ratio column can disagree.")
    return out


def _effect_blocks(results, base: str = "",
                   unlike: Optional[dict[tuple[str, str], set[str]]] = None) -> list[Block]:
    """The effect table of a report of several runs: per (workload, codec, transport,
    model) that any run compared cached with send in (``run_effects``), each run's
    paired cached/send tokens/s ratio and interval
    (``effect_cell``: ``tables.ratio_text``, as its pair table prints it, and why a run
    of too few pairs for its method's interval has none) and each other run's over
    ``base``'s: the quotient of the geometric means of their per-repetition ratios with
    its 95 % unpaired Welch interval and reading (``_side_ratio``, as the side-by-side
    cells; ``UNLIKE_CELL`` where the runs ran the workload with other settings,
    ``unlike``, or on another transport or model, and the workload marked
    ``UNLIKE_MARK`` as in the side-by-side rows), under ``effect_caption``, over
    ``effect_no_base_note`` (where ``base`` has no cell in a row: its ratio columns
    ``-``), ``effect_no_run_note`` (each other run without a cell where ``base`` has
    one: its ratio column ``-``), ``effect_interval_note`` (where a cell has an interval or is exact),
    ``effect_method_notes``, ``SIDE_NO_INTERVAL_NOTE`` (where one lacks it for want of
    repetitions) and ``EFFECT_VERDICT_NOTE`` (where one has an interval); ``[]`` where
    fewer than two runs have a cell. Where each run compared a (workload, codec) on one
    transport and model, rows are per (workload, codec) (``_merged_effects``), so a run
    on another transport or model meets the others in its row."""
    from ipc_bench.analysis.stats import welch_ratio
    from ipc_bench.report.plots import codec_rank
    from ipc_bench.analysis.results import workload_order

    ids = results.run_ids
    given, base = bool(base), base or ids[0]
    unlike = unlike or {}
    effects, origin = _merged_effects(run_effects(results))
    groups = sorted(dict.fromkeys(k[:4] for k in effects),
                    key=lambda g: (workload_order(g[0]), str(g[0]), codec_rank(g[1]),
                                   str(g[1]), str(g[2]), str(g[3])))
    if len({k[4] for k in effects}) < 2:
        return []
    samples = {k: v["ratios"] for k, v in effects.items()}
    rows, said = [], set()
    for g in groups:
        cells = [effect_cell(effects[g + (r,)]) if g + (r,) in effects else "-"
                 for r in ids]
        def apart(r: str, s: str) -> bool:  # other settings, or transport or model
            return (g[0] in unlike.get(_pair_key(ids, r, s), ())
                    or origin.get(g[:2] + (r,)) != origin.get(g[:2] + (s,)))

        ratios = []
        for r in (r for r in ids if r != base):
            point = welch_ratio(samples.get(g + (base,), []), samples.get(g + (r,), []))[0]
            ratios.append("-" if point != point else UNLIKE_CELL if apart(r, base) else
                          _side_ratio(point, samples, (g + (r,), g + (base,)), set(), said))
        marked = any(apart(*pair) for pair in _run_pairs(ids)
                     if all(g + (r,) in effects for r in pair))
        rows.append([str(g[0]) + (UNLIKE_MARK if marked else ""), str(g[1])] + cells + ratios)
    readings = said & SIDE_READINGS.keys()
    header = (["workload", "codec"] + [verbatim(r) for r in ids]
              + [ratio_column(r, base) for r in ids if r != base])
    return ([("p", effect_caption(ids, base, given)), ("table", header, rows)]
            + ([("p", effect_no_base_note(base))]
               if any(g + (base,) not in effects for g in groups) else [])
            + [("p", effect_no_run_note(r, base, n)) for r, n in (
                (r, sum(g + (base,) in effects and g + (r,) not in effects for g in groups))
                for r in ids if r != base) if n]
            + ([("p", effect_interval_note(readings))] if readings else [])
            + [("p", line) for line in effect_method_notes(
                results, {r for g in groups for r in ids if g + (r,) in effects})]
            + ([("p", SIDE_NO_INTERVAL_NOTE)] if SIDE_NO_INTERVAL_NOTE in said else [])
            + ([("p", EFFECT_VERDICT_NOTE)] if readings - {SIDE_EXACT} else []))


class NothingShared(ResultsWarning):
    """A run of a multi-run report that shares no finished case (workload, arm and
    codec) with the reference run, so that no side-by-side row pairs them
    (``unshared_lines``): ``bench.py report`` prints it as one warning line on stderr,
    as the report says it over its side-by-side tables."""


def _ordered(values, order=()) -> list[str]:
    """``values`` as text, once each: those in ``order`` in its order, then the rest in
    the order given."""
    seen = list(dict.fromkeys(str(v) for v in values))
    return [v for v in order if v in seen] + [v for v in seen if v not in order]


_NUM_RUNNING = re.compile(r"num_running=(\d+)")


#: The arms a run runs -> the options that make it run them (``cli.run``): ``--aa``
#: runs one policy and its copy, ``--async-scheduling`` the cached policy alone, so no
#: one run runs the arms of two of these that share none.
ARM_OPTIONS = {
    frozenset({SEND, CACHED}): f"--policies {SEND},{CACHED}",
    frozenset({SEND}): f"--policies {SEND}", frozenset({CACHED}): f"--policies {CACHED}",
    frozenset({SEND, SEND + "'"}): "--aa",
    frozenset({CACHED, CACHED + "'"}): f"--aa --policies {CACHED}",
    frozenset({CACHED, ASYNC_ARM}): "--async-scheduling",
    frozenset({ASYNC_ARM}): f"--async-scheduling --policies {CACHED}",
    frozenset({ASYNC_ARM, ASYNC_ARM + "'"}): "--aa --async-scheduling"}


#: The options that choose a run's arms (``ARM_OPTIONS``).
ARM_FLAGS = ("--policies", "--aa", "--async-scheduling")


def _bridge(theirs: list[str], ours: list[str]) -> Optional[frozenset]:
    """The arms of the first ``ARM_OPTIONS`` run that shares an arm with each of two
    runs of arms ``theirs`` and ``ours`` (a run of send, cached shares send with an
    ``--aa`` run, cached with an ``--async-scheduling`` one); ``None`` where none does
    (an ``--aa`` run's send, send' against cached+async, cached+async')."""
    return next((arms for arms in ARM_OPTIONS
                 if not arms.isdisjoint(theirs) and not arms.isdisjoint(ours)), None)


def _arm_hint(theirs: list[str], ours: list[str], names: tuple[str, str]) -> str:
    """How to compare runs ``names`` (the run's, the reference's) whose arms
    ``theirs`` and ``ours`` share none: all of them in one run where one run can make
    them (``ARM_OPTIONS``: ``run arms cached, cached+async in one run
    (`--async-scheduling`)``); else a run beside them that shares an arm with each
    (``_bridge``), which each then pairs with as the reference: ``add a run with arm
    options `--policies send,cached` (no `--aa` or `--async-scheduling`): it shares send
    with `a` and cached with `b`, so each pairs with it as the reference (`--baseline`);
    no one run makes arms send, send', cached, cached+async``; else each run's command
    again with the other's arm options in place of its own, named where known: ``run
    `b`'s command again with `a`'s arm options in place of its own (`--aa`, not `--aa
    --async-scheduling`), or `a`'s with `b`'s in place of its own (...): no one run
    makes arms ..., nor shares an arm with each``."""
    order = [SEND, SEND + "'", CACHED, CACHED + "'", ASYNC_ARM, ASYNC_ARM + "'"]
    both = _ordered(theirs + ours, order)
    if set(both) <= {SEND, CACHED}:
        return f"run both policies in one run (`--policies {SEND},{CACHED}`)"
    one = ARM_OPTIONS.get(frozenset(both))
    if one:
        return f"run arms {', '.join(both)} in one run (`{one}`)"
    run, base = map(code_span, names)
    bridge = _bridge(theirs, ours)
    if bridge:
        given = ARM_OPTIONS[bridge]
        absent = " or ".join(f"`{f}`" for f in ARM_FLAGS if f not in given.split())
        shared = [", ".join(a for a in _ordered(bridge, order) if a in arms)
                  for arms in (ours, theirs)]
        return (f"add a run with arm options `{given}` (no {absent}): it shares "
                f"{shared[0]} with {base} and {shared[1]} with {run}, so each pairs with "
                f"it as the reference (`--baseline`); no one run makes arms "
                f"{', '.join(both)}")
    given = [ARM_OPTIONS.get(frozenset(arms)) for arms in (theirs, ours)]
    how = (f"arm options in place of its own (`{given[1]}`, not `{given[0]}`), or {base}'s "
           f"with {run}'s in place of its own (`{given[0]}`, not `{given[1]}`)"
           if all(given) else
           f"`--policies`, `--aa` and `--async-scheduling` in place of its own, or "
           f"{base}'s with {run}'s")
    return (f"run {run}'s command again with {base}'s {how}: no one run makes arms "
            f"{', '.join(both)}, nor shares an arm with each")


def _shared_hint(what: str, theirs: list[str], ours: list[str],
                 names: tuple[str, str] = ("B", "A")) -> str:
    """How to compare runs ``names`` (the run's, the reference's) that differ in
    ``what`` (``workload``, ``arm``, ``codec``), with values ``theirs`` and ``ours``: run
    them in one run, with the option that chooses them where there is one; arms no one
    run makes, a run that shares an arm with each, or each run's command with the
    other's arm options (``_arm_hint``)."""
    from ipc_bench.wire.codecs import CODECS

    both = _ordered(theirs + ours, CODECS)
    these = "both" if len(both) == 2 else "those"
    if what == "codec":
        given = [c for c in both if c in CODECS]
        return (f"run {these} codecs in one run"
                + (f" (`--codecs {','.join(given)}`)" if given else "")
                + ": codecs are compared within a run, not across runs")
    if what == "arm":
        return _arm_hint(theirs, ours, names)
    counts = [_NUM_RUNNING.fullmatch(w) for w in both]
    if all(counts):
        grid = sorted({int(m.group(1)) for m in counts})
        return ("run those workloads in one run, or each run with the other's "
                f"(`--num-running {','.join(map(str, grid))}`)")
    return "run both with the same workloads (the same scenario and workload options)"


def unshared_line(run: str, base: str, theirs: Collection[tuple], ours: Collection[tuple],
                  scenarios: tuple[Any, Any] = (None, None)) -> str:
    """The line of a multi-run report (over its side-by-side tables, and on stderr:
    ``NothingShared``) on run ``run``, whose finished cases ``theirs`` ((workload, arm,
    codec) each) share none with those of reference run ``base`` (``ours``), so that
    no row pairs them: what differs (the scenarios, ``scenarios``: ``run``'s and
    ``base``'s, where they differ; else each of workload, arm and codec whose values the
    runs share none of, or, where they share some of each, each that differs) and how
    to compare them: ``No side-by-side ratio for run `b`: it shares no case (workload,
    arm and codec) with run `a`, the reference: codec pickle in `b` vs msgpack in `a`.
    To compare them, run both codecs in one run (`--codecs msgpack,pickle`): codecs are
    compared within a run, not across runs.``"""
    head = (f"No side-by-side ratio for run {code_span(run)}: it shares no case (workload, arm "
            f"and codec) with run {code_span(base)}, the reference: ")
    if scenarios[0] != scenarios[1]:
        return (head + f"scenario {scenarios[0]} in {code_span(run)} vs {scenarios[1]} in "
                f"{code_span(base)}."
                " To compare them, run the same scenario in both.")
    parts = [(what, _ordered(c[i] for c in theirs), _ordered(c[i] for c in ours))
             for i, what in enumerate(("workload", "arm", "codec"))]
    apart = [p for p in parts if set(p[1]).isdisjoint(p[2])] or [
        p for p in parts if set(p[1]) != set(p[2])]
    if not apart:
        return (head + "each runs the others' workloads, arms and codecs, but never the "
                "same three together. To compare them, run the same grid in both.")
    differ = "; ".join(f"{what} {', '.join(a)} in {code_span(run)} vs {', '.join(b)} in "
                       f"{code_span(base)}" for what, a, b in apart)
    how = "; ".join(_shared_hint(what, a, b, (run, base)) for what, a, b in apart)
    return f"{head}{differ}. To compare them, {how}."


def _unshared(results, base: str = "") -> tuple[str, dict, list[str]]:
    """The reference run (``base``, default the first loaded), each run's finished
    cases of ``results`` as (workload, arm, codec) keys in the run's case order, and the
    runs, in load order, that finished a case but none the reference finished (none
    where the reference finished none: ``base_unfinished_note`` says so)."""
    cases = results.cases
    base = base or results.run_ids[0]
    if cases.empty:
        return base, {}, []
    # in the run's case order (a set's would change from one process to the next)
    have = {r: dict.fromkeys(zip(sel["workload"].astype(str), sel["policy"], sel["codec"]))
            for r, sel in cases.groupby("run_id", sort=False, observed=True)}
    if not have.get(base):
        return base, have, []
    return base, have, [r for r in results.run_ids if r != base and have.get(r)
                        and not have[r].keys() & have[base].keys()]


def unshared_lines(results, base: str = "") -> list[str]:
    """``unshared_line`` of each run of ``results`` (finished cases, grouped by arm)
    that shares no (workload, arm, codec) with reference run ``base`` (default the
    first loaded), in load order; none for a run that finished no case, or where
    ``base`` finished none (``base_unfinished_note`` says so)."""
    base, have, apart = _unshared(results, base)
    scenario = {r: (results.metadata.get(r) or {}).get("scenario")
                for r in results.run_ids}
    return [unshared_line(r, base, have[r], have[base], (scenario[r], scenario[base]))
            for r in apart]


def no_row_compares(results, base: str = "",
                    unlike: Optional[dict[tuple[str, str], set[str]]] = None) -> bool:
    """Whether no side-by-side row gives a ratio between runs ``results`` (finished
    cases): every run finished a case, and no run but the reference ``base`` (default
    the first loaded) finished one of the same workload, arm and codec that it ran with the
    same settings (``unlike``: ``unlike_workloads`` with ``exact``, the byte rows', which
    compare where the timing rows' do)."""
    base, have, _ = _unshared(results, base)
    if len(results.run_ids) < 2 or not all(have.get(r) for r in results.run_ids):
        return False  # a run that finished no case: its own section says so
    ids, unlike = results.run_ids, unlike or {}
    return not any(key[0] not in unlike.get(_pair_key(ids, r, base), ())
                   for r in ids if r != base
                   for key in have.get(r, {}).keys() & have[base].keys())


def own_findings_blocks(results, base: str = "",
                        unlike: Optional[dict[tuple[str, str], set[str]]] = None
                        ) -> list[Block]:
    """Under the Runs section of a report of runs ``results`` (finished cases) where no
    side-by-side row compares them (``no_row_compares``): that no ratio between them is
    given, that each run's own findings are in its section below, and the command that
    renders each run's report alone (``analysis.results.report_pointer``, quoted for a
    shell); ``[]`` otherwise."""
    from ipc_bench.analysis.results import report_pointer

    if not no_row_compares(results, base, unlike):
        return []
    ids = results.run_ids
    base = base or ids[0]
    sections = ", ".join(f"Run {code_span(r)}" for r in ids)
    commands = "; ".join(
        f"{code_span(r)}: "
        f"{code_span(report_pointer(results.paths.get(r) or r, results.metadata.get(r)))}"
        for r in ids)
    return [("p", f"No row of the side-by-side tables below compares these runs: no other "
                  f"run has a case of {code_span(base)}, the reference, that it ran alike "
                  "(the same workload, arm and codec, with the same settings), so no ratio "
                  f"between runs is given. Each run's own findings are in its section below ({sections}), "
                  f"as its own report gives them, which renders with ({commands}).")]


def _comparison_blocks(results, base: str = "", figures: bool = True) -> list[Block]:
    """The opening of a multi-run report: the runs (their differences against run
    ``base``, default the first), side-by-side tables of
    ``SIDE_BY_SIDE`` (ratios to run ``base``, default the first), over them a note on
    each run that shares no case with ``base`` (``unshared_lines``, warned of too:
    ``NothingShared``), under them the cached/send effect run by run
    (``_effect_blocks``), and every run's
    tokens/s in one figure (``NO_FIGURES_NOTE`` instead when ``figures`` is false)."""
    from ipc_bench.report import plots

    blocks = _runs_blocks(results, base)
    unlike = unlike_workloads(results)
    unlike_bytes = unlike_workloads(results, exact=True)
    absent = absent_base_cases(results, base or results.run_ids[0])
    results = results.finished()
    blocks.extend(own_findings_blocks(results, base, unlike_bytes))
    blocks.append(("h", 2, "Side by side"))
    for line in unshared_lines(results, base):
        blocks.append(("note", line))
        warnings.warn(NothingShared(line.replace("`", "")))
    for key in SIDE_BY_SIDE:
        if key in results.cases.columns:
            exact = metric(key).unit == "B"
            blocks.extend(_side_by_side(results, key, unlike_bytes if exact else unlike,
                                        base, absent))
            if exact and _marked(unlike) - _marked(unlike_bytes):
                blocks.append(("p", TIMING_ONLY_NOTE))
    blocks.extend(_effect_blocks(results, base, unlike))
    if not figures:
        blocks.append(("note", NO_FIGURES_NOTE))
        return blocks
    try:
        png, what = plots.draw(plots.throughput, results)
        blocks.append(("fig", "compare-throughput.png", "Output tokens/s, all runs",
                       caption("throughput", what), png))
    except plots.NoData as exc:
        blocks.append(("note", "Output tokens/s, all runs: not shown, "
                               f"{str(exc).rstrip('.')}."))
    return blocks


def run_title(md: dict, cases, run_id: str) -> str:
    """The title of the report of one run ``run_id``: ``ipc-bench report: decode-steady
    (`RUN`)``, the scenario its metadata ``md`` records; where that is missing or was
    left out (not a text), the one every case of the run in ``cases``
    (``Results.cases``) records; where they record none or several, the title without
    a scenario, ``ipc-bench report (`RUN`)``."""
    scenario = md.get("scenario")
    if not isinstance(scenario, str) or not scenario:
        mine = cases[cases["run_id"] == run_id] if "run_id" in cases.columns else cases
        seen = list(mine["scenario"]) if "scenario" in mine.columns else []
        scenario = (seen[0] if seen and all(isinstance(s, str) and s for s in seen)
                    and len(set(seen)) == 1 else None)
    if scenario is None:
        return f"ipc-bench report ({code_span(run_id)})"
    return f"ipc-bench report: {scenario} ({code_span(run_id)})"


def build_blocks(results, command: str, base: str = "", figures: bool = True) -> list[Block]:
    """All blocks of the report of ``results`` (one run or several), in order: a list
    of ``Block`` tuples (see ``ipc_bench.report.render``); ``command`` is quoted as the
    command that rendered it. Figures are rendered here (PNG bytes in the blocks).
    Cases are grouped by arm (``Results.by_arm``): an A/A copy or an async arm is
    never averaged into its policy's other arm. ``base``: the run (``run_id``) the
    side-by-side ratio columns divide by and the differences under Runs are stated
    against; default the first loaded. ``figures`` false (``--no-figures``): no figure is
    drawn, each place one would be says so (``NO_FIGURES_NOTE``)."""
    results = results.by_arm()
    ids = results.run_ids
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    if len(ids) == 1:
        md = results.metadata[ids[0]]
        blocks: list[Block] = [
            ("h", 1, run_title(md, results.cases, ids[0])),
            ("p", f"Rendered {now} by {code_span(command)} from run folder {code_span(ids[0])} "
                  f"(raw data: `{run_slugs(results, ids)[ids[0]]}.summary.json` beside this "
                  "file)."),
        ]
        blocks.extend(_run_blocks(results, ids[0], 2, "", figures))
        return blocks
    blocks = [("h", 1, f"ipc-bench report: {len(ids)} runs compared"),
              ("p", f"Rendered {now} by {code_span(command)}.")]
    blocks.extend(_emulated_runs_blocks(results.finished().cases, ids))
    blocks.extend(_comparison_blocks(results, base, figures))
    slugs = run_slugs(results, ids)
    for r in ids:
        md = results.metadata[r]
        blocks.append(("h", 2, verbatim("Run ", verbatim(r), f" ({md.get('scenario', '?')})")))
        blocks.extend(_run_blocks(results, r, 3, f"{slugs[r]}-", figures))
    return blocks
