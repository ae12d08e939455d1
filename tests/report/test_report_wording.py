"""The words around the report's numbers: the floor finding and note of a model that
waits or computes say that ``x floor`` includes its step, a timed replay's tokens/s says
it is over wall time, and the report says why floor columns are empty and what each column
is."""

from __future__ import annotations

import pandas as pd

from ipc_bench.report import findings
from test_metrics import _summary


def _cases(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([dict(r, run_id="run") for r in rows])


def _where(workload: str) -> str:
    return "At 4 running requests"


def test_the_floor_finding_of_a_fixed_step_run_says_the_ratio_includes_the_model():
    cases = pd.DataFrame({"step_to_floor_ratio": [18.62, 20.88], "model": "fixed-step",
                          "fixed_step_ms": 2.0})
    assert findings._floor_findings(cases) == [
        "The measured steps take 18.62x to 20.88x the floor (the same recorded messages "
        "exchanged bare) across both cases; they include the fixed-step model's 2 ms step, "
        "which the floor does not run, so that ratio is not the harness's overhead alone."]
    torch = pd.DataFrame({"step_to_floor_ratio": [3.0, 4.0, 5.0], "model": "torch"})
    assert findings._floor_findings(torch) == [
        "The measured steps take 3.00x to 5.00x the floor (the same recorded messages "
        "exchanged bare) across all 3 cases; they include the torch model's forward, "
        "which the floor does not run, so that ratio is not the harness's overhead alone."]


def test_the_table_note_of_a_model_step_under_x_floor():
    from ipc_bench.report.tables import format_tables, model_floor_note

    rows = [dict(_summary(p, 0, 6_590.0, 2_400_000.0), model="fixed-step",
                 fixed_step_ms=ms) for p in ("send", "cached") for ms in (2.0, 5.0)]
    note = ("x floor: the case's step over the floor's, which runs no model: it includes "
            "the fixed-step model's 2 and 5 ms steps, so it is not the harness's overhead "
            "alone")
    assert model_floor_note(rows) == note
    assert f"\n  {note}\n" in format_tables(rows)
    assert model_floor_note([_summary("send", 0, 6_590.0, 240_000.0)]) is None


def test_a_timed_replay_table_heads_its_tokens_per_s_over_wall_time():
    from ipc_bench.report.tables import CASE_TABLE, WALL_TOKENS_NOTE, format_tables, header

    assert header(CASE_TABLE, timed=True)[4] == "out tok/s (wall)"
    assert header(CASE_TABLE)[4] == "out tok/s"
    rows = [dict(_summary(p, 0, 272.0, 240_000.0), trace_speedup=1.0,
                 busy_output_tokens_per_s=432.9, floor_output_tokens_per_s=None,
                 step_to_floor_ratio=None) for p in ("send", "cached")]
    text = format_tables(rows)
    head = [line for line in text.splitlines() if line.startswith("policy")]
    assert len(head) == 1 and "rep" not in head[0]
    assert head[0].startswith("policy  codec    transport  steps  out tok/s (wall)  floor tok/s")
    assert f"\n  {WALL_TOKENS_NOTE}\n" in text
    assert WALL_TOKENS_NOTE == (
        "out tok/s (wall): a timed replay's output tokens, warm-up included, over wall "
        "time, first arrival to last completion (arrival-bound where the arrivals set the "
        "pace, load-bound where requests queued and kept the engine busy: the note under "
        "the latency table says which); over the busy time of its counted steps, as out "
        "tok/s elsewhere, it is busy_output_tokens_per_s in summary.json")


def test_a_no_floor_table_says_why_its_floor_columns_are_empty():
    from ipc_bench.report.tables import without_floor_note

    two = [dict(_summary(p, 0, 50_000.0, 240_000.0), floor_output_tokens_per_s=None,
                step_to_floor_ratio=None) for p in ("send", "cached")]
    inproc = dict(two[0], transport="inproc", codec="none")
    assert without_floor_note(two) == (
        "floor tok/s, x floor: - for a two-process case run with --no-floor, which replays "
        "no floor")
    assert without_floor_note(two + [inproc]) == (
        "floor tok/s, x floor: - for a two-process case run with --no-floor, which replays "
        "no floor; the single-process case (inproc) never has one")
    assert without_floor_note([inproc]) is None
    assert without_floor_note([_summary("send", 0, 50_000.0, 240_000.0)]) is None
    assert without_floor_note([dict(two[0], scenario="overhead")]) is None


def test_the_column_legend_defines_every_byte_and_tokens_column():
    from ipc_bench.report import blocks

    legend = blocks._metric_legend()
    assert legend.startswith(
        "`out tok/s`: output tokens sampled in the counted steps over the busy wall time of "
        "those steps (the sum of their `step_ns`); in a timed replay")
    for text in ("`floor tok/s`: the counted steps' output tokens over the floor's time",
                 "`tok B/step`: `send` only: bytes the decode tokens of `new_token_ids`",
                 "`prompt B/step`: `send` only: bytes the prompt chunks re-sent"):
        assert text in legend


def test_the_manual_defines_the_legend_columns_in_the_same_words():
    from ipc_bench.analysis.metrics import metric
    from manual import page

    readme = page("metrics.md")
    for key in ("output_tokens_per_s", "busy_output_tokens_per_s",
                "floor_output_tokens_per_s", "decode_token_bytes_per_step",
                "prompt_chunk_bytes_per_step"):
        assert f"| `{key}` | {metric(key).meaning}" in readme, key
