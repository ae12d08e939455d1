"""GPU model-runner logic, no I/O (vLLM V1 ``GPUModelRunner`` around 7f280d69c).

One step is five phases, each a method the process loop times on its own:

1. ``update_states(so)`` (vLLM ``_update_states``): drop finished and unscheduled
   requests from the persistent batch (an unscheduled one, e.g. preempted, keeps its
   state; under async scheduling so does one resumed from preemption that is still
   there), add new ones, and
   for each cached request set ``num_computed_tokens`` and append its new blocks
   (replace them when it resumes from preemption, re-adding it to the batch from its
   kept state); under ``send`` also write ``new_token_ids`` into the batch (before PR
   #20291).
2. ``prepare_inputs(so)``: per-row scheduled token counts and positions, per-token
   positions, query start offsets, and the input ids gathered from the token buffer.
3. ``sample(inputs)``: the model's forward pass and greedy sampling
   (``model.execute(input_batch, inputs)``, see ``ipc_bench.engine.models``).
4. ``write_back(inputs, sampled)``: discard samples of partial prefills; under
   ``cached`` write the sampled ids into the batch (after PR #20291).
5. ``build_output(inputs, valid)``: the ``ModelRunnerOutput``.

In the 1d37eb37 layout (``SchedulerConfig.vllm_layout``) ``update_states`` reads
``resumed_req_ids`` (a set) in place of the flags, takes a ``None`` entry of
``new_block_ids`` as no new block, and restores each cached request that was not in
the persistent batch from the message's ``all_token_ids`` before re-adding it
(``_restore_tokens``: vLLM's ``req_state.output_token_ids = all_token_ids[req_id]
[-num_output_tokens:]``, which vLLM's V1 runner runs with async scheduling only, by
vLLM PR #45840's description; here in every case), so a resumed request's tokens come
from the message under both policies.

Both policies write tokens through the same per-request ``write_token_ids``; they
differ only in where the ids come from (the message, or the sampler) and so in which
phase the write happens. Neither is vectorized, as in vLLM.

Speculative decoding (``SchedulerConfig.num_spec_tokens`` = K > 0), as vLLM V1's
``GPUModelRunner`` at 7f280d69c: ``update_states`` writes each request's scheduled
draft ids (``scheduled_spec_decode_tokens``) into its row after its last real token
(``num_tokens_no_spec``; ``num_tokens`` counts them); the model samples at every
drafted position; ``write_back`` verifies greedily (a draft is accepted while it
equals the target's own token at the position before it; the target's token after
the last accepted draft is the bonus), returns the accepted drafts + the bonus as
``sampled_token_ids`` and, under ``cached``, writes them over the drafts from
``num_tokens_no_spec`` on; rejected drafts are left behind past ``num_tokens_no_spec``
and overwritten later. It then proposes K drafts per sampled request for the next step
(``NullModel.propose``, or ``TorchModel.propose``, which runs the target's own
decode forward ahead; acceptance ``ModelConfig.spec_acceptance``), sent back in
``ModelRunnerOutput.spec_token_ids``. Only the models of ``config.SPEC_MODELS`` can
verify drafts (``ConfigError`` for any other); the device-input path (``launch`` /
``finish``) takes none (``ConfigError``: ``DEVICE_INPUT_DRAFTS``): with async
scheduling the torch model's runner then takes the host path, as the null model's
(``harness.supervisor.uses_device_inputs``).

Async scheduling with drafts (``async_scheduling=True``; vLLM #24799, "[Core] Async
Scheduling X Spec Decoding Compatibility", its ``GPUModelRunner._update_states`` and
``_draft_token_ids``): the scheduler builds step n+1 before step n's drafts and
acceptance are known, so its ``scheduled_spec_decode_tokens`` hold ``-1``
placeholders and its ``num_computed_tokens`` assumes every draft of step n accepted.
The runner keeps its own drafts (``_draft_token_ids``, not sent:
``spec_token_ids`` is ``None``) and writes them in place of the placeholders, and
keeps each request's true count and rejected drafts of its last step
(``CachedRequestState.num_rejected``): a request of the previous batch whose count is
the true one plus those rejected drafts is lowered to the true one (vLLM:
``num_computed_tokens -= num_rejected``); the true count itself is taken as is (the
step was scheduled after that output was applied: here a step that schedules
nothing is held back, where vLLM sends it empty); any other count is a
``ProtocolError``. After verification the ids of the rejected drafts in
``StepInputs.input_ids`` read ``-1``, as the message showed them (the scheduler never
learns them), so the input oracle's digest covers every id the scheduler can know.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ipc_bench.engine.config import (LAYOUT_7F280D69C, POLICIES, SEND, SPEC_MODELS,
                                     ConfigError, ModelConfig, SchedulerConfig)
from ipc_bench.engine.input_batch import CachedRequestState, InputBatch, StepInputs
from ipc_bench.engine.messages import (STRUCTS, MessageSet, ModelRunnerOutput, SchedulerOutput,
                                       in_layout)
from ipc_bench.engine.models import make_model
from ipc_bench.engine.scheduler import PLACEHOLDER, ProtocolError

#: Why the device-input path takes no drafts (step n+1's ids gathered on the device from
#: step n's samples: one id per request, no draft form; vLLM #24799's device-side drafts
#: are not built). The torch model with drafts and async scheduling takes the host path.
DEVICE_INPUT_DRAFTS = ("the device-input path takes no draft tokens: the torch model with "
                       "--num-spec-tokens runs async scheduling on the host path")


class RunnerError(RuntimeError):
    """The runner cannot execute a step; the message is one line."""


def token_layout(num_computed: np.ndarray, num_scheduled: list[int], max_model_len: int,
                 check: Optional[Callable[[np.ndarray, int], None]] = None):
    """Row and token arrays of a step (vLLM ``_prepare_inputs``), any mix of rows.

    ``num_computed``: int64 ``[num_reqs]``; ``num_scheduled``: ``num_reqs`` ints.
    Returns int64 arrays ``(rows [num_reqs], seq_lens [num_reqs], positions [num_reqs]
    (last scheduled position), query_start_loc [num_reqs + 1], token_positions
    [num_tokens], flat [num_tokens])``, ``flat`` indexing the flattened token buffer
    ``[max_num_seqs * max_model_len]``. ``check(positions, num_tokens)``, if given, runs
    before the per-token arrays are built and may raise; a negative count raises
    ``ValueError`` (in ``np.repeat``).
    """
    n = len(num_scheduled)
    rows = np.arange(n, dtype=np.int64)
    num_scheduled_np = np.array(num_scheduled, dtype=np.int64)
    seq_lens = num_computed + num_scheduled_np
    positions = seq_lens - 1
    query_start_loc = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(num_scheduled_np, out=query_start_loc[1:])
    total = int(query_start_loc[-1])
    if check is not None:
        check(positions, total)
    # Token i of row r sits at position num_computed[r] + i (vLLM: positions_np).
    req_indices = np.repeat(rows, num_scheduled_np)
    token_positions = (np.arange(total, dtype=np.int64) - query_start_loc[req_indices]
                       + num_computed[req_indices])
    flat = req_indices * max_model_len + token_positions
    return rows, seq_lens, positions, query_start_loc, token_positions, flat


def decode_token_layout(num_computed: np.ndarray, max_model_len: int):
    """``token_layout(num_computed, [1] * num_reqs, max_model_len)`` for a pure-decode
    step: token ``i`` is row ``i``'s, at position ``num_computed[i]``. Same arrays, same
    dtypes, none of them shared with another or with ``num_computed``."""
    n = len(num_computed)
    rows = np.arange(n, dtype=np.int64)
    seq_lens = num_computed + 1
    positions = num_computed.copy()
    query_start_loc = np.arange(n + 1, dtype=np.int64)
    token_positions = num_computed.copy()
    flat = rows * max_model_len + num_computed
    return rows, seq_lens, positions, query_start_loc, token_positions, flat


class ModelRunner:
    """See the module docstring. ``policy``: ``send`` or ``cached``; ``messages``: the
    message classes of its ``ModelRunnerOutput`` (``STRUCTS`` for msgpack,
    ``VLLM_DATACLASSES`` for pickle); it reads either set's ``SchedulerOutput``, in
    ``scheduler_config.vllm_layout``."""

    def __init__(self, scheduler_config: SchedulerConfig, model_config: ModelConfig, policy: str,
                 messages: MessageSet = STRUCTS, device_inputs: bool = False,
                 async_scheduling: bool = False):
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}")
        self.policy = policy
        self.tokens_from_scheduler = policy == SEND
        self.messages = messages = in_layout(messages, scheduler_config.vllm_layout)
        #: the 1d37eb37 layout (``--vllm-layout``): ``resumed_req_ids``,
        #: ``all_token_ids``, ``num_output_tokens``, ``None`` block entries
        self.later_layout = scheduler_config.vllm_layout != LAYOUT_7F280D69C
        self._model_runner_output = messages.model_runner_output
        self.max_model_len = scheduler_config.max_model_len
        self.num_blocks = scheduler_config.num_blocks
        self.max_blocks_per_req = scheduler_config.max_blocks_per_req
        self.input_batch = InputBatch(scheduler_config.max_num_seqs,
                                      scheduler_config.max_model_len,
                                      scheduler_config.max_blocks_per_req)
        self.requests: dict[str, CachedRequestState] = {}
        self.num_spec_tokens = scheduler_config.num_spec_tokens
        self.spec_acceptance = model_config.spec_acceptance
        if self.num_spec_tokens and model_config.name not in SPEC_MODELS:
            raise ConfigError(f"--num-spec-tokens needs a model whose drafts can be verified "
                              f"({', '.join(SPEC_MODELS)}), not {model_config.name}")
        if self.num_spec_tokens and device_inputs:
            raise ConfigError(DEVICE_INPUT_DRAFTS)
        self._proposals: Optional[list[list[int]]] = None  # spec_token_ids of this step
        #: async scheduling with drafts (module docstring): the drafts stay here
        self.async_spec = async_scheduling and self.num_spec_tokens > 0
        #: async scheduling: a request may resume from preemption still in the batch
        self.async_scheduling = async_scheduling
        self._draft_token_ids: dict[str, list[int]] = {}
        self.model = make_model(model_config, scheduler_config)
        #: the device-input path of async scheduling (``launch`` / ``finish``)
        self.device_ids = None
        self._prev_step: Optional[LaunchedStep] = None  # the last launched step
        if device_inputs:
            if self.tokens_from_scheduler or not hasattr(self.model, "launch"):
                raise ConfigError("the device-input path needs the cached policy and the "
                                  "torch model")
            from ipc_bench.engine.cuda_step import DeviceSampledIds
            self.device_ids = DeviceSampledIds(self.model.torch, self.model.torch_device)

    # ------------------------------------------------------------------ 1
    def write_token_ids(self, state: CachedRequestState, row: int, start: int,
                        token_ids: list[int]) -> None:
        """Write ``token_ids`` at ``token_ids_cpu[row, start:...]``: the one write-back path.

        Sets ``num_tokens_no_spec`` and ``num_tokens`` of ``row`` to the end, and
        appends to ``state.output_token_ids`` the ids beyond what it already holds.
        Raises ``RunnerError`` past ``max_model_len`` (vLLM: "Sampled token IDs exceed
        the max model length").
        """
        num = len(token_ids)
        end = start + num
        max_model_len = self.max_model_len
        if start < 0:
            raise ProtocolError(f"{state.req_id}: token ids written from position {start}")
        if end > max_model_len:
            raise RunnerError(
                f"Sampled token IDs exceed the max model length: {state.req_id} would hold "
                f"{end} tokens, max_model_len is {max_model_len}")
        batch = self.input_batch
        if num == 1:
            batch.token_ids_flat[row * max_model_len + start] = token_ids[0]
        else:
            base = row * max_model_len + start
            batch.token_ids_flat[base:base + num] = np.asarray(token_ids, np.int32)
        batch.num_tokens_no_spec_mv[row] = end
        batch.num_tokens_mv[row] = end
        outputs = state.output_token_ids
        num_new = end - state.num_prompt_tokens - len(outputs)  # end - state.num_tokens
        if num_new > num:
            # Under send with speculative decoding the ids before ``start`` are accepted
            # drafts, already in the row (written from scheduled_spec_decode_tokens).
            base = row * max_model_len + end - num_new
            outputs.extend(batch.token_ids_flat[base:base + num_new - num].tolist())
            outputs.extend(token_ids)
        elif num_new > 0:
            outputs.extend(token_ids if num_new >= num else token_ids[-num_new:])

    def update_states(self, so: SchedulerOutput) -> None:
        """Apply ``so`` to the runner's request states and persistent batch.

        As vLLM 7f280d69c ``_update_states``: finished requests are forgotten;
        requests not scheduled this step (preempted, or left out by the token budget)
        leave the persistent batch but keep their ``CachedRequestState``. So does a
        request resumed from preemption that is still in the batch, as vLLM's later
        ``_update_states`` removes ``cached_req_ids - (scheduled_req_ids -
        resumed_req_ids)`` (its case: ``reset_prefix_cache`` preempting running
        requests); here that happens under async scheduling, where a step that
        schedules nothing is not sent and a request preempted in it may resume in the
        next step sent (``AsyncScheduler``), with no step in between that left it out
        (vLLM sends such a step empty and its runner drops the request there); under
        synchronous scheduling every step is sent, so such a request is a bookkeeping
        bug: ``ProtocolError`` (``request X resumed from preemption is still in the
        persistent batch``). A cached
        request that is not in the batch is re-added from its kept state after the new
        requests (vLLM ``req_ids_to_add``); when it resumes from preemption its block
        ids are replaced, not appended to. Under ``send`` every cached request's
        ``new_token_ids`` then goes through ``write_token_ids`` (for a resumed request:
        the first chunk of prompt + outputs, from token 0).

        Raises ``ProtocolError`` on a message inconsistent with the runner's state.
        """
        batch = self.input_batch
        requests = self.requests
        for req_id in so.finished_req_ids:
            requests.pop(req_id, None)
            batch.remove_request(req_id)
            self._draft_token_ids.pop(req_id, None)
        scheduled = so.num_scheduled_tokens
        in_batch = batch.req_id_to_index.keys()
        if not in_batch <= scheduled.keys():  # (a subset test allocates nothing)
            for req_id in in_batch - scheduled.keys():
                batch.remove_request(req_id)  # unscheduled (e.g. preempted): state kept
        cached = so.scheduled_cached_reqs
        req_ids = cached.req_ids
        later = self.later_layout
        if later:  # 1d37eb37: a set of the resumed (``_later_fields`` checks the rest)
            resumed_flags, all_token_ids, num_output = self._later_fields(cached)
        else:
            resumed_flags = cached.resumed_from_preemption
        if True in resumed_flags:  # vLLM: unscheduled = in batch - (scheduled - resumed)
            for req_id, resumed in zip(req_ids, resumed_flags):
                if resumed and req_id in in_batch:
                    if not self.async_scheduling:  # every step is sent: a bookkeeping bug
                        raise ProtocolError(f"request {req_id} resumed from preemption is "
                                            "still in the persistent batch")
                    batch.remove_request(req_id)  # re-added from its kept state below

        to_add: list[CachedRequestState] = []
        for new in so.scheduled_new_reqs:
            if new.req_id in requests:
                raise ProtocolError(f"new request {new.req_id} is already on the runner")
            self._check_new_request(new)
            state = CachedRequestState(new.req_id, new.prompt_token_ids, new.sampling_params,
                                       list(new.block_ids[0]), new.num_computed_tokens)
            requests[new.req_id] = state
            to_add.append(state)

        new_token_ids = cached.new_token_ids
        num_computed = cached.num_computed_tokens
        new_block_ids = cached.new_block_ids
        num_cached = len(req_ids)
        for name, values in (("resumed_from_preemption", resumed_flags),
                             ("num_computed_tokens", num_computed),
                             ("new_block_ids", new_block_ids)):
            if len(values) != num_cached:
                raise ProtocolError(f"{name} has {len(values)} entries for {num_cached} "
                                    "cached requests")
        send = self.tokens_from_scheduler
        if send and len(new_token_ids) != num_cached:
            raise ProtocolError(f"new_token_ids has {len(new_token_ids)} entries for "
                                f"{num_cached} cached requests under the send policy")
        write = self.write_token_ids
        max_model_len = self.max_model_len
        num_blocks = self.num_blocks
        index = batch.req_id_to_index
        num_computed_mv = batch.num_computed_tokens_mv
        readd: list[tuple[CachedRequestState, int]] = []  # (state, i in cached)
        async_spec = self.async_spec
        for i in range(num_cached):
            req_id = req_ids[i]
            state = requests.get(req_id)
            if state is None:
                raise ProtocolError(f"cached request {req_id} is unknown to the runner")
            nc = num_computed[i]
            if not 0 <= nc <= max_model_len:
                raise ProtocolError(f"cached request {req_id}: num_computed_tokens {nc} "
                                    f"outside [0, max_model_len {max_model_len}]")
            entry = new_block_ids[i]
            new_blocks = entry[0] if entry is not None else ()  # None: 1d37eb37, no block
            # One new block in range (decoding) passes _check_block_ids; skip the call.
            if new_blocks and (len(new_blocks) != 1 or not 0 <= new_blocks[0] < num_blocks):
                self._check_block_ids(req_id, new_blocks)
            row = index.get(req_id)
            if async_spec and row is not None and nc != state.num_computed_tokens:
                # in the previous step: nc is optimistic by its rejected drafts (vLLM
                # #24799: num_computed_tokens -= num_rejected), or already true
                if nc != state.num_computed_tokens + state.num_rejected:
                    raise ProtocolError(
                        f"cached request {req_id}: num_computed_tokens {nc}, the runner "
                        f"computed {state.num_computed_tokens} ({state.num_rejected} "
                        "drafts rejected)")
                nc = state.num_computed_tokens
            state.num_computed_tokens = nc
            if resumed_flags[i]:
                state.block_ids = list(new_blocks)  # replacement: recompute from scratch
            elif new_blocks:
                state.block_ids.extend(new_blocks)
            if row is None:
                if later:  # the whole history rides in all_token_ids (1d37eb37)
                    self._restore_tokens(state, all_token_ids, num_output[i])
                readd.append((state, i))  # preempted and resumed, or left out last step
                continue
            num_computed_mv[row] = nc
            if new_blocks:
                batch.append_block_ids(row, new_blocks)
            if send:
                write(state, row, nc, new_token_ids[i])

        if later and len(readd) != len(all_token_ids):
            raise ProtocolError(f"all_token_ids holds {len(all_token_ids)} requests, "
                                f"{len(readd)} cached requests were not in the batch")
        for state in to_add:
            batch.add_request(state)
        for state, i in readd:
            row = batch.add_request(state)  # from the kept state: prompt + known outputs
            if send:
                write(state, row, state.num_computed_tokens, new_token_ids[i])
        batch.condense()
        if so.scheduled_spec_decode_tokens:
            self._write_drafts(so.scheduled_spec_decode_tokens)

    def _later_fields(self, cached) -> tuple[list[bool], dict[str, list[int]], list[int]]:
        """The 1d37eb37 layout's ``CachedRequestData`` read as ``update_states`` reads
        the 7f280d69c one: ``resumed_req_ids`` as one flag per cached request, then
        ``all_token_ids`` and ``num_output_tokens``. ``ProtocolError`` for a resumed id
        that is not a cached request, or ``num_output_tokens`` of another length than
        ``req_ids``."""
        req_ids = cached.req_ids
        resumed = cached.resumed_req_ids
        flags = [req_id in resumed for req_id in req_ids] if resumed else [False] * len(req_ids)
        if resumed and sum(flags) != len(resumed):
            raise ProtocolError(f"resumed_req_ids names {len(resumed)} requests, "
                                f"{sum(flags)} of them cached requests")
        num_output = cached.num_output_tokens
        if len(num_output) != len(req_ids):
            raise ProtocolError(f"num_output_tokens has {len(num_output)} entries for "
                                f"{len(req_ids)} cached requests")
        return flags, cached.all_token_ids, num_output

    @staticmethod
    def _restore_tokens(state: CachedRequestState, all_token_ids: dict[str, list[int]],
                        num_output_tokens: int) -> None:
        """Take a request's outputs from the message's copy of its whole history, as
        vLLM's V1 runner restores a request that was not in the batch
        (``req_state.output_token_ids = all_token_ids[req_id][-num_output_tokens:]``,
        there with async scheduling only; here always): the request is then re-added
        from them, so under ``cached`` a resumed request's
        tokens come from the message, not from what the runner kept. ``ProtocolError``
        where the message has no history for it, or one whose length is not its prompt
        plus ``num_output_tokens``."""
        ids = all_token_ids.get(state.req_id)
        if ids is None:
            raise ProtocolError(f"cached request {state.req_id} was not in the batch and "
                                "all_token_ids holds no history for it")
        if len(ids) != state.num_prompt_tokens + num_output_tokens:
            raise ProtocolError(f"all_token_ids of {state.req_id} holds {len(ids)} tokens, "
                                f"its prompt {state.num_prompt_tokens} + num_output_tokens "
                                f"{num_output_tokens}")
        state.output_token_ids = ids[state.num_prompt_tokens:]

    def _write_drafts(self, spec_tokens: dict[str, list[int]]) -> None:
        """Write each request's draft ids into its row from ``num_tokens_no_spec`` on and
        count them in ``num_tokens`` (vLLM 7f280d69c ``_update_states``: "Add
        spec_token_ids to token_ids_cpu"). Under async scheduling the message's drafts
        are placeholders and the runner's own (``_draft_token_ids``) are written
        instead. Raises ``ProtocolError`` for a request not in the batch, more drafts
        than ``num_spec_tokens`` (or, under async scheduling, than the runner holds, or
        ids other than placeholders; without it, placeholders: the scheduler's async
        scheduling with a runner built without ``async_scheduling``, whose drafts would
        all be rejected), or drafts past ``max_model_len``."""
        batch = self.input_batch
        index = batch.req_id_to_index
        width = self.max_model_len
        held = self._draft_token_ids if self.async_spec else None
        for req_id, drafts in spec_tokens.items():
            row = index.get(req_id)
            if row is None:
                raise ProtocolError(f"draft tokens scheduled for {req_id}, which is not in "
                                    "the batch")
            num = len(drafts)
            if held is not None:  # placeholders: this runner's own drafts go there
                own = held.get(req_id, ())
                if num > len(own) or (num and drafts[0] != PLACEHOLDER):
                    raise ProtocolError(f"{num} draft tokens scheduled for {req_id} "
                                        f"(first {drafts[0] if num else '-'}), the runner "
                                        f"holds {len(own)} drafts for it")
                drafts = own[:num]
            elif num and drafts[0] == PLACEHOLDER:  # never a token id: a setting differs
                raise ProtocolError(f"placeholder draft tokens scheduled for {req_id}: the "
                                    "scheduler runs async scheduling, this runner does not")
            if num > self.num_spec_tokens:
                raise ProtocolError(f"{num} draft tokens scheduled for {req_id}, "
                                    f"num_spec_tokens is {self.num_spec_tokens}")
            start = batch.num_tokens_no_spec_mv[row]
            if start + num > width:
                raise ProtocolError(f"draft tokens of {req_id} run past max_model_len "
                                    f"{width}")
            base = row * width + start
            batch.token_ids_flat[base:base + num] = np.asarray(drafts, np.int32)
            batch.num_tokens_mv[row] = start + num

    def _check_new_request(self, new) -> None:
        """``ProtocolError`` unless a ``NewRequestData`` fits this runner's limits."""
        n = len(new.prompt_token_ids)
        if not 0 < n <= self.max_model_len:  # it must fit its row of the token buffer
            raise ProtocolError(f"new request {new.req_id}: prompt of {n} tokens outside "
                                f"[1, max_model_len {self.max_model_len}]")
        if not 0 <= new.num_computed_tokens < n:
            raise ProtocolError(f"new request {new.req_id}: num_computed_tokens "
                                f"{new.num_computed_tokens} outside [0, {n})")
        if len(new.block_ids) != 1:
            raise ProtocolError(f"new request {new.req_id}: {len(new.block_ids)} KV-cache "
                                "groups, this runner has 1")
        self._check_block_ids(new.req_id, new.block_ids[0])

    def _check_block_ids(self, req_id: str, block_ids: list[int]) -> None:
        if (len(block_ids) > self.max_blocks_per_req or min(block_ids, default=0) < 0
                or max(block_ids, default=0) >= self.num_blocks):
            raise ProtocolError(
                f"request {req_id}: block ids {block_ids[:8]}{'...' if len(block_ids) > 8 else ''}"
                f" outside [0, num_blocks {self.num_blocks}) or more than "
                f"{self.max_blocks_per_req} per request")

    def _check_schedule(self, so: SchedulerOutput, positions: np.ndarray, total: int) -> None:
        """``ProtocolError`` if a row's last scheduled position runs past
        ``max_model_len`` or the counts do not sum to ``total_num_scheduled_tokens``."""
        if len(positions) and int(positions.max()) >= self.max_model_len:
            raise ProtocolError(f"num_scheduled_tokens runs past max_model_len "
                                f"{self.max_model_len}: last position {int(positions.max())}")
        if total != so.total_num_scheduled_tokens:
            raise ProtocolError(f"num_scheduled_tokens sum to {total}, "
                                f"total_num_scheduled_tokens says {so.total_num_scheduled_tokens}")

    # ------------------------------------------------------------------ 2
    def prepare_inputs(self, so: SchedulerOutput) -> StepInputs:
        """Per-row counts and positions, per-token positions, and the flat input ids of
        this step gathered from the token buffer (as vLLM's ``_prepare_inputs``).

        A pure-decode step (one scheduled token per row) takes ``decode_token_layout``,
        which gives the same arrays as the general ``token_layout`` with fewer numpy
        calls.

        Raises ``ProtocolError`` when ``num_scheduled_tokens`` names a request not in
        the batch, does not sum to ``total_num_scheduled_tokens``, or runs past
        ``max_model_len`` (such a message would otherwise read another row's tokens
        silently). A negative count fails in ``np.repeat`` (the runner loop reports it).
        """
        batch = self.input_batch
        req_ids = batch.req_ids
        scheduled = so.num_scheduled_tokens
        num_scheduled = [scheduled[r] for r in req_ids]
        n = len(req_ids)
        if len(scheduled) != n:
            unknown = sorted(scheduled.keys() - set(req_ids))[:3]
            raise ProtocolError(f"num_scheduled_tokens names {len(scheduled)} requests, the "
                                f"batch holds {n} (not in the batch: {', '.join(unknown)})")
        num_computed_np = batch.num_computed_tokens_cpu[:n].astype(np.int64)
        if n and min(num_scheduled) == 1 and max(num_scheduled) == 1:
            layout = decode_token_layout(num_computed_np, self.max_model_len)
            self._check_schedule(so, layout[2], n)
        else:
            layout = token_layout(num_computed_np, num_scheduled, self.max_model_len,
                                  lambda positions, total: self._check_schedule(
                                      so, positions, total))
        rows, seq_lens, positions, query_start_loc, token_positions, flat = layout
        input_ids = np.take(batch.token_ids_cpu.ravel(), flat)
        spec = so.scheduled_spec_decode_tokens
        if not spec:
            return StepInputs(req_ids, num_scheduled, num_computed_np.tolist(), rows,
                              positions, input_ids, token_positions, query_start_loc, seq_lens)
        # Speculative decoding: sample at each draft's position and the one before it.
        if self.async_spec:  # the runner's own drafts in place of the placeholders
            held = self._draft_token_ids
            spec_token_ids = [held[r][:len(spec[r])] if r in spec else [] for r in req_ids]
        else:
            spec_token_ids = [spec.get(r, []) for r in req_ids]
        counts = np.array([len(d) + 1 for d in spec_token_ids], dtype=np.int64)
        sample_rows = np.repeat(rows, counts)
        starts = np.cumsum(counts) - counts
        sample_positions = (np.repeat(positions - counts + 1, counts)
                            + np.arange(len(sample_rows), dtype=np.int64)
                            - np.repeat(starts, counts))
        return StepInputs(req_ids, num_scheduled, num_computed_np.tolist(), rows, positions,
                          input_ids, token_positions, query_start_loc, seq_lens,
                          spec_token_ids, sample_rows, sample_positions)

    # ------------------------------------------------------------------ 3
    def sample(self, inputs: StepInputs) -> list[int]:
        """Forward pass and greedy sampling: one token id per row. The model reads the
        persistent batch (token buffer, block table) and ``inputs``."""
        return self.model.execute(self.input_batch, inputs).tolist()

    # ------------------------------------------------------------------ 4
    def write_back(self, inputs: StepInputs, sampled: list[int]) -> list[list[int]]:
        """Per request: discard partial-prefill samples; under ``cached`` write the rest.

        A sample is discarded while the request's scheduled tokens end before its
        length, counted as prompt + tokens sampled so far
        (``CachedRequestState.num_sampled_tokens``). vLLM compares with ``num_tokens``
        (prompt + ``output_token_ids``) instead; under ``send`` (vLLM before #20291)
        that misses the token sampled in the step before a preemption, which the runner
        has not been sent yet, so a resumed chunk ending just before it would be taken
        as complete and its sample returned. Both policies run this same check.

        Returns ``sampled_token_ids``: ``[num_reqs][0 or 1]`` (with drafts:
        ``write_back_spec``).
        """
        if self.num_spec_tokens:
            return self.write_back_spec(inputs, sampled)
        requests = self.requests
        write = None if self.tokens_from_scheduler else self.write_token_ids
        num_tokens_no_spec = self.input_batch.num_tokens_no_spec_mv
        if len(sampled) != len(inputs.req_ids):
            raise RunnerError(f"the model sampled {len(sampled)} ids for "
                              f"{len(inputs.req_ids)} requests")
        req_ids = inputs.req_ids
        num_computed = inputs.num_computed
        num_scheduled = inputs.num_scheduled
        valid: list[list[int]] = []
        append = valid.append
        for row in range(len(req_ids)):
            state = requests[req_ids[row]]
            if (num_computed[row] + num_scheduled[row]
                    < state.num_prompt_tokens + state.num_sampled_tokens):
                append([])  # partial prefill (or partial recompute after preemption)
                continue
            ids = [sampled[row]]
            append(ids)
            state.num_sampled_tokens += 1
            if write is not None:
                write(state, row, num_tokens_no_spec[row], ids)
        return valid

    def write_back_spec(self, inputs: StepInputs, sampled: list[int]) -> list[list[int]]:
        """``write_back`` with speculative decoding (vLLM 7f280d69c ``execute_model``:
        the rejection sampler, greedy, then "Cache the sampled tokens in the model
        runner", then ``propose_draft_token_ids``).

        ``sampled``: the target's ids at ``inputs.sample_positions``, row by row (``s +
        1`` for a row with ``s`` drafts, else 1). Per row: a partial prefill gives
        ``[]``; else draft ``j`` is accepted while it equals the target's id at the
        position before it, and the row's ids are the accepted drafts + the target's id
        after them (1 to ``s + 1`` ids); under ``cached`` they are written from
        ``num_tokens_no_spec``. Then ``num_spec_tokens`` drafts are proposed for every
        row with ids (``spec_token_ids`` of ``build_output``; ``[]`` for the others).

        Under async scheduling (``async_spec``) the proposals are kept in
        ``_draft_token_ids``, each row's true count after the step and its rejected
        drafts go to its ``CachedRequestState`` and the rejected drafts' ids in
        ``inputs.input_ids`` become ``-1`` (module docstring).

        Returns ``sampled_token_ids``: ``[num_reqs][0 .. s + 1]``. Raises
        ``RunnerError`` when the model returns the wrong number of ids.
        """
        requests = self.requests
        write = None if self.tokens_from_scheduler else self.write_token_ids
        batch = self.input_batch
        num_tokens_no_spec = batch.num_tokens_no_spec_mv
        req_ids = inputs.req_ids
        drafts_of = inputs.spec_token_ids or [()] * len(req_ids)
        if len(sampled) != len(inputs.sample_rows):
            raise RunnerError(f"the model sampled {len(sampled)} ids for "
                              f"{len(inputs.sample_rows)} positions")
        num_computed = inputs.num_computed
        num_scheduled = inputs.num_scheduled
        async_spec = self.async_spec
        masked_rows: list[int] = []     # async_spec: rows with rejected drafts
        masked_counts: list[int] = []   # ... and how many (the row's last fed ids)
        valid: list[list[int]] = []
        prop_rows: list[int] = []
        first_new: list[int] = []
        offset = 0
        for row in range(len(req_ids)):
            drafts = drafts_of[row]
            num = len(drafts)
            target = sampled[offset:offset + num + 1]
            offset += num + 1
            state = requests[req_ids[row]]
            if (num_computed[row] + num_scheduled[row] - num
                    < state.num_prompt_tokens + state.num_sampled_tokens):
                valid.append([])  # partial prefill (or partial recompute after preemption)
                if async_spec:
                    state.num_computed_tokens = num_computed[row] + num_scheduled[row]
                    state.num_rejected = 0
                continue
            accepted = 0
            while accepted < num and drafts[accepted] == target[accepted]:
                accepted += 1
            if async_spec:
                rejected = num - accepted
                state.num_computed_tokens = num_computed[row] + num_scheduled[row] - rejected
                state.num_rejected = rejected
                if rejected:  # the scheduler never learns them (-1 in the digest, below)
                    masked_rows.append(row)
                    masked_counts.append(rejected)
            ids = target[:accepted + 1]
            valid.append(ids)
            prop_rows.append(row)
            first_new.append(state.num_prompt_tokens + state.num_sampled_tokens)
            state.num_sampled_tokens += len(ids)
            if write is not None:
                write(state, row, num_tokens_no_spec[row], ids)
        self._proposals = self._propose(prop_rows, first_new, valid)
        if async_spec:
            self._keep_drafts(inputs, prop_rows, masked_rows, masked_counts)
        return valid

    def _keep_drafts(self, inputs: StepInputs, prop_rows: list[int], masked_rows: list[int],
                     masked_counts: list[int]) -> None:
        """Async scheduling with drafts, after ``write_back_spec``: keep this step's
        proposals for the rows ``prop_rows`` in ``_draft_token_ids`` (vLLM #24799), send
        none, and write -1 over the last ``masked_counts[i]`` ids fed by row
        ``masked_rows[i]`` in ``inputs.input_ids`` (its rejected drafts)."""
        if masked_rows:
            counts = np.asarray(masked_counts, dtype=np.int64)
            ends = inputs.query_start_loc[np.asarray(masked_rows, dtype=np.int64) + 1]
            starts = np.cumsum(counts) - counts
            idx = (np.repeat(ends - counts - starts, counts)
                   + np.arange(int(starts[-1] + counts[-1]), dtype=np.int64))
            inputs.input_ids[idx] = PLACEHOLDER
        held, req_ids, proposals = self._draft_token_ids, inputs.req_ids, self._proposals
        for row in prop_rows:
            held[req_ids[row]] = proposals[row]
        self._proposals = None  # not sent: spec_token_ids stays None

    def _propose(self, rows: list[int], first_new: list[int],
                 valid: list[list[int]]) -> list[list[int]]:
        """``num_spec_tokens`` draft ids per row in ``rows`` (whose ids this step,
        ``valid[row]``, start at position ``first_new``), ``[]`` for the other rows
        (the model's ``propose``: ``NullModel.propose``, ``TorchModel.propose``)."""
        proposals: list[list[int]] = [[] for _ in valid]
        if not rows:
            return proposals
        k = self.num_spec_tokens
        n = len(rows)
        new_ids = np.zeros((n, k + 1), dtype=np.int64)
        last = np.empty(n, dtype=np.int64)
        for i, row in enumerate(rows):
            ids = valid[row]
            new_ids[i, :len(ids)] = ids
            last[i] = first_new[i] + len(ids) - 1
        drafts = self.model.propose(self.input_batch,
                                    np.asarray(rows, dtype=np.int64), last,
                                    np.asarray(first_new, dtype=np.int64), new_ids, k,
                                    self.spec_acceptance).tolist()
        for i, row in enumerate(rows):
            proposals[row] = drafts[i]
        return proposals

    # ------------------------------------------------------------------ 5
    def build_output(self, inputs: StepInputs, valid: list[list[int]]) -> ModelRunnerOutput:
        """The step's ``ModelRunnerOutput``: the batch's rows, ``valid`` as
        ``sampled_token_ids`` and, with speculative decoding, the drafts proposed by
        ``write_back_spec`` as ``spec_token_ids``."""
        proposals, self._proposals = self._proposals, None
        return self._model_runner_output(list(inputs.req_ids),
                                         dict(self.input_batch.req_id_to_index), valid,
                                         proposals)

    # ------------------------------------------------- device-input path (async)
    def placeholder_map(self, inputs: StepInputs) -> tuple[np.ndarray, np.ndarray]:
        """Where this step feeds the last launched step's samples (vLLM #23569
        ``_prepare_input_ids``): int64 ``(flat_idx, prev_idx)``, input position
        ``flat_idx[i]`` takes the previous step's sampled id ``prev_idx[i]`` (its row
        then). A row qualifies when its request was in the previous step, that step
        sampled a kept id for it (not a partial prefill: the same test as
        ``write_back``, whose bookkeeping for the step before has been done; or, when
        the previous step was finished already, its recorded ``kept`` ids) and this
        step's last scheduled position is the one that id fills (the scheduler's
        placeholder: vLLM takes each such request's last scheduled token too)."""
        prev = self._prev_step
        empty = np.zeros(0, np.int64)
        if prev is None:
            return empty, empty
        prev_index, prev_seq_lens, kept = prev.rows, prev.inputs.seq_lens, prev.kept
        requests = self.requests
        qsl = inputs.query_start_loc
        flat: list[int] = []
        src: list[int] = []
        for row, req_id in enumerate(inputs.req_ids):
            j = prev_index.get(req_id)
            if j is None:
                continue
            seq_len = int(prev_seq_lens[j])
            if kept is not None:  # the previous step was finished already
                if req_id not in kept:
                    continue
            elif seq_len < (requests[req_id].num_prompt_tokens
                            + requests[req_id].num_sampled_tokens):
                continue  # the previous step was a partial prefill: no sample
            if int(inputs.positions[row]) != seq_len:
                continue  # the sampled id is not this step's input
            flat.append(int(qsl[row + 1]) - 1)
            src.append(j)
        return np.asarray(flat, np.int64), np.asarray(src, np.int64)

    def launch(self, so: SchedulerOutput) -> "LaunchedStep":
        """Phases 1-3 of a step on the device-input path, without waiting for its ids.

        ``update_states`` and ``prepare_inputs`` as always (the input ids gathered from
        the host token buffer, where a placeholder position may still hold a stale id:
        the previous step's sample is not written there yet), then the forward, whose
        placeholder positions (``placeholder_map``) are filled on the device from the
        previous step's sampled ids (``cuda_step.DeviceSampledIds.fill``), and the
        non-blocking copy of this step's ids (and of the input ids it fed) to the host.
        The previous step must have been ``finish``-ed before this step's successor is
        launched (one step pending at most). Returns the ``LaunchedStep`` for
        ``finish``; ``inputs.req_ids`` and the rows are snapshots (the next step's
        ``update_states`` moves rows)."""
        self.update_states(so)
        return self.launch_prepared(so, self.prepare_inputs(so))

    def launch_prepared(self, so: SchedulerOutput, inputs: StepInputs) -> "LaunchedStep":
        """The forward + copy part of ``launch`` (timed apart by the process loop)."""
        inputs.req_ids = list(inputs.req_ids)
        rows = dict(self.input_batch.req_id_to_index)
        flat_idx, prev_idx = self.placeholder_map(inputs)
        device_ids = self.device_ids
        fill = None
        if len(flat_idx):  # its host half now, staged with the step's inputs
            fill = device_ids.filler(flat_idx, prev_idx, self.model._to_device)
        sampled_t, fed_t = self.model.launch(self.input_batch, inputs, fill)
        step = LaunchedStep(so, inputs, rows, device_ids.start_copy(sampled_t, fed_t))
        self._prev_step = step
        return step

    def finish(self, step: "LaunchedStep") -> ModelRunnerOutput:
        """Phases 4-5 of a launched step: wait for its copy to the host (on CUDA the
        event; the next step may be running on the device meanwhile), set
        ``inputs.input_ids`` to the ids the device actually fed (read back from the
        device input tensor, so the input oracle digests those, at this point), write
        the sampled ids into the host token buffer and build the output."""
        inputs = step.inputs
        sampled, fed = step.copy.wait()
        self.model.collect(len(inputs.req_ids))
        inputs.input_ids = fed.astype(np.int32)
        valid = self.write_back_by_id(inputs, sampled.tolist())
        step.kept = {r for r, ids in zip(inputs.req_ids, valid) if ids}
        return self._model_runner_output(list(inputs.req_ids), step.rows, valid, None)

    def write_back_by_id(self, inputs: StepInputs, sampled: list[int]) -> list[list[int]]:
        """``write_back`` for a step finished after its successor's ``update_states``:
        each request is found by id, in its current row (rows move when the batch is
        condensed); one no longer in the batch (not scheduled in the successor, its
        state kept) gets its id appended to its kept state's outputs, from which it is
        re-added. Same partial-prefill test as ``write_back``."""
        if len(sampled) != len(inputs.req_ids):
            raise RunnerError(f"the model sampled {len(sampled)} ids for "
                              f"{len(inputs.req_ids)} requests")
        requests = self.requests
        index = self.input_batch.req_id_to_index
        num_tokens_no_spec = self.input_batch.num_tokens_no_spec_mv
        write = self.write_token_ids
        valid: list[list[int]] = []
        for i, req_id in enumerate(inputs.req_ids):
            state = requests.get(req_id)
            if state is None:
                raise RunnerError(f"{req_id} was finished while its step was in flight")
            if (inputs.num_computed[i] + inputs.num_scheduled[i]
                    < state.num_prompt_tokens + state.num_sampled_tokens):
                valid.append([])
                continue
            ids = [sampled[i]]
            valid.append(ids)
            state.num_sampled_tokens += 1
            row = index.get(req_id)
            if row is None:
                state.output_token_ids.append(ids[0])
            else:
                write(state, row, num_tokens_no_spec[row], ids)
        return valid

    def execute_model(self, so: SchedulerOutput) -> ModelRunnerOutput:
        """All five phases in order (for tests and the single-process path)."""
        self.update_states(so)
        inputs = self.prepare_inputs(so)
        sampled = self.sample(inputs)
        valid = self.write_back(inputs, sampled)
        return self.build_output(inputs, valid)


class LaunchedStep:
    """A step launched on the device-input path (``ModelRunner.launch``): its
    ``SchedulerOutput``, ``StepInputs`` (``req_ids`` a snapshot), ``rows`` (the batch's
    ``req_id_to_index`` at launch, a copy) and ``copy`` (``cuda_step.SampledCopy``);
    ``kept``: once finished, the ids of the requests whose sample was kept (``None``
    before)."""

    __slots__ = ("so", "inputs", "rows", "copy", "kept")

    def __init__(self, so, inputs, rows, copy):
        self.so = so
        self.inputs = inputs
        self.rows = rows
        self.copy = copy
        self.kept: Optional[set[str]] = None
