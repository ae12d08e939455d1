"""A report of one run made while the run is still going goes beside the run folder
(``report-<UTC time>``), not into it, where it would stay stale ("still running (it
holds its lock)") after the run ends; once the run has ended, its report
goes into ``RUN_DIR/report`` again. A run holds its ``.claimed`` file locked until it
ends (``run_folder.run_in_progress``)."""

from __future__ import annotations

import os
import re
import signal

import pytest

from fault_helpers import bench, wait_for
from ipc_bench import cli
from ipc_bench.harness.run_folder import run_in_progress


def test_a_report_made_mid_run_is_not_left_in_the_run_folder(tmp_path, bench_tmpdir, capsys):
    run = tmp_path / "run"
    proc = bench(["--scenario", "decode-steady", "--num-running", "4", "--steps", "300000",
                  "--codecs", "msgpack", "--policies", "send", "--no-floor",
                  "--no-single-process", "--output", str(run)],
                 env=dict(os.environ, TMPDIR=str(bench_tmpdir)))
    try:
        wait_for(lambda: (run / "steps.partial.csv").exists(), what="first flush", proc=proc)
        assert run_in_progress(run)
        assert cli.main(["report", str(run), "--no-figures"]) == 0
        out, err = capsys.readouterr()
        assert err == (f"bench.py report: warning: {run} is still running: the report covers "
                       "the cases it had recorded; run it again once the run ends\n")
        line = out.strip()
        match = re.fullmatch(rf"report: {re.escape(str(tmp_path))}/(report-\d{{8}}-\d{{6}})"
                             r"/report\.html", line)
        assert match, line
        assert sorted(p.name for p in (tmp_path / match.group(1)).iterdir()) == [
            "report.html", "report.md", "run.summary.json"]
        md = (tmp_path / match.group(1) / "report.md").read_text()
        # it holds its lock: running, not killed
        assert re.search(r"This run is incomplete: still running \(it holds its lock\): no "
                         r"end was recorded, summary status incomplete, 0 of 1 cases "
                         r"recorded, last case num_running=4/send/msgpack#0 running \(the run "
                         r"started ",
                         md), md
        assert not (run / "report").exists()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert not run_in_progress(run)  # ended (interrupted): its report goes into it
    assert cli.main(["report", str(run), "--no-figures"]) == 0
    # not complete (interrupted): one warning line, as microbench's
    assert capsys.readouterr() == (
        f"report: {run}/report/report.html\n",
        f"bench.py report: warning: {run}: this run is incomplete: "
        "num_running=4/send/msgpack#0: interrupted by SIGINT; 0 of its 1 case finished: "
        "the report has no figures, findings or case tables of it\n")
    assert "still running" not in (run / "report" / "report.md").read_text()


def test_two_reports_of_one_second_get_two_folders(tmp_path):
    """A stamped report folder is claimed with one mkdir: a second report started in
    the same second (the same name) gets ``-2``, and the first one's is never
    replaced."""
    from ipc_bench.report.document import claim_folder

    name = tmp_path / "report-20261203-225638"
    assert claim_folder(name) == name
    assert claim_folder(name) == tmp_path / "report-20261203-225638-2"
    assert claim_folder(name) == tmp_path / "report-20261203-225638-3"
    with pytest.raises(FileExistsError):
        claim_folder(name, most=3)
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError):  # not taken: a reason of its own
        claim_folder(tmp_path / "file" / "report-20261203-225638")


def _all_listed_not_ended(run, where):
    """A copy of ``run`` as ``bench.py`` leaves it between its last case's summary and
    its end: every case listed, status incomplete, no end, a ``.claimed`` file."""
    import json
    import shutil

    shutil.copytree(run, where)
    summary = json.loads((where / "summary.json").read_text())
    summary["status"] = "incomplete"
    summary["metadata"].pop("end_time_utc")
    (where / "summary.json").write_text(json.dumps(summary))
    (where / ".claimed").touch()
    return where


def test_a_complete_run_still_holding_its_lock_is_reported_in_its_folder(
        shared_small_run, tmp_path, capsys):
    """The run writes its complete summary, then drops its lock: a report made between
    the two covers a complete run, so it goes into the run folder, with no warning."""
    import fcntl
    import shutil

    run = shutil.copytree(shared_small_run, tmp_path / "run")
    (run / ".claimed").touch()
    with open(run / ".claimed", "rb") as claim:
        fcntl.flock(claim, fcntl.LOCK_EX)
        assert run_in_progress(run)
        assert cli.main(["report", str(run), "--no-figures"]) == 0
    assert capsys.readouterr() == (f"report: {run}/report/report.html\n", "")
    assert "still running" not in (run / "report" / "report.md").read_text()


def test_a_run_read_as_running_is_reported_beside_it_though_it_ends_after(
        shared_small_run, tmp_path, monkeypatch, capsys):
    """A run read as still going (its lock held as it was read) that ends before the
    report's folder is chosen: the report says it is running, so it goes beside the
    run folder, and the command says so, as for a run still going when it ends."""
    from ipc_bench.analysis import results

    run = _all_listed_not_ended(shared_small_run, tmp_path / "run")
    monkeypatch.setattr(results, "run_in_progress", lambda run_dir: True)
    assert not run_in_progress(run)  # ended by the time the folder is chosen
    assert cli.main(["report", str(run), "--no-figures"]) == 0
    out, err = capsys.readouterr()
    assert err == (f"bench.py report: warning: {run} is still running: the report covers "
                   "the cases it had recorded; run it again once the run ends\n")
    match = re.fullmatch(rf"report: {re.escape(str(tmp_path))}/(report-\d{{8}}-\d{{6}})"
                         r"/report\.html", out.strip())
    assert match, out
    assert "This run is incomplete: still running (it holds its lock)" in (
        tmp_path / match.group(1) / "report.md").read_text()
    assert not (run / "report").exists()
