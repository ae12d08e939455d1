"""``python bench.py`` as a user runs it, from the repository root, in a subprocess.

Bad input: exit code 2 and exactly one line on stderr, ``bench.py: error: ...``, naming
the problem (and the row, for a malformed trace), no traceback and no result folder.
A tiny successful run: exit 0 and a complete result folder that pandas reads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]

HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens"


def bench(*args: str, timeout: float = 120, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "bench.py", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env=env)


def runner_processes_under(path: Path) -> list[str]:
    """Command lines of live runner processes whose endpoint lies under ``path``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "-m ipc_bench.harness " in cmd and str(path) in cmd:
                found.append(cmd)
    return found


def assert_usage_error(proc: subprocess.CompletedProcess, message: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"bench.py: error: {message}\n"
    assert proc.stdout == ""


def test_list():
    proc = bench("--list")
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    summaries = dict(line.split(None, 1) for line in lines)
    assert list(summaries) == sorted(summaries)
    assert summaries["azure-conv"] == ("Azure conversation trace, replayed on the logical "
                                       "clock (needs --trace).")
    assert summaries["decode-steady"].startswith("Steady decode: exactly B requests")


def test_unknown_scenario(tmp_path):
    proc = bench("--scenario", "nope", "--output", str(tmp_path / "out"))
    names = ", ".join(line.split()[0] for line in bench("--list").stdout.splitlines())
    assert "azure-conv" in names and "decode-steady" in names
    assert_usage_error(proc, f"unknown scenario 'nope'; choose from {names}")
    assert not (tmp_path / "out").exists()


def test_num_running_zero():
    proc = bench("--scenario", "decode-steady", "--num-running", "0")
    assert_usage_error(proc, "argument --num-running: must be at least 1, got 0")


def test_unknown_codec():
    proc = bench("--scenario", "decode-steady", "--codecs", "foo")
    assert_usage_error(proc, "argument --codecs: 'foo': choose from msgpack, pickle")


def test_azure_conv_needs_trace(tmp_path):
    proc = bench("--scenario", "azure-conv", "--output", str(tmp_path / "out"))
    assert_usage_error(proc, "scenario azure-conv needs --trace PATH "
                             "(the AzureLLMInferenceTrace_conv.csv file)")
    assert not (tmp_path / "out").exists()


def test_missing_trace_file(tmp_path):
    missing = tmp_path / "nowhere.csv"
    proc = bench("--scenario", "azure-conv", "--trace", str(missing),
                 "--output", str(tmp_path / "out"))
    assert_usage_error(proc, f"no such trace file: {missing}")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("row,problem", [
    ("2023-11-16 18:15:50.9951690,abc,109",
     "ContextTokens is not a non-negative integer: 'abc'"),
    ("2023-11-16 18:15:50.9951690,396",
     "expected 3 fields (TIMESTAMP,ContextTokens,GeneratedTokens), found 2: "
     "'2023-11-16 18:15:50.9951690,396'"),
    ("2023-11-16 18:15:50.9951690,396,0",
     "GeneratedTokens is 0; a request needs at least one output token"),
])
def test_malformed_trace_row(tmp_path, row, problem):
    trace = tmp_path / "trace.csv"
    trace.write_text("\n".join([HEADER, "2023-11-16 18:15:46.6805900,374,44", row,
                                "2023-11-16 18:15:51.2224670,879,55"]) + "\n")
    proc = bench("--scenario", "azure-conv", "--trace", str(trace),
                 "--output", str(tmp_path / "out"))
    assert_usage_error(proc, f"{trace} line 3: {problem}")
    assert not (tmp_path / "out").exists()


ITEM_11_FIELDS = (
    "policy", "codec", "scenario", "model", "num_running", "output_tokens",
    "output_tokens_per_s", "sched_to_runner_payload_bytes_per_step",
    "runner_to_sched_payload_bytes_per_step", "build_ns_per_step", "encode_ns_per_step",
    "decode_ns_per_step", "token_digest",
)


def test_tiny_run(tmp_path):
    out = tmp_path / "run"
    tmp = tmp_path / "tmp"  # the runs' private socket directories go here
    tmp.mkdir()
    proc = bench("--scenario", "decode-steady", "--num-running", "4", "--steps", "30",
                 "--warmup-steps", "5", "--output", str(out), "--quiet",
                 env=dict(os.environ, TMPDIR=str(tmp)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert f"results: {out}" in proc.stdout
    assert list(tmp.iterdir()) == []
    assert runner_processes_under(tmp) == []

    summary = json.loads((out / "summary.json").read_text())
    assert summary["format_version"] == 1
    assert summary["status"] == "complete" and summary["problems"] == []
    meta = summary["metadata"]
    for key in ("git", "packages", "python_version", "cpu_model", "cpu_affinity",
                "start_time_utc", "seed", "cases"):
        assert key in meta, key
    assert {"commit", "dirty"} <= set(meta["git"])
    assert meta["seed"] == 0 and meta["scenario"] == "decode-steady"
    assert all("scheduler" in c and "model" in c for c in meta["cases"])

    cases = summary["cases"]
    ipc_cases = [c for c in cases if c["transport"] == "ipc"]
    assert sorted((c["policy"], c["codec"]) for c in ipc_cases) == [
        ("cached", "msgpack"), ("cached", "pickle"), ("send", "msgpack"), ("send", "pickle")]
    for case in cases:
        for key in ITEM_11_FIELDS:
            assert case.get(key) is not None, (case["case_id"], key)
        assert case["scenario"] == "decode-steady" and case["model"] == "null"
        assert case["num_running"] == 4 and case["complete"] is True
        assert case["output_tokens"] == 4 * case["num_steps"] > 0
    assert len({c["token_digest"] for c in cases}) == 1
    for codec in ("msgpack", "pickle"):
        by = {c["policy"]: c for c in cases if c["codec"] == codec}
        assert (by["cached"]["sched_to_runner_payload_bytes_per_step"]
                < by["send"]["sched_to_runner_payload_bytes_per_step"])

    steps = pd.read_csv(out / "steps.csv")
    requests = pd.read_csv(out / "requests.csv")
    floor = pd.read_csv(out / "floor.csv")
    assert sorted(steps["case_id"].unique()) == sorted(c["case_id"] for c in cases)
    for case in cases:
        mine = steps[steps["case_id"] == case["case_id"]]
        assert len(mine) == case["num_total_steps"]
        assert int(mine["counted"].sum()) == case["num_steps"]
        assert int(mine["warmup"].sum()) == 5
        assert mine["s2r_payload_bytes"].dtype.kind == "i"
        assert not mine["runner_idle_ns"].isna().any()
        floor_steps = len(floor[floor["case_id"] == case["case_id"]])
        assert floor_steps == (case["num_steps"] if case in ipc_cases else 0)
    assert set(requests["case_id"]) == set(steps["case_id"])
    assert (requests.groupby("case_id")["num_output_tokens"].sum().nunique()) == 1


def test_two_runs_at_once(tmp_path):
    """Two invocations side by side: private endpoints, no collision, same digests."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    procs = [subprocess.Popen(
        [sys.executable, "bench.py", "--scenario", "decode-steady", "--num-running", "2",
         "--steps", "40", "--warmup-steps", "2", "--no-floor", "--quiet",
         "--output", str(tmp_path / f"run{i}")],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for i in range(2)]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    digests = [{c["token_digest"] for c in
                json.loads((tmp_path / f"run{i}" / "summary.json").read_text())["cases"]}
               for i in range(2)]
    assert digests[0] == digests[1] and len(digests[0]) == 1
    assert list(tmp.iterdir()) == []
    assert runner_processes_under(tmp) == []
