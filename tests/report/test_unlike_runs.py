"""A report of several runs compares what changes the numbers besides the machine and
the software: the replayed trace's content (its SHA-256, recorded in the run's
metadata), the seed, the scenario options and each workload's case settings. Each
difference is one line under the "compare with care" note, and the side-by-side rows
of a workload the runs ran with other settings are marked as not comparable."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from typing import Any

import pytest

from analysis_run import run_bench
from ipc_bench import cli
from ipc_bench.harness.environment import compare_settings

SAME = "Same machine, software and commit by their metadata."
CARE = "> **Note:** The runs differ in ways that can change the numbers: compare with care."
UNLIKE = ("`≠`: two or more of the runs ran this workload with other settings (listed "
          "under Runs): a ratio of two runs that ran it with other settings is not given "
          "(`- (not comparable)`), a ratio given in the row is of two runs that ran it "
          "alike; each run's value stands on its own.")


def write_trace(path, output_tokens: int) -> None:
    """A small Azure-format trace: 6 requests 50 ms apart, 40-token prompts."""
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"] + [
        f"2023-11-16 18:15:40.{i * 5:02d}00000,40,{output_tokens}" for i in range(6)]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Logical replays of 6 requests: ``a`` of trace one, ``copy`` of the same bytes
    under another path, ``other`` of another trace, ``vocab`` of trace one with
    ``--vocab-size 100 --req-id-format numeric``."""
    base = tmp_path_factory.mktemp("unlike")
    (base / "one").mkdir()
    (base / "two").mkdir()
    one, two = base / "one" / "trace.csv", base / "two" / "trace.csv"
    write_trace(one, 8)
    write_trace(two, 12)
    shutil.copy(one, base / "copy.csv")
    common = ["--scenario", "azure-conv", "--max-requests", "6", "--codecs", "msgpack",
              "--no-floor", "--no-single-process", "--warmup-steps", "2"]
    run_bench(base / "a", common + ["--trace", str(one)])
    run_bench(base / "copy", common + ["--trace", str(base / "copy.csv")])
    run_bench(base / "other", common + ["--trace", str(two)])
    run_bench(base / "vocab", common + ["--trace", str(one), "--vocab-size", "100",
                                        "--req-id-format", "numeric"])
    return base


EFFECT_CAPTION = "**cached/send output tokens/s, run by run**"


def _side_by_side(md: list[str], effect: bool = False) -> list[str]:
    """The table rows of the report's "Side by side" section: those of its side-by-side
    tables, or with ``effect`` those of the cached/send effect table under them."""
    start = md.index("## Side by side")
    end = next(i for i in range(start + 1, len(md)) if md[i].startswith("## "))
    cut = next((i for i in range(start, end) if md[i].startswith(EFFECT_CAPTION)), end)
    return [ln for ln in (md[cut:end] if effect else md[start:cut])
            if ln.startswith("| trace=")]


def _report(runs, tmp_path, *names, figures: bool = False) -> list[str]:
    """report.md of runs ``names`` (folders in ``runs``), as lines; drawn without figures
    (``--no-figures``) unless ``figures``."""
    out = tmp_path / "-".join(names)
    extra = [] if figures else ["--no-figures"]
    assert cli.main(["report", *(str(runs / n) for n in names), "--output", str(out),
                     *extra]) == 0
    return (out / "report.md").read_text().splitlines()


def test_the_metadata_records_the_trace_and_the_options(runs):
    md = json.loads((runs / "a" / "summary.json").read_text())["metadata"]
    trace = runs / "one" / "trace.csv"
    assert md["trace"] == {"path": str(trace), "resolved_path": os.path.realpath(trace),
                           "sha256": hashlib.sha256(trace.read_bytes()).hexdigest()}
    assert md["options"]["vocab_size"] is None
    assert md["options"]["max_requests"] == 6
    assert "trace" not in md["options"]


