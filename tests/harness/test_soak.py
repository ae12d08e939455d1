"""The soak machinery on a short run: streamed records, RSS sampling, growth and drift.

The soak itself (``python bench.py --scenario soak --trace ...``, about 10 minutes) is
not part of the test suite; these tests run its code paths in a few seconds.
"""

from __future__ import annotations

import json
import re
import signal

import numpy as np
import pandas as pd
import pytest

from fault_helpers import bench, children, one_runner_mark, steady_case, wait_for
from ipc_bench import cli
from ipc_bench.harness import recording
from ipc_bench.harness.spec import CaseResult, SCHED_COLUMNS
from ipc_bench.harness.recording import InOrderDigest, token_digest
from ipc_bench.harness.supervisor import run_case
from ipc_bench.harness.run_folder import RunWriter
from ipc_bench.analysis.soak import rss_growth, rss_summary, stream_drift, stream_summary
from ipc_bench.harness.memory import SAMPLE_COLUMNS, RssSampler, read_memory_bytes
from ipc_bench.harness.recording import StreamStats
from ipc_bench.engine.traces import Trace
from ipc_bench.engine.workloads import TraceWorkload



def _timed_case(stream: bool, n: int = 60):
    rng = np.random.default_rng(5)
    trace = Trace(path="t", arrival_s=np.sort(rng.uniform(0, 20, n)),
                  prompt_lens=rng.integers(1, 300, n), output_lens=rng.integers(1, 60, n))
    spec = steady_case(max_steps=None, stream=stream, sample_rss_s=0.05 if stream else None)
    spec.scheduler = type(spec.scheduler)(max_num_seqs=16, max_model_len=512, num_blocks=4096)
    spec.make_workload = lambda: TraceWorkload(trace, name="w", seed=2, vocab_size=128_256,
                                               logical_step_s=0.02)
    spec.trace_speedup = 40.0
    return spec


def test_streamed_case_writes_as_it_goes_and_keeps_the_same_token_digest(tmp_path):
    plain = run_case(_timed_case(stream=False))
    writer = RunWriter(tmp_path, {})
    spec = _timed_case(stream=True)
    result = CaseResult(spec=spec)
    run_case(spec, result=result, sink=writer, flush_interval_s=0.05)
    # Same tokens whatever the batching (the timed clock batches differently each run).
    assert result.token_digest == plain.token_digest
    # Nothing per step or per request stayed in memory; it is all on disk.
    assert result.sched_rows == [] and result.requests == [] and result.s2r_frames == []
    steps = pd.read_csv(tmp_path / "steps.csv")
    assert list(steps["seq"]) == list(range(result.stream_stats.num_total_steps))
    requests = pd.read_csv(tmp_path / "requests.csv")
    assert sorted(requests["index"]) == list(range(60))
    assert (requests.finish_reason == "length").all()
    assert list(requests.sort_values("index").num_output_tokens) == \
        [r["num_output_tokens"] for r in plain.requests]
    # The sampler's samples are in rss.csv, once, in order, each at least its interval
    # after the one before; only those taken after the last flush (the runner's stop)
    # can be missing, as no case end writes them here. The count itself depends on the
    # machine's load: a starved sampler thread took 3 in a run of 0.5 s.
    rss = pd.read_csv(tmp_path / "rss.csv")
    sampled = [s[0] for s in result.rss_samples]
    assert list(rss.t_s) == sampled[:len(rss)] and len(sampled) // 2 <= len(rss) >= 2
    assert (np.diff(rss.t_s) >= 0.05 * 0.99).all()
    assert (rss.sched_rss_bytes > 0).all() and (rss.runner_anon_bytes > 0).all()
    stats = stream_summary(result.stream_stats)
    assert stats["num_requests"] == 60 and stats["num_finished"] == 60
    assert stats["output_tokens"] == int(steps[steps.counted == 1].num_output_tokens.sum())
    # the warm-up's share of the scheduled tokens, as a case kept whole gives it
    # (summary.warmup_tokens_warning reads it)
    warm = int(steps[steps.warmup == 1].num_scheduled_tokens.sum())
    assert warm > 0
    assert stats["warmup_token_share"] == warm / int(steps.num_scheduled_tokens.sum())


