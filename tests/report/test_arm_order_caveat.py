"""A comparison whose arms ran first in unequal numbers of its pairs, more unequal than
the count allows (one arm first in more than ceil(n / 2) of n >= 3), gets a line in
the findings naming it and the split: a run written before the orders were
counterbalanced (``scenario.balanced_orders``), or a hand-made summary, is flagged;
a balanced one is not. Which case ran first is read from the order of the summary's
cases."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis_run import run_bench
from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.report.findings import _balanced_firsts, _where_of, order_findings

GRID = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "10",
        "--warmup-steps", "2", "--codecs", "msgpack", "--no-floor", "--no-single-process"]

TAIL = ("whatever favours running first or second (a drift, a warmer parent process) "
        "leans this comparison's times and tokens/s to one arm, and its intervals do not "
        "allow for it; its bytes are exact whatever the order.")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, shared_five_repetition_run):
    """``five``: cached against send, 5 repetitions (a copy of the session's,
    ``shared_five_repetition_run``); ``aa``: send against send', 3."""
    base = tmp_path_factory.mktemp("armorder")
    shutil.copytree(shared_five_repetition_run, base / "five")
    run_bench(base / "aa", GRID + ["--repeat", "3", "--aa"])
    return base


def _reordered(src, dst, firsts: list[str]):
    """A copy of run ``src`` at ``dst`` whose summary lists each repetition's cases
    with ``firsts[r]`` first (as if it had run first)."""
    shutil.copytree(src, dst)
    summary = json.loads((dst / "summary.json").read_text())
    summary["cases"].sort(key=lambda c: (c["repetition"], c["arm"] != firsts[c["repetition"]]))
    (dst / "summary.json").write_text(json.dumps(summary))
    return dst


def _lines(run) -> list[str]:
    results = load(run)
    return order_findings(results, _where_of(results.cases, results.labels))


def _report_lines(run, out) -> list[str]:
    assert cli.main(["report", str(run), "--output", str(out), "--no-figures"]) == 0
    return (out / "report.md").read_text().splitlines()


def test_a_counterbalanced_run_gets_no_line(runs, tmp_path):
    summary = json.loads((runs / "five" / "summary.json").read_text())
    firsts = [c["arm"] for c in summary["cases"][::2]]
    assert sorted(firsts.count(a) for a in ("send", "cached")) == [2, 3]
    assert _lines(runs / "five") == [] and _lines(runs / "aa") == []
    assert not any("ran first" in ln for ln in _report_lines(runs / "five", tmp_path / "r"))


def test_one_arm_first_in_every_pair_is_said_in_the_findings(runs, tmp_path):
    run = _reordered(runs / "five", tmp_path / "lopsided", ["cached"] * 5)
    line = ("At 4 running requests (msgpack), cached ran first in 5 of 5 pairs of cached "
            "against send, where a balanced order puts each arm first in 2 or 3: " + TAIL)
    assert _lines(run) == [line]
    assert _report_lines(run, tmp_path / "r").count(f"- {line}") == 1


def test_four_of_five_is_said_and_three_is_not(runs, tmp_path):
    run = _reordered(runs / "five", tmp_path / "four", ["send"] * 4 + ["cached"])
    assert _lines(run) == [
        "At 4 running requests (msgpack), send ran first in 4 of 5 pairs of cached "
        "against send, where a balanced order puts each arm first in 2 or 3: " + TAIL]
    run = _reordered(runs / "five", tmp_path / "three", ["send"] * 3 + ["cached"] * 2)
    assert _lines(run) == []


def test_an_aa_comparison_is_judged_too(runs, tmp_path):
    run = _reordered(runs / "aa", tmp_path / "aa", ["send'"] * 3)
    assert _lines(run) == [
        "At 4 running requests (msgpack), send' ran first in 3 of 3 pairs of send' "
        "against send, where a balanced order puts each arm first in 1 or 2: " + TAIL]


def test_fewer_than_three_pairs_get_no_line(runs, tmp_path):
    summary = json.loads((runs / "aa" / "summary.json").read_text())
    for c in summary["comparisons"]:  # a summary that paired 2 of its repetitions
        c["repetitions"], c["n_pairs"] = [0, 1], 2
    run = _reordered(runs / "aa", tmp_path / "two", ["send'"] * 3)
    (run / "summary.json").write_text(json.dumps(dict(
        json.loads((run / "summary.json").read_text()),
        comparisons=summary["comparisons"])))
    assert _lines(run) == []


def test_what_a_balanced_order_gives():
    assert [_balanced_firsts(n) for n in (3, 4, 5, 6)] == ["1 or 2", "2", "2 or 3", "3"]
