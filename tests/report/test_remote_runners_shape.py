"""A run's ``metadata.remote_runners`` (``--remote-runners``) is checked as the other
metadata values are: one that is not as a run writes it (a count that is not a whole
number, a host that is not a text, ``{}``) is warned about once and left out, where the
report printed ``[1] started by hand on None`` or ``? started by hand on ?``; its host
is escaped to one line (a newline in it put a heading line into report.md); its ports
are written as a line, not as a Python dict."""

from __future__ import annotations

import json
import shutil

import pytest

from ipc_bench import cli
from ipc_bench.harness.environment import compare_settings

PORTS = {"ctls": [5600], "s2r": 5601, "r2s": 5602, "store": None}
WORDS = ("not an object of the runners' count (a whole number from 1), their host (a "
         "text) and their ports (an object of port numbers) (left out)")


def _edited(source, folder, remote):
    """A copy of run ``source`` at ``folder`` with ``metadata.remote_runners`` set to
    ``remote`` (deleted where ``...``)."""
    shutil.copytree(source, folder)
    summary = json.loads((folder / "summary.json").read_text())
    md = summary["metadata"]
    if remote is ...:
        md.pop("remote_runners", None)
    else:
        md["remote_runners"] = remote
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def _report(capsys, out, *runs):
    capsys.readouterr()
    code = cli.main(["report", *map(str, runs), "--output", str(out), "--no-figures"])
    return code, capsys.readouterr().err.splitlines(), (out / "report.md").read_text()


def test_the_host_is_escaped_and_the_ports_are_a_line(shared_two_case_run, shared_floor_run,
                                                       tmp_path, capsys):
    run = _edited(shared_two_case_run, tmp_path / "remote",
                  {"count": 1, "host": "10.0.0.1\n# Big", "ports": PORTS})
    spawned = _edited(shared_floor_run, tmp_path / "spawned", ...)
    code, err, md = _report(capsys, tmp_path / "rep", spawned, run)
    assert (code, err) == (0, [])
    lines = md.splitlines()
    assert "- remote runners: 1 on `10.0.0.1\\n# Big` (ports ctls 5600; s2r 5601; r2s 5602)" \
        in lines
    assert not any(line.startswith("# Big") for line in lines)
    assert ("- remote against spawned: runners differ: 1 started by hand on 10.0.0.1\\n# Big "
            "(--remote-runners) vs spawned by the run") in lines


@pytest.mark.parametrize("remote, said", [
    ({"count": [1], "host": None}, ".count is [1], not a whole number of runners from 1 to "
     "65533 (metadata.remote_runners left out)"),
    ({}, f" is {{}}, {WORDS}"),
    ({"count": 1, "host": "h", "ports": {"ctls": ["x"]}},
     '.ports.ctls[0] is "x", not a port number (1-65535) (metadata.remote_runners left '
     'out)'),
], ids=["count-a-list", "empty", "port-a-text"])
def test_a_malformed_value_is_warned_once_and_left_out(remote, said, shared_two_case_run,
                                                       shared_floor_run, tmp_path, capsys):
    run = _edited(shared_two_case_run, tmp_path / "remote", remote)
    spawned = _edited(shared_floor_run, tmp_path / "spawned", ...)
    code, err, md = _report(capsys, tmp_path / "rep", spawned, run)
    line = f"{run}/summary.json: metadata.remote_runners{said}"
    assert (code, err) == (0, [f"bench.py report: warning: {line}"])
    assert "remote runners:" not in md and "started by hand" not in md
    assert "runners differ" not in md


def test_a_run_with_its_value_left_out_is_not_said_to_have_spawned_its_runners(
        shared_two_case_run):
    md = json.loads((shared_two_case_run / "summary.json").read_text())["metadata"]
    remote = {**md, "remote_runners": {"count": 1, "host": "10.0.0.5", "ports": PORTS}}
    assert compare_settings({**md, "remote_runners": None}, remote) == ([], [])
    assert compare_settings({**md, "remote_runners": {}}, md) == ([], [])
