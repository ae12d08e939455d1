"""Decode attention over the torch model's paged KV cache, and the batch-size buckets
its CUDA graphs are captured for.

The KV cache of one layer is ``[num_blocks + 1, block_size, K, hd]`` (``K`` KV heads of
``hd`` dims); token ``p`` of the request in batch row ``r`` lives in block
``block_table[r, p // block_size]`` at offset ``p % block_size``, as in vLLM's paged
attention. The extra last block (``pad_block``) belongs to no request: rows that only
pad a batch to its bucket write their K/V there and attend to it alone, so padding
never touches a request's blocks.

Decode rows (one query token each) attend through one of three backends
(``--attention``):

- ``gather``: each row's blocks, up to the longest context of the step, are copied
  into a new ``[rows, K, max_len, hd]`` tensor (``k_cache[block_table]``) and
  ``scaled_dot_product_attention`` runs over it with a length mask. The reference: the
  same code as before the other backends existed. Its shapes change every step, so it
  cannot be captured in a CUDA graph.
- ``flex``: ``torch.nn.attention.flex_attention`` (compiled) over the cache in place,
  viewed as one sequence of ``(num_blocks + 1) x block_size`` keys, with a
  ``BlockMask`` whose KV block is the cache block: per row, its full blocks are listed
  as full (no mask) and its last block as partial, masked to the tokens it holds. The
  kernel reads only listed blocks, so nothing is gathered. The mask function is exact
  on the partial block only: block sparsity does the rest, which eager
  ``flex_attention`` (a dense reference) does not honour, so this backend always runs
  compiled. Batches are padded to a bucket (``decode_buckets``) so that the compiled
  kernels see a bounded set of shapes (one compile per bucket).
- ``varlen``: ``torch.nn.attention.varlen.varlen_attn`` with ``block_table`` and
  ``seqused_k`` (FlashAttention-2's paged KV), ``num_splits=1`` (batch-invariant: a
  row's result does not depend on the other rows). CUDA only: PyTorch has no CPU kernel
  for it. It needs a ``varlen_attn`` with paged KV (torch 2.13; torch 2.11's takes
  none of those arguments): ``varlen_unsupported`` checks the signature and the
  torch model refuses the backend (``ConfigError``) before it builds its weights.

Multi-query rows (speculative decoding's verification rows: the last token and its
``K`` drafts, ``1 + K`` query tokens) go through the same batched call, as vLLM's
attention backends take them: its metadata builders count a row of at most
``reorder_batch_threshold = 1 + num_speculative_tokens`` query tokens as a decode
(``split_decodes_and_prefills(..., decode_threshold)`` in
``vllm/v1/attention/backends/utils.py``) and FlashAttention's varlen kernel runs them
with ``max_query_len = 1 + K``. Query ``j`` of a row of ``q`` query tokens and
``seq_len`` cached tokens (its own K/V already written) sees the keys at positions
``<= seq_len - q + j``, causal bottom-right. Per backend: ``gather`` pads each row's
queries to ``Q`` (``DecodeRows.max_query_len``) and masks its gathered copy
(``[rows, 1, Q, nb * block_size]``); ``flex`` runs ``Q`` queries per batch row, its
``BlockMask`` listing as full the blocks every query sees and as partial the rest,
masked by position (``FlexAttention``); ``varlen`` takes ``cu_seqlens_q`` of the rows'
own query lengths, no padding of queries. Rows with more query tokens (prefill chunks)
go through the gathered copy with every backend (causal mask, one request at a time):
they run once per request and are compute-bound.

All tensors are on the model's device; host arrays are numpy. Shapes: ``nd`` decode
rows, ``Bp`` the bucket they are padded to (``nd`` for ``gather``), ``H`` query heads;
with multi-query rows, ``T`` their query tokens and ``Tp = T + Bp - nd`` (a pad row
has one query token).
"""

from __future__ import annotations

import math
import os
import shutil
import sysconfig
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ipc_bench.engine.config import ATTENTION_BACKENDS, ConfigError
#: Backends whose decode step has static shapes, so it can be captured in a CUDA graph.
GRAPH_BACKENDS = ("flex", "varlen")


def resolve_attention(requested: str, device: str) -> str:
    """The backend ``requested`` resolves to on ``device`` (``"cpu"`` or ``"cuda"``):
    ``auto`` is ``flex`` on CUDA and ``gather`` on CPU (where flex's one compile per
    bucket costs seconds and the gather is cheap). Raises ``ConfigError`` for an
    unknown name or ``varlen`` on CPU."""
    if requested not in ATTENTION_BACKENDS:
        raise ConfigError(f"unknown attention backend {requested!r}; "
                          f"choose from {', '.join(ATTENTION_BACKENDS)}")
    if requested == "auto":
        return "flex" if device == "cuda" else "gather"
    if requested == "varlen" and device != "cuda":
        raise ConfigError("--attention varlen needs CUDA (FlashAttention's paged kernel); "
                          "on CPU use gather or flex")
    return requested


