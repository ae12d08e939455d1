"""A trace replay's stalled-step figures (``analysis.replay_stall``), each process's
garbage-collection figures and the counts each p99 is over (``ttft_count``,
``tpot_count``, ``itl_count``, ``e2e_count``, ``runner_gap_count``: the report's p99
notes read them), hand-edited in ``summary.json`` to a text, a fraction, a negative or
a huge number: the case is left out with one warning naming the field, as for the other
known numeric fields (``metadata_checks._NUMERIC_CASE_FIELDS``), by the report and by
``results.load`` alike."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest

from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning
from test_hand_edited_summary import good_run  # noqa: F401 (a module fixture)

SEND = "num_running=4/send/msgpack#0"


def test_a_run_records_the_count_of_its_runner_gaps(good_run):
    cases = json.loads((good_run / "summary.json").read_text())["cases"]
    assert [c["runner_gap_count"] for c in cases] == [20, 20]


@pytest.mark.parametrize("key, value, why", [
    ("stalled_steps", "3", '"3", not a number'),
    ("stalled_step_share", -0.25, "-0.25, a negative number"),
    ("stall_unjudged_steps", -1, "-1, a negative number"),
    ("stalled_step_ns_max", "slow", '"slow", not a number'),
    ("stalled_step_ns_max_seq", -7, "-7, a negative number"),
    ("stalled_step_ns_max_ratio", "12x", '"12x", not a number'),
    ("output_tokens_per_s_without_stalled", -5000, "-5000, a negative number"),
    ("step_ns_bin_ratio_max", "1.5", '"1.5", not a number'),
    ("sched_gc_ns_per_step", "1 ms", '"1 ms", not a number'),
    ("runner_gc_ns_per_step", -120.5, "-120.5, a negative number"),
    ("sched_gc_collections_per_step", "many", '"many", not a number'),
    ("runner_gc_collections_per_step", -2, "-2, a negative number"),
    ("runner_gap_count", "20", '"20", not a number'),
    ("runner_gap_count", 19.5, "19.5, not a whole number"),
    ("ttft_count", -3, "-3, a negative number"),
    ("tpot_count", "many", '"many", not a number'),
    ("itl_count", 2.25, "2.25, not a whole number"),
    ("e2e_count", 1e300, "1e+300, more than 1e+15"),
])
def test_a_stall_gc_or_count_figure_of_the_wrong_kind_leaves_its_case_out(
        good_run, tmp_path, capsys, key, value, why):
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

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        results = load([run])
    assert [str(w.message) for w in caught if issubclass(w.category, ResultsWarning)] == [line]
    assert list(results.cases["case_id"]) == ["num_running=4/cached/msgpack#0"]
