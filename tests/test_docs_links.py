"""Every relative link of README.md and docs/*.md leads somewhere: its file exists and
its ``#anchor``, if any, is a heading of that file (slugged as GitHub slugs headings,
``-1``, ``-2`` ... for repeats) or an ``<a id>`` / ``<a name>`` in it.

Links to the web (``https:``, ``mailto:`` ...) are not checked, nor links that leave the
repository (``../shared/...``: the machine's measurements, not part of a checkout).
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
#: ``[text](target)`` / ``![alt](target)``; text may span lines, the target may not.
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$")
_HTML_ANCHOR = re.compile(r"<a\s+[^>]*?(?:id|name)=\"([^\"]+)\"")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (a ``# comment`` in a block is no heading)."""
    out, fence = [], None
    for line in text.splitlines():
        m = _FENCE.match(line)
        if m and (fence is None or m.group(1) == fence):
            fence = m.group(1) if fence is None else None
            continue
        if fence is None:
            out.append(line)
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's Markdown text, before the repeat suffix: the text as
    rendered (code marks, emphasis and link targets dropped), lower-cased, punctuation
    but ``-`` and ``_`` removed, each space a ``-``."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = re.sub(r"(\*+|(?<!\w)_+|_+(?!\w))", "", text)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor a Markdown file defines: its headings' slugs (a repeat gets ``-1``,
    ``-2``, ... in order) and its HTML ``id`` / ``name`` anchors."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for line in _prose_lines(text):
        out.update(_HTML_ANCHOR.findall(line))
        m = _HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        name = base if base not in seen else f"{base}-{seen[base]}"
        seen[base] = seen.get(base, 0) + 1
        out.add(name)
    return out


def links(text: str) -> list[str]:
    """The targets of a Markdown file's links, in order, outside fenced code blocks."""
    prose = "\n".join(_prose_lines(text))
    refs = [m.group(1) for line in prose.splitlines() if (m := _REF_LINK.match(line))]
    return _LINK.findall(prose) + refs


def broken_links(root: Path, files: list[Path]) -> list[str]:
    """``FILE: TARGET (why)`` for each relative link of ``files`` that leads nowhere."""
    out = []
    for path in files:
        for target in links(path.read_text()):
            if _SCHEME.match(target):
                continue
            why = _why_broken(root, path, target)
            if why:
                out.append(f"{path.relative_to(root)}: {target} ({why})")
    return out


def _why_broken(root: Path, path: Path, target: str) -> str | None:
    file_part, _, anchor = target.partition("#")
    dest = (path.parent / file_part).resolve() if file_part else path.resolve()
    if not dest.is_relative_to(root.resolve()):
        return None
    if not dest.exists():
        return "no such file"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text()):
        return f"no heading #{anchor} in {dest.relative_to(root.resolve())}"
    return None


def _manual(root: Path) -> list[Path]:
    return [root / "README.md"] + sorted((root / "docs").glob("*.md"))


def test_every_relative_link_of_the_manual_leads_somewhere():
    assert len(_manual(REPO)) > 10
    assert broken_links(REPO, _manual(REPO)) == []


def test_slugs_are_githubs():
    assert slug("Quick start (fresh Linux machine, Python >= 3.10)") == \
        "quick-start-fresh-linux-machine-python--310"
    assert slug("The staged GPU check (`scripts/gpu_check.py`)") == \
        "the-staged-gpu-check-scriptsgpu_checkpy"
    assert slug("Reading the table (`x floor`, `cached/send`)") == \
        "reading-the-table-x-floor-cachedsend"
    assert slug("Different schedules and A/A (`--aa`)") == "different-schedules-and-aa---aa"
    assert slug("Open proposal: `packed` (vLLM PR #54406)") == \
        "open-proposal-packed-vllm-pr-54406"


def test_a_missing_file_a_missing_heading_and_repeats_are_told_apart(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "x.py").write_text("")
    (tmp_path / "README.md").write_text(
        "# Top\n\n## Part\n\n## Part\n\n```bash\n# Not a heading\n```\n"
        "[a](docs/page.md#figures) [b](docs/page.md#figures-1) [c](docs/page.md#figures-2)\n"
        "[d](#part-1) [e](#not-a-heading) [f](docs/gone.md) [g](https://example.com/x#y)\n"
        "[h](../outside/README.md) [i](#top)\n")
    (tmp_path / "docs" / "page.md").write_text(
        "# Page\n\n## Figures\n\n### Figures\n\n<a id=\"kept\"></a>Text.\n\n"
        "[back](../README.md#part) [script](../scripts/x.py) [s2](scripts/x.py)\n"
        "[k](#kept) [split\nacross lines](../README.md#parts)\n")
    assert broken_links(tmp_path, _manual(tmp_path)) == [
        "README.md: docs/page.md#figures-2 (no heading #figures-2 in docs/page.md)",
        "README.md: #not-a-heading (no heading #not-a-heading in README.md)",
        "README.md: docs/gone.md (no such file)",
        "docs/page.md: scripts/x.py (no such file)",
        "docs/page.md: ../README.md#parts (no heading #parts in README.md)",
    ]
