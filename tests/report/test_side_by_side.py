"""A multi-run report's side-by-side tables name the run their ratio columns divide by."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from ipc_bench.report.blocks import SIDE_NO_INTERVAL_NOTE, _side_by_side, reference_line


def _results(run_ids: list[str]) -> SimpleNamespace:
    rows = [dict(workload="num_running=4", policy="send", codec="msgpack", run_id=r,
                 output_tokens_per_s=1000.0 * (i + 1)) for i, r in enumerate(run_ids)]
    return SimpleNamespace(run_ids=run_ids, cases=pd.DataFrame(rows))


def test_the_caption_names_the_first_run_as_the_denominator():
    blocks = _side_by_side(_results(["base", "new"]), "output_tokens_per_s")
    assert blocks[0] == ("p", "**output tokens/s** (geometric mean over repetitions; the "
                              "ratio column, `new ÷ base`, divides each run's geometric "
                              "mean by that of run `base`, the first loaded)")
    kind, header, rows = blocks[1]
    assert header == ["workload", "arm", "codec", "base", "new", "new ÷ base"]
    assert rows == [["num_running=4", "send", "msgpack", "1,000", "2,000", "2.000"]]


def test_with_three_runs_every_ratio_column_is_named():
    blocks = _side_by_side(_results(["a", "b", "c"]), "output_tokens_per_s")
    assert blocks[0] == ("p", "**output tokens/s** (geometric mean over repetitions; the "
                              "ratio columns, `b ÷ a`, `c ÷ a`, divide each run's geometric "
                              "mean by that of run `a`, the first loaded)")


def _results_without(run_ids: list[str], lacking: str) -> SimpleNamespace:
    """Runs ``run_ids``, each with a send row; all but ``lacking`` with a cached row."""
    rows = [dict(workload="num_running=4", policy=arm, codec="msgpack", run_id=r,
                 output_tokens_per_s=1000.0 * (i + 1) + (500.0 if arm == "cached" else 0))
            for i, r in enumerate(run_ids) for arm in ("send", "cached")
            if not (arm == "cached" and r == lacking)]
    return SimpleNamespace(run_ids=run_ids, cases=pd.DataFrame(rows))


def test_a_chosen_baseline_is_the_denominator_and_named_in_the_caption():
    blocks = _side_by_side(_results(["a", "b", "c"]), "output_tokens_per_s", base="b")
    assert blocks[0] == ("p", "**output tokens/s** (geometric mean over repetitions; the "
                              "ratio columns, `a ÷ b`, `c ÷ b`, divide each run's geometric "
                              "mean by that of run `b`, the baseline given)")
    kind, header, rows = blocks[1]
    assert header == ["workload", "arm", "codec", "a", "b", "c", "a ÷ b", "c ÷ b"]
    assert rows == [["num_running=4", "send", "msgpack", "1,000", "2,000", "3,000",
                     "0.500", "1.500"]]
    assert blocks[2:] == [("p", SIDE_NO_INTERVAL_NOTE)]  # one repetition each


def test_the_first_run_chosen_as_baseline_is_the_baseline_given_as_in_the_runs_section():
    """The same table as the default's, its caption naming the choice as the Runs
    section's reference line does (``reference_line``): one report, one word for it."""
    results = _results(["base", "new"])
    chosen = _side_by_side(results, "output_tokens_per_s", base="base")
    default = _side_by_side(results, "output_tokens_per_s")
    assert chosen[1:] == default[1:]
    assert (chosen[0][1], default[0][1]) == (
        "**output tokens/s** (geometric mean over repetitions; the ratio column, "
        "`new ÷ base`, divides each run's geometric mean by that of run `base`, the "
        "baseline given)",
        "**output tokens/s** (geometric mean over repetitions; the ratio column, "
        "`new ÷ base`, divides each run's geometric mean by that of run `base`, the "
        "first loaded)")
    assert reference_line(["base", "new"], "base", True).startswith(
        "Reference: run `base`, the baseline given (`--baseline`).")


