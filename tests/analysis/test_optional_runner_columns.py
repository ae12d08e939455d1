"""The runner's optional per-step columns in ``steps.csv`` (``spec.OPTIONAL_RUNNER_COLUMNS``:
the model's own, the replicated codec's replica, the device-input path's): written for
the cases that have them, empty for the others, loaded by ``results.load`` and checked
against the summary's figures over them; a ``steps.csv`` written before them loads
without a word."""

from __future__ import annotations

import csv
import shutil
import warnings

import pytest

from analysis_run import run_bench
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning
from ipc_bench.harness.run_folder import STEPS_HEADER
from ipc_bench.harness.spec import OPTIONAL_RUNNER_COLUMNS

RUN = ["--scenario", "decode-steady", "--model", "emulated", "--model-preset", "llama-3.2-1b",
       "--num-running", "4", "--steps", "20", "--warmup-steps", "5", "--codecs",
       "msgpack,replicated", "--policies", "send", "--no-single-process", "--no-floor"]
PLAIN = "num_running=4/send/msgpack#0"
REPLICATED = "num_running=4/send/replicated#0"


@pytest.fixture(scope="module")
def emulated_run(tmp_path_factory):
    """A real emulated run of two cases: send with msgpack, then with the replicated
    codec."""
    run = tmp_path_factory.mktemp("optional") / "run"
    run_bench(run, RUN)
    return run


def _rows(run) -> list[dict[str, str]]:
    with open(run / "steps.csv", newline="") as f:
        return list(csv.DictReader(f))


