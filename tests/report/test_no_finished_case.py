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


def test_a_run_that_finished_no_case_is_said_once_under_a_side_by_side_table():
    """Beside the reference, a run with no finished case at all is said as the
    reference itself would be (``base_unfinished_note``: finished no case, its section
    says why), not row by row as if it lacked only those workloads; a run that finished
    other cases keeps the row count."""
    import pandas as pd

    from ipc_bench.report.blocks import _run_gaps, base_unfinished_note

    groups = [("num_running=4", "send", "msgpack"), ("num_running=4", "cached", "msgpack"),
              ("num_running=16", "send", "msgpack")]
    means = pd.Series({groups[0] + ("a",): 1.0, groups[1] + ("a",): 2.0,
                       groups[2] + ("a",): 3.0, groups[2] + ("b",): 4.0})
    assert _run_gaps(means, groups, ["a", "b", "k"], "a", lambda g, r: False) == [
        "`-` in run `b`'s column on 2 rows: that run ran no case of the row's "
        "workload, arm and codec, or finished none.",
        "`-` in run `k`'s column: that run finished no case (its section says why)."]
    assert base_unfinished_note("k", []) == (
        "`-` in every ratio column: run `k`, the baseline, finished no case (its section "
        "says why), so there is no mean to divide by.")


def test_the_findings_of_a_run_with_no_finished_case_say_it_as_its_other_sections():
    import types

    import pandas as pd

    from ipc_bench.report.findings import findings

    empty = types.SimpleNamespace(cases=pd.DataFrame())
    assert findings(types.SimpleNamespace(finished=lambda: empty)) == [
        "None: no case finished."]
