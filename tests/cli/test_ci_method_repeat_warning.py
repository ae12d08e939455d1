"""A ``--ci-method`` that needs more pairs than ``--repeat`` gives (one a repetition):
the run says so before its first case, where the findings otherwise say it only at the
end (``no verdict: the bootstrap needs >= 34 pairs, have 3``)."""

from __future__ import annotations

import pytest

from ipc_bench import cli
from ipc_bench.cli.run import ci_method_warning

ARGS = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "5",
        "--warmup-steps", "2", "--codecs", "msgpack", "--no-single-process", "--no-floor",
        "--quiet"]
BOOTSTRAP_3 = ("bench.py: warning: --ci-method bootstrap with --repeat 3 gives the "
               "comparisons no verdict (the bootstrap needs >= 34 pairs, one a repetition): "
               "add --repeat 34 or more, or use --ci-method t; bytes and times are measured "
               "all the same")


@pytest.mark.parametrize("method, repeat, line", [
    ("bootstrap", 3, BOOTSTRAP_3.removeprefix("bench.py: warning: ")),
    ("bootstrap", 33, "--ci-method bootstrap with --repeat 33 gives the comparisons no "
     "verdict (the bootstrap needs >= 34 pairs, one a repetition): add --repeat 34 or "
     "more, or use --ci-method t; bytes and times are measured all the same"),
    ("bootstrap", 34, None),
    ("sign", 5, "--ci-method sign with --repeat 5 gives the comparisons no verdict (the "
     "sign test needs >= 6 pairs, one a repetition): add --repeat 6 or more, or use "
     "--ci-method t; bytes and times are measured all the same"),
    ("sign", 6, None),
    ("t", 1, None),  # the default: --aa's warning speaks for one repetition
])
def test_the_warning_names_the_pairs_the_method_needs(method, repeat, line):
    assert ci_method_warning(method, repeat) == line


def test_a_bootstrap_run_of_three_repetitions_is_warned_before_its_first_case(
        tmp_path, capsys):
    assert cli.main(ARGS + ["--ci-method", "bootstrap", "--repeat", "3", "--output",
                            str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err.index(BOOTSTRAP_3) == 0
    assert err.count(BOOTSTRAP_3) == 1


def test_a_run_of_one_arm_compares_nothing_and_is_not_warned(tmp_path, capsys):
    assert cli.main(ARGS + ["--policies", "send", "--ci-method", "bootstrap", "--repeat",
                            "2", "--output", str(tmp_path / "r")]) == 0
    assert "--ci-method" not in capsys.readouterr().err


def test_an_aa_run_is_warned_once_with_the_methods_own_need(tmp_path, capsys):
    assert cli.main(ARGS + ["--aa", "--ci-method", "sign", "--output",
                            str(tmp_path / "r")]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines()
                if line.startswith("bench.py: warning:")]
    assert warnings == [
        "bench.py: warning: --ci-method sign with --repeat 1 gives the comparisons no "
        "verdict (the sign test needs >= 6 pairs, one a repetition): add --repeat 6 or "
        "more, or use --ci-method t; bytes and times are measured all the same"]


def test_overheads_ratio_line_takes_the_runs_method(tmp_path, capsys):
    """The warning's promise holds for overhead's steps/totals line: its verdict is the
    run's method's, withheld with fewer pairs than it needs."""
    assert cli.main(["--scenario", "overhead", "--num-running", "2", "--steps", "5",
                     "--warmup-steps", "2", "--policies", "send", "--repeat", "2",
                     "--ci-method", "sign", "--output", str(tmp_path / "r")]) == 0
    out = capsys.readouterr()
    assert out.err.splitlines()[0].startswith("bench.py: warning: --ci-method sign with "
                                              "--repeat 2 gives the comparisons no verdict")
    line = next(x for x in out.out.splitlines() if "steps/totals = " in x)
    assert line.endswith("; no verdict: the sign test needs >= 6 pairs, have 2 (use "
                         "--repeat 6 or more, or --ci-method t)")
    assert "(no interval) over 2 pairs" in line
