"""scripts/variant_table.py --table-from --figure: on a run whose timings lie at none of
the figure's running counts the µs panel says so and the command draws the rest; on a
run timed at one running count the µs panel shares the bytes panel's x axis (limits and
scale), where it autoscaled to its own few points (10 to 100 against the bytes panel's 1
to 1,024).

The commands run in this process (``script_main`` around the script's ``main``, as its
``__main__`` calls it), through one loaded module: the script's steps at the default
running counts (``decode_step``, cached) are built once for the file, not once a
command (about 14 CPU-s each). ``tests/cli/test_variant_table.py`` runs the script as a
command."""

from __future__ import annotations

import sys

import pyperf
import pytest
from script_module import load_script

from ipc_bench.cli.console import script_main

vt = load_script("variant_table")


def _suite(path, names) -> None:
    pyperf.BenchmarkSuite([pyperf.Benchmark([pyperf.Run(
        [1e-6, 1e-6], metadata={"name": n, "unit": "second", "loops": 1},
        collect_metadata=False)]) for n in names]).dump(str(path))


def _names(b: int) -> list[str]:
    """The benchmarks of every timing of msgpack uniform at ``b`` running, both
    policies (which share the r2s ones)."""
    return list(dict.fromkeys(vt.bench_name(vt.bench_key(w, b, p, "msgpack", "uniform"))
                              for p in vt.POLICIES for w in vt.WHATS))


def _variant_table(monkeypatch, capsys, *argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``python scripts/variant_table.py ARGV...``, run in
    this process as its ``__main__`` runs it (``pyperf.Runner`` allows one a process:
    this call's is its own)."""
    monkeypatch.setattr(sys, "argv", [str(vt.__file__), *argv])
    monkeypatch.setattr(pyperf.Runner, "_created", set())
    capsys.readouterr()
    code = script_main("variant_table.py", vt.main, "the table",
                       "the -o or --append file and the --figure")
    out, err = capsys.readouterr()
    return code, out, err


def test_figure_of_a_run_without_timings_at_its_running_counts(tmp_path, monkeypatch, capsys):
    """Timed at 4 running, drawn at the default running counts (1 to 1,024): exit 0,
    the PNG drawn, one warning naming the empty panel, no traceback."""
    run, png = tmp_path / "vt.json", tmp_path / "vt.png"
    _suite(run, _names(4))
    code, out, err = _variant_table(monkeypatch, capsys, "--table-from", str(run),
                                    "--figure", str(png))
    assert (code, err) == (0, (
        f"variant_table.py: warning: {png}: the µs panel is empty: the run holds no "
        "variant's five timings at running 1, 16, 64, 256, 1,024 (--batch-sizes picks the "
        "running counts)\n"))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the table follows: every variant at every default running count
    assert len([ln for ln in out.splitlines() if ln.startswith("| 1,024 | ")]) == 20


def test_figure_at_the_runs_running_count_has_no_warning(tmp_path, monkeypatch, capsys):
    """--batch-sizes 4 on the same run: one point per policy, drawn without a word."""
    run, png = tmp_path / "vt.json", tmp_path / "vt.png"
    _suite(run, _names(4))
    code, _, err = _variant_table(monkeypatch, capsys, "--batch-sizes", "4",
                                  "--table-from", str(run), "--figure", str(png))
    assert (code, err) == (0, "")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_panels_share_one_x_axis(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    names = [vt.bench_name(vt.bench_key(w, 16, p, "msgpack", "uniform"))
             for p in vt.POLICIES for w in vt.WHATS]
    figures = []
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig: (figures.append(fig), close(fig))[1])
    png = tmp_path / "vt.png"
    assert vt.plot([1, 16, 64, 256, 1024], dict.fromkeys(names, 1e-6), str(png)) == []
    ax_bytes, ax_us = figures[0].axes
    assert (ax_us.get_xscale(), ax_bytes.get_xscale()) == ("log", "log")
    # 1 to 1,024 running, log axis, matplotlib's 5 % margins: 2^-0.5 to 2^10.5
    assert ax_us.get_xlim() == ax_bytes.get_xlim() == pytest.approx((2 ** -0.5, 2 ** 10.5))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
