"""The scheduler's heap freeze (end of warm-up, floor) thaws only a heap it froze
itself: a heap its caller froze first stays frozen (``memory.freeze_heap``)."""
import gc
from dataclasses import replace

import pytest

from ipc_bench.engine.config import ModelConfig
from ipc_bench.harness.memory import freeze_heap, thaw_heap
from ipc_bench.harness.supervisor import run_case
from test_async import queued_spec


def test_freeze_heap_owns_only_an_unfrozen_heap():
    gc.unfreeze()
    assert freeze_heap() is True
    assert gc.get_freeze_count() > 0
    assert freeze_heap() is False  # already frozen: the first freeze's to undo
    thaw_heap(False)
    assert gc.get_freeze_count() > 0
    thaw_heap(True)
    assert gc.get_freeze_count() == 0


@pytest.mark.parametrize("floor", [False, True])
@pytest.mark.parametrize("caller_froze", [False, True])
def test_a_case_thaws_only_the_heap_it_froze(caller_froze, floor):
    spec = replace(queued_spec(ModelConfig(), False), floor=floor)
    gc.unfreeze()
    mine = [object()]
    if caller_froze:
        gc.freeze()
    frozen_before = gc.get_freeze_count()
    result = run_case(spec)
    assert result.error is None and result.warmup_pause_ns > 0
    if caller_froze:  # the caller's objects, and the case's with them, stay frozen
        assert gc.get_freeze_count() >= frozen_before > 0
        assert any(o is mine for o in gc.get_objects()) is False  # not in a generation
    else:
        assert gc.get_freeze_count() == 0
        assert any(o is mine for o in gc.get_objects())
