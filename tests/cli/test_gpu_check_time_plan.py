"""``scripts/gpu_check.py``'s time plan on CUDA: the smoke stage first, with gather
(nothing compiled, so a broken harness fails fast), then stage 0, then the stages by
what they deliver; the issue's 300 s as the default budget; one bucket per run (stages
2 and 4 split by running count), one KV-cache size for every 1B run, so that their
compiled kernels are shared through TorchInductor's on-disk cache; the Azure replay
sized for its 100 requests; an A/A pair beside each of stage 2's comparisons; a
stage folder whose preset name holds dots counted as an earlier check's."""

from __future__ import annotations

import pytest

from ipc_bench.cli.options import build_parser
from ipc_bench.harness.scenario import steady_num_blocks
from script_module import ROOT, load_script

gpu_check = load_script("gpu_check")


def _option(args, name):
    return args[args.index(name) + 1] if name in args else None


def _fake_run(monkeypatch, tmp_path, attention="flex"):
    """Stage 0 and the stages recorded, not run: ``[(name, --attention,
    --cuda-graph-sizes, --num-blocks)]`` in the order they ran."""
    ran = []
    monkeypatch.setattr(gpu_check, "run_decode_step", lambda cuda, out, t: (
        ran.append(("decode-step", None, None, None)), (attention, []))[1])

    def fake_stage(stage, base, out, timeout_s):
        args = stage.args + base
        ran.append((stage.name, _option(args, "--attention"),
                    _option(args, "--cuda-graph-sizes"), _option(args, "--num-blocks")))
        assert out.name == f"{stage.number}-{stage.name}"
        return 0, "passed"

    monkeypatch.setattr(gpu_check, "run_stage", fake_stage)
    monkeypatch.setattr(gpu_check, "_preflight", lambda device: (True, 0))
    trace = tmp_path / "conv.csv"  # one request of 40 steps, past the warm-up
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                     "2023-11-16 18:15:46.6805900,30,40\n")
    return ran, trace


def test_the_smoke_stage_runs_first_with_gather_then_stage_0_then_by_value(
        monkeypatch, tmp_path):
    ran, trace = _fake_run(monkeypatch, tmp_path)
    assert gpu_check.main(["--output", str(tmp_path / "out"), "--trace", str(trace)]) == 0
    small = str(gpu_check.SMALL_NUM_BLOCKS)
    assert ran == [
        ("smoke", "gather", None, None),
        ("decode-step", None, None, None),
        ("llama-3.2-1b-64", "flex", "64", small),
        ("llama-3.2-1b-256", "flex", "256", small),
        ("aa-64", "flex", "64", small),
        ("aa-256", "flex", "256", small),
        ("llama-3.1-8b", "flex", "64", None),
        ("azure-conv", "flex", "64", "4096"),
        ("async", "flex", "64", small)]


def test_the_default_budget_is_the_issues_five_minutes():
    assert gpu_check.BUDGET_S == 300.0
    assert gpu_check.build_parser().parse_args([]).budget_s == 300.0


def test_every_1b_run_shares_the_cache_size_256_running_get_by_default():
    """The 64-running runs of stages 2, 4 and 6 compile the same kernel (bucket 64, the
    same cache): one cold compile, then the on-disk cache's."""
    assert gpu_check.SMALL_NUM_BLOCKS == steady_num_blocks(256) == 65792
    for stage in gpu_check.build_stages(True, "/trace.csv"):
        if _option(stage.args, "--model-preset") == "llama-3.2-1b" and stage.number in (2, 4, 6):
            assert _option(stage.args, "--num-blocks") == "65792", stage.name
            assert stage.buckets == _option(stage.args, "--num-running"), stage.name


def test_the_replay_is_sized_for_its_100_requests_and_bench_takes_it():
    """At most 47 of the first 100 requests run at once (100 ms of trace time a step):
    at most 64 running, one bucket of 64, 4,096 blocks for the at most about 2,770 the
    requests in flight hold."""
    replay = next(s for s in gpu_check.build_stages(True, "/trace.csv")
                  if s.name == "azure-conv")
    args = build_parser().parse_args(replay.args + gpu_check.base_args(True)
                                     + ["--attention", "flex", "--cuda-graph-sizes",
                                        replay.buckets])
    assert (args.max_num_seqs, args.num_blocks, list(args.cuda_graph_sizes),
            args.max_requests) == (64, 4096, [64], 100)


@pytest.mark.parametrize("cuda", [True, False])
def test_the_plan_weights_are_the_stages_estimated_seconds(cuda):
    """Stage 0 shares the budget on CUDA only (on the CPU it compiles flex for a few
    steps, its own limit alone); the split runs share their stage's weight."""
    plan = gpu_check.run_plan(cuda, "/trace.csv", None)
    weights = {}
    for stage in plan:
        weights[stage.number] = weights.get(stage.number, 0) + stage.weight
    assert [s.number for s in plan][:2] == [1, 0]
    assert weights == {1: 0, 0: 100.0 if cuda else 0, 2: 154.0, 3: 95.0, 4: 40.0,
                       5: 48.0, 6: 20.0}


def test_the_docs_give_the_time_plan_and_the_default_budget():
    text = " ".join((ROOT / "docs" / "models-and-gpu.md").read_text().split())
    total = 20 + sum(gpu_check.STAGE_WEIGHTS.values())
    assert total == 477
    assert "### The time plan" in (ROOT / "docs" / "models-and-gpu.md").read_text()
    assert f"about {total:.0f} s" in text
    assert "within a budget of 300 s" in text


def test_an_output_holding_a_cuda_stage_folder_is_refused(tmp_path):
    """The CUDA folders' preset names hold dots (``2-llama-3.2-1b-64``,
    ``3-llama-3.1-8b.log``): they were read up to the first dot and went unnoticed."""
    for name in ("2-llama-3.2-1b-64", "3-llama-3.1-8b.log"):
        out = tmp_path / name.replace(".", "_")
        out.mkdir()
        (out / name).mkdir() if "log" not in name else (out / name).write_text("")
        assert gpu_check.stage_entries(out) == [name]
