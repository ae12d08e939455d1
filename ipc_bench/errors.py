"""Error text shared by every layer: messages stay on one line."""

from __future__ import annotations

import errno
import os


def one_line(text: str) -> str:
    """``text`` with line breaks and other unprintable characters escaped (as ``repr``
    writes them), so an error message quoting data stays on one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


#: How a line that names a case's step ``at step N`` numbers it (the interrupt line, a
#: runner's failure): as ``steps.csv``'s ``seq`` and the summary's ``failed_step``, from
#: 0, warm-up and uncounted steps included, so a ``--steps 3000`` case can stop at 3658.
STEP_NUMBERING = "steps.csv seq: warm-up and uncounted steps included"


def runner_failed_text(step: int, message: str) -> str:
    """The line of a runner's failure at step ``step`` (``STEP_NUMBERING``):
    ``runner failed at step 634 (steps.csv seq: warm-up and uncounted steps included):
    DecodeError: ...``; a step below 0 (a failure the runner reported before any step)
    reads ``runner failed before its first step: ...``."""
    if step < 0:
        return f"runner failed before its first step: {message}"
    return f"runner failed at step {step} ({STEP_NUMBERING}): {message}"


def fd_limit_text() -> str:
    """The line for a process out of file descriptors (``EMFILE``), naming its limit:
    ``too many open files (ulimit -n 20): raise it (e.g. ulimit -n 1024) and run
    again``. Each case opens sockets, socket folders and pipes to its processes, and
    libzmq a few descriptors of its own per context, so the number a case needs
    depends on the transport and the build: the limit is named where it was hit."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    shown = "unlimited" if soft == resource.RLIM_INFINITY else str(soft)
    return f"{FD_LIMIT_PREFIX}{shown}): raise it (e.g. ulimit -n 1024) and run again"


#: How ``fd_limit_text`` starts: a line that holds it (a runner's ``ErrorReport``,
#: which carries only text) names the file-descriptor limit (``names_fd_limit``).
FD_LIMIT_PREFIX = "too many open files (ulimit -n "


def names_fd_limit(message: str) -> bool:
    """Whether ``message`` holds ``fd_limit_text``'s line (a child process's report)."""
    return FD_LIMIT_PREFIX in message


def out_of_fds(exc: BaseException) -> bool:
    """Whether ``exc`` (an ``OSError``, a ``zmq.ZMQError``: both carry ``errno``) says
    the process has no file descriptor left (``EMFILE``)."""
    return getattr(exc, "errno", None) == errno.EMFILE


def fds_exhausted() -> bool:
    """Whether this process cannot open one more file descriptor right now
    (``EMFILE``): what libzmq hides behind a refused connection or a silent
    listener when its ``socket()`` or ``accept()`` failed for want of one."""
    try:
        fd = os.open(os.devnull, os.O_RDONLY)
    except OSError as exc:
        return exc.errno == errno.EMFILE
    os.close(fd)
    return False


#: The project's declared dependencies (pyproject.toml ``dependencies``): the name a
#: module is imported by -> the name pip installs it by
#: (tests/cli/test_missing_dependency.py checks this against pyproject.toml).
DEPENDENCIES = {
    "torch": "torch", "numpy": "numpy", "msgspec": "msgspec", "zmq": "pyzmq",
    "pyperf": "pyperf", "pandas": "pandas", "matplotlib": "matplotlib", "tqdm": "tqdm",
    "scipy": "scipy",
}


def missing_dependency_text(exc: BaseException) -> str | None:
    """The line for an ``ImportError`` ``exc`` raised because a declared dependency
    (``DEPENDENCIES``) is not installed: ``missing dependency 'zmq' (pyzmq): install
    the project with pip install -e .``; ``None`` for any other exception (a module of
    its own missing inside a dependency, one of ``ipc_bench``'s, a failure in a module
    that was found), which the caller lets through."""
    name = getattr(exc, "name", None)
    if not isinstance(exc, ModuleNotFoundError) or name not in DEPENDENCIES:
        return None
    dist = DEPENDENCIES[name]
    named = f"'{name}'" + ("" if dist == name else f" ({dist})")
    return f"missing dependency {named}: install the project with pip install -e ."
