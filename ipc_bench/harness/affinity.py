"""CPU pinning of a case's processes (``--cpu-affinity``), as ``taskset`` would do it.

The option lists CPU sets in process order: the scheduler (the ``bench.py`` process
running the scheduler loop), then the runner (rank 0), then further ``--tp`` ranks or
``--pp`` stages; with ``--frontend`` one more set may follow, the frontend's. Sets are
separated by commas; a set is a CPU (``2``), a range of CPUs (``2-5``), or several of
those joined by ``+`` (``0+2-3``). ``0,1`` pins the scheduler to CPU 0 and the runner
to CPU 1; ``0,1-3`` lets the runner use CPUs 1 to 3.

The scheduler pins itself once, before the first case (``os.sched_setaffinity``), and
takes back the set it had when the run ends (``cli.main`` called in-process); a
runner or frontend started for a case pins itself at start-up from
``CPU_AFFINITY_ENV``, which the scheduler sets in its environment
(``runner_loop.runner_main``, ``frontend_loop.frontend_main``). A ``--frontend``
process without a set of its own inherits the scheduler's. A runner started by hand
(``bench.py runner --cpu-affinity SET``, one set: ``RUNNER_SYNTAX``) pins itself before
it connects and names the set it runs on in each ``Ready`` (``wire.remote.CPUS_KEY``).
Linux only.
"""

from __future__ import annotations

import itertools
import os
from typing import Iterable, Optional

#: The runner's CPU set, in ``format_cpus`` text, set by the scheduler in the
#: runner's environment; absent: the runner keeps the set it inherited.
CPU_AFFINITY_ENV = "IPC_BENCH_CPU_AFFINITY"

#: How the option's value is described in its refusals.
SYNTAX = ("comma-separated CPU sets in process order (scheduler, runner, further ranks "
          "or stages), each a CPU N, a range N-M, or several joined by + (0+2-3)")
#: How ``bench.py runner --cpu-affinity``'s value (one set) is described in its refusals.
RUNNER_SYNTAX = "one CPU set: a CPU N, a range N-M, or several joined by + (0+2-3)"


class AffinityError(ValueError):
    """A CPU set that cannot be parsed or applied; the message is one line."""


def parse_cpus(text: str, whole: str = "", syntax: str = SYNTAX) -> frozenset[int]:
    """One CPU set: ``N``, ``N-M`` (N <= M) or such items joined by ``+``; CPU ids are
    whole numbers (digits only). ``AffinityError`` when malformed, saying ``expected
    {syntax}`` and quoting ``whole`` (the option's whole value) when given, else
    ``text``."""
    cpus: set[int] = set()
    for item in text.split("+"):
        lo, sep, hi = item.strip().partition("-")
        hi = hi if sep else lo
        if not (lo.isascii() and lo.isdigit() and hi.isascii() and hi.isdigit()):
            raise AffinityError(f"expected {syntax}, got {whole or text!r}")
        if int(lo) > int(hi):
            raise AffinityError(f"range {item.strip()} runs backwards: give N-M with N <= M")
        cpus.update(range(int(lo), int(hi) + 1))
    return frozenset(cpus)


def parse_affinity(text: str) -> tuple[frozenset[int], ...]:
    """``--cpu-affinity``'s value: one CPU set (``parse_cpus``) per process, in process
    order. ``AffinityError`` when malformed (an empty set included)."""
    return tuple(parse_cpus(part, text) for part in text.split(","))


def format_cpus(cpus: Iterable[int]) -> str:
    """A CPU set as ``parse_cpus`` reads it, ranges merged, ascending: ``{0, 2, 3}`` ->
    ``0+2-3``."""
    items = []
    # consecutive CPUs share their CPU id less their position
    for _, run in itertools.groupby(enumerate(sorted(cpus)), lambda p: p[1] - p[0]):
        ids = [cpu for _, cpu in run]
        items.append(str(ids[0]) if len(ids) == 1 else f"{ids[0]}-{ids[-1]}")
    return "+".join(items)


def check_affinity(sets: tuple[frozenset[int], ...]) -> None:
    """Refuse (``AffinityError``) sets this process cannot apply: a platform without
    ``os.sched_setaffinity`` (anything but Linux), or a CPU outside the set this
    process may run on (``os.sched_getaffinity(0)``)."""
    if not hasattr(os, "sched_setaffinity"):
        raise AffinityError("--cpu-affinity needs os.sched_setaffinity, which this "
                            "platform lacks (Linux only)")
    allowed = os.sched_getaffinity(0)
    for cpus in sets:
        outside = sorted(cpus - allowed)
        if outside:
            raise AffinityError(f"--cpu-affinity: CPU {format_cpus(outside)} is not among "
                                f"those this process may run on ({format_cpus(allowed)})")


def pin_from_env(process: str = "runner") -> Optional[str]:
    """At the start-up of a runner or frontend (``process``, as the line names it): pin
    this process to the set in ``CPU_AFFINITY_ENV`` when it is set. Returns ``None``
    when pinned or not asked to, else one line saying why it could not be applied."""
    text = os.environ.get(CPU_AFFINITY_ENV)
    if not text:
        return None
    try:
        os.sched_setaffinity(0, parse_cpus(text))
    except (AffinityError, OSError, AttributeError) as exc:
        return f"cannot pin the {process} to CPUs {text} ({CPU_AFFINITY_ENV}): {exc}"
    return None


def cpus_allowed(pid: int) -> Optional[str]:
    """The CPU set process ``pid`` may run on now (``os.sched_getaffinity``), as
    ``format_cpus`` text; ``None`` when it cannot be read (the process is gone)."""
    try:
        return format_cpus(os.sched_getaffinity(pid))
    except OSError:
        return None


def cores_in_use(sets: Optional[tuple[frozenset[int], ...]]) -> int:
    """How many CPUs a case's scheduler and runners may share: those of its sets
    together (``CaseSpec.cpu_affinity``; a frontend's own set, ``CaseSpec.frontend_cpus``,
    is not among them), or without sets this process's (``os.sched_getaffinity(0)``),
    which the runners it starts inherit."""
    if sets:
        return len(frozenset().union(*sets))
    return len(os.sched_getaffinity(0))
