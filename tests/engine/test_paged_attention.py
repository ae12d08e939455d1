"""Decode attention over the paged KV cache (ipc_bench.engine.paged_attention) and the
decode-step graphs (ipc_bench.engine.cuda_step.DecodeGraphs), on CPU: flex runs
compiled here as on CUDA; varlen has no CPU kernel, so its calls go to a reference of
``torch.nn.attention.varlen.varlen_attn``'s documented semantics; graphs are replayed
by ``strict_capture`` (the same work over the same persistent buffers, refusing what a
CUDA graph capture forbids)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ipc_bench.engine.config import ConfigError, ModelConfig, SchedulerConfig
from ipc_bench.engine.cuda_step import eager_capture, strict_capture
from ipc_bench.engine.models import TorchModel
from ipc_bench.engine.paged_attention import (DecodeRows, FlexAttention, GatherAttention,
                                              VarlenAttention, bucket_for, decode_buckets,
                                              flex_kernel_options, flex_unsupported,
                                              resolve_attention, triton_toolchain_problem,
                                              varlen_kernel_problem, varlen_unsupported)

#: Slow (``-m slow``, run by .ci/run after the default run): nearly every test here
#: compiles flex attention with TorchInductor on the CPU (about 10 s a kernel).
pytestmark = pytest.mark.slow

BS = 4  # tokens per block
#: real blocks; the cache holds one more, the pad block. H, KH, HD, BS and NUM_BLOCKS are
#: the tiny preset's heads and the cache of the flex models below (``SCHED``, 80 blocks of
#: 4), and the flex backends here have their largest bucket (4): a flex kernel is
#: compiled per shape (about 4 s of CPU each), and these share theirs.
NUM_BLOCKS = 80
H, KH, HD = 4, 2, 16


def test_decode_buckets_are_powers_of_two_up_to_max_num_seqs():
    assert decode_buckets(1) == (1,)
    assert decode_buckets(5) == (1, 2, 4, 8)
    assert decode_buckets(256) == (1, 2, 4, 8, 16, 32, 64, 128, 256)
    assert decode_buckets(6, [8, 1, 4, 4]) == (1, 4, 8)
    assert [bucket_for(n, (1, 2, 4, 8)) for n in (1, 2, 3, 5, 8)] == [1, 2, 4, 8, 8]
    with pytest.raises(ConfigError, match=r"^the largest CUDA graph batch size \(4\) is below "
                       r"max_num_seqs \(6\): a full batch would have no graph$"):
        decode_buckets(6, [1, 4])
    with pytest.raises(ValueError, match="9 rows exceed the largest bucket 8"):
        bucket_for(9, (1, 8))


def test_resolve_attention_per_device():
    assert resolve_attention("auto", "cpu") == "gather"
    assert resolve_attention("auto", "cuda") == "flex"
    assert resolve_attention("flex", "cpu") == "flex"
    assert resolve_attention("varlen", "cuda") == "varlen"
    with pytest.raises(ConfigError, match=r"^--attention varlen needs CUDA \(FlashAttention's "
                       r"paged kernel\); on CPU use gather or flex$"):
        resolve_attention("varlen", "cpu")
    with pytest.raises(ConfigError, match="^unknown attention backend 'paged'; choose from "
                       "auto, gather, flex, varlen$"):
        resolve_attention("paged", "cpu")


def test_decode_rows_pad_to_the_bucket_with_the_pad_block():
    table = np.array([[7, 3, 9], [5, 0, 0]], np.int32)
    rows = DecodeRows(table, np.array([9, 4]), BS, pad_block=40, bucket=4)
    assert rows.seq_lens.tolist() == [9, 4, 1, 1]
    assert rows.num_blocks.tolist() == [3, 1, 1, 1]
    assert rows.last_block.tolist() == [9, 5, 40, 40]
    assert rows.last_len.tolist() == [1, 4, 1, 1]
    assert rows.block_ids.tolist() == [[7, 3, 9], [5, 40, 40], [40, 40, 40], [40, 40, 40]]


def reference_varlen_attn(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, *,
                          window_size=(-1, -1), enable_gqa=False, seqused_k=None,
                          block_table=None, num_splits=None):
    """``varlen_attn`` with ``block_table`` as its docstring defines it (paged K/V
    ``[pages, page_size, Hkv, D]``, ``seqused_k`` valid keys per sequence, causal
    bottom-right for ``window_size=(-1, 0)``), by explicit softmax."""
    assert block_table.dtype == torch.int32 and seqused_k.dtype == torch.int32
    assert cu_seq_q.dtype == torch.int32 and window_size == (-1, 0) and enable_gqa
    assert num_splits == 1 and max_k >= int(seqused_k.max())
    assert max_q >= int((cu_seq_q[1:] - cu_seq_q[:-1]).max())
    out = torch.empty_like(query)
    page = key.shape[1]
    group = query.shape[1] // key.shape[2]
    for i in range(len(seqused_k)):
        q0, q1, used = int(cu_seq_q[i]), int(cu_seq_q[i + 1]), int(seqused_k[i])
        pages = block_table[i, :-(-used // page)].long()
        k = key[pages].flatten(0, 1)[:used].repeat_interleave(group, dim=1)  # [used, H, D]
        v = value[pages].flatten(0, 1)[:used].repeat_interleave(group, dim=1)
        scores = torch.einsum("qhd,khd->hqk", query[q0:q1], k) * query.shape[-1] ** -0.5
        nq = q1 - q0
        causal = torch.arange(used)[None, :] <= torch.arange(used - nq, used)[:, None]
        probs = scores.masked_fill(~causal, float("-inf")).softmax(-1)
        out[q0:q1] = torch.einsum("hqk,khd->qhd", probs, v)
    return out


def varlen_attn_2_11(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, *,
                     return_aux=None, scale=None, window_size=(-1, -1)):
    """The signature of torch 2.11's ``varlen_attn``: no paged KV, no GQA."""
    raise AssertionError("never called")


