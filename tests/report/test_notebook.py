"""notebooks/analysis.ipynb: committed clean, and runs end to end on a small real run and
on a run killed in its first case (no case recorded, header-only CSV files) and on
one whose steps.csv holds a value that is not a number."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis_run import REPO, copy_as_another_run
from fault_helpers import one_runner_mark
from notebook_run import NOTEBOOK, needs_jupyter

nbformat, nbclient = needs_jupyter()


@pytest.fixture(scope="module")
def small_run(shared_small_run):
    """The session's small run (conftest ``shared_small_run``); each test works on its
    own copy (``_copy``)."""
    return shared_small_run


def _copy(small_run, path):
    """The module's small run copied, unchanged, to ``path`` (its name is the run's
    name); returns ``path``."""
    shutil.copytree(small_run, path)
    return path


def test_notebook_is_committed_clean():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    first = nb.cells[0]
    assert first.cell_type == "code" and "parameters" in first.metadata.get("tags", [])
    assert first.source.splitlines()[-1].startswith("RESULTS = ")
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    # nbformat 4.5 wants an id on every cell (nbformat warns of one without, and will refuse it)
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    ids = [cell.get("id") for cell in cells]
    assert all(ids) and len(set(ids)) == len(ids)


def test_notebook_analyses_every_run_given(small_run, tmp_path):
    """Given two runs, every section shows each of them under its name (it showed the
    first alone), and the throughput figure shows both side by side."""
    run_dir = _copy(small_run, tmp_path / "nb-run")
    copy = copy_as_another_run(run_dir, tmp_path / "nb-copy")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells[0].source = f"RESULTS = {[str(run_dir), str(copy)]!r}"
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=180,
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()  # raises CellExecutionError on any failing cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    markdown = [o["data"]["text/markdown"] for o in outputs if "text/markdown" in o.get("data", {})]
    headings = [m for m in markdown if m.startswith("**Run ")]
    # findings, bytes, codec time, step breakdown, send cost share, latency CDFs, --tp
    assert headings == ["**Run `nb-run`**", "**Run `nb-copy`**"] * 7
    # every figure of each run but the latency CDFs, and one throughput figure of both
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2 * 4 + 1
    text = "\n".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "runs: nb-run (complete), nb-copy (complete)" in text
    assert "\nnb-run:\nscenario: decode-steady" in text and "\nnb-copy:\nscenario: decode-steady" in text
    assert text.count("not shown: no per-request latencies") == 2
    assert text.count("not shown: no tensor-parallel cases (scenario tp-broadcast)") == 2
    findings = [m for m in markdown
                if f"At 16 running requests (msgpack{one_runner_mark()}), cached sends" in m]
    assert len(findings) == 2
    tables = [o["data"]["text/plain"] for o in outputs if "text/html" in o.get("data", {})]
    assert sum("nb-copy" in t and "nb-run" in t for t in tables) == 2  # cases, step times


def _execute(run_dir):
    """The notebook executed on ``run_dir``: its code cells' outputs."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells[0].source = f"RESULTS = {str(run_dir)!r}"
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=180,
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()  # raises CellExecutionError on any failing cell
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


def test_notebook_runs_on_a_run_killed_in_its_first_case(small_run, tmp_path):
    # What a SIGKILLed bench.py leaves while its first case runs: summary.json naming
    # the running case and no case, every CSV file its header line alone, the case's
    # rows so far in steps.partial.csv.
    run_dir = _copy(small_run, tmp_path / "killed")
    summary = json.loads((run_dir / "summary.json").read_text())
    first = summary["metadata"]["cases"][0]["case_id"]
    summary.update(status="incomplete", cases=[], comparisons=[], byte_model=[],
                   running_case=first)
    (run_dir / "summary.json").write_text(json.dumps(summary))
    steps = (run_dir / "steps.csv").read_text().splitlines(keepends=True)
    (run_dir / "steps.partial.csv").write_text("".join(steps[:30]))
    for name in ("steps.csv", "requests.csv", "floor.csv", "itl.csv"):
        path = run_dir / name
        path.write_text(path.read_text().splitlines(keepends=True)[0])
    outputs = _execute(run_dir)
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if "image/png" in o.get("data", {})]
    text = "\n".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "runs: killed (incomplete)" in text
    assert "steps: 0 | counted: 0 | requests: 0" in text
    assert "no finished case in this run" in text
    assert "not shown: no per-step records of a finished case in this run" in text
    assert "not shown: no counted steps of a finished case in this run" in text
    markdown = [o["data"]["text/markdown"] for o in outputs
                if "text/markdown" in o.get("data", {})]
    assert markdown == ["- None: no case finished."]


