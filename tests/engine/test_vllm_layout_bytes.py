"""The 1d37eb37 layout (``--vllm-layout 1d37eb37``): exact bytes of a known
``CachedRequestData`` in both codecs, what the scheduler fills in it, and the
7f280d69c layout left byte for byte as it was.

The message: two cached requests, ``a`` running (no new block) and ``b`` resumed from
preemption (blocks 5 and 6, history ``[7, 300]``: one prompt token, one output).
"""

from __future__ import annotations

import pickle
import re

import msgspec
import pytest

from ipc_bench.engine.config import LAYOUT_1D37EB37, ConfigError, SchedulerConfig
from ipc_bench.engine.messages import LATER_DATACLASSES, LATER_STRUCTS, STRUCTS, in_layout
from ipc_bench.engine.scheduler import Scheduler
from ipc_bench.v1rpc import later_out
from ipc_bench.wire.codecs import messages_of, scheduler_output_codec

FIELDS = dict(req_ids=["a", "b"], resumed_req_ids={"b"}, new_token_ids=[],
              all_token_ids={"b": [7, 300]}, new_block_ids=[None, ([5, 6],)],
              num_computed_tokens=[9, 0], num_output_tokens=[3, 1])

#: msgspec MessagePack of the array_like Struct: fixarray(7) of the seven fields.
MSGPACK = (b"\x97" b"\x92\xa1a\xa1b" b"\x91\xa1b" b"\x90" b"\x81\xa1b\x92\x07\xcd\x01,"
           b"\x92\xc0\x91\x92\x05\x06" b"\x92\t\x00" b"\x92\x03\x01")

#: pickle (protocol 5) of the dataclass: its class by module and name, then its
#: ``__dict__`` in vLLM 1d37eb37's field order.
PICKLE = (
    b"\x80\x05\x95\xf2\x00\x00\x00\x00\x00\x00\x00"
    b"\x8c\x19ipc_bench.v1rpc.later_out\x94\x8c\x11CachedRequestData\x94\x93\x94)\x81\x94"
    b"}\x94(\x8c\x07req_ids\x94]\x94(\x8c\x01a\x94\x8c\x01b\x94e"
    b"\x8c\x0fresumed_req_ids\x94\x8f\x94(h\x08\x90"
    b"\x8c\rnew_token_ids\x94]\x94"
    b"\x8c\rall_token_ids\x94}\x94h\x08]\x94(K\x07M,\x01es"
    b"\x8c\rnew_block_ids\x94]\x94(N]\x94(K\x05K\x06e\x85\x94e"
    b"\x8c\x13num_computed_tokens\x94]\x94(K\tK\x00e"
    b"\x8c\x11num_output_tokens\x94]\x94(K\x03K\x01eub.")


def test_msgpack_bytes_of_a_known_cached_request_data():
    frame = msgspec.msgpack.encode(LATER_STRUCTS.CachedRequestData(**FIELDS))
    assert frame == MSGPACK and len(frame) == 30
    back = msgspec.msgpack.decode(frame, type=LATER_STRUCTS.CachedRequestData)
    assert back == LATER_STRUCTS.CachedRequestData(**FIELDS)


def test_pickle_bytes_of_a_known_cached_request_data():
    frame = pickle.dumps(LATER_DATACLASSES.CachedRequestData(**FIELDS),
                         protocol=pickle.HIGHEST_PROTOCOL)
    assert frame == PICKLE and len(frame) == 253
    assert pickle.loads(frame) == later_out.CachedRequestData(**FIELDS)


def test_field_order_is_vllm_1d37eb37s():
    cached = ("req_ids", "resumed_req_ids", "new_token_ids", "all_token_ids",
              "new_block_ids", "num_computed_tokens", "num_output_tokens")
    assert LATER_STRUCTS.CachedRequestData.__struct_fields__ == cached
    assert tuple(later_out.CachedRequestData.__dataclass_fields__) == cached
    so = ("scheduled_new_reqs", "scheduled_cached_reqs", "num_scheduled_tokens",
          "total_num_scheduled_tokens", "scheduled_spec_decode_tokens",
          "scheduled_encoder_inputs", "num_common_prefix_blocks", "finished_req_ids",
          "free_encoder_mm_hashes", "preempted_req_ids", "has_structured_output_requests",
          "pending_structured_output_tokens", "num_invalid_spec_tokens",
          "kv_connector_metadata", "ec_connector_metadata", "new_block_ids_to_zero")
    assert LATER_STRUCTS.SchedulerOutput.__struct_fields__ == so
    assert tuple(later_out.SchedulerOutput.__dataclass_fields__) == so
    assert tuple(later_out.NewRequestData.__dataclass_fields__) == (
        "req_id", "prompt_token_ids", "mm_features", "sampling_params", "pooling_params",
        "block_ids", "num_computed_tokens", "lora_request", "prompt_embeds",
        "prefill_token_ids")
    assert len(later_out.__name__) == len("vllm.v1.core.sched.output")


def _preempting_scheduler(codec: str, policy: str) -> tuple[Scheduler, list]:
    """Two requests in a cache of 2 blocks of 4 tokens: the second is preempted when the
    first grows into a second block, then resumed when the first finishes."""
    cfg = SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=64, max_model_len=32,
                          block_size=4, num_blocks=2, vllm_layout=LAYOUT_1D37EB37)
    sched = Scheduler(cfg, policy, messages_of(codec))
    sched.add_request("a", 0, [1, 2, 3], 6)
    sched.add_request("b", 1, [4, 5], 3)
    return sched, []


