"""``--step-time-ms infinity`` and ``nan`` (and the other options of one number) are
refused in the words of ``inf``: ``must be a finite number, got TEXT``. ``infinity``
read ``expected comma-separated numbers`` and ``nan`` ``must be a positive number``."""

from __future__ import annotations

import pytest

from ipc_bench import cli


@pytest.mark.parametrize("option, scenario", [("--step-time-ms", "step-time"),
                                              ("--step-time-ms", "decode-steady"),
                                              ("--peer-timeout", "decode-steady"),
                                              ("--trace-speedup", "decode-steady")])
@pytest.mark.parametrize("value, shown", [
    ("inf", "inf"), ("infinity", "infinity"), ("Infinity", "Infinity"), ("nan", "nan"),
    ("NaN", "NaN"), ("+nan", "+nan"), ("1e999", "1e999"),
])
def test_every_non_finite_number_reads_the_same(option, scenario, value, shown, capsys):
    assert cli.main(["--scenario", scenario, f"{option}={value}"]) == 2
    assert capsys.readouterr() == (
        "", f"bench.py: error: argument {option}: must be a finite number, got {shown}\n")


@pytest.mark.parametrize("value, shown", [("2,infinity", "infinity"), ("nan,2", "nan")])
def test_an_item_of_the_step_time_list_reads_the_same(value, shown, capsys):
    assert cli.main(["--scenario", "step-time", "--step-time-ms", value]) == 2
    assert capsys.readouterr() == (
        "", f"bench.py: error: argument --step-time-ms: must be a finite number, got {shown}\n")


def test_a_number_not_above_zero_still_reads_as_before(capsys):
    """(An option with a lower bound above 0 says that bound instead:
    ``test_lower_bound_words``.)"""
    assert cli.main(["--scenario", "step-time", "--trace-speedup", "0"]) == 2
    assert capsys.readouterr() == (
        "", "bench.py: error: argument --trace-speedup: must be a positive number, got 0\n")
