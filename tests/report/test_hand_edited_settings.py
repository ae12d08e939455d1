"""A hand-edited ``summary.json`` whose ``metadata`` (what the run and each case ran
with) holds a value of a kind no run writes, in a field the report reads: a
``metadata.cases`` entry whose ``labels``, ``scheduler`` or ``model`` is not an object
(each crashed ``report`` with a traceback), whose texts are not texts, or that lists a
case again; a ``metadata`` field (``aa``, ``options``, ``git``, ``gpus``...); a
``running_case`` or ``failed_case``, a case's ``token_digest``. Each is one warning
line naming the field (and the case), and is left out; the report covers the rest,
the case's results included. And a lone surrogate escape (``"\\ud800"``, valid JSON),
which the report's files hold as that escape."""

from __future__ import annotations

import json

import pytest

from test_hand_edited_summary import (CACHED, NO_FIGURES, SEND, _edit, _loaded, _report,
                                      _warned, good_run)  # noqa: F401 (fixture)

#: The Configuration table's row of each case (its settings, ``metadata.cases``).
SEND_ROW, CACHED_ROW = f"| 1 case: {SEND} |", f"| 1 case: {CACHED} |"


def _setting(key, value):
    """An edit that sets ``metadata.cases[0]`` (send's entry) ``key`` to ``value``."""
    return lambda s: s["metadata"]["cases"][0].__setitem__(key, value)


def _model(key, value):
    return lambda s: s["metadata"]["cases"][0]["model"].__setitem__(key, value)


ENTRY = f"metadata.cases[0] (case '{SEND}') has"
LABELS = "not an object of texts and numbers"


@pytest.mark.parametrize("change, why", [
    (_setting("labels", "x"), f'{ENTRY} labels "x", {LABELS}'),
    (_setting("labels", 5), f"{ENTRY} labels 5, {LABELS}"),
    (_setting("labels", [["a", 1]]), f'{ENTRY} labels [["a", 1]], {LABELS}'),
    (_setting("labels", None), f"{ENTRY} labels null, {LABELS}"),
    (_setting("labels", {"num_running": 4, "a": {"b": 1}}),
     f'{ENTRY} labels {{"num_running": 4, "a": {{"b": 1}}}}, {LABELS}'),
    (_setting("model", "null"), f'{ENTRY} model "null", not an object'),
    (_setting("model", None), f"{ENTRY} model null, not an object"),
    (_setting("scheduler", "x"), f'{ENTRY} scheduler "x", not an object'),
    (_setting("scheduler", [1]), f"{ENTRY} scheduler [1], not an object"),
    (_model("name", 5), f"{ENTRY} model.name 5, not a text"),
    (_model("token_ids_sha256", ["ab"]), f'{ENTRY} model.token_ids_sha256 ["ab"], not a text'),
    (_setting("codec", ["msgpack"]), f'{ENTRY} codec ["msgpack"], not a text'),
    (_setting("cpu_affinity", [0, 1]), f"{ENTRY} cpu_affinity [0, 1], not null or a list "
     "of texts"),
    (lambda s: s["metadata"]["cases"].append(dict(s["metadata"]["cases"][0])),
     f"case '{SEND}' is listed again as metadata.cases[2]"),
], ids=["labels-a-string", "labels-a-number", "labels-a-list", "labels-null",
        "a-label-an-object", "model-a-string", "model-null", "scheduler-a-string",
        "scheduler-a-list", "model-name-a-number", "histogram-digest-a-list",
        "codec-a-list", "cpu-affinity-numbers", "entry-twice"])
def test_a_case_setting_of_the_wrong_kind_leaves_its_entry_out_with_one_warning(
        good_run, tmp_path, capsys, change, why):  # noqa: F811 (fixture)
    """The entry is left out of the Configuration table (its first, for one listed
    twice); the case's results are in the tables."""
    run = _edit(good_run, tmp_path, change)
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    line = f"{run / 'summary.json'}: {why} (left out)"
    assert (code, _warned(err)) == (0, [line])
    assert _loaded(run) == [line]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"> **Note:** Loading this run: {line}." in md
    assert "| 0 | send | msgpack |" in md and "| 0 | cached | msgpack |" in md
    assert md.count(SEND_ROW) == (1 if "listed again" in why else 0)
    assert md.count(CACHED_ROW) == 1


@pytest.mark.parametrize("change, why", [
    (lambda s: s["metadata"].update(aa="yes"), 'metadata.aa is "yes", not true or false'),
    (lambda s: s["metadata"].update(options=None), "metadata.options is null, not an object"),
    (lambda s: s["metadata"].update(remote_runners="x"),
     'metadata.remote_runners is "x", not an object'),
    (lambda s: s["metadata"]["git"].update(commit=5), "metadata.git.commit is 5, not a text"),
    (lambda s: s["metadata"].update(trace={"path": "t.csv", "sha256": [1]}),
     "metadata.trace.sha256 is [1], not a text"),
    (lambda s: s["metadata"].update(gpus=[5, {"index": 0, "name": "x"}]),
     "metadata.gpus[0] is 5, not an object"),
    (lambda s: s.update(running_case={"a": 1}),
     'running_case is {"a": 1}, not a case id (a text)'),
], ids=["aa-a-string", "options-null", "remote-runners-a-string", "commit-a-number",
        "trace-digest-a-list", "gpu-a-number", "running-case-an-object"])
