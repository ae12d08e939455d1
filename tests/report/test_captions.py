"""Figure captions are built from what each figure drew (``plots.drawn``): a run
without both policies gets no cached/send panel in its caption, an ``--aa`` run's
captions name send and send', and the bytes figure's box gives send's extra bytes as a
share of send's, the base of the finding."""

from __future__ import annotations

import re

import pytest

from analysis_run import run_bench
from fault_helpers import one_runner_mark
from ipc_bench import cli
from ipc_bench.analysis import stats
from ipc_bench.analysis.results import load
from ipc_bench.report import blocks, plots
from ipc_bench.report.findings import findings

ARGS = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "30",
        "--warmup-steps", "5", "--codecs", "msgpack", "--no-single-process", "--no-floor"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    run_bench(base / "aa", ARGS + ["--aa"])
    (base / "both.stdout").write_text(run_bench(base / "both", ARGS + ["--repeat", "2"]))
    return base


def _captions(run, out) -> dict[str, str]:
    """Figure file name -> the caption under it in the report's Markdown."""
    assert cli.main(["report", str(run), "--output", str(out)]) == 0
    md = (out / "report.md").read_text().split("\n\n")
    return {m.group(1): md[i + 1] for i, para in enumerate(md)
            for m in [re.match(r"!\[.*\]\((\w+)\.png\)$", para)] if m}


def test_an_aa_runs_captions_name_its_arms_and_no_cached_panel(runs, tmp_path, capsys):
    captions = _captions(runs / "aa", tmp_path / "rep")
    copy = " `send'` is `send` run a second time (A/A: one policy against a copy of itself)."
    assert captions["bytes_per_step"] == (
        "Payload bytes per step in each direction against the number of running requests "
        "(mean over counted steps, repetitions pooled), one line per arm and codec: "
        "`send` and `send'` "
        "(msgpack). Where an arm's bytes equal `send`'s the lines coincide: `send`'s small "
        "filled dots lie inside the other arm's larger hollow markers, and the panel's note "
        "names the codecs and counts." + copy)
    assert captions["throughput"] == (
        "Output tokens/s of every case (tokens sampled in counted steps over their busy "
        "wall time), one point per arm and codec: `send` and `send'`; one repetition per "
        "case, so no error bars." + copy)
    assert captions["codec_time_per_step"] == (
        "Serializer time per step (mean over counted steps, repetitions pooled), both "
        "directions summed (the scheduler's SchedulerOutput "
        "and the runner's ModelRunnerOutput), one panel per codec (msgpack), one line per "
        "arm: `send` and `send'`. `send`'s markers are small and filled, drawn over the "
        "other arms' larger hollow ones, so where an arm's time equals `send`'s both "
        "show." + copy)
    assert not any("cached" in c for c in captions.values())


def test_a_run_of_both_policies_gets_the_ratio_panel_and_the_box(runs, tmp_path):
    captions = _captions(runs / "both", tmp_path / "rep")
    text = captions["throughput"]
    assert text.startswith(
        "Output tokens/s of every case (tokens sampled in counted steps over their busy "
        "wall time), one point per arm and codec: `send` and `cached`; each point is the "
        "geometric mean over a case's repetitions (the pair table's and the comparison "
        "block's arms, whose quotient is the cached/send panel's ratio); error bars are "
        "95 % Student-t intervals of the log tokens/s. Right: cached/send, paired by "
        "repetition: geometric mean of the per-repetition ratios [95 % Student-t "
        "interval] (above 1: cached faster).")
    # two repetitions give wide t intervals: the ends the bounded axes cut, if any, are
    # counted in one sentence that matches the figure
    drawn = plots.drawn(plots.throughput(load(runs / "both")))
    cut = drawn["cut"]
    assert (" The tokens/s axis is bounded to its points; " in text) == bool(cut)
    if cut:
        assert f"; {cut} interval end" in text and text.endswith(
            "where an open arrow on the bar points the way the interval goes on.")
    assert captions["bytes_per_step"].endswith(
        "The box gives send - cached at 4 running, as a share of send's bytes.")