def test_notebook_runs_on_a_steps_file_with_a_value_that_is_not_a_number(small_run, tmp_path):
    run_dir = _copy(small_run, tmp_path / "edited")
    steps = run_dir / "steps.csv"
    lines = steps.read_text().splitlines(keepends=True)
    names = lines[0].rstrip("\r\n").split(",")
    fields = lines[5].rstrip("\r\n").split(",")
    fields[names.index("step_ns")] = "abc"
    lines[5] = ",".join(fields) + "\r\n"
    steps.write_text("".join(lines))
    outputs = _execute(run_dir)
    assert not [o for o in outputs if o.output_type == "error"]
    text = "\n".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert (f"{steps}: 1 row holds a value that is not a number (in step_ns; left out)"
            in text)


def test_notebook_keeps_arms_apart_and_reads_relative_paths_from_notebooks(tmp_path):
    """An ``--aa`` run, given relative to notebooks/ while the kernel starts in the
    repository root (as papermill starts it there): send and send' have a row each
    in the cases and the step-time tables, not one pooled row of both."""
    import os

    from analysis_run import run_bench

    run_dir = tmp_path / "aa"
    run_bench(run_dir, ["--scenario", "decode-steady", "--num-running", "4", "--steps",
                        "30", "--warmup-steps", "3", "--codecs", "msgpack", "--aa",
                        "--no-floor", "--no-single-process"])
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells[0].source = f"RESULTS = {os.path.relpath(run_dir, NOTEBOOK.parent)!r}"
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=180,
                                     resources={"metadata": {"path": str(REPO)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    tables = [o["data"]["text/plain"] for o in outputs if "text/html" in o.get("data", {})]
    step_times = next(t for t in tables if "count" in t and "99%" in t)
    rows = [line.split() for line in step_times.splitlines()[2:]]
    assert [(r[-10], r[-8]) for r in rows] == [("send", "30.0"), ("send'", "30.0")]
    cases = next(t for t in tables if "output_tokens_per_s" in t)
    assert "send'" in cases


def test_notebook_says_in_one_line_why_a_folder_does_not_load(tmp_path):
    """A folder ``load`` refuses stops the notebook at its load cell with the loader's
    reason as the error, not a traceback through the loader."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells[0].source = f"RESULTS = {str(tmp_path / 'missing')!r}"
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=180,
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    with pytest.raises(nbclient.exceptions.CellExecutionError):
        client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert [(e.ename, e.evalue) for e in errors] == [
        ("SystemExit", f"cannot load the run: {tmp_path / 'missing'}: no such folder")]
    assert not any("results.py" in line for line in errors[0].traceback)


def test_the_share_section_says_what_it_draws():
    """The send-cost section names both shares the figure draws (the SchedulerOutput
    path's, the findings' headline, and the whole step's) and the interval as
    docs/comparisons.md gives it, not the difference's interval over the step that
    earlier versions drew."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    [text] = [c.source for c in nb.cells if c.cell_type == "markdown"
              and c.source.startswith("## What send costs as a share of the step")]
    text = " ".join(text.split())
    assert ("hollow markers on thin lines, send's SchedulerOutput path (build + encode + "
            "decode) − cached's, the share the findings headline; filled markers on thick "
            "lines, the whole step's, send's median step − cached's, which holds the path "
            "and whatever else differs between the steps, and is noisier; each codec keeps "
            "its line style and marker, as in the other figures (msgpack solid with "
            "diamonds, pickle dashed with triangles down).") in text
    assert ("with the ratio estimator's 95 % interval for paired samples (under `sign`, "
            "the sign-test interval of the per-pair shares; under `bootstrap`, the "
            "percentile interval of the pairs resampled together; none with fewer pairs "
            "than the method needs): it carries cached's step noise as well as the "
            "difference's, not the difference's interval over the mean step that earlier "
            "versions drew (`docs/comparisons.md`, share intervals).") in text
    assert "with that difference's 95 % interval over the same step" not in text
    # the figure the section shows draws them so
    from ipc_bench.report import plots

    doc = " ".join(plots.send_cost_share.__doc__.split())
    assert ("filled markers on thick lines, the whole step's difference; hollow on thin, "
            "the SchedulerOutput's build + encode + decode alone") in doc
