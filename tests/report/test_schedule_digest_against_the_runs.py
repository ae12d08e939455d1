"""A run folder whose ``schedule_digest`` was typed over in ``summary.json`` for two
cases, each ahead of the cases that hold it in the run's order and each scheduling
batches of its own: each case's line compares its rows with those of a case that holds
the batches most of the digest's cases share (the run's), where it named the other
typed-over case. Where no batches have a majority, each case is set against a case of
another of the most shared. The digest is printed as a token_digest is: whole where
it is 12 characters or fewer, where ``0123`` read ``0123...``."""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from analysis_run import load_with_warnings, run_bench

RUN = ["--scenario", "decode-steady", "--num-running", "2,4,8", "--steps", "20",
       "--warmup-steps", "5", "--codecs", "msgpack", "--no-single-process", "--no-floor"]
SEND = {n: f"num_running={n}/send/msgpack#0" for n in (2, 4, 8)}
CACHED = {n: f"num_running={n}/cached/msgpack#0" for n in (2, 4, 8)}
IDS = [case_id for n in (2, 4, 8) for case_id in (SEND[n], CACHED[n])]


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    """A real run: send and cached at 2, 4 and 8 running requests."""
    run = tmp_path_factory.mktemp("schedule-digest-majority") / "good"
    run_bench(run, RUN)
    return run


def _edited(good_run, tmp_path, digests: dict[str, str]):
    """A copy of ``good_run`` with ``digests`` (case id -> schedule_digest) typed over in
    its ``summary.json``: its steps.csv path, the loader's warnings on it and its kept
    case ids."""
    run = tmp_path / "run"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(good_run, run)
    summary = json.loads((run / "summary.json").read_text())
    assert [c["case_id"] for c in summary["cases"]] == IDS
    for case in summary["cases"]:
        case.update({"schedule_digest": digests[case["case_id"]]}
                    if case["case_id"] in digests else {})
    (run / "summary.json").write_text(json.dumps(summary))
    results, lines = load_with_warnings(run)
    return run / "steps.csv", lines, sorted(results.cases["case_id"])


def _first_batch(good_run, case_id) -> str:
    with open(good_run / "steps.csv", newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["case_id"] == case_id)
    return f"{int(row['num_reqs'])} requests, {int(row['num_scheduled_tokens'])} tokens"


def _digest(good_run, case_id) -> str:
    cases = json.loads((good_run / "summary.json").read_text())["cases"]
    return next(c["schedule_digest"] for c in cases if c["case_id"] == case_id)


def _line(path, case_id, digest, other_id, mine, theirs) -> str:
    return (f"{path}: case '{case_id}' has schedule_digest {digest} as case '{other_id}', "
            f"but its rows schedule other batches (step 0: {mine} against {theirs}; "
            "left out)")


def test_two_cases_typed_over_apart_are_each_set_against_the_runs_batches(good_run,
                                                                          tmp_path):
    """The digest of the cases at 8 typed onto send at 2 and at 4, both ahead of them:
    each is set against send at 8, where each named the other."""
    of_8 = _digest(good_run, SEND[8])
    batch = {n: _first_batch(good_run, SEND[n]) for n in (2, 4, 8)}
    assert batch[2].startswith("2 requests") and batch[4].startswith("4 requests")
    assert batch[8].startswith("8 requests")
    path, lines, kept = _edited(good_run, tmp_path, {SEND[2]: of_8, SEND[4]: of_8})
    assert lines == [
        _line(path, SEND[2], f"{of_8[:12]}...", SEND[8], batch[2], batch[8]),
        _line(path, SEND[4], f"{of_8[:12]}...", SEND[8], batch[4], batch[8])]
    assert kept == sorted([CACHED[2], CACHED[4], SEND[8], CACHED[8]])


def test_without_a_majority_each_case_is_set_against_another_of_the_most_shared(
        good_run, tmp_path):
    """One digest, 0123, on both cases at 2 and at 4 and on send at 8: the two twos
    and the two fours are each set against the first case of the other; send at 8,
    held by one case, against the twos. The digest is printed whole."""
    batch = {n: _first_batch(good_run, SEND[n]) for n in (2, 4, 8)}
    path, lines, kept = _edited(good_run, tmp_path, {
        SEND[2]: "0123", CACHED[2]: "0123", SEND[4]: "0123", CACHED[4]: "0123",
        SEND[8]: "0123"})
    assert lines == [
        _line(path, SEND[2], "0123", SEND[4], batch[2], batch[4]),
        _line(path, CACHED[2], "0123", SEND[4], batch[2], batch[4]),
        _line(path, SEND[4], "0123", SEND[2], batch[4], batch[2]),
        _line(path, CACHED[4], "0123", SEND[2], batch[4], batch[2]),
        _line(path, SEND[8], "0123", SEND[2], batch[8], batch[2])]
    assert kept == [CACHED[8]]
