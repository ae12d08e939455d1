"""``frontend.csv``'s ``counted`` column (as steps.csv's) and ``Results.frontend``: a
``--frontend`` run's per-step frontend figures loaded as the other tables are (the
case's identity columns, rows of cases left out or unlisted dropped, impossible rows
said and left out), an empty frame of the same columns for a run without it, and a
file written before ``counted`` taking it from steps.csv."""

from __future__ import annotations

import json
import shutil
import warnings

import pandas as pd
import pytest

from analysis_run import bench_in_process
from ipc_bench.analysis.results import load

TINY = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
        "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor", "--no-single-process",
        "--policies", "send", "--quiet"]
HEADER = ("case_id,seq,counted,frontend_build_ns,frontend_encode_ns,frontend_send_ns,"
          "frontend_payload_bytes,frontend_decode_ns")
COLUMNS = ["run_id", "case_id", "scenario", "policy", "codec", "repetition", "workload",
           "seq", "counted", "frontend_build_ns", "frontend_encode_ns", "frontend_send_ns",
           "frontend_payload_bytes", "frontend_decode_ns", "arm", "transport", "model",
           "num_running"]
CASE = "num_running=4/send/msgpack#0"


def _bench(out, *extra):
    proc = bench_in_process([*TINY, *extra, "--output", out])
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("fe")
    return _bench(root / "fe", "--frontend"), _bench(root / "plain")


def _copy(run, tmp_path, name="run"):
    return shutil.copytree(run, tmp_path / name)


