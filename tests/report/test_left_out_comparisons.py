"""A paired comparison ``summary.json`` recorded over a case the loader left out is
recomputed over the cases loaded (``findings.run_comparisons``): a finding never
prints an interval of the cases shown beside a p-value of the cases recorded."""

from __future__ import annotations

import json

import pytest

from analysis_run import run_bench
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning
from ipc_bench.analysis.stats import compare_cases
from ipc_bench.report.findings import findings, recorded_tput

ARGS = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "40",
        "--warmup-steps", "5", "--repeat", "3", "--codecs", "msgpack", "--no-floor",
        "--no-single-process"]
LEFT_OUT = "num_running=4/cached/msgpack#1"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A ``--repeat 3`` run whose recorded p-values are edited to 0.123 and one of whose
    cases has tokens/s ``"fast"`` (left out by the loader)."""
    path = tmp_path_factory.mktemp("left-out") / "run"
    run_bench(path, ARGS)
    summary = json.loads((path / "summary.json").read_text())
    for c in summary["comparisons"]:
        for m in c["metrics"].values():
            if m.get("p_value") is not None:
                m["p_value"] = 0.123
    (case,) = [c for c in summary["cases"] if c["case_id"] == LEFT_OUT]
    case["output_tokens_per_s"] = "fast"
    (path / "summary.json").write_text(json.dumps(summary))
    return path


def _load(path):
    with pytest.warns(ResultsWarning, match="output_tokens_per_s \"fast\""):
        return load(path)


def _expected(path):
    """The tokens/s metric of cached against send over the two pairs loaded."""
    summary = json.loads((path / "summary.json").read_text())
    kept = [c for c in summary["cases"] if c["case_id"] != LEFT_OUT]
    (c,) = compare_cases(kept, method="t")
    return c, c["metrics"]["output_tokens_per_s"]


def test_the_pair_finding_gives_the_p_value_of_the_pairs_it_shows(run):
    _, m = _expected(run)
    assert m["p_value"] != 0.123 and m["n_pairs"] == 2
    (line,) = [f for f in findings(_load(run)) if "output tokens/s changes by" in f]
    assert "over 2 repetitions" in line
    assert (f"after Holm (p {m['p_value']:.3f}, adjusted {m['p_adjusted']:.3f})") in line
    assert "p 0.123" not in line


def test_the_recorded_comparisons_are_recomputed_over_the_cases_loaded(run):
    from ipc_bench.report.findings import run_comparisons

    c, m = _expected(run)
    results = _load(run)
    (((run_id, (got,)),)) = run_comparisons(results).items()
    assert got == c and got["n_pairs"] == 2 and got["repetitions"] == [0, 2]
    assert recorded_tput(results)[("num_running=4", "msgpack", "ipc", "null")] == dict(
        m, family_size=7)
