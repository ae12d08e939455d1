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
from ipc_bench.analysis.results import _tidy_types, load
from ipc_bench.analysis.run_files import records


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


#: The pp run's settings (``analysis_run.PP_RUN_ARGS``), which the --tp run shares.
COMMON = ["--num-running", "4", "--steps", "20", "--warmup-steps", "5", "--codecs", "msgpack"]


@pytest.fixture(scope="module")
def steady_run(tmp_path_factory):
    """A decode-steady run of ``COMMON``, its single-process cases included, no floor (a
    folder named ``steady``): both tests that load a steady run beside others read it;
    the facts they check (running counts, the single-process cases' missing bytes) do
    not depend on its steps. Tests only read it."""
    path = tmp_path_factory.mktemp("nullable") / "steady"
    run_bench(path, ["--scenario", "decode-steady", "--no-floor"] + COMMON)
    return path


def test_a_steady_run_and_a_replay_load_together_with_integer_running_counts(tmp_path,
                                                                             steady_run):
    trace = tmp_path / "trace.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
        f"2023-11-16 18:15:40.{i * 5:02d}00000,40,8\n" for i in range(6)))
    run_bench(tmp_path / "replay", ["--scenario", "azure-conv", "--max-requests", "6",
                                    "--codecs", "msgpack", "--no-floor",
                                    "--no-single-process", "--warmup-steps", "2",
                                    "--trace", str(trace)])
    res = load([steady_run, tmp_path / "replay"])
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

    assert cli_main(["report", str(steady_run), str(tmp_path / "replay"),
                     "--output", str(tmp_path / "rep"), "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "At 4 running requests" in md and "On `trace=azure-conv:6`" in md


def test_tp_pp_and_core_counts_with_a_gap_load_as_nullable_integers():
    gapped = _tidy_types(pd, pd.DataFrame({
        "tp": [2.0, np.nan], "pp": [np.nan, 4.0], "tp_cores": [2.0, np.nan],
        "pp_cores": [np.nan, 16.0], "shm_cores": [np.nan, 2.0]}))
    assert {c: str(t) for c, t in gapped.dtypes.items()} == dict.fromkeys(
        ("tp", "pp", "tp_cores", "pp_cores", "shm_cores"), "Int64")
    assert records(gapped) == [
        dict(tp=2, pp=None, tp_cores=2, pp_cores=None, shm_cores=None),
        dict(tp=None, pp=4, tp_cores=None, pp_cores=16, shm_cores=2)]
    whole = _tidy_types(pd, pd.DataFrame({"tp": [1, 2], "tp_cores": [2, 2]}))
    assert list(whole.dtypes) == [np.int64, np.int64]


def test_a_gap_in_tp_pp_or_a_core_count_is_no_value_to_the_report():
    """pandas 2's records give ``pandas.NA`` for a nullable integer's gap (pandas 3's
    ``None``): each reader takes it as no value, as it took NaN."""
    from ipc_bench.analysis.cores import readers_and_cores
    from ipc_bench.report.blocks import _processes_phrase
    from ipc_bench.report.findings import _oversubscribed
    from ipc_bench.report.plots import _pp_sizes
    from ipc_bench.report.tables import ran_with_no_floor

    assert readers_and_cores(dict(tp=pd.NA, tp_cores=pd.NA, pp=2, pp_cores=2,
                                  pp_timings_withheld=pd.NA)) == (2, 2)
    assert readers_and_cores(dict(tp=2, tp_cores=pd.NA, pp=pd.NA)) is None
    assert _pp_sizes(pd.DataFrame({"pp": pd.array([2, None, 1], dtype="Int64")})) == [1, 2]
    rows = pd.DataFrame({"codec": ["msgpack", "msgpack"], "tp": [pd.NA, 2],
                         "pp": [pd.NA, pd.NA]}, dtype=object)
    assert _processes_phrase(rows) == ("each case's 2 to 3 processes (the scheduler and "
                                       "its N runner ranks or stages)")
    cases = pd.DataFrame({"workload": ["tp=2", "tp=4"], "codec": ["msgpack"] * 2,
                          "tp_oversubscribed": [True, True],
                          "tp": pd.array([2, 4], dtype="Int64"),
                          "tp_cores": pd.array([None, 3], dtype="Int64")})
    assert _oversubscribed(cases, "tp=2") == (
        " OVERSUBSCRIBED: tp=2 ran 3 processes (the scheduler and 2 ranks), so they "
        "shared cores: its times and tokens/s are not comparable with the other cases', "
        "only its bytes are.")
    assert _oversubscribed(cases, "tp=4").startswith(
        " OVERSUBSCRIBED: tp=4 ran 5 processes (the scheduler and 4 ranks) on 3 cores,")
    steady = dict(num_steps=40, transport="ipc", scenario="decode-steady")
    assert [ran_with_no_floor(dict(steady, pp=v)) for v in (pd.NA, None, 2)] == [
        True, True, False]


def test_tp_and_pp_runs_beside_a_steady_run_report_as_with_float_columns(
        tmp_path, monkeypatch, shared_pp_run, steady_run):
    """A --tp run, a --pp run (the shared one: ``analysis_run.PP_RUN_ARGS``) and a
    decode-steady run loaded together: tp, pp and the core counts are Int64 with <NA>
    for the steady cases, and the report (figures included) reads as it did when they
    were float64 with NaN."""
    import ipc_bench.analysis.results as results
    from ipc_bench.cli import main as cli_main

    run_bench(tmp_path / "tp", ["--scenario", "tp-broadcast", "--tp", "1,2",
                                 "--tp-transports", "ipc"] + COMMON)
    runs = [str(tmp_path / "tp"), str(shared_pp_run), str(steady_run)]
    res = load(runs)
    for col in ("tp", "pp", "tp_cores", "pp_cores"):
        assert str(res.cases[col].dtype) == "Int64"
        assert res.cases[col].isna().sum() > 0
    assert str(res.steps["tp"].dtype) == str(res.requests["pp"].dtype) == "Int64"
    by_run = {r: sorted({x["tp"] for x in records(res.cases[res.cases["run_id"] == r])},
                        key=str) for r in ("tp", "pp", "steady")}
    assert by_run == {"tp": [1, 2], "pp": [None], "steady": [None]}

    def report(name: str) -> tuple[list[str], list[str]]:
        out = tmp_path / name
        assert cli_main(["report", *runs, "--output", str(out)]) == 0
        md = (out / "report.md").read_text().replace(str(out), "OUT").splitlines()
        return [ln for ln in md if not ln.startswith("Rendered ")], sorted(
            p.name for p in out.iterdir())

    now = report("int")
    monkeypatch.setattr(results, "_NULLABLE_INT_COLUMNS", ("num_running",))
    assert str(load(runs).cases["tp"].dtype) == "float64"
    before = report("float")
    assert now == before
    text = "\n".join(now[0])
    assert "<NA>" not in text and "tp=2.0" not in text and "pp=2.0" not in text
    assert "tp=2" in text and "pp=2" in text


def test_a_workload_label_with_a_gap_is_left_out_of_its_place():
    from ipc_bench.report.findings import _where

    assert [_where(dict(workload="num_running=4,pp=2", num_running=4,
                        labels=dict(pp=gap, tp=2, step_time_ms=2.5)))
            for gap in (pd.NA, None, math.nan)] == [
        "At 4 running requests, tp=2, step_time_ms=2.5"] * 3
