"""Runs whose runners are started by hand (``--remote-runners``, ``bench.py runner
--connect``): the scheduler and each runner started as processes of their own, as a
person starts them on two hosts.

``Launcher`` starts them; every wait is for a condition (a line on a process's stderr,
a file in the run folder) within a timeout, and the ``with`` block's end reaps every
process it started, each in a process group of its own (``start_new_session``), so
that what it spawned (a scheduler's runners) goes with it: the group of one that a
failed test left running (stopped ones too) is sent SIGTERM, then SIGKILL where it has
not ended. ``bench_run`` runs ``bench.py`` to its end (a spawned run to compare with, a
run that refuses its input)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional, Sequence, Union

from fault_helpers import REPO, free_base_port

#: The line a runner started ``held`` prints once its modules are imported.
RUNNER_IMPORTED = "runner modules imported"
#: The longest wait for a line or a file: a process's start-up on a slow, loaded machine
#: (tens of seconds where it imports torch); only a failing test waits it out.
START_S = 120.0
#: The longest a process left running may take to end once sent SIGTERM, then SIGKILL.
REAP_S = 30.0


def no_handshake_line(port: int, timeout_s: float) -> str:
    """The one stderr line of a runner whose peer at 127.0.0.1 ``port`` did not complete
    the ZeroMQ handshake within its ``--connect-timeout`` of ``timeout_s`` (exit 2)."""
    return (f"bench.py runner: error: the peer at tcp://127.0.0.1:{port} did not complete "
            f"the ZeroMQ handshake within {timeout_s:g} s (it sent nothing, or bytes that are "
            f"not ZeroMQ's): is it the scheduler's control port? The scheduler prints the "
            f"command with the port to connect to\n")


def read_line(proc: subprocess.Popen, what: str, timeout_s: float = START_S,
              stream: str = "stderr") -> str:
    """The next line ``proc`` writes to its stderr pipe (its stdout pipe where ``stream``
    is ``"stdout"``; '' where it closes it first), read a byte at a time from the pipe
    itself, so nothing past the line is buffered out of reach of a later
    ``communicate``; ``AssertionError`` naming ``what`` after ``timeout_s`` seconds
    without one."""
    fd = getattr(proc, stream).fileno()
    deadline = time.monotonic() + timeout_s
    line = bytearray()
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise AssertionError(f"no {what} from {proc.args[:4]} within {timeout_s:g} s "
                                 f"(read so far: {bytes(line)!r})")
        byte = os.read(fd, 1)
        if not byte:
            break
        line += byte
    return line.decode()


def wait_for_steps(run: Path, sched: subprocess.Popen, flushes: int = 1,
                   timeout_s: float = START_S) -> None:
    """Return once the running case of the run in ``run`` has flushed its step rows
    ``flushes`` times (``steps.partial.csv`` appears with the first, about a second into
    the case, and grows with each); ``AssertionError`` at once, with its stderr, where the
    scheduler ``sched`` ended first, or after ``timeout_s`` seconds."""
    partial = run / "steps.partial.csv"
    deadline = time.monotonic() + timeout_s
    sizes: list[int] = []
    while True:
        size = partial.stat().st_size if partial.exists() else 0
        if size and (not sizes or size > sizes[-1]):
            sizes.append(size)
        if len(sizes) >= flushes:
            return
        if sched.poll() is not None:
            raise AssertionError(f"the scheduler exited {sched.returncode} before its case's "
                                 f"step rows:\n{sched.communicate(timeout=REAP_S)[1]}")
        assert time.monotonic() < deadline, f"the case did not start within {timeout_s:g} s"
        time.sleep(0.05)


class Launcher:
    """The scheduler and runners of one test: ``with Launcher() as launch:``; every
    process it started is reaped when the block ends, whatever happens to the others:
    the group of one that still runs sent SIGTERM first, then SIGKILL where it has not
    ended within ``REAP_S`` seconds (the group of one that ended too, where something
    of it still holds its pipes). A process that cannot be reaped even so is named in
    an ``AssertionError`` after the others are reaped, unless the block itself raised,
    whose exception is then left to go on."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> "Launcher":
        return self

    def __exit__(self, *exc) -> None:
        running = [proc for proc in self.procs if proc.poll() is None]
        for proc in running:  # SIGCONT: one a test stopped takes its SIGTERM too
            _signal(proc, signal.SIGTERM)
            _signal(proc, signal.SIGCONT)
        unreaped = []
        for proc in self.procs:
            try:
                _reap(proc, REAP_S if proc in running else 0.1)
            except Exception as err:  # the others are reaped all the same
                unreaped.append(f"{proc.args[:4]} (pid {proc.pid}): {err!r}")
        if not unreaped:
            return
        said = "processes not reaped: " + "; ".join(unreaped)
        if exc[1] is None:
            raise AssertionError(said)
        exc[1].add_note(said)  # the block's own exception goes on

    def start(self, argv: Sequence[str], prefix: Sequence[str] = (),
              **popen) -> subprocess.Popen:
        """``python ARGV`` in the repository's root (after ``prefix``, e.g. ``ip netns
        exec NS``, which execs it), stdout and stderr piped as text, in a session and
        process group of its own."""
        popen = {"cwd": REPO, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE,
                 "text": True, "start_new_session": True, **popen}
        proc = subprocess.Popen([*prefix, sys.executable, *argv], **popen)
        proc.own_group = bool(popen["start_new_session"])  # its pid is its group's id
        self.procs.append(proc)
        return proc

    def scheduler(self, args: Sequence[str], out: Optional[Path] = None, *,
                  skip: Sequence[str] = (), prefix: Sequence[str] = (),
                  timeout_s: float = START_S, **popen) -> subprocess.Popen:
        """``bench.py ARGS --output OUT``, returned once it printed its first stderr line,
        kept as its ``first_line`` (the 'waiting ... for runners' line, printed once its
        ports are bound, or an error), past lines that begin with one of ``skip``; each
        line within ``timeout_s``."""
        output = ["--output", str(out)] if out is not None else []
        proc = self.start(["bench.py", *args, *output], prefix, **popen)
        what = "first stderr line of the scheduler"
        proc.first_line = read_line(proc, what, timeout_s)
        while skip and proc.first_line.startswith(tuple(skip)):
            proc.first_line = read_line(proc, what, timeout_s)
        return proc

    def runner(self, connect: Union[int, str], *extra: str, python_code: Optional[str] = None,
               held: bool = False, prefix: Sequence[str] = ()) -> subprocess.Popen:
        """``bench.py runner --connect CONNECT EXTRA`` (``connect``: a port on 127.0.0.1,
        or the whole address). With ``python_code``, the runner's ``main`` is called in
        ``python -c`` after that code, in the same interpreter (e.g. to change the protocol
        version it speaks). With ``held``, returns once its modules are imported (it prints
        ``RUNNER_IMPORTED``) and holds it there until ``release``, so that a test can time
        its connection without its start-up (a runner started before its scheduler binds
        gives up at once: connection refused)."""
        address = f"tcp://127.0.0.1:{connect}" if isinstance(connect, int) else connect
        argv = ["runner", "--connect", address, *extra]
        if python_code is None and not held:
            return self.start(["bench.py", *argv], prefix, stdin=subprocess.DEVNULL)
        hold = (f"import ipc_bench.cli.runner, ipc_bench.harness.remote_runner\n"
                f"sys.stderr.write({RUNNER_IMPORTED + chr(10)!r}); sys.stderr.flush()\n"
                f"sys.stdin.readline()\n" if held else "")
        code = (f"{python_code or ''}\nimport sys\n{hold}from ipc_bench.cli import main\n"
                f"sys.exit(main({argv!r}))")
        proc = self.start(["-c", code], prefix,
                          stdin=subprocess.PIPE if held else subprocess.DEVNULL)
        if held:
            line = read_line(proc, "line of a held runner")
            assert line == RUNNER_IMPORTED + "\n", line
        return proc

    @staticmethod
    def release(runner: subprocess.Popen) -> None:
        """Let a runner started ``held`` go on and connect."""
        runner.stdin.write("\n")
        runner.stdin.flush()

    @staticmethod
    def finish(*procs: subprocess.Popen,
               timeout_s: float = START_S) -> list[tuple[int, str, str]]:
        """Wait for each of ``procs`` to end, in turn, each within ``timeout_s``: each
        one's (exit code, stdout, stderr)."""
        ended = []
        for proc in procs:
            out, err = proc.communicate(timeout=timeout_s)
            ended.append((proc.returncode, out, err))
        return ended


