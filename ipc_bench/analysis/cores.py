"""When the timings of a case with N reader processes are published, one rule for
every scenario (``decision``): N is the ``--tp`` ranks or ``--pp`` stages of a case,
1 for a case with one runner process (decode-steady, the replays: ``runner_cores``),
2 for one with a runner and a ``--frontend`` process (``runner_readers``), 0 for a
single-process case, 1 for one with a ``--frontend`` process beside it (recorded as a
one-runner case's, ``runner_readers`` and ``runner_cores``; its lines name the
frontend, ``FRONTEND``). With at least N + 2 cores in the scheduler's CPU affinity (the N
readers, the scheduler, one spare for the kernel, interrupts and the harness's own
threads) the timings are shown; with N = 1 on exactly 2 they are shown and marked
``°`` (no core to spare: ``marked_footnote`` says so once under the table, and a
paired comparison of such a case carries the mark too, ``marked_comparison_note``);
elsewhere
(N >= 2 on fewer than N + 2, any N on fewer than N + 1) the tables leave the timing
cells empty (``-``) and mark the row ``*`` with the reason below them.
``summary.json`` keeps the raw numbers with ``tp_timings_withheld`` /
``pp_timings_withheld`` / ``runner_timings_withheld`` and the marks with
``tp_timings_marked`` / ``pp_timings_marked`` / ``runner_timings_marked``; bytes and
the oracles are reported whatever the cores.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from ipc_bench.analysis.pace import is_missing

#: Cores beyond the N readers that showing timings unmarked needs (the scheduler, one
#: spare).
SPARE_CORES = 2
#: What the N + 2 cores are for, as the footnote says it.
CORES_FOR = "one each for them and the scheduler, a spare for the kernel and the harness's threads"
#: Units of the case table's timing metrics (``analysis.metrics``): left empty.
TIMING_UNITS = frozenset({"ns", "tok/s", "x"})
#: The mark a row whose timings are withheld carries.
MARK = "*"
#: The mark a row whose timings are shown on N + 1 cores (N = 1) carries.
SHARED_MARK = "\u00b0"
#: What the footnote calls the N readers of a case of each kind: ``--tp`` ranks,
#: ``--pp`` stages; a table with both kinds (or a kind not known) says "ranks or stages".
READERS_WORD = {"tp": "ranks", "pp": "stages"}
#: The kind ``kind_readers_and_cores`` and the footnotes give the single-process case
#: with a ``--frontend`` process, whose one reader (N = 1) is the frontend: its figures
#: are a one-runner case's (``runner_readers``, ``runner_cores`` ...).
FRONTEND = "frontend"
#: The one reader of an N = 1 case of each kind, as ``marked_footnote`` names it.
READER_WORD = {"tp": "rank", "pp": "stage", "runner": "runner", FRONTEND: "frontend"}
#: The kinds of case whose readers are counted: ``runner`` is a one-runner case (N = 1,
#: or 2 with its frontend: ``runner_readers``), or the single process with a frontend
#: (N = 1: ``FRONTEND``).
KINDS = ("tp", "pp", "runner")
#: The transport of the single-process case (``harness.spec.INPROC``).
_INPROC = "inproc"
#: ``decision``'s answers.
SHOWN, MARKED, WITHHELD = "shown", "marked", "withheld"


def decision(n: int, cores: Optional[int]) -> str:
    """How the timings of a case with ``n`` reader processes on ``cores`` cores
    (``None``: not counted, e.g. readers on other machines) are shown: ``SHOWN`` with
    N + 2 or more (and N = 0 on its one core: no reader to share it with), ``MARKED``
    for N = 1 on exactly 2, ``WITHHELD`` otherwise."""
    if cores is None or cores >= n + SPARE_CORES or (n == 0 and cores >= 1):
        return SHOWN
    if n == 1 and cores == n + 1:
        return MARKED
    return WITHHELD


def withheld(n: int, cores: Optional[int]) -> bool:
    """Whether N readers on ``cores`` cores (``None``: unknown) get no timings."""
    return decision(n, cores) == WITHHELD


def marked(n: int, cores: Optional[int]) -> bool:
    """Whether N readers on ``cores`` cores get their timings shown and marked."""
    return decision(n, cores) == MARKED


def _readers(summary: dict[str, Any], kind: str) -> tuple[Any, Any]:
    """``(N, cores)`` of ``kind`` in ``summary`` (gaps as they are)."""
    if kind == "runner":
        return runner_readers(summary), summary.get("runner_cores")
    return summary.get(kind), summary.get(f"{kind}_cores")


def runner_readers(summary: dict[str, Any]) -> int:
    """N of a one-runner case: ``runner_readers`` as recorded, else (a summary from
    before it) 2 for a ``--frontend`` case (its ``frontend`` figures), 1 otherwise; of
    the single-process case 1 with a frontend, 0 without (such a summary from before
    the frontend was counted records no ``runner_cores``: nothing is ruled on)."""
    n = summary.get("runner_readers")
    if not is_missing(n):
        return int(n)
    frontend = summary.get("frontend")
    with_frontend = not is_missing(frontend) and bool(frontend)
    return int(with_frontend) + (not single_process(summary))


def single_process(summary: dict[str, Any]) -> bool:
    """Whether ``summary`` is the single-process case's (transport ``inproc``)."""
    return summary.get("transport") == _INPROC


