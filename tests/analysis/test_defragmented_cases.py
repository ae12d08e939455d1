"""Runs of different scenarios load into tables whose columns are joined in as few
blocks as their types allow: ``Results.cases`` of a pp, an overhead and a frontend run
was left a block per column (118), and the throughput figure's ``assign`` made pandas
warn ``PerformanceWarning: DataFrame is highly fragmented``."""
import shutil
import warnings

import numpy as np
import pandas as pd
import pytest

from analysis_run import run_bench
from ipc_bench.analysis.results import _defragmented, load
from ipc_bench.report import plots

#: The smallest runs of three scenarios whose ``Results.cases`` had more than 100 numpy
#: blocks (118 blocks in all), where pandas warns at the next column added. The blocks
#: are the tables' columns, not their rows: overhead's 2 repetitions (its fewest; 8 by
#: default, 32 cases, 3 times the CPU) load into the same columns of the same types, and
#: the pp run is the session's (``shared_pp_run``: ``--pp 1,2``, 20 steps), whose cases
#: have the columns of a ``--pp 2`` run's.
SCENARIOS = {
    "pp": None,
    "overhead": ["--scenario", "overhead", "--num-running", "16", "--steps", "300",
                 "--warmup-steps", "10", "--codecs", "msgpack", "--repeat", "2"],
    "frontend": ["--scenario", "decode-steady", "--num-running", "4", "--steps", "200",
                 "--warmup-steps", "5", "--codecs", "msgpack", "--frontend"],
}


def _joined_blocks(df) -> int:
    """The blocks ``df`` has with its columns joined: one per numpy type, one per
    column of an extension type."""
    kinds = list(df.dtypes)
    return (len({t for t in kinds if isinstance(t, np.dtype)})
            + sum(not isinstance(t, np.dtype) for t in kinds))


@pytest.fixture(scope="module")
def three_scenarios(tmp_path_factory, shared_pp_run):
    root = tmp_path_factory.mktemp("scenarios")
    for name, args in SCENARIOS.items():
        if args is None:  # a copy of the session's pp run, under this module's name
            shutil.copytree(shared_pp_run, root / name)
        else:
            run_bench(root / name, args)
    return [root / name for name in SCENARIOS]


def test_runs_of_three_scenarios_load_and_plot_without_a_fragmented_frame(three_scenarios):
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.PerformanceWarning)
        results = load(three_scenarios)
        cases = plots._throughput_cases(results)
    assert results.run_ids == ["pp", "overhead", "frontend"]
    for name in ("cases", "steps", "requests", "floor", "itl"):
        df = getattr(results, name)
        assert df._mgr.nblocks == _joined_blocks(df), name
    assert len(cases) == len(results.cases[results.cases[plots.THROUGHPUT].notna()])
    assert cases["_group"].str.split("\n").str[0].drop_duplicates().tolist() == [
        "pp", "overhead", "frontend"]


def test_a_table_already_joined_is_not_copied_and_a_fragmented_one_is():
    whole = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0], "c": ["x", "y"]})
    assert _defragmented(whole) is whole
    torn = pd.DataFrame({"a": [1.0, 2.0]})
    for i in range(5):
        torn[f"f{i}"] = [float(i), float(i) + 0.5]
    assert torn._mgr.nblocks == 6
    joined = _defragmented(torn)
    assert joined is not torn
    assert joined._mgr.nblocks == 1
    pd.testing.assert_frame_equal(joined, torn)
