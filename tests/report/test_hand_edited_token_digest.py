"""A run folder whose ``token_digest`` was typed over in ``summary.json`` for a case
that shares its schedule digest with others: the run's token oracle compares their
token streams, so the run would have failed ("token streams differ"). The loader
leaves the case out with one line (every case of the group where no digest has a
majority), and says nothing of a run that failed for it itself."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis_run import load_with_warnings
from ipc_bench import cli

IDS = [f"num_running={n}/{policy}/{codec}#0" for n in (2, 4)
       for codec in ("msgpack", "pickle") for policy in ("send", "cached")]
ZEROS = "0" * 64


@pytest.fixture(scope="module")
def good_run(tmp_path_factory, shared_digest_run):
    """A real run: send and cached, msgpack and pickle, at 2 and at 4 running; a copy of
    the session's (``shared_digest_run``), the module's own."""
    run = tmp_path_factory.mktemp("token-digest") / "good"
    shutil.copytree(shared_digest_run, run)
    return run


def _copy(good_run, tmp_path, change):
    run = tmp_path / "run"
    shutil.copytree(good_run, run)
    summary = json.loads((run / "summary.json").read_text())
    cases = {c["case_id"]: c for c in summary["cases"]}
    assert sorted(cases) == sorted(IDS)
    change(summary, cases)
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def _loaded(run):
    results, lines = load_with_warnings(run)
    return lines, sorted(results.cases["case_id"])


def test_one_groups_cases_share_one_schedule_and_one_token_digest(good_run):
    summary = json.loads((good_run / "summary.json").read_text())
    at = {n: [c for c in summary["cases"] if c["num_running"] == n] for n in (2, 4)}
    for cases in at.values():
        assert len({c["schedule_digest"] for c in cases}) == 1
        assert len({c["token_digest"] for c in cases}) == 1
    assert _loaded(good_run) == ([], sorted(IDS))


def test_a_token_digest_typed_over_leaves_its_case_out(good_run, tmp_path):
    """Three of the four cases at 2 agree: the fourth is the one left out."""
    edited, other = "num_running=2/cached/pickle#0", "num_running=2/send/msgpack#0"
    digest = {}

    def retype(summary, cases):
        digest["run"] = cases[edited]["token_digest"]
        cases[edited]["token_digest"] = ZEROS

    run = _copy(good_run, tmp_path, retype)
    assert _loaded(run) == ([
        f"{run / 'summary.json'}: case '{edited}' has token_digest 000000000000..., but "
        f"case '{other}', whose token stream the run compares with it, has "
        f"{digest['run'][:12]}...: the run would have failed with 'token streams differ' "
        "(left out)"], sorted(set(IDS) - {edited}))


def test_two_digests_without_a_majority_leave_every_case_of_the_group_out(good_run,
                                                                           tmp_path):
    def retype(summary, cases):
        for case_id in ("num_running=4/send/pickle#0", "num_running=4/cached/pickle#0"):
            cases[case_id]["token_digest"] = ZEROS

    run = _copy(good_run, tmp_path, retype)
    lines, kept = _loaded(run)
    assert kept == sorted(IDS[:4])
    assert [line.split(" has token_digest ")[0] for line in lines] == [
        f"{run / 'summary.json'}: case '{case_id}'" for case_id in IDS[4:]]


def test_a_run_that_failed_for_it_is_not_said_again(good_run, tmp_path):
    """The run's own problem line says it; its cases stay (a failed run's report says
    why it failed)."""
    edited = "num_running=4/send/pickle#0"

    def failed(summary, cases):
        run_digest = cases[edited]["token_digest"]
        cases[edited]["token_digest"] = ZEROS
        summary["status"] = "failed"
        summary["problems"] = [
            "token streams differ in decode-steady [num_running=4]: "
            f"{run_digest[:12]}: num_running=4/send/msgpack#0, "
            "num_running=4/cached/msgpack#0, num_running=4/cached/pickle#0; "
            f"000000000000: {edited}"]

    run = _copy(good_run, tmp_path, failed)
    lines, kept = _loaded(run)
    assert kept == sorted(IDS)
    assert not any("token_digest" in line for line in lines)


def test_the_report_says_it(good_run, tmp_path, capsys):
    edited = "num_running=4/cached/msgpack#0"
    run = _copy(good_run, tmp_path,
                lambda summary, cases: cases[edited].update(token_digest=ZEROS))
    assert cli.main(["report", str(run), "--no-figures"]) == 0
    err = capsys.readouterr().err
    assert (f"{run / 'summary.json'}: case '{edited}' has token_digest 000000000000..., "
            "but case 'num_running=4/send/msgpack#0', whose token stream the run compares "
            "with it, has ") in err
