"""Counts of one or two read as such in the project's lines: ``the only case``, ``both
cases``, ``all 3 cases``."""

from __future__ import annotations


def test_small_counts_read_as_one_or_both():
    from ipc_bench.analysis.summary import all_of

    assert [all_of(n, "case", "cases") for n in (1, 2, 3, 1200)] == [
        "the only case", "both cases", "all 3 cases", "all 1,200 cases"]
