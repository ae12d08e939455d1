"""A run killed before any case finished says so in place of its figures, and that the
rows the running case left in ``steps.partial.csv`` are not used, instead of "no
per-step records" and "Its figures cover the cases that finished"."""

from __future__ import annotations


def test_a_run_with_no_finished_case_says_its_partial_rows_are_not_used(tmp_path):
    from ipc_bench.report.blocks import no_case_finished

    assert no_case_finished(tmp_path) == (
        "No case finished, so it has no figures, findings or case tables.")
    (tmp_path / "steps.partial.csv").write_text("case_id,step\n")
    assert no_case_finished(tmp_path) == (
        "No case finished, so it has no figures, findings or case tables; the rows the "
        "unfinished case left in steps.partial.csv are not used for any figure.")
