"""A steady case whose ``output_tokens_per_s`` is null or absent in ``summary.json``
(hand-edited: a run writes it wherever it counted a step) is left out with a warning
line that says what its own figures make (``row_checks._rate_problem``), as a case whose
figure disagrees with them is, where it was loaded silently with no tok/s figure and
the run's tok/s findings dropped without a word."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest

from ipc_bench import cli
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning


def _edited(shared_small_run, tmp_path, change):
    run = tmp_path / "run"
    shutil.copytree(shared_small_run, run)
    summary = json.loads((run / "summary.json").read_text())
    case = next(c for c in summary["cases"] if c["policy"] == "cached"
                and c["codec"] == "msgpack")
    change(case)
    (run / "summary.json").write_text(json.dumps(summary))
    return run, case


def _want(run, case, what: str) -> str:
    tokens, n, mean = case["output_tokens"], case["num_steps"], case["step_ns_mean"]
    return (f"{run / 'summary.json'}: case {case['case_id']!r} has {what}, but its "
            f"output_tokens {tokens:,.15g} over its {n:,.15g} counted steps of "
            f"step_ns_mean {mean:,.6g} make {tokens / (n * mean / 1e9):,.6g} (left out)")


NO_RATE = "no output_tokens_per_s (null or absent)"


@pytest.mark.parametrize("change", [lambda c: c.update(output_tokens_per_s=None),
                                    lambda c: c.pop("output_tokens_per_s")])
def test_a_null_or_absent_rate_is_left_out_with_a_line(shared_small_run, tmp_path, change):
    run, case = _edited(shared_small_run, tmp_path, change)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        results = load([run])
    lines = [str(w.message) for w in caught if issubclass(w.category, ResultsWarning)]
    assert lines == [_want(run, case, NO_RATE)]
    assert case["case_id"] not in set(results.cases["case_id"])
    assert len(results.cases) == 11  # of the run's 12, its rows left out with it
    assert case["case_id"] not in set(results.steps["case_id"])


def test_the_report_says_so_on_stderr(shared_small_run, tmp_path, capsys):
    run, case = _edited(shared_small_run, tmp_path,
                        lambda c: c.update(output_tokens_per_s=None))
    code = cli.main(["report", str(run), "--output", str(tmp_path / "rep"), "--no-figures"])
    err = capsys.readouterr().err.splitlines()
    assert code == 0
    assert f"bench.py report: warning: {_want(run, case, NO_RATE)}" in err


def test_a_single_process_finding_without_one_arms_case_of_a_codec(shared_small_run, tmp_path,
                                                                  capsys):
    """A run whose cached/msgpack case at 4 running is gone from summary.json (its rows
    left as written) still gets its single-process finding: cached against pickle
    only, send against both (a KeyError ended the report with a traceback)."""
    run = tmp_path / "run"
    shutil.copytree(shared_small_run, run)
    summary = json.loads((run / "summary.json").read_text())
    gone = "num_running=4/cached/msgpack#0"
    summary["cases"] = [c for c in summary["cases"] if c["case_id"] != gone]
    summary["metadata"]["cases"] = [c for c in summary["metadata"]["cases"]
                                    if c.get("case_id") != gone]
    (run / "summary.json").write_text(json.dumps(summary))
    out = tmp_path / "rep"
    assert cli.main(["report", str(run), "--output", str(out), "--no-figures"]) == 0
    capsys.readouterr()
    (line,) = [ln for ln in (out / "report.md").read_text().splitlines()
               if ln.startswith("- At 4 running requests, the single-process baseline")]
    cached, send = line.split("cached: ")[1].split("; send: ")
    assert " two processes with msgpack (" in send and " two processes with pickle (" in send
    assert " two processes with msgpack (" not in cached
    assert " two processes with pickle (" in cached
