"""A whole number too long to quote in a hand-edited summary is echoed in warnings as
written, its digits cut at 40 with ``...`` (``run_files._shown``), as a
``format_version``'s refusal shows one, where it read in ``%g`` form (``num_steps
1e+400``): the number 1E400, which is no whole number."""

from __future__ import annotations

import json
import shutil
import warnings

from ipc_bench.analysis.results import load
from ipc_bench.analysis.run_files import ResultsWarning, _shown

DIGITS = "1" + "0" * 39 + "..."


def test_shown_cuts_a_huge_whole_number_as_written():
    assert _shown(10**400) == DIGITS
    assert _shown(-123456789 * 10**60) == "-123456789" + "0" * 30 + "..."
    assert _shown(10**39) == "1" + "0" * 39  # 40 digits: not cut


def test_a_huge_num_steps_is_warned_with_its_digits(shared_two_case_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(shared_two_case_run, run, ignore=shutil.ignore_patterns("report"))
    path = run / "summary.json"
    summary = json.loads(path.read_text())
    summary["cases"][0]["num_steps"] = 10**400
    case_id = summary["cases"][0]["case_id"]
    path.write_text(json.dumps(summary))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        load(run)
    assert [str(w.message) for w in caught] == [
        f"{path}: case {case_id!r} has num_steps {DIGITS}, more than 1e+15 (left out)"]
