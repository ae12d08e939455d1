"""``--pp N``: pipeline stages over torch.distributed (``harness.pp_case``).

- N = 1 and 4 stages under send and direct produce the single runner's token stream on
  a workload where every request finishes (the null model's tokens do not depend on the
  schedule), with prompts chunked over steps that are in flight together; send and
  direct schedule the same batches at each N. (N = 4 has a first, middle and last stage:
  every branch of N = 2's, which the torch model's and the fault tests run.)
- The hidden-state hop carries exactly 4,096 bytes per scheduled token per step (as
  received by the next stage), the direct path 4 bytes per scheduled request; the
  summary's per-hop figures follow.
- The torch model split by layers (tiny preset, CPU): send and direct agree, one stage
  gives the single runner's tokens, the hidden states are float32 [tokens, 64].
- A stage that loses a token fails the case naming the step: under send through the
  input oracle (stage 0 skips writing one request's new_token_ids, vLLM #41133's kind;
  through bench.py: exit 1), under direct because the token never comes.
- A SIGKILLed stage is named and every stage reaped; Ctrl-C of bench.py reaps every
  stage and leaves no socket folder; a stopped stage is named after the timeout.
- The pp scenario: the hop table, send and direct with one token stream.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from dataclasses import replace

import numpy as np
import pytest

from analysis_run import bench_in_process
from fault_helpers import (bench, ctrl_c_reaps_every_child, one_runner_mark,
                           processes_matching, steady_case, without_load_note)
from harness.test_e2e import assert_clean
from harness.test_tp import spy_on
from ipc_bench import cli
from ipc_bench.analysis.summary import summarize_case
from ipc_bench.errors import STEP_NUMBERING
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.engine.pipeline import HIDDEN_BYTES_PER_TOKEN
from ipc_bench.engine.workloads import Workload
from ipc_bench.harness.spec import SCHED_COLUMNS, CaseError, CaseSpec
from ipc_bench.harness.supervisor import run_case
from ipc_bench.wire.control import ErrorReport
from ipc_bench.wire.transport import PeerTimeout

pytestmark = pytest.mark.timeout(240)

_COL = {name: i for i, name in enumerate(SCHED_COLUMNS)}

#: Stage 0 only, under send: at its step IPC_BENCH_TEST_LOSE_AT the first cached
#: request's new_token_ids never reach its token buffer (a lost token, vLLM #41133).
LOSE_ON_STAGE_0 = '''
import os, sys
if os.environ.get("IPC_BENCH_TEST_LOSE_AT") and sys.argv[-1].endswith("/ctl0"):
    from ipc_bench.engine import pipeline as _pl
    _at = int(os.environ["IPC_BENCH_TEST_LOSE_AT"])
    _real = _pl.PipelineStage.update

    def update(self, so):
        cached = so.scheduled_cached_reqs
        if self.seq == _at and cached.new_token_ids:
            with open(os.environ["IPC_BENCH_TEST_LOSE_LOG"], "a") as f:
                f.write(f"{self.seq} {cached.req_ids[0]} {cached.num_computed_tokens[0]}\\n")
            cached.new_token_ids[0] = []
        return _real(self, so)

    _pl.PipelineStage.update = update
'''

#: The last stage of 2, under direct: at its step IPC_BENCH_TEST_LOSE_AT the first
#: request's sampled id is left out of what it sends the first stage.
LOSE_ON_LAST_STAGE = '''
import os, sys
if os.environ.get("IPC_BENCH_TEST_LOSE_AT") and sys.argv[-1].endswith("/ctl1"):
    from ipc_bench.engine import pipeline as _pl
    _at = int(os.environ["IPC_BENCH_TEST_LOSE_AT"])
    _real = _pl.PipelineStage.ids_in_schedule_order

    def ids_in_schedule_order(self, so, valid):
        ids = _real(self, so, valid)
        if self.seq - 1 == _at:
            with open(os.environ["IPC_BENCH_TEST_LOSE_LOG"], "a") as f:
                f.write(f"{self.seq - 1} {list(so.num_scheduled_tokens)[0]}\\n")
            ids[0] = -1
        return ids

    _pl.PipelineStage.ids_in_schedule_order = ids_in_schedule_order
'''


#: Stage 0 only: its share of step 0 takes IPC_BENCH_TEST_SLOW_FIRST_S seconds longer
#: (a first forward that compiles), the later steps none.
SLOW_FIRST_ON_STAGE_0 = '''
import os
if os.environ.get("IPC_BENCH_TEST_SLOW_FIRST_S"):
    import time
    from ipc_bench.engine import pipeline as _pl
    _delay_s = float(os.environ["IPC_BENCH_TEST_SLOW_FIRST_S"])
    _real = _pl.PipelineStage.forward

    def forward(self, hidden, inputs):
        if self.rank == 0 and self.seq == 1:  # update() has counted step 0
            time.sleep(_delay_s)
        return _real(self, hidden, inputs)

    _pl.PipelineStage.forward = forward
'''


class BatchWorkload(Workload):
    """``n`` requests at step 0, each finishing (prompts of 8..40, 10..40 outputs)."""

    def __init__(self, n: int, vocab_size: int = 128_256):
        super().__init__(f"batch-{n}", seed=5, vocab_size=vocab_size)
        self._pending = [self.make_request(i, 8 + 3 * i % 33, 10 + 7 * i % 31, 0, 0.0)
                         for i in range(n)]

    def arrivals(self, step):
        out, self._pending = self._pending, []
        return out

    def next_arrival_step(self):
        return 0 if self._pending else None


def batch_case(pp=None, direct=False, model: ModelConfig = ModelConfig()) -> CaseSpec:
    return CaseSpec(
        scenario="t", labels={"n": 12}, policy="cached" if direct else "send",
        codec="msgpack", scheduler=SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=64,
                                                   max_model_len=256, num_blocks=512),
        model=model, make_workload=lambda: BatchWorkload(12, model.vocab_size), warmup_steps=2,
        floor=False, pp=pp, pp_direct=direct, peer_timeout_s=30, input_oracle_interval=4)


def _with_site(monkeypatch, tmp_path, code: str) -> None:
    (tmp_path / "sitecustomize.py").write_text(code)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("IPC_BENCH_TEST_LOSE_LOG", str(tmp_path / "lost.txt"))


def test_stages_compute_the_single_runners_tokens(monkeypatch):
    single = run_case(batch_case())
    assert sum(r[_COL["num_finished"]] for r in single.sched_rows) == 12  # all finished
    spy = spy_on(monkeypatch)
    for n in (1, 4):
        send = run_case(batch_case(n))
        direct = run_case(batch_case(n, direct=True))
        assert send.token_digest == single.token_digest, n
        assert direct.token_digest == single.token_digest, n
        assert send.schedule_digest == direct.schedule_digest, n
        if n > 1:  # micro-batches of max_num_seqs / N requests
            assert max(r[_COL["num_reqs"]] for r in send.sched_rows) == 8 // n
        assert len(send.tp_rank_columns) == n
        # the direct ids as the last stage handed them to isend: 4 B per scheduled
        # request to each of the N - 1 other stages, every step; each received its share
        reqs = [r[_COL["num_reqs"]] for r in direct.sched_rows]
        assert direct.tp_rank_columns[-1]["pp_direct_out_bytes"] == [
            4 * q * (n - 1) for q in reqs], n
        for stage in direct.tp_rank_columns[:-1]:
            assert stage["pp_direct_in_bytes"] == [4 * q for q in reqs], n
        assert send.tp_rank_columns[-1]["pp_direct_out_bytes"] == []  # send: no ids
    assert all(p.returncode == 0 for p in spy.procs) and len(spy.procs) == 2 * (1 + 4)
    assert_clean(spy)


TINY = ModelConfig(name="torch", preset="tiny", vocab_size=5000, seed=3, device="cpu",
                  attention="gather", roofline="off")


def test_the_torch_model_split_over_two_stages(monkeypatch):
    """Two stages of one layer each: send and direct give the same tokens, every stage's
    fed ids pass the input oracle, and the hidden states are float32 [tokens, 64]; one
    stage gives the single runner's tokens (same schedule)."""
    spy = spy_on(monkeypatch)
    single = run_case(batch_case(model=TINY))
    one = run_case(batch_case(1, model=TINY))
    assert one.token_digest == single.token_digest
    send = run_case(batch_case(2, model=TINY))
    direct = run_case(batch_case(2, direct=True, model=TINY))
    assert send.token_digest == direct.token_digest
    assert send.schedule_digest == direct.schedule_digest
    tokens = [r[_COL["num_scheduled_tokens"]] for r in send.sched_rows]
    assert send.tp_rank_columns[1]["pp_in_bytes"] == [t * 64 * 4 for t in tokens]
    counted = [r[_COL["num_scheduled_tokens"]] * 256 for r in send.sched_rows
               if r[_COL["counted"]]]
    assert summarize_case(send)["pp_hidden_bytes_per_step"] == pytest.approx(np.mean(counted))
    assert all(p.returncode == 0 for p in spy.procs)
    assert_clean(spy)


