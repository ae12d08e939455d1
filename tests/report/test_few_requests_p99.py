"""The Latency tables' note that a p99 lies between a case's two largest values: said
for a p99 over 100 or fewer values (numpy's linear p99 at rank 0.99 * (n - 1)), not
from 101 on, where the p99 is the second largest value or below it. A summary written
before ``ttft_count`` and ``e2e_count`` counts the requests served."""
import numpy as np
import pytest

from ipc_bench.analysis.stats import percentiles_ms
from ipc_bench.report.tables import latency_p99_note

NOTE_100 = ("A p99 over 100 or fewer values lies between its case's two largest values: "
            "read it as about the maximum, not as a tail percentile (here TTFT and E2E "
            "p99, over as few as 100 requests).")
P99S = {"ttft_ms_p99": 1.0, "e2e_ms_p99": 2.0}


@pytest.mark.parametrize("n, note", [
    (99, NOTE_100.replace("as few as 100", "as few as 99")),
    (100, NOTE_100),
    (101, ""),
])
def test_note_at_99_100_101_requests(n, note):
    assert latency_p99_note([{"num_requests": n, "num_rejected": 0, **P99S}]) == note
    # the words hold: p99 of n distinct values (seconds) is strictly between the two
    # largest for n <= 100, and is the second largest at n = 101
    p99 = percentiles_ms(np.arange(n) / 1e3, "ttft")["ttft_ms_p99"]
    assert (n - 2 < p99 < n - 1) == bool(note)
    assert p99 == pytest.approx({99: 97.02, 100: 98.01, 101: 99.0}[n])


def test_rejected_requests_do_not_count_and_the_fewest_is_said():
    records = [{"num_requests": 102, "num_rejected": 2, **P99S},
               {"num_requests": 300, **P99S}]
    assert latency_p99_note(records) == NOTE_100
    assert latency_p99_note([{"num_requests": 102, "num_rejected": 1, **P99S}]) == ""


def test_one_request_is_its_own_p99():
    assert latency_p99_note([{"num_requests": 1, **P99S}]) == (
        "A p99 over 100 or fewer values lies between its case's two largest values (over "
        "one value, is that value): read it as about the maximum, not as a tail percentile "
        "(here TTFT and E2E p99, over as few as 1 request).")
