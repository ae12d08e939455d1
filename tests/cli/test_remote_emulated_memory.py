"""With ``--remote-runners``, an emulated preset whose weights + KV cache do not fit
the emulated GPU is refused before any runner is asked for, exit 2, with the advice a
local run gives (the least ``--num-blocks`` its requests hold included): the emulated
GPU's figures (``gpu_figures.json``) are the same on every host, so the scheduler
checks them as it does a case it runs itself."""
import pytest

from ipc_bench.cli.run import main as cli_main

NEEDS = ("bench.py: error: llama-3.1-8b needs 15.0 GiB of weights + {kv} of KV cache "
         "(num_blocks {blocks} x block_size 16), {total} in all, on an emulated NVIDIA "
         "H200; it has 140.4 GiB, of which the model may take 90 % ({limit}): give "
         "--num-blocks from 25,856 (the most this case's requests hold in its steps) to "
         "57,038")
BY_RUNNING = NEEDS.format(kv="128.5 GiB", blocks="65,792", total="143.5 GiB",
                          limit="126.4 GiB") + (
    ", or --num-running 221 or fewer (it sizes the KV cache here), or a smaller "
    "--model-preset")
BY_BLOCKS = NEEDS.format(kv="111.4 GiB", blocks="57,039", total="126.362 GiB",
                         limit="126.361 GiB") + ", or a smaller --model-preset"


@pytest.mark.parametrize("extra, line", [([], BY_RUNNING),
                                         (["--num-blocks", "57039"], BY_BLOCKS)])
def test_remote_runners_refuse_an_emulated_model_that_cannot_fit(extra, line, capsys,
                                                                 tmp_path):
    args = ["--scenario", "decode-steady", "--transport", "tcp", "--remote-runners",
            "--port", "5811", "--startup-timeout", "1", "--model", "emulated",
            "--model-preset", "llama-3.1-8b", "--num-running", "256", "--codecs",
            "msgpack", "--policies", "send", "--no-single-process", "--output",
            str(tmp_path / "run")] + extra
    code = cli_main(args)
    assert (code, capsys.readouterr().err.strip()) == (2, line)
    assert not (tmp_path / "run").exists()