def test_each_hop_carries_exact_bytes(monkeypatch):
    spy = spy_on(monkeypatch)
    spec = replace(steady_case(8, policy="cached", max_steps=80, pp=2, pp_direct=True),
                   count="decode_only")
    result = run_case(spec)
    stage1 = result.tp_rank_columns[1]
    tokens = [r[_COL["num_scheduled_tokens"]] for r in result.sched_rows]
    assert stage1["pp_in_bytes"] == [t * HIDDEN_BYTES_PER_TOKEN for t in tokens]
    reqs = [r[_COL["num_reqs"]] for r in result.sched_rows]
    assert result.tp_rank_columns[0]["pp_direct_in_bytes"] == [4 * r for r in reqs]
    decode = [r for r in result.sched_rows if r[_COL["counted"]]]
    assert decode and all(r[_COL["num_scheduled_tokens"]] == r[_COL["num_reqs"]] == 4
                          for r in decode)  # 8 running, two micro-batches of 4
    assert stage1["pp_direct_out_bytes"] == [4 * r for r in reqs]  # sent = received
    assert result.tp_rank_columns[0]["pp_out_bytes"] == [t * HIDDEN_BYTES_PER_TOKEN
                                                         for t in tokens]
    s = summarize_case(result)
    assert (s["pp"], s["pp_direct"]) == (2, True)
    assert s["pp_hidden_bytes_per_step"] == 4 * 4_096 == 16_384
    assert s["pp_direct_bytes_per_step"] == 16
    # one base: payload bytes, the encoded messages as the sched records count them
    s2r = [r[_COL["s2r_payload_bytes"]] for r in decode]
    r2s = [r[_COL["r2s_payload_bytes"]] for r in decode]
    assert s["pp_s2r_bytes_per_step"] == np.mean(s2r)
    assert s["pp_r2s_bytes_per_step"] == np.mean(r2s)
    assert s["pp_s2r_bytes_per_step"] == s["sched_to_runner_payload_bytes_per_step"]
    # the frame heads apart: every frame here is over 255 B, so 9 B each, two stages
    assert min(s2r + r2s) > 255
    assert s["pp_zmq_frame_head_bytes_per_step"] == 2 * 9 + 9 == 27
    assert s["pp_s2r_wire_bytes_all_stages_per_step"] == pytest.approx(2 * (np.mean(s2r) + 9),
                                                                      abs=1e-9)
    assert len(s["pp_hidden_ns_median"]) == 1 and len(s["pp_direct_ns_median"]) == 1
    assert 0 < s["pp_hidden_ns_median"][0] < 1e9
    assert_clean(spy)


