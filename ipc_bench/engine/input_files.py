"""Opening an input file given on the command line (``--trace``, ``--token-ids hist:``)
without hanging on a pipe.

``open_input_fd(path)`` opens with ``O_NONBLOCK``, so a named FIFO that no process has
open for writing does not block ``open()`` forever, then looks at what it opened:

- a regular file: read as usual;
- a pipe (a named FIFO, or a process substitution ``<(...)``, which the shell passes
  as ``/dev/fd/N``): ``O_NONBLOCK`` is cleared and the pipe is read once, to its end.
  A pipe whose writers are all gone reads to the end of what they wrote and stops; a
  named FIFO with no writer at all reads as empty at once (the caller then refuses it:
  ``EMPTY_PIPE``), so start the writer first;
- anything else (a directory, a terminal or other character device, a socket):
  refused with ``OSError`` whose ``strerror`` says what it is.

Each input is read once, in the ``bench.py`` process, so a pipe's content is all
there is: nothing reads the path again.
"""

from __future__ import annotations

import errno
import os
import stat


#: Why an input that is a pipe with nothing in it is refused (``is_pipe``).
EMPTY_PIPE = ("a pipe with nothing written to it (a named FIFO needs its writer started "
              "first)")


def is_pipe(fd: int) -> bool:
    """Whether ``fd`` is a pipe (a named FIFO or ``<(...)``): read empty, it is
    refused as ``EMPTY_PIPE``, not as an empty file."""
    return stat.S_ISFIFO(os.fstat(fd).st_mode)


def open_input_fd(path: str) -> int:
    """A blocking file descriptor open for reading on ``path`` (a regular file or a
    pipe; module docstring). Raises ``OSError`` (``strerror`` set) for anything else or
    when the open fails."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise OSError(errno.EISDIR, "is a directory, not a file")
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise OSError(errno.EINVAL, "not a regular file or a pipe")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
