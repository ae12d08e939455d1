"""Pipeline parallelism (``--pp N``), the engine's side, no I/O: the batch-queue
scheduler, one stage's step and the hidden states the stages pass on.

As vLLM V1 with ``pipeline_parallel_size > 1`` (``EngineCore.step_with_batch_queue``,
``max_concurrent_batches = pp``): the scheduler keeps up to ``pp`` batches in flight,
each a micro-batch of requests no other in-flight batch holds (a running request whose
sampled token has not come back has nothing to schedule), so stage ``i`` computes
batch ``n`` while stage ``i + 1`` computes batch ``n - 1``.
``PipelineScheduler`` lowers ``Scheduler.max_reqs_per_step`` to ``ceil(max_num_seqs /
pp)``, so a steady batch of B requests splits into ``pp`` micro-batches of B / pp
(without the cap the first step would take all B and the pipeline would run one batch
at a time: the figure would measure the bubble).

Every stage receives every ``SchedulerOutput`` (vLLM broadcasts it to all workers) and
keeps its own persistent batch and token buffer, which the input oracle checks. Where
each stage's token ids come from (``PipelineStage``):

- the last stage samples and writes its own samples into its buffer (as after PR
  #20291: ``_update_states`` reads ``new_token_ids`` only on non-last PP ranks);
- ``send`` (PR #20291 kept it for PP): the other stages take them from
  ``CachedRequestData.new_token_ids``: the ids travel last stage -> scheduler -> every
  stage in the next ``SchedulerOutput``;
- ``direct`` (vLLM #32618, with async scheduling): the scheduler sends none (its policy
  is ``cached``), and the last stage sends each step's sampled ids straight to every
  other stage (``torch.distributed``: ``wire.pp``). A stage takes them, in step order,
  before it prepares a step whose requests need them (``PipelineStage.needs_ids``).

``cached`` alone has no meaning here: the first stage never sees the sampler, so with
no ids in the message and no direct path it would feed stale ids (vLLM #20291 keeps
sending under PP). ``cached`` runs only with one stage (``pp = 1``, where the first
stage is the last), and the ``pp`` scenario's ``direct`` at ``pp = 1`` is that.

Hidden states (null and fixed-step models): stage ``i`` passes stage ``i + 1`` one row
of ``HIDDEN_SIZE`` 2-byte elements per scheduled token (``HIDDEN_BYTES_PER_TOKEN`` =
4,096 bytes: Llama-3.2-1B's hidden size, 2,048, in bf16), int16 on the wire. The first
stage computes the null model's hash of each request's last scheduled token from its
own token buffer (``NullModel.hash_state``) and writes it into the first 8 bytes of that
token's row; the middle stages pass the rows on; the last stage maps the hash to an id
(``TokenIds.from_hash``). So the ids equal the single runner's, and a stage that feeds
a wrong id changes the tokens as well as failing the input oracle. The fixed-step
model's step is split evenly over the stages: each waits ``step_time_ms / pp`` per
micro-batch. The torch model is split by layers, evenly
(``PipelineStage.layers``, ``TorchModel.forward_stage``): its hidden states are the
float32 ``[num_tokens, hidden_size]`` tensor between two layers; on CUDA they go through
page-locked host memory (gloo moves host tensors; that path has not run on a GPU here).
"""

from __future__ import annotations

import collections
import time
from typing import Optional

import numpy as np

from ipc_bench.engine.config import CACHED, SEND, ConfigError, ModelConfig, SchedulerConfig
from ipc_bench.engine.input_batch import StepInputs
from ipc_bench.engine.messages import STRUCTS, MessageSet, ModelRunnerOutput, SchedulerOutput
from ipc_bench.engine.model_runner import ModelRunner, RunnerError
from ipc_bench.engine.scheduler import Request, SchedulePlan, Scheduler, SchedulerError