def test_varlen_needs_a_varlen_attn_with_paged_kv(monkeypatch):
    """torch 2.11's ``varlen_attn`` takes no ``block_table``, ``seqused_k``,
    ``enable_gqa`` or ``num_splits``: the backend is refused in one line when it is
    built (the torch model checks before its weights), not at the first step."""
    import torch.nn.attention.varlen as varlen

    assert varlen_unsupported(reference_varlen_attn) is None
    assert varlen_unsupported(lambda *a, **kw: None) is None  # **kwargs: the call decides
    why = varlen_unsupported(varlen_attn_2_11)
    assert why == (f"--attention varlen needs a varlen_attn with paged KV and GQA; torch "
                   f"{torch.__version__}'s lacks enable_gqa, seqused_k, block_table, "
                   f"num_splits: use flex or gather")
    monkeypatch.setattr(varlen, "varlen_attn", varlen_attn_2_11)
    with pytest.raises(ConfigError, match=r"^--attention varlen needs a varlen_attn with "
                       r"paged KV and GQA; torch .*'s lacks enable_gqa, seqused_k, "
                       r"block_table, num_splits: use flex or gather$"):
        VarlenAttention(torch, "cpu", BS, 8, (1, 2), max_model_len=32)


def fa2_varlen_attn(query, key, *args, **kwargs):
    """PyTorch's FlashAttention-2 paged path as ``flash_api.cpp``'s ``mha_varlen_fwd``
    checks it: KV blocks of a multiple of 256 tokens, else its ``TORCH_CHECK``."""
    if key.shape[1] % 256:
        raise RuntimeError("Paged KV cache block size must be divisible by 256\n"
                           "Exception raised from mha_varlen_fwd at flash_api.cpp:642")
    return reference_varlen_attn(query, key, *args, **kwargs)


def test_varlen_is_probed_with_one_paged_call_at_the_runs_block_size(monkeypatch):
    """One paged call as ``VarlenAttention`` makes it (the reference's asserts check its
    arguments): a kernel that refuses the block size gives one line with its first line;
    the torch model makes the call on its device, block size and dtype before its
    weights (GPU-only path: the device is faked and the probe spied on here)."""
    from ipc_bench.engine import models

    assert varlen_kernel_problem(torch, "cpu", BS, torch.float32, reference_varlen_attn) is None
    why = ("--attention varlen: this torch's kernel refuses a paged KV cache of 16-token "
           "blocks on cpu (Paged KV cache block size must be divisible by 256): use flex "
           "or gather")
    assert varlen_kernel_problem(torch, "cpu", 16, torch.float32, fa2_varlen_attn) == why
    assert varlen_kernel_problem(torch, "cpu", 256, torch.float32, fa2_varlen_attn) is None
    calls = []

    def spy(torch_, device, block_size, dtype):
        calls.append((device, block_size, dtype))
        return why

    monkeypatch.setattr(models, "resolve_device", lambda requested: "cuda")
    monkeypatch.setattr(models, "varlen_unsupported", lambda: None)  # paged KV, whatever torch runs this
    monkeypatch.setattr(models, "varlen_kernel_problem", spy)
    sched = SchedulerConfig(max_num_seqs=4, max_model_len=128, block_size=16, num_blocks=80)
    with pytest.raises(ConfigError) as info:
        models.TorchModel(ModelConfig(name="torch", preset="llama-3.2-1b", device="cuda",
                                      attention="varlen"), sched)
    assert str(info.value) == why
    assert calls == [("cuda", 16, torch.bfloat16)]


