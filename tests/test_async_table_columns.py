"""docs/async-scheduling.md's measured table says what each tok/s column is: the arms
are medians over the repetitions, the ratio the geometric mean of the paired ratios,
so the arms' quotient (80,927 / 62,110 = 1.30) is not read as the ratio (1.15). The
run's files are not committed, so the arms' geometric means cannot be shown."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_async_table_names_each_tok_s_column():
    text = (ROOT / "docs" / "async-scheduling.md").read_text()
    assert ("| step | case | sync tok/s, median of 3 | async tok/s, median of 3 | "
            "async/sync, geometric mean of the 3 paired ratios [95 % CI] |") in text
    assert "| 2 ms | two processes | 62,110 | 80,927 | 1.15 [0.66, 1.99] |" in text
    assert "| 5 ms | two processes | 29,299 | 37,768 | 1.23 [0.97, 1.58] |" in text
    assert [f"{80927 / 62110:.2f}", f"{37768 / 29299:.2f}"] == ["1.30", "1.29"]
    flat = re.sub(r"\s+", " ", text)
    assert ("so it is not the quotient of the two medians beside it (80,927 / 62,110 = "
            "1.30 at 2 ms, beside 1.15; 37,768 / 29,299 = 1.29 at 5 ms, beside 1.23): read "
            "the ratio column, not the arms, for the change.") in flat
