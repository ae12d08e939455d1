"""notebooks/analysis.ipynb's tables leave out the timings of a ``--tp`` / ``--pp``
case with fewer than N + 2 free cores, as the report's tables and figures do
(``analysis.cores``): its cases table keeps the bytes, blanks the timings (NaN) and
marks the codec ``*`` with the report's footnote under it, and its step-time table
leaves the case's steps out, saying why (both printed the raw times, unmarked). Only
the cells that load the runs and draw those two tables run, to keep it cheap."""

from __future__ import annotations

import csv
import io
import json

from analysis_run import run_bench
from notebook_run import NOTEBOOK, needs_jupyter

nbformat, nbclient = needs_jupyter()
#: Two ranks at most, every process on CPU 0: the harness sees 1 core, so every
#: case's timings are withheld, on any machine.
TP_ARGS = ["--scenario", "tp-broadcast", "--tp", "1,2", "--tp-transports", "ipc",
           "--cpu-affinity", "0,0,0", "--num-running", "4", "--steps", "20",
           "--warmup-steps", "3", "--codecs", "msgpack"]
FOOTNOTE = ("* timings left out: N ranks need N + 2 free cores, one each for them and the "
            "scheduler, a spare for the kernel and the harness's threads (N = 1 needs 3, "
            "N = 2 needs 4; on exactly 2, N = 1 is shown marked °); the run's machine "
            "had 1. Bytes and the oracles hold.")
TIMINGS = ["output_tokens_per_s", "encode_ns_per_step", "decode_ns_per_step", "step_ns_mean"]
BYTES = ["sched_to_runner_payload_bytes_per_step", "runner_to_sched_payload_bytes_per_step"]


def _cell(nb, marker: str):
    return next(c for c in nb.cells if c.cell_type == "code" and marker in c.source)


def test_the_tables_withhold_the_timings_the_report_withholds(tmp_path, shared_two_case_run):
    tp = tmp_path / "tp"
    run_bench(tp, TP_ARGS)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells[0].source = f"RESULTS = {[str(tp), str(shared_two_case_run)]!r}"
    cases, steps = _cell(nb, "model_cell("), _cell(nb, ".describe(")
    # the table the cell shows (the whole of cases' columns where the cell names none)
    dump = nbformat.v4.new_code_cell(
        'print(globals().get("table", cases[[c for c in columns if c in cases.columns]])'
        '.to_csv(index=False))')
    kept = nbformat.v4.new_code_cell('print(sorted(set(counted["run_id"])))')
    nb.cells = [nb.cells[0], _cell(nb, "def show("), _cell(nb, "res = load("), cases, dump,
                steps, kept]
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=180,
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    assert [o.text for o in cases.outputs if o.output_type == "stream"] == [FOOTNOTE + "\n"]
    rows = list(csv.DictReader(io.StringIO(dump.outputs[0].text)))
    summary = json.loads((tp / "summary.json").read_text())["cases"]
    other = shared_two_case_run.name
    assert [r["run_id"] for r in rows] == ["tp"] * 4 + [other] * 2
    for row, case in zip(rows[:4], summary):
        assert row["codec"] == "msgpack*"
        assert [row[k] for k in TIMINGS] == [""] * 4  # NaN
        assert [float(row[k]) for k in BYTES] == [case[k] for k in BYTES]
    for row in rows[4:]:  # a case with its timings: unmarked, every timing shown
        assert row["codec"] == "msgpack" and all(float(row[k]) > 0 for k in TIMINGS)
    assert [o.text for o in steps.outputs if o.output_type == "stream"] == [
        FOOTNOTE.replace("* timings left out", "left out: the step times of 4 cases", 1)
        + "\n"]
    assert len([o for o in steps.outputs if "text/html" in o.get("data", {})]) == 1
    assert kept.outputs[0].text == f"{[other]}\n"  # the tp run's steps left out
