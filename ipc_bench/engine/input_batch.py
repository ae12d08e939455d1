"""The runner's persistent batch (vLLM V1 ``InputBatch`` and ``CachedRequestState``).

Rows ``[0, num_reqs)`` hold the requests of the current batch. Per row:
``token_ids_cpu[row, :num_tokens[row]]`` (int32, ``[max_num_seqs, max_model_len]``),
the counts ``num_tokens``, ``num_tokens_no_spec``, ``num_prompt_tokens``,
``num_computed_tokens_cpu`` (int32, ``[max_num_seqs]``) and the block table (int32,
``[max_num_seqs, max_blocks_per_req]``). Removing a request leaves a hole that
``condense()`` fills by moving the last rows down, as vLLM does.

The token buffer and the block table are written through once when the batch is
built (``resident_zeros``), as vLLM's ``torch.zeros`` buffers are: the process holds
their memory from the start. ``np.zeros`` alone maps pages on first write, so the
runner's memory would grow over a run each time a row reached deeper into the
buffer than any request before it (up to 16 MiB at ``max_num_seqs`` 256 and
``max_model_len`` 16384), a growth that looks like a leak and is none.
"""

from __future__ import annotations

import numpy as np

from ipc_bench.engine.messages import SamplingParams


def resident_zeros(shape: tuple[int, ...], dtype) -> np.ndarray:
    """Zeros of ``shape`` whose every page is written, so resident from now on (as
    ``torch.zeros``; ``np.zeros`` leaves untouched pages unmapped until first write)."""
    a = np.empty(shape, dtype=dtype)
    a.fill(0)
    return a


class CachedRequestState:
    """Runner-side state of one request, kept while the request lives (vLLM 7f280d69c).

    ``block_ids``: KV blocks of its one KV-cache group (replaced on resumption after
    preemption). ``output_token_ids`` grows by the runner's token write-back
    (``ModelRunner.write_token_ids``). ``num_sampled_tokens``: valid samples the runner
    has returned for it; equal to ``len(output_token_ids)`` under ``cached``, one ahead
    under ``send`` until the next ``new_token_ids`` bring the last sample back. The
    state outlives a preemption: the request leaves the persistent batch and is re-added
    from this state when it resumes.

    Async scheduling with drafts (``ModelRunner(async_scheduling=True)``, vLLM #24799's
    ``prev_num_draft_len`` bookkeeping): after each step ``num_computed_tokens`` is the
    request's true count after it (scheduled tokens less its rejected drafts) and
    ``num_rejected`` that step's rejected drafts, against which the next step's
    optimistic ``num_computed_tokens`` is corrected.
    """

    __slots__ = ("req_id", "prompt_token_ids", "sampling_params", "block_ids",
                 "num_computed_tokens", "output_token_ids", "num_prompt_tokens",
                 "num_sampled_tokens", "num_rejected")

    def __init__(self, req_id: str, prompt_token_ids: list[int], sampling_params: SamplingParams,
                 block_ids: list[int], num_computed_tokens: int):
        self.req_id = req_id
        self.prompt_token_ids = prompt_token_ids
        self.sampling_params = sampling_params
        self.block_ids = block_ids
        self.num_computed_tokens = num_computed_tokens
        self.output_token_ids: list[int] = []
        self.num_prompt_tokens = len(prompt_token_ids)
        self.num_sampled_tokens = 0
        self.num_rejected = 0

    @property
    def num_tokens(self) -> int:
        return len(self.prompt_token_ids) + len(self.output_token_ids)