def test_a_row_the_baseline_lacks_shows_a_dash_and_a_note_says_why():
    blocks = _side_by_side(_results_without(["a", "b"], "b"), "output_tokens_per_s",
                           base="b")
    kind, header, rows = blocks[1]
    assert rows == [["num_running=4", "send", "msgpack", "1,000", "2,000", "0.500"],
                    ["num_running=4", "cached", "msgpack", "1,500", "-", "-"]]
    assert blocks[2] == ("p", "`-` in the ratio columns of a row: run `b` has no such "
                              "case (workload, arm and codec), so there is no mean to "
                              "divide by.")


def test_a_row_the_first_run_lacks_says_so_by_default_too():
    blocks = _side_by_side(_results_without(["a", "b"], "a"), "output_tokens_per_s")
    assert blocks[1][2][1] == ["num_running=4", "cached", "msgpack", "-", "2,500", "-"]
    assert blocks[2] == ("p", "`-` in the ratio columns of a row: run `a` has no such "
                              "case (workload, arm and codec), so there is no mean to "
                              "divide by.")


def test_a_row_another_run_lacks_has_its_dash_with_its_own_note():
    blocks = _side_by_side(_results_without(["a", "b"], "b"), "output_tokens_per_s")
    assert blocks[1][2][1] == ["num_running=4", "cached", "msgpack", "1,500", "-", "-"]
    assert blocks[2:] == [("p", "`-` in run `b`'s column on 1 row: that run ran no "
                                "case of the row's workload, arm and codec, or "
                                "finished none."),
                          ("p", SIDE_NO_INTERVAL_NOTE)]


def test_a_case_without_the_figure_has_its_dash_explained():
    results = _results_without(["a", "b"], None)
    results.cases.loc[(results.cases["run_id"] == "b")
                      & (results.cases["policy"] == "cached"), "output_tokens_per_s"] = None
    blocks = _side_by_side(results, "output_tokens_per_s")
    assert blocks[1][2][1][3:] == ["1,500", "-", "-"]
    assert blocks[2:] == [("p", "`-` in run `b`'s column on 1 row where it has the case: "
                                "the case has no value of this figure (one that counted "
                                "no step has no per-step figures)."),
                          ("p", SIDE_NO_INTERVAL_NOTE)]


def test_a_timed_replays_tokens_are_marked_wall_with_a_note():
    # `bench.py report <decode-steady run> <timed replay run>`: the timed replay's
    # output_tokens_per_s is over wall time (arrival-bound), the steady run's over the
    # busy time of its counted steps; the table heads both `output tokens/s`.
    nan = float("nan")
    rows = [dict(workload="num_running=4", policy="send", codec="msgpack", run_id="steady",
                 output_tokens_per_s=16_005.0, trace_speedup=nan,
                 sched_to_runner_payload_bytes_per_step=394.0),
            dict(workload="trace=azure-conv-timed:15", policy="send", codec="msgpack",
                 run_id="timed", output_tokens_per_s=667.0, trace_speedup=20.0,
                 sched_to_runner_payload_bytes_per_step=663.0),
            dict(workload="trace=azure-conv-timed:15", policy="send", codec="msgpack",
                 run_id="steady", output_tokens_per_s=nan, trace_speedup=20.0,
                 sched_to_runner_payload_bytes_per_step=660.0)]
    results = SimpleNamespace(run_ids=["steady", "timed"], cases=pd.DataFrame(rows))
    blocks = _side_by_side(results, "output_tokens_per_s")
    assert blocks[1][2] == [
        ["num_running=4", "send", "msgpack", "16,005", "-", "-"],
        ["trace=azure-conv-timed:15", "send", "msgpack", "-", "667 (wall)", "-"]]
    assert blocks[2] == (
        "p", "`(wall)`: a timed replay's output tokens, warm-up included, over wall time, "
             "first arrival to last completion (arrival-bound where the arrivals set the "
             "pace, load-bound where requests queued and kept the engine busy), as `out tok/s (wall)` in "
             "its case table, and its ratio columns are of that figure where it is "
             "load-bound in both runs; the other rows' are over the busy time of their "
             "counted steps.")
    # Bytes per step are the same figure in every scenario: no mark, no note.
    bytes_blocks = _side_by_side(results, "sched_to_runner_payload_bytes_per_step")
    assert bytes_blocks[1][2][1] == ["trace=azure-conv-timed:15", "send", "msgpack", "660",
                                     "663", "1.005"]
    assert not any("(wall)" in str(b) for b in bytes_blocks)


