"""A steady workload that no --num-blocks serves on the device: the refusal names the
most --num-running that runs with the blocks that fit given, found through the run's own
checks (``scenario.steady_running_that_fits``: a smaller batch takes fewer steps, so its
requests hold fewer blocks each), where it named the blocks that fit over the blocks one
request of the batch asked holds (396 for llama-3.1-8b's 1,024 on the emulated H200,
while 487 run), a few more may; and where that quotient had no divisor (--num-blocks
given, or a default cache at the --num-blocks bound) it named none. The batch named runs
through every check before the cases would, and one more is refused."""

from __future__ import annotations

import pytest

from ipc_bench.cli import main as cli_main

STEADY = ["--scenario", "decode-steady", "--model", "emulated", "--model-preset",
          "llama-3.1-8b", "--codecs", "msgpack", "--no-single-process", "--no-floor",
          "--quiet"]
#: 5 counted steps after 1 warm-up step at block size 1 (the default cache of 5,000
#: running requests is capped at the --num-blocks bound, 4,194,304)
SHORT = ["--steps", "5", "--warmup-steps", "1", "--block-size", "1"]
FITS = ("no --num-blocks fits this workload on this device: it needs {need} blocks (the "
        "most this case's requests hold in its steps), and at most {fit} fit beside the "
        "weights: lower --num-running ({most}) or use a smaller --model-preset")


def _refusal(args, tmp_path, capsys) -> str:
    assert cli_main(STEADY + args + ["--output", str(tmp_path / "r")]) == 2
    return capsys.readouterr().err.strip()


@pytest.mark.parametrize("args, need, fit, most", [
    # --num-running sizes the cache: 147,456 blocks at 144 a request; 57,038 // 144 = 396
    (["--num-running", "1024"], "147,456", "57,038",
     "at most 221 where it sizes the KV cache; at most 487 with --num-blocks 57,038 given"),
    # --num-blocks given: no count sizes the cache (it named none)
    (["--num-running", "1024", "--num-blocks", "300000"], "147,456", "57,038",
     "at most 487 with --num-blocks 57,038 given"),
    # the default cache at the --num-blocks bound, whose sizing count (1,023) does not
    # divide the need (it named none)
    (["--num-running", "5000", *SHORT], "2,090,000", "912,619",
     "at most 221 where it sizes the KV cache; at most 2,700 with --num-blocks 912,619 "
     "given"),
])
def test_the_refusal_names_the_most_running_with_the_blocks_that_fit(args, need, fit, most,
                                                                     tmp_path, capsys):
    assert _refusal(args, tmp_path, capsys).endswith(
        FITS.format(need=need, fit=fit, most=most))


@pytest.mark.parametrize("args, most, refusal", [
    (["--num-blocks", "57038"], 487,
     "bench.py: error: --num-running 488 needs 57,096 KV blocks (488 requests x 117 blocks "
     "of 16 tokens: each reaches up to 1,863 tokens in up to 1,608 steps, warm-up included) "
     "and the cache has 57,038: a steady batch holds every request at once, and one that "
     "must preempt runs fewer requests than asked; give --num-blocks 57,096 or more, or "
     "--num-running 487 or fewer"),
    (["--num-blocks", "912619", *SHORT], 2700,
     "bench.py: error: --num-running 2701 needs 912,938 KV blocks (2,701 requests x 338 "
     "blocks of 1 token: each reaches up to 338 tokens in up to 83 steps, warm-up included) "
     "and the cache has 912,619: a steady batch holds every request at once, and one that "
     "must preempt runs fewer requests than asked; give --num-blocks 912,938 or more, or "
     "--num-running 2700 or fewer"),
])
def test_the_batch_named_runs_and_one_more_is_refused(args, most, refusal, tmp_path, capsys,
                                                      monkeypatch):
    # every check that could refuse it runs before the cases do (the scheduler's, with
    # the emulated H200's figures the runner checks again with): the cases it hands on
    # are the run's
    from ipc_bench.cli import execute

    handed = []
    monkeypatch.setattr(execute, "run_cases",
                        lambda args, cases, *rest, **kw: handed.extend(cases) or 0)
    blocks = int(args[1])
    assert cli_main(STEADY + args + ["--num-running", str(most),
                                     "--output", str(tmp_path / "r")]) == 0
    assert [(c.labels["num_running"], c.scheduler.num_blocks) for c in handed] == [
        (most, blocks)] * 2
    capsys.readouterr()
    assert _refusal(args + ["--num-running", str(most + 1)], tmp_path, capsys) == refusal
