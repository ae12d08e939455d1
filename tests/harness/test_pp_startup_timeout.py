"""``--pp N`` start-up: the stages' rendezvous has the start-up allowance, the steps the
peer timeout (``wire.pp``'s docstring).

gloo's group has one timeout (``init_process_group(timeout=...)``), which bounds its
rendezvous. It used to be ``--peer-timeout``, so a stage that reached the rendezvous
more than one peer timeout after another (its torch import on a loaded machine) failed
the case at start-up (``runner could not start: RuntimeError: Wait timeout``), whatever
``--startup-timeout`` allowed. Now the group's timeout, and the join of a tcp store, are
the start-up allowance, and each step's wait, send or receive, passes the peer timeout
as its own ``Work.wait(timeout=...)``.

- Two stages, the second entering the rendezvous 3 s after the first, meet under a
  0.5 s peer timeout and pass step 0's hidden states.
- A ``--pp 2`` case whose stage 1 reaches the rendezvous 8 s after stage 0 (a
  ``sitecustomize`` hook: it waits for stage 0's rendezvous file, then 8 s) completes
  under a 5 s peer timeout (the steps' own timeout: this case must pass its later
  steps too, and 5 s leaves them room on a busy 2-core machine; ``test_pp``'s
  first-forward-past-the-allowance case keeps 0.5 s because it ends at step 0 by
  design); the same case's stage 0 takes 10 s longer over its step 0 (a first forward
  that compiles), which stage 1 waits out with the start-up allowance.
- A rendezvous that runs out of the allowance names it and the option to raise.
- A tcp store's join runs out with the allowance, not the peer timeout.
- A send's wait passes the peer timeout (the group's, the allowance, would bound it
  otherwise).
"""

from __future__ import annotations

import datetime
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from fault_helpers import REPO, steady_case
from harness.test_e2e import assert_clean
from harness.test_pp import SLOW_FIRST_ON_STAGE_0
from harness.test_tp import spy_on
from ipc_bench.harness.supervisor import run_case
from ipc_bench.wire.pp import StageLink, StageLinkError

pytestmark = pytest.mark.timeout(240)

#: Stage 1 only: its ``StageLink`` (the join of the gloo group) starts
#: IPC_BENCH_TEST_LATE_RENDEZVOUS_S seconds after stage 0 created the rendezvous file
#: (``FileStore``), which stage 0 does just before it waits in gloo's rendezvous; the
#: seconds waited in all go to IPC_BENCH_TEST_LATE_LOG.
LATE_RENDEZVOUS_ON_STAGE_1 = '''
import os, sys
if os.environ.get("IPC_BENCH_TEST_LATE_RENDEZVOUS_S") and sys.argv[-1].endswith("/ctl1"):
    import time
    from ipc_bench.wire import pp as _pp
    _delay_s = float(os.environ["IPC_BENCH_TEST_LATE_RENDEZVOUS_S"])
    _real = _pp.StageLink.__init__

    def __init__(self, store_path, *args, **kwargs):
        deadline = time.monotonic() + 120
        while not os.path.exists(store_path) and time.monotonic() < deadline:
            time.sleep(0.01)
        if os.path.exists(store_path):
            time.sleep(_delay_s)
            with open(os.environ["IPC_BENCH_TEST_LATE_LOG"], "a") as f:
                f.write(f"late by {_delay_s:g} s\\n")
        _real(self, store_path, *args, **kwargs)

    _pp.StageLink.__init__ = __init__
'''


