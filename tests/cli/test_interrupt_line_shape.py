"""Every interrupt line has one shape, made by ``signals.Interrupted.line``:
``PROG: [WHAT: ]interrupted by SIGNAL[ WHEN][; KEPT]... (exit N)``, the exit code last
also where the line names where the results are (docs/faults.md, "The interrupt
line"); the lines of ``bench.py`` and of the scripts that name a folder put it after
``(exit N)`` before."""

from __future__ import annotations

import argparse
import signal

from ipc_bench.harness import signals
from tests.script_module import load_script


def test_the_formatter_puts_what_was_kept_before_the_exit_code():
    exc = signals.Interrupted(143)
    assert exc.line("bench.py") == "bench.py: interrupted by SIGTERM (exit 143)"
    assert exc.line("bench.py", "partial results: /r/run") == (
        "bench.py: interrupted by SIGTERM; partial results: /r/run (exit 143)")
    assert exc.line("bench.py", "partial results: /r/run", what="num_running=2/send/msgpack#0",
                    when="at step 52") == (
        "bench.py: num_running=2/send/msgpack#0: interrupted by SIGTERM at step 52; "
        "partial results: /r/run (exit 143)")
    assert signals.Interrupted(130).line("codec_fit.py", ["kept: a", "", "bench.py b"]) == (
        "codec_fit.py: interrupted by SIGINT; kept: a; bench.py b (exit 130)")
    assert signals.Interrupted(129).line("gpu_check.py", "results so far in /r/a\nb") == (
        "gpu_check.py: interrupted by SIGHUP; results so far in /r/a\\nb (exit 129)")


def test_gpu_check_names_its_folder_before_the_exit_code(tmp_path):
    gpu_check = load_script("gpu_check")
    line = gpu_check.interrupt_line(signals.Interrupted(143), [tmp_path])
    assert line == f"gpu_check.py: interrupted by SIGTERM; results so far in {tmp_path} (exit 143)"


def test_codec_fit_names_its_runs_before_the_exit_code(tmp_path):
    codec_fit = load_script("codec_fit")
    exc = signals.Interrupted(130)
    exc.child = "had not exited 15 s later and was killed by SIGKILL"
    assert codec_fit.interrupt_line(exc, [("fit", tmp_path)]) == (
        f"codec_fit.py: interrupted by SIGINT; kept: the fit run {tmp_path} has no "
        "readable summary.json; bench.py had not exited 15 s later and was killed by "
        "SIGKILL (exit 130)")
    assert codec_fit.interrupt_line(signals.Interrupted(130), [],
                                    f"the --output folder {tmp_path}") == (
        f"codec_fit.py: interrupted by SIGINT; the --output folder {tmp_path} made here is "
        "removed: nothing was written to it (exit 130)")


def test_aa_false_positive_names_its_study_before_the_exit_code(tmp_path):
    aa = load_script("aa_false_positive")
    (tmp_path / "busy" / "aa").mkdir(parents=True)
    args = argparse.Namespace(from_run=None, load=["busy"], reference_steps=[])
    assert aa.interrupt_line(signals.Interrupted(int(signal.SIGTERM) + 128), args,
                             tmp_path) == (
        f"aa_false_positive.py: interrupted by SIGTERM; the study so far is in {tmp_path} "
        f"(0 bench.py runs complete); bench.py's run {tmp_path}/busy/aa has no readable "
        "summary.json (exit 143)")


def test_oracle_cost_says_what_it_printed_before_the_exit_code():
    oracle_cost = load_script("oracle_cost")
    args = oracle_cost.parse_args(["--num-running", "1,2,4"])
    assert oracle_cost.interrupt_line(signals.Interrupted(130), args, [1], []) == (
        "oracle_cost.py: interrupted by SIGINT; rows printed for 1 of 3 B values (1) "
        "(exit 130)")
    bench = oracle_cost.parse_args(["--bench"])
    assert oracle_cost.interrupt_line(signals.Interrupted(143), bench, [], ["/t"]) == (
        "oracle_cost.py: interrupted by SIGTERM; nothing printed: the runs' temporary "
        "folder is removed (exit 143)")