def test_a_timed_replays_ratio_is_withheld_where_a_run_is_arrival_bound():
    """As each run's comparison withholds an arrival-bound replay's wall tok/s ratio,
    so does the side-by-side table: the cell reads ``- (arrival-bound)``, with a note;
    load-bound in both runs, the ratio is given."""
    def row(run, tok_s, waiting):
        return dict(workload="trace=azure-conv-timed:15", policy="send", codec="msgpack",
                    run_id=run, output_tokens_per_s=tok_s, trace_speedup=20.0,
                    waiting_step_share=waiting, num_waiting_mean=3.0 * waiting,
                    arrival_span_share=0.9, idle_share=0.0)

    results = SimpleNamespace(run_ids=["a", "b"], cases=pd.DataFrame(
        [row("a", 600.0, 0.0), row("b", 660.0, 0.8)]))
    blocks = _side_by_side(results, "output_tokens_per_s")
    assert blocks[1][2] == [["trace=azure-conv-timed:15", "send", "msgpack", "600 (wall)",
                             "660 (wall)", "- (arrival-bound)"]]
    assert ("p", "`- (arrival-bound)`: a timed replay that is not load-bound in every case "
                 "of both runs: its wall tok/s follow the trace's arrivals, so their ratio "
                 "says nothing of the runs' speed, and none is given (as in each run's "
                 "comparison).") in blocks
    results.cases = pd.DataFrame([row("a", 600.0, 0.7), row("b", 660.0, 0.8)])
    assert _side_by_side(results, "output_tokens_per_s")[1][2][0][-1] == "1.100"


def test_single_process_rows_show_a_dash_for_bytes_they_never_send():
    """The baseline of codec ``none`` serializes and sends nothing: its bytes read `-`
    (not `0.00`) with a note, as in the case tables; its tokens/s is compared."""
    from ipc_bench.report.blocks import SIDE_NOT_PERFORMED_NOTE

    rows = [dict(workload="num_running=4", policy="send", codec=codec, run_id=r,
                 output_tokens_per_s=1000.0 * (i + 1),
                 sched_to_runner_payload_bytes_per_step=0.0 if codec == "none" else 391.0)
            for i, r in enumerate(["a", "b"]) for codec in ("msgpack", "none")]
    results = SimpleNamespace(run_ids=["a", "b"], cases=pd.DataFrame(rows))
    blocks = _side_by_side(results, "sched_to_runner_payload_bytes_per_step")
    assert blocks[1][2] == [["num_running=4", "send", "msgpack", "391", "391", "1.000"],
                            ["num_running=4", "send", "none", "-", "-", "-"]]
    assert blocks[2:] == [("p", SIDE_NOT_PERFORMED_NOTE), ("p", SIDE_NO_INTERVAL_NOTE)]
    tokens = _side_by_side(results, "output_tokens_per_s")
    assert tokens[1][2][1] == ["num_running=4", "send", "none", "1,000", "2,000", "2.000"]
    assert tokens[2:] == [("p", SIDE_NO_INTERVAL_NOTE)]


def _grid(run_ids: list[str], cases: dict[str, list[tuple]],
          scenarios: dict[str, str] | None = None) -> SimpleNamespace:
    """Runs ``run_ids`` with finished cases ``cases`` (run -> (workload, arm, codec)
    each) and metadata naming their scenario (decode-steady unless ``scenarios``)."""
    rows = [dict(workload=w, policy=p, codec=c, run_id=r, output_tokens_per_s=1000.0)
            for r in run_ids for w, p, c in cases[r]]
    metadata = {r: {"scenario": (scenarios or {}).get(r, "decode-steady")} for r in run_ids}
    return SimpleNamespace(run_ids=run_ids, cases=pd.DataFrame(rows), metadata=metadata)