def test_flex_on_cuda_refuses_a_block_size_its_kernels_cannot_take(monkeypatch):
    """Inductor's flex kernels take a KV block's keys as the K dimension of their P @ V
    dot, which Triton wants >= 16: on CUDA a block size that is not a multiple of 16 is
    refused in one line when the torch model is built, before its weights (GPU-only
    path: the device is faked here, the refusal comes before any CUDA call)."""
    from ipc_bench.engine import models

    why = ("--attention flex on CUDA needs a --block-size that is a multiple of 16 (its "
           "Triton kernels take a KV block's keys as the inner dimension of a dot product, "
           "at least 16); got 4: use --block-size 16 or --attention gather")
    assert flex_unsupported("cuda", 4) == why
    assert [flex_unsupported("cuda", bs) for bs in (16, 32, 64)] == [None] * 3
    assert flex_unsupported("cuda", 24) is not None
    assert flex_unsupported("cpu", 4) is None  # inductor's CPU kernel takes any size
    monkeypatch.setattr(models, "resolve_device", lambda requested: "cuda")
    sched = SchedulerConfig(max_num_seqs=4, max_model_len=128, block_size=4, num_blocks=80)
    with pytest.raises(ConfigError) as info:
        models.TorchModel(ModelConfig(name="torch", preset="tiny", device="cuda"), sched)
    assert str(info.value) == why


def test_flex_on_cuda_needs_what_triton_builds_its_modules_with(tmp_path):
    """Triton builds C modules at its first CUDA kernel: with no C compiler (as its
    build.py looks: $CC, else gcc or clang) or no Python.h, flex on CUDA is refused in one
    line before the weights, not at the first kernel."""
    headers = tmp_path / "include"
    headers.mkdir()
    (headers / "Python.h").write_text("")
    found = {"gcc": "/usr/bin/gcc", "cc-9": "/opt/cc-9"}.get
    assert triton_toolchain_problem(found, {}, str(headers)) is None
    assert triton_toolchain_problem(found, {"CC": "cc-9 -O2"}, str(headers)) is None
    assert triton_toolchain_problem(lambda name: None, {}, str(headers)) == (
        "--attention flex on CUDA compiles Triton kernels, which need a C compiler (no $CC, "
        "and no gcc or clang on the path): install them (e.g. gcc and python3-dev) or use "
        "--attention gather")
    assert triton_toolchain_problem(found, {"CC": "tcc"}, str(tmp_path)) == (
        f"--attention flex on CUDA compiles Triton kernels, which need a C compiler ($CC "
        f"'tcc' not found) and Python's headers (no Python.h in {tmp_path}): install them "
        f"(e.g. gcc and python3-dev) or use --attention gather")
    assert triton_toolchain_problem() is None  # this machine has both (the CPU flex kernels too)


def test_flex_kernel_options_only_where_inductor_would_refuse_the_block_size():
    """On CUDA a head group that is not a power of two takes inductor's main flex kernel,
    whose default BLOCK_N (64) must divide the KV block size: qwen2.5-0.5b (14 / 2
    heads) at block size 16 gets BLOCK_N 16; the llama presets (32 / 8) and the CPU keep
    the defaults (GPU-only path: scripts/gpu_check.py cannot run it on CPU)."""
    assert flex_kernel_options("cuda", 14, 2, 16) == {"BLOCK_N": 16}
    assert flex_kernel_options("cuda", 14, 2, 32) == {"BLOCK_N": 32}
    assert flex_kernel_options("cuda", 14, 2, 128) is None
    assert flex_kernel_options("cuda", 32, 8, 16) is None
    assert flex_kernel_options("cpu", 14, 2, 16) is None