def test_in_order_digest_equals_token_digest_whatever_the_finish_order():
    class R:
        def __init__(self, index, out):
            self.index, self.output_token_ids = index, out

    reqs = [R(i, list(range(i, 3 * i))) for i in range(50)]
    d = InOrderDigest()
    for r in np.random.default_rng(1).permutation(reqs):
        d.add(r.index, r.output_token_ids)
    assert d.hexdigest() == token_digest(reqs)
    gaps = InOrderDigest()
    for r in reqs[5:]:  # indexes 0..4 never arrive
        gaps.add(r.index, r.output_token_ids)
    assert gaps.hexdigest() == token_digest(reqs[5:])


def test_rss_growth_definition():
    t = np.arange(100.0)
    flat = rss_growth(t, [100] * 100)
    assert flat["rss_growth_pct"] == 0.0 and flat["rss_slope_bytes_per_min"] == pytest.approx(0)
    # Linear growth from 100 to 199: baseline = mean of t in [9.9, 19.8), end = t >= 89.1
    g = rss_growth(t, list(range(100, 200)))
    assert g["rss_baseline_bytes"] == np.mean(range(110, 120))
    assert g["rss_end_bytes"] == np.mean(range(190, 200))
    assert g["rss_slope_bytes_per_min"] == pytest.approx(60.0)
    assert g["rss_late_slope_bytes_per_min"] == pytest.approx(60.0)
    # the samples each slope is fitted over: t 10..99 after warm-up, 50..99 the late half
    assert (g["rss_slope_span_s"], g["rss_late_slope_span_s"]) == (89.0, 49.0)
    # up with a load peak, then flat: growth, but no late slope
    step = rss_growth(t, [100] * 30 + [150] * 70)
    assert step["rss_growth_pct"] == 50.0
    assert step["rss_late_slope_bytes_per_min"] == pytest.approx(0.0, abs=1e-9)
    assert rss_growth(t[:5], [1] * 5) == {}


def test_stream_stats_drift_of_bytes_per_request():
    stats = StreamStats()
    col = {n: i for i, n in enumerate(SCHED_COLUMNS)}
    for w in range(20):
        row = [0] * len(SCHED_COLUMNS)
        row[col["seq"]], row[col["counted"]] = w, 1
        row[col["num_reqs"]] = row[col["num_scheduled_tokens"]] = 4
        row[col["s2r_payload_bytes"]] = 400 + (40 if w >= 18 else 0)
        row[col["r2s_payload_bytes"]] = 200
        row[col["t_end_ns"]] = int(w * 1e9)
        stats.add_rows([tuple(row)])
    drift = stream_drift(stats)
    assert drift["s2r_decode_bytes_per_req_baseline"] == 100.0
    assert drift["s2r_decode_bytes_per_req_end"] == 110.0
    assert drift["s2r_decode_bytes_per_req_drift_pct"] == pytest.approx(10.0)
    assert drift["r2s_decode_bytes_per_req_drift_pct"] == 0.0


def test_rss_sampler_reads_both_processes():
    import os

    sampler = RssSampler([os.getpid(), os.getpid()], 0.01).start()
    # until its thread has taken a second sample (0.01 s after the first on an idle
    # machine), not a fixed 0.05 s: a loaded machine may not run the thread twice in that
    wait_for(lambda: len(sampler) >= 2, timeout_s=60, what="a second RSS sample")
    sampler.stop()
    assert len(sampler.samples) >= 2
    t, rss, anon, rss2, anon2, blocks = sampler.samples[0]
    assert rss > anon > 0 and rss2 > anon2 > 0 and blocks > 1000
    assert read_memory_bytes(2**22 + 12345) == (None, None)


