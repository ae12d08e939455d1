"""What ``bench.py microbench``'s frame check refuses beyond a field of another type:
a packed frame's integer that ``array('i')`` cannot hold and a declared tuple packed as
a list (``codecs.check_packed``), a field declared ``Any`` holding what vLLM fills with
its own objects, which no harness frame carries (``codecs.UNFILLED_FIELDS``), each in
one line naming the field, what it held and the declared type as the message
definitions spell it (``list[int]``, ``tuple[str, int]``, not msgspec's ``array``);
what a frame may legitimately hold there passes."""

from __future__ import annotations

import pickle
import subprocess
import sys
from array import array
from pathlib import Path

import pytest

from ipc_bench.analysis.capture import load_capture
from ipc_bench.wire import codecs
from microbench_runs import (ERROR, FRAME_RUN, PYPERF, capture_path, copy_run, edit_frames,
                            finished_run)

REPO = Path(__file__).resolve().parents[2]
MSGS = codecs.VLLM_DATACLASSES
SO = "a pickle frame decodes to a SchedulerOutput whose field"
MRO = "a pickle frame decodes to a ModelRunnerOutput whose field"
INT32 = "outside int32 (-2147483648 to 2147483647), which the packed codec's array('i') " \
        "cannot hold: not timed"


def _scheduler_output(**changes):
    """A ``SchedulerOutput`` of the pickled codecs' dataclasses with one new request
    ``r1`` and one cached request ``c1``; ``changes`` set fields of it (``field=``), of
    its new request (``req__field=``), of the request's sampling params
    (``sp__field=``) or of its cached requests (``cached__field=``)."""
    sp = MSGS.sampling_params(16)
    req = MSGS.new_request_data("r1", [1, 2, 3], sp, ([4, 5],))
    cached = MSGS.CachedRequestData(req_ids=["c1"], resumed_from_preemption=[False],
                                    new_token_ids=[[9]], new_block_ids=[([6],)],
                                    num_computed_tokens=[7])
    so = MSGS.SchedulerOutput(
        scheduled_new_reqs=[req], scheduled_cached_reqs=cached,
        num_scheduled_tokens={"r1": 3, "c1": 1}, total_num_scheduled_tokens=4,
        scheduled_spec_decode_tokens={}, scheduled_encoder_inputs={},
        num_common_prefix_blocks=[0], finished_req_ids=set(), free_encoder_input_ids=[],
        structured_output_request_ids={}, grammar_bitmask=None)
    for key, value in changes.items():
        owner, _, field = key.rpartition("__")
        setattr({"": so, "req": req, "sp": sp, "cached": cached}[owner], field, value)
    return so


def _packed_frame(edit) -> bytes:
    """A packed frame of ``_scheduler_output()`` whose packed tuple (a list of its 12
    fields) ``edit`` changed in place: frames the packed encoder cannot write."""
    tag, packed, rank = pickle.loads(codecs.scheduler_output_codec("packed").encode(
        _scheduler_output()))
    fields = [list(f) if type(f) is tuple else f for f in packed]
    fields[0] = [list(r) for r in fields[0]]
    edit(fields)
    fields[0] = tuple(tuple(r) for r in fields[0])
    fields[1] = tuple(fields[1])
    return pickle.dumps((tag, tuple(fields), rank), protocol=pickle.HIGHEST_PROTOCOL)


def _refusal(codec: str, frame: bytes, direction: str = "s2r") -> str:
    make = {"s2r": codecs.scheduler_output_codec,
            "r2s": codecs.model_runner_output_codec}[direction]
    with pytest.raises(codecs.RefusedPickle) as err:
        make(codec).decode_checked(frame)
    return str(err.value)


def _passes(codec: str, frame: bytes, direction: str = "s2r") -> bool:
    make = {"s2r": codecs.scheduler_output_codec,
            "r2s": codecs.model_runner_output_codec}[direction]
    c = make(codec)
    return c.decode_checked(frame) == c.decode(frame)


