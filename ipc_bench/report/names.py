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
    bytes) is one ``_``, none at either end; ``run`` where nothing is left. An ASCII
    name gives what it always gave (``[^A-Za-z0-9_.-]+`` -> ``_``). The prefix is cut
    to its first ``MAX_SLUG_BYTES`` bytes of UTF-8 (whole characters), so the report's
    file names fit, where a longer one could not be written ("File name too long")."""
    out, after_letter = [], False
    for ch in unicodedata.normalize("NFC", text):
        kind = unicodedata.category(ch)[0]
        kept = ch in "_.-" or kind in "LN" or (kind == "M" and after_letter)
        out.append(ch if kept else "\0")
        after_letter = kept and kind in "LNM"
    slug = re.sub("\0+", "_", "".join(out)).strip("_")
    slug = slug.encode("utf-8")[:MAX_SLUG_BYTES].decode("utf-8", "ignore").rstrip("_")
    return slug or "run"


def file_slugs(run_ids: list[str]) -> dict[str, str]:
    """Each run id's file-name prefix (``file_slug``), made unique among ``run_ids``:
    where two ids give one prefix (``x/run`` and ``x_run``), the later ones in load
    order get ``-2``, ``-3``... (``x_run-2``)."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for run_id in run_ids:
        slug, k = file_slug(run_id), 1
        while (slug if k == 1 else f"{slug}-{k}") in taken:
            k += 1
        out[run_id] = slug if k == 1 else f"{slug}-{k}"
        taken.add(out[run_id])
    return out
