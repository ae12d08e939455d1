"""``python bench.py report RUN_DIR [RUN_DIR ...] [--output DIR]``: a report of runs.

Writes ``report.md`` and ``report.html`` (self-contained: the figures are embedded
as base64 PNG, so the file reads offline and can be mailed alone), the figures as
PNG files beside them, and a copy of each run's ``summary.json``
(``<run_id>.summary.json``) so a reader can check every number. Contents: findings
stated as numbers (with 95 % intervals when the run has repetitions), the figures
of ``ipc_bench.report.plots`` (a figure whose data the run lacks is replaced by a line
saying what is missing), per-case tables, the configuration and the environment.
With two or more runs the report starts with a side-by-side comparison and warns
when their environments differ (``ipc_bench.harness.environment.compare_metadata``).

Default output folder: ``RUN_DIR/report`` for one run; ``report-<UTC time>`` beside
the first run for several. Bad input (a missing folder, not a run folder, an
unsupported result format) is one line on stderr and exit code 2. Everything is
rendered before the first file is written, and the files are written with SIGINT /
SIGTERM / SIGHUP deferred (``ipc_bench.harness.signals``): an interrupted report
writes nothing or all of it.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Optional, Sequence

from ipc_bench.analysis.results import ResultsError, check_run_dir
from ipc_bench.harness.signals import deferred
from ipc_bench.report.blocks import build_blocks, file_slug
from ipc_bench.report.render import render_html, render_markdown


def write_report(run_dirs: Sequence[str], output: Optional[str] = None,
                 command: Optional[str] = None) -> Path:
    """Load ``run_dirs``, write the report into ``output`` (see the module docstring)
    and return the folder. Raises ``ResultsError`` (one line) on bad input and
    ``OSError`` when the output folder cannot be written."""
    from ipc_bench.analysis.results import load

    dirs = [check_run_dir(d) for d in run_dirs]
    results = load(dirs)
    if output:
        out = Path(output)
    elif len(dirs) == 1:
        out = dirs[0] / "report"
    else:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        out = dirs[0].resolve().parent / f"report-{stamp}"
    if out.exists() and not out.is_dir():
        raise ResultsError(f"{out}: exists and is not a folder")
    command = command or "python bench.py report " + " ".join(str(d) for d in run_dirs)
    blocks = build_blocks(results, command)
    title = next((b[2] for b in blocks if b[0] == "h"), "ipc-bench report")
    markdown, html = render_markdown(blocks), render_html(blocks, title)
    from ipc_bench.report.plots import FIGURES

    names = tuple(f"{n}.png" for n, *_ in FIGURES) + ("compare-throughput.png",)
    with deferred():
        out.mkdir(parents=True, exist_ok=True)
        for old in out.glob("*.png"):  # figures of an earlier render that may be gone now
            if old.name.endswith(names):
                old.unlink()
        for b in blocks:
            if b[0] == "fig":
                (out / b[1]).write_bytes(b[4])
        (out / "report.md").write_text(markdown, encoding="utf-8")
        (out / "report.html").write_text(html, encoding="utf-8")
        for run_id, path in results.paths.items():
            shutil.copyfile(path / "summary.json", out / f"{file_slug(run_id)}.summary.json")
    return out