def _set(index: int, value):
    def edit(fields):
        fields[index] = value
    return edit


def _set_new(item: int, value):
    def edit(fields):
        fields[0][0][item] = value
    return edit


def _set_cached(item: int, value):
    def edit(fields):
        fields[1][item] = value
    return edit


# ------------------------------------------------- packed integers beyond int32


@pytest.mark.parametrize("edit, line", [
    (_set(6, [2 ** 40]), f"num_common_prefix_blocks[0] holds 1099511627776, {INT32}"),
    (_set_new(1, [1, -2 ** 31 - 1]),
     f"scheduled_new_reqs[0].prompt_token_ids[1] holds -2147483649, {INT32}"),
    (_set_new(7, ([4, 2 ** 31],)),
     f"scheduled_new_reqs[0].block_ids[0][1] holds 2147483648, {INT32}"),
    (_set_cached(2, [[2 ** 31]]),
     f"scheduled_cached_reqs.new_token_ids[0][0] holds 2147483648, {INT32}"),
    (_set_cached(3, [([6, 7, 2 ** 63],)]),
     f"scheduled_cached_reqs.new_block_ids[0][0][2] holds 9223372036854775808, {INT32}"),
    (_set(4, {"c1": [1, 2], "c2": [3, 2 ** 32]}),
     f"scheduled_spec_decode_tokens['c2'][1] holds 4294967296, {INT32}"),
    (_set(5, {"r1": [-2 ** 40]}),
     f"scheduled_encoder_inputs['r1'][0] holds -1099511627776, {INT32}"),
])
def test_a_packed_integer_beyond_int32_is_named_with_its_field_and_the_range(edit, line):
    assert _refusal("packed", _packed_frame(edit)) == f"{SO} {line}"


def test_int32_s_own_ends_and_unpacked_integers_pass():
    ends = _packed_frame(_set(6, array("i", [2 ** 31 - 1, -2 ** 31])))
    assert _passes("packed", ends)
    computed = _packed_frame(_set_cached(4, [2 ** 40]))  # stays a list when packed
    assert _passes("packed", computed)
    pickled = codecs.scheduler_output_codec("pickle").encode(
        _scheduler_output(num_common_prefix_blocks=[2 ** 40]))
    assert _passes("pickle", pickled)  # pickle packs nothing


# --------------------------------------------------- tuples where tuples are declared


def _listed_block_ids(fields):
    fields[0][0][7] = list(fields[0][0][7])


def _listed_new_block_ids(fields):
    fields[1][3] = [list(groups) for groups in fields[1][3]]


@pytest.mark.parametrize("edit, line", [
    (_listed_block_ids, "scheduled_new_reqs[0].block_ids is packed as a list where its "
     "declared type, tuple[list[int], ...], is packed as a tuple"),
    (_listed_new_block_ids, "scheduled_cached_reqs.new_block_ids[0] is packed as a list "
     "where its declared type, tuple[list[int], ...], is packed as a tuple"),
])
def test_a_declared_tuple_packed_as_a_list_is_named_with_both_types(edit, line):
    frame = _packed_frame(edit)
    codecs.scheduler_output_codec("packed").decode(frame)  # unpacks to tuples all the same
    assert _refusal("packed", frame) == f"{SO} {line}: not timed"


@pytest.mark.parametrize("changes, line", [
    ({"req__block_ids": [[4, 5]]}, "scheduled_new_reqs[0].block_ids holds a list where its "
     "declared type takes tuple[list[int], ...]"),
    ({"cached__new_block_ids": [[[6]]]}, "scheduled_cached_reqs.new_block_ids[0] holds a "
     "list where its declared type takes tuple[list[int], ...]"),
    ({"free_encoder_input_ids": [["r1", 0]]}, "free_encoder_input_ids[0] holds a list where "
     "its declared type takes tuple[str, int]"),
    ({"free_encoder_input_ids": [("r1",)]}, "free_encoder_input_ids[0] holds a tuple of "
     "length 1 where its declared type takes tuple[str, int]"),
    ({"free_encoder_input_ids": ["r1"]}, "free_encoder_input_ids[0] holds str where its "
     "declared type takes tuple[str, int]"),
])
def test_a_pickled_list_where_a_tuple_is_declared_names_both_types(changes, line):
    frame = codecs.scheduler_output_codec("pickle").encode(_scheduler_output(**changes))
    assert _refusal("pickle", frame) == f"{SO} {line}: not timed"