def _loaded(path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = load(path)
    return res, [str(w.message) for w in caught]


def test_frontend_csv_has_steps_csvs_counted_flag(runs):
    fe_run, _ = runs
    assert (fe_run / "frontend.csv").read_text().splitlines()[0] == HEADER
    fe = pd.read_csv(fe_run / "frontend.csv")
    steps = pd.read_csv(fe_run / "steps.csv")
    both = fe.merge(steps[["case_id", "seq", "counted", "warmup"]], on=["case_id", "seq"],
                    suffixes=("", "_steps"), validate="one_to_one")
    assert len(both) == len(fe) == len(steps)
    assert both["counted"].tolist() == both["counted_steps"].tolist()
    assert int(fe["counted"].sum()) == 20
    assert not (both["counted"] & both["warmup"]).any()


def test_results_frontend_is_the_table_with_identity_and_counted(runs):
    fe_run, _ = runs
    res, lines = _loaded(fe_run)
    assert lines == []
    fe = res.frontend
    assert list(fe.columns) == COLUMNS
    assert fe["counted"].dtype == bool and int(fe["counted"].sum()) == 20
    assert set(fe["case_id"]) == {CASE} and set(fe["run_id"]) == {"fe"}
    case = res.cases.set_index("case_id").loc[CASE]
    counted = fe[fe["counted"]]
    for col in ("frontend_build_ns", "frontend_encode_ns", "frontend_send_ns"):
        assert counted[col].mean() == pytest.approx(case[f"{col}_per_step"], rel=1e-12)
    assert counted["frontend_payload_bytes"].mean() == pytest.approx(
        case["frontend_bytes_per_step"], rel=1e-12)
    assert res.select("fe").frontend.equals(fe) and res.finished().frontend is fe


def test_a_run_without_frontend_has_an_empty_table_of_the_same_columns(runs):
    fe_run, plain = runs
    res, _ = _loaded(plain)
    assert list(res.frontend.columns) == COLUMNS and len(res.frontend) == 0
    assert res.frontend["counted"].dtype == bool
    both, _ = _loaded([fe_run, plain])
    assert list(both.frontend.columns) == COLUMNS
    assert len(both.frontend) == len(res.frontend) + len(load(fe_run).frontend)


def test_an_older_frontend_csv_without_counted_takes_it_from_steps_csv(runs, tmp_path):
    run = _copy(runs[0], tmp_path)
    pd.read_csv(run / "frontend.csv").drop(columns="counted").to_csv(
        run / "frontend.csv", index=False)
    old, lines = _loaded(run)
    assert lines == []
    new = load(runs[0]).frontend
    assert old.frontend.drop(columns="run_id").equals(new.drop(columns="run_id"))


def test_a_counted_flag_that_is_not_steps_csvs_is_said_and_steps_csvs_kept(runs, tmp_path):
    run = _copy(runs[0], tmp_path)
    fe = pd.read_csv(run / "frontend.csv")
    fe.loc[fe["seq"].isin([0, 1]), "counted"] = 1  # warm-up steps
    fe.to_csv(run / "frontend.csv", index=False)
    res, lines = _loaded(run)
    assert lines == [f"{run}/frontend.csv: case {CASE!r} has 2 rows whose counted is not "
                     "steps.csv's for the same seq (0 first; steps.csv's taken)"]
    assert int(res.frontend["counted"].sum()) == 20


def test_impossible_and_repeated_rows_are_said_and_left_out(runs, tmp_path):
    run = _copy(runs[0], tmp_path)
    fe = pd.read_csv(run / "frontend.csv")
    fe.loc[fe["seq"] == 3, "frontend_send_ns"] = -5
    fe = pd.concat([fe, fe[fe["seq"] == 7]], ignore_index=True)
    fe.to_csv(run / "frontend.csv", index=False)
    res, lines = _loaded(run)
    assert lines == [
        f"{run}/frontend.csv: case {CASE!r} has 1 row of a step an earlier row has (seq 7 "
        "first; left out)",
        f"{run}/frontend.csv: case {CASE!r} has a negative frontend_send_ns (-5) in 1 row "
        "(left out)",
        # the row left out leaves the case a row short, as steps.csv's would
        f"{run}/frontend.csv: 24 of the 25 rows that summary.json counts (1 case(s) short: "
        f"{CASE}: 24 of 25); loaded what is valid"]
    assert len(res.frontend) == len(fe) - 2 and 3 not in set(res.frontend["seq"])


def test_rows_of_a_case_the_summary_does_not_list_are_left_out(runs, tmp_path):
    run = _copy(runs[0], tmp_path)
    fe = pd.read_csv(run / "frontend.csv")
    other = fe.head(3).assign(case_id="num_running=8/send/msgpack#0")
    pd.concat([fe, other], ignore_index=True).to_csv(run / "frontend.csv", index=False)
    res, lines = _loaded(run)
    assert lines == [f"{run}: case 'num_running=8/send/msgpack#0' has 3 rows in "
                     "frontend.csv, but summary.json does not list it (left out)"]
    assert set(res.frontend["case_id"]) == {CASE}


def test_a_case_left_out_takes_its_frontend_rows_with_it(runs, tmp_path):
    run = _copy(runs[0], tmp_path)
    summary = json.loads((run / "summary.json").read_text())
    summary["cases"].append(dict(summary["cases"][0], case_id="x", policy=None))
    (run / "summary.json").write_text(json.dumps(summary))
    fe = pd.read_csv(run / "frontend.csv")
    pd.concat([fe, fe.head(2).assign(case_id="x")], ignore_index=True).to_csv(
        run / "frontend.csv", index=False)
    res, _ = _loaded(run)
    assert set(res.frontend["case_id"]) == {CASE}


def test_a_frontend_csv_cut_short_is_said_as_steps_csv_is(runs, tmp_path):
    run = _copy(runs[0], tmp_path)
    fe = pd.read_csv(run / "frontend.csv")
    fe[fe["seq"] != 10].to_csv(run / "frontend.csv", index=False)
    res, lines = _loaded(run)
    assert lines == [f"{run}/frontend.csv: 24 of the 25 rows that summary.json counts (1 "
                     f"case(s) short: {CASE}: 24 of 25); loaded what is valid"]
    assert len(res.frontend) == 24
