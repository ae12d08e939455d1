"""A steady batch whose requests need more KV blocks than --num-blocks can give
(``MAX_NUM_BLOCKS``, 4,194,304) is told the least --block-size at which they fit, with
the blocks they then hold, and a --num-running that runs (``check_steady_cache``), where
it read "give a larger --block-size, --num-running N or fewer, or fewer --steps", no
figure but a quotient; each figure named runs through every check."""

from __future__ import annotations

import pytest

from ipc_bench.cli import main as cli_main

#: 15,000 running requests at block size 1: 318 tokens each (5 counted steps, 63 in all)
RUN = ["--scenario", "decode-steady", "--codecs", "msgpack", "--no-single-process",
       "--no-floor", "--quiet", "--steps", "5", "--warmup-steps", "1",
       "--max-num-batched-tokens", "65536"]
HEAD = ("bench.py: error: --num-running 15000 needs 4,770,000 KV blocks (15,000 requests x "
        "318 blocks of 1 token: each reaches up to 318 tokens in up to 63 steps, warm-up "
        "included) and the cache has {cache}: a steady batch holds every request at once, "
        "and one that must preempt runs fewer requests than asked; --num-blocks is at most "
        "4,194,304: ")
#: the search for the most stops past 50,000 simulated requests: the batch named runs
NOT_THE_MOST = (" (a batch that runs, not known to be the most: the search for it stops "
                "past 50,000 simulated requests)")


@pytest.mark.parametrize("blocks, advice", [
    # the default cache, capped at the bound
    ([], "give --block-size 2 or more (2,385,000 blocks at 2), or --num-running 13189 or "
         "fewer" + NOT_THE_MOST),
    (["--num-blocks", "4000000"], "give --block-size 2 or more with --num-blocks 2,385,000 "
                                  "or more, or --num-running 12578 or fewer" + NOT_THE_MOST),
])
def test_a_need_past_the_bound_names_a_block_size_and_a_batch(blocks, advice, tmp_path,
                                                              capsys):
    assert cli_main(RUN + blocks + ["--num-running", "15000", "--block-size", "1",
                                    "--output", str(tmp_path / "r")]) == 2
    cache = "4,000,000" if blocks else "4,194,304"
    assert capsys.readouterr().err.strip() == HEAD.format(cache=cache) + advice


@pytest.mark.parametrize("args", [
    ["--num-running", "15000", "--block-size", "2"],
    ["--num-running", "15000", "--block-size", "2", "--num-blocks", "2385000"],
    ["--num-running", "13189", "--block-size", "1"],
])
def test_what_it_names_runs(args, tmp_path, monkeypatch):
    from ipc_bench.cli import execute

    handed = []
    monkeypatch.setattr(execute, "run_cases",
                        lambda args, cases, *rest, **kw: handed.extend(cases) or 0)
    assert cli_main(RUN + args + ["--output", str(tmp_path / "r")]) == 0
    assert len(handed) == 2
