"""The pandas loader, the figures and the report command, on a small real run."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis_run import REPO, copy_as_another_run, run_bench
from fault_helpers import one_runner_mark
from ipc_bench import cli
from ipc_bench.report import plots
from ipc_bench.report.findings import findings
from ipc_bench.report.blocks import pair_value
from ipc_bench.analysis import stats
from ipc_bench.harness.spec import RUNNER_COLUMNS, SCHED_COLUMNS
from ipc_bench.analysis.results import Results, load
from ipc_bench.analysis.run_files import ResultsError
from ipc_bench.harness.run_folder import CASE_KEYS, FORMAT_VERSION, REQUEST_COLUMNS


@pytest.fixture(scope="module")
def run_dir(shared_small_run) -> Path:
    """The session's small run (conftest ``shared_small_run``): read only."""
    return shared_small_run


@pytest.fixture(scope="module")
def res(run_dir) -> Results:
    return load(run_dir)


@pytest.fixture(scope="module")
def summary(run_dir) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


# ------------------------------------------------------------------------------ loader


def test_load_columns_and_types(res, run_dir, summary):
    assert res.run_ids == ["small-run"]
    assert res.status == {"small-run": "complete"}
    assert res.paths["small-run"] == run_dir
    assert res.metadata["small-run"]["scenario"] == "decode-steady"
    st = res.steps
    expected = ["run_id", *CASE_KEYS, *SCHED_COLUMNS, *RUNNER_COLUMNS]
    assert list(st.columns[:len(expected)]) == expected
    assert {"transport", "model", "num_running"} <= set(st.columns)
    for col in ("seq", "step", "step_ns", "encode_ns", "s2r_payload_bytes", "runner_idle_ns"):
        assert str(st[col].dtype) == "int64", col
    assert str(st["counted"].dtype) == "bool" and str(st["warmup"].dtype) == "bool"
    assert set(st["run_id"]) == {"small-run"}
    assert sorted(set(st["num_running"])) == [4, 16]
    assert list(res.requests.columns[:1 + len(CASE_KEYS) + len(REQUEST_COLUMNS)]) == [
        "run_id", *CASE_KEYS, *REQUEST_COLUMNS]
    assert list(res.floor.columns) == ["run_id", "case_id", "i", "floor_step_ns"]
    assert res.itl.empty  # logical clock: no inter-token latencies
    # One cases row per summary case, in order, with the summary's values.
    assert list(res.cases["case_id"]) == [c["case_id"] for c in summary["cases"]]
    assert set(res.cases["codec"]) == {"msgpack", "pickle", "none"}
    for c in summary["cases"]:
        rows = st[st["case_id"] == c["case_id"]]
        assert len(rows) == c["num_total_steps"]
        counted = rows[rows["counted"]]
        assert len(counted) == c["num_steps"]
        assert counted["s2r_payload_bytes"].mean() == pytest.approx(
            c["sched_to_runner_payload_bytes_per_step"], rel=1e-12)
        assert counted["num_output_tokens"].sum() == c["output_tokens"]
        assert len(res.requests[res.requests["case_id"] == c["case_id"]]) == c["num_requests"]
        if c["codec"] != "none":  # the runner's phases per step, not its moments
            assert c["runner_forward_ns_per_step"] == pytest.approx(
                counted["runner_forward_ns"].mean(), rel=1e-12)
            assert "runner_forward_start_ns_per_step" not in c
            assert "runner_t0_ns_per_step" not in c


def test_workload_sorts_by_size_in_every_table(res):
    # as text "num_running=16" sorts before "num_running=4"
    assert sorted(["num_running=4", "num_running=16"]) == ["num_running=16", "num_running=4"]
    order = ["num_running=4", "num_running=16"]
    for name in ("cases", "steps", "requests"):
        df = getattr(res, name)
        assert df["workload"].cat.ordered, name
        assert list(df["workload"].cat.categories) == order, name
        shown = df.sort_values("workload", kind="stable")["workload"].astype(str)
        assert list(dict.fromkeys(shown)) == order, name
        assert list(df.groupby("workload", observed=True).size().index) == order, name
    assert res.cases["workload"].min() == "num_running=4"
    assert (res.cases["workload"] == "num_running=16").sum() == 6  # the strings as they were
    # a table of some runs or cases lists only the workloads it holds
    from ipc_bench.analysis.results import _used_workloads

    just4 = res.cases[res.cases["workload"] == "num_running=4"]
    assert list(just4["workload"].cat.categories) == order  # pandas keeps them
    assert list(_used_workloads(just4)["workload"].cat.categories) == ["num_running=4"]
    assert list(res.select("small-run").cases["workload"].cat.categories) == order


