"""A folder whose name begins with "-" (``--output=-x``): every command printed for
pasting names it ``./-x``, which no command reads as an option, and ``bench.py report
-x`` names ``-x`` as the option it took it for rather than saying that RUN_DIR is
missing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ipc_bench.analysis.microbench import pyperf_command_lines
from ipc_bench.analysis.results import report_pointer
from ipc_bench.cli.execute import report_command

REPO = Path(__file__).resolve().parents[2]
BENCH = str(REPO / "bench.py")


def test_the_report_commands_name_a_dash_folder_from_here():
    assert report_command(Path("-x")) == "python bench.py report ./-x"
    assert report_command(Path("-my run")) == "python bench.py report './-my run'"
    assert report_command(Path("/r/-x")) == "python bench.py report /r/-x"
    assert report_pointer(Path("-x")) == "python bench.py report ./-x"


def test_the_pyperf_commands_name_a_dash_folder_from_here():
    assert pyperf_command_lines(["-x/microbench/send.json", "-x/microbench/cached.json"]) == [
        "\ncompare: python -m pyperf compare_to ./-x/microbench/send.json "
        "./-x/microbench/cached.json --table",
        "stats:   python -m pyperf stats ./-x/microbench/send.json",
        "check:   python -m pyperf check ./-x/microbench/send.json",
    ]


def _report(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, BENCH, "report", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_report_of_a_dash_word_names_it_as_an_option(tmp_path):
    proc = _report(tmp_path, "-x")
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", 'bench.py report: error: unrecognized option -x, and no RUN_DIR given '
               '(a RUN_DIR that begins with "-" is given as ./-x)\n')
    proc = _report(tmp_path, "-x", "-y", "--no-figures")
    assert proc.stderr == (
        'bench.py report: error: unrecognized options -x -y, and no RUN_DIR given '
        '(a RUN_DIR that begins with "-" is given as ./-x)\n')
    proc = _report(tmp_path, "--no-figure")
    assert proc.stderr == (
        "bench.py report: error: unrecognized option --no-figure (did you mean "
        "--no-figures?), and no RUN_DIR given\n")
    proc = _report(tmp_path)  # nothing given: argparse's line
    assert proc.stderr == (
        "bench.py report: error: the following arguments are required: RUN_DIR\n")


def test_a_run_into_a_dash_folder_prints_a_report_command_that_works(tmp_path):
    run = subprocess.run(
        [sys.executable, BENCH, "--scenario", "decode-steady", "--num-running", "2",
         "--steps", "3", "--warmup-steps", "0", "--codecs", "msgpack", "--policies", "send",
         "--no-single-process", "--no-floor", "--output=-x"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stderr.splitlines()[-1].endswith(  # 1 or 2 warnings, as the run went
        " in 1 of 1 case (printed under their case lines above): "
        f"see ./-x/summary.json, or Measurement warnings in python {BENCH} report ./-x")
    proc = _report(tmp_path, "./-x", "--no-figures")
    assert (proc.returncode, proc.stdout) == (0, "report: ./-x/report/report.html\n")
