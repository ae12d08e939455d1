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


def test_the_undrawn_async_ratio_is_named_with_its_run(runs):
    d = _drawn(runs / "sync", runs / "asy")
    assert d["panels"] == ["tokens/s", "cached/send"]
    assert d["ratio_also"] == ("cached+async/cached", ["asy"])
    text = blocks.caption("throughput", d)
    assert (RATIO + " Not drawn: cached+async/cached, which run `asy` pairs; its findings "
            "give it.") in text


def test_several_runs_that_pair_it_are_named(runs):
    text = blocks.caption("throughput", _drawn(runs / "sync", runs / "asy", runs / "asy2"))
    assert (RATIO + " Not drawn: cached+async/cached, which runs `asy` and `asy2` pair; "
            "their findings give it.") in text


def test_runs_of_one_pair_say_nothing_more(runs):
    d = _drawn(runs / "asy", runs / "asy2")
    assert d["panels"] == ["tokens/s", "cached+async/cached"]
    assert d["ratio_also"] is None
    assert "Not drawn" not in blocks.caption("throughput", d)
