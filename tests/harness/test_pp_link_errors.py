"""A stage whose peer is gone: gloo's error reaches the case's line as one sentence,
whether gloo fails the send as it is posted or later, and wherever gloo breaks its
advice to its own users."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from ipc_bench.wire.pp import StageLink, StageLinkError, _gloo_line

ADVICE = ("This is typically caused by a remote worker crashing. Check the logs of the "
          "remote worker before reporting an error. GLHF! \U0001f3d6\ufe0f")
CLOSED = "Connection closed by peer [127.0.0.1]:31662."


@pytest.mark.parametrize("text", [
    f"[../third_party/gloo/gloo/transport/tcp/pair.cc:534] {CLOSED} {ADVICE}",
    f"[../third_party/gloo/gloo/transport/tcp/pair.cc:534] {CLOSED}\n{ADVICE}",
    f"[../third_party/gloo/gloo/transport/tcp/pair.cc:534] {CLOSED} This is typically "
    "caused by a remote worker crashing.\nCheck the logs of the remote worker before "
    "reporting an error. GLHF!",
])
def test_gloos_advice_goes_wherever_its_lines_break(text):
    assert _gloo_line(RuntimeError(text)) == CLOSED[:-1]  # without gloo's full stop


class _ClosedPeer:
    """``torch.distributed`` whose ``isend`` fails as it is posted (the peer gone)."""

    def isend(self, tensor, dst):
        raise RuntimeError(f"[../third_party/gloo/gloo/transport/tcp/pair.cc:534] {CLOSED} "
                           f"{ADVICE}")


def test_a_send_the_peer_refuses_as_it_is_posted_is_a_link_error():
    import torch

    link = StageLink.__new__(StageLink)  # no process group: only the send path
    link.dist, link.torch, link._sends = _ClosedPeer(), torch, collections.deque()
    with pytest.raises(StageLinkError) as err:
        link._isend(np.zeros(4, dtype=np.float32), 1, "hidden states of step 9 to stage 1", 9)
    assert str(err.value) == f"hidden states of step 9 to stage 1: {CLOSED[:-1]}"