def test_a_piped_trace_is_identified_by_the_bytes_read_once(runs, tmp_path):
    # A process substitution and a named FIFO are read once: their recorded SHA-256 is
    # that of the bytes replayed, the same as the file's, and a FIFO whose writer has
    # already finished does not stop the run.
    import subprocess
    import sys

    from analysis_run import REPO

    one = runs / "one" / "trace.csv"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    common = ("--scenario azure-conv --max-requests 6 --codecs msgpack --no-floor "
              "--no-single-process --warmup-steps 2 --quiet")
    script = (f"{sys.executable} bench.py {common} --trace <(cat {one}) --output "
              f"{tmp_path / 'sub'} && {{ cat {one} > {fifo} & }} && sleep 0.5 && "
              f"{sys.executable} bench.py {common} --trace {fifo} --output {tmp_path / 'fifo-run'}")
    proc = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr
    want = hashlib.sha256(one.read_bytes()).hexdigest()
    for name in ("sub", "fifo-run"):
        trace = json.loads((tmp_path / name / "summary.json").read_text())["metadata"]["trace"]
        assert trace["sha256"] == want, name
        assert trace["resolved_path"] is None, name  # a pipe: no file to read again
    assert trace["path"] == str(fifo)


def test_the_same_trace_under_another_path_is_the_same_run(runs, tmp_path):
    md = _report(runs, tmp_path, "a", "copy")
    assert SAME in md
    rows = _side_by_side(md)
    assert len(rows) == 6 and all(ln.startswith("| trace=azure-conv:6 |") for ln in rows)
    assert UNLIKE not in md


def test_one_file_given_by_a_relative_and_an_absolute_path_is_one_file(runs, tmp_path):
    # Run "a" gave the trace's absolute path with --max-requests 6; this run gives it
    # relative to its working directory (the repository) with --max-requests 3.
    from analysis_run import REPO

    one = runs / "one" / "trace.csv"
    relative = os.path.relpath(one, REPO)
    assert not os.path.isabs(relative)
    run_bench(tmp_path / "rel", ["--scenario", "azure-conv", "--max-requests", "3",
                                 "--codecs", "msgpack", "--no-floor", "--no-single-process",
                                 "--warmup-steps", "2", "--trace", relative])
    trace = json.loads((tmp_path / "rel" / "summary.json").read_text())["metadata"]["trace"]
    assert trace["path"] == relative
    assert trace["resolved_path"] == os.path.realpath(one)
    shutil.copytree(runs / "a", tmp_path / "a")
    md = _report(tmp_path, tmp_path, "rel", "a")
    rows = hashlib.sha256(b"".join(one.read_bytes().splitlines(True)[:4])).hexdigest()
    assert (f"- a against rel: trace rows differ: the same file {os.path.realpath(one)} "
            f"read to other rows (--max-requests 6 vs 3; sha256 of the rows replayed "
            f"{hashlib.sha256(one.read_bytes()).hexdigest()[:12]} vs {rows[:12]})") in md
    assert f"- trace: `{relative}` (read as `{os.path.realpath(one)}`), sha256 `{rows}`" in md


def test_runs_of_other_traces_differ_and_their_rows_are_marked(runs, tmp_path):
    md = _report(runs, tmp_path, "a", "other", figures=True)
    sha = {n: hashlib.sha256((runs / n / "trace.csv").read_bytes()).hexdigest()[:12]
           for n in ("one", "two")}
    assert CARE in md and SAME not in md
    assert (f"- other against a: trace differs: {runs / 'two' / 'trace.csv'} (sha256 "
            f"{sha['two']}) vs {runs / 'one' / 'trace.csv'} (sha256 {sha['one']})") in md
    rows = _side_by_side(md)
    assert len(rows) == 6 and all(ln.startswith("| trace=azure-conv:6 ≠ |") for ln in rows)
    # each run's value stands; no ratio of the two is given, whatever the metric
    assert [ln.split(" | ")[1:3] + [ln.split(" | ")[-1]] for ln in rows] == [
        [arm, "msgpack", "- (not comparable) |"] for arm in ("send", "cached")] * 3
    assert all(ln.split(" | ")[3] != "-" and ln.split(" | ")[4] != "-" for ln in rows)
    assert md.count(UNLIKE) == 3
    # nor a ratio of the two runs' cached/send effects
    (effect,) = _side_by_side(md, effect=True)
    assert effect.startswith("| trace=azure-conv:6 ≠ | msgpack | ")
    assert effect.endswith(" | - (not comparable) |")