def _cache_and_rows(seed: int, lens):
    gen = torch.Generator().manual_seed(seed)
    k_cache = torch.randn(NUM_BLOCKS + 1, BS, KH, HD, generator=gen)
    v_cache = torch.randn(NUM_BLOCKS + 1, BS, KH, HD, generator=gen)
    rng = np.random.default_rng(seed)
    blocks = rng.permutation(NUM_BLOCKS).astype(np.int32)  # scattered, never the pad block
    width = -(-max(lens) // BS)
    table = blocks[:len(lens) * width].reshape(len(lens), width)
    q = torch.randn(len(lens), H, HD, generator=gen)
    return k_cache, v_cache, table, np.array(lens), q


def _padded(q, bucket):
    return torch.cat((q, q.new_zeros(bucket - len(q), *q.shape[1:])))


# lengths on both sides of block boundaries, 1 token, a full block, several blocks
LENS = [1, BS, BS + 1, 2 * BS, 3 * BS - 1, 17]


@pytest.mark.parametrize("make", [
    lambda buckets: FlexAttention(torch, "cpu", BS, NUM_BLOCKS + 1, 8, buckets),
    lambda buckets: VarlenAttention(torch, "cpu", BS, 8, buckets, max_model_len=32,
                                    varlen_attn=reference_varlen_attn),
], ids=["flex", "varlen"])
def test_in_place_backends_equal_the_gathered_copy(make):
    """Rows padded to their bucket ([5] to 2, 3 rows to 4) and rows that fill it
    (2 rows in 2, 4 in 4) equal the gathered copy, every length of ``LENS`` among them.
    Buckets 2 and 4: flex compiles once per bucket, and a bucket of 1 would be one more
    compile of the same kernel; the single row is padded here, and the multi-query test
    below runs a bucket of 1. (Their flex kernels are the flex model's, ``SCHED``.)"""
    backend = make((2, 4))
    gather = GatherAttention(torch, BS)
    put = lambda name, a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    for seed, lens in enumerate([LENS[:3], [5], LENS[3:5], [2, 30], LENS[2:]]):
        k_cache, v_cache, table, lens, q = _cache_and_rows(seed, lens)
        bucket = backend.bucket(len(lens))
        ref = gather(q, k_cache, v_cache, gather.plan(
            DecodeRows(table, lens, BS, NUM_BLOCKS, len(lens)), put))
        rows = DecodeRows(table, lens, BS, NUM_BLOCKS, bucket)
        out = backend(_padded(q, bucket), k_cache, v_cache, backend.plan(rows, put))
        assert out.shape == (bucket, H * HD)
        torch.testing.assert_close(out[:len(lens)], ref, rtol=1e-5, atol=1e-5)


# multi-query rows (verification rows of 1 + K tokens, decode rows, a 2-token row),
# their contexts on both sides of block boundaries
MQ_LENS = [1, BS, BS + 1, 2 * BS, 3 * BS - 1, 17, 3, 9]
MQ_QUERIES = [1, 3, 3, 1, 2, 3, 3, 3]


@pytest.mark.parametrize("make", [
    lambda buckets: GatherAttention(torch, BS),
    lambda buckets: FlexAttention(torch, "cpu", BS, NUM_BLOCKS + 1, 8, buckets),
    lambda buckets: VarlenAttention(torch, "cpu", BS, 8, buckets, max_model_len=32,
                                    varlen_attn=reference_varlen_attn),
], ids=["gather", "flex", "varlen"])
def test_multi_query_rows_in_one_call_equal_a_causal_softmax_per_row(make):
    """Verification rows batched: query ``j`` of a row of ``q`` queries and ``seq_len``
    keys sees keys ``<= seq_len - q + j`` (an explicit softmax, row by row), whatever
    the padding of rows to a bucket and of queries to ``Q``; ``MQ_LENS`` in two
    batches of 4 rows, and again with rows of at most 2 queries padded to 3. Buckets
    and query width (3) of the flex model with drafts (``SPEC_SCHED``: 4 the largest),
    whose compiled flex kernels of 1, 2 and 4 rows of 3 queries are then this test's
    too (and ``test_flex_multi_query_mask_is_causal_and_reads_block_positions``'s): a
    flex kernel is compiled per bucket and ``Q`` (about 5 s of CPU each), so each case
    here keeps to those."""
    backend = make((1, 2, 4))
    put = lambda name, a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    for seed, (lens, qlens, nq) in enumerate([
            (MQ_LENS[:4], MQ_QUERIES[:4], 3), (MQ_LENS[4:], MQ_QUERIES[4:], 3),
            (MQ_LENS[:3], [1, 2, 2], 3), ([5], [3], 3), (MQ_LENS[:4], [1, 2, 2, 1], 3),
            (MQ_LENS[4:], [2, 1, 2, 2], 3), ([2, 30, 7], [2, 3, 1], 3)]):
        k_cache, v_cache, table, lens, _ = _cache_and_rows(seed, lens)
        qlens = np.array(qlens)
        q = torch.randn(int(qlens.sum()), H, HD, generator=torch.Generator().manual_seed(seed))
        cu_q = torch.from_numpy(np.concatenate(([0], np.cumsum(qlens))).astype(np.int32))
        want = reference_varlen_attn(
            q, k_cache, v_cache, cu_q, None, nq, 64, window_size=(-1, 0), enable_gqa=True,
            seqused_k=torch.from_numpy(lens.astype(np.int32)),
            block_table=torch.from_numpy(table), num_splits=1).reshape(len(q), -1)
        bucket = backend.bucket(len(lens))
        rows = DecodeRows(table, lens, BS, NUM_BLOCKS, bucket, qlens, nq)
        assert rows.query_lens.tolist() == qlens.tolist() + [1] * (bucket - len(lens))
        padded = torch.cat((q, q.new_zeros(bucket - len(lens), H, HD)))
        out = backend(padded, k_cache, v_cache, backend.plan(rows, put))
        assert out.shape == (len(padded), H * HD)
        torch.testing.assert_close(out[:len(q)], want, rtol=1e-5, atol=1e-5)


def test_flex_multi_query_mask_is_causal_and_reads_block_positions():
    """Negative controls: every query seeing its row's later keys, or the partial
    blocks' positions all read as 0, changes the result: in each batch of 4 rows of
    ``MQ_LENS``."""
    backend = FlexAttention(torch, "cpu", BS, NUM_BLOCKS + 1, 8, (4,))
    put = lambda name, a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    for half in (slice(0, 4), slice(4, 8)):
        k_cache, v_cache, table, lens, _ = _cache_and_rows(0, MQ_LENS[half])
        qlens = np.array(MQ_QUERIES[half])
        q = torch.randn(int(qlens.sum()), H, HD, generator=torch.Generator().manual_seed(0))
        rows = DecodeRows(table, lens, BS, NUM_BLOCKS, 4, qlens, 3)
        good = backend(q, k_cache, v_cache, backend.plan(rows, put)).clone()
        for spoil in (lambda: backend._first_q.add_(2), lambda: backend._block_pos.zero_()):
            plan = backend.plan(rows, put)
            spoil()
            assert float((backend(q, k_cache, v_cache, plan) - good).abs().max()) > 1e-2, half


def test_decode_rows_index_multi_query_rows_into_the_padded_layout():
    rows = DecodeRows(np.array([[7, 3], [5, 0]], np.int32), np.array([6, 2]), BS,
                      pad_block=40, bucket=4, query_lens=np.array([3, 1]), max_query_len=3)
    assert rows.query_lens.tolist() == [3, 1, 1, 1]
    assert rows.query_start.tolist() == [0, 3, 4, 5, 6]
    assert rows.padded_index.tolist() == [0, 1, 2, 3, 6, 9]
    with pytest.raises(ValueError, match=r"query lengths must be in \[1, min\(seq_len, 3\)\]"):
        DecodeRows(np.array([[7]], np.int32), np.array([2]), BS, 40, 1, np.array([3]), 3)


def test_flex_reads_the_block_table():
    """Negative control: one block id of a row swapped gives a different result."""
    backend = FlexAttention(torch, "cpu", BS, NUM_BLOCKS + 1, 8, (4,))
    put = lambda name, a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    k_cache, v_cache, table, lens, q = _cache_and_rows(0, LENS[2:])
    good = backend(q, k_cache, v_cache,
                   backend.plan(DecodeRows(table, lens, BS, NUM_BLOCKS, 4), put)).clone()
    table[3, 1] = table[0, 0]
    bad = backend(q, k_cache, v_cache,
                  backend.plan(DecodeRows(table, lens, BS, NUM_BLOCKS, 4), put))
    torch.testing.assert_close(bad[:3], good[:3])
    assert float((bad[3] - good[3]).abs().max()) > 1e-2


SCHED = SchedulerConfig(max_num_seqs=4, max_model_len=128, block_size=4, num_blocks=80)


def _model(attention: str) -> TorchModel:
    return TorchModel(ModelConfig(name="torch", preset="tiny", vocab_size=5000, seed=3,
                                  device="cpu", attention=attention), SCHED)


def _decode_steps(rng, num_steps: int):
    """Decode steps of 1..4 rows over 4 sequences with scattered blocks: (rows,
    input ids, positions, seq_lens) per step, prefixes written by earlier steps."""
    table = rng.permutation(80).astype(np.int32)[:32].reshape(4, 8)
    done = [0, 0, 0, 0]
    steps = []
    for _ in range(num_steps):
        rows = sorted(rng.choice(4, size=int(rng.integers(1, 5)), replace=False).tolist())
        ids = rng.integers(0, 5000, len(rows))
        pos = np.array([done[r] for r in rows])
        for r in rows:
            done[r] += 1
        steps.append((rows, ids, pos, pos + 1))
    return table, steps


def test_flex_model_equals_the_full_sequence_forward():
    from tests.engine.test_models import _STEPS, _paged_vs_reference

    model = _model("flex")
    assert model.device == "cpu (attention flex)"
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 5000, 40).tolist(), rng.integers(0, 5000, 23).tolist()]
    blocks = rng.permutation(80)
    table = np.zeros((2, 32), np.int32)
    table[0, :10], table[1, :6] = blocks[:10], blocks[10:16]
    assert _paged_vs_reference(model, table, seqs, _STEPS) < 1e-4


