"""Speculative decoding over ``--tp`` runner ranks (``harness.tp_case``), as vLLM V1:
every rank runs the drafter and the rejection sampler on the same broadcast, rank 0's
``ModelRunnerOutput`` (its ``spec_token_ids`` included) is the one the scheduler
gets, and each rank writes its accepted drafts + bonus token into its own buffer.

- A drained workload (every request finished) gives one token stream with 2 ranks and
  K = 2, with 2 ranks and K = 0 and with one runner and K = 2, under both policies,
  over XPUB/SUB and over the ring; each rank verified the same drafts (the output
  oracle compares every rank's ``ModelRunnerOutput`` digests with rank 0's).
- The kind of vLLM #20530 on rank 1 only (its accepted drafts not written into its
  buffer: the ``sitecustomize`` fault of ``test_spec_faults``, guarded to the process
  of rank 1's control socket) fails the case through that rank's input oracle, naming
  rank 1, the step, the request, the position and the id the scheduler holds; no
  process or socket folder is left.
- A rank whose drafter proposes other drafts (its buffer stays right: the next drafts
  come from rank 0's reply) fails the output oracle, naming rank 1 and the step.
- The tp-broadcast scenario with ``--num-spec-tokens 0,2``: each K its own rows (a K
  column) and its own token-stream line; drafts add bytes per step under both policies.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import replace

import msgspec
import pytest

from fault_helpers import REPO, inject, rank_1_only, steady_case
from harness.test_spec_faults import FAULT, expected_error, faulted
from harness.test_tp import assert_no_segment, spy_on
from harness.test_e2e import assert_clean
from ipc_bench.analysis.tp import tp_saving
from ipc_bench.engine.workloads import SteadyDecodeWorkload
from ipc_bench.harness.spec import CaseError
from ipc_bench.harness.supervisor import run_case

pytestmark = pytest.mark.timeout(240)

#: ``test_spec_faults.FAULT`` in rank 1's process only (its command line ends with its
#: control endpoint ``.../ctl1``).
FAULT_RANK_1 = rank_1_only(FAULT, "IPC_BENCH_TEST_SPEC_FAULT_AT")


#: Rank 1 only: at step IPC_BENCH_TEST_REDRAFT_AT its drafter proposes, for the first
#: request with drafts, its first draft + 1 (its buffer and its sampled ids stay right:
#: the next step's drafts come from rank 0's reply, through the broadcast).
REDRAFT_RANK_1 = '''
import os, sys
if os.environ.get("IPC_BENCH_TEST_REDRAFT_AT") and sys.argv[-1].endswith("/ctl1"):
    from ipc_bench.engine import model_runner as _mr
    _at = int(os.environ["IPC_BENCH_TEST_REDRAFT_AT"])
    _real = _mr.ModelRunner._propose
    _calls = [0]

    def _propose(self, rows, first_new, valid):
        proposals = _real(self, rows, first_new, valid)
        if _calls[0] == _at:
            row = next(r for r, p in enumerate(proposals) if p)
            proposals[row][0] += 1
        _calls[0] += 1
        return proposals

    _mr.ModelRunner._propose = _propose
'''


class DrainedWorkload(SteadyDecodeWorkload):
    """The first ``num_running`` requests of the steady workload, none replacing
    those that finish: the case ends when all are done (``max_steps`` None)."""

    def on_finished(self, num_finished: int, step: int) -> None:
        pass


def drained_case(k: int, **kw):
    """12 requests of 16 to 60 output tokens, run to the end, with ``k`` drafts."""
    case = steady_case(12, max_steps=None, **kw)
    case = replace(case, make_workload=lambda: DrainedWorkload(
        12, seed=3, vocab_size=128_256, prompt_len_range=(8, 64), output_len_range=(16, 60)))
    return replace(case, labels={**case.labels, "num_spec_tokens": k},
                   scheduler=msgspec.structs.replace(case.scheduler, num_spec_tokens=k))


@pytest.mark.parametrize("policy", ["send", "cached"])
def test_two_ranks_with_drafts_give_the_stream_without_and_of_one_runner(monkeypatch, policy):
    single = run_case(drained_case(2, policy=policy, input_oracle_interval=1))
    assert single.error is None and len(single.requests) == 12
    assert all(r["num_output_tokens"] == r["max_tokens"] for r in single.requests)
    for transport in ("ipc", "shm-block"):
        spy = spy_on(monkeypatch)
        with_drafts, without = (
            run_case(drained_case(k, policy=policy, transport=transport, tp=2,
                                  input_oracle_interval=1)) for k in (2, 0))
        assert with_drafts.token_digest == without.token_digest == single.token_digest
        assert with_drafts.schedule_digest == single.schedule_digest
        assert with_drafts.schedule_digest != without.schedule_digest  # drafts were scheduled
        assert len(with_drafts.sched_rows) < len(without.sched_rows)  # accepted drafts
        assert len(with_drafts.tp_rank_columns) == 2
        assert [p.returncode for p in spy.procs] == [0, 0, 0, 0]
        assert_clean(spy)
        assert_no_segment(spy)


@pytest.mark.parametrize("transport", ["ipc", "shm-block"])
def test_rank_1_dropping_accepted_drafts_fails_naming_rank_1(monkeypatch, tmp_path, transport):
    log = tmp_path / "fault.txt"
    inject(monkeypatch, tmp_path, FAULT_RANK_1, IPC_BENCH_TEST_SPEC_FAULT_LOG=str(log),
           IPC_BENCH_TEST_SPEC_FAULT_AT="20")
    spy = spy_on(monkeypatch)
    case = steady_case(8, policy="cached", max_steps=200, transport=transport, tp=2,
                       input_oracle_interval=1)
    case = replace(case, scheduler=msgspec.structs.replace(case.scheduler, num_spec_tokens=2))
    with pytest.raises(CaseError) as err:
        run_case(case)
    seq = faulted(log)[0]  # one line: rank 0 never armed the fault
    assert seq >= 20
    assert re.fullmatch("rank 1: " + expected_error(log), str(err.value)), str(err.value)
    assert err.value.step == seq + 1
    assert_clean(spy)
    assert_no_segment(spy)


def test_rank_1_proposing_other_drafts_fails_the_output_oracle(monkeypatch, tmp_path):
    inject(monkeypatch, tmp_path, REDRAFT_RANK_1, IPC_BENCH_TEST_REDRAFT_AT="30")
    spy = spy_on(monkeypatch)
    case = steady_case(8, policy="cached", max_steps=80, transport="shm-block", tp=2,
                       input_oracle_interval=1)
    case = replace(case, scheduler=msgspec.structs.replace(case.scheduler, num_spec_tokens=2))
    with pytest.raises(CaseError) as err:
        run_case(case)
    assert str(err.value) == ("rank 1: step 30: its ModelRunnerOutput differs from rank 0's "
                              "(the one the scheduler received): it sampled other tokens or "
                              "proposed other drafts")
    assert err.value.step == 30
    assert_clean(spy)


def test_the_scenario_reports_each_k_on_its_own_rows(tmp_path, bench_tmpdir):
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench.py"), "--scenario", "tp-broadcast", "--tp", "1,2",
         "--tp-transports", "shm-block", "--num-running", "8", "--steps", "30",
         "--warmup-steps", "5", "--codecs", "msgpack", "--num-spec-tokens", "0,2",
         "--output", str(run_dir), "--quiet"],
        cwd=REPO, capture_output=True, text=True, timeout=180,
        env=dict(os.environ, TMPDIR=str(bench_tmpdir)))
    assert proc.returncode == 0, proc.stderr
    cases = json.loads((run_dir / "summary.json").read_text())["cases"]
    assert sorted((c["num_spec_tokens"], c["tp"], c["policy"]) for c in cases) == sorted(
        (k, n, p) for k in (0, 2) for n in (1, 2) for p in ("send", "cached"))
    for k in (0, 2):  # one stream per K, across N and policies
        assert len({c["token_digest"] for c in cases if c["num_spec_tokens"] == k}) == 1
    assert ("token streams across N, transports and policies: B=8: one token stream; "
            "B=8 K=2: one token stream") in proc.stdout
    written = {(c["num_spec_tokens"], c["tp"], c["policy"]): c["tp_s2r_bytes_written_per_step"]
               for c in cases}
    for n in (1, 2):
        for policy in ("send", "cached"):  # drafts travel in scheduled_spec_decode_tokens
            assert written[2, n, policy] > written[0, n, policy]
    rows = tp_saving(cases)
    assert [(r["num_spec_tokens"], r["tp"]) for r in rows] == [(0, 1), (0, 2), (2, 1), (2, 2)]
    headers = [ln.split() for ln in proc.stdout.splitlines()
               if ln.split()[:2] == ["transport", "codec"]]
    assert [h[:6] for h in headers] == [["transport", "codec", "policy", "N", "K", "B"],
                                        ["transport", "codec", "N", "K", "B", "reps"]]
    from ipc_bench.analysis.results import load
    from ipc_bench.report import plots

    per_step = {ln.get_label(): ln for ln in plots.tp_per_step_figure(load(run_dir)).axes[0].lines}
    for k in (0, 2):
        line = per_step[f"shm-block / msgpack / cached / K={k}"]
        assert list(line.get_xdata()) == [1, 2]
        assert list(line.get_ydata()) == pytest.approx([written[k, n, "cached"] for n in (1, 2)])
    saving = {ln.get_label(): ln for ln in plots.tp_saving_figure(load(run_dir)).axes[0].lines
              if not ln.get_label().startswith("_")}  # not the zero line
    assert sorted(saving) == ["shm-block / msgpack / K=0", "shm-block / msgpack / K=2"]
    assert list(saving["shm-block / msgpack / K=2"].get_ydata()) == pytest.approx(
        [written[2, n, "send"] - written[2, n, "cached"] for n in (1, 2)])