def test_runs_of_other_workload_settings_differ_setting_by_setting(runs, tmp_path):
    md = _report(runs, tmp_path, "a", "vocab")
    lines = [ln for ln in md if ln.startswith("- vocab against a: ")]
    assert lines == [
        "- vocab against a: option --req-id-format differs: numeric vs cmpl",
        "- vocab against a: option --vocab-size differs: 100 vs default (128256)"]
    assert CARE in md
    rows = _side_by_side(md)
    assert len(rows) == 6 and all(ln.startswith("| trace=azure-conv:6 ≠ |") for ln in rows)
    assert md.count(UNLIKE) == 3


def _md(**over):
    case = dict(case_id="num_running=4/send/msgpack#0", labels={"num_running": 4},
                policy="send", codec="msgpack", repetition=0, transport="ipc",
                model={"name": "null", "vocab_size": 128256},
                scheduler={"block_size": 16}, peer_timeout_s=10.0)
    md = dict(seed=0, options={"num_running": [4], "vocab_size": None},
              cases=[dict(case, **over)])
    return md


def test_a_setting_derived_from_a_differing_option_is_not_said_again():
    """``--steps 60`` against ``--steps 50`` (warm-up 5) also moves each case's
    ``max_steps`` (85 against 75: ``scenario.steady_case_max_steps``): one line, the
    option's; without the option line, the derived setting is said."""
    a, b = _md(counted_steps=60, max_steps=85), _md(counted_steps=50, max_steps=75)
    a["options"]["steps"], b["options"]["steps"] = 60, 50
    assert compare_settings(a, b) == (["option --steps differs: 60 vs 50"],
                                      ["num_running=4"])
    del a["options"]["steps"], b["options"]["steps"]
    assert compare_settings(a, _md(counted_steps=60, max_steps=75)) == (
        ["case setting max_steps differs: 85 vs 75 (workload num_running=4)"],
        ["num_running=4"])


def test_compare_settings_names_each_setting_and_its_workloads():
    assert compare_settings(_md(), _md(peer_timeout_s=30.0)) == ([], [])
    assert compare_settings(_md(transport="tcp", scheduler={"block_size": 32}), _md()) == (
        ["case setting scheduler.block_size differs: 32 vs 16 (workload num_running=4)",
         "case setting transport differs: tcp vs ipc (workload num_running=4)"],
        ["num_running=4"])
    a, b = _md(), _md(labels={"num_running": 8})
    b["options"]["num_running"] = [8]
    assert compare_settings(a, b) == (["option --num-running differs: [4] vs [8]"], [])
    a, b = _md(), _md()
    a["seed"] = 1
    assert compare_settings(a, b) == (["seed differs: 1 vs 0"], ["num_running=4"])
    # The interval method changes intervals and verdicts, not the rows: no workload marked;
    # a run that did not record it (an older run) is not compared.
    a, b = _md(), _md()
    a["ci_method"], b["ci_method"] = "bootstrap", "t"
    assert compare_settings(a, b) == (["option --ci-method differs: bootstrap vs t"], [])
    assert compare_settings(b, a) == (["option --ci-method differs: t vs bootstrap"], [])
    del b["ci_method"]
    assert compare_settings(a, b) == ([], [])
    # An arm one run alone ran (its single-process case) is no case-setting difference:
    # only which cases ran differs (``--no-single-process``), and no workload is marked.
    a = _md()
    a["cases"].append(dict(a["cases"][0], codec="none", transport="inproc", floor=False))
    assert compare_settings(a, _md()) == (
        ["single-process cases differ: run (not recorded) vs not run (not recorded)"],
        [])


def _run_md(options: dict, labels: dict, counted_steps, **model) -> dict:
    """Metadata of a run of one case, as ``cli.execute.run_metadata`` records it."""
    case = dict(case_id="c", labels=labels, policy="send", codec="msgpack", repetition=0,
                counted_steps=counted_steps,
                model=dict(dict(name="null", vocab_size=128256, step_time_ms=5.0), **model))
    return dict(seed=0, options=options, cases=[case])


