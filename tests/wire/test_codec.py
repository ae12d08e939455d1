"""Exact encodings of known messages, token id widths, and DecodeError (ipc_bench.wire.codecs).

The msgpack bytes below are written out field by field from the MessagePack spec
(array_like Structs: one array of every field value, in declaration order, defaults
included). The pickle codec's exact sizes (vLLM's RPC envelope and dataclasses) are
counted by hand in ``test_pickle_rpc.py``.
"""

from __future__ import annotations

import pickle

import msgspec
import pytest

from ipc_bench.wire.codecs import (
    DecodeError,
    MsgpackCodec,
    PickleCodec,
    messages_of,
    model_runner_output_codec,
    scheduler_output_codec,
)
from ipc_bench.engine.messages import STRUCTS, VLLM_DATACLASSES, MessageSet, ModelRunnerOutput
from ipc_bench.v1rpc.multiproc_executors import WorkerProc
from ipc_bench.engine.workloads import make_req_id

CODECS = ("msgpack", "pickle")


def known_scheduler_output(new_token_ids=None, messages: MessageSet = STRUCTS):
    """One new request ``B`` (3-token prompt), one cached request ``A`` decoding, ``C``
    finished, as ``messages``' classes. ``new_token_ids`` defaults to ``[[300]]`` (send)."""
    return messages.SchedulerOutput(
        scheduled_new_reqs=[messages.new_request_data(
            "B", [1, 200, 70000], messages.sampling_params(16), ([7],))],
        scheduled_cached_reqs=messages.CachedRequestData(
            req_ids=["A"], resumed_from_preemption=[False],
            new_token_ids=[[300]] if new_token_ids is None else new_token_ids,
            new_block_ids=[([8],)], num_computed_tokens=[5]),
        num_scheduled_tokens={"A": 1, "B": 3},
        total_num_scheduled_tokens=4,
        scheduled_spec_decode_tokens={},
        scheduled_encoder_inputs={},
        num_common_prefix_blocks=[0],
        finished_req_ids={"C"},  # one element: a set's order is hash-seed dependent
        free_encoder_input_ids=[],
        structured_output_request_ids={},
        grammar_bitmask=None,
    )


def known_model_runner_output(messages: MessageSet = STRUCTS):
    return messages.model_runner_output(["A", "B"], {"A": 0, "B": 1}, [[300], []])


SCHEDULER_OUTPUT_MSGPACK = (
    b"\x9c"                                   # SchedulerOutput: array of 12 fields
    b"\x91"                                   # scheduled_new_reqs: 1 entry
    b"\x95"                                   #   NewRequestData: 5 fields
    b"\xa1B"                                  #     req_id "B"
    b"\x93\x01\xcc\xc8\xce\x00\x01\x11\x70"   #     prompt [1, 200 (uint8), 70000 (uint32)]
    b"\x94\x10\xcb" + b"\x00" * 8 + b"\xc0\xc3"  # SamplingParams [16, 0.0 (f64), None, True]
    + b"\x91\x91\x07"                         #     block_ids ([7],)
    b"\x00"                                   #     num_computed_tokens 0
    b"\x95"                                   # CachedRequestData: 5 fields
    b"\x91\xa1A"                              #   req_ids ["A"]
    b"\x91\xc2"                               #   resumed_from_preemption [False]
    b"\x91\x91\xcd\x01\x2c"                   #   new_token_ids [[300 (uint16)]]
    b"\x91\x91\x91\x08"                       #   new_block_ids [([8],)]
    b"\x91\x05"                               #   num_computed_tokens [5]
    b"\x82\xa1A\x01\xa1B\x03"                 # num_scheduled_tokens {"A": 1, "B": 3}
    b"\x04"                                   # total_num_scheduled_tokens 4
    b"\x80"                                   # scheduled_spec_decode_tokens {}
    b"\x80"                                   # scheduled_encoder_inputs {}
    b"\x91\x00"                               # num_common_prefix_blocks [0]
    b"\x91\xa1C"                              # finished_req_ids {"C"} (as an array)
    b"\x90"                                   # free_encoder_input_ids []
    b"\x80"                                   # structured_output_request_ids {}
    b"\xc0\xc0"                               # grammar_bitmask, kv_connector_metadata: None
)

MODEL_RUNNER_OUTPUT_MSGPACK = (
    b"\x99"                                   # ModelRunnerOutput: array of 9 fields
    b"\x92\xa1A\xa1B"                         # req_ids ["A", "B"]
    b"\x82\xa1A\x00\xa1B\x01"                 # req_id_to_index {"A": 0, "B": 1}
    b"\x92\x91\xcd\x01\x2c\x90"               # sampled_token_ids [[300], []]
    b"\xc0\xc0"                               # spec_token_ids, logprobs: None
    b"\x80\x90"                               # prompt_logprobs_dict {}, pooler_output []
    b"\xc0\xc0"                               # finished_sending, finished_recving: None
)


