"""The pickle codec writes what vLLM 7f280d69c's multiprocess executor writes.

vLLM pickles, at protocol 5, the RPC tuple ``("execute_model", (scheduler_output,), {},
0)`` and the reply ``(WorkerProc.ResponseStatus.SUCCESS, model_runner_output)``, the
messages being ``@dataclass``es of ``vllm.v1.core.sched.output`` / ``vllm.v1.outputs``
holding a msgspec ``vllm.sampling_params.SamplingParams``. Here:

- exact sizes of one pure-decode step at 1 running request and of one new-request
  step, counted by hand opcode by opcode;
- sizes at 1, 16, 256 and 1,024 running requests equal those of a stand-in: the same
  values pickled through classes that carry vLLM's own module paths, built in this
  test from vLLM's field lists and registered in ``sys.modules`` only while it runs.

Counting conventions (protocol 5, one frame under 64 KiB): ``PROTO`` 2 bytes, ``FRAME``
9, ``STOP`` 1; a string seen first is ``SHORT_BINUNICODE`` (1) + its length byte (1) +
its bytes + ``MEMOIZE`` (1) = ``len + 3``, seen again a ``BINGET`` (2); a class is its
module string + its qualified name string + ``STACK_GLOBAL`` + ``MEMOIZE``; a dataclass
is its class, ``EMPTY_TUPLE NEWOBJ MEMOIZE`` (3), then its ``__dict__``: ``EMPTY_DICT
MEMOIZE MARK`` (3), every ``field name, value``, ``SETITEMS BUILD`` (2). Empty list,
dict or set: 2 (opcode + ``MEMOIZE``); ``None``/``True``/``False`` 1; ints ``BININT1``
2 (< 256), ``BININT2`` 3 (< 65,536), ``BININT`` 5; floats ``BINFLOAT`` 9.
"""

from __future__ import annotations

import dataclasses
import enum
import pickle
import sys
import types
from typing import Any, Optional

import msgspec
import pytest

from ipc_bench import v1rpc
from ipc_bench.engine.config import ModelConfig, SchedulerConfig
from ipc_bench.engine.messages import VLLM_DATACLASSES as M
from ipc_bench.engine.model_runner import ModelRunner
from ipc_bench.engine.scheduler import Scheduler
from ipc_bench.engine.workloads import SteadyDecodeWorkload
from ipc_bench.v1rpc import multiproc_executors, samp, sched_out
from ipc_bench.wire.codecs import model_runner_output_codec, scheduler_output_codec

RID = "cmpl-" + "0123456789abcdef" * 2 + "-0"  # 39 characters, as vLLM's OpenAI server's


def s(n: int) -> int:
    """Bytes of a string of ``n`` ASCII characters seen first: SHORT_BINUNICODE, length,
    bytes, MEMOIZE."""
    return n + 3


HEADER = 2 + 9 + 1  # PROTO 5, FRAME, STOP
# ("execute_model", (so,), {}, 0): MARK, the string, TUPLE1 MEMOIZE around so, EMPTY_DICT
# MEMOIZE, BININT1 0, TUPLE MEMOIZE
RPC_REQUEST = 1 + s(13) + 2 + 2 + 2 + 2
# class global of a first-seen module: both strings, STACK_GLOBAL, MEMOIZE
SO_CLASS = s(len("ipc_bench.v1rpc.sched_out")) + s(len("SchedulerOutput")) + 2
DATACLASS = 3 + 3 + 2  # NEWOBJ part, dict opening, SETITEMS BUILD
SO_KEYS = sum(s(len(k)) for k in (
    "scheduled_new_reqs", "scheduled_cached_reqs", "num_scheduled_tokens",
    "total_num_scheduled_tokens", "scheduled_spec_decode_tokens", "scheduled_encoder_inputs",
    "num_common_prefix_blocks", "finished_req_ids", "free_encoder_input_ids",
    "structured_output_request_ids", "grammar_bitmask", "kv_connector_metadata"))
# CachedRequestData's class: BINGET of the module string, its name, STACK_GLOBAL MEMOIZE
CACHED_CLASS = 2 + s(len("CachedRequestData")) + 2
CACHED_KEYS = [s(len(k)) for k in ("req_ids", "resumed_from_preemption", "new_token_ids",
                                   "new_block_ids", "num_computed_tokens")]


