"""A hand-edited ``summary.json`` whose object gives one key twice or more (two
``metadata`` objects, a case's ``policy`` typed in again): valid JSON, which ``json``
reads keeping the last value, so the earlier ones were dropped without a word. Each
such key is one warning line naming its key path and how many times it is given; the
last value is kept, as before."""

from __future__ import annotations

import json

from test_hand_edited_summary import (CACHED, NO_FIGURES, SEND, _edit, _loaded, _report,
                                      _warned, good_run)  # noqa: F401 (fixture)


def _raw_edit(good_run, tmp_path, *replacements):
    """A copy of ``good_run`` whose ``summary.json`` text (as ``json.dumps`` writes it)
    has each ``(old, new)`` of ``replacements`` replaced, ``old`` found once."""
    run = _edit(good_run, tmp_path, lambda s: None)
    text = (run / "summary.json").read_text()
    for old, new in replacements:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (run / "summary.json").write_text(text)
    return run


def test_two_metadata_objects_are_one_warning_and_the_last_is_read(
        good_run, tmp_path, capsys):  # noqa: F811 (fixture)
    run = _raw_edit(good_run, tmp_path, ('"metadata": {', '"metadata": {"scenario": 5}, '
                                         '"metadata": {'))
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    line = f"{run / 'summary.json'}: key metadata is given 2 times (the last one read)"
    assert (code, _warned(err)) == (0, [line])
    assert _loaded(run) == [line]
    md = (tmp_path / "rep" / "report.md").read_text().splitlines()
    assert md[0] == "# ipc-bench report: decode-steady (`run`)"
    assert f"> **Note:** Loading this run: {line}." in md


def test_each_key_given_again_in_an_object_is_one_warning_by_its_path(
        good_run, tmp_path, capsys):  # noqa: F811 (fixture)
    """A case's ``policy`` given three times, its ``num_steps`` twice, the second
    ``metadata.cases`` entry's model ``name`` twice, a key that is no plain name twice:
    one line each, in the file's order; every value kept is the last one given."""
    run = _raw_edit(
        good_run, tmp_path,
        (f'{{"case_id": "{SEND}", "scenario"',
         f'{{"case_id": "{SEND}", "policy": "x", "num_steps": -1, "policy": "y", '
         '"a b": 1, "a b": 2, "scenario"'),
        (f'{{"case_id": "{CACHED}", "labels"',
         f'{{"case_id": "{CACHED}", "model": {{"name": "x", "name": 5}}, "labels"'))
    summary = json.loads((run / "summary.json").read_text())
    assert summary["cases"][0]["policy"] == "send"
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    path = run / "summary.json"
    lines = [f"{path}: key metadata.cases[1].model is given 2 times (the last one read)",
             f"{path}: key cases[0].policy is given 3 times (the last one read)",
             f"{path}: key cases[0].num_steps is given 2 times (the last one read)",
             f'{path}: key cases[0]["a b"] is given 2 times (the last one read)']
    assert (code, _warned(err)) == (0, lines)
    assert _loaded(run) == lines
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| 0 | send | msgpack |" in md and "| 0 | cached | msgpack |" in md


def test_an_unedited_summary_gives_no_warning(good_run, tmp_path,
                                              capsys):  # noqa: F811 (fixture)
    run = _edit(good_run, tmp_path, lambda s: None)
    assert _report(run, tmp_path, capsys, NO_FIGURES) == (0, [])
