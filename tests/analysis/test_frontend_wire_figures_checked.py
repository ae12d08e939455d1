"""A ``--frontend`` run's ``frontend_wire_bytes_per_step`` and
``frontend_messages_per_step`` are checked on load against ``frontend.csv``'s counted
rows as its other frontend figures are: the mean of each row's payload with its ZMTP
frame head (0 where nothing was sent), and the share of rows that sent a message. A
hand-edited figure leaves its case out in one line, where it was loaded as written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings

import pandas as pd
import pytest

from fault_helpers import REPO
from ipc_bench.analysis.results import load
from ipc_bench.wire.transport import zmtp_frame_bytes

RUN = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
       "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor", "--no-single-process",
       "--quiet", "--frontend"]
SEND = "num_running=4/send/msgpack#0"
CACHED = "num_running=4/cached/msgpack#0"


@pytest.fixture(scope="module")
def fe_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("fe") / "fe"
    subprocess.run([sys.executable, str(REPO / "bench.py"), *RUN, "--output", str(out)],
                   cwd=REPO, check=True, capture_output=True, timeout=300)
    return out


def _loaded(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = load(run)
    return res, [str(w.message) for w in caught]


def test_the_figures_as_written_are_the_rows_framed_means(fe_run):
    fe = pd.read_csv(fe_run / "frontend.csv")
    payload = fe.loc[(fe["counted"] == 1) & (fe["case_id"] == SEND),
                     "frontend_payload_bytes"]
    case = json.loads((fe_run / "summary.json").read_text())["cases"][0]
    assert case["case_id"] == SEND
    wire = [zmtp_frame_bytes(int(b)) if b else 0 for b in payload]
    assert case["frontend_wire_bytes_per_step"] == sum(wire) / 20
    assert case["frontend_messages_per_step"] == float((payload > 0).mean())
    res, lines = _loaded(fe_run)
    assert lines == [] and sorted(res.cases["case_id"]) == [CACHED, SEND]


@pytest.mark.parametrize("figure, words", [
    ("frontend_wire_bytes_per_step", "ZMTP-framed frontend_payload_bytes"),
    ("frontend_messages_per_step", "frontend_payload_bytes > 0"),
])
def test_a_figure_typed_over_leaves_the_case_out(fe_run, tmp_path, figure, words):
    run = shutil.copytree(fe_run, tmp_path / "run")
    summary = json.loads((run / "summary.json").read_text())
    want = summary["cases"][0][figure]
    summary["cases"][0][figure] = want * 2 + 1
    (run / "summary.json").write_text(json.dumps(summary))
    res, lines = _loaded(run)
    assert lines == [f"{run}/frontend.csv: case {SEND!r} has a mean {words} of {want:,.6g} "
                     f"over its 20 counted rows, but summary.json has {figure} "
                     f"{want * 2 + 1:,.6g} (left out)"]
    assert list(res.cases["case_id"]) == [CACHED]