def so_fields_after_cached(num_scheduled: int) -> int:
    """Values of the SchedulerOutput fields after ``scheduled_cached_reqs``, one request
    of ``num_scheduled`` (< 256) tokens scheduled, nothing finished."""
    return (2 + 2 + 2 + 1          # num_scheduled_tokens {id: n}: dict, BINGET id, BININT1, SETITEM
            + 2                    # total_num_scheduled_tokens: BININT1
            + 2 + 2                # scheduled_spec_decode_tokens {}, scheduled_encoder_inputs {}
            + 2 + 2 + 1            # num_common_prefix_blocks [0]: list, BININT1 0, APPEND
            + 2                    # finished_req_ids set()
            + 2 + 2                # free_encoder_input_ids [], structured_output_request_ids {}
            + 1 + 1)               # grammar_bitmask None, kv_connector_metadata None


def pure_decode_step(new_token_ids):
    """One running request ``RID`` decoding at position 300, no new block."""
    return M.SchedulerOutput(
        scheduled_new_reqs=[],
        scheduled_cached_reqs=M.CachedRequestData(
            req_ids=[RID], resumed_from_preemption=[False], new_token_ids=new_token_ids,
            new_block_ids=[([],)], num_computed_tokens=[300]),
        num_scheduled_tokens={RID: 1}, total_num_scheduled_tokens=1,
        scheduled_spec_decode_tokens={}, scheduled_encoder_inputs={},
        num_common_prefix_blocks=[0], finished_req_ids=set(), free_encoder_input_ids=[],
        structured_output_request_ids={}, grammar_bitmask=None)


def test_pure_decode_step_at_one_running_request_exact_bytes():
    cached_values = (2 + s(39) + 1     # req_ids [RID]: list, the id, APPEND
                     + 2 + 1 + 1       # resumed_from_preemption [False]
                     + 2 + 3 + 1       # num_computed_tokens [300]: BININT2
                     + 2 + 2 + 2 + 1)  # new_block_ids [([],)]: list, list, TUPLE1 MEMOIZE, APPEND
    send_tokens = 2 + (2 + 3 + 1) + 1  # new_token_ids [[12345]]: two lists, BININT2, 2 APPENDs
    cached_tokens = 2                  # new_token_ids []
    common = (HEADER + RPC_REQUEST + SO_CLASS + DATACLASS + SO_KEYS
              + 2                                      # scheduled_new_reqs []
              + CACHED_CLASS + DATACLASS + sum(CACHED_KEYS) + cached_values
              + so_fields_after_cached(1))
    codec = scheduler_output_codec("pickle")
    assert len(codec.encode(pure_decode_step([[12345]]))) == common + send_tokens == 614
    assert len(codec.encode(pure_decode_step([]))) == common + cached_tokens == 607
    # the msgspec Structs pickled bare (what this codec did before): 187 B; vLLM's
    # dataclasses cost their field names and longer class paths, and the RPC tuple 25.


def test_model_runner_output_at_one_running_request_exact_bytes():
    status = (s(len("ipc_bench.v1rpc.multiproc_executors")) + s(len("WorkerProc.ResponseStatus"))
              + 2            # STACK_GLOBAL MEMOIZE
              + 2 + 2 + 2)   # BININT1 1, TUPLE1 MEMOIZE, REDUCE MEMOIZE
    out_class = s(len("ipc_bench.v1rpc")) + s(len("ModelRunnerOutput")) + 2
    keys = sum(s(len(k)) for k in (
        "req_ids", "req_id_to_index", "sampled_token_ids", "spec_token_ids", "logprobs",
        "prompt_logprobs_dict", "pooler_output", "finished_sending", "finished_recving",
        "num_nans_in_logits"))
    values = (2 + s(39) + 1           # req_ids [RID]
              + 2 + 2 + 2 + 1         # req_id_to_index {RID: 0}: BINGET RID, BININT1, SETITEM
              + 2 + (2 + 2 + 1) + 1   # sampled_token_ids [[5]]
              + 1 + 1                 # spec_token_ids, logprobs: None
              + 2 + 2                 # prompt_logprobs_dict {}, pooler_output []
              + 1 + 1                 # finished_sending, finished_recving: None
              + 2)                    # num_nans_in_logits {}
    expected = HEADER + status + out_class + DATACLASS + keys + values + 2  # TUPLE2 MEMOIZE
    out = M.model_runner_output([RID], {RID: 0}, [[5]])
    assert len(model_runner_output_codec("pickle").encode(out)) == expected == 380