def readers_and_cores(summary: dict[str, Any]) -> Optional[tuple[int, int]]:
    """``(N, cores)`` of a case summary whose timings are withheld; ``None`` otherwise
    (no readers counted, or enough cores). ``summary`` may be a row of
    ``Results.cases``: a gap (``None``, NaN, ``pandas.NA``, ``pace.is_missing``) is
    no value."""
    found = kind_readers_and_cores(summary)
    return found[1:] if found is not None else None


def _found(summary: dict[str, Any], what: str) -> Optional[tuple[str, int, int]]:
    """``(kind, N, cores)`` of ``summary`` whose ``{kind}_timings_{what}`` flag holds
    (``withheld`` or ``marked``; without the flag, a summary from before it or a gap
    in a table, ``decision`` answers, as it does for a one-runner case recorded
    without ``runner_readers``: its flags counted a frontend case as N = 1)."""
    for kind in KINDS:
        n, cores = _readers(summary, kind)
        if is_missing(n) or is_missing(cores):
            continue
        flag = summary.get(f"{kind}_timings_{what}")
        if is_missing(flag) or (kind == "runner" and is_missing(summary.get("runner_readers"))):
            flag = decision(int(n), int(cores)) == what
        if flag:
            named = FRONTEND if kind == "runner" and single_process(summary) else kind
            return named, int(n), int(cores)
    return None


def kind_readers_and_cores(summary: dict[str, Any]) -> Optional[tuple[str, int, int]]:
    """``(kind, N, cores)`` (kind ``"tp"``, ``"pp"``, ``"runner"``, or ``FRONTEND`` for
    the single-process case with a frontend) of a case summary whose timings are
    withheld, as ``readers_and_cores``; ``None`` otherwise."""
    return _found(summary, WITHHELD)


def is_withheld(summary: dict[str, Any]) -> bool:
    return readers_and_cores(summary) is not None


def is_marked(summary: dict[str, Any]) -> bool:
    """Whether ``summary``'s timings are shown on N + 1 cores (N = 1) and marked."""
    return not is_withheld(summary) and _found(summary, MARKED) is not None


def core_fields(kind: str, n: int, cores: int) -> dict[str, Any]:
    """The ``summary.json`` fields of a case's readers: ``{kind}_cores``,
    ``{kind}_oversubscribed`` (fewer than N + 1), ``{kind}_timings_withheld`` and
    ``{kind}_timings_marked`` (``decision``)."""
    return {f"{kind}_cores": cores, f"{kind}_oversubscribed": cores < n + 1,
            f"{kind}_timings_withheld": withheld(n, cores),
            f"{kind}_timings_marked": marked(n, cores)}


def footnote(summaries: Iterable[dict[str, Any]]) -> Optional[str]:
    """The line under a table with withheld rows (``None`` when it has none), e.g.
    ``* timings left out: N ranks need N + 2 free cores, one each for them and the
    scheduler, a spare for the kernel and the harness's threads (N = 2 needs 4, N = 4
    needs 6); the run's machine had 2. Bytes and the oracles hold.`` ("N stages" for
    ``--pp`` cases, "N ranks or stages" for both kinds in one table; an N = 1 case on
    one core adds ``; on exactly 2, N = 1 is shown marked °`` in the brackets;
    one-runner cases: ``* timings left out: the scheduler and its runner need a core
    each, 2 in all; the run's machine had 1. Bytes and the oracles hold.``, with
    ``--frontend``: ``the scheduler, its runner and its frontend need a core each and
    a spare for the kernel and the harness's threads, 4 in all; the run's machine had
    2``; the single-process case with a frontend: ``the scheduler and its frontend need
    a core each, 2 in all; the run's machine had 1``)."""
    return footnote_of(f for f in map(kind_readers_and_cores, summaries) if f is not None)


