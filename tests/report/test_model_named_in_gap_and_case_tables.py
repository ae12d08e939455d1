"""The runner-gap tables (the terminal's and the report's) and the terminal's case
tables named the codec alone (``msgpack``) where the report's other tables name the
model after it (``msgpack, emulated model``, ``tables.model_words``): a quoted row did
not say an emulated model made its steps. They name it the same way, in the same
columns; a null model's rows stay as they were."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from ipc_bench.report.blocks import _gap_blocks
from ipc_bench.report.tables import _table, runner_gap_lines


def _case(model: str, policy: str = "send") -> dict:
    return dict(policy=policy, codec="msgpack", transport="ipc", model=model,
                repetition=0, runner_gap_ns_median=12_000.0, runner_gap_ns_p99=30_000.0,
                runner_gap_share_median=0.05, runner_gap_share_p99=0.125,
                runner_step_ns_median=240_000.0, num_steps=1000, workload="num_running=16")


def test_the_terminal_runner_gap_table_names_the_model():
    lines = runner_gap_lines([_case("emulated"), _case("null", "cached")])
    assert lines[1:5] == [
        "  policy  codec                    transport  scheduling  gap us p50  gap us p99  "
        "gap % p50  gap % p99  runner step us p50",
        "  ------  -----------------------  ---------  ----------  ----------  ----------  "
        "---------  ---------  ------------------",
        "  send    msgpack, emulated model  ipc        sync              12.0        30.0  "
        "     5.00       12.5               240.0",
        "  cached  msgpack                  ipc        sync              12.0        30.0  "
        "     5.00       12.5               240.0"]


def test_the_report_runner_gap_table_names_the_model():
    results = SimpleNamespace(cases=pd.DataFrame([_case("emulated"), _case("fixed-step")]))
    table = _gap_blocks(results, 2)[1]
    assert table[1][:6] == ["rep", "workload", "policy", "codec", "transport", "scheduling"]
    assert [row[:6] for row in table[2]] == [
        ["0", "num_running=16", "send", "msgpack, emulated model", "ipc", "sync"],
        ["0", "num_running=16", "send", "msgpack, fixed-step model", "ipc", "sync"]]


def test_the_terminal_case_table_names_the_model():
    lines = _table(("policy", "codec", "transport"),
                   [_case("emulated"), _case("null", "cached")]).splitlines()
    assert lines == ["policy  codec                    transport",
                     "------  -----------------------  ---------",
                     "send    msgpack, emulated model  ipc      ",
                     "cached  msgpack                  ipc      "]