def test_new_request_step_exact_bytes():
    """The scheduler's first step of one request (3-token prompt, 16 output tokens)."""
    sched = Scheduler(SchedulerConfig(max_num_seqs=4, max_model_len=64, block_size=16,
                                      num_blocks=8), "send", M)
    sched.add_request(RID, 0, [1, 200, 70000], 16)
    so = sched.build_scheduler_output(sched.schedule())
    # SamplingParams (a msgspec Struct): REDUCE of its class and the tuple of its 33 fields
    sampling_class = s(len("ipc_bench.v1rpc.samp")) + s(len("SamplingParams")) + 2
    output_kind = (2 + s(len("RequestOutputKind")) + 2  # BINGET module, name, STACK_GLOBAL MEMOIZE
                   + 2 + 2 + 2)                         # BININT1 0, TUPLE1 MEMOIZE, REDUCE MEMOIZE
    sampling_values = (
        2 + 1 + 1              # n=1, best_of, _real_n
        + 9 * 3                # presence, frequency, repetition penalties (floats)
        + 9 + 9 + 2 + 9        # temperature 0.0, top_p 1.0, top_k 0, min_p 0.0
        + 1 + 2 + 2 + 1        # seed None, stop [], stop_token_ids [], ignore_eos True
        + 2 + 2 + 1 + 1        # max_tokens 16, min_tokens 0, logprobs, prompt_logprobs None
        + 1 + 1 + 1 + 1 + 1 + 1  # detokenize .. truncate_prompt_tokens (bools and None)
        + output_kind + 2 + 2  # output_kind, output_text_buffer_length 0, _all_stop_token_ids set()
        + 1 + 1 + 1 + 1 + 2 + 1)  # guided_decoding .. extra_args None, bad_words [], last None
    sampling = sampling_class + 1 + sampling_values + 2 + 2  # MARK .. TUPLE MEMOIZE, REDUCE MEMOIZE
    new_class = 2 + s(len("NewRequestData")) + 2
    new_keys = sum(s(len(k)) for k in (
        "req_id", "prompt_token_ids", "mm_inputs", "mm_hashes", "mm_positions",
        "sampling_params", "pooling_params", "block_ids", "num_computed_tokens",
        "lora_request"))
    new_values = (s(39)                   # req_id
                  + 2 + 1 + 2 + 2 + 5 + 1  # prompt [1, 200, 70000]: MARK, BININT1 x2, BININT, APPENDS
                  + 2 + 2 + 2             # three empty multimodal lists
                  + sampling + 1          # sampling_params, pooling_params None
                  + 2 + 2 + 1 + 2         # block_ids ([0],): list, BININT1, APPEND, TUPLE1 MEMOIZE
                  + 2 + 1)                # num_computed_tokens 0, lora_request None
    new_request = new_class + DATACLASS + new_keys + new_values
    # CachedRequestData with five empty lists; "num_computed_tokens" is a BINGET now
    cached = CACHED_CLASS + DATACLASS + sum(CACHED_KEYS[:4]) + 2 + 5 * 2
    expected = (HEADER + RPC_REQUEST + SO_CLASS + DATACLASS + SO_KEYS
                + 2 + new_request + 1     # scheduled_new_reqs [NewRequestData]: list, APPEND
                + cached + so_fields_after_cached(3))
    assert len(scheduler_output_codec("pickle").encode(so)) == expected == 952


# ======================================================================================
# Stand-in: the same values through classes with vLLM's own module paths

#: ``vllm/sampling_params.py``'s fields in order (v0.9 series, as at 7f280d69c).
VLLM_SAMPLING_FIELDS = (
    "n", "best_of", "_real_n", "presence_penalty", "frequency_penalty", "repetition_penalty",
    "temperature", "top_p", "top_k", "min_p", "seed", "stop", "stop_token_ids", "ignore_eos",
    "max_tokens", "min_tokens", "logprobs", "prompt_logprobs", "detokenize",
    "skip_special_tokens", "spaces_between_special_tokens", "logits_processors",
    "include_stop_str_in_output", "truncate_prompt_tokens", "output_kind",
    "output_text_buffer_length", "_all_stop_token_ids", "guided_decoding", "logit_bias",
    "allowed_token_ids", "extra_args", "bad_words", "_bad_words_token_ids")

