"""scripts/variant_table.py --table-from --figure on a run whose timings lie at none of
the figure's running counts: the µs panel says so, the command draws the rest."""

from __future__ import annotations

import subprocess
import sys

import pyperf
from script_module import ROOT, load_script

SCRIPT = ROOT / "scripts" / "variant_table.py"


def _suite(path, names) -> None:
    pyperf.BenchmarkSuite([pyperf.Benchmark([pyperf.Run(
        [1e-6, 1e-6], metadata={"name": n, "unit": "second", "loops": 1},
        collect_metadata=False)]) for n in names]).dump(str(path))


def _names(b: int) -> list[str]:
    """The benchmarks of every timing of msgpack uniform at ``b`` running, both
    policies (which share the r2s ones)."""
    vt = load_script("variant_table")
    return list(dict.fromkeys(vt.bench_name(vt.bench_key(w, b, p, "msgpack", "uniform"))
                              for p in vt.POLICIES for w in vt.WHATS))


def test_figure_of_a_run_without_timings_at_its_running_counts(tmp_path):
    """Timed at 4 running, drawn at the default running counts (1 to 1,024): exit 0,
    the PNG drawn, one warning naming the empty panel, no traceback."""
    run, png = tmp_path / "vt.json", tmp_path / "vt.png"
    _suite(run, _names(4))
    done = subprocess.run([sys.executable, str(SCRIPT), "--table-from", str(run),
                           "--figure", str(png)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert (done.returncode, done.stderr) == (0, (
        f"variant_table.py: warning: {png}: the µs panel is empty: the run holds no "
        "variant's five timings at running 1, 16, 64, 256, 1,024 (--batch-sizes picks the "
        "running counts)\n"))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_figure_at_the_runs_running_count_has_no_warning(tmp_path):
    """--batch-sizes 4 on the same run: one point per policy, drawn without a word."""
    run, png = tmp_path / "vt.json", tmp_path / "vt.png"
    _suite(run, _names(4))
    done = subprocess.run([sys.executable, str(SCRIPT), "--batch-sizes", "4",
                           "--table-from", str(run), "--figure", str(png)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
