"""docs/metrics.md gives every field of a case's ``summary.json``: each key of every case
entry of a few small real runs appears in it as `key` (backticked).

The runs: the session's small decode-steady run (conftest ``shared_small_run``), a tiny
emulated one (``--model emulated``: the GPU figures it slept on) and a timed replay of 5
requests of the Azure conversation trace, read from ``shared/traces`` next to the
checkout (never copied into it; skipped where it is absent); then one small run of each
scenario or option whose cases add fields of their own: ``tp-broadcast`` (``--tp 2``),
``pp`` (the session's ``--pp 1,2`` run, conftest ``shared_pp_run``), decode-steady
with ``--num-spec-tokens 2`` and with ``--frontend``, a soak of a 100-request burst
(in process, sampling memory and flushing every 20 ms so that its growth and drift
figures exist) and, marked slow (the torch model: about 10 s), the torch model with
``--roofline`` and drafts, and a ``--transport shm`` run with both processes on one CPU.
The soak's memory and drift figures, which a stalled or short soak leaves out, are also
checked from ``analysis.soak``'s own functions on synthetic samples and rows, and the
fields of a case cut short (``failed_step``, ``floor_interrupted``,
``report_interrupted``) from ``summarize_case`` of a result so marked. The default
run's added tests take about 22 s on 2 cores.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from analysis_run import run_bench
from manual import page
from ipc_bench import cli
from ipc_bench.analysis.soak import rss_summary, stream_drift
from ipc_bench.harness import recording
from ipc_bench.harness.memory import SAMPLE_COLUMNS
from ipc_bench.harness.recording import StreamStats
from ipc_bench.harness.spec import SCHED_COLUMNS

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO.parent / "shared" / "traces" / "AzureLLMInferenceTrace_conv.csv"

EMULATED_ARGS = ["--scenario", "decode-steady", "--model", "emulated", "--model-preset",
                 "llama-3.2-1b", "--num-running", "3", "--steps", "12", "--warmup-steps", "3",
                 "--codecs", "msgpack", "--no-floor"]
TIMED_ARGS = ["--scenario", "azure-conv-timed", "--trace", str(TRACE), "--max-requests", "5",
              "--trace-speedup", "50", "--codecs", "msgpack"]
#: Small steady runs: 4 running, 20 counted steps after 5 warm-up steps, msgpack.
SMALL = ["--num-running", "4", "--steps", "20", "--warmup-steps", "5", "--codecs", "msgpack"]
TP_ARGS = ["--scenario", "tp-broadcast", "--tp", "2", "--tp-transports", "ipc", *SMALL]
SPEC_ARGS = ["--scenario", "decode-steady", "--num-spec-tokens", "2", "--no-floor",
             "--no-single-process", *SMALL]
FRONTEND_ARGS = ["--scenario", "decode-steady", "--frontend", "--no-floor", *SMALL]
#: The spinning ring with both processes pinned to this process's first CPU:
#: ``shm_cores``, ``shm_oversubscribed``, ``cpus_allowed``.
FIRST_CPU = min(os.sched_getaffinity(0))
SHM_PINNED_ARGS = ["--scenario", "decode-steady", "--transport", "shm", "--cpu-affinity",
                   f"{FIRST_CPU},{FIRST_CPU}", "--policies", "cached", "--no-floor",
                   "--no-single-process", *SMALL]
ROOFLINE_ARGS = ["--scenario", "decode-steady", "--model", "torch", "--model-preset", "tiny",
                 "--roofline", "--num-spec-tokens", "2", "--num-running", "2", "--steps", "8",
                 "--warmup-steps", "2", "--policies", "cached", "--codecs", "msgpack",
                 "--no-floor", "--no-single-process"]


def undocumented(run: Path) -> dict[str, list[str]]:
    """Each key of ``run``'s summary.json case entries that docs/metrics.md does not
    give as `key` -> the ids of the cases that have it."""
    doc = page("metrics.md")
    missing: dict[str, list[str]] = {}
    for case in json.loads((run / "summary.json").read_text())["cases"]:
        for key in case:
            if f"`{key}`" not in doc:
                missing.setdefault(key, []).append(case.get("case_id", "?"))
    return missing


def assert_documented(run: Path) -> None:
    missing = undocumented(run)
    lines = [f"  {key} (in {', '.join(ids[:2])}{' ...' if len(ids) > 2 else ''})"
             for key, ids in sorted(missing.items())]
    assert not missing, (f"{len(missing)} summary.json case field(s) of {run.name} missing "
                         "from docs/metrics.md (as `key`):\n" + "\n".join(lines))


def case_keys(run: Path) -> set[str]:
    return {k for c in json.loads((run / "summary.json").read_text())["cases"] for k in c}


def test_every_field_of_a_decode_steady_run_is_in_the_metrics_page(shared_small_run):
    assert {"floor_step_ns_median", "runner_forward_ns_per_step",
            "sched_cpu_ns_per_step"} <= case_keys(shared_small_run)
    assert_documented(shared_small_run)


def test_every_field_of_an_emulated_run_is_in_the_metrics_page(tmp_path):
    run = tmp_path / "emulated"
    run_bench(run, EMULATED_ARGS)
    assert {"emulated_gpu", "emulated_memory_bandwidth_bytes_per_s",
            "emulated_step_ns_per_step"} <= case_keys(run)
    assert_documented(run)


def test_every_field_of_a_timed_replay_is_in_the_metrics_page(tmp_path):
    if not TRACE.is_file():
        pytest.skip(f"Azure trace not found at {TRACE} (expected in shared/traces next to "
                    "the checkout)")
    run = tmp_path / "timed"
    run_bench(run, TIMED_ARGS)
    assert {"ttft_ms_p50", "trace", "idle_share"} <= case_keys(run)
    assert_documented(run)


@pytest.mark.parametrize("name, args, some", [
    ("tp", TP_ARGS, {"tp_cores", "tp_s2r_wire_bytes_all_ranks_per_step",
                     "tp_rank_decode_ns_per_step", "tp_ready_ns_median",
                     "tp_slowest_rank_share"}),
    ("spec", SPEC_ARGS, {"spec_draft_tokens_per_step", "spec_draft_acceptance_rate"})])
def test_every_field_of_a_tp_or_drafts_run_is_in_the_metrics_page(tmp_path, name, args,
                                                                  some):
    """A tp-broadcast run and a run with drafts: ``some`` of the fields each writes are
    there (the run is not empty), and every field is documented."""
    run = tmp_path / name
    run_bench(run, args)
    assert some <= case_keys(run)
    assert_documented(run)


def test_every_field_of_a_pp_run_is_in_the_metrics_page(shared_pp_run):
    """The session's ``--pp 1,2`` run (send and direct: the direct arm's hops are a
    superset of send's; its stages import torch, so one run serves every test that
    reads one): as a tp-broadcast run's."""
    assert {"pp_direct", "pp_hidden_bytes_per_step", "pp_hidden_ns_median",
            "pp_direct_ns_median", "pp_zmq_frame_head_bytes_per_step"} <= case_keys(
        shared_pp_run)
    assert_documented(shared_pp_run)


