"""A run that shares no row with the reference read "run `b` again with `a`'s arm
options (`--aa`), or `a` with `b`'s (`--async-scheduling`)", which, read as adding those
options, either is refused (``--async-scheduling --policies send``) or still shares no
row (``--aa --async-scheduling`` runs cached+async and cached+async'). The line now
names a run that shares an arm with each where there is one, else each run's command
with the other's arm options in place of its own; each test runs what it advises and
reports it beside the runs it was advised for, with no row left unpaired. The Runs
line of a default run against an ``--aa --policies send`` run no longer says that
``--policies`` was left at its default."""

from __future__ import annotations

import re

import pytest

from analysis_run import TWO_CASE_ARGS, shared_run
from ipc_bench import cli

#: The runs a reviewer compared, by their arm options.
RUNS = {"base": [], "aa": ["--aa"], "async": ["--async-scheduling"],
        "aaasync": ["--aa", "--async-scheduling"], "send": ["--policies", "send"],
        "cached": ["--policies", "cached"],
        "asynccached": ["--async-scheduling", "--policies", "cached"]}

BRIDGE = re.compile(r"add a run with arm options `([^`]+)`")
IN_PLACE = re.compile(r"in place of its own \(`([^`]+)`, not `([^`]+)`\)")


def _run(tmp_path_factory, options: list[str], kind: str = ""):
    """The session's run of ``TWO_CASE_ARGS`` and ``options``; one of its own for a
    ``kind`` (a run's command again, which a report takes beside the first)."""
    return shared_run(tmp_path_factory, TWO_CASE_ARGS + options, kind=kind)


def _name(path) -> str:
    return f"{path.parent.name}/{path.name}"


def _report(tmp_path, runs, *extra: str) -> list[str]:
    """The notes of the report of ``bench.py report RUNS EXTRA`` that say a run shares
    no case with the reference."""
    out = tmp_path / f"rep{len(list(tmp_path.iterdir()))}"
    assert cli.main(["report", *map(str, runs), *extra, "--no-figures", "--output",
                     str(out)]) == 0
    lines = (out / "report.md").read_text().splitlines()
    return [ln for ln in lines if ln.startswith("> **Note:** No side-by-side ratio")]


def _advice(tmp_path, capsys, a, b) -> str:
    """What the report of runs ``a`` (the reference) and ``b`` says to run, with the
    runs named ``a`` and ``b``."""
    capsys.readouterr()
    notes = _report(tmp_path, [a, b])
    assert len(notes) == 1 and "bench.py report: warning: No side-by-side ratio" in (
        capsys.readouterr().err)
    text = notes[0].split("To compare them, ", 1)[1]
    return text.replace(_name(a), "a").replace(_name(b), "b")


def _pairs_with_none_left(tmp_path, capsys, runs, *extra: str) -> None:
    capsys.readouterr()
    assert _report(tmp_path, runs, *extra) == []
    assert "No side-by-side ratio" not in capsys.readouterr().err


ADVICE = {
    ("aa", "async"):
        "add a run with arm options `--policies send,cached` (no `--aa` or "
        "`--async-scheduling`): it shares send with `a` and cached with `b`, so each "
        "pairs with it as the reference (`--baseline`); no one run makes arms send, "
        "send', cached, cached+async.",
    ("send", "async"):
        "add a run with arm options `--policies send,cached` (no `--aa` or "
        "`--async-scheduling`): it shares send with `a` and cached with `b`, so each "
        "pairs with it as the reference (`--baseline`); no one run makes arms send, "
        "cached, cached+async.",
    ("base", "asynccached"):
        "add a run with arm options `--async-scheduling` (no `--policies` or `--aa`): it "
        "shares cached with `a` and cached+async with `b`, so each pairs with it as the "
        "reference (`--baseline`); no one run makes arms send, cached, cached+async.",
    ("cached", "aa"):
        "add a run with arm options `--policies send,cached` (no `--aa` or "
        "`--async-scheduling`): it shares cached with `a` and send with `b`, so each "
        "pairs with it as the reference (`--baseline`); no one run makes arms send, "
        "send', cached.",
}


