"""The worker's heap is frozen while a module- or session-scoped fixture is set up, not
only during the test (conftest's ``pytest_runtest_setup``): the runs such fixtures make
in process do full collections, which would otherwise walk every imported library."""

from __future__ import annotations

import gc

import pytest


@pytest.fixture(scope="module")
def freeze_count_in_module_fixture() -> int:
    return gc.get_freeze_count()


@pytest.fixture(scope="session")
def freeze_count_in_session_fixture() -> int:
    return gc.get_freeze_count()


def test_module_and_session_fixtures_run_on_a_frozen_heap(freeze_count_in_module_fixture,
                                                         freeze_count_in_session_fixture):
    assert freeze_count_in_module_fixture > 0
    assert freeze_count_in_session_fixture > 0
    assert gc.get_freeze_count() > 0