# ------------------------------------------- the declared types as the messages spell them


@pytest.mark.parametrize("changes, line", [
    ({"num_scheduled_tokens": {"r1": 3, "c1": "1"}}, "num_scheduled_tokens['c1'] holds str "
     "where its declared type takes int"),
    ({"scheduled_spec_decode_tokens": {"c1": "12"}}, "scheduled_spec_decode_tokens['c1'] "
     "holds str where its declared type takes list[int]"),
    ({"req__req_id": ["r1"]}, "scheduled_new_reqs[0].req_id holds list where its declared "
     "type takes str"),
    ({"sp__stop": ["a", [1]]}, "scheduled_new_reqs[0].sampling_params.stop[1] holds list "
     "where its declared type takes str"),
    ({"sp__stop": 5}, "scheduled_new_reqs[0].sampling_params.stop holds int where its "
     "declared type takes Optional[Union[str, list[str]]]"),
    ({"sp__logit_bias": {1: "x"}}, "scheduled_new_reqs[0].sampling_params.logit_bias[1] "
     "holds str where its declared type takes float"),
    ({"scheduled_cached_reqs": [1]}, "scheduled_cached_reqs holds list where its declared "
     "type takes CachedRequestData"),
    ({"finished_req_ids": ["c1"]}, "finished_req_ids holds a list where its declared type "
     "takes set[str]"),
    ({"sp__extra_args": {"k": [1, {2}]}}, "scheduled_new_reqs[0].sampling_params."
     "extra_args['k'][1] holds a set, which its declared type, Any, reads back as a list"),
])
def test_refusals_spell_the_declared_type_as_the_message_definitions_do(changes, line):
    frame = codecs.scheduler_output_codec("pickle").encode(_scheduler_output(**changes))
    assert _refusal("pickle", frame) == f"{SO} {line}: not timed"


# ----------------------------------------------------------- fields declared Any


@pytest.mark.parametrize("changes, line", [
    ({"grammar_bitmask": [1, 2]}, "grammar_bitmask holds [1, 2] where its declared type, "
     "Optional[Any], takes only None (vLLM's Optional[npt.NDArray[np.int32]], an array no "
     "harness frame carries)"),
    ({"kv_connector_metadata": {}}, "kv_connector_metadata holds {} where its declared "
     "type, Optional[Any], takes only None (vLLM's Optional[KVConnectorMetadata], an object "
     "no harness frame carries)"),
    ({"req__mm_inputs": [{"pixel_values": b"\x00"}]}, "scheduled_new_reqs[0].mm_inputs "
     "holds [{'pixel_values': b'\\x00'}] where its declared type, list[Any], takes only [] "
     "(vLLM's list[MultiModalKwargs], objects no harness frame carries)"),
    ({"req__mm_positions": [(0, 4)]}, "scheduled_new_reqs[0].mm_positions holds [(0, 4)] "
     "where its declared type, list[Any], takes only [] (vLLM's list[PlaceholderRange], "
     "objects no harness frame carries)"),
    ({"req__pooling_params": 0}, "scheduled_new_reqs[0].pooling_params holds 0 where its "
     "declared type, Optional[Any], takes only None (vLLM's Optional[PoolingParams], an "
     "object no harness frame carries)"),
    ({"req__lora_request": "adapter"}, "scheduled_new_reqs[0].lora_request holds 'adapter' "
     "where its declared type, Optional[Any], takes only None (vLLM's "
     "Optional[LoRARequest], an object no harness frame carries)"),
    ({"sp__logits_processors": []}, "scheduled_new_reqs[0].sampling_params."
     "logits_processors holds [] where its declared type, Optional[Any], takes only None "
     "(vLLM V1 refuses per-request logits processors; callables no harness frame carries)"),
    ({"sp__guided_decoding": {"json": "{}"}}, "scheduled_new_reqs[0].sampling_params."
     "guided_decoding holds {'json': '{}'} where its declared type, Optional[Any], takes "
     "only None (vLLM's Optional[GuidedDecodingParams], an object no harness frame "
     "carries)"),
])
@pytest.mark.parametrize("codec", ["pickle", "packed"])
def test_a_field_declared_any_holding_a_vllm_object_s_place_is_refused(codec, changes,
                                                                       line):
    frame = codecs.scheduler_output_codec(codec).encode(_scheduler_output(**changes))
    assert _refusal(codec, frame) == f"{SO} {line}: not timed"