def test_options_compare_by_the_values_in_effect():
    # A soak (its model left to the scenario: null) against an overhead run given
    # --model null: the same model in effect, no difference; the counted steps a replay
    # does not have, and a model setting the null model does not use, stay "default".
    soak = _run_md(dict(model=None, steps=None, step_time_ms=None), {"trace": "soak:400"},
                   None)
    null = _run_md(dict(model="null", steps=50, step_time_ms=None),
                   {"num_running": 4, "of": "send"}, 50)
    assert compare_settings(null, soak) == (["option --steps differs: 50 vs default"], [])
    torch = _run_md(dict(model="torch", steps=50, step_time_ms=None),
                    {"num_running": 4, "of": "send"}, 50, name="torch")
    assert compare_settings(torch, soak)[0] == [
        "option --model differs: torch vs default (null)",
        "option --steps differs: 50 vs default"]
    fixed = _run_md(dict(model="fixed-step", steps=None, step_time_ms=[2.0]),
                    {"num_running": 4}, 1000, name="fixed-step", step_time_ms=2.0)
    assert compare_settings(soak, fixed)[0] == [
        "option --model differs: default (null) vs fixed-step",
        "option --step-time-ms differs: default (none: no case's model uses it) vs "
        "[2.0]"]
    # --steps 1000 given against decode-steady's default 1000 in effect: the same.
    steady = _run_md(dict(model=None, steps=None, step_time_ms=None), {"num_running": 4},
                     1000)
    given = _run_md(dict(model="null", steps=1000, step_time_ms=None), {"num_running": 4},
                    1000)
    assert compare_settings(given, steady) == ([], [])


OVERHEAD = ["--scenario", "overhead", "--steps", "20", "--warmup-steps", "5",
            "--num-running", "4", "--repeat", "2"]


@pytest.fixture(scope="module")
def overhead_run(tmp_path_factory):
    """A run of ``OVERHEAD`` (a folder named ``default``), read by the test of a run given
    its scenario's default model and by the test of its recorded warm-up steps; tests
    only read it."""
    path = tmp_path_factory.mktemp("overhead") / "default"
    run_bench(path, OVERHEAD)
    return path


def test_a_run_given_the_model_its_scenario_defaults_to_is_the_same_run(tmp_path,
                                                                       overhead_run):
    run_bench(tmp_path / "given", OVERHEAD + ["--model", "null"])
    out = tmp_path / "report"
    assert cli.main(["report", str(tmp_path / "given"), str(overhead_run),
                     "--output", str(out), "--no-figures"]) == 0
    md = (out / "report.md").read_text().splitlines()
    assert [ln for ln in md if "differs" in ln] == []
    assert SAME in md and CARE not in md


def test_options_left_to_other_defaults_differ_by_their_values_in_effect():
    # step-time (fixed-step model and 200 counted steps by default) against
    # decode-steady (null model, 1000 counted steps), neither given --model nor --steps.
    step_time = _run_md(dict(model=None, steps=None, step_time_ms=[2.0]),
                        {"num_running": 4, "step_time_ms": 2.0}, 200, name="fixed-step",
                        step_time_ms=2.0)
    steady = _run_md(dict(model=None, steps=None, step_time_ms=None), {"num_running": 4},
                     1000)
    assert compare_settings(step_time, steady) == ([
        "option --model differs: default (fixed-step) vs default (null)",
        "option --step-time-ms differs: [2.0] vs default (none: no case's model "
        "uses it)",
        "option --steps differs: default (200) vs default (1000)"], [])
    # Defaults that took the same values are no difference (overhead: null model, here
    # 1000 steps too), nor are two defaults one of which cannot be told (a soak's
    # counted steps: a replay has none).
    overhead = _run_md(dict(model=None, steps=None, step_time_ms=None),
                       {"num_running": 4, "of": "send"}, 1000)
    assert compare_settings(overhead, steady) == ([], [])
    soak = _run_md(dict(model=None, steps=None, step_time_ms=None), {"trace": "soak:400"},
                   None)
    assert compare_settings(soak, steady) == ([], [])
    # A workload both ran is marked: the model differs run-wide.
    same_labels = _run_md(dict(model=None, steps=None, step_time_ms=None),
                          {"num_running": 4, "step_time_ms": 2.0}, 200)
    assert compare_settings(step_time, same_labels) == ([
        "option --model differs: default (fixed-step) vs default (null)",
        "option --step-time-ms differs: [2.0] vs default (none: no case's model "
        "uses it)"], ["num_running=4,step_time_ms=2.0"])


