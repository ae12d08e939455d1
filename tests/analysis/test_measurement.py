"""Repetitions, A/A runs, captured messages and the pyperf micro-benchmarks, end to end.

Small real runs (two processes over ZeroMQ) of the decode-steady scenario; pyperf
runs with one worker, one value and one loop per benchmark, so timings are
meaningless here and only structure and values are checked.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from analysis_run import bench_in_process
from ipc_bench.analysis import capture
from ipc_bench.analysis.results import load
from ipc_bench.cli import main
from ipc_bench.engine.workloads import make_req_id
from ipc_bench.harness.scenario import ARM_ORDER

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "30",
         "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor", "--no-single-process",
         "--quiet"]


@pytest.fixture(scope="module")
def paired_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "paired"
    assert main(SMALL + ["--repeat", "2", "--output", str(out)]) == 0
    return out


def test_repeat_gives_paired_comparisons(paired_run):
    summary = json.loads((paired_run / "summary.json").read_text())
    [cmp] = summary["comparisons"]
    assert (cmp["baseline"], cmp["treatment"], cmp["n_pairs"]) == ("send", "cached", 2)
    assert cmp["repetitions"] == [0, 1]
    step = cmp["metrics"]["step_ns_mean"]
    assert step["ratio_ci_low"] <= step["ratio_geomean"] <= step["ratio_ci_high"]
    assert step["significant"] in (True, False)
    s2r = cmp["metrics"]["sched_to_runner_payload_bytes_per_step"]
    assert s2r["ratio_ci_low"] == s2r["ratio_ci_high"] < 1.0  # deterministic bytes
    assert s2r["verdict"].startswith("exact: cached") and s2r["p_value"] is None
    r2s = cmp["metrics"]["runner_to_sched_payload_bytes_per_step"]
    assert r2s["ratio_median"] == 1.0 and r2s["verdict"] == "exact: no difference"


def test_byte_model_section(paired_run):
    summary = json.loads((paired_run / "summary.json").read_text())
    rows = {r["arm"]: r for r in summary["byte_model"]}
    assert set(rows) == {"send", "cached"}
    assert all(r["mismatches"] == 0 and r["messages_checked"] > 0 for r in rows.values())
    send = rows["send"]
    assert send["model_send_minus_cached_bytes_per_request"] == pytest.approx(
        send["measured_send_minus_cached_bytes_per_request"], rel=1e-9)


def test_captured_messages(paired_run):
    caps = capture.load_captures(paired_run)
    assert {(c.arm, c.direction, c.repetition) for c in caps} == {
        (a, d, 0) for a in ("send", "cached") for d in ("s2r", "r2s")}
    steps = {}
    import csv
    with open(paired_run / "steps.csv") as f:
        for row in csv.DictReader(f):
            steps[(row["case_id"], int(row["seq"]))] = row
    for cap in caps:
        n = len(cap.frames)
        assert n == len(cap.seqs) == len(cap.in_loop_encode_ns) == len(cap.in_loop_decode_ns)
        assert n == min(cap.num_counted_steps, capture.MAX_MESSAGES)
        for seq, frame, enc, dec in zip(cap.seqs, cap.frames, cap.in_loop_encode_ns,
                                        cap.in_loop_decode_ns):
            row = steps[(cap.case_id, seq)]
            assert row["counted"] == "1"
            if cap.direction == "s2r":
                assert len(frame) == int(row["s2r_payload_bytes"])
                assert (enc, dec) == (int(row["encode_ns"]), int(row["runner_decode_ns"]))
            else:
                assert len(frame) == int(row["r2s_payload_bytes"])
                assert (enc, dec) == (int(row["runner_encode_ns"]), int(row["decode_ns"]))


def test_aa_run_labels_the_copy(tmp_path):
    out = tmp_path / "aa"
    assert main(SMALL + ["--aa", "--repeat", "2", "--output", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    # each repetition's two arms back to back, in the seeded random order of the grid
    arms = [c["arm"] for c in summary["cases"]]
    assert sorted(arms[:2]) == sorted(arms[2:]) == ["send", "send'"]
    assert [c["repetition"] for c in summary["cases"]] == [0, 0, 1, 1]
    assert summary["metadata"]["arm_order"] == ARM_ORDER
    assert [c["arm"] for c in summary["metadata"]["cases"]] == arms
    assert {c["policy"] for c in summary["cases"]} == {"send"}
    [cmp] = summary["comparisons"]
    assert (cmp["baseline"], cmp["treatment"]) == ("send", "send'")
    assert cmp["metrics"]["sched_to_runner_payload_bytes_per_step"]["verdict"] == (
        "exact: no difference")
    names = sorted(p.name for p in (out / "messages").iterdir())
    assert "num_running=4.send-prime.msgpack.r0.s2r.msgpack" in names
    # the steps of each arm apart without a join: the policy is send in all four
    res = load(out)
    assert set(res.steps["policy"]) == {"send"}
    counts = res.steps.groupby("arm").size().to_dict()
    assert counts == {arm: sum(c["num_total_steps"] for c in summary["cases"]
                               if c["arm"] == arm) for arm in ("send", "send'")}
    assert list(res.by_arm().steps["policy"]) == list(res.steps["arm"])


def test_aa_takes_one_policy(capsys):
    assert main(SMALL + ["--aa", "--policies", "send,cached"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("bench.py: error: --aa compares one policy with itself: give "
                   "--policies send or --policies cached (without --policies it runs "
                   "send and send')")


def test_microbench_writes_pyperf_files(paired_run, tmp_path):
    out = tmp_path / "mb"
    proc = subprocess.run(
        [sys.executable, "bench.py", "microbench", str(paired_run), "--output", str(out),
         "-p", "1", "-n", "1", "-w", "0", "-l", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir()) == ["cached.json", "in_loop_vs_pyperf.json",
                                                     "send.json"]
    import pyperf

    expected = {f"num_running=4/{d}/msgpack/{op}" for d in ("s2r", "r2s")
                for op in ("encode", "decode")}
    captured = {c.arm: len(c.frames) for c in capture.load_captures(paired_run)}
    for arm in ("send", "cached"):
        suite = pyperf.BenchmarkSuite.load(str(out / f"{arm}.json"))
        assert set(suite.get_benchmark_names()) == expected
        for bench in suite.get_benchmarks():
            # one value covers every captured message once per loop
            assert bench.get_metadata()["inner_loops"] == captured[arm] > 1
    rows = json.loads((out / "in_loop_vs_pyperf.json").read_text())
    assert len(rows) == 8 and all(r["pyperf_mean_ns"] > 0 for r in rows)
    for cmd in (["compare_to", str(out / "send.json"), str(out / "cached.json"), "--table"],
                ["stats", str(out / "send.json")]):
        res = subprocess.run([sys.executable, "-m", "pyperf", *cmd], capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 0, res.stderr


def test_microbench_without_messages(tmp_path):
    from ipc_bench.harness.run_folder import FORMAT_VERSION

    # a run folder, but no messages/ (a summary without its format version is refused
    # as report refuses it)
    (tmp_path / "summary.json").write_text(json.dumps({"format_version": FORMAT_VERSION}))
    proc = bench_in_process(["microbench", tmp_path])
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"bench.py microbench: error: no captured messages in {tmp_path / 'messages'}: "
        "the run ended before any case finished; " + RULE)


#: Which cases keep messages (``capture.CAPTURE_RULE``), as said when a run has none.
RULE = ("repetition 0 of each case keeps its counted steps' messages when it finishes, "
        "except the streamed cases of soak")


@pytest.mark.parametrize("summary,why", [
    ({"status": "complete", "metadata": {"scenario": "soak"}, "cases": [{}]},
     "scenario soak streams its cases' records to the run folder and keeps no messages "
     "(the other scenarios keep them for repetition 0 of each case)"),
    ({"status": "incomplete", "metadata": {"scenario": "decode-steady"}, "cases": []},
     "the run was stopped before any case finished; " + RULE),
    ({"status": "failed", "metadata": {"scenario": "decode-steady"}, "cases": []},
     "the run failed before any case finished; " + RULE),
    ({"status": "complete", "metadata": {"scenario": "overhead"}, "cases": [{}, {}]},
     "none of the run's 2 finished cases kept messages; " + RULE),
    # every finished case counted no step (a trace all in the warm-up): said so
    ({"status": "complete", "metadata": {"scenario": "azure-conv"},
      "cases": [{"num_steps": 0}, {"num_steps": 0}]},
     "the run's 2 finished cases counted no step (num_steps 0 in each), and a case keeps "
     "only its counted steps' messages"),
    ({"status": "complete", "metadata": {"scenario": "azure-conv"}, "cases": [{"num_steps": 0}]},
     "the run's 1 finished case counted no step (num_steps 0), and a case keeps "
     "only its counted steps' messages"),
    # one counted steps: the general reason
    ({"status": "complete", "metadata": {"scenario": "azure-conv"},
      "cases": [{"num_steps": 0}, {"num_steps": 3}]},
     "none of the run's 2 finished cases kept messages; " + RULE),
])
def test_microbench_says_why_a_run_has_no_messages(tmp_path, summary, why):
    from ipc_bench.harness.run_folder import FORMAT_VERSION

    (tmp_path / "summary.json").write_text(json.dumps({"format_version": FORMAT_VERSION,
                                                       **summary}))
    proc = bench_in_process(["microbench", tmp_path])
    assert (proc.returncode, proc.stderr) == (
        2, f"bench.py microbench: error: no captured messages in {tmp_path / 'messages'}: "
           f"{why}\n")


def test_sample_indices_and_slugs():
    assert capture.sample_indices(5, 200) == [0, 1, 2, 3, 4]
    assert capture.sample_indices(1000, 5) == [0, 250, 500, 749, 999]
    assert capture.sample_indices(0) == []
    assert capture.case_slug("num_running=256/send'/pickle#3") == \
        "num_running=256.send-prime.pickle.r3"


def test_req_id_formats():
    assert make_req_id(0, 7, "numeric") == "7"
    assert re.fullmatch(r"cmpl-[0-9a-f]{32}-0", make_req_id(0, 7))
    assert re.fullmatch(r"chatcmpl-[0-9a-f]{32}", make_req_id(0, 7, "chatcmpl"))
    assert make_req_id(0, 7, "chatcmpl")[9:] == make_req_id(0, 7)[5:-2]
    with pytest.raises(ValueError, match="unknown request-id format 'uuid'"):
        make_req_id(0, 7, "uuid")


def test_a_folder_without_a_summary_is_not_a_run_folder(tmp_path):
    from ipc_bench.analysis.capture import why_no_captures

    assert why_no_captures(tmp_path) == (
        "not a run folder (no readable summary.json): give the folder a scenario's run wrote")