def _signal(proc: subprocess.Popen, sig: int) -> None:
    """Send ``sig`` to ``proc``'s process group (to ``proc`` alone where it was started
    in its caller's); nothing where none of it is left."""
    try:
        if getattr(proc, "own_group", False):
            os.killpg(proc.pid, sig)
        elif proc.returncode is None:
            proc.send_signal(sig)
    except ProcessLookupError:
        pass


def _reap(proc: subprocess.Popen, timeout_s: float) -> None:
    """Wait ``timeout_s`` seconds for ``proc`` to end and close its pipes, else SIGKILL
    its group and wait ``REAP_S`` more; ``subprocess.TimeoutExpired`` where it still
    has not ended (a process in uninterruptible sleep), its pipes closed all the
    same."""
    try:  # bench.py removes its socket folder on SIGTERM: a SIGKILL leaves it
        proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _signal(proc, signal.SIGKILL)
        try:
            proc.communicate(timeout=REAP_S)
        except subprocess.TimeoutExpired:  # something outside its group holds its pipes
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
            proc.wait(REAP_S)
    finally:
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None and not pipe.closed:
                try:
                    pipe.close()
                except OSError:
                    pass


def bench_run(args: Sequence[str], timeout_s: float = START_S) -> subprocess.CompletedProcess:
    """``python bench.py ARGS`` run to its end in the repository's root, its output
    captured as text (killed and reaped after ``timeout_s`` seconds)."""
    return subprocess.run([sys.executable, "bench.py", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout_s)


def token_digests(run: Path) -> dict[str, str]:
    """Each case's token digest in the run folder ``run``, by case id."""
    summary = json.loads((run / "summary.json").read_text())
    return {c["case_id"]: c["token_digest"] for c in summary["cases"]}


def refused_by_hand(args: Sequence[str], run: Path, case_id: str, refusal: str) -> str:
    """Run ``bench.py ARGS --transport tcp --remote-runners`` into ``run`` with one runner
    started by hand, which refuses the handshake with ``refusal`` (a model that does not
    fit its memory, say); checks the scheduler's first line, both exit codes and both
    last lines (the case ``case_id`` failed, nothing measured); returns both stderrs."""
    port = free_base_port(3)
    with Launcher() as launch:
        sched = launch.scheduler([*args, "--transport", "tcp", "--remote-runners", "--port",
                                  str(port)], run)  # once its ports are bound
        runner = launch.runner(port)
        (_, _, runner_err), (_, _, err) = launch.finish(runner, sched)
    first = sched.first_line  # the 'waiting ... for runners' line
    assert first.startswith("bench.py: waiting up to ")
    assert (sched.returncode, runner.returncode) == (1, 3), (err, runner_err)
    assert err.splitlines()[-1] == (
        f"bench.py: error: {case_id}: runner refused the handshake: {refusal}; run folder "
        f"(nothing measured): {run}")
    assert runner_err.splitlines()[-1] == f"bench.py runner: refusing the handshake: {refusal}"
    return err + runner_err