# --- exact sizes -----------------------------------------------------------------------


def test_scheduler_output_msgpack_exact_bytes():
    codec = scheduler_output_codec("msgpack")
    so = known_scheduler_output()
    frame = codec.encode(so)
    assert frame == SCHEDULER_OUTPUT_MSGPACK
    assert len(frame) == 67
    assert codec.decode(frame) == so


def test_model_runner_output_msgpack_exact_bytes():
    codec = model_runner_output_codec("msgpack")
    out = known_model_runner_output()
    frame = codec.encode(out)
    assert frame == MODEL_RUNNER_OUTPUT_MSGPACK
    assert len(frame) == 25
    assert codec.decode(frame) == out


@pytest.mark.parametrize("name", CODECS)
def test_round_trip_keeps_every_field_and_class(name):
    messages = messages_of(name)
    so, out = known_scheduler_output(messages=messages), known_model_runner_output(messages)
    so_codec, out_codec = scheduler_output_codec(name), model_runner_output_codec(name)
    back = so_codec.decode(so_codec.encode(so))
    assert back == so and type(back) is messages.SchedulerOutput
    assert type(back.scheduled_new_reqs[0]) is messages.NewRequestData
    assert type(back.scheduled_new_reqs[0].sampling_params) is messages.SamplingParams
    assert back.scheduled_new_reqs[0].block_ids == ([7],)
    assert back.finished_req_ids == {"C"}
    back_out = out_codec.decode(out_codec.encode(out))
    assert back_out == out and type(back_out) is messages.ModelRunnerOutput


def test_cached_policy_message_is_the_send_one_minus_the_token():
    """``cached`` sends ``[]`` (vLLM 7f280d69c without PP: an empty list, shorter than
    the other per-request lists): 4 bytes fewer than ``[[300]]`` in msgpack."""
    send = scheduler_output_codec("msgpack").encode(known_scheduler_output())
    cached = scheduler_output_codec("msgpack").encode(known_scheduler_output([]))
    assert send.replace(b"\x91\x91\xcd\x01\x2c\x91\x91\x91", b"\x90\x91\x91\x91") == cached
    assert len(send) - len(cached) == 4


def test_vllm_shaped_request_id_costs_41_msgpack_bytes():
    req_id = make_req_id(0, 0)
    assert len(req_id) == 39 and req_id.startswith("cmpl-") and req_id.endswith("-0")
    codec = model_runner_output_codec("msgpack")
    short = codec.encode(ModelRunnerOutput(["A"], {"A": 0}, [[1]]))
    long_ = codec.encode(ModelRunnerOutput([req_id], {req_id: 0}, [[1]]))
    # str8 (0xd9, length byte, 39 bytes) instead of fixstr (0xa1 "A"), twice.
    assert len(long_) - len(short) == 2 * (41 - 2)


# --- token id widths -------------------------------------------------------------------


@pytest.mark.parametrize("token_id,width", [
    (0, 1), (127, 1),                 # positive fixint
    (128, 2), (255, 2),               # uint8 (0xcc): the exception to the 1/3/5 rule
    (256, 3), (65_535, 3),            # uint16 (0xcd)
    (65_536, 5), (128_255, 5),        # uint32 (0xce): the top of Llama 3's vocabulary
])
def test_msgpack_token_id_width(token_id, width):
    codec = scheduler_output_codec("msgpack")
    with_token = codec.encode(known_scheduler_output([[token_id]]))
    without = codec.encode(known_scheduler_output([[]]))
    assert len(with_token) - len(without) == width


def test_token_widths_1_3_5_in_a_decode_batch():
    """Ids < 128 take 1 byte, 256..65535 take 3, >= 65536 take 5: a batch of 3 requests."""
    codec = scheduler_output_codec("msgpack")
    ids = [[5], [40_000], [100_000]]
    so = known_scheduler_output()
    cached = msgspec.structs.replace(
        so.scheduled_cached_reqs, req_ids=["A", "D", "E"], resumed_from_preemption=[False] * 3,
        new_token_ids=ids, new_block_ids=[([8],)] * 3, num_computed_tokens=[5] * 3)
    empty = msgspec.structs.replace(cached, new_token_ids=[[], [], []])
    full = codec.encode(msgspec.structs.replace(so, scheduled_cached_reqs=cached))
    bare = codec.encode(msgspec.structs.replace(so, scheduled_cached_reqs=empty))
    assert len(full) - len(bare) == 1 + 3 + 5


# --- DecodeError -----------------------------------------------------------------------


