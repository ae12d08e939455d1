"""The note under the findings' summary table says plainly where a row's tok/s change
(of mean steps) and its whole step's share (of median steps) tell different stories:
they "disagree", where it read "part" (which read as a word left out)."""

from __future__ import annotations

from ipc_bench.report import findings
from test_findings_summary import BASES, _one_repetition


def test_a_change_and_a_share_that_disagree_say_so_in_plain_words():
    # send's mean step 458.2 µs against its median 262.1: a few slow steps move the mean
    items = findings.findings(_one_repetition(458_200.0, 262_100.0, 69_154.0 * 260 / 458.2))
    assert items.caption == (
        f"{BASES}. num_running=4 (msgpack): the tok/s change (+76.2 %, of mean steps) and "
        "the whole step's share (+1.55 %, of median steps) disagree: a few slow steps "
        "move the mean (num_running=4/send/msgpack#0's mean step is 458.2 µs, its median "
        "262.1 µs); the median's share is the typical step's.")
    assert " part: " not in items.caption
