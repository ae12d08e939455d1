"""An ``inproc`` case (one process, no runner) with ``tp`` or ``pp`` set is refused by
``run_case``, not run with them ignored."""
from __future__ import annotations

from dataclasses import replace

import pytest

from harness.test_pp import batch_case
from ipc_bench.engine.config import ConfigError
from ipc_bench.harness.spec import INPROC
from ipc_bench.harness.supervisor import run_case


def test_inproc_case_with_tp_is_refused():
    spec = replace(batch_case(), transport=INPROC, codec="none", tp=2)
    with pytest.raises(ConfigError) as info:
        run_case(spec)
    assert str(info.value) == "an inproc case has no runner: tp=2 has no ranks to run; set tp=None"


def test_inproc_case_with_pp_is_refused():
    spec = replace(batch_case(), transport=INPROC, codec="none", pp=2)
    with pytest.raises(ConfigError) as info:
        run_case(spec)
    assert str(info.value) == ("an inproc case has no runner: pp=2 has no stages to run; "
                               "set pp=None")
