"""The emulated model: the roofline step time (ipc_bench.engine.roofline) against a hand
calculation, the GPU figures file, the sleep, and emulated runs end to end on CPU,
marked as emulated and uncalibrated wherever they are shown."""

from __future__ import annotations

import json
import re
import time

import msgspec
import numpy as np
import pytest

from fault_helpers import one_runner_mark
from ipc_bench.cli import main as cli_main
from ipc_bench.engine.config import TORCH_PRESETS, ConfigError, ModelConfig, SchedulerConfig
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.engine.models import EmulatedModel
from ipc_bench.engine.roofline import (GPU_FIGURES_PATH, RooflineStep, causal_pairs, load_gpu_figures,
                                       sleep_until_ns)
from ipc_bench.engine.scheduler import Scheduler

H200 = load_gpu_figures("h200")


def test_the_gpu_figures_file_says_where_each_figure_comes_from():
    assert H200.name == "NVIDIA H200"
    assert (H200.memory_bandwidth_bytes_per_s, H200.bf16_flops_per_s) == (4.3e12, 7.9e14)
    assert H200.memory_bytes == 143_771 * 2**20
    assert (H200.efficiency, H200.fixed_step_ns, H200.calibrated) == (1.0, 0, False)
    assert H200.status == "uncalibrated"
    assert H200.label("llama-3.2-1b") == (
        "emulated llama-3.2-1b on NVIDIA H200 (roofline, uncalibrated)")
    for key in ("memory_bandwidth_bytes_per_s", "bf16_flops_per_s", "memory_bytes",
                "efficiency", "fixed_step_ns"):
        assert H200.provenance[key]


def test_bad_gpu_figures_are_refused_in_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"^cannot read GPU 'a100' from .*gpu_figures.json: "
                                          r"KeyError"):
        load_gpu_figures("a100")
    raw = json.loads(GPU_FIGURES_PATH.read_text())
    raw["gpus"]["h200"]["efficiency"] = 1.5
    path = tmp_path / "figures.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match="efficiency in \\(0, 1\\]"):
        load_gpu_figures("h200", path)


# Llama 3.2 1B (16 layers, hidden 2048, 32 x 64 query and 8 x 64 KV dims, MLP 8192,
# vocabulary 128,256) on 4.3 TB/s and 790 TFLOP/s, each request with 1,024 tokens in
# its cache, one decode token each; bf16, 2 bytes an element. Per op: max(bytes / BW,
# FLOPs / rate).
#
# 1 running (T = R = 1), every op memory-bound:
#   QKV     2 (2048 x 3072 + 2048 + 3072)  = 12,593,152 B ->   2.928640 us
#   O       2 (2048 x 2048 + 2048 + 2048)  =  8,396,800 B ->   1.952744 us
#   gate+up 2 (2048 x 16384 + 2048 + 16384) = 67,145,728 B ->  15.615286 us
#   down    2 (8192 x 2048 + 8192 + 2048)  = 33,574,912 B ->   7.808119 us
#   attention 2 x 2 x 512 x 1024            =  2,097,152 B ->   0.487710 us
#   per layer 28.792499 us, x 16 = 460.679981 us
#   LM head 2 (2048 x 128256 + 2048 + 128256) = 525,597,184 B -> 122.231903 us
#   step 582.911884 us
# 256 running (T = R = 256): the matmuls are compute-bound, attention memory-bound:
#   QKV     2 x 256 x 2048 x 3072 = 3,221,225,472 FLOP ->   4.077501 us
#   O       2 x 256 x 2048 x 2048 = 2,147,483,648 FLOP ->   2.718334 us
#   gate+up 2 x 256 x 2048 x 16384 = 17,179,869,184 FLOP -> 21.746670 us
#   down    2 x 256 x 8192 x 2048 = 8,589,934,592 FLOP ->  10.873335 us
#   attention 2 x 2 x 512 x 256 x 1024 = 536,870,912 B  -> 124.853700 us
#   per layer 164.269540 us, x 16 = 2,628.312643 us
#   LM head 2 x 256 x 2048 x 128256 = 134,486,163,456 FLOP -> 170.235650 us
#   step 2,798.548293 us
@pytest.mark.parametrize("running, step_ns", [(1, 582_911.884), (256, 2_798_548.293)])
def test_roofline_step_of_llama_3_2_1b_matches_the_hand_calculation(running, step_ns):
    step = RooflineStep(TORCH_PRESETS["llama-3.2-1b"], 128_256, H200)
    got = step.ns(num_tokens=running, num_reqs=running, context_tokens=1024 * running,
                  attention_pairs=1024 * running)
    assert got == pytest.approx(step_ns, abs=0.01)
    # the same from a step's StepInputs arrays
    qsl = np.arange(running + 1, dtype=np.int64)
    assert step.for_step(qsl, np.full(running, 1024, dtype=np.int64)) == round(step_ns)


