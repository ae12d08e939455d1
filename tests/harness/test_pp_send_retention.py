"""What a ``--pp`` stage keeps of its hidden-state sends (``wire.pp.StageLink``).

gloo's ``Work.is_completed()`` stays false until ``wait()`` (torch 2.x), so the check in
``StageLink._isend`` never dropped a send and every step's hidden states stayed until
``finish``: 4,096 bytes a token, about 512 kB a step of stage 0 at 256 running under
``--pp 2``. Between steps a stage now waits for and drops the sends the scheduler's
window proves received (``StageLink.release_hidden``): at most ``pp`` steps' worth.

- With a fake ``torch.distributed`` whose sends complete only when waited on (as
  gloo's): ``release_hidden`` drops the hidden states of the steps up to the one it
  is given, in order, never the sampled ids, and the columns are the same.
- Two real stages (``--pp 2``, a steady case of 120 steps): stage 0 holds at most 2
  sends after each step whatever the step count, and the case's oracles and the
  bytes of every hop are as before (the scheduler's checks pass; the hidden states
  each stage handed to ``isend`` and received are 4,096 bytes a scheduled token).
"""

from __future__ import annotations

import json
import os
from dataclasses import replace

import numpy as np
import pytest

from fault_helpers import steady_case
from harness.test_e2e import assert_clean
from harness.test_tp import spy_on
from ipc_bench.engine.pipeline import HIDDEN_BYTES_PER_TOKEN
from ipc_bench.harness.spec import SCHED_COLUMNS
from ipc_bench.harness.supervisor import run_case

pytestmark = pytest.mark.timeout(240)

_COL = {name: i for i, name in enumerate(SCHED_COLUMNS)}


class _GlooSends:
    """``torch.distributed`` as ``StageLink._isend`` uses it: each ``isend`` returns a
    work that is completed only once waited on (gloo's ``SendWork``); ``waited`` lists
    the ``(dst, first value)`` of each send waited for, in order."""

    def __init__(self):
        self.waited: list[tuple[int, int]] = []

    def isend(self, tensor, dst):
        return _Work(self, dst, int(tensor.numpy().reshape(-1)[0]))


class _Work:
    def __init__(self, dist, dst, first):
        self.dist, self.dst, self.first, self.done = dist, dst, first, False

    def is_completed(self):
        return self.done

    def wait(self, timeout=None):  # StageLink passes the peer timeout
        self.done = True
        self.dist.waited.append((self.dst, self.first))
        return True


def _link(rank: int, size: int):
    from ipc_bench.wire.pp import StageLink

    link = StageLink("unused", rank, 1, 0.5)  # one stage: no group
    link.size, link.rank = size, rank
    link.next = rank + 1 if rank < size - 1 else None
    link.last = size - 1
    link.dist = _GlooSends()
    import torch

    link.torch = torch  # a one-stage link imports none
    return link


def test_release_drops_the_hidden_states_of_the_steps_the_window_proves_received():
    link = _link(0, 4)
    held = []
    for seq in range(10):
        hidden = np.full((3, 2048), seq, np.int16)
        link.send_hidden(hidden, seq)
        link.release_hidden(seq - 4)  # as StageLoop: the step just served less pp
        held.append([s[3] for s in link._sends])
    # the sends of the last 4 steps stay, older ones are waited for and dropped
    assert held == [[0], [0, 1], [0, 1, 2], [0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5],
                    [3, 4, 5, 6], [4, 5, 6, 7], [5, 6, 7, 8], [6, 7, 8, 9]]
    assert link.dist.waited == [(1, s) for s in range(6)]
    assert link.columns["pp_out_bytes"] == [3 * 2048 * 2] * 10
    link.finish()
    assert (len(link._sends), link.dist.waited) == (0, [(1, s) for s in range(10)])


def test_an_empty_step_sends_nothing_and_release_goes_past_it():
    link = _link(0, 2)
    link.send_hidden(np.full((2, 2048), 7, np.int16), 0)
    link.send_hidden(np.zeros((0, 2048), np.int16), 1)  # no token scheduled
    link.send_hidden(np.full((1, 2048), 9, np.int16), 2)
    link.release_hidden(1)
    assert ([s[3] for s in link._sends], link.dist.waited) == ([2], [(1, 7)])
    assert link.columns["pp_out_bytes"] == [2 * 4096, 0, 4096]


def test_release_leaves_the_sampled_ids_to_finish():
    # the last stage's ids: a stage receives them only once it needs them, which no
    # window bounds, so waiting for one between steps could wait for ever
    link = _link(2, 3)
    for seq in range(5):
        link.send_ids(np.full(4, seq, np.int32), seq)
        link.release_hidden(seq)
    assert (len(link._sends), link.dist.waited) == (10, [])
    assert link.columns["pp_direct_out_bytes"] == [2 * 16] * 5
    link.finish()
    assert link.dist.waited == [(dst, s) for s in range(5) for dst in (0, 1)]


#: Every stage: after each ``release_hidden``, the steps of the sends it still holds,
#: appended to IPC_BENCH_TEST_HELD_LOG as a JSON line ``[rank, seq, [held steps]]``.
RECORD_HELD = '''
import json, os
if os.environ.get("IPC_BENCH_TEST_HELD_LOG"):
    from ipc_bench.wire import pp as _pp
    _real = _pp.StageLink.release_hidden

    def release_hidden(self, through):
        _real(self, through)
        with open(os.environ["IPC_BENCH_TEST_HELD_LOG"], "a") as f:
            f.write(json.dumps([self.rank, through, [s[3] for s in self._sends]]) + "\\n")

    _pp.StageLink.release_hidden = release_hidden
'''


def test_a_stage_holds_a_window_of_sends_and_reports_the_same_bytes(monkeypatch, tmp_path):
    (tmp_path / "sitecustomize.py").write_text(RECORD_HELD)
    monkeypatch.setenv("PYTHONPATH",
                       f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    log = tmp_path / "held.jsonl"
    monkeypatch.setenv("IPC_BENCH_TEST_HELD_LOG", str(log))
    spy = spy_on(monkeypatch)
    spec = replace(steady_case(8, policy="send", max_steps=120, pp=2), count="decode_only",
                   input_oracle_interval=10)
    result = run_case(spec)  # every stage passed the input oracle, or it raised
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    steps = len(result.sched_rows)
    assert steps == 120
    # stage 0 alone sends hidden states: after step s it holds those of s - 1 and s
    assert [r[0] for r in rows] == [0] * steps
    assert [r[1] for r in rows] == [s - 2 for s in range(steps)]
    assert [r[2] for r in rows] == [[0]] + [[s - 1, s] for s in range(1, steps)]
    tokens = [r[_COL["num_scheduled_tokens"]] for r in result.sched_rows]
    assert all(tokens)  # every step sent hidden states
    stage0, stage1 = result.tp_rank_columns
    assert stage0["pp_out_bytes"] == [t * HIDDEN_BYTES_PER_TOKEN for t in tokens]
    assert stage1["pp_in_bytes"] == stage0["pp_out_bytes"]
    assert all(p.returncode == 0 for p in spy.procs)
    assert_clean(spy)


def test_a_one_stage_link_imports_no_torch():
    """``--pp 1``: the one stage sends and receives nothing, so its link starts no gloo
    group and imports no torch (1.4 s of a stage's start), checked in a fresh process."""
    import subprocess
    import sys

    code = ("import sys; from ipc_bench.wire.pp import StageLink; "
            "link = StageLink('unused', 0, 1, 0.5); "
            "print(link.dist, link.torch, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out == "None None False\n"
