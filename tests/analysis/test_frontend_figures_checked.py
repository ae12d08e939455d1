"""A ``--frontend`` run's per-step frontend figures (``frontend_*_per_step`` in
``summary.json``) are checked against ``frontend.csv``'s counted rows on load, as the
steps.csv-derived figures are against steps.csv: a case whose figure is not its rows'
mean is left out, rows and all, with one line naming the file, the column and both
values; a step that sent nothing counts a decode time of 0, as the summary takes it.
The wire bytes and messages per step are checked against what each row's payload
gives."""

from __future__ import annotations

import json
import shutil
import warnings

import pandas as pd
import pytest

from analysis_run import bench_in_process
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsError
from ipc_bench.wire.transport import zmtp_frame_bytes

RUN = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
       "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor", "--no-single-process",
       "--quiet", "--frontend"]
SEND = "num_running=4/send/msgpack#0"
CACHED = "num_running=4/cached/msgpack#0"


@pytest.fixture(scope="module")
def fe_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("fe") / "fe"
    proc = bench_in_process([*RUN, "--output", out])
    assert proc.returncode == 0, proc.stderr
    return out


def _edited(fe_run, tmp_path, rows=None, figures=None):
    """A copy of ``fe_run`` whose send case's counted frontend.csv rows get ``rows``
    (column -> value) and whose send case in summary.json gets ``figures``."""
    run = shutil.copytree(fe_run, tmp_path / "run")
    fe = pd.read_csv(run / "frontend.csv")
    mine = (fe["case_id"] == SEND) & (fe["counted"] == 1)
    assert int(mine.sum()) == 20
    for col, value in (rows or {}).items():
        fe[col] = fe[col].astype(object)
        fe.loc[mine, col] = value
    fe.to_csv(run / "frontend.csv", index=False)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["cases"][0]["case_id"] == SEND
    summary["cases"][0].update(figures or {})
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def _loaded(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = load(run)
    return res, [str(w.message) for w in caught]


def test_a_run_as_written_loads_without_a_line(fe_run):
    res, lines = _loaded(fe_run)
    assert lines == []
    assert sorted(res.cases["case_id"]) == [CACHED, SEND]


def test_a_figure_that_is_not_its_rows_mean_leaves_the_case_out(fe_run, tmp_path):
    run = _edited(fe_run, tmp_path, rows=dict(frontend_send_ns=4000),
                  figures=dict(frontend_send_ns_per_step=5000))
    res, lines = _loaded(run)
    assert lines == [f"{run}/frontend.csv: case {SEND!r} has a mean frontend_send_ns of 4,000 "
                     "over its 20 counted rows, but summary.json has "
                     "frontend_send_ns_per_step 5,000 (left out)"]
    assert list(res.cases["case_id"]) == [CACHED]
    for table in (res.steps, res.frontend):
        assert set(table["case_id"]) == {CACHED}


def test_a_payload_figure_typed_over_is_caught(fe_run, tmp_path):
    run = _edited(fe_run, tmp_path, rows=dict(frontend_payload_bytes=360),
                  figures=dict(frontend_bytes_per_step=370.25))
    _, lines = _loaded(run)
    assert lines == [f"{run}/frontend.csv: case {SEND!r} has a mean frontend_payload_bytes "
                     "of 360 over its 20 counted rows, but summary.json has "
                     "frontend_bytes_per_step 370.25 (left out)"]


def test_a_decode_time_blank_where_a_message_was_sent_is_said(fe_run, tmp_path):
    run = _edited(fe_run, tmp_path, figures=dict(frontend_decode_ns_per_step=3527.5))
    fe = pd.read_csv(run / "frontend.csv")
    fe["frontend_decode_ns"] = fe["frontend_decode_ns"].astype(object)
    fe.loc[(fe["case_id"] == SEND) & (fe["seq"] == 10), "frontend_decode_ns"] = ""
    fe.to_csv(run / "frontend.csv", index=False)
    _, lines = _loaded(run)
    assert lines == [f"{run}/frontend.csv: case {SEND!r} has 1 of its 20 counted rows "
                     "without a frontend_decode_ns value (blank or not a number), but "
                     "summary.json has frontend_decode_ns_per_step 3,527.5 (left out)"]


def test_a_step_that_sent_nothing_counts_a_decode_of_0(fe_run, tmp_path):
    run = _edited(fe_run, tmp_path, rows=dict(frontend_payload_bytes=0, frontend_decode_ns=""),
                  figures=dict(frontend_bytes_per_step=0.0, frontend_decode_ns_per_step=0.0,
                               frontend_wire_bytes_per_step=0.0,
                               frontend_messages_per_step=0.0))
    res, lines = _loaded(run)
    assert lines == []
    assert sorted(res.cases["case_id"]) == [CACHED, SEND]


def test_a_warm_up_row_is_not_checked(fe_run, tmp_path):
    run = shutil.copytree(fe_run, tmp_path / "run")
    fe = pd.read_csv(run / "frontend.csv")
    fe.loc[(fe["case_id"] == SEND) & (fe["seq"] == 0), "frontend_build_ns"] = 10**9
    fe.to_csv(run / "frontend.csv", index=False)
    _, lines = _loaded(run)
    assert lines == []


def test_no_case_left_is_one_error(fe_run, tmp_path):
    run = _edited(fe_run, tmp_path, figures=dict(frontend_encode_ns_per_step=1e6))
    summary = json.loads((run / "summary.json").read_text())
    summary["cases"][1]["frontend_encode_ns_per_step"] = 2e6
    (run / "summary.json").write_text(json.dumps(summary))
    encode = pd.read_csv(run / "frontend.csv").query("counted == 1").groupby(
        "case_id")["frontend_encode_ns"].mean()
    with pytest.raises(ResultsError) as err:
        load(run)
    assert str(err.value) == (
        f"no case can be loaded: {run}/frontend.csv: case {SEND!r} has a mean "
        f"frontend_encode_ns of {encode[SEND]:,.6g} over its 20 counted rows, but "
        "summary.json has frontend_encode_ns_per_step 1e+06 (and 1 more)")


def test_the_wire_figures_as_written_are_the_rows_framed_means(fe_run):
    """``frontend_wire_bytes_per_step``: the mean of each counted row's payload with its
    ZMTP frame head (0 where nothing was sent); ``frontend_messages_per_step``: the
    share of counted rows that sent a message."""
    fe = pd.read_csv(fe_run / "frontend.csv")
    payload = fe.loc[(fe["counted"] == 1) & (fe["case_id"] == SEND),
                     "frontend_payload_bytes"]
    case = json.loads((fe_run / "summary.json").read_text())["cases"][0]
    assert case["case_id"] == SEND
    wire = [zmtp_frame_bytes(int(b)) if b else 0 for b in payload]
    assert case["frontend_wire_bytes_per_step"] == sum(wire) / 20
    assert case["frontend_messages_per_step"] == float((payload > 0).mean())


@pytest.mark.parametrize("figure, words", [
    ("frontend_wire_bytes_per_step", "ZMTP-framed frontend_payload_bytes"),
    ("frontend_messages_per_step", "frontend_payload_bytes > 0"),
])
def test_a_wire_figure_typed_over_leaves_the_case_out(fe_run, tmp_path, figure, words):
    """Checked as the other frontend figures are, where they were loaded as written."""
    want = json.loads((fe_run / "summary.json").read_text())["cases"][0][figure]
    run = _edited(fe_run, tmp_path, figures={figure: want * 2 + 1})
    res, lines = _loaded(run)
    assert lines == [f"{run}/frontend.csv: case {SEND!r} has a mean {words} of {want:,.6g} "
                     f"over its 20 counted rows, but summary.json has {figure} "
                     f"{want * 2 + 1:,.6g} (left out)"]
    assert list(res.cases["case_id"]) == [CACHED]
