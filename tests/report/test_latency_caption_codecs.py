"""The latency figure's caption of a timed replay that compares codecs names each arm
and codec it draws, as its legend does (``send / msgpack``), not the arms alone; a
replay of one codec keeps naming its arms."""

from __future__ import annotations

from analysis_run import run_bench
from ipc_bench import cli
from ipc_bench.report import blocks

LATENCY = ("TTFT (from each request's intended arrival, so queueing counts) and "
           "inter-token latency distributions per arm and codec ")
FOUR = [("send", "msgpack"), ("send", "pickle"), ("cached", "msgpack"), ("cached", "pickle")]


def test_a_caption_of_several_codecs_names_each_arm_and_codec():
    both = dict(series=FOUR, panels=["ttft", "itl"])
    assert blocks.caption("latency_cdfs", both) == (
        LATENCY + "(`send / msgpack`, `send / pickle`, `cached / msgpack` and `cached / "
        "pickle`), from a timed replay.")
    # the ITL panel draws fewer: named apart, codecs and all
    fewer = dict(both, itl_series=[("send", "msgpack"), ("cached", "msgpack")])
    assert blocks.caption("latency_cdfs", fewer) == (
        LATENCY + "(TTFT: `send / msgpack`, `send / pickle`, `cached / msgpack` and "
        "`cached / pickle`; inter-token latency: `send / msgpack` and `cached / msgpack`), "
        "from a timed replay.")
    one_arm = dict(series=[("send", "msgpack"), ("send", "pickle")], panels=["ttft"])
    assert blocks.caption("latency_cdfs", one_arm) == (
        "TTFT (from each request's intended arrival, so queueing counts) distribution per "
        "arm and codec (`send / msgpack` and `send / pickle`), from a timed replay.")


def test_a_caption_of_one_codec_names_the_arms():
    assert blocks.caption("latency_cdfs", dict(series=FOUR[::2], panels=["ttft", "itl"])) \
        == LATENCY + "(`send` and `cached`), from a timed replay."


def test_the_caption_of_a_timed_replay_of_two_codecs(tmp_path):
    from test_timed_no_floor import write_trace

    write_trace(tmp_path / "trace.csv")
    run = tmp_path / "run"
    run_bench(run, ["--scenario", "azure-conv-timed", "--trace", str(tmp_path / "trace.csv"),
                    "--max-requests", "6", "--codecs", "msgpack,pickle", "--warmup-steps",
                    "2", "--no-single-process", "--no-floor"])
    out = tmp_path / "rep"
    assert cli.main(["report", str(run), "--output", str(out)]) == 0
    md = (out / "report.md").read_text()
    caption = md.split("![TTFT and ITL distributions](latency_cdfs.png)\n\n", 1)[1] \
        .split("\n", 1)[0]
    assert caption == (LATENCY + "(`send / msgpack`, `cached / msgpack`, `send / pickle` "
                       "and `cached / pickle`), from a timed replay.")