@pytest.mark.parametrize("num_spec_tokens,graphs,warmed", [
    (0, False, [False]), (0, True, []), (2, False, [False]), (2, True, [True])])
def test_graphs_with_drafts_warm_up_the_verification_width_before_the_first_step(
        monkeypatch, num_spec_tokens, graphs, warmed):
    # graphs capture the one-query width; verification rows (1 + K queries) run
    # eagerly, so without this warm-up flex compiled them in the first measured step
    model = _model("gather")
    monkeypatch.setattr(model, "attention", type("A", (), {"graphable": True})())
    monkeypatch.setattr(model, "decode_threshold", 1 + num_spec_tokens)
    calls = []
    monkeypatch.setattr(model, "warm_up", lambda multi_query_only: calls.append(multi_query_only))
    monkeypatch.setattr(model, "enable_graphs", lambda capture: setattr(model, "graphs", capture))
    model.prepare_attention(object() if graphs else None)
    assert calls == warmed


def test_the_multi_query_warm_up_runs_only_the_verification_width(monkeypatch):
    class Recorder:  # the attention calls warm_up makes: (bucket, queries per row)
        buckets = (1, 2, 4)
        calls: list = []

        def plan(self, rows, put):
            return rows.max_query_len

        def __call__(self, q, k_cache, v_cache, plan):
            self.calls.append((q.shape[0], plan))

    model = _model("gather")
    monkeypatch.setattr(model, "attention", Recorder())
    monkeypatch.setattr(model, "decode_threshold", 3)
    model.warm_up(multi_query_only=True)
    assert Recorder.calls == [(1, 3), (2, 3), (4, 3)]
    Recorder.calls.clear()
    model.warm_up()
    assert Recorder.calls == [(1, 1), (1, 3), (2, 1), (2, 3), (4, 1), (4, 3)]


