"""notebooks/analysis.ipynb draws the two arms of one policy apart, as the report does: on
an ``--aa`` run (send and send') and an ``--async-scheduling`` run (cached and
cached+async) its figures are the report's PNG files byte for byte and its findings the
report's lines (it drew send + send' as one bar labelled send, their mean); on a ``--tp``
run it draws the report's two tensor-parallel figures too (it drew neither)."""

from __future__ import annotations

import base64
import hashlib
import os

import pytest

from analysis_run import bench_in_process, run_bench
from notebook_run import NOTEBOOK, needs_jupyter

nbformat, nbclient = needs_jupyter()

#: A small run of one policy's two arms: 4 running, 30 counted steps, msgpack alone.
SMALL = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "30",
         "--warmup-steps", "3", "--codecs", "msgpack", "--no-floor", "--no-single-process"]


#: The figures the report of each run draws, in its order.
ARMS_FIGURES = ["bytes_per_step", "codec_time_per_step", "throughput", "step_breakdown"]


@pytest.mark.parametrize("args, figures", [
    (SMALL + ["--aa", "--policies", "send", "--repeat", "2"], ARMS_FIGURES),
    (SMALL + ["--async-scheduling"], ARMS_FIGURES),
    (["--scenario", "tp-broadcast", "--tp", "1,2", "--num-running", "4", "--steps", "20",
      "--warmup-steps", "3", "--codecs", "msgpack"],
     ["bytes_per_step", "tp_saving", "tp_per_step"]),
], ids=["aa", "async", "tp"])
def test_the_notebooks_figures_and_findings_are_the_reports(args, figures, tmp_path):
    from ipc_bench.report import plots

    run_dir = tmp_path / "run"
    saved = os.sched_getaffinity(0)
    if "tp-broadcast" in args:  # one CPU: every N's times withheld on any machine
        os.sched_setaffinity(0, sorted(saved)[:1])
    try:
        run_bench(run_dir, args)
    finally:
        os.sched_setaffinity(0, saved)
    report = tmp_path / "report"
    proc = bench_in_process(["report", str(run_dir), "--output", str(report)])  # cli.main
    assert proc.returncode == 0, proc.stderr
    names = [name for name, _, _ in plots.FIGURES if (report / f"{name}.png").is_file()]
    assert names == figures

    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells[0].source = f"RESULTS = {str(run_dir)!r}"
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=180,
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    shown = [hashlib.sha256(base64.b64decode(o["data"]["image/png"])).hexdigest()
             for o in outputs if "image/png" in o.get("data", {})]
    assert shown == [hashlib.sha256((report / f"{name}.png").read_bytes()).hexdigest()
                     for name in names]
    text = (report / "report.md").read_text()
    lines = [line for o in outputs if "text/markdown" in o.get("data", {})
             for line in o["data"]["text/markdown"].splitlines()]
    assert lines and [line for line in lines if line not in text] == []


def test_the_notebook_shows_every_figure_the_report_draws():
    """Each figure function of ``plots.FIGURES`` (the report's per-run figures) is shown
    by one of the notebook's code cells, so that a figure added to the report is not
    missing from the notebook that claims to draw the report's figures."""
    from ipc_bench.report import plots

    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert [fn.__name__ for _, fn, _ in plots.FIGURES
            if f"plots.{fn.__name__}," not in code] == []
