"""``-inf``, ``-Infinity`` and ``-nan`` given as a word of their own are values: the
option refuses them as not finite (``must be a finite number, got -inf``), where
argparse took them for options (``argument --logical-step-ms: expected one argument``).
``--spec-acceptance inf`` and ``NaN`` read the same sentence, where they read ``must be
in [0, 1]``."""

from __future__ import annotations

import pytest

from ipc_bench import cli
from ipc_bench.analysis.microbench import MicrobenchError, check_pyperf_options
from ipc_bench.cli.microbench import _Parser

DS = ["--scenario", "decode-steady"]
SPEC = DS + ["--num-spec-tokens", "2", "--spec-acceptance"]


@pytest.mark.parametrize("argv, message", [
    (DS + ["--logical-step-ms", "-inf"], "argument --logical-step-ms: must be a finite "
                                         "number, got -inf"),
    (DS + ["--startup-timeout", "-Infinity"], "argument --startup-timeout: must be a "
                                              "finite number, got -Infinity"),
    (DS + ["--trace-speedup", "-nan"], "argument --trace-speedup: must be a finite number, "
                                       "got -nan"),
    (["--scenario", "step-time", "--step-time-ms", "-inf,1"],
     "argument --step-time-ms: must be a finite number, got -inf"),
    (SPEC + ["-inf"], "argument --spec-acceptance: must be a finite number, got -inf"),
    (SPEC + ["NaN"], "argument --spec-acceptance: must be a finite number, got NaN"),
    (SPEC + ["inf"], "argument --spec-acceptance: must be a finite number, got inf"),
    (SPEC + ["-0.5"], "argument --spec-acceptance: must be in [0, 1], got -0.5"),
])
def test_a_number_not_finite_is_refused_as_one(argv, message, capsys):
    assert cli.main(argv) == 2
    assert capsys.readouterr() == ("", f"bench.py: error: {message}\n")


def test_a_word_that_begins_with_the_letters_is_still_an_option(capsys):
    assert cli.main(DS + ["--logical-step-ms", "-info"]) == 2
    assert capsys.readouterr() == (
        "", "bench.py: error: argument --logical-step-ms: expected one argument\n")


@pytest.mark.parametrize("rest, message", [
    (["--min-time", "-nan"], "--min-time nan: expected seconds above 0 and at most 10 (the "
                             "least time of each value pyperf times; at 10 a benchmark of "
                             "the default settings takes over 2 minutes)"),
    (["-n", "-inf"], "argument -n/--values: expected an integer, got '-inf'"),
])
def test_microbench_reads_them_as_values(rest, message):
    with pytest.raises(MicrobenchError) as info:  # -nan is not -n with the value an
        check_pyperf_options(rest, _Parser, False)
    assert str(info.value) == message
