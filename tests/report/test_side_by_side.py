"""A multi-run report's side-by-side tables name the run their ratio columns divide by."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from ipc_bench.report.blocks import _side_by_side


def _results(run_ids: list[str]) -> SimpleNamespace:
    rows = [dict(workload="num_running=4", policy="send", codec="msgpack", run_id=r,
                 output_tokens_per_s=1000.0 * (i + 1)) for i, r in enumerate(run_ids)]
    return SimpleNamespace(run_ids=run_ids, cases=pd.DataFrame(rows))


def test_the_caption_names_the_first_run_as_the_denominator():
    blocks = _side_by_side(_results(["base", "new"]), "output_tokens_per_s")
    assert blocks[0] == ("p", "**output tokens/s** (mean over repetitions; the ratio "
                              "column, `new / base`, divides each run's mean by that of "
                              "run `base`, the first loaded)")
    kind, header, rows = blocks[1]
    assert header == ["workload", "arm", "codec", "base", "new", "new / base"]
    assert rows == [["num_running=4", "send", "msgpack", "1,000", "2,000", "2.000"]]


def test_with_three_runs_every_ratio_column_is_named():
    blocks = _side_by_side(_results(["a", "b", "c"]), "output_tokens_per_s")
    assert blocks[0] == ("p", "**output tokens/s** (mean over repetitions; the ratio "
                              "columns, `b / a`, `c / a`, divide each run's mean by that "
                              "of run `a`, the first loaded)")
