"""A memory shortage raised while a scenario builds its cases (numpy.random's library
not mapped under a ``ulimit -v``) is not blamed on the scenario: ``run._call_scenario``
lets it through to ``bench.py``'s out-of-memory line (exit 1), where it said ``scenario
NAME cannot be used: ... raised ImportError`` (exit 2); any other exception still is."""

from __future__ import annotations

import resource
import types

import pytest

from ipc_bench.cli import run
from ipc_bench.cli.options import UsageError

MODULE = types.SimpleNamespace(__file__="/s/decode_steady.py")
UNMAPPED = ImportError("/v/numpy/random/_generator.so: failed to map segment from shared "
                       "object")


def _raise(exc: BaseException):
    def call():
        raise exc
    return call


@pytest.fixture
def address_space_limit(monkeypatch):
    real = resource.getrlimit

    def getrlimit(which):
        return (125_000 * 1024, 125_000 * 1024) if which == resource.RLIMIT_AS else real(which)
    monkeypatch.setattr(resource, "getrlimit", getrlimit)


def test_an_unmapped_library_under_a_limit_passes_through(address_space_limit):
    with pytest.raises(ImportError) as caught:
        run._call_scenario("decode-steady", MODULE, "cases()", _raise(UNMAPPED))
    assert caught.value is UNMAPPED


def test_a_memory_error_passes_through():
    error = MemoryError()
    with pytest.raises(MemoryError) as caught:
        run._call_scenario("decode-steady", MODULE, "cases()", _raise(error))
    assert caught.value is error


def test_without_a_limit_an_import_error_is_the_scenarios(monkeypatch):
    real = resource.getrlimit
    monkeypatch.setattr(resource, "getrlimit", lambda which: (
        (resource.RLIM_INFINITY, resource.RLIM_INFINITY) if which == resource.RLIMIT_AS
        else real(which)))
    with pytest.raises(UsageError) as caught:
        run._call_scenario("decode-steady", MODULE, "cases()", _raise(UNMAPPED))
    assert str(caught.value) == (
        "scenario decode-steady cannot be used: /s/decode_steady.py cases() raised "
        "ImportError: /v/numpy/random/_generator.so: failed to map segment from shared "
        "object")


def test_another_error_is_still_the_scenarios(address_space_limit):
    with pytest.raises(UsageError) as caught:
        run._call_scenario("decode-steady", MODULE, "cases()", _raise(KeyError("x")))
    assert str(caught.value) == ("scenario decode-steady cannot be used: /s/decode_steady.py "
                                 "cases() raised KeyError: 'x'")