def _burst_trace(path, n: int = 200) -> tuple[list[int], list[int]]:
    """Write an Azure-format trace of ``n`` requests arriving within 0.1 s of trace time
    (4 ms of wall time at 25x), with short prompts and outputs of 10 to 2,000 tokens;
    returns (prompt lengths, output lengths)."""
    prompts = [16 + i % 17 for i in range(n)]
    outputs = [10 + i * 1990 // (n - 1) for i in range(n)]
    rows = [f"2023-11-16 18:15:46.{i * 500:06d}0,{p},{o}"
            for i, (p, o) in enumerate(zip(prompts, outputs))]
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n")
    return prompts, outputs


def test_an_interrupted_soak_names_its_step_and_points_at_its_results(tmp_path):
    """A streamed case whose rows have left memory: Ctrl-C names the step it reached
    (from the rows written), not "before its first step", and the folder."""
    trace = tmp_path / "slow.csv"  # a request a second, each 2,000 tokens: a minute
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
        f"2023-11-16 18:15:{i:02d}.0000000,16,2000\n" for i in range(60)))
    run = tmp_path / "run"
    proc = bench(["--scenario", "soak", "--trace", str(trace), "--trace-speedup", "1",
                  "--quiet", "--output", str(run)])
    steps = run / "steps.csv"  # a streamed case writes its rows there as it goes
    wait_for(lambda: steps.exists() and steps.read_text().count("\n") > 2, timeout_s=120,
             what="the first rows")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and children(proc.pid) == [], err
    match = re.fullmatch(r"bench\.py: trace=soak:60/send/msgpack#0: interrupted by SIGINT at "
                         r"step (\d+) \(steps\.csv seq: warm-up and uncounted steps included\); "
                         rf"partial results: {re.escape(str(run))} \(exit 130\)\n",
                         err)
    assert match, err
    (case,) = json.loads((run / "summary.json").read_text())["cases"]
    assert int(match[1]) == case["num_total_steps"] > 0


