"""The scripts built on pyperf's runner (hot_path_bench.py, variant_table.py) refuse a
pyperf count below its least in the words of the run's options of one whole number
(``argument -p/--processes: must be at least 1, got 0``), as ``bench.py microbench``
does, where they printed pyperf's ``invalid strictly_positive value: '0'``; a
``--min-time`` that is not a positive finite number is refused as the run's options of
one number are (``must be a finite number, got nan``), where ``nan`` ran."""

from __future__ import annotations

import pytest

from tests.script_module import run_script


@pytest.mark.parametrize("script, argv, message", [
    ("variant_table", ["-p", "0"], "argument -p/--processes: must be at least 1, got 0"),
    ("hot_path_bench", ["--timeout", "0"], "argument --timeout: must be at least 1, got 0"),
    ("hot_path_bench", ["-w", "-1"], "argument -w/--warmups: must be at least 0, got -1"),
    ("variant_table", ["-n", "x"], "argument -n/--values: expected an integer, got 'x'"),
    ("hot_path_bench", ["--min-time", "nan"],
     "argument --min-time: must be a finite number, got nan"),
    ("variant_table", ["--min-time", "-inf"],
     "argument --min-time: must be a finite number, got -inf"),
    ("hot_path_bench", ["--min-time", "0"],
     "argument --min-time: must be a positive number, got 0"),
])
def test_a_pyperf_option_out_of_range_is_refused_in_the_run_s_words(script, argv, message):
    proc = run_script(script, *argv)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"{script}.py: error: {message}\n")
