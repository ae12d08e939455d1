"""Rows of a pandas DataFrame as dicts, as ``DataFrame.to_dict("records")`` gives them, in a
third of its time on the wide tables the report reads over and over.

``Results.cases`` has over a hundred columns and a handful of rows; ``to_dict("records")``
goes through ``itertuples``, which takes each column by position (``iloc``) at some
60 µs apiece, so one call costs milliseconds, and a report of one small run makes
thousands (pairs, withheld keys, short-row checks). ``frame_records`` takes the cells of
all columns at once with ``DataFrame.to_numpy(dtype=object)`` (what iterating a column
gives: Python scalars for numpy columns, ``Timestamp`` / ``Timedelta`` for datetime
ones, the array's own values for extension columns; ``DataFrame.items`` made a Series a
column, 20 µs each, a fifth of a small run's report), then boxes the cells of object and
extension columns as pandas 3 does (``pandas.core.dtypes.cast.maybe_box_native``: numpy
scalars as Python's, ``pandas.NA`` as ``None``).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _native(value: Any, na: Any) -> Any:
    """``value`` (a cell of an object or extension column) as ``to_dict`` boxes it
    (pandas 3's ``maybe_box_native``): a float, integer or bool scalar, numpy's
    included, as Python's; a numpy datetime64 / timedelta64 as ``Timestamp`` /
    ``Timedelta``; ``na`` (``pandas.NA``, a nullable column's gap) as ``None``; anything
    else unchanged."""
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (np.datetime64, np.timedelta64)):
        import pandas as pd

        return (pd.Timestamp if isinstance(value, np.datetime64) else pd.Timedelta)(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if value is na:
        return None
    return value


def frame_records(frame) -> list[dict[str, Any]]:
    """The rows of ``frame`` (a pandas DataFrame, R rows by C columns) in order: R dicts
    of C entries, column label -> value, equal to ``frame.to_dict("records")`` (a label
    given twice keeps its last column's value, as there)."""
    import pandas as pd  # here, where there is a frame: importing this module needs none
    from pandas.api.extensions import ExtensionDtype

    labels = list(frame.columns)
    if not labels:
        return [{} for _ in range(len(frame))]
    columns = frame.to_numpy(dtype=object).T.tolist()  # C lists of R cells
    for j, dtype in enumerate(frame.dtypes.tolist()):
        if dtype == object or isinstance(dtype, ExtensionDtype):
            columns[j] = [_native(v, pd.NA) for v in columns[j]]
    return [dict(zip(labels, row)) for row in zip(*columns)]


def listed(value: Any) -> list:
    """A cell of a list-valued column of ``Results.cases`` (a case's ``warnings``,
    ``send_cost_send_step_off``, ...) as a list: a list or tuple as a list of its
    entries, anything else as ``[]``: NaN or ``None``, which a case that recorded none
    (or whose value the loader dropped as not a list) carries in a table where others
    record one. Raises nothing."""
    return list(value) if isinstance(value, (list, tuple)) else []
