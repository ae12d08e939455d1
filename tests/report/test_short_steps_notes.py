"""A ``steps.csv`` that lost rows (cut short: a full disk, a hand edit) of cases that
finished: the figures of counted steps say that the missing counted steps are missing
from ``steps.csv``, never that an arm did not run ("Only `send` ran") nor that warm-up
took every step; a run of one policy, and a whole ``steps.csv``, keep their notes."""

from __future__ import annotations

import shutil

import pytest

from analysis_run import run_bench
from ipc_bench import cli

#: 4 cases (send and cached, msgpack and single-process), each 5 warm-up steps then 20
#: counted: 25 rows each in ``steps.csv``, send/msgpack's first.
RUN = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
       "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor"]
BYTES_CAPTION = (
    "Payload bytes per step in each direction against the number of running requests "
    "(mean over counted steps, repetitions pooled), one line per arm and codec: `send` "
    "(msgpack).")
SHORT_ARM = (" The counted steps of `cached` are missing from steps.csv, which is short "
             "(see the loading note above)")
ONLY_SEND = "Only `send` ran, so no other line is set against it."
ALL_WARMUP = "every step was warm-up"


@pytest.fixture(scope="module")
def whole_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("short-steps") / "run"
    run_bench(path, RUN)
    return path


def _cut(whole_run, tmp_path, keep):
    """A copy of ``whole_run`` whose ``steps.csv`` keeps ``keep(text)`` of its text."""
    run = tmp_path / "run"
    shutil.copytree(whole_run, run)
    steps = run / "steps.csv"
    text = steps.read_text()
    steps.write_text(keep(text))
    return run


def _report(run, tmp_path) -> list[str]:
    """The lines of ``run``'s report, which opens with the loader's note on steps.csv."""
    out = tmp_path / "rep"
    assert cli.main(["report", str(run), "--output", str(out)]) == 0
    md = (out / "report.md").read_text().splitlines()
    assert any(line.startswith(f"> **Note:** Loading this run: {run / 'steps.csv'}: ")
               for line in md)
    return md


def test_an_arm_whose_steps_are_cut_off_is_said_missing_not_absent(whole_run, tmp_path):
    # the header and 15 rows: send/msgpack's 5 warm-up and 10 of its 20 counted steps
    run = _cut(whole_run, tmp_path, lambda t: "".join(t.splitlines(keepends=True)[:16]))
    md = _report(run, tmp_path)
    assert (BYTES_CAPTION + SHORT_ARM + ", so no other line is set against `send`. Of "
            "`send`'s 20 counted steps, steps.csv holds only 10.") in md
    assert any(line.startswith("Serializer time per step") and line.endswith(
        SHORT_ARM + ", so no other line is set against `send`. Of `send`'s 20 counted "
        "steps, steps.csv holds only 10.") for line in md)
    # the step breakdown's bars: send's single-process case is short too (10 of 40)
    assert any(line.startswith("Where a scheduler step's time goes") and line.endswith(
        "which overlaps the scheduler's parts." + SHORT_ARM + ". Of `send`'s 40 counted "
        "steps, steps.csv holds only 10.") for line in md)
    assert not any(ONLY_SEND in line for line in md)


def test_figures_with_no_counted_step_left_say_steps_csv_is_short(whole_run, tmp_path):
    # cut mid-row in send/msgpack's warm-up: 3 warm-up rows survive, no counted one
    lines = whole_run.joinpath("steps.csv").read_text().splitlines(keepends=True)
    size = sum(len(line) for line in lines[:4]) + 10
    run = _cut(whole_run, tmp_path, lambda t: t[:size])
    md = _report(run, tmp_path)
    assert ("- Bytes per step: the counted two-process steps are missing from steps.csv, "
            "which is short (see the loading note above): it holds none of the 40 that "
            "summary.json records for the finished cases.") in md
    assert ("- Encode and decode time per step: the counted two-process steps are missing "
            "from steps.csv, which is short (see the loading note above): it holds none "
            "of the 40 that summary.json records for the finished cases.") in md
    assert ("- Where a step's time goes: the counted steps are missing from steps.csv, "
            "which is short (see the loading note above): it holds none of the 80 that "
            "summary.json records for the finished cases.") in md
    assert not any(ALL_WARMUP in line for line in md)


def test_a_whole_steps_csv_and_a_one_policy_run_keep_their_notes(whole_run, tmp_path):
    out = tmp_path / "whole"
    assert cli.main(["report", str(whole_run), "--output", str(out)]) == 0
    md = (out / "report.md").read_text()
    assert "missing from steps.csv" not in md and "holds only" not in md
    one = tmp_path / "send-only"
    run_bench(one, RUN + ["--policies", "send", "--no-single-process"])
    assert cli.main(["report", str(one), "--output", str(tmp_path / "one")]) == 0
    md = (tmp_path / "one" / "report.md").read_text().splitlines()
    assert BYTES_CAPTION + " " + ONLY_SEND in md
    assert not any("missing from steps.csv" in line for line in md)