def test_workload_order_reads_numbers_by_value():
    from ipc_bench.analysis.results import workload_order

    assert sorted(["num_running=256", "num_running=16", "num_running=64", "num_running=1"],
                  key=workload_order) == ["num_running=1", "num_running=16",
                                          "num_running=64", "num_running=256"]
    assert sorted(["num_running=16,step_time_ms=20.0", "num_running=16,step_time_ms=2.5",
                   "num_running=4,step_time_ms=5.0"], key=workload_order) == [
        "num_running=4,step_time_ms=5.0", "num_running=16,step_time_ms=2.5",
        "num_running=16,step_time_ms=20.0"]


def test_steps_and_requests_carry_the_cases_arm(res):
    arm = dict(zip(res.cases["case_id"], res.cases["arm"]))
    assert set(arm.values()) == {"send", "cached"}
    for name in ("steps", "requests"):
        df = getattr(res, name)
        assert [arm[c] for c in df["case_id"]] == list(df["arm"]), name
    assert res.steps.groupby("arm").size().to_dict() == (
        res.steps.groupby("policy").size().to_dict())


def test_results_docstring_names_every_column():
    doc = Results.__doc__
    for name in SCHED_COLUMNS + RUNNER_COLUMNS + REQUEST_COLUMNS:
        assert re.search(rf"\b{name}\b", doc), f"{name} is not documented in Results"


def test_load_several_runs_tells_them_apart(res, run_dir, tmp_path):
    other = copy_as_another_run(run_dir, tmp_path / "small-run")
    both = load([run_dir, other])
    # the same name: each labelled by the end of its path that tells it apart
    mine = f"{run_dir.resolve().parent.name}/small-run"
    theirs = f"{tmp_path.name}/small-run"
    assert both.run_ids == [mine, theirs]
    assert load([other, run_dir]).run_ids == [theirs, mine]  # not by order
    assert both.steps.groupby("run_id").size().to_dict() == {
        mine: len(res.steps), theirs: len(res.steps)}  # res: load(run_dir), the module's
    assert list(both.select(theirs).cases["run_id"].unique()) == [theirs]
    with pytest.raises(KeyError):
        both.select("nope")


@pytest.mark.parametrize("version, message", [
    (0, "result format version 0 is older than the version this ipc-bench reads "
        f"({FORMAT_VERSION}); re-run the scenario with this ipc-bench"),
    (FORMAT_VERSION + 1, f"result format version {FORMAT_VERSION + 1} is newer than the "
                         f"version this ipc-bench reads ({FORMAT_VERSION}); read it with the "
                         "newer ipc-bench that wrote it"),
    ("x", f"result format version \"x\" is not supported (this ipc-bench reads version "
          f"{FORMAT_VERSION})"),
])
def test_load_other_format_version_names_it(run_dir, tmp_path, version, message):
    copy = tmp_path / "old-run"
    shutil.copytree(run_dir, copy)
    data = json.loads((copy / "summary.json").read_text())
    data["format_version"] = version
    (copy / "summary.json").write_text(json.dumps(data))
    with pytest.raises(ResultsError) as err:
        load(copy)
    assert str(err.value) == f"{copy / 'summary.json'}: {message}"


