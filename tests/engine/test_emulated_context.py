"""The emulated model's ``emulated_context_tokens`` column (the KV context each step's
roofline was computed for: the sum of its seq_lens) and the summary's
``emulated_context_tokens_per_request_mean``: exact values from the model's
``step_columns`` and from a small real emulated run, and an edited column's case left
refused on load."""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from analysis_run import run_bench
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsError
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.engine.roofline import causal_pairs
from ipc_bench.engine.scheduler import Scheduler

RUN = ["--scenario", "decode-steady", "--model", "emulated", "--model-preset", "llama-3.2-1b",
       "--num-running", "3", "--steps", "12", "--warmup-steps", "3", "--codecs", "msgpack",
       "--policies", "send", "--no-single-process", "--no-floor"]
CASE = "num_running=3/send/msgpack#0"


def test_each_step_records_the_context_its_roofline_was_computed_for():
    cfg = SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=64, max_model_len=256,
                          num_blocks=64)
    runner = ModelRunner(cfg, ModelConfig(name="emulated", preset="llama-3.2-1b", seed=4),
                         "cached")
    sched = Scheduler(cfg, "cached")
    sched.add_request("a", 0, list(range(7, 47)), 3)   # 40 prompt tokens
    sched.add_request("b", 0, list(range(7, 17)), 3)   # 10 prompt tokens
    while sched.has_unfinished_requests():
        plan = sched.schedule()
        sched.update_from_output(plan, runner.execute_model(sched.build_scheduler_output(plan)))
    columns = runner.model.step_columns()
    # one 50-token prefill (40 + 10 in the cache after it), then two decodes of both
    assert columns["emulated_context_tokens"] == [50, 52, 54]
    roofline = runner.model.roofline
    assert columns["emulated_step_ns"] == [
        round(roofline.ns(50, 2, 50, causal_pairs([40, 10], [40, 10]))),
        round(roofline.ns(2, 2, 52, 52)), round(roofline.ns(2, 2, 54, 54))]


@pytest.fixture(scope="module")
def emulated_run(tmp_path_factory):
    """A real emulated run of one case: 3 running requests, 3 warm-up and 12 counted
    steps."""
    run = tmp_path_factory.mktemp("context") / "run"
    run_bench(run, RUN)
    return run


def _rows(run) -> list[dict[str, str]]:
    with open(run / "steps.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_a_real_emulated_run_records_each_steps_context_and_its_mean_per_request(
        emulated_run):
    rows = _rows(emulated_run)
    # a 489-token prefill of the 3 prompts, then 3 more tokens in the cache each step
    assert [int(r["emulated_context_tokens"]) for r in rows] == list(range(489, 532, 3))
    assert [r["counted"] for r in rows] == ["0"] * 3 + ["1"] * 12
    (case,) = json.loads((emulated_run / "summary.json").read_text())["cases"]
    # counted steps hold 498 to 531 tokens over 3 requests: (498 + 531) / 2 / 3
    assert case["emulated_context_tokens_per_request_mean"] == 171.5
    assert load(emulated_run).cases.set_index("case_id").loc[
        CASE, "emulated_context_tokens_per_request_mean"] == 171.5


def test_an_edited_context_column_leaves_its_case_out_and_none_is_left(emulated_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(emulated_run, run)
    rows = _rows(run)
    for r in rows:
        r["emulated_context_tokens"] = str(int(r["emulated_context_tokens"]) * 2)
    with open(run / "steps.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(ResultsError) as raised:
        load(run)
    assert str(raised.value) == (
        f"no case can be loaded: {run / 'steps.csv'}: case '{CASE}' has an "
        f"emulated_context_tokens_per_request_mean of 343 over its 12 counted rows' "
        f"emulated_context_tokens and num_reqs, but summary.json has "
        f"emulated_context_tokens_per_request_mean 171.5")
