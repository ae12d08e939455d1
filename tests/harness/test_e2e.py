"""Both processes end to end (ipc_bench.harness.supervisor.run_case): both policies x both codecs.

Each workload runs its four cases once (module fixtures). Checked: equal token digests
(the correctness oracle), ``cached`` ships fewer scheduler->runner bytes per step than
``send``, the floor ran, and after every run, failed or not, the runner process is
gone and the run's private temporary directory (sockets, runner stderr) is removed.
The Azure trace is read from ``shared/traces`` next to the checkout, never copied.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from ipc_bench.harness import case_lifecycle, supervisor
from ipc_bench.harness.spec import RUNNER_COLUMNS, SCHED_COLUMNS, CaseSpec
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.analysis.summary import attach_token_bytes, summarize_case
from ipc_bench.harness.spec import CaseError
from ipc_bench.harness.supervisor import run_case
from ipc_bench.engine.scheduler import SchedulerError
from ipc_bench.wire.transport import EndpointDir
from ipc_bench.engine.workloads import SteadyDecodeWorkload, TraceWorkload

TRACE = Path(__file__).resolve().parents[3] / "shared" / "traces" / "AzureLLMInferenceTrace_conv.csv"
CASES = [(p, c) for c in ("msgpack", "pickle") for p in ("send", "cached")]
MODEL = ModelConfig(seed=0)


class Spy:
    """Records the runner processes and endpoint directories ``run_case`` creates."""

    def __init__(self, mp: pytest.MonkeyPatch):
        self.procs = []
        self.dirs: list[str] = []
        spy = self

        class RecordingRunner(supervisor.RunnerProcess):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                spy.procs.append(self.proc)

        class RecordingDir(EndpointDir):
            def __init__(self):
                super().__init__()
                spy.dirs.append(self.path)

        mp.setattr(supervisor, "RunnerProcess", RecordingRunner)
        mp.setattr(case_lifecycle, "EndpointDir", RecordingDir)


def _cmdlines() -> dict[int, str]:
    """pid -> command line of every process (psutil if installed, else /proc)."""
    try:
        import psutil
    except ImportError:
        psutil = None
    out = {}
    if psutil is not None:
        for p in psutil.process_iter(["pid", "cmdline"]):
            out[p.info["pid"]] = " ".join(p.info["cmdline"] or ())
        return out
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                raw = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            out[int(entry)] = raw.replace(b"\0", b" ").decode(errors="replace")
    return out


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (psutil if installed, else /proc/PID/task/*/children)."""
    try:
        import psutil
        return [c.pid for c in psutil.Process(pid).children()]
    except ImportError:
        pass
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            kids += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            continue
    return kids


def assert_clean(spy: Spy) -> None:
    """No runner of ours is left, we have no children, every private dir is gone."""
    assert spy.procs and spy.dirs
    for proc in spy.procs:
        assert proc.returncode is not None, f"runner {proc.pid} was not reaped"
    assert _children(os.getpid()) == []
    # Other runs on this machine may have runners of their own: ours are the ones whose
    # command line names one of our endpoint directories.
    ours = [cmd for cmd in _cmdlines().values()
            if "-m ipc_bench.harness " in cmd and any(d in cmd for d in spy.dirs)]
    assert ours == []
    for d in spy.dirs:
        assert not os.path.exists(d), f"{d} was not removed"


def steady_spec(policy: str, codec: str, **kw) -> CaseSpec:
    base = dict(
        scenario="test-steady", labels={"num_running": 4}, policy=policy, codec=codec,
        scheduler=SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=512,
                                  max_model_len=512, num_blocks=4 * 32 + 32),
        model=MODEL,
        # Short outputs: requests finish and are replaced during the run.
        make_workload=lambda: SteadyDecodeWorkload(4, seed=0, vocab_size=MODEL.vocab_size,
                                                   prompt_len_range=(8, 40),
                                                   output_len_range=(5, 30)),
        warmup_steps=5, max_steps=60, count="decode_only", peer_timeout_s=20.0)
    base.update(kw)
    return CaseSpec(**base)