def test_a_lost_direct_token_fails_naming_the_step(monkeypatch, tmp_path):
    _with_site(monkeypatch, tmp_path, LOSE_ON_LAST_STAGE)
    monkeypatch.setenv("IPC_BENCH_TEST_LOSE_AT", "20")
    spy = spy_on(monkeypatch)
    with pytest.raises(CaseError) as err:
        run_case(steady_case(8, policy="cached", max_steps=200, pp=2, pp_direct=True))
    seq, req_id = (tmp_path / "lost.txt").read_text().split()
    message = str(err.value)
    # the request is next scheduled two steps later (two micro-batches in flight)
    assert message.startswith(f"runner failed at step 22 ({STEP_NUMBERING}): stage 0: "
                              "RunnerError: step 22: "
                              f"request {req_id} needs token "), message
    assert message.endswith("which no earlier step's direct ids carried (a lost token)")
    assert_clean(spy)


def _one_core() -> None:
    """``preexec_fn``: run the child (and its stages) on one core of this process's."""
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def test_an_oversubscribed_pp_run_refused_prints_its_error_alone():
    """--pp 2 on one core (3 processes) with an option --pp refuses: exit 2 and the
    error line alone (the oversubscription warning goes with the cases that run)."""
    proc = bench(["--scenario", "pp", "--pp", "2", "--codecs", "slots"], preexec_fn=_one_core)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err) == (
        2, "", "bench.py: error: --codecs slots does not run with --pp stages: use --codecs "
               "msgpack,pickle,packed\n")


def test_an_oversubscribed_pp_case_carries_the_warning():
    from ipc_bench.analysis.summary import noise_warnings

    base = dict(num_steps=300, pp=2, pp_cores=2)
    assert noise_warnings(dict(base, pp_oversubscribed=True)) == [
        "--pp 2 on 2 core(s): 3 processes share them; those timings are not comparable"]
    assert noise_warnings(dict(base, pp_cores=3, pp_oversubscribed=False)) == []


def test_the_oversubscription_warning_is_logged_once_a_run(tmp_path):
    """--pp 1 on one core (the scheduler and one stage: each stage process imports
    torch), two cases: the warning under the first case's line only; both cases'
    summaries keep it."""
    warning = "--pp 1 on 1 core(s): 2 processes share them; those timings are not comparable"
    saved = os.sched_getaffinity(0)
    _one_core()  # this thread (bench.py in this process) and the stages it starts
    try:
        proc = bench_in_process(["--scenario", "pp", "--pp", "1", "--num-running", "4",
                                 "--steps", "20", "--warmup-steps", "5", "--codecs", "msgpack",
                                 "--output", tmp_path / "run"])
    finally:
        os.sched_setaffinity(0, saved)
    err = proc.stderr
    assert proc.returncode == 0, err
    lines = without_load_note(err.splitlines())
    # (a loaded machine may add a case's own warnings: steal time)
    assert lines[1].startswith("[1/2] num_running=4,pp=1/send/msgpack#0: 20 steps, - tok/s ")
    assert lines[2] == f"  warning: {warning}"
    assert err.count(warning) == 1, err
    assert sum(ln.startswith("[2/2] num_running=4,pp=1/direct/msgpack#0: 20 steps, - tok/s ")
               for ln in lines) == 1, err
    assert err.count("  warning: only 20 counted steps (< 100): step-time noise not "
                     "measured (under 150: 3 blocks of 50) and figures are rough") == 2, err
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [c["warnings"][0] for c in summary["cases"]] == [warning, warning]


