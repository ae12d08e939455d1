"""The project's manual as tests read it: README.md (the front page) and the topic
pages under docs/."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def page(name: str) -> str:
    """One page's text: ``"README.md"`` or a page of docs/ (``"metrics.md"``)."""
    return (REPO / ("README.md" if name == "README.md" else f"docs/{name}")).read_text()


def pages() -> list[Path]:
    """README.md, then docs/*.md in name order."""
    return [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))


def manual() -> str:
    """Every page's text, README first, each ending in a newline."""
    return "".join(p.read_text() for p in pages())