_VLLM_MODULES = ("vllm", "vllm.v1", "vllm.v1.core", "vllm.v1.core.sched",
                 "vllm.v1.core.sched.output", "vllm.v1.outputs", "vllm.sampling_params",
                 "vllm.v1.executor", "vllm.v1.executor.multiproc_executor")


def _in_module(cls, module: str, qualname: Optional[str] = None):
    cls.__module__ = module
    cls.__qualname__ = qualname or cls.__name__
    setattr(sys.modules[module], cls.__name__, cls)
    return cls


@pytest.fixture
def vllm_stand_in(monkeypatch):
    """Classes typed from vLLM 7f280d69c's sources, in throwaway modules named as vLLM's;
    ``monkeypatch`` removes the modules (or restores real ones) afterwards."""
    for name in _VLLM_MODULES:
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    out = "vllm.v1.core.sched.output"

    @dataclasses.dataclass
    class NewRequestData:
        req_id: str
        prompt_token_ids: list
        mm_inputs: list
        mm_hashes: list
        mm_positions: list
        sampling_params: Any
        pooling_params: Any
        block_ids: tuple
        num_computed_tokens: int
        lora_request: Any

    @dataclasses.dataclass
    class CachedRequestData:
        req_ids: list
        resumed_from_preemption: list
        new_token_ids: list
        new_block_ids: list
        num_computed_tokens: list

    @dataclasses.dataclass
    class SchedulerOutput:
        scheduled_new_reqs: list
        scheduled_cached_reqs: Any
        num_scheduled_tokens: dict
        total_num_scheduled_tokens: int
        scheduled_spec_decode_tokens: dict
        scheduled_encoder_inputs: dict
        num_common_prefix_blocks: list
        finished_req_ids: set
        free_encoder_input_ids: list
        structured_output_request_ids: dict
        grammar_bitmask: Any
        kv_connector_metadata: Any = None

    @dataclasses.dataclass
    class ModelRunnerOutput:
        req_ids: list
        req_id_to_index: dict
        sampled_token_ids: list
        spec_token_ids: Any
        logprobs: Any
        prompt_logprobs_dict: dict
        pooler_output: list
        finished_sending: Any = None
        finished_recving: Any = None
        num_nans_in_logits: Any = None

    class RequestOutputKind(enum.Enum):
        CUMULATIVE = 0
        DELTA = 1
        FINAL_ONLY = 2

    # vLLM's SamplingParams is a msgspec Struct: it pickles as REDUCE of its class and the
    # tuple of its field values, whatever their defaults
    SamplingParams = msgspec.defstruct("SamplingParams", [(f, Any) for f in VLLM_SAMPLING_FIELDS],
                                       omit_defaults=True, dict=True)

    class WorkerProc:
        class ResponseStatus(enum.Enum):
            SUCCESS = enum.auto()
            FAILURE = enum.auto()

    ns = types.SimpleNamespace(
        NewRequestData=_in_module(NewRequestData, out),
        CachedRequestData=_in_module(CachedRequestData, out),
        SchedulerOutput=_in_module(SchedulerOutput, out),
        ModelRunnerOutput=_in_module(ModelRunnerOutput, "vllm.v1.outputs"),
        RequestOutputKind=_in_module(RequestOutputKind, "vllm.sampling_params"),
        SamplingParams=_in_module(SamplingParams, "vllm.sampling_params"),
        WorkerProc=_in_module(WorkerProc, "vllm.v1.executor.multiproc_executor"))
    ns.WorkerProc.ResponseStatus.__module__ = "vllm.v1.executor.multiproc_executor"
    ns.WorkerProc.ResponseStatus.__qualname__ = "WorkerProc.ResponseStatus"
    yield ns


