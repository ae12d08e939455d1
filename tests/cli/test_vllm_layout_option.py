"""``--vllm-layout``: its help, the one-line refusals of bad values and of what the
1d37eb37 layout does not run (exit 2), and a run that records and names the layout."""

from __future__ import annotations

import json

import pytest

from ipc_bench import cli
from ipc_bench.cli.options import build_parser
from run_notes import without_nice_note

DS = ["--scenario", "decode-steady"]

REFUSALS = [
    (["--vllm-layout", "bogus"],
     "argument --vllm-layout: 'bogus': choose from 7f280d69c, 1d37eb37"),
    (["--vllm-layout", ""], "argument --vllm-layout: '': choose from 7f280d69c, 1d37eb37"),
    (["--vllm-layout", "1d37eb37", "--codecs", "packed"],
     "--vllm-layout 1d37eb37 runs with --codecs msgpack,pickle, not packed"),
    (["--vllm-layout", "1d37eb37", "--codecs", "slots"],
     "--vllm-layout 1d37eb37 runs with --codecs msgpack,pickle, not slots"),
    (["--vllm-layout", "1d37eb37", "--async-scheduling"],
     "--vllm-layout 1d37eb37 runs synchronously only: drop --async-scheduling"),
    (["--vllm-layout", "1d37eb37", "--num-spec-tokens", "2"],
     "--vllm-layout 1d37eb37 runs without draft tokens: drop --num-spec-tokens"),
]


@pytest.mark.parametrize("argv,message", REFUSALS, ids=[" ".join(a) for a, _ in REFUSALS])
def test_refusals_are_one_line_and_exit_2(argv, message, capsys):
    code = cli.main(DS + argv)
    out, err = capsys.readouterr()
    assert (code, without_nice_note(err.splitlines()), out) == (
        2, [f"bench.py: error: {message}"], "")


def test_help_documents_the_option():
    text = " ".join(build_parser().format_help().split())
    assert "--vllm-layout 7f280d69c|1d37eb37" in text
    assert ("7f280d69c (default; PR #20291, July 2025) or 1d37eb37 (vLLM of spring 2026, "
            "read at a fork's commit:") in text
    assert "the second per-step RPC, sample_tokens, is not modelled" in text


def test_a_run_records_and_names_the_layout(tmp_path, capsys):
    out_dir = tmp_path / "run"
    code = cli.main(DS + ["--vllm-layout", "1d37eb37", "--num-running", "2", "--steps", "20",
                          "--warmup-steps", "5", "--codecs", "msgpack",
                          "--no-single-process", "--output", str(out_dir)])
    out, _ = capsys.readouterr()
    assert code == 0
    heads = [line for line in out.splitlines() if line.startswith("decode-steady  [")]
    assert heads and all(line.endswith("  layout=vLLM 1d37eb37") for line in heads)
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["metadata"]["options"]["vllm_layout"] == "1d37eb37"
    assert [c["vllm_layout"] for c in summary["cases"]] == ["1d37eb37", "1d37eb37"]
    assert all(c["scheduler"]["vllm_layout"] == "1d37eb37"
               for c in summary["metadata"]["cases"])