def test_roofline_counts_prefill_chunks_and_calibration():
    """A 100-token prefill chunk next to a decode: attention FLOPs over the (query, key)
    pairs the causal mask keeps; efficiency scales both rates, fixed time adds to every
    step."""
    step = RooflineStep(TORCH_PRESETS["llama-3.2-1b"], 128_256, H200)
    qsl = np.array([0, 100, 101])
    lens = np.array([100, 500])
    # the chunk's token i sees i + 1 keys: 100 x 101 / 2 = 5,050; the decode sees 500
    assert causal_pairs(np.diff(qsl), lens) == 5_550
    assert step.for_step(qsl, lens) == round(step.ns(101, 2, 600, 5_550))
    # a chunk after 300 computed tokens: each of its 100 sees those 300 too
    assert causal_pairs(np.array([100]), np.array([400])) == 100 * 300 + 5_050
    half = RooflineStep(TORCH_PRESETS["llama-3.2-1b"], 128_256,
                        msgspec.structs.replace(H200, efficiency=0.5, fixed_step_ns=30_000))
    assert half.ns(1, 1, 1024, 1024) == pytest.approx(2 * 582_911.884 + 30_000, abs=0.02)
    assert step.for_step(np.array([0]), np.array([], dtype=np.int64)) == 0


# With 4 drafts a request (k = 4) vLLM computes logits at 1 + k positions of each:
# the LM head's rows are R (1 + k), not R. At 256 running, 1,280 rows: 2 x 1,280 x 2048 x
# 128,256 = 672,430,817,280 FLOP -> 851.18 us, compute-bound (170.24 us at 256 rows).
def test_the_lm_head_counts_every_position_that_gets_logits():
    step = RooflineStep(TORCH_PRESETS["llama-3.2-1b"], 128_256, H200)
    qsl = np.arange(0, 5 * 256 + 1, 5, dtype=np.int64)
    lens = np.full(256, 1024, dtype=np.int64)
    one = step.breakdown(*RooflineStep.step_counts(qsl, lens))["lm_head"]
    five = step.breakdown(*RooflineStep.step_counts(qsl, lens, 1280))["lm_head"]
    assert (round(one, 2), round(five, 2)) == (170_235.65, 851_178.25)
    assert step.for_step(qsl, lens, 1280) - step.for_step(qsl, lens) == round(
        five - one)


def test_the_emulated_model_times_its_lm_head_over_the_drafts_logits_too():
    cfg = SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=64, max_model_len=64,
                          block_size=4, num_blocks=64, num_spec_tokens=2)
    runner = ModelRunner(cfg, ModelConfig(name="emulated", preset="tiny", seed=1,
                                          spec_acceptance=1.0), "cached")
    model = runner.model
    seen = []
    timed = model.roofline.for_step
    model.roofline.for_step = lambda qsl, lens, num_logits: (
        seen.append((len(lens), num_logits, so.scheduled_spec_decode_tokens))
        or timed(qsl, lens, num_logits))
    sched = Scheduler(cfg, "cached")
    for i in range(3):
        sched.add_request(f"r{i}", 0, list(range(5, 13 + i)), 12)
    while sched.has_unfinished_requests():
        plan = sched.schedule()
        so = sched.build_scheduler_output(plan)
        sched.update_from_output(plan, runner.execute_model(so))
    # one logit row a request, and one more for each draft it verifies
    assert all(n == reqs + sum(map(len, drafts.values())) for reqs, n, drafts in seen)
    assert max(n - reqs for reqs, n, _ in seen) == 6  # 3 requests, 2 drafts each
    assert len(model.step_columns()["emulated_step_ns"]) == len(seen)


def test_sleep_until_never_returns_early():
    late = []
    for target_ns in (200_000, 1_000_000, 3_000_000):
        deadline = time.perf_counter_ns() + target_ns
        late.append(sleep_until_ns(deadline))
        assert time.perf_counter_ns() >= deadline
    assert min(late) >= 0
    assert sleep_until_ns(time.perf_counter_ns() - 1000) >= 1000  # already past: returns