def test_the_bytes_box_and_the_finding_share_one_base(runs):
    res = load(runs / "both")
    fig = plots.bytes_per_step(res)
    box = fig.axes[0].texts[0].get_text().splitlines()
    steps = res.steps[res.steps["counted"]]
    send = steps[steps["policy"] == "send"]["s2r_payload_bytes"].mean()
    cached = steps[steps["policy"] == "cached"]["s2r_payload_bytes"].mean()
    share = 100 * (send - cached) / send
    assert box == ["at 4 running:",
                   f"msgpack: send - cached {send - cached:+,.0f} B ({share:.1f} % of send's "
                   "bytes)"]
    cases = res.cases
    send_b = cases[cases["policy"] == "send"]["sched_to_runner_payload_bytes_per_step"].mean()
    cached_b = cases[cases["policy"] == "cached"]["sched_to_runner_payload_bytes_per_step"].mean()
    first = findings(res)[0]
    assert (f"cached sends {send_b - cached_b:,.0f} fewer bytes per step to the runner "
            f"({100 * (send_b - cached_b) / send_b:.1f} % of send's scheduler → runner "
            "payload)") in first


def test_captions_of_figures_drawn_without_some_parts():
    send_cost = dict(series=[("send", "msgpack")], step="median", s2r=False, models=["null"])
    assert blocks.caption("send_cost_share", send_cost) == (
        "What `send` costs as a share of the step, against the step time (cached's "
        "median step, its mean over repetitions) and the running requests: the findings' "
        "share, mean(send - cached) / mean(cached's median step) over repetitions, each "
        "difference send's figure less cached's in the same repetition (bars: 95 % "
        "Student-t interval, which carries the noise of cached's step as well as the "
        "difference's); filled markers on thick lines: the whole median step. The grey "
        "dotted line marks 1 %. The null "
        "model's steps are the bare control plane's, the worst case for send's share.")
    assert blocks.caption("send_cost_share", dict(send_cost, s2r=True, s2r_median=True,
                                                  models=["fixed-step"])) == (
        "What `send` costs as a share of the step, against the step time (cached's "
        "median step, its mean over repetitions) and the running requests: the findings' "
        "share, mean(send - cached) / mean(cached's median step) over repetitions, each "
        "difference send's figure less cached's in the same repetition (bars: 95 % "
        "Student-t interval, which carries the noise of cached's step as well as the "
        "difference's); filled markers on thick lines: the whole median step, hollow "
        "markers on thin lines: the SchedulerOutput's build + encode + decode alone "
        "(per-step medians). The grey dotted line marks 1 %. The "
        "fixed-step cases spread the step-time axis.")
    assert blocks.caption("latency_cdfs", dict(series=[("send", "msgpack")],
                                               panels=["ttft"])) == (
        "TTFT (from each request's intended arrival, so queueing counts) distribution per "
        "arm and codec (`send`), from a timed replay.")
    assert blocks.caption("tp_per_step", dict(series=[], replicated=False)).endswith(
        "No case ran `--codecs replicated`, so the right panel is empty.")
    assert blocks.caption("tp_saving", dict(series=[], withheld=2)).endswith(
        "The times of 2 cases are not drawn: N ranks need N + 2 free cores (the title says "
        "how many the run's machine had); their bytes are.")
    assert blocks.caption("throughput", dict(series=[("send", "msgpack"),
                                                     ("cached", "msgpack")],
                                             panels=["tokens/s", "cached/send"],
                                             repeated=False, method="t")) == (
        "Output tokens/s of every case (tokens sampled in counted steps over their busy "
        "wall time), one point per arm and codec: `send` and `cached`; one repetition per "
        "case, so no error bars. Right: cached/send, paired by repetition: geometric mean "
        "of the per-repetition ratios; one pair each, so no interval (above 1: cached "
        "faster).")
    assert blocks.caption("throughput", dict(series=[("cached", "msgpack"),
                                                     ("cached+async", "msgpack")],
                                             panels=["tokens/s"], repeated=True)) == (
        "Output tokens/s of every case (tokens sampled in counted steps over their busy "
        "wall time), one point per arm and codec: `cached` and `cached+async`; each point "
        "is the geometric mean over a case's repetitions; error bars are 95 % Student-t "
        "intervals of the log tokens/s. `cached+async` is `cached` with async "
        "scheduling.")


