"""The comparison tables' ``diff CI`` column printed its ends without thousands
separators (``-14,197  [-165758, 137364]``) beside a difference printed with them. Its
ends are printed as the difference is; where an end has a separator the ends are
joined by `` to `` (``[-165,758 to 137,364]``), which cannot read as four numbers as
``[-165,758, 137,364]`` could; intervals whose ends have none are as they were."""

from __future__ import annotations

import pytest

from ipc_bench.report import tables


@pytest.mark.parametrize("low, high, scale, text", [
    (-1714.2, 4187.4, 1.0, "[-1,714 to 4,187]"),
    (-165758.0, 137364.0, 1.0, "[-165,758 to 137,364]"),
    (-22475e-6, -4077e-6, 1e6, "[-22,475 to -4,077]"),
    (5.2, 1234.0, 1.0, "[5.20 to 1,234]"),
    (0.0, 1000.0, 1.0, "[0 to 1,000]"),
    (-999.4, 999.4, 1.0, "[-999.4, 999.4]"),
    (29.6, 76.7, 1.0, "[29.6, 76.7]"),
    (0.003, 2.88, 1.0, "[0.003, 2.88]"),
    (0.0, 0.0, 1.0, "[0, 0]"),
])
def test_diff_interval_ends_read_as_the_difference_beside_them(low, high, scale, text):
    assert tables._diff_interval(low, high, scale) == text