@pytest.mark.parametrize("field, value, line", [
    ("logprobs", [[1], [-0.5], [0]], "logprobs holds [[1], [-0.5], [0]] where its declared "
     "type, Optional[Any], takes only None (vLLM's Optional[LogprobsLists], an object no "
     "harness frame carries)"),
    ("prompt_logprobs_dict", {"r1": None, "r2": [-0.5]}, "prompt_logprobs_dict['r2'] holds "
     "[-0.5] where its declared type, Optional[Any], takes only None (vLLM's "
     "dict[str, Optional[LogprobsTensors]], objects no harness frame carries)"),
    ("pooler_output", [None, 0.25], "pooler_output[1] holds 0.25 where its declared type, "
     "Optional[Any], takes only None (vLLM's list[Optional[torch.Tensor]], tensors no "
     "harness frame carries)"),
])
def test_a_reply_field_declared_any_holding_a_vllm_object_s_place_is_refused(field, value,
                                                                             line):
    codec = codecs.model_runner_output_codec("pickle")
    reply = MSGS.model_runner_output(["r1"], {"r1": 0}, [[7]])
    setattr(reply, field, value)
    assert _refusal("pickle", codec.encode(reply), "r2s") == f"{MRO} {line}: not timed"


def test_what_a_frame_may_hold_where_any_is_declared_passes():
    extra = _scheduler_output(sp__extra_args={"k": [1, (2, "x")], "n": None, "b": b"\x00"})
    for name in ("pickle", "packed"):
        assert _passes(name, codecs.scheduler_output_codec(name).encode(extra))
    codec = codecs.model_runner_output_codec("pickle")
    reply = MSGS.model_runner_output(["r1"], {"r1": 0}, [[7]])
    reply.prompt_logprobs_dict, reply.pooler_output = {"r1": None}, [None]
    assert _passes("pickle", codec.encode(reply), "r2s")


# ------------------------------------------------------------- through bench.py


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished run folder of one send case per codec (msgpack, pickle, packed)."""
    return finished_run(tmp_path_factory, "mbtypesmore", FRAME_RUN)


def test_microbench_refuses_a_packed_integer_beyond_int32_before_timing(run, tmp_path):
    run = copy_run(run, tmp_path)
    path = capture_path(run, "packed", "s2r")

    def widen(frames):
        tag, packed, rank = pickle.loads(frames[3])
        packed = packed[:6] + ([2 ** 40],) + packed[7:]
        frames[3] = pickle.dumps((tag, packed, rank), protocol=pickle.HIGHEST_PROTOCOL)

    edit_frames(path, widen)
    proc = subprocess.run([sys.executable, "bench.py", "microbench", str(run),
                           "--directions", "s2r", "--ops", "encode", "--codecs", "packed",
                           *PYPERF], cwd=REPO, capture_output=True, text=True, timeout=120)
    cap = load_capture(path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"{ERROR}{path}: message 4 of {len(cap.frames)} (step {cap.seqs[3]}): {SO} "
        f"num_common_prefix_blocks[0] holds 1099511627776, {INT32}\n")
    assert not (run / "microbench").exists()