def test_a_step_time_run_and_a_decode_steady_run_differ_in_their_default_models(tmp_path):
    common = ["--num-running", "4", "--steps", "5", "--warmup-steps", "2", "--codecs",
              "msgpack", "--no-floor", "--no-single-process"]
    run_bench(tmp_path / "st", ["--scenario", "step-time", "--step-time-ms", "2"] + common)
    run_bench(tmp_path / "ds", ["--scenario", "decode-steady"] + common)
    out = tmp_path / "report"
    assert cli.main(["report", str(tmp_path / "st"), str(tmp_path / "ds"),
                     "--output", str(out), "--no-figures"]) == 0
    md = (out / "report.md").read_text().splitlines()
    lines = [ln for ln in md if ln.startswith("- ") and " against " in ln]
    assert [ln for ln in lines if " differs: " in ln] == [
        "- ds against st: option --model differs: default (null) vs default (fixed-step)",
        "- ds against st: option --step-time-ms differs: default (none: no case's model "
        "uses it) vs [2.0]"]
    assert CARE in md


def _scenario_md(scenario: str, options: dict, cases: list[tuple[dict, Any]]) -> dict:
    """Metadata of a run of ``scenario`` whose send cases have (labels, counted steps)
    ``cases``, as ``cli.execute.run_metadata`` records it."""
    md = _run_md(options, {}, None)
    md["scenario"] = scenario
    md["cases"] = [dict(md["cases"][0], case_id=f"c{i}", labels=labels,
                        counted_steps=steps) for i, (labels, steps) in enumerate(cases)]
    return md


def test_an_option_left_to_its_default_shows_the_workloads_its_cases_ran():
    # --num-running is a workload label (labels.num_running), shown in numeric order
    given = _scenario_md("decode-steady", dict(num_running=[4, 16], steps=300),
                         [({"num_running": 4}, 300), ({"num_running": 16}, 300)])
    default = _scenario_md("decode-steady", dict(num_running=None, steps=None),
                           [({"num_running": 16}, 1000), ({"num_running": 4}, 1000),
                            ({"num_running": 64}, 1000)])
    assert compare_settings(given, default)[0] == [
        "option --num-running differs: [4, 16] vs default (4, 16, 64)",
        "option --steps differs: 300 vs default (1000)"]


def test_an_option_a_scenario_does_not_take_is_no_difference():
    # azure-conv takes no --steps nor --num-running; decode-steady no --max-requests
    steady = _scenario_md("decode-steady", dict(num_running=[4], steps=300,
                                                max_requests=None),
                          [({"num_running": 4}, 300)])
    replay = _scenario_md("azure-conv", dict(num_running=None, steps=None, max_requests=20),
                          [({"trace": "azure-conv:20"}, None)])
    assert compare_settings(steady, replay) == ([], [])


def test_a_report_lists_runs_of_another_ci_method_once():
    from types import SimpleNamespace

    from ipc_bench.report.blocks import setting_differences

    mds = {"a": dict(_md(), ci_method="t"), "b": dict(_md(), ci_method="bootstrap"),
           "c": dict(_md(), ci_method="t")}
    lines, unlike = setting_differences(SimpleNamespace(run_ids=["a", "b", "c"], metadata=mds))
    assert lines == ["b against a, c: option --ci-method differs: bootstrap vs t"]
    assert unlike == {("b", "a"): set(), ("c", "a"): set(), ("c", "b"): set()}


def test_a_difference_with_the_baseline_is_said_against_it():
    """--baseline b: the runs that differ from the reference are named against it, the
    reference's value second, where the first loaded run would have been named."""
    from types import SimpleNamespace

    from ipc_bench.report.blocks import setting_differences

    mds = {"a": dict(_md(), ci_method="t"), "b": dict(_md(), ci_method="bootstrap"),
           "c": dict(_md(), ci_method="t")}
    runs = SimpleNamespace(run_ids=["a", "b", "c"], metadata=mds)
    lines, unlike = setting_differences(runs, "b")
    assert lines == ["a, c against b: option --ci-method differs: t vs bootstrap"]
    # keyed (later, earlier) in load order, whichever run is the reference
    assert unlike == {("b", "a"): set(), ("c", "a"): set(), ("c", "b"): set()}
    # three values: each run against the reference, then the other two with each other
    mds["c"] = dict(_md(), ci_method="sign")
    assert setting_differences(runs, "b")[0] == [
        "a against b: option --ci-method differs: t vs bootstrap",
        "c against b: option --ci-method differs: sign vs bootstrap",
        "c against a: option --ci-method differs: sign vs t"]
    # the reference first among the runs a line is against
    mds["c"] = dict(_md(), ci_method="bootstrap")
    assert setting_differences(runs, "c")[0] == [
        "a against c, b: option --ci-method differs: t vs bootstrap"]