def _write(run, rows, fields) -> None:
    with open(run / "steps.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def _load_warnings(run) -> tuple[object, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        results = load(run)
    return results, [str(w.message) for w in caught if issubclass(w.category, ResultsWarning)]


def test_each_case_writes_the_optional_columns_it_has_and_leaves_the_others_empty(
        emulated_run):
    with open(emulated_run / "steps.csv", newline="") as f:
        assert tuple(next(csv.reader(f))) == STEPS_HEADER
    rows = _rows(emulated_run)
    assert [r["case_id"] for r in rows] == [PLAIN] * 25 + [REPLICATED] * 25
    filled = {case: {k for k in OPTIONAL_RUNNER_COLUMNS
                     if all(r[k] != "" for r in rows if r["case_id"] == case)}
              for case in (PLAIN, REPLICATED)}
    empty = {case: {k for k in OPTIONAL_RUNNER_COLUMNS
                    if all(r[k] == "" for r in rows if r["case_id"] == case)}
             for case in (PLAIN, REPLICATED)}
    assert filled == {PLAIN: {"emulated_step_ns", "emulated_context_tokens"},
                      REPLICATED: {"emulated_step_ns", "emulated_context_tokens",
                                   "replica_schedule_ns", "replica_update_ns"}}
    assert empty == {case: set(OPTIONAL_RUNNER_COLUMNS) - filled[case] for case in filled}
    # the emulated step is the roofline of the step's shape: the two cases scheduled the
    # same batches, so each step waited the same time
    assert [r["emulated_step_ns"] for r in rows[:25]] == \
        [r["emulated_step_ns"] for r in rows[25:]]


def test_the_loaded_columns_give_the_summarys_figures(emulated_run):
    results, lines = _load_warnings(emulated_run)
    assert lines == []
    counted = results.steps[results.steps["counted"] == 1]
    cases = results.cases.set_index("case_id")
    for case in (PLAIN, REPLICATED):
        mine = counted[counted["case_id"] == case]
        assert mine["emulated_step_ns"].mean() == pytest.approx(
            cases.loc[case, "emulated_step_ns_per_step"], rel=1e-12)
    mine = counted[counted["case_id"] == REPLICATED]
    assert (mine["replica_schedule_ns"] + mine["replica_update_ns"]).mean() == \
        pytest.approx(cases.loc[REPLICATED, "replica_scheduler_ns_per_step"], rel=1e-12)
    assert counted["gpu_busy_ns"].isna().all()


def test_an_edited_optional_column_leaves_its_case_out(emulated_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(emulated_run, run)
    rows = _rows(run)
    for r in rows:
        if r["case_id"] == PLAIN:
            r["emulated_step_ns"] = str(int(r["emulated_step_ns"]) * 10)
    _write(run, rows, STEPS_HEADER)
    values = [int(r["emulated_step_ns"]) for r in rows
              if r["case_id"] == PLAIN and r["counted"] == "1"]
    results, lines = _load_warnings(run)
    want = load(emulated_run).cases.set_index("case_id").loc[PLAIN,
                                                              "emulated_step_ns_per_step"]
    assert lines == [
        f"{run / 'steps.csv'}: case '{PLAIN}' has a mean emulated_step_ns of "
        f"{sum(values) / len(values):,.6g} over its 20 counted rows, but summary.json has "
        f"emulated_step_ns_per_step {want:,.6g} (left out)"]
    assert list(results.cases["case_id"]) == [REPLICATED]


def test_a_steps_csv_written_before_the_optional_columns_loads_without_a_word(
        emulated_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(emulated_run, run)
    older = [k for k in STEPS_HEADER if k not in OPTIONAL_RUNNER_COLUMNS]
    _write(run, _rows(run), older)
    results, lines = _load_warnings(run)
    assert lines == []
    assert list(results.cases["case_id"]) == [PLAIN, REPLICATED]
    assert results.steps[list(OPTIONAL_RUNNER_COLUMNS)].isna().all().all()


def test_the_compute_to_roofline_ratio_is_checked_against_its_columns(tmp_path):
    """``compute_to_roofline_ratio``: the median of the basis column over
    ``roofline_ns`` at the counted rows with a roofline; a run written before
    ``steps.csv`` had ``roofline_ns`` is not checked."""
    import pandas as pd

    from ipc_bench.analysis.row_checks import _roofline_problem

    rows = pd.DataFrame({"counted": [0, 1, 1, 1, 1],
                         "roofline_ns": [100, 100, 200, 0, 400],
                         "runner_forward_ns": [9, 300, 400, 50, 2000],
                         "gpu_busy_ns": [float("nan")] * 5})
    counted = rows["counted"].astype(bool).to_numpy()
    path = tmp_path / "steps.csv"
    case = {"case_id": "c", "compute_to_roofline_ratio": 3.0,  # ratios 3, 2, 5
            "compute_to_roofline_basis": "runner_forward_ns"}
    assert _roofline_problem(case, rows, counted, path) is None
    assert _roofline_problem(dict(case, compute_to_roofline_ratio=0.3), rows, counted,
                             path) == (
        f"{path}: case 'c' has a median runner_forward_ns / roofline_ns of 3 over its 3 "
        "counted rows with a roofline, but summary.json has compute_to_roofline_ratio 0.3 "
        "(left out)")
    # its basis empty (a CPU run's gpu_busy_ns), or no roofline_ns column: not checked
    assert _roofline_problem(dict(case, compute_to_roofline_basis="gpu_busy_ns",
                                  compute_to_roofline_ratio=0.3), rows, counted,
                             path) is None
    assert _roofline_problem(dict(case, compute_to_roofline_ratio=0.3),
                             rows.drop(columns="roofline_ns"), counted, path) is None


def test_the_cuda_event_figures_are_checked_against_their_columns(tmp_path):
    """``host_ns_per_step`` (mean step less busy), ``gpu_busy_share`` (busy over step,
    summed) and ``gpu_idle_ns_per_step`` (the rows with an idle time, not -1), as a
    CUDA run's summary computes them, from ``steps.csv``'s columns."""
    import pandas as pd

    from ipc_bench.analysis.row_checks import _gpu_time_problem

    rows = pd.DataFrame({"counted": [0, 1, 1, 1, 1],
                         "step_ns": [9000, 1000, 2000, 1000, 4000],
                         "gpu_busy_ns": [9000, 500, 1500, 500, 3500],
                         "gpu_idle_ns": [-1, -1, 300, 100, 200],
                         "num_reqs": [4, 4, 4, 4, 4],  # the second counted row prefills
                         "num_scheduled_tokens": [40, 4, 30, 4, 4],
                         "num_output_tokens": [4, 4, 4, 4, 4]})
    counted = rows["counted"].astype(bool).to_numpy()
    path = tmp_path / "steps.csv"
    case = {"case_id": "c", "host_ns_per_step": 500.0, "gpu_busy_share": 0.75,
            "gpu_idle_ns_per_step": 200.0, "host_ns_per_decode_step": 500.0,
            "wall_s": 1e-3, "num_total_steps": 5, "run_output_tokens_per_s": 20_000.0}
    assert _gpu_time_problem(case, rows, counted, path) is None
    assert _gpu_time_problem(dict(case, host_ns_per_decode_step=400.0), rows, counted,
                             path) == (
        f"{path}: case 'c' has a host_ns_per_decode_step of 500 over its 4 counted rows' "
        "gpu_busy_ns and step_ns at its decode steps (num_scheduled_tokens = num_reqs), "
        "but summary.json has host_ns_per_decode_step 400 (left out)")
    assert _gpu_time_problem(dict(case, run_output_tokens_per_s=2e5), rows, counted,
                             path) == (
        f"{path}: case 'c' has a run_output_tokens_per_s of 20,000 from all its 5 rows' "
        "num_output_tokens over its wall_s 0.001, but summary.json has "
        "run_output_tokens_per_s 200,000 (left out)")
    assert _gpu_time_problem(dict(case, gpu_busy_share=0.9), rows, counted, path) == (
        f"{path}: case 'c' has a gpu_busy_share of 0.75 over its 4 counted rows' "
        "gpu_busy_ns and step_ns, but summary.json has gpu_busy_share 0.9 (left out)")
    assert _gpu_time_problem(dict(case, gpu_idle_ns_per_step=150.0), rows, counted,
                             path) == (
        f"{path}: case 'c' has a gpu_idle_ns_per_step of 200 over its 4 counted rows' "
        "gpu_idle_ns (those not -1), but summary.json has gpu_idle_ns_per_step 150 "
        "(left out)")
    # a CPU run (its gpu_busy_ns empty) or one before the column: not checked
    empty = rows.assign(gpu_busy_ns=float("nan"))
    assert _gpu_time_problem(dict(case, gpu_busy_share=0.9), empty, counted, path) is None


def test_the_emulated_forward_excess_is_checked_against_its_columns(emulated_run, tmp_path):
    """``emulated_forward_excess_ns_per_step``, the mean of ``runner_forward_ns`` less
    ``emulated_step_ns``: a run's agrees (above); one typed over in summary.json does
    not, and that case is left out."""
    import json

    run = tmp_path / "run"
    shutil.copytree(emulated_run, run)
    summary = json.loads((run / "summary.json").read_text())
    entry = next(c for c in summary["cases"] if c["case_id"] == PLAIN)
    entry["emulated_forward_excess_ns_per_step"] = 12_345.0
    (run / "summary.json").write_text(json.dumps(summary))
    rows = [r for r in _rows(run) if r["case_id"] == PLAIN and r["counted"] == "1"]
    excess = sum(int(r["runner_forward_ns"]) - int(r["emulated_step_ns"])
                 for r in rows) / len(rows)
    results, lines = _load_warnings(run)
    assert lines == [
        f"{run / 'steps.csv'}: case '{PLAIN}' has an emulated_forward_excess_ns_per_step of "
        f"{excess:,.6g} over its 20 counted rows' runner_forward_ns and emulated_step_ns, "
        "but summary.json has emulated_forward_excess_ns_per_step 12,345 (left out)"]
    assert list(results.cases["case_id"]) == [REPLICATED]


def test_a_blanked_cuda_event_value_leaves_its_case_out(tmp_path):
    """A counted row without the ``gpu_idle_ns`` the other rows have (or a row, warm-up
    included, without its ``num_output_tokens``) is an edit, not a column the run lacks."""
    import numpy as np
    import pandas as pd

    from ipc_bench.analysis.row_checks import _gpu_time_problem

    rows = pd.DataFrame({"counted": [0, 1, 1, 1], "step_ns": [900, 1000, 2000, 1000],
                         "gpu_busy_ns": [500, 500, 1500, 500],
                         "gpu_idle_ns": [-1, -1, np.nan, 100],
                         "num_reqs": [4] * 4, "num_scheduled_tokens": [4] * 4,
                         "num_output_tokens": [np.nan, 4, 4, 4]})
    counted = rows["counted"].astype(bool).to_numpy()
    path = tmp_path / "steps.csv"
    assert _gpu_time_problem({"case_id": "c", "gpu_idle_ns_per_step": 999.0}, rows,
                             counted, path) == (
        f"{path}: case 'c' has 1 of its 3 counted rows without a gpu_idle_ns value (blank "
        "or not a number), but summary.json has gpu_idle_ns_per_step 999 (left out)")
    assert _gpu_time_problem({"case_id": "c", "run_output_tokens_per_s": 1.0}, rows,
                             counted, path) == (
        f"{path}: case 'c' has 1 of its 4 rows without a num_output_tokens value (blank "
        "or not a number), but summary.json has run_output_tokens_per_s 1 (left out)")
