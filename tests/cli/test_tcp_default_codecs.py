"""``--transport tcp`` without ``--codecs`` runs msgpack only (pickle would decode what
any local user can send to the port): the run says so in one ``note:`` line after its
first line, kept in the metadata's notes. ``--codecs pickle`` over tcp is refused in one
line (exit 2); with ``--codecs`` given, another transport, ``--allow-pickle-over-tcp``
or a one-case scenario nothing is said."""

from __future__ import annotations

import json
import types

import pytest

from ipc_bench import cli
from ipc_bench.cli.options import build_parser
from ipc_bench.cli.run import tcp_codecs_note

NOTE = ("--transport tcp leaves pickle out of the default codecs (msgpack,pickle): pickle "
        "runs code on load and any local user can connect to a TCP port; "
        "--allow-pickle-over-tcp runs it too, if every host that can reach the port is "
        "trusted")
DS = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20",
      "--warmup-steps", "5", "--no-single-process", "--no-floor"]
STEADY = types.SimpleNamespace()  # a scenario module that runs several cases
SOAK = types.SimpleNamespace(ONE_CASE=True)
MSGPACK = [types.SimpleNamespace(codec="msgpack")]


def _note(extra, module=STEADY, cases=MSGPACK):
    return tcp_codecs_note(build_parser().parse_args(DS + extra), module, cases)


def test_the_default_codecs_over_tcp_are_noted():
    assert _note(["--transport", "tcp"]) == NOTE


@pytest.mark.parametrize("extra, module, cases", [
    (["--transport", "tcp", "--codecs", "msgpack"], STEADY, MSGPACK),  # asked for
    (["--transport", "tcp", "--allow-pickle-over-tcp"], STEADY, MSGPACK),  # pickle runs
    (["--transport", "ipc"], STEADY, MSGPACK),
    (["--transport", "tcp"], SOAK, MSGPACK),  # one case: msgpack in any case
    (["--transport", "tcp"], STEADY, [types.SimpleNamespace(codec="none")]),
])
def test_nothing_is_said_where_nothing_was_left_out(extra, module, cases):
    assert _note(extra, module, cases) is None


def test_a_tcp_run_says_it_after_its_first_line(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(DS + ["--transport", "tcp", "--output", str(out)]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[:2] == [f"ipc-bench: decode-steady, 2 cases -> {out}", f"note: {NOTE}"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["metadata"]["notes"] == [NOTE]
    assert {c["codec"] for c in summary["cases"]} == {"msgpack"}


def test_pickle_asked_for_over_tcp_is_refused_in_one_line(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(DS + ["--transport", "tcp", "--codecs", "msgpack,pickle",
                          "--output", str(out)]) == 2
    assert capsys.readouterr().err == (
        "bench.py: error: refusing to decode pickle from a TCP peer (--codecs pickle is "
        "pickled): pickle runs code on load and any local user can connect to a TCP port; "
        "use --codecs msgpack or --transport ipc, or pass --allow-pickle-over-tcp if every "
        "host that can reach the port is trusted\n")
    assert not out.exists()
