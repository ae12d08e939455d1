"""Shared helpers of the reliability tests: processes, small cases, run folders."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ipc_bench.harness.spec import CaseSpec
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.engine.workloads import SteadyDecodeWorkload

if TYPE_CHECKING:
    import pandas as pd

REPO = Path(__file__).resolve().parents[1]
TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
FAKE_RUNNER = Path(__file__).resolve().parent / "fake_runner.py"
#: Enough steps that a case is still running when a test interferes with it.
LONG = 10**8

#: ``python -c INTERRUPT_AT_IMPORT AT ARGS...`` in the repository's root runs bench.py as
#: ``python bench.py ARGS`` does, with ``KeyboardInterrupt`` raised when module ``AT`` is
#: first imported, as Python's SIGINT handler raises it there.
INTERRUPT_AT_IMPORT = """
import runpy, sys
AT = sys.argv[1]
sys.modules.pop(AT, None)
class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == AT:
            raise KeyboardInterrupt
        return None
sys.meta_path.insert(0, Interrupt())
sys.argv = ["bench.py"] + sys.argv[2:]
runpy.run_path("bench.py", run_name="__main__")
"""


def fd_line(code: int) -> str:
    """The line the harness gives for a file descriptor refused with ``code``:
    ``EMFILE``, this process's limit, as ``getrlimit`` reads it now; ``ENFILE``, the
    system's file table, its size as ``/proc/sys/fs/file-max`` reads it."""
    import errno
    import resource

    if code == errno.EMFILE:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        return (f"too many open files (ulimit -n {soft}): raise it (e.g. ulimit -n 1024) "
                "and run again")
    assert code == errno.ENFILE, code
    size = int(Path("/proc/sys/fs/file-max").read_text())
    return (f"too many open files in the system (fs.file-max {size}): close files "
            "elsewhere or raise fs.file-max, and run again")


def ppid_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def one_runner_mark() -> str:
    """The mark a one-runner case's transport cell carries when its timings are shown
    marked (``analysis.cores``: N = 1 on exactly 2 cores), taken from this process's
    CPU affinity, which the runs it starts inherit: ``"\u00b0"`` there, else ``""``."""
    return "\u00b0" if len(os.sched_getaffinity(0)) == 2 else ""


