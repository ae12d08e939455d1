"""A timed replay runs no floor: its floor columns show ``-``, and a note under the
table, in the terminal and in the report, says why; a logical replay run with
``--no-floor`` shows ``-`` there too, without that note. Beside a run with floors, a
timed replay's settings line says it runs none whatever ``--no-floor``, not that the
flag left them out."""

from __future__ import annotations

import json

import pytest

from analysis_run import run_bench
from ipc_bench import cli
from ipc_bench.harness.environment import compare_settings
from ipc_bench.report.tables import TIMED_NO_FLOOR_NOTE

NOTE = ("floor tok/s, x floor: - for a timed replay, which runs no floor (the floor "
        "replays the recorded steps back to back; a timed replay's steps wait for arrivals)")
REPORT_NOTE = ("`floor tok/s`, `x floor`: - for a timed replay, which runs no floor (the "
               "floor replays the recorded steps back to back; a timed replay's steps wait "
               "for arrivals).")


def write_trace(path, rows: int = 6) -> None:
    """A small Azure-format trace: ``rows`` requests 50 ms apart, 40-token prompts,
    8 output tokens each."""
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"] + [
        f"2023-11-16 18:15:{40 + i // 20:02d}.{(i % 20) * 5:02d}00000,40,8"
        for i in range(rows)]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def replays(tmp_path_factory):
    """A timed replay and a logical replay run with ``--no-floor``: (folder, stdout)."""
    base = tmp_path_factory.mktemp("replays")
    trace = base / "trace.csv"
    write_trace(trace)
    common = ["--trace", str(trace), "--max-requests", "6", "--codecs", "msgpack",
              "--warmup-steps", "2"]
    timed = run_bench(base / "timed", ["--scenario", "azure-conv-timed", *common])
    logical = run_bench(base / "logical", ["--scenario", "azure-conv", *common, "--no-floor"])
    return dict(timed=(base / "timed", timed), logical=(base / "logical", logical),
                trace=trace)


def test_the_note_says_why_the_floor_columns_are_empty():
    assert TIMED_NO_FLOOR_NOTE == NOTE


def test_the_terminal_table_of_a_timed_replay_says_why_it_has_no_floor(replays):
    _, out = replays["timed"]
    lines = out.splitlines()
    send = next(ln for ln in lines if ln.startswith("send"))
    assert send.split()[5:7] == ["-", "-"]
    assert f"  {NOTE}" in lines
    _, out = replays["logical"]
    assert NOTE not in out


def test_the_report_of_a_timed_replay_says_why_it_has_no_floor(replays, tmp_path):
    run, _ = replays["timed"]
    assert cli.main(["report", str(run), "--output", str(tmp_path / "timed"),
                     "--no-figures"]) == 0  # the test reads the table and its note
    md = (tmp_path / "timed" / "report.md").read_text().splitlines()
    row = next(ln for ln in md if ln.startswith("| 0 | send | msgpack |"))
    assert row.split(" | ")[6:8] == ["-", "-"]
    assert REPORT_NOTE in md
    run, _ = replays["logical"]
    assert cli.main(["report", str(run), "--output", str(tmp_path / "logical"),
                     "--no-figures"]) == 0
    assert "for a timed replay" not in (tmp_path / "logical" / "report.md").read_text()


def _metadata(run) -> dict:
    return json.loads((run / "summary.json").read_text())["metadata"]


def test_a_timed_replay_runs_no_floor_whatever_the_flag(replays, tmp_path):
    # given --no-floor beside a logical replay with floors, the line said "not run
    # (--no-floor given)", as if the flag had left the timed replay's floors out
    common = ["--trace", str(replays["trace"]), "--max-requests", "6", "--codecs",
              "msgpack", "--warmup-steps", "2"]
    run_bench(tmp_path / "timed", ["--scenario", "azure-conv-timed", *common, "--no-floor"])
    run_bench(tmp_path / "floor", ["--scenario", "azure-conv", *common])
    timed, floor = (_metadata(tmp_path / n) for n in ("timed", "floor"))
    assert timed["options"]["no_floor"] is True
    line = ("floors differ: not run (azure-conv-timed's timed replays run none, "
            "--no-floor or not) vs run (azure-conv's default)")
    assert line in compare_settings(timed, floor)[0]
    assert ("floors differ: run (azure-conv's default) vs not run (azure-conv-timed's "
            "timed replays run none, --no-floor or not)") in compare_settings(floor, timed)[0]
    # and so without the flag: the same line
    untimed = _metadata(replays["timed"][0])
    assert untimed["options"]["no_floor"] is False
    assert line in compare_settings(untimed, floor)[0]
    # a logical replay given --no-floor: the flag is why
    logical = _metadata(replays["logical"][0])
    assert ("floors differ: not run (--no-floor given) vs run (azure-conv's default)"
            in compare_settings(logical, floor)[0])