MSGPACK = [("num_running=4", "send", "msgpack"), ("num_running=4", "cached", "msgpack")]
PICKLE = [("num_running=4", "send", "pickle"), ("num_running=4", "cached", "pickle")]


def test_runs_of_other_codecs_are_said_to_share_no_case_and_how_to_compare_them():
    from ipc_bench.report.blocks import unshared_lines

    assert unshared_lines(_grid(["a", "b"], {"a": MSGPACK, "b": PICKLE})) == [
        "No side-by-side ratio for run `b`: it shares no case (workload, arm and codec) "
        "with run `a`, the reference: codec pickle in `b` vs msgpack in `a`. To compare "
        "them, run both codecs in one run (`--codecs msgpack,pickle`): codecs are "
        "compared within a run, not across runs."]
    # the reference chosen by --baseline is the one named second
    assert unshared_lines(_grid(["a", "b"], {"a": MSGPACK, "b": PICKLE}), "b") == [
        "No side-by-side ratio for run `a`: it shares no case (workload, arm and codec) "
        "with run `b`, the reference: codec msgpack in `a` vs pickle in `b`. To compare "
        "them, run both codecs in one run (`--codecs msgpack,pickle`): codecs are "
        "compared within a run, not across runs."]


def test_only_the_runs_that_share_nothing_with_the_reference_are_named():
    from ipc_bench.report.blocks import unshared_lines

    both = MSGPACK + PICKLE
    sixteen = [("num_running=16", a, "msgpack") for a in ("send", "cached")]
    results = _grid(["a", "b", "c", "d"], {"a": MSGPACK, "b": both, "c": PICKLE,
                                          "d": sixteen})
    assert unshared_lines(results) == [
        "No side-by-side ratio for run `c`: it shares no case (workload, arm and codec) "
        "with run `a`, the reference: codec pickle in `c` vs msgpack in `a`. To compare "
        "them, run both codecs in one run (`--codecs msgpack,pickle`): codecs are "
        "compared within a run, not across runs.",
        "No side-by-side ratio for run `d`: it shares no case (workload, arm and codec) "
        "with run `a`, the reference: workload num_running=16 in `d` vs num_running=4 in "
        "`a`. To compare them, run those workloads in one run, or each run with the "
        "other's (`--num-running 4,16`)."]
    assert unshared_lines(_grid(["a", "b"], {"a": MSGPACK, "b": both})) == []


def test_runs_of_other_arms_or_scenarios_say_which():
    from ipc_bench.report.blocks import unshared_lines

    send, cached = MSGPACK[:1], [("num_running=4", "cached+async", "pickle")]
    assert unshared_lines(_grid(["a", "b"], {"a": send, "b": MSGPACK[1:]})) == [
        "No side-by-side ratio for run `b`: it shares no case (workload, arm and codec) "
        "with run `a`, the reference: arm cached in `b` vs send in `a`. To compare them, "
        "run both policies in one run (`--policies send,cached`)."]
    assert unshared_lines(_grid(["a", "b"], {"a": send, "b": cached})) == [
        "No side-by-side ratio for run `b`: it shares no case (workload, arm and codec) "
        "with run `a`, the reference: arm cached+async in `b` vs send in `a`; codec "
        "pickle in `b` vs msgpack in `a`. To compare them, run `b`'s command again with "
        "`a`'s arm options in place of its own (`--policies send`, not `--async-scheduling "
        "--policies cached`), or `a`'s with `b`'s in place of its own (`--async-scheduling "
        "--policies cached`, not `--policies send`): no one run makes arms send, "
        "cached+async, nor shares an arm with each; run both codecs in one run (`--codecs "
        "msgpack,pickle`): codecs are compared within a run, not across runs."]
    replay = [("trace=azure-conv:20", "send", "msgpack")]
    assert unshared_lines(_grid(["a", "b"], {"a": send, "b": replay},
                                {"b": "azure-conv"})) == [
        "No side-by-side ratio for run `b`: it shares no case (workload, arm and codec) "
        "with run `a`, the reference: scenario azure-conv in `b` vs decode-steady in "
        "`a`. To compare them, run the same scenario in both."]


