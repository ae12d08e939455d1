"""docs/usage.md gives a headless recipe for notebooks/analysis.ipynb that runs with
what the project installs (nbclient, nbformat and ipykernel, the ``[test]`` extra),
where it named only ``jupyter nbconvert`` and papermill, which it does not install:
the recipe, run as given (its run and output paths replaced), executes the notebook."""

from __future__ import annotations

import os
import re

from analysis_run import REPO
from notebook_run import needs_jupyter

nbformat, _ = needs_jupyter()

RECIPE = '''python - <<'EOF'
import nbclient, nbformat
nb = nbformat.read("notebooks/analysis.ipynb", as_version=4)
nb.cells[0].source = 'RESULTS = "../results/RUN"'  # or a list of runs; None: the newest
nbclient.NotebookClient(nb, kernel_name="python3", timeout=600,
                        resources={"metadata": {"path": "notebooks"}}).execute()
nbformat.write(nb, "results/analysis.ipynb")
EOF'''


def test_the_docs_headless_recipe_runs(shared_two_case_run, tmp_path, monkeypatch):
    usage = (REPO / "docs" / "usage.md").read_text()
    blocks = re.findall(r"```\n(python - <<'EOF'\n.*?\nEOF)\n```", usage, re.S)
    assert blocks == [RECIPE]
    out = tmp_path / "analysis.ipynb"
    # the run: a path relative to notebooks/, as the recipe's comment says
    run = os.path.relpath(shared_two_case_run, REPO / "notebooks")
    code = "\n".join(RECIPE.splitlines()[1:-1]).replace("../results/RUN", run).replace(
        '"results/analysis.ipynb"', repr(str(out)))
    monkeypatch.chdir(REPO)
    exec(compile(code, "recipe", "exec"), {})
    nb = nbformat.read(out, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert f"runs: {shared_two_case_run.name} (complete)" in text
