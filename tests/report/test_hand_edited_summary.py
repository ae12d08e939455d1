"""A hand-edited ``summary.json``: values of the wrong type (a case that is not an
object, a known numeric field that is not a number) or numbers of the wrong kind (NaN,
infinite, negative, absurdly large, a label that is not a whole number), a case listed
twice, an unknown status or no list of cases. The report leaves the case out with one
warning line, as it does a CSV row that is not a number, or stops with one error line
(exit code 2) when no case is left, never with a traceback or with words that the run
does not support."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis_run import run_bench
from ipc_bench import cli
from ipc_bench.report import plots

RUN = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
       "--warmup-steps", "5", "--codecs", "msgpack", "--no-single-process", "--no-floor"]
SEND = "num_running=4/send/msgpack#0"


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    """A real run of two cases (send, then cached)."""
    run = tmp_path_factory.mktemp("edited") / "good"
    run_bench(run, RUN)
    return run


def _edit(good_run, tmp_path, change) -> "Path":
    run = tmp_path / "run"
    shutil.copytree(good_run, run)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["cases"][0]["case_id"] == SEND
    change(summary)
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def _report(run, tmp_path, capsys) -> tuple[int, list[str]]:
    code = cli.main(["report", str(run), "--output", str(tmp_path / "rep")])
    return code, capsys.readouterr().err.splitlines()


def _label(summary, key, value):
    summary["cases"][0][key] = value
    summary["metadata"]["cases"][0]["labels"][key] = value


@pytest.mark.parametrize("change, why", [
    (lambda s: s["cases"][0].update(output_tokens_per_s=1e308),
     f"case '{SEND}' has output_tokens_per_s 1e+308, more than 1e+15"),
    (lambda s: s["cases"][0].update(output_tokens_per_s=float("nan")),
     f"case '{SEND}' has output_tokens_per_s NaN, not a finite number"),
    (lambda s: s["cases"][0].update(step_ns_mean=float("-inf")),
     f"case '{SEND}' has step_ns_mean -Infinity, not a finite number"),
    (lambda s: s["cases"][0].update(sched_to_runner_payload_bytes_per_step=-390),
     f"case '{SEND}' has sched_to_runner_payload_bytes_per_step -390, a negative number"),
    (lambda s: s["cases"][0].update(num_finished=-1),
     f"case '{SEND}' has num_finished -1, a negative number"),
    (lambda s: s["cases"][0].update(runner_gap_ns_mean=float("nan")),
     f"case '{SEND}' has runner_gap_ns_mean NaN, not a finite number"),
    (lambda s: _label(s, "num_running", "x"),
     f"case '{SEND}' has num_running \"x\", not a number"),
    (lambda s: _label(s, "num_running", 4.5),
     f"case '{SEND}' has num_running 4.5, not a whole number"),
    (lambda s: s["metadata"]["cases"][0]["labels"].update(num_running="x"),
     f"case '{SEND}' has label num_running \"x\", not a number"),
    (lambda s: s["cases"][0].update(tp="two"),
     f"case '{SEND}' has tp \"two\", not a number"),
    (lambda s: s["cases"][0].update(output_tokens_per_s="fast"),
     f"case '{SEND}' has output_tokens_per_s \"fast\", not a number"),
    (lambda s: s["cases"][0].update(repetition="x"),
     f"case '{SEND}' has repetition \"x\", not a number"),
    (lambda s: s["cases"].__setitem__(0, 5), "cases[0] is 5, not an object"),
], ids=["tokens-per-s-huge", "tokens-per-s-nan", "step-ns-minus-inf", "bytes-negative",
        "count-negative", "other-field-nan", "num-running-a-string", "num-running-a-fraction",
        "metadata-label-a-string", "tp-a-string", "tokens-per-s-a-string",
        "repetition-a-string", "case-a-number"])
def test_a_value_of_the_wrong_kind_leaves_its_case_out_with_one_warning(
        good_run, tmp_path, capsys, change, why):
    run = _edit(good_run, tmp_path, change)
    code, err = _report(run, tmp_path, capsys)
    assert code == 0
    assert err == [f"bench.py report: warning: {run / 'summary.json'}: {why} (left out)"]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"> **Note:** Loading this run: {run / 'summary.json'}: {why} (left out)." in md
    assert "| 0 | cached | msgpack |" in md
    assert "| 0 | send | msgpack |" not in md


def test_a_case_listed_twice_is_kept_once_with_one_warning(good_run, tmp_path, capsys):
    run = _edit(good_run, tmp_path, lambda s: s["cases"].append(dict(s["cases"][0])))
    code, err = _report(run, tmp_path, capsys)
    assert code == 0
    assert err == [f"bench.py report: warning: {run / 'summary.json'}: case '{SEND}' is "
                   "listed again as cases[2] (left out)"]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert md.count("| 0 | send | msgpack |") == 1


@pytest.mark.parametrize("cases", [None, {"a": 1}, "x"], ids=["null", "object", "string"])
def test_cases_not_a_list_is_one_error(good_run, tmp_path, capsys, cases):
    run = _edit(good_run, tmp_path, lambda s: s.update(cases=cases))
    code, err = _report(run, tmp_path, capsys)
    assert code == 2
    assert err == [f"bench.py report: error: {run / 'summary.json'}: cases is "
                   f"{json.dumps(cases)}, not a list"]
    assert not (tmp_path / "rep").exists()


def test_an_unknown_status_is_one_warning_and_read_as_unknown(good_run, tmp_path, capsys):
    run = _edit(good_run, tmp_path, lambda s: s.update(status="banana"))
    code, err = _report(run, tmp_path, capsys)
    assert code == 0
    line = (f"{run / 'summary.json'}: status \"banana\" is not one of complete, "
            "incomplete, failed (read as unknown)")
    assert err == [f"bench.py report: warning: {line}"]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "banana" not in md.replace(line, "").replace("summary status banana", "")
    assert "This run is banana" not in md
    assert "This run has no known status: " in md
    assert "- status: unknown" in md


def test_a_figure_matplotlib_cannot_draw_is_no_data():
    def bad(_results):
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots()
        ax.set_ylim(0, float("inf"))
        return fig

    with pytest.raises(plots.NoData) as exc:
        plots.draw_png(bad, None)
    assert str(exc.value) == ("matplotlib cannot draw it (Axis limits cannot be NaN or "
                              "Inf)")


def test_a_summary_with_no_loadable_case_is_one_error(good_run, tmp_path, capsys):
    def change(cases):
        cases[0]["output_tokens_per_s"] = "fast"
        cases[1] = "x"
    run = _edit(good_run, tmp_path, lambda summary: change(summary["cases"]))
    code, err = _report(run, tmp_path, capsys)
    assert code == 2
    assert err == [f"bench.py report: error: {run / 'summary.json'}: no case can be loaded: "
                   f"case '{SEND}' has output_tokens_per_s \"fast\", not a number (and 1 "
                   "more)"]
    assert not (tmp_path / "rep").exists()


@pytest.mark.parametrize("change, why", [
    (lambda s: s.update(comparisons="x"), "comparisons is \"x\", not a list"),
    (lambda s: s.update(comparisons=["x"]), "comparisons[0] is \"x\", not a recorded comparison"),
    (lambda s: s.update(comparisons=[{"baseline": 1}]),
     "comparisons[0] is {\"baseline\": 1}, not a recorded comparison"),
    (lambda s: s["metadata"].update(git=5), "metadata.git is 5, not an object"),
    (lambda s: s["metadata"].update(packages="x"), "metadata.packages is \"x\", not an object"),
    (lambda s: s.update(problems=[1]), "problems[0] is 1, not a text"),
    (lambda s: s.update(byte_model=[2]), "byte_model[0] is 2, not an object"),
    (lambda s: s.update(metadata=[]), "metadata is [], not an object"),
], ids=["comparisons-a-string", "comparison-a-string", "comparison-without-fields",
        "git-a-number", "packages-a-string", "problem-a-number", "byte-model-a-number",
        "metadata-a-list"])
def test_a_field_of_another_shape_is_left_out_with_one_warning(good_run, tmp_path, capsys,
                                                               change, why):
    run = _edit(good_run, tmp_path, change)
    code, err = _report(run, tmp_path, capsys)
    assert code == 0
    assert err == [f"bench.py report: warning: {run / 'summary.json'}: {why} (left out)"]
    assert (tmp_path / "rep" / "report.md").is_file()
