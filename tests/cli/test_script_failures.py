"""A case or a run that fails under a script of scripts/: one line on stderr and exit 1,
no traceback. byte_sweep runs its cases in process (``run_case``: a ``CaseError`` ends
as ``console.script_main`` lines it); oracle_cost --bench quotes the error line of the
``bench.py`` run that failed; codec_fit refuses a run folder whose cases have no fixed
number of running requests (a trace replay's) as it refuses any run it cannot fit,
exit 2. Each test that kills a runner waits for a sign that it is where the test
means to kill it (started, stepping), not a fixed time."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fault_helpers import alive, bench_started, children, runners_of
from script_module import kill_started, load_script, run_script, start_script

ROOT = Path(__file__).resolve().parents[2]
#: How long a script may take to reach the point a test waits for.
START_S = 60
#: Voluntary context switches of a runner's main thread that only stepping reaches:
#: it blocks on its socket about twice a step (1,700 a second at 16 running on the
#: 2-core development machine), and none while it imports and a few in its handshake.
STEPPING_SWITCHES = 1000

@pytest.fixture(autouse=True)
def _no_group_left():
    yield
    kill_started()


def _start(name: str, *argv: str, tmpdir: Path) -> subprocess.Popen:
    """``start_script`` with ``TMPDIR`` set to ``tmpdir``."""
    return start_script(name, *argv, env=dict(os.environ, TMPDIR=str(tmpdir)))


def _wait_until(proc: subprocess.Popen, ready, what: str):
    """Poll ``ready()`` until it returns something true (returned); fail with the
    script's output if it exits first or ``START_S`` passes."""
    deadline = time.monotonic() + START_S
    while not (value := ready()):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _, err = proc.communicate()
            raise AssertionError(f"{what} never happened (exit {proc.returncode}):\n{err}")
        time.sleep(0.01)
    return value