def test_a_case_whose_stages_meet_late_and_whose_first_forward_is_slow_completes(
        monkeypatch, tmp_path):
    """Under a 5 s peer timeout and a 60 s start-up allowance, one case of two stages
    (each stage imports torch, so one case serves both checks):

    - stage 1 enters gloo's rendezvous 8 s after stage 0: the case runs its 12 steps (it
      failed with ``runner could not start: RuntimeError: Wait timeout`` when the peer
      timeout bounded the rendezvous);
    - stage 0's step 0 takes 10 s longer than the others (``test_pp``'s
      ``SLOW_FIRST_ON_STAGE_0``: a first forward that compiles): stage 1 waits for its
      hidden states with the start-up allowance, and the case completes. Under send:
      the hidden states' wait is the same under direct, and step 0's direct ids, which
      stage 0 itself holds up here, wait the same allowance (``test_pp``'s
      ``test_a_receive_between_stages_waits_the_startup_allowance_at_step_0_only``).
      The margins are seconds both ways: the case's other waits, under the peer
      timeout, may stall 5 s on a busy machine (0.5 s failed its steps at a load of
      10-16 on 2 cores, and 2.5 s its end of warm-up's heap collection under nice 10 at
      a load of 10), and step 0 outlasts that timeout by 5 s, so a wait under it would
      fail."""
    # each hook a module of its own: both keep module globals of the same names
    (tmp_path / "late_rendezvous_hook.py").write_text(LATE_RENDEZVOUS_ON_STAGE_1)
    (tmp_path / "slow_first_hook.py").write_text(SLOW_FIRST_ON_STAGE_0)
    (tmp_path / "sitecustomize.py").write_text("import late_rendezvous_hook\n"
                                               "import slow_first_hook\n")
    monkeypatch.setenv("PYTHONPATH",
                       f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("IPC_BENCH_TEST_LATE_RENDEZVOUS_S", "8")
    monkeypatch.setenv("IPC_BENCH_TEST_SLOW_FIRST_S", "10")
    log = tmp_path / "late.txt"
    monkeypatch.setenv("IPC_BENCH_TEST_LATE_LOG", str(log))
    spy = spy_on(monkeypatch)
    result = run_case(steady_case(8, policy="send", max_steps=12, pp=2, peer_timeout_s=5.0,
                                  startup_timeout_s=60.0))
    assert len(result.sched_rows) == 12
    assert log.read_text() == "late by 8 s\n"
    assert [p.returncode for p in spy.procs] == [0, 0]
    assert_clean(spy)


#: One stage of two meeting through the FileStore argv[1]: stage 1 starts its link
#: argv[3] seconds after the store file appears; stage 0 sends step 0's hidden states,
#: stage 1 prints them; stage 0 waits for its send once told to (stdin).
_STAGE = textwrap.dedent("""
    import os, sys, time, numpy as np
    from ipc_bench.wire.pp import StageLink
    path, rank, late_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    if rank == 1:
        while not os.path.exists(path):
            time.sleep(0.01)
        time.sleep(late_s)
    link = StageLink(path, rank, 2, 0.5, first_timeout_s=60.0)
    if rank == 0:
        link.send_hidden(np.arange(6, dtype=np.int16).reshape(2, 3), 0)
        sys.stdin.readline()
        link.finish()
    else:
        print(link.recv_hidden((2, 3), np.int16, 0).tolist(), flush=True)
    link.close()
""")


def test_two_stages_meet_under_a_small_peer_timeout_when_one_comes_late(tmp_path):
    """Peer timeout 0.5 s, start-up allowance 60 s (``first_timeout_s``, which the
    rendezvous takes when no ``startup_timeout_s`` is given), stage 1 3 s late: both
    join and step 0's hidden states pass (stage 0 failed with ``Wait timeout`` after
    0.5 s when the peer timeout was the group's)."""
    path = str(tmp_path / "pp-store")
    stages = [subprocess.Popen([sys.executable, "-c", _STAGE, path, str(r), "3"], cwd=REPO,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for r in range(2)]
    try:
        out1, err1 = stages[1].communicate(timeout=120)
        out0, err0 = stages[0].communicate("go\n", timeout=60)
    finally:
        for s in stages:
            if s.poll() is None:
                s.kill()
                s.communicate()
    assert [s.returncode for s in stages] == [0, 0], (err0, err1)
    assert out1 == "[[0, 1, 2], [3, 4, 5]]\n"
    assert out0 == ""


def test_a_rendezvous_past_the_startup_allowance_names_it(monkeypatch, tmp_path):
    """A stage alone in a group of two gives up after its 1 s start-up allowance, not its
    30 s peer timeout, in one line naming the store, the allowance and the option. In
    this process (this worker has torch imported; a stage's own process would import it
    again): the failed rendezvous leaves no process group behind."""
    import torch.distributed as dist

    monkeypatch.delenv("GLOO_SOCKET_IFNAME", raising=False)  # StageLink sets it
    path = str(tmp_path / "pp-store")
    with pytest.raises(StageLinkError) as err:
        StageLink(path, 0, 2, 30.0, first_timeout_s=60.0, startup_timeout_s=1.0)
    assert str(err.value) == (f"stage 0: gloo's rendezvous through the stages' store at "
                              f"{path} did not complete within 1 s (raise --startup-timeout): "
                              f"Wait timeout")
    assert not dist.is_initialized()


def test_a_tcp_store_join_runs_out_with_the_startup_allowance():
    """The join of a store that does not answer waits the start-up allowance (1 s), not
    the peer timeout (0.2 s)."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(StageLinkError) as err:
        StageLink(f"tcp://127.0.0.1:{port}", 0, 2, 0.2, first_timeout_s=60.0,
                  startup_timeout_s=1.0)
    assert str(err.value) == (f"stage 0: cannot join the stages' store at "
                              f"tcp://127.0.0.1:{port} within 1 s: Connection refused")


class _GlooSend:
    """``torch.distributed`` as ``StageLink``'s sends use it: every ``isend``'s work is
    pending until waited; each ``wait``'s timeout is recorded (seconds, ``None`` for
    none), and the wait fails with ``error`` where one is given."""

    def __init__(self, error: str = ""):
        self.error, self.waits_s = error, []

    def isend(self, tensor, dst):
        return self

    def is_completed(self):
        return False

    def wait(self, timeout=None):
        self.waits_s.append(None if timeout is None else timeout.total_seconds())
        if self.error:
            raise RuntimeError(self.error)
        return True


def test_a_send_waits_the_peer_timeout():
    """A send's wait, at a window's release or at the end, passes the peer timeout
    (0.5 s), a step 0 send's too; its timeout names the option to raise."""
    import torch

    link = StageLink("unused", 0, 1, 0.5, first_timeout_s=60.0)  # one stage: no group
    link.next = 1
    link.torch, link.dist = torch, _GlooSend()
    for seq in range(3):
        link.send_hidden(np.zeros((2, 3), np.int16), seq)
    link.release_hidden(0)
    link.finish()
    assert link.dist.waits_s == [0.5, 0.5, 0.5]
    assert isinstance(link._waits[0][2], datetime.timedelta)
    link.dist = _GlooSend("[/gloo/transport/tcp/unbound_buffer.cc:129] Timed out waiting "
                          "500ms for send operation to complete")
    link.send_hidden(np.zeros((2, 3), np.int16), 3)
    with pytest.raises(StageLinkError) as err:
        link.finish()
    assert str(err.value) == ("hidden states of step 3 to stage 1: not received within "
                              "0.5 s (raise --peer-timeout)")