def test_bench_exits_1_naming_the_step_of_a_lost_token(tmp_path, bench_tmpdir):
    """Stage 0 loses a token under send at step 20: the input oracle fails the case
    naming the stage, the step, the request and the position (the harness's
    ``CaseError``, through ``bench.py``: exit 1, one line, the step recorded as the
    case's ``failed_step``, no stage left)."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(LOSE_ON_STAGE_0)
    env = dict(os.environ, TMPDIR=str(bench_tmpdir), IPC_BENCH_TEST_LOSE_AT="20",
               IPC_BENCH_TEST_LOSE_LOG=str(tmp_path / "lost.txt"),
               PYTHONPATH=f"{tmp_path / 'site'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    # on one core, so the case is oversubscribed (3 processes) on any machine
    proc = bench(["--scenario", "pp", "--pp", "2", "--num-running", "8", "--steps", "60",
                  "--warmup-steps", "5", "--policies", "send", "--codecs", "msgpack",
                  "--input-oracle-interval", "1", "--output", str(tmp_path / "run")], env=env,
                 preexec_fn=_one_core)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 1, err
    assert "input oracle: step 20: request " in err + out, err
    assert "stage 0: " in err + out
    assert "Traceback" not in err
    # the failure is one line, no oversubscription warning before it; no case finished
    # before it, so it points at no results
    lines = [ln for ln in err.splitlines() if ln.startswith("bench.py:")]
    seq, req_id, pos = (tmp_path / "lost.txt").read_text().split()
    assert seq == "20"
    assert lines[0].startswith("bench.py: error: num_running=8,pp=2/send/msgpack#0: stage 0: "
                               f"input oracle: step 20: request {req_id}: the runner fed "
                               "token id "), err
    assert f"at position {pos}, the scheduler's all_token_ids hold " in lines[0]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [c.get("failed_step") for c in summary["cases"]] == [20]
    assert processes_matching("ipc_bench.harness.pp_stage", str(bench_tmpdir)) == []
    # the steps it measured are kept: the line names the folder
    assert len(lines) == 1 and lines[0].endswith(f"; partial results: {tmp_path / 'run'}"), err
    assert "processes share them" not in err


def test_a_killed_stage_is_named_and_every_stage_reaped(monkeypatch):
    spy = spy_on(monkeypatch)

    def kill_stage_1(seq, num_output_tokens, num_finished):
        if seq == 10:
            os.kill(spy.procs[1].pid, signal.SIGKILL)

    with pytest.raises(CaseError) as err:
        run_case(steady_case(8, policy="send", pp=2), on_step=kill_stage_1)
    message = str(err.value)
    assert message.startswith(f"stage 1: runner process {spy.procs[1].pid} was killed by "
                              "SIGKILL"), message
    assert spy.procs[1].returncode == -signal.SIGKILL
    assert spy.procs[0].returncode is not None
    assert_clean(spy)


#: A stage's step-0 wait a tenth of the start-up allowance its config carries
#: (``handshake.first_step_wait_s`` wrapped in the stage processes, before ``pp_stage``
#: imports it): the stages' start-up and handshakes keep the whole allowance, step 0's
#: receive runs out on the tenth, still computed from the config the scheduler sent.
TENTH_FIRST_WAIT_IN_STAGES = SLOW_FIRST_ON_STAGE_0 + '''
if os.environ.get("IPC_BENCH_TEST_TENTH_FIRST_WAIT"):
    from ipc_bench.wire import handshake as _hs
    _first = _hs.first_step_wait_s
    _hs.first_step_wait_s = lambda config: _first(config) / 10
'''


def test_a_first_forward_past_the_startup_timeout_names_the_option_to_raise(
        monkeypatch, tmp_path):
    """Stage 0's step 0 takes 6 s longer under a 30 s start-up allowance (which the
    stages' start-up and handshakes need: each stage imports torch, 16 s alone on a
    slow 2-core machine, the two stages at once), of which the stages' step-0 wait is
    made a tenth, 3 s (``TENTH_FIRST_WAIT_IN_STAGES``: the wait is still the one
    ``first_step_wait_s`` computes from the config, where the test waited out the whole
    30 s): stage 1 gives up on step 0's hidden states naming --startup-timeout and stage
    0's state (busy, not stopped), and exits 4. The peer timeout is 0.5 s: the stages'
    rendezvous has the start-up allowance (the config's, whole: the hook divides only
    the step-0 wait), where the peer timeout, then the gloo group's, failed it ("Wait
    timeout") on a 2-core machine at a load of 16 (``test_pp_startup_timeout``)."""
    _with_site(monkeypatch, tmp_path, TENTH_FIRST_WAIT_IN_STAGES)
    monkeypatch.setenv("IPC_BENCH_TEST_TENTH_FIRST_WAIT", "1")
    monkeypatch.setenv("IPC_BENCH_TEST_SLOW_FIRST_S", "6")
    spy = spy_on(monkeypatch)
    with pytest.raises(CaseError) as err:
        run_case(steady_case(8, policy="send", max_steps=12, pp=2, peer_timeout_s=0.5,
                             startup_timeout_s=30.0))
    assert re.fullmatch(re.escape(f"runner failed at step 0 ({STEP_NUMBERING}): stage 1: no "
                                  "hidden states of step 0 from stage 0 within 3 s (raise "
                                  f"--startup-timeout); stage 0 (runner process "
                                  f"{spy.procs[0].pid}): state ")
                        + r"[RS] \((running|sleeping)\)", str(err.value)), str(err.value)
    assert err.value.step == 0
    # 4, its own exit; or -9 where the harness reaped it first: the stage exits after
    # its report, and its teardown (torch's) can outlast the reaping's grace on a
    # loaded machine. The report above is the stage's own either way.
    assert spy.procs[1].returncode in (4, -signal.SIGKILL)
    assert_clean(spy)


