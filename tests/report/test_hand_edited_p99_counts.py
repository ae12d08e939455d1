"""The counts each p99 is over (``ttft_count``, ``tpot_count``, ``itl_count``,
``e2e_count``, ``runner_gap_count``: the report's p99 notes read them), hand-edited in
``summary.json`` to a text, a fraction or a negative number: the case is left out with
one warning naming the field, as for the other known numeric fields, where the report
read them with ``int()``."""

from __future__ import annotations

import json
import shutil

import pytest

from ipc_bench import cli

SEND = "num_running=4/send/msgpack#0"


@pytest.fixture(scope="module")
def good_run(tmp_path_factory, shared_two_case_run):
    """A real run of two cases (send, then cached): a copy of the session's
    (``shared_two_case_run``), the module's own."""
    run = tmp_path_factory.mktemp("edited") / "good"
    shutil.copytree(shared_two_case_run, run)
    return run


def test_a_run_records_the_count_of_its_runner_gaps(good_run):
    cases = json.loads((good_run / "summary.json").read_text())["cases"]
    assert [c["runner_gap_count"] for c in cases] == [20, 20]


@pytest.mark.parametrize("key, value, why", [
    ("runner_gap_count", "20", '"20", not a number'),
    ("runner_gap_count", 19.5, "19.5, not a whole number"),
    ("ttft_count", -3, "-3, a negative number"),
    ("tpot_count", "many", '"many", not a number'),
    ("itl_count", 2.25, "2.25, not a whole number"),
    ("e2e_count", 1e300, "1e+300, more than 1e+15"),
])
def test_a_count_of_the_wrong_kind_leaves_its_case_out(good_run, tmp_path, capsys, key,
                                                       value, why):
    run = tmp_path / "run"
    shutil.copytree(good_run, run)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["cases"][0]["case_id"] == SEND
    summary["cases"][0][key] = value
    (run / "summary.json").write_text(json.dumps(summary))
    line = f"{run / 'summary.json'}: case '{SEND}' has {key} {why} (left out)"

    code = cli.main(["report", str(run), "--output", str(tmp_path / "rep"), "--no-figures"])
    assert code == 0
    assert capsys.readouterr().err.splitlines() == [f"bench.py report: warning: {line}"]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| 0 | cached | msgpack |" in md
    assert "| 0 | send | msgpack |" not in md
