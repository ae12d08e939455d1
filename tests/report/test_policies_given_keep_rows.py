"""``--policies`` chooses which cases a run runs, as ``--aa`` and ``--async-scheduling``
do: it changes no figure of a row both runs have. An ``--aa --policies send`` run, which
runs the very cases ``--aa`` alone runs, read "option --policies differs ... compare
with care" against a default run where ``--aa`` alone read that the shared rows stay
comparable. It now reads as ``--aa`` alone does, and any other ``--policies``
difference counts among the differences that keep the shared rows comparable."""

from __future__ import annotations

from analysis_run import TWO_CASE_ARGS, shared_run
from ipc_bench.harness.environment import compare_settings
from ipc_bench.report.blocks import comparable_rows_line
from runs_section import AA, ASYNC, NARROWED, runs_lines

GIVEN = ("the policies they ran (`--policies` chooses cases alone: a policy's rows are "
         "measured alike whichever others ran, and a policy one run ran alone has its rows "
         "there alone)")


def test_aa_given_its_own_policy_reads_as_aa_alone(tmp_path_factory, tmp_path,
                                                   shared_two_case_run):
    given = shared_run(tmp_path_factory, TWO_CASE_ARGS + ["--aa", "--policies", "send"])
    mine, bare = (f"{p.parent.name}/{p.name}" for p in (given, shared_two_case_run))
    assert runs_lines(tmp_path, [shared_two_case_run, given]) == [
        f"The runs differ only in {NARROWED} and {AA}: options that change no figure of a "
        "row both runs have, so those rows stay comparable.",
        f"- {mine} against {bare}: default policies differ: send vs cached, send "
        "(--policies not given or given as the flags run it: --aa runs one policy alone)",
        f"- {mine} against {bare}: A/A copies (--aa) differ: run (--aa given) vs not run "
        "(decode-steady's default)"]


def _md(options: dict, arms: list[tuple[str, str, bool]]) -> dict:
    """Metadata of a run of ``options`` whose cases ran ``arms`` (policy, arm, async)."""
    cases = [dict(case_id=f"c{i}", labels={"num_running": 4}, policy=policy, arm=arm,
                  async_scheduling=is_async, codec="msgpack", transport="ipc",
                  repetition=0) for i, (policy, arm, is_async) in enumerate(arms)]
    return dict(seed=0, options=dict(dict(policies=None, aa=False, async_scheduling=False),
                                     **options), cases=cases)


def test_aa_async_given_cached_is_aa_async_alone():
    base = _md({}, [("send", "send", False), ("cached", "cached", False)])
    flags = dict(aa=True, async_scheduling=True)
    arms = [("cached", "cached+async", True), ("cached", "cached+async'", True)]
    assert compare_settings(_md(dict(flags, policies=["cached"]), arms), base)[0][0] == (
        "default policies differ: cached vs cached, send (--policies not given or given "
        "as the flags run it: --aa runs one policy alone, --async-scheduling runs the "
        "cached policy alone)")
    # another policy than --aa's own is a policy given: its own line
    assert compare_settings(_md(dict(aa=True, policies=["cached"]),
                                [("cached", "cached", False), ("cached", "cached'", False)]),
                            base)[0][0] == (
        "option --policies differs: [cached] vs default (cached, send)")


def test_a_policies_line_given_by_the_user_keeps_the_shared_rows_comparable():
    assert comparable_rows_line([
        "Zc against X: option --policies differs: [cached] vs default (cached, send)",
        "Zc against X: cached+async cases differ: run (--async-scheduling given) vs not run "
        "(decode-steady's default)"]) == (
        f"The runs differ only in {GIVEN} and {ASYNC}: options that change no figure of a "
        "row both runs have, so those rows stay comparable.")
    assert comparable_rows_line([
        "Y against X: option --policies differs: [send] vs [cached]"], ["Y"]) == (
        f"The runs differ only in {GIVEN}: an option that changes no figure of a row both "
        "runs have, but run `Y` has no row in common with the reference: Side by side says "
        "what to run.")
    # with any other difference, the care note as before
    assert comparable_rows_line([
        "Zc against X: option --policies differs: [cached] vs default (cached, send)",
        "Zc against X: option --vocab-size differs: 32000 vs default (128256)"]) == ""
