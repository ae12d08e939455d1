"""The remote path over a real network link: two network namespaces joined by a veth pair.

The scheduler runs in namespace A, bound to A's address on the veth (not 0.0.0.0); the
runners run in namespace B and reach it only over the veth. Each namespace has its own
loopback and no other link, so no frame leaves them. The namespaces (and with them the
veth pair) are deleted whatever ends the test; names carry this process's pid and a
random suffix, and namespaces of an earlier run whose process is gone are removed first.

Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and ``ip`` (iproute2); skipped with the
reason elsewhere.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from remote_launch import Launcher, bench_run, token_digests

PREFIX = "ipcb-"
PORT = 5600  # the namespaces are fresh: every port in them is free
CASE = ["--num-running", "4", "--steps", "40", "--codecs", "msgpack",
        "--no-single-process", "--quiet"]
TIMEOUT = 180


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


def _why_not() -> str | None:
    """Why namespaces cannot be made here, or None."""
    if sys.platform != "linux":
        return f"network namespaces are Linux only (this is {sys.platform})"
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2) on PATH"
    if os.geteuid() != 0:
        return f"not root (euid {os.geteuid()}): `ip netns add` needs CAP_SYS_ADMIN and " \
               "CAP_NET_ADMIN"
    probe = f"{PREFIX}probe-{os.getpid()}-{random.randrange(1 << 24):06x}"
    made = _ip("netns", "add", probe)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    try:
        veth = _ip("-n", probe, "link", "add", "pa", "type", "veth", "peer", "name", "pb")
        if veth.returncode != 0:
            return f"cannot make a veth pair: {veth.stderr.strip()}"
    finally:
        _ip("netns", "del", probe)
    return None


def _remove_leftovers() -> None:
    """Delete namespaces of this test whose process is gone (a run killed before its
    teardown)."""
    listing = _ip("netns", "list").stdout
    for line in listing.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.fullmatch(rf"{PREFIX}(?:probe-)?(\d+)-[0-9a-f]{{6}}[ab]?", name)
        if m and not Path(f"/proc/{m.group(1)}").exists():
            _ip("netns", "del", name)


class Pair:
    """Namespaces ``a`` and ``b`` joined by a veth pair, ``addr_a`` / ``addr_b`` on it."""

    def __init__(self) -> None:
        tag = f"{os.getpid()}-{random.randrange(1 << 24):06x}"
        self.a, self.b = f"{PREFIX}{tag}a", f"{PREFIX}{tag}b"
        # 10.231.X.Y/30: private (RFC 1918); only these two namespaces route it
        third, fourth = random.randrange(256), 4 * random.randrange(64)
        self.addr_a = f"10.231.{third}.{fourth + 1}"
        self.addr_b = f"10.231.{third}.{fourth + 2}"
        self.made: list[str] = []

    def up(self) -> None:
        veth = f"vb{random.randrange(1 << 32):08x}"  # 10 characters (<= 15)
        steps = [("netns", "add", self.a), ("netns", "add", self.b),
                 ("-n", self.a, "link", "add", veth + "a", "type", "veth", "peer", "name",
                  veth + "b", "netns", self.b),
                 ("-n", self.a, "addr", "add", f"{self.addr_a}/30", "dev", veth + "a"),
                 ("-n", self.b, "addr", "add", f"{self.addr_b}/30", "dev", veth + "b"),
                 ("-n", self.a, "link", "set", "lo", "up"),
                 ("-n", self.b, "link", "set", "lo", "up"),
                 ("-n", self.a, "link", "set", veth + "a", "up"),
                 ("-n", self.b, "link", "set", veth + "b", "up")]
        for step in steps:
            done = _ip(*step)
            if done.returncode != 0:
                raise RuntimeError(f"ip {' '.join(step)}: {done.stderr.strip()}")
            if step[:2] == ("netns", "add"):
                self.made.append(step[2])

    def down(self) -> list[str]:
        """Delete the namespaces (the veth pair goes with them); the errors, if any."""
        errors = []
        for name in self.made:
            done = _ip("netns", "del", name)
            if done.returncode != 0:
                errors.append(f"ip netns del {name}: {done.stderr.strip()}")
        return errors

    @staticmethod
    def inside(ns: str) -> tuple[str, ...]:
        """The prefix that runs a command in namespace ``ns`` (``ip netns exec`` execs it,
        so the pid is Python's)."""
        return ("ip", "netns", "exec", ns)


@pytest.fixture
def pair():
    why = _why_not()
    if why is not None:
        print(f"test_netns: skipped: {why}")
        pytest.skip(why)
    _remove_leftovers()
    p = Pair()
    try:
        p.up()
        yield p
    finally:
        errors = p.down()
        listing = _ip("netns", "list").stdout
        assert not errors and p.a not in listing and p.b not in listing, errors


def _ip_netns_ss(ns: str) -> list[tuple[str, int]]:
    """``(ADDR:PORT, pid)`` of every listening TCP socket in namespace ``ns``."""
    out = subprocess.run(["ip", "netns", "exec", ns, "ss", "-ltnpH"], capture_output=True,
                         text=True, timeout=30).stdout
    return [(line.split()[3], int(pid)) for line in out.splitlines()
            for pid in re.findall(r"pid=(\d+),", line)]


def _spawned(args: list[str], out: Path) -> dict[str, str]:
    done = bench_run([*args, "--output", str(out)], timeout_s=TIMEOUT)
    assert done.returncode == 0, done.stderr
    return token_digests(out)


def _scheduler(launch: Launcher, pair: Pair, args: list[str], out: Path,
               skip: tuple[str, ...] = ()) -> subprocess.Popen:
    """``bench.py ARGS`` in namespace A, bound to A's address, its runners started by
    hand; returned once it printed its first stderr line (``first_line``: the 'waiting
    ... for runners' line, printed once its ports are bound, or an error), past lines
    that begin with one of ``skip``."""
    return launch.scheduler([*args, "--host", pair.addr_a, "--remote-runners", "--port",
                             str(PORT)], out, skip=skip, prefix=pair.inside(pair.a),
                            timeout_s=TIMEOUT)


def _runners(launch: Launcher, pair: Pair, n: int) -> list[subprocess.Popen]:
    """``bench.py runner`` in namespace B for each of ``n`` ranks, connected to A's address."""
    return [launch.runner(f"tcp://{pair.addr_a}:{PORT + r}", prefix=pair.inside(pair.b))
            for r in range(n)]


def _two_ranks(launch: Launcher, pair: Pair, args: list[str], out: Path,
               skip: tuple[str, ...] = ()) -> tuple[subprocess.Popen, list[subprocess.Popen]]:
    """The scheduler of a case of 2 ranks (``_scheduler``), once its first line named
    the command of each, and a runner in namespace B for each rank."""
    sched = _scheduler(launch, pair, args, out, skip)
    first = sched.first_line
    assert first == (f"bench.py: waiting up to 120 s for 2 runner(s) started by hand; on "
                     f"each runner's host run: python bench.py runner --connect "
                     f"tcp://{pair.addr_a}:{PORT}; python bench.py runner --connect "
                     f"tcp://{pair.addr_a}:{PORT + 1}\n")
    return sched, _runners(launch, pair, 2)


def test_a_runner_in_another_namespace_gives_the_spawned_runners_tokens(pair, tmp_path):
    args = ["--scenario", "decode-steady", "--transport", "tcp", *CASE]
    with Launcher() as launch:
        sched = _scheduler(launch, pair, args, tmp_path / "remote")
        first = sched.first_line
        (runner,) = _runners(launch, pair, 1)
        (s_rc, s_out, s_err), (r_rc, _, r_err) = launch.finish(sched, runner, timeout_s=TIMEOUT)
    print(f"namespaces {pair.a} ({pair.addr_a}) and {pair.b} ({pair.addr_b}); "
          f"scheduler exit {s_rc}, runner exit {r_rc}")
    assert s_rc == 0, s_err
    assert r_rc == 0, r_err
    # the scheduler bound A's address itself (no 0.0.0.0, so no warning) and printed it
    assert first + s_err == (f"bench.py: waiting up to 120 s for 1 runner(s) started by hand; on "
                     f"each runner's host run: python bench.py runner --connect "
                     f"tcp://{pair.addr_a}:{PORT}\n")
    assert "device=cpu (remote runner)" in s_out
    assert r_err.splitlines()[-1] == ("bench.py runner: the run is complete "
                                      "(2 case(s) served)")
    remote = token_digests(tmp_path / "remote")
    assert len(remote) == 2 and remote == _spawned(args, tmp_path / "spawned")
    print(f"token digests over the veth = spawned runner's: {remote}")


def test_tp_ranks_in_another_namespace_broadcast_over_the_veth(pair, tmp_path):
    args = ["--scenario", "tp-broadcast", "--tp", "2", "--transport", "tcp", *CASE,
            "--policies", "cached"]
    with Launcher() as launch:
        sched, ranks = _two_ranks(launch, pair, args, tmp_path / "remote")
        (s_rc, s_out, s_err), *rank_results = launch.finish(sched, *ranks, timeout_s=TIMEOUT)
    print(f"scheduler exit {s_rc}, ranks exit {[r[0] for r in rank_results]}")
    assert s_rc == 0, s_err
    assert [r[0] for r in rank_results] == [0, 0], [r[2] for r in rank_results]
    assert "device=cpu (remote runners)" in s_out
    case = json.loads((tmp_path / "remote" / "summary.json").read_text())["cases"][0]
    assert case["tp"] == 2 and len(case["tp_rank_decode_ns_per_step"]) == 2
    remote = token_digests(tmp_path / "remote")
    # the spawned ranks broadcast over ipc (XPUB), the same case otherwise
    local = _spawned(["--scenario", "tp-broadcast", "--tp", "2", *CASE, "--policies",
                      "cached", "--tp-transports", "ipc"], tmp_path / "spawned")
    assert list(remote) and list(remote.values()) == list(local.values())
    print(f"token digests over the veth = spawned ranks': {remote}")


def test_pp_stages_in_another_namespace_meet_through_the_schedulers_store(pair, tmp_path):
    # A fixed 2 ms step over 400 steps keeps each case's gloo listeners up for at least
    # 0.8 s: long enough for the watcher below, polling every 0.1 s, to see them on a
    # loaded machine.
    args = ["--scenario", "pp", "--pp", "2", "--transport", "tcp", "--num-running", "8",
            "--steps", "400", "--warmup-steps", "5", "--codecs", "msgpack", "--model",
            "fixed-step", "--step-time-ms", "2", "--quiet"]
    with Launcher() as launch:
        sched, stages = _two_ranks(launch, pair, args, tmp_path / "remote",
                                   skip=("bench.py: warning: --pp 2 on ",))  # its cores
        seen: set[str] = set()  # the stages' listening sockets, polled while they run
        done = threading.Event()

        def watch() -> None:
            while not done.wait(0.1):
                listing = _ip_netns_ss(pair.b)
                seen.update(local for local, pid in listing if pid in {s.pid for s in stages})

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            (s_rc, s_out, s_err), *stage_results = launch.finish(sched, *stages,
                                                                 timeout_s=TIMEOUT)
        finally:
            done.set()
            watcher.join(10)
    print(f"stages' listening sockets seen in {pair.b}: {sorted(seen)}")
    # gloo's listener of each stage: on B's veth address only (GLOO_SOCKET_IFNAME)
    assert seen and {a.rsplit(":", 1)[0] for a in seen} == {pair.addr_b}, seen
    print(f"scheduler exit {s_rc}, stages exit {[r[0] for r in stage_results]}")
    assert s_rc == 0, s_err
    assert [r[0] for r in stage_results] == [0, 0], [r[2] for r in stage_results]
    assert "device=cpu (fixed step: sleep wait) (remote runners)" in s_out
    # both stages in B: gloo's pairs on B's veth address, the store on A's (PORT + 4)
    assert "token streams of send and direct: B=8 N=2: one token stream" in s_out
    cases = json.loads((tmp_path / "remote" / "summary.json").read_text())["cases"]
    assert sorted(c["arm"] or c["policy"] for c in cases) == ["direct", "send"]
    digests = {c["token_digest"] for c in cases}
    assert len(digests) == 1
    print(f"send and direct over the veth: one token stream {digests}")


def test_the_skip_reason_names_what_is_missing(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert _why_not() == ("not root (euid 1000): `ip netns add` needs CAP_SYS_ADMIN and "
                          "CAP_NET_ADMIN")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert _why_not() == "no `ip` command (iproute2) on PATH"
