"""ITL of a timed replay run with drafts (``--num-spec-tokens``): one gap per step that
gave a request tokens (``recording.request_record``), as vLLM streams one step's tokens
as one chunk and benchmark_serving counts a gap per chunk, so fewer than the n - 1 per
request of n tokens, and none of 0 s. ``requests.csv`` does not give that count, so
the loader checks ``itl.csv`` against the case's ``itl_count`` (``row_checks``), with no
warning on a whole run and one on a cut or doubled file."""

from __future__ import annotations

import csv
import json
import shutil
import warnings
from collections import Counter
from pathlib import Path

import pytest

from analysis_run import run_bench
from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning
from test_timed_no_floor import write_trace


@pytest.fixture(scope="module")
def drafts_run(tmp_path_factory) -> tuple[Path, str]:
    """A timed replay of 6 requests of 8 output tokens, cached, msgpack, 3 drafts at
    the default acceptance 0.7: (folder, case id)."""
    base = tmp_path_factory.mktemp("drafts")
    write_trace(base / "trace.csv")
    run_bench(base / "run", ["--scenario", "azure-conv-timed", "--trace",
                             str(base / "trace.csv"), "--max-requests", "6", "--codecs",
                             "msgpack", "--warmup-steps", "2", "--no-single-process",
                             "--policies", "cached", "--num-spec-tokens", "3"])
    case = json.loads((base / "run" / "summary.json").read_text())["cases"][0]
    return base / "run", case["case_id"]


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _loaded_lines(run: Path) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        load(run)
    return [str(w.message) for w in caught]


def test_a_gap_per_step_not_per_token(drafts_run):
    run, case_id = drafts_run
    case = json.loads((run / "summary.json").read_text())["cases"][0]
    requests, gaps = _rows(run / "requests.csv"), _rows(run / "itl.csv")
    assert [int(r["num_output_tokens"]) for r in requests] == [8] * 6  # 42 tokens' gaps
    # The accepted drafts (a hash of each request's tokens) gave these steps a request:
    assert sorted(Counter(int(g["index"]) for g in gaps).items()) == [
        (0, 4), (1, 3), (2, 4), (3, 4), (4, 3), (5, 5)]
    assert case["itl_count"] == len(gaps) == 23
    assert min(float(g["itl_s"]) for g in gaps) > 0
    for r in requests:  # a request's gaps span its first to its last token
        mine = sum(float(g["itl_s"]) for g in gaps if g["index"] == r["index"])
        assert mine == pytest.approx(float(r["e2e_s"]) - float(r["ttft_s"]), abs=1e-12)
    assert _loaded_lines(run) == []


def test_an_itl_csv_cut_short_is_said_against_its_itl_count(drafts_run, tmp_path):
    run, case_id = tmp_path / "run", drafts_run[1]
    shutil.copytree(drafts_run[0], run)
    lines = (run / "itl.csv").read_text().splitlines(keepends=True)
    (run / "itl.csv").write_text("".join(lines[:21]))
    assert _loaded_lines(run) == [
        f"{run / 'itl.csv'}: 20 of the 23 rows that summary.json counts (itl_count: with "
        "drafts one gap per step after a request's first that gave it tokens; 1 case(s) "
        f"short: {case_id}: 20 of 23); loaded what is valid"]


def test_a_gap_written_twice_is_left_out_against_its_itl_count(drafts_run, tmp_path):
    run, case_id = tmp_path / "run", drafts_run[1]
    shutil.copytree(drafts_run[0], run)
    lines = (run / "itl.csv").read_text().splitlines(keepends=True)
    (run / "itl.csv").write_text("".join(lines + lines[1:2]))  # within n - 1 = 7
    ids = f"case {case_id!r} has"
    assert _loaded_lines(run) == [
        f"{run / 'itl.csv'}: {ids} 24 rows, more than the 23 gaps summary.json counts "
        "(itl_count: with drafts one gap per step after a request's first that gave it "
        "tokens; its rows left out)",
        f"{run / 'requests.csv'}: {ids} ttft_ms_*, tpot_ms_* and e2e_ms_* withheld (not "
        "quoted): its 6 rows here left out, the case having more rows than summary.json "
        "counts in requests.csv or itl.csv (said above); none of its rows is loaded",
        f"{run / 'itl.csv'}: {ids} itl_ms_* withheld (not quoted): its 24 rows here left "
        "out, the case having more rows than summary.json counts in requests.csv or "
        "itl.csv (said above); none of its rows is loaded"]