def test_emulated_model_sleeps_its_roofline_step_and_samples_as_null():
    cfg = SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=64, max_model_len=256,
                          num_blocks=64)
    emulated = ModelRunner(cfg, ModelConfig(name="emulated", preset="llama-3.1-8b", seed=4),
                           "cached")
    null = ModelRunner(cfg, ModelConfig(seed=4), "cached")
    assert isinstance(emulated.model, EmulatedModel)
    assert emulated.model.device == (
        "emulated llama-3.1-8b on NVIDIA H200 (roofline, uncalibrated)")
    sched = Scheduler(cfg, "cached")
    sched.add_request("a", 0, list(range(7, 47)), 4)
    so = sched.build_scheduler_output(sched.schedule())
    for runner in (emulated, null):
        runner.update_states(so)
    inputs = emulated.prepare_inputs(so)
    t0 = time.perf_counter_ns()
    tokens = emulated.sample(inputs)
    took = time.perf_counter_ns() - t0
    (want,) = emulated.model.step_columns()["emulated_step_ns"]
    # a 40-token prefill of Llama 3.1 8B reads its layers' and LM head's weights,
    # 15.0 GB (the embedding is a lookup), at 4.3 TB/s: 3.5 ms
    assert want == emulated.model.roofline.for_step(np.array([0, 40]), np.array([40]))
    assert 3_490_000 < want < 3_600_000
    assert took >= want
    assert tokens == null.sample(null.prepare_inputs(so))


def test_an_emulated_run_is_marked_everywhere(tmp_path, capsys):
    """Both policies and the single-process baseline give equal token streams (the CLI
    exits 1 otherwise); summary.json and the printed table say emulated, uncalibrated."""
    out = tmp_path / "run"
    assert cli_main(["--scenario", "decode-steady", "--model", "emulated", "--model-preset",
                     "llama-3.2-1b", "--num-running", "3", "--steps", "12", "--warmup-steps",
                     "3", "--codecs", "msgpack", "--no-floor",
                     "--output", str(out)]) == 0
    captured = capsys.readouterr()
    text = captured.out
    lines = [x for x in captured.err.splitlines() if x.startswith("[")]
    assert len(lines) == 4 and all(
        re.fullmatch(r"\[\d/4\] num_running=3/\S+: 12 steps, [\d,]+ tok/s emulated "
                     r"\(uncalibrated\) \([\d.]+ s for the whole case\)", x) for x in lines), lines
    assert "device=emulated llama-3.2-1b on NVIDIA H200 (roofline, uncalibrated)" in text
    assert ("EMULATED: 4 of 4 cases slept a roofline step time (llama-3.2-1b on NVIDIA "
            "H200 figures UNCALIBRATED); no GPU computed their steps; uncalibrated figures "
            "take every op at the assumed rates (not measured here; a kernel may exceed "
            "them by the datasheet peaks' margin at most, 1.12x bandwidth and 1.25x bf16, "
            "and the ops left out add time) with no per-step launch or host time, so each "
            "step's model time is the "
            "time at those rates, not a bound on that GPU's: a real GPU's longer model time "
            "alone would make send's share of a step smaller, a shorter one larger; and "
            "send's µs and the rest of each step, the control plane, are this machine's "
            "CPU's, so the share on a GPU host also depends on that host's CPU") in text
    cases = json.loads((out / "summary.json").read_text())["cases"]
    assert [(c["policy"], c["codec"]) for c in cases] == [
        ("send", "msgpack"), ("cached", "msgpack"), ("send", "none"), ("cached", "none")]
    assert len({c["token_digest"] for c in cases}) == 1
    for c in cases:
        assert (c["model"], c["emulated"], c["emulated_gpu"], c["gpu_figures"]) == (
            "emulated", True, "NVIDIA H200", "uncalibrated")
        # the figures it slept on, kept with the run
        assert (c["emulated_memory_bandwidth_bytes_per_s"], c["emulated_bf16_flops_per_s"],
                c["emulated_efficiency"], c["emulated_fixed_step_ns"]) == (4.3e12, 7.9e14,
                                                                            1.0, 0)
        # 3 decoding requests on Llama 3.2 1B: bound by reading 2.47 GB of layer and
        # LM-head weights at 4.3 TB/s (574.7 us), plus activations and short contexts
        assert 574_700 < c["emulated_step_ns_per_step"] < 600_000
        assert c["emulated_forward_excess_ns_per_step"] >= 0  # the sleep is never early
        assert "gpu_busy_ns_per_step" not in c
    # the report says so too, before its findings
    report = tmp_path / "report"
    assert cli_main(["report", str(out), "--output", str(report)]) == 0
    md = (report / "report.md").read_text()
    assert "EMULATED: 4 of 4 cases slept a roofline step time (llama-3.2-1b on NVIDIA H200 figures " \
           "UNCALIBRATED)" in md
    assert md.index("EMULATED") < md.index("## Findings")
    # the findings' shares name the step they are of as emulated
    findings = md.split("## Findings", 1)[1].split("\n## ", 1)[0]
    assert ("median step (measured here: an emulated model time at assumed GPU rates, "
            "uncalibrated, for a mean ") in findings
    # the terminal gives send's share with the report's figures and words, marked emulated
    [term] = [x for x in text.splitlines() if x.startswith("  send's share [")]
    head, said = term.split(": ", 1)
    assert head == "  send's share [num_running=3] msgpack, emulated model"
    [finding] = [x for x in findings.splitlines()
                 if x.startswith(f"- At 3 running requests (msgpack{one_runner_mark()}), "
                                 "send's SchedulerOutput")]
    assert said == finding.removeprefix(f"- At 3 running requests (msgpack{one_runner_mark()}), ")
    lines = md.splitlines()
    summary = lines[lines.index("## Findings"):]
    summary = summary[:next(i for i, x in enumerate(summary) if x.startswith("- "))]
    [row] = [x for x in summary if x.startswith("| num_running=3 | msgpack, emulated")]
    cells = row.strip("| ").split(" | ")[5:7]  # the path's and the whole step's
    # one repetition: each share cell says so, as the tok/s cell does
    assert all(c.endswith(" (one repetition, no interval)") for c in cells), cells
    path_cell, whole_cell = (c.removesuffix(" (one repetition, no interval)") for c in cells)
    assert f", {path_cell.lstrip('+-')} of cached's " in said
    assert f" {whole_cell.lstrip('+-')} longer than cached's" in said or \
        f" {whole_cell.lstrip('+-')} shorter than cached's" in said
    # and every figure says so under its title
    from ipc_bench.analysis.results import load
    from ipc_bench.report import plots

    res = load(out)
    for draw in (plots.throughput, plots.step_breakdown, plots.bytes_per_step):
        fig = draw(res)
        assert ("EMULATED steps: llama-3.2-1b on NVIDIA H200 roofline, UNCALIBRATED (at "
                "assumed rates); no GPU computed them") in fig.get_suptitle().replace("\n", " "), draw.__name__


