"""A hand-edited ``summary.json`` whose metadata holds a value of a type no run writes
where the report shows it as written: a text of the run (``scenario``, which titles
the report, ``hostname``...), an entry of ``notes``, a value of ``gpu``,
``virtualization`` or ``packages``, a setting of a ``metadata.cases`` entry
(``counted_steps``, its scheduler's and model's). Each is one warning line naming the
key path and what it must be; the value is left out (a report without a scenario is
titled ``?``), the rest shown as before."""

from __future__ import annotations

import pytest

from test_hand_edited_summary import (NO_FIGURES, SEND, _edit, _loaded, _report,
                                      _warned, good_run)  # noqa: F401 (fixture)


def _meta(key, value):
    """An edit that sets ``metadata.KEY`` to ``value``."""
    return lambda s: s["metadata"].__setitem__(key, value)


def _inside(key, field, value):
    """An edit that sets ``metadata.KEY.FIELD`` to ``value`` (``KEY`` made an object)."""
    def change(s):
        s["metadata"][key] = dict(s["metadata"].get(key) or {}, **{field: value})
    return change


def _shown_text(tmp_path) -> str:
    """The report's Markdown less its notes on loading (which quote the lines)."""
    md = (tmp_path / "rep" / "report.md").read_text().splitlines()
    return "\n".join(row for row in md if not row.startswith("> **Note:** Loading this run"))


def _case_setting(value, *keys):
    """An edit that sets ``metadata.cases[0]``'s ``KEYS`` (a path) to ``value``."""
    def change(s):
        obj = s["metadata"]["cases"][0]
        for key in keys[:-1]:
            obj = obj[key]
        obj[keys[-1]] = value
    return change


@pytest.mark.parametrize("change, why, gone", [
    (_meta("hostname", 7), "metadata.hostname is 7, not a text", "| hostname |"),
    (_meta("hostname", None), "metadata.hostname is null, not a text", "| hostname |"),
    (_meta("kernel", ["6.1"]), 'metadata.kernel is ["6.1"], not a text', "| kernel |"),
    (_meta("cwd", ["/tmp"]), 'metadata.cwd is ["/tmp"], not an absolute folder path',
     "- command: `cd "),
    (_meta("cwd", ""), 'metadata.cwd is "", not an absolute folder path', "- command: `cd "),
    (_meta("cwd", "rel/dir"), 'metadata.cwd is "rel/dir", not an absolute folder path',
     "- command: `cd "),
    (_meta("cwd", "/a\0b"), 'metadata.cwd is "/a\\u0000b", not an absolute folder path',
     "- command: `cd "),
    (_meta("cpu_affinity", "0-1"), 'metadata.cpu_affinity is "0-1", not a list of whole '
     "numbers (CPU ids)", "| cpu_affinity |"),
    (_meta("notes", [1, {}]), None, "## Notes"),
    (_inside("gpu", "count", "two"), 'metadata.gpu.count is "two", not a whole number',
     "count=two"),
    (_inside("gpu", "name", {"a": 1}), 'metadata.gpu.name is {"a": 1}, not a text',
     "name={"),
    (_inside("gpu", "extra", [1]), "metadata.gpu.extra is [1], not a text, a number, true "
     "or false", "extra="),
    (_inside("virtualization", "cpu_hypervisor_flag", "yes"),
     'metadata.virtualization.cpu_hypervisor_flag is "yes", not true or false',
     "cpu_hypervisor_flag=yes"),
    (_inside("virtualization", "sys_vendor", 3),
     "metadata.virtualization.sys_vendor is 3, not a text", "sys_vendor=3"),
    (_inside("packages", "numpy", 2), "metadata.packages.numpy is 2, not a text",
     "numpy 2"),
    (_inside("packages", "odd name", None),
     'metadata.packages["odd name"] is null, not a text', "odd name"),
], ids=["hostname-a-number", "hostname-null", "kernel-a-list", "cwd-a-list", "cwd-empty",
         "cwd-relative", "cwd-with-nul",
         "affinity-a-text",
        "notes-not-texts", "gpu-count-a-text", "gpu-name-an-object", "gpu-extra-a-list",
        "hypervisor-flag-a-text", "vendor-a-number", "package-a-number",
        "package-odd-name-null"])
