"""Junk sent to a tcp port the harness binds (``--remote-runners``' data ports, a
spawned runner's tcp ports): libzmq reads a peer whose first byte is not 0xFF as ZMTP
1.0 and its bytes as frames, unless the socket has a ZAP domain
(``transport.LEGACY_GUARD_DOMAIN``); and a frame that a tcp port received is not
blamed on the runner, since any peer that speaks ZMTP 3 can send one
(``scheduler_loop.reply_origin``)."""

from __future__ import annotations

import random
import socket
import time

import pytest
import zmq

from ipc_bench.engine.messages import ModelRunnerOutput
from ipc_bench.harness.scheduler_loop import ChannelExchange, reply_origin, undecodable_text
from ipc_bench.harness.spec import CaseError
from ipc_bench.wire.codecs import DecodeError, MsgpackCodec
from ipc_bench.wire.transport import Endpoints, open_socket
from fault_helpers import steady_case


def _junk(seed: int) -> bytes:
    """5,000 random bytes whose first is not 0xFF (what ZMTP 3's greeting starts with)."""
    data = bytearray(random.Random(seed).randbytes(5000))
    data[0] = 0x2A
    return bytes(data)


def _frames_after_junk(pull: zmq.Socket, port: int) -> list[bytes]:
    """The frames ``pull`` (bound on 127.0.0.1:``port``) receives after three raw tcp
    connections send junk and a ZeroMQ PUSH sends ``b"from a ZMTP 3 peer"``."""
    for seed in range(3):
        with socket.create_connection(("127.0.0.1", port)) as raw:
            raw.sendall(_junk(seed))
            time.sleep(0.1)
    push = pull.context.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    push.connect(f"tcp://127.0.0.1:{port}")
    push.send(b"from a ZMTP 3 peer")
    got = []
    while pull.poll(500):
        got.append(pull.recv())
    push.close(linger=0)
    return got


def test_raw_junk_on_a_bound_tcp_port_becomes_no_frame():
    ctx = zmq.Context()
    try:
        pull = open_socket(ctx, zmq.PULL, "tcp://127.0.0.1:0", bind=True)
        port = int(pull.getsockopt_string(zmq.LAST_ENDPOINT).rsplit(":", 1)[1])
        assert _frames_after_junk(pull, port) == [b"from a ZMTP 3 peer"]
        # what the guard is for: a plain PULL takes the same junk as ZMTP 1.0 frames
        plain = ctx.socket(zmq.PULL)
        plain.setsockopt(zmq.LINGER, 0)
        port = plain.bind_to_random_port("tcp://127.0.0.1")
        got = _frames_after_junk(plain, port)
        assert len(got) > 3 and got.count(b"from a ZMTP 3 peer") == 1
    finally:
        ctx.destroy(linger=0)


class _StrictSocket(zmq.Socket):
    """A socket made enforcing its ZAP domain (what libzmq may make its default)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.setsockopt(zmq.ZAP_ENFORCE_DOMAIN, 1)


class _StrictContext(zmq.Context):
    _socket_class = _StrictSocket


def _received(sock: zmq.Socket, port: int) -> bytes | None:
    """What ``sock`` (bound on 127.0.0.1:``port``) gets of a plain PUSH's ``hello``."""
    push = zmq.Context.instance().socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    push.setsockopt(zmq.SNDTIMEO, 500)
    push.connect(f"tcp://127.0.0.1:{port}")
    try:
        push.send(b"hello")
    except zmq.Again:
        pass
    try:
        return sock.recv() if sock.poll(1000) else None
    finally:
        push.close(linger=0)


def test_a_guarded_tcp_port_does_not_enforce_its_domain():
    """The guard's domain is not enforced (``ZMQ_ZAP_ENFORCE_DOMAIN`` 0), so a ZMTP 3
    peer is admitted with no ZAP handler also where libzmq would enforce it: a socket
    made strict, as a later libzmq's default may be, refuses the same peer until
    ``open_socket`` sets it."""
    if not hasattr(zmq, "ZAP_ENFORCE_DOMAIN"):
        pytest.skip("this pyzmq has no ZAP_ENFORCE_DOMAIN")
    ctx = _StrictContext()
    try:
        strict = ctx.socket(zmq.PULL)
        strict.setsockopt(zmq.LINGER, 0)
        strict.setsockopt(zmq.ZAP_DOMAIN, b"ipc-bench-zmtp3-only")
        assert _received(strict, strict.bind_to_random_port("tcp://127.0.0.1")) is None
        pull = open_socket(ctx, zmq.PULL, "tcp://127.0.0.1:0", bind=True)
        assert pull.getsockopt(zmq.ZAP_ENFORCE_DOMAIN) == 0
        port = int(pull.getsockopt_string(zmq.LAST_ENDPOINT).rsplit(":", 1)[1])
        assert _received(pull, port) == b"hello"
    finally:
        ctx.destroy(linger=0)


def test_a_frame_on_a_tcp_port_is_not_blamed_on_the_runner():
    assert reply_origin("tcp://127.0.0.1:5702") == (
        "on the tcp port 5702: from the runner or another peer")
    assert reply_origin("ipc:///tmp/ipc-bench-x/r2s") is None
    assert undecodable_text(227, None) == (
        "undecodable ModelRunnerOutput from the runner (227 bytes)")
    assert undecodable_text(1234, reply_origin("tcp://127.0.0.1:5702")) == (
        "undecodable ModelRunnerOutput (1,234 bytes) on the tcp port 5702: from the runner "
        "or another peer")


class _Socks:
    def __init__(self, r2s: str):
        self.endpoints = Endpoints(s2r="tcp://127.0.0.1:5701", r2s=r2s, ctl="tcp://x:1")


class _Channel:
    def __init__(self, r2s: str):
        self.socks = _Socks(r2s)


@pytest.mark.parametrize("r2s,said", [
    ("tcp://127.0.0.1:5702",
     "step 0: undecodable ModelRunnerOutput (3 bytes) on the tcp port 5702: from the "
     "runner or another peer: "),
    ("ipc:///tmp/d/r2s", "step 0: undecodable ModelRunnerOutput from the runner (3 bytes): ")])
def test_the_exchange_names_where_an_undecodable_frame_came_in(r2s, said):
    spec = steady_case()
    exchange = ChannelExchange(spec, _Channel(r2s), result=None)
    frame = b"\x01\x02\x03"
    with pytest.raises(DecodeError) as expected:
        MsgpackCodec(ModelRunnerOutput).decode(frame)
    with pytest.raises(CaseError) as err:
        exchange._decode(frame, 0)
    assert str(err.value) == said + str(expected.value)
