"""The Latency tables' note that a p99 lies between a case's two largest values: said
for 100 or fewer requests served (numpy's linear p99 at rank 0.99 * (n - 1)), not
from 101 on, where the p99 is the second largest value or below it."""
import numpy as np
import pytest

from ipc_bench.analysis.stats import percentiles_ms
from ipc_bench.report.tables import few_requests_note

NOTE_100 = ("With 100 or fewer requests served in a case (here as few as 100), its TTFT, "
            "TPOT and E2E p99 lie between its two largest values: read them as about the "
            "maximum, not as a tail percentile.")


@pytest.mark.parametrize("n, note", [
    (99, NOTE_100.replace("as few as 100", "as few as 99")),
    (100, NOTE_100),
    (101, ""),
])
def test_note_at_99_100_101_requests(n, note):
    assert few_requests_note([{"num_requests": n, "num_rejected": 0}]) == note
    # the words hold: p99 of n distinct values (seconds) is strictly between the two
    # largest for n <= 100, and is the second largest at n = 101
    p99 = percentiles_ms(np.arange(n) / 1e3, "ttft")["ttft_ms_p99"]
    assert (n - 2 < p99 < n - 1) == bool(note)
    assert p99 == pytest.approx({99: 97.02, 100: 98.01, 101: 99.0}[n])


def test_rejected_requests_do_not_count_and_the_fewest_is_said():
    records = [{"num_requests": 102, "num_rejected": 2}, {"num_requests": 300}]
    assert few_requests_note(records) == NOTE_100
    assert few_requests_note([{"num_requests": 102, "num_rejected": 1}]) == ""


def test_one_request_is_its_own_p99():
    assert few_requests_note([{"num_requests": 1}]) == (
        "With 100 or fewer requests served in a case (here as few as 1), its TTFT, TPOT "
        "and E2E p99 lie between its two largest values (with one request, are its "
        "value): read them as about the maximum, not as a tail percentile.")