class _GlooRecv:
    """``torch.distributed`` as ``StageLink._recv`` uses it: every ``irecv``'s
    ``wait(timeout=...)`` is recorded (seconds) and then fails with ``error`` (gloo's
    words for a timeout by default) or returns ``done``."""

    def __init__(self, error: str = "timeout", done: bool = True):
        self.error, self.done, self.waits_s = error, done, []

    def irecv(self, tensor, src):
        return self

    def wait(self, timeout):
        self.waits_s.append(timeout.total_seconds())
        if self.error == "timeout":
            raise RuntimeError("[/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer"
                               f".cc:78] Timed out waiting {timeout.total_seconds() * 1000:.0f}"
                               "ms for recv operation to complete")
        if self.error:
            raise RuntimeError(self.error)
        return self.done


def test_a_receive_between_stages_waits_the_startup_allowance_at_step_0_only():
    """Step 0's hidden states and ids wait ``first_timeout_s`` (the start-up allowance)
    and name --startup-timeout when it runs out; the later steps' wait the peer timeout
    and name --peer-timeout; gloo's other errors keep their words."""
    from ipc_bench.wire.pp import StageLink, StageLinkError

    link = StageLink("unused", 0, 1, 0.5, first_timeout_s=60.0)  # one stage: no group
    link.prev = 0
    link.dist = gloo = _GlooRecv()
    import torch

    link.torch = torch  # a one-stage link imports none
    lines = []
    for seq in (0, 7):
        for recv in (lambda: link.recv_hidden((3, 2048), np.int16, seq),
                     lambda: link.recv_ids(3, seq)):
            with pytest.raises(StageLinkError) as err:
                recv()
            lines.append(str(err.value))
    assert lines == [
        "no hidden states of step 0 from stage 0 within 60 s (raise --startup-timeout)",
        "no sampled ids of step 0 from stage 0 within 60 s (raise --startup-timeout)",
        "no hidden states of step 7 from stage 0 within 0.5 s (raise --peer-timeout)",
        "no sampled ids of step 7 from stage 0 within 0.5 s (raise --peer-timeout)"]
    assert gloo.waits_s == [60.0, 60.0, 0.5, 0.5]
    link.dist = _GlooRecv(done=False)  # a wait that ends without the tensor
    with pytest.raises(StageLinkError, match=r"^no hidden states of step 2 from stage 0 "
                                             r"within 0\.5 s \(raise --peer-timeout\)$"):
        link.recv_hidden((3, 2048), np.int16, 2)
    link.dist = _GlooRecv("[/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
                          "[127.0.0.1]:1411. This is typically caused by a remote worker "
                          "crashing. Check the logs of the remote worker before reporting "
                          "an error. GLHF!")
    with pytest.raises(StageLinkError) as err:
        link.recv_hidden((3, 2048), np.int16, 0)
    assert str(err.value) == ("hidden states of step 0 from stage 0: Connection closed by "
                              "peer [127.0.0.1]:1411")
    assert link.dist.waits_s == [60.0]
    link.dist = _GlooRecv(error="")
    assert link.recv_hidden((3, 2048), np.int16, 1).shape == (3, 2048)
    assert link.columns["pp_in_bytes"] == [3 * 2048 * 2]