def test_options_no_case_records_show_the_default_their_scenario_declares():
    # --max-requests and --logical-step-ms: no case setting records them
    given = _scenario_md("azure-conv", dict(num_running=None, steps=None, max_requests=40,
                                            logical_step_ms=5.0),
                         [({"trace": "azure-conv:40"}, None)])
    default = _scenario_md("azure-conv", dict(num_running=None, steps=None,
                                              max_requests=None, logical_step_ms=None),
                           [({"trace": "azure-conv:40"}, None)])
    assert compare_settings(given, default)[0] == [
        "option --logical-step-ms differs: 5.0 vs default (20.0)",
        "option --max-requests differs: 40 vs default (300)"]
    # a soak replays its whole trace; the value the other run's default took is none
    soak = _scenario_md("soak", dict(max_requests=None), [({"trace": "soak:40"}, None)])
    timed = _scenario_md("azure-conv-timed", dict(max_requests=None),
                         [({"trace": "azure-conv-timed:40"}, None)])
    assert compare_settings(soak, timed)[0][:1] == [
        "option --max-requests differs: default (the whole trace) vs default (300)"]
    given_300 = _scenario_md("azure-conv", dict(max_requests=300),
                             [({"trace": "azure-conv:40"}, None)])
    assert compare_settings(given_300, dict(default, options=dict(max_requests=None)))[0] == []


def test_one_trace_read_to_other_rows_is_named_as_such():
    # The SHA-256 covers the header through the last row replayed: one file read with
    # other --max-requests gives other digests, which is not a changed file.
    def replay(max_requests, sha256, path="/t/conv.csv"):
        md = _run_md(dict(max_requests=max_requests), {"trace": "azure-conv"}, None)
        return dict(md, scenario="azure-conv", trace=dict(path=path, sha256=sha256))

    a, b = replay(20, "1ea16e3c91a1" + "0" * 52), replay(None, "f1b25979cb62" + "0" * 52)
    assert compare_settings(a, b)[0][0] == (
        "trace rows differ: the same file /t/conv.csv read to other rows (--max-requests "
        "20 vs 300; sha256 of the rows replayed 1ea16e3c91a1 vs f1b25979cb62)")
    assert compare_settings(a, replay(20, "f1b25979cb62" + "0" * 52))[0] == [
        "trace differs: /t/conv.csv (sha256 1ea16e3c91a1) vs /t/conv.csv (sha256 "
        "f1b25979cb62)"]
    assert compare_settings(a, replay(10, "f1b25979cb62", "/u/conv.csv"))[0][0] == (
        "trace differs: /t/conv.csv (sha256 1ea16e3c91a1) vs /u/conv.csv (sha256 "
        "f1b25979cb62)")


def test_one_file_is_known_by_its_resolved_path_where_both_runs_recorded_it():
    def replay(max_requests, sha256, path, resolved):
        md = _run_md(dict(max_requests=max_requests), {"trace": "azure-conv"}, None)
        return dict(md, scenario="azure-conv",
                    trace=dict(path=path, resolved_path=resolved, sha256=sha256))

    rel = replay(10, "1ea16e3c91a1", "../t/conv.csv", "/t/conv.csv")
    assert compare_settings(rel, replay(20, "f1b25979cb62", "/t/conv.csv", "/t/conv.csv"))[0][0] == (
        "trace rows differ: the same file /t/conv.csv read to other rows (--max-requests "
        "10 vs 20; sha256 of the rows replayed 1ea16e3c91a1 vs f1b25979cb62)")
    # one text naming two files (run from other folders) is two files
    assert compare_settings(rel, replay(20, "f1b25979cb62", "../t/conv.csv", "/u/t/conv.csv"))[0][0] == (
        "trace differs: ../t/conv.csv (sha256 1ea16e3c91a1) vs ../t/conv.csv (sha256 "
        "f1b25979cb62)")
    # two pipes are no file
    assert compare_settings(replay(10, "1ea16e3c91a1", "/dev/fd/63", None),
                            replay(20, "f1b25979cb62", "/dev/fd/63", None))[0][0] == (
        "trace differs: /dev/fd/63 (sha256 1ea16e3c91a1) vs /dev/fd/63 (sha256 "
        "f1b25979cb62)")
    # an older run without resolved_path: the paths as given
    old = dict(rel, trace=dict(path="../t/conv.csv", sha256="f1b25979cb62"))
    assert compare_settings(rel, dict(old, options=dict(max_requests=20)))[0][0] == (
        "trace rows differ: the same file ../t/conv.csv read to other rows (--max-requests "
        "10 vs 20; sha256 of the rows replayed 1ea16e3c91a1 vs f1b25979cb62)")


