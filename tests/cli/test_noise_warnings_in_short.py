"""A run prints a machine-noise warning in full the first time its kind comes up and,
under later cases, the kinds already said in short on one ``as above`` line
(``summary.noise_shorthand``, ``execute._Run._log_warnings``); summary.json keeps every
warning in full, and the run's count line says how many were shortened."""

from __future__ import annotations

import json
import os

from ipc_bench import cli
from ipc_bench.analysis.summary import noise_shorthand, noise_warnings
from ipc_bench.cli import execute
from ipc_bench.cli.execute import _Run, warnings_count_line

#: A steady case of 1,000 counted steps with every kind of machine-noise warning.
NOISY = dict(
    case_id="num_running=16/send/msgpack#0", num_steps=1000,
    step_ns_block_cv=0.28, step_ns_mean=139_700.0, step_ns_median=70_700.0,
    step_ns_max=11_500_000.0, step_ns_max_seq=843, output_tokens_per_s_without_longest=7_500.0,
    floor_step_ns_block_cv=0.478, step_to_floor_ratio=0.8,
    between_steps_ns_per_step=105_300.0, loop_step_ns_mean=160_000.0, loop_steps=1000,
    loop_output_tokens_per_s=95_016.0, between_steps_ns_max=8_600_000.0,
    between_steps_ns_max_seq=1020, cpu_steal_pct=2.0)

SHORT = {
    "step_ns_block_cv": "step_ns_block_cv 28.0 %",
    "skew": "mean step 1.98x the median",
    "floor_step_ns_block_cv": "floor_step_ns_block_cv 47.8 %",
    "x_floor": "x floor 0.80",
    "between_steps": "66 % of the loop between steps",
    "stalled_step": "counted step 843 took 11.5 ms",
    "stood_still": "stood still 8.6 ms before step 1020",
    "cpu_steal": "CPU steal 2.0 %",
}


def _warnings(summary: dict) -> list[str]:
    return noise_warnings(summary, {"steal_pct": summary["cpu_steal_pct"]})


def test_each_noise_warning_has_its_kind_and_short_form():
    warnings = _warnings(NOISY)
    shorthand = noise_shorthand(NOISY)
    assert len(warnings) == 8 and set(shorthand) == set(warnings)
    assert {kind: short for kind, short in shorthand.values()} == SHORT
    full = {kind: w for w, (kind, _) in shorthand.items()}
    assert full["skew"] == ("the mean step is 1.98x the median (139.7 against 70.7 µs, "
                            "> 1.5x): long steps spread through the case raise its mean and "
                            "lower its tok/s: the machine may be noisy")
    assert full["cpu_steal"] == "CPU steal time was 2.0 % of the machine during the case"


def test_an_async_cases_x_floor_and_a_short_cases_warning_stay_in_full():
    short = dict(NOISY, num_steps=120, step_to_floor_ratio=0.5, async_scheduling=True)
    kinds = {kind for kind, _ in noise_shorthand(short).values()}
    assert "x_floor" not in kinds and "skew" not in kinds  # no skew rule under 150 steps
    assert any(w.startswith("x floor 0.50: the floor replays") for w in _warnings(short))
    assert any(w.startswith("only 120 counted steps") for w in _warnings(short))


def _logged(run: _Run, summary: dict, capsys) -> list[str]:
    run._log_warnings(summary)
    return capsys.readouterr().err.splitlines()


def test_a_kind_is_said_in_full_once_then_in_short(tmp_path, capsys):
    run = _Run(run_dir=tmp_path, writer=None, quiet=False, num_cases=3, progress_bar=False)
    first = dict(NOISY, warnings=_warnings(NOISY))
    assert _logged(run, first, capsys) == [f"  warning: {w}" for w in first["warnings"]]
    # the second case: a warning of no noise kind stays in full, before the short line
    calmer = dict(NOISY, step_ns_block_cv=0.131, floor_step_ns_block_cv=None,
                  step_to_floor_ratio=1.2, cpu_steal_pct=0.0, between_steps_ns_per_step=0.0,
                  step_ns_max=100_000.0, between_steps_ns_max=0.0)
    second = dict(calmer, warnings=["a design warning", *_warnings(calmer)])
    assert _logged(run, second, capsys) == [
        "  warning: a design warning",
        "  warning: as above (the machine may be noisy): step_ns_block_cv 13.1 %, "
        "mean step 1.98x the median"]
    assert run.in_short == 2
    # quiet: nothing printed (summary.json keeps them)
    quiet = _Run(run_dir=tmp_path, writer=None, quiet=True, num_cases=1, progress_bar=False)
    assert _logged(quiet, first, capsys) == []


def test_the_count_line_says_how_many_were_shortened(tmp_path):
    cases = [{"warnings": ["a", "b"]}, {"warnings": ["c", "d", "e"]}]
    assert warnings_count_line(cases, tmp_path, in_short=2) == (
        "5 measurement warnings in 2 of 2 cases (printed under their case lines above; "
        '2 of them in short, on "as above" lines): '
        f"see {tmp_path}/summary.json, or Measurement warnings in python bench.py report "
        f"{tmp_path}")
    assert warnings_count_line(cases, tmp_path, in_short=2, on_stdout=True).startswith(
        "5 measurement warnings in 2 of 2 cases (printed on stderr under their case lines; "
        '2 of them in short, on "as above" lines): ')


def test_a_run_shortens_the_repeats_and_keeps_them_whole_in_its_summary(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # no load note
    said = {"noisy one": ("step_ns_block_cv", "step_ns_block_cv 12.0 %")}
    monkeypatch.setattr(execute, "noise_warnings",
                        lambda summary, usage=None: ["noisy one", f"own {summary['case_id']}"])
    monkeypatch.setattr(execute, "noise_shorthand", lambda summary: said)
    monkeypatch.setattr(execute, "floor_pair_notes", lambda cases: [])
    out = tmp_path / "run"
    assert cli.main(["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
                     "--warmup-steps", "2", "--policies", "send,cached", "--codecs",
                     "msgpack", "--no-single-process", "--no-floor",
                     "--output", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    first = err.index(next(x for x in err if x.startswith("[1/2] ")))
    second = err.index(next(x for x in err if x.startswith("[2/2] ")))
    assert err[first + 1:second] == ["  warning: noisy one",
                                     "  warning: own num_running=4/send/msgpack#0"]
    assert err[second + 1:second + 3] == [
        "  warning: own num_running=4/cached/msgpack#0",
        "  warning: as above (the machine may be noisy): step_ns_block_cv 12.0 %"]
    assert err[-1].startswith(
        "4 measurement warnings in 2 of 2 cases (printed under their case lines above; "
        '1 of them in short, on "as above" lines): ')
    cases = json.loads((out / "summary.json").read_text())["cases"]
    assert [c["warnings"] for c in cases] == [
        ["noisy one", "own num_running=4/send/msgpack#0"],
        ["noisy one", "own num_running=4/cached/msgpack#0"]]