def trace_spec(policy: str, codec: str) -> CaseSpec:
    from ipc_bench.engine.traces import load_azure_trace

    trace = load_azure_trace(TRACE, max_requests=40)
    return CaseSpec(
        scenario="test-trace", labels={"trace": "conv:40"}, policy=policy, codec=codec,
        # azure-conv's limits, with a 512-token budget so long prompts are chunked.
        scheduler=SchedulerConfig(max_num_seqs=256, max_num_batched_tokens=512,
                                  max_model_len=16384, num_blocks=131072),
        model=MODEL,
        make_workload=lambda: TraceWorkload(trace, name="conv:40", seed=0,
                                            vocab_size=MODEL.vocab_size, logical_step_s=0.02),
        warmup_steps=10, max_steps=None, count="all", peer_timeout_s=20.0)


def run_four(make) -> tuple[dict, Spy]:
    with pytest.MonkeyPatch.context() as mp:
        spy = Spy(mp)
        results = {}
        for policy, codec in CASES:
            result = run_case(make(policy, codec))
            attach_token_bytes(result)
            results[policy, codec] = (result, summarize_case(result))
    return results, spy


@pytest.fixture(scope="module")
def steady():
    return run_four(steady_spec)


@pytest.fixture(scope="module")
def trace():
    if not TRACE.is_file():
        pytest.skip(f"Azure trace not found at {TRACE} (expected in shared/traces next to "
                    "the checkout)")
    return run_four(trace_spec)


@pytest.fixture(params=["steady", "trace"])
def run(request):
    return request.getfixturevalue(request.param)


def test_equal_digests(run):
    results, _ = run
    digests = {k: r.token_digest for k, (r, _) in results.items()}
    assert len(set(digests.values())) == 1, digests
    assert all(len(d) == 64 for d in digests.values())
    outs = {k: s["output_tokens"] for k, (_, s) in results.items()}
    assert len(set(outs.values())) == 1 and next(iter(outs.values())) > 0


def test_same_schedule_in_every_case(run):
    results, _ = run
    cols = [SCHED_COLUMNS.index(c) for c in ("step", "counted", "num_reqs", "num_new_reqs",
                                             "num_scheduled_tokens", "num_output_tokens",
                                             "num_finished")]
    shapes = {k: [tuple(row[i] for i in cols) for row in r.sched_rows]
              for k, (r, _) in results.items()}
    first = shapes[CASES[0]]
    assert all(s == first for s in shapes.values())
    reqs = {k: r.requests for k, (r, _) in results.items()}
    assert all(rq == reqs[CASES[0]] for rq in reqs.values())
    # ... and the schedule digest says so (harness.oracle.ScheduleDigest)
    schedules = {s["schedule_digest"] for _, s in results.values()}
    assert len(schedules) == 1 and len(schedules.pop()) == 64


def test_cached_sends_fewer_bytes(run):
    results, _ = run
    for codec in ("msgpack", "pickle"):
        send = results["send", codec][1]
        cached = results["cached", codec][1]
        assert (cached["sched_to_runner_payload_bytes_per_step"]
                < send["sched_to_runner_payload_bytes_per_step"])
        # The reply carries the same sampled ids under both policies.
        assert (cached["runner_to_sched_payload_bytes_per_step"]
                == send["runner_to_sched_payload_bytes_per_step"])
        assert send["decode_token_bytes_per_step"] > 0
        assert cached["decode_token_bytes_per_step"] == 0
        assert cached["prompt_chunk_bytes_per_step"] == 0
        _assert_token_bytes_are_what_send_adds(send, cached)


def _assert_token_bytes_are_what_send_adds(send: dict, cached: dict) -> None:
    """With one schedule, send's decode-token and prompt-chunk bytes are exactly what
    send adds to each SchedulerOutput over cached."""
    assert send["schedule_digest"] == cached["schedule_digest"]
    added = (send["sched_to_runner_payload_bytes_per_step"]
             - cached["sched_to_runner_payload_bytes_per_step"])
    assert send["decode_token_bytes_per_step"] + send["prompt_chunk_bytes_per_step"] == (
        pytest.approx(added, rel=1e-12))


