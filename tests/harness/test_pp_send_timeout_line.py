"""A ``--pp`` send that runs out of ``--peer-timeout`` (``wire.pp.StageLink``).

A send's wait passes the peer timeout (``Work.wait(timeout=...)``). Where it ran out,
gloo raised ``Timed out waiting 500ms for send operation to complete``, which the stage
printed as it was, without the option to raise that a receive's line names; and a wait
that returned false (gloo's abort path, which a receive takes as a timeout) was ignored,
so a send that did not complete passed silently. Both are now one line naming the step,
the stage and the option: ``hidden states of step 3 to stage 1: not received within
0.5 s (raise --peer-timeout)``.
"""

from __future__ import annotations

import numpy as np
import pytest

from ipc_bench.wire.pp import StageLink, StageLinkError

LINE = "hidden states of step 3 to stage 1: not received within 0.5 s (raise --peer-timeout)"


class _SendWork:
    """``torch.distributed`` as ``StageLink``'s sends use it: every ``isend``'s work is
    pending until waited; its wait raises ``error`` where one is given, else returns
    ``done``."""

    def __init__(self, error: str = "", done: bool = True):
        self.error, self.done = error, done

    def isend(self, tensor, dst):
        return self

    def is_completed(self):
        return False

    def wait(self, timeout=None):
        if self.error:
            raise RuntimeError(self.error)
        return self.done


def _finish(dist) -> str:
    import torch

    link = StageLink("unused", 0, 1, 0.5, first_timeout_s=60.0)  # one stage: no group
    link.next = 1
    link.torch, link.dist = torch, dist
    link.send_hidden(np.zeros((2, 3), np.int16), 3)
    with pytest.raises(StageLinkError) as err:
        link.finish()
    return str(err.value)


def test_a_send_that_gloo_times_out_names_the_option():
    assert _finish(_SendWork("[/gloo/transport/tcp/unbound_buffer.cc:129] Timed out "
                             "waiting 500ms for send operation to complete")) == LINE


def test_a_send_whose_wait_returns_false_is_the_same_timeout():
    assert _finish(_SendWork(done=False)) == LINE


def test_another_gloo_failure_keeps_its_words():
    assert _finish(_SendWork("[/gloo/transport/tcp/pair.cc:598] Connection closed by "
                             "peer [127.0.0.1]:4242")) == (
        "hidden states of step 3 to stage 1: Connection closed by peer [127.0.0.1]:4242")
