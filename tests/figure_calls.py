"""Counts of matplotlib's work in a test: ``dpi_calls`` records the dots per inch of
every call of a figure method (``Figure.draw``, ``ConstrainedLayoutEngine.execute``)
from the moment it is set up, so a test can say how often a figure was drawn or laid
out, and at which resolution."""

from __future__ import annotations

from typing import Any


def dpi_calls(monkeypatch, owner: type, name: str) -> list[float]:
    """The list ``owner.name(self, fig_or_renderer)`` appends to at each call: the
    figure's dpi (``self.dpi`` for a ``Figure`` method, else the figure argument's),
    the call then made as before. Undone with ``monkeypatch``."""
    calls: list[float] = []
    method = getattr(owner, name)

    def counted(self, arg: Any):
        calls.append(self.dpi if hasattr(self, "dpi") else arg.dpi)
        return method(self, arg)

    monkeypatch.setattr(owner, name, counted)
    return calls
