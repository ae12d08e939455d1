"""``bench.py report`` on a folder that is no run folder refuses it in one line without
importing matplotlib, pandas or scipy (``document._libraries``, imported once the
run folders are checked): the refusal took over a second, most of it those imports.
A report with ``--no-figures`` imports no matplotlib either."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: The libraries a report of a run needs and a refused folder does not.
HEAVY = {"matplotlib", "pandas", "scipy"}


def _imported(stderr: str) -> tuple[set[str], list[str]]:
    """The top-level packages ``-X importtime`` lists in ``stderr``, and its other
    lines."""
    modules, rest = set(), []
    for line in stderr.splitlines():
        if line.startswith("import time:"):
            name = line.split("|")[-1].strip()
            if name != "imported package":
                modules.add(name.split(".")[0])
        else:
            rest.append(line)
    return modules, rest


def _report(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-X", "importtime", "bench.py", "report", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=120)


def test_an_empty_folder_is_refused_without_the_libraries(tmp_path):
    proc = _report(str(tmp_path))
    modules, lines = _imported(proc.stderr)
    assert (proc.returncode, proc.stdout, lines) == (
        2, "", [f"bench.py report: error: {tmp_path}: not a run folder (no summary.json)"])
    assert "ipc_bench" in modules  # the listing is read
    assert modules & HEAVY == set()


def test_a_folder_of_rendered_reports_is_refused_without_the_libraries(tmp_path):
    published = tmp_path / "published"
    (published / "azure-conv").mkdir(parents=True)
    shutil.copy(REPO / "results" / "published" / "azure-conv" / "report.md",
                published / "azure-conv")
    proc = _report(str(published))
    modules, lines = _imported(proc.stderr)
    assert (proc.returncode, proc.stdout, lines) == (
        2, "", [f"bench.py report: error: {published}: not a run folder (no summary.json); "
                f"it holds a folder of a rendered report: read it, {published}/azure-conv/"
                "report.md, or report the run folders it was made from"])
    assert modules & HEAVY == set()


@pytest.mark.parametrize("figures", [False, True])
def test_a_report_imports_matplotlib_for_its_figures_alone(shared_two_case_run, tmp_path,
                                                          figures):
    out = tmp_path / "rep"
    proc = _report(str(shared_two_case_run), "--output", str(out),
                   *([] if figures else ["--no-figures"]))
    modules, lines = _imported(proc.stderr)
    assert (proc.returncode, proc.stdout, lines) == (0, f"report: {out}/report.html\n", [])
    assert modules & HEAVY == ({"matplotlib", "pandas", "scipy"} if figures
                               else {"pandas", "scipy"})
    assert (out / "report.html").is_file()
