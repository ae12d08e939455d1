"""A run SIGKILLed after ``summary.json.PID.tmp`` was written whole but before it
replaced ``summary.json``: the loader reads the leftover, newer and whole, in its place
with one warning line (``results.leftover_summary``); a leftover of a live process,
one older than ``summary.json`` or one cut short is not read."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from ipc_bench.analysis import results
from ipc_bench.analysis.run_files import ResultsWarning

SEND = "num_running=2/send/msgpack#0"
CACHED = "num_running=2/cached/msgpack#0"


@pytest.fixture(scope="module")
def killed(tmp_path_factory) -> Path:
    """The folder of a 2-case run as SIGKILL leaves it after its first case was written
    and the summary listing it was written whole to ``summary.json.PID.tmp``, before
    the rename: ``summary.json`` still says the first case runs, none finished. PID is
    a process that ended."""
    from ipc_bench import cli
    from ipc_bench.harness import run_folder

    base = tmp_path_factory.mktemp("leftover")
    run, snapshot = base / "run", base / "snapshot"
    versions: list[str] = []
    real = run_folder.write_json_atomic

    def write_json_atomic(path, data):
        real(path, data)
        versions.append(Path(path).read_text())
        if len(versions) == 3:  # the first case written: the folder as it is then
            shutil.copytree(run, snapshot)

    mp = pytest.MonkeyPatch()
    mp.setattr(run_folder, "write_json_atomic", write_json_atomic)
    try:
        assert cli.main(["--scenario", "decode-steady", "--num-running", "2", "--steps", "50",
                         "--warmup-steps", "2", "--policies", "send,cached", "--codecs",
                         "msgpack", "--no-single-process", "--quiet", "--seed", "1",
                         "--output", str(run)]) == 0
    finally:
        mp.undo()
    assert [(json.loads(v)["running_case"], len(json.loads(v)["cases"]))
            for v in versions[1:3]] == [(SEND, 0), (None, 1)]
    ended = subprocess.Popen(["true"])
    ended.wait()
    (snapshot / "summary.json").write_text(versions[1])
    tmp = snapshot / f"summary.json.{ended.pid}.tmp"
    tmp.write_text(versions[2])
    st = os.stat(snapshot / "summary.json")
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    return snapshot


def _copy(killed: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of ``killed`` (times kept: ``copy2``) and its leftover's path."""
    run = tmp_path / "run"
    shutil.copytree(killed, run)
    return run, next(run.glob("summary.json.*.tmp"))


def _load(run: Path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = results.load(run)
    return res, [str(w.message) for w in caught if issubclass(w.category, ResultsWarning)]


def _started(run: Path) -> str:
    """When the run started as the status line says it (``2026-12-07 05:59:35 UTC``)."""
    start = json.loads((run / "summary.json").read_text())["metadata"]["start_time_utc"]
    return datetime.datetime.fromisoformat(start).strftime("%Y-%m-%d %H:%M:%S UTC")


def _pid(tmp: Path) -> int:
    return int(tmp.name.split(".")[2])


def test_a_whole_leftover_newer_than_summary_json_is_read_with_one_line(killed, tmp_path):
    run, tmp = _copy(killed, tmp_path)
    res, lines = _load(run)
    pid = _pid(tmp)
    assert lines[0] == (
        f"{run}: this run is incomplete: stopped without finishing its summary (killed, or "
        "summary.json could not be written: a full disk, say): no process holds its lock, "
        "no end was recorded, summary status incomplete, 1 of 2 cases recorded; 1 case "
        "loaded, finished")
    assert lines[1] == (
        f"{tmp} is read in place of summary.json, which it is newer than: the run (pid "
        f"{pid}, no longer running) wrote it whole but was stopped before it replaced "
        "summary.json")
    assert list(res.cases["case_id"]) == [SEND]
    assert list(res.finished().cases["case_id"]) == [SEND]
    assert len(res.steps) == 52
    assert tmp.exists() and json.loads((run / "summary.json").read_text())["cases"] == []


def test_the_report_of_the_killed_run_has_the_finished_case(killed, tmp_path, capsys):
    from ipc_bench import cli

    run, tmp = _copy(killed, tmp_path)
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        f"bench.py report: warning: {tmp} is read in place of summary.json, which it is "
        f"newer than: the run (pid {_pid(tmp)}, no longer running) wrote it whole but was "
        "stopped before it replaced summary.json")
    assert not any("report has no figures" in line for line in err)


@pytest.mark.parametrize("change", ["older", "live pid", "cut short"])
def test_a_leftover_not_known_whole_and_newest_is_not_read(change, killed, tmp_path):
    run, tmp = _copy(killed, tmp_path)
    if change == "older":
        os.utime(tmp, ns=(0, os.stat(run / "summary.json").st_mtime_ns - 1_000_000))
    elif change == "live pid":
        tmp = tmp.rename(run / f"summary.json.{os.getpid()}.tmp")
    else:
        text = tmp.read_text()
        mtime = os.stat(tmp).st_mtime_ns
        tmp.write_text(text[:len(text) // 2])
        os.utime(tmp, ns=(0, mtime))
    res, lines = _load(run)
    assert not any("is read in place of summary.json" in line for line in lines)
    assert (list(res.cases["case_id"]), len(res.steps)) == ([], 0)  # not listed: left out
    assert lines[0] == (
        f"{run}: this run is incomplete: stopped without finishing its summary (killed, or "
        "summary.json could not be written: a full disk, say): no process holds its lock, "
        f"no end was recorded, summary status incomplete, 0 of 2 cases recorded, last case "
        f"{SEND} running (the run started {_started(run)}); no case loaded; the case it was running is not loaded (Results.unfinished names it; "
        "Results.finished leaves it out)")


def test_a_leftover_of_a_run_that_holds_its_claim_is_not_read(killed, tmp_path):
    import fcntl

    run, tmp = _copy(killed, tmp_path)
    with open(run / ".claimed", "wb") as claim:
        fcntl.flock(claim, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert results.leftover_summary(run) is None
    assert results.leftover_summary(run).leftover.startswith(f"{tmp} is read in place")