def decode_buckets(max_num_seqs: int, sizes: Optional[Sequence[int]] = None) -> tuple[int, ...]:
    """Batch sizes decode steps are padded to: ``sizes`` (sorted, deduplicated) or by
    default the powers of two from 1 up to the first one ``>= max_num_seqs``, so any
    batch the scheduler can form has a bucket. vLLM pads to its
    ``cudagraph_capture_sizes`` (1, 2, 4, then multiples of 8) the same way; powers of
    two keep the number of captures (and compiles) small at up to 2x padding.
    Raises ``ConfigError`` if ``sizes`` is empty, has a size below 1, or its largest
    size is below ``max_num_seqs``."""
    if sizes is not None:
        out = tuple(sorted(set(int(s) for s in sizes)))
        if not out or out[0] < 1:
            raise ConfigError("CUDA graph batch sizes must be at least 1")
        if out[-1] < max_num_seqs:
            raise ConfigError(f"the largest CUDA graph batch size ({out[-1]}) is below "
                              f"max_num_seqs ({max_num_seqs}): a full batch would have no graph")
        return out
    out = [1]
    while out[-1] < max_num_seqs:
        out.append(out[-1] * 2)
    return tuple(out)


def bucket_for(num_rows: int, buckets: Sequence[int]) -> int:
    """The smallest bucket ``>= num_rows``; ``ValueError`` if none is."""
    for size in buckets:
        if size >= num_rows:
            return size
    raise ValueError(f"{num_rows} rows exceed the largest bucket {buckets[-1]}")


class DecodeRows:
    """Host view of one step's decode rows, padded to ``bucket`` rows.

    ``block_table``: ``[nd, >= max blocks]`` int block ids; ``seq_lens``: ``[nd]`` tokens
    in each row's cache after the step (>= 1). ``query_lens``: ``[nd]`` query tokens of
    each row (default all 1; ``1 + drafts`` for a verification row), at most
    ``max_query_len`` (``Q``: the width ``gather`` and ``flex`` pad each row's queries
    to; 1 for a step of single-token rows). Pad rows (``nd <= i < bucket``) hold one
    token in ``pad_block`` and have one query token. Arrays, all ``[bucket]`` int32
    unless noted: ``seq_lens``, ``query_lens``, ``num_blocks`` (blocks each row holds),
    ``last_block`` (the id of its last block), ``last_len`` (tokens in that block,
    1..block_size), ``block_ids`` ``[bucket, max_blocks]`` (row ``i``'s blocks in order,
    pad rows ``[pad_block]``), ``max_blocks`` the most blocks of any row,
    ``query_start`` ``[bucket + 1]`` (offsets of each row's queries in the flat
    ``[Tp]`` queries) and ``padded_index`` int64 ``[Tp]`` (query ``j`` of row ``i`` at
    ``i * Q + j`` in the padded ``[bucket * Q]`` layout).
    """

    def __init__(self, block_table: np.ndarray, seq_lens: np.ndarray, block_size: int,
                 pad_block: int, bucket: int, query_lens: Optional[np.ndarray] = None,
                 max_query_len: int = 1):
        nd = len(seq_lens)
        if bucket < nd:
            raise ValueError(f"bucket {bucket} is smaller than the {nd} decode rows")
        self.num_rows = nd
        self.bucket = bucket
        qlens = np.ones(bucket, dtype=np.int32)
        if query_lens is not None:
            qlens[:nd] = query_lens
        if nd and (int(qlens.max()) > max_query_len
                   or (qlens[:nd] > np.asarray(seq_lens)).any() or int(qlens.min()) < 1):
            raise ValueError(f"query lengths must be in [1, min(seq_len, {max_query_len})]")
        self.query_lens = qlens
        self.max_query_len = max_query_len
        self.query_start = np.concatenate(([0], np.cumsum(qlens))).astype(np.int32)
        self.padded_index = (np.repeat(np.arange(bucket, dtype=np.int64) * max_query_len
                                       - self.query_start[:-1], qlens)
                             + np.arange(int(self.query_start[-1]), dtype=np.int64))
        lens = np.ones(bucket, dtype=np.int32)
        lens[:nd] = seq_lens
        nblocks = (lens + block_size - 1) // block_size
        self.max_blocks = int(nblocks.max()) if bucket else 0
        ids = np.full((bucket, max(self.max_blocks, 1)), pad_block, dtype=np.int32)
        if nd:
            ids[:nd] = block_table[:nd, :ids.shape[1]]
            # a shorter row's columns past its blocks are never read; keep them valid ids
            ids[:nd][np.arange(ids.shape[1])[None, :] >= nblocks[:nd, None]] = pad_block
        self.seq_lens = lens
        self.num_blocks = nblocks.astype(np.int32)
        self.block_ids = ids
        self.last_block = ids[np.arange(bucket), nblocks - 1].astype(np.int32)
        self.last_len = ((lens - 1) % block_size + 1).astype(np.int32)


