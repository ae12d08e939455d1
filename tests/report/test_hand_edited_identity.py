"""A run folder edited so that a case's labels, its rows' labels or its schedule
digest no longer name what it measured: the loader leaves the case out with one line
naming the first difference, since its figures would be read as another arm's, or its
token streams as comparable with a case that ran another schedule."""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from analysis_run import load_with_warnings, run_bench

RUN = ["--scenario", "decode-steady", "--num-running", "2,4", "--steps", "20",
       "--warmup-steps", "5", "--codecs", "msgpack", "--no-single-process", "--no-floor"]
SEND2, CACHED2 = "num_running=2/send/msgpack#0", "num_running=2/cached/msgpack#0"
SEND4, CACHED4 = "num_running=4/send/msgpack#0", "num_running=4/cached/msgpack#0"


@pytest.fixture(scope="module")
def two_workloads(tmp_path_factory):
    """A real run: send and cached at 2 and at 4 running requests."""
    run = tmp_path_factory.mktemp("identity") / "good"
    run_bench(run, RUN)
    return run


def _copy(two_workloads, tmp_path, change=None):
    run = tmp_path / "run"
    shutil.copytree(two_workloads, run)
    summary = json.loads((run / "summary.json").read_text())
    assert [c["case_id"] for c in summary["cases"]] == [SEND2, CACHED2, SEND4, CACHED4]
    if change is not None:
        change({c["case_id"]: c for c in summary["cases"]})
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def _loaded(run):
    """(the loader's warning lines, the case ids it kept)."""
    results, lines = load_with_warnings(run)
    return lines, list(results.cases["case_id"])


def _batches(run, case_id):
    with open(run / "steps.csv", newline="") as f:
        return [(int(r["num_reqs"]), int(r["num_scheduled_tokens"]))
                for r in csv.DictReader(f) if r["case_id"] == case_id]


def test_the_unedited_run_loads_whole(two_workloads):
    assert _loaded(two_workloads) == ([], [SEND2, CACHED2, SEND4, CACHED4])


def test_two_cases_whose_labels_and_token_bytes_were_swapped_are_left_out(
        two_workloads, tmp_path):
    """send's and cached's policy, arm and token-id bytes swapped: each figure still
    passes for its new label, but each case id names the arm it ran."""
    def swap(cases):
        a, b = cases[SEND2], cases[CACHED2]
        for key in ("policy", "arm", "decode_token_bytes_per_step"):
            a[key], b[key] = b[key], a[key]

    run = _copy(two_workloads, tmp_path, swap)
    assert _loaded(run) == ([
        f"{run / 'summary.json'}: case '{SEND2}' has arm \"cached\", but its case_id names "
        "arm send (left out)",
        f"{run / 'summary.json'}: case '{CACHED2}' has arm \"send\", but its case_id names "
        "arm cached (left out)"], [SEND4, CACHED4])


def test_a_policy_its_arm_is_not_leaves_the_case_out(two_workloads, tmp_path):
    run = _copy(two_workloads, tmp_path, lambda cases: cases[CACHED4].update(policy="send"))
    assert _loaded(run) == ([
        f"{run / 'summary.json'}: case '{CACHED4}' has arm \"cached\", but policy \"send\" "
        "(left out)"], [SEND2, CACHED2, SEND4])


@pytest.mark.parametrize("name", ["steps.csv", "requests.csv"])
def test_rows_that_name_another_policy_leave_their_case_out(two_workloads, tmp_path, name):
    run = _copy(two_workloads, tmp_path)
    path = run / name
    lines = path.read_text().splitlines(keepends=True)
    edited = 0
    for i, line in enumerate(lines):
        if line.startswith(SEND2 + ",") and edited < 2:
            lines[i] = line.replace(",send,msgpack,", ",cached,msgpack,", 1)
            edited += 1
    path.write_text("".join(lines))
    assert _loaded(run) == ([
        f"{path}: case '{SEND2}' has policy \"cached\" in 2 rows, but summary.json has "
        "policy \"send\" (left out)"], [CACHED2, SEND4, CACHED4])