#: Stage counts ``--pp`` accepts.
PP_SIZES = (1, 2, 4)
#: Models whose stages run here (the torch model split by layers, on CPU).
PP_MODELS = ("null", "fixed-step", "torch")
#: The policy whose ids go last stage -> first stage directly (vLLM #32618).
DIRECT = "direct"
#: Policies of a pipeline: ``send`` and ``direct`` (``cached`` only at pp = 1).
PP_POLICIES = (SEND, DIRECT)
#: Elements of one token's hidden state, and their size on the wire (int16, as bf16).
HIDDEN_SIZE = 2048
HIDDEN_DTYPE = np.int16
HIDDEN_BYTES_PER_TOKEN = HIDDEN_SIZE * np.dtype(HIDDEN_DTYPE).itemsize
#: Bytes of one sampled id on the direct path (int32, one per scheduled request).
DIRECT_ID_BYTES = 4


def check_pp(value: int) -> int:
    """``value`` if it is one of ``PP_SIZES``; ``ValueError`` (one line) otherwise."""
    if value not in PP_SIZES:
        raise ValueError(f"--pp must be one of {', '.join(map(str, PP_SIZES))}, got {value}")
    return value


def check_pp_model(model: ModelConfig) -> None:
    """``ConfigError`` (one line) for a model whose stages do not run here: other than
    ``PP_MODELS``, or the torch model with CUDA graphs (a stage runs its layers
    eagerly). On CUDA a stage stages its hidden states through page-locked host memory
    for gloo (``cuda_step.hidden_to_host``); NCCL is not used (it needs a GPU per
    stage)."""
    if model.name not in PP_MODELS:
        raise ConfigError(f"--pp runs the {', '.join(PP_MODELS)} models; the "
                          f"{model.name} model is not split by layers here")
    if model.name == "torch" and model.cuda_graphs:
        raise ConfigError("--pp runs each stage's share of the torch model's layers "
                          "eagerly: drop --cuda-graphs")


def hidden_bytes(num_tokens: int) -> int:
    """Bytes of one step's hidden states from one stage to the next."""
    return num_tokens * HIDDEN_BYTES_PER_TOKEN