def test_decode_graphs_give_the_eager_tokens_and_leave_requests_blocks_alone():
    """Graph replays (strict_capture: the replayed work over the persistent buffers,
    with what a CUDA graph capture forbids refused) against the gather model without
    padding: equal tokens every step, and equal KV caches outside the pad block; every
    bucket captured once, up front."""
    graphed, eager = _model("flex"), _model("gather")
    graphed.enable_graphs(strict_capture(torch))
    assert graphed.graphs.captured == [1, 2, 4]
    table, steps = _decode_steps(np.random.default_rng(1), 24)
    for rows, ids, pos, lens in steps:
        want = eager.forward_logits(ids, pos, np.arange(len(rows) + 1), lens,
                                    table[rows]).argmax(-1)
        got = graphed.graphs.run(ids, pos, lens, table[rows]).clone()  # a graph's output
        assert got.tolist() == want.tolist()
    assert sum(graphed.graphs.replays.values()) == 24
    assert set(graphed.graphs.replays) >= {1, 4}
    assert graphed.graphs.captured == [1, 2, 4]  # nothing captured after start-up
    torch.testing.assert_close(graphed.kv_cache[:, :, :80], eager.kv_cache[:, :, :80],
                               rtol=1e-5, atol=1e-5)
    assert float(graphed.kv_cache[:, :, 80].abs().sum()) > 0  # pad rows wrote there