def test_trace_send_resends_prompt_chunks(trace):
    results, _ = trace
    for codec in ("msgpack", "pickle"):
        assert results["send", codec][1]["prompt_chunk_bytes_per_step"] > 0
        _assert_token_bytes_are_what_send_adds(results["send", codec][1],
                                               results["cached", codec][1])


def test_steady_counts_only_decode_steps(steady):
    results, _ = steady
    for result, summary in results.values():
        rows = result.sched_rows
        counted = [r for r in rows if r[SCHED_COLUMNS.index("counted")]]
        assert len(rows) == 60 and summary["num_warmup_steps"] == 5
        assert summary["num_steps"] == len(counted) > 0
        i_new, i_reqs, i_tok = (SCHED_COLUMNS.index(c) for c in
                                ("num_new_reqs", "num_reqs", "num_scheduled_tokens"))
        assert all(r[i_new] == 0 and r[i_reqs] == r[i_tok] == 4 for r in counted)
        assert summary["num_finished"] > 0  # requests were replaced during the run


def test_floor_present(run):
    results, _ = run
    for result, summary in results.values():
        assert len(result.floor_step_ns) == summary["num_steps"] > 0
        assert all(ns > 0 for ns in result.floor_step_ns)
        assert summary["floor_output_tokens_per_s"] > 0
        assert summary["step_to_floor_ratio"] > 0


def test_runner_report_complete(run):
    results, _ = run
    for result, summary in results.values():
        assert set(result.runner_columns) == set(RUNNER_COLUMNS)
        assert all(len(v) == len(result.sched_rows) for v in result.runner_columns.values())
        assert result.runner_device == "cpu"
        for key in ("build_ns_per_step", "encode_ns_per_step", "decode_ns_per_step"):
            assert summary[key] > 0


def test_no_process_or_directory_left(run):
    _, spy = run
    assert len(spy.procs) == len(spy.dirs) == 4
    for proc in spy.procs:
        assert proc.returncode == 0
    assert_clean(spy)


def test_tcp_transport_same_digest(steady, monkeypatch):
    results, _ = steady
    spy = Spy(monkeypatch)
    result = run_case(steady_spec("send", "msgpack", transport="tcp"))
    assert result.token_digest == results["send", "msgpack"][0].token_digest
    assert spy.procs[0].returncode == 0
    assert_clean(spy)


@pytest.mark.parametrize("policy", ["send", "cached"])
def test_single_process_baseline_same_digest(steady, policy):
    """The in-process baseline (no runner process, no serialization) samples alike."""
    results, _ = steady
    result = run_case(steady_spec(policy, "none", transport="inproc"))
    assert result.token_digest == results["send", "msgpack"][0].token_digest
    assert [row[:9] for row in result.sched_rows] == [
        row[:9] for row in results["send", "msgpack"][0].sched_rows]


# --- failed runs clean up too ----------------------------------------------------------


def test_scheduler_failure_reaps_runner(monkeypatch):
    spy = Spy(monkeypatch)
    # 10 blocks of 4 tokens: the first request (a 38-token prompt) grows past 40 tokens
    # at step 11, more than the whole cache holds, however many others are preempted.
    spec = steady_spec("send", "msgpack", scheduler=SchedulerConfig(
        max_num_seqs=4, max_num_batched_tokens=512, max_model_len=512, block_size=4,
        num_blocks=10))
    with pytest.raises(SchedulerError) as info:
        run_case(spec)
    assert str(info.value) == (
        "request cmpl-0335886941cc99793c5d68a67ef66417-0 needs 11 KV blocks for 41 tokens "
        "at step 11 and the cache has only 10 (block_size 4); raise num_blocks")
    assert_clean(spy)


