"""Runs that share no arm read "To compare them, run arms cached, cached+async, send,
send' in one run", which no run can do: ``--aa`` runs one policy and its copy, and
``--async-scheduling`` the cached policy alone, each refusing the other policy. The
line gives advice that can be followed: the one run that makes all the arms where
there is one, else a run beside them that shares an arm with each, else each run's
command again with the other's arm options in place of its own."""

from __future__ import annotations

from analysis_run import TWO_CASE_ARGS, shared_run
from ipc_bench import cli
from ipc_bench.report.blocks import unshared_line

HEAD = ("No side-by-side ratio for run `b`: it shares no case (workload, arm and codec) "
        "with run `a`, the reference: ")


def _line(theirs: list[str], ours: list[str]) -> str:
    return unshared_line("b", "a", [("num_running=4", arm, "msgpack") for arm in theirs],
                         [("num_running=4", arm, "msgpack") for arm in ours])


def test_arms_no_one_run_makes_name_each_run_s_options():
    assert _line(["cached", "cached+async"], ["send", "send'"]) == (
        HEAD + "arm cached, cached+async in `b` vs send, send' in `a`. To compare them, add "
        "a run with arm options `--policies send,cached` (no `--aa` or "
        "`--async-scheduling`): it shares send with `a` and cached with `b`, so each pairs "
        "with it as the reference (`--baseline`); no one run makes arms send, send', "
        "cached, cached+async.")
    assert _line(["cached+async"], ["send", "send'"]) == (
        HEAD + "arm cached+async in `b` vs send, send' in `a`. To compare them, run `b`'s "
        "command again with `a`'s arm options in place of its own (`--aa`, not "
        "`--async-scheduling --policies cached`), or `a`'s with `b`'s in place of its own "
        "(`--async-scheduling --policies cached`, not `--aa`): no one run makes arms "
        "send, send', cached+async, nor shares an arm with each.")
    assert _line(["other"], ["send"]) == (
        HEAD + "arm other in `b` vs send in `a`. To compare them, run `b`'s command again "
        "with `a`'s `--policies`, `--aa` and `--async-scheduling` in place of its own, or "
        "`a`'s with `b`'s: no one run makes arms send, other, nor shares an arm with "
        "each.")


def test_arms_one_run_makes_name_its_options():
    assert _line(["cached+async"], ["cached"]) == (
        HEAD + "arm cached+async in `b` vs cached in `a`. To compare them, run arms "
        "cached, cached+async in one run (`--async-scheduling`).")
    assert _line(["cached"], ["send"]) == (
        HEAD + "arm cached in `b` vs send in `a`. To compare them, run both policies in "
        "one run (`--policies send,cached`).")


def test_an_aa_run_against_an_async_run(tmp_path_factory, tmp_path, capsys):
    aa = shared_run(tmp_path_factory, TWO_CASE_ARGS + ["--aa"])
    both = shared_run(tmp_path_factory, TWO_CASE_ARGS + ["--async-scheduling"])
    run, base = (f"{p.parent.name}/{p.name}" for p in (both, aa))
    capsys.readouterr()
    assert cli.main(["report", str(aa), str(both), "--no-figures", "--output",
                     str(tmp_path / "rep")]) == 0
    assert capsys.readouterr().err == (
        f"bench.py report: warning: No side-by-side ratio for run {run}: it shares no case "
        f"(workload, arm and codec) with run {base}, the reference: arm cached, "
        f"cached+async in {run} vs send, send' in {base}. To compare them, add a run with "
        "arm options --policies send,cached (no --aa or --async-scheduling): it shares "
        f"send with {base} and cached with {run}, so each pairs with it as the reference "
        "(--baseline); no one run makes arms send, send', cached, cached+async.\n")