def test_a_flag_left_to_two_scenarios_defaults_says_what_each_run_did():
    """decode-steady runs single-process cases by default, azure-conv none: neither was
    given --no-single-process, and the line says which ran them, not ``default (True)
    vs default (False)``."""
    a, b = _md(), _md(labels={"trace": "azure-conv:10"})
    a["cases"].append(dict(a["cases"][0], codec="none", transport="inproc", floor=False))
    a["scenario"], b["scenario"] = "decode-steady", "azure-conv"
    for md in (a, b):
        md["options"].update(no_single_process=False, aa=False, async_scheduling=False)
    lines = compare_settings(b, a)[0]
    assert ("single-process cases differ: not run (azure-conv's default) vs run "
            "(decode-steady's default)") in lines
    b["options"]["no_single_process"] = True
    assert ("single-process cases differ: not run (--no-single-process given) vs run "
            "(decode-steady's default)") in compare_settings(b, a)[0]


def test_a_floor_taken_in_one_workload_alone_marks_none():
    """Both runs replayed floors (no ``floors differ`` line), but of workload
    num_running=4 only one did: the case setting says so, and the workload stays
    comparable, the floor being replayed after the counted steps."""
    a = _md(floor=True)
    b = _md(floor=False)
    b["cases"].append(dict(b["cases"][0], case_id="num_running=8/send/msgpack#0",
                           labels={"num_running": 8}, floor=True))
    expected = (["case setting floor differs: True vs False (workload num_running=4)"], [])
    assert compare_settings(a, b) == expected
    assert compare_settings(a, b, exact=True) == expected


def test_warmup_steps_are_an_option_as_steps_are():
    """--warmup-steps 10 against the default 30: an option line, as --steps gets, beside
    the case setting, and every shared workload marked; a run written before the option
    was recorded shows what its cases ran, as not recorded."""
    def run(warmup, given):
        md = _run_md(dict(model=None, steps=60, warmup_steps=given), {"num_running": 4}, 60)
        md["cases"][0]["warmup_steps"] = warmup
        return md

    short, default = run(10, 10), run(30, None)
    assert compare_settings(short, default) == ([
        "option --warmup-steps differs: 10 vs default (30)"], ["num_running=4"])
    older = run(30, None)
    del older["options"]["warmup_steps"]
    assert compare_settings(older, short)[0] == [
        "option --warmup-steps differs: not recorded (30) vs 10"]
    assert compare_settings(older, default) == ([], [])
    # every scenario takes it: a replay (which takes no --steps) against a steady run
    replay = run(10, 10)
    replay.update(scenario="azure-conv")
    default.update(scenario="decode-steady")
    assert compare_settings(replay, default)[0][0] == (
        "option --warmup-steps differs: 10 vs default (30)")


def test_a_run_records_its_warmup_steps_as_given(overhead_run):
    md = json.loads((overhead_run / "summary.json").read_text())["metadata"]
    assert md["options"]["warmup_steps"] == 5
    assert {c["warmup_steps"] for c in md["cases"]} == {5}


def test_scheduler_limits_differ_between_runs_that_share_no_workload():
    """--max-num-seqs 1 in a replay against a steady run left to its default (its
    running requests): an option line although no workload is shared, and none where
    the values in effect are the same; a run written before the limits were recorded
    shows what its cases ran, as not recorded."""
    def run(labels, given, max_num_seqs):
        md = _run_md(dict(model=None, max_num_seqs=given), labels, None)
        md["cases"][0]["scheduler"] = {"max_num_seqs": max_num_seqs, "block_size": 16}
        return md

    replay = run({"trace": "azure-conv:20"}, 1, 1)
    steady = run({"num_running": 4}, None, 4)
    assert compare_settings(replay, steady) == (
        ["option --max-num-seqs differs: 1 vs default (4)"], [])
    assert compare_settings(run({"trace": "azure-conv:20"}, 4, 4), steady) == ([], [])
    older = run({"trace": "azure-conv:20"}, None, 256)
    del older["options"]["max_num_seqs"]
    assert compare_settings(older, replay) == (
        ["option --max-num-seqs differs: not recorded (256) vs 1"], ["trace=azure-conv:20"])
    # a shared workload: the option's line alone (its case setting would say it again),
    # the workload marked
    shared = run({"num_running": 4}, 8, 8)
    assert compare_settings(shared, steady) == (
        ["option --max-num-seqs differs: 8 vs default (4)"], ["num_running=4"])