def test_soak_scenario_short(tmp_path, monkeypatch, capsys):
    """The soak scenario end to end on a trace whose schedule does not depend on the
    machine's load: every request arrives in the first few steps (a burst) and their
    prefill takes two or three steps, so all later steps are pure decode, some 2,000 of
    them whatever their speed. A replay whose arrivals are spread over wall time makes
    a slow (loaded) machine run fewer steps between arrivals, until no pure-decode step
    falls in the drift's baseline window (10-20 % of the run) and the drift goes
    missing. About 1.5 s on 2 idle cores (20 ms steps: about 20 s)."""
    import ipc_bench.scenarios.soak as soak

    monkeypatch.setattr(soak, "RSS_INTERVAL_S", 0.02)
    monkeypatch.setattr(recording, "FLUSH_INTERVAL_S", 0.02)
    trace, run = tmp_path / "burst.csv", tmp_path / "run"
    prompts, outputs = _burst_trace(trace)
    code = cli.main(["--scenario", "soak", "--trace", str(trace), "--max-requests", "200",
                     "--trace-speedup", "25", "--output", str(run), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0, err
    summary = json.loads((run / "summary.json").read_text())
    (case,) = summary["cases"]
    assert case["complete"] and case["num_requests"] == 200 and case["trace_speedup"] == 25
    assert case["num_finished"] == 200 and case["num_warmup_steps"] == 50
    rss = pd.read_csv(run / "rss.csv")
    assert len(rss) == case["rss_num_samples"] >= 2
    assert np.median(np.diff(rss.t_s)) < 0.5  # every 0.02 s, not the default 1 s
    # Growth: the summary's figures are rss_growth's over the recorded samples.
    samples = list(rss[list(SAMPLE_COLUMNS)].itertuples(index=False, name=None))
    growth = rss_summary(samples)
    assert {k: case.get(k) for k in growth} == pytest.approx(growth)
    steps = pd.read_csv(run / "steps.csv")
    # The figures need samples and pure-decode steps in the baseline window (10-20 % of
    # the run's time): a stall of the loaded machine there (seen: both processes
    # descheduled for about a tenth of a 6 s run) leaves them out. The run's own
    # records say whether it stalled; if not, every figure must be there.
    def stalled(t) -> bool:
        t = np.sort(np.asarray(t, dtype=float))
        return bool(np.diff(t).max() > 0.04 * (t[-1] - t[0]))

    keys = ["s2r_decode_bytes_per_req_drift_pct", "r2s_decode_bytes_per_req_drift_pct",
            "sched_py_growth_pct"] + [
        f"{who}_{kind}_growth_pct" for who in ("sched", "runner") for kind in ("rss", "anon")]
    if not (stalled(rss.t_s) or stalled(steps.t_end_ns / 1e9)):
        assert [k for k in keys if k not in case] == [], case
    # The headline counts every step, warm-up and counted apart: the case table's
    # "steps" are the counted ones.
    assert (f"Soak trace=soak:200/send/msgpack#0: {case['num_total_steps']:,} steps (50 "
            f"warm-up, {case['num_steps']:,} counted), 200 requests, ") in out
    assert case["num_total_steps"] == case["num_steps"] + 50
    # The report gives the terminal's drift lines, verbatim.
    drift = [ln.strip() for ln in out.splitlines() if " bytes per request per decode " in ln]
    assert len(drift) == 2 or stalled(rss.t_s) or stalled(steps.t_end_ns / 1e9)
    assert cli.main(["report", str(run), "--output", str(tmp_path / "report")]) == 0
    md = (tmp_path / "report" / "report.md").read_text().splitlines()
    assert [ln for ln in md if ln.startswith("- s2r ") or ln.startswith("- r2s ")] == [
        f"- {ln}" for ln in drift]
    # a soak streams no per-step runner columns: its runner figures say why, not an error
    assert ("- Encode and decode time per step: no per-step runner timings (a soak's "
            "streamed cases record none; any other run's runner report is missing).") in md
    assert len(steps) == case["num_total_steps"] >= max(outputs)  # one token a step
    assert case["output_tokens"] == int(steps[steps.counted == 1].num_output_tokens.sum())
    requests = pd.read_csv(run / "requests.csv").sort_values("index")
    assert list(requests["index"]) == list(range(200))
    assert list(requests.num_prompt_tokens) == prompts
    assert list(requests.num_output_tokens) == outputs  # every token, load or not
    assert (requests.finish_reason == "length").all()
    # Latencies as a timed replay records and prints them: ITL from every gap of
    # itl.csv, in the terminal's Latency table and the report's, cell for cell.
    itl_ms = pd.read_csv(run / "itl.csv")["itl_s"].to_numpy() * 1e3
    assert len(itl_ms) == sum(outputs) - 200
    assert case["itl_ms_p50"] == float(np.percentile(itl_ms, 50))
    assert case["itl_ms_mean"] == float(itl_ms.mean())
    row = [f"{case['ttft_ms_p50']:,.2f}", f"{case['ttft_ms_p99']:,.2f}",
           f"{case['tpot_ms_mean']:,.3f}", f"{case['itl_ms_p50']:,.3f}",
           f"{case['itl_ms_p99']:,.3f}", f"{case['e2e_ms_p50']:,.1f}",
           f"{case['e2e_ms_p99']:,.1f}"]
    assert "\nLatency (timed replay at 25x real time; TTFT from intended arrival)\n" in out
    printed = [ln.split() for ln in out.splitlines() if ln.startswith("send ")]
    ipc = "ipc" + one_runner_mark()
    assert printed[-1] == ["send", "msgpack", ipc] + row
    assert f"| 0 | send | msgpack | {ipc} | " + " | ".join(row) + " |" in md


def test_stream_stats_give_the_latencies_a_timed_replay_gives():
    """A streamed case's TTFT, TPOT, ITL and E2E are ``latency_summary``'s of the same
    records: ITL from every gap (its scratch file), not left out."""
    from ipc_bench.analysis.summary import latency_summary

    records = [dict(index=0, finish_reason="length", num_output_tokens=3, ttft_s=0.010,
                    tpot_s=0.002, e2e_s=0.014, itl_s=[0.001, 0.003]),
               dict(index=1, finish_reason="length", num_output_tokens=1, ttft_s=0.020,
                    tpot_s=None, e2e_s=0.020, itl_s=[]),
               dict(index=2, finish_reason="length", num_output_tokens=4, ttft_s=0.030,
                    tpot_s=0.005, e2e_s=0.045, itl_s=[0.004, 0.005, 0.006])]
    stats = StreamStats()
    for r in records:
        stats.add_request(r)
    got = {k: v for k, v in stream_summary(stats).items() if "_ms_" in k}
    assert got == latency_summary(records)
    assert list(stats.latencies_s("itl_s")) == [0.001, 0.003, 0.004, 0.005, 0.006]
    assert (got["itl_ms_mean"], got["itl_ms_p50"]) == (3.8, 4.0)
    assert (got["tpot_ms_mean"], got["e2e_ms_p50"]) == (3.5, 20.0)


def test_a_soak_in_this_process_raises_no_deprecation_warning(tmp_path, monkeypatch,
                                                             capsys):
    """As under ``python -W error::DeprecationWarning``: a soak run from this process
    (the sockets' check before the case, ``transport.check_endpoints``, then the case)
    uses no deprecated pyzmq API (pyzmq 27: ``Socket.socket_type``, which the
    transport's close read) and ends 0 with nothing on stderr."""
    import warnings

    monkeypatch.setattr(recording, "FLUSH_INTERVAL_S", 0.02)
    trace, run = tmp_path / "burst.csv", tmp_path / "run"
    _burst_trace(trace, n=20)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        code = cli.main(["--scenario", "soak", "--trace", str(trace), "--max-requests",
                         "20", "--trace-speedup", "25", "--output", str(run), "--quiet"])
    assert (code, capsys.readouterr().err) == (0, "")


def test_a_full_disk_mid_soak_counts_the_streamed_rows_it_could_not_write(
        tmp_path, monkeypatch, capsys):
    """A streamed case's rows leave memory at each flush: steps.csv full after 4
    flushes, the rows of the flush that failed are gone, and the one line, the run's
    ``problems`` and the case's ``rows_not_written`` count them (the summary's steps
    less those steps.csv holds), so the loader warns of no steps.csv cut short."""
    import errno
    import os
    import warnings
    from pathlib import Path

    from ipc_bench.analysis.results import load
    from ipc_bench.harness import run_folder
    import ipc_bench.scenarios.soak as soak

    monkeypatch.setattr(soak, "RSS_INTERVAL_S", 0.02)
    monkeypatch.setattr(recording, "FLUSH_INTERVAL_S", 0.02)
    real, seen = run_folder.write_fd, [0]

    def write_fd(fd, data, path):
        if Path(path).name == "steps.csv":
            seen[0] += 1
            if seen[0] > 5:  # the header, then 4 flushes
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(fd, data, path)

    monkeypatch.setattr(run_folder, "write_fd", write_fd)
    trace, run = tmp_path / "burst.csv", tmp_path / "run"
    _burst_trace(trace)
    assert cli.main(["--scenario", "soak", "--trace", str(trace), "--max-requests", "200",
                     "--trace-speedup", "25", "--output", str(run), "--quiet"]) == 1
    summary = json.loads((run / "summary.json").read_text())
    (case,) = summary["cases"]
    written = len(pd.read_csv(run / "steps.csv"))
    lost = case["num_total_steps"] - written
    assert lost > 0 and case["rows_not_written"] == {"steps.csv": lost}
    message = (f"cannot write results to {run}: No space left on device; rows not "
               f"written: {lost:,} of steps.csv")
    assert capsys.readouterr().err == f"bench.py: error: {message}; partial results: {run}\n"
    assert (summary["status"], summary["problems"]) == ("failed", [message])
    from ipc_bench.analysis.results import RunStatusWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load(run)
    # the run's status alone (it failed), no steps.csv cut short
    assert [(w.category, str(w.message)) for w in caught] == [(
        RunStatusWarning, f"{run}: this run failed: {loaded.status_detail[run.name]}; "
                          "1 case loaded, not finished (Results.unfinished names it; "
                          "Results.finished leaves it out)")]
