"""The command line a run records (``summary.json``'s ``metadata.command_line``, the
report's ``- command:`` line): what reproduces the run.

``python bench.py ...`` records its own ``sys.argv`` (``['bench.py', '--scenario',
...]``, byte for byte as it always has). A run started in-process, by
``ipc_bench.cli.main(ARGV)`` from a notebook, a test or a script of its own
(``python -c "..."``, ``python run2.py``), records the equivalent ``bench.py`` command,
``['bench.py', *ARGV]``, not the host's ``sys.argv`` (``['-c']``, ``['run2.py']``),
which would name the same command for every run the host starts and reproduce none.
"""

from __future__ import annotations

import contextvars
import sys
from contextlib import contextmanager
from typing import Iterator, Optional, Sequence

#: The script name an in-process run's command line starts with.
SCRIPT = "bench.py"

_RECORDED: contextvars.ContextVar[Optional[list[str]]] = contextvars.ContextVar(
    "ipc_bench_command_line", default=None)


def command_words(argv: Optional[Sequence[str]]) -> list[str]:
    """The command line of ``ipc_bench.cli.main(argv)`` as a list of texts: ``sys.argv``
    (a copy) where ``argv`` is ``None`` (``bench.py``'s own call), else ``['bench.py',
    *argv]``."""
    if argv is None:
        return [str(a) for a in sys.argv]
    return [SCRIPT, *(str(a) for a in argv)]


@contextmanager
def recording(words: Sequence[str]) -> Iterator[None]:
    """Within it, ``recorded()`` is ``words`` (``command_words``' list; in this thread
    and context); the value before is back on leaving, an exception included."""
    token = _RECORDED.set([str(w) for w in words])
    try:
        yield
    finally:
        _RECORDED.reset(token)


def recorded() -> Optional[list[str]]:
    """The command line ``ipc_bench.cli.main`` is running (``recording``), a copy;
    ``None`` outside it (a caller of the run command's functions themselves), where
    ``environment.collect_metadata`` records ``sys.argv``."""
    words = _RECORDED.get()
    return None if words is None else list(words)
