"""A hand-edited ``summary.json`` of an emulated run whose case names another model
than the run's metadata records: an ``emulated_preset`` typed over (the report's
EMULATED note named the typed preset while the Configuration table named the one the
runner ran) is read as the metadata's ``model.preset``, with one warning line; a
``model`` or ``emulated`` mark that contradicts the metadata's ``model.name`` leaves
the case out, with one line, as another setting the metadata records does."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis_run import load_with_warnings, run_bench
from test_hand_edited_summary import NO_FIGURES, _report, _warned

RUN = ["--scenario", "decode-steady", "--model", "emulated", "--model-preset",
       "llama-3.2-1b", "--num-running", "4", "--steps", "20", "--warmup-steps", "5",
       "--codecs", "msgpack", "--no-floor", "--no-single-process"]
SEND, CACHED = "num_running=4/send/msgpack#0", "num_running=4/cached/msgpack#0"


@pytest.fixture(scope="module")
def emulated_run(tmp_path_factory):
    """A real emulated run (llama-3.2-1b): send, then cached, at 4 running."""
    run = tmp_path_factory.mktemp("emulated-labels") / "good"
    run_bench(run, RUN)
    return run


def _edit(emulated_run, tmp_path, change):
    run = tmp_path / "run"
    shutil.copytree(emulated_run, run)
    summary = json.loads((run / "summary.json").read_text())
    assert [c["case_id"] for c in summary["cases"]] == [SEND, CACHED]
    change(summary["cases"][0])
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def test_the_unedited_run_loads_whole(emulated_run):
    results, lines = load_with_warnings(emulated_run)
    assert lines == []
    assert list(results.cases["emulated_preset"]) == ["llama-3.2-1b"] * 2


def test_a_preset_typed_over_is_read_as_the_metadatas(emulated_run, tmp_path, capsys):
    """The figures typed over too are recorded in the case alone: the preset's line is
    the only one, and the report names the preset the runner ran, never the typed one."""
    def change(case):
        case.update(emulated_preset="llama-3.1-8b",
                    emulated_memory_bandwidth_bytes_per_s=1e15)

    run = _edit(emulated_run, tmp_path, change)
    line = (f"{run / 'summary.json'}: case '{SEND}' has emulated_preset \"llama-3.1-8b\", "
            "but metadata.cases records model.preset \"llama-3.2-1b\" (read as "
            "\"llama-3.2-1b\", the metadata's)")
    results, lines = load_with_warnings(run)
    assert lines == [line]
    assert list(results.cases["emulated_preset"]) == ["llama-3.2-1b"] * 2
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    assert (code, _warned(err)) == (0, [line])
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "llama-3.1-8b" not in md.replace(line, "")
    assert ("> **Note:** EMULATED: 2 of 2 cases slept a roofline step time (llama-3.2-1b "
            "on NVIDIA H200 figures UNCALIBRATED); no GPU computed their steps") in md


@pytest.mark.parametrize("change, why", [
    (lambda c: c.update(model="null"),
     f"case '{SEND}' has model \"null\", but metadata.cases records model.name "
     "\"emulated\""),
    (lambda c: c.update(emulated=False),
     f"case '{SEND}' has emulated false, but metadata.cases records model.name "
     "\"emulated\""),
], ids=["model", "emulated-mark"])
def test_a_model_the_metadata_did_not_run_leaves_the_case_out(emulated_run, tmp_path,
                                                              capsys, change, why):
    run = _edit(emulated_run, tmp_path, change)
    line = f"{run / 'summary.json'}: {why} (left out)"
    results, lines = load_with_warnings(run)
    assert (lines, list(results.cases["case_id"])) == ([line], [CACHED])
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    assert (code, _warned(err)) == (0, [line])


def test_an_emulated_mark_on_a_null_model_case_leaves_it_out(shared_two_case_run,
                                                             tmp_path):
    run = tmp_path / "run"
    shutil.copytree(shared_two_case_run, run)
    summary = json.loads((run / "summary.json").read_text())
    summary["cases"][0]["emulated"] = True
    (run / "summary.json").write_text(json.dumps(summary))
    results, lines = load_with_warnings(run)
    assert lines == [f"{run / 'summary.json'}: case '{SEND}' has emulated true, but "
                     "metadata.cases records model.name \"null\" (left out)"]
    assert list(results.cases["case_id"]) == [CACHED]
