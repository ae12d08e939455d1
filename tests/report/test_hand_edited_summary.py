"""A hand-edited run folder. In ``summary.json``: values of the wrong type (a case that
is not an object, a known numeric field that is not a number, ``complete`` that is not
true or false) or numbers of the wrong kind (NaN, infinite, negative, absurdly large, a
label that is not a whole number), an arm or codec no run writes, a case without its
policy or workload, a case listed twice or relabelled onto another's arm, workload,
codec and repetition, a case not complete in a complete run, an unknown status, no list
of cases. In ``steps.csv`` (``_edit_steps``): negative counts, times or sizes, a step
listed twice, rows of a case ``summary.json`` does not list, more rows than the summary
counts, a column whose counted rows' sum, mean or median is not the summary's figure
(``num_output_tokens`` edited, a ``step_ns`` moved between rows). A figure that is not
what the rows or the case's own figures give (a median, a runner gap figure,
``output_tokens_per_s`` typed over). A copy of a run given as a second run, its start
and end times edited or not. The report leaves the case (or the rows) out with one
warning line naming the folder, the case and the field, as it does a CSV row that is
not a number, or stops with one error line (exit code 2) when nothing sensible is
left, never with a traceback or with words that the run does not support;
``results.load`` (the notebook's loader) gives the same lines."""

from __future__ import annotations

import csv
import json
import shutil
import statistics
import warnings
from pathlib import Path

import numpy as np
import pytest

from analysis_run import copy_as_another_run
from ipc_bench import cli
from ipc_bench.analysis.metadata_checks import known_arms, known_codecs
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsError, ResultsWarning
from ipc_bench.analysis.summary import runner_gap_figures
from ipc_bench.report import plots

SEND = "num_running=4/send/msgpack#0"
CACHED = "num_running=4/cached/msgpack#0"
#: The report option that draws no figure (a test that asserts nothing of them).
NO_FIGURES = "--no-figures"


@pytest.fixture(scope="module")
def good_run(tmp_path_factory, shared_two_case_run):
    """A real run of two cases (send, then cached): a copy of the session's
    (``shared_two_case_run``), the module's own."""
    run = tmp_path_factory.mktemp("edited") / "good"
    shutil.copytree(shared_two_case_run, run)
    return run


