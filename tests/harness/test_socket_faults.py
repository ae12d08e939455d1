"""Socket set-up failures through ``bench.py``, ``run_case`` and the runner's entry
point (``python -m ipc_bench.harness``): exit 2 with one line naming the endpoint and
the reason, within seconds, leaving no socket folder, results folder or runner
process behind.

Every process runs under a timeout (and the in-process tests under
``pytest.mark.timeout``), so a hang fails the test instead of stalling the suite.
Elapsed times are bounded loosely (a hang is 120 s or forever) and printed.
"""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest
import zmq

from fault_helpers import REPO, bench, fd_line, has_ipv6_loopback, runners_of, steady_case
from ipc_bench.cli import main as bench_main
from ipc_bench.cli import run as cli_run
from ipc_bench.harness.spec import CaseError
from ipc_bench.harness.supervisor import run_case
from ipc_bench.wire.transport import EndpointError

DS = ["--scenario", "decode-steady", "--num-running", "1", "--steps", "20", "--policies",
      "send", "--codecs", "msgpack", "--no-single-process", "--quiet"]
RUNNER_USAGE = ("usage: python -m ipc_bench.harness CTL_ENDPOINT (the runner process: "
                "bench.py starts it for each case)")
#: Loose bound on a refusal (Python start-up included, on a busy machine).
FAST_S = 10.0



def run_bench(args: list[str], tmpdir) -> tuple[int, str, float, int]:
    """``bench.py ARGS`` with ``TMPDIR=tmpdir``: exit code, stderr, seconds, pid."""
    t0 = time.monotonic()
    proc = bench(args, env={**os.environ, "TMPDIR": str(tmpdir)})
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err, time.monotonic() - t0, proc.pid


def tmpdir_of_length(tmp_path, length: int):
    base = f"{tmp_path}/"
    assert len(base) < length - 1, base
    path = tmp_path / ("t" * (length - len(base)))
    path.mkdir(parents=True)
    assert len(str(path)) == length
    return path


def assert_refused(code: int, err: str, elapsed_s: float, pid: int, tmpdir, output) -> str:
    """Exit 2, one line, fast; nothing left: socket folder, results folder, runner."""
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert elapsed_s < FAST_S
    assert list(tmpdir.iterdir()) == []
    assert not output.exists()
    assert runners_of(pid) == []
    return lines[0]


# ---------------------------------------------------------------------- bench.py


def test_a_tmpdir_of_85_characters_is_refused_at_once_77_runs(tmp_path, bench_tmpdir):
    """The issue's first example: a socket path over 107 bytes made the run hang. The
    socket folder's name holds the pid of ``bench.py`` (``ipc-bench-<pid>-XXXXXXXX``), so
    the path is 109 bytes plus the pid's digits; a ``TMPDIR`` of 77 characters fits
    with any pid (at most 7 digits). The ``TMPDIR``s lie under ``bench_tmpdir``, which is
    short enough for a 77-character one also under an xdist worker's longer ``tmp_path``."""
    tmpdir = tmpdir_of_length(bench_tmpdir / "a", 85)
    out = tmp_path / "run85"
    code, err, elapsed_s, pid = run_bench(DS + ["--output", str(out)], tmpdir)
    line = assert_refused(code, err, elapsed_s, pid, tmpdir, out)
    assert re.fullmatch(rf"bench\.py: error: cannot bind ipc://{re.escape(str(tmpdir))}/"
                        rf"ipc-bench-{pid}-\w{{8}}/s2r: the socket path is "
                        rf"{109 + len(str(pid))} bytes, the limit is 107 "
                        r"\(set TMPDIR to a shorter folder\)", line), line
    print(f"\nTMPDIR of 85 characters: exit 2 after {elapsed_s:.2f} s")

    tmpdir = tmpdir_of_length(bench_tmpdir / "b", 84 - 7)
    out = tmp_path / "run77"
    code, err, _, _ = run_bench(DS + ["--output", str(out)], tmpdir)
    assert code == 0, err
    assert json.loads((out / "summary.json").read_text())["status"] == "complete"
    assert list(tmpdir.iterdir()) == []


@pytest.mark.parametrize("host", ["192.0.2.1", "8.8.8.8"])
def test_a_host_not_on_this_machine_is_refused_at_once(tmp_path, host):
    out = tmp_path / "run"
    code, err, elapsed_s, pid = run_bench(
        DS + ["--transport", "tcp", "--host", host, "--output", str(out)], tmp_path)
    line = assert_refused(code, err, elapsed_s, pid, tmp_path, out)
    assert line == (f"bench.py: error: cannot bind tcp://{host}:*: Cannot assign requested "
                    "address (not an address of this machine)")
    print(f"\n--host {host}: exit 2 after {elapsed_s:.2f} s")