@pytest.mark.parametrize("pair", list(ADVICE), ids="-".join)
def test_a_run_that_shares_an_arm_with_each_is_named_and_pairs_with_both(
        tmp_path_factory, tmp_path, capsys, pair):
    a, b = (_run(tmp_path_factory, RUNS[name]) for name in pair)
    advice = _advice(tmp_path, capsys, a, b)
    assert advice == ADVICE[pair]
    options = BRIDGE.match(advice).group(1).split()
    bridge = _run(tmp_path_factory, options)
    _pairs_with_none_left(tmp_path, capsys, [a, bridge, b], "--baseline", str(bridge))


def test_an_aa_run_against_an_aa_async_run_is_told_to_swap_its_arm_options(
        tmp_path_factory, tmp_path, capsys):
    """No run shares an arm with both (send, send' against cached+async,
    cached+async'): each command again with the other's arm options in place of its
    own, which runs and pairs with the other; the old advice, ``--aa`` added to the
    ``--aa --async-scheduling`` run, named an option it already had."""
    a, b = (_run(tmp_path_factory, RUNS[name]) for name in ("aa", "aaasync"))
    advice = _advice(tmp_path, capsys, a, b)
    assert advice == (
        "run `b`'s command again with `a`'s arm options in place of its own (`--aa`, not "
        "`--aa --async-scheduling`), or `a`'s with `b`'s in place of its own (`--aa "
        "--async-scheduling`, not `--aa`): no one run makes arms send, send', "
        "cached+async, cached+async', nor shares an arm with each.")
    (for_b, not_b), (for_a, not_a) = IN_PLACE.findall(advice)
    assert (not_b.split(), not_a.split()) == (RUNS["aaasync"], RUNS["aa"])
    _pairs_with_none_left(tmp_path, capsys, [a, _run(tmp_path_factory, for_b.split(), "again")])
    _pairs_with_none_left(tmp_path, capsys, [_run(tmp_path_factory, for_a.split(), "again"), b])


def test_send_against_async_cached_swaps_options_that_run(tmp_path_factory, tmp_path,
                                                           capsys):
    """``--policies send`` added to an ``--async-scheduling`` run is refused; in place
    of its arm options it runs, and pairs with the ``--policies send`` run."""
    a, b = (_run(tmp_path_factory, RUNS[name]) for name in ("send", "asynccached"))
    advice = _advice(tmp_path, capsys, a, b)
    assert advice == (
        "run `b`'s command again with `a`'s arm options in place of its own (`--policies "
        "send`, not `--async-scheduling --policies cached`), or `a`'s with `b`'s in place "
        "of its own (`--async-scheduling --policies cached`, not `--policies send`): no "
        "one run makes arms send, cached+async, nor shares an arm with each.")
    (for_b, _), (for_a, _) = IN_PLACE.findall(advice)
    _pairs_with_none_left(tmp_path, capsys, [a, _run(tmp_path_factory, for_b.split(), "again")])
    _pairs_with_none_left(tmp_path, capsys, [_run(tmp_path_factory, for_a.split(), "again"), b])


def test_a_default_run_against_aa_given_send_says_policies_may_be_given():
    from ipc_bench.report.blocks import comparable_rows_line

    assert comparable_rows_line([
        "aasend against base: default policies differ: send vs cached, send (--policies "
        "not given or given as the flags run it: --aa runs one policy alone)",
        "aasend against base: A/A copies (--aa) differ: run (--aa given) vs not run "
        "(decode-steady's default)"]) == (
        "The runs differ only in the policies their defaults ran (`--policies` not given, "
        "or given as what a run's flags run without it: `--aa` or `--async-scheduling` "
        "runs one policy alone, so the other policy's rows are one run's alone) and whether "
        "A/A copies of the arms ran (`--aa`: their rows are one run's alone): options that "
        "change no figure of a row both runs have, so those rows stay comparable.")
