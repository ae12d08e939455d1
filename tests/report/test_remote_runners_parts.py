"""A run's ``metadata.remote_runners`` that is an object but not as a run writes it is
warned about by its first bad part (``environment.remote_runners_problem``) and left
out: a count past the most runners a run can start (``MAX_REMOTE_RUNNERS``: each has a
control port of its own, within 1-65535), where ``10**40`` was shown as is (``10000...0
started by hand on h``); a bad port, named with its value (``ports.ctls is -1``), where
the whole value was quoted cut in the middle, before the bad port; a port of a name the
harness does not write, where ``"a\\nb"`` was written in the options line."""

from __future__ import annotations

import json
import shutil

import pytest

from ipc_bench import cli
from ipc_bench.harness.environment import REMOTE_PORT_NAMES
from ipc_bench.wire.remote import RemotePorts


def _edited(source, folder, remote):
    """A copy of run ``source`` at ``folder`` with ``metadata.remote_runners`` set to
    ``remote`` (deleted where ``...``)."""
    shutil.copytree(source, folder)
    summary = json.loads((folder / "summary.json").read_text())
    if remote is ...:
        summary["metadata"].pop("remote_runners", None)
    else:
        summary["metadata"]["remote_runners"] = remote
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


@pytest.mark.parametrize("remote, part", [
    ({"count": 10**40, "host": "h"},
     "count is 1" + "0" * 39 + "..., not a whole number of runners from 1 to 65533"),
    ({"count": 65534, "host": "h"},
     "count is 65534, not a whole number of runners from 1 to 65533"),
    ({"count": 1, "host": "h", "ports": {"ctls": -1}},
     "ports.ctls is -1, not a port number (1-65535)"),
    ({"count": 1, "host": "h", "ports": {"ctls": [5600, 70000]}},
     "ports.ctls[1] is 70000, not a port number (1-65535)"),
    ({"count": 1, "host": "h", "ports": {"a\nb": 5600}},
     'ports has a port named "a\\nb", not one of ctls, s2r, r2s, store'),
    ({"count": 1, "host": ""}, 'host is "", not a non-empty text'),
], ids=["count-1e40", "count-65534", "port-negative", "port-in-list", "port-name",
        "host-empty"])
def test_the_bad_part_is_named_and_the_value_left_out(remote, part, shared_two_case_run,
                                                      shared_floor_run, tmp_path, capsys):
    run = _edited(shared_two_case_run, tmp_path / "remote", remote)
    spawned = _edited(shared_floor_run, tmp_path / "spawned", ...)
    capsys.readouterr()
    out = tmp_path / "rep"
    code = cli.main(["report", str(spawned), str(run), "--output", str(out),
                     "--no-figures"])
    err = capsys.readouterr().err.splitlines()
    assert (code, err) == (0, [f"bench.py report: warning: {run}/summary.json: "
                               f"metadata.remote_runners.{part} (metadata.remote_runners "
                               "left out)"])
    md = (out / "report.md").read_text()
    assert "remote runners:" not in md and "started by hand" not in md
    assert "runners differ" not in md


def test_the_most_runners_and_the_port_names_are_those_a_run_writes(shared_two_case_run,
                                                                    tmp_path, capsys):
    assert REMOTE_PORT_NAMES == RemotePorts._fields
    ports = {"ctls": list(range(2, 65535)), "s2r": 65535, "r2s": 1, "store": None}
    run = _edited(shared_two_case_run, tmp_path / "remote",
                  {"count": 65533, "host": "h", "ports": ports})
    capsys.readouterr()
    code = cli.main(["report", str(run), "--output", str(tmp_path / "rep"), "--no-figures"])
    assert (code, capsys.readouterr().err) == (0, "")
    assert "- remote runners: 65533 on `h` (ports ctls 2, 3, 4, " \
        in (tmp_path / "rep" / "report.md").read_text()