@pytest.mark.skipif(not has_ipv6_loopback(), reason="this machine has no IPv6 loopback (::1)")
def test_a_case_runs_end_to_end_over_ipv6_loopback(tmp_path):
    out = tmp_path / "run"
    code, err, _, _ = run_bench(DS + ["--transport", "tcp", "--host", "::1", "--output",
                                      str(out)], tmp_path)
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "complete"
    case = summary["cases"][0]
    assert case["complete"] and case["transport"] == "tcp" and case["output_tokens"] > 0


@pytest.mark.timeout(60)
def test_a_socket_failure_during_the_run_is_written_and_exits_2(monkeypatch, tmp_path, capsys):
    """The sockets were fine when checked, then a case cannot bind: the case is written
    as failed and the exit code is still 2."""
    tmpdir = tmpdir_of_length(tmp_path, 85)
    monkeypatch.setattr(cli_run, "check_endpoints", lambda *args: None)
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    out = tmp_path / "run"
    assert bench_main(DS + ["--output", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    pointer = f"; run folder (nothing measured): {out}"  # it failed before its first step
    message = lines[0].split(": ", 3)[-1].removesuffix(pointer)
    assert lines == [f"bench.py: error: num_running=1/send/msgpack#0: {message}{pointer}"]
    pid = os.getpid()  # the socket folder is ipc-bench-<pid>-XXXXXXXX
    assert re.fullmatch(rf"cannot bind ipc://.*/ipc-bench-{pid}-\w{{8}}/s2r: the socket path is "
                        rf"{109 + len(str(pid))} bytes, the limit is 107 \(set TMPDIR to a "
                        r"shorter folder\)", message), message
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "failed"
    assert summary["cases"][0]["error"] == message
    assert list(tmpdir.iterdir()) == []


@pytest.mark.timeout(60)
def test_run_case_closes_what_a_failing_socket_factory_left_open(monkeypatch, tmp_path):
    """Whatever failed, the shutdown cannot block: ``Context.term`` with a socket still
    open would wait forever."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    left_open = []

    def leaky_sockets(ctx, *args, **kwargs):
        left_open.append(ctx.socket(zmq.PAIR))
        raise EndpointError("cannot bind ipc://somewhere/s2r: for the test")

    with pytest.raises(EndpointError, match="for the test"):
        run_case(steady_case(max_steps=5), sockets=leaky_sockets)
    assert left_open[0].closed
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------- the runner entry


def run_runner(args: list[str]) -> tuple[int, list[str], float]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "ipc_bench.harness", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stderr.strip().splitlines(), time.monotonic() - t0


@pytest.mark.parametrize("args,error", [
    ([], "the following arguments are required: CTL_ENDPOINT"),
    (["foo"], "argument CTL_ENDPOINT: expected ipc://PATH or tcp://ADDR:PORT, got 'foo'"),
    (["tcp://localhost:5555"],
     "argument CTL_ENDPOINT: tcp://localhost:5555: 'localhost' is not an IP address"),
    (["ipc:///tmp/x/ctl", "extra"], "unrecognized arguments: extra"),
])
def test_bad_runner_arguments_are_one_line_and_exit_2(args, error):
    code, lines, _ = run_runner(args)
    assert code == 2
    assert lines == [f"python -m ipc_bench.harness: error: {error}; {RUNNER_USAGE}"]


def test_a_runner_whose_endpoint_is_gone_exits_2_at_once(tmp_path):
    endpoint = f"ipc://{tmp_path}/gone/ctl"
    code, lines, elapsed_s = run_runner([endpoint])
    assert code == 2
    assert lines == [f"runner: cannot connect to {endpoint}: no such socket file "
                     "(is the scheduler still running?)"]
    assert elapsed_s < FAST_S
    print(f"\nrunner with a gone endpoint: exit 2 after {elapsed_s:.2f} s")


def test_a_runner_whose_tcp_port_refuses_exits_2_at_once():
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))  # held, not listening: connects are refused
    port = holder.getsockname()[1]
    try:
        code, lines, elapsed_s = run_runner([f"tcp://127.0.0.1:{port}"])
    finally:
        holder.close()
    assert code == 2
    assert lines == [f"runner: cannot connect to tcp://127.0.0.1:{port}: connection refused "
                     "or address unreachable"]
    assert elapsed_s < FAST_S


@pytest.mark.timeout(60)
def test_a_runner_command_that_cannot_start_is_a_case_error(monkeypatch, tmp_path):
    """Not mistaken for an unwritable results folder (both are ``OSError``)."""
    sockets_tmp = tmp_path / "tmp"
    sockets_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(sockets_tmp))
    missing = tmp_path / "no-such-runner"
    with pytest.raises(CaseError) as err:
        run_case(steady_case(max_steps=5), runner_command=[str(missing)])
    assert str(err.value) == (f"cannot start the runner process {missing}: "
                              "No such file or directory")
    assert list(sockets_tmp.iterdir()) == []


# ---------------------------------------------------------------- file-descriptor limit

_FD_LINE = (r"too many open files \(ulimit -n {n}\): raise it \(e\.g\. ulimit -n 1024\) "
            r"and run again")


def _limit_fds(n: int):
    """A ``preexec_fn`` that lowers the child's soft ``RLIMIT_NOFILE`` to ``n``."""
    import resource

    def apply():
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (n, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    return apply


@pytest.mark.timeout(60)
@pytest.mark.parametrize("limit", [20, 24])
def test_a_low_fd_limit_is_named_before_any_case(tmp_path, limit):
    """Was a zmq.error.ZMQError traceback (exit 1) from the sockets' check, or, a
    few descriptors higher, 'connection refused (no process listens on that socket
    file)', or libzmq aborting on an accept: now one line naming the limit, exit 2,
    before the run folder is made."""
    out = tmp_path / "run"
    proc = bench(DS + ["--output", str(out)], preexec_fn=_limit_fds(limit))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert re.fullmatch(r"bench\.py: error: " + _FD_LINE.format(n=limit)
                        + r" \(the ipc sockets' check needs 24 free, \d+ are\)\n", err), err
    assert not out.exists()


def test_open_socket_names_the_fd_limit_where_libzmq_runs_out():
    """A process with no descriptor left: ``open_socket`` raises ``EndpointError``
    naming the limit, whichever libzmq call ran out (the socket, its monitor, or a
    connect that libzmq reports as refused). Run in a child: the limit is the
    process's, and a bound socket's accept with none left aborts libzmq."""
    code = textwrap.dedent("""
        import os, resource, tempfile, zmq
        from ipc_bench.wire.transport import EndpointError, open_socket
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        ctx = zmq.Context()
        path = os.path.join(tempfile.mkdtemp(), "s")
        try:
            while True:
                os.open(os.devnull, os.O_RDONLY)
        except OSError:
            pass
        try:
            open_socket(ctx, zmq.PUSH, "ipc://" + path, bind=False, connect_timeout_s=2)
        except EndpointError as exc:
            print(exc)
        os._exit(0)
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(r"cannot connect to ipc://\S+/s: " + _FD_LINE.format(n=64) + "\n",
                        proc.stdout), proc.stdout


def test_a_connect_refused_for_want_of_a_descriptor_names_the_limit(monkeypatch):
    """libzmq reports a connect whose socket() got EMFILE as refused: with no
    descriptor left when it fails, the line names the limit, not a missing listener."""
    import resource

    from ipc_bench.wire import transport

    def refused(sock, endpoint, timeout_s, monitor=None):
        raise EndpointError(f"cannot connect to {endpoint}: connection refused (no "
                            "process listens on that socket file)")

    monkeypatch.setattr(transport, "_connect", refused)
    ctx = zmq.Context()
    try:
        monkeypatch.setattr(transport, "fds_exhausted", lambda: False)
        with pytest.raises(EndpointError, match="connection refused"):
            transport.open_socket(ctx, zmq.PUSH, "ipc:///nonexistent/s", bind=False)
        monkeypatch.setattr(transport, "fds_exhausted", lambda: True)
        with pytest.raises(EndpointError) as err:
            transport.open_socket(ctx, zmq.PUSH, "ipc:///nonexistent/s", bind=False)
    finally:
        ctx.destroy(linger=0)
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert str(err.value) == (f"cannot connect to ipc:///nonexistent/s: too many open files "
                              f"(ulimit -n {soft}): raise it (e.g. ulimit -n 1024) and run "
                              "again")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("raised", [
    OSError(errno.EMFILE, "Too many open files"), zmq.ZMQError(errno.EMFILE),
    OSError(errno.ENFILE, "Too many open files in system"), zmq.ZMQError(errno.ENFILE)])
def test_a_case_out_of_descriptors_is_one_line_and_exits_2(monkeypatch, tmp_path, capsys,
                                                            raised):
    """EMFILE raised in a case (here as its runner starts: an OSError from the pipes,
    or a ZMQError) is written as the case's failure, one line naming the limit, exit 2
    (was an OSError line, exit 1, or an internal error with a traceback); ENFILE, the
    system's file table full, likewise, its line naming that table, not ulimit -n."""
    from ipc_bench.harness import supervisor

    def out_of_fds(self, *args, **kwargs):
        raise raised

    monkeypatch.setattr(supervisor.RunnerProcess, "__init__", out_of_fds)
    out = tmp_path / "run"
    assert bench_main(DS + ["--output", str(out)]) == 2
    line = fd_line(raised.errno)
    assert capsys.readouterr().err == (f"bench.py: error: num_running=1/send/msgpack#0: {line}"
                                       f"; run folder (nothing measured): {out}\n")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "failed"
    assert summary["cases"][0]["error"] == line


@pytest.mark.timeout(60)
@pytest.mark.parametrize("options, role", [
    (["--frontend"], "frontend"),
    (["--scenario", "tp-broadcast", "--tp", "2", "--tp-transports", "ipc"], "runner")])
def test_a_process_that_cannot_start_for_want_of_descriptors_names_the_limit(
        monkeypatch, tmp_path, capsys, options, role):
    """EMFILE from the start of the case's second process (the frontend after the
    runner; the second --tp rank) was 'cannot start the frontend process PATH: Too
    many open files', exit 1: now the limit's line, saying which process, exit 2."""
    import resource

    from ipc_bench.harness import supervisor
    from ipc_bench.harness.signals import SCHEDULER_PID_ENV

    popen, started = subprocess.Popen, []

    def second_out_of_fds(*args, **kwargs):
        if SCHEDULER_PID_ENV not in (kwargs.get("env") or {}):  # not a case's process
            return popen(*args, **kwargs)
        if started:
            raise OSError(errno.EMFILE, "Too many open files")
        started.append(popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(supervisor.subprocess, "Popen", second_out_of_fds)
    args = DS + options if options[0] != "--scenario" else (
        options + ["--steps", "20", "--policies", "send", "--codecs", "msgpack", "--quiet"])
    out = tmp_path / "run"
    assert bench_main(args + ["--output", str(out)]) == 2
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    line = (f"too many open files (ulimit -n {soft}): raise it (e.g. ulimit -n 1024) and run "
            f"again (cannot start the {role} process)")
    err = capsys.readouterr().err
    assert re.fullmatch(rf"bench\.py: error: \S+#0: {re.escape(line)}; run folder "
                        rf"\(nothing measured\): {re.escape(str(out))}\n", err), err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["cases"][0]["error"] == line
    assert started[0].poll() is not None  # the first one reaped


@pytest.mark.timeout(60)
@pytest.mark.parametrize("options, need", [
    (["--frontend"], 29),
    (["--scenario", "tp-broadcast", "--tp", "4", "--tp-transports", "ipc"], 32),
    # the spinning ring's own figures (measured: 38 at --tp 4), not shm-block's (44)
    (["--scenario", "tp-broadcast", "--tp", "4", "--tp-transports", "shm"], 41)])
def test_the_check_asks_for_the_descriptors_of_the_frontend_and_tp_ranks(tmp_path, options,
                                                                         need):
    """With 4 free descriptors fewer than the case needs (more than the sockets' own
    24), the frontend's case and --tp 4's were refused only as their process started
    (or libzmq aborted on an accept, or the results could not be written): now the
    check refuses them, naming the need."""
    from ipc_bench.wire.transport import case_fds

    transport = options[-1] if "--tp" in options else "ipc"
    assert need == case_fds(transport, *((4, False) if "--tp" in options else (1, True)))
    args = DS + options if options[0] != "--scenario" else (
        options + ["--steps", "20", "--policies", "send", "--codecs", "msgpack", "--quiet"])
    out = tmp_path / "run"
    # The descriptors bench.py holds at the check: measured in a child as it would.
    count = "import ipc_bench.cli, os; print(len(os.listdir('/proc/self/fd')) - 1)"
    held = int(subprocess.run([sys.executable, "-c", count], cwd=REPO, capture_output=True,
                              text=True, timeout=60).stdout)
    limit = held + need - 4
    proc = bench(args + ["--output", str(out)], preexec_fn=_limit_fds(limit))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert re.fullmatch(r"bench\.py: error: " + _FD_LINE.format(n=limit)
                        + rf" \(the {transport} cases need {need} free, \d+ are\)\n", err), err
    assert not out.exists()
