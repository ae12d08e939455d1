"""Socket set-up failures (``ipc_bench.wire.transport``): every way a bind, a connect
or the socket folder can fail raises ``EndpointError`` with one line naming the
endpoint and the reason, closes what was opened so far (``Context.term`` returns at
once), and takes no longer than the failure itself.

Each test's ``pytest.mark.timeout`` turns a regression (a hang in ``term`` or in a
connect) into a failure. ``tests/harness/test_socket_faults.py`` runs the same faults
through ``bench.py`` and the runner's entry point.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time

import pytest
import zmq

from fault_helpers import has_ipv6_loopback
from ipc_bench.wire import transport
from ipc_bench.wire.transport import (EndpointDir, EndpointError, RunnerSockets,
                                      SchedulerSockets, check_endpoint, check_endpoints,
                                      check_host)

pytestmark = pytest.mark.timeout(60)



def assert_terminates(ctx: zmq.Context, within_s: float = 5.0) -> None:
    """``ctx.term()`` returns (it blocks while any socket of ``ctx`` is open)."""
    done = threading.Event()
    thread = threading.Thread(target=lambda: (ctx.term(), done.set()), daemon=True)
    thread.start()
    assert done.wait(within_s), "Context.term() blocked: a socket was left open"


def refusing_port() -> tuple[socket.socket, int]:
    """A TCP port of 127.0.0.1 held by a socket that does not listen (connects are
    refused, and nothing else can take the port while it is held)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    return s, s.getsockname()[1]


class FixedDir:
    """An ``EndpointDir`` stand-in at a path of the test's choosing."""

    def __init__(self, path) -> None:
        os.makedirs(path, exist_ok=True)
        self.path = str(path)


def dir_with_socket_path_of(tmp_path, size: int) -> FixedDir:
    """A folder whose ``.../s2r`` socket path is ``size`` bytes long."""
    base = f"{tmp_path}/"
    return FixedDir(base + "d" * (size - len(base) - len("/s2r")))


# ---------------------------------------------------------------------- the scheduler


def test_an_ipc_path_over_107_bytes_is_refused_and_107_binds(tmp_path):
    ctx = zmq.Context()
    too_long = dir_with_socket_path_of(tmp_path / "a", 108)
    with pytest.raises(EndpointError) as err:
        SchedulerSockets(ctx, "ipc", too_long)
    assert str(err.value) == (f"cannot bind ipc://{too_long.path}/s2r: the socket path is 108 "
                              "bytes, the limit is 107 (set TMPDIR to a shorter folder)")
    assert os.listdir(too_long.path) == []
    fits = dir_with_socket_path_of(tmp_path / "b", 107)
    socks = SchedulerSockets(ctx, "ipc", fits)
    assert socks.endpoints.s2r == f"ipc://{fits.path}/s2r"
    socks.close()
    assert_terminates(ctx)


def test_the_ipc_path_limit_counts_utf8_bytes_not_characters(tmp_path):
    ctx = zmq.Context()
    ascii_path = dir_with_socket_path_of(tmp_path / "a", 107).path
    fits = FixedDir(ascii_path[:-2] + "é")  # 106 characters, 107 bytes
    SchedulerSockets(ctx, "ipc", fits).close()
    too_long = FixedDir(ascii_path[:-1] + "é")  # 107 characters, 108 bytes
    with pytest.raises(EndpointError, match=r"the socket path is 108 bytes, the limit is 107"):
        SchedulerSockets(ctx, "ipc", too_long)
    assert_terminates(ctx)