def footnote_of(found: Iterable[tuple[Optional[str], int, int]]) -> Optional[str]:
    """``footnote`` of the ``(kind, N, cores)`` triples of the withheld cases
    (``kind_readers_and_cores``; a kind ``None`` is not known); ``None`` when there are
    none. The readers are named by their kind (``READERS_WORD``): "ranks" when all are
    ``tp``, "stages" when all are ``pp``, else "ranks or stages"; one-runner cases
    (``runner``) get a clause of their own, those with a frontend (N = 2) another, and
    the single process with a frontend (``FRONTEND``, N = 1) a third.
    An N = 1 reader withheld on 2 cores or more was recorded under the rule before N = 1
    got marked timings: its brackets say only what N + 2 is."""
    found = list(found)
    if not found:
        return None
    parts = []
    readers = [f for f in found if f[0] not in ("runner", FRONTEND)]
    if readers:
        words = {READERS_WORD.get(kind) for kind, _, _ in readers}
        word = words.pop() if len(words) == 1 and None not in words else "ranks or stages"
        needs = ", ".join(f"N = {n} needs {n + SPARE_CORES}"
                          for n in sorted({n for _, n, _ in readers}))
        if any(n == 1 and c < n + 1 for _, n, c in readers):
            needs += f"; on exactly 2, N = 1 is shown marked {SHARED_MARK}"
        cores = "/".join(str(c) for c in sorted({c for _, _, c in readers}))
        parts.append(f"N {word} need N + {SPARE_CORES} free cores, {CORES_FOR} ({needs}); "
                     f"the run's machine had {cores}")
    for which, n, clause in (
            ("runner", 1, "the scheduler and its runner need a core each, 2 in all"),
            ("runner", 2, "the scheduler, its runner and its frontend need a core each "
                          "and a spare for the kernel and the harness's threads, 4 in all"),
            (FRONTEND, 1, "the scheduler and its frontend need a core each, 2 in all")):
        runners = sorted({c for kind, m, c in found if kind == which and m == n})
        if runners:
            parts.append(f"{clause}; the run's machine had " + "/".join(map(str, runners)))
    return f"{MARK} timings left out: " + "; ".join(parts) + ". Bytes and the oracles hold."


def marked_footnote(summaries: Iterable[dict[str, Any]]) -> Optional[str]:
    """The line under a table with marked rows (``None`` when it has none):
    ``° 2 cores: the scheduler and its runner had a core each and none was spare for
    the kernel and the harness's threads;`` then ``the A/A pair send / send' in this
    table measures the noise this leaves.`` where the table has an A/A pair (an arm
    ending ``'``), else ``no A/A pair in this table measures the noise this leaves.``
    ("its rank" / "its stage" for ``--tp 1`` / ``--pp 1`` cases, "its frontend" for the
    single process with one)."""
    summaries = list(summaries)
    word = _marked_reader(summaries)
    if word is None:
        return None
    copies = sorted({str(s["arm"]) for s in summaries
                     if isinstance(s.get("arm"), str) and s["arm"].endswith("'")})
    pairs = ", ".join(f"{a[:-1]} / {a}" for a in copies)
    noise = (f"the A/A pair{'s' if len(copies) > 1 else ''} {pairs} in this table "
             f"measure{'' if len(copies) > 1 else 's'} the noise this leaves" if copies
             else "no A/A pair in this table measures the noise this leaves")
    return (f"{SHARED_MARK} 2 cores: the scheduler and its {word} had a core each and none "
            f"was spare for the kernel and the harness's threads; {noise}.")


def _marked_reader(summaries: list[dict[str, Any]]) -> Optional[str]:
    """What the ``°`` lines call the one reader of the marked cases of ``summaries``
    (``READER_WORD``; "reader" for several kinds); ``None`` when none is marked."""
    kinds = {f[0] for f in (_found(s, MARKED) for s in summaries if is_marked(s))}
    if not kinds:
        return None
    return READER_WORD[kinds.pop()] if len(kinds) == 1 else "reader"


def comparison_marked(summaries: Iterable[dict[str, Any]]) -> bool:
    """Whether a paired comparison of the case summaries ``summaries`` (both arms, every
    repetition) compares timings shown marked ``°``: none is withheld (then no timing
    is compared: ``footnote``) and one is marked (``is_marked``)."""
    summaries = list(summaries)
    return (not any(map(is_withheld, summaries))
            and any(map(is_marked, summaries)))


def marked_comparison_note(summaries: Iterable[dict[str, Any]]) -> Optional[str]:
    """The line under paired comparisons (the terminal's comparison block and ratio
    lines, the report's findings and its cached against send table) of which some
    compare timings shown marked ``°`` (``comparison_marked``; ``summaries``: the cases
    of those comparisons), ``None`` when none does: ``° 2 cores: the scheduler and its
    runner had a core each and none was spare for the kernel and the harness's threads,
    in the cases whose timings are compared here.`` (the reader named as in
    ``marked_footnote``)."""
    summaries = [s for s in summaries if not is_withheld(s)]
    word = _marked_reader(summaries)
    if word is None:
        return None
    return (f"{SHARED_MARK} 2 cores: the scheduler and its {word} had a core each and none "
            f"was spare for the kernel and the harness's threads, in the cases whose "
            f"timings are compared here.")
