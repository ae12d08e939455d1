"""docs/metrics.md gives every field of a case's ``summary.json``: each key of every case
entry of a few small real runs appears in it as `key` (backticked).

The runs: the session's small decode-steady run (conftest ``shared_small_run``), a tiny
emulated one (``--model emulated``: the GPU figures it slept on) and a timed replay of 5
requests of the Azure conversation trace, read from ``shared/traces`` next to the
checkout (never copied into it; skipped where it is absent).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis_run import run_bench
from manual import page

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO.parent / "shared" / "traces" / "AzureLLMInferenceTrace_conv.csv"

EMULATED_ARGS = ["--scenario", "decode-steady", "--model", "emulated", "--model-preset",
                 "llama-3.2-1b", "--num-running", "3", "--steps", "12", "--warmup-steps", "3",
                 "--codecs", "msgpack", "--no-floor"]
TIMED_ARGS = ["--scenario", "azure-conv-timed", "--trace", str(TRACE), "--max-requests", "5",
              "--trace-speedup", "50", "--codecs", "msgpack"]


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