def test_a_killed_first_stage_is_named_before_the_stage_that_lost_its_link(monkeypatch):
    """Stage 0 SIGKILLed: stage 1's hidden-states receive breaks and it reports so;
    the line names the killed stage first (was stage 1's report alone: "runner failed
    at step N (...): stage 1: hidden states of step N from stage 0: Connection
    reset by peer")."""
    spy = spy_on(monkeypatch)

    def kill_stage_0(seq, num_output_tokens, num_finished):
        if seq == 10:
            os.kill(spy.procs[0].pid, signal.SIGKILL)

    with pytest.raises(CaseError) as err:
        run_case(steady_case(8, policy="send", pp=2), on_step=kill_stage_0)
    message = str(err.value)
    pid = spy.procs[0].pid
    step = err.value.step
    assert re.fullmatch(
        rf"stage 0: runner process {pid} was killed by SIGKILL; stage 1 then lost its link: "
        rf"runner failed at step {step} \(steps.csv seq: warm-up and uncounted steps "
        rf"included\): stage 1: hidden states of step {step} from stage 0: "
        r"(Read error|Connection closed by peer) .*", message), message
    assert spy.procs[0].returncode == -signal.SIGKILL
    assert_clean(spy)


def test_a_stage_killed_at_the_handshake_is_named_in_stages(monkeypatch):
    """Killed before it replies: the wait is for the stages' handshake replies (was
    "... while waiting for handshake reply from every rank")."""
    from ipc_bench.harness import pp_stage

    spy = spy_on(monkeypatch)
    monkeypatch.setattr(pp_stage, "STAGE_COMMAND", (sys.executable, "-c", (
        "import os, signal, sys, zmq\n"
        "sock = zmq.Context().socket(zmq.PAIR); sock.connect(sys.argv[1]); sock.recv()\n"
        "os.kill(os.getpid(), signal.SIGKILL)")))
    with pytest.raises(CaseError) as err:
        run_case(steady_case(8, policy="send", pp=2))
    message = str(err.value)
    stage = int(message.split(":")[0].split()[1])
    # killed once it has its handshake: the scheduler may still be sending the other
    # stage's, or be waiting for the replies
    head = f"stage {stage}: runner process {spy.procs[stage].pid} was killed by SIGKILL, "
    assert message in (head + "noticed while waiting for handshake replies",
                       head + f"noticed while sending handshake to stage {1 - stage}"), message
    assert_clean(spy)


def test_a_stopped_stage_is_named_within_the_timeout(monkeypatch):
    spy = spy_on(monkeypatch)

    def stop_stage_1(seq, num_output_tokens, num_finished):
        if seq == 10:
            os.kill(spy.procs[1].pid, signal.SIGSTOP)

    with pytest.raises(CaseError) as err:
        run_case(steady_case(8, policy="send", pp=2, peer_timeout_s=2.0),
                 on_step=stop_stage_1)
    message = str(err.value)
    assert re.fullmatch(r"a stage stopped answering: no ModelRunnerOutput for step \d+ from "
                        r"stage 1 within 2 s \(stage 0 [RS] \((running|sleeping)\), stage 1 T "
                        r"\(stopped\); killed\)", message), message
    assert spy.procs[1].returncode == -signal.SIGKILL
    assert_clean(spy)


def test_a_stage_waiting_on_a_stopped_stage_names_its_state(monkeypatch):
    """Stage 0 SIGSTOPped: stage 1 gives up waiting for its hidden states and the line
    adds stage 0's state, the cause, without advice to raise the timeout (was "runner
    failed at step N (...): stage 1: no hidden states of step N from stage 0 within 2 s
    (raise --peer-timeout)" alone, then that line with the state appended)."""
    spy = spy_on(monkeypatch)

    def stop_stage_0(seq, num_output_tokens, num_finished):
        if seq == 10:
            os.kill(spy.procs[0].pid, signal.SIGSTOP)

    with pytest.raises(CaseError) as err:
        run_case(steady_case(8, policy="send", pp=2, peer_timeout_s=2.0),
                 on_step=stop_stage_0)
    step, pid = err.value.step, spy.procs[0].pid
    assert str(err.value) == (
        f"runner failed at step {step} (steps.csv seq: warm-up and uncounted steps "
        f"included): stage 1: no hidden states of step {step} from stage 0 within 2 s"
        f"; stage 0 (runner process {pid}): state T (stopped); it was stopped (SIGSTOP or "
        f"a debugger), not slow")
    assert spy.procs[0].returncode == -signal.SIGKILL
    assert_clean(spy)


