"""notebooks/analysis.ipynb's cases table names the model each case ran, in the
report's words (``tables.model_cell``): an emulated run's rows name the emulated model
and its preset, and never read as a null run's."""

from analysis_run import run_bench
from notebook_run import NOTEBOOK, needs_jupyter

nbformat, nbclient = needs_jupyter()
RUN = ["--scenario", "decode-steady", "--model", "emulated", "--model-preset",
       "llama-3.2-1b", "--num-running", "4", "--steps", "20", "--warmup-steps", "5",
       "--codecs", "msgpack", "--no-floor", "--no-single-process"]
EMULATED = "emulated model (llama-3.2-1b on NVIDIA H200)"


def test_each_model_in_the_reports_words():
    from ipc_bench.report.tables import model_cell

    assert [model_cell(c) for c in (
        dict(model="null"), dict(model="fixed-step"), dict(model="torch"),
        dict(model="emulated", emulated_preset="llama-3.2-1b", emulated_gpu="NVIDIA H200"),
        dict(model="emulated"), dict(model=None), {})] == [
        "null model", "fixed-step model", "torch model", EMULATED,
        "emulated model (?)", "not recorded", "not recorded"]


def test_the_cases_table_names_an_emulated_runs_model(tmp_path):
    run = tmp_path / "emulated"
    run_bench(run, RUN)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells[0].source = f"RESULTS = {str(run)!r}"
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=180,
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    cell = next(c for c in nb.cells if c.cell_type == "code" and "model_cell(" in c.source)
    (table,) = [o["data"]["text/html"] for o in cell.outputs
                if "text/html" in o.get("data", {})]
    head = table.split("<thead>")[1].split("</thead>")[0]
    names = [part.split("</th>")[0] for part in head.split("<th>")[1:]]
    assert names == ["", "run_id", "workload", "policy", "arm", "codec", "model", "repetition",
                     "num_steps", "output_tokens_per_s",
                     "sched_to_runner_payload_bytes_per_step",
                     "runner_to_sched_payload_bytes_per_step", "encode_ns_per_step",
                     "decode_ns_per_step", "step_ns_mean"]
    rows = [[cell.split("</td>")[0] for cell in row.split("<td>")[1:]]
            for row in table.split("<tbody>")[1].split("<tr>")[1:]]
    assert [row[:6] for row in rows] == [
        ["emulated", "num_running=4", "send", "send", "msgpack", EMULATED],
        ["emulated", "num_running=4", "cached", "cached", "msgpack", EMULATED]]
