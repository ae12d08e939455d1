"""The packed codec (vLLM PR #54406): exact bytes counted by hand, round trips of any
SchedulerOutput (hypothesis), errors on frames of another shape.

Counting conventions as in ``test_pickle_rpc.py`` (protocol 5, one frame). An
``array('i')`` pickles as ``REDUCE`` of ``array._array_reconstructor`` and the 4-tuple
``(array.array, 'i', 8, <bytes>)``: the first array writes both globals (two strings
each, ``STACK_GLOBAL``, ``MEMOIZE``) and ``'i'``, later ones ``BINGET`` them; the bytes
are ``SHORT_BINBYTES`` + length + 4 per int + ``MEMOIZE`` (``b''`` is one object: a
``BINGET`` after its first use).
"""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipc_bench.engine.messages import VLLM_DATACLASSES as M
from ipc_bench.v1rpc.multiproc_executors import EXECUTE_MODEL_FAST_PATH_TAG
from ipc_bench.wire.codecs import (DecodeError, PackedCodec, model_runner_output_codec,
                                   pack_scheduler_output, scheduler_output_codec)

from wire.test_pickle_rpc import HEADER, RID, pure_decode_step, s

INT32 = st.integers(-2**31, 2**31 - 1)
IDS = st.text(min_size=1, max_size=40)


def test_pure_decode_step_at_one_running_request_exact_bytes():
    first_array = (s(5) + s(20) + 2   # array._array_reconstructor: 'array', name, STACK_GLOBAL MEMOIZE
                   + 1                # MARK of the 4-tuple
                   + s(5) + s(5) + 2  # array.array: 'array' again (a new str), 'array'
                   + s(1) + 2         # 'i', BININT1 8
                   + 3 + 2 + 2)       # bytes MEMOIZE (without data), TUPLE MEMOIZE, REDUCE MEMOIZE

    def later_array(n):  # BINGETs of the three, MARK, BININT1 8, bytes, TUPLE/REDUCE + MEMOIZEs
        return 2 + 1 + 2 + 2 + 2 + (2 + 4 * n + 1) + 2 + 2

    cached_common = (3                 # MARK ... TUPLE MEMOIZE of the 5-tuple
                     + 2 + s(39) + 1   # req_ids [RID]
                     + 2 + 1 + 1       # resumed_from_preemption [False]
                     + 2 + 3 + 1)      # num_computed_tokens [300]: BININT2
    after_cached = (2 + 2 + 2 + 1      # num_scheduled_tokens {RID: 1}
                    + 2 + 2 + 2        # total 1, spec-decode {}, encoder inputs {}
                    + later_array(1)   # num_common_prefix_blocks array('i', [0])
                    + 2 + 2 + 2 + 1 + 1)  # set(), [], {}, None, None
    envelope = HEADER + s(35) + 2 + 2 + 3 + 1  # tag, BININT1 0, TUPLE3 MEMOIZE; 12-tuple, ()
    # send: new_token_ids [array([12345])] holds the first array; new_block_ids
    # [(array([]),)] a later one (its b'' seen first: SHORT_BINBYTES, 0, MEMOIZE)
    send = (envelope + cached_common
            + 2 + (first_array + 4) + 1              # [array('i', [12345])]
            + 2 + later_array(0) + 2 + 1             # [(array('i'),)]: TUPLE1 MEMOIZE
            + after_cached)
    # cached: new_token_ids [], and the first array is new_block_ids' empty one
    cached = (envelope + cached_common + 2
              + 2 + first_array + 2 + 1 + after_cached)
    codec = scheduler_output_codec("packed")
    assert len(codec.encode(pure_decode_step([[12345]]))) == send == 250
    assert len(codec.encode(pure_decode_step([]))) == cached == 229
    # the pickle codec's message of the same step: 614 and 607 B
    assert len(scheduler_output_codec("pickle").encode(pure_decode_step([[12345]]))) == 614


def test_the_frame_is_the_prs_three_tuple():
    so = pure_decode_step([[12345]])
    frame = scheduler_output_codec("packed").encode(so)
    tag, packed, rank = pickle.loads(frame)
    assert (tag, rank) == (EXECUTE_MODEL_FAST_PATH_TAG, 0)
    assert packed[0] == () and packed[1][0] == [RID]
    assert [a.typecode for a in packed[1][2]] == ["i"] and list(packed[1][2][0]) == [12345]
    assert packed[1][4] == [300]  # num_computed_tokens stays a list
    assert packed == pack_scheduler_output(so)


def test_replies_are_the_pickle_codecs():
    out = M.model_runner_output([RID], {RID: 0}, [[5]])
    packed, plain = model_runner_output_codec("packed"), model_runner_output_codec("pickle")
    assert packed.encode(out) == plain.encode(out)
    assert packed.decode(plain.encode(out)) == out