def test_killed_runner_is_reported_and_cleaned_up(monkeypatch):
    spy = Spy(monkeypatch)

    def kill_at_step(seq, num_output_tokens, num_finished):
        if seq == 10:
            os.kill(spy.procs[0].pid, signal.SIGKILL)

    with pytest.raises(CaseError) as info:
        run_case(steady_spec("cached", "pickle"), on_step=kill_at_step)
    # noticed on the next send if ZeroMQ saw the disconnection first, else on the wait
    assert str(info.value) in (
        f"runner process {spy.procs[0].pid} was killed by SIGKILL, noticed while {what} for "
        "step 10"
        for what in ("sending SchedulerOutput", "waiting for ModelRunnerOutput"))
    assert spy.procs[0].returncode == -signal.SIGKILL
    assert_clean(spy)


INJECT = '''
import os
if os.environ.get("IPC_BENCH_TEST_FAIL_AT"):
    from ipc_bench.engine import model_runner as _mr
    _fail_at = int(os.environ["IPC_BENCH_TEST_FAIL_AT"])
    _real = _mr.ModelRunner.write_back
    _calls = [0]

    def write_back(self, inputs, sampled):
        _calls[0] += 1
        if _calls[0] > _fail_at:
            raise _mr.RunnerError("injected failure")
        return _real(self, inputs, sampled)

    _mr.ModelRunner.write_back = write_back
'''


@pytest.mark.parametrize("fail_at", [0, 10])
def test_runner_failure_is_reported_and_cleaned_up(monkeypatch, tmp_path, fail_at):
    """The runner raises inside its step (injected through sitecustomize): the scheduler
    gets the runner's one-line ErrorReport, the runner exits with code 4."""
    (tmp_path / "sitecustomize.py").write_text(INJECT)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("IPC_BENCH_TEST_FAIL_AT", str(fail_at))
    spy = Spy(monkeypatch)
    with pytest.raises(CaseError) as info:
        run_case(steady_spec("send", "msgpack"))
    assert str(info.value) == (f"runner failed at step {fail_at} (steps.csv seq: warm-up and "
                                "uncounted steps included): RunnerError: injected failure")
    assert spy.procs[0].returncode == 4
    assert_clean(spy)


BIG_REPORT = '''
import os
if os.environ.get("IPC_BENCH_TEST_BIG_REPORT"):
    from ipc_bench.harness import runner_loop as _p
    _n = int(os.environ["IPC_BENCH_TEST_BIG_REPORT"])
    _real_run = _p.RunnerLoop.run

    def run(self):
        for col in self.columns.values():  # as after a very long run
            col.extend([2**31] * _n)
        return _real_run(self)

    _p.RunnerLoop.run = run
'''


def test_large_runner_report_is_not_lost(monkeypatch, tmp_path):
    """The runner's last control message (a RunnerReport of ~10 MB here, what a run of
    ~200,000 steps sends) must reach the scheduler before the runner's sockets close."""
    (tmp_path / "sitecustomize.py").write_text(BIG_REPORT)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    n = 200_000
    monkeypatch.setenv("IPC_BENCH_TEST_BIG_REPORT", str(n))
    spy = Spy(monkeypatch)
    for _ in range(2):  # before the fix, each try lost the report 1 time in 2 or more
        result = run_case(steady_spec("cached", "msgpack", floor=False))
        assert {len(v) for v in result.runner_columns.values()} == {n + 60}
    assert all(p.returncode == 0 for p in spy.procs)
    assert_clean(spy)


def test_single_process_case_releases_its_model(monkeypatch):
    """The in-process runner's model is released when its case ends (on CUDA its
    memory goes back to the device before the next case's runner starts)."""
    released = []
    real = supervisor.release_model

    def spy(runner):
        released.append(runner)
        real(runner)

    monkeypatch.setattr(supervisor, "release_model", spy)
    result = run_case(steady_spec("cached", "none", transport="inproc"))
    assert result.runner_device == "cpu (in-process)"
    assert len(released) == 1 and released[0].model is None