def test_a_ratio_of_two_runs_that_ran_the_workload_otherwise_is_not_given():
    """Run ``c`` ran num_running=4 with other settings than ``a`` and ``b``: the row is
    marked, its ``c ÷ a`` cell reads ``- (not comparable)`` while ``b ÷ a`` stands,
    every run's value stays, and the note says what the cell means."""
    from ipc_bench.report.blocks import UNLIKE_NOTE

    unlike = {("b", "a"): set(), ("c", "a"): {"num_running=4"},
              ("c", "b"): {"num_running=4"}}
    blocks = _side_by_side(_results(["a", "b", "c"]), "output_tokens_per_s", unlike)
    assert blocks[1][2] == [["num_running=4 ≠", "send", "msgpack", "1,000", "2,000",
                             "3,000", "2.000", "- (not comparable)"]]
    assert blocks[2:] == [("p", UNLIKE_NOTE), ("p", SIDE_NO_INTERVAL_NOTE)]
    assert UNLIKE_NOTE == (
        "`≠`: two or more of the runs ran this workload with other settings (listed "
        "under Runs): a ratio of two runs that ran it with other settings is not given "
        "(`- (not comparable)`), a ratio given in the row is of two runs that ran it "
        "alike; each run's value stands on its own.")


def test_a_report_of_a_msgpack_run_and_a_pickle_run_says_they_share_no_case(
        tmp_path, capsys):
    """The report and stderr each say it in one line; nothing is paired across codecs."""
    from analysis_run import run_bench
    from ipc_bench import cli

    common = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
              "--warmup-steps", "3", "--no-floor", "--no-single-process"]
    run_bench(tmp_path / "a", common + ["--codecs", "msgpack"])
    run_bench(tmp_path / "b", common + ["--codecs", "pickle"])
    assert cli.main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "--output",
                     str(tmp_path / "rep"), "--no-figures"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "bench.py report: warning: No side-by-side ratio for run b: it shares no case "
        "(workload, arm and codec) with run a, the reference: codec pickle in b vs "
        "msgpack in a. To compare them, run both codecs in one run (--codecs "
        "msgpack,pickle): codecs are compared within a run, not across runs."]
    md = (tmp_path / "rep" / "report.md").read_text().splitlines()
    side = md[md.index("## Side by side") + 1:]
    assert side[1] == (
        "> **Note:** No side-by-side ratio for run `b`: it shares no case (workload, arm "
        "and codec) with run `a`, the reference: codec pickle in `b` vs msgpack in `a`. "
        "To compare them, run both codecs in one run (`--codecs msgpack,pickle`): codecs "
        "are compared within a run, not across runs.")
    rows = [ln for ln in side[:side.index("## Run a (decode-steady)")]
            if ln.startswith("| num_running=4 |")]
    assert len(rows) == 14 and all(ln.endswith(" | - |") for ln in rows)
    # the effect table's two rows, each run's own codec: no ratio across codecs
    effect = [ln.split(" | ") for ln in rows[12:]]
    assert [e[1] for e in effect] == ["msgpack", "pickle"]
    assert effect[0][3] == "-" and effect[1][2] == "-"  # b ran no msgpack, a no pickle