def test_every_field_of_a_frontend_run_is_in_the_metrics_page(tmp_path):
    """Both policies (send's saving is set on each pair) and the single-process cases."""
    run = tmp_path / "frontend"
    run_bench(run, FRONTEND_ARGS)
    assert {"frontend_bytes_per_step", "control_plane_wire_bytes_per_step",
            "control_plane_codec_ns_per_step", "send_saving_share_of_control_plane",
            "frontend_token_digest"} <= case_keys(run)
    assert_documented(run)


def test_every_field_of_a_pinned_shm_run_is_in_the_metrics_page(tmp_path):
    """Both processes on one CPU (on any machine): the spinning reader's core count,
    its oversubscription, and each process's CPUs as the kernel reported them."""
    run = tmp_path / "shm"
    run_bench(run, SHM_PINNED_ARGS)
    (case,) = json.loads((run / "summary.json").read_text())["cases"]
    assert (case["shm_cores"], case["shm_oversubscribed"], case["cpus_allowed"]) == (
        1, True, f"scheduler: {FIRST_CPU}; runner: {FIRST_CPU}")
    assert_documented(run)


def test_every_field_of_a_case_cut_short_is_in_the_metrics_page():
    """The fields of a case that stopped (``failed_step``) or whose floor or runner's
    report a signal cut short after its counted steps (``floor_interrupted``,
    ``report_interrupted``), which no quick run gives without a signal timed into it:
    ``summarize_case`` of a result so marked."""
    from fault_helpers import steady_case
    from ipc_bench.analysis.summary import summarize_case
    from ipc_bench.harness.spec import CaseResult

    summary = summarize_case(CaseResult(steady_case(), error="interrupted by SIGINT",
                                        floor_interrupted=True, report_interrupted=True))
    assert (summary["failed_step"], summary["floor_interrupted"],
            summary["report_interrupted"]) == (None, True, True)
    doc = page("metrics.md")
    assert sorted(k for k in summary if f"`{k}`" not in doc) == []