def test_a_stage_waiting_on_a_slow_stage_keeps_the_advice():
    """The stage waited on was running (slow, not stopped): the report keeps its advice
    to raise the timeout, with that stage's state after it."""
    from ipc_bench.harness.pp_case import _PpCase

    class Running:
        name = "runner process 4242"

        def state(self):
            return "R (running)"

    case = _PpCase.__new__(_PpCase)
    case.procs, case.remote = [Running()], None
    report = CaseError("runner failed at step 7 (...): rank 1: no hidden states of step 7 "
                       "from stage 0 within 0.5 s (raise --peer-timeout)", 7)
    got = case._dead_first(report)
    assert (str(got), got.step) == (
        "runner failed at step 7 (...): rank 1: no hidden states of step 7 from stage 0 "
        "within 0.5 s (raise --peer-timeout); rank 0 (runner process 4242): state R "
        "(running)", 7)


class _TimedOutChannel:
    """A pp channel whose wait for a reply runs out, then gets ``late`` within the
    grace (``b""``: a stage's error report follows on the control sockets)."""

    def __init__(self, late):
        self.late, self.waits = late, []

    def recv(self, seq, timeout_s=None, label="reply"):
        self.waits.append(timeout_s)
        if len(self.waits) == 1:
            raise PeerTimeout(f"no ModelRunnerOutput for step {seq} from rank 1 within "
                              f"0.1 s")
        if isinstance(self.late, Exception):
            raise self.late
        return self.late

    def recv_control(self, what, timeout_s=None):
        return ErrorReport("rank 1: no hidden states of step 9 from stage 0 within 0.1 s "
                           "(raise --peer-timeout)", 9)


def _pp_exchange(channel, stopped=False):
    from ipc_bench.harness.pp_case import PpExchange

    exchange = PpExchange.__new__(PpExchange)
    exchange.channel, exchange.pp, exchange.peer_timeout_s = channel, 2, 0.1
    exchange.stage_stopped = lambda rank: stopped
    return exchange


def test_a_timed_out_pp_reply_waits_for_the_stages_own_report():
    """--peer-timeout 0.1: the scheduler's wait for step 9's reply and stage 1's wait
    for its hidden states run out together; the stage's report, which names the stage
    that held it up, is waited for (one peer timeout more, at least 1 s) and raised
    (was the scheduler's line, naming only the last stage, whenever its wait ran out
    first)."""
    from ipc_bench.harness.pp_case import report_grace_s

    channel = _TimedOutChannel(b"")
    with pytest.raises(CaseError) as err:
        _pp_exchange(channel).recv_step(9)
    assert str(err.value) == (
        "runner failed at step 9 (steps.csv seq: warm-up and uncounted steps included): "
        "rank 1: no hidden states of step 9 from stage 0 within 0.1 s (raise "
        "--peer-timeout)")
    assert channel.waits == [None, 1.0]
    assert (report_grace_s(0.1), report_grace_s(3.0)) == (1.0, 3.0)


@pytest.mark.parametrize("late,stopped", [(b"\x01late reply", False),
                                          (PeerTimeout("nothing"), False), (b"", True)])
def test_without_a_stage_report_the_schedulers_line_stands(late, stopped):
    """A late reply, nothing within the grace, or a stopped last stage (no grace: no
    stage waits on it for hidden states): the scheduler's own line."""
    channel = _TimedOutChannel(late)
    with pytest.raises(PeerTimeout) as err:
        _pp_exchange(channel, stopped).recv_step(9)
    assert str(err.value) == "no ModelRunnerOutput for step 9 from rank 1 within 0.1 s"
    assert channel.waits == ([None] if stopped else [None, 1.0])


def test_ctrl_c_reaps_every_stage(tmp_path, bench_tmpdir):
    ctrl_c_reaps_every_child(tmp_path, bench_tmpdir,
                             ["--scenario", "pp", "--pp", "2", "--num-running", "8",
                              "--steps", "300000", "--policies", "send",
                              "--codecs", "msgpack"], 2, "two stages")