class InputBatch:
    """See the module docstring. Raises ``ValueError`` when the batch is full."""

    def __init__(self, max_num_seqs: int, max_model_len: int, max_blocks_per_req: int):
        self.max_num_seqs = max_num_seqs
        self.max_model_len = max_model_len
        self.token_ids_cpu = resident_zeros((max_num_seqs, max_model_len), np.int32)
        self.num_tokens = np.zeros(max_num_seqs, dtype=np.int32)
        self.num_tokens_no_spec = np.zeros(max_num_seqs, dtype=np.int32)
        self.num_prompt_tokens = np.zeros(max_num_seqs, dtype=np.int32)
        self.num_computed_tokens_cpu = np.zeros(max_num_seqs, dtype=np.int32)
        self.block_table = resident_zeros((max_num_seqs, max_blocks_per_req), np.int32)
        self.num_blocks_per_row = np.zeros(max_num_seqs, dtype=np.int32)
        # Flat int32 views for per-element writes from Python (numpy scalar indexing
        # costs ~10x more). Same memory as the arrays above.
        self.token_ids_flat = memoryview(self.token_ids_cpu.reshape(-1))
        self.num_tokens_mv = memoryview(self.num_tokens)
        self.num_tokens_no_spec_mv = memoryview(self.num_tokens_no_spec)
        self.num_computed_tokens_mv = memoryview(self.num_computed_tokens_cpu)
        self.max_blocks_per_req = max_blocks_per_req
        self.block_table_flat = memoryview(self.block_table.reshape(-1))
        self.num_blocks_per_row_mv = memoryview(self.num_blocks_per_row)
        self._req_ids: list[str | None] = []
        self.req_id_to_index: dict[str, int] = {}
        self._holes: list[int] = []

    @property
    def num_reqs(self) -> int:
        return len(self.req_id_to_index)

    @property
    def req_ids(self) -> list[str]:
        """Request ids in row order (valid after ``condense()``)."""
        return self._req_ids  # type: ignore[return-value]

    def add_request(self, state: CachedRequestState) -> int:
        """Place ``state`` in a free row (lowest hole first); returns the row."""
        if self._holes:
            row = min(self._holes)
            self._holes.remove(row)
            self._req_ids[row] = state.req_id
        else:
            row = len(self._req_ids)
            if row >= self.max_num_seqs:
                raise ValueError(f"persistent batch full: max_num_seqs={self.max_num_seqs}")
            self._req_ids.append(state.req_id)
        self.req_id_to_index[state.req_id] = row
        num_prompt = len(state.prompt_token_ids)
        end = num_prompt + len(state.output_token_ids)
        self.token_ids_cpu[row, :num_prompt] = state.prompt_token_ids
        self.token_ids_cpu[row, num_prompt:end] = state.output_token_ids
        self.num_tokens[row] = end
        self.num_tokens_no_spec[row] = end
        self.num_prompt_tokens[row] = num_prompt
        self.num_computed_tokens_cpu[row] = state.num_computed_tokens
        self.set_block_ids(row, state.block_ids)
        return row

    def remove_request(self, req_id: str) -> int | None:
        """Drop ``req_id`` from the batch (its state is kept by the runner); returns its row."""
        row = self.req_id_to_index.pop(req_id, None)
        if row is not None:
            self._req_ids[row] = None
            self._holes.append(row)
        return row

    def set_block_ids(self, row: int, block_ids: list[int]) -> None:
        n = len(block_ids)
        self.block_table[row, :n] = block_ids
        self.num_blocks_per_row[row] = n

    def append_block_ids(self, row: int, block_ids: list[int]) -> None:
        """Append ``block_ids`` to the block-table row ``row``."""
        num_blocks = self.num_blocks_per_row_mv
        start = num_blocks[row]
        end = start + len(block_ids)
        if end - start == 1 and end <= self.max_blocks_per_req:  # one block: decoding
            self.block_table_flat[row * self.max_blocks_per_req + start] = block_ids[0]
        else:
            self.block_table[row, start:end] = block_ids
        num_blocks[row] = end

    def condense(self) -> None:
        """Move the last rows into the holes so rows ``[0, num_reqs)`` are all used."""
        if not self._holes:
            return
        holes = sorted(self._holes)
        self._holes.clear()
        req_ids = self._req_ids
        while req_ids and req_ids[-1] is None:
            req_ids.pop()
        for hole in holes:
            while req_ids and req_ids[-1] is None:
                req_ids.pop()
            last = len(req_ids) - 1
            if hole >= last:
                break
            req_id = req_ids.pop()
            n = int(self.num_tokens[last])
            self.token_ids_cpu[hole, :n] = self.token_ids_cpu[last, :n]
            for arr in (self.num_tokens, self.num_tokens_no_spec, self.num_prompt_tokens,
                        self.num_computed_tokens_cpu, self.num_blocks_per_row):
                arr[hole] = arr[last]
            nb = int(self.num_blocks_per_row[last])
            self.block_table[hole, :nb] = self.block_table[last, :nb]
            req_ids[hole] = req_id
            self.req_id_to_index[req_id] = hole
        while req_ids and req_ids[-1] is None:
            req_ids.pop()


class StepInputs:
    """Inputs of one step (vLLM ``_prepare_inputs``), rows in persistent-batch order.

    ``req_ids``: ``[num_reqs]``; ``num_scheduled`` / ``num_computed``: Python ints per
    row; ``rows``: ``arange(num_reqs)``; ``positions``: last scheduled position per row
    (int64 ``[num_reqs]``); ``input_ids``: every scheduled token id, gathered from the
    runner's token buffer (int32 ``[total_num_scheduled_tokens]``); ``token_positions``:
    position of each of those tokens in its request (int64, same shape);
    ``query_start_loc``: offsets of each row's tokens in ``input_ids`` (int64
    ``[num_reqs + 1]``); ``seq_lens``: tokens per row once the step is computed
    (``num_computed + num_scheduled``, int64 ``[num_reqs]``). The block table is the
    batch's (``InputBatch.block_table[:num_reqs]``).

    Speculative decoding: ``spec_token_ids``: per row, the draft ids scheduled for it
    (``[]`` for none; ``None`` when the step has no drafts at all). ``sample_rows`` /
    ``sample_positions`` (int64 ``[num_samples]``): where the model samples, row by row:
    each row's last scheduled position, and for a row with ``s`` drafts the ``s + 1``
    positions ending there (vLLM's ``logits_indices``); without drafts ``rows`` and
    ``positions``.
    """

    __slots__ = ("req_ids", "num_scheduled", "num_computed", "rows", "positions", "input_ids",
                 "token_positions", "query_start_loc", "seq_lens", "spec_token_ids",
                 "sample_rows", "sample_positions")

    def __init__(self, req_ids, num_scheduled, num_computed, rows, positions, input_ids,
                 token_positions=None, query_start_loc=None, seq_lens=None,
                 spec_token_ids=None, sample_rows=None, sample_positions=None):
        self.req_ids = req_ids
        self.num_scheduled = num_scheduled
        self.num_computed = num_computed
        self.rows = rows
        self.positions = positions
        self.input_ids = input_ids
        self.token_positions = token_positions
        self.query_start_loc = query_start_loc
        self.seq_lens = seq_lens
        self.spec_token_ids = spec_token_ids
        self.sample_rows = rows if sample_rows is None else sample_rows
        self.sample_positions = positions if sample_positions is None else sample_positions
