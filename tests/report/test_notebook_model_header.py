"""notebooks/analysis.ipynb's first output says which model the run ran."""

from notebook_run import first_output_lines, needs_jupyter, run_notebook

needs_jupyter()


def test_the_first_output_names_the_null_model(shared_small_run):
    lines = first_output_lines(run_notebook(str(shared_small_run)))
    assert lines[0] == "runs: small-run (complete)"
    assert lines[2] == "model: null (no model computed: the step is the harness's own)"
    assert lines[3].startswith("steps: ")
