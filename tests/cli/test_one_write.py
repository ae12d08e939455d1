"""``console.one_write``: what a block prints on stdout reaches it in one write, as a
run's end text does (the scripts' end tables: ``ring_bench.py``, ``byte_sweep.py``,
``codec_fit.py``, ``variant_table.py``, ``aa_false_positive.py``, ``hot_path_bench.py
--list``), so ``| head -1`` takes it whole and the command exits 0."""

from __future__ import annotations

import sys

import pytest

from ipc_bench.cli.console import one_write
from stdout_calls import WriteCalls


def test_a_block_prints_in_one_write(monkeypatch):
    out = WriteCalls(flushes=True)
    monkeypatch.setattr(sys, "stdout", out)
    with one_write():
        print("size B  transport")
        print("    64  zmq-ipc", flush=True)
        sys.stdout.write("end\n")
    assert out.writes == ["size B  transport\n    64  zmq-ipc\nend\n", "<flush>"]
    assert sys.stdout is out


def test_what_was_printed_before_an_error_is_written(monkeypatch):
    out = WriteCalls(flushes=True)
    monkeypatch.setattr(sys, "stdout", out)
    with pytest.raises(KeyError):
        with one_write():
            print("header")
            raise KeyError("row")
    assert out.writes == ["header\n", "<flush>"]


def test_nothing_printed_writes_nothing(monkeypatch):
    out = WriteCalls(flushes=True)
    monkeypatch.setattr(sys, "stdout", out)
    with one_write():
        pass
    assert out.writes == []
