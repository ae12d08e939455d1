"""``--async-scheduling`` alone runs each async case with a synchronous cached case beside
it; given ``--policies cached`` it runs the async cases alone. Both runs ran the cached
policy and async cases, so a report of the two read "Same machine, software and commit
by their metadata." with no difference line, though one ran twice the other's cases.
The Runs section names the synchronous cached cases one run ran and the other did not,
as it names the cases ``--aa`` or ``--no-single-process`` add or leave out."""

from __future__ import annotations

from analysis_run import TWO_CASE_ARGS, shared_run
from ipc_bench import cli
from ipc_bench.harness.environment import compare_settings

ASYNC = "whether cached+async cases ran (`--async-scheduling`: their rows are one run's alone)"
SYNC = ("whether synchronous cached cases ran (`--async-scheduling` runs them beside its "
        "async cases where given no `--policies` and no `--aa`: their rows are one run's "
        "alone)")
POLICIES = ("the policies they ran (`--policies` chooses cases alone: a policy's rows are "
            "measured alike whichever others ran, and a policy one run ran alone has its rows "
            "there alone)")


def _runs_lines(tmp_path, runs) -> list[str]:
    """The Runs section's line over its differences (or the care note, or the line of
    runs that differ in nothing) and the difference lines of a report of ``runs``."""
    out = tmp_path / "rep"
    assert cli.main(["report", *map(str, runs), "--no-figures", "--output", str(out)]) == 0
    lines = (out / "report.md").read_text().splitlines()
    section = lines[lines.index("## Runs") + 1:lines.index("## Side by side")]
    return [line for line in section
            if line.startswith(("The runs differ", "> **Note:** The runs differ", "Same ")) or
            (line.startswith("- ") and " against " in line.split(":")[0])]


def test_async_alone_against_async_given_cached(tmp_path_factory, tmp_path):
    both = shared_run(tmp_path_factory, TWO_CASE_ARGS + ["--async-scheduling"])
    alone = shared_run(tmp_path_factory, TWO_CASE_ARGS + ["--async-scheduling", "--policies",
                                                          "cached"])
    mine, other = (f"{p.parent.name}/{p.name}" for p in (alone, both))
    assert _runs_lines(tmp_path, [both, alone]) == [
        f"The runs differ only in {SYNC}: an option that changes no figure of a row both "
        "runs have, so those rows stay comparable.",
        f"- {mine} against {other}: synchronous cached cases differ: not run "
        "(--async-scheduling and --policies cached given) vs run (--async-scheduling given)"]


def _md(options: dict, arms: list[tuple[str, str, bool]]) -> dict:
    """Metadata of a decode-steady run of ``options`` whose cases ran ``arms``
    (policy, arm, async)."""
    cases = [dict(case_id=f"c{i}", labels={"num_running": 4}, policy=policy, arm=arm,
                  async_scheduling=is_async, codec="msgpack", transport="ipc",
                  repetition=0) for i, (policy, arm, is_async) in enumerate(arms)]
    return dict(seed=0, scenario="decode-steady", cases=cases,
                options=dict(dict(policies=None, aa=False, async_scheduling=False),
                             **options))


def test_each_run_says_what_chose_its_cases():
    default = _md({}, [("send", "send", False), ("cached", "cached", False)])
    alone = _md(dict(async_scheduling=True, policies=["cached"]),
                [("cached", "cached+async", True)])
    assert compare_settings(default, alone)[0] == [
        "option --policies differs: default (cached, send) vs [cached]",
        "cached+async cases differ: not run (decode-steady's default) vs run "
        "(--async-scheduling given)",
        "synchronous cached cases differ: run (decode-steady's default) vs not run "
        "(--async-scheduling and --policies cached given)"]
    aa_async = _md(dict(async_scheduling=True, aa=True),
                   [("cached", "cached+async", True), ("cached", "cached+async'", True)])
    aa_cached = _md(dict(aa=True, policies=["cached"]),
                    [("cached", "cached", False), ("cached", "cached'", False)])
    assert compare_settings(aa_cached, aa_async)[0][-1] == (
        "synchronous cached cases differ: run (--aa and --policies cached given) vs not run "
        "(--async-scheduling and --aa given)")
    # a run that ran no cached case: the policies' line says so, no line of its own
    send = _md(dict(policies=["send"]), [("send", "send", False)])
    assert compare_settings(send, alone)[0] == [
        "option --policies differs: [send] vs [cached]",
        "cached+async cases differ: not run (decode-steady's default) vs run "
        "(--async-scheduling given)"]