def test_a_metadata_value_of_the_wrong_type_is_left_out_with_one_warning(
        good_run, tmp_path, capsys, change, why, gone):  # noqa: F811 (fixture)
    run = _edit(good_run, tmp_path, change)
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    summary = run / "summary.json"
    lines = ([f"{summary}: {why} (left out)"] if why else
             [f"{summary}: metadata.notes[0] is 1, not a text (left out)",
              f"{summary}: metadata.notes[1] is {{}}, not a text (left out)"])
    assert (code, _warned(err)) == (0, lines)
    assert _loaded(run) == lines
    md = _shown_text(tmp_path)
    assert gone not in md
    assert "| 0 | send | msgpack |" in md and "| 0 | cached | msgpack |" in md


def test_a_note_that_is_a_text_is_kept_beside_one_that_is_not(
        good_run, tmp_path, capsys):  # noqa: F811 (fixture)
    run = _edit(good_run, tmp_path, _meta("notes", [{"a": 1}, "trace shorter"]))
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    line = f'{run / "summary.json"}: metadata.notes[0] is {{"a": 1}}, not a text (left out)'
    assert (code, _warned(err)) == (0, [line])
    md = (tmp_path / "rep" / "report.md").read_text().splitlines()
    assert md[md.index("## Notes") + 4] == "- trace shorter"
    assert not any("'a'" in row for row in md)


def test_a_scenario_that_is_not_a_text_is_left_out_of_the_title(
        good_run, tmp_path, capsys):  # noqa: F811 (fixture)
    """``"scenario": 3`` titled the report ``ipc-bench report: 3``."""
    run = _edit(good_run, tmp_path, _meta("scenario", 3))
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    line = f"{run / 'summary.json'}: metadata.scenario is 3, not a text (left out)"
    assert (code, _warned(err)) == (0, [line])
    md = (tmp_path / "rep" / "report.md").read_text().splitlines()
    assert md[0] == "# ipc-bench report: decode-steady (`run`)"  # its cases' scenario
    assert "- scenario: `?`, seed 0" in md
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "ipc-bench report: 3" not in html


SETTING = f"case '{SEND}'; left out"


@pytest.mark.parametrize("change, why, gone", [
    (_case_setting("many", "counted_steps"),
     f'metadata.cases[0].counted_steps is "many", not a whole number or null ({SETTING})',
     "counted_steps=many"),
    (_case_setting(2.5, "warmup_steps"),
     f"metadata.cases[0].warmup_steps is 2.5, not a whole number ({SETTING})",
     "warmup_steps=2.5"),
    (_case_setting("no", "stream"),
     f'metadata.cases[0].stream is "no", not true or false ({SETTING})', "stream=no"),
    (_case_setting("10s", "peer_timeout_s"),
     f'metadata.cases[0].peer_timeout_s is "10s", not a number ({SETTING})',
     "peer_timeout_s=10s"),
    (_case_setting("all", "scheduler", "max_num_seqs"),
     f'metadata.cases[0].scheduler.max_num_seqs is "all", not a whole number ({SETTING})',
     "max_num_seqs=all"),
    (_case_setting([5], "model", "step_time_ms"),
     f"metadata.cases[0].model.step_time_ms is [5], not a number ({SETTING})",
     "step_time_ms=[5]"),
    (_case_setting({"x": 1}, "model", "extra"),
     f'metadata.cases[0].model.extra is {{"x": 1}}, not a text, a number, true, false or '
     f"null ({SETTING})", "extra="),
], ids=["counted-steps-a-text", "warmup-steps-a-fraction", "stream-a-text",
        "timeout-a-text", "scheduler-value-a-text", "model-value-a-list",
        "model-extra-an-object"])
def test_a_case_setting_of_the_wrong_type_is_left_out_of_its_row(
        good_run, tmp_path, capsys, change, why, gone):  # noqa: F811 (fixture)
    """Only the value is left out: the case's row shows its other settings."""
    run = _edit(good_run, tmp_path, change)
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    line = f"{run / 'summary.json'}: {why}"
    assert (code, _warned(err)) == (0, [line])
    assert _loaded(run) == [line]
    md = _shown_text(tmp_path)
    assert gone not in md
    row = next(r for r in md.splitlines() if r.startswith(f"| 1 case: {SEND} |"))
    assert "max_num_batched_tokens=8192" in row and "vocab_size=128256" in row
