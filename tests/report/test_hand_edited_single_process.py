"""A hand-edited single-process case: the scheduler and the runner in one process
(``transport`` ``inproc``) send no message between them, so the harness writes none of
the scheduler <-> runner wire figures for it (``metadata_checks.TWO_PROCESS_WIRE_FIELDS``); one
typed into its ``summary.json`` entry leaves the case out with one warning naming the
folder, the case, the field and its value, in the report and in ``results.load``. Its
frontend hop's ``frontend_wire_bytes_per_step`` (``--frontend``: another process) is
its own and is kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from analysis_run import load_with_warnings, run_bench
from ipc_bench import cli
from ipc_bench.analysis.metadata_checks import TWO_PROCESS_WIRE_FIELDS

RUN = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
       "--warmup-steps", "2", "--codecs", "msgpack", "--policies", "send", "--frontend"]
TWO = "num_running=2/send/msgpack#0"
ONE = "num_running=2/send/none#0"


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    """A real run of two send cases, with a frontend: over ipc (with its floor), then
    in one process."""
    run = tmp_path_factory.mktemp("single") / "good"
    run_bench(run, RUN)
    return run


def _cases(run) -> dict[str, dict]:
    return {c["case_id"]: c for c in json.loads((run / "summary.json").read_text())["cases"]}


def _copy(good_run, tmp_path, fields) -> Path:
    """A copy of ``good_run`` whose single-process case's summary entry is updated with
    ``fields``."""
    run = tmp_path / "run"
    shutil.copytree(good_run, run)
    summary = json.loads((run / "summary.json").read_text())
    assert [c["case_id"] for c in summary["cases"]] == [TWO, ONE]
    summary["cases"][1].update(fields)
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def _loaded(run):
    """``results.load`` of ``run``: its warning lines and its ``cases``."""
    loaded, lines = load_with_warnings(run)
    return lines, loaded


def test_the_harness_writes_no_wire_figure_for_a_single_process_case(good_run):
    """The figures the loader refuses in a single-process case are those the harness
    writes for the two-process case alone; both cases have their frontend's."""
    two, one = _cases(good_run)[TWO], _cases(good_run)[ONE]
    assert (two["transport"], one["transport"], one["codec"]) == ("ipc", "inproc", "none")
    wired = {k for k in two if "wire_bytes" in k or k.startswith("zmtp_")}
    assert wired == ({"sched_to_runner_wire_bytes_per_step",
                      "runner_to_sched_wire_bytes_per_step", "s2r_wire_bytes_total",
                      "r2s_wire_bytes_total", "zmtp_handshake_bytes",
                      "control_plane_wire_bytes_per_step", "frontend_wire_bytes_per_step"})
    assert wired - {"frontend_wire_bytes_per_step"} <= set(TWO_PROCESS_WIRE_FIELDS)
    assert [k for k in one if "wire_bytes" in k or k.startswith("zmtp_")] == [
        "frontend_wire_bytes_per_step"]
    assert one["frontend_wire_bytes_per_step"] == two["frontend_wire_bytes_per_step"]
    lines, loaded = _loaded(good_run)
    assert lines == []
    assert list(loaded.cases["case_id"]) == [TWO, ONE]


@pytest.mark.parametrize("field, value, shown", [
    ("sched_to_runner_wire_bytes_per_step", 206.7, "206.7"),
    ("runner_to_sched_wire_bytes_per_step", 0, "0"),
    ("s2r_wire_bytes_total", 10150, "10150"),
    ("r2s_wire_bytes_total", 7874, "7874"),
    ("zmtp_handshake_bytes", {"PUSH": 92, "PULL": 92}, '{"PUSH": 92, "PULL": 92}'),
    ("control_plane_wire_bytes_per_step", 663.5, "663.5"),
    ("tp_s2r_wire_bytes_all_ranks_per_step", 413.4, "413.4"),
    ("pp_s2r_wire_bytes_all_stages_per_step", 413.4, "413.4"),
], ids=["s2r", "r2s-zero", "s2r-total", "r2s-total", "handshake", "control-plane", "tp",
        "pp"])
def test_a_wire_figure_typed_into_a_single_process_case_leaves_it_out(
        good_run, tmp_path, field, value, shown):
    run = _copy(good_run, tmp_path, {field: value})
    lines, loaded = _loaded(run)
    assert lines == [f"{run / 'summary.json'}: case '{ONE}' has {field} {shown}, but its "
                     "transport is \"inproc\" (one process: no scheduler <-> runner "
                     "wire) (left out)"]
    for table in (loaded.cases, loaded.steps, loaded.requests):
        assert set(table["case_id"]) == {TWO}


def test_the_report_says_the_single_process_case_left_out(good_run, tmp_path, capsys):
    """``bench.py report`` gives ``results.load``'s line, in its warnings and its
    notes (``--no-figures``: the figures of the case kept are those of a run without
    the single-process baseline)."""
    run = _copy(good_run, tmp_path, {"sched_to_runner_wire_bytes_per_step": 206.7})
    line = (f"{run / 'summary.json'}: case '{ONE}' has sched_to_runner_wire_bytes_per_step "
            "206.7, but its transport is \"inproc\" (one process: no scheduler <-> runner "
            "wire) (left out)")
    code = cli.main(["report", str(run), "--output", str(tmp_path / "rep"), "--no-figures"])
    assert code == 0
    assert capsys.readouterr().err.splitlines() == [f"bench.py report: warning: {line}"]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"> **Note:** Loading this run: {line}." in md


def test_a_null_wire_figure_of_a_single_process_case_is_kept(good_run, tmp_path):
    """null is no figure: the single-process case loads, without one."""
    run = _copy(good_run, tmp_path, {"sched_to_runner_wire_bytes_per_step": None,
                                     "r2s_wire_bytes_total": None})
    lines, loaded = _loaded(run)
    assert lines == []
    row = loaded.cases.set_index("case_id").loc[ONE]
    assert row["sched_to_runner_wire_bytes_per_step"] != row[
        "sched_to_runner_wire_bytes_per_step"]  # NaN
    assert row["frontend_wire_bytes_per_step"] == _cases(good_run)[ONE][
        "frontend_wire_bytes_per_step"]


def test_the_frontend_figure_of_a_two_process_case_relabelled_inproc_is_not_the_reason(
        good_run, tmp_path, capsys):
    """The two-process case relabelled ``inproc`` is left out for its first scheduler
    <-> runner wire figure, not for its frontend's."""
    run = tmp_path / "run"
    shutil.copytree(good_run, run)
    summary = json.loads((run / "summary.json").read_text())
    summary["cases"][0]["transport"] = "inproc"
    (run / "summary.json").write_text(json.dumps(summary))
    wire = _cases(good_run)[TWO]["sched_to_runner_wire_bytes_per_step"]
    lines, loaded = _loaded(run)
    assert lines == [f"{run / 'summary.json'}: case '{TWO}' has "
                     f"sched_to_runner_wire_bytes_per_step {json.dumps(wire)}, but its "
                     "transport is \"inproc\" (one process: no scheduler <-> runner wire) "
                     "(left out)"]
    assert list(loaded.cases["case_id"]) == [ONE]