def test_graphs_need_a_static_backend_and_cuda():
    with pytest.raises(ConfigError, match=r"^CUDA graphs need attention flex or varlen; "
                       r"this model's is gather$"):
        _model("gather").enable_graphs(eager_capture)
    with pytest.raises(ConfigError, match=r"^--cuda-graphs needs CUDA; this runner's "
                       r"device is cpu$"):
        TorchModel(ModelConfig(name="torch", preset="tiny", device="cpu", attention="flex",
                               cuda_graphs=True), SCHED)




def test_start_up_check_fails_a_backend_that_reads_the_wrong_block(monkeypatch):
    model = _model("flex")
    assert model.check_attention(SCHED) < 1e-5
    assert float(model.kv_cache.abs().sum()) == 0  # the check's K/V are zeroed again
    real_plan = model.attention.plan

    def off_by_one(rows, put):  # every request's blocks shifted by one id
        n = rows.num_rows
        rows.block_ids[:n] += 1
        rows.last_block[:n] += 1
        return real_plan(rows, put)

    monkeypatch.setattr(model.attention, "plan", off_by_one)
    with pytest.raises(ConfigError, match=r"^attention flex differs from gather by [0-9.e+-]+ "
                       r"\(> 0.0001\) on cpu at start-up: use --attention gather$"):
        model.check_attention(SCHED)


@pytest.mark.parametrize("fields, option", [
    (dict(attention="flex"), "--attention flex"), (dict(cuda_graphs=True), "--cuda-graphs"),
    (dict(cuda_graph_sizes=(1, 2)), "--cuda-graph-sizes")])
def test_attention_options_apply_to_the_torch_model_only(fields, option):
    with pytest.raises(ConfigError, match=f"^{option} applies to the torch model only, "
                       "not fixed-step$"):
        ModelConfig(name="fixed-step", **fields).validate()


def test_start_up_check_fits_the_largest_bucket():
    """A runner of max_num_seqs 2 checks two rows, not three (its largest bucket is 2)."""
    sched = SchedulerConfig(max_num_seqs=2, max_model_len=128, block_size=4, num_blocks=80)
    model = TorchModel(ModelConfig(name="torch", preset="tiny", device="cpu",
                                   attention="flex"), sched)
    assert model.attention.buckets == (1, 2)
    assert model.check_attention(sched) < 1e-5


SPEC_SCHED = SchedulerConfig(max_num_seqs=4, max_model_len=128, block_size=4, num_blocks=80,
                             num_spec_tokens=2, num_lookahead_tokens=2)
# Tokens per sequence per step with K = 2 (rows of at most 3 tokens are batched): a
# 4-token prefill chunk and 1-token rows first, then verification rows (3 and 2
# tokens) next to a plain decode and a prefill chunk, an all-verification step, and a
# step of 2- and 3-token rows only.
SPEC_STEPS = [(7, 1, 5, 4), (3, 1, 6, 2), (3, 3, 1, 3), (1, 3, 9, 2), (3, 3, 3, 3),
              (2, 3, 3, 2)]


def _spec_model(attention: str, threshold=None) -> TorchModel:
    model = TorchModel(ModelConfig(name="torch", preset="tiny", vocab_size=512, seed=3,
                                   device="cpu",
                                   attention="gather" if attention == "varlen" else attention),
                       SPEC_SCHED)
    if attention == "varlen":  # no CPU kernel: its documented semantics
        model.attention = VarlenAttention(torch, "cpu", 4, SPEC_SCHED.max_blocks_per_req,
                                          decode_buckets(4), 128,
                                          varlen_attn=reference_varlen_attn)
    if threshold is not None:
        model.decode_threshold = threshold
    return model


def _run_spec_steps(model: TorchModel, table: np.ndarray, seqs, steps):
    """``steps`` through ``forward_logits``: even steps with ``logits_indices`` at every
    scheduled token (as a verification step's), odd ones at each row's last token.
    Returns per step the logits and each one's (sequence, position)."""
    done = [0] * len(seqs)
    out = []
    for s, ns in enumerate(steps):
        rows = [i for i, n in enumerate(ns) if n]
        ids, pos, qsl, lens, where = [], [], [0], [], []
        for i in rows:
            ids += seqs[i][done[i]:done[i] + ns[i]]
            pos += range(done[i], done[i] + ns[i])
            where += [(i, p) for p in range(done[i], done[i] + ns[i])]
            done[i] += ns[i]
            qsl.append(qsl[-1] + ns[i])
            lens.append(done[i])
        indices = np.arange(len(ids)) if s % 2 == 0 else None
        if indices is None:
            where = [where[e - 1] for e in qsl[1:]]
        logits = model.forward_logits(np.array(ids), np.array(pos), np.array(qsl),
                                      np.array(lens), table[rows], logits_indices=indices)
        out.append((logits, where))
    return out