def children(pid: int) -> list[int]:
    """Pids whose parent is ``pid`` (from /proc; zombies included)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and ppid_of(int(d)) == pid:
            out.append(int(d))
    return out


def runners_of(pid: int) -> list[int]:
    """Live runner processes started by the scheduler ``pid`` (their environment
    names it: ``IPC_BENCH_SCHEDULER_PID``), wherever they were reparented."""
    mark = f"IPC_BENCH_SCHEDULER_PID={pid}".encode()
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            env = Path(f"/proc/{d}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if mark in env and alive(int(d)):
            found.append(int(d))
    return found


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_dead(pid: int, timeout_s: float = 10.0) -> float:
    """Wait until ``pid`` is gone (or a zombie); returns the seconds waited."""
    t0 = time.monotonic()
    while alive(pid):
        if time.monotonic() - t0 > timeout_s:
            raise AssertionError(f"process {pid} still alive after {timeout_s} s")
        time.sleep(0.005)
    return time.monotonic() - t0


def wait_for(predicate, timeout_s: float = 120.0, what: str = "condition",
             proc: subprocess.Popen | None = None):
    """Poll ``predicate`` every 10 ms until it is true (returns its value); raise
    ``AssertionError`` after ``timeout_s`` seconds, or at once, with its exit status and
    stderr, when ``proc`` (started by ``bench``) has exited before it became true. On a
    timeout ``proc`` is sent SIGTERM first (it then removes its socket folders and reaps
    its children) and its stderr joins the message. The default is long: what is awaited
    is a process's start-up, which takes tens of seconds on a slow, busy machine (a process
    that imports torch: 16 s alone on a slow 2-core one), and only a failing test waits it
    out."""
    t0 = time.monotonic()
    while True:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            _, err = proc.communicate()
            raise AssertionError(f"bench.py exited {proc.returncode} before {what}:\n{err}")
        if time.monotonic() - t0 > timeout_s:
            err = end_and_read(proc, signal.SIGTERM, 60.0) if proc is not None else ""
            raise AssertionError(f"timed out waiting for {what} ({timeout_s:g} s)"
                                 + (f"; bench.py's stderr:\n{err}" if err else ""))
        time.sleep(0.01)


def end_and_read(proc: subprocess.Popen, sig: int, grace_s: float) -> str:
    """Send ``proc`` (started with ``stderr=PIPE``) ``sig``, wait up to ``grace_s`` for it
    to exit, then SIGKILL it if it has not; returns its stderr."""
    proc.send_signal(sig)
    try:
        return proc.communicate(timeout=grace_s)[1]
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[1]


def steady_case(b: int = 16, *, policy: str = "send", codec: str = "msgpack",
                max_steps: int = LONG, **kw) -> CaseSpec:
    """A small steady-decode case that runs until stopped (``max_steps``)."""
    return CaseSpec(
        scenario="t", labels={"num_running": b}, policy=policy, codec=codec,
        scheduler=SchedulerConfig(max_num_seqs=b, max_model_len=512, num_blocks=b * 64),
        model=ModelConfig(),
        make_workload=lambda: SteadyDecodeWorkload(b, seed=3, vocab_size=128_256,
                                                   prompt_len_range=(8, 64),
                                                   output_len_range=(16, 200)),
        warmup_steps=5, max_steps=max_steps, count="all", floor=False, **kw)


def slow_schedule(monkeypatch, at_call: int, delay_s: float) -> None:
    """Make the scheduler's ``schedule`` call number ``at_call`` (from 0: step
    ``at_call``'s, for a case that schedules something every step) take ``delay_s``
    seconds longer, in this process (``run_case``'s scheduler)."""
    from ipc_bench.engine.scheduler import Scheduler

    schedule = Scheduler.schedule
    calls = []

    def slow(self, *args, **kw):
        if len(calls) == at_call:
            time.sleep(delay_s)
        calls.append(1)
        return schedule(self, *args, **kw)

    monkeypatch.setattr(Scheduler, "schedule", slow)


def inject(monkeypatch, tmp_path: Path, source: str, **env: str) -> None:
    """``source`` as the ``sitecustomize`` module of every Python process started from
    now on (its folder, ``tmp_path``, first on ``PYTHONPATH``), with ``env`` set."""
    (tmp_path / "sitecustomize.py").write_text(source)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    for k, v in env.items():
        monkeypatch.setenv(k, v)


def fault_arming(monkeypatch, tmp_path: Path, source: str, variable: str, log_name: str,
                 methods: tuple[str, ...]):
    """``arm(seq, here=False)`` for the ``sitecustomize`` fault ``source`` (``inject``ed
    now, its log ``tmp_path/log_name`` in ``VARIABLE_LOG``): arms it at step ``seq``
    (``VARIABLE_AT``) for every process started from then on, and with ``here`` in this
    one too (the ``ModelRunner`` ``methods`` it patches put back after the test);
    returns the log's path."""
    log = tmp_path / log_name
    inject(monkeypatch, tmp_path, source, **{f"{variable}_LOG": str(log)})

    def arm(seq: int, here: bool = False) -> Path:
        monkeypatch.setenv(f"{variable}_AT", str(seq))
        if here:  # the single-process case: patch this process too (undone after)
            from ipc_bench.engine.model_runner import ModelRunner
            for name in methods:
                monkeypatch.setattr(ModelRunner, name, getattr(ModelRunner, name))
            exec(source, {})
        return log

    return arm


def rank_1_only(source: str, variable: str) -> str:
    """A ``sitecustomize`` fault ``source``, armed by ``if os.environ.get(VARIABLE):``,
    armed in rank 1's process only (its command line ends with its control endpoint
    ``.../ctl1``)."""
    arm = f'if os.environ.get("{variable}"):'
    assert arm in source, arm
    return source.replace(arm, f'import sys\nif os.environ.get("{variable}") and '
                               'sys.argv[-1].endswith("/ctl1"):')


def bench(args: list[str], **kw) -> subprocess.Popen:
    """Start ``python bench.py ARGS`` in the repository root (stderr piped)."""
    return subprocess.Popen([sys.executable, str(REPO / "bench.py"), *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def load_run(run_dir: Path) -> tuple[dict, dict[str, "pd.DataFrame"]]:
    """``summary.json`` and every CSV of a run folder, as the user would load them."""
    summary = json.loads((run_dir / "summary.json").read_text())
    import pandas as pd  # here, not at the top: tests/fake_runner.py imports this module
    frames = {p.name: pd.read_csv(p) for p in sorted(run_dir.glob("*.csv"))}
    return summary, frames


def kill_quietly(pid: int, sig=signal.SIGKILL) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def processes_matching(*parts: str) -> list[str]:
    """Command lines of live processes whose command line contains every one of ``parts``
    (read with undecodable bytes replaced: another process's arguments need not be UTF-8)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                    "utf-8", "replace")
            except OSError:
                continue
            if all(p in cmd for p in parts):
                found.append(cmd)
    return found


def has_ipv6_loopback() -> bool:
    """Whether this machine can bind ``::1``."""
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def socket_folders(tmpdir: Path) -> list[str]:
    """Names of the ``ipc-bench-*`` socket folders in ``tmpdir``, sorted."""
    return sorted(p.name for p in tmpdir.glob("ipc-bench-*"))


def ctrl_c_reaps_every_child(tmp_path: Path, tmpdir: Path, args: list[str],
                             num_children: int, what: str) -> None:
    """Start ``bench.py ARGS --output TMP/run`` with ``TMPDIR=tmpdir`` (a run that would
    last for ever), wait for its first flush and its ``num_children`` child processes,
    send SIGINT, and check: every child gone, exit 130 with the interrupted case's one
    line, no traceback, nothing left in ``tmp_path`` but the run folder and no socket
    folder left in ``tmpdir``."""
    run_dir = tmp_path / "run"
    env = dict(os.environ, TMPDIR=str(tmpdir))
    proc = bench(args + ["--output", str(run_dir)], env=env)
    wait_for(lambda: (run_dir / "steps.partial.csv").exists(), what="first flush", proc=proc)
    kids = wait_for(lambda: len(children(proc.pid)) == num_children and children(proc.pid),
                    what=what, proc=proc)
    proc.send_signal(signal.SIGINT)
    for pid in kids:
        wait_dead(pid, timeout_s=10)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    last = err.strip().splitlines()[-1]
    assert re.fullmatch(r"bench\.py: \S+: interrupted by SIGINT at step \d+ \(steps\.csv seq: "
                        r"warm-up and uncounted steps included\); partial results: "
                        rf"{re.escape(str(run_dir))} \(exit 130\)", last), err
    assert err.count("interrupted by") == 1, err
    assert "Traceback" not in err and children(proc.pid) == []
    assert [p.name for p in tmp_path.iterdir()] == ["run"]
    assert socket_folders(tmpdir) == []


def _ephemeral_ports() -> tuple[int, int]:
    """The kernel's range for ports it picks itself (an outgoing connection's local
    port, a bind to port 0): ``net.ipv4.ip_local_port_range``, 32768-60999 where
    unread (Linux's default)."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def free_base_port(n: int) -> int:
    """A port P with P .. P + n - 1 free on 127.0.0.1 (checked by binding each), outside
    the kernel's ephemeral range: a connection that a test beside this one opens
    (``pytest -n 2``) takes its local port from that range, between this check and the
    bind of the run that uses P."""
    import random

    low, high = _ephemeral_ports()
    ranges = [r for r in ((10000, low - n), (high + 1, 65536 - n)) if r[1] - r[0] >= 1000]
    if not ranges:
        raise RuntimeError(f"no port range outside the ephemeral range {low}-{high}")
    for _ in range(200):
        base = random.randrange(*random.choice(ranges))
        socks = []
        try:
            for port in range(base, base + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free run of ports")


class SlowDecode:
    """``codec`` whose ``decode`` first sleeps ``delay_s`` seconds: an end of run whose
    decoding for the floor or the report is slow (the keep-alive tests)."""

    def __init__(self, codec, delay_s: float):
        self.codec, self.delay_s = codec, delay_s
        self.encode = codec.encode

    def decode(self, frame):
        time.sleep(self.delay_s)
        return self.codec.decode(frame)


#: The start of the line a run prints when it starts on a loaded machine
#: (``environment.loaded_note``), which the tests' own machine may or may not be.
LOADED_NOTE = "note: the machine is loaded as this run starts"


def without_load_note(lines: list[str]) -> list[str]:
    """``lines`` of a run's stderr less its loaded-machine note (``LOADED_NOTE``), there
    or not as the machine's load was when the run started."""
    return [line for line in lines if not line.startswith(LOADED_NOTE)]


def bench_started(pid: int) -> bool:
    """True once ``pid`` has run ``bench.py``'s first statement, which blocks SIGINT,
    SIGTERM and SIGHUP (they show as blocked in ``/proc/PID/status``); until then the
    interpreter itself is starting (``site`` and the installed packages' ``.pth``
    files), where a signal gets Python's or the system's default."""
    mask = sum(1 << (s - 1) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP))
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigBlk:"):
                return int(line.split()[1], 16) & mask == mask
    except OSError:
        pass
    return False
