"""codec_fit fits decode-steady runs only: a run of another scenario that records codec
times at several numbers of running requests (step-time, overhead, tp-broadcast, pp:
their cases at one batch size differ in more, the step time, the arm, the ranks or
stages) is refused in one line naming its scenario and what is fitted, exit 2, as a
trace replay's run is (summaries written here, as each scenario's ``bench.py`` run
writes its cases)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from script_module import run_script

NOTE = "(codec_fit fits decode-steady runs)"


def _case(scenario: str, labels: str, policy: str, b: int, timed: bool = True,
          arm: str | None = None) -> dict:
    """A complete two-process msgpack case at ``b`` running requests, with codec times
    on the line 5 us + 30 ns x B where ``timed`` (an overhead run's ``totals`` arm
    records none)."""
    case = dict(case_id=f"{labels}/{arm or policy}/msgpack#0", scenario=scenario,
                policy=policy, arm=arm or policy, codec="msgpack", num_running=b,
                repetition=0, complete=True, num_steps=20 if timed else 0)
    if timed:
        total = 5000.0 + 30 * b
        case.update(encode_ns_per_step=0.6 * total, decode_ns_per_step=0.4 * total,
                    sched_encode_ns_per_step=0.4 * total,
                    runner_decode_ns_per_step=0.3 * total,
                    runner_encode_ns_per_step=0.2 * total,
                    sched_decode_ns_per_step=0.1 * total)
    return case


def _cases(scenario: str, sizes) -> list[dict]:
    """The cases of a ``scenario`` run at ``sizes`` running requests."""
    out = []
    for b in sizes:
        for policy in ("send", "cached"):
            if scenario == "decode-steady":
                out.append(_case(scenario, f"num_running={b}", policy, b))
            elif scenario == "step-time":
                out += [_case(scenario, f"num_running={b},step_time_ms={ms}", policy, b)
                        for ms in (2.0, 20.0)]
            elif scenario == "overhead":
                out += [_case(scenario, f"num_running={b},of={policy}", policy, b,
                              arm == "steps", arm) for arm in ("totals", "steps")]
            elif scenario == "tp-broadcast":
                out += [_case(scenario, f"num_running={b},tp={n},broadcast=ipc", policy, b)
                        for n in (1, 2)]
            elif scenario == "pp":
                arm = "direct" if policy == "cached" else None
                out += [_case(scenario, f"num_running={b},pp={n}", policy, b, arm=arm)
                        for n in (1, 2)]
    return out


def _run(folder: Path, scenario: str, sizes) -> str:
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(dict(
        format_version=1, cases=_cases(scenario, sizes))))
    return str(folder)


OTHERS = ("step-time", "overhead", "tp-broadcast", "pp")


@pytest.mark.parametrize("scenario", OTHERS)
def test_codec_fit_refuses_a_fit_run_of_another_scenario(tmp_path, scenario):
    fit = _run(tmp_path / "fit", scenario, (16, 64, 256))
    check = _run(tmp_path / "check", "decode-steady", (1024,))
    out = run_script("codec_fit", "--fit-run", fit, "--check-run", check, "--stat", "mean")
    assert (out.returncode, out.stderr, out.stdout) == (
        2, f"codec_fit.py: error: argument --fit-run: {fit} has no complete two-process "
        f"case to fit; its {scenario} cases are not decode-steady ones {NOTE}\n", "")


@pytest.mark.parametrize("scenario", OTHERS)
def test_codec_fit_refuses_a_check_run_of_another_scenario(tmp_path, scenario):
    fit = _run(tmp_path / "fit", "decode-steady", (16, 64, 256))
    check = _run(tmp_path / "check", scenario, (1024,))
    for argv, needed in ((["--fit-run", fit], " for cached msgpack, send msgpack"),
                         ([], "")):  # alone: refused before the fit run would start
        out = run_script("codec_fit", *argv, "--check-run", check, "--stat", "mean")
        assert (out.returncode, out.stderr, out.stdout) == (
            2, f"codec_fit.py: error: argument --check-run: {check} has no complete "
            f"two-process case at 1,024 running requests{needed} (it has none); its "
            f"{scenario} cases are not decode-steady ones {NOTE}\n", ""), argv


def test_codec_fit_fits_a_decode_steady_run(tmp_path):
    fit = _run(tmp_path / "fit", "decode-steady", (16, 64, 256))
    check = _run(tmp_path / "check", "decode-steady", (1024,))
    out = run_script("codec_fit", "--fit-run", fit, "--check-run", check, "--stat", "mean")
    assert (out.returncode, out.stderr) == (0, "")
    assert [line.split() for line in out.stdout.splitlines()[2:]] == [
        [p, "msgpack", "5.00", "30.0", "1.0000", "35.7", "35.7", "+0.0%"]
        for p in ("send", "cached")]
