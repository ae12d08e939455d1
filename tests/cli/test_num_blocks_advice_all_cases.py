"""One --num-blocks serves every running count of a run, so the memory refusal's
advice gives the most blocks any of them holds, whatever order the counts are listed
in (the first count's need was given, which the largest count then refused again)."""
import pytest

from ipc_bench.cli.run import main as cli_main

ADVICE_256 = (
    "bench.py: error: llama-3.1-8b needs 15.0 GiB of weights + 111.4 GiB of KV cache "
    "(num_blocks 57,039 x block_size 16), 126.362 GiB in all, on an emulated NVIDIA H200; "
    "it has 140.4 GiB, of which the model may take 90 % (126.361 GiB): give --num-blocks "
    "from 25,856 (the most --num-running 256's requests hold in its steps, the largest "
    "need of the run) to 57,038, or a smaller --model-preset")


@pytest.mark.parametrize("running", ["1,256", "256,1", "1,256,16", "1,16,64,256"])
def test_memory_advice_gives_the_largest_count_need(running, capsys, tmp_path):
    args = ["--scenario", "decode-steady", "--model", "emulated", "--model-preset",
            "llama-3.1-8b", "--num-running", running, "--num-blocks", "57039",
            "--output", str(tmp_path / "run")]
    assert cli_main(args) == 2
    assert capsys.readouterr().err.strip() == ADVICE_256
    assert not (tmp_path / "run").exists()


def test_the_old_advice_is_refused_by_the_largest_count(capsys, tmp_path):
    """The first count's need (87), which the advice gave, is refused by the 256 case's
    steady cache check, whose bound the advice now gives, and the most --num-running
    that 87 blocks hold (one request, which holds 87 in its 1,122 steps)."""
    args = ["--scenario", "decode-steady", "--model", "emulated", "--model-preset",
            "llama-3.1-8b", "--num-running", "1,256", "--num-blocks", "87",
            "--output", str(tmp_path / "run")]
    assert cli_main(args) == 2
    assert capsys.readouterr().err.strip() == (
        "bench.py: error: --num-running 256 needs 25,856 KV blocks (256 requests x 101 "
        "blocks of 16 tokens: each reaches up to 1,603 tokens in up to 1,348 steps, warm-up "
        "included) and the cache has 87: a steady batch holds every request at once, and "
        "one that must preempt runs fewer requests than asked; give --num-blocks 25,856 or "
        "more, or --num-running 1 or fewer")


def test_one_count_keeps_this_case_wording(capsys, tmp_path):
    args = ["--scenario", "decode-steady", "--model", "emulated", "--model-preset",
            "llama-3.1-8b", "--num-running", "256", "--num-blocks", "57039",
            "--output", str(tmp_path / "run")]
    assert cli_main(args) == 2
    assert capsys.readouterr().err.strip() == ADVICE_256.replace(
        "--num-running 256's requests hold in its steps, the largest need of the run",
        "this case's requests hold in its steps")
