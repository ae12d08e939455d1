"""docs/usage.md's list of the run differences that keep a multi-run report's shared
rows comparable names --codecs, given and in effect, as the report reads it
(``blocks.SAME_ROWS_DIFFERENCES``, since --codecs chose cases alone), with the lines
the Runs section gives."""

from __future__ import annotations

from analysis_run import REPO
from ipc_bench.report.blocks import SAME_ROWS_DIFFERENCES


def test_usage_lists_a_codecs_difference_among_those_that_keep_rows_comparable():
    text = " ".join((REPO / "docs" / "usage.md").read_text().split())
    start = text.index("Where every difference of the runs is one that changes no figure")
    listed = text[start:text.index("the section says so by what differs", start)]
    assert [k for k in ("option --codecs differs: ", "codecs in effect differ: ")
            if k in SAME_ROWS_DIFFERENCES and k in listed] == [
        "option --codecs differs: ", "codecs in effect differ: "]
    assert ("`option --codecs differs: [msgpack] vs default (msgpack, pickle)`" in listed
            and "`codecs in effect differ: msgpack vs pickle (--codecs [msgpack, pickle] "
                "in both)`" in listed)