def test_load_a_summary_nested_too_deeply_is_one_line(run_dir, tmp_path):
    """A value nested past what ``json`` parses (a hand edit, a damaged file) is a
    ResultsError naming the file, as any summary that is not JSON, not a
    RecursionError."""
    copy = tmp_path / "deep-run"
    shutil.copytree(run_dir, copy)
    text = (copy / "summary.json").read_text().rstrip()
    assert text.endswith("}")
    (copy / "summary.json").write_text(
        text[:-1] + ', "notes": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ResultsError) as err:
        load(copy)
    assert str(err.value) == (f"cannot read {copy / 'summary.json'}: arrays or objects "
                              "nested too deeply to parse")


def test_load_bad_folders(tmp_path):
    with pytest.raises(ResultsError, match=r"no such folder$"):
        load(tmp_path / "missing")
    with pytest.raises(ResultsError, match=r"not a run folder \(no summary.json\)$"):
        load(tmp_path)
    with pytest.raises(ResultsError, match="no run folder given"):
        load([])
    with pytest.raises(ResultsError) as err:
        load(7)
    assert str(err.value) == "7 is not a path or a list of paths"
    with pytest.raises(ResultsError) as err:
        load([tmp_path, None])
    assert str(err.value) == "None is not a path (a str, bytes or os.PathLike)"


def test_a_published_summary_json_alone_is_refused_with_how_to_read_it():
    import pandas as pd

    published = Path(__file__).resolve().parents[2] / (
        "results/published/decode-steady/decode-steady-r5.summary.json")
    with pytest.raises(ResultsError) as err:
        load(published)
    assert str(err.value) == (
        f"{published}: not a folder (a run's summary.json alone, as published beside a "
        "report, holds its per-case figures only: give its run folder, or read them with "
        f"pandas.json_normalize(json.load(open({str(published)!r}))['cases']))")
    # the way it gives works: one row per case of the published run
    cases = pd.json_normalize(json.load(open(published))["cases"])
    assert len(cases) == 120 and "output_tokens_per_s" in cases
    with pytest.raises(ResultsError) as err:  # another file: no hint
        load(published.with_name("report.md"))
    assert str(err.value) == f"{published.with_name('report.md')}: not a folder"


def test_load_takes_a_path_as_bytes(run_dir):
    """A path given as bytes (``os.fsencode``, what ``os.listdir(b".")`` gives) loads
    the run as its text form does."""
    res = load(os.fsencode(run_dir))
    assert list(res.paths) == [run_dir.name]
    assert len(res.cases) == len(load(run_dir).cases)


# ------------------------------------------------------------------------------ pairs


def test_paired_send_cached(res):
    assert res.labels == ["num_running"]  # from the metadata's cases[].labels
    p = stats.paired(res.cases, "sched_to_runner_payload_bytes_per_step", labels=res.labels)
    # 2 workloads x (msgpack, pickle): the single-process cases (codec none) have no
    # payload figure, as they have no wire figure (results.SINGLE_PROCESS_NO_PAYLOAD)
    assert len(p) == 4 and set(p["codec"]) == {"msgpack", "pickle"}
    wire = stats.paired(res.cases, "sched_to_runner_wire_bytes_per_step")
    assert sorted(zip(wire["workload"], wire["codec"])) == sorted(zip(p["workload"],
                                                                      p["codec"]))
    c = res.cases.set_index(["workload", "policy", "codec"])
    for row in p.itertuples():
        assert row.send == c.loc[(row.workload, "send", row.codec),
                                 "sched_to_runner_payload_bytes_per_step"]
        assert row.cached == c.loc[(row.workload, "cached", row.codec),
                                   "sched_to_runner_payload_bytes_per_step"]
        assert row.diff == row.send - row.cached
    two_process = p[p["codec"] != "none"]
    assert (two_process["diff"] > 0).all()  # cached always ships fewer bytes
    assert sorted(set(p["num_running"])) == [4, 16]  # label columns come along


# ------------------------------------------------------------------------------ figures


@pytest.mark.parametrize("name", [n for n, *_ in plots.FIGURES
                                  if n not in ("latency_cdfs", "tp_saving", "tp_per_step")])
def test_figure_has_labelled_axes(res, name):
    fn = dict((n, f) for n, f, _ in plots.FIGURES)[name]
    fig = fn(res)
    labels = plots.axis_labels(fig)
    assert labels
    assert all(y for _, y in labels), labels
    assert any(x for x, _ in labels), labels
    png = plots.figure_png(fig)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_bytes_figure_plots_the_summary_values(res, summary):
    fig = plots.bytes_per_step(res)
    s2r = fig.axes[0]
    line = next(ln for ln in s2r.lines if ln.get_label() == "send / msgpack")
    expected = {c["num_running"]: c["sched_to_runner_payload_bytes_per_step"]
                for c in summary["cases"] if c["policy"] == "send" and c["codec"] == "msgpack"}
    assert dict(zip(line.get_xdata(), line.get_ydata())) == pytest.approx(expected)
    # The single-process cases move no bytes and are left out.
    assert not any("single process" in ln.get_label() for ln in s2r.lines)


def test_step_components_sum_to_the_step(res):
    st = res.steps[res.steps["counted"]]
    comp = plots.step_components(st)
    parts = [name for name, *_ in plots.STEP_COMPONENTS]
    assert (comp[parts].sum(axis=1) == st["step_ns"]).all()


def test_policy_colours_are_fixed(res):
    for fig in (plots.bytes_per_step(res), plots.codec_time_per_step(res)):
        for ax in fig.axes:
            for ln in ax.lines:
                if ln.get_label().startswith("send"):
                    assert ln.get_color() == plots.POLICY_COLORS["send"]
                elif ln.get_label().startswith("cached"):
                    assert ln.get_color() == plots.POLICY_COLORS["cached"]


def test_latency_figure_needs_a_timed_replay(res):
    with pytest.raises(plots.NoData, match="not a timed replay"):
        plots.latency_cdfs(res)
    # Given per-request latencies (as a timed replay writes them), it draws both CDFs.
    import pandas as pd

    req = res.requests.assign(ttft_s=0.001 * (1 + res.requests["index"]))
    itl = req[["run_id", "case_id", "policy", "codec", "index"]].assign(itl_s=0.0002)
    timed = Results(cases=res.cases, steps=res.steps, requests=req, floor=res.floor,
                    itl=pd.DataFrame(itl), metadata=res.metadata, status=res.status,
                    problems=res.problems, paths=res.paths)
    fig = plots.latency_cdfs(timed)
    assert [x for x, _ in plots.axis_labels(fig)] == ["TTFT (ms)", "inter-token latency (ms)"]
    first = fig.axes[0].lines[0]
    assert first.get_ydata()[-1] == 1.0


def test_one_run_figures_refuse_several(res, run_dir, tmp_path):
    copy_as_another_run(run_dir, tmp_path / "b")
    both = load([run_dir, tmp_path / "b"])
    with pytest.raises(ValueError, match="pass results.select"):
        plots.bytes_per_step(both)
    assert plots.throughput(both) is not None  # compares runs side by side


# ------------------------------------------------------------------------------ report


def test_report_writes_markdown_html_and_pngs(run_dir, summary, tmp_path, capsys):
    out = tmp_path / "rep"
    assert cli.main(["report", str(run_dir), "--output", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"report: {out / 'report.html'}"
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == sorted(f"{n}.png" for n, *_ in plots.FIGURES
                          if n not in ("latency_cdfs", "tp_saving", "tp_per_step"))
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    for name in pngs:
        assert f"]({name})" in md
        assert f"({name})" in html  # named in the caption
    assert html.count('src="data:image/png;base64,') == len(pngs)
    assert "<img" in html and 'src="http' not in html  # nothing fetched from the network
    # the figures it cannot show: one list under the figures drawn, each with why
    lead = md.index("**Not shown**, and why:")
    assert lead > max(md.index(f"]({name})") for name in pngs)
    listed = md[lead:].split("\n\n")[1].splitlines()
    assert "- TTFT and ITL distributions: no per-request latencies (ttft_s, itl.csv): not a " \
           "timed replay." in listed
    assert ("- Send's saving against the number of ranks: no tensor-parallel cases "
            "(scenario tp-broadcast).") in listed
    assert ("- Bytes written once and the replicated scheduler against the number of ranks: "
            "no tensor-parallel cases (scenario tp-broadcast).") in listed
    assert (out / "small-run.summary.json").read_text() == (run_dir / "summary.json").read_text()
    # Findings are the summary's numbers.
    by = {(c["num_running"], c["policy"], c["codec"]): c for c in summary["cases"]}
    send, cached = by[(16, "send", "msgpack")], by[(16, "cached", "msgpack")]
    fewer = (send["sched_to_runner_payload_bytes_per_step"]
             - cached["sched_to_runner_payload_bytes_per_step"])
    pct = 100 * fewer / send["sched_to_runner_payload_bytes_per_step"]
    tput = 100 * (cached["output_tokens_per_s"] / send["output_tokens_per_s"] - 1)
    assert (f"At 16 running requests (msgpack{one_runner_mark()}), cached sends "
            f"{fewer:,.0f} fewer bytes per "
            f"step to the runner ({pct:.1f} % of send's scheduler → runner payload)") in md
    assert f"output tokens/s changes by {tput:+.1f} %" in md
    for section in ("## Findings", "## Figures", "## Cases", "## Configuration",
                    "## Environment"):
        assert section in md
    assert "| python_version | " in md


def test_report_compares_runs_and_warns_on_metadata(run_dir, tmp_path, capsys):
    other = copy_as_another_run(run_dir, tmp_path / "other-run")
    data = json.loads((other / "summary.json").read_text())
    commit = (data["metadata"].get("git") or {}).get("commit")
    # a run made from a checkout with changed tracked files says so after each commit
    dirty = " (dirty)" if (data["metadata"].get("git") or {}).get("dirty") else ""
    data["metadata"]["git"] = dict(data["metadata"].get("git") or {}, commit="f" * 40)
    (other / "summary.json").write_text(json.dumps(data))
    out = tmp_path / "cmp"
    assert cli.main(["report", str(run_dir), str(other), "--output", str(out)]) == 0
    md = (out / "report.md").read_text()
    assert md.startswith("# ipc-bench report: 2 runs compared")
    assert "## Side by side" in md
    assert "| workload | arm | codec | small-run | other-run | other-run ÷ small-run |" in md
    # each value under its run's name: other-run's first
    assert (f"other-run against small-run: git commit differs: {'f' * 40}{dirty} vs "
            f"{commit + dirty if commit else 'absent'}") in md
    assert (out / "compare-throughput.png").is_file()
    assert (out / "other-run-bytes_per_step.png").is_file()
    assert (out / "small-run-bytes_per_step.png").is_file()


#: The CLI comparison block's metric labels -> the report's cached-against-send labels.
CLI_TO_REPORT = {"out tok/s": "output tokens/s", "build": "build µs/step",
                 "encode": "encode µs/step", "decode": "decode µs/step",
                 "step mean": "step µs (mean)", "s2r bytes": "s2r payload B/step"}


def _cli_comparison_rows(stdout: str) -> dict[tuple, tuple[str, str]]:
    """(workload, codec, report label) -> (ratio, ratio CI) from the CLI's block."""
    out, where = {}, None
    for line in stdout.splitlines():
        head = re.match(r"cached vs send  \[(.+)\]  (\w+)°?: cached/send paired by "
                        r"repetition", line)  # ° where marked (N = 1 on 2 cores)
        if head:
            where = head.groups()
            continue
        cells = re.split(r"\s{2,}", line.strip())
        if where and cells[0] in CLI_TO_REPORT and len(cells) == 10:
            out[where + (CLI_TO_REPORT[cells[0]],)] = (cells[4], cells[5])
    return out


def test_report_intervals_are_the_cli_comparison_block(tmp_path):
    run = tmp_path / "repeat-run"
    stdout = run_bench(run, ["--scenario", "decode-steady", "--num-running", "4",
                             "--steps", "20", "--warmup-steps", "5", "--codecs", "msgpack",
                             "--repeat", "2"])
    cli_rows = _cli_comparison_rows(stdout)
    assert {(c, m) for _, c, m in cli_rows} >= {("msgpack", m) for m in CLI_TO_REPORT.values()}
    assert ("num_running=4", "none", "output tokens/s") in cli_rows  # single process too
    assert cli.main(["report", str(run), "--output", str(tmp_path / "rep"),
                     "--no-figures"]) == 0  # the tables and findings alone
    md = (tmp_path / "rep" / "report.md").read_text()
    table = {}
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 8 and cells[3] == "2":  # (a timing row's codec marked ° on 2 cores)
            table[(cells[0], cells[1].rstrip("°"), cells[2])] = cells
    for key, (ratio, ci) in cli_rows.items():
        if key[1] == "none" and "B/step" in key[2]:
            continue  # the report leaves out bytes of the in-process cases
        assert table[key][7] == f"{ratio} {ci}", key
    # The findings' interval and the table's difference come from the same comparison
    # as the summary.json comparisons that the CLI block printed.
    comparisons = json.loads((run / "summary.json").read_text())["comparisons"]
    entry = next(c for c in comparisons if c["codec"] == "msgpack")
    tput = entry["metrics"]["output_tokens_per_s"]
    # two noisy repetitions can put an end beyond 1000 or below 0.001 (>1000, <0.001)
    assert cli_rows[("num_running=4", "msgpack", "output tokens/s")] == (
        f"{tput['ratio_geomean']:.3f}", stats.ratio_interval(tput["ratio_ci_low"],
                                                             tput["ratio_ci_high"]))
    assert (f"output tokens/s changes by {100 * (tput['ratio_geomean'] - 1):+.1f} % "
            + stats.ratio_interval(tput["ratio_ci_low"], tput["ratio_ci_high"], percent=True)
            + " (over 2 repetitions") in md
    build = entry["metrics"]["build_ns_per_step"]
    assert table[("num_running=4", "msgpack", "build µs/step")][6] == pair_value(
        build["diff_mean"] * 1e-3)


@pytest.mark.parametrize("args, message", [
    (["{tmp}/missing"], "bench.py report: error: {tmp}/missing: no such folder"),
    (["{tmp}"], "bench.py report: error: {tmp}: not a run folder (no summary.json)"),
    ([], "bench.py report: error: the following arguments are required: RUN_DIR"),
    ([""], "bench.py report: error: argument RUN_DIR: expected the path of a folder, got ''"),
])
def test_report_bad_input_exit_2(tmp_path, capsys, args, message):
    argv = ["report"] + [a.format(tmp=tmp_path) for a in args]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err == message.format(tmp=tmp_path) + "\n"


@pytest.mark.parametrize("given, message", [
    ("listed", "{tmp}/listed/summary.json: not a JSON object (the file holds an array)"),
    ("named", "{tmp}/named/summary.json: not a JSON object (the file holds a string)"),
    ("broken", "cannot read {tmp}/broken/summary.json: Expecting ',' delimiter: line 1 "
               "column 9 (char 8)"),
    ("nested", "cannot read {tmp}/nested/summary.json: arrays or objects nested too deeply "
               "to parse"),
    # past int()'s 4,300 digits (was its advice: use sys.set_int_max_str_digits() ...)
    ("huge", "cannot read {tmp}/huge/summary.json: it holds a whole number of 5,000 "
             "digits, not a plausible value"),
    ("folder", "{tmp}/folder: not a run folder (summary.json is not a file)"),
    ("w" * 300, "cannot read run folder {tmp}/" + "w" * 300 + ": File name too long"),
    ("file/run", "cannot read run folder {tmp}/file/run: Not a directory"),
    ("loop", "cannot read run folder {tmp}/loop: Too many levels of symbolic links"),
])
def test_report_says_why_a_run_folder_cannot_be_read(tmp_path, capsys, given, message):
    """A summary.json that is not JSON (nested past what the parser takes too), not an
    object or not a file, and a run folder the system will not look up, each get their
    own reason (exit 2, nothing written, no traceback)."""
    for name, text in [("listed", "[]"), ("named", '"run"'), ("broken", '{"a": 1 "b"}'),
                       ("nested", '{"notes": ' + "[" * 100_000 + "]" * 100_000 + "}"),
                       ("huge", '{"format_version": 1, "n": -' + "9" * 5000 + "}")]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(text)
    (tmp_path / "folder" / "summary.json").mkdir(parents=True)
    (tmp_path / "file").write_text("x")
    (tmp_path / "loop").symlink_to("loop")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert cli.main(["report", f"{tmp_path}/{given}"]) == 2
    assert capsys.readouterr() == (
        "", f"bench.py report: error: {message.format(tmp=tmp_path)}\n")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_summary_is_parsed_with_ints_of_the_c_scanner(tmp_path, monkeypatch):
    """``json.loads`` keeps its own ``int`` (no ``parse_int``: a Python call for each
    whole number slowed a large summary's read); ``int``'s refusal of more digits than
    its limit is still one plausible-value line, counted from its message or, where
    it does not count them, 'more than' the limit."""
    from ipc_bench.analysis import results, run_files
    called = []
    real = json.loads

    def loads(text, **kwargs):
        called.append(kwargs)
        return real(text, **kwargs)

    monkeypatch.setattr(results.json, "loads", loads)
    (tmp_path / "summary.json").write_text(f'{{"format_version": {FORMAT_VERSION}, "n": 12}}')
    assert results.read_summary(tmp_path) == {"format_version": FORMAT_VERSION, "n": 12}
    assert [sorted(kw) for kw in called] == [["object_pairs_hook"]]  # keys given twice
    assert run_files._too_many_digits(ValueError(
        "Exceeds the limit (4300 digits) for integer string conversion; use "
        "sys.set_int_max_str_digits() to increase the limit")) == (
        f"it holds a whole number of more than {sys.get_int_max_str_digits():,} digits, "
        "not a plausible value")
    assert run_files._too_many_digits(ValueError("Expecting value")) is None


def test_report_entry_point_exit_code(tmp_path):
    proc = subprocess.run([sys.executable, "bench.py", "report", str(tmp_path / "nope")],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == f"bench.py report: error: {tmp_path / 'nope'}: no such folder\n"


def test_a_run_imports_neither_pandas_nor_matplotlib(tmp_path):
    code = ("import sys; from ipc_bench.cli import main; "
            f"rc = main(['--scenario', 'decode-steady', '--num-running', '2', '--steps', '5', "
            f"'--warmup-steps', '0', '--codecs', 'msgpack', '--quiet', "
            f"'--output', {str(tmp_path / 'r')!r}]); "
            "bad = [m for m in ('pandas', 'matplotlib', 'tqdm') if m in sys.modules]; "
            "print(rc, bad)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "0 []", proc.stderr


def test_step_time_sweep_lights_up_the_share_figure(tmp_path):
    run = tmp_path / "sweep"
    stdout = run_bench(run, ["--scenario", "step-time", "--num-running", "2,4",
                             "--step-time-ms", "1,2", "--steps", "20", "--warmup-steps", "2",
                             "--codecs", "msgpack"])
    res = load(run)
    # the loaded machine may stretch a fixed step: such a pair's shares are withheld
    # (`-*` in the table), not drawn, and counted for the caption (every one withheld:
    # no figure)
    withheld = plots._withheld_shares(res.cases.to_dict("records"))
    num_withheld = sum(len(cols) for cols in withheld.values())
    if num_withheld == 2 * 2 * 2:  # 2 step times x 2 batch sizes, both shares each
        with pytest.raises(plots.NoData):
            plots.send_cost_share(res)
        return
    fig = plots.send_cost_share(res)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == [f"msgpack, step_time_ms={t}: {what}" for t in (1, 2)
                      for what in ("whole step", "build+encode+decode")]
    assert plots.drawn(fig)["left_out"] == num_withheld
    table = plots.send_cost_table(res.cases, labels=res.labels)
    assert sorted(table["step_time_ms"].unique()) == [1.0, 2.0]
    assert (table["step_ms"] > table["step_time_ms"]).all()  # a measured step includes the busy-wait
    lines = findings(res)
    shares = [line for line in lines if line.startswith("fixed step ")]
    assert [line[:34] for line in shares] == [f"fixed step {t} ms, B = {b}, msgpack: s"
                                              for t in (1, 2) for b in (2, 4)], lines
    # The report's share lines are the terminal's, figure for figure: the terminal
    # words the rows with a warning only, and says the report words every row.
    warned_lines = [line for line in shares if " Warning: " in line]
    printed = [line for line in stdout.splitlines() if line.startswith("fixed step ")]
    assert printed == warned_lines, (shares, stdout)
    assert (f"Rows with a warning: {len(warned_lines)} of 4"
            + (", worded above" if warned_lines else "")
            + "; the report's findings (bench.py report) word every row.") \
        in stdout.splitlines()


TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"


@pytest.mark.skipif(not (TRACES / "AzureLLMInferenceTrace_conv.csv").is_file(),
                    reason="Azure traces not in ../shared/traces")
def test_timed_replay_report_has_latency_cdfs(tmp_path):
    run = tmp_path / "timed"
    run_bench(run, ["--scenario", "azure-conv-timed",
                    "--trace", str(TRACES / "AzureLLMInferenceTrace_conv.csv"),
                    "--max-requests", "20", "--trace-speedup", "50", "--codecs", "msgpack"])
    res = load(run)
    assert len(res.itl) == int((res.requests["num_output_tokens"] - 1).clip(lower=0).sum())
    out = tmp_path / "rep"
    assert cli.main(["report", str(run), "--output", str(out)]) == 0
    assert (out / "latency_cdfs.png").is_file()
    md = (out / "report.md").read_text()
    assert "latency send → cached: TTFT p50 " in md
    assert "This is a timed replay" in md


def test_the_configuration_block_shows_the_options_that_shaped_the_run(tmp_path, capsys):
    """--frontend, --num-spec-tokens and --token-ids hist: (path and digest) reach the
    report's configuration from a real run's metadata."""
    import hashlib

    hist = tmp_path / "h.csv"
    hist.write_text("# counts\n2,7\n1,5\n")
    run = tmp_path / "run"
    assert cli.main(["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
                     "--warmup-steps", "0", "--policies", "cached", "--codecs", "msgpack",
                     "--no-single-process", "--frontend", "--num-spec-tokens", "2",
                     "--token-ids", f"hist:{hist}", "--quiet", "--output", str(run)]) == 0
    out = tmp_path / "rep"
    # the configuration block alone is read: no figure drawn
    assert cli.main(["report", str(run), "--output", str(out), "--no-figures"]) == 0
    capsys.readouterr()
    md = (out / "report.md").read_text()
    config = md[md.index("## Configuration"):md.index("## Environment")]
    digest = hashlib.sha256(b"1,5\n2,7\n").hexdigest()
    assert f"- token ids: `hist:{hist}`, sha256 `{digest}`" in config.splitlines()
    row = [line for line in config.splitlines() if line.startswith("| 1 case: ")]
    assert len(row) == 1
    sched, model, run_col = row[0].split(" | ")[1:4]
    assert "num_spec_tokens=2" in sched.split(", ")
    assert f"token_ids_sha256={digest}" in model.split(", ")
    assert f"token_ids=hist:{hist}" in model.split(", ")
    assert "spec_acceptance=0.7" in model.split(", ")  # with drafts it applies
    # what the null model does not use is not listed as its setting
    assert not {"step_time_ms", "preset", "roofline", "device"} & {
        kv.split("=")[0] for kv in model.split(", ")}
    assert "frontend=True" in run_col.split(", ")
    assert "async_scheduling" not in run_col  # at its default: not shown


def test_the_configuration_block_names_async_pp_tp_and_remote_runners():
    from types import SimpleNamespace

    from ipc_bench.report.blocks import _config_blocks

    base = dict(labels={}, policy="cached", codec="msgpack", repetition=0, arm="cached",
                scheduler={"max_num_seqs": 4}, model={"name": "null"}, transport="tcp",
                async_scheduling=False, frontend=False, tp=None, pp=None,
                trace_speedup=None, floor=True)
    md = {"scenario": "x", "seed": 0, "command_line": ["bench.py"],
          "remote_runners": {"count": 2, "host": "10.0.0.5", "ports": {"ctls": [5600]}},
          "cases": [dict(base, case_id="a"),
                    dict(base, case_id="b", arm="cached+async", async_scheduling=True),
                    dict(base, case_id="c", pp=2, floor=False),
                    dict(base, case_id="d", tp=4)]}
    results = SimpleNamespace(metadata={"r": md}, status={"r": "complete"})
    blocks = _config_blocks(results, "r")
    assert blocks[0][1][3] == "remote runners: 2 on `10.0.0.5` (ports ctls 5600)"
    runs = {row[0]: row[3] for row in blocks[1][2]}
    assert runs == {"1 case: a": "arm=cached, transport=tcp",
                    "1 case: b": "arm=cached+async, async_scheduling=True, transport=tcp",
                    "1 case: c": "arm=cached, floor=False, pp=2, transport=tcp",
                    "1 case: d": "arm=cached, tp=4, transport=tcp"}


def test_a_folder_that_is_not_a_run_says_what_it_holds(tmp_path, capsys):
    """A published report's folder and a folder of runs (``results/``) are refused
    with what to give instead."""
    published = tmp_path / "published"
    published.mkdir()
    (published / "report.md").write_text("# report\n")
    (published / "run.summary.json").write_text("{}")
    runs = tmp_path / "results"
    for name in ("b-run", "a-run"):
        (runs / name).mkdir(parents=True)
        (runs / name / "summary.json").write_text("{}")
    assert cli.main(["report", str(published)]) == 2
    assert capsys.readouterr().err == (
        f"bench.py report: error: {published}: not a run folder (no summary.json); it "
        "holds a rendered report, report.md and report.html: read them, or report the "
        "run folders it was made from\n")
    assert cli.main(["report", str(runs)]) == 2
    assert capsys.readouterr().err == (
        f"bench.py report: error: {runs}: not a run folder (no summary.json); it holds 2 "
        f"run folders: give one or more of them, e.g. {runs}/a-run\n")
