"""``codec_fit.py --fit-run`` of an interrupted (incomplete) run says so in one
warning line, ``bench.py report``'s words (``results.incomplete_run_line``), and where
its fits rest on different batch sizes the table gives each fit's; a complete run's
table is as before (summaries written here, as ``bench.py`` writes its cases)."""

from __future__ import annotations

import json
from pathlib import Path

from script_module import run_script

STOPPED = "num_running=256/cached/msgpack#0"
HEAD = (f"{'policy':7} {'codec':8} {'fixed us':>9} {'ns/request':>10} {'R^2':>7} "
        f"{'pred. us':>9} {'meas. us':>9} {'error':>7}")


def _case(policy: str, b: int, complete: bool = True) -> dict:
    """A two-process msgpack case at ``b`` running requests, its codec time on the line
    5 us + 30 ns x B."""
    total = 5000.0 + 30 * b
    return dict(case_id=f"num_running={b}/{policy}/msgpack#0", scenario="decode-steady",
                policy=policy, arm=policy, codec="msgpack", num_running=b, repetition=0,
                complete=complete, num_steps=20, encode_ns_per_step=0.6 * total,
                decode_ns_per_step=0.4 * total, sched_encode_ns_per_step=0.4 * total,
                runner_decode_ns_per_step=0.3 * total,
                runner_encode_ns_per_step=0.2 * total, sched_decode_ns_per_step=0.1 * total)


def _write(folder: Path, cases: list[dict], planned: list[str], **fields) -> str:
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(dict(
        format_version=1, cases=cases, metadata=dict(cases=planned), **fields)))
    return str(folder)


def _runs(tmp_path: Path, interrupted: bool) -> tuple[str, str]:
    """A fit run at 16, 64, 128, 256, 512 of send and cached, or one interrupted by
    SIGTERM in cached's case at 256 (send fitted at 16 to 256, cached at 16 to 128);
    and a complete check run at 1,024."""
    sizes = (16, 64, 128, 256, 512)
    planned = [f"num_running={b}/{p}/msgpack#0" for b in sizes for p in ("send", "cached")]
    if interrupted:
        cases = [_case(p, b) for b in sizes[:3] for p in ("send", "cached")]
        cases += [_case("send", 256), _case("cached", 256, complete=False)]
        fit = _write(tmp_path / "fit", cases, planned, status="incomplete",
                     running_case=None, failed_case=STOPPED,
                     problems=[f"{STOPPED}: interrupted by SIGTERM"])
    else:
        fit = _write(tmp_path / "fit", [_case(p, b) for b in sizes for p in ("send", "cached")],
                     planned, status="complete")
    check = _write(tmp_path / "check", [_case(p, 1024) for p in ("send", "cached")],
                   [f"num_running=1024/{p}/msgpack#0" for p in ("send", "cached")],
                   status="complete")
    return fit, check


def test_an_interrupted_fit_run_is_warned_and_each_fit_names_its_batch_sizes(tmp_path):
    fit, check = _runs(tmp_path, interrupted=True)
    out = run_script("codec_fit", "--fit-run", fit, "--check-run", check, "--stat", "mean")
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == [
        f"codec_fit.py: warning: {fit}: this run is incomplete: {STOPPED}: interrupted by "
        "SIGTERM; 7 of its 10 cases finished: the fits cover the cases it finished"]
    assert out.stdout.splitlines()[1:] == [
        HEAD + "  fitted at B",
        "send    msgpack       5.00       30.0  1.0000      35.7      35.7   +0.0%  "
        "16, 64, 128, 256",
        "cached  msgpack       5.00       30.0  1.0000      35.7      35.7   +0.0%  "
        "16, 64, 128"]


def test_a_complete_fit_run_has_no_warning_and_no_batch_size_column(tmp_path):
    fit, check = _runs(tmp_path, interrupted=False)
    out = run_script("codec_fit", "--fit-run", fit, "--check-run", check, "--stat", "mean")
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout.splitlines()[1:] == [
        HEAD,
        "send    msgpack       5.00       30.0  1.0000      35.7      35.7   +0.0%",
        "cached  msgpack       5.00       30.0  1.0000      35.7      35.7   +0.0%"]