def test_several_values_are_named_in_the_runs_case_order_in_every_process():
    """Each field's values in the order the run's cases list them, the same from one
    process to the next (a set's order follows ``PYTHONHASHSEED``)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from ipc_bench.report.blocks import unshared_lines

    a = [(f"num_running={b}", "send", "msgpack") for b in (2, 4)]
    d = [(f"num_running={b}", "send", c) for b in (16, 64) for c in ("pickle", "slots")]
    line = ("No side-by-side ratio for run `d`: it shares no case (workload, arm and codec) "
            "with run `a`, the reference: workload num_running=16, num_running=64 in `d` vs "
            "num_running=2, num_running=4 in `a`; codec pickle, slots in `d` vs msgpack in "
            "`a`. To compare them, run those workloads in one run, or each run with the "
            "other's (`--num-running 2,4,16,64`); run those codecs in one run (`--codecs "
            "msgpack,pickle,slots`): codecs are compared within a run, not across runs.")
    assert unshared_lines(_grid(["a", "d"], {"a": a, "d": d})) == [line]
    code = ("import sys; sys.path[:0] = ['tests/report', 'tests']\n"
            "from test_side_by_side import _grid\n"
            "from ipc_bench.report.blocks import unshared_lines\n"
            f"print(unshared_lines(_grid(['a', 'd'], {{'a': {a!r}, 'd': {d!r}}}))[0])\n")
    for seed in ("1", "5", "9"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}, check=True,
                             timeout=120, cwd=Path(__file__).resolve().parents[2]).stdout
        assert out == line + "\n", seed


def _two_grids() -> SimpleNamespace:
    """``A``: --num-running 16,256 (msgpack, pickle); ``B``: --num-running 4,16 (msgpack,
    packed), 2 repetitions; each with the single-process baseline, its arms in the
    random order a run runs them; ``workload`` the ordered Categorical a load gives."""
    from ipc_bench.analysis.results import ordered_workloads

    flip = iter([False, True, True, False, False, True, True, True, False, False] * 4)
    rows = []
    for run, sizes, codecs, reps in (("A", (16, 256), ("msgpack", "pickle"), 1),
                                     ("B", (4, 16), ("msgpack", "packed"), 2)):
        for rep in range(reps):
            for b in sizes:
                for c in codecs + ("none",):
                    arms = ("cached", "send") if next(flip) else ("send", "cached")
                    rows += [dict(workload=f"num_running={b}", policy=a, codec=c, run_id=run,
                                  output_tokens_per_s=1000.0 * b + (1.0 if a == "cached"
                                                                    else 0.0))
                             for a in arms]
    tables = ordered_workloads(pd, {"cases": pd.DataFrame(rows)})
    return SimpleNamespace(run_ids=["A", "B"], cases=tables["cases"])


def test_rows_go_by_workload_size_then_the_runs_codec_order_then_arm():
    """A workload only the second run has (num_running=4) comes before the first run's
    num_running=16 and 256, not after them; within a workload codecs go in the order
    the runs list them (A's msgpack, pickle, then B's packed), the single-process
    baseline last, and each codec's arms side by side, send before cached
    (``stats.arm_rank``) whichever ran first, as in a run's case tables."""
    results = _two_grids()
    assert results.cases["workload"].cat.ordered
    rows = _side_by_side(results, "output_tokens_per_s")[1][2]
    assert [r[:3] for r in rows] == [
        [w, a, c] for w, codecs in (("num_running=4", ("msgpack", "packed", "none")),
                                    ("num_running=16", ("msgpack", "pickle", "packed",
                                                        "none")),
                                    ("num_running=256", ("msgpack", "pickle", "none")))
        for c in codecs for a in ("send", "cached")]
    # the values follow their rows
    assert rows[0] == ["num_running=4", "send", "msgpack", "-", "4,000", "-"]
    assert rows[7] == ["num_running=16", "cached", "msgpack", "16,001", "16,001", "1.000"]


def test_copies_and_the_async_arm_follow_their_policy():
    """``send'`` (--aa) after send, ``cached+async`` after cached and ``cached'``, as a
    run's own tables rank them, whatever order the cases ran in."""
    from ipc_bench.report.blocks import side_by_side_order

    groups = [("num_running=4", a, "msgpack")
              for a in ("cached+async", "cached'", "send'", "cached", "send")]
    assert [g[1] for g in side_by_side_order(groups, ["msgpack"])] == [
        "send", "send'", "cached", "cached'", "cached+async"]
