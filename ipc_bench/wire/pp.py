"""Pipeline stages' own transport (``--pp N``): ``torch.distributed`` over gloo.

The scheduler reaches the stages as it reaches ``--tp`` ranks (``wire.tp``: every stage
reads every ``SchedulerOutput`` from the XPUB broadcast; the last stage replies on
``r2s``; each has its own control socket). Between the stages, ``StageLink`` moves:

- hidden states, stage ``i`` -> ``i + 1``, one tensor per step (``engine.pipeline``:
  ``[num_tokens, HIDDEN_SIZE]`` int16, or the torch model's float32 ``[num_tokens,
  hidden_size]``), sent with ``isend`` so the stage goes on with
  its next micro-batch while the bytes travel (the arrays are kept until their send
  completes; a gloo send completes once the receiver has posted its receive, so the
  sender never waits for one it does not know received: between steps it drops those
  the scheduler's window proves received, ``StageLink.release_hidden``, a window's
  worth at most, the rest at ``finish``);
- under ``direct``, the last stage's sampled ids, int32 ``[num_reqs]`` per step, to
  every other stage (vLLM #32618 broadcasts them over the GPU).

The receiver knows each tensor's size from the step's ``SchedulerOutput``, so nothing
else travels. Every receive is bounded (``irecv``, then ``Work.wait(timeout=...)``, which
gloo honours for a receive whatever the group's timeout): step 0's hidden states and
ids by the start-up allowance (``handshake.first_step_wait_s``: the stage before pays
its first forward, a torch compile say, as the runner's first step does), every later
one by the case's ``peer_timeout_s``; every send's wait (``Work.wait(timeout=...)``
too) by ``peer_timeout_s``. A stage whose peer hangs fails with one line
naming the peer, the step and the option to raise (``no hidden states of step 0 from
stage 0 within 120 s (raise --startup-timeout)``, ``... of step 7 ... within 10 s
(raise --peer-timeout)``); one whose peer died fails at once (gloo sees the connection
close) and the scheduler names the dead stage.

Start-up and steps have two timeouts, and gloo one: the group's (``init_process_group(
timeout=...)``) bounds its rendezvous (the store's waits for the other stages' addresses
and the pair sockets' connects of gloo's ``connectFullMesh``: ``Wait timeout``,
``Connect timeout``) and is also the default of every later wait given none. What
happens once, at start-up, gets the start-up allowance (the config's
``startup_timeout_s``, which ``StageLink`` takes as ``startup_timeout_s``): the join of
the scheduler's store and the wait there for the other stages, and the group's timeout,
so gloo's rendezvous; a stage that starts seconds after the others (a loaded machine,
its torch import) no longer fails the rendezvous under a small ``--peer-timeout``. The
steps' bound is then per operation: each receive's and each send's
``Work.wait(timeout=...)`` passes its own (the peer timeout, or the start-up allowance
for step 0's receives), so the group's timeout bounds nothing after the rendezvous.
Lowering the group's timeout once it stands instead (torch's private
``distributed_c10d._set_pg_timeout``) does not do it: in torch 2.13 a gloo send's
``wait()`` given no timeout still waited past the timeout set so. Connected, the group
needs no first barrier: gloo's rendezvous returns once this stage has connected a pair
to every other stage. A rendezvous that runs out is one line
naming the option (``stage 1: gloo's rendezvous through the stages' store at ... did not
complete within 120 s (raise --startup-timeout): Wait timeout``).

Rendezvous. Stages spawned on this machine: a ``FileStore`` in the case's private socket
folder (mode 0700); gloo's own pair sockets bind to the loopback interface
(``GLOO_SOCKET_IFNAME=lo``). Stages started by hand (``--remote-runners``,
``harness.remote_runner``): a ``TCPStore`` that the scheduler hosts (``StoreServer``) on
its ``--host`` address at the run's store port (``wire.remote``), which the stages
join as clients (``RunnerConfig.pp_store`` ``tcp://ADDR:PORT``, connect bounded by the
start-up allowance). The join can be abandoned (``_join_store``): the stage connects a plain
socket in ``JOIN_SLICE_S`` slices until the store answers, then builds its client, then
counts itself in (``JOINED_KEY``) and waits until every stage has before gloo's
rendezvous (milliseconds once all are there); between the slices it checks its control
connection (``peer_problem``), so a scheduler that goes away during the handshake ends
the join at once, in one line (``transport.PeerError``: ``the scheduler at tcp://...
closed the connection, noticed while joining the stages' store at tcp://...``), where a
client's connect and waits inside torch would retry for their whole timeout. c10d's own
log records of the join (a connect retried, a store that closed: each with a C++ stack)
are kept off stderr (``_quiet_c10d``): the join's error, if any, is one line. A plain torch 2.13 ``TCPStore`` server listens on every interface
(``*:PORT``, whatever host it is given); handed a socket already bound and listening
(``master_listen_fd``, libuv server) it listens there only. Each stage binds gloo's
pair sockets to the interface that holds its own address towards the scheduler
(``GLOO_SOCKET_IFNAME``, ``gloo_interface``): gloo listens on that interface's address
at an ephemeral port (one listener per stage process), not on every interface.

Timing columns (``perf_counter_ns``, CLOCK_MONOTONIC, one clock for every process of the
machine), one entry per step (``-1`` where the stage has no such hop):
``pp_in_wait_ns`` / ``pp_in_done_ns`` (when the stage began waiting for the step's
hidden states, when they were there), ``pp_in_bytes`` (the bytes received),
``pp_out_start_ns`` (when it handed its own to
``isend``), ``pp_out_bytes`` (the tensor bytes handed to ``isend``),
``pp_direct_out_start_ns`` and ``pp_direct_out_bytes`` (the last stage, direct: the
ids' tensor bytes handed to ``isend``, summed over the N - 1 receiving stages) and, on the other
stages, ``pp_direct_in_wait_ns`` / ``pp_direct_in_done_ns`` / ``pp_direct_in_bytes`` per step
of ids received (in step order). ``analysis.pp`` pairs them into per-hop times.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import errno
import fcntl
import os
import re
import select
import socket
import struct
import sys
import tempfile
import time
from typing import Callable, Iterator, Optional

import numpy as np

#: Columns a stage adds to its ``RunnerReport``.
PP_COLUMNS = ("pp_in_wait_ns", "pp_in_done_ns", "pp_in_bytes", "pp_out_start_ns",
              "pp_out_bytes", "pp_direct_out_start_ns", "pp_direct_out_bytes",
              "pp_direct_in_wait_ns", "pp_direct_in_done_ns", "pp_direct_in_bytes")
#: Name of the rendezvous file in the case's socket folder.
STORE_FILE = "pp-store"
#: How ``RunnerConfig.pp_store`` names a ``TCPStore`` (else it is a ``FileStore`` path).
TCP_STORE_PREFIX = "tcp://"
#: The key of the scheduler's store that each stage adds 1 to once it has joined; the
#: stages wait until it counts them all before gloo's rendezvous (``_join_store``).
JOINED_KEY = "ipc-bench/stages-joined"
#: How often a stage joining the scheduler's store checks its control connection (s).
JOIN_SLICE_S = 0.1
#: How long a stage whose store failed waits to see its control connection close too
#: (the scheduler's exit closes both; their FINs are taken by different threads).
GONE_GRACE_S = 1.0


#: gloo's advice to its own users, to the end of its text, on the line of its error or
#: on lines of its own (``... [127.0.0.1]:31662. This is typically caused by a remote
#: worker crashing. Check the logs of the remote worker before reporting an error.
#: GLHF!``).
_GLOO_ADVICE = re.compile(r"\s*(This is typically caused by |Check the logs of the remote "
                          r"worker ).*", re.S)


def _waited(work, wait, where: str) -> bool:
    """``work().wait(timeout=wait)`` of a gloo send or receive (``work``: what posts it,
    or returns the posted one): true once it completed, false where it ran out of the
    wait (gloo's ``Timed out waiting ...`` or a false return: the caller names the
    option to raise); any other gloo error raises ``StageLinkError`` ``WHERE: LINE``
    (``_gloo_line``)."""
    try:
        return bool(work().wait(timeout=wait))
    except RuntimeError as exc:
        line = _gloo_line(exc)
        if not _GLOO_TIMEOUT.search(line):
            raise StageLinkError(f"{where}: {line}") from None
        return False


def _gloo_line(exc: BaseException, limit: int = 200) -> str:
    """gloo's error as one readable line: its last line without the ``[file:line]``
    source prefix, at most ``limit`` characters, cut at a word (the line names the
    stage; the case's error adds which stage raised it), and without gloo's advice to
    its own users (``This is typically caused by a remote worker crashing. Check the
    logs ... GLHF!``: the case's error names a stage that died), nor its full stop
    (``Connection reset by peer.``: the line is quoted inside others, ``...; ...``)."""
    text = _GLOO_ADVICE.sub("", str(exc)).strip()
    line = text.splitlines()[-1] if text else type(exc).__name__
    line = re.sub(r"^\[[^\]]*\]\s*", "", line.strip())
    if line.endswith(".") and not line.endswith(".."):
        line = line[:-1]
    if len(line) > limit:
        line = "..." + line[-limit:].split(" ", 1)[-1]
    return line

class StageLinkError(RuntimeError):
    """A receive or send between stages failed or timed out (one line)."""


#: gloo's words for a wait that ran out (``Timed out waiting 3000ms for recv operation
#: to complete``).
_GLOO_TIMEOUT = re.compile(r"\bTimed out waiting \d+ms\b")
#: The words of a rendezvous that ran out: the store's (``Wait timeout``, a ``TCPStore``'s
#: ``... timed out ...``), gloo's pair connect's (``Connect timeout``).
_RENDEZVOUS_TIMEOUT = re.compile(r"\btime(?:d)? ?out\b", re.I)


def _loopback_interface() -> Optional[str]:
    return "lo" if os.path.exists("/sys/class/net/lo") else None


_SIOCGIFADDR = 0x8915  # linux/sockios.h


def local_address_towards(host: str) -> str:
    """This machine's own address on the route to ``host`` (an IPv4 or IPv6 literal):
    what a connection to ``host`` would use as its source. Nothing is sent (a UDP
    socket's ``connect`` only picks the route). ``OSError`` where no route exists."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        probe.connect((host, 9))
        return probe.getsockname()[0]


def gloo_interface(address: str) -> str:
    """The name of the network interface that holds ``address`` (IPv4: ``SIOCGIFADDR``
    of each interface; IPv6: ``/proc/net/if_inet6``), what ``GLOO_SOCKET_IFNAME``
    takes (gloo binds an address of that interface: with IPv4 and IPv6 on it, the
    first its lookup finds). ``StageLinkError`` (one line) where none does."""
    if ":" in address:
        wanted = socket.inet_pton(socket.AF_INET6, address.split("%")[0]).hex()
        try:
            with open("/proc/net/if_inet6") as f:
                for line in f:
                    fields = line.split()
                    if len(fields) == 6 and fields[0] == wanted:
                        return fields[5]
        except OSError:
            pass
    else:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            for _, name in socket.if_nameindex():
                try:
                    info = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR,
                                       struct.pack("256s", name.encode()[:15]))
                except OSError:  # no IPv4 address on it
                    continue
                if socket.inet_ntoa(info[20:24]) == address:
                    return name
    raise StageLinkError(f"no network interface holds {address}, this stage's address "
                         f"towards the scheduler: gloo cannot be bound to it")


#: The first line of a c10d log record (``[W1206 14:21:31.999893383 TCPStore.cpp:340]
#: [c10d] ...``), and the lines of the C++ stack that follow it.
_C10D_RECORD = re.compile(r"\[[IWEF]\d{4} [\d:.]+ [^\]]*\] \[c10d\] ")
_C10D_STACK = re.compile(r"(Exception raised from |frame #\d+: |<omitting python frames>|$)")


def drop_c10d_records(text: str) -> str:
    """``text`` without c10d's log records (``_C10D_RECORD``) and the C++ stacks that
    follow them (``Exception raised from ...``, ``frame #N: ...``, blank lines);
    every other line is kept, in order."""
    kept, in_record = [], False
    for line in text.splitlines(keepends=True):
        if _C10D_RECORD.match(line):
            in_record = True
        elif not (in_record and _C10D_STACK.match(line.rstrip("\n"))):
            in_record = False
            kept.append(line)
    return "".join(kept)


@contextlib.contextmanager
def _quiet_c10d() -> Iterator[None]:
    """Keep c10d's log records off stderr while the block runs: file descriptor 2
    goes to a temporary file, whose text, less those records (``drop_c10d_records``),
    is written to stderr afterwards, whatever ended the block. c10d logs a store's
    retried connect and a store that closed as warnings and errors with a C++ stack
    each (5.8 KB for one failed join); the join reports its own outcome in one line.
    torch reads its log level (``TORCH_CPP_LOG_LEVEL``) once, when it is imported."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as held:
            os.dup2(held.fileno(), 2)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                held.seek(0)
                rest = drop_c10d_records(held.read().decode(errors="replace"))
                if rest:
                    sys.stderr.write(rest)
                    sys.stderr.flush()
    finally:
        os.close(saved)


def _no_problem() -> Optional[str]:
    return None


def _gone(peer_problem: Callable[[], Optional[str]], grace_s: float = GONE_GRACE_S
          ) -> Optional[str]:
    """``peer_problem()``'s line once it has one, waiting ``grace_s`` at most (the
    store of a scheduler that exited can fail a moment before its control connection
    is seen to close); ``None`` if it has none by then."""
    deadline = time.monotonic() + grace_s
    while True:
        problem = peer_problem()
        if problem or time.monotonic() >= deadline:
            return problem
        time.sleep(0.01)


def _await_listener(host: str, port: int, deadline: float,
                    peer_problem: Callable[[], Optional[str]], doing: str) -> Optional[str]:
    """Connect a plain socket to ``host:port`` (then close it) until one connects,
    waiting in ``JOIN_SLICE_S`` slices until ``deadline`` (``time.monotonic()``);
    ``peer_problem()`` is checked between slices (``transport.PeerError``, ``...,
    noticed while DOING``). Returns ``None`` once a connect succeeded, else why the
    last one failed (``Connection refused``, ``no answer``) at the deadline."""
    from ipc_bench.wire.transport import PeerError, noticed

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    why = "no answer"
    while True:
        problem = peer_problem()
        if problem:
            raise PeerError(noticed(problem, doing))
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setblocking(False)
            code = probe.connect_ex((host, port))
            while code in (errno.EINPROGRESS, errno.EAGAIN):
                left = deadline - time.monotonic()
                if left <= 0:
                    return why
                if select.select([], [probe], [], min(JOIN_SLICE_S, left))[1]:
                    code = probe.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    break
                problem = peer_problem()
                if problem:
                    raise PeerError(noticed(problem, doing))
        if code == 0:
            return None
        why = os.strerror(code)
        left = deadline - time.monotonic()
        if left <= 0:
            return why
        time.sleep(min(JOIN_SLICE_S, left))


def _join_store(dist, host: str, port: int, store_path: str, rank: int, size: int,
                timeout_s: float, peer_problem: Callable[[], Optional[str]]):
    """The client of the scheduler's store at ``store_path`` (``host``, ``port``) once
    all ``size`` stages have joined it (``JOINED_KEY``); ``timeout_s`` bounds the
    connect, and then the wait for the other stages. ``transport.PeerError`` (one line)
    once ``peer_problem()`` says the scheduler went away; ``StageLinkError`` (one line)
    when the store does not answer or fails, or the other stages do not join in time.
    Run it under ``_quiet_c10d``."""
    from ipc_bench.wire.transport import PeerError, noticed

    joining = f"joining the stages' store at {store_path}"
    waiting = f"waiting for the other stages at the stages' store {store_path}"
    start = time.monotonic()
    why = _await_listener(host, port, start + timeout_s, peer_problem, joining)
    if why is not None:
        raise StageLinkError(f"stage {rank}: cannot join the stages' store at {store_path} "
                             f"within {timeout_s:g} s: {why}")
    left = max(start + timeout_s - time.monotonic(), 1.0)  # it answered: a connect's time
    try:
        store = dist.TCPStore(host, port, None, False,
                              timeout=datetime.timedelta(seconds=left))
    except (RuntimeError, OSError) as exc:  # torch's DistNetworkError included
        problem = _gone(peer_problem)
        if problem:
            raise PeerError(noticed(problem, joining)) from None
        raise StageLinkError(f"stage {rank}: cannot join the stages' store at "
                             f"{store_path} within {timeout_s:g} s: "
                             f"{_gloo_line(exc)}") from None
    deadline = time.monotonic() + timeout_s
    joined, count = 0, 1  # the first add counts this stage in, the later ones read
    try:
        while True:
            problem = peer_problem()
            if problem:
                raise PeerError(noticed(problem, waiting))
            joined, count = store.add(JOINED_KEY, count), 0
            if joined >= size:
                return store
            if time.monotonic() >= deadline:
                raise StageLinkError(f"stage {rank}: {joined} of the {size} stages joined "
                                     f"the stages' store at {store_path} within "
                                     f"{timeout_s:g} s")
            time.sleep(JOIN_SLICE_S)
    except (RuntimeError, OSError) as exc:
        if isinstance(exc, (PeerError, StageLinkError)):
            raise
        problem = _gone(peer_problem)
        if problem:
            raise PeerError(noticed(problem, waiting)) from None
        raise StageLinkError(f"stage {rank}: the stages' store at {store_path} failed: "
                             f"{_gloo_line(exc)}") from None


class StoreServer:
    """The scheduler's ``TCPStore`` for stages started by hand: listens on ``host`` only,
    at ``port`` (a socket bound and listening here, handed to torch's libuv server with
    ``master_listen_fd``; it owns the socket from then on). ``endpoint``: the
    ``tcp://HOST:PORT`` the stages join (``RunnerConfig.pp_store``). ``close()`` stops
    the server (the port is free again). Raises ``transport.EndpointError`` (one line)
    when the port cannot be bound; mirrors torch's own ``TCPStore(is_master=True)``
    with ``wait_for_workers=False`` (the scheduler is no rank of the group).
    ``timeout_s``: the store's own (the case passes its start-up allowance, which bounds
    the stages' join and rendezvous through it; the scheduler makes no call on it).
    ``hold``: a context manager under which the store takes the socket, from its
    constructor to the socket's ``detach`` (the scheduler's ``harness.signals.deferred``:
    a SIGTERM or Ctrl-C that lands as the constructor returns is raised after the
    ``detach``; raised before it, the socket was closed a second time once the store
    had closed it, ``OSError: [Errno 9] Bad file descriptor``, and a descriptor number
    reused meanwhile by another thread would have been closed under it)."""

    def __init__(self, host: str, port: int, timeout_s: float,
                 hold: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext):
        import torch.distributed as dist

        from ipc_bench.wire.transport import EndpointError, tcp_endpoint

        self.endpoint = tcp_endpoint(host, port)
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(128)
            with hold():
                try:
                    self.store = dist.TCPStore(
                        host, port, None, True, timeout=datetime.timedelta(seconds=timeout_s),
                        wait_for_workers=False, master_listen_fd=sock.fileno(),
                        use_libuv=True)
                except BaseException:
                    sock.close()
                    raise
                sock.detach()  # the store's server closes it
        except OSError as exc:
            if sock.fileno() != -1:
                sock.close()
            raise EndpointError(f"cannot bind {self.endpoint} (the pipeline stages' store): "
                                f"{exc.strerror or exc}") from None
        except BaseException:
            if sock.fileno() != -1:  # neither closed nor handed to the store
                sock.close()
            raise

    def close(self) -> None:
        """Stop the server (idempotent)."""
        self.store = None


class StageLink:
    """Stage ``rank`` of ``size`` in the gloo group rendezvousing at ``store_path`` (a
    ``FileStore`` path, or ``tcp://ADDR:PORT`` of a ``StoreServer``: module docstring).
    ``timeout_s`` (seconds) bounds every receive and send but step 0's receives, which
    ``first_timeout_s`` bounds (default ``timeout_s``; a stage passes
    ``handshake.first_step_wait_s``), each through its own ``Work.wait(timeout=...)``.
    ``startup_timeout_s`` (default ``first_timeout_s``; a stage passes its config's
    ``startup_timeout_s``) bounds what happens once, here: the join of a ``tcp://``
    store (its connect, then the wait for the other stages) and gloo's rendezvous, whose
    timeout is the group's (module docstring: the steps' waits never use the group's).
    ``columns``: ``PP_COLUMNS`` lists.
    ``device``: the stage's (``"cuda"``: hidden states are
    received into page-locked host memory, ``cuda_step.stage_host_buffer``).
    ``peer_problem``: the stage's check of its control connection (``None`` while the
    scheduler is there), made between the slices of the join of a ``tcp://`` store
    (``_join_store``). ``StageLinkError`` (one line) when the store cannot be
    reached, this stage's address has no interface for gloo or gloo's rendezvous fails
    (``... did not complete within N s (raise --startup-timeout): Wait timeout`` where it
    ran out); ``transport.PeerError`` (one line) when ``peer_problem`` says the scheduler
    went away during that join."""

    def __init__(self, store_path: str, rank: int, size: int, timeout_s: float,
                 device: str = "cpu", first_timeout_s: Optional[float] = None,
                 peer_problem: Optional[Callable[[], Optional[str]]] = None,
                 startup_timeout_s: Optional[float] = None):
        remote = store_path.startswith(TCP_STORE_PREFIX)
        if remote:  # gloo on the interface this stage reaches the scheduler through
            from ipc_bench.wire.transport import split_tcp_endpoint

            host, port = split_tcp_endpoint(store_path)
            try:
                address = local_address_towards(host)
            except OSError as exc:
                raise StageLinkError(f"no route to the stages' store at {store_path}: "
                                     f"{exc.strerror or exc}") from None
            os.environ["GLOO_SOCKET_IFNAME"] = gloo_interface(address)
        else:
            iface = _loopback_interface()
            if iface:
                os.environ.setdefault("GLOO_SOCKET_IFNAME", iface)
        if size > 1 and remote and peer_problem is not None:  # before torch's import
            from ipc_bench.wire.transport import PeerError, noticed

            problem = peer_problem()
            if problem:
                raise PeerError(noticed(problem, f"joining the stages' store at {store_path}"))
        if size > 1:  # one stage sends and receives nothing: no torch import (1.4 s)
            import torch
            import torch.distributed as dist
        else:
            torch = dist = None
        self.torch, self.dist = torch, dist
        self.device = device  # "cuda": hidden states are received into page-locked memory
        self.rank, self.size, self.timeout_s = rank, size, timeout_s
        self.first_timeout_s = timeout_s if first_timeout_s is None else first_timeout_s
        self.startup_timeout_s = (self.first_timeout_s if startup_timeout_s is None
                                  else startup_timeout_s)
        # (seconds, the option that sets them, as Work.wait takes them): later steps, step 0
        self._waits = [(t, option, datetime.timedelta(seconds=t)) for t, option in (
            (timeout_s, "--peer-timeout"), (self.first_timeout_s, "--startup-timeout"))]
        self.prev = rank - 1 if rank > 0 else None
        self.next = rank + 1 if rank < size - 1 else None
        self.last = size - 1
        self.columns: dict[str, list[int]] = {name: [] for name in PP_COLUMNS}
        # (work, array, what, seq): seq of a hidden-state send, None for ids
        self._sends: collections.deque = collections.deque()
        if size > 1 and remote:
            with _quiet_c10d():
                store = _join_store(dist, host, port, store_path, rank, size,
                                    self.startup_timeout_s, peer_problem or _no_problem)
                self._init_group(store, store_path, peer_problem or _no_problem)
        elif size > 1:
            self._init_group(dist.FileStore(store_path, size), store_path, None)

    def _init_group(self, store, store_path: str,
                    peer_problem: Optional[Callable[[], Optional[str]]]) -> None:
        """gloo's rendezvous through ``store`` (the case's ``FileStore``, or the
        scheduler's store with every stage already in it: ``_join_store``), within the
        start-up allowance, the group's timeout (module docstring); its failure is one
        line: ``transport.PeerError`` where the scheduler went away (its store with it;
        ``peer_problem``, ``None`` for a spawned stage, which its scheduler's death
        ends), else ``StageLinkError`` (``stage R: gloo's rendezvous through the stages'
        store at PATH did not complete within N s (raise --startup-timeout): Wait
        timeout`` where it ran out, ``... failed: WHY`` otherwise)."""
        from ipc_bench.wire.transport import PeerError, noticed

        allowance = self.startup_timeout_s
        try:
            self.dist.init_process_group("gloo", store=store, rank=self.rank,
                                         world_size=self.size,
                                         timeout=datetime.timedelta(seconds=allowance))
        except (RuntimeError, OSError) as exc:
            problem = _gone(peer_problem) if peer_problem is not None else None
            if problem:
                raise PeerError(noticed(problem, f"waiting for the other stages at the "
                                                 f"stages' store {store_path}")) from None
            line = _gloo_line(exc)
            rendezvous = f"stage {self.rank}: gloo's rendezvous through the stages' store at " \
                         f"{store_path}"
            if _RENDEZVOUS_TIMEOUT.search(line):
                raise StageLinkError(f"{rendezvous} did not complete within {allowance:g} s "
                                     f"(raise --startup-timeout): {line}") from None
            raise StageLinkError(f"{rendezvous} failed: {line}") from None

    def _recv(self, shape: tuple, dtype, src: int, what: str, seq: int,
              device: str = "cpu") -> np.ndarray:
        """``what`` of step ``seq`` from stage ``src``, waiting ``first_timeout_s`` at
        step 0, else ``timeout_s``; ``StageLinkError`` (one line) when the wait runs out
        (``no WHAT from stage SRC within N s (raise OPTION)``) or gloo fails."""
        from ipc_bench.engine.cuda_step import stage_host_buffer

        out = stage_host_buffer(self.torch, shape, dtype, device)
        if out.size == 0:
            return out
        wait_s, option, wait = self._waits[seq == 0]
        if not _waited(lambda: self.dist.irecv(self.torch.from_numpy(out), src), wait,
                       f"{what} from stage {src}"):
            raise StageLinkError(f"no {what} from stage {src} within {wait_s:g} s "
                                 f"(raise {option})")
        return out

    def _isend(self, array: np.ndarray, dst: int, what: str,
               seq: Optional[int] = None) -> int:
        """Hand ``array`` to ``isend`` (nothing for an empty one); returns its bytes.
        ``seq``: the step of a hidden-state send (``release_hidden``), else ``None``."""
        if array.size:
            try:  # a peer gone before the send is posted fails here, not in its wait
                work = self.dist.isend(self.torch.from_numpy(array), dst)
            except RuntimeError as exc:
                raise StageLinkError(f"{what}: {_gloo_line(exc)}") from None
            self._sends.append((work, array, what, seq))
        sends = self._sends  # drop the completed ones; never wait here: a send of ids
        while sends and sends[0][0].is_completed():  # completes when its receiver posts
            self._wait_oldest()                       # the receive, which may be later
        return array.nbytes

    def _wait_oldest(self) -> None:
        """Wait for the oldest send, within the peer timeout (its own: the group's is
        the start-up allowance, module docstring). One that runs out (gloo's ``Timed
        out waiting ...``, or ``wait`` returning false) is one line naming the option,
        as a receive's: ``WHAT: not received within N s (raise --peer-timeout)``."""
        work, _, what, _ = self._sends.popleft()
        wait_s, option, wait = self._waits[0]
        if not _waited(lambda: work, wait, what):
            raise StageLinkError(f"{what}: not received within {wait_s:g} s "
                                 f"(raise {option})")

    def recv_hidden(self, shape: tuple, dtype, seq: int,
                    perf=time.perf_counter_ns) -> np.ndarray:
        """Step ``seq``'s hidden states from the previous stage (``shape`` and ``dtype``:
        ``engine.pipeline.PipelineStage.hidden_spec``)."""
        t0 = perf()
        hidden = self._recv(shape, dtype, self.prev, f"hidden states of step {seq}", seq,
                            self.device)
        self.columns["pp_in_wait_ns"].append(t0)
        self.columns["pp_in_done_ns"].append(perf())
        self.columns["pp_in_bytes"].append(hidden.nbytes)
        return hidden

    def send_hidden(self, hidden: np.ndarray, seq: int, perf=time.perf_counter_ns) -> None:
        """Step ``seq``'s hidden states to the next stage (``isend``)."""
        self.columns["pp_out_start_ns"].append(perf())
        self.columns["pp_out_bytes"].append(
            self._isend(hidden, self.next, f"hidden states of step {seq} to stage {self.next}",
                        seq))

    def release_hidden(self, through: int) -> None:
        """Wait for and drop the hidden-state sends of steps up to ``through``, which
        the next stage has received: call it between steps, with ``through`` the step
        just served less the scheduler's window (``pp_size``; it sent that step only
        once the last stage had replied to every step up to ``through``, and each
        stage receives a step's hidden states before it sends its own). Their waits
        return at once. gloo's ``Work.is_completed()`` stays false until ``wait()``,
        so ``_isend``'s check never dropped one and each step's hidden states
        (``num_tokens x HIDDEN_BYTES_PER_TOKEN`` bytes) stayed until ``finish``. The
        sampled ids' sends are left to ``_isend`` and ``finish``: a stage receives
        them only when it needs them, which no window bounds. ``StageLinkError`` as
        ``finish``."""
        sends = self._sends
        while sends and sends[0][3] is not None and sends[0][3] <= through:
            self._wait_oldest()

    def send_ids(self, ids: np.ndarray, seq: int, perf=time.perf_counter_ns) -> None:
        """The last stage, ``direct``: step ``seq``'s sampled ids to every other stage."""
        self.columns["pp_direct_out_start_ns"].append(perf())
        self.columns["pp_direct_out_bytes"].append(
            sum(self._isend(ids, dst, f"sampled ids of step {seq} to stage {dst}")
                for dst in range(self.size - 1)))

    def recv_ids(self, num_reqs: int, seq: int, perf=time.perf_counter_ns) -> np.ndarray:
        """A non-last stage, ``direct``: step ``seq``'s sampled ids from the last stage."""
        t0 = perf()
        ids = self._recv((num_reqs,), np.int32, self.last, f"sampled ids of step {seq}", seq)
        self.columns["pp_direct_in_wait_ns"].append(t0)
        self.columns["pp_direct_in_done_ns"].append(perf())
        self.columns["pp_direct_in_bytes"].append(ids.nbytes)
        return ids

    def finish(self) -> None:
        """Wait for every send still in flight (each within the peer timeout)."""
        while self._sends:
            self._wait_oldest()

    def close(self) -> None:
        """Leave the group (after ``finish``; never raises)."""
        try:
            if self.size > 1 and self.dist.is_initialized():
                self.dist.destroy_process_group()
        except Exception:  # a peer already gone: nothing left to tidy
            pass
