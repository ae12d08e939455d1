"""docs/models-and-gpu.md's table of what the emulated roofline's ops count (section
"Emulated steps") is RooflineStep's: a mixed step of llama-3.1-8b recomputed from the
table's formulas gives the code's time of every op, to the nanosecond."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ipc_bench.engine.config import TORCH_PRESETS
from ipc_bench.engine.roofline import RooflineStep, causal_pairs, load_gpu_figures

ROOT = Path(__file__).resolve().parents[2]
ROWS = [
    "| matmul `[T, in] @ [in, out]`: QKV (`d`, `(H + 2K) hd`), O (`H hd`, `d`), gate + up "
    "(`d`, `2F`), down (`F`, `d`) | 4 a layer | `2 (in x out + T x in + T x out)`: its "
    "weights, read once a step, and its input and output activations | `2 T x in x out` |",
    "| attention | 1 a layer, for the whole batch | `2 x 2 K hd x sum_r seq_len_r`: every "
    "request's K and V cache over its whole context, read once | `4 H hd x sum_r (q_r "
    "(seq_len_r - q_r) + q_r (q_r + 1) / 2)`: QK^T and PV over the (query, key) pairs the "
    "causal mask keeps (`seq_len_r` for a decode) |",
    "| LM head `[S, d] @ [d, V]` | 1 | `2 (d x V + S x d + S x V)`: its weights, the `S` "
    "rows of hidden states and the `S` rows of logits | `2 S x d x V` |",
]


def test_the_doc_has_the_table():
    doc = (ROOT / "docs" / "models-and-gpu.md").read_text()
    section = doc.split("## Emulated steps (`--model emulated`)", 1)[1].split("\n## ", 1)[0]
    lines = section.splitlines()
    head = lines.index("| op | how many a step | bytes | FLOPs |")
    assert lines[head + 1] == "| --- | --- | --- | --- |"
    end = lines.index("", head)
    assert lines[head + 2:end] == ROWS


def test_the_tables_formulas_are_the_codes():
    """Three requests, two decodes (contexts 1,000 and 3,000) and a 512-token prefill
    chunk of a 2,048-token prompt; 4 positions get logits."""
    p, vocab = TORCH_PRESETS["llama-3.1-8b"], 128_256
    gpu = load_gpu_figures()
    step = RooflineStep(p, vocab, gpu)
    q, seq = np.array([1, 1, 512]), np.array([1_000, 3_000, 2_048])
    t, s = int(q.sum()), 4
    pairs = int(sum(qr * (sr - qr) + qr * (qr + 1) // 2 for qr, sr in zip(q, seq)))
    assert pairs == causal_pairs(q, seq) == 1_000 + 3_000 + 512 * 1_536 + 512 * 513 // 2
    d, h, k, hd, f = p.hidden_size, p.num_heads, p.num_kv_heads, p.head_dim, \
        p.intermediate_size
    bw = gpu.memory_bandwidth_bytes_per_s * gpu.efficiency
    rate = gpu.bf16_flops_per_s * gpu.efficiency

    def op_ns(num_bytes, flops):
        return max(num_bytes / bw, flops / rate) * 1e9

    def matmul(rows, n_in, n_out):
        return op_ns(2 * (n_in * n_out + rows * n_in + rows * n_out), 2 * rows * n_in * n_out)

    want = {
        "qkv": p.num_layers * matmul(t, d, (h + 2 * k) * hd),
        "o": p.num_layers * matmul(t, h * hd, d),
        "gate_up": p.num_layers * matmul(t, d, 2 * f),
        "down": p.num_layers * matmul(t, f, d),
        "attention": p.num_layers * op_ns(2 * 2 * k * hd * int(seq.sum()), 4 * h * hd * pairs),
        "lm_head": matmul(s, d, vocab),
        "fixed": float(gpu.fixed_step_ns),
    }
    got = step.breakdown(t, 3, int(seq.sum()), pairs, s)
    assert {key: round(v) for key, v in got.items()} == {key: round(v) for key, v in want.items()}
