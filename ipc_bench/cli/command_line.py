"""The command line a run records (``summary.json``'s ``metadata.command_line``, the
report's ``- command:`` line): what reproduces the run.

``python bench.py ...`` records its own ``sys.argv`` (``['bench.py', '--scenario',
...]``, byte for byte as typed). A run started in-process, by
``ipc_bench.cli.main(ARGV)`` from a notebook, a test or a script of its own
(``python -c "..."``, ``python run2.py``), records the equivalent ``bench.py`` command,
``['/abs/path/bench.py', *ARGV]`` (``SCRIPT``: this checkout's ``bench.py``, absolute,
as the host's folder need not hold one), not the host's ``sys.argv`` (``['-c']``,
``['run2.py']``), which would name the same command for every run the host starts and
reproduce none. Either records the folder it ran in (``metadata.cwd``), which the
relative paths (``bench.py`` itself, ``--trace conv.csv``, ``--output reltrace``) are
relative to: the report's command is then ``cd CWD && python bench.py ...`` (``cd CWD
&& python /abs/path/bench.py ...`` in-process), which reruns it from any folder.
"""

from __future__ import annotations

import contextvars
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Sequence

_BENCH_PY = Path(__file__).resolve().parents[2] / "bench.py"

#: The script an in-process run's command line starts with: the absolute path of the
#: ``bench.py`` beside this package (a checkout's), ``bench.py`` where there is none (an
#: installed package).
SCRIPT = str(_BENCH_PY) if _BENCH_PY.is_file() else "bench.py"

_RECORDED: contextvars.ContextVar[Optional[tuple[list[str], Optional[str]]]] = (
    contextvars.ContextVar("ipc_bench_command_line", default=None))


class ArgumentsError(ValueError):
    """``cli.main``'s ``argv`` is not a list of texts or paths; its text is the error
    (``arguments``)."""


def _shown(value: object) -> str:
    """``value``'s type and ``repr``, the latter cut to 60 characters: ``int 3``."""
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def arguments(argv: object) -> list[str]:
    """``cli.main``'s ``argv`` as the list of texts it runs, read once (a generator or
    an iterator is consumed here, and only here): each ``str`` as it is, each
    ``os.PathLike`` as its path (``os.fspath``: ``Path('/tmp/x')`` -> ``'/tmp/x'``).
    Raises ``ArgumentsError`` for anything else: ``argv`` one text (``'--list'``, which
    would be read letter by letter) or not iterable, or an argument that is neither a
    text nor a path (``argument 5 is int 3``, counted from 1; a path given as bytes
    too, as the options take texts)."""
    if isinstance(argv, (str, bytes)):
        raise ArgumentsError(f"cli.main takes a list of arguments, not one {_shown(argv)}")
    try:
        items = list(argv)  # type: ignore[call-overload]
    except TypeError:
        raise ArgumentsError("cli.main takes a list of str arguments (or paths), not "
                             f"{_shown(argv)}") from None
    words = []
    for i, item in enumerate(items, 1):
        try:
            word = os.fspath(item) if isinstance(item, os.PathLike) else item
        except TypeError:  # a __fspath__ that returns neither str nor bytes
            word = None
        if not isinstance(word, str):
            raise ArgumentsError("cli.main takes str arguments (or paths): argument "
                                 f"{i} is {_shown(item)}")
        words.append(word)
    return words


def command_words(argv: Optional[Sequence[str]]) -> list[str]:
    """The command line of ``ipc_bench.cli.main(argv)`` as a list of texts: ``sys.argv``
    (a copy) where ``argv`` is ``None`` (``bench.py``'s own call), else ``[SCRIPT,
    *argv]`` (``SCRIPT``: ``bench.py``'s absolute path)."""
    if argv is None:
        return [str(a) for a in sys.argv]
    return [SCRIPT, *(str(a) for a in argv)]


def command_folder() -> Optional[str]:
    """The folder ``ipc_bench.cli.main`` runs in, as a run records it
    (``metadata.cwd``): ``os.getcwd()``, which the command line's relative paths are
    relative to; ``None`` where the folder is gone (``FileNotFoundError``)."""
    try:
        return os.getcwd()
    except OSError:
        return None


@contextmanager
def recording(words: Sequence[str], cwd: Optional[str] = None) -> Iterator[None]:
    """Within it, ``recorded()`` is ``words`` (``command_words``' list) and
    ``recorded_cwd()`` is ``cwd`` (``command_folder``; in this thread and context); the
    values before are back on leaving, an exception included."""
    token = _RECORDED.set(([str(w) for w in words], cwd))
    try:
        yield
    finally:
        _RECORDED.reset(token)


def recorded() -> Optional[list[str]]:
    """The command line ``ipc_bench.cli.main`` is running (``recording``), a copy;
    ``None`` outside it (a caller of the run command's functions themselves), where
    ``environment.collect_metadata`` records ``sys.argv``."""
    value = _RECORDED.get()
    return None if value is None else list(value[0])


def recorded_cwd() -> Optional[str]:
    """The folder an ``ipc_bench.cli.main`` call runs in (``recording``); ``None``
    outside one, or where its folder was gone."""
    value = _RECORDED.get()
    return None if value is None else value[1]
