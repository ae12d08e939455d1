"""Rendering a report's blocks to Markdown and to a self-contained HTML page.

A report is a list of blocks (``ipc_bench.report.blocks`` builds them), each a tuple:

    ("h", level, text) ("p", text) ("ul", [text]) ("table", header, rows)
    ("fig", file name, title, caption, png bytes) ("note", text) ("code", text)

Text may hold Markdown's ``code`` spans and **bold**; HTML rendering turns those
two into tags and escapes the rest.
"""

from __future__ import annotations

import base64
import html
import re
from typing import Sequence

#: One report block (see the module docstring).
Block = tuple

#: A code span (CommonMark): a run of backticks, the content, the same run again; a
#: longer or shorter run inside is content.
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)


def plain_text(text: str) -> str:
    """``text`` with each code span (``CODE_SPAN``) replaced by what it holds, one
    padding space stripped from each end where both have one, as a viewer shows it:
    for a page title, which shows no Markdown."""
    def inner(m: re.Match) -> str:
        body = m.group(2)
        return body[1:-1] if len(body) > 2 and body[0] == body[-1] == " " else body
    return CODE_SPAN.sub(inner, str(text))


def code_span(text: object) -> str:
    """``text`` (user-given: a command, a run folder's name, a path) as one Markdown
    code span: fenced by one backtick more than its longest run of backticks
    (CommonMark's rule: a folder named x|*`md` is fenced by two backticks each side,
    so that its own do not end the span), with a space inside each fence where it
    starts or ends with a backtick, or has a space at both ends (a viewer strips one
    from each end). ``_inline_html`` and ``_md_text`` read it back as one span."""
    text = str(text)
    fence = "`" * (max(map(len, re.findall(r"`+", text)), default=0) + 1)
    pad = " " if (text[:1] == "`" or text[-1:] == "`"
                  or (text[:1] == text[-1:] == " " and text.strip())) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


class Verbatim(str):
    """Text with parts to be shown as typed (a run folder's name, in a heading or a
    table cell): ``render_markdown`` escapes in those parts every character a Markdown
    viewer would read as emphasis, code, a link, an entity or an HTML tag
    (``_md_verbatim``: a folder named ``*a*`` is not shown in italics); the HTML page
    only escapes them (``_inline_html``: no code span or bold read in them). A ``str`` (the whole text), so that blocks holding
    one compare equal to their plain text; ``parts``: ``(text, verbatim)`` pairs, in
    order. Made by ``verbatim``; an operation on it (``+``, ``replace``) gives a plain
    ``str``, rendered as any text."""

    parts: tuple = ()


def verbatim(*parts: object) -> Verbatim:
    """``parts`` joined as one ``Verbatim`` text: each ``Verbatim`` part keeps its
    verbatim pieces, any other part (``str()`` of it) is report text: ``verbatim("Run
    ", verbatim(name), " (decode-steady)")``; ``verbatim(name)`` alone, with no other
    part, is the name shown as typed."""
    if len(parts) == 1 and not isinstance(parts[0], Verbatim):
        pieces = ((str(parts[0]), True),)
    else:
        pieces = tuple(piece for part in parts for piece in (
            part.parts if isinstance(part, Verbatim) else ((str(part), False),)))
    out = Verbatim("".join(text for text, _ in pieces))
    out.parts = pieces
    return out


#: What ``_md_verbatim`` escapes: the characters that start emphasis (``*``, ``~``,
#: and ``_`` but between two letters or digits, where it never does: ``x_run`` is
#: left as it is), code (backquote), a link or an image (``[``, ``]``), an HTML tag
#: (``<``, ``>``) or an entity (``&``), and a backslash before ASCII punctuation or
#: at the end, where it would escape what follows (``tr\xff-run``, a name read with a
#: byte that is not UTF-8, is left as it is). A table cell's ``|`` is ``_md_cell``'s.
_MD_VERBATIM = re.compile(r"\\(?=[!-/:-@\[-`{-~]|\Z)|[`*~\[\]<>&]|(?<![^\W_])_|_(?![^\W_])")


def _md_verbatim(text: str) -> str:
    """``text`` as Markdown that shows it as typed: each ``_MD_VERBATIM`` character
    backslash-escaped (CommonMark: any ASCII punctuation may be)."""
    return _MD_VERBATIM.sub(lambda m: "\\" + m.group(0), text)


def _md_text(text: str) -> str:
    """``text`` with each ``<`` that a Markdown viewer would take for the start of an
    HTML tag (``<x>`` in a run folder's name) escaped (``\\<``), outside code spans
    (``CODE_SPAN``), where a backslash would show; the verbatim parts of a
    ``Verbatim`` text escaped whole (``_md_verbatim``)."""
    if isinstance(text, Verbatim) and text.parts:
        return "".join(_md_verbatim(part) if shown else _md_text(part)
                       for part, shown in text.parts)
    out, at = [], 0
    text = str(text)
    for m in CODE_SPAN.finditer(text):
        out += [re.sub(r"<(?=[A-Za-z/!?])", r"\\<", text[at:m.start()]), m.group(0)]
        at = m.end()
    return "".join(out + [re.sub(r"<(?=[A-Za-z/!?])", r"\\<", text[at:])])