def test_the_scenario_reports_every_hop(tmp_path, shared_pp_run, shared_pp_stdout):
    """The shared ``--pp 1,2`` run (conftest's ``shared_pp_run``: ``bench.py`` with
    ``analysis_run.PP_RUN_ARGS``, 4 running, 20 steps, msgpack; its stages import torch,
    so one run serves every test that reads one): its tables, summary and report."""
    run_dir, out = shared_pp_run, shared_pp_stdout
    assert "pipeline hops per counted step" in out
    assert "token streams of send and direct: B=4 N=1: one token stream; B=4 N=2: one " \
        "token stream" in out
    summary = json.loads((run_dir / "summary.json").read_text())
    # a stage case runs no floor (pp_case), and the run records none, though no
    # --no-floor was given: no case's recorded floor is true, none has floor figures
    assert summary["metadata"]["options"]["no_floor"] is False
    assert [c["floor"] for c in summary["metadata"]["cases"]] == [False] * 4
    assert [[k for k in c if "floor" in k] for c in summary["cases"]] == [["no_floor"]] * 4
    assert [c["no_floor"] for c in summary["cases"]] == [False] * 4
    cases = [c for c in summary["cases"] if c.get("pp") == 2]
    assert sorted(c["arm"] for c in cases) == ["direct", "send"]
    for c in cases:  # micro-batches of 2 requests (4 running over 2 stages)
        assert c["pp_hidden_bytes_per_step"] == 2 * HIDDEN_BYTES_PER_TOKEN
        assert c["output_tokens_per_s"] > 0
        # 2 x 2 + 2: every frame here is under 256 B, so 2 B heads (9 B over 255 B:
        # test_each_hop_carries_exact_bytes)
        assert max(c["sched_to_runner_payload_bytes_per_step"],
                   c["runner_to_sched_payload_bytes_per_step"]) < 256
        assert c["pp_zmq_frame_head_bytes_per_step"] == 6
        assert c["pp_s2r_bytes_per_step"] == c["sched_to_runner_payload_bytes_per_step"]
    assert [c for c in cases if c["arm"] == "direct"][0]["pp_direct_bytes_per_step"] == 8
    # in this process: bench.py report's own start is tested in tests/cli
    assert cli.main(["report", str(run_dir), "--output", str(tmp_path / "report")]) == 0
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## Pipeline hops" in md
    assert "| 2 | direct | msgpack | 0 |" in md.replace("2* |", "2 |")
    # the report says what the terminal said, with the same figures: the send/direct
    # lines and the token check as findings, the footnote where timings are withheld
    lines = out.splitlines()
    start = lines.index("send against direct per step (means over repetitions):")
    compared = lines[start + 1:start + 3]
    # N = 1 on exactly 2 cores: shown, marked ° (analysis.cores)
    assert [ln.split(":")[0] for ln in compared] == [f"B=4 N=1 (msgpack{one_runner_mark()})",
                                                     "B=4 N=2 (msgpack)"]
    assert "and 8 B of sampled ids per step over gloo, last stage -> the other stage; " \
        in compared[1]
    assert "hidden states 8,192 B per hop under both" in compared[1]
    findings = md.split("## Findings", 1)[1].split("\n## ", 1)[0]
    for line in compared:
        assert f"- {line}\n" in findings
    assert ("- token streams of send and direct: B=4 N=1: one token stream; B=4 N=2: one "
            "token stream.\n") in findings
    footnote = [ln for ln in lines if ln.startswith("* timings left out")]
    if footnote:  # fewer than N + 2 cores for some N: the terminal's footnote, verbatim
        assert f"- `*`{footnote[0][1:]}\n" in findings
        assert "; times and tokens/s left out (fewer than N + 2 cores)." in compared[1]
    # the byte model's lines name the arms as the summary does: send against direct
    byte_lines = sorted(ln for ln in lines if ln.startswith("  [num_running=4,pp="))
    assert [ln.split(":")[0] for ln in byte_lines] == [
        f"  [num_running=4,pp={n}] msgpack {arm}" for n in (1, 2) for arm in ("direct", "send")]
    for ln in byte_lines[1::2]:
        assert re.fullmatch(r".*: \d+ of \d+ messages exact \(both directions: \d+ "
                            r"SchedulerOutput, \d+ ModelRunnerOutput; every one of its \d+ "
                            r"counted steps\); send - direct = "
                            r"\d+\.\d{3} B per running request on these steps \(uniform ids in a 128,256 vocabulary: "
                            r"4\.975 per id with its own framing, not the outer list's; measured "
                            r"over the run: \d+\.\d{3}\)", ln), ln
    assert "cached" not in "".join(byte_lines)
    assert "No send/cached pair in this run: a `--pp` run compares send with `direct`" in md
    assert "- What send costs as a share of the step: a --pp run compares " in md


def test_the_token_line_says_when_only_one_policy_ran():
    from ipc_bench.analysis.pp import token_check_line

    def case(arm, digest, n=2):
        return dict(complete=True, num_running=4, pp=n, arm=arm, policy=arm,
                    token_digest=digest)

    assert token_check_line([case("send", "a"), case("send", "a")]) == (
        "token streams of send: B=4 N=2: only send ran, nothing compared")
    assert token_check_line([case("send", "a"), case("direct", "a"),
                             case("send", "b", 1), case("direct", "c", 1)]) == (
        "token streams of send and direct: B=4 N=1: 2 DIFFERENT streams; "
        "B=4 N=2: one token stream")


def test_the_token_line_names_the_arms_that_ran():
    """An A/A run (``--aa``: send and send') names its two arms, not a direct arm that
    never ran."""
    from ipc_bench.analysis.pp import token_check_line

    def case(arm, digest, n=1):
        return dict(complete=True, num_running=4, pp=n, arm=arm, policy="send",
                    token_digest=digest)

    assert token_check_line([case("send'", "a"), case("send", "a")]) == (
        "token streams of send and send': B=4 N=1: one token stream")
    assert token_check_line([dict(case("direct", "a"), policy="cached"), case("send", "a"),
                             case("send'", "a")]) == (
        "token streams of send, send' and direct: B=4 N=1: one token stream")
