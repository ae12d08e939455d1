"""A ``summary.json`` whose values have the wrong types (a case that is not an object,
a known numeric field that is not a number) loads like a CSV row that is not a
number: the case is left out with one warning line naming it and the field, or, when
no case is left, the report stops with one error line and exit code 2."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis_run import run_bench
from ipc_bench import cli

RUN = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
       "--warmup-steps", "5", "--codecs", "msgpack", "--no-single-process", "--no-floor"]
SEND = "num_running=4/send/msgpack#0"


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    """A real run of two cases (send, then cached)."""
    run = tmp_path_factory.mktemp("typed") / "good"
    run_bench(run, RUN)
    return run


def _corrupt(good_run, tmp_path, change) -> "Path":
    run = tmp_path / "run"
    shutil.copytree(good_run, run)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["cases"][0]["case_id"] == SEND
    change(summary["cases"])
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def _report(run, tmp_path, capsys) -> tuple[int, list[str]]:
    code = cli.main(["report", str(run), "--output", str(tmp_path / "rep")])
    return code, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("change, why", [
    (lambda cases: cases[0].update(output_tokens_per_s="fast"),
     f"case '{SEND}' has output_tokens_per_s \"fast\", not a number"),
    (lambda cases: cases[0].update(repetition="x"),
     f"case '{SEND}' has repetition \"x\", not a number"),
    (lambda cases: cases.__setitem__(0, 5), "cases[0] is 5, not an object"),
], ids=["tokens-per-s-a-string", "repetition-a-string", "case-a-number"])
def test_a_mistyped_case_is_left_out_with_one_warning(good_run, tmp_path, capsys, change,
                                                      why):
    run = _corrupt(good_run, tmp_path, change)
    code, err = _report(run, tmp_path, capsys)
    assert code == 0
    assert err == [f"bench.py report: warning: {run / 'summary.json'}: {why} (left out)"]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"> **Note:** Loading this run: {run / 'summary.json'}: {why} (left out)." in md
    assert "| 0 | cached | msgpack |" in md
    assert "| 0 | send | msgpack |" not in md


def test_a_summary_with_no_loadable_case_is_one_error(good_run, tmp_path, capsys):
    def change(cases):
        cases[0]["output_tokens_per_s"] = "fast"
        cases[1] = "x"
    run = _corrupt(good_run, tmp_path, change)
    code, err = _report(run, tmp_path, capsys)
    assert code == 2
    assert err == [f"bench.py report: error: {run / 'summary.json'}: no case can be loaded: "
                   f"case '{SEND}' has output_tokens_per_s \"fast\", not a number (and 1 "
                   "more)"]
    assert not (tmp_path / "rep").exists()
