"""Figures of a run (``ipc_bench.analysis.results.load``), one question per figure.

Every function takes a ``Results`` and returns a ``matplotlib.figure.Figure`` drawn
on the Agg canvas (no pyplot, no global figure state: safe in scripts, servers and
notebooks; save with ``fig.savefig(path)``). Policies keep their colours in every
figure (``POLICY_COLORS``: ``send`` orange, ``cached`` blue, Okabe-Ito palette, which
colour-blind readers can tell apart); codecs keep their line styles
(``CODEC_LINESTYLES``) and, in both panels of ``throughput`` and in
``send_cost_share``, their markers (``CODEC_MARKERS``). Axis labels carry units.

When a run lacks the data a figure needs (a logical-clock run has no latencies, a
single-policy run has no send/cached pairs), the function raises ``NoData`` whose
message says what is missing; ``ipc_bench.report.blocks`` writes that message in place of
the figure. Figures that need one run (all but ``throughput``) raise ``ValueError``
when given several: pass ``results.select(run_id)``.

=======================  ===========================================================
function                 question
=======================  ===========================================================
``bytes_per_step``       How many bytes cross per step, each direction, against the
                         number of running requests (a ``--pp`` run of several N:
                         against the pipeline stages N), per policy?
``codec_time_per_step``  How long do encode and decode take per step (both
                         directions) against running requests (or N, as above), per
                         policy?
``throughput``           Output tokens/s of every case (95 % interval over
                         repetitions), and cached / send per workload and codec.
``step_breakdown``       Where does a step's time go (scheduler phases, transport,
                         runner bookkeeping and compute; runner idle beside)?
``send_cost_share``      What share of the step does ``send`` cost, against the step
                         time and against running requests?
``latency_cdfs``         TTFT and ITL distributions per policy (timed replays).
=======================  ===========================================================

Cases that did not finish (``complete`` false: ``Results.unfinished``) are left out
of every figure.

Timings withheld (``analysis.cores``: a ``--tp`` or ``--pp`` case with N readers on
fewer than N + 2 cores) are not drawn: the figures of times leave those cases out and
say so under the figure (the footnote of the tables); the figures of bytes keep them.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import re
from typing import Iterator, Optional, Sequence

from ipc_bench.analysis import cores
from ipc_bench.analysis.frames import frame_records, listed
from ipc_bench.analysis.metrics import metric
from ipc_bench.analysis.pace import all_load_bound, is_missing
from ipc_bench.analysis.results import SINGLE_PROCESS_CODEC
from ipc_bench.analysis.run_files import records
from ipc_bench.analysis.stats import geomean_interval, paired, results_ci_method, summarize_pairs
from ipc_bench.engine.config import CACHED, POLICIES, SEND
from ipc_bench.report.mpl_config import matplotlib_config_dir
from ipc_bench.wire.codecs import CODECS

#: Okabe-Ito colours: policies keep these in every figure.
POLICY_COLORS = {SEND: "#D55E00", CACHED: "#0072B2"}
_EXTRA_COLORS = ("#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
POLICY_MARKERS = {SEND: "o", CACHED: "s"}
#: Markers of codecs in the throughput figure, both panels (colour = policy there; the
#: single-process baseline is also hollow).
CODEC_MARKERS = {"msgpack": "D", "pickle": "v", SINGLE_PROCESS_CODEC: "^", "packed": "P",
                 "slots": "X", "replicated": "*"}
_EXTRA_MARKERS = ("h", "p", "8", "<", ">")
CODEC_LINESTYLES = {"msgpack": "-", "pickle": "--", "packed": "-.", SINGLE_PROCESS_CODEC: ":",
                    "slots": (0, (1, 1)), "replicated": (0, (5, 1))}
_EXTRA_LINESTYLES = ("-.", (0, (1, 1)), (0, (5, 1)), (0, (3, 1, 1, 1)))
#: Each codec's line style and marker in words, for captions (``CODEC_LINESTYLES``,
#: ``CODEC_MARKERS``).
CODEC_LOOKS = {"msgpack": "solid with diamonds", "pickle": "dashed with triangles down",
               SINGLE_PROCESS_CODEC: "dotted with triangles up",
               "packed": "dash-dotted with plus signs", "slots": "densely dotted with crosses",
               "replicated": "densely dashed with stars"}

#: Components of a scheduler step (stacked bottom to top) and their colours; they
#: sum to ``step_ns`` exactly (see ``step_components``).
STEP_COMPONENTS = (
    ("sched", "schedule()", "#999999"),
    ("build", "build SchedulerOutput", "#F0E442"),
    ("encode", "encode (both directions)", "#E69F00"),
    ("transport", "send + transport, both ways (send + wait - runner busy)", "#CC79A7"),
    ("decode", "decode (both directions)", "#56B4E9"),
    ("update", "update_from_output()", "#009E73"),
    ("runner_bookkeeping", "runner bookkeeping (update_states + write_back + build)",
     "#0072B2"),
    ("runner_compute", "runner compute (prepare + forward)", "#000000"),
)
RUNNER_IDLE_COLOR = "#DDDDDD"
#: The step breakdown's mark of overlap: the line at the mean step and the hatch over
#: the part of the stack above it (``step_breakdown``).
OVERLAP_COLOR = "#B00000"
#: Its legend entry where every marked bar is of an async-scheduling case, whose steps
#: overlap; ``EXCESS_LABEL`` where some is synchronous (noise of the means, no overlap).
OVERLAP_LABEL = "hidden by overlap (above the red line: the mean step)"
EXCESS_LABEL = "runner busy beyond send + wait (above the red line: the mean step)"


class NoData(Exception):
    """The run lacks what a figure needs; the message says what (one line)."""


def policy_color(policy: str) -> str:
    """Colour of ``policy`` (stable: unknown policies get further Okabe-Ito colours
    in a fixed order by name)."""
    if policy in POLICY_COLORS:
        return POLICY_COLORS[policy]
    return _EXTRA_COLORS[sum(map(ord, policy)) % len(_EXTRA_COLORS)]


def codec_linestyle(codec: str):
    """Line style of ``codec`` (``msgpack`` solid, ``pickle`` dashed, ``none`` dotted)."""
    if codec in CODEC_LINESTYLES:
        return CODEC_LINESTYLES[codec]
    return _EXTRA_LINESTYLES[sum(map(ord, codec)) % len(_EXTRA_LINESTYLES)]


def codec_marker(codec: str) -> str:
    """Marker of ``codec`` in the throughput figure (``CODEC_MARKERS``: ``msgpack`` a
    diamond, ``pickle`` a triangle down, the single process a triangle up; unknown
    codecs get further markers in a fixed order by name)."""
    if codec in CODEC_MARKERS:
        return CODEC_MARKERS[codec]
    return _EXTRA_MARKERS[sum(map(ord, codec)) % len(_EXTRA_MARKERS)]


def series_label(policy: str, codec: str) -> str:
    """Legend label of a (policy, codec) series; codec ``none`` is the single-process
    baseline."""
    return (f"{policy} / single process" if codec == SINGLE_PROCESS_CODEC
            else f"{policy} / {codec}")


def policy_rank(policy: str) -> int:
    """Sort rank of ``policy``: the policy registry's order (baseline first), then
    unknown policies."""
    return POLICIES.index(policy) if policy in POLICIES else 5


def codec_rank(codec: str) -> int:
    """Sort rank of ``codec``: the codec registry's order, then unknown codecs, then the
    single-process baseline."""
    if codec == SINGLE_PROCESS_CODEC:
        return 9
    return CODECS.index(codec) if codec in CODECS else 5


# --------------------------------------------------------------------------------------
# helpers


matplotlib_config_dir()  # a read-only HOME: a folder of its own, before matplotlib


@functools.cache
def _quiet_font_fallbacks() -> None:
    """Keep matplotlib's font manager to errors: where its font cache was built by
    another matplotlib (a system one without the bundled fonts, sharing
    ``~/.cache/matplotlib``), every figure logged one ``findfont: Font family ... not
    found. Falling back to DejaVu Sans.`` line per mathtext font, about 20 lines per
    report, for a fallback that draws the same text."""
    import logging

    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)


def _figure(nrows: int = 1, ncols: int = 1, width: float = 6.4, height: float = 4.2,
            **kw):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    _quiet_font_fallbacks()

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False, **kw)
    return fig, axes


def _finished_cases(draw):
    """``draw`` (a figure function) given ``results.finished()``: the cases that did
    not finish (``Results.unfinished``) are never drawn."""
    @functools.wraps(draw)
    def figure(results):
        finished = results.finished()
        fig = draw(finished)
        _mark_emulated(fig, finished.cases)
        fit_title(fig)
        left_out = _unfinished_series(results)
        if left_out and getattr(fig, _DRAWN, None) is not None:
            getattr(fig, _DRAWN)["unfinished"] = left_out
        return fig
    return figure


def _steps_drawn(two_process: bool = True, timed: bool = False):
    """A figure function of counted steps (``_counted``) that records, in what it drew
    (``drawn``), ``steps_missing``: the arms whose counted steps ``steps.csv`` lacks
    (``missing_steps`` of the cases it draws: two-process ones alone with
    ``two_process``, those whose timings are published alone with ``timed``,
    ``_timed_only``), so that its caption says so (``blocks.caption``); ``{}`` where
    none does."""
    def wrap(draw):
        @functools.wraps(draw)
        def figure(results):
            fig = draw(results)
            what = getattr(fig, _DRAWN, None)
            if what is not None:
                shown = _timed_only(results)[0] if timed else results
                what["steps_missing"] = missing_steps(shown, two_process)
            return fig
        return figure
    return wrap


def _mark_emulated(fig, cases) -> None:
    """Below ``fig``'s title, ``tables.emulated_mark`` when ``cases`` (a
    ``Results.cases`` table) ran the emulated model: its step times are a roofline
    sleep, which no figure may pass off as a GPU's."""
    from ipc_bench.report.tables import emulated_mark

    if cases.empty or "emulated" not in cases.columns:
        return
    mark = emulated_mark([r if r.get("emulated") is True else {"run_id": r.get("run_id")}
                          for r in frame_records(cases)])
    if not mark:
        return
    title = fig.get_suptitle()
    text = next((t for t in fig.texts if title and t.get_text() == title), None)
    if text is None:  # no title yet: the mark is the title
        fig.suptitle(_note_lines(mark), fontsize="small")
    else:  # below the title, in its size
        text.set_text(f"{title}\n{_note_lines(mark)}")


def _unfinished_series(results) -> list[tuple[str, str]]:
    """The (arm, codec) of every case of ``results`` that did not finish
    (``Results.unfinished``), in load order: the figure leaves them out, its caption
    says so."""
    gone = {(c["run_id"], c["case_id"]) for c in results.unfinished()}
    cases = results.cases
    if not gone or "policy" not in cases.columns or "codec" not in cases.columns:
        return []
    return list(dict.fromkeys(
        (str(p), str(c)) for run, case, p, c in zip(cases["run_id"], cases["case_id"],
                                                    cases["policy"], cases["codec"])
        if (run, case) in gone))


def _one_run(results) -> str:
    ids = results.run_ids
    if len(ids) != 1:
        raise ValueError(f"this figure shows one run, {len(ids)} are loaded: "
                         "pass results.select(run_id)")
    return ids[0]


def _timed_only(results):
    """``(results, note)``: ``results`` without the cases whose timings are withheld
    (``analysis.cores.is_withheld``: N readers on fewer than N + 2 cores), in every
    table, and the line that says so (``None``, and ``results`` as given, when no case
    is withheld). Raises ``NoData`` with that line when every case is withheld."""
    from dataclasses import replace

    cases = results.cases
    if cases.empty:
        return results, None
    records = frame_records(cases)
    hidden = [cores.is_withheld(r) for r in records]
    if not any(hidden):
        return results, None
    note = cores.footnote(r for r, h in zip(records, hidden) if h)
    note = note.replace(f"{cores.MARK} timings left out", "not drawn: the timings of "
                        f"{sum(hidden)} case{'s' if sum(hidden) > 1 else ''}", 1)
    if all(hidden):
        raise NoData(note)
    keep = {(r["run_id"], r["case_id"]) for r, h in zip(records, hidden) if not h}

    def pick(df):
        if df is None or len(df) == 0 or "case_id" not in df.columns:
            return df
        mask = [(run, case) in keep for run, case in zip(df["run_id"], df["case_id"])]
        return df[mask].reset_index(drop=True)

    return replace(results, cases=pick(cases), steps=pick(results.steps),
                   requests=pick(results.requests), floor=pick(results.floor),
                   itl=pick(getattr(results, "itl", None))), note


#: The attribute under which a figure function records what it drew (``drawn``).
_DRAWN = "_ipc_bench_drawn"


def _record(fig, **what) -> None:
    """Record on ``fig`` what its function drew (``drawn`` reads it back): the report
    builds each caption from it, so a caption never names a panel, an arm or a line the
    figure does not have."""
    setattr(fig, _DRAWN, what)


def drawn(fig) -> dict:
    """What a figure function drew on ``fig``, as it recorded it: ``series`` (the
    (arm, codec) lines or bars), ``panels`` (their names) and figure-specific entries
    (each function's docstring names them); ``{}`` for a figure that recorded
    nothing."""
    return dict(getattr(fig, _DRAWN, None) or {})


#: Characters per line of a note in a figure's title (``_note_lines``): wider lines
#: run past the figure's edges.
NOTE_LINE_CHARS = 110


def _note_lines(note: str, chars: int = NOTE_LINE_CHARS) -> str:
    """``note`` broken into lines of at most ``chars`` characters at spaces."""
    import textwrap

    return "\n".join(textwrap.wrap(note, chars, break_long_words=False))


#: The share of a figure's width a line of its title may take (``fit_title``): the
#: rest is a margin, which also absorbs the few pixels a glyph's width changes by
#: between the dpi a figure is laid out at and the one it is saved at.
TITLE_WIDTH_SHARE = 0.94


def _title_paragraphs(text: str, chars: int = NOTE_LINE_CHARS) -> list[str]:
    """The paragraphs of a title that ``_note_lines`` broke at ``chars`` characters: a
    line joins the one before it where that line, its next word added, would have run
    past ``chars`` (so ``textwrap`` broke there); any other line break is the title's
    own (a title above its note, a note above the emulated mark) and is kept."""
    out: list[str] = []
    prev = None
    for line in text.split("\n"):
        word = line.split(" ", 1)[0]
        if prev is not None and line and len(prev) + 1 + len(word) > chars:
            out[-1] += " " + line
        else:
            out.append(line)
        prev = line
    return out


def _fit_text(text, room: float, paragraphs: list[str]) -> None:
    """Break ``text`` (a matplotlib ``Text``) into lines no wider than ``room`` pixels
    as its figure's renderer draws them: its ``paragraphs`` broken at spaces, at fewer
    characters a line each round, until they fit or a line is 12 characters."""
    renderer = text.figure.canvas.get_renderer()
    chars = max(len(line) for line in text.get_text().split("\n"))
    while chars > 12:
        width = text.get_window_extent(renderer).width
        if width <= room:
            return
        chars = min(chars - 1, int(chars * room / width))
        text.set_text("\n".join(_note_lines(p, chars) if p else p for p in paragraphs))


def fit_title(fig) -> None:
    """Break ``fig``'s title (its ``suptitle``: a title, the ``_timed_only`` note and
    the emulated mark, ``_mark_emulated``) into lines no wider than
    ``TITLE_WIDTH_SHARE`` of the figure, as its font draws them: a title broken at
    ``NOTE_LINE_CHARS`` characters still ran past both edges of a narrow figure (a
    6.4-inch throughput figure of one panel cut the mark to ``ULATED steps: ... no GPU
    computed the``). Its paragraphs (``_title_paragraphs``) are broken again at fewer
    characters, as few as fit; a title that fits is left as it is. Then each panel's
    title that, the figure laid out (``_lay_out``), runs past the figure's left or
    right edge is broken into lines no wider than its panel (a ratio panel's
    ``cached+async / cached (> 1: cached+async faster)`` at the right edge). In place;
    returns nothing."""
    title = getattr(fig, "_suptitle", None)
    utf8_figure_text(fig)
    if title is not None and title.get_text():
        _fit_text(title, TITLE_WIDTH_SHARE * fig.bbox.width,
                  _title_paragraphs(title.get_text()))
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.title.get_text()]
    if not panels:
        return
    _lay_out(fig)
    renderer = fig.canvas.get_renderer()
    for ax in panels:
        box = ax.title.get_window_extent(renderer)
        if box.x0 >= 0 and box.x1 <= fig.bbox.width:
            continue
        _fit_text(ax.title, ax.get_window_extent(renderer).width,
                  ax.title.get_text().split("\n"))


def _with_note(title: str, note) -> str:
    """``title``, with ``note`` (from ``_timed_only``) on the lines below it when given,
    each broken into lines as ``_note_lines`` breaks a note (a longer title ran past the
    figure's edges)."""
    title = _note_lines(title)
    return f"{title}\n{_note_lines(note)}" if note else title


