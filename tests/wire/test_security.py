"""Security defaults: loopback TCP, no pickle from a TCP peer unless allowed, private
socket directory, result files never world-writable, no eval/exec of input."""

from __future__ import annotations

import ast
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import zmq

from fault_helpers import REPO, steady_case
from ipc_bench.harness.spec import CaseResult
from ipc_bench.engine.config import ConfigError
from ipc_bench.harness.supervisor import run_case
from ipc_bench.wire.transport import EndpointDir, SchedulerSockets, check_host


def test_tcp_binds_loopback_unless_told_otherwise():
    ctx = zmq.Context()
    try:
        socks = SchedulerSockets(ctx, "tcp", None)
        for endpoint in (socks.endpoints.s2r, socks.endpoints.r2s, socks.endpoints.ctl):
            assert endpoint.startswith("tcp://127.0.0.1:")
        socks.close()
        try:
            socks = SchedulerSockets(ctx, "tcp", None, host="::1")
        except zmq.ZMQError:
            pytest.skip("no IPv6 loopback here")
        assert socks.endpoints.s2r.startswith("tcp://[::1]:")
        socks.close()
    finally:
        ctx.term()


def test_host_must_be_an_address_literal():
    assert check_host("127.0.0.1") == "127.0.0.1"
    assert check_host("0:0::1") == "::1"
    assert check_host("localhost") == "127.0.0.1"  # as a runner's --connect reads it
    for bad in ("localhost.", "example.com", "127.0.0.1:80", "", "tcp://1.2.3.4"):
        with pytest.raises(ValueError, match="--host must be an IP address"):
            check_host(bad)


def test_a_tcp_case_runs_on_loopback(monkeypatch):
    seen = []

    class Spy(SchedulerSockets):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            seen.append(self.endpoints)

    result = run_case(steady_case(transport="tcp", max_steps=20), sockets=Spy)
    assert len(result.sched_rows) == 20
    assert all(e.s2r.startswith("tcp://127.0.0.1:") for e in seen)


def test_pickle_over_tcp_is_refused_unless_allowed():
    with pytest.raises(ConfigError, match="^refusing to decode pickle from a TCP peer"):
        run_case(steady_case(transport="tcp", codec="pickle", max_steps=5))
    result = run_case(steady_case(transport="tcp", codec="pickle", max_steps=5,
                                  allow_pickle_over_tcp=True))
    assert len(result.sched_rows) == 5


def test_ipc_sockets_live_in_a_private_directory(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    modes = {}

    def on_step(seq, *_):
        if seq == 3:
            (d,) = tmp_path.glob("ipc-bench-*")
            modes["dir"] = stat.S_IMODE(d.stat().st_mode)
            modes.update({p.name: (stat.S_IFMT(p.stat().st_mode), stat.S_IMODE(p.stat().st_mode))
                          for p in d.iterdir()})

    run_case(steady_case(max_steps=10), on_step)
    assert modes["dir"] == 0o700
    assert {k for k in modes if k != "dir"} == {"s2r", "r2s", "ctl", "runner.stderr", "owner"}
    assert all(modes[k][0] == stat.S_IFSOCK for k in ("s2r", "r2s", "ctl"))
    assert modes["runner.stderr"][1] == modes["owner"][1] == 0o600
    assert list(tmp_path.glob("ipc-bench-*")) == []  # removed when the case ends
    d = EndpointDir()
    assert stat.S_IMODE(os.stat(d.path).st_mode) == 0o700
    d.cleanup()


def test_result_files_are_not_world_writable_even_with_umask_0(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "bench.py", "--scenario", "decode-steady", "--num-running", "2",
         "--steps", "20", "--warmup-steps", "2", "--codecs", "msgpack", "--output", str(run),
         "--quiet"], cwd=REPO, capture_output=True, text=True, timeout=300,
        preexec_fn=lambda: os.umask(0))
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(run.stat().st_mode) == 0o755
    paths = sorted(run.rglob("*"))
    assert {p.name for p in paths} >= {"summary.json", "steps.csv", "requests.csv"}
    modes = {str(p.relative_to(run)): stat.S_IMODE(p.stat().st_mode) for p in paths}
    assert modes == {str(p.relative_to(run)): 0o755 if p.is_dir() else 0o644 for p in paths}


def _python_sources():
    for folder in ("ipc_bench", "scenarios"):
        yield from sorted((REPO / folder).rglob("*.py"))
    yield REPO / "bench.py"


def test_no_eval_exec_or_unpickling_outside_the_codec():
    found = []
    for path in _python_sources():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = (f.id if isinstance(f, ast.Name) else
                    f"{getattr(f.value, 'id', '?')}.{f.attr}" if isinstance(f, ast.Attribute)
                    else "")
            if name in ("eval", "exec", "compile", "__import__", "pickle.load", "pickle.loads",
                        "marshal.loads", "yaml.load"):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {name}")
            if name == "importlib.import_module" and path.name != "scenario.py":
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {name}")
    codecs = "ipc_bench/wire/codecs.py"
    assert found == ["%s:%d: pickle.loads" % (codecs, _line_of(codecs, "pickle.loads("))]


def _line_of(rel: str, text: str) -> int:
    for i, line in enumerate((REPO / rel).read_text().splitlines(), 1):
        if text in line:
            return i
    raise AssertionError(text)


def test_scenarios_are_imported_by_discovery_never_by_the_given_name(capsys):
    from ipc_bench import cli

    assert cli.main(["--scenario", "os"]) == 2  # a module name, not a scenario
    assert cli.main(["--scenario", "../ipc_bench/cli"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert [e.split(";")[0] for e in err] == ["bench.py: error: unknown scenario 'os'",
                                              "bench.py: error: unknown scenario "
                                              "'../ipc_bench/cli'"]