@st.composite
def scheduler_outputs(draw):
    """Any SchedulerOutput of the pickle codec's dataclasses: new requests (prompt and
    block ids, sampling params), cached requests with parallel lists (send's or cached's
    new_token_ids), spec-decode and encoder dicts, finished ids."""
    ints = st.lists(INT32, max_size=6)
    blocks = st.lists(ints, min_size=1, max_size=2).map(tuple)
    new = draw(st.lists(st.builds(
        lambda rid, prompt, max_tokens, groups: M.new_request_data(
            rid, prompt, M.sampling_params(max_tokens), groups),
        IDS, ints, st.integers(1, 4096), blocks), max_size=3))
    rids = draw(st.lists(IDS, max_size=5, unique=True))
    n = len(rids)
    cached = M.CachedRequestData(
        req_ids=rids,
        resumed_from_preemption=draw(st.lists(st.booleans(), min_size=n, max_size=n)),
        new_token_ids=draw(st.one_of(st.just([]), st.lists(ints, min_size=n, max_size=n))),
        new_block_ids=draw(st.lists(blocks, min_size=n, max_size=n)),
        num_computed_tokens=draw(st.lists(st.integers(0, 2**40), min_size=n, max_size=n)))
    return M.SchedulerOutput(
        scheduled_new_reqs=new, scheduled_cached_reqs=cached,
        num_scheduled_tokens=draw(st.dictionaries(IDS, st.integers(0, 8192), max_size=4)),
        total_num_scheduled_tokens=draw(st.integers(0, 2**20)),
        scheduled_spec_decode_tokens=draw(st.dictionaries(IDS, ints, max_size=2)),
        scheduled_encoder_inputs=draw(st.dictionaries(IDS, ints, max_size=2)),
        num_common_prefix_blocks=draw(ints),
        finished_req_ids=draw(st.sets(IDS, max_size=3)),
        free_encoder_input_ids=draw(st.lists(st.tuples(IDS, st.integers(0, 9)), max_size=2)),
        structured_output_request_ids=draw(st.dictionaries(IDS, st.integers(0, 9),
                                                           max_size=2)),
        grammar_bitmask=None)


@settings(max_examples=200, deadline=None)
@given(scheduler_outputs())
def test_round_trip_is_exact(so):
    codec = scheduler_output_codec("packed")
    back = codec.decode(codec.encode(so))
    assert back == so
    assert type(back) is M.SchedulerOutput
    assert all(type(ids) is list for ids in back.scheduled_cached_reqs.new_token_ids)
    assert all(type(g) is tuple and all(type(ids) is list for ids in g)
               for g in back.scheduled_cached_reqs.new_block_ids)


def test_ints_outside_int32_are_refused_on_encode():
    with pytest.raises(OverflowError):
        scheduler_output_codec("packed").encode(pure_decode_step([[2**31]]))


def test_frames_of_another_shape_are_one_line_errors():
    codec = scheduler_output_codec("packed")
    plain = scheduler_output_codec("pickle").encode(pure_decode_step([[1]]))
    with pytest.raises(DecodeError) as info:
        codec.decode(plain)
    assert str(info.value) == (
        f"SchedulerOutput: expected the packed execute_model tuple "
        f"('{EXECUTE_MODEL_FAST_PATH_TAG}', (12 fields), rank), got a tuple of 4 "
        "(str, tuple, dict, int)")
    bad = list(pack_scheduler_output(pure_decode_step([[1]])))
    bad[1] = bad[1][:4]  # the cached requests' tuple one field short
    frame = pickle.dumps((EXECUTE_MODEL_FAST_PATH_TAG, tuple(bad), 0), protocol=5)
    with pytest.raises(DecodeError) as info:
        codec.decode(frame)
    assert str(info.value) == ("SchedulerOutput: malformed packed payload: "
                               "scheduled_cached_reqs (a packed CachedRequestData) is a "
                               "tuple of 4 items, expected 5")
    frame = codec.encode(pure_decode_step([[1]]))
    for n in range(len(frame)):
        with pytest.raises(DecodeError) as info:
            codec.decode(frame[:n])
        assert "\n" not in str(info.value)


def test_packed_codec_is_a_registered_pickle():
    assert isinstance(scheduler_output_codec("packed"), PackedCodec)
    assert scheduler_output_codec("packed").messages is M



def _prefill_step(messages, token_ids: str):
    """Four new requests of 2,000-token prompts (``token_ids`` distribution), 125 KV
    blocks each, nothing cached."""
    from ipc_bench.engine.workloads import make_prompt, make_req_id

    new = [messages.new_request_data(make_req_id(0, i), make_prompt(0, i, 2000, 128_256,
                                                                    token_ids),
                                     messages.sampling_params(100),
                                     (list(range(i * 125, (i + 1) * 125)),))
           for i in range(4)]
    return messages.SchedulerOutput(
        scheduled_new_reqs=new, scheduled_cached_reqs=messages.CachedRequestData(
            req_ids=[], resumed_from_preemption=[], new_token_ids=[], new_block_ids=[],
            num_computed_tokens=[]),
        num_scheduled_tokens={r.req_id: 2000 for r in new}, total_num_scheduled_tokens=8000,
        scheduled_spec_decode_tokens={}, scheduled_encoder_inputs={},
        num_common_prefix_blocks=[0], finished_req_ids=set(), free_encoder_input_ids=[],
        structured_output_request_ids={}, grammar_bitmask=None)


def test_long_prompts_take_four_bytes_per_id_whatever_the_ids():
    from ipc_bench.engine.messages import STRUCTS

    sizes = {(codec, ids): len(scheduler_output_codec(codec).encode(
        _prefill_step(STRUCTS if codec == "msgpack" else M, ids)))
        for codec in ("msgpack", "pickle", "packed") for ids in ("uniform", "zipf")}
    assert sizes == {("msgpack", "uniform"): 33_416, ("msgpack", "zipf"): 18_899,
                     ("pickle", "uniform"): 34_637, ("pickle", "zipf"): 23_651,
                     ("packed", "uniform"): 35_021, ("packed", "zipf"): 35_021}