def _voluntary_switches(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    (line,) = [s for s in status.splitlines() if s.startswith("voluntary_ctxt_switches:")]
    return int(line.split()[1])


def _stepping_runner(scheduler_pids):
    """A ``ready`` test: the pid of a runner of one of ``scheduler_pids()`` that is
    stepping (``STEPPING_SWITCHES``)."""
    def ready():
        for pid in scheduler_pids():
            for runner in runners_of(pid):
                if _voluntary_switches(runner) >= STEPPING_SWITCHES:
                    return runner
        return None
    return ready


# ------------------------------------------------------------------ byte_sweep

BYTE_SWEEP = ("--formats", "cmpl", "--vocab-sizes", "32000", "--codecs", "msgpack",
              "--num-running", "16", "--steps", "1000000")
BYTE_SWEEP_PROGRESS = "... cmpl ids, vocabulary 32,000, uniform token ids"
#: The case a runner killed in the first case fails, as byte_sweep names it.
BYTE_SWEEP_CASE = ("num_running=16/send/msgpack#0 (cmpl ids, vocabulary 32,000, uniform "
                   "token ids)")


def test_byte_sweep_runner_killed_mid_case_is_one_line_and_exit_1(bench_tmpdir):
    proc = _start("byte_sweep", *BYTE_SWEEP, tmpdir=bench_tmpdir)
    runner = _wait_until(proc, _stepping_runner(lambda: [proc.pid]), "the case's steps")
    os.kill(runner, signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=START_S)
    assert (proc.returncode, stdout) == (1, ""), stderr
    progress, line = stderr.splitlines()
    assert progress == BYTE_SWEEP_PROGRESS
    assert re.fullmatch(
        re.escape(f"byte_sweep.py: error: {BYTE_SWEEP_CASE}: runner process {runner} was "
                  "killed by SIGKILL, noticed ")
        # or between steps, in the input oracle's periodic digest exchange
        + r"while ((waiting for ModelRunnerOutput|sending SchedulerOutput) for step \d+|"
          r"waiting for input digests from the runner before step \d+)",
        line), stderr
    assert not alive(runner)


def test_byte_sweep_runner_killed_in_its_handshake_is_one_line_and_exit_1(bench_tmpdir):
    """Killed as soon as it runs (it is still importing: the scheduler is sending it
    the handshake)."""
    proc = _start("byte_sweep", *BYTE_SWEEP, tmpdir=bench_tmpdir)
    (runner,) = _wait_until(proc, lambda: runners_of(proc.pid), "the runner's start")
    os.kill(runner, signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=START_S)
    assert (proc.returncode, stdout, stderr) == (
        1, "", f"{BYTE_SWEEP_PROGRESS}\nbyte_sweep.py: error: {BYTE_SWEEP_CASE}: runner "
        f"process {runner} was killed by SIGKILL, noticed while sending Handshake\n")


# ------------------------------------------------------------------ script_main


def _script_main(monkeypatch, exc: BaseException) -> tuple[int, str]:
    """(exit code, stderr) of ``script_main("prog.py", main)`` with ``main`` raising
    ``exc``."""
    from ipc_bench.cli.console import script_main

    err = io.StringIO()
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.setattr(sys, "stderr", err)

    def main():
        raise exc

    return script_main("prog.py", main), err.getvalue()


def test_script_main_gives_a_failed_case_one_line_as_bench_py_does(monkeypatch):
    from ipc_bench.engine.config import ConfigError
    from ipc_bench.engine.scheduler import SchedulerError
    from ipc_bench.errors import fd_limit_text
    from ipc_bench.harness.spec import CaseError
    from ipc_bench.wire.transport import EndpointError

    for exc, expected in (
            (CaseError("runner process 4242 was killed by SIGKILL, noticed while waiting "
                       "for ModelRunnerOutput for step 1185", 1185),
             (1, "prog.py: error: runner process 4242 was killed by SIGKILL, noticed "
                 "while waiting for ModelRunnerOutput for step 1185\n")),
            (CaseError(f"runner: {fd_limit_text()}"),  # a runner's report: the limit
             (2, f"prog.py: error: runner: {fd_limit_text()}\n")),
            (EndpointError("cannot bind ipc:///tmp/x/s: Address in use"),
             (2, "prog.py: error: cannot bind ipc:///tmp/x/s: Address in use\n")),
            (SchedulerError("request r1 needs 40 blocks, the cache has 32"),
             (1, "prog.py: error: request r1 needs 40 blocks, the cache has 32\n")),
            (ConfigError("block_size must be at least 1, got 0"),
             (1, "prog.py: error: block_size must be at least 1, got 0\n")),
            (OSError(errno.EMFILE, "Too many open files"),
             (2, f"prog.py: error: {fd_limit_text()}\n")),
            (MemoryError(),
             (1, "prog.py: error: out of memory (MemoryError): a memory limit (ulimit -v, "
                 "a container's) or the machine's memory is too small for this case\n"))):
        assert _script_main(monkeypatch, exc) == expected, exc


def test_script_main_raises_a_bug_as_it_was(monkeypatch):
    with pytest.raises(KeyError, match="num_running"):
        _script_main(monkeypatch, KeyError("num_running"))
    with pytest.raises(OSError, match="No space left"):  # not a descriptor shortage
        _script_main(monkeypatch, OSError(errno.ENOSPC, "No space left on device"))


# ------------------------------------------------------------------ oracle_cost --bench


def test_oracle_cost_bench_quotes_the_error_of_a_run_that_failed(bench_tmpdir):
    """The first run's runner killed while it steps: bench.py exits 1 with its error
    line, which oracle_cost quotes without the run folder it names (removed with the
    runs' temporary folder), exit 1; no later run starts."""
    proc = _start("oracle_cost", "--bench", "--num-running", "4", "--steps", "1000000",
                  "--pairs", "1", tmpdir=bench_tmpdir)
    runner = _wait_until(proc, _stepping_runner(lambda: children(proc.pid)),
                         "the first run's steps")
    os.kill(runner, signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=START_S)
    assert (proc.returncode, stdout) == (1, ""), stderr
    assert re.fullmatch(
        "oracle_cost.py: error: the oracle-off run of pair 1 failed: bench.py exited 1: "
        r"bench.py: error: num_running=4/send/msgpack#0: runner process "
        f"{runner} was killed by SIGKILL, noticed while "
        r"(waiting for ModelRunnerOutput|sending SchedulerOutput) for step \d+; the runs' "
        r"temporary folder is removed\n", stderr), stderr
    assert list(bench_tmpdir.glob("oracle-cost-*")) == []


def test_oracle_cost_run_failure_names_how_bench_py_ended(tmp_path):
    oracle_cost = load_script("oracle_cost")
    out = tmp_path / "0-off"
    assert oracle_cost.run_failure(-9, "", out) == "bench.py was killed by SIGKILL"
    # killed after a warning: the warning is not quoted as the cause
    assert oracle_cost.run_failure(-9, "bench.py: warning: --input-oracle-interval 0: the "
                                   "input oracle is off\n", out) == (
        "bench.py was killed by SIGKILL")
    assert oracle_cost.run_failure(1, "bench.py: warning: a\n\nbench.py: error: x: refused; "
                                      f"run folder (nothing measured): {out}\n\n", out) == (
        "bench.py exited 1: bench.py: error: x: refused")
    # another folder's pointer is bench.py's own words, kept
    assert oracle_cost.run_failure(2, f"bench.py: error: y; partial results: {tmp_path}",
                                   out) == (
        f"bench.py exited 2: bench.py: error: y; partial results: {tmp_path}")


def test_oracle_cost_bench_interrupted_before_its_runs_names_no_folder(bench_tmpdir):
    """SIGINT as soon as the script has blocked its signals: it arrives once the
    options are parsed, before the runs' temporary folder is made, and the line
    says nothing was printed and names no folder."""
    proc = _start("oracle_cost", "--bench", "--num-running", "4", "--steps", "1000",
                  "--pairs", "1", tmpdir=bench_tmpdir)
    _wait_until(proc, lambda: bench_started(proc.pid), "the script's first statement")
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=START_S)
    assert (proc.returncode, stdout, stderr) == (
        130, "", "oracle_cost.py: interrupted by SIGINT; nothing printed (exit 130)\n")
    assert list(bench_tmpdir.glob("oracle-cost-*")) == []


