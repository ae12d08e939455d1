"""A ``--tp`` rank or ``--pp`` stage that dies before the first step leaves the case's
``failed_step`` ``None`` (``null`` in ``summary.json``, docs/metrics.md), as a
two-process case's; one that dies at step 0 is charged step 0.

Rank (stage) 1 SIGKILLs itself as its process starts (``DIE_AT_START``, a
``sitecustomize`` armed in the process whose command line ends with ``.../ctl1``), so
the scheduler notices it in the handshakes; or rank 0, whose reply the scheduler waits
for, as it reads step 0 (``DIE_AT_STEP_0``: on its first
``ModelRunner.update_states``), so the scheduler notices it at step 0.
"""

from __future__ import annotations

import re
import signal

import pytest

from fault_helpers import inject, steady_case
from harness.test_e2e import assert_clean
from harness.test_tp import spy_on
from ipc_bench.harness.spec import CaseError, CaseResult
from ipc_bench.harness.supervisor import run_case

pytestmark = pytest.mark.timeout(180)

DIE_AT_START = '''
import os, signal, sys
if os.environ.get("IPC_BENCH_TEST_DIE_AT_START") and sys.argv[-1].endswith("/ctl1"):
    os.kill(os.getpid(), signal.SIGKILL)
'''

DIE_AT_STEP_0 = '''
import os, signal, sys
if os.environ.get("IPC_BENCH_TEST_DIE_AT_STEP_0") and sys.argv[-1].endswith("/ctl0"):
    from ipc_bench.engine import model_runner as _mr

    def update_states(self, so):
        os.kill(os.getpid(), signal.SIGKILL)

    _mr.ModelRunner.update_states = update_states
'''

#: Where the scheduler may notice rank 1 gone in the handshakes.
HANDSHAKE_WAITS = r"(sending handshake to rank [01]|waiting for handshake replies)"


@pytest.mark.parametrize("kind", ["tp", "pp"])
def test_a_rank_dead_in_the_handshake_has_no_failed_step(monkeypatch, tmp_path, kind):
    inject(monkeypatch, tmp_path, DIE_AT_START, IPC_BENCH_TEST_DIE_AT_START="1")
    spy = spy_on(monkeypatch)
    result = CaseResult(spec=steady_case(8, policy="send", max_steps=40, **{kind: 2}))
    with pytest.raises(CaseError) as err:
        run_case(result.spec, result=result)
    who = "rank" if kind == "tp" else "stage"
    waits = HANDSHAKE_WAITS.replace("rank", who) if kind == "pp" else HANDSHAKE_WAITS
    assert re.fullmatch(rf"{who} 1: runner process {spy.procs[1].pid} was killed by SIGKILL, "
                        rf"noticed while {waits}", str(err.value)), str(err.value)
    assert (err.value.step, result.failed_step) == (None, None)
    assert result.sched_rows == []
    assert spy.procs[1].returncode == -signal.SIGKILL
    assert_clean(spy)


def test_a_rank_dead_at_step_0_is_charged_step_0(monkeypatch, tmp_path):
    inject(monkeypatch, tmp_path, DIE_AT_STEP_0, IPC_BENCH_TEST_DIE_AT_STEP_0="1")
    spy = spy_on(monkeypatch)
    result = CaseResult(spec=steady_case(8, policy="send", max_steps=40, tp=2))
    with pytest.raises(CaseError) as err:
        run_case(result.spec, result=result)
    assert str(err.value).startswith(f"rank 0: runner process {spy.procs[0].pid} was "
                                     "killed by SIGKILL, noticed "), str(err.value)
    assert (err.value.step, result.failed_step) == (0, 0)
    assert result.sched_rows == []
    assert_clean(spy)
