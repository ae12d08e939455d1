"""Run files that end in NUL bytes (a crash, or a file system that allocates a file's
blocks before they are written, leaves them): the loader finds the padding from the
file's end and never reads it into memory, a ``summary.json`` so padded (or larger
than ``SUMMARY_MAX_BYTES``) is refused unread, and a CSV file is read as if it ended
before its padding, in one line. The files here are sparse (``truncate``), so a
multi-GiB one costs no disk; each test counts the bytes the loader reads."""

from __future__ import annotations

import builtins
import os
import shutil
import warnings
from pathlib import Path

import pytest

from analysis_run import four_case_copy
from ipc_bench.analysis import results, run_files
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsError, ResultsWarning, nul_padding

GiB = 1 << 30


@pytest.fixture(scope="module")
def four_case_run(tmp_path_factory):
    return four_case_copy(tmp_path_factory, tmp_path_factory.mktemp("runs") / "padded")


class _Reads:
    """``open`` for ``results`` that counts the bytes read through what it opens, and
    fails a test past ``limit``."""

    def __init__(self, limit: int):
        self.limit, self.total = limit, 0

    def __call__(self, *args, **kwargs):
        f = builtins.open(*args, **kwargs)
        reads, count = f.read, self

        class Counted:
            def __getattr__(self, name):
                return getattr(f, name)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                f.close()

            def read(self, n=-1):
                data = reads(n)
                count.total += len(data)
                assert count.total <= count.limit, f"read {count.total:,} bytes"
                return data

            def readline(self, n=-1):
                data = f.readline(n)
                count.total += len(data)
                assert count.total <= count.limit, f"read {count.total:,} bytes"
                return data

        return Counted()


def _copy(run: Path, where: Path) -> Path:
    shutil.copytree(run, where)
    return where


def _pad(path: Path, size: int) -> int:
    """``path`` grown to ``size`` bytes with a sparse tail; returns the padding."""
    before = path.stat().st_size
    os.truncate(path, size)
    return size - before


def _no_whole_reads(monkeypatch, limit: int) -> _Reads:
    reads = _Reads(limit)
    monkeypatch.setattr(run_files, "open", reads, raising=False)

    def whole(self, *args, **kwargs):
        raise AssertionError(f"{self} read whole")

    monkeypatch.setattr(Path, "read_text", whole)
    monkeypatch.setattr(Path, "read_bytes", whole)
    return reads


def test_a_summary_padded_to_4_gib_is_refused_unread(four_case_run, tmp_path, monkeypatch):
    run = _copy(four_case_run, tmp_path / "run")
    padding = _pad(run / "summary.json", 4 * GiB)
    reads = _no_whole_reads(monkeypatch, 1 << 20)
    with pytest.raises(ResultsError) as err:
        results.read_summary(run)
    assert str(err.value) == (f"cannot read {run / 'summary.json'}: it ends in "
                              f"{padding:,} bytes of NUL padding (a crash can leave it)")
    assert reads.total < 1 << 20


def test_a_summary_over_the_cap_is_refused_unread(four_case_run, tmp_path, monkeypatch):
    run = _copy(four_case_run, tmp_path / "run")
    size = (run / "summary.json").stat().st_size
    monkeypatch.setattr(run_files, "SUMMARY_MAX_BYTES", size - 1)
    reads = _no_whole_reads(monkeypatch, 1 << 20)
    with pytest.raises(ResultsError) as err:
        results.read_summary(run)
    assert str(err.value) == (
        f"cannot read {run / 'summary.json'}: {size:,} bytes, more than the {size - 1:,} "
        "a run's summary.json is read up to (SUMMARY_MAX_BYTES: a run of about 5,500 "
        "cases of one workload writes that much)")
    assert reads.total < 1 << 20


def test_an_empty_summary_says_so(tmp_path):
    (tmp_path / "summary.json").write_bytes(b"")
    with pytest.raises(ResultsError) as err:
        results.read_summary(tmp_path)
    assert str(err.value) == (f"cannot read {tmp_path / 'summary.json'}: it is empty "
                              "(0 bytes), not JSON")


def test_the_cap_is_1_gib():
    assert run_files.SUMMARY_MAX_BYTES == GiB


@pytest.mark.parametrize("name", ["steps.csv", "requests.csv"])
def test_a_csv_padded_to_3_gib_loads_its_rows_in_one_line(four_case_run, tmp_path,
                                                          monkeypatch, name):
    intact = load(four_case_run)
    run = _copy(four_case_run, tmp_path / "run")
    path = run / name
    content = path.stat().st_size
    padding = _pad(path, 3 * GiB)
    reads = _Reads(64 << 20)
    monkeypatch.setattr(run_files, "open", reads, raising=False)
    with pytest.warns(ResultsWarning) as caught:
        res = load(run)
    message = (f"{path}: it ends in {padding:,} bytes of NUL padding (a crash can leave "
               "it); left out; loaded what is valid")
    assert [str(w.message) for w in caught] == [message]
    assert res.warnings == {"run": [message]}
    assert len(res.steps) == len(intact.steps) and len(res.requests) == len(intact.requests)
    assert res.steps["step_ns"].tolist() == intact.steps["step_ns"].tolist()
    assert content < reads.total < 64 << 20