@pytest.mark.parametrize("codec", ["msgpack", "pickle"])
@pytest.mark.parametrize("policy", ["send", "cached"])
def test_the_scheduler_fills_the_later_fields(codec, policy):
    sched, messages = _preempting_scheduler(codec, policy)
    codec_ = scheduler_output_codec(codec, LAYOUT_1D37EB37)
    from ipc_bench.engine.model_runner import ModelRunner
    from ipc_bench.engine.config import ModelConfig

    runner = ModelRunner(sched.config, ModelConfig(seed=0), policy, messages_of(codec))
    while sched.has_unfinished_requests():
        plan = sched.schedule()
        so = codec_.decode(codec_.encode(sched.build_scheduler_output(plan)))
        messages.append(so)
        runner.update_states(so)
        inputs = runner.prepare_inputs(so)
        out = runner.build_output(inputs, runner.write_back(inputs, runner.sample(inputs)))
        sched.update_from_output(plan, out)
    resumed = [(i, so) for i, so in enumerate(messages)
               if so.scheduled_cached_reqs.resumed_req_ids]
    assert sched.num_preemptions == 1 and len(resumed) == 1
    i, so = resumed[0]
    c = so.scheduled_cached_reqs
    assert c.resumed_req_ids == {"b"} and c.req_ids == ["b"]
    # b decoded before it was preempted: its prompt and its outputs so far
    assert list(c.all_token_ids) == ["b"] and c.num_output_tokens[0] >= 1
    assert len(c.all_token_ids["b"]) == 2 + c.num_output_tokens[0]
    assert c.all_token_ids["b"][:2] == [4, 5] and c.num_computed_tokens == [0]
    assert c.new_block_ids[0] is not None and len(c.new_block_ids[0][0]) == 1
    assert (c.new_token_ids == [c.all_token_ids["b"]]) if policy == "send" else (
        c.new_token_ids == [])
    preempting = messages[[j for j, m in enumerate(messages) if m.preempted_req_ids][0]]
    assert preempting.preempted_req_ids == {"b"}
    # a request scheduled the step before carries no history; no new block: None
    steady = [m.scheduled_cached_reqs for m in messages[1:i]]
    assert all(not m.all_token_ids for m in steady)
    assert any(None in m.new_block_ids for m in steady)


def test_default_layout_is_7f280d69c_and_unknown_ones_are_refused():
    assert SchedulerConfig().vllm_layout == "7f280d69c"
    assert in_layout(STRUCTS) is STRUCTS and in_layout(LATER_STRUCTS) is STRUCTS
    with pytest.raises(ConfigError, match=r"^vllm_layout \(--vllm-layout\) must be one of "
                                          r"7f280d69c, 1d37eb37, got 'x'$"):
        SchedulerConfig(vllm_layout="x").validate()
    with pytest.raises(ValueError, match="^the packed codec carries the 7f280d69c layout "
                                         "only, not 1d37eb37$"):
        scheduler_output_codec("packed", LAYOUT_1D37EB37)


def _runner_with_one_left_out(codec: str = "msgpack"):
    """A runner of the 1d37eb37 layout that ran request ``a`` (prompt [1, 2, 3]) for one
    step, and the next step's message, built by the scheduler, with ``a`` left out of
    the batch in between (an empty step), so that it carries ``a``'s history."""
    from ipc_bench.engine.config import ModelConfig
    from ipc_bench.engine.model_runner import ModelRunner

    cfg = SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=64, max_model_len=32,
                          block_size=4, num_blocks=8, vllm_layout=LAYOUT_1D37EB37)
    sched = Scheduler(cfg, "cached", messages_of(codec))
    runner = ModelRunner(cfg, ModelConfig(seed=0), "cached", messages_of(codec))
    sched.add_request("a", 0, [1, 2, 3], 5)
    plan = sched.schedule()
    so = sched.build_scheduler_output(plan)
    runner.update_states(so)
    inputs = runner.prepare_inputs(so)
    sched.update_from_output(plan, runner.build_output(
        inputs, runner.write_back(inputs, runner.sample(inputs))))
    empty = sched.build_scheduler_output(type(plan)(sched.step, set()))
    runner.update_states(empty)  # a left out: it leaves the persistent batch
    sched._prev_scheduled = {}  # the empty step scheduled nothing, as schedule() records
    return runner, sched.build_scheduler_output(sched.schedule())


def test_the_runner_restores_a_left_out_request_from_all_token_ids():
    runner, so = _runner_with_one_left_out()
    c = so.scheduled_cached_reqs
    assert c.req_ids == ["a"] and c.resumed_req_ids == set() and c.num_output_tokens == [1]
    history = c.all_token_ids["a"]
    assert history[:3] == [1, 2, 3] and len(history) == 4
    runner.requests["a"].output_token_ids = [-5]  # what the runner kept is not used
    runner.update_states(so)
    assert runner.requests["a"].output_token_ids == history[3:]
    row = runner.input_batch.req_id_to_index["a"]
    assert runner.input_batch.token_ids_cpu[row, :4].tolist() == history


@pytest.mark.parametrize("change,message", [
    (lambda c: c.all_token_ids.clear(),
     "cached request a was not in the batch and all_token_ids holds no history for it"),
    (lambda c: c.all_token_ids["a"].pop(),
     "all_token_ids of a holds 3 tokens, its prompt 3 + num_output_tokens 1"),
    (lambda c: c.num_output_tokens.append(0),
     "num_output_tokens has 2 entries for 1 cached requests"),
    (lambda c: c.resumed_req_ids.add("z"),
     "resumed_req_ids names 1 requests, 0 of them cached requests"),
])
def test_the_runner_refuses_a_history_that_does_not_fit(change, message):
    from ipc_bench.engine.scheduler import ProtocolError

    runner, so = _runner_with_one_left_out()
    change(so.scheduled_cached_reqs)
    with pytest.raises(ProtocolError, match=f"^{re.escape(message)}$"):
        runner.update_states(so)
