"""An arm writes its pyperf file as a benchmark ends, before the coordinator hears of
it: a signal between the two keeps a benchmark that was not counted yet. The interrupt
line counts what the kept files hold, so it never reads ``after 0 of 8 benchmarks; the
benchmarks finished until then are kept in ...``."""

from __future__ import annotations

import argparse

import pyperf

from ipc_bench.analysis import microbench
from ipc_bench.harness import signals


def _one_benchmark_file(path) -> None:
    run = pyperf.Run([0.001, 0.0011], metadata={"name": "encode_send"},
                     collect_metadata=False)
    pyperf.BenchmarkSuite([pyperf.Benchmark([run])]).dump(str(path))


def _interrupted_after(tmp_path, monkeypatch, done: int, write: bool):
    out = microbench._Output(dir=tmp_path, arms=["send", "cached"], earlier=[], created=False)
    if write:
        _one_benchmark_file(out.new("send.json"))

    def coordinate(ns, rest, selection, how, state):
        state.update(total=8, out=out, done=done)
        raise signals.Interrupted(130)

    monkeypatch.setattr(microbench, "_coordinate", coordinate)
    monkeypatch.setattr("ipc_bench.analysis.results.check_run_dir", lambda *a, **k: None)
    monkeypatch.setattr("ipc_bench.analysis.results.read_summary", lambda *a, **k: {})
    return microbench.coordinate(argparse.Namespace(run_dir=str(tmp_path)), [], None, None)


def test_a_benchmark_written_but_not_counted_is_counted(tmp_path, monkeypatch, capsys):
    assert _interrupted_after(tmp_path, monkeypatch, done=0, write=True) == 130
    assert capsys.readouterr().err == (
        "bench.py microbench: interrupted by SIGINT after 1 of 8 benchmarks; the benchmarks "
        f"finished until then are kept in {tmp_path / 'send.json'} (exit 130)\n")
    assert len(pyperf.BenchmarkSuite.load(str(tmp_path / "send.json")).get_benchmarks()) == 1


def test_nothing_written_is_nothing_counted(tmp_path, monkeypatch, capsys):
    assert _interrupted_after(tmp_path, monkeypatch, done=0, write=False) == 130
    assert capsys.readouterr().err == (
        "bench.py microbench: interrupted by SIGINT after 0 of 8 benchmarks; nothing was "
        "written (exit 130)\n")


def test_the_coordinators_count_stands_where_it_is_ahead(tmp_path, monkeypatch, capsys):
    assert _interrupted_after(tmp_path, monkeypatch, done=3, write=True) == 130
    err = capsys.readouterr().err
    assert err.startswith("bench.py microbench: interrupted by SIGINT after 3 of 8 benchmarks; ")
    assert err.endswith(" (exit 130)\n") and err.count("\n") == 1
