"""The title of a one-run report (``blocks.run_title``): the scenario the run's
metadata records; where that is missing or left out (not a text), the one every case
records; else the title without a scenario, never ``?``."""

from __future__ import annotations

import pandas as pd

from ipc_bench.report.blocks import run_title


def _cases(*scenarios) -> pd.DataFrame:
    return pd.DataFrame({"run_id": ["run"] * len(scenarios) + ["other"],
                         "scenario": list(scenarios) + ["step-time"]})


def test_the_metadata_scenario_titles_the_report():
    assert (run_title({"scenario": "pp"}, _cases("decode-steady"), "run")
            == "ipc-bench report: pp (`run`)")


def test_the_cases_scenario_where_the_metadata_has_none():
    cases = _cases("decode-steady", "decode-steady")
    assert run_title({}, cases, "run") == "ipc-bench report: decode-steady (`run`)"


def test_no_scenario_where_the_cases_differ_or_lack_one():
    for cases in (_cases("decode-steady", "step-time"), _cases("decode-steady", None),
                  _cases(), pd.DataFrame({"run_id": ["run"]})):
        assert run_title({}, cases, "run") == "ipc-bench report (`run`)"