class GatherAttention:
    """The ``gather`` backend (see the module docstring); no padding, no graphs."""

    name = "gather"
    graphable = False

    def __init__(self, torch, block_size: int):
        self.torch = torch
        self.block_size = block_size

    def bucket(self, num_rows: int) -> int:
        """Rows the decode attention runs over: ``num_rows`` (no padding)."""
        return num_rows

    def host_inputs(self, rows: DecodeRows) -> dict[str, np.ndarray]:
        """The host half of ``plan`` (numpy only): its arrays by staging name."""
        nd, nb, nq = rows.num_rows, rows.max_blocks, rows.max_query_len
        out = {"decode_block_table": rows.block_ids[:nd, :nb].astype(np.int64)}
        keys = np.arange(nb * self.block_size)[None, None, :]
        lens = rows.seq_lens[:nd, None, None]
        if nq == 1:
            out["decode_mask"] = keys < lens
            return out
        last = lens - rows.query_lens[:nd, None, None] + np.arange(nq)[None, :, None]
        out["decode_mask"] = (keys < lens) & (keys <= last)
        out["decode_padded_index"] = rows.padded_index
        return out

    def plan(self, rows: DecodeRows, to_device: Callable[[str, np.ndarray], Any],
             inputs: Optional[dict] = None):
        """Per-step tensors ``(block ids, mask, index)``: the block ids ``[nd, nb]``
        (int64) and the mask ``[nd, 1, Q, nb * block_size]`` (bool) over the gathered
        copy: key ``p`` is seen by query ``j`` of row ``i`` when ``p < seq_len[i]`` and
        ``p <= seq_len[i] - query_len[i] + j`` (for ``Q == 1`` the length mask alone);
        ``index``: ``None`` for ``Q == 1``, else ``padded_index`` (int64 ``[T]``).
        ``inputs``: ``host_inputs(rows)``, computed before (else here)."""
        a = self.host_inputs(rows) if inputs is None else inputs
        bt = to_device("decode_block_table", a["decode_block_table"])
        mask = to_device("decode_mask", a["decode_mask"])[:, None]
        if rows.max_query_len == 1:
            return bt, mask, None
        return bt, mask, to_device("decode_padded_index", a["decode_padded_index"])

    def __call__(self, q, k_cache, v_cache, plan):
        """``q``: ``[nd, H, hd]`` (``[T, H, hd]``, each row's queries in turn, for
        ``Q > 1``); returns ``[nd, H * hd]`` (``[T, H * hd]``)."""
        bt, mask, index = plan
        kb = k_cache[bt].flatten(1, 2).transpose(1, 2)  # [nd, K, nb * bs, hd]
        vb = v_cache[bt].flatten(1, 2).transpose(1, 2)
        if index is None:
            out = self.torch.nn.functional.scaled_dot_product_attention(
                q.unsqueeze(2), kb, vb, attn_mask=mask, enable_gqa=True)  # [nd, H, 1, hd]
            return out.reshape(q.shape[0], -1)
        nd, nq = bt.shape[0], mask.shape[2]
        qp = q.new_zeros(nd * nq, *q.shape[1:])
        qp[index] = q
        qp = qp.view(nd, nq, *q.shape[1:]).transpose(1, 2)  # [nd, H, Q, hd]
        out = self.torch.nn.functional.scaled_dot_product_attention(
            qp, kb, vb, attn_mask=mask, enable_gqa=True)  # [nd, H, Q, hd]
        return out.transpose(1, 2).reshape(nd * nq, -1)[index]


