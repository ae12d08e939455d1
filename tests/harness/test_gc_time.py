"""The time each process spends in garbage collections, per step: ``GcCounter.ns``
(from each collection's ``gc.callbacks`` start to its stop), recorded in ``steps.csv``
as ``gc_ns`` and ``runner_gc_ns`` beside the collection counts, and summed up in
``summary.json`` as ``sched_gc_ns_per_step`` and ``runner_gc_ns_per_step``. A run
written before them still loads, quietly, and reports."""

from __future__ import annotations

import csv
import gc
import json
import shutil
import time
import warnings

import numpy as np

from ipc_bench.analysis.results import load
from ipc_bench.harness.recording import GcCounter
from ipc_bench.harness.spec import RUNNER_COLUMNS, SCHED_COLUMNS
from ipc_bench.report import findings

TIME_FIELDS = ("sched_gc_ns_per_step", "runner_gc_ns_per_step")


def test_the_counter_counts_collections_and_their_time():
    enabled = gc.isenabled()
    gc.disable()  # no collection but the test's own
    counter = GcCounter()
    try:
        t0 = time.perf_counter_ns()
        gc.collect()
        gc.collect(0)
        elapsed = time.perf_counter_ns() - t0
        assert counter.count == 2
        assert 0 < counter.ns <= elapsed
    finally:
        counter.close()
        if enabled:
            gc.enable()
    count, ns = counter.count, counter.ns
    gc.collect(0)  # closed: no longer counted
    assert (counter.count, counter.ns) == (count, ns)


def test_the_columns_sit_beside_the_counts():
    assert SCHED_COLUMNS[SCHED_COLUMNS.index("gc_collections") + 1] == "gc_ns"
    assert RUNNER_COLUMNS[RUNNER_COLUMNS.index("runner_gc_collections") + 1] == "runner_gc_ns"


def test_a_run_records_the_time_and_one_before_it_still_loads(tmp_path, shared_two_case_run):
    # 4 running, 20 counted steps, msgpack, no floor (analysis_run.TWO_CASE_ARGS)
    run = tmp_path / "run"
    shutil.copytree(shared_two_case_run, run)
    with open(run / "steps.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    summary = json.loads((run / "summary.json").read_text())
    for case in summary["cases"]:
        mine = [r for r in rows if r["case_id"] == case["case_id"] and r["counted"] == "1"]
        assert len(mine) == 20
        for column, field in (("gc_ns", "sched_gc_ns_per_step"),
                              ("runner_gc_ns", "runner_gc_ns_per_step")):
            assert case[field] == np.mean([int(r[column]) for r in mine])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = load(run)
    assert [str(w.message) for w in caught] == []
    lines = list(findings.findings(results))

    # the same run as one written before the time was recorded
    old = tmp_path / "old"
    old.mkdir()
    keep = [c for c in rows[0] if c not in ("gc_ns", "runner_gc_ns")]
    with open(old / "steps.csv", "w", newline="") as f:
        w = csv.DictWriter(f, keep, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    for case in summary["cases"]:
        for field in TIME_FIELDS:
            del case[field]
    (old / "summary.json").write_text(json.dumps(summary))
    for p in run.iterdir():
        if not (old / p.name).exists() and p.is_file():
            (old / p.name).write_bytes(p.read_bytes())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        before = load(old)
    assert [str(w.message) for w in caught] == []
    assert len(before.cases) == 2
    assert not set(TIME_FIELDS) & set(before.cases.columns)
    assert before.steps[["gc_ns", "runner_gc_ns"]].isna().all().all()
    assert list(findings.findings(before)) == lines
