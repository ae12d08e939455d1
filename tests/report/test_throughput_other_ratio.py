"""A report of several runs that pair cached with send in one run and cached+async with
cached in another draws the cached/send ratio panel; the throughput caption says that
cached+async/cached is not drawn and that the run's findings give it."""

from __future__ import annotations

import pytest

from ipc_bench.analysis.results import load
from ipc_bench.cli import main as cli_main
from ipc_bench.report import blocks, plots

ARGS = ["--scenario", "decode-steady", "--steps", "8", "--warmup-steps", "2", "--codecs",
        "msgpack", "--no-floor", "--no-single-process", "--num-running", "2"]
RATIO = ("Right: cached/send, paired by repetition: geometric mean of the per-repetition "
         "ratios; one pair each, so no interval (above 1: cached faster).")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("other_ratio")
    for name, extra in (("sync", []), ("asy", ["--async-scheduling"]),
                        ("asy2", ["--async-scheduling"])):
        assert cli_main(ARGS + extra + ["--output", str(root / name)]) == 0
    return root


def _drawn(*dirs):
    with plots.report_style():
        return plots.drawn(plots.throughput(load(list(dirs))))


def _assert_after_ratio(text, sentence):
    """``sentence`` follows the ratio panel's sentence, past what the caption adds about
    that panel's axis in between (a log scale or a cut, where 8-step runs on a busy
    machine give ratios far apart)."""
    assert RATIO in text and sentence in text
    assert text.index(sentence) > text.index(RATIO)
    between = text[text.index(RATIO) + len(RATIO):text.index(sentence)]
    assert between == "" or between.startswith((" Its axis is on a log scale",
                                                " The ratio axis holds every ratio")), between


def test_the_undrawn_async_ratio_is_named_with_its_run(runs):
    d = _drawn(runs / "sync", runs / "asy")
    assert d["panels"] == ["tokens/s", "cached/send"]
    assert d["ratio_also"] == ("cached+async/cached", ["asy"])
    text = blocks.caption("throughput", d)
    _assert_after_ratio(text, " Not drawn: cached+async/cached, which run `asy` pairs; its "
                        "findings give it.")


def test_several_runs_that_pair_it_are_named(runs):
    text = blocks.caption("throughput", _drawn(runs / "sync", runs / "asy", runs / "asy2"))
    _assert_after_ratio(text, " Not drawn: cached+async/cached, which runs `asy` and `asy2` "
                        "pair; their findings give it.")


def test_runs_of_one_pair_say_nothing_more(runs):
    d = _drawn(runs / "asy", runs / "asy2")
    assert d["panels"] == ["tokens/s", "cached+async/cached"]
    assert d["ratio_also"] is None
    assert "Not drawn" not in blocks.caption("throughput", d)
