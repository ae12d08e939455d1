"""An option of one number with a lower bound above 0 (``options._float_in`` given a
``lo``) read ``must be a positive number, got 0`` for zero and negatives, but ``must be
at least 0.001 (...), got 0.0001`` just above zero: two rules for one range. Zero and
negatives now read the bound and its reason as any value below it does; an option
without such a bound still reads ``must be a positive number``."""

from __future__ import annotations

import pytest

from ipc_bench import cli

LOGICAL = ("must be at least 0.001 (1 us: the step numbers of a trace spanning the 10,000 "
           "years its timestamps can cover must fit in 64 bits)")
STEP = ("must be at least 0.001 (a shorter step measures the model's own sampling and "
        "timer reads)")
PEER = ("must be at least 0.1 (the waits check for a reply and the peer in 0.1 s slices, "
        "so a shorter timeout cannot be honoured)")
STARTUP = ("must be at least 0.1 (the waits check for the runner in 0.1 s slices, so a "
           "shorter timeout cannot be honoured)")


@pytest.mark.parametrize("scenario, option, words", [
    ("azure-conv", "--logical-step-ms", LOGICAL),
    ("decode-steady", "--step-time-ms", STEP),
    ("step-time", "--step-time-ms", STEP),
    ("decode-steady", "--peer-timeout", PEER),
    ("decode-steady", "--startup-timeout", STARTUP)])
@pytest.mark.parametrize("value", ["0", "-0", "0.0", "-1", "-1e-300"])
def test_zero_and_negatives_read_the_lower_bound(scenario, option, words, value, capsys):
    assert cli.main(["--scenario", scenario, f"{option}={value}"]) == 2
    assert capsys.readouterr() == (
        "", f"bench.py: error: argument {option}: {words}, got {value}\n")


def test_below_the_bound_reads_the_same_as_zero(capsys):
    for value in ("0.0001", "0"):
        assert cli.main(["--scenario", "azure-conv", "--logical-step-ms", value]) == 2
        assert capsys.readouterr() == (
            "", f"bench.py: error: argument --logical-step-ms: {LOGICAL}, got {value}\n")


def test_an_item_of_the_step_time_list(capsys):
    assert cli.main(["--scenario", "step-time", "--step-time-ms", "2,0"]) == 2
    assert capsys.readouterr() == (
        "", f"bench.py: error: argument --step-time-ms: {STEP}, got 0\n")


@pytest.mark.parametrize("value", ["0", "-2"])
def test_an_option_without_a_lower_bound_still_asks_for_a_positive_number(value, capsys):
    assert cli.main(["--scenario", "azure-conv-timed", f"--trace-speedup={value}"]) == 2
    assert capsys.readouterr() == (
        "", f"bench.py: error: argument --trace-speedup: must be a positive number, got "
        f"{value}\n")