def test_the_terminal_and_the_report_give_one_ratio_labelled_one_way(runs, tmp_path):
    """The terminal's cached/send line, the comparison block and the report's pair table
    give the same paired ratio and interval, under the same name."""
    import json

    phrase = ("paired by repetition: geometric mean of the per-repetition ratios "
              "[95 % Student-t interval]")
    comparisons = json.loads((runs / "both" / "summary.json").read_text())["comparisons"]
    tput = comparisons[0]["metrics"]["output_tokens_per_s"]
    # as the tables print it: two noisy repetitions can put an end beyond 1000 or below
    # 0.001, printed ">1000" / "<0.001"
    cell = (f"{tput['ratio_geomean']:.3f} "
            f"{stats.ratio_interval(tput['ratio_ci_low'], tput['ratio_ci_high'])}")
    stdout = (runs / "both.stdout").read_text().splitlines()
    line = next(ln for ln in stdout if ln.startswith("  cached/send ("))
    assert line.startswith(f"  cached/send (msgpack{one_runner_mark()}; {phrase}; 2 pairs): "
                           f"tok/s {cell}, ")
    # the pair table alone: the figures of run "both" are
    # test_a_run_of_both_policies_gets_the_ratio_panel_and_the_box's
    assert cli.main(["report", str(runs / "both"), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert ("| send (geometric mean) | cached (geometric mean) | send - cached (mean) | "
            "cached/send (geometric "
            "mean) [95 %] |") in md
    row = next(ln for ln in md.splitlines()
               if ln.startswith(f"| num_running=4 | msgpack{one_runner_mark()} | "
                                "output tokens/s | 2 |"))
    assert row.endswith(f"| {cell} |")
    assert ("send - cached: paired by repetition, the mean of the per-repetition "
            f"differences. cached/send: {phrase} (`--ci-method t`; the same figures as the "
            "`cached/send` line under the case table and the comparison block `bench.py` "
            "prints).") in md


def test_a_timed_replays_throughput_caption_names_the_wall_figure():
    """A timed replay's points are its tokens over wall time (first arrival to last
    completion); an arrival-bound one's cached/send ratio is no speed verdict, so it
    gets no point (the tables give none): the caption says so, for a mixed figure kind
    by kind, and the ratio panel's title says what its points are."""
    timed = dict(series=[("send", "msgpack"), ("cached", "msgpack")],
                 panels=["tokens/s"], repeated=False, method="t",
                 timed=["azure-conv-timed"], groups=1, ratio_withheld=["azure-conv-timed"])
    assert blocks.caption("throughput", timed) == (
        "Output tokens/s of every case (a timed replay: every output token over the wall "
        "time from the first arrival to the last completion, `out tok/s (wall)`), one "
        "point per arm and codec: `send` and `cached`; one repetition per case, so no "
        "error bars. No cached/send for `azure-conv-timed`: it is arrival-bound, so its "
        "wall tok/s follow the trace, and the tables give no ratio either. The red note "
        "marks each timed replay's points: arrival-bound, so its tokens/s follow the "
        "trace, not the policy.")
    mixed = dict(timed, groups=2, panels=["tokens/s", "cached/send"])
    assert blocks.caption("throughput", mixed).startswith(
        "Output tokens/s of every case (steady cases: tokens sampled in counted steps "
        "over their busy wall time; timed replays: every output token over the wall time "
        "from the first arrival to the last completion, `out tok/s (wall)`), one point")
    assert ("so no interval (above 1: cached faster). No cached/send for "
            "`azure-conv-timed`: it is arrival-bound") in blocks.caption("throughput", mixed)
    # a load-bound replay keeps its ratio, read under that load
    load = dict(mixed, load_bound=["azure-conv-timed"], ratio_withheld=[])
    assert ("so no interval (above 1: cached faster; for the load-bound timed replays a "
            "ratio of wall tok/s, under that load).") in blocks.caption("throughput", load)
    assert ("one pair each, so no interval (load-bound: the engine, not the trace, set the "
            "pace, so above 1: cached faster under that load).") in blocks.caption(
        "throughput", dict(load, groups=1))
    assert plots._ratio_title(1, 1) == "cached / send, wall tok/s (arrival-bound)"
    assert plots._ratio_title(0, 2) == "cached / send (> 1: cached faster)"
    assert plots._ratio_title(1, 2) == ("cached / send (> 1: cached faster;\n"
                                        "timed replays: wall tok/s, arrival-bound)")