def test_a_schedule_digest_typed_over_leaves_the_case_out(two_workloads, tmp_path):
    """4/send given the digest of the cases at 2: its rows schedule 4 requests a step,
    theirs 2; the two cases at 2 agree, so 4/send is the one left out."""
    digest = {}

    def retype(cases):
        digest["of 2"] = cases[SEND2]["schedule_digest"]
        assert cases[SEND4]["schedule_digest"] != digest["of 2"]
        cases[SEND4]["schedule_digest"] = digest["of 2"]

    run = _copy(two_workloads, tmp_path, retype)
    mine, theirs = _batches(run, SEND4)[0], _batches(run, SEND2)[0]
    assert (mine[0], theirs[0]) == (4, 2)
    assert _loaded(run) == ([
        f"{run / 'steps.csv'}: case '{SEND4}' has schedule_digest {digest['of 2'][:12]}... "
        f"as case '{SEND2}', but its rows schedule other batches (step 0: 4 requests, "
        f"{mine[1]} tokens against 2 requests, {theirs[1]} tokens; left out)"],
        [SEND2, CACHED2, CACHED4])


def test_two_cases_of_one_typed_digest_that_differ_are_both_left_out(two_workloads,
                                                                      tmp_path):
    """No majority to tell which one the digest is of: both are named."""
    def retype(cases):
        for case_id in (SEND2, SEND4):
            cases[case_id]["schedule_digest"] = "ab" * 32

    run = _copy(two_workloads, tmp_path, retype)
    lines, kept = _loaded(run)
    assert kept == [CACHED2, CACHED4]
    assert [line.split(" has schedule_digest abababababab... as case ")[0] for line in lines] \
        == [f"{run / 'steps.csv'}: case '{SEND2}'", f"{run / 'steps.csv'}: case '{SEND4}'"]


def test_token_bytes_typed_over_to_a_believable_value_leave_the_case_out(two_workloads,
                                                                         tmp_path):
    """With one schedule, send's SchedulerOutput is longer than cached's by its
    token-id bytes exactly; a value typed over (smaller than the frame, so believable
    on its own) is not."""
    figures = {}

    def retype(cases):
        figures.update(send=cases[SEND2]["sched_to_runner_payload_bytes_per_step"],
                       cached=cases[CACHED2]["sched_to_runner_payload_bytes_per_step"],
                       tokens=cases[SEND2]["decode_token_bytes_per_step"])
        cases[SEND2]["decode_token_bytes_per_step"] = 5.0

    run = _copy(two_workloads, tmp_path, retype)
    longer = figures["send"] - figures["cached"]
    assert abs(longer - figures["tokens"]) < 1e-9 and figures["tokens"] > 5
    assert _loaded(run) == ([
        f"{run / 'summary.json'}: case '{SEND2}' has decode_token_bytes_per_step + "
        f"prompt_chunk_bytes_per_step 5, but its SchedulerOutput is {longer:,.6g} bytes a "
        f"step longer than that of case '{CACHED2}', which ran the same schedule (left out)"],
        [CACHED2, SEND4, CACHED4])


@pytest.mark.parametrize("key, value, shown", [
    ("async_scheduling", True, "true"), ("trace_speedup", 1000.0, "1000.0")])
def test_a_field_other_than_the_setting_it_ran_with_leaves_the_case_out(
        two_workloads, tmp_path, key, value, shown):
    """metadata.cases records what each case ran with; a summary field typed over to
    another value (a steady case's absent trace_speedup is no disagreement) is one."""
    def retype(cases):
        cases[CACHED4][key] = value

    run = _copy(two_workloads, tmp_path, retype)
    summary = json.loads((run / "summary.json").read_text())
    summary["metadata"]["cases"][3][key] = {"async_scheduling": False,
                                            "trace_speedup": 100.0}[key]
    (run / "summary.json").write_text(json.dumps(summary))
    recorded = {"async_scheduling": "false", "trace_speedup": "100.0"}[key]
    assert _loaded(run) == ([
        f"{run / 'summary.json'}: case '{CACHED4}' has {key} {shown}, but metadata.cases "
        f"records {recorded} (left out)"], [SEND2, CACHED2, SEND4])


