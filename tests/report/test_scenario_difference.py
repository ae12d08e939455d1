"""The Runs section names each run's scenario where they differ, and says so where a
run's metadata records none (``blocks.environment_differences``)."""

from __future__ import annotations

from types import SimpleNamespace

from ipc_bench.report.blocks import environment_differences


def _results(metadata: dict) -> SimpleNamespace:
    return SimpleNamespace(run_ids=list(metadata), metadata=metadata)


def test_runs_of_other_scenarios_name_both():
    md = {"a": {"scenario": "decode-steady"}, "b": {"scenario": "soak"}}
    assert environment_differences(_results(md), "a") == [
        "b ran scenario 'soak', a ran 'decode-steady'"]


def test_a_run_whose_metadata_records_no_scenario_says_so_not_none():
    md = {"a": {"scenario": "decode-steady"}, "b": {}}
    assert environment_differences(_results(md), "a") == [
        "b ran a scenario its metadata does not record, a ran 'decode-steady'"]
