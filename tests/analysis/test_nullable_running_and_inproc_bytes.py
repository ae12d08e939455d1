"""Loading runs of which only some record ``num_running`` keeps it a whole number
(pandas' nullable ``Int64``, ``<NA>`` for the gap), and a single-process case's
per-step payload figures are as missing as its wire ones: no frame crosses between its
scheduler and runner."""
import math

import numpy as np
import pandas as pd
import pytest

from analysis_run import run_bench
from ipc_bench.analysis.pace import as_record, is_missing
from ipc_bench.analysis.results import _tidy_types, load, records


def test_a_running_count_with_a_gap_loads_as_nullable_integers():
    df = _tidy_types(pd, pd.DataFrame({"num_running": [4.0, 16.0, np.nan]}))
    assert str(df["num_running"].dtype) == "Int64"
    assert df["num_running"].tolist()[:2] == [4, 16]
    assert df["num_running"].isna().tolist() == [False, False, True]
    assert df.groupby("num_running").size().to_dict() == {4: 1, 16: 1}
    # no gap: int64 as before; a value that is not whole: left float
    assert _tidy_types(pd, pd.DataFrame({"num_running": [4, 16]}))["num_running"].dtype \
        == np.int64
    assert _tidy_types(pd, pd.DataFrame({"num_running": [4.5, np.nan]}))[
        "num_running"].dtype == np.float64


def test_a_records_gap_reads_as_none_whatever_its_kind():
    assert [is_missing(v) for v in (None, math.nan, pd.NA, 0, 4, "x", 0.0)] == [
        True, True, True, False, False, False, False]
    assert as_record({"num_running": pd.NA, "tp": math.nan, "codec": "msgpack"}) == {
        "num_running": None, "tp": None, "codec": "msgpack"}


def test_a_single_process_case_has_no_payload_figure_as_it_has_no_wire_figure():
    cases = _tidy_types(pd, pd.DataFrame({
        "transport": ["ipc", "inproc"], "codec": ["msgpack", "none"],
        "sched_to_runner_payload_bytes_per_step": [393.0, 0.0],
        "runner_to_sched_payload_bytes_per_step": [120.0, 0.0],
        "decode_token_bytes_per_step": [19.7, 0.0], "prompt_chunk_bytes_per_step": [0, 0],
        "sched_to_runner_wire_bytes_per_step": [395.0, np.nan]}))
    assert cases.to_dict("list") == {
        "transport": ["ipc", "inproc"], "codec": ["msgpack", "none"],
        "sched_to_runner_payload_bytes_per_step": [393.0, pytest.approx(np.nan, nan_ok=True)],
        "runner_to_sched_payload_bytes_per_step": [120.0, pytest.approx(np.nan, nan_ok=True)],
        "decode_token_bytes_per_step": [19.7, pytest.approx(np.nan, nan_ok=True)],
        "prompt_chunk_bytes_per_step": [0.0, pytest.approx(np.nan, nan_ok=True)],
        "sched_to_runner_wire_bytes_per_step": [395.0, pytest.approx(np.nan, nan_ok=True)]}


def test_a_steady_run_and_a_replay_load_together_with_integer_running_counts(tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
        f"2023-11-16 18:15:40.{i * 5:02d}00000,40,8\n" for i in range(6)))
    run_bench(tmp_path / "steady", ["--scenario", "decode-steady", "--num-running", "4",
                                    "--steps", "10", "--warmup-steps", "3",
                                    "--codecs", "msgpack", "--no-floor"])
    run_bench(tmp_path / "replay", ["--scenario", "azure-conv", "--max-requests", "6",
                                    "--codecs", "msgpack", "--no-floor",
                                    "--no-single-process", "--warmup-steps", "2",
                                    "--trace", str(trace)])
    res = load([tmp_path / "steady", tmp_path / "replay"])
    for table in (res.cases, res.steps, res.requests):
        assert str(table["num_running"].dtype) == "Int64"
    by_run = {r: [x["num_running"] for x in records(res.cases[res.cases["run_id"] == r])]
              for r in ("steady", "replay")}
    assert by_run == {"steady": [4, 4, 4, 4], "replay": [None, None]}
    single = res.cases[res.cases["codec"] == "none"]
    assert len(single) == 2
    assert single[["sched_to_runner_payload_bytes_per_step",
                   "sched_to_runner_wire_bytes_per_step"]].isna().all().all()
    # the steps table keeps what steps.csv holds: 0 payload bytes a step
    assert set(res.steps[res.steps["codec"] == "none"]["s2r_payload_bytes"]) == {0}
    # and the report of both reads the count where there is one, the workload elsewhere
    from ipc_bench.cli import main as cli_main

    assert cli_main(["report", str(tmp_path / "steady"), str(tmp_path / "replay"),
                     "--output", str(tmp_path / "rep"), "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "At 4 running requests" in md and "On `trace=azure-conv:6`" in md
