"""The ``ipc_bench_run_warning`` that ``bench.py microbench`` saves in every pyperf
file of a run that is not complete names the run by its absolute path
(``microbench.arm_metadata``), where it kept the path as typed: a run timed from its own
folder (``bench.py microbench .``) was saved as ``.: this run is incomplete: ...``,
which says nothing once the file is read elsewhere. The stderr line keeps the path as
typed (``microbench.incomplete_run_text``)."""

from __future__ import annotations

import json
import shutil

from ipc_bench.analysis import microbench


def test_the_saved_warning_names_the_run_by_its_absolute_path(shared_two_case_run, tmp_path,
                                                               monkeypatch):
    run = tmp_path / "killed"
    shutil.copytree(shared_two_case_run, run)
    summary = json.loads((run / "summary.json").read_text())
    summary.update(status="incomplete", problems=["stopped by hand"])
    (run / "summary.json").write_text(json.dumps(summary))
    monkeypatch.chdir(run)
    detail = "this run is incomplete: stopped by hand; 2 of its 2 cases finished: the " \
             "cases it did not finish are not timed"
    assert microbench.incomplete_run_text(".", summary) == f".: {detail}"
    meta = microbench.arm_metadata(".", "send")
    assert (meta["ipc_bench_run"], meta["ipc_bench_run_status"],
            meta["ipc_bench_run_warning"]) == ("killed", "incomplete", f"{run}: {detail}")