def test_a_csv_of_only_padding_is_an_emptied_file(four_case_run, tmp_path, monkeypatch):
    run = _copy(four_case_run, tmp_path / "run")
    (run / "steps.csv").write_bytes(b"")
    os.truncate(run / "steps.csv", GiB)
    reads = _Reads(1 << 20)
    monkeypatch.setattr(run_files, "open", reads, raising=False)
    with warnings.catch_warnings(), pytest.raises(ResultsError) as err:
        warnings.simplefilter("ignore", ResultsWarning)
        load(run)
    assert str(err.value) == (f"{run}: not a complete run folder (steps.csv is empty but "
                              f"for {GiB:,} bytes of NUL padding, which a crash can leave)")
    assert reads.total < 1 << 20


def test_padding_written_out_is_read_back_in_bounded_pieces(tmp_path, monkeypatch):
    path = tmp_path / "f.csv"
    path.write_bytes(b"a,b\n1,2\n" + b"\0" * (5 * (1 << 20) + 3))
    biggest = []
    real = _Reads(1 << 40)

    def opened(*args, **kwargs):
        f = real(*args, **kwargs)
        read = f.read

        def one(n=-1):
            assert n != -1
            data = read(n)
            biggest.append(len(data))
            return data
        f.read = one
        return f

    monkeypatch.setattr(run_files, "open", opened, raising=False)
    assert nul_padding(path) == 5 * (1 << 20) + 3
    assert max(biggest) == run_files._TAIL_MAX_READ == 1 << 20
    # the padding, the 8 bytes before it and the first KiB (wide_text)
    assert real.total == 5 * (1 << 20) + 3 + 8 + run_files._WIDE_HEAD == 5 * (1 << 20) + 1035
    for data, want in [(b"", 0), (b"a\n", 0), (b"\0", 1), (b"a\n\0\0", 2)]:
        path.write_bytes(data)
        assert nul_padding(path) == want


@pytest.mark.parametrize("encoding, name", [
    ("utf-16", "UTF-16"), ("utf-16-le", "UTF-16"), ("utf-16-be", "UTF-16"),
    ("utf-32", "UTF-32"), ("utf-32-be", "UTF-32")])
def test_a_utf16_summary_is_named_so_not_padding(four_case_run, tmp_path, encoding, name):
    # UTF-16-LE text ends in '\n\x00' (was: 'it ends in 1 bytes of NUL padding')
    run = _copy(four_case_run, tmp_path / "run")
    path = run / "summary.json"
    path.write_bytes(path.read_text(encoding="utf-8").encode(encoding))
    with pytest.raises(ResultsError) as err:
        results.read_summary(run)
    assert str(err.value) == f"cannot read {path}: it is {name} text, not UTF-8"


@pytest.mark.parametrize("encoding, name", [("utf-16", "UTF-16"), ("utf-16-le", "UTF-16"),
                                            ("utf-32-le", "UTF-32")])
def test_a_utf16_csv_is_named_so_in_one_line(four_case_run, tmp_path, encoding, name):
    run = _copy(four_case_run, tmp_path / "run")
    path = run / "requests.csv"
    path.write_bytes(path.read_text(encoding="utf-8").encode(encoding))
    with pytest.warns(ResultsWarning) as caught:
        load(run)
    assert [str(w.message) for w in caught] == [
        f"{path}: it is {name} text, not UTF-8, so its 12 rows are left out, and it holds 0 of the "
        "12 rows that summary.json counts (4 case(s) short: num_running=2/send/msgpack#0: 0 of "
        "2; num_running=2/cached/msgpack#0: 0 of 2; num_running=4/send/msgpack#0: 0 of 4; "
        "1 more); loaded what is valid"]


@pytest.mark.parametrize("data, want", [
    (b"\xff\xfea\x00", "UTF-16"), (b"\xfe\xff\x00a", "UTF-16"),
    (b"\xff\xfe\x00\x00a\x00\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff\x00\x00\x00a", "UTF-32"),
    (b"a\x00,\x00b\x00\n\x00", "UTF-16"), (b"\x00a\x00,\x00b\x00\n", "UTF-16"),
    (b"a\x00\x00\x00\n\x00\x00\x00", "UTF-32"),
    (b"a,b\n1,2\n" + b"\0" * 4096, None), (b"\0" * 4096, None), (b"", None),
    (b"a,b\n" + b"\0" * 100 + b"1,2\n", None)])
def test_wide_text_is_told_from_a_mark_or_interleaved_nuls(tmp_path, data, want):
    path = tmp_path / "f.csv"
    path.write_bytes(data)
    assert run_files.wide_text(path) == want
    assert nul_padding(path) == (0 if want else len(data) - len(data.rstrip(b"\0")))


def test_one_byte_of_padding_is_one_byte(four_case_run, tmp_path):
    run = _copy(four_case_run, tmp_path / "run")
    with open(run / "summary.json", "ab") as f:
        f.write(b"\0")
    with pytest.raises(ResultsError) as err:
        results.read_summary(run)
    assert str(err.value) == (f"cannot read {run / 'summary.json'}: it ends in 1 byte of "
                              "NUL padding (a crash can leave it)")
    assert run_files.nul_bytes(2) == "2 bytes of NUL padding"
