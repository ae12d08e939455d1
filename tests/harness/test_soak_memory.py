"""What a long run keeps in memory: bounded per-request and per-step state, resident
buffers, and the heap report (``IPC_BENCH_HEAP_REPORT``).

The soak's memory figures come from a 10-minute run (docs/faults.md, "Soak"); these tests pin
the structures that made them grow, driven by hand, without timing anything.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from fault_helpers import REPO, steady_case
from ipc_bench.engine.config import ConfigError, ModelConfig, SchedulerConfig
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.engine.scheduler import RequestStatus, Scheduler
from ipc_bench.engine.workloads import SteadyDecodeWorkload
from ipc_bench.harness.memory import HEAP_REPORT_ENV, HeapReport, RssSampler, allocator_stats
from ipc_bench.harness.recording import StepFlusher, StreamStats, token_digest
from ipc_bench.harness.spec import SCHED_COLUMNS, CaseResult

B = 4


class ListSink:
    def __init__(self):
        self.rows, self.records = [], []

    def stream_steps(self, spec, rows):
        self.rows.extend(tuple(r) for r in rows)

    def stream_requests(self, spec, records):
        self.records.extend(records)


def _drive(num_steps: int, flusher=None):
    """The streamed loop's bookkeeping by hand over a steady workload of ``B``
    requests: schedule, execute (null model), update, record the step's row and, with
    a flusher, release the finished requests. Returns the scheduler, the rows
    recorded, the number finished and the most requests ``sched.requests`` held."""
    config = SchedulerConfig(max_num_seqs=B, max_model_len=512, num_blocks=B * 64)
    sched = Scheduler(config, "send")
    runner = ModelRunner(config, ModelConfig(), "send")
    workload = SteadyDecodeWorkload(B, seed=3, vocab_size=128_256, prompt_len_range=(8, 64),
                                    output_len_range=(4, 24))
    rows, num_finished, most_held = [], 0, 0
    for seq in range(num_steps):
        for r in workload.arrivals(sched.step):
            sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
        plan = sched.schedule()
        finished = sched.update_from_output(
            plan, runner.execute_model(sched.build_scheduler_output(plan)))
        row = [seq + 1000 * i for i in range(len(SCHED_COLUMNS))]
        row[1], row[-1] = plan.step, (seq + 1) * 1_000_000
        rows.append(tuple(row))
        if flusher is not None:
            flusher.record(tuple(row))
        if finished:
            num_finished += len(finished)
            workload.on_finished(len(finished), plan.step)
            if flusher is not None:
                flusher.release_finished(sched, finished)
        most_held = max(most_held, len(sched.requests))
    return sched, rows, num_finished, most_held


def test_streamed_case_drops_finished_requests_at_once_and_packs_its_rows():
    spec = steady_case(B, stream=True)
    sink = ListSink()
    flusher = StepFlusher(spec, sink)
    sched, rows, num_finished, most_held = _drive(600, flusher)
    assert num_finished > 150
    # No flush yet: the scheduler still holds only the live requests, the finished
    # ones wait as token-free records, the rows as packed integers.
    assert most_held == B and len(sched.requests) == B
    assert flusher.num_pending_requests == num_finished
    assert not any(hasattr(f, "all_token_ids") for f in flusher._finished)
    assert flusher.num_pending_rows == 600
    flusher.flush(sched, CaseResult(spec=spec), {}, None)
    assert flusher.num_pending_requests == 0 and flusher.num_pending_rows == 0
    assert sink.rows == rows
    # The same requests and tokens as a scheduler that kept every request.
    kept, _, kept_finished, kept_most = _drive(600)
    assert kept_finished == num_finished and kept_most == B + num_finished
    done = [r for r in kept.requests.values() if r.status == RequestStatus.FINISHED]
    assert sorted(r["index"] for r in sink.records) == sorted(r.index for r in done)
    assert [r["num_output_tokens"] for r in sorted(sink.records, key=lambda r: r["index"])] \
        == [len(r.output_token_ids) for r in sorted(done, key=lambda r: r.index)]
    assert flusher.digest.hexdigest() == token_digest(done)
    assert flusher.stats.num_total_steps == 600 and flusher.stats.num_requests == num_finished


def test_stream_stats_keeps_latencies_on_disk_not_in_memory():
    stats = StreamStats()
    records = [dict(index=i, ttft_s=0.1 * i, tpot_s=None if i % 3 == 0 else 0.01 * i,
                    e2e_s=1.0 + i) for i in range(10)]
    records.append(dict(index=10, finish_reason="rejected"))  # no latency at all
    for rec in records:
        stats.add_request(rec)
    assert stats.latencies_s("ttft_s") == pytest.approx([0.1 * i for i in range(10)])
    assert stats.latencies_s("tpot_s") == pytest.approx([0.01 * i for i in range(10) if i % 3])
    assert stats.latencies_s("e2e_s") == pytest.approx([1.0 + i for i in range(10)])
    stats.add_request(dict(index=11, ttft_s=5.0, e2e_s=6.0))  # reading does not end it
    assert stats.latencies_s("ttft_s")[-1] == 5.0 and stats.num_requests == 12
    assert not any(isinstance(v, (list, np.ndarray)) or type(v).__name__ == "array"
                   for v in (getattr(stats, n, None) for n in ("ttft_s", "tpot_s", "e2e_s")))


def test_rss_sampler_packs_its_samples():
    sampler = RssSampler([os.getpid(), 2**22 + 12345], 0.005).start()
    while len(sampler) < 4:
        pass
    sampler.stop()
    samples = sampler.samples
    assert len(samples) == len(sampler) >= 4
    assert sampler.samples_since(2) == samples[2:]
    t, rss, anon, rss2, anon2, blocks = samples[0]
    assert t >= 0 and rss > anon > 0 and blocks > 1000
    assert (rss2, anon2) == (None, None)  # a process that does not exist
    assert all(isinstance(v, int) for v in (rss, anon, blocks))


def test_runner_token_buffer_is_resident_from_the_start():
    """A fresh process, so the 16 MiB buffer gets its own mapping: building the batch
    makes it resident (np.zeros alone would map its pages on first write)."""
    code = ("import os\nfrom ipc_bench.harness.memory import read_memory_bytes\n"
            "from ipc_bench.engine.input_batch import InputBatch\n"
            "a = read_memory_bytes(os.getpid())[1]\nb = InputBatch(256, 16384, 1024)\n"
            "print(read_memory_bytes(os.getpid())[1] - a)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, check=True)
    assert int(out.stdout) >= 256 * 16384 * 4 + 256 * 1024 * 4


def test_heap_report_settings(monkeypatch):
    monkeypatch.delenv(HEAP_REPORT_ENV, raising=False)
    assert HeapReport.from_env() is None
    monkeypatch.setenv(HEAP_REPORT_ENV, "stats")
    assert HeapReport.from_env().frames == 0
    monkeypatch.setenv(HEAP_REPORT_ENV, "6")
    assert HeapReport.from_env().frames == 6
    for bad in ("yes", "-1", "0"):
        monkeypatch.setenv(HEAP_REPORT_ENV, bad)
        with pytest.raises(ConfigError, match=HEAP_REPORT_ENV):
            HeapReport.from_env()


def test_a_bad_heap_report_setting_is_one_line_and_exit_2(monkeypatch, capsys, tmp_path):
    from ipc_bench import cli

    monkeypatch.setenv(HEAP_REPORT_ENV, "yes")
    code = cli.main(["--scenario", "decode-steady", "--num-running", "1", "--steps", "5",
                     "--output", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err == ("bench.py: error: IPC_BENCH_HEAP_REPORT must be 'stats' or a "
                                 "number of frames per traceback, got 'yes'\n")
    assert not (tmp_path / "run").exists()


def test_allocator_stats_reads_glibc_and_pymalloc():
    stats = allocator_stats()
    if sys.implementation.name != "cpython" or not hasattr(sys, "_debugmallocstats"):
        pytest.skip("pymalloc figures need CPython")
    assert stats["pymalloc_arenas"] >= 1 and stats["pymalloc_used_bytes"] > 100_000
    if "malloc_used_bytes" in stats:  # glibc >= 2.33
        assert stats["malloc_used_bytes"] > 0 and stats["malloc_heap_bytes"] > 0


def test_heap_report_names_the_line_that_grew():
    report = HeapReport(frames=3).start()
    report.mark("warm")
    kept = [bytearray(1000) for _ in range(2000)]  # about 2 MB held past the end mark
    report.mark("end")
    text = report.report("t")
    assert len(kept) == 2000
    lines = text.splitlines()
    assert lines[0] == "== t: heap report (tracemalloc, 3 frames per traceback)"
    assert any(line.split()[0] == "traced_bytes" for line in lines)
    top = lines.index(next(line for line in lines if line.startswith("  traced blocks"))) + 1
    size = int(lines[top].split()[0].replace(",", "").lstrip("+"))
    assert size >= 2000 * 1000
    assert any("test_soak_memory.py" in line for line in lines[top + 1:top + 4])


def test_step_ends_look_up_like_a_dict_of_steps():
    from ipc_bench.harness.recording import StepEnds

    steps = [3, 4, 5, 9, 10, 12]
    ends = StepEnds(steps, [0.5, 0.75, 1.0, 2.0, 2.5, 3.0])
    table = dict(zip(steps, ends.ends_s.tolist()))
    for wanted in ([3, 5, 12], [1, 2, 3], [11, 12, 13], [], [6, 7], [4, 9, 10, 12]):
        assert ends.times(wanted) == [table[s] for s in wanted if s in table]
    ends.drop_before(5)
    assert ends.times([3, 4, 5, 9]) == [1.0, 2.0]
    ends.extend(StepEnds([20], [9.0]))
    assert len(ends) == 5 and ends.times([12, 20]) == [3.0, 9.0]
    assert StepEnds().times([1, 2]) == []


def test_heap_report_of_both_processes_goes_to_the_run_folder(tmp_path, monkeypatch):
    from ipc_bench.analysis.summary import summarize_case
    from ipc_bench.harness.run_folder import RunWriter
    from ipc_bench.harness.supervisor import run_case

    monkeypatch.setenv(HEAP_REPORT_ENV, "stats")
    spec = steady_case(B, max_steps=300, stream=True)
    writer = RunWriter(tmp_path, {})
    result = CaseResult(spec=spec)
    run_case(spec, result=result, sink=writer, flush_interval_s=0.05)
    writer.add_case(result, summarize_case(result))
    text = (tmp_path / "heap.txt").read_text()
    runner, sched = text.split("== scheduler ")
    assert runner.startswith("== runner (pid ") and "heap report (stats)" in sched
    for part in (runner, sched):
        rows = {line.split()[0]: line.split()[1:] for line in part.splitlines()[1:]}
        assert rows["figure"] == ["warm", "end", "end+trim", "end", "-", "warm"]
        warm, end = (int(v.replace(",", "")) for v in rows["rss_bytes"][:2])
        assert warm > 10 * 2**20 and end > 10 * 2**20
        assert int(rows["pymalloc_arenas"][0]) >= 1
