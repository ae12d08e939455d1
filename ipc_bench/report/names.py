"""The file names a report gives each run's files: its ``summary.json`` copy
(``<prefix>.summary.json``) and, in a report of several runs, its figures
(``<prefix>-<figure>.png``), the prefix made from the run id (``file_slug``), unique
among the runs of one report (``file_slugs``). The same prefix is a Markdown link
target (``![title](prefix-figure.png)``), written as it is: it holds nothing that
CommonMark would read otherwise (no space, parenthesis, bracket, angle bracket or
control character)."""

from __future__ import annotations

import re
import unicodedata

#: The most UTF-8 bytes of a prefix (``file_slug``): a file name may take 255 bytes
#: (``NAME_MAX``), and the longest a report writes is a figure's of a report of several
#: runs, the prefix, a ``-N`` where it was taken (``file_slugs``; up to six digits)
#: and ``-codec_time_per_step.png`` (24 bytes).
MAX_SLUG_BYTES = 224


def file_slug(text: str) -> str:
    """``text`` (a run id) as a safe file-name prefix, and a Markdown link target that
    needs no escaping: ``x/run`` -> ``x_run``, ``ü日本 x`` -> ``ü日本_x``. Kept, after
    NFC normalization: the letters and digits of any script (Unicode categories L and
    N), the marks that follow one (category M: the vowel signs of Devanagari, an accent
    written apart) and ``_ . -``; each run of anything else (path separators, spaces,
    parentheses, brackets, control and format characters, surrogates of undecodable
    bytes) is one ``_``, at either end too (``$(id)`` -> ``_id_``, ``*`` -> ``_``), and
    a ``_`` of the name is kept wherever it is (``_a_`` -> ``_a_``), so the prefix
    follows from that rule alone and two names that differ only there (``id`` and
    ``$(id)``) keep apart; ``run`` for an empty name. A prefix that would start with
    ``.`` gets ``_`` before it (``.hid`` -> ``_.hid``, ``..x`` -> ``_..x``), so that no
    file of the report is hidden (``.hid.summary.json`` would be). An ASCII name gives
    ``re.sub("[^A-Za-z0-9_.-]+", "_", name)``, with that ``_`` before a leading dot.
    The prefix is cut to its first ``MAX_SLUG_BYTES`` bytes of UTF-8 (whole
    characters), so the report's file names fit, where a longer one could not be
    written ("File name too long")."""
    out, after_letter = [], False
    for ch in unicodedata.normalize("NFC", text):
        kind = unicodedata.category(ch)[0]
        kept = ch in "_.-" or kind in "LN" or (kind == "M" and after_letter)
        out.append(ch if kept else "\0")
        after_letter = kept and kind in "LNM"
    slug = re.sub("\0+", "_", "".join(out))
    if slug.startswith("."):  # a file name that starts with a dot is hidden
        slug = "_" + slug
    slug = slug.encode("utf-8")[:MAX_SLUG_BYTES].decode("utf-8", "ignore")
    return slug or "run"


def file_slugs(run_ids: list[str], names: list[str] | None = None) -> dict[str, str]:
    """Each run id's file-name prefix (``file_slug`` of its ``names`` entry, the text
    the id was made from, else of the id), made unique among ``run_ids``: where two
    give one prefix (``x/run`` and ``x_run``), the later ones in load order get
    ``-2``, ``-3``... (``x_run-2``)."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for run_id, name in zip(run_ids, run_ids if names is None else names):
        slug, k = file_slug(name), 1
        while (slug if k == 1 else f"{slug}-{k}") in taken:
            k += 1
        out[run_id] = slug if k == 1 else f"{slug}-{k}"
        taken.add(out[run_id])
    return out


def run_slugs(results, run_ids: list[str]) -> dict[str, str]:
    """The file-name prefix of each of ``run_ids`` (runs of ``results``, a
    ``Results``), unique among them (``file_slugs``), made from its folder's label as
    the path has it (``results.run_names`` of ``results.paths``), not from the run id,
    which writes a control character as its escape: a folder ``t_nl<newline>x y`` is
    ``t_nl_x_y``, each run of control characters one ``_``, where its id
    ``t_nl\\nx y`` gave ``t_nl_nx_y``. An id without a path is its own text."""
    from ipc_bench.analysis.results import run_names

    paths = getattr(results, "paths", None) or {}
    named = dict(zip(paths, run_names(list(paths.values()))))
    return file_slugs(run_ids, [named.get(r, r) for r in run_ids])
