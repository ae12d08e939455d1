"""An error text quoted in a run's problems or a case's ``error`` that ends with its
own full stop (gloo's ``... Connection reset by peer.``) is embedded without it (no
``.;``, ``..`` or ``.)``) in ``bench.py report``'s warning and in report.md, and gloo's
line leaves the stage without it; a run none of whose cases finished is said to have
no figures in the report, as the report's note says, not that its figures cover the
cases it finished."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ipc_bench import cli
from ipc_bench.analysis.results import incomplete_run_line, without_full_stop
from ipc_bench.wire.pp import _gloo_line

SEND = "num_running=4/send/msgpack#0"
GLOO = ("stage 1: hidden states of step 8 from stage 0: Read error "
        "[127.0.0.1]:48876: Connection reset by peer")
ERROR = f"runner failed at step 8: {GLOO}"


def _failed(run: Path, where: Path) -> Path:
    """A copy of ``run`` that failed in its first case, with gloo's full stop, as a
    run before gloo's line dropped it recorded it; the second case never ran."""
    shutil.copytree(run, where)
    for csv in where.glob("*.csv"):
        lines = csv.read_text().splitlines(keepends=True)
        csv.write_text("".join(lines[:1] + [ln for ln in lines[1:]
                                            if ln.startswith(SEND + ",")]))
    path = where / "summary.json"
    summary = json.loads(path.read_text())
    summary["metadata"].pop("end_time_utc", None)
    summary.update(comparisons=[], byte_model=[], status="failed", running_case=None,
                   failed_case=SEND, problems=[f"{SEND}: {ERROR}."],
                   cases=[dict(summary["cases"][0], complete=False, error=f"{ERROR}.")])
    path.write_text(json.dumps(summary))
    return where


def test_the_report_embeds_the_quoted_error_without_its_full_stop(
        shared_two_case_run, tmp_path, capsys):
    run = _failed(shared_two_case_run, tmp_path / "failed")
    code = cli.main(["report", str(run), "--output", str(tmp_path / "rep"), "--no-figures"])
    assert (code, capsys.readouterr().err.splitlines()) == (0, [
        f"bench.py report: warning: {run}: this run failed: {SEND}: {ERROR}; 0 of its 2 "
        "cases finished: the report has no figures, findings or case tables of it"])
    md = (tmp_path / "rep" / "report.md").read_text()
    assert [ln for ln in md.splitlines() if "by peer" in ln] == [
        f"> **Note:** This run failed: {SEND}: {ERROR}. No case finished, so it has no "
        "figures, findings or case tables.",
        f"> **Note:** Left out of every finding, table and figure, as it did not finish: "
        f"`{SEND}` ({ERROR})."]


def test_gloos_line_leaves_its_full_stop():
    text = ("[../third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error "
            "[127.0.0.1]:48876: Connection reset by peer.")
    assert _gloo_line(RuntimeError(text)) == ("Read error [127.0.0.1]:48876: Connection "
                                              "reset by peer")


def test_only_one_full_stop_goes():
    assert [without_full_stop(t) for t in ["peer.", "peer. \n", "waited 30 s...", "a)"]] == [
        "peer", "peer", "waited 30 s...", "a)"]


def test_the_reports_tail_of_a_run_with_no_finished_case():
    from ipc_bench.analysis.results import REPORT_COVERS

    assert [incomplete_run_line("r", "failed", "x", n, 2, REPORT_COVERS)
            for n in (0, 1)] == [
        "r: this run failed: x; 0 of its 2 cases finished: the report has no figures, "
        "findings or case tables of it",
        "r: this run failed: x; 1 of its 2 cases finished: the report's figures cover the "
        "cases it finished"]