def _burst_trace(path: Path, n: int = 100) -> Path:
    """An Azure-format trace of ``n`` requests arriving within 0.05 s of trace time, short
    prompts, outputs of 10 to 1,000 tokens: a soak of about 1,000 steps, nearly all pure
    decode, whatever the machine's speed."""
    rows = [f"2023-11-16 18:15:46.{i * 500:06d}0,{16 + i % 17},{10 + i * 990 // (n - 1)}"
            for i in range(n)]
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n")
    return path


def test_every_field_of_a_soak_is_in_the_metrics_page(tmp_path, monkeypatch):
    import ipc_bench.scenarios.soak as soak

    monkeypatch.setattr(soak, "RSS_INTERVAL_S", 0.02)
    monkeypatch.setattr(recording, "FLUSH_INTERVAL_S", 0.02)
    run = tmp_path / "soak"
    assert cli.main(["--scenario", "soak", "--trace", str(_burst_trace(tmp_path / "b.csv")),
                     "--trace-speedup", "25", "--output", str(run), "--quiet"]) == 0
    assert {"rss_num_samples", "s2r_payload_bytes_total", "ttft_ms_p99"} <= case_keys(run)
    assert_documented(run)


def test_every_memory_and_drift_field_of_a_soak_is_in_the_metrics_page():
    """The fields a soak of a few seconds, or one stalled in its baseline window, leaves
    out: ``rss_summary`` of 20 samples of every column, ``stream_drift`` of 20 windows."""
    samples = [(float(t), *(1000 + t for _ in SAMPLE_COLUMNS[1:])) for t in range(20)]
    keys = set(rss_summary(samples))
    stats = StreamStats()
    col = {name: i for i, name in enumerate(SCHED_COLUMNS)}
    for w in range(20):
        row = [0] * len(SCHED_COLUMNS)
        row[col["seq"]], row[col["counted"]] = w, 1
        row[col["num_reqs"]] = row[col["num_scheduled_tokens"]] = 4
        row[col["s2r_payload_bytes"]] = row[col["r2s_payload_bytes"]] = 400
        row[col["t_end_ns"]] = w * 10**9
        stats.add_rows([tuple(row)])
    keys |= set(stream_drift(stats))
    assert len(keys) == 1 + 9 * (len(SAMPLE_COLUMNS) - 1) + 6, sorted(keys)
    doc = page("metrics.md")
    assert sorted(k for k in keys if f"`{k}`" not in doc) == []


@pytest.mark.slow
def test_every_field_of_a_torch_run_with_its_roofline_is_in_the_metrics_page(tmp_path):
    run = tmp_path / "roofline"
    run_bench(run, ROOFLINE_ARGS)
    assert {"roofline_figures", "roofline_ns_per_step", "compute_to_roofline_ratio",
            "draft_ns_per_step"} <= case_keys(run)
    assert_documented(run)
