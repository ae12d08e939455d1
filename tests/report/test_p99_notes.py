"""Every p99 the tables print is said to lie between its case's two largest values
where it is over 100 or fewer values, by the count of what it is over: TTFT and E2E
p99 over requests, ITL p99 over gaps (``*_count`` in the summary), the runner gap's
p99s over counted steps (``runner_gap_count``). TPOT p99, over the requests of two
output tokens or more (fewer than those served), is in the summary only: the
Latency table prints TPOT's mean, so the note never names it, where it once named a
TPOT p99 the table does not show, by the requests served."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analysis_run import bench_in_process
from ipc_bench.analysis.stats import percentiles_ms
from ipc_bench.analysis.summary import latency_counts, runner_gap_figures
from ipc_bench.report.tables import latency_p99_note, runner_gap_lines

HEAD = ("A p99 over 100 or fewer values lies between its case's two largest values: read "
        "it as about the maximum, not as a tail percentile")
P99S = {"ttft_ms_p99": 1.0, "itl_ms_p99": 0.5, "e2e_ms_p99": 2.0, "tpot_ms_p99": 0.4}


def test_each_latency_p99_is_counted_by_what_it_is_over():
    # 150 requests served, 60 of them with a TPOT, 90 ITL gaps: only ITL p99 is said
    case = dict(P99S, num_requests=150, num_rejected=0, ttft_count=150, e2e_count=150,
                tpot_count=60, itl_count=90)
    assert latency_p99_note([case]) == f"{HEAD} (here ITL p99, over as few as 90 gaps)."
    # TPOT p99 over its 60 values lies between the two largest all the same: a figure
    # of the summary only, which the Latency table (TPOT mean) does not print
    p99 = percentiles_ms(np.arange(60) / 1e3, "tpot")["tpot_ms_p99"]
    assert 58 < p99 < 59
    assert latency_p99_note([dict(case, tpot_count=1)]) == latency_p99_note([case])
    # the counts, not the requests served, where the summary has them
    assert latency_p99_note([dict(case, e2e_count=101, ttft_count=40, itl_count=40)]) == (
        f"{HEAD} (here TTFT p99, over as few as 40 requests; ITL p99, over as few as "
        "40 gaps).")
    assert latency_p99_note([dict(case, itl_count=101)]) == ""
    # a p99 the loader withheld (NaN) is not shown: nothing said of it
    assert latency_p99_note([dict(case, itl_ms_p99=float("nan"))]) == ""


def test_a_summary_without_counts_says_nothing_of_itl():
    assert latency_p99_note([dict(P99S, num_requests=150)]) == ""
    assert latency_p99_note([dict(P99S, num_requests=30)]) == (
        f"{HEAD} (here TTFT and E2E p99, over as few as 30 requests).")


def test_the_summary_counts_the_values_of_each_latency():
    requests = [dict(ttft_s=0.01, tpot_s=0.002, e2e_s=0.014, itl_s=[0.001, 0.003]),
                dict(ttft_s=0.02, tpot_s=None, e2e_s=0.02, itl_s=[]),
                dict(ttft_s=0.03, tpot_s=0.005, e2e_s=0.045, itl_s=[0.004, 0.005, 0.006])]
    assert latency_counts(requests) == dict(ttft_count=3, tpot_count=2, itl_count=5,
                                            e2e_count=3)
    assert latency_counts([dict(ttft_s=0.01, tpot_s=None, e2e_s=0.01, itl_s=[])]) == dict(
        ttft_count=1, e2e_count=1)


def _gap_record(count):
    return dict(policy="send", codec="msgpack", transport="ipc", runner_gap_ns_median=8e4,
                runner_gap_ns_p99=1.6e5, runner_gap_share_median=0.5,
                runner_gap_share_p99=0.9, runner_step_ns_median=1.6e5,
                runner_gap_count=count)


def test_the_runner_gap_p99s_are_counted_by_their_steps():
    start = np.arange(0, 22 * 100, 100)  # 22 steps of 100 ns, 70 of them forward
    got = runner_gap_figures(dict(runner_forward_start_ns=start,
                                  runner_forward_ns=np.full(22, 70)),
                             np.array([False, False] + [True] * 20))
    assert (got["runner_gap_count"], got["runner_gap_ns_p99"]) == (20, 30.0)
    assert runner_gap_lines([_gap_record(20)])[-1] == (
        f"  {HEAD} (here gap us p99 and gap % p99, over as few as 20 counted steps).")
    assert runner_gap_lines([_gap_record(101)])[-1].startswith("  send")  # the last row
    assert runner_gap_lines([dict(_gap_record(20), runner_gap_count=None)])[-1].startswith(
        "  send")  # a summary written before runner_gap_count: not known, not said


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> tuple[Path, str]:
    run = tmp_path_factory.mktemp("p99") / "run"
    proc = bench_in_process(  # cli.main in this process, its runner a process
        ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
         "--warmup-steps", "2", "--policies", "send", "--codecs", "msgpack",
         "--no-single-process", "--no-floor", "--quiet", "--output", str(run)])
    assert proc.returncode == 0, proc.stderr
    return run, proc.stdout


def test_a_run_of_20_steps_says_it_under_both_gap_tables(tiny_run, tmp_path):
    run, out = tiny_run
    note = f"{HEAD} (here gap us p99 and gap % p99, over as few as 20 counted steps)."
    assert f"\n  {note}\n" in out
    proc = bench_in_process(["report", str(run), "--no-figures", "--output",
                             str(tmp_path / "rep")])
    assert (proc.returncode, proc.stderr) == (0, "")
    md = (tmp_path / "rep" / "report.md").read_text()
    section = md.split("\n## Runner gap\n", 1)[1].split("\n## ", 1)[0]
    assert section.rstrip().endswith(
        "median and p99 in µs and as a share of the runner's step (forward start to "
        f"forward start). {note}")