class PipelineScheduler(Scheduler):
    """``Scheduler`` with a batch queue of ``pp`` micro-batches (module docstring).

    ``schedule`` returns ``None`` when every schedulable request is in flight (its
    finished ids and preemptions go with the next step that schedules something).
    A request preempted while a step computing it is in flight would get that step's
    token after it restarted: ``SchedulerError`` (the ``pp`` scenario's KV cache is
    large enough that nothing is preempted)."""

    def __init__(self, config: SchedulerConfig, policy: str, messages: MessageSet = STRUCTS,
                 pp: int = 2):
        super().__init__(config, policy, messages)
        self.pp = check_pp(pp)
        self.max_reqs_per_step = -(-config.max_num_seqs // pp)
        self.in_flight: collections.Counter = collections.Counter()  # req_id -> steps
        self._held: Optional[SchedulePlan] = None
        self._computed: dict[int, list[int]] = {}  # step -> num_computed_tokens it left

    def schedule(self) -> Optional[SchedulePlan]:  # type: ignore[override]
        plan = super().schedule()
        held = self._held
        if held is not None:
            self._held = None
            plan.finished_req_ids |= held.finished_req_ids
            plan.preempted[:0] = held.preempted
        for victim in plan.preempted:
            if self.in_flight[victim.req_id]:
                raise SchedulerError(f"step {plan.step}: request {victim.req_id} preempted "
                                     "while a step computing it is in flight (raise "
                                     "--num-blocks)")
        if not plan.scheduled_reqs:
            self._held = plan
            return None
        for req in plan.scheduled_reqs:
            self.in_flight[req.req_id] += 1
        self._computed[plan.step] = [req.num_computed_tokens for req in plan.scheduled_reqs]
        return plan

    def update_from_output(self, plan: SchedulePlan, output: ModelRunnerOutput) -> list[Request]:
        """``Scheduler.update_from_output`` with each request's ``num_computed_tokens``
        as this plan left it: a later step in flight may have scheduled the request's
        next prefill chunk since, and this step's sample (or its absence) is judged by
        where this step's tokens end."""
        reqs = plan.scheduled_reqs
        now = [req.num_computed_tokens for req in reqs]
        for req, nc in zip(reqs, self._computed.pop(plan.step)):
            req.num_computed_tokens = nc
        try:
            finished = super().update_from_output(plan, output)
        finally:
            for req, nc in zip(reqs, now):
                req.num_computed_tokens = nc
        in_flight = self.in_flight
        for req in reqs:
            in_flight[req.req_id] -= 1
            if not in_flight[req.req_id]:
                del in_flight[req.req_id]
        return finished


class PipelineStage:
    """Stage ``rank`` of ``pp_size``: its ``ModelRunner`` (policy ``cached`` on the last
    stage and under ``direct``, else ``send``) and the parts of its step.

    Step order (``harness.pp_stage``): ``update(so)``; under ``direct`` on a non-last
    stage, while ``needs_ids(so)``: ``apply_ids(ids)`` of the oldest step whose ids
    have not come (``expected_ids()`` gives its length); ``runner.prepare_inputs(so)``;
    the stages after the first receive their hidden states (``hidden_spec``);
    ``forward(hidden, inputs)`` (hidden states out, or on the last stage the sampled
    ids); the last stage then ``runner.write_back`` and ``runner.build_output``, and
    under ``direct`` ``ids_in_schedule_order`` for the other stages."""

    def __init__(self, scheduler: SchedulerConfig, model: ModelConfig, pp_size: int, rank: int,
                 direct: bool, messages: MessageSet = STRUCTS):
        check_pp(pp_size)
        if not 0 <= rank < pp_size:
            raise ConfigError(f"pp_rank {rank} is not a stage of pp_size {pp_size}")
        check_pp_model(model)
        self.rank, self.pp_size, self.direct = rank, pp_size, direct
        self.first, self.last = rank == 0, rank == pp_size - 1
        policy = CACHED if (self.last or direct) else SEND
        self.runner = ModelRunner(scheduler, model, policy, messages)
        self.model = self.runner.model
        self.torch = model.name == "torch"
        num_layers = self.model.preset.num_layers if self.torch else pp_size
        #: the decoder layers this stage runs (the torch model: an even split)
        self.layers = (rank * num_layers // pp_size, (rank + 1) * num_layers // pp_size)
        step_ns = getattr(self.model, "step_ns", 0)
        self.compute_ns = step_ns // pp_size
        self._wait_until = getattr(self.model, "_wait_until", None)
        # direct, non-last: each step's request ids (schedule order) whose ids are to come
        self.awaiting: collections.deque = collections.deque()
        self.seq = 0

    def update(self, so: SchedulerOutput) -> None:
        """``update_states``; under ``direct`` notes the step whose ids will come."""
        self.runner.update_states(so)
        if self.direct and not self.last:
            self.awaiting.append((self.seq, list(so.num_scheduled_tokens)))
        self.seq += 1

    def needs_ids(self, so: SchedulerOutput) -> bool:
        """Whether a scheduled request's row holds fewer tokens than the step reads.
        ``RunnerError`` naming the step when only this step's own ids are left to come
        (the last stage never sent a token this stage needs: a lost token)."""
        batch = self.runner.input_batch
        index, num_tokens, num_computed = (batch.req_id_to_index, batch.num_tokens_mv,
                                           batch.num_computed_tokens_mv)
        for req_id, n in so.num_scheduled_tokens.items():
            row = index[req_id]
            if num_tokens[row] < num_computed[row] + n:
                if not self.awaiting or self.awaiting[0][0] >= self.seq - 1:
                    raise RunnerError(
                        f"step {self.seq - 1}: request {req_id} needs "
                        f"token {num_computed[row] + n - 1}, which no earlier step's "
                        "direct ids carried (a lost token)")
                return True
        return False

    def expected_ids(self) -> tuple[int, int]:
        """(step, number of ids) of the oldest step whose ids have not come."""
        seq, req_ids = self.awaiting[0]
        return seq, len(req_ids)

    def apply_ids(self, ids: np.ndarray) -> None:
        """The last stage's sampled ids of the oldest awaited step (schedule order, -1
        for no sample): each goes at the end of its request's row, or, for a request
        not in the batch now, to its kept outputs (a finished request is skipped)."""
        _, req_ids = self.awaiting.popleft()
        runner = self.runner
        batch = runner.input_batch
        index, end = batch.req_id_to_index, batch.num_tokens_no_spec_mv
        for req_id, tok in zip(req_ids, ids.tolist()):
            if tok < 0:
                continue
            state = runner.requests.get(req_id)
            if state is None:
                continue
            row = index.get(req_id)
            if row is None:
                state.output_token_ids.append(tok)
            else:
                runner.write_token_ids(state, row, int(end[row]), [tok])

    def hidden_spec(self, num_tokens: int) -> tuple[tuple[int, int], np.dtype]:
        """Shape and dtype of a step's hidden states between two stages: ``[num_tokens,
        HIDDEN_SIZE]`` int16 (null, fixed-step), ``[num_tokens, hidden_size]`` float32
        (torch)."""
        if self.torch:
            return (num_tokens, self.model.preset.hidden_size), np.dtype(np.float32)
        return (num_tokens, HIDDEN_SIZE), np.dtype(HIDDEN_DTYPE)

    def forward(self, hidden: Optional[np.ndarray], inputs: StepInputs):
        """This stage's share of the step: from the token ids (first stage, ``hidden``
        ``None``) or the previous stage's hidden states; returns the hidden states for
        the next stage or, on the last stage, one sampled id per row (a list)."""
        if self.torch:
            return self._torch_forward(hidden, inputs)
        if hidden is None:
            hidden = self._first_hidden(inputs)
        self.compute()
        return self._sample(hidden, inputs) if self.last else hidden

    def _torch_forward(self, hidden: Optional[np.ndarray], inputs: StepInputs):
        n = len(inputs.req_ids)
        lo, hi = self.layers
        out = self.model.forward_stage(
            inputs.input_ids if hidden is None else hidden, inputs.token_positions,
            inputs.query_start_loc, inputs.seq_lens, self.runner.input_batch.block_table[:n],
            lo, hi, self.last)
        return out.tolist() if self.last else out

    def _first_hidden(self, inputs: StepInputs) -> np.ndarray:
        """The first stage's hidden states: int16 ``[num_tokens, HIDDEN_SIZE]``, each
        request's hash in the first 8 bytes of its last scheduled token's row."""
        hidden = np.zeros((len(inputs.input_ids), HIDDEN_SIZE), HIDDEN_DTYPE)
        if len(inputs.req_ids):
            h = self.model.hash_state(self.runner.input_batch.token_ids_cpu, inputs.rows,
                                      inputs.positions)
            hidden.view(np.uint64)[inputs.query_start_loc[1:] - 1, 0] = h
        return hidden

    def compute(self) -> None:
        """The fixed-step model's share of the step (``step_time_ms / pp``)."""
        if self.compute_ns and self._wait_until is not None:
            self._wait_until(time.perf_counter_ns() + self.compute_ns)

    def _sample(self, hidden: np.ndarray, inputs: StepInputs) -> list[int]:
        """The last stage: one id per row, from the hash in its last token's row."""
        if not len(inputs.req_ids):
            return []
        h = hidden.view(np.uint64)[inputs.query_start_loc[1:] - 1, 0].copy()
        return self.model.token_ids.from_hash(h).tolist()

    def ids_in_schedule_order(self, so: SchedulerOutput, valid: list[list[int]]) -> np.ndarray:
        """The last stage's samples for the direct path: int32 ``[num_reqs]`` in the
        order of ``so.num_scheduled_tokens``, -1 where nothing was sampled."""
        index = self.runner.input_batch.req_id_to_index
        out = np.full(len(so.num_scheduled_tokens), -1, np.int32)
        for i, req_id in enumerate(so.num_scheduled_tokens):
            got = valid[index[req_id]]
            if got:
                out[i] = got[0]
        return out