def test_a_run_setting_of_the_wrong_kind_is_left_out_with_one_warning(
        good_run, tmp_path, capsys, change, why):  # noqa: F811 (fixture)
    run = _edit(good_run, tmp_path, change)
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    line = f"{run / 'summary.json'}: {why} (left out)"
    assert (code, _warned(err)) == (0, [line])
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"> **Note:** Loading this run: {line}." in md
    assert md.count(SEND_ROW) == md.count(CACHED_ROW) == 1


def test_a_failed_case_that_is_not_a_text_is_left_out_with_one_warning(
        good_run, tmp_path, capsys):  # noqa: F811 (fixture)
    """A failed run's ``failed_case`` 12 (no case id) was read as naming no case,
    silently; the run's problems are its status as ever, and the run is warned of as
    failed as any failed run is."""
    run = _edit(good_run, tmp_path, lambda s: s.update(
        status="failed", failed_case=12, problems=["runner failed"]))
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    line = f"{run / 'summary.json'}: failed_case is 12, not a case id (a text) (left out)"
    failed = (f"{run}: this run failed: runner failed; 2 of its 2 cases finished: the "
              "report's figures cover the cases it finished")
    assert (code, _warned(err)) == (0, [line, failed])
    md = (tmp_path / "rep" / "report.md").read_text()
    assert ("> **Note:** This run failed: runner failed. Its figures cover the cases that "
            "finished.") in md.splitlines()
    assert f"> **Note:** Loading this run: {line}." in md.splitlines()


def test_a_token_digest_that_is_not_a_text_leaves_its_case_out(good_run, tmp_path,
                                                               capsys):  # noqa: F811
    run = _edit(good_run, tmp_path, lambda s: s["cases"][0].update(token_digest=5))
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    line = f"{run / 'summary.json'}: case '{SEND}' has token_digest 5, not a text (left out)"
    assert (code, _warned(err)) == (0, [line])
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| 0 | cached | msgpack |" in md and "| 0 | send | msgpack |" not in md


def _raw(good_run, tmp_path, old: str, new: str):
    """A copy of ``good_run`` whose ``summary.json`` text has ``old`` (once) replaced by
    ``new``: a JSON escape ``json.dumps`` would not write as it is."""
    run = _edit(good_run, tmp_path, lambda s: s["metadata"].update(hostname="vm"))
    text = (run / "summary.json").read_text()
    assert text.count(old) == 1
    (run / "summary.json").write_text(text.replace(old, new))
    return run


def test_a_lone_surrogate_in_a_text_is_written_as_its_escape(good_run, tmp_path,
                                                             capsys):  # noqa: F811
    """``"hostname": "\\ud800"`` (a high surrogate, which no file name's byte decodes
    to) stopped the report with ``UnicodeEncodeError`` as its files were encoded."""
    run = _raw(good_run, tmp_path, '"hostname": "vm"', '"hostname": "\\ud800"')
    assert json.loads((run / "summary.json").read_text())["metadata"]["hostname"] == "\ud800"
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    assert (code, err) == (0, [])
    md = (tmp_path / "rep" / "report.md").read_text()
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "| hostname | \\ud800 |" in md.splitlines()
    assert "<tr><td>hostname</td><td>\\ud800</td></tr>" in html


def test_a_lone_surrogate_in_a_case_id_is_written_as_its_escape(good_run, tmp_path,
                                                                capsys):  # noqa: F811
    """A case id edited so (its rows in the CSV files keep theirs): the lines and the
    report name it with the escape."""
    run = _raw(good_run, tmp_path, f'"case_id": "{SEND}", "scenario"',
               f'"case_id": "{SEND}\\udfff", "scenario"')
    code, err = _report(run, tmp_path, capsys, NO_FIGURES)
    odd = f"{SEND}\\udfff"
    assert code == 0
    assert _warned(err) == [
        f"{run}: case '{SEND}' has 25 rows in steps.csv and 4 rows in requests.csv, but "
        "summary.json does not list it (left out)",
        f"{run / 'steps.csv'}: 25 of the 50 rows that summary.json counts (1 case(s) "
        f"short: {odd}: 0 of 25); loaded what is valid",
        f"{run / 'requests.csv'}: 4 of the 8 rows that summary.json counts (1 case(s) "
        f"short: {odd}: 0 of 4); loaded what is valid"]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert (f"- `{odd}`: only 20 counted steps (< 100): step-time noise not measured "
            "(under 150: 3 blocks of 50) and figures are rough") in md.splitlines()


def test_utf8_text_escapes_every_lone_surrogate():
    """A path's byte that is not UTF-8 as that byte (``\\xff``), any other lone
    surrogate as ``repr`` writes it; a pair JSON decoded to one character is kept."""
    import os

    from ipc_bench.errors import utf8_text

    text = "a\ud800b\udc7f" + os.fsdecode(b"c\xff") + "\udfff\U0001f389"
    assert utf8_text(text) == "a\\ud800b\\udc7fc\\xff\\udfff\U0001f389"