#: Why a figure of the runner's per-step timings is not drawn in a soak: its streamed
#: cases record no runner columns by design (``no_runner_timings``).
NO_RUNNER_TIMINGS = ("no per-step runner timings (a soak's streamed cases record none; "
                     "any other run's runner report is missing)")
#: ... and in any other run: the runner's per-step report, sent once its steps are
#: over, never arrived (a run stopped before it, during the floor or a case's end).
NO_RUNNER_REPORT = ("no per-step runner timings: the runners' reports of their steps "
                    "never arrived (the run was stopped before they were collected)")


def no_runner_timings(steps) -> str:
    """``NO_RUNNER_TIMINGS`` where the counted ``steps`` are a soak's, else
    ``NO_RUNNER_REPORT``."""
    soak = "scenario" in steps.columns and (steps["scenario"] == "soak").any()
    return NO_RUNNER_TIMINGS if soak else NO_RUNNER_REPORT


#: Why a figure of counted steps is not drawn where every step of the cases it would
#: draw was a warm-up step (``_counted``).
ALL_WARMUP = "every step was warm-up: --warmup-steps"


def csv_short(name: str) -> str:
    """How a figure's note names file ``name`` (``steps.csv``, ``itl.csv``) where it
    lacks rows that the run records because the file does not hold them (cut short):
    the loading note above the figures says how short it is."""
    return f"{name}, which is short (see the loading note above)"


#: Where a figure lacks counted steps that ``summary.json`` records because
#: ``steps.csv`` does not hold them (``missing_steps``).
STEPS_SHORT = csv_short("steps.csv")
#: Where a figure lacks ITL gaps that ``requests.csv`` counts because ``itl.csv`` does
#: not hold them (``missing_itl``).
ITL_SHORT = csv_short("itl.csv")


def _csv_warned(results, name: str = "steps.csv") -> set:
    """The ids of the runs of ``results`` with a loading warning naming file ``name``
    (``Results.warnings``: rows cut short or left out)."""
    return {run for run, lines in (getattr(results, "warnings", None) or {}).items()
            if any(name in line for line in lines)}


def _short_arms(rows) -> dict[str, tuple[int, int]]:
    """Arm -> (rows held, rows recorded), each summed over the arm's ``rows`` ((arm,
    held, recorded) per case, held capped at recorded), for every arm with a case that
    holds fewer than it records; ``{}`` where none does."""
    totals: dict[str, list[int]] = {}
    short = set()
    for arm, held, n in rows:
        got = min(int(held), int(n))
        total = totals.setdefault(str(arm), [0, 0])
        total[0], total[1] = total[0] + got, total[1] + int(n)
        if got < int(n):
            short.add(str(arm))
    return {arm: (got, n) for arm, (got, n) in totals.items() if arm in short}


def missing_steps(results, two_process: bool = True) -> dict[str, tuple[int, int]]:
    """Arm -> (counted steps ``steps.csv`` holds, counted steps ``summary.json``
    records: ``num_steps``), each summed over the arm's cases of ``results`` (two-process
    ones alone with ``two_process``), for every arm with a case whose ``steps.csv``
    holds fewer counted rows than its ``num_steps``, in a run whose loading warnings
    name ``steps.csv`` (``_csv_warned``: the file cut short, or rows left out);
    ``{}`` where none does, or ``results`` has no ``cases`` or ``num_steps``. What a
    figure of counted steps lacks for that reason, which its note says (not that the
    arm did not run, nor that warm-up took every step)."""
    cases = getattr(results, "cases", None)
    warned = _csv_warned(results, "steps.csv")
    if not warned or cases is None or cases.empty or "num_steps" not in cases.columns:
        return {}
    st = results.steps
    held = ({} if st.empty or "counted" not in st.columns else
            st[st["counted"].astype(bool)].groupby(["run_id", "case_id"], observed=True)
            .size().to_dict())
    return _short_arms(
        (arm, held.get((run, case), 0), n)
        for run, case, arm, codec, n in zip(cases["run_id"], cases["case_id"],
                                            cases["policy"], cases["codec"],
                                            cases["num_steps"])
        if run in warned and not is_missing(n)
        and not (two_process and codec == SINGLE_PROCESS_CODEC))


def missing_itl(results) -> dict[str, tuple[int, int]]:
    """Arm -> (ITL gaps ``itl.csv`` holds, gaps ``requests.csv`` counts: ``n - 1`` for
    a request of ``n`` output tokens, with drafts the case's ``itl_count``:
    ``row_checks.itl_wanted``), each summed over the arm's
    cases of ``results`` (one run's: ``latency_cdfs``) that record ITL figures, for
    every arm with a case whose ``itl.csv`` holds fewer, in a run whose loading warnings
    name ``itl.csv`` (``_csv_warned``: the file cut short, or rows left out); ``{}``
    where none does. What the ITL panel lacks for that reason, which its caption says
    (not that the arm did not run)."""
    from ipc_bench.analysis.row_checks import itl_wanted

    cases, itl = getattr(results, "cases", None), getattr(results, "itl", None)
    warned = _csv_warned(results, "itl.csv")
    if not warned or cases is None or cases.empty or itl is None:
        return {}
    cases = cases[cases["run_id"].isin(warned)]
    want = itl_wanted(results.requests, cases)
    held = ({} if not len(itl) or "case_id" not in itl.columns
            else itl["case_id"].astype(str).value_counts().to_dict())
    return _short_arms((arm, held.get(str(case), 0), want[str(case)])
                       for case, arm in zip(cases["case_id"], cases["policy"])
                       if str(case) in want)


def _counted(results, two_process: bool = True):
    """The counted ``steps.csv`` rows of ``results``' finished cases (two-process ones
    alone with ``two_process``); raises ``NoData`` without any, saying why where
    ``steps.csv`` lacks the counted steps ``summary.json`` records (``missing_steps``:
    cut short), where every step of those cases was warm-up (``ALL_WARMUP``) or where a
    loading warning names ``steps.csv`` (its rows left out)."""
    st = results.steps
    if st.empty or "counted" not in st.columns:
        loaded = any("steps.csv" in line for lines in (getattr(results, "warnings", None)
                                                       or {}).values() for line in lines)
        raise NoData("no per-step records of a finished case in this run"
                     + (" (steps.csv's rows were left out on loading: the loading notes "
                        "say why)" if loaded else ""))
    if two_process:
        st = st[st["codec"] != SINGLE_PROCESS_CODEC]
    counted = st[st["counted"]]
    if counted.empty:
        lost = sum(n for _, n in missing_steps(results, two_process).values())
        if lost:
            raise NoData(f"the counted {'two-process ' * two_process}steps are missing from "
                         f"{STEPS_SHORT}: it holds none of the {lost:,} that summary.json "
                         "records for the finished cases")
        why = ("no counted two-process steps of a finished case in this run" if two_process
               else "no counted steps of a finished case in this run")
        warm = len(st) and "warmup" in st.columns and st["warmup"].astype(bool).all()
        raise NoData(why + (f" ({ALL_WARMUP})" if warm else ""))
    return counted


def _running_x(steps):
    """(x values, axis label): running requests per step, binned to powers of two
    when a run has many different counts (trace replays)."""
    import numpy as np

    n = steps["num_reqs"].astype(float)
    if n.nunique() <= 12:
        return n, "running requests (scheduled per step)"
    binned = np.exp2(np.round(np.log2(n.clip(lower=1))))
    return binned, "running requests per step (binned to the nearest power of 2)"


def _running_log(xs) -> bool:
    """Whether ``_set_running_axis`` puts running counts ``xs`` on a log axis (base 2):
    where they are positive and span a factor of 8 or more; linear otherwise."""
    xs = sorted(set(float(x) for x in xs if x == x))
    return bool(xs) and xs[0] > 0 and xs[-1] / xs[0] >= 8


def _set_running_axis(ax, xs, label: str) -> None:
    """The running-request axis of ``ax``: log base 2 where ``_running_log``, each of up
    to 12 distinct counts ``xs`` a labelled tick (the true counts, whatever offsets the
    points are drawn at), labelled ``label``."""
    log = _running_log(xs)
    xs = sorted(set(float(x) for x in xs if x == x))
    if log:
        ax.set_xscale("log", base=2)
    if 0 < len(xs) <= 12:
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{x:g}" for x in xs])
        ax.minorticks_off()
    ax.set_xlabel(label)


def _plain_log_ticks(ax, axis: str = "x") -> None:
    """Log-axis ticks as plain numbers (0.05, 2, 20) instead of 5x10^-2, placed when
    the axis is drawn (``_plain_log_locator``): over a decade or more, the powers of ten
    labelled and the 2 and 5 between them; under a decade, evenly stepped labels across
    the view (6, 8, 10, 12, 14 ms for points from 6 to 14), with no minor ticks."""
    from matplotlib.ticker import FuncFormatter

    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(_plain_log_locator())
    target.set_minor_locator(_plain_log_locator(minor=True))
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))

    def minor(v, _):
        if v <= 0:
            return ""
        lead = round(v / 10 ** math.floor(math.log10(v) + 1e-9))
        return f"{v:g}" if lead in (2, 5) else ""

    target.set_minor_formatter(FuncFormatter(minor))


@functools.lru_cache(maxsize=None)
def _plain_log_locator_class():
    """``_plain_log_locator``'s class, built on first use so that importing this module
    does not import matplotlib."""
    from matplotlib.ticker import Locator, LogLocator, MaxNLocator

    class PlainLogLocator(Locator):
        """Ticks of a log axis for ``_plain_log_ticks``, from the view at draw time:
        where it spans under a factor of 3, up to 6 evenly stepped major ticks
        (``MaxNLocator``, steps of 1, 2, 2.5 or 5 times a power of ten); from 3 to under
        10, the view's 1, 2, 3 and 5 times a power of ten, which a log axis spreads over
        its whole height (evenly stepped ones crowd its top: a ratio panel from 0.45
        to 3.5 was labelled 1, 2, 3 alone); both with no minor ones; from a decade,
        ``LogLocator``'s, the powers of ten (major) and every integer multiple between
        them (``minor``)."""

        def __init__(self, minor: bool = False):
            self.minor = minor

        def __call__(self):
            return self.tick_values(*self.axis.get_view_interval())

        def tick_values(self, vmin, vmax):
            vmin, vmax = sorted((vmin, vmax))
            if vmin > 0 and vmax / vmin < 10:
                if self.minor:
                    return []
                if vmax / vmin >= 3:
                    low = math.floor(math.log10(vmin))
                    return [float(f"{m * 10.0 ** e:.12g}") for e in (low, low + 1)
                            for m in (1, 2, 3, 5) if vmin <= m * 10.0 ** e <= vmax]
                steps = MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10])
                return [v for v in steps.tick_values(vmin, vmax) if v > 0]
            loc = LogLocator(subs="auto" if self.minor else (1.0,))
            if self.axis is not None:
                loc.set_axis(self.axis)
            return loc.tick_values(vmin, vmax)

    return PlainLogLocator


def _plain_log_locator(minor: bool = False):
    """A ``PlainLogLocator`` (``_plain_log_locator_class``): major ticks, or with
    ``minor`` the minor ones."""
    return _plain_log_locator_class()(minor)


#: ``gid`` of the markers drawn at an axis edge where an interval end lies beyond it.
CUT_GID = "interval_cut"


@functools.lru_cache(maxsize=None)
def cut_marker(up: bool):
    """The marker of an interval end cut at an axis edge (``_bounded_errorbar``): an open
    arrow, stroked and never filled, its tip on the edge, pointing up (``up``) or down,
    its stem along the bar, so that the bar reads as going on past the edge. No series
    marker has its shape (``CODEC_MARKERS``, ``POLICY_MARKERS``: filled or hollow
    shapes, none an open arrow); a caret was drawn as a filled triangle, the very
    marker of pickle (down) and of the single process (up). A ``matplotlib.path.Path``,
    built on first use so that importing this module does not import matplotlib."""
    from matplotlib.path import Path

    s = 1.0 if up else -1.0
    return Path([(0.0, -s), (0.0, 0.0), (-0.6, -0.7 * s), (0.0, 0.0), (0.6, -0.7 * s)],
                [Path.MOVETO, Path.LINETO, Path.MOVETO, Path.LINETO, Path.LINETO])


def _bounded_errorbar(ax, xs, ys, lows, highs, bottom: float, top: float, color: str,
                      **kw) -> int:
    """``ax.errorbar`` of points ``ys`` with interval ends ``lows``/``highs`` (absolute;
    NaN: none) kept inside ``[bottom, top]``: an end beyond it (a lower end <= 0 on a log
    axis, an upper end far above the points) is cut at the axis edge, where an open
    arrow pointing out of the axis (``cut_marker``, ``CUT_GID``), in place of the
    bar's cap, says the interval goes on. A series with no
    interval end at all (one repetition, too few pairs) is drawn as markers alone
    (``ax.plot``, no ``ErrorbarContainer``), so that its legend entry shows no error-bar
    glyph; in a series with some, a point without an end gets no cap there. Returns how
    many ends were cut."""
    def fin(v):
        return v is not None and v == v

    if not any(fin(v) for v in list(lows) + list(highs)):  # no interval: no bar glyph
        kw.pop("capsize", None)
        fmt = kw.pop("fmt", None)
        ax.plot(xs, ys, *([fmt] if fmt else []), color=color,
                **({"linestyle": "none"} | kw))
        return 0
    lo_end = [min(y, max(l, bottom)) if fin(l) else y for y, l in zip(ys, lows)]
    hi_end = [max(y, min(h, top)) if fin(h) else y for y, h in zip(ys, highs)]
    bars = ax.errorbar(xs, ys, yerr=[[y - e for y, e in zip(ys, lo_end)],
                                     [e - y for y, e in zip(ys, hi_end)]], color=color, **kw)
    # matplotlib places the ends at y -/+ err, which loses an end many decades below y
    # to rounding (y - (y - 1e-15) is 0 in floats): the ends go where they are
    _, caps, cols = bars.lines
    for col in cols:
        col.set_segments([[(x, lo), (x, hi)] for x, lo, hi in zip(xs, lo_end, hi_end)])
    if len(caps) == 2:  # the lower caps, then the upper ones; none on a point with no
        # interval (a run of one repetition beside repeated ones): a cap there would
        # read as an interval of zero width; none on a cut end, whose arrow ends the bar
        caps[0].set_ydata([e if fin(l) and l >= bottom else math.nan
                           for e, l in zip(lo_end, lows)])
        caps[1].set_ydata([e if fin(h) and h <= top else math.nan
                           for e, h in zip(hi_end, highs)])
    cut_lo = [x for x, l in zip(xs, lows) if fin(l) and l < bottom]
    cut_hi = [x for x, h in zip(xs, highs) if fin(h) and h > top]
    for where, y, up in ((cut_lo, bottom, False), (cut_hi, top, True)):
        if where:  # an open arrow whose tip is on the edge (``cut_marker``)
            ax.plot(where, [y] * len(where), linestyle="none", marker=cut_marker(up),
                    color=color, fillstyle="none", markersize=14, markeredgewidth=1.5,
                    clip_on=False, gid=CUT_GID, zorder=5)
    return len(cut_lo) + len(cut_hi)


def _data_bounds(points, ends, log: bool, include=()) -> tuple[float, float]:
    """Axis limits around ``points`` (and ``include``, e.g. a reference line) that also
    hold the interval ``ends`` lying near them, but not one far off (an upper end of
    180 beside ratios near 1, a lower end <= 0 on a log axis): those are cut by
    ``_bounded_errorbar``."""
    pts = [float(v) for v in list(points) + list(include) if v == v and (v > 0 or not log)]
    if not pts:
        return (0.1, 10.0) if log else (0.0, 1.0)
    if log:
        lo, hi = math.log10(min(pts)), math.log10(max(pts))
        span = max(hi - lo, 0.3)
        ends = [math.log10(e) for e in ends if e == e and e > 0]
    else:
        lo, hi = min(pts), max(pts)
        span = max(hi - lo, 0.1 * max(abs(hi), abs(lo)), 1e-9)
        ends = [float(e) for e in ends if e == e]
    reach = (lo - 1.5 * span, hi + 1.5 * span)
    near = [e for e in ends if reach[0] <= e <= reach[1]]
    lo, hi = min([lo] + near), max([hi] + near)
    pad = 0.08 * max(hi - lo, span)
    lo, hi = lo - pad, hi + pad
    return (10 ** lo, 10 ** hi) if log else (lo, hi)


def _wrap_label(text: str, width: int = 18) -> str:
    """``text`` with every line longer than ``width`` broken where it can be: after a
    comma or space, else a ``/`` or ``=``, else a ``_`` or ``-``."""
    out = []
    for line in str(text).split("\n"):
        while len(line) > width:
            for chars in (", ", "/=", "_-"):  # a comma or space first, a _ last
                cut = max(line.rfind(c, 0, width + 1) for c in chars)
                if cut > 0:
                    break
            cut = cut + 1 if cut > 0 else width
            out.append(line[:cut])
            line = line[cut:]
        out.append(line)
    return "\n".join(out)