class _StaticRows:
    """Persistent device buffers a padded decode plan reads, ``[max_bucket, ...]``;
    each bucket's plan views their first ``Bp`` rows, so a plan built once (and a CUDA
    graph captured over it) sees every later step's values."""

    def __init__(self, torch, device, max_bucket: int, max_blocks: int):
        i32 = dict(dtype=torch.int32, device=device)
        self.seq_lens = torch.ones(max_bucket, **i32)
        self.num_blocks = torch.ones(max_bucket, **i32)
        self.last_block = torch.zeros(max_bucket, **i32)
        self.last_len = torch.ones(max_bucket, **i32)
        self.block_ids = torch.zeros(max_bucket, max_blocks, **i32)

    @staticmethod
    def host_inputs(rows: DecodeRows) -> dict[str, np.ndarray]:
        """The arrays ``fill`` copies, by staging name (views of ``rows``')."""
        return {"rows/seq_lens": rows.seq_lens, "rows/num_blocks": rows.num_blocks,
                "rows/last_block": rows.last_block, "rows/last_len": rows.last_len,
                "rows/block_ids": rows.block_ids[:, :rows.max_blocks]}

    def fill(self, rows: DecodeRows, to_device, inputs: Optional[dict] = None) -> None:
        """Copy ``rows`` into the first ``rows.bucket`` rows (columns past
        ``rows.max_blocks`` keep stale ids, never read: each row's block count bounds
        what a kernel reads). ``inputs``: ``host_inputs(rows)`` (or a superset),
        computed before (else here)."""
        a = self.host_inputs(rows) if inputs is None else inputs
        b, nb = rows.bucket, rows.max_blocks
        for name, buf in (("rows/seq_lens", self.seq_lens[:b]),
                          ("rows/num_blocks", self.num_blocks[:b]),
                          ("rows/last_block", self.last_block[:b]),
                          ("rows/last_len", self.last_len[:b]),
                          ("rows/block_ids", self.block_ids[:b, :nb])):
            buf.copy_(to_device(name, a[name]), non_blocking=True)


def flex_kernel_options(device_type: str, num_heads: int, num_kv_heads: int,
                        block_size: int) -> Optional[dict]:
    """``kernel_options`` for the compiled ``flex_attention`` of the ``flex`` backend,
    ``None`` where the defaults serve. On CUDA, inductor runs decode rows through its
    flex-decoding kernel only when the query heads per KV head are a power of two;
    otherwise its main kernel, whose default ``BLOCK_N`` (64 for bf16 at head_dim <= 256,
    torch 2.11 and 2.13) must divide the mask's KV block size (the cache's
    ``block_size``), else compiling raises ``ValueError: Q and KV block size must be
    divisible by BLOCK_M and BLOCK_N`` (qwen2.5-0.5b: 14 / 2 = 7 heads per KV head,
    block size 16). There ``BLOCK_N`` is the largest power of two up to 64 dividing
    ``block_size`` (the decoding kernel clamps its own ``BLOCK_N`` to the block size the
    same way). Not checked on a GPU yet."""
    group = num_heads // max(num_kv_heads, 1)
    if device_type != "cuda" or (group > 0 and group & (group - 1) == 0):
        return None
    block_n = math.gcd(block_size, 64)
    return None if block_n == 64 else {"BLOCK_N": block_n}


#: On CUDA, flex's KV block (the cache's ``block_size``) must be a multiple of this:
#: inductor's Triton kernels (flex-decoding and the main one) take ``BLOCK_N`` keys of
#: one KV block at a time, clamped to the block size, and ``BLOCK_N`` is the inner (K)
#: dimension of their ``P @ V`` dot, which Triton requires to be at least 16
#: (``min_dot_size`` of its NVIDIA backend, Triton 3.6 and 3.8: ``K >= 16``).
FLEX_CUDA_BLOCK_MULTIPLE = 16


def triton_toolchain_problem(which: Callable[[str], Optional[str]] = shutil.which,
                             environ: Optional[dict] = None,
                             include_dir: Optional[str] = None) -> Optional[str]:
    """``None`` when Triton can build its C modules here, else one line naming what is
    missing. Triton builds a small C module at its first kernel launch on CUDA (its
    driver's utilities, each kernel's launcher), so every compiled kernel, flex
    attention's included, needs a C compiler (``$CC``, else ``gcc`` or ``clang`` on the
    path: ``triton/runtime/build.py``) and Python's headers (``Python.h`` in
    ``sysconfig``'s include folder), which a runtime-only image may lack: it would fail
    at start-up with "Failed to find C compiler". ``which``, ``environ`` (default
    ``os.environ``) and ``include_dir`` (default ``sysconfig``'s, as Triton finds it)
    are for tests."""
    environ = os.environ if environ is None else environ
    if include_dir is None:
        scheme = sysconfig.get_default_scheme()
        include_dir = sysconfig.get_paths(
            scheme="posix_prefix" if scheme == "posix_local" else scheme)["include"]
    cc = environ.get("CC")
    missing = []
    if not (which(cc.split()[0]) if cc and cc.strip() else which("gcc") or which("clang")):
        missing.append(f"a C compiler ($CC {cc!r} not found)" if cc and cc.strip() else
                       "a C compiler (no $CC, and no gcc or clang on the path)")
    if not os.path.isfile(os.path.join(include_dir, "Python.h")):
        missing.append(f"Python's headers (no Python.h in {include_dir})")
    if not missing:
        return None
    return (f"--attention flex on CUDA compiles Triton kernels, which need "
            f"{' and '.join(missing)}: install them (e.g. gcc and python3-dev) or use "
            f"--attention gather")


