"""Error text shared by every layer: messages stay on one line."""

from __future__ import annotations


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