def _shown_labels(ax):
    """The x tick labels (major and minor) that ``ax`` draws: non-empty, inside its
    view."""
    lo, hi = sorted(ax.get_xlim())
    return [t for t in ax.xaxis.get_ticklabels(which="both")
            if t.get_visible() and t.get_text() and lo <= t.get_position()[0] <= hi]


#: The least gap between two tick labels, in ems of their font (a quarter each side):
#: closer, they read as one (``_overlapping``).
TICK_GAP_EM = 0.5


def _overlapping(labels, fig) -> bool:
    """Whether any two of the tick ``labels``' boxes overlap, or nearly touch (less than
    ``TICK_GAP_EM`` of their font apart), as ``fig`` was last laid out
    (``_crowded``). The gap is a fixed width, not a share of the labels' own: long
    labels that stand a few characters apart fit flat."""
    from matplotlib.transforms import Bbox

    renderer = fig.canvas.get_renderer()
    boxes = []
    for t in labels:
        box = t.get_window_extent(renderer)
        pad = TICK_GAP_EM / 2 * t.get_fontsize() * fig.dpi / 72  # points -> pixels
        boxes.append(Bbox.from_extents(box.x0 - pad, box.y0, box.x1 + pad, box.y1))
    return any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def _lay_out(fig) -> None:
    """Lay ``fig`` out as its next draw at ``fig.dpi`` would, drawing nothing: each
    axes' aspect applied, then its layout engine (constrained) run with the canvas's
    renderer, whose text sizes it caches; the tick labels ``_shown_labels`` reads are
    placed from the axes' positions then. ``Figure.draw_without_rendering`` does the
    same and then walks every artist (lines, bars, legends) with drawing turned off,
    which tells nothing about the labels and took most of each pass's time.

    A figure laid out at its size and dpi and not changed since (``_laid_out``, and
    the figure not stale: any change to an artist of it, a text, a legend, a formatter,
    a rotation, marks it stale, and the pass leaves it not stale) is left as it is: a
    second pass placed everything where the first had, but for the last bits of a
    float, and cost as much as the first (the title check, ``fit_title``, and each
    panel's legend check ran one on an unchanged figure)."""
    if not fig.stale and getattr(fig, _LAID_OUT, None) == _layout_key(fig):
        return
    renderer = fig.canvas.get_renderer()
    with renderer._draw_disabled():
        for ax in fig.axes:  # as Figure.draw does before its layout
            locator = ax.get_axes_locator()
            ax.apply_aspect(locator(ax, renderer) if locator else None)
        engine = fig.get_layout_engine()
        if fig.axes and engine is not None:
            try:
                engine.execute(fig)
            except ValueError:  # as Figure.draw: the layout is left as it was
                pass
    _laid_out(fig)


#: The attribute under which ``_lay_out`` records the size and dpi it last laid a
#: figure out at (``_layout_key``).
_LAID_OUT = "_ipc_bench_laid_out"


def _layout_key(fig) -> tuple:
    """``fig``'s size in inches and its dpi, which a layout is of."""
    return (*map(float, fig.get_size_inches()), float(fig.dpi))


def _laid_out(fig) -> None:
    """Record that ``fig`` is laid out as it stands (``_lay_out``): what was read since
    its last pass (tick labels, which ``Axis.get_ticklabels`` places again as the pass
    did, marking them stale) changed nothing it lays out."""
    setattr(fig, _LAID_OUT, _layout_key(fig))
    fig.stale = False


def _crowded(fig, axes) -> list:
    """Those of ``axes`` whose shown x tick labels overlap (``_overlapping``), after one
    layout pass of ``fig`` that renders nothing (``_lay_out``: every tick placed, every
    text sized, drawable first: ``utf8_figure_text``)."""
    utf8_figure_text(fig)
    _lay_out(fig)
    crowded = [ax for ax in axes if _overlapping(_shown_labels(ax), fig)]
    _laid_out(fig)  # reading the labels placed them as the pass had
    return crowded