def flex_unsupported(device_type: str, block_size: int) -> Optional[str]:
    """``None`` when the ``flex`` backend runs with KV blocks of ``block_size`` tokens
    on ``device_type``; on CUDA with a block size that is not a multiple of
    ``FLEX_CUDA_BLOCK_MULTIPLE``, the one line saying so (the kernels would fail to
    compile at start-up), naming what to use instead, and on CUDA without what Triton
    builds its modules with, ``triton_toolchain_problem``'s line."""
    if device_type != "cuda":
        return None
    if block_size % FLEX_CUDA_BLOCK_MULTIPLE:
        return (f"--attention flex on CUDA needs a --block-size that is a multiple of "
                f"{FLEX_CUDA_BLOCK_MULTIPLE} (its Triton kernels take a KV block's keys as the "
                f"inner dimension of a dot product, at least {FLEX_CUDA_BLOCK_MULTIPLE}); got "
                f"{block_size}: use --block-size 16 or --attention gather")
    return triton_toolchain_problem()


class FlexAttention:
    """The ``flex`` backend (see the module docstring). ``num_cache_blocks``: blocks
    in the cache including the pad block; ``max_blocks``: most blocks a request may
    hold (``SchedulerConfig.max_blocks_per_req``); ``buckets``: ``decode_buckets``.
    One ``BlockMask`` per bucket and query width ``Q`` over persistent buffers
    (``plan`` refills them).

    Multi-query rows (``Q > 1``): ``q`` ``[Bp, H, Q, hd]`` (each row's queries padded
    to ``Q``). Row ``i``'s blocks ``[0, num_full)`` hold only keys every query of the
    row sees (positions ``<= seq_len - query_len``, the first query's own) and are
    listed full; its blocks ``[num_full, num_blocks)`` (at most ``(Q - 1) //
    block_size + 2``) partial, where the mask function finds a key's position in its
    request through ``block_pos`` (``[num_cache_blocks]``: the index of each partial
    block in its request's block table, refilled each step; a block belongs to one
    request) and keeps ``pos < seq_len`` and ``pos <= seq_len - query_len + j``."""

    name = "flex"
    graphable = True

    def __init__(self, torch, device, block_size: int, num_cache_blocks: int,
                 max_blocks: int, buckets: Sequence[int]):
        from torch.nn.attention import flex_attention as fa

        self.torch = torch
        self.block_size = block_size
        self.buckets = tuple(buckets)
        self.kv_len = num_cache_blocks * block_size
        self.static = _StaticRows(torch, device, self.buckets[-1], max_blocks)
        # BlockMask's KV dimension must cover the whole cache: index rows are
        # num_cache_blocks wide (only each row's first num_blocks entries are read).
        i32 = dict(dtype=torch.int32, device=device)
        self._full_ids = torch.zeros(self.buckets[-1], 1, 1, num_cache_blocks, **i32)
        self._last_ids = torch.zeros(self.buckets[-1], 1, 1, num_cache_blocks, **i32)
        self._full_num = torch.zeros(self.buckets[-1], 1, 1, **i32)
        # multi-query rows: partial blocks per row, the first query's position per row,
        # and each partial block's index in its request (see the class docstring)
        self._part_num = torch.ones(self.buckets[-1], 1, 1, **i32)
        self._first_q = torch.zeros(self.buckets[-1], **i32)
        self._block_pos = torch.zeros(num_cache_blocks, **i32)
        self._masks: dict[tuple[int, int], Any] = {}
        self._fa = fa
        # One static compile per bucket and query width (1, and 1 + K with drafts).
        # Dynamo counts compiles per code object, flex_attention's, across every
        # instance in the process (a notebook or a test session builds many), and past
        # its limit it runs flex eagerly, which the start-up check refuses. Each
        # instance therefore adds its own compiles to the limits.
        need = 3 * len(self.buckets) + 8
        dynamo_config = torch._dynamo.config
        dynamo_config.recompile_limit = max(dynamo_config.recompile_limit, 8) + need
        dynamo_config.accumulated_recompile_limit = max(
            dynamo_config.accumulated_recompile_limit, 256) + need
        self._flex = torch.compile(fa.flex_attention, dynamic=False)

    def bucket(self, num_rows: int) -> int:
        return bucket_for(num_rows, self.buckets)

    def _block_mask(self, bucket: int, nq: int = 1):
        mask = self._masks.get((bucket, nq))
        if mask is not None:
            return mask
        bs = self.block_size
        if nq == 1:
            last_len = self.static.last_len

            def partial_block(b, h, q_idx, kv_idx):  # only the last block is partial
                return kv_idx % bs < last_len[b]

            num_partial = self.torch.ones(bucket, 1, 1, dtype=self.torch.int32,
                                          device=self._full_num.device)
        else:
            seq_lens, first_q, block_pos = self.static.seq_lens, self._first_q, self._block_pos

            def partial_block(b, h, q_idx, kv_idx):  # causal bottom-right, by position
                pos = block_pos[kv_idx // bs] * bs + kv_idx % bs
                return (pos < seq_lens[b]) & (pos <= first_q[b] + q_idx)

            num_partial = self._part_num[:bucket]
        mask = self._fa.BlockMask(
            seq_lengths=(nq, self.kv_len),
            kv_num_blocks=num_partial, kv_indices=self._last_ids[:bucket],
            full_kv_num_blocks=self._full_num[:bucket],
            full_kv_indices=self._full_ids[:bucket],
            q_num_blocks=None, q_indices=None, full_q_num_blocks=None,
            full_q_indices=None, BLOCK_SIZE=(128, bs), mask_mod=partial_block)
        self._masks[(bucket, nq)] = mask
        return mask

    def host_inputs(self, rows: DecodeRows) -> dict[str, np.ndarray]:
        """The host half of ``plan`` (numpy only): its arrays by staging name."""
        out = _StaticRows.host_inputs(rows)
        if rows.max_query_len == 1:
            return out
        bs = self.block_size
        nblocks = rows.num_blocks.astype(np.int64)
        first_q = (rows.seq_lens - rows.query_lens).astype(np.int64)
        num_full = np.minimum((first_q + 1) // bs, nblocks - 1)
        width = int((nblocks - num_full).max())
        col = num_full[:, None] + np.arange(width)[None, :]  # [Bp, width] block index
        listed = col < nblocks[:, None]
        col = np.where(listed, col, 0)
        part_ids = np.where(listed, np.take_along_axis(rows.block_ids, np.minimum(
            col, rows.block_ids.shape[1] - 1), axis=1), rows.block_ids[:, :1])
        part_pos = np.where(listed, col, 0)  # unlisted slots repeat block 0 at index 0
        out.update({"rows/num_full": num_full.astype(np.int32),
                    "rows/num_partial": (nblocks - num_full).astype(np.int32),
                    "rows/first_q": first_q.astype(np.int32),
                    "rows/partial_ids": part_ids.astype(np.int32),
                    "rows/partial_pos": part_pos.astype(np.int32),
                    "decode_padded_index": rows.padded_index})
        return out

    def plan(self, rows: DecodeRows, to_device, inputs: Optional[dict] = None):
        """Refill the persistent buffers from ``rows`` and return ``(BlockMask,
        index)``: the mask of the bucket and query width (the same object every step of
        both), ``index`` ``None`` for ``Q == 1``, else ``padded_index`` (int64 ``[Tp]``).
        ``inputs``: ``host_inputs(rows)``, computed before (else here)."""
        a = self.host_inputs(rows) if inputs is None else inputs
        st = self.static
        st.fill(rows, to_device, a)
        b, nb, nq = rows.bucket, rows.max_blocks, rows.max_query_len
        self._full_ids[:b, 0, 0, :nb].copy_(st.block_ids[:b, :nb])
        if nq == 1:
            self._full_num[:b, 0, 0].copy_(st.num_blocks[:b] - 1)
            self._last_ids[:b, 0, 0, 0].copy_(st.last_block[:b])
            return self._block_mask(b), None
        width = a["rows/partial_ids"].shape[1]
        self._full_num[:b, 0, 0].copy_(to_device("rows/num_full", a["rows/num_full"]))
        self._part_num[:b, 0, 0].copy_(to_device("rows/num_partial", a["rows/num_partial"]))
        self._first_q[:b].copy_(to_device("rows/first_q", a["rows/first_q"]))
        ids_t = to_device("rows/partial_ids", a["rows/partial_ids"])
        self._last_ids[:b, 0, 0, :width].copy_(ids_t)
        self._block_pos[ids_t.long().flatten()] = to_device(
            "rows/partial_pos", a["rows/partial_pos"]).flatten()
        return self._block_mask(b, nq), to_device("decode_padded_index",
                                                  a["decode_padded_index"])

    def __call__(self, q, k_cache, v_cache, plan):
        """``q``: ``[Bp, H, hd]`` (``[Tp, H, hd]`` for ``Q > 1``); ``k_cache``/``v_cache``:
        ``[num_cache_blocks, block_size, K, hd]``; returns ``[Bp, H * hd]``
        (``[Tp, H * hd]``)."""
        mask, index = plan
        kv_heads, hd = k_cache.shape[2], k_cache.shape[3]
        keys = k_cache.view(self.kv_len, kv_heads, hd).permute(1, 0, 2).unsqueeze(0)
        values = v_cache.view(self.kv_len, kv_heads, hd).permute(1, 0, 2).unsqueeze(0)
        opts = flex_kernel_options(q.device.type, q.shape[1], kv_heads, self.block_size)
        if index is None:
            out = self._flex(q.unsqueeze(2), keys, values, block_mask=mask, enable_gqa=True,
                             kernel_options=opts)
            return out.reshape(q.shape[0], -1)
        bp, nq = mask.kv_num_blocks.shape[0], mask.seq_lengths[0]
        qp = q.new_zeros(bp * nq, *q.shape[1:])
        qp[index] = q
        qp = qp.view(bp, nq, *q.shape[1:]).transpose(1, 2)  # [Bp, H, Q, hd]
        out = self._flex(qp, keys, values, block_mask=mask, enable_gqa=True,
                         kernel_options=opts)
        return out.transpose(1, 2).reshape(bp * nq, -1)[index]


#: The keyword arguments of ``torch.nn.attention.varlen.varlen_attn`` the ``varlen``
#: backend passes (paged KV through ``block_table`` and ``seqused_k``, grouped-query
#: heads, one split). torch 2.13 has them; torch 2.11's ``varlen_attn`` takes none of
#: them (``return_aux``, ``scale`` and ``window_size`` only: no paged KV).
VARLEN_PAGED_KWARGS = ("enable_gqa", "seqused_k", "block_table", "num_splits")


def varlen_unsupported(varlen_attn: Optional[Callable] = None) -> Optional[str]:
    """``None`` when ``varlen_attn`` (default ``torch.nn.attention.varlen.varlen_attn``,
    imported here) takes every keyword of ``VARLEN_PAGED_KWARGS``; else one line saying
    what this torch lacks, naming the other backends. A feature check, not a version
    check: torch 2.11's ``varlen_attn`` has no paged KV, 2.13's has."""
    import inspect

    if varlen_attn is None:
        try:
            from torch.nn.attention.varlen import varlen_attn
        except ImportError as exc:
            return (f"--attention varlen needs torch.nn.attention.varlen.varlen_attn, which "
                    f"this torch lacks ({exc}); use flex or gather")
    try:
        params = inspect.signature(varlen_attn).parameters
    except (TypeError, ValueError):
        return None  # a builtin without a signature: let the call decide
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    missing = [k for k in VARLEN_PAGED_KWARGS if k not in params]
    if not missing:
        return None
    import torch

    return (f"--attention varlen needs a varlen_attn with paged KV and GQA; torch "
            f"{torch.__version__}'s lacks {', '.join(missing)}: use flex or gather")


def varlen_kernel_problem(torch, device, block_size: int, dtype,
                          varlen_attn: Optional[Callable] = None) -> Optional[str]:
    """``None`` when ``varlen_attn`` (default ``torch.nn.attention.varlen.varlen_attn``)
    runs one paged call as ``VarlenAttention`` makes it, with KV blocks of
    ``block_size`` tokens on ``device`` in ``dtype`` (one row of one query token over
    one block: two query heads on one KV head of 64 dimensions); else one line with
    the kernel's first line, naming what to use instead. A kernel check, not a version
    check, made before the weights are built: PyTorch's FlashAttention-2 kernel
    (``aten/src/ATen/native/transformers/cuda/flash_attn/flash_api.cpp``,
    ``mha_varlen_fwd``) takes paged KV only in blocks of a multiple of 256 tokens
    ("Paged KV cache block size must be divisible by 256"), where vLLM's default
    block is 16 tokens; a torch whose kernel takes them passes."""
    if varlen_attn is None:
        from torch.nn.attention.varlen import varlen_attn
    i32 = dict(dtype=torch.int32, device=device)
    q = torch.zeros(1, 2, 64, dtype=dtype, device=device)
    kv = torch.zeros(1, block_size, 1, 64, dtype=dtype, device=device)
    try:
        varlen_attn(q, kv, kv, torch.tensor([0, 1], **i32), torch.tensor([0, 1], **i32), 1,
                    block_size, window_size=(-1, 0), enable_gqa=True,
                    seqused_k=torch.tensor([1], **i32), block_table=torch.zeros(1, 1, **i32),
                    num_splits=1)
    except (RuntimeError, ValueError, TypeError, NotImplementedError) as exc:
        words = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        return (f"--attention varlen: this torch's kernel refuses a paged KV cache of "
                f"{block_size}-token blocks on {device} ({words}): use flex or gather")
    return None


class VarlenAttention:
    """The ``varlen`` backend (see the module docstring). ``varlen_attn``: the
    function to call, ``torch.nn.attention.varlen.varlen_attn`` by default (tests pass
    a reference of its documented semantics, as PyTorch has no CPU kernel).
    ``max_model_len`` is passed as ``max_k`` so that a captured graph's host argument
    never changes."""

    name = "varlen"
    graphable = True

    def __init__(self, torch, device, block_size: int, max_blocks: int,
                 buckets: Sequence[int], max_model_len: int,
                 varlen_attn: Optional[Callable] = None):
        if varlen_attn is None:
            why = varlen_unsupported()
            if why is not None:
                raise ConfigError(why)
            from torch.nn.attention.varlen import varlen_attn
        self.torch = torch
        self.block_size = block_size
        self.buckets = tuple(buckets)
        self.max_model_len = max_model_len
        self.static = _StaticRows(torch, device, self.buckets[-1], max_blocks)
        self._cu_seq_q = torch.arange(self.buckets[-1] + 1, dtype=torch.int32, device=device)
        self._cu_seq_k = torch.zeros(self.buckets[-1] + 1, dtype=torch.int32, device=device)
        self._cu_seq_q_multi = torch.zeros(self.buckets[-1] + 1, dtype=torch.int32,
                                           device=device)
        self._varlen_attn = varlen_attn

    def bucket(self, num_rows: int) -> int:
        return bucket_for(num_rows, self.buckets)

    def host_inputs(self, rows: DecodeRows) -> dict[str, np.ndarray]:
        """The host half of ``plan``: its arrays by staging name (views of ``rows``')."""
        out = _StaticRows.host_inputs(rows)
        if rows.max_query_len > 1:
            out["rows/query_start"] = rows.query_start
        return out

    def plan(self, rows: DecodeRows, to_device, inputs: Optional[dict] = None):
        """Refill the buffers; returns ``(bucket, Q)`` (the plan is the buffers). For
        ``Q > 1`` ``cu_seqlens_q`` holds the rows' own query lengths (pad rows 1).
        ``inputs``: ``host_inputs(rows)``, computed before (else here)."""
        a = self.host_inputs(rows) if inputs is None else inputs
        self.static.fill(rows, to_device, a)
        b, nq = rows.bucket, rows.max_query_len
        self._cu_seq_k[1:b + 1].copy_(self.torch.cumsum(self.static.seq_lens[:b], 0))
        if nq > 1:
            self._cu_seq_q_multi[:b + 1].copy_(to_device("rows/query_start",
                                                         a["rows/query_start"]))
        return b, nq

    def __call__(self, q, k_cache, v_cache, plan):
        """``q``: ``[Bp, H, hd]`` (``[Tp, H, hd]`` for ``Q > 1``); returns ``[Bp, H * hd]``
        (``[Tp, H * hd]``). ``window_size=(-1, 0)``: causal, aligned bottom-right, so
        query ``j`` of a row of ``q`` queries sees keys ``<= seqused_k - q + j``."""
        b, nq = plan
        st = self.static
        cu_seq_q = self._cu_seq_q if nq == 1 else self._cu_seq_q_multi
        out = self._varlen_attn(
            q, k_cache, v_cache, cu_seq_q[:b + 1], self._cu_seq_k[:b + 1],
            nq, self.max_model_len, window_size=(-1, 0), enable_gqa=True,
            seqused_k=st.seq_lens[:b], block_table=st.block_ids[:b], num_splits=1)
        return out.reshape(q.shape[0], -1)


def make_attention(name: str, torch, device, *, block_size: int, num_cache_blocks: int,
                   max_blocks: int, buckets: Sequence[int], max_model_len: int):
    """The backend ``name`` (already resolved: ``gather``, ``flex`` or ``varlen``)."""
    if name == "gather":
        return GatherAttention(torch, block_size)
    if name == "flex":
        return FlexAttention(torch, device, block_size, num_cache_blocks, max_blocks, buckets)
    if name == "varlen":
        return VarlenAttention(torch, device, block_size, max_blocks, buckets, max_model_len)
    raise ConfigError(f"unknown attention backend {name!r}")
