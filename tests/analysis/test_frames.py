"""``frames.frame_records`` gives what ``DataFrame.to_dict("records")`` gives: the same
keys in the same order, values of the same type and value (NaN where NaN, ``pandas.NA``
where NA), for the column kinds ``results.load`` makes and object columns holding numpy
scalars, and for a real run's ``Results.cases``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipc_bench.analysis.frames import frame_records


def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if a is pd.NA or a is None:
        return b is a
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, pd.Timestamp) or isinstance(a, pd.Timedelta):
        return a == b or (pd.isna(a) and pd.isna(b))
    return a == b


def assert_like_to_dict(frame: pd.DataFrame) -> None:
    want, got = frame.to_dict("records"), frame_records(frame)
    assert len(got) == len(want)
    for w, g in zip(want, got):
        assert list(g) == list(w)
        bad = {k: (w[k], g[k]) for k in w if not _same(w[k], g[k])}
        assert not bad, bad


def _column(kind: str, n: int, draw):
    floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(math.nan))
    if kind == "float":
        return pd.Series(draw(st.lists(floats, min_size=n, max_size=n)), dtype="float64")
    if kind == "int":
        return pd.Series(draw(st.lists(st.integers(-2**62, 2**62), min_size=n, max_size=n)),
                         dtype="int64")
    if kind == "Int64":
        return pd.Series(draw(st.lists(st.one_of(st.none(), st.integers(-10**9, 10**9)),
                                       min_size=n, max_size=n)), dtype="Int64")
    if kind == "bool":
        return pd.Series(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    if kind == "str":
        return pd.Series(draw(st.lists(st.one_of(st.none(), st.text(max_size=5)),
                                       min_size=n, max_size=n)), dtype="str")
    if kind == "category":
        values = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
        return pd.Series(pd.Categorical(values, categories=["c", "b", "a"], ordered=True))
    if kind == "datetime":
        return pd.Series(pd.to_datetime(draw(st.lists(
            st.integers(0, 2**40), min_size=n, max_size=n)), unit="s"))
    # object: what a hand-edited summary can leave in a column
    cells = st.one_of(st.none(), floats, st.integers(), st.text(max_size=3), st.booleans(),
                      st.builds(np.float64, floats), st.builds(np.int64, st.integers(-9, 9)),
                      st.builds(np.bool_, st.booleans()),
                      st.just(np.datetime64(5, "s")),
                      st.builds(np.complex128, st.just(1 + 2j)), st.just(pd.NA),
                      st.just(np.timedelta64(7, "ns")),
                      st.lists(st.integers(), max_size=2), st.just({"a": 1}))
    return pd.Series(draw(st.lists(cells, min_size=n, max_size=n)), dtype=object)


KINDS = ("float", "int", "Int64", "bool", "str", "category", "datetime", "object")


@st.composite
def frames(draw):
    n = draw(st.integers(0, 4))
    kinds = draw(st.lists(st.sampled_from(KINDS), max_size=8))
    labels = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h"]),
                           min_size=len(kinds), max_size=len(kinds), unique=True))
    return pd.DataFrame({label: _column(kind, n, draw) for label, kind in zip(labels, kinds)},
                        index=pd.RangeIndex(n))


@settings(max_examples=200, deadline=None)
@given(frames())
def test_records_equal_to_dict_for_every_column_kind(frame):
    assert_like_to_dict(frame)


@pytest.mark.filterwarnings("ignore:DataFrame columns are not unique")
def test_a_column_label_given_twice_keeps_the_last_value_as_to_dict_does():
    frame = pd.DataFrame([[1, 2.5, "x"]], columns=["a", "a", "b"])
    assert frame_records(frame) == frame.to_dict("records") == [{"a": 2.5, "b": "x"}]


def test_rows_without_columns_are_empty_dicts():
    frame = pd.DataFrame(index=range(3))
    assert frame_records(frame) == frame.to_dict("records") == [{}, {}, {}]


def test_a_selection_keeps_its_rows_order_not_its_index():
    frame = pd.DataFrame({"x": [1, 2, 3]}, index=[7, 3, 5]).sort_index()
    assert frame_records(frame) == [{"x": 2}, {"x": 3}, {"x": 1}]


def test_a_real_runs_cases_read_the_same(shared_small_run):
    from ipc_bench.analysis import results

    loaded = results.load([str(shared_small_run)])
    for table in (loaded.cases, loaded.steps.head(50), loaded.requests.head(50)):
        assert_like_to_dict(table)
    assert len(frame_records(loaded.cases)) == len(loaded.cases) > 0
    assert len(loaded.cases.columns) > 100  # the wide table this is for