def test_a_run_records_the_scheduler_limits_as_given(tmp_path):
    run_bench(tmp_path / "r", OVERHEAD + ["--max-num-seqs", "8", "--block-size", "32"])
    md = json.loads((tmp_path / "r" / "summary.json").read_text())["metadata"]
    assert {k: md["options"][k] for k in ("max_num_seqs", "max_num_batched_tokens",
                                          "max_model_len", "block_size", "num_blocks")} == {
        "max_num_seqs": 8, "max_num_batched_tokens": None, "max_model_len": None,
        "block_size": 32, "num_blocks": None}
    assert {c["scheduler"]["max_num_seqs"] for c in md["cases"]} == {8}


def test_a_default_that_follows_num_running_is_no_difference_where_the_grids_overlap():
    """--max-num-seqs and --num-blocks left to their defaults follow --num-running: runs
    of 4 and 16 against one of 4 took other defaults only at 16, which they do not
    share; no line for them, and the shared workload is not marked."""
    def run(grid):
        md = dict(seed=0, options=dict(num_running=grid, max_num_seqs=None,
                                       num_blocks=None), cases=[])
        for n in grid:
            md["cases"].append(dict(case_id=f"num_running={n}/send/msgpack#0",
                                    labels={"num_running": n}, policy="send",
                                    codec="msgpack", repetition=0,
                                    scheduler=dict(max_num_seqs=n, num_blocks=272 * n)))
        return md

    assert compare_settings(run([4, 16]), run([4])) == (
        ["option --num-running differs: [4, 16] vs [4]"], [])
    # given by hand in one run, the line stays, and it marks the shared workload
    given = run([4])
    given["options"]["max_num_seqs"] = 4
    assert compare_settings(run([4, 16]), given) == ([
        "option --max-num-seqs differs: default (4, 16) vs 4",
        "option --num-running differs: [4, 16] vs [4]"], ["num_running=4"])


def test_a_default_that_follows_num_running_is_no_difference_where_no_workload_is_shared():
    """Runs of --num-running 8 and 4 share no workload: the --num-running line says why
    their --max-num-seqs and --num-blocks defaults took other values, and no line of
    theirs says it again; given by hand in one run, --max-num-seqs keeps its line, and
    so does a default that differs where the options it follows do not."""
    def run(n, **given):
        options = dict(num_running=[n], max_num_seqs=None, num_blocks=None, block_size=None)
        options.update(given)
        return dict(seed=0, options=options, cases=[dict(
            case_id=f"num_running={n}/send/msgpack#0", labels={"num_running": n},
            policy="send", codec="msgpack", repetition=0,
            scheduler=dict(max_num_seqs=given.get("max_num_seqs") or n,
                           num_blocks=272 * n, block_size=given.get("block_size") or 16))])

    assert compare_settings(run(8), run(4)) == (
        ["option --num-running differs: [8] vs [4]"], [])
    assert compare_settings(run(8, max_num_seqs=8), run(4)) == ([
        "option --max-num-seqs differs: 8 vs default (4)",
        "option --num-running differs: [8] vs [4]"], [])
    assert compare_settings(run(8, num_running=None), run(4, num_running=None)) == (
        ["option --num-running differs: default (8) vs default (4)"], [])
    # the same --num-running, no workload shared (other codecs): a --num-blocks default
    # that took other values is no consequence of a listed option, and keeps its line
    a, b = run(4), run(4)
    b["cases"][0].update(codec="pickle", case_id="num_running=4/send/pickle#0")
    b["cases"][0]["scheduler"]["num_blocks"] = 2176
    assert compare_settings(a, b) == ([
        "option --codecs differs: not recorded (msgpack) vs not recorded (pickle)",
        "option --num-blocks differs: default (1088) vs default (2176)"], [])
