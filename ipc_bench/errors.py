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