def _readable_ticks(fig, axes) -> None:
    """Make the x tick labels of ``axes`` readable once drawn: where they overlap, a log
    axis first keeps only its 2 and 5 minor labels, then none, then the labels turn
    30 degrees, then 90. Call after every artist and limit is set. Each round lays the
    figure out once for all of ``axes``, none rendered: one pass where no labels
    overlap, at most four."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axes = [ax for ax in axes if ax.get_visible()]
    def two_five(v, _):
        lead = round(v / 10 ** math.floor(math.log10(v) + 1e-9)) if v > 0 else 0
        return f"{v:g}" if lead in (2, 5) else ""

    crowded = _crowded(fig, axes) if axes else []
    logs = [ax for ax in crowded if ax.get_xscale() == "log"]
    for ax in logs:  # fewer minor labels: the 2s and 5s, then none
        ax.xaxis.set_minor_formatter(FuncFormatter(two_five))
    for ax in _crowded(fig, logs) if logs else []:
        ax.xaxis.set_minor_formatter(NullFormatter())
    for angle in (30, 90):
        if logs or angle == 90:  # else the first pass's answer still holds
            crowded = _crowded(fig, axes)
        if not crowded:
            return
        for ax in crowded:
            for t in ax.xaxis.get_ticklabels(which="both"):
                t.set_rotation(angle)
                t.set_horizontalalignment("right" if angle < 90 else "center")
                t.set_rotation_mode("anchor" if angle < 90 else "default")


def _series(df, keys=("policy", "codec")):
    """Groups of ``df`` by ``keys`` (policy, codec) in a stable order: codecs by
    ``codec_rank``, then policies by ``policy_rank`` (send before cached)."""
    groups = list(df.groupby(list(keys), sort=False, observed=True))
    groups.sort(key=lambda kv: (codec_rank(kv[0][1]), str(kv[0][1]),
                                policy_rank(kv[0][0]), str(kv[0][0])))
    return groups


def _legend(ax, **kw) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize="small", **kw)


def _points_under_legend(fig, ax) -> list[tuple[float, float]]:
    """The data points (x, y) of ``ax``'s series (an error bar's data line, a labelled
    line's markers; not the caps, bars or cut marks) that lie inside its legend's window
    extent, grown by half a marker, with the figure laid out as its next draw would lay
    it out (``_lay_out``: the legend's place, ``best`` included, and the data transform
    are those a full draw leaves, with nothing rendered); ``[]`` where ``ax`` has no
    legend."""
    from matplotlib.container import ErrorbarContainer

    leg = ax.get_legend()
    if leg is None:
        return []
    _lay_out(fig)
    box = leg.get_window_extent(fig.canvas.get_renderer())
    under = []
    data = [c.lines[0] for c in ax.containers
            if isinstance(c, ErrorbarContainer) and c.lines[0] is not None]
    for line in data + [ln for ln in ax.lines if not ln.get_label().startswith("_")]:
        if line.get_marker() in (None, "None", ""):
            continue
        pad = line.get_markersize() * fig.dpi / 72 / 2
        for (x, y), (px, py) in zip(line.get_xydata(),
                                    ax.transData.transform(line.get_xydata())):
            if box.x0 - pad <= px <= box.x1 + pad and box.y0 - pad <= py <= box.y1 + pad:
                under.append((float(x), float(y)))
    return under


def _legend_clear_of_points(fig, ax) -> None:
    """Move ``ax``'s legend out of the axes, to its right (the layout makes room),
    where, laid out, it covers a data point (``_points_under_legend``); left in place
    otherwise."""
    if _points_under_legend(fig, ax):
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0),
                  borderaxespad=0.0)


# --------------------------------------------------------------------------------------
# figures


def _pp_sizes(steps) -> list[int]:
    """The pipeline sizes N (``--pp``) of the counted ``steps``, sorted; ``[]`` for a
    run without ``--pp`` cases."""
    if "pp" not in steps.columns:
        return []
    return sorted({int(n) for n in steps["pp"].dropna()})


#: Markers of a ``--pp`` bytes figure's lines per running count B (``_pp_bytes``).
_B_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


#: The x axis of a figure of a run of several pipeline sizes (``_pp_sizes``).
PP_XLABEL = "pipeline stages N (each step carries one micro-batch: B / N requests)"


def _merge_counts(equal: dict) -> dict:
    """``_equal_to_send`` of the pipeline-size figure, whose series with several running
    counts are named ``msgpack, B = 8``: per arm, the counts of one codec that are equal
    at the same N merged into one name, ``msgpack (B = 8, 16)``; a codec without B kept."""
    out: dict = {}
    for arm, codecs in equal.items():
        merged: dict = {}
        for name, xs in codecs.items():
            codec, _, b = name.partition(", B = ")
            merged.setdefault((codec, tuple(xs)), []).append(b)
        out[arm] = {(codec if bs == [""] else f"{codec} (B = {', '.join(bs)})"): list(xs)
                    for (codec, xs), bs in merged.items()}
    return out


def _pp_bytes(st, panels) -> object:
    """``bytes_per_step`` of a run of several pipeline sizes (``_pp_sizes``): against N,
    the pipeline stages, one line per arm and codec and, where the run has several,
    running count B (``num_running``; its own marker); each point the mean over a
    case's counted steps of one micro-batch's message (B / N requests). Drawn as
    ``bytes_per_step`` draws its arms (``bytes_marker``: send small and filled over the
    others' larger hollow markers) and noting in each panel where an arm's bytes equal
    send's (``_equal_note`` over the N; a codec ``msgpack, B = 8`` with several B):
    ``drawn``'s ``r2s_equal`` and ``s2r_equal``."""
    sizes = _pp_sizes(st)
    counts = sorted({int(b) for b in st["num_running"]}) if "num_running" in st else [0]
    several_b = len(counts) > 1
    markers = dict(zip(counts, _B_MARKERS))
    fig, axes = _figure(1, 2, width=11, height=4.3)
    series, equal = [], {}
    for ax, (col, title) in zip(axes[0], panels):
        means = {}
        for (policy, codec), g in _series(st):
            for b in counts:
                sel = g[g["num_running"] == b] if several_b else g
                m = sel.groupby("pp", observed=True)[col].mean()
                if m.empty:
                    continue
                series.append((policy, codec))
                means[(policy, codec + (f", B = {b}" if several_b else ""))] = m
                ax.plot([int(n) for n in m.index], m.values, color=policy_color(policy),
                        linestyle=codec_linestyle(codec),
                        label=series_label(policy, codec) + (f", B = {b}" if several_b
                                                             else ""),
                        **bytes_marker(policy, markers[b] if several_b else None))
        equal[col] = _merge_counts(_equal_to_send(means))
        _equal_note(ax, equal[col], [float(n) for n in sizes], pp=True)
        ax.set_xticks(sizes)
        ax.set_xlabel(PP_XLABEL)
        ax.set_ylabel("payload bytes per step")
        ax.set_title(title)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        _legend(ax)
    where = f" (B = {counts[0]} running)" if not several_b and counts[0] else ""
    fig.suptitle(f"Bytes per step against pipeline stages{where}")
    _readable_ticks(fig, axes[0])
    _record(fig, series=list(dict.fromkeys(series)), panels=[t for _, t in panels],
            notes=[], largest=None, schedules_differ=[], x="pp", pp=sizes,
            num_running=counts if counts != [0] else [],
            r2s_equal=equal["r2s_payload_bytes"], s2r_equal=equal["s2r_payload_bytes"])
    return fig


@_finished_cases
@_steps_drawn()
def bytes_per_step(results):
    """Payload bytes per step in each direction (SchedulerOutput: scheduler -> runner;
    ModelRunnerOutput: runner -> scheduler) against running requests, one line per
    policy and codec, over counted steps (mean). The scheduler -> runner panel notes
    how many more bytes ``send`` ships than ``cached`` at the largest count, as a share
    of send's bytes (the base of the findings' share). Each arm keeps its marker
    (``bytes_marker``): send's small and filled on top, every other arm's larger and
    hollow beneath, so that where two arms' bytes are equal (runner -> scheduler: the
    ModelRunnerOutput is the same under both policies) send's dot shows inside the other
    arm's ring rather than vanishing under its line; each panel notes where they are
    equal (``_equal_to_send``, ``_equal_note``: the runner -> scheduler one under send
    and cached, both under send and send' of an ``--aa`` run). Records (``drawn``)
    ``series``, ``panels``, ``notes`` (the box's lines), ``largest`` (that count),
    ``r2s_equal`` and ``s2r_equal`` (arm -> codec -> the counts where its runner ->
    scheduler, scheduler -> runner bytes equal send's). A run of several
    pipeline sizes (``--pp 1,2``) is drawn against the stages N instead, what differs
    between its cases (``_pp_bytes``; ``drawn``'s ``x`` is ``"pp"``, with ``pp`` and
    ``num_running`` the values drawn). Raises ``ValueError`` when ``results`` holds
    several runs, ``NoData`` without counted two-process steps."""
    _one_run(results)
    st = _counted(results)
    panels = (("s2r_payload_bytes", "scheduler → runner (SchedulerOutput)"),
              ("r2s_payload_bytes", "runner → scheduler (ModelRunnerOutput)"))
    if len(_pp_sizes(st)) > 1:
        return _pp_bytes(st, panels)
    x, xlabel = _running_x(st)
    st = st.assign(_x=x)
    fig, axes = _figure(1, 2, width=11, height=4.3)
    notes, differing, own, equal = [], [], [], {}  # equal: panel column -> _equal_to_send
    series = [key for key, _ in _series(st)]
    for ax, (col, title) in zip(axes[0], panels):
        means = {}
        for (policy, codec), g in _series(st):
            m = g.groupby("_x", observed=True)[col].mean()
            means[(policy, codec)] = m
            ax.plot(m.index, m.values, color=policy_color(policy),
                    linestyle=codec_linestyle(codec), label=series_label(policy, codec),
                    **bytes_marker(policy))
        equal[col] = _equal_to_send(means)
        _equal_note(ax, equal[col], sorted({float(x) for m in means.values() for x in m.index}))
        _set_running_axis(ax, st["_x"], xlabel)
        ax.set_ylabel("payload bytes per step")
        ax.set_title(title)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        _legend(ax)
        if col == "s2r_payload_bytes":
            xmax = st["_x"].max()
            for codec in dict.fromkeys(c for _, c in means):
                s, c = means.get((SEND, codec)), means.get((CACHED, codec))
                if s is None or c is None or xmax not in s.index or xmax not in c.index:
                    continue
                differ = _schedules_differ_ids(results.cases, codec)
                if differ is not None:  # other batches: send's own ids, not send - cached
                    differing.append(codec)
                    if differ == differ:
                        own.append(f"{codec}: send's new_token_ids {differ:,.1f} B/step "
                                   "(whole run; schedules differ)")
                    continue
                d = s[xmax] - c[xmax]
                notes.append(f"{codec}: send - cached {d:+,.0f} B ("
                             f"{100 * d / s[xmax]:.1f} % of send's bytes)" if s[xmax] else
                             f"{codec}: send - cached {d:+,.0f} B")
    box = ([f"at {st['_x'].max():g} running:"] + notes if notes else []) + own
    notes = notes + own
    if box:
        axes[0][0].text(0.02, 0.98, "\n".join(box),
                        transform=axes[0][0].transAxes, va="top", ha="left",
                        fontsize="small",
                        bbox=dict(boxstyle="round", facecolor="white", alpha=0.8))
    fig.suptitle("Bytes per step against running requests")
    _readable_ticks(fig, axes[0])
    _record(fig, series=series, panels=[t for _, t in panels], notes=notes,
            largest=float(st["_x"].max()), schedules_differ=differing,
            r2s_equal=equal["r2s_payload_bytes"], s2r_equal=equal["s2r_payload_bytes"])
    return fig


#: Marker size of ``send``'s points in the bytes figure (``bytes_marker``); every other
#: arm's are hollow and this much larger, so that a point of theirs on send's rings it.
BYTES_MARKERSIZE = 5.0
BYTES_RING = 2.0


def bytes_marker(policy: str, marker: Optional[str] = None) -> dict:
    """The bytes figure's marker keywords for ``policy`` (``marker``, else
    ``POLICY_MARKERS``: send a circle, cached a square, any other arm a triangle up;
    the pipeline-size figure gives each running count its own): ``send``'s filled,
    small (``BYTES_MARKERSIZE``) and on top (zorder 3); every other arm's hollow (white
    face), ``BYTES_RING`` times larger and beneath (zorder 2). Where two arms' bytes
    are equal (the runner → scheduler message is the same under both policies) the
    lines coincide and send's dot shows inside the other arm's ring."""
    if policy == SEND:
        return dict(marker=marker or POLICY_MARKERS[SEND], markersize=BYTES_MARKERSIZE,
                    zorder=3)
    return dict(marker=marker or POLICY_MARKERS.get(policy, "^"), mfc="white", mew=1.5,
                markersize=BYTES_RING * BYTES_MARKERSIZE, zorder=2)


def _equal_to_send(means: dict) -> dict:
    """Of a bytes panel's ``means`` ((arm, codec) -> mean bytes by x), each other arm's
    codec whose bytes equal ``send``'s (within 1e-9 relative) at every x both drew:
    ``{"cached": {"msgpack": [4.0, 16.0]}}``, the xs; arms and codecs without such an
    x left out."""
    out: dict = {}
    for (arm, codec), m in means.items():
        s = means.get((SEND, codec))
        if arm == SEND or s is None:
            continue
        xs = [float(x) for x in m.index if x in s.index
              and math.isclose(m[x], s[x], rel_tol=1e-9, abs_tol=1e-9)]
        if xs:
            out.setdefault(arm, {})[codec] = xs
    return out


def _equal_note(ax, equal: dict, counts: list, pp: bool = False) -> None:
    """A note at the bottom right of ``ax`` naming, per arm of ``equal``
    (``_equal_to_send``), the codecs and running counts where its bytes equal
    ``send``'s (``every count`` where that is all of ``counts``, the panel's xs), so a
    line drawn over another is said, not hidden: ``cached's bytes = send's: msgpack,
    pickle at every count`` (or ``msgpack at every count; pickle at 4, 16 running``),
    then ``send's dots lie inside cached's hollow markers``. ``pp``: the xs are
    pipeline sizes (``every N``, ``N = 1, 2``) and a codec may name its running count
    (``msgpack, B = 8``)."""
    if not equal:
        return
    lines = []
    every, unit = ("every N", "N = {}") if pp else ("every count", "{} running")
    for arm, codecs in equal.items():
        where: dict = {}
        for codec, xs in codecs.items():
            key = every if xs == counts else unit.format(", ".join(f"{x:g}" for x in xs))
            where.setdefault(key, []).append(codec)
        copy = arm.endswith("'")  # an A/A copy: "the bytes of send'", not "send''s"
        lines += [(f"the bytes of {arm}" if copy else f"{arm}'s bytes") + " = send's: "
                  + "; ".join(f"{', '.join(cs)} at {k}" for k, cs in where.items()),
                  "send's dots lie inside " + (f"the hollow markers of {arm}" if copy
                                               else f"{arm}'s hollow markers")]
    ax.text(0.98, 0.02, "\n".join(lines), transform=ax.transAxes, va="bottom",
            ha="right", fontsize="small",
            bbox=dict(boxstyle="round", facecolor="white", alpha=0.8))


def _schedules_differ_ids(cases, codec: str) -> Optional[float]:
    """For ``codec``'s send/cached pairs of ``cases`` that ran different schedules
    (``stats.schedules_differ``: a timed replay), send's new_token_ids bytes per step
    (``stats.token_ids_bytes``; NaN when not measured): what the bytes figure's box
    gives instead of send - cached, which would mix the policy with the batches.
    ``None`` where the schedules are the same."""
    from ipc_bench.analysis.stats import (arms_by_repetition, schedules_differ,
                                          token_ids_bytes)

    sel = cases[cases["codec"] == codec]
    keys = [k for k in ("workload", "transport", "model") if k in sel.columns]
    pairs = []
    for arms in arms_by_repetition(frame_records(sel), keys).values():
        send, cached = arms.get(SEND, {}), arms.get(CACHED, {})
        pairs += [(send[r], cached[r]) for r in sorted(set(send) & set(cached))]
    if not schedules_differ(pairs):
        return None
    ids = token_ids_bytes(s for s, _ in pairs)
    return math.nan if ids is None else ids


#: The codec time figure's room above its highest point, a share of it: the points
#: stand inside the axis, not on its top edge.
CODEC_TIME_HEADROOM = 0.12


@_finished_cases
@_steps_drawn(timed=True)
def codec_time_per_step(results):
    """Encode and decode µs per step (both directions summed: the scheduler's
    SchedulerOutput plus the runner's ModelRunnerOutput) against running requests, one
    panel per codec, one line per policy; mean over counted steps. Send's markers are
    filled, small and on top, every other arm's hollow and larger beneath
    (``bytes_marker``), so an arm's point equal to send's shows both; each axis runs
    from 0 to ``CODEC_TIME_HEADROOM`` above its highest point. A run of several
    pipeline sizes (``--pp 1,2``) is drawn against the stages N instead (``PP_XLABEL``),
    a line per policy and running count B where it has several, as ``bytes_per_step``
    (``drawn``'s ``x`` is then ``"pp"``). Raises ``ValueError`` when ``results`` holds
    several runs, ``NoData`` without counted steps or runner timings."""
    _one_run(results)
    results, note = _timed_only(results)
    st = _counted(results)
    if st[["runner_encode_ns", "runner_decode_ns"]].isna().all().all():
        raise NoData(no_runner_timings(st))
    st = st.dropna(subset=["runner_encode_ns", "runner_decode_ns"])
    pp = len(_pp_sizes(st)) > 1
    x, xlabel = (st["pp"].astype(int), PP_XLABEL) if pp else _running_x(st)
    several_b = pp and "num_running" in st and st["num_running"].nunique() > 1
    st = st.assign(_x=x, _enc=(st["encode_ns"] + st["runner_encode_ns"]) / 1e3,
                   _dec=(st["decode_ns"] + st["runner_decode_ns"]) / 1e3)
    codecs = list(dict.fromkeys(c for (_, c), _ in _series(st)))
    fig, axes = _figure(2, len(codecs), width=4.6 * len(codecs) + 1, height=7,
                        sharex=True)
    for j, codec in enumerate(codecs):
        sub = st[st["codec"] == codec]
        for i, (col, what) in enumerate((("_enc", "encode"), ("_dec", "decode"))):
            ax = axes[i][j]
            top = 0.0
            for (policy, _), g in _series(sub):
                for b, gb in (g.groupby("num_running", observed=True) if several_b else [(None, g)]):
                    m = gb.groupby("_x", observed=True)[col].mean()
                    ax.plot(m.index, m.values, color=policy_color(policy),
                            linestyle=codec_linestyle(codec),
                            **bytes_marker(policy, _B_MARKERS[sorted(
                                st["num_running"].unique()).index(b) % len(_B_MARKERS)]
                                if several_b else None),
                            label=policy + (f", B = {b:g}" if several_b else ""))
                    top = max([top] + [float(v) for v in m.values if v == v])
            ax.set_title(f"{what}, {codec}")
            ax.set_ylabel(f"{what} µs per step (both directions)")
            ax.set_ylim(0, top * (1 + CODEC_TIME_HEADROOM) if top > 0 else 1.0)
            ax.grid(True, alpha=0.3)
            _legend(ax)
            _set_running_axis(ax, st["_x"], xlabel if i == 1 else "")
    against = "pipeline stages" if pp else "running requests"
    fig.suptitle(_with_note(f"Serializer time per step against {against}", note))
    _readable_ticks(fig, [ax for row in axes for ax in row])
    _record(fig, series=[key for key, _ in _series(st)], panels=codecs, withheld=note,
            **(dict(x="pp") if pp else {}))
    return fig


#: The metric of the throughput figure.
THROUGHPUT = "output_tokens_per_s"


def _throughput_cases(results):
    """The cases with a throughput, each with ``_group`` (its workload, prefixed by its
    run when several are loaded); ``NoData`` when none has one."""
    cases = results.cases
    if cases.empty or THROUGHPUT not in cases.columns:
        raise NoData(f"no case has {THROUGHPUT}")
    cases = cases[cases[THROUGHPUT].notna()]
    if cases.empty:
        raise NoData(f"no case has {THROUGHPUT}")
    multi = len(results.run_ids) > 1
    return cases.assign(_group=(cases["run_id"] + "\n" if multi else "")
                        + cases["workload"].astype(str))


def _slot_x(group_index: int, k: int, n: int) -> float:
    """x of the ``k``-th of the ``n`` points a group draws: the group's 0.8 wide slot
    shared among the series it has (none is kept for a series it lacks)."""
    return group_index - 0.4 + (0.8 / n) * (k + 0.5)


def _throughput_panel(ax, cases, groups: list[str], labels: list[str]) -> dict:
    """Each (policy, codec) series' tokens/s per group, the geometric mean over the
    group's repetitions with the 95 % Student-t interval of their logs
    (``stats.geomean_interval``: the arms of the pair table and the comparison block,
    whose quotient is the ``t`` ratio of the cached/send panel) as bars, the
    axis bounded to the points (interval ends beyond it cut, ``_bounded_errorbar``);
    each group shares its slot among the series it has (``_slot_x``: a run without an
    arm leaves no gap), each series keeping its colour (its policy's), marker (its
    codec's, ``codec_marker``, as in the cached/send panel; the single process hollow)
    and label; each timed
    replay's group gets its note beside its own points. Returns what it
    drew: ``cut`` (interval ends cut), ``log`` and ``timed`` (the timed groups)."""
    series = _series(cases)
    present = {grp: [key for key, g in series if (g["_group"] == grp).any()]
               for grp in groups}
    drawn_series = []
    for (policy, codec), g in series:
        xs, ys, lo, hi = [], [], [], []
        for gi, grp in enumerate(groups):
            vals = g.loc[g["_group"] == grp, THROUGHPUT].tolist()
            if not vals:
                continue
            m, l, h = geomean_interval(vals)
            xs.append(_slot_x(gi, present[grp].index((policy, codec)), len(present[grp])))
            ys.append(m)
            lo.append(l)
            hi.append(h)
        drawn_series.append((policy, codec, xs, ys, lo, hi))
    vals = cases[THROUGHPUT]
    log = bool(vals.min() > 0 and vals.max() / vals.min() > 20)
    points = [y for *_, ys, _, _ in drawn_series for y in ys]
    ends = [e for *_, lo, hi in drawn_series for e in lo + hi]
    if log:
        bottom, top = _data_bounds(points, ends, log=True)
        top *= 3  # headroom for the legend
    else:
        bottom, top = _data_bounds(points, ends, log=False, include=[0.0])
        bottom, top = 0.0, max(top, max(points) * 1.35)
    cut = 0
    for policy, codec, xs, ys, lo, hi in drawn_series:
        cut += _bounded_errorbar(
            ax, xs, ys, lo, hi, bottom, top, policy_color(policy),
            fmt=codec_marker(codec), capsize=3,
            mfc="white" if codec == SINGLE_PROCESS_CODEC else policy_color(policy),
            label=series_label(policy, codec))
    if log:
        ax.set_yscale("log")
    ax.set_ylim(bottom, top)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(labels, fontsize="small")
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_ylabel(metric(THROUGHPUT).label)
    ax.set_xlabel("workload")
    reps = cases.groupby(["run_id", "workload", "policy", "codec"], observed=True).size()
    ax.set_title("Output tokens/s per case" + (
        " (geometric mean, 95 % interval)" if (reps > 1).all()
        else " (one repetition: no interval)" if (reps <= 1).all()
        else " (geometric mean; 95 % interval where a case repeated)"))
    timed, load_bound = _timed_groups(cases, groups)
    for grp in timed:  # beside its own points: above that group's highest one
        gi = groups.index(grp)
        near = [min(h, top) if h == h else y for *_, xs, ys, lo, hi in drawn_series
                for x, y, h in zip(xs, ys, hi) if abs(x - gi) <= 0.4]
        ax.annotate(LOAD_BOUND_MARK if grp in load_bound else ARRIVAL_BOUND_MARK,
                    (gi, max(near)), xytext=(0, 6), textcoords="offset points",
                    ha="center", va="bottom", fontsize="x-small", color="#B00000",
                    gid="timed_note")
    ax.grid(True, axis="y", alpha=0.3)
    _legend(ax)
    return dict(cut=cut, log=log, timed=timed, load_bound=load_bound)


def _timed_groups(cases, groups: list[str]) -> tuple[list[str], list[str]]:
    """Of the throughput figure's ``groups`` (``cases``' ``_group``), the timed
    replays', and those of them load-bound in every case (``pace.replay_pace``; one
    case arrival-paced makes its group arrival-bound, as ``stats.arrival_bound``)."""
    timed = []
    if "trace_speedup" in cases.columns:
        timed = [grp for grp in groups
                 if cases.loc[cases["_group"] == grp, "trace_speedup"].notna().any()]
    load_bound = [grp for grp in timed
                  if all_load_bound(records(cases.loc[cases["_group"] == grp]))]
    return timed, load_bound


def _row_group(row: dict, multi: bool) -> str:
    """The throughput figure's group (``_throughput_cases``' ``_group``) of a
    ``summarize_pairs`` row."""
    return (f"{row['run_id']}\n" if multi else "") + str(row["workload"])


def _ratio_panel(ax, rows: list[dict], groups: list[str], multi: bool,
                 labels: list[str], timed: Sequence[str] = (),
                 load_bound: Sequence[str] = (), num_drawn: Optional[int] = None,
                 arms: tuple[str, str] = (CACHED, SEND)) -> int:
    """``arms``' ratio of tokens/s (``(arm, base)``: cached / send, or
    ``cached+async`` / ``cached``, ``throughput_ratio_rows``) per group and codec (``summarize_pairs`` rows; each group
    shares its slot among the codecs it has, ``_slot_x``), the axis holding every
    ratio, the line at 1 and every interval end near them, with a margin
    (``ratio_bounds``: logarithmic where they span more than ``RATIO_LOG_SPAN``; an end
    far off is cut at the edge, where an open arrow points on); each codec keeps its marker
    (``codec_marker``, as in the tokens/s panel). The title reads "> 1:
    cached faster" only without timed replays (``timed``: their groups with a ratio
    drawn, ``num_drawn`` groups in all: the arrival-bound ones have none), whose ratio
    is of wall tok/s. Returns ``(log, cut)``: whether the axis is logarithmic, and how
    many interval ends were cut."""
    codecs = list(dict.fromkeys(r["codec"] for r in rows))

    def group(r) -> str:
        return _row_group(r, multi)

    present = {grp: [c for c in codecs if any(group(r) == grp and r["codec"] == c
                                              for r in rows)] for grp in groups}
    drawn_codecs = []
    for k, codec in enumerate(codecs):
        xs, ys, lo, hi = [], [], [], []
        for r in rows:
            if r["codec"] != codec:
                continue
            grp = group(r)
            xs.append(_slot_x(groups.index(grp), present[grp].index(codec),
                              len(present[grp])))
            ys.append(r["ratio"])
            lo.append(r["ratio_low"])
            hi.append(r["ratio_high"])
        drawn_codecs.append((k, codec, xs, ys, lo, hi))
    bottom, top, log = ratio_bounds([v for *_, ys, lo, hi in drawn_codecs for v in ys],
                                    [v for *_, lo, hi in drawn_codecs for v in lo + hi])
    cut = 0
    for k, codec, xs, ys, lo, hi in drawn_codecs:
        single = codec == SINGLE_PROCESS_CODEC
        cut += _bounded_errorbar(ax, xs, ys, lo, hi, bottom, top, "#444444", capsize=3,
                          linestyle="none", mfc="white" if single else "#444444",
                          label="single process" if single else codec,
                          marker=codec_marker(codec))
    if log:
        ax.set_yscale("log")
        _plain_log_ticks(ax, "y")
    ax.set_ylim(bottom, top)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(labels, fontsize="small")
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_xlabel("workload")
    ax.set_ylabel(f"{arms[0]} / {arms[1]} {metric(THROUGHPUT).label} (ratio)")
    ax.set_title(_ratio_title(len(timed), len(groups) if num_drawn is None else num_drawn,
                              len(load_bound), arms))
    ax.grid(True, axis="y", alpha=0.3)
    _legend(ax)
    return log, cut


#: A ratio axis spanning more than this factor (its largest value over its smallest,
#: the line at 1 included) is logarithmic (``ratio_bounds``).
RATIO_LOG_SPAN = 4.0
#: The margin beyond a ratio axis' outermost value, as a share of its span (of the
#: log span on a log axis).
RATIO_MARGIN = 0.08


def ratio_bounds(points, ends=()) -> tuple[float, float, bool]:
    """``(bottom, top, log)`` of a ratio axis holding every one of ``points`` (the
    ratios; NaN: none), the line at 1 and the interval ``ends`` near them, with a
    margin of ``RATIO_MARGIN`` of the span beyond each end. An end far off (an interval
    of 1e-11 to 1e12 from two repetitions beside ratios near 1: further than 1.5 times
    the points' span beyond them, as ``_data_bounds`` reaches) is not held: the panel
    cuts it at the edge with an open arrow (``_bounded_errorbar``), so the points stay
    apart. ``log`` when what is held spans more than ``RATIO_LOG_SPAN``: ratios are
    positive (``stats.compare_paired`` gives none for a non-positive pair), and on a
    log axis 2x and 0.5x lie as far from 1. Values at or below 0 (none from
    ``summarize_pairs``) are held on a linear axis."""
    pts = [float(v) for v in points if v is not None and v == v] + [1.0]
    ends = [float(v) for v in ends if v is not None and v == v]
    lo, hi = min(pts), max(pts)
    if lo > 0:
        a, b = math.log10(lo), math.log10(hi)
        span = max(b - a, 0.3)
        near = [e for e in ends if e > 0 and a - 1.5 * span <= math.log10(e) <= b + 1.5 * span]
    else:
        span = max(hi - lo, 0.1)
        near = [e for e in ends if lo - 1.5 * span <= e <= hi + 1.5 * span]
    lo, hi = min([lo] + near), max([hi] + near)
    log = lo > 0 and hi / lo > RATIO_LOG_SPAN
    if log:
        a, b = math.log10(lo), math.log10(hi)
        pad = RATIO_MARGIN * (b - a)
        return 10 ** (a - pad), 10 ** (b + pad), True
    pad = RATIO_MARGIN * max(hi - lo, 0.02)
    return lo - pad, hi + pad, False


#: The red note beside a timed replay's points in the throughput figure: arrival-bound
#: (``pace.replay_pace``: the engine kept up, or no arrival times recorded), or
#: load-bound, where the requests queued and the engine set the pace.
ARRIVAL_BOUND_MARK = "timed replay:\narrival-bound, not a\nthroughput comparison"
LOAD_BOUND_MARK = "timed replay, load-bound:\nthe engine, not the\narrivals, set the pace"


def _ratio_title(num_timed: int, num_groups: int, num_load_bound: int = 0,
                 arms: tuple[str, str] = (CACHED, SEND)) -> str:
    """The ratio panel's title (``arms``: ``(arm, base)``, cached / send by default): a
    speed verdict only where no group is a timed replay (``num_timed`` of
    ``num_groups``), whose ratio is of wall tok/s, bound by the trace's arrivals, or,
    for ``num_load_bound`` of them (``pace.replay_pace``), by the engine under a
    backlog."""
    arm, base = arms
    bound = ("load-bound" if num_load_bound and num_load_bound == num_timed
             else "arrival- or load-bound" if num_load_bound else "arrival-bound")
    if not num_timed:
        return f"{arm} / {base} (> 1: {arm} faster)"
    if num_timed == num_groups:
        return f"{arm} / {base}, wall tok/s ({bound})"
    return f"{arm} / {base} (> 1: {arm} faster;\ntimed replays: wall tok/s, {bound})"


def throughput_ratio_rows(cases, method: str = "t") -> tuple[list[dict], tuple[str, str]]:
    """``(rows, (arm, base))`` of the throughput figure's ratio panel: ``cases``'
    cached / send tokens/s (``stats.summarize_pairs`` of ``stats.paired`` with
    ``method``), or, where no case pairs cached with send, ``cached+async`` / ``cached``
    (an ``--async-scheduling`` run, which runs no send arm: the comparison its report
    gives, ``tables.ratio_arm_pairs``); ``([], (cached, send))`` where neither pairs.
    A row's ``send``/``cached`` keys hold the base's and the arm's figures."""
    from ipc_bench.harness.spec import ASYNC_ARM

    for arm, base in ((CACHED, SEND), (ASYNC_ARM, CACHED)):
        rows = summarize_pairs(paired(cases, THROUGHPUT, baseline=base, treatment=arm),
                               method=method)
        if rows:
            return rows, (arm, base)
    return [], (CACHED, SEND)


def other_ratio_runs(cases, arms: tuple[str, str]) -> Optional[tuple[str, list[str]]]:
    """Of the throughput figure's ratio pairs (``throughput_ratio_rows``: cached / send,
    then cached+async / cached), the other one where ``cases`` (several runs' cases
    table) also pair it beside the drawn ``arms``: ``("cached+async/cached", [run ids
    that pair it])``, which the ratio panel does not draw (their findings give it);
    ``None`` where none does."""
    from ipc_bench.harness.spec import ASYNC_ARM

    for arm, base in ((CACHED, SEND), (ASYNC_ARM, CACHED)):
        if (arm, base) == tuple(arms):
            continue
        pairs = paired(cases, THROUGHPUT, baseline=base, treatment=arm)
        if len(pairs) and "run_id" in pairs.columns:
            return f"{arm}/{base}", [str(r) for r in dict.fromkeys(pairs["run_id"])]
    return None


@_finished_cases
def throughput(results):
    """Output tokens/s of every case (geometric mean over repetitions, with the 95 %
    Student-t interval of the log tokens/s as error bars when a case has 2+
    repetitions: ``stats.geomean_interval``; the arithmetic mean and its t interval
    where a value is 0 or less), grouped by workload (and run, when several
    are loaded); and, when both policies ran, cached / send per workload and codec
    (``stats.summarize_pairs`` with the runs' ``--ci-method``: for ``t``, the geometric
    mean of the paired ratios and its t interval, as the CLI's comparison block), or,
    in an ``--async-scheduling`` run (no send arm), cached+async / cached the same way
    (``throughput_ratio_rows``). A panel's legend that, laid out, covers a data point
    goes to the panel's right (``_legend_clear_of_points``).
    Single-process cases (codec ``none``) appear as their own series, as does each arm
    of a policy (``send'``, ``cached+async``: ``Results.by_arm``). Works on several
    runs: each group draws only the series it has, side by side in its slot, so a run
    without an arm leaves no gap (``_slot_x``); a series keeps its colour and label. Records (``drawn``) ``series``, ``panels`` (``tokens/s``, and ``cached/send``
    or ``cached+async/cached`` when that panel is drawn), ``repeated`` (some series has 2+ repetitions: error
    bars), ``partly_repeated`` (some case has 2+ repetitions and some has one: error bars
    on some points only), ``single_runs`` (of several runs, those with one repetition
    per case: no error bars on their points), ``method`` and ``ratio_interval`` (some cached/send ratio has an interval:
    its pairs are as many as ``method`` needs, ``stats.min_pairs``), ``timed`` (the timed
    replays' groups, whose tokens/s are over wall time), ``load_bound`` (those of them
    load-bound in every case, ``pace.replay_pace``), ``ratio_withheld`` (the other
    timed groups with a pair: arrival-bound, so no cached/send point, as the tables
    give no ratio, ``stats.arrival_bound``), ``groups`` (how many) and
    ``ratio_log`` (the cached/send axis, which holds every ratio and the interval ends
    near them, is logarithmic: ``ratio_bounds``), ``ratio_cut`` (how many interval
    ends far off it cuts at its edge) and ``ratio_also`` (of several runs, the other
    ratio some pair and the panel does not draw, with those runs: ``other_ratio_runs``).
    Raises ``NoData`` when no case has
    ``output_tokens_per_s``."""
    results, note = _timed_only(results.by_arm())
    cases = _throughput_cases(results)
    groups = list(dict.fromkeys(cases["_group"]))
    rows, arms = throughput_ratio_rows(cases, results_ci_method(results.metadata))
    # an arrival-bound timed replay's wall tok/s follow the trace: no ratio, as in the
    # tables (``stats.arrival_bound``)
    multi = len(results.run_ids) > 1
    timed, load_bound = _timed_groups(cases, groups)
    withheld = [g for g in timed if g not in load_bound
                and any(_row_group(r, multi) == g for r in rows)]
    rows = [r for r in rows if _row_group(r, multi) not in withheld]
    npanel = 2 if rows else 1
    labels = [_wrap_label(g) for g in groups]
    extra = 0.15 * max(lb.count("\n") for lb in labels)
    if npanel == 2 and len(groups) > 4:  # many groups: the panels one above the other
        fig, axes = _figure(2, 1, width=min(max(8.0, 1.4 * len(groups) + 2), 20),
                            height=8.4 + 2 * extra)
        panes = [axes[0][0], axes[1][0]]
    else:
        fig, axes = _figure(1, npanel, width=max(6.4, 1.6 * len(groups) + 3)
                            * (1 if npanel == 1 else 1.6), height=4.6 + extra,
                            gridspec_kw=dict(width_ratios=[1.6, 1][:npanel]))
        panes = list(axes[0])
    panel = _throughput_panel(panes[0], cases, groups, labels)
    ratio_log, ratio_cut = False, 0
    if rows:
        ratio_log, ratio_cut = _ratio_panel(
            panes[1], rows, groups, multi, labels, panel["load_bound"], panel["load_bound"],
            num_drawn=len(dict.fromkeys(_row_group(r, multi) for r in rows)), arms=arms)
    _readable_ticks(fig, panes)
    if note:
        fig.suptitle(_note_lines(note), fontsize="small")
    for ax in panes:
        _legend_clear_of_points(fig, ax)
    method = results_ci_method(results.metadata)
    reps = cases.groupby(["run_id", "workload", "policy", "codec"], observed=True).size()
    _record(fig, series=[key for key, _ in _series(cases)],
            panels=["tokens/s"] + ([f"{arms[0]}/{arms[1]}"] if rows else []),
            repeated=bool((reps > 1).any()), method=method, withheld=note,
            partly_repeated=bool((reps > 1).any() and (reps <= 1).any()),
            single_runs=[str(r) for r, n in reps.groupby(level="run_id", observed=True).max().items()
                         if n <= 1] if len(results.run_ids) > 1 else [],
            ratio_interval=any(r["ratio_low"] == r["ratio_low"] for r in rows),
            cut=panel["cut"], log=panel["log"], timed=panel["timed"], groups=len(groups),
            load_bound=panel["load_bound"], ratio_withheld=withheld,
            ratio_log=ratio_log, ratio_cut=ratio_cut,
            ratio_also=other_ratio_runs(cases, arms) if rows and multi else None, stacked=len(panes) == 2 and panes[1] is axes[1][0]
            if len(axes) == 2 else False)
    return fig


def step_components(steps):
    """Per-step components (ns) that sum to ``step_ns``; ``steps`` needs the scheduler
    and runner columns. ``transport`` = ``send_ns`` + ``wait_ns`` - runner busy time
    (runner decode + update_states + prepare + forward + write_back + build + encode):
    the sockets' time both ways including the runner's send. Returns a DataFrame with
    one column per ``STEP_COMPONENTS`` name plus ``runner_idle``."""
    import pandas as pd

    busy = (steps["runner_decode_ns"] + steps["runner_update_ns"]
            + steps["runner_prepare_ns"] + steps["runner_forward_ns"]
            + steps["runner_writeback_ns"] + steps["runner_build_ns"]
            + steps["runner_encode_ns"])
    return pd.DataFrame({
        "sched": steps["sched_ns"],
        "build": steps["build_ns"],
        "encode": steps["encode_ns"] + steps["runner_encode_ns"],
        "transport": steps["send_ns"] + steps["wait_ns"] - busy,
        "decode": steps["decode_ns"] + steps["runner_decode_ns"],
        "update": steps["update_ns"],
        "runner_bookkeeping": (steps["runner_update_ns"] + steps["runner_writeback_ns"]
                               + steps["runner_build_ns"]),
        "runner_compute": steps["runner_prepare_ns"] + steps["runner_forward_ns"],
        "runner_idle": steps["runner_idle_ns"],
    }, index=steps.index)


@_finished_cases
@_steps_drawn(two_process=False, timed=True)
def step_breakdown(results):
    """Where a step's time goes: mean µs per counted step of each ``STEP_COMPONENTS``
    part, stacked (the stack's top is the mean ``step_ns``), one bar per policy and
    codec, one panel per workload; beside each bar, hatched, the runner's idle time
    (waiting for the next SchedulerOutput), which overlaps the scheduler's parts and
    is not part of the stack. Where a bar's mean transport (send + wait - runner busy,
    ``step_components``) is negative, the runner's busy time overlapped the scheduler's
    own parts (async scheduling: the runner computes step n while the scheduler
    schedules n + 1; in a synchronous case, which waits for each reply, noise of the
    means): its band is drawn at 0, so the stack sums to the mean step plus that
    excess; a line marks the mean step and the part above it is hatched
    (``OVERLAP_COLOR``; labelled ``OVERLAP_LABEL`` where every such bar is async, else
    ``EXCESS_LABEL``). Records ``overlap``: per such bar ``(policy, codec, workload,
    send + wait, runner busy, async)``, the times in µs, means over its counted steps,
    ``async`` whether its cases ran async scheduling (``_async_bars``). Raises
    ``ValueError`` when ``results`` holds several runs, ``NoData`` without counted
    steps or runner timings."""
    _one_run(results)
    results, note = _timed_only(results)
    st = _counted(results, two_process=False)
    runner_cols = ["runner_idle_ns", "runner_decode_ns", "runner_update_ns",
                   "runner_prepare_ns", "runner_forward_ns", "runner_writeback_ns",
                   "runner_build_ns", "runner_encode_ns"]
    kept = st.dropna(subset=[c for c in runner_cols if c in st.columns])
    if kept.empty or any(c not in st.columns for c in runner_cols):
        raise NoData(no_runner_timings(st))
    st = kept
    comp = step_components(st)
    comp[["policy", "codec", "workload"]] = st[["policy", "codec", "workload"]]
    comp["_send_wait"] = st["send_ns"] + st["wait_ns"]
    comp["_busy"] = comp["_send_wait"] - comp["transport"]
    overlaps = []
    is_async = _async_bars(results.cases)
    workloads = list(dict.fromkeys(st["workload"]))
    nbars = max(len(_series(comp[comp["workload"] == wl])) for wl in workloads)
    ncols = min(max(1, 12 // max(1, nbars)), len(workloads), 4)
    nrows = math.ceil(len(workloads) / ncols)
    fig, axes = _figure(nrows, ncols, width=max(9.5, ncols * (0.75 * nbars + 1.3)),
                        height=3.9 * nrows + 1.6)
    for idx, wl in enumerate(workloads):
        ax = axes[idx // ncols][idx % ncols]
        sub = comp[comp["workload"] == wl]
        ticks, labels, colors = [], [], []
        for k, ((policy, codec), g) in enumerate(_series(sub)):
            bottom = 0.0
            for name, label, color in STEP_COMPONENTS:
                v = float(g[name].mean()) / 1e3
                ax.bar(k - 0.12, max(v, 0.0) if name == "transport" else v, width=0.56,
                       bottom=bottom, color=color, edgecolor="white", linewidth=0.3,
                       label=label if k == 0 else None)
                bottom += max(v, 0.0) if name == "transport" else v
            hidden = -float(g["transport"].mean()) / 1e3
            if hidden > 0:
                _overlap_mark(ax, k - 0.12, bottom - hidden, hidden)
                overlaps.append((policy, codec, str(wl), float(g["_send_wait"].mean()) / 1e3,
                                 float(g["_busy"].mean()) / 1e3,
                                 is_async(policy, codec, wl)))
            ax.bar(k + 0.26, float(g["runner_idle"].mean()) / 1e3, width=0.18,
                   color=RUNNER_IDLE_COLOR, hatch="///", edgecolor="#777777",
                   label="runner idle (beside: overlaps the step)" if k == 0 else None)
            ticks.append(k)
            labels.append(f"{policy}\n{'1 process' if codec == 'none' else codec}")
            colors.append(policy_color(policy))
        ax.set_xticks(ticks)
        ax.set_xticklabels(labels, fontsize="small")
        for t, c in zip(ax.get_xticklabels(), colors):
            t.set_color(c)
        ax.set_ylabel("µs per step (mean over counted steps)")
        ax.set_xlabel("policy / codec")
        ax.set_title(str(wl), fontsize="medium")
        ax.grid(True, axis="y", alpha=0.3)
    for idx in range(len(workloads), nrows * ncols):
        axes[idx // ncols][idx % ncols].set_visible(False)
    _breakdown_legend(fig, axes, all(o[-1] for o in overlaps))
    fig.suptitle(_with_note("Where a step's time goes (policy / codec per bar; runner idle "
                            "hatched)", note))
    _readable_ticks(fig, [ax for row in axes for ax in row])
    _record(fig, series=[key for key, _ in _series(comp)], panels=workloads, withheld=note,
            overlap=overlaps)
    return fig


def _breakdown_legend(fig, axes, overlap_only: bool) -> None:
    """The step breakdown's legend under its panels: each label once, from whichever
    panel has it (the overlap's may be in any); the red hatch's ``OVERLAP_LABEL`` where
    every marked bar is async (``overlap_only``), else ``EXCESS_LABEL``: a synchronous
    bar's excess is no overlap."""
    legend = {}
    for ax in (ax for row in axes for ax in row):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label == OVERLAP_LABEL and not overlap_only:
                label = EXCESS_LABEL
                handle.set_label(label)
            legend.setdefault(label, handle)
    _fitted_fig_legend(fig, list(legend.values()), list(legend),
                       ncols=3 if len(legend) <= 9 else 2)  # 2: as wide as 3


def _fitted_fig_legend(fig, handles, labels, ncols: int):
    """A figure legend under the panels (``loc="outside lower center"``) in at most
    ``ncols`` columns, as many as fit the figure's width: a column fewer each time its
    window extent is wider than the figure's (less 2 % each side), down to one. Returns
    the legend."""
    renderer = fig.canvas.get_renderer()
    limit = 0.96 * fig.get_window_extent(renderer).width
    for n in range(max(1, ncols), 0, -1):
        leg = fig.legend(handles, labels, loc="outside lower center", ncols=n,
                         fontsize="small")
        if n == 1 or leg.get_window_extent(renderer).width <= limit:
            return leg
        leg.remove()
    return leg


def _async_bars(cases):
    """Whether a step breakdown bar ``(policy, codec, workload)`` is of async-scheduling
    cases, as a function of the three: any of its ``cases`` (the run's cases table) has
    ``async_scheduling`` true, or its policy is an async arm (``cached+async``, for a
    run that recorded no such column)."""
    flagged = set()
    if not cases.empty and "async_scheduling" in cases.columns:
        flagged = {(p, c, str(w)) for p, c, w, a in zip(
            cases["policy"], cases["codec"], cases["workload"], cases["async_scheduling"])
            if a is True or a == 1}

    def is_async(policy, codec, workload) -> bool:
        return (policy, codec, str(workload)) in flagged or str(policy).endswith("+async")
    return is_async


def _overlap_mark(ax, x: float, step: float, hidden: float) -> None:
    """On the step breakdown's bar at ``x``: a line at the mean ``step`` (µs) and, over
    the ``hidden`` µs of the stack above it (the runner's busy time beyond send + wait),
    a hatch in ``OVERLAP_COLOR``, labelled ``OVERLAP_LABEL`` once per panel."""
    labels = ax.get_legend_handles_labels()[1]
    ax.bar(x, hidden, width=0.56, bottom=step, facecolor="none", hatch="xxx",
           edgecolor=OVERLAP_COLOR, linewidth=0.8,
           label=None if OVERLAP_LABEL in labels else OVERLAP_LABEL)
    ax.hlines(step, x - 0.34, x + 0.34, color=OVERLAP_COLOR, linewidth=2.0, zorder=4)


#: The SchedulerOutput's serialization path: the scheduler builds and encodes it, the
#: runner decodes it (``send``'s extra work on the wire message, less noisy than the
#: whole step).
S2R_COST_COLUMNS = ("sched_build_ns_per_step", "sched_encode_ns_per_step",
                    "runner_decode_ns_per_step")
#: The same path's per-step median, when the run recorded it (preferred: less noisy).
S2R_MEDIAN_COLUMN = "s2r_build_encode_decode_ns_median"
#: The same path plus the runner's token-id bookkeeping (update_states + write_back),
#: per-step medians of the sum: the net share's figure (``send_cost.NET_MEDIAN``).
NET_MEDIAN_COLUMN = "s2r_net_ns_median"


def send_cost_table(cases, labels: Sequence[str] = ()):
    """One row per send/cached pair with send's cost as a share of the step, in %:
    ``share_step`` = (send's median step - cached's) / cached's median step (the whole
    cost seen by the scheduler loop, noisy) and ``share_s2r`` = the difference in the
    SchedulerOutput's build + encode + decode alone (``S2R_MEDIAN_COLUMN`` when the run
    has it, else the sum of the ``S2R_COST_COLUMNS`` means) over the same denominator;
    ``step_ms`` = cached's median step in ms; ``_s2r_diff`` = that path's send - cached,
    ns; ``_net_diff`` = the same of ``NET_MEDIAN_COLUMN`` (NaN where a case lacks it);
    ``running`` = the ``num_running`` label, else the mean running requests. The
    other columns are ``stats.paired``'s for the step time (``diff`` = send - cached,
    ns), with the ``labels`` columns (``Results.labels``). Empty when the cases hold no
    send/cached pair. The shares are per pair: over repetitions the figure and the
    findings give ``send_cost.mean_share`` of ``diff`` (or ``_s2r_diff``) and cached's
    step, not the mean of these."""
    step_col = "step_ns_median" if "step_ns_median" in cases.columns else "step_ns_mean"
    table = paired(cases, step_col, labels=labels)
    if len(table) == 0:
        return table
    table = table.assign(step_ms=table[CACHED] / 1e6,
                         share_step=100.0 * table["diff"] / table[CACHED])
    s2r = None
    if S2R_MEDIAN_COLUMN in cases.columns and cases[S2R_MEDIAN_COLUMN].notna().any():
        s2r = paired(cases, S2R_MEDIAN_COLUMN)
    elif all(c in cases.columns for c in S2R_COST_COLUMNS):
        s2r = paired(cases.assign(_s2r_ns=cases[list(S2R_COST_COLUMNS)].sum(
            axis=1, min_count=len(S2R_COST_COLUMNS))), "_s2r_ns")
    if s2r is not None and len(s2r):
        keys = [k for k in ("run_id", "workload", "codec", "transport", "model", "repetition")
                if k in table.columns]
        s2r = s2r.set_index(keys)["diff"].rename("_s2r_diff")
        table = table.join(s2r, on=keys)
        table["share_s2r"] = 100.0 * table["_s2r_diff"] / table[CACHED]
    else:
        table["share_s2r"] = math.nan
    table["_net_diff"] = math.nan  # the net share's (send_cost.NET_MEDIAN), where recorded
    if NET_MEDIAN_COLUMN in cases.columns and cases[NET_MEDIAN_COLUMN].notna().any():
        keys = [k for k in ("run_id", "workload", "codec", "transport", "model", "repetition")
                if k in table.columns]
        net = paired(cases, NET_MEDIAN_COLUMN).set_index(keys)["diff"].rename("_net")
        table["_net_diff"] = table.join(net, on=keys)["_net"]
    if "num_running" in table.columns:
        table["running"] = table["num_running"].astype(float)
    else:
        running = cases[cases["policy"] == CACHED].set_index(
            ["workload", "codec", "repetition"])["num_running_mean"]
        table["running"] = [running.get((w, c, r), math.nan) for w, c, r in
                            zip(table["workload"], table["codec"], table["repetition"])]
    return table


def _no_pair_reason(cases) -> str:
    """Why ``send_cost_table`` of ``cases`` is empty, where no --pp case explains it:
    no send and cached cases of one workload and codec, or such cases with no counted
    step (every step warm-up)."""
    arms = cases[cases["policy"].isin([SEND, CACHED])] if "policy" in cases else cases[:0]
    paired = (arms.groupby(["workload", "codec"], observed=True)["policy"].nunique()
              if len(arms) else [])
    if len(paired) and (paired == 2).any():
        return f"its send and cached cases have no counted step ({ALL_WARMUP})"
    return "needs send and cached cases of the same workload and codec"


def _send_cost_inputs(results):
    """``send_cost_share``'s checks: ``(results, table, note)`` of the cases whose
    timings are published (``_timed_only``: ``note`` says what was left out); raises
    ``NoData`` without a send/cached pair or with fewer than two workloads."""
    _one_run(results)
    cases = results.cases
    if len(send_cost_table(cases, labels=results.labels)) == 0:
        if "pp" in cases.columns and cases["pp"].notna().any():
            raise NoData("a --pp run compares send with direct (the cached policy, the ids "
                         "sent last stage → other stages over gloo): the findings and "
                         "\"Pipeline hops\" give its bytes, and its times where published")
        raise NoData(_no_pair_reason(cases))
    results, note = _timed_only(results)
    cases = results.cases
    table = send_cost_table(cases, labels=results.labels)
    if len(table) == 0:
        raise NoData("needs send and cached cases of the same workload and codec whose "
                     "timings are published (" + note + ")")
    if table["workload"].nunique() < 2:
        timed = "trace_speedup" in cases.columns and cases["trace_speedup"].notna().any()
        raise NoData("one workload only: this figure needs a sweep over running requests "
                     "or step times (decode-steady, step-time)" + (
                         "; a timed replay's steps wait for arrivals, so the findings give "
                         "its latencies instead" if timed else "; the findings give the "
                         "share"))
    return results, table, note


def _send_cost_series(table, other: list, axes, withheld: dict,
                      method: str = "t") -> tuple[list, int]:
    """The series ``send_cost_share`` draws: ``(bars, left_out)``. ``bars``: per codec
    and other label, whole step and s2r, on each panel, ``(ax, xs, ys, lo, hi, color,
    errorbar keywords)``: each point the findings' share by ``method`` (the run's
    ``--ci-method``), the mean difference over the mean of cached's step (medians for
    ``sign`` and ``bootstrap``: ``send_cost.mean_share``), in %, with the share's 95 %
    interval (``send_cost.share_bounds``: it carries the step's noise as well as the
    difference's; NaN with one pair, or fewer than the method needs); each x the mean
    over repetitions of cached's step (``step_ms``) or running requests.
    A share the step-time table withholds (``send_cost.WITHHELD``) is NaN, point and
    interval, so it is not drawn and its line breaks there: ``withheld`` maps each
    (workload, codec) to the columns withheld (``diff`` and ``_s2r_diff`` where the
    step ran off nominal, ``CostRow.step_off``; ``diff`` alone where send's whole step
    is not explained by its SchedulerOutput path, ``CostRow.step_share_withheld``).
    ``left_out``: how many points are not drawn (one panel's count)."""
    from ipc_bench.analysis.send_cost import mean_share

    palette = [POLICY_COLORS[SEND], *_EXTRA_COLORS]
    other_values = list(dict.fromkeys(
        tuple(row) for row in table[other].itertuples(index=False))) if other else [()]
    bars, left_out = [], 0
    for key, g in table.groupby(["codec"] + other, sort=False, observed=True):
        key = key if isinstance(key, tuple) else (key,)
        codec = key[0]
        name = ("single process" if codec == SINGLE_PROCESS_CODEC else codec) + "".join(
            f", {n}={v:g}" if isinstance(v, float) else f", {n}={v}"
            for n, v in zip(other, key[1:]))
        color = palette[other_values.index(tuple(key[1:])) % len(palette)]
        s2r = "build" if codec == SINGLE_PROCESS_CODEC else "build+encode+decode"
        for col, whole, what in (("diff", True, "whole step"), ("_s2r_diff", False, s2r)):
            if col not in g.columns or g[col].isna().all():
                continue
            agg = []
            for _, gw in g.groupby("workload", sort=False, observed=True):
                m = mean_share(gw[col], gw[CACHED], method)  # the findings' share, in %
                shown = col not in withheld.get((gw["workload"].iloc[0], codec), ())
                left_out += not shown
                agg.append((float(gw["step_ms"].mean()), float(gw["running"].mean()),
                            *(math.nan if v is None or not shown else 100.0 * v
                              for v in (m.share, m.low, m.high))))
            for ax, xi in ((axes[0][0], 0), (axes[0][1], 1)):
                # each panel's line joins its points in the order of its own x: a step
                # that is not monotone in the running requests (a noisy one, a sweep of
                # a fixed step) would otherwise draw the line back and forth
                agg.sort(key=lambda a: (a[xi], a[1 - xi]))
                bars.append((ax, [a[xi] for a in agg], [a[2] for a in agg],
                             [a[3] for a in agg], [a[4] for a in agg], color, dict(
                                 _share_style(codec, whole, color), capsize=3,
                                 label=f"{name}: {what}" if ax is axes[0][0] else None)))
    return bars, left_out


#: Line widths of ``send_cost_share``'s series: the whole step's, the SchedulerOutput
#: path's.
SHARE_LINEWIDTHS = (2.2, 1.0)


def _share_style(codec: str, whole: bool, color: str) -> dict:
    """``send_cost_share``'s keywords for one series: the codec's line style and marker
    as in every figure (``codec_linestyle``, ``codec_marker``: msgpack solid with
    diamonds, pickle dashed with triangles down, the single process dotted with
    triangles up), the whole step's (``whole``) filled on a thick line, the
    SchedulerOutput path's hollow on a thin one (``SHARE_LINEWIDTHS``), in ``color``
    (send's orange; the sweep's other labels, their own)."""
    return dict(linestyle=codec_linestyle(codec), marker=codec_marker(codec),
                linewidth=SHARE_LINEWIDTHS[0 if whole else 1],
                mfc=color if whole else "white")


#: ``send_cost_share`` draws series that share an x side by side (``_dodge``), each
#: this share of the panel's data span (log2 units on a log axis) from the next ...
DODGE_STEP = 0.02
#: ... the series at one running count spread over at most this share of the narrowest
#: gap between two counts, so that no point stands nearer another count than its own.
DODGE_MAX_SHARE = 0.3


def _dodge(xs, n: int, log: bool, bound_by_gap: bool = True) -> list[float]:
    """Sideways offsets of ``n`` series drawn at the same ``xs``, slot ``k`` of ``n``
    centred on the true x: on a log axis factors ``2 ** ((k - (n - 1) / 2) * step)``, on
    a linear one addends ``(k - (n - 1) / 2) * step``, ``step`` being ``DODGE_STEP`` of
    the span of ``xs`` (log2 units on a log axis; one value alone spans a factor of 2 on a
    log axis, its own size on a linear one), with ``bound_by_gap`` at most
    ``DODGE_MAX_SHARE`` of the narrowest gap between distinct ``xs``, over ``n - 1``.
    No offsets (factors 1, addends 0) with fewer than two series or no usable ``xs``."""
    vals = sorted({float(x) for x in xs if x == x and (x > 0 or not log)})
    if n < 2 or not vals:
        return [1.0 if log else 0.0] * n
    t = [math.log2(v) for v in vals] if log else vals
    step = DODGE_STEP * ((t[-1] - t[0]) or (1.0 if log else abs(t[0]) or 1.0))
    if bound_by_gap and len(t) > 1:
        step = min(step, DODGE_MAX_SHARE * min(b - a for a, b in zip(t, t[1:])) / (n - 1))
    centred = [(k - (n - 1) / 2) * step for k in range(n)]
    return [2.0 ** c for c in centred] if log else centred


def _dodge_bars(bars: list, axes, running) -> tuple[list, dict]:
    """``bars`` (``_send_cost_series``) with their xs offset sideways (``_dodge``), so
    that no interval hides another: in the running-request panel every series takes its
    own slot at every count (all series share the counts ``running``), factors on a log
    axis (``_running_log``), addends on a linear one; in the step-time panel (log) a
    codec's whole step (``SHARE_LINEWIDTHS[0]``) is drawn left of its SchedulerOutput
    path, the two sharing cached's step exactly; the codecs are not moved apart there,
    as each already stands at its own measured step and an offset would misstate it.
    Returns the shifted bars and, for ``drawn``, ``{"running_log": bool, "running":
    [offset per running-panel series, in drawing order], "step": [factor per step-panel
    series]}``; the true xs stay in the table (``drawn``'s ``running`` lists them)."""
    step_ax, run_ax = axes[0][0], axes[0][1]
    log = _running_log(running)
    run_off = iter(_dodge(running, sum(b[0] is run_ax for b in bars), log))
    on_step = [b for b in bars if b[0] is step_ax]
    kinds = sorted({b[6]["linewidth"] for b in on_step}, reverse=True)  # whole step first
    step_off = _dodge([x for b in on_step for x in b[1]], len(kinds), log=True,
                      bound_by_gap=False)
    out, offsets = [], {"running_log": log, "running": [], "step": []}
    for ax, xs, *rest in bars:
        if ax is run_ax:
            o = next(run_off)
            offsets["running"].append(o)
            xs = [x * o if log else x + o for x in xs]
        else:
            o = step_off[kinds.index(rest[-1]["linewidth"])]
            offsets["step"].append(o)
            xs = [x * o for x in xs]
        out.append((ax, xs, *rest))
    return out, offsets


def _withheld_shares(records) -> dict:
    """(workload, codec) -> the ``send_cost_table`` columns whose share the step-time
    table withholds (``send_cost.WITHHELD``), by the rules of ``send_cost.CostRow``:
    both (``diff``, ``_s2r_diff``) where a case of the pair ran off its nominal fixed
    step (``send_cost.case_off_nominal``: the runner's wait, cached's whole step:
    ``CostRow.step_off``), the whole step's (``diff``) where send's whole step ran
    longer than its SchedulerOutput path explains (``send_cost_send_step_off``); any
    repetition's warning withholds the pair's share, as the table's rows do."""
    from ipc_bench.analysis.send_cost import case_off_nominal

    out: dict = {}
    for r in records:
        key = (r.get("workload"), r.get("codec"))
        if case_off_nominal(r):
            out[key] = out.get(key, set()) | {"diff", "_s2r_diff"}
        elif listed(r.get("send_cost_send_step_off")):
            out[key] = out.get(key, set()) | {"diff"}
    return out


@_finished_cases
def send_cost_share(results):
    """What ``send`` costs as a share of the step time, in %, for every workload and
    codec: the findings' share (``send_cost.mean_share`` over the pairs of
    ``send_cost_table`` by the runs' ``--ci-method``: the mean difference over the mean
    of cached's step, with the ratio estimator's 95 % Student-t interval for paired
    samples with 2+ pairs; for ``sign`` and ``bootstrap`` the median difference over the
    median step, with the sign-test interval of the per-pair shares or the percentile
    interval of the pairs resampled together, none with fewer pairs than the method
    needs, the title saying so; each interval carries cached's step noise as well as the
    difference's, ``docs/comparisons.md``, share intervals): filled markers on thick
    lines, the whole step's difference; hollow on thin, the SchedulerOutput's build +
    encode + decode alone; each codec its line style and marker, as in every figure
    (``_share_style``). Against the step time (the cached case's median step, ms, on
    a log axis labelled across the points, ``_plain_log_ticks``; a fixed-step sweep
    spreads it) and against the running requests, each panel's line joining its points
    in the order of its own x (a step not monotone in the running requests would draw
    the left one back and forth). Series that share an x are drawn a
    little apart (``_dodge_bars``), the titles and caption saying so: against the running
    requests every series shares the counts, so each takes its own slot at every count
    (``DODGE_STEP`` of the axis span apart, the slots of one count within
    ``DODGE_MAX_SHARE`` of the gap to the next, so no point nears another count; the
    ticks stay at the true counts); against the step time the codecs already stand
    apart, each at its own cached step, which an offset would misstate, but a codec's
    whole step and SchedulerOutput path share that step exactly and their intervals hid
    each other there too, so those two alone are set apart. ``drawn``'s ``running``
    keeps the true counts, ``dodge`` the offsets. The axis holds the points; an
    interval end far beyond them is cut at the edge and marked (``_bounded_errorbar``).
    A share the step-time table withholds (``send_cost.WITHHELD``, ``-*``) is not
    drawn (``_withheld_shares``): both of a pair warned off its nominal fixed step
    (``send_cost.case_off_nominal``: the runner's wait, cached's whole step), the whole
    step's of a pair whose send case's whole step ran longer than its SchedulerOutput
    path explains (``send_cost_send_step_off``, ``send_cost.send_step_warning``);
    ``drawn``'s ``left_out`` counts them, for the caption. Other workload labels (e.g. the sweep's
    ``step_time_ms``) get their own colours. Raises ``ValueError`` when ``results``
    holds several runs, ``NoData`` without both policies, with fewer than two
    workloads, or with every share withheld."""
    results, table, note = _send_cost_inputs(results)
    cases = results.cases
    xlabel = ("running requests" if "num_running" in table.columns
              else "running requests (mean over counted steps)")
    other = [c for c in results.labels if c != "num_running" and c in table.columns]
    other = [c for c in other if table[c].nunique() > 1]
    fig, axes = _figure(1, 2, width=12, height=5.2)
    method = results_ci_method(results.metadata)
    bars, left_out = _send_cost_series(table, other, axes,
                                       _withheld_shares(frame_records(cases)), method)
    if not any(y == y for b in bars for y in b[2]):
        raise NoData("every share is withheld (`-*` in the step-time table: each pair's "
                     "fixed step ran off nominal, or send's whole step is not explained by "
                     "its SchedulerOutput path); the findings give the warnings")
    # the axis holds the points (and the 0 and 1 % lines); an interval end far beyond
    # them (two repetitions of a noisy step) is cut at the edge and marked
    bottom, top = _data_bounds([y for b in bars for y in b[2]],
                               [e for b in bars for e in b[3] + b[4]], log=False,
                               include=[0.0, 1.0])
    cut = 0
    bars, dodged = _dodge_bars(bars, axes, table["running"])
    for ax, xs, ys, lo, hi, color, kw in bars:  # both panels show the same intervals
        n = _bounded_errorbar(ax, xs, ys, lo, hi, bottom, top, color, **kw)
        cut += n if ax is axes[0][0] else 0
    _share_axes(axes, bottom, top, table["running"], xlabel, dodged)
    step = "median" if "step_ns_median" in cases.columns else "mean"
    bars = _send_cost_legend(fig, axes[0][0], note, method, table, step)
    _readable_ticks(fig, axes[0])
    models = (sorted({str(m) for m in cases["model"].dropna()}) if "model" in cases.columns
              else [])
    _record(fig, series=[(SEND, c) for c in dict.fromkeys(table["codec"])],
            panels=["against step time", "against running requests"],
            step=step, method=method, bars=bars,
            s2r=bool(table["share_s2r"].notna().any()),
            s2r_median=S2R_MEDIAN_COLUMN in cases.columns
            and bool(cases[S2R_MEDIAN_COLUMN].notna().any()),
            models=models, withheld=note, cut=cut, left_out=left_out,
            running=sorted({float(x) for x in table["running"] if x == x}), dodge=dodged)
    return fig


def _share_axes(axes, bottom: float, top: float, running, xlabel: str, dodged: dict) -> None:
    """``send_cost_share``'s axes: both panels' y range ``[bottom, top]``, the 0 and 1 %
    lines; the step-time panel's log axis (``_plain_log_ticks``), the running-request
    panel's axis (``_set_running_axis`` of the true counts ``running``); each title
    saying where its points are offset sideways (``dodged``, ``_dodge_bars``). One count
    alone on a linear axis is shown with half its size either side, so that its offset
    points stay close together rather than spread across the panel."""
    for ax in axes[0]:
        ax.set_ylim(bottom, top)
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.axhline(1.0, color="#777777", linewidth=0.8, linestyle=":")
        ax.set_ylabel("send's cost, % of the measured step")
        ax.grid(True, alpha=0.3)
    ax = axes[0][0]
    ax.set_xscale("log")
    _plain_log_ticks(ax)
    ax.set_xlabel("step time (ms, cached case's median step)")
    ax.set_title("against step time (dotted: 1 %)" + (
        "\nwhole step and SchedulerOutput path offset sideways for legibility"
        if any(o != 1.0 for o in dodged["step"]) else ""), fontsize="medium")
    ax = axes[0][1]
    _set_running_axis(ax, running, xlabel)
    moved = any(o != (1.0 if dodged["running_log"] else 0.0) for o in dodged["running"])
    ax.set_title("against running requests" + (
        "\npoints offset sideways for legibility: x is the running count at the tick"
        if moved else ""), fontsize="medium")
    counts = sorted({float(x) for x in running if x == x})
    if moved and len(counts) == 1 and not dodged["running_log"]:
        half = (abs(counts[0]) or 1.0) / 2
        ax.set_xlim(counts[0] - half, counts[0] + half)


def _send_cost_legend(fig, ax, note: str, method: str = "t", table=None,
                      step: str = "median") -> str:
    """``send_cost_share``'s legend (the series of ``ax``, in as many columns as fit)
    and title (with ``note``): what is drawn, ``send_cost.share_formula`` of ``method``
    and ``step`` (cached's ``median`` or ``mean`` step, the share's base: the words the
    caption uses too), and its interval's name, or, where no workload of ``table`` has
    as many pairs as the method needs, that it draws no interval (one repetition, or too
    few pairs: the findings' words). Returns those bars' words, for the caption."""
    from ipc_bench.analysis.send_cost import share_formula
    from ipc_bench.analysis.stats import INTERVAL_NAMES, min_pairs

    handles, labels = ax.get_legend_handles_labels()
    longest = max((len(x) for x in labels), default=1)
    fits = max(1, int(11.5 / (0.068 * longest + 0.7)))
    fig.legend(handles, labels, loc="outside lower center",
               ncols=max(1, min(len(labels), fits, 4)),
               fontsize="small" if len(labels) <= 8 else "x-small")
    name, need = INTERVAL_NAMES[method], min_pairs(method)
    pairs = [] if table is None else list(table.groupby(["workload", "codec"], observed=True).size())
    bars = ("one repetition: no interval" if pairs and max(pairs) < 2 else
            f"no interval: a {name} interval needs >= {need} pairs"
            if pairs and max(pairs) < need else f"bars: 95 % {name} interval")
    fig.suptitle(_with_note(f"What send costs as a share of the step, "
                            f"{share_formula(method, step)} ({bars}): whole {step} step "
                            "(filled, thick), SchedulerOutput build + encode + decode "
                            "(hollow, thin); codecs by line style and marker", note),
                 fontsize="medium")
    return bars


#: Panels of ``tp_saving_figure``: (``analysis.tp.tp_saving`` key, scale, y label, title).
_TP_PANELS = (
    ("saving_tp_s2r_bytes_written_per_step", 1.0, "bytes per step",
     "bytes the scheduler writes (once)"),
    ("saving_tp_s2r_wire_bytes_all_ranks_per_step", 1.0, "bytes per step",
     "bytes reaching the N ranks, all together"),
    ("saving_tp_decode_ns_all_ranks_per_step", 1e-3, "µs per step",
     "the N ranks' decodes, summed"),
    ("saving_tp_ready_ns_median", 1e-3, "µs per step",
     "slowest rank's receive-to-ready (median)"),
)


def _times_not_drawn(hidden: list) -> Optional[str]:
    """The title's line under a figure that draws the bytes of the cases ``hidden``
    (summaries whose timings are withheld, ``analysis.cores``) but not their times, e.g.
    ``times not drawn for 2 cases: N readers need N + 2 free cores, ...``; ``None``
    when ``hidden`` is empty."""
    note = cores.footnote(hidden)
    if note:
        note = note.replace(f"{cores.MARK} timings left out", "times not drawn for "
                            f"{len(hidden)} case{'s' if len(hidden) > 1 else ''}", 1)
    return note


@_finished_cases
def tp_saving_figure(results):
    """Send's saving per step against the number of runner ranks N (``--tp``, scenario
    tp-broadcast): send minus cached (``analysis.tp.tp_saving``, mean over repetitions)
    of the bytes written once, the N decodes summed and the slowest rank's median
    receive-to-ready time, one line per transport and codec (and draft count K,
    ``--num-spec-tokens``, and workload, ``--num-running``, where the run has several:
    workloads are never averaged together, their marker and label tell them apart); and
    of the bytes that reach the N ranks together (``tp_s2r_wire_bytes_all_ranks_per_step``:
    a ring's chunk once, read by every rank; XPUB's frame N times). Lines of one workload,
    codec and K equal at every N (the bytes written once by ipc, shm and shm-block) are
    drawn as one, labelled with every transport it stands for
    (``ipc = shm = shm-block / msgpack``, ``_merge_equal``), in its first transport's
    colour, so none hides another; each panel has its own legend. The times of cases
    whose timings are withheld (``analysis.cores``) are not drawn. Records ``merged``:
    per panel title, the transports drawn as one line (those of 2 or more);
    ``merged_labels``: per panel title, those lines' legend labels (naming the codec, and
    K and workload where several); ``workloads``: the running-request counts, when there
    are several (else ``[]``). Raises ``ValueError``
    when ``results`` holds several runs, ``NoData`` without send/cached pairs of
    ``--tp`` cases."""
    from ipc_bench.analysis.tp import SAVING_KEYS, tp_saving

    timing_keys = [k for k in SAVING_KEYS if "bytes" not in k]
    _one_run(results)
    cases = results.cases
    if "tp" not in cases.columns:
        raise NoData("no tensor-parallel cases (scenario tp-broadcast)")
    records = [{k: v for k, v in r.items() if not (is_missing(v) and v is not None)}
               for r in frame_records(cases) if not is_missing(r.get("tp"))]
    hidden = [r for r in records if cores.is_withheld(r)]
    for r in hidden:  # their bytes stay; their times are not drawn
        for k in [k for k in r if k in timing_keys]:
            del r[k]
    rows = tp_saving(records)
    if not rows:
        raise NoData("needs send and cached cases of the same --tp, codec and transport")
    fig, axes = _figure(1, len(_TP_PANELS), width=18, height=4.6)
    lines = sorted({(r["transport"], r["codec"], r["num_spec_tokens"]) for r in rows})
    several_k = len({k for _, _, k in lines}) > 1
    workloads = _tp_workloads(rows)
    several_b = len(workloads) > 1
    colors = {t: c for t, c in zip(sorted({t for t, _, _ in lines}),
                                   (*POLICY_COLORS.values(), *_EXTRA_COLORS))}
    markers = dict(zip([(b, k) for b in workloads for k in sorted({k for _, _, k in lines})],
                       ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p")))
    merged, merged_labels = {}, {}
    for ax, (key, scale, ylabel, title) in zip(axes[0], _TP_PANELS):
        if key[len("saving_"):] in timing_keys and not any(key in r for r in rows):
            ax.text(0.5, 0.5, "timings left out\n(why: above)", ha="center", va="center",
                    transform=ax.transAxes)
        series = _tp_series(rows, key, scale, workloads, lines)
        for transports, (b, codec, k), means in _merge_equal(series):
            ns = sorted(means)
            label = (f"{' = '.join(transports)} / {codec}" + (f" / K={k}" if several_k else "")
                     + (f" / {b} running" if several_b else ""))
            ax.plot(ns, [means[n] for n in ns], marker=markers.get((b, k), "o"),
                    color=colors[transports[0].split(" ")[0]],
                    linestyle=codec_linestyle(codec), label=label)
            if len(transports) > 1:
                merged.setdefault(title, []).append(transports)
                merged_labels.setdefault(title, []).append(label)
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_xticks(sorted({int(r["tp"]) for r in rows}))
        ax.set_xlabel("runner ranks N")
        ax.set_ylabel(f"send - cached, {ylabel}")
        ax.set_title(title, fontsize="medium")
        ax.grid(True, alpha=0.3)
        _legend(ax)
    note = _times_not_drawn(hidden)
    fig.suptitle(_with_note("Send's saving per step against N (tensor-parallel broadcast)",
                            note), fontsize="medium")
    _record(fig, series=lines, panels=[t for _, _, _, t in _TP_PANELS],
            withheld=len(hidden), merged=merged, merged_labels=merged_labels,
            workloads=workloads if several_b else [])
    return fig


def _tp_workloads(rows: list[dict]) -> list:
    """The running-request counts (``num_running``) of ``tp_saving`` ``rows``, in
    order, a count read as a float (16.0, from a column with gaps) set to its int in
    ``rows`` as well."""
    for r in rows:
        b = r["num_running"]
        if isinstance(b, float) and b == b and b.is_integer():
            r["num_running"] = int(b)
    return sorted({r["num_running"] for r in rows},
                  key=lambda b: (not isinstance(b, (int, float)), str(b).zfill(12)))


#: What a ``tp_saving`` line is, besides its workload: the fields ``_tp_series`` matches.
_TP_LINE = ("transport", "codec", "num_spec_tokens")


def _tp_series(rows: list[dict], key: str, scale: float, workloads: list,
               lines: list[tuple], fields: tuple = _TP_LINE) -> dict:
    """``--tp`` ``rows``' ``key`` x ``scale`` per line and workload, mean over
    repetitions: ``(line[0], (num_running, *line[1:])) -> {N: mean}`` (for
    ``tp_saving``: ``(transport, (num_running, codec, K))``) for each workload of
    ``workloads`` (outer) and each line of ``lines`` (tuples of the values of ``fields``,
    the row keys a line is, ``(transport, codec, K)`` by default) that has the key;
    workloads are never averaged together."""
    series = {}
    for b in workloads:
        for line in lines:
            by_n: dict[int, list[float]] = {}
            for r in rows:
                if (r["num_running"], *(r[f] for f in fields)) == (b, *line) and key in r:
                    by_n.setdefault(int(r["tp"]), []).append(r[key] * scale)
            if by_n:
                series[(line[0], (b, *line[1:]))] = {n: sum(v) / len(v)
                                                     for n, v in by_n.items()}
    return series


def _merge_equal(series: dict) -> list[tuple[list[str], tuple, dict]]:
    """``series`` ((transport, group) -> {N: mean}; ``group`` what a line must share to
    be merged: its workload, codec and K) as the lines to draw:
    ``(transports, group, means)``, in order, a transport of the same group whose means
    equal a line's (within 1e-9 relative) at every N both have (one at least) merged
    into it, its points added; a transport merged into a line of more Ns than its own is
    named with its Ns (``shm (N = 1)``: a spinning ring's one rank)."""
    out: list[tuple[list, tuple, dict]] = []
    for (transport, group), means in series.items():
        for names, g, m in out:
            both = set(m) & set(means)
            if g == group and both and all(
                    math.isclose(m[n], means[n], rel_tol=1e-9, abs_tol=1e-9) for n in both):
                names.append((transport, sorted(means)))
                m.update(means)
                break
        else:
            out.append(([(transport, sorted(means))], group, dict(means)))
    return [([t if ns == sorted(m) else f"{t} (N = {', '.join(map(str, ns))})"
              for t, ns in names], g, m) for names, g, m in out]


@_finished_cases
def tp_per_step_figure(results):
    """Per case of the tensor-parallel broadcast (scenario tp-broadcast), against the
    number of runner ranks N, means over repetitions: left, the bytes the scheduler
    writes once per step (log scale), one line per transport, codec and policy (and
    draft count K, ``--num-spec-tokens``, and workload, ``--num-running``, where the run
    has several: workloads are never averaged together, their marker and label, ``/ 16
    running``, tell them apart); right, for ``--codecs replicated``, the replica
    scheduler per step of one rank (dashed: ``tp_replica_scheduler_ns_all_ranks_per_step``
    / N) and of the N ranks together (solid: what the machine pays), per transport and
    policy (and K and workload likewise); the times of cases whose timings are withheld
    (``analysis.cores``) are not drawn, the title says why and ``drawn``'s ``withheld``
    counts them. Records ``workloads``: the running-request counts, when there are
    several (else ``[]``). Raises ``ValueError`` when ``results`` holds several runs,
    ``NoData`` without ``--tp`` cases."""
    _one_run(results)
    cases = results.cases
    if "tp" not in cases.columns or "tp_s2r_bytes_written_per_step" not in cases.columns:
        raise NoData("no tensor-parallel cases (scenario tp-broadcast)")
    done = cases[cases["tp"].notna() & cases["tp_s2r_bytes_written_per_step"].notna()]
    if done.empty:
        raise NoData("no tensor-parallel cases (scenario tp-broadcast)")
    fig, axes = _figure(1, 2, width=13, height=4.6)
    left, right = axes[0]
    spec = (done["num_spec_tokens"].fillna(0).astype(int) if "num_spec_tokens" in done.columns
            else done["tp"] * 0)  # K: 0 where the run has no draft count
    rows = [dict(r, num_spec_tokens=int(k), num_running=r.get("num_running"))
            for r, k in zip(frame_records(done), spec)]
    workloads = _tp_workloads(rows)
    several_b = len(workloads) > 1
    keys = sorted({(r["transport"], r["codec"], r["policy"], r["num_spec_tokens"])
                   for r in rows},
                  key=lambda k: (k[0], codec_rank(k[1]), k[1], policy_rank(k[2]), k[3]))
    several_k = len({k[3] for k in keys}) > 1
    transports = sorted({k[0] for k in keys})
    markers = dict(zip([(t, b) for b in workloads for t in transports],
                       ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p")))
    series = _tp_series(rows, "tp_s2r_bytes_written_per_step", 1.0, workloads, keys,
                        ("transport", "codec", "policy", "num_spec_tokens"))
    for (transport, (b, codec, policy, k)), means in series.items():
        ns = sorted(means)
        label = (f"{transport} / {codec} / {policy}" + (f" / K={k}" if several_k else "")
                 + (f" / {b} running" if several_b else ""))
        left.plot(ns, [means[n] for n in ns], label=label,
                  marker=markers.get((transport, b), "o"), color=policy_color(policy),
                  linestyle=codec_linestyle(codec))
    has_replica, hidden = _replica_panel(right, rows, markers, workloads)
    ticks = sorted({int(n) for n in done["tp"]})
    left.set_yscale("log")
    left.set_title("bytes the scheduler writes once per step", fontsize="medium")
    left.set_ylabel("bytes per step")
    if not right.lines:  # the same N as the bytes, though no time is drawn
        right.set_xlim(left.get_xlim())
    for ax in (left, right):
        ax.set_xticks(ticks)
        ax.set_xlabel("runner ranks N")
        ax.grid(True, alpha=0.3)
        _long_legend_under(fig, ax, 4.6)
    note = _times_not_drawn(hidden)
    fig.suptitle(_with_note("Per step against N (tensor-parallel broadcast): bytes written "
                            "once, and the scheduler every replicated rank runs", note),
                 fontsize="medium")
    _record(fig, series=keys, panels=["bytes written once"]
            + (["replica scheduler"] if has_replica else []), replicated=has_replica,
            withheld=len(hidden), workloads=workloads if several_b else [])
    return fig


def _long_legend_under(fig, ax, height: float, most: int = 12) -> None:
    """``ax``'s legend: in the panel where it has at most ``most`` entries, else under
    the panel in two columns, with ``fig`` (``height`` inches high as made) made 0.2 in
    taller per row of the legend, unless it is already taller, so that the legend stays
    in the figure (a run of several ``--num-running`` has as many lines per workload)."""
    labels = ax.get_legend_handles_labels()[1]
    if len(labels) <= most:
        _legend(ax)
        return
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.18), ncols=2)
    fig.set_size_inches(fig.get_size_inches()[0],
                        max(fig.get_size_inches()[1],
                            round(height + 0.2 * ((len(labels) + 1) // 2), 2)))


#: The replica scheduler's time per step, all N ranks together (ns).
_REPLICA = "tp_replica_scheduler_ns_all_ranks_per_step"


def _replica_panel(ax, rows: list[dict], markers: dict,
                   workloads: list) -> tuple[bool, list[dict]]:
    """Draw on ``ax`` the replica scheduler per step of the ``--codecs replicated``
    cases of ``rows`` (``--tp`` case summaries, ``num_spec_tokens`` their draft count),
    µs, means over repetitions: the N ranks' (solid) and one rank's (dashed), one pair of
    lines per transport, policy and K of each workload of ``workloads`` (running-request
    counts, labelled ``/ 16 running`` where there are several; ``markers``: per
    (transport, workload)); the cases whose timings are withheld
    (``analysis.cores.is_withheld``) are not drawn. Returns ``(whether some case has
    the time, the summaries of those not drawn)``."""
    ax.set_title("replicated: the replica scheduler per step", fontsize="medium")
    ax.set_ylabel("µs per step")
    timed = [r for r in rows if not is_missing(r.get(_REPLICA))]
    has = bool(timed)
    timed = [r for r in timed if r["codec"] == "replicated"]
    hidden = [r for r in timed if cores.is_withheld(r)]
    shown = [r for r in timed if not cores.is_withheld(r)]
    several_k = len({r["num_spec_tokens"] for r in shown}) > 1
    keys = sorted({(r["transport"], r["policy"], r["num_spec_tokens"]) for r in shown},
                  key=lambda k: (k[0], policy_rank(k[1]), k[2]))
    series = _tp_series(shown, _REPLICA, 1e-3, workloads, keys,
                        ("transport", "policy", "num_spec_tokens"))
    for (transport, (b, policy, k)), by_n in series.items():
        ns = sorted(by_n)
        total = [by_n[n] for n in ns]
        name = (f"{transport} / {policy}" + (f" / K={k}" if several_k else "")
                + (f" / {b} running" if len(workloads) > 1 else ""))
        for ys, what, style in ((total, "N ranks", "-"),
                                ([t / n for t, n in zip(total, ns)], "one rank", "--")):
            ax.plot(ns, ys, label=f"{name}: {what}", marker=markers.get((transport, b), "o"),
                    color=policy_color(policy), linestyle=style)
    if not shown:
        ax.text(0.5, 0.5, "timings left out\n(why: above)" if hidden
                else "no --codecs replicated case", ha="center", va="center",
                transform=ax.transAxes)
    return has, hidden


_LATENCY_RE = re.compile(r"^(ttft|itl|tpot|e2e)_(ns|us|ms|s)$")
_TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def latency_columns(requests) -> dict[str, tuple[str, float]]:
    """Latency columns of a requests table: ``{"ttft": (column, factor to ms), ...}``
    for columns named ``ttft|itl|tpot|e2e`` + ``_ns|_us|_ms|_s`` with any value."""
    found = {}
    for col in requests.columns:
        m = _LATENCY_RE.match(col)
        if m and m.group(1) not in found and requests[col].notna().any():
            found[m.group(1)] = (col, _TO_MS[m.group(2)])
    return found


def _flatten_itl(values) -> list[float]:
    out: list[float] = []
    for v in values:
        if isinstance(v, str):
            v = v.strip()
            if not v:
                continue
            try:
                v = json.loads(v)
            except ValueError:
                continue
        if isinstance(v, (list, tuple)):
            out.extend(float(x) for x in v)
        elif v is not None and v == v:
            out.append(float(v))
    return out


def _latency_sources(results) -> dict[str, tuple]:
    """``{"ttft"|"itl": (table, column, factor to ms)}``: where ``results`` keeps each
    latency (``latency_columns``; ITL from ``results.itl`` first); ``{}`` without any
    (not a timed replay)."""
    req = results.requests
    cols = latency_columns(req) if not req.empty else {}
    itl = getattr(results, "itl", None)
    sources = {}
    if "ttft" in cols:
        sources["ttft"] = (req, *cols["ttft"])
    if itl is not None and len(itl) and "itl_s" in itl.columns:
        sources["itl"] = (itl, "itl_s", 1e3)
    elif "itl" in cols:
        sources["itl"] = (req, *cols["itl"])
    return sources


@_finished_cases
def latency_cdfs(results):
    """Empirical CDFs of TTFT (per request, from its intended arrival) and ITL (every
    gap between consecutive tokens of a request), ms, log x, one line per policy and
    codec: present for timed replays, whose requests carry ``ttft_*`` columns (unit in
    the suffix) and whose ``results.itl`` lists the gaps (else an ``itl_*`` requests
    column, a number or a JSON list per request). Raises ``ValueError`` when ``results`` holds several runs,
    ``NoData`` for a run without per-request latencies (a logical-clock run)."""
    import numpy as np

    _one_run(results)
    if not _latency_sources(results):  # the first reason: no case has latencies at all
        raise NoData("no per-request latencies (ttft_s, itl.csv): not a timed replay")
    results, note = _timed_only(results)
    sources = _latency_sources(results)
    panels = [k for k in ("ttft", "itl") if k in sources]
    if not panels:  # only cases whose timings are withheld have latencies
        raise NoData(note or "no per-request latencies (ttft_s, itl.csv): not a timed "
                     "replay")
    fig, axes = _figure(1, len(panels), width=5.6 * len(panels) + 0.5, height=4.3)
    nonpositive: dict[str, int] = {}
    for ax, what in zip(axes[0], panels):
        table, col, factor = sources[what]
        for (policy, codec), g in _series(table):
            vals = (_flatten_itl(g[col]) if what == "itl"
                    else g[col].dropna().astype(float).tolist())
            vals = np.sort(np.asarray(vals, dtype=float) * factor)
            vals = vals[np.isfinite(vals)]
            total, below = len(vals), int((vals <= 0).sum())
            nonpositive[what] = nonpositive.get(what, 0) + below
            vals = vals[vals > 0]  # the log axis cannot place them: counted, captioned,
            if len(vals) == 0:     # and the curve starts at their fraction
                continue
            y = (below + np.arange(1, len(vals) + 1)) / total
            ax.step(vals, y, where="post", color=policy_color(policy),
                    linestyle=codec_linestyle(codec),
                    label=f"{series_label(policy, codec)} (n={len(vals):,})")
        ax.set_xscale("log")
        _plain_log_ticks(ax)
        ax.set_xlabel(("TTFT" if what == "ttft" else "inter-token latency") + " (ms)")
        ax.set_ylabel("fraction of " + ("requests" if what == "ttft" else "gaps"))
        ax.set_ylim(0, 1.0)
        ax.set_title("TTFT CDF" if what == "ttft" else "ITL CDF")
        ax.grid(True, alpha=0.3)
        _legend(ax, loc="lower right")
    fig.suptitle(_with_note("Latency distributions per policy (timed replay)", note))
    _readable_ticks(fig, axes[0])
    drawn = {what: [key for key, _ in _series(sources[what][0])] for what in panels}
    gaps = sources.get("itl", (None,))[0] is getattr(results, "itl", None)
    _record(fig, series=drawn[panels[0]], panels=panels, withheld=note,
            nonpositive={k: v for k, v in nonpositive.items() if v},
            itl_series=drawn.get("itl"), itl_missing=missing_itl(results) if gaps else {})
    return fig


#: Every figure function, in report order: (name, function, title).
FIGURES = (
    ("bytes_per_step", bytes_per_step, "Bytes per step"),
    ("codec_time_per_step", codec_time_per_step, "Encode and decode time per step"),
    ("throughput", throughput, "Output tokens/s"),
    ("step_breakdown", step_breakdown, "Where a step's time goes"),
    ("send_cost_share", send_cost_share, "What send costs as a share of the step"),
    ("latency_cdfs", latency_cdfs, "TTFT and ITL distributions"),
    ("tp_saving", tp_saving_figure, "Send's saving against the number of ranks"),
    ("tp_per_step", tp_per_step_figure, "Bytes written once and the replicated scheduler "
     "against the number of ranks"),
)


@contextlib.contextmanager
def report_style() -> Iterator[None]:
    """Within it, matplotlib's settings are its defaults (``matplotlib.rcParamsDefault``,
    as ``matplotlib.style.use("default")`` sets them; the backend kept), whatever the
    caller set (``plt.style.use("ggplot")``, ``rcParams["font.size"]``, a
    ``matplotlibrc``); the caller's settings are back on leaving, an exception
    included. The report's figures are drawn and saved in it (``draw``), so that its
    PNG files are the same bytes whoever renders it: ``bench.py report``, or
    ``cli.main(["report", ...])`` in a notebook or script with a style of its own."""
    import matplotlib.style

    with matplotlib.style.context("default"):
        yield


def draw_png(fn, results) -> bytes:
    """PNG bytes of the figure ``fn(results)`` (``figure_png``), drawn in the report's
    settings (``report_style``: the caller's matplotlib style does not change them).
    Raises ``NoData`` when ``fn`` does, and when matplotlib cannot draw the figure
    (values it cannot place, e.g. a hand-edited summary's): ``matplotlib cannot draw
    it (WHY)``, one line."""
    return draw(fn, results)[0]


def draw(fn, results) -> tuple[bytes, dict]:
    """``(PNG bytes, what it drew)`` of the figure ``fn(results)`` (``figure_png``,
    ``drawn``), drawn and saved in ``report_style``; raises ``NoData`` as ``draw_png``
    does."""
    import matplotlib.pyplot as plt

    fig = None
    try:
        with report_style():
            fig = fn(results)
            return figure_png(fig), drawn(fig)
    except (ValueError, ArithmeticError) as exc:
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip(".")
        raise NoData(f"matplotlib cannot draw it ({why})") from None
    finally:
        if fig is not None:
            plt.close(fig)


#: matplotlib's ``savefig.*`` settings under which ``Figure.savefig`` to PNG writes what
#: the canvas draws (``figure_png``): their defaults, which ``report_style`` sets.
_SAVED_AS_DRAWN = {"savefig.transparent": False, "savefig.facecolor": "auto",
                   "savefig.edgecolor": "auto", "savefig.bbox": None}


def figure_png(fig, dpi: int = 110) -> bytes:
    """The figure as PNG bytes at ``dpi`` dots per inch, its text drawable first
    (``utf8_figure_text``): the bytes ``fig.savefig(buf, format="png", dpi=dpi)``
    writes. Under the ``_SAVED_AS_DRAWN`` settings (the report's, ``report_style``) the
    canvas draws it once at ``dpi``, its layout engine run in that draw; ``savefig``
    lays it out in a draw of its own first, which costs as much again and changes
    nothing here. Under other settings (a caller's ``savefig.bbox: tight``, a
    transparent background), or on a canvas other than Agg's (not one of this
    module's figures), ``savefig`` writes it."""
    import io

    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    utf8_figure_text(fig)
    buf = io.BytesIO()
    if (not isinstance(fig.canvas, FigureCanvasAgg)
            or any(matplotlib.rcParams[k] != v for k, v in _SAVED_AS_DRAWN.items())):
        fig.savefig(buf, format="png", dpi=dpi)
        return buf.getvalue()
    shown = fig.dpi
    fig.set_dpi(dpi)
    try:
        fig.canvas.print_png(buf)
    finally:
        fig.set_dpi(shown)
    return buf.getvalue()


def utf8_figure_text(fig) -> None:
    """Make every text of ``fig`` drawable (in place): its titles, axis labels,
    legends, notes and tick labels (those ``set_xticklabels`` gives, which each layout
    sets anew from the axis's formatter, ``_utf8_tick_labels``) with a lone surrogate
    written as its escape (``errors.utf8_text``: a workload or run label read from a
    hand-edited ``summary.json``, ``"\\ud800"``, which matplotlib's font code refuses
    with a ``TypeError``). A text without one, and its formatter, are left as they
    are."""
    from matplotlib.text import Text

    from ipc_bench.errors import utf8_text

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            _utf8_tick_labels(axis)
    for text in fig.findobj(Text):
        words = text.get_text()
        if isinstance(words, str) and utf8_text(words) != words:
            text.set_text(utf8_text(words))


def _utf8_tick_labels(axis) -> None:
    """Where a tick label of ``axis`` (major or minor) that its formatter gives from a
    list of texts (``FixedFormatter``, or the ``FuncFormatter`` that ``set_ticklabels``
    makes) holds a lone surrogate, that formatter wrapped so that each label it gives
    is written with its escape (``errors.utf8_text``). Other formatters (numbers) are
    not called."""
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    from ipc_bench.errors import utf8_text

    for minor in (False, True):
        fmt = axis.get_minor_formatter() if minor else axis.get_major_formatter()
        if not isinstance(fmt, (FixedFormatter, FuncFormatter)):
            continue
        locs = axis.get_minorticklocs() if minor else axis.get_majorticklocs()
        if all(utf8_text(str(fmt(x, i))) == str(fmt(x, i)) for i, x in enumerate(locs)):
            continue
        drawable = FuncFormatter(lambda x, pos, fmt=fmt: utf8_text(str(fmt(x, pos))))
        (axis.set_minor_formatter if minor else axis.set_major_formatter)(drawable)


def axis_labels(fig) -> list[tuple[str, str]]:
    """``(xlabel, ylabel)`` of every visible axes of ``fig`` (for checks)."""
    return [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes if ax.get_visible()]
