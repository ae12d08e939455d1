"""A run folder whose ``token_digest`` was typed over in ``summary.json`` for two of a
group's four cases, each to a digest of its own: each case's line compares it with a
case that holds the digest the other two share (the run's), where it named the other
typed-over case and never showed the run's. Two digests are printed far enough to tell
apart (``000...000`` against ``000...001``, which both read ``000000000000...``), and a
null ``token_digest`` is one more digest no run writes, where it passed unsaid (only a
``schedule_digest`` may be null: no schedule kept, nothing compared)."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis_run import load_with_warnings

IDS = [f"num_running=2/{policy}/{codec}#0" for codec in ("msgpack", "pickle")
       for policy in ("send", "cached")]
AT_4 = [case_id.replace("=2/", "=4/") for case_id in IDS]
TAIL = ("whose token stream the run compares with it, has {}: the run would have failed "
        "with 'token streams differ' (left out)")


@pytest.fixture(scope="module")
def good_run(tmp_path_factory, shared_digest_run):
    """A real run: send and cached, msgpack and pickle, at 2 and at 4 running (two
    groups of four cases); a copy of the session's (``shared_digest_run``), the
    module's own."""
    run = tmp_path_factory.mktemp("token-digest-majority") / "good"
    shutil.copytree(shared_digest_run, run)
    return run


def _copy(good_run, tmp_path, digests: dict[str, str | None]):
    """A copy of ``good_run`` with ``digests`` (case id -> token_digest) typed over: its
    ``summary.json`` and the run's own digest."""
    run = tmp_path / "run"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(good_run, run)
    summary = json.loads((run / "summary.json").read_text())
    assert [c["case_id"] for c in summary["cases"]] == IDS + AT_4
    own = summary["cases"][0]["token_digest"]
    assert {c["token_digest"] for c in summary["cases"][:4]} == {own}
    for case in summary["cases"]:
        case.update({"token_digest": digests[case["case_id"]]}
                    if case["case_id"] in digests else {})
    (run / "summary.json").write_text(json.dumps(summary))
    return run / "summary.json", own


def _edited(good_run, tmp_path, digests: dict[str, str | None]):
    """``_copy``'s summary path, the loader's warnings on it, its kept case ids and the
    run's own digest."""
    path, own = _copy(good_run, tmp_path, digests)
    results, lines = load_with_warnings(path.parent)
    return path, lines, sorted(results.cases["case_id"]), own


def test_two_cases_typed_over_apart_are_each_set_against_the_runs_digest(good_run,
                                                                          tmp_path):
    path, lines, kept, own = _edited(good_run, tmp_path,
                                     {IDS[0]: "a" * 64, IDS[1]: "b" * 64})
    assert lines == [
        f"{path}: case '{IDS[0]}' has token_digest aaaaaaaaaaaa..., but case '{IDS[2]}', "
        + TAIL.format(f"{own[:12]}..."),
        f"{path}: case '{IDS[1]}' has token_digest bbbbbbbbbbbb..., but case '{IDS[2]}', "
        + TAIL.format(f"{own[:12]}...")]
    assert kept == sorted(IDS[2:] + AT_4)


def test_digests_alike_in_their_first_12_characters_are_printed_apart(good_run,
                                                                       tmp_path):
    # one differing at its 21st character: 4 past it, 24 in all
    own = json.loads((good_run / "summary.json").read_text())["cases"][0]["token_digest"]
    near = own[:20] + ("0" if own[20] != "0" else "1") + own[21:]
    path, lines, kept, _ = _edited(good_run, tmp_path, {IDS[3]: near})
    assert lines == [f"{path}: case '{IDS[3]}' has token_digest {near[:24]}..., but case "
                     f"'{IDS[0]}', " + TAIL.format(f"{own[:24]}...")]
    assert kept == sorted(IDS[:3] + AT_4)
    # two and two, differing at the last character: whole, and every case named
    zeros, one = "0" * 64, "0" * 63 + "1"
    path, lines, kept, _ = _edited(good_run, tmp_path, {AT_4[0]: zeros, AT_4[1]: zeros,
                                                        AT_4[2]: one, AT_4[3]: one})
    assert lines == [
        f"{path}: case '{AT_4[0]}' has token_digest {zeros}, but case '{AT_4[2]}', "
        + TAIL.format(one),
        f"{path}: case '{AT_4[1]}' has token_digest {zeros}, but case '{AT_4[2]}', "
        + TAIL.format(one),
        f"{path}: case '{AT_4[2]}' has token_digest {one}, but case '{AT_4[0]}', "
        + TAIL.format(zeros),
        f"{path}: case '{AT_4[3]}' has token_digest {one}, but case '{AT_4[0]}', "
        + TAIL.format(zeros)]
    assert kept == sorted(IDS)


def test_a_null_token_digest_is_left_out_as_an_empty_one_is(good_run, tmp_path):
    path, lines, kept, own = _edited(good_run, tmp_path, {IDS[1]: None, IDS[3]: ""})
    assert lines == [
        f"{path}: case '{IDS[1]}' has token_digest null, but case '{IDS[0]}', "
        + TAIL.format(f"{own[:12]}..."),
        f"{path}: case '{IDS[3]}' has token_digest \"\", but case '{IDS[0]}', "
        + TAIL.format(f"{own[:12]}...")]
    assert kept == sorted([IDS[0], IDS[2]] + AT_4)