def _edit(good_run, tmp_path, change) -> Path:
    run = tmp_path / "run"
    shutil.copytree(good_run, run)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["cases"][0]["case_id"] == SEND
    change(summary)
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def _edit_steps(good_run, tmp_path, change) -> Path:
    """A copy of ``good_run`` whose ``steps.csv`` rows (dicts of strings, in file
    order: the send case's 25, then the cached case's) are ``change(rows)``."""
    run = _edit(good_run, tmp_path, lambda summary: None)
    with open(run / "steps.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["case_id"] for r in rows] == [SEND] * 25 + [CACHED] * 25
    fields = list(rows[0])
    rows = change(rows)
    with open(run / "steps.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows(rows)
    return run


def _report(run, tmp_path, capsys, *extra: str) -> tuple[int, list[str]]:
    """``bench.py report RUN --output tmp_path/rep EXTRA``: its exit code and stderr
    lines. ``NO_FIGURES`` as ``extra`` where the edit leaves a case or a field out: the
    figures of what is kept are those of a run without that arm
    (tests/report/test_figure_layout) or without that field; the unedited run, one
    without metadata, an unknown status and every arm a run writes keep theirs."""
    code = cli.main(["report", str(run), "--output", str(tmp_path / "rep"), *extra])
    return code, capsys.readouterr().err.splitlines()


def _loaded(*runs) -> list[str]:
    """The warning lines ``results.load`` (the notebook's loader) gives on ``runs``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        load(list(runs))
    return [str(w.message) for w in caught if issubclass(w.category, ResultsWarning)]


def _warned(err: list[str]) -> list[str]:
    prefix = "bench.py report: warning: "
    assert all(line.startswith(prefix) for line in err), err
    return [line[len(prefix):] for line in err]


def _arm_list() -> str:
    return ", ".join(known_arms())


def _label(summary, key, value):
    summary["cases"][0][key] = value
    summary["metadata"]["cases"][0]["labels"][key] = value


@pytest.mark.parametrize("change, why", [
    (lambda s: s["cases"][0].update(output_tokens_per_s=1e308),
     f"case '{SEND}' has output_tokens_per_s 1e+308, more than 1e+15"),
    (lambda s: s["cases"][0].update(num_steps=10**400),
     f"case '{SEND}' has num_steps 1{'0' * 39}..., more than 1e+15"),
    (lambda s: s["cases"][0].update(policy=-123456789 * 10**60),
     f"case '{SEND}' has policy -123456789{'0' * 30}..., not a text"),
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
    (lambda s: s["cases"][0].update(arm="banana"),
     f"case '{SEND}' has arm \"banana\", not one of {_arm_list()} (or an A/A copy of "
     "one, with ')"),
    (lambda s: s["cases"][0].update(arm="send''"),
     f"case '{SEND}' has arm \"send''\", not one of {_arm_list()} (or an A/A copy of "
     "one, with ')"),
    (lambda s: s["cases"][0].update(arm=3),
     f"case '{SEND}' has arm 3, not one of {_arm_list()} (or an A/A copy of one, with ')"),
    (lambda s: s["cases"][0].update(codec="zip"),
     f"case '{SEND}' has codec \"zip\", not one of {', '.join(known_codecs())}"),
    (lambda s: s["cases"][0].pop("codec"), f"case '{SEND}' has no codec"),
    (lambda s: s["cases"][0].update(complete="yes"),
     f"case '{SEND}' has complete \"yes\", not true or false"),
    (lambda s: s["cases"][0].update(complete=1),
     f"case '{SEND}' has complete 1, not true or false"),
    (lambda s: s["cases"][0].update(complete=None),
     f"case '{SEND}' has complete null, not true or false"),
    (lambda s: s["cases"][0].update(complete=False),
     f"case '{SEND}' has complete false, but status is complete"),
    (lambda s: s["cases"][0].pop("policy"), f"case '{SEND}' has no policy"),
    (lambda s: s["cases"][0].pop("workload"), f"case '{SEND}' has no workload"),
    (lambda s: s["cases"][0].update(workload=""), f"case '{SEND}' has no workload"),
    (lambda s: s["cases"][0].update(policy=["send"]),
     f"case '{SEND}' has policy [\"send\"], not a text"),
    (lambda s: s["cases"][0].update(policy="banana"),
     f"case '{SEND}' has policy \"banana\", not one of send, cached"),
    (lambda s: s["cases"][0].update(case_elapsed_s=-3),
     f"case '{SEND}' has case_elapsed_s -3, a negative number"),
    (lambda s: s["cases"][0].update(cpu_steal_pct="x"),
     f"case '{SEND}' has cpu_steal_pct \"x\", not a number"),
    (lambda s: s["cases"][0].update(machine_busy_pct=float("inf")),
     f"case '{SEND}' has machine_busy_pct Infinity, not a finite number"),
    (lambda s: s["cases"][0].update(machine_busy_pct=-0.5),
     f"case '{SEND}' has machine_busy_pct -0.5, a negative number"),
    (lambda s: s["cases"][0].update(machine_busy_pct=150),
     f"case '{SEND}' has machine_busy_pct 150, more than 100 (a percentage of the "
     "machine's CPU time)"),
    (lambda s: s["cases"][0].update(cpu_steal_pct=100.5),
     f"case '{SEND}' has cpu_steal_pct 100.5, more than 100 (a percentage of the "
     "machine's CPU time)"),
    (lambda s: s["cases"][0].update(machine_busy_pct=60, cpu_steal_pct=50),
     f"case '{SEND}' has machine_busy_pct 60 and cpu_steal_pct 50, more than 100 "
     "together (parts of the machine's CPU time)"),
    (lambda s: s["cases"][0].update(model={"a": 1}),
     f"case '{SEND}' has model {{\"a\": 1}}, not a text"),
    (lambda s: s["cases"][0].update(transport=5),
     f"case '{SEND}' has transport 5, not a text"),
    (lambda s: s["cases"][0].update(scenario=["decode-steady"]),
     f"case '{SEND}' has scenario [\"decode-steady\"], not a text"),
    (lambda s: s["cases"][0].update(scenario="nope"),
     f"case '{SEND}' has scenario \"nope\", but the run's (metadata.scenario) is "
     "\"decode-steady\""),
    (lambda s: s["cases"][0].update(decode_token_bytes_per_step=50_000,
                                    sched_to_runner_payload_bytes_per_step=1_330),
     f"case '{SEND}' has decode_token_bytes_per_step 50,000 and "
     "prompt_chunk_bytes_per_step 0, more than its whole SchedulerOutput, "
     "sched_to_runner_payload_bytes_per_step 1,330"),
], ids=["tokens-per-s-huge", "num-steps-huge", "policy-a-huge-number", "tokens-per-s-nan", "step-ns-minus-inf", "bytes-negative",
        "count-negative", "other-field-nan", "num-running-a-string", "num-running-a-fraction",
        "metadata-label-a-string", "tp-a-string", "tokens-per-s-a-string",
        "repetition-a-string", "arm-unknown", "arm-two-primes", "arm-a-number",
        "codec-unknown", "codec-missing", "complete-yes", "complete-one", "complete-null",
        "complete-false-in-a-complete-run", "policy-missing", "workload-missing",
        "workload-empty", "policy-a-list", "policy-unknown", "elapsed-negative",
        "steal-a-string", "busy-infinite", "busy-negative", "busy-over-100",
        "steal-over-100", "busy-and-steal-over-100", "model-an-object", "transport-a-number",
        "scenario-a-list", "scenario-not-the-runs", "token-bytes-past-the-message"])
def test_a_value_of_the_wrong_kind_leaves_its_case_out_with_one_warning(
        good_run, tmp_path, capsys, change, why):
    run = _edit(good_run, tmp_path, change)
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    assert code == 0
    assert err == [f"bench.py report: warning: {run / 'summary.json'}: {why} (left out)"]
    assert _loaded(run) == _warned(err)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"> **Note:** Loading this run: {run / 'summary.json'}: {why} (left out)." in md
    assert "| 0 | cached | msgpack |" in md
    assert "| 0 | send | msgpack |" not in md


@pytest.mark.parametrize("busy, steal", [(100, 0), (0, 100), (70, 30), (99.5, None)],
                         ids=["all-busy", "all-stolen", "busy-and-steal-100", "no-steal"])
def test_percentages_of_the_machine_up_to_100_are_kept(good_run, tmp_path, capsys, busy,
                                                        steal):
    """``machine_busy_pct`` and ``cpu_steal_pct`` are shares of the whole machine's CPU
    time (``harness.environment.cpu_usage_between``): up to 100 each and together, the
    case loads with them as written."""
    run = _edit(good_run, tmp_path, lambda s: s["cases"][0].update(
        machine_busy_pct=busy, cpu_steal_pct=steal))
    assert _loaded(run) == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultsWarning)
        row = load(run).cases.set_index("case_id").loc[SEND]
    assert row["machine_busy_pct"] == busy
    assert (row["cpu_steal_pct"] == steal) if steal is not None \
        else row["cpu_steal_pct"] != row["cpu_steal_pct"]  # null: NaN


def test_a_case_that_is_not_an_object_leaves_its_rows_out_with_one_warning_each(
        good_run, tmp_path, capsys):
    run = _edit(good_run, tmp_path, lambda s: s["cases"].__setitem__(0, 5))
    _assert_send_left_out(run, tmp_path, capsys, "cases[0] is 5, not an object")


def _assert_send_left_out(run, tmp_path, capsys, why: str, listed: bool = False) -> None:
    """The report of ``run`` warns ``why`` of its first case (send) and then of send's
    rows, unlisted (``listed``: listed as that entry, whose ``why`` is said again),
    exactly as ``load`` does, and its tables hold cached alone."""
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    assert code == 0
    rows = f"{run}: case '{SEND}' has 25 rows in steps.csv and 4 rows in requests.csv, but "
    assert _warned(err) == [
        f"{run / 'summary.json'}: {why} (left out)",
        rows + (f"summary.json lists it as {why.replace(' has ', ', which has ', 1)} "
                "(left out)" if listed else "summary.json does not list it (left out)")]
    assert _loaded(run) == _warned(err)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| 0 | cached | msgpack |" in md
    assert "| 0 | send | msgpack |" not in md


@pytest.mark.parametrize("case_id, why", [
    (5, "cases[0] has case_id 5, not a text"),
    (["x"], "cases[0] has case_id [\"x\"], not a text"),
    ("", "cases[0] has an empty case_id"),
    (None, "cases[0] has case_id null, not a text"),
], ids=["a-number", "a-list", "empty", "null"])
def test_a_case_id_that_is_not_a_text_leaves_the_case_out_with_one_warning(
        good_run, tmp_path, capsys, case_id, why):
    run = _edit(good_run, tmp_path, lambda s: s["cases"][0].update(case_id=case_id))
    _assert_send_left_out(run, tmp_path, capsys, why, listed=True)


def test_a_summary_without_metadata_is_one_warning(good_run, tmp_path, capsys):
    run = _edit(good_run, tmp_path, lambda s: s.pop("metadata"))
    code, err = _report(run, tmp_path, capsys)
    line = (f"{run / 'summary.json'}: metadata is missing (read as empty: no "
            "environment, options or labels)")
    assert (code, _warned(err)) == (0, [line])
    assert _loaded(run) == [line]
    assert "| 0 | cached | msgpack |" in (tmp_path / "rep" / "report.md").read_text()


@pytest.mark.parametrize("arm", ["send'", "cached+async", ""])
def test_an_arm_a_run_writes_is_taken(good_run, tmp_path, capsys, arm):
    def relabel(s):  # the case id names the arm, as a run writes it
        case = s["cases"][0]
        case.update(arm=arm, case_id=case["case_id"].replace("/send/", f"/{arm or 'send'}/"))

    run = _edit(good_run, tmp_path, relabel)
    for name in ("steps.csv", "requests.csv"):
        path = run / name
        path.write_text(path.read_text().replace("/send/", f"/{arm or 'send'}/"))
    code, err = _report(run, tmp_path, capsys)
    assert (code, err) == (0, [])
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"| 0 | {arm or 'send'} | msgpack |" in md


@pytest.mark.parametrize("case_id", [CACHED, "copy"], ids=["its-id-kept", "its-id-too"])
def test_a_case_relabelled_onto_another_is_left_out_not_averaged(good_run, tmp_path,
                                                                  capsys, case_id):
    """cached's case labelled send: its case id still names cached, which says so; an
    id edited too (one a run never writes) leaves two cases of one arm, workload,
    codec and repetition, the later left out."""
    run = _edit(good_run, tmp_path, lambda s: s["cases"][1].update(
        policy="send", arm="send", case_id=case_id))
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    assert code == 0
    assert _warned(err) == ([
        f"{run / 'summary.json'}: case '{CACHED}' has arm \"send\", but its case_id names "
        "arm cached (left out)"] if case_id == CACHED else [
        f"{run / 'summary.json'}: case 'copy' has the arm, workload, codec and "
        f"repetition of case '{SEND}' (send, num_running=4, msgpack, 0) (left out)",
        f"{run}: case '{CACHED}' has 25 rows in steps.csv and 4 rows in requests.csv, but "
        "summary.json does not list it (left out)"])
    assert _loaded(run) == _warned(err)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert md.count("| 0 | send | msgpack |") == 1
    assert "| 0 | cached | msgpack |" not in md


@pytest.mark.parametrize("change, why", [
    (lambda s: s.pop("cases"), "cases is missing, but status is complete"),
    (lambda s: s.update(cases=[]), "cases is empty, but status is complete"),
    (lambda s: [c.update(complete=False) for c in s["cases"]],
     f"no case can be loaded: {{summary}}: case '{SEND}' has complete false, but status "
     "is complete (and 1 more)"),
], ids=["cases-missing", "cases-empty", "no-case-complete"])
def test_a_complete_run_without_cases_is_one_error(good_run, tmp_path, capsys, change, why):
    run = _edit(good_run, tmp_path, change)
    code, err = _report(run, tmp_path, capsys)
    assert code == 2
    summary = run / "summary.json"
    line = why.format(summary=summary) if "{summary}" in why else f"{summary}: {why}"
    assert err == [f"bench.py report: error: {line}"]
    assert not (tmp_path / "rep").exists()
    with pytest.raises(ResultsError) as exc:
        load(run)
    assert str(exc.value) == line


def test_cases_missing_in_a_run_not_complete_is_no_case(good_run, tmp_path, capsys):
    # What a run killed before its first case ended would hold, less its empty list.
    run = _edit(good_run, tmp_path, lambda s: (s.pop("cases"), s.update(status="incomplete")))
    for name in ("steps.csv", "requests.csv", "floor.csv", "itl.csv"):
        path = run / name
        path.write_text(path.read_text().splitlines(keepends=True)[0])
    code, err = _report(run, tmp_path, capsys)
    end = json.loads((run / "summary.json").read_text())["metadata"]["end_time_utc"]
    # not complete: one warning line, as microbench's (results.incomplete_run_line)
    assert (code, err) == (0, [
        f"bench.py report: warning: {run}: this run is incomplete: status incomplete, but "
        f"its end was recorded (end_time_utc {end}) with no problem (summary.json edited, "
        "or written by another tool), 0 of 2 cases recorded; 0 of its 2 cases finished: "
        "the report has no figures, findings or case tables of it"])
    assert (tmp_path / "rep" / "report.md").is_file()


def test_a_case_listed_twice_is_kept_once_with_one_warning(good_run, tmp_path, capsys):
    run = _edit(good_run, tmp_path, lambda s: s["cases"].append(dict(s["cases"][0])))
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
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
    end = json.loads((run / "summary.json").read_text())["metadata"]["end_time_utc"]
    assert err == [f"bench.py report: warning: {line}",
                   f"bench.py report: warning: {run}: this run has no known status: status "
                   f"\"banana\" (read as unknown), but its end was recorded (end_time_utc {end}) with no problem "
                   "(summary.json edited, or written by another tool), 2 of 2 cases "
                   "recorded; 2 of its 2 cases finished: the report's figures cover the "
                   "cases it finished"]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "banana" not in md.replace(line, "").replace('status "banana" (read as unknown)', "")
    assert "This run is banana" not in md
    assert "This run has no known status: " in md
    assert "- status: unknown" in md


@pytest.mark.parametrize("status, shown", [
    ("\U0001f389", '"\U0001f389"'),  # as written (was "\\ud83c\\udf89")
    ("caf\u00e9 \u202e", '"caf\u00e9 \\u202e"'),  # one that does not print: escaped
    ("\ud83c", '"\\ud83c"'),  # a lone surrogate, which JSON can hold
    ("x\ny", '"x\\ny"'),
])
def test_an_unknown_status_is_quoted_as_written(good_run, tmp_path, status, shown):
    run = _edit(good_run, tmp_path, lambda s: s.update(status=status))
    warned = _loaded(run)  # after the line that the run's status is unknown
    assert len(warned) == 2 and warned[0].startswith(f"{run}: this run has no known status")
    assert warned[1] == (f"{run / 'summary.json'}: status {shown} is not one of complete, "
                         "incomplete, failed (read as unknown)")


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
    assert err == [f"bench.py report: error: no case can be loaded: {run / 'summary.json'}: "
                   f"case '{SEND}' has output_tokens_per_s \"fast\", not a number (and 1 "
                   "more)"]
    assert not (tmp_path / "rep").exists()


def test_a_scenario_on_every_case_other_than_the_runs_is_one_error(good_run, tmp_path,
                                                                   capsys):
    def change(summary):
        for case in summary["cases"]:
            case["scenario"] = "nope"
    run = _edit(good_run, tmp_path, change)
    assert _case(run, SEND)["scenario"] == "nope"
    code, err = _report(run, tmp_path, capsys)
    assert code == 2
    assert err == [f"bench.py report: error: no case can be loaded: {run / 'summary.json'}: "
                   f"case '{SEND}' has scenario \"nope\", but the run's (metadata.scenario) "
                   "is \"decode-steady\" (and 1 more)"]
    assert not (tmp_path / "rep").exists()


@pytest.mark.parametrize("warned, why, kept", [
    ([1, None], "warnings[0] 1 and warnings[1] null, not texts (left out of its warnings)",
     []),
    ([1, "kept as written"], "warnings[0] 1, not a text (left out of its warnings)",
     ["kept as written"]),
    ([1, None, "kept as written", 3.5, {}],
     "warnings[0] 1, warnings[1] null, warnings[3] 3.5 and 1 more, not texts (left out of "
     "its warnings)", ["kept as written"]),
    (5, "warnings 5, not a list (read as absent: no warnings recorded)", None),
    ("CPU steal", "warnings \"CPU steal\", not a list (read as absent: no warnings "
     "recorded)", None),
], ids=["two-not-texts", "one-not-a-text", "more-than-shown", "a-number", "a-text"])
def test_warnings_that_are_not_texts_are_left_out_with_one_warning(
        good_run, tmp_path, capsys, warned, why, kept):
    """The case loads; what is not a text is never shown as a recorded warning (``1``,
    ``None``), and a ``warnings`` that is not a list is read as none, not dropped
    silently."""
    run = _edit(good_run, tmp_path, lambda s: s["cases"][0].update(warnings=warned))
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    assert code == 0
    line = f"{run / 'summary.json'}: case '{SEND}' has {why}"
    assert _warned(err) == [line]
    assert _loaded(run) == [line]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultsWarning)
        loaded = load(run)
    row = loaded.cases.set_index("case_id").loc[SEND]
    if kept is None:
        assert "warnings" not in loaded.cases or not isinstance(row["warnings"], list)
    else:
        assert row["warnings"] == kept
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| 0 | send | msgpack |" in md
    for shown in ("1", "None", "null", "3.5", "{}", "5", "CPU steal"):
        assert f"`{SEND}`: {shown}\n" not in md
    assert (f"`{SEND}`: kept as written" in md) == bool(kept)


@pytest.mark.parametrize("figure, column, case, kept", [
    ("sched_to_runner_wire_bytes_per_step", "s2r_payload_bytes", SEND, CACHED),
    ("runner_to_sched_wire_bytes_per_step", "r2s_payload_bytes", CACHED, SEND),
], ids=["s2r", "r2s"])
def test_a_wire_figure_that_is_not_its_payloads_with_their_frame_heads_leaves_the_case_out(
        good_run, tmp_path, capsys, figure, column, case, kept):
    """Wire bytes are each counted payload with its ZMTP frame head, 2 bytes up to 255
    bytes of payload and 9 above (docs/metrics.md, "wire bytes"): a figure typed over is not
    what the rows give."""
    payload = _counted(good_run, case, column)
    want = sum(b + (2 if b <= 255 else 9) for b in payload) / len(payload)
    assert _case(good_run, case)[figure] == pytest.approx(want, rel=1e-12)
    run = _edit(good_run, tmp_path,
                lambda s: next(c for c in s["cases"] if c["case_id"] == case).update(
                    {figure: 1.0}))
    line = (f"{run / 'steps.csv'}: case '{case}' has a {figure} of {want:,.6g} from its 20 "
            f"counted rows' {column}, but summary.json has {figure} 1 (left out)")
    _assert_left_out(run, tmp_path, capsys, line, case, kept)


def _all_rows(run, case, column) -> list[int]:
    """``column`` of every ``steps.csv`` row of ``case`` in ``run``, warm-up included."""
    with open(run / "steps.csv", newline="") as f:
        return [int(r[column]) for r in csv.DictReader(f) if r["case_id"] == case]


def _frames(payloads) -> int:
    """The ZMTP stream bytes of one-frame messages of ``payloads`` bytes: each with its
    frame head, 2 bytes up to 255 bytes of payload and 9 above (README, "wire
    bytes")."""
    return sum(b + (2 if b <= 255 else 9) for b in payloads)


def test_a_reply_total_that_is_not_its_rows_frames_leaves_the_case_out(
        good_run, tmp_path, capsys):
    """``r2s_wire_bytes_total`` is every step's reply, warm-up included, with its
    frame head (no floor here: ``--no-floor``); a total typed over is not what the
    rows give."""
    want = _frames(_all_rows(good_run, SEND, "r2s_payload_bytes"))
    assert _case(good_run, SEND)["r2s_wire_bytes_total"] == want
    run = _edit(good_run, tmp_path,
                lambda s: s["cases"][0].update(r2s_wire_bytes_total=want + 1))
    line = (f"{run / 'steps.csv'}: case '{SEND}' has an r2s_wire_bytes_total of {want:,} "
            f"from its 25 rows' r2s_payload_bytes, but summary.json has "
            f"r2s_wire_bytes_total {want + 1:,} (left out)")
    _assert_left_out(run, tmp_path, capsys, line, SEND, CACHED)


def test_a_warm_up_reply_edited_is_caught_by_the_reply_total(good_run, tmp_path, capsys):
    """No per-step figure counts a warm-up step, but the reply total does: a warm-up
    row's ``r2s_payload_bytes`` edited leaves the case out."""
    rows = _all_rows(good_run, CACHED, "r2s_payload_bytes")
    total = _case(good_run, CACHED)["r2s_wire_bytes_total"]

    def edit(rows):
        first = next(r for r in rows if r["case_id"] == CACHED)
        assert first["warmup"] == "1" and first["counted"] == "0"
        first["r2s_payload_bytes"] = str(int(first["r2s_payload_bytes"]) + 300)
        return rows

    run = _edit_steps(good_run, tmp_path, edit)
    got = _frames([rows[0] + 300] + rows[1:])
    assert got == total + 300 + (7 if rows[0] <= 255 < rows[0] + 300 else 0)
    line = (f"{run / 'steps.csv'}: case '{CACHED}' has an r2s_wire_bytes_total of "
            f"{got:,} from its 25 rows' r2s_payload_bytes, but summary.json has "
            f"r2s_wire_bytes_total {total:,} (left out)")
    _assert_left_out(run, tmp_path, capsys, line, CACHED, SEND)


def test_the_scheduler_total_is_not_checked(good_run, tmp_path, capsys):
    """``s2r_wire_bytes_total`` also counts the empty phase-marker frames, whose number
    no file records: a total typed over loads as written."""
    run = _edit(good_run, tmp_path,
                lambda s: s["cases"][0].update(s2r_wire_bytes_total=12345))
    assert _loaded(run) == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultsWarning)
        row = load(run).cases.set_index("case_id").loc[SEND]
    assert row["s2r_wire_bytes_total"] == 12345


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
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    assert code == 0
    assert err == [f"bench.py report: warning: {run / 'summary.json'}: {why} (left out)"]
    assert (tmp_path / "rep" / "report.md").is_file()


def _negative(rows):
    rows[7]["step_ns"] = "-5"
    rows[8]["step_ns"] = "-9"
    rows[8]["s2r_payload_bytes"] = "-1"
    rows[30]["runner_forward_ns"] = "-2"
    return rows


def _not_finite(rows):
    rows[2]["sched_ns"] = "inf"
    rows[3]["t_end_ns"] = "1e300"
    rows[4]["t_end_ns"] = "2e16"
    return rows


def _ghost(rows):
    return rows + [dict(r, case_id="ghost") for r in rows[:3]]


STEPS = "{run}/steps.csv"


@pytest.mark.parametrize("change, lines", [
    (_negative, [
        f"{STEPS}: case '{SEND}' has a negative step_ns (down to -9) in 2 rows (left out)",
        f"{STEPS}: case '{SEND}' has a negative s2r_payload_bytes (-1) in 1 row (left out)",
        f"{STEPS}: case '{CACHED}' has a negative runner_forward_ns (-2) in 1 row (left out)",
        f"{STEPS}: 47 of the 50 rows that summary.json counts (2 case(s) short: {SEND}: 23 of "
        f"25; {CACHED}: 24 of 25); loaded what is valid"]),
    (_not_finite, [
        f"{STEPS}: case '{SEND}' has an infinite sched_ns in 1 row (left out)",
        f"{STEPS}: case '{SEND}' has t_end_ns above 1e+15 (up to 1e+300) in 2 rows "
        "(left out)",
        f"{STEPS}: 47 of the 50 rows that summary.json counts (1 case(s) short: {SEND}: 22 of "
        "25); loaded what is valid"]),
    (lambda rows: rows[:4] + [dict(rows[3])] + rows[4:] + [dict(rows[30])] * 2, [
        f"{STEPS}: case '{SEND}' has 1 row of a step an earlier row has (step 3 first; "
        "left out)",
        f"{STEPS}: case '{CACHED}' has 2 rows of a step an earlier row has (step 5 first; "
        "left out)"]),
    (_ghost, ["{run}: case 'ghost' has 3 rows in steps.csv, but summary.json does not "
              "list it (left out)"]),
    (lambda rows: rows + [dict(rows[24], step="999", seq="999")], [
        f"{STEPS}: case '{SEND}' has 26 rows, more than the 25 steps summary.json counts "
        "(num_total_steps)"]),
], ids=["negative", "not-finite-or-huge", "step-again", "case-not-listed",
        "more-rows-than-counted"])
def test_impossible_steps_rows_are_left_out_with_one_warning_per_case_and_column(
        good_run, tmp_path, capsys, change, lines):
    run = _edit_steps(good_run, tmp_path, change)
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    assert code == 0
    assert _warned(err) == [line.format(run=run) for line in lines]
    assert _loaded(run) == _warned(err)
    md = (tmp_path / "rep" / "report.md").read_text()
    for line in lines:
        assert f"> **Note:** Loading this run: {line.format(run=run)}" in md
    assert "| 0 | send | msgpack |" in md and "| 0 | cached | msgpack |" in md
    steps = load(run).steps
    numbers = steps.select_dtypes("number")
    assert ((numbers >= 0) & (numbers <= 1e15) | numbers.isna()).all().all()
    assert not steps.duplicated(["case_id", "step"]).any()
    assert set(steps["case_id"]) == {SEND, CACHED}


def _assert_refused(good_run, copy, tmp_path, capsys, why: str) -> None:
    """``bench.py report`` and ``results.load`` refuse ``copy`` beside ``good_run`` with
    the one error ``why``; the report writes nothing."""
    code = cli.main(["report", str(good_run), str(copy), "--output", str(tmp_path / "rep")])
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [f"bench.py report: error: {why}"]
    assert not (tmp_path / "rep").exists()
    with pytest.raises(ResultsError) as exc:
        load([good_run, copy])
    assert str(exc.value) == why


def test_a_copy_of_a_run_is_refused_with_one_error(good_run, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(good_run, copy)
    md = json.loads((good_run / "summary.json").read_text())["metadata"]
    why = (f"run folder {copy} is a copy of {good_run} (the same start time "
           f"{md['start_time_utc']} on host {md['hostname']} in their metadata): a run is "
           "not compared with itself; give each run once")
    _assert_refused(good_run, copy, tmp_path, capsys, why)


def test_a_copy_without_its_host_name_is_refused(good_run, tmp_path, capsys):
    copy = _edit(good_run, tmp_path, lambda s: s["metadata"].pop("hostname"))
    md = json.loads((good_run / "summary.json").read_text())["metadata"]
    code = cli.main(["report", str(copy), str(good_run), "--output", str(tmp_path / "rep")])
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"bench.py report: error: run folder {good_run} is a copy of {copy} (the same start "
        f"time {md['start_time_utc']} on host {md['hostname']} in their metadata): a run is "
        "not compared with itself; give each run once"]


def test_another_run_of_the_same_host_is_compared(good_run, tmp_path, capsys):
    # compared, not refused as a copy: the tables alone (two runs' figures drawn without
    # a word: tests/report/test_unicode_run_file_names.py)
    other = copy_as_another_run(good_run, tmp_path / "other")
    code = cli.main(["report", str(good_run), str(other), "--output", str(tmp_path / "rep"),
                     NO_FIGURES])
    assert (code, capsys.readouterr().err) == (0, "")
    assert (tmp_path / "rep" / "report.md").read_text().startswith(
        "# ipc-bench report: 2 runs compared")


def _times_ten(column, case):
    def change(rows):
        for r in rows:
            if r["case_id"] == case:
                r[column] = str(int(r[column]) * 10)
        return rows
    return change


@pytest.mark.parametrize("column, figure, case, kept", [
    ("s2r_payload_bytes", "sched_to_runner_payload_bytes_per_step", CACHED, SEND),
    ("step_ns", "step_ns_mean", SEND, CACHED),
    ("runner_encode_ns", "runner_encode_ns_per_step", CACHED, SEND),
    ("num_reqs", "num_running_mean", SEND, CACHED),
    ("num_scheduled_tokens", "scheduled_tokens_per_step", CACHED, SEND),
    ("sched_cpu_ns", "sched_cpu_ns_per_step", SEND, CACHED),
], ids=["payload-bytes", "step-ns", "runner-phase", "running", "scheduled-tokens",
        "sched-cpu"])
def test_a_steps_column_whose_mean_is_not_the_summarys_leaves_the_case_out(
        good_run, tmp_path, capsys, column, figure, case, kept):
    run = _edit_steps(good_run, tmp_path, _times_ten(column, case))
    summary = json.loads((run / "summary.json").read_text())
    entry = next(c for c in summary["cases"] if c["case_id"] == case)
    with open(run / "steps.csv", newline="") as f:
        values = [int(r[column]) for r in csv.DictReader(f)
                  if r["case_id"] == case and r["counted"] == "1"]
    got = sum(values) / len(values)
    line = (f"{run / 'steps.csv'}: case '{case}' has a mean {column} of {got:,.6g} over its "
            f"20 counted rows, but summary.json has {figure} {entry[figure]:,.6g} (left out)")
    _assert_left_out(run, tmp_path, capsys, line, case, kept)


@pytest.mark.parametrize("flag, figure", [("counted", "num_steps"),
                                           ("warmup", "num_warmup_steps")])
def test_a_step_flag_flipped_in_steps_csv_leaves_the_case_out(
        good_run, tmp_path, capsys, flag, figure):
    """Every row there (its ``num_total_steps``), a counted step made uncounted, or a
    warm-up step said not to be one, no longer counts the summary's steps: the figures
    are not over the rows the tables would take, so the case is left out."""
    def flip(rows):
        first = next(r for r in rows if r["case_id"] == SEND and r[flag] == "1")
        first[flag] = "0"
        return rows
    run = _edit_steps(good_run, tmp_path, flip)
    entry = next(c for c in json.loads((run / "summary.json").read_text())["cases"]
                 if c["case_id"] == SEND)
    assert (entry["num_steps"], entry["num_warmup_steps"], entry["num_total_steps"]) == (
        20, 5, 25)
    got = {"num_steps": 19, "num_warmup_steps": 4}[figure]
    line = (f"{run / 'steps.csv'}: case '{SEND}' has {got} of its 25 rows with {flag} 1, "
            f"but summary.json has {figure} {entry[figure]} (left out)")
    _assert_left_out(run, tmp_path, capsys, line, SEND, CACHED)


def test_a_summed_figure_is_checked_against_its_columns_summed(good_run, tmp_path, capsys):
    # encode_ns_per_step is the scheduler's encode_ns plus the runner's: moving time
    # from one to the other keeps the sum, and sched_encode_ns_per_step catches it.
    def change(rows):
        for r in rows:
            if r["case_id"] == SEND:
                r["encode_ns"], r["runner_encode_ns"] = r["runner_encode_ns"], r["encode_ns"]
        return rows
    run = _edit_steps(good_run, tmp_path, change)
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    assert code == 0
    (line,) = _warned(err)
    assert f"case '{SEND}' has a mean encode_ns of " in line
    assert "summary.json has sched_encode_ns_per_step " in line


def test_a_real_run_has_means_equal_to_its_summary(good_run, tmp_path, capsys):
    code, err = _report(good_run, tmp_path, capsys)
    assert (code, err) == (0, [])


def test_runs_that_overlapped_in_time_on_one_host_are_a_difference(good_run, tmp_path,
                                                                   capsys):
    md = json.loads((good_run / "summary.json").read_text())["metadata"]
    assert md["end_time_utc"] > md["start_time_utc"]  # recorded as the run ends
    other = copy_as_another_run(good_run, tmp_path / "other", seconds=0.0)
    summary = json.loads((other / "summary.json").read_text())
    summary["metadata"]["start_time_utc"] = "2000-01-01T00:00:00.5+00:00"
    summary["metadata"]["end_time_utc"] = "2000-01-01T00:00:09+00:00"
    (other / "summary.json").write_text(json.dumps(summary))
    first = _edit(good_run, tmp_path, lambda s: s["metadata"].update(
        start_time_utc="2000-01-01T00:00:00+00:00", end_time_utc="2000-01-01T00:00:05+00:00"))
    code = cli.main(["report", str(first), str(other), "--output", str(tmp_path / "rep"),
                     NO_FIGURES])
    assert (code, capsys.readouterr().err) == (0, "")
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "compare with care" in md and "Same machine" not in md
    assert ("- other against run: the runs overlapped in time on this host (other from "
            "2000-01-01 00:00:00 to 2000-01-01 00:00:09, run from 2000-01-01 00:00:00 to "
            "2000-01-01 00:00:05 UTC): each ran on a machine the other loaded") in md


def test_a_run_without_an_end_time_is_said_to_be_unknown(good_run, tmp_path, capsys):
    old = _edit(good_run, tmp_path, lambda s: s["metadata"].pop("end_time_utc"))
    other = copy_as_another_run(good_run, tmp_path / "other")
    code = cli.main(["report", str(old), str(other), "--output", str(tmp_path / "rep"),
                     NO_FIGURES])
    assert (code, capsys.readouterr().err) == (0, "")
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Same machine, software and commit by their metadata." in md
    assert ("Whether run overlapped in time on this host with other is unknown: run "
            "recorded no end time (an older run, or one stopped without finishing its "
            "summary).") in md
    assert "| unknown |" in md
    # a run with no end that started after the other ended cannot have run beside it
    late = _edit(good_run, tmp_path / "late", lambda s: (
        s["metadata"].pop("end_time_utc"),
        s["metadata"].update(start_time_utc="2100-01-01T00:00:00+00:00")))
    assert cli.main(["report", str(late), str(other), "--output", str(tmp_path / "rep2"),
                     NO_FIGURES]) == 0
    md = (tmp_path / "rep2" / "report.md").read_text()
    assert "overlapped in time on this host" not in md and "| unknown |" in md


def test_a_different_number_of_repetitions_is_listed_and_leaves_the_workload_unmarked(
        good_run, tmp_path, capsys):
    other = copy_as_another_run(good_run, tmp_path / "other")
    summary = json.loads((other / "summary.json").read_text())
    cases = summary["metadata"]["cases"]
    cases += [dict(c, case_id=c["case_id"].replace("#0", "#1"), repetition=1) for c in cases]
    (other / "summary.json").write_text(json.dumps(summary))
    # the edit is to the metadata's case list, which no figure reads; a complete run
    # lacking planned cases is said, case by case
    code = cli.main(["report", str(good_run), str(other), "--output", str(tmp_path / "rep"),
                     NO_FIGURES])
    assert code == 0
    send1, cached1 = SEND.replace("#0", "#1"), CACHED.replace("#0", "#1")
    assert _warned(capsys.readouterr().err.splitlines()) == [
        f"{other / 'summary.json'}: cases {send1!r} and {cached1!r} of metadata.cases have "
        "no entry in cases, but status is complete (every planned case finished)"]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "- other against good: repetitions differ: 2 vs 1 (workload num_running=4)" in md
    assert "| num_running=4 | send | msgpack |" in md and " ≠ " not in md


@pytest.mark.parametrize("fields, shown", [
    (dict(running_case=SEND), f'running_case "{SEND}"'),
    (dict(failed_case=CACHED), f'failed_case "{CACHED}"'),
    (dict(running_case=SEND, failed_case=CACHED),
     f'running_case "{SEND}" and failed_case "{CACHED}"'),
], ids=["running", "failed", "both"])
def test_a_complete_run_with_a_running_or_failed_case_is_one_warning(
        good_run, tmp_path, capsys, fields, shown):
    run = _edit(good_run, tmp_path, lambda s: s.update(fields))
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    assert code == 0
    line = (f"{run / 'summary.json'}: status is complete, but it has {shown} (a complete "
            "run has neither; read as complete)")
    assert _warned(err) == [line]
    assert _loaded(run) == [line]


def test_no_case_whose_steps_agree_with_its_summary_is_one_error(good_run, tmp_path, capsys):
    # whole numbers in summary.json (a pandas int64 column) are checked as floats are
    # (send's token-id bytes to 0 too: more than the whole message is refused first)
    run = _edit(good_run, tmp_path, lambda s: [
        c.update(sched_to_runner_payload_bytes_per_step=1, decode_token_bytes_per_step=0,
                 prompt_chunk_bytes_per_step=0) for c in s["cases"]])
    code, err = _report(run, tmp_path, capsys)
    assert code == 2
    assert len(err) == 1 and err[0].startswith(
        f"bench.py report: error: no case can be loaded: {run / 'steps.csv'}: case "
        f"'{SEND}' has a mean s2r_payload_bytes of ")
    assert err[0].endswith(
        "but summary.json has sched_to_runner_payload_bytes_per_step 1 (and 1 more)")
    assert not (tmp_path / "rep").exists()


def _counted(run, case, *columns) -> list[int]:
    """The counted ``steps.csv`` rows of ``case`` in ``run``: ``columns`` summed."""
    with open(run / "steps.csv", newline="") as f:
        return [sum(int(r[c]) for c in columns) for r in csv.DictReader(f)
                if r["case_id"] == case and r["counted"] == "1"]


def _case(run, case) -> dict:
    return next(c for c in json.loads((run / "summary.json").read_text())["cases"]
                if c["case_id"] == case)


def _assert_left_out(run, tmp_path, capsys, line, case, kept):
    """``run`` reports and loads with the one warning ``line``, without ``case``."""
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    assert code == 0
    assert _warned(err) == [line]
    assert _loaded(run) == [line]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"> **Note:** Loading this run: {line}" in md
    arm = lambda c: c.split("/")[1]  # noqa: E731
    assert f"| 0 | {arm(kept)} | msgpack |" in md
    assert f"| 0 | {arm(case)} | msgpack |" not in md
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultsWarning)
        loaded = load(run)
    for table in (loaded.cases, loaded.steps, loaded.requests):
        assert set(table["case_id"]) == {kept}


def test_a_rate_that_is_not_its_tokens_over_its_steps_leaves_the_case_out(
        good_run, tmp_path, capsys):
    # 620.96 tok/s typed over the figure: output_tokens / (num_steps * step_ns_mean)
    run = _edit(good_run, tmp_path, lambda s: s["cases"][0].update(output_tokens_per_s=620.96))
    entry = _case(run, SEND)
    tokens, mean = entry["output_tokens"], entry["step_ns_mean"]
    assert (tokens, entry["num_steps"]) == (80, 20)
    line = (f"{run / 'summary.json'}: case '{SEND}' has output_tokens_per_s 620.96, but "
            f"its output_tokens 80 over its 20 counted steps of step_ns_mean {mean:,.6g} "
            f"make {tokens / (20 * mean / 1e9):,.6g} (left out)")
    _assert_left_out(run, tmp_path, capsys, line, SEND, CACHED)


@pytest.mark.parametrize("figure, columns", [
    ("step_ns_median", ("step_ns",)),
    ("s2r_build_encode_decode_ns_median", ("build_ns", "encode_ns", "runner_decode_ns")),
    ("runner_forward_ns_median", ("runner_forward_ns",)),
], ids=["step", "s2r-build-encode-decode", "runner-forward"])
def test_a_median_that_is_not_its_counted_rows_leaves_the_case_out(
        good_run, tmp_path, capsys, figure, columns):
    run = _edit(good_run, tmp_path, lambda s: s["cases"][1].update({figure: 400_000}))
    got = statistics.median(_counted(run, CACHED, *columns))
    assert got != 400_000
    line = (f"{run / 'steps.csv'}: case '{CACHED}' has a median {' + '.join(columns)} of "
            f"{got:,.6g} over its 20 counted rows, but summary.json has {figure} 400,000 "
            "(left out)")
    _assert_left_out(run, tmp_path, capsys, line, CACHED, SEND)


def test_a_runner_gap_figure_that_is_not_its_rows_leaves_the_case_out(
        good_run, tmp_path, capsys):
    run = _edit(good_run, tmp_path, lambda s: s["cases"][0].update(runner_gap_ns_median=7))
    with open(run / "steps.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["case_id"] == SEND]
    got = runner_gap_figures(
        {k: [int(r[k]) for r in rows] for k in ("runner_forward_start_ns",
                                                "runner_forward_ns")},
        np.array([r["counted"] == "1" for r in rows]))["runner_gap_ns_median"]
    assert got == _case(good_run, SEND)["runner_gap_ns_median"]
    line = (f"{run / 'steps.csv'}: case '{SEND}' has a runner_gap_ns_median of {got:,.6g} "
            "from its rows' runner_forward_start_ns and runner_forward_ns, but summary.json "
            "has runner_gap_ns_median 7 (left out)")
    _assert_left_out(run, tmp_path, capsys, line, SEND, CACHED)


def test_output_tokens_edited_in_steps_leave_the_case_out(good_run, tmp_path, capsys):
    def change(rows):
        row = next(r for r in rows if r["case_id"] == CACHED and r["counted"] == "1")
        row["num_output_tokens"] = str(int(row["num_output_tokens"]) + 1)
        return rows
    run = _edit_steps(good_run, tmp_path, change)
    line = (f"{run / 'steps.csv'}: case '{CACHED}' has a sum num_output_tokens of 81 over "
            "its 20 counted rows, but summary.json has output_tokens 80 (left out)")
    _assert_left_out(run, tmp_path, capsys, line, CACHED, SEND)


def test_a_step_time_moved_between_rows_leaves_the_case_out(good_run, tmp_path, capsys):
    # the mean stays; the median does not
    def change(rows):
        counted = [r for r in rows if r["case_id"] == SEND and r["counted"] == "1"]
        low = min(counted, key=lambda r: int(r["step_ns"]))
        high = max(counted, key=lambda r: int(r["step_ns"]))
        moved = (int(high["step_ns"]) - int(low["step_ns"])) // 2
        low["step_ns"] = str(int(low["step_ns"]) + moved)
        high["step_ns"] = str(int(high["step_ns"]) - moved)
        return rows
    run = _edit_steps(good_run, tmp_path, change)
    before, after = _counted(good_run, SEND, "step_ns"), _counted(run, SEND, "step_ns")
    assert sum(after) == sum(before)
    got = statistics.median(after)
    assert got != statistics.median(before) == _case(run, SEND)["step_ns_median"]
    line = (f"{run / 'steps.csv'}: case '{SEND}' has a median step_ns of {got:,.6g} over "
            f"its 20 counted rows, but summary.json has step_ns_median "
            f"{statistics.median(before):,.6g} (left out)")
    _assert_left_out(run, tmp_path, capsys, line, SEND, CACHED)


def test_a_copy_with_other_start_and_end_times_is_refused_with_one_error(
        good_run, tmp_path, capsys):
    copy = _edit(good_run, tmp_path, lambda s: s["metadata"].update(
        start_time_utc="2000-01-01T00:00:00+00:00", end_time_utc="2000-01-01T00:00:05+00:00"))
    why = (f"run folder {copy} is a copy of {good_run} (case '{SEND}' has the same 25 "
           "step_ns values, row for row, in their steps.csv): a run is not compared with "
           "itself; give each run once")
    _assert_refused(good_run, copy, tmp_path, capsys, why)


def _set(path: str, value):
    """An edit of ``summary.json`` that sets ``path`` (``metadata.KEY``, ``cases.0.KEY``,
    or ``cases.*.KEY`` for every case) to ``value``."""
    def change(summary):
        head, *rest = path.split(".")
        if head == "metadata":
            summary["metadata"][rest[0]] = value
        else:
            which, key = rest
            for case in summary["cases"] if which == "*" else [summary["cases"][int(which)]]:
                case[key] = value
    return change


@pytest.mark.parametrize("path, value, warning", [
    ("metadata.load_avg", "abc", 'metadata.load_avg is "abc", not a list of load averages'),
    ("metadata.load_avg", 123, "metadata.load_avg is 123, not a list of load averages"),
    ("metadata.cpu_count", [1], "metadata.cpu_count is [1], not a whole number of CPUs"),
    ("metadata.command_line", 123, "metadata.command_line is 123, not a list of texts"),
    ("metadata.command_line", [1], "metadata.command_line is [1], not a list of texts"),
    ("metadata.ci_method", {}, "metadata.ci_method is {}, not one of t, bootstrap, sign"),
    ("metadata.ci_method", "bayes",
     'metadata.ci_method is "bayes", not one of t, bootstrap, sign'),
    ("metadata.seed", "abc", 'metadata.seed is "abc", not a whole number from 0 to '
     "2**63 - 1"),
    ("metadata.order_seed", -1, "metadata.order_seed is -1, not a whole number from 0 to "
     "2**63 - 1"),
    ("metadata.cases", [1], "metadata.cases[0] is 1, not a case with a case_id"),
    ("cases.0.num_cut_at_max_model_len", "abc",
     f"case '{SEND}' has num_cut_at_max_model_len \"abc\", not a number"),
    ("cases.0.runner_gap_ns_median", [1],
     f"case '{SEND}' has runner_gap_ns_median [1], not a number"),
    ("cases.0.runner_gap_share_p99", "abc",
     f"case '{SEND}' has runner_gap_share_p99 \"abc\", not a number"),
    ("cases.0.schedule_digest", [1], f"case '{SEND}' has schedule_digest [1], not a text"),
    ("cases.0.repetition", None, None),
    ("cases.*.num_total_steps", None, None)])
def test_hand_edited_values_the_report_reads_give_a_warning_not_a_traceback(
        good_run, tmp_path, capsys, path, value, warning):
    """Values of a type no run writes, in fields the report reads (each one crashed
    ``report`` with a Python traceback): the field, or the case, is left out with one
    warning line naming it, and the report is made of the rest; a null repetition is
    read as the first, a null step count as unknown."""
    run = _edit(good_run, tmp_path, _set(path, value))
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    assert code == 0, err
    assert not any("Traceback" in line for line in err)
    if warning is not None:
        assert err == [f"bench.py report: warning: {run / 'summary.json'}: {warning} "
                       "(left out)"]
    assert (tmp_path / "rep" / "report.md").exists()


def test_a_run_file_that_cannot_be_read_is_said_to_be_unreadable(good_run, tmp_path, capsys,
                                                                  monkeypatch):
    """A run's file the loader cannot open (its permissions: root reads it anyway, so
    the refusal is raised here as ``open`` raises it) is ``cannot read``, not ``cannot
    write``, exit 2."""
    from ipc_bench.analysis import results

    steps = good_run / "steps.csv"

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(steps))

    monkeypatch.setattr(results, "load", refuse)
    code, err = _report(good_run, tmp_path, capsys, NO_FIGURES)
    assert (code, err) == (2, [f"bench.py report: error: cannot read {steps}: Permission "
                               "denied"])


def test_token_id_bytes_in_a_cached_case_leave_it_out(good_run, tmp_path, capsys):
    """Only send's SchedulerOutput carries new_token_ids: a cached case with token-id
    bytes (send's and cached's labels swapped by hand) is left out, one line."""
    def swap(summary):
        send, cached = summary["cases"]
        assert send["decode_token_bytes_per_step"] > 0
        assert cached["decode_token_bytes_per_step"] == 0
        cached["decode_token_bytes_per_step"] = send["decode_token_bytes_per_step"]

    run = _edit(good_run, tmp_path, swap)
    value = json.loads((run / "summary.json").read_text())["cases"][1][
        "decode_token_bytes_per_step"]
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    assert code == 0
    assert err == [f"bench.py report: warning: {run / 'summary.json'}: case '{CACHED}' has "
                   f"decode_token_bytes_per_step {value:,.6g}, but its policy is "
                   "\"cached\" (only send's SchedulerOutput carries new_token_ids) (left out)"]


@pytest.mark.parametrize("fields, line", [
    (dict(start_time_utc="yesterday"),
     'metadata.start_time_utc is "yesterday", not an ISO 8601 time (left out)'),
    (dict(start_time_utc="2026-12-03T23:00:00+00:00", end_time_utc="2026-12-03T22:00:00+00:00"),
     'metadata.end_time_utc is "2026-12-03T22:00:00+00:00", before its start_time_utc '
     '"2026-12-03T23:00:00+00:00" (left out)'),
], ids=["not-a-time", "end-before-start"])
def test_a_run_time_that_is_no_time_is_dropped_with_a_warning(good_run, tmp_path, fields,
                                                              line):
    """The overlap check of runs of one host reads these: a time typed over is said and
    left out, not read as a run of unknown end or one that ended before it began."""
    run = _edit(good_run, tmp_path, lambda s: s["metadata"].update(fields))
    assert _loaded(run) == [f"{run / 'summary.json'}: {line}"]


def test_a_failed_status_without_problems_is_said_as_an_edit(good_run, tmp_path):
    """``bench.py`` writes ``status: failed`` only with the problems that failed the
    run: one without them is said as such, not as a run that recorded no end."""
    def fail(summary):
        summary["status"] = "failed"
        summary.pop("problems", None)
    res = load(_edit(good_run, tmp_path, fail))
    assert res.status_detail["run"] == (
        "status failed, but no problem was recorded (summary.json edited, or written by "
        "another tool), 2 of 2 cases recorded")


def test_a_case_removed_from_a_complete_run_is_said(good_run, tmp_path, capsys):
    """A case taken out of a complete run's ``cases`` by hand: said, and marked in the
    Configuration table as left out on loading, not as a case the run never reached."""
    run = _edit(good_run, tmp_path, lambda s: s["cases"].pop(0))
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    line = (f"{run / 'summary.json'}: case {SEND!r} of metadata.cases has no entry in "
            "cases, but status is complete (every planned case finished)")
    rows = (f"{run}: case {SEND!r} has 25 rows in steps.csv and 4 rows in requests.csv, "
            "but summary.json does not list it (left out)")
    assert code == 0
    assert _warned(err) == [line, rows] and _loaded(run) == [line, rows]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "(left out on loading)" in md and "(not run)" not in md



def test_a_case_with_an_error_marked_complete_is_left_out(good_run, tmp_path, capsys):
    """An interrupted case set ``complete: true`` by hand keeps its ``error``: it did not
    finish, so it is left out, not compared as if it had."""
    run = _edit(good_run, tmp_path, _set("cases.0.error", "interrupted by SIGINT"))
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    line = (f"{run / 'summary.json'}: case {SEND!r} has complete true, but an error "
            "\"interrupted by SIGINT\": a case that ended so did not finish (left out)")
    assert code == 0
    assert line in _warned(err) and line in _loaded(run)
    assert SEND not in set(load(run).cases["case_id"])


def test_an_ended_run_set_incomplete_by_hand_says_its_end_was_recorded(good_run, tmp_path):
    """``status: incomplete`` typed over a run that recorded its end: said as such, not
    as a run killed before it could record one."""
    def unfinished(summary):
        summary["status"] = "incomplete"
    run = _edit(good_run, tmp_path, unfinished)
    res = load(run)
    end = res.metadata["run"]["end_time_utc"]
    assert res.status_detail["run"] == (
        f"status incomplete, but its end was recorded (end_time_utc {end}) with no "
        "problem (summary.json edited, or written by another tool), 2 of 2 cases recorded")


def test_a_summary_saved_with_a_byte_order_mark_loads(good_run, tmp_path):
    run = _edit(good_run, tmp_path, lambda summary: None)
    path = run / "summary.json"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResultsWarning)
        assert len(load(run).cases) == 2


