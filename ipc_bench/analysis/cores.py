"""When the timings of a case with N readers (``--tp`` ranks, ``--pp`` stages) are
published (issue 13): only where at least N + 2 cores are free, the N readers, the
scheduler and one spare for the rest of the machine (the kernel, interrupts, the
harness's own threads). Elsewhere the tables leave the timing cells empty (``-``) and
mark the row ``*`` with the reason below them; ``summary.json`` keeps the raw numbers
with ``tp_timings_withheld`` / ``pp_timings_withheld``; bytes and the oracles are
reported whatever the cores.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from ipc_bench.analysis.pace import is_missing

#: Cores beyond the N readers that publishing timings needs (the scheduler, one spare).
SPARE_CORES = 2
#: What the N + 2 cores are for, as the footnote says it: one each for the readers and
#: the scheduler, one spare for the rest (N = 1 included: the rule is not loosened for
#: one reader without a measurement on a machine with cores to spare).
CORES_FOR = "one each for them and the scheduler, a spare for the kernel and the harness's threads"
#: Units of the case table's timing metrics (``analysis.metrics``): left empty.
TIMING_UNITS = frozenset({"ns", "tok/s", "x"})
#: The mark a row whose timings are withheld carries.
MARK = "*"
#: What the footnote calls the N readers of a case of each kind: ``--tp`` ranks,
#: ``--pp`` stages; a table with both kinds (or a kind not known) says "ranks or stages".
READERS_WORD = {"tp": "ranks", "pp": "stages"}


def withheld(n: int, cores: Optional[int]) -> bool:
    """Whether N readers on ``cores`` cores (``None``: unknown) get no timings."""
    return cores is not None and cores < n + SPARE_CORES


def readers_and_cores(summary: dict[str, Any]) -> Optional[tuple[int, int]]:
    """``(N, cores)`` of a ``--tp`` or ``--pp`` case summary whose timings are
    withheld; ``None`` otherwise (not such a case, or enough cores). ``summary`` may be
    a row of ``Results.cases``: a gap (``None``, NaN, ``pandas.NA``, ``pace.is_missing``)
    is no value."""
    found = kind_readers_and_cores(summary)
    return found[1:] if found is not None else None


def kind_readers_and_cores(summary: dict[str, Any]) -> Optional[tuple[str, int, int]]:
    """``(kind, N, cores)`` (kind ``"tp"`` or ``"pp"``) of a case summary whose timings
    are withheld, as ``readers_and_cores``; ``None`` otherwise."""
    for kind in ("tp", "pp"):
        n, cores = summary.get(kind), summary.get(f"{kind}_cores")
        if is_missing(n) or is_missing(cores):
            continue
        flag = summary.get(f"{kind}_timings_withheld")
        if is_missing(flag):  # a summary from before the flag (or a gap in a table)
            flag = withheld(int(n), int(cores))
        if flag:
            return kind, int(n), int(cores)
    return None


def is_withheld(summary: dict[str, Any]) -> bool:
    return readers_and_cores(summary) is not None


def footnote(summaries: Iterable[dict[str, Any]]) -> Optional[str]:
    """The line under a table with withheld rows (``None`` when it has none), e.g.
    ``* timings left out: N ranks need N + 2 free cores, one each for them and the
    scheduler, a spare for the kernel and the harness's threads (N = 2 needs 4, N = 4
    needs 6); the run's machine had 2. Bytes and the oracles hold.`` ("N stages" for
    ``--pp`` cases, "N ranks or stages" for both kinds in one table)."""
    return footnote_of(f for f in map(kind_readers_and_cores, summaries) if f is not None)


def footnote_of(found: Iterable[tuple[Optional[str], int, int]]) -> Optional[str]:
    """``footnote`` of the ``(kind, N, cores)`` triples of the withheld cases
    (``kind_readers_and_cores``; a kind ``None`` is not known); ``None`` when there are
    none. The readers are named by their kind (``READERS_WORD``): "ranks" when all are
    ``tp``, "stages" when all are ``pp``, else "ranks or stages"."""
    found = list(found)
    if not found:
        return None
    words = {READERS_WORD.get(kind) for kind, _, _ in found}
    word = words.pop() if len(words) == 1 and None not in words else "ranks or stages"
    needs = ", ".join(f"N = {n} needs {n + SPARE_CORES}"
                      for n in sorted({n for _, n, _ in found}))
    cores = "/".join(str(c) for c in sorted({c for _, _, c in found}))
    return (f"{MARK} timings left out: N {word} need N + {SPARE_CORES} free cores, {CORES_FOR} "
            f"({needs}); "
            f"the run's machine had {cores}. Bytes and the oracles hold.")