@pytest.mark.parametrize("fail_at", [0, 1, 2])
def test_a_failed_bind_closes_the_sockets_bound_before_it(monkeypatch, fail_at):
    """Port in use on the first, second or third socket (``s2r``, ``r2s``, ``ctl``)."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    calls = []

    def endpoint(host):
        calls.append(host)
        return f"tcp://{host}:{port}" if len(calls) == fail_at + 1 else f"tcp://{host}:*"

    monkeypatch.setattr(transport, "tcp_bind_endpoint", endpoint)
    ctx = zmq.Context()
    try:
        with pytest.raises(EndpointError) as err:
            SchedulerSockets(ctx, "tcp", None)
        assert str(err.value) == (f"cannot bind tcp://127.0.0.1:{port}: Address already in use "
                                  "(another socket holds this port)")
        assert len(calls) == fail_at + 1
        assert_terminates(ctx)
    finally:
        holder.close()


@pytest.mark.parametrize("host,endpoint", [("192.0.2.1", "tcp://192.0.2.1:*"),
                                           ("8.8.8.8", "tcp://8.8.8.8:*"),
                                           ("2001:db8::1", "tcp://[2001:db8::1]:*")])
def test_an_address_not_on_this_machine_is_refused_at_once(host, endpoint):
    ctx = zmq.Context()
    t0 = time.monotonic()
    with pytest.raises(EndpointError) as err:
        SchedulerSockets(ctx, "tcp", None, host=host)
    assert time.monotonic() - t0 < 5.0  # at once: 1 s would leave a loaded machine none
    assert str(err.value) == (f"cannot bind {endpoint}: Cannot assign requested address "
                              "(not an address of this machine)")
    assert_terminates(ctx)


def test_a_removed_socket_folder_is_named_in_the_error(tmp_path):
    ctx = zmq.Context()
    gone = FixedDir(tmp_path / "gone")
    os.rmdir(gone.path)
    with pytest.raises(EndpointError) as err:
        SchedulerSockets(ctx, "ipc", gone)
    assert str(err.value) == (f"cannot bind ipc://{gone.path}/s2r: No such file or directory "
                              "(the socket folder does not exist)")
    assert_terminates(ctx)


@pytest.mark.parametrize("host", ["224.0.0.1", "ff02::1", "255.255.255.255"])
def test_multicast_and_broadcast_hosts_are_refused(host):
    """They bind, but nothing can connect to them."""
    with pytest.raises(ValueError) as err:
        check_host(host)
    kind = "the broadcast" if host == "255.255.255.255" else "a multicast"
    assert str(err.value) == (f"--host {host} is {kind} address; give an address of this "
                              "machine such as 127.0.0.1 or ::1")


# ---------------------------------------------------------------------- the socket folder


def test_a_socket_folder_that_cannot_be_created_is_one_line(monkeypatch, tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    monkeypatch.setattr(tempfile, "tempdir", str(not_a_dir))
    with pytest.raises(EndpointError) as err:
        EndpointDir()
    assert str(err.value) == f"cannot create a socket folder in {not_a_dir}: Not a directory"


@pytest.mark.parametrize("name", ["a b", "é字", "a%20b:c#d*e?f;g", "new\nline", "*"])
def test_odd_characters_in_tmpdir_work_and_leave_nothing(monkeypatch, bench_tmpdir, name):
    tmp = bench_tmpdir / name
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    check_endpoints("ipc")
    assert list(tmp.iterdir()) == []


def test_a_tmpdir_that_is_not_utf8_is_refused(monkeypatch, tmp_path):
    tmp = tmp_path / os.fsdecode(b"\xff")
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    with pytest.raises(EndpointError) as err:
        check_endpoints("ipc")
    assert str(err.value).endswith("/s2r: the socket path is not valid UTF-8 "
                                   "(set TMPDIR to another folder)")
    assert "/\\xff/" in str(err.value)  # escaped as the byte it is (`ls -b`), one line
    assert list(tmp.iterdir()) == []


def test_check_endpoints_connects_both_sides_and_leaves_nothing(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    check_endpoints("ipc")
    check_endpoints("tcp", "127.0.0.1")
    check_endpoints("tcp", "0.0.0.0")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(EndpointError, match=r"^cannot bind tcp://192\.0\.2\.1:\*: "):
        check_endpoints("tcp", "192.0.2.1")


# ---------------------------------------------------------------------- the runner


def test_connecting_to_a_missing_socket_file_fails_at_once(tmp_path):
    ctx = zmq.Context()
    endpoint = f"ipc://{tmp_path}/gone/ctl"
    t0 = time.monotonic()
    with pytest.raises(EndpointError) as err:
        RunnerSockets(ctx, endpoint)
    assert time.monotonic() - t0 < 5.0  # not the 10 s connect timeout
    assert str(err.value) == (f"cannot connect to {endpoint}: no such socket file "
                              "(is the scheduler still running?)")
    assert_terminates(ctx)


def test_connecting_to_a_socket_file_nobody_listens_on_fails_at_once(tmp_path):
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(f"{tmp_path}/ctl")  # a socket file, not listening: connects are refused
    ctx = zmq.Context()
    try:
        with pytest.raises(EndpointError) as err:
            RunnerSockets(ctx, f"ipc://{tmp_path}/ctl")
        assert str(err.value) == (f"cannot connect to ipc://{tmp_path}/ctl: connection refused "
                                  "(no process listens on that socket file)")
        assert_terminates(ctx)
    finally:
        stale.close()


def test_connecting_to_a_closed_tcp_port_fails_at_once():
    holder, port = refusing_port()
    ctx = zmq.Context()
    try:
        t0 = time.monotonic()
        with pytest.raises(EndpointError) as err:
            RunnerSockets(ctx, f"tcp://127.0.0.1:{port}")
        assert time.monotonic() - t0 < 5.0  # not the 10 s connect timeout
        assert str(err.value) == (f"cannot connect to tcp://127.0.0.1:{port}: connection "
                                  "refused or address unreachable")
        assert_terminates(ctx)
    finally:
        holder.close()


def test_a_peer_that_never_completes_the_handshake_times_out():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()  # the kernel accepts; nobody answers the ZMTP greeting
    port = listener.getsockname()[1]
    ctx = zmq.Context()
    try:
        t0 = time.monotonic()
        with pytest.raises(EndpointError) as err:
            RunnerSockets(ctx, f"tcp://127.0.0.1:{port}", connect_timeout_s=0.3)
        assert 0.29 <= time.monotonic() - t0 < 5.0  # its 0.3 s, not the default 10 s
        assert str(err.value) == (f"cannot connect to tcp://127.0.0.1:{port}: no ZeroMQ "
                                  "handshake within 0.3 s")
        assert err.value.timed_out is True
        assert_terminates(ctx)
    finally:
        listener.close()


def test_a_peer_that_is_not_zeromq_fails_the_handshake():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]

    def serve():
        conn, _ = listener.accept()
        conn.recv(64)
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n" + b"x" * 64)
        time.sleep(0.5)
        conn.close()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    ctx = zmq.Context()
    try:
        with pytest.raises(EndpointError) as err:
            RunnerSockets(ctx, f"tcp://127.0.0.1:{port}", connect_timeout_s=5.0)
        assert str(err.value) == (f"cannot connect to tcp://127.0.0.1:{port}: the ZeroMQ "
                                  "handshake failed (not a socket of this harness, or one of "
                                  "another kind)")
        assert_terminates(ctx)
    finally:
        server.join(5)
        listener.close()


def test_a_malformed_endpoint_is_refused_by_connect():
    ctx = zmq.Context()
    with pytest.raises(EndpointError) as err:
        RunnerSockets(ctx, "foo")
    assert str(err.value) == "cannot connect to foo: Invalid argument"
    assert_terminates(ctx)


def test_a_failed_data_connect_closes_the_data_sockets(tmp_path):
    ctx = zmq.Context()
    d = FixedDir(tmp_path / "s")
    sched = SchedulerSockets(ctx, "ipc", d)
    runner = RunnerSockets(ctx, sched.endpoints.ctl)
    with pytest.raises(EndpointError, match=r"^cannot connect to ipc://.*/gone: no such"):
        runner.connect_data(sched.endpoints.s2r, f"ipc://{tmp_path}/gone")
    assert runner.s2r is None and runner.r2s is None
    runner.close()
    sched.close()
    assert_terminates(ctx)


@pytest.mark.skipif(not has_ipv6_loopback(), reason="this machine has no IPv6 loopback (::1)")
def test_ipv6_loopback_connects_every_socket_and_carries_frames():
    ctx = zmq.Context()
    sched = SchedulerSockets(ctx, "tcp", None, host="::1")
    assert sched.endpoints.ctl.startswith("tcp://[::1]:")
    runner = RunnerSockets(ctx, sched.endpoints.ctl)  # control socket: ZMQ_IPV6 too
    runner.connect_data(sched.endpoints.s2r, sched.endpoints.r2s)
    sched.ctl.send(b"ctl")
    sched.s2r.send(b"s2r")
    runner.r2s.send(b"r2s")
    assert (runner.ctl.recv(), runner.s2r.recv(), sched.r2s.recv()) == (b"ctl", b"s2r", b"r2s")
    runner.close()
    sched.close()
    assert_terminates(ctx)


@pytest.mark.parametrize("endpoint", ["ipc:///tmp/x/ctl", "tcp://127.0.0.1:5555",
                                      "tcp://[::1]:1", "tcp://0.0.0.0:65535"])
def test_check_endpoint_accepts_what_the_scheduler_binds(endpoint):
    assert check_endpoint(endpoint) == endpoint


@pytest.mark.parametrize("endpoint,message", [
    ("foo", "expected ipc://PATH or tcp://ADDR:PORT, got 'foo'"),
    ("", "expected ipc://PATH or tcp://ADDR:PORT, got ''"),
    ("tcp://127.0.0.1", "expected ipc://PATH or tcp://ADDR:PORT, got 'tcp://127.0.0.1'"),
    ("tcp://127.0.0.1:*", "expected ipc://PATH or tcp://ADDR:PORT, got 'tcp://127.0.0.1:*'"),
    ("tcp://localhost:5", "tcp://localhost:5: 'localhost' is not an IP address"),
    ("tcp://[::1:5", "expected ipc://PATH or tcp://ADDR:PORT, got 'tcp://[::1:5'"),
    ("tcp://[127.0.0.1]:5", "tcp://[127.0.0.1]:5: an IPv6 address goes in brackets, "
                            "an IPv4 one does not"),
    ("tcp://127.0.0.1:0", "tcp://127.0.0.1:0: the port must be 1 to 65535"),
    ("tcp://127.0.0.1:70000", "tcp://127.0.0.1:70000: the port must be 1 to 65535"),
    ("ipc://relative/ctl", "ipc://relative/ctl: the socket path must be absolute"),
    ("ipc:///" + "x" * 107, f"ipc:///{'x' * 107}: the socket path is 108 bytes, the limit is "
                            "107 (set TMPDIR to a shorter folder)"),
    ("inproc://ctl", "expected ipc://PATH or tcp://ADDR:PORT, got 'inproc://ctl'"),
    ("tcp://1.2.3.4:5\nx", "expected ipc://PATH or tcp://ADDR:PORT, got 'tcp://1.2.3.4:5\\nx'"),
])
def test_check_endpoint_refuses_with_one_line(endpoint, message):
    with pytest.raises(ValueError) as err:
        check_endpoint(endpoint)
    assert str(err.value) == message
