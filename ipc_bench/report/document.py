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
unsupported result format) is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

from ipc_bench.analysis.results import ResultsError, check_run_dir
from ipc_bench.report.blocks import CAPTIONS, Block, file_slug, build_blocks
from ipc_bench.report.findings import findings
from ipc_bench.report.render import render_html, render_markdown

__all__ = ["CAPTIONS", "Block", "build_blocks", "findings", "main", "render_html",
           "render_markdown", "write_report"]


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
    out.mkdir(parents=True, exist_ok=True)
    from ipc_bench.report.plots import FIGURES

    names = tuple(f"{n}.png" for n, *_ in FIGURES) + ("compare-throughput.png",)
    for old in out.glob("*.png"):  # figures of an earlier render that may be gone now
        if old.name.endswith(names):
            old.unlink()
    for b in blocks:
        if b[0] == "fig":
            (out / b[1]).write_bytes(b[4])
    title = next((b[2] for b in blocks if b[0] == "h"), "ipc-bench report")
    (out / "report.md").write_text(render_markdown(blocks), encoding="utf-8")
    (out / "report.html").write_text(render_html(blocks, title), encoding="utf-8")
    for run_id, path in results.paths.items():
        shutil.copyfile(path / "summary.json", out / f"{file_slug(run_id)}.summary.json")
    return out


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise ResultsError(message)


def main(argv: Sequence[str]) -> int:
    """``bench.py report`` entry point; returns the exit code (0, or 2 on bad input)."""
    p = _Parser(prog="bench.py report", description=(
        "Render run folders into report.md and a self-contained report.html with "
        "figures (PNG beside them), findings, tables, configuration and environment; "
        "two or more runs are compared side by side."))
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run folder(s)")
    p.add_argument("--output", metavar="DIR",
                   help="report folder (default: RUN_DIR/report, or report-<time> beside "
                        "the first run for several)")
    try:
        args = p.parse_args(list(argv))
        out = write_report(args.run_dirs, args.output,
                           command="python bench.py report " + " ".join(argv))
    except ResultsError as exc:
        print(f"bench.py report: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"bench.py report: error: cannot write the report: {exc}", file=sys.stderr)
        return 2
    print(f"report: {out / 'report.html'}")
    return 0