def test_a_pair_broken_on_loading_is_said_so_not_as_a_stopped_run(good_run, tmp_path,
                                                                   capsys):
    run = _edit(good_run, tmp_path, _set("cases.0.output_tokens_per_s", "fast"))
    code, _ = _report(run, tmp_path, capsys, NO_FIGURES)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert code == 0
    assert ("No send/cached pair finished in this run: its grid has send and cached of a "
            "codec, but one of them was left out when the run was loaded (the loading "
            "notes at the top say why).") in md


def test_figures_of_steps_left_out_on_loading_say_so(good_run, tmp_path, capsys):
    """A steps.csv whose rows are all left out on loading (its header garbled): the
    figures it would draw say the rows were left out, not that the run has none."""
    run = _edit(good_run, tmp_path, lambda summary: None)
    path = run / "steps.csv"
    data = path.read_bytes().split(b"\n", 1)
    path.write_bytes(b"x" + data[0] + b"\n" + data[1])
    code, _ = _report(run, tmp_path, capsys)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert code == 0
    assert ("no per-step records of a finished case in this run (steps.csv's rows were "
            "left out on loading: the loading notes say why)") in md


def test_a_value_blanked_in_a_counted_row_leaves_the_case_out(good_run, tmp_path, capsys):
    """An empty field reads as NaN, which a column the run does not have also is: a
    counted row without the ``step_ns`` the case's other rows have is an edit, so the
    case is left out, not its figures taken over the other rows. (``nan`` written out is
    a value that is not a number, its row left out: ``tests/analysis/test_nan_cells``.)"""
    def change(rows):
        row = [r for r in rows if r["case_id"] == SEND and r["counted"] == "1"][3]
        row["step_ns"] = ""
        return rows
    run = _edit_steps(good_run, tmp_path, change)
    entry = next(c for c in json.loads((run / "summary.json").read_text())["cases"]
                 if c["case_id"] == SEND)
    line = (f"{run / 'steps.csv'}: case '{SEND}' has 1 of its 20 counted rows without a "
            f"step_ns value (blank or not a number), but summary.json has step_ns_mean "
            f"{entry['step_ns_mean']:,.6g} (left out)")
    _assert_left_out(run, tmp_path, capsys, line, SEND, CACHED)