def _as_vllm(obj, v):
    """``obj`` (a message of ``ipc_bench.v1rpc``) rebuilt from ``v``'s classes around the
    same value objects (so shared strings stay shared, as in vLLM)."""
    if isinstance(obj, samp.SamplingParams):
        values = {f: getattr(obj, f) for f in obj.__struct_fields__}
        values["output_kind"] = v.RequestOutputKind(obj.output_kind.value)
        return v.SamplingParams(**values)
    fields = dict(vars(obj))
    if isinstance(obj, sched_out.SchedulerOutput):
        fields["scheduled_new_reqs"] = [_as_vllm(r, v) for r in obj.scheduled_new_reqs]
        fields["scheduled_cached_reqs"] = _as_vllm(obj.scheduled_cached_reqs, v)
    if isinstance(obj, sched_out.NewRequestData):
        fields["sampling_params"] = _as_vllm(obj.sampling_params, v)
    return getattr(v, type(obj).__name__)(**fields)


def _steady_messages(num_running: int, steps: int = 40):
    """(SchedulerOutput, ModelRunnerOutput) of every step of a steady-decode run built
    as the pickle codec's messages; the first step schedules every new request."""
    cfg = SchedulerConfig(max_num_seqs=num_running, max_num_batched_tokens=num_running * 300,
                          max_model_len=2048, num_blocks=num_running * 40)
    sched = Scheduler(cfg, "send", M)
    runner = ModelRunner(cfg, ModelConfig(), "send", M)
    workload = SteadyDecodeWorkload(num_running, seed=3, vocab_size=128_256,
                                    prompt_len_range=(20, 200), output_len_range=(5, 60))
    pairs = []
    for _ in range(steps):
        for r in workload.arrivals(sched.step):
            sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
        plan = sched.schedule()
        so = sched.build_scheduler_output(plan)
        out = runner.execute_model(so)
        finished = sched.update_from_output(plan, out)
        workload.on_finished(len(finished), plan.step)
        pairs.append((plan, so, out))
    return pairs


@pytest.mark.parametrize("num_running", [1, 16, 256, 1024])
def test_sizes_equal_vllms_class_paths(vllm_stand_in, num_running):
    """Pure-decode and new-request steps, both directions: the harness's frames are as
    long as the same values pickled with vLLM's class paths (the acceptance bar was
    within 1 % at 16 to 1,024 running requests and 10 B at 1; they are equal)."""
    v = vllm_stand_in
    s_codec, r_codec = scheduler_output_codec("pickle"), model_runner_output_codec("pickle")
    kinds = set()
    for plan, so, out in _steady_messages(num_running):
        vllm_request = ("execute_model", (_as_vllm(so, v),), {}, 0)
        vllm_reply = (v.WorkerProc.ResponseStatus.SUCCESS, _as_vllm(out, v))
        assert len(s_codec.encode(so)) == len(pickle.dumps(vllm_request, protocol=5))
        assert len(r_codec.encode(out)) == len(pickle.dumps(vllm_reply, protocol=5))
        kinds.add("decode" if plan.is_decode_only else "new" if plan.new_reqs else "other")
    assert {"decode", "new"} <= kinds
    # the stand-in really used vLLM's paths
    assert b"vllm.v1.core.sched.output" in pickle.dumps(vllm_request, protocol=5)


def test_mirror_classes_have_vllms_names_fields_and_path_lengths():
    paths = {  # vLLM 7f280d69c module -> (module here, class names)
        "vllm.v1.core.sched.output": (sched_out, ["NewRequestData", "CachedRequestData",
                                                  "SchedulerOutput"]),
        "vllm.v1.outputs": (v1rpc, ["ModelRunnerOutput"]),
        "vllm.sampling_params": (samp, ["SamplingParams", "RequestOutputKind"]),
        "vllm.v1.executor.multiproc_executor": (multiproc_executors, ["WorkerProc"]),
    }
    for vllm_module, (module, names) in paths.items():
        assert len(module.__name__) == len(vllm_module), module.__name__
        for name in names:
            assert getattr(module, name).__module__ == module.__name__
    assert multiproc_executors.WorkerProc.ResponseStatus.__qualname__ == "WorkerProc.ResponseStatus"
    assert [f.name for f in dataclasses.fields(M.NewRequestData)] == [
        "req_id", "prompt_token_ids", "mm_inputs", "mm_hashes", "mm_positions",
        "sampling_params", "pooling_params", "block_ids", "num_computed_tokens", "lora_request"]
    assert samp.SamplingParams.__struct_fields__ == VLLM_SAMPLING_FIELDS
    assert samp.SamplingParams.__struct_config__.omit_defaults
    assert not any(m == "vllm" or m.startswith("vllm.") for m in sys.modules)