@pytest.mark.parametrize("attention", ["gather", "flex", "varlen"])
def test_batched_verification_rows_equal_one_by_one_and_the_reference(attention,
                                                                      monkeypatch):
    """Verification rows (1 + K tokens) in one attention call per layer give the logits
    (float32, to 1e-5) and greedy ids of the same rows sent one by one through the
    prefill path, and of the full-sequence reference forward, in steps that mix them
    with plain decode rows and prefill chunks; the batched path is the one taken."""
    rng = np.random.default_rng(4)
    seqs = [rng.integers(0, 512, n).tolist() for n in (19, 14, 27, 16)]
    blocks = rng.permutation(80)
    table = np.zeros((4, 32), np.int32)
    table[:, :8] = blocks[:32].reshape(4, 8)
    batched, serial = _spec_model(attention), _spec_model(attention, threshold=1)
    assert batched.decode_threshold == 3
    calls = []
    real = batched.attention.plan
    monkeypatch.setattr(batched.attention, "plan",
                        lambda rows, put, *a: calls.append(rows.max_query_len)
                        or real(rows, put, *a))
    got = _run_spec_steps(batched, table, seqs, SPEC_STEPS)
    want = _run_spec_steps(serial, table, seqs, SPEC_STEPS)
    assert calls == [1, 3, 3, 3, 3, 3]  # step 0: 1-token rows only
    refs = [batched.reference_logits(s) for s in seqs]
    for (logits, where), (logits_1, where_1) in zip(got, want):
        assert where == where_1
        torch.testing.assert_close(logits, logits_1, rtol=1e-5, atol=1e-5)
        ref = torch.stack([refs[i][p] for i, p in where])
        torch.testing.assert_close(logits, ref, rtol=1e-4, atol=1e-4)
        assert logits.argmax(-1).tolist() == logits_1.argmax(-1).tolist()
        assert logits.argmax(-1).tolist() == ref.argmax(-1).tolist()
    torch.testing.assert_close(batched.kv_cache, serial.kv_cache, rtol=1e-5, atol=1e-5)


def test_torch_flex_token_streams_with_drafts_equal_those_without():
    """Speculative decoding (test_spec_decode.py's engine pair) with ``--attention
    flex``: the verification rows run as multi-query rows of the compiled flex kernel
    (one call per layer); the tokens equal flex's own K = 0 run. 4 sequences in a cache
    of 80 blocks of 4: the attention shapes of the flex models above (``SCHED``,
    ``SPEC_SCHED``: buckets 1, 2, 4; query widths 1 and 3). Here, in their process,
    their compiled kernels serve it (0.2 s; in test_spec_decode.py, a file another
    worker may take, it traced and compiled them again: 5 to 30 s of CPU)."""
    from tests.engine.test_spec_decode import add_torch, drain, torch_pair

    streams = {}
    for k in (0, 2):
        sched, runner = torch_pair(k, "cached", attention="flex", max_num_seqs=4,
                                   num_blocks=80)
        assert runner.model.decode_threshold == 1 + k
        add_torch(sched)
        streams[k], steps = drain(sched, runner)
    assert streams[2] == streams[0]
    assert any(len(so.scheduled_spec_decode_tokens) > 1 for _, so, _ in steps)


def test_device_path_through_decode_graphs_equals_the_host_path():
    """Pure-decode steps replayed through ``DecodeGraphs`` (``strict_capture`` on CPU:
    the same work over the same persistent buffers, each replay overwriting the captured
    output as a CUDA graph's does): the placeholders are filled in the
    graphs' own input buffer, after the staged ids are copied in. (test_device_inputs.py's
    ``DeviceDrive``; here, in the process of the flex models above, whose kernels its
    graphs replay: under half a second, where in that file, which another worker may
    take, it traced and compiled them again: 5 to 35 s of CPU.)"""
    from ipc_bench.harness.recording import token_digest
    from tests.engine.test_device_inputs import DeviceDrive

    dev, host = DeviceDrive(True, graphs=True), DeviceDrive(False, graphs=True)
    assert sum(dev.runner.model.graphs.replays.values()) > 10
    assert dev.runner.device_ids.num_filled > 20
    assert token_digest(dev.sched.requests.values()) == token_digest(
        host.sched.requests.values())
    for fed, exp in zip(dev.fed, dev.expected):
        assert fed.tolist() == exp.tolist()
