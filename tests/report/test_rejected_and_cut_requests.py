"""Requests rejected on arrival or cut at max_model_len: the terminal's lines under the
case table are in the report too, under that workload's case table with what they mean
for the comparison, and in the findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analysis_run import run_bench

#: Ten trace rows: the fourth can never fit (20,000 prompt tokens, max_model_len 16,384),
#: the sixth reaches max_model_len before its 84 output tokens (16,380 + 84).
ROWS = [(374, 44), (396, 109), (879, 55), (20_000, 16), (91, 16), (16_380, 84),
        (1313, 142), (388, 84), (242, 14), (209, 152)]

REJECTED = ("rejected on arrival: 1 of 10 requests could never fit (prompt >= "
            "max_model_len, or more KV blocks than the cache has)")
CUT = ("cut at max_model_len: 1 of 10 requests stopped before their output length "
       "(prompt + output > max_model_len; --max-model-len sets it)")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("rejected")
    trace = tmp / "trace.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
        f"2023-11-16 18:15:{46 + i:02d}.0000000,{c},{g}\n" for i, (c, g) in enumerate(ROWS)))
    out = run_bench(tmp / "run", ["--scenario", "azure-conv", "--trace", str(trace),
                                  "--codecs", "msgpack", "--warmup-steps", "2",
                                  "--no-floor"])
    return tmp / "run", out


def test_the_terminal_states_both(run):
    lines = run[1].splitlines()
    assert f"  {REJECTED}" in lines and f"  {CUT}" in lines


def test_the_report_states_them_under_the_case_table_with_their_meaning(run, tmp_path):
    from ipc_bench.report.document import write_report

    out = write_report([str(run[0])], str(tmp_path / "report"), figures=False)
    md = (out / "report.md").read_text()
    cases = md[md.index("## Cases"):md.index("## Runner gap")]
    assert ("Rejected on arrival: 1 of 10 requests could never fit (prompt >= "
            "`max_model_len`, or more KV blocks than the cache has). A request is rejected "
            "by its lengths and the engine's limits, whatever the policy, so every case of "
            "this workload rejected the same requests and the comparison stands, but it "
            "covers the requests served, not the whole workload: a rejected request adds "
            "no step, byte or token to any figure of this table, the comparison or the "
            "findings.") in cases.splitlines()
    assert ("Cut at `max_model_len`: 1 of 10 requests stopped before their output length "
            "(prompt + output > `max_model_len`; `--max-model-len` sets it). Every case "
            "stopped such a request at the same token, whatever the policy, so the "
            "comparison stands, but of a shorter workload than the trace's: the tokens "
            "such a request was not allowed to generate add no decode step, byte or token "
            "to any figure of this table, the comparison or the findings.") \
        in cases.splitlines()
    findings = md[md.index("## Findings"):md.index("## Figures")].splitlines()
    assert (f"- On `trace=azure-conv:10`, {REJECTED}: every finding on it is of the "
            "requests served, alike in every case.") in findings
    assert (f"- On `trace=azure-conv:10`, {CUT}: every finding on it counts those "
            "requests' tokens up to max_model_len only, alike in every case.") in findings


def test_cases_that_counted_differently_are_named():
    from ipc_bench.report.tables import rejected_note

    cases = [dict(case_id="a", num_rejected=1, num_requests=10),
             dict(case_id="b", num_rejected=0, num_requests=10)]
    assert rejected_note(cases) == (
        "rejected on arrival: 1 of 10 (per case: a 1, b 0) requests could never fit "
        "(prompt >= max_model_len, or more KV blocks than the cache has)")
    assert rejected_note([dict(case_id="a", num_rejected=0, num_requests=10)]) is None