def test_a_multi_run_report_says_which_run_is_emulated_before_its_figures(tmp_path):
    """Beside a run of the null model, an emulated run is named as such at the top of
    the comparison, before the side-by-side tables and figures that show its times,
    its cases counted against its own (2 of 2), not every run's (2 of 6), as its own
    section counts them; the figure of all runs names it the same way."""
    common = ["--scenario", "decode-steady", "--steps", "12", "--warmup-steps", "3",
              "--codecs", "msgpack", "--no-floor", "--no-single-process"]
    assert cli_main(common + ["--num-running", "3,5", "--output", str(tmp_path / "plain")]) == 0
    assert cli_main(common + ["--num-running", "3", "--model", "emulated", "--model-preset",
                              "llama-3.2-1b", "--output", str(tmp_path / "emu")]) == 0
    assert cli_main(["report", str(tmp_path / "plain"), str(tmp_path / "emu"),
                     "--output", str(tmp_path / "rep"), "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    top = md.split("\n## ", 1)[0]
    notes = [x for x in top.splitlines() if x.startswith("> **Note:**")]
    assert len(notes) == 1
    assert notes[0].startswith(
        "> **Note:** In run `emu`: EMULATED: 2 of 2 cases slept a roofline step time "
        "(llama-3.2-1b on NVIDIA H200 figures UNCALIBRATED); no GPU computed their steps")
    section = md.split("\n## Run emu ", 1)[1]
    assert ("> **Note:** EMULATED: 2 of 2 cases slept a roofline step time (llama-3.2-1b on "
            "NVIDIA H200 figures UNCALIBRATED)") in section
    assert notes[0].removeprefix("> **Note:** In run `emu`: ") in section
    from ipc_bench.analysis.results import load
    from ipc_bench.report import plots

    fig = plots.throughput(load([tmp_path / "plain", tmp_path / "emu"]))
    assert fig.get_suptitle().replace("\n", " ").startswith(
        "EMULATED steps of run emu: llama-3.2-1b on NVIDIA H200 roofline, UNCALIBRATED (at "
        "assumed rates); no GPU computed them")


def test_a_figure_of_several_runs_counts_each_runs_emulated_cases_against_its_own():
    from ipc_bench.report.tables import emulated_mark

    emu = dict(emulated=True, emulated_gpu="NVIDIA H200", gpu_figures="calibrated")
    cases = ([dict(run_id="plain")] * 6 + [dict(emu, run_id="half")] * 2
             + [dict(run_id="half")] * 2 + [dict(emu, run_id="emu")] * 3)
    assert emulated_mark(cases) == ("EMULATED steps of run half (2 of 4 cases) and run emu: "
                                    "NVIDIA H200 roofline, CALIBRATED; no GPU computed them")
    # one run: its own count, as before
    assert emulated_mark(cases[6:10]) == ("EMULATED steps of 2 of 4 cases: NVIDIA H200 "
                                          "roofline, CALIBRATED; no GPU computed them")
    assert emulated_mark(cases[10:]) == ("EMULATED steps: NVIDIA H200 roofline, CALIBRATED; "
                                         "no GPU computed them")


def test_the_terminal_names_the_repetition_of_each_emulated_step():
    from ipc_bench.report import tables

    def case(rep):
        return dict(emulated=True, emulated_gpu="NVIDIA H200", gpu_figures="uncalibrated",
                    policy="send", arm="send", codec="msgpack", repetition=rep,
                    emulated_step_ns_per_step=604_000.0 + rep * 1_000)
    assert tables.model_time_lines([case(0), case(1)])[0].endswith(
        "; mean emulated step ms: send/msgpack#0 0.604, send/msgpack#1 0.605")
    assert tables.model_time_lines([case(0)])[0].endswith(
        "; mean emulated step ms: send/msgpack 0.604")


def _emulated_pair(policy, rep, step_ns, s2r_ns, emulated=True):
    return dict(emulated=emulated, gpu_figures="uncalibrated", complete=True,
                scenario="decode-steady", workload="num_running=64", codec="msgpack",
                transport="ipc", model="emulated", policy=policy, arm=policy, repetition=rep,
                step_ns_median=step_ns, s2r_build_encode_decode_ns_median=s2r_ns)


def test_the_terminal_gives_send_share_of_an_emulated_step():
    """send's share under an emulated table: the mean differences (10 µs, 50 µs) over
    cached's mean median step (960 µs), with the ratio estimator's t-interval."""
    from ipc_bench.report import tables

    cases = [_emulated_pair("send", 0, 1_000_000, 30_000),
             _emulated_pair("cached", 0, 950_000, 20_000),
             _emulated_pair("send", 1, 1_020_000, 32_000),
             _emulated_pair("cached", 1, 970_000, 22_000)]
    assert tables.emulated_share_lines(cases) == [
        "  send's share [num_running=64] msgpack, emulated model: send's SchedulerOutput "
        "path (build + encode + decode, medians) costs 10.00 µs per step more than "
        "cached's, 1.04 % of cached's step, 960.0 µs as the mean of its 2 repetitions' "
        "median steps (measured here: an emulated model time at assumed GPU rates, "
        "uncalibrated, and this machine's control plane) (send - cached: [+0.90, +1.18] %, "
        "95 % Student-t interval); send's whole step, 1,010.0 µs as the same mean, is "
        "5.21 % longer than cached's (send - cached: [+4.52, +5.90] %, 95 % Student-t "
        "interval) (noisier; means over 2 repetitions of each case's figures, not the "
        "geometric means over repetitions that `bench.py`'s comparison block prints as "
        "`step median`)."]
    assert tables.emulated_share_lines(cases[:2]) == [
        "  send's share [num_running=64] msgpack, emulated model: send's SchedulerOutput "
        "path (build + encode + decode, medians) costs 10.00 µs per step more than "
        "cached's, 1.05 % of cached's 950.0 µs median step (measured here: an emulated "
        "model time at assumed GPU rates, uncalibrated, and this machine's control "
        "plane); send's whole median step, 1,000.0 µs, is 5.26 % longer than cached's "
        "(noisier; one repetition, no interval)."]
    # not the null model's bare control plane, nor a case without its pair
    assert tables.emulated_share_lines([dict(c, emulated=False) for c in cases]) == []
    assert tables.emulated_share_lines(cases[:1]) == []


def test_without_a_preset_the_emulated_model_takes_a_public_shape():
    # the torch model's default (cpu, a 2-layer test shape) emulated almost the null
    # model's step, labelled "on NVIDIA H200": the emulated model takes llama-3.2-1b
    from ipc_bench.harness.scenario import ScenarioOptions

    emulated = ScenarioOptions(model="emulated").model_config()
    assert (emulated.preset, emulated.vocab_size) == ("llama-3.2-1b", 128_256)
    assert ScenarioOptions(model="torch").model_config().preset == "cpu"
    assert ScenarioOptions(model="emulated", model_preset="cpu").model_config().preset == "cpu"
    assert EmulatedModel(emulated, SchedulerConfig()).device == (
        "emulated llama-3.2-1b on NVIDIA H200 (roofline, uncalibrated)")