def frames():
    for name in CODECS:
        messages = messages_of(name)
        so, out = known_scheduler_output(messages=messages), known_model_runner_output(messages)
        yield name, scheduler_output_codec(name), scheduler_output_codec(name).encode(so)
        yield name, model_runner_output_codec(name), model_runner_output_codec(name).encode(out)


@pytest.mark.parametrize("name,codec,frame", list(frames()),
                         ids=["msgpack-so", "msgpack-mro", "pickle-so", "pickle-mro"])
def test_every_truncation_raises_decode_error(name, codec, frame):
    for n in range(len(frame)):
        with pytest.raises(DecodeError) as info:
            codec.decode(frame[:n])
        assert type(info.value) is DecodeError
        msg = str(info.value)
        assert msg.startswith(f"{codec.msg_type.__name__}: ") and "\n" not in msg


def test_pickle_frame_of_the_wrong_type():
    so_codec = scheduler_output_codec("pickle")
    out_codec = model_runner_output_codec("pickle")
    mro_frame = out_codec.encode(known_model_runner_output(VLLM_DATACLASSES))
    with pytest.raises(DecodeError) as info:
        so_codec.decode(mro_frame)
    assert type(info.value) is DecodeError
    assert str(info.value) == (
        "SchedulerOutput: expected the RPC tuple ('execute_model', (SchedulerOutput,), {}, "
        "rank), got a tuple of 2 (ResponseStatus, ModelRunnerOutput)")
    with pytest.raises(DecodeError) as info:
        out_codec.decode(pickle.dumps({"req_ids": []}, protocol=5))
    assert str(info.value) == ("ModelRunnerOutput: expected the RPC reply "
                               "(ResponseStatus.SUCCESS, ModelRunnerOutput), got dict")
    # the right envelope around the msgpack codec's Struct of the same name
    struct_so = known_scheduler_output()
    with pytest.raises(DecodeError) as info:
        so_codec.decode(pickle.dumps(("execute_model", (struct_so,), {}, 0), protocol=5))
    assert str(info.value) == ("SchedulerOutput: expected SchedulerOutput, got "
                               "ipc_bench.engine.messages.SchedulerOutput")
    # a worker that failed answers (FAILURE, message): the message is kept, on one line
    failure = (WorkerProc.ResponseStatus.FAILURE, "CUDA error:\nout of memory")
    with pytest.raises(DecodeError) as info:
        out_codec.decode(pickle.dumps(failure, protocol=5))
    assert str(info.value) == ("ModelRunnerOutput: the worker failed: "
                               "CUDA error:\\nout of memory")
    # a failure whose payload cannot print itself (a dataclass whose pickled __dict__
    # lacks its fields) is still one DecodeError line
    broken = VLLM_DATACLASSES.ModelRunnerOutput.__new__(VLLM_DATACLASSES.ModelRunnerOutput)
    broken.__dict__["seq_ids"] = []
    with pytest.raises(DecodeError) as info:
        out_codec.decode(pickle.dumps((WorkerProc.ResponseStatus.FAILURE, broken), protocol=5))
    assert str(info.value) == ("ModelRunnerOutput: the worker failed: <ModelRunnerOutput "
                               "that cannot be printed>")


def test_pickle_codec_carries_only_the_rpc_messages():
    assert scheduler_output_codec("pickle").msg_type is VLLM_DATACLASSES.SchedulerOutput
    assert model_runner_output_codec("pickle").msg_type is VLLM_DATACLASSES.ModelRunnerOutput
    with pytest.raises(ValueError, match="the pickle codec carries vLLM's"):
        PickleCodec(ModelRunnerOutput)  # the msgpack codec's Struct


def test_msgpack_frame_of_the_wrong_type():
    mro_frame = model_runner_output_codec("msgpack").encode(known_model_runner_output())
    with pytest.raises(DecodeError) as info:
        scheduler_output_codec("msgpack").decode(mro_frame)
    assert type(info.value) is DecodeError
    assert str(info.value).startswith("SchedulerOutput: ")


@pytest.mark.parametrize("name", CODECS)
def test_garbage_and_empty_frames(name):
    codec = scheduler_output_codec(name)
    for frame in (b"", b"\xff\xff\xff", b"not a frame at all"):
        with pytest.raises(DecodeError) as info:
            codec.decode(frame)
        assert type(info.value) is DecodeError


def test_codec_classes():
    assert isinstance(scheduler_output_codec("msgpack"), MsgpackCodec)
    assert isinstance(scheduler_output_codec("pickle"), PickleCodec)
    with pytest.raises(KeyError):
        scheduler_output_codec("json")
    assert messages_of("msgpack") is STRUCTS
    assert messages_of("pickle") is VLLM_DATACLASSES
    assert messages_of("none") is STRUCTS  # the single-process baseline builds Structs