# ------------------------------------------------------------------ codec_fit


def _replay_case(policy: str) -> dict:
    """A complete two-process case of an ``azure-conv`` run, as ``summary.json`` has it:
    codec times, no ``num_running``."""
    return dict(case_id=f"trace=azure-conv:20/{policy}/msgpack#0", scenario="azure-conv",
                workload="trace=azure-conv:20", trace="azure-conv:20", policy=policy,
                codec="msgpack", repetition=0, complete=True, num_steps=585,
                encode_ns_per_step=4210.4, decode_ns_per_step=3100.0,
                sched_encode_ns_per_step=2000.0, runner_decode_ns_per_step=1500.0,
                runner_encode_ns_per_step=2210.4, sched_decode_ns_per_step=1600.0)


def _steady_case(policy: str, b: int) -> dict:
    return dict(case_id=f"num_running={b}/{policy}/msgpack#0", scenario="decode-steady",
                policy=policy, codec="msgpack", num_running=b, repetition=0,
                complete=True, num_steps=10, encode_ns_per_step=3000.0 + 20 * b,
                decode_ns_per_step=2000.0 + 10 * b, sched_encode_ns_per_step=1.0,
                runner_decode_ns_per_step=1.0, runner_encode_ns_per_step=1.0,
                sched_decode_ns_per_step=1.0)


def _run_folder(folder: Path, cases: list[dict]) -> str:
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(dict(format_version=1, cases=cases)))
    (folder / "steps.csv").write_text("case_id,counted\n")  # --stat median reads it
    return str(folder)


def test_codec_fit_refuses_a_trace_replay_run(tmp_path):
    replay = _run_folder(tmp_path / "conv", [_replay_case(p) for p in ("send", "cached")])
    steady = _run_folder(tmp_path / "steady", [_steady_case(p, b) for p in ("send", "cached")
                                               for b in (16, 64, 256)])
    note = ("; its azure-conv cases are not decode-steady ones and have no fixed number "
            "of running requests (codec_fit fits decode-steady runs)")
    for argv, line in (
            (["--fit-run", replay, "--check-run", steady],
             f"argument --fit-run: {replay} has no complete two-process case to fit{note}"),
            (["--fit-run", steady, "--check-run", replay],
             f"argument --check-run: {replay} has no complete two-process case at 1,024 "
             f"running requests for cached msgpack, send msgpack (it has none){note}"),
            (["--check-run", replay, "--stat", "mean"],
             f"argument --check-run: {replay} has no complete two-process case at 1,024 "
             f"running requests (it has none){note}")):
        out = run_script("codec_fit", *argv)
        assert (out.returncode, out.stderr, out.stdout) == (
            2, f"codec_fit.py: error: {line}\n", ""), argv