def _md_cell(text: str) -> str:
    return _md_text(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(blocks: Sequence[Block]) -> str:
    """Markdown (GitHub flavour) of ``blocks``; figures link to their PNG files."""
    out: list[str] = []
    for b in blocks:
        kind = b[0]
        if kind == "h":
            out.append("#" * b[1] + " " + _md_text(b[2]))
        elif kind == "p":
            out.append(_md_text(b[1]))
        elif kind == "note":
            out.append(f"> **Note:** {_md_text(b[1])}")
        elif kind == "code":
            out.append(f"```\n{b[1]}\n```")
        elif kind == "ul":
            out.append("\n".join(f"- {_md_text(item)}" for item in b[1]) if b[1]
                       else "- (none)")
        elif kind == "table":
            header, rows = b[1], b[2]
            lines = ["| " + " | ".join(_md_cell(h) for h in header) + " |",
                     "|" + "|".join("---" for _ in header) + "|"]
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
            out.append("\n".join(lines))
        elif kind == "fig":
            _, name, title, caption, _png = b
            out.append(f"**{_md_text(title)}**\n\n![{_md_text(title)}]({name})\n\n"
                       f"{_md_text(caption)}")
    return "\n\n".join(out) + "\n"


def _code_html(m: re.Match) -> str:
    """One ``CODE_SPAN`` match as ``<code>``: one space stripped from each end where
    both ends have one and the content is not all spaces (CommonMark)."""
    body = m.group(2)
    if len(body) >= 2 and body[0] == body[-1] == " " and body.strip():
        body = body[1:-1]
    return f"<code>{body}</code>"


def _inline_html(text: str) -> str:
    """``text`` as HTML: escaped, code spans as ``<code>`` (their text as it is), and
    ``**bold**`` outside them as ``<strong>``; the verbatim parts of a ``Verbatim``
    text only escaped (a backquote in a run folder's name starts no code)."""
    if isinstance(text, Verbatim) and text.parts:
        return "".join(html.escape(part) if shown else _inline_html(part)
                       for part, shown in text.parts)
    text = html.escape(str(text))
    out, at = [], 0
    for m in CODE_SPAN.finditer(text):
        out += [_bold_html(text[at:m.start()]), _code_html(m)]
        at = m.end()
    return "".join(out + [_bold_html(text[at:])])


def _bold_html(text: str) -> str:
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1200px;
margin:2em auto;padding:0 1em;line-height:1.45;color:#222}
table{border-collapse:collapse;margin:.6em 0;font-size:.86em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right;vertical-align:top}
th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}
code{background:#f4f4f4;padding:0 .2em;border-radius:3px}
figure{margin:1.2em 0}figure img{max-width:100%;border:1px solid #eee}
figcaption{font-size:.9em;color:#444}
.note{background:#fff6e0;border-left:4px solid #e69f00;padding:.4em .8em}
"""


def render_html(blocks: Sequence[Block], title: str) -> str:
    """A self-contained HTML page of ``blocks``: figures embedded as base64 PNG."""
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"]
    for b in blocks:
        kind = b[0]
        if kind == "h":
            out.append(f"<h{b[1]}>{_inline_html(b[2])}</h{b[1]}>")
        elif kind == "p":
            out.append(f"<p>{_inline_html(b[1])}</p>")
        elif kind == "note":
            out.append(f'<p class="note"><strong>Note:</strong> {_inline_html(b[1])}</p>')
        elif kind == "code":
            out.append(f"<pre>{html.escape(b[1])}</pre>")
        elif kind == "ul":
            items = "".join(f"<li>{_inline_html(i)}</li>" for i in b[1]) or "<li>(none)</li>"
            out.append(f"<ul>{items}</ul>")
        elif kind == "table":
            head = "".join(f"<th>{_inline_html(h)}</th>" for h in b[1])
            body = "".join("<tr>" + "".join(f"<td>{_inline_html(c)}</td>" for c in row)
                           + "</tr>" for row in b[2])
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif kind == "fig":
            _, name, ftitle, caption, png = b
            data = base64.b64encode(png).decode("ascii")
            out.append(f'<figure><img alt="{html.escape(ftitle)}" '
                       f'src="data:image/png;base64,{data}"><figcaption><strong>'
                       f"{html.escape(ftitle)}</strong> ({html.escape(name)}). "
                       f"{_inline_html(caption)}</figcaption></figure>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
