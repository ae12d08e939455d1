"""Every pandas ``groupby`` of the package, its scripts and the notebook says ``observed=``.

``workload`` is an ordered Categorical in every table ``results.load`` returns. pandas 2
(which ``pyproject.toml`` allows) groups a Categorical with ``observed=False`` by default:
it warns, and adds a group for every category a selection no longer holds (a
``size()`` of 0, an empty frame to iterate); pandas 3 defaults to ``observed=True``.
Passing it keeps both alike."""

from __future__ import annotations

import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _groupby_calls(tree: ast.AST) -> list[ast.Call]:
    """The ``X.groupby(...)`` calls of ``tree`` but ``itertools.groupby``."""
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "groupby"
            and not (isinstance(node.func.value, ast.Name)
                     and node.func.value.id == "itertools")]


def _without_observed(source: str, name: str) -> list[str]:
    return [f"{name} line {call.lineno}" for call in _groupby_calls(ast.parse(source))
            if not any(k.arg == "observed" for k in call.keywords)]


def test_every_groupby_of_the_package_and_scripts_says_observed():
    found = []
    for path in sorted([*(ROOT / "ipc_bench").rglob("*.py"), *(ROOT / "scripts").glob("*.py")]):
        found += _without_observed(path.read_text(), str(path.relative_to(ROOT)))
    assert found == []


def test_every_groupby_of_the_notebook_says_observed():
    notebook = json.loads((ROOT / "notebooks" / "analysis.ipynb").read_text())
    found = []
    for i, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "code":
            source = "".join(line for line in cell["source"]
                             if not line.lstrip().startswith(("%", "!")))
            found += _without_observed(source, f"notebooks/analysis.ipynb cell {i}")
    assert found == []


def test_the_check_finds_a_groupby_without_it():
    assert _without_observed("df.groupby('workload').size()\n"
                             "itertools.groupby(x)\n"
                             "df.groupby(['a', 'b'], observed=True)\n", "x.py") == ["x.py line 1"]


def test_runs_joined_keep_every_column_and_warn_of_nothing():
    """``run_files._concat`` of runs where a column has no value in one run (pandas 2
    warns of all-NaN entries in a concatenation): every column comes back, in order, a
    value where a run has one, the integer columns integers."""
    import warnings

    import numpy as np
    import pandas as pd

    from ipc_bench.analysis.run_files import _concat

    a = pd.DataFrame({"repetition": [0, 1], "gpu_busy_ns": [np.nan, np.nan],
                      "label": [None, None]})
    b = pd.DataFrame({"repetition": [0], "gpu_busy_ns": [5.0], "label": [None]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = _concat(pd, [a, b])
    assert list(df.columns) == ["repetition", "gpu_busy_ns", "label"]
    assert df["repetition"].tolist() == [0, 1, 0] and df["repetition"].dtype == np.int64
    assert df["gpu_busy_ns"].tolist()[2] == 5.0 and df["gpu_busy_ns"].isna().sum() == 2
    assert df["label"].isna().all()


def test_a_field_written_only_where_true_loads_as_a_bool_column():
    """``emulated`` is in an emulated case's summary alone: joined with other cases it
    is ``True`` or ``False``, never NaN, so that it selects rows."""
    import numpy as np
    import pandas as pd

    from ipc_bench.analysis.results import _tidy_types

    cases = _tidy_types(pd, pd.DataFrame({"case_id": ["a", "b"],
                                          "emulated": [True, np.nan]}))
    assert cases["emulated"].dtype == bool
    assert cases[cases["emulated"]]["case_id"].tolist() == ["a"]


def test_a_missing_workload_stays_missing_in_the_ordered_column():
    """A blanked ``workload`` cell (NaN after pandas 3's ``astype(str)``, ``"nan"`` after
    pandas 2's) is no category of its own and raises nothing; workloads alike in
    ``workload_order`` go by their text."""
    import numpy as np
    import pandas as pd

    from ipc_bench.analysis.results import _tidy_types, ordered_workloads

    steps = _tidy_types(pd, pd.DataFrame({"workload": ["num_running=16", np.nan, "x=2.0",
                                                       "num_running=4", "x=2"]}))
    column = ordered_workloads(pd, {"steps": steps})["steps"]["workload"]
    assert list(column.cat.categories) == ["num_running=4", "num_running=16", "x=2",
                                           "x=2.0"]
    assert column.isna().tolist() == [False, True, False, False, False]