@pytest.mark.parametrize("name", ["steps.csv", "requests.csv"])
def test_a_byte_that_is_not_utf8_leaves_its_line_out_not_the_run(two_workloads, tmp_path,
                                                                  name):
    """One damaged byte (0xe9) in the middle of a line: that line is named and left
    out, the rest loads (before, the whole file was unreadable: exit 2)."""
    run = _copy(two_workloads, tmp_path)
    path = run / name
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = lines[3][:10] + b"\xe9" + lines[3][11:]
    path.write_bytes(b"".join(lines))
    warned, kept = _loaded(run)
    assert len(warned) == 1
    assert warned[0].startswith(f"{path}: line 4 holds bytes that are not UTF-8 text "
                                "(left out), and ")
    assert kept == [SEND2, CACHED2, SEND4, CACHED4]


def test_a_step_flag_other_than_0_or_1_leaves_its_row_out(two_workloads, tmp_path):
    run = _copy(two_workloads, tmp_path)
    path = run / "steps.csv"
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    column = rows[0].index("counted")
    assert rows[10][0] == SEND2 and rows[10][column] == "1"
    rows[10][column] = "2"
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    warned, kept = _loaded(run)
    assert warned[0] == (f"{path}: case '{SEND2}' has a counted flag other than 0 or 1 (2) "
                         "in 1 row (left out)")
    assert kept == [SEND2, CACHED2, SEND4, CACHED4]


@pytest.mark.parametrize("flag, at, was, value", [
    ("counted", [1, 2], "0", ""), ("counted", [10], "1", ""), ("warmup", [1], "1", ""),
    ("counted", [10], "1", "abc"), ("counted", [10], "1", " "), ("warmup", [1], "1", "x")])
def test_a_blank_step_flag_is_named_as_missing(two_workloads, tmp_path, flag, at, was,
                                               value):
    """A flag cell blanked by hand, or holding what is not a number, is said to be
    missing, and its case left out: read as NaN, a blank counted as 1, so that two
    blank warm-up rows read as 22 counted steps against num_steps 20, and a blank
    counted row passed unsaid; a row holding ``abc`` was left out alone, its case kept
    on one counted row fewer."""
    run = _copy(two_workloads, tmp_path)
    path = run / "steps.csv"
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    column = rows[0].index(flag)
    for i in at:
        assert rows[i][0] == SEND2 and rows[i][column] == was
        rows[i][column] = value
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    assert _loaded(run) == ([
        f"{path}: case '{SEND2}' has {len(at)} of its 25 rows without a {flag} value "
        "(blank or not a number; left out)"], [CACHED2, SEND4, CACHED4])


def test_token_bytes_are_checked_only_against_a_finished_case_of_as_many_steps(tmp_path):
    """An interrupted send case averages its bytes over fewer steps than cached's: no
    line for it, nor for one whose counted steps differ."""
    import pandas as pd

    from ipc_bench.analysis.row_checks import _token_bytes_pair_problems

    pair = [dict(case_id="w/send/msgpack#0", policy="send", codec="msgpack", workload="w",
                 transport="ipc", repetition=0, schedule_digest="d", num_steps=20,
                 complete=True, decode_token_bytes_per_step=5.0,
                 prompt_chunk_bytes_per_step=0.0,
                 sched_to_runner_payload_bytes_per_step=391.8),
            dict(case_id="w/cached/msgpack#0", policy="cached", codec="msgpack",
                 workload="w", transport="ipc", repetition=0, schedule_digest="d",
                 num_steps=20, complete=True, decode_token_bytes_per_step=0.0,
                 prompt_chunk_bytes_per_step=0.0,
                 sched_to_runner_payload_bytes_per_step=372.0)]
    path = tmp_path / "summary.json"
    assert [i for i, _ in _token_bytes_pair_problems(pd.DataFrame(pair), set(), path)] == [
        "w/send/msgpack#0"]
    for change in (dict(complete=False), dict(num_steps=12)):
        cut = [dict(pair[0], **change), pair[1]]
        assert _token_bytes_pair_problems(pd.DataFrame(cut), set(), path) == []
