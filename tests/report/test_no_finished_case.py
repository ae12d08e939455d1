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


def _one_run(cases):
    import types

    import pandas as pd

    frame = pd.DataFrame(cases)
    return types.SimpleNamespace(finished=lambda: types.SimpleNamespace(cases=frame),
                                 paths={})


def test_an_unfinished_run_whose_finished_cases_counted_no_step_has_no_figures():
    from ipc_bench.report.blocks import _finished_cover

    assert _finished_cover(_one_run([{"num_steps": 0}]), "r") == (
        "The case that finished counted no step (its warnings say why), so it has no "
        "per-step figures.")
    assert _finished_cover(_one_run([{"num_steps": 0}, {"num_steps": None}]), "r") == (
        "The 2 cases that finished counted no step (their warnings say why), so it has "
        "no per-step figures.")
    assert _finished_cover(_one_run([{"num_steps": 0}, {"num_steps": 40}]), "r") == (
        "Its figures cover the cases that finished.")
    assert _finished_cover(_one_run([]), "r") == (
        "No case finished, so it has no figures, findings or case tables.")
