"""pandas' C parser failing for want of memory on a run's ``steps.csv`` (under a tight
``ulimit -v``: ``Error tokenizing data. C error: out of memory``, or ``C error: Calling
read(nbytes) on source failed``) is a ``MemoryError``, which ``bench.py`` words as its
out-of-memory line (exit 1), not ``cannot read DIR/steps.csv: ...`` as for a damaged
file (exit 2)."""

from __future__ import annotations

import resource

import pandas as pd
import pytest

from ipc_bench.analysis import run_files
from ipc_bench.analysis.run_files import ResultsError

COLUMNS = ("seq", "step_ns")
NO_MEMORY = "Error tokenizing data. C error: out of memory"
READ_FAILED = ("Error tokenizing data. C error: Calling read(nbytes) on source failed. "
               "Try engine='python'.")
DAMAGED = "Error tokenizing data. C error: Expected 2 fields in line 3, saw 5"


def _address_space(monkeypatch, kib):
    real = resource.getrlimit

    def getrlimit(which):
        if which != resource.RLIMIT_AS:
            return real(which)
        return (resource.RLIM_INFINITY if kib is None else kib * 1024,
                resource.RLIM_INFINITY)
    monkeypatch.setattr(resource, "getrlimit", getrlimit)


def _reading_fails(monkeypatch, tmp_path, text):
    path = tmp_path / "steps.csv"
    path.write_text("seq,step_ns\n0,10\n1,12\n")

    def read_csv(*args, **kwargs):
        raise pd.errors.ParserError(text)
    monkeypatch.setattr(pd, "read_csv", read_csv)
    return lambda: run_files._read_csv(pd, path, COLUMNS, [])


@pytest.mark.parametrize("kib, text, raised", [
    (None, NO_MEMORY, MemoryError),
    (275_000, NO_MEMORY, MemoryError),
    (275_000, READ_FAILED, MemoryError),
    (None, READ_FAILED, ResultsError),  # no limit: the file's read failed
    (275_000, DAMAGED, ResultsError),
])
def test_a_parser_out_of_memory_is_a_memory_error(monkeypatch, tmp_path, kib, text, raised):
    _address_space(monkeypatch, kib)
    read = _reading_fails(monkeypatch, tmp_path, text)
    with pytest.raises(raised) as info:
        read()
    assert str(info.value) == f"cannot read {tmp_path / 'steps.csv'}: {text}"
