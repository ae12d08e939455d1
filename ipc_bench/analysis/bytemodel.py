"""Analytic byte model of a pure-decode step's messages, per codec.

A pure-decode step (no new request, every scheduled request decodes one token) sends
one ``SchedulerOutput`` and gets back one ``ModelRunnerOutput``. Their serialized
sizes follow from a handful of inputs: the request ids (their UTF-8 lengths), the
token ids (their integer widths), each request's ``num_computed_tokens`` and the KV
blocks allocated this step, plus the ids finished since the last step. This module
writes each size down exactly, without encoding anything, for:

**msgpack** (msgspec, ``array_like`` Structs: every field written, in order). Widths
from the MessagePack spec: ``A(n)`` array / ``M(n)`` map header = 1 byte for n <= 15,
3 for n <= 65,535, else 5; ``S(s)`` string = len + (1 if len <= 31, 2 if <= 255, 3 if
<= 65,535, else 5); ``U(v)`` non-negative int = 1 if v < 128, 2 if < 256, 3 if
< 65,536, 5 if < 2**32, else 9. With R requests, ids ``s_i``, computed counts
``c_i``, new blocks ``b_i`` (a list per request), decode tokens ``t_i``, finished ids
``f_j``::

    SchedulerOutput = 11 + 4 A(R) + R + sum_i [2 S(s_i) + 1 + U(c_i) + 1 + A(|b_i|)
                      + sum_b U(b)] + M(R) + U(R) + A(F) + sum_j S(f_j) + T
        T (new_token_ids) = A(R) + sum_i (1 + U(t_i))   under send
                          = 1                             under cached ([])
    ModelRunnerOutput = 7 + 2 A(R) + M(R) + sum_i [2 S(s_i) + U(i) + 1 + U(t'_i)]

(``t'_i`` the token sampled for row ``i``). So send costs ``1 + U(t_i)`` bytes per
request more than cached (plus ``A(R) - 1``): 2 to 6 bytes, about 4.97 on average for
uniform ids in a 128,256-token vocabulary and 3.17 for Zipf ids (``--token-ids zipf``:
44 % of ids below 128).

**EngineCoreOutputs** (``--frontend``: the engine core -> frontend hop, msgpack only,
``engine_outputs_bytes``). ``omit_defaults`` omits nothing from an ``array_like``
Struct (msgspec #720), so with n outputs, request ids ``s_i`` and new ids ``t_i``::

    EngineCoreOutputs = 15 + A(n) + sum_i [9 + S(s_i) + A(|t_i|) + sum_t U(t)] + STATS
        STATS = 1 (nil)  or  133 + U(num_running) + U(num_waiting)  (the SchedulerStats map)

(``finish_reason`` is 1 byte either way: ``nil`` or 1). The run's byte-model check
(``byte_model_report``) does not cover these messages: the run captures only the
scheduler <-> runner frames, not the frontend's. ``tests/harness/test_frontend.py``
checks the formula against encoded messages, and every run checks the frontend's
received sizes against the sizes the scheduler sent.

**packed** (vLLM PR #54406, ``wire.codecs.pack_scheduler_output``): the same pickle
stream rules for the 3-tuple ``(EXECUTE_MODEL_FAST_PATH_TAG, packed, 0)``: no
dataclass, no field names, every integer list an ``array('i')``, which pickles as
``REDUCE`` of ``array._array_reconstructor`` and ``(array.array, 'i', 8, bytes)``:
4 bytes per int whatever its value, after a fixed cost per array (16 bytes with 2-byte
memo references, 25 with 5-byte ones; the first array writes both globals and ``'i'``
out, 49 bytes more; every empty array refers to the one ``b''`` object). A pure-decode
step packs one empty array per request for its new blocks (``([],)`` at 7f280d69c)
and, under send, one array per request for its token, so at 256 running packed is
larger than pickle (``PACKED_SEND_BYTES_PER_REQUEST``: 29 bytes per request for send,
token ids of any distribution). Replies are pickle's.

**pickle** (protocol 5, the C pickler, as vLLM's executor uses it), of what vLLM
7f280d69c's multiprocess executor pickles: the RPC tuple ``("execute_model", (so,),
{}, 0)`` around the ``SchedulerOutput`` and ``(WorkerProc.ResponseStatus.SUCCESS,
out)`` around the ``ModelRunnerOutput``, the messages being the dataclasses of
``ipc_bench.v1rpc`` (``wire.codecs``). Per object: ``SHORT_BINUNICODE`` +
``MEMOIZE`` for a string seen first (len + 3 bytes), ``BINGET`` (2) or
``LONG_BINGET`` (5, memo index >= 256) when seen again, so each request id string
costs ``len + 3`` in ``req_ids`` and 2 or 5 in ``num_scheduled_tokens`` (the
scheduler uses the same ``str`` object in both, and so does the runner for
``req_ids`` / ``req_id_to_index``); ints ``P(v)`` = 2 (``BININT1``, < 256), 3
(``BININT2``, < 65,536), 5 (``BININT``, 32-bit) or ``LONG1``; every list, dict, set
and non-empty tuple is memoized (1 byte); lists of >= 2 items are written in batches
of 1,000 (``MARK`` ... ``APPENDS``, 2 bytes per batch; a list of one item uses
``APPEND``), dicts of >= 2 items and sets of >= 1 in ``floor(n / 1000) + 1`` batches
(the C pickler emits an empty last batch when n is a multiple of 1,000). A class is a
global: its module and qualified name strings, ``STACK_GLOBAL``, ``MEMOIZE`` (a memo
reference the next time). A dataclass pickles as ``NEWOBJ`` of its class and an empty
tuple, ``MEMOIZE``, then its ``__dict__`` (field name strings, each memoized once per
pickle, and values) and ``BUILD``; an ``Enum`` member as ``REDUCE`` of its class and
``(value,)``. Per request, the send policy adds the list ``[t_i]``: ``EMPTY_LIST
MEMOIZE <int> APPEND`` = ``3 + P(t_i)`` bytes (5 to 8), plus the batch markers of
``new_token_ids`` itself (cached sends it empty).

Framing: protocol >= 4 splits the stream after the 2-byte ``PROTO`` header into
frames; at the start of each object's ``save()`` the pickler closes the current frame
once it holds 64 KiB or more, and each frame of 4 bytes or more gets a 9-byte
``FRAME`` header. Frame boundaries depend on where object boundaries fall, so the
pickle model walks the message's object sequence (``_PickleStream``) with the exact
opcode sizes above instead of a single closed form; the unframed part is the sum
of the per-object terms. ``tests/analysis/test_bytemodel.py`` checks every formula against
real encodings for 1 to 4,096 running requests.

**Speculative decoding** (``spec_token_ids``; vLLM 7f280d69c's messages). A step with
drafts schedules ``1 + k_i`` tokens per request (``U(1 + k_i)``, and ``U(R + sum k_i)``
for the total) and adds ``scheduled_spec_decode_tokens``: in msgpack ``M(D) + sum
[S(s_i) + A(k_i) + sum U(d)]`` over the D drafted requests (each request id written
again), in pickle a dict whose keys are memo references to the ids already written
and whose values are lists of ints (``array('i')`` for packed). ``new_token_ids``
under ``send`` is unchanged (one real token per request). A reply carries 1 to
``k_i + 1`` ids per row (``A(n)`` headers of any width) and ``spec_token_ids``, a list
of lists instead of nil / ``None``.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from ipc_bench.engine.config import CACHED, SEND
from ipc_bench.engine.messages import VLLM_DATACLASSES, ModelRunnerOutput, SchedulerOutput
from ipc_bench.engine.token_ids import token_id_distribution
from ipc_bench.v1rpc.multiproc_executors import (EXECUTE_MODEL, EXECUTE_MODEL_FAST_PATH_TAG,
                                                  OUTPUT_RANK, WorkerProc)
from ipc_bench.wire.codecs import CODECS  # the codec registry

#: The codecs this module models (``slots``' sizes are fixed by its arrays: its tests
#: give them exactly, ``tests/wire/test_slots.py``).
MODELLED_CODECS: tuple[str, ...] = ("msgpack", "pickle", "packed")

# --------------------------------------------------------------------------- msgpack


def mp_uint(v: int) -> int:
    """MessagePack bytes of the integer ``v`` (signed widths for v < 0)."""
    if v >= 0:
        if v < 128:
            return 1
        if v < 256:
            return 2
        if v < 65536:
            return 3
        if v < 2**32:
            return 5
        return 9
    if v >= -32:
        return 1
    if v >= -128:
        return 2
    if v >= -32768:
        return 3
    if v >= -2**31:
        return 5
    return 9


def mp_str(s: str) -> int:
    """MessagePack bytes of the string ``s`` (header + UTF-8 bytes)."""
    n = len(s.encode())
    if n <= 31:
        return 1 + n
    if n <= 255:
        return 2 + n
    if n <= 65535:
        return 3 + n
    return 5 + n


def mp_header(n: int) -> int:
    """MessagePack array or map header bytes for ``n`` elements (or pairs)."""
    if n <= 15:
        return 1
    if n <= 65535:
        return 3
    return 5


def _msgpack_scheduler_output(req_ids, num_computed_tokens, new_block_ids, token_ids,
                              finished_req_ids, spec=None) -> int:
    r = len(req_ids)
    a = mp_header(r)
    if spec is not None:  # drafts: num_scheduled_tokens 1 + k, and their own map
        drafted = [(sid, d) for sid, d in zip(req_ids, spec) if d]
        extra = (mp_header(len(drafted)) - 1
                 + sum(mp_str(sid) + mp_header(len(d)) + sum(mp_uint(x) for x in d)
                       for sid, d in drafted)
                 + sum(mp_uint(1 + len(d)) - 1 for d in spec)
                 + mp_uint(r + sum(len(d) for d in spec)) - mp_uint(r))
    else:
        extra = 0
    per_request = sum(2 * mp_str(s) + 1 + mp_uint(c) + 1 + mp_header(len(b))
                      + sum(mp_uint(x) for x in b)
                      for s, c, b in zip(req_ids, num_computed_tokens, new_block_ids))
    if token_ids is None:
        new_tokens = mp_header(0)  # cached: []
    else:
        new_tokens = a + sum(1 + mp_uint(t) for t in token_ids)
    finished = mp_header(len(finished_req_ids)) + sum(mp_str(f) for f in finished_req_ids)
    return (11 + 4 * a + r + per_request + mp_header(r) + mp_uint(r) + finished + new_tokens
            + extra)


def _msgpack_model_runner_output(req_ids, sampled_token_ids, spec_token_ids=None) -> int:
    r = len(req_ids)
    per_request = sum(2 * mp_str(s) + mp_uint(i) + mp_header(len(toks))
                      + sum(mp_uint(t) for t in toks)
                      for i, (s, toks) in enumerate(zip(req_ids, sampled_token_ids)))
    spec = 0 if spec_token_ids is None else (  # a list of lists instead of nil
        mp_header(len(spec_token_ids)) - 1
        + sum(mp_header(len(d)) + sum(mp_uint(x) for x in d) for d in spec_token_ids))
    return 7 + 2 * mp_header(r) + mp_header(r) + per_request + spec


# --------------------------------------------------------------------------- pickle

FRAME_SIZE_TARGET = 64 * 1024  # CPython Modules/_pickle.c
FRAME_SIZE_MIN = 4
FRAME_HEADER_SIZE = 9
BATCHSIZE = 1000
PROTO_HEADER_SIZE = 2


def pk_int(v: int) -> int:
    """Protocol-5 pickle bytes of the int ``v`` (BININT1 / BININT2 / BININT / LONG1)."""
    if 0 <= v < 256:
        return 2
    if 0 <= v < 65536:
        return 3
    if -2**31 <= v < 2**31:
        return 5
    nbytes = (v.bit_length() + 8) // 8  # two's complement, pickle.encode_long
    return 2 + nbytes if nbytes < 256 else 5 + nbytes


def pk_str(s: str) -> int:
    """Bytes of a first-seen string: SHORT_BINUNICODE (or BINUNICODE) + MEMOIZE."""
    n = len(s.encode())
    return (2 + n if n < 256 else 5 + n) + 1


def pk_get(index: int) -> int:
    """Bytes of a memo reference: BINGET (index < 256) or LONG_BINGET."""
    return 2 if index < 256 else 5


class _PickleStream:
    """Size accounting of a protocol-5 pickle as CPython's C pickler writes it.

    ``save()`` marks the start of one object's ``save()`` (where the pickler closes
    a frame that holds ``FRAME_SIZE_TARGET`` bytes or more); ``write(n)`` adds ``n``
    opcode bytes; ``memoize()`` writes ``MEMOIZE`` and returns the memo index.
    """

    def __init__(self) -> None:
        self.frames: list[int] = []
        self.cur = -1  # bytes in the open frame; -1: none open
        self.memo = 0
        self.globals: dict[type, int] = {}
        self.strings: dict[str, int] = {}  # memo index of strings already pickled
        self.unframed = 0  # bytes objects of 64 KiB or more, written outside frames
        self.arrays: dict[str, int] = {}  # memo indexes of array()'s globals and b''

    def save(self) -> None:
        if self.cur >= FRAME_SIZE_TARGET:
            self.frames.append(self.cur)
            self.cur = -1

    def write(self, n: int) -> None:
        if self.cur < 0:
            self.cur = 0
        self.cur += n

    def memoize(self) -> int:
        self.write(1)
        self.memo += 1
        return self.memo - 1

    # one method per kind of object --------------------------------------------
    def const(self) -> None:  # None, True, False
        self.save()
        self.write(1)

    def int(self, v: int) -> None:
        self.save()
        self.write(pk_int(v))

    def str(self, s: str) -> None:
        """A string object: first sight, or a memo reference to the same object."""
        self.save()
        if s in self.strings:
            self.write(pk_get(self.strings[s]))
        else:
            self.write(pk_str(s) - 1)
            self.strings[s] = self.memoize()

    def list(self, n: int, item: Callable[[int], None]) -> None:
        self.save()
        self.write(1)  # EMPTY_LIST
        self.memoize()
        if n == 1:
            item(0)
            self.write(1)  # APPEND
        elif n >= 2:
            for start in range(0, n, BATCHSIZE):
                self.write(1)  # MARK
                for i in range(start, min(n, start + BATCHSIZE)):
                    item(i)
                self.write(1)  # APPENDS

    def _batched(self, n: int, item: Callable[[int], None]) -> None:
        # dict (n >= 2) and set (n >= 1): do { MARK ... } while (batch was full)
        start = 0
        while True:
            self.write(1)  # MARK
            end = min(n, start + BATCHSIZE)
            for i in range(start, end):
                item(i)
            self.write(1)  # SETITEMS / ADDITEMS
            if end - start < BATCHSIZE:
                break
            start = end

    def dict(self, n: int, item: Callable[[int], None]) -> None:
        self.save()
        self.write(1)  # EMPTY_DICT
        self.memoize()
        if n == 1:
            item(0)
            self.write(1)  # SETITEM
        elif n >= 2:
            self._batched(n, item)

    def set(self, n: int, item: Callable[[int], None]) -> None:
        self.save()
        self.write(1)  # EMPTY_SET
        self.memoize()
        if n >= 1:
            self._batched(n, item)

    def tuple(self, items: Sequence[Callable[[], None]]) -> None:
        self.save()
        if not items:
            self.write(1)  # EMPTY_TUPLE, not memoized
            return
        if len(items) > 3:
            self.write(1)  # MARK
        for item in items:
            item()
        self.write(1)  # TUPLE1/2/3 or TUPLE
        self.memoize()

    def global_(self, cls: type) -> None:
        """A class: module and qualified name, ``STACK_GLOBAL`` (a memo reference when
        seen before)."""
        self.save()
        if cls in self.globals:
            self.write(pk_get(self.globals[cls]))
        else:
            self.str(cls.__module__)
            self.str(cls.__qualname__)
            self.write(1)  # STACK_GLOBAL
            self.globals[cls] = self.memoize()

    def reduce(self, cls: type, args: Sequence[Callable[[], None]]) -> None:
        """``REDUCE`` of a class and the tuple of ``args`` (a msgspec Struct: its fields;
        an ``Enum`` member: its value)."""
        self.save()
        self.global_(cls)
        self.tuple(args)
        self.write(1)  # REDUCE
        self.memoize()

    def dataclass(self, cls: type, fields: Sequence[tuple[str, Callable[[], None]]]) -> None:
        """A plain dataclass: ``NEWOBJ`` of its class and ``()``, then ``BUILD`` of its
        ``__dict__`` (``fields``: ``(name, save value)`` in field order)."""
        self.save()
        self.global_(cls)
        self.tuple([])
        self.write(1)  # NEWOBJ
        self.memoize()

        def item(i):
            name, value = fields[i]
            self.str(name)
            value()

        self.dict(len(fields), item)
        self.write(1)  # BUILD

    def _get_or(self, key: str, first: Callable[[], None]) -> None:
        """A memo reference to ``key`` if saved before, else ``first()`` and ``MEMOIZE``."""
        self.save()
        if key in self.arrays:
            self.write(pk_get(self.arrays[key]))
        else:
            first()
            self.arrays[key] = self.memoize()

    def _array_global(self, key: str, qualname: str) -> None:
        """``array._array_reconstructor`` or ``array.array``: first time its module and name
        strings (new objects each time: never memo references), ``STACK_GLOBAL``."""
        def first():
            for name in ("array", qualname):
                self.save()
                self.write(pk_str(name) - 1)
                self.memoize()
            self.write(1)  # STACK_GLOBAL
        self._get_or(key, first)

    def bytes_(self, n: int) -> None:
        """A new ``bytes`` object of ``n`` bytes (``b''`` is one object: memoized once).
        ``SHORT_BINBYTES`` / ``BINBYTES``; from 64 KiB on, written outside any frame."""
        if n == 0:
            self._get_or("b''", lambda: self.write(2))
            return
        self.save()
        header = 2 if n < 256 else 5 if n < 2**32 else 9
        if n >= FRAME_SIZE_TARGET:  # _Pickler_write_bytes bypasses the frame buffer
            if self.cur >= 0:
                self.frames.append(self.cur)
            self.cur = -1
            self.unframed += header + n
        else:
            self.write(header + n)
        self.memoize()

    def array(self, n: int) -> None:
        """An ``array('i')`` of ``n`` ints (``array.__reduce_ex__`` at protocol >= 3):
        ``REDUCE`` of ``array._array_reconstructor`` and ``(array.array, 'i', 8,
        <4n bytes>)`` (8: the machine format code of little-endian int32), whatever the
        values."""
        self.save()
        self._array_global("reconstructor", "_array_reconstructor")
        self.tuple([lambda: self._array_global("array", "array"),
                    lambda: self._get_or("'i'", lambda: self.write(pk_str("i") - 1)),
                    lambda: self.int(8),
                    lambda: self.bytes_(4 * n)])
        self.write(1)  # REDUCE
        self.memoize()

    def total(self) -> int:
        """Bytes of the whole pickle: PROTO + frames (+ 9-byte headers) + STOP, and any
        bytes written outside frames."""
        self.write(1)  # STOP, in the last frame
        frames = self.frames + [self.cur]
        return PROTO_HEADER_SIZE + sum(frames) + self.unframed + FRAME_HEADER_SIZE * sum(
            1 for f in frames if f >= FRAME_SIZE_MIN)


def _pickle_scheduler_output(req_ids, num_computed_tokens, new_block_ids, token_ids,
                             finished_req_ids, spec=None) -> int:
    p = _PickleStream()
    r = len(req_ids)
    msgs = VLLM_DATACLASSES
    counts, total, drafted, spec_item = _spec_parts(p, req_ids, spec, "list")

    def block_tuple(i):
        blocks = new_block_ids[i]
        p.tuple([lambda: p.list(len(blocks), lambda j: p.int(blocks[j]))])

    def new_tokens():
        if token_ids is None:
            p.list(0, None)  # cached: []
        else:
            p.list(r, lambda i: p.list(1, lambda _: p.int(token_ids[i])))

    def num_scheduled_item(i):
        p.str(req_ids[i])  # same str object as in req_ids: a memo reference
        p.int(counts[i])

    cached = [
        ("req_ids", lambda: p.list(r, lambda i: p.str(req_ids[i]))),
        ("resumed_from_preemption", lambda: p.list(r, lambda i: p.const())),
        ("new_token_ids", new_tokens),
        ("new_block_ids", lambda: p.list(r, block_tuple)),
        ("num_computed_tokens", lambda: p.list(r, lambda i: p.int(num_computed_tokens[i]))),
    ]
    fields = [
        ("scheduled_new_reqs", lambda: p.list(0, None)),
        ("scheduled_cached_reqs", lambda: p.dataclass(msgs.CachedRequestData, cached)),
        ("num_scheduled_tokens", lambda: p.dict(r, num_scheduled_item)),
        ("total_num_scheduled_tokens", lambda: p.int(total)),
        ("scheduled_spec_decode_tokens", lambda: p.dict(len(drafted), spec_item)),
        ("scheduled_encoder_inputs", lambda: p.dict(0, None)),
        ("num_common_prefix_blocks", lambda: p.list(1, lambda _: p.int(0))),
        ("finished_req_ids", lambda: p.set(len(finished_req_ids),
                                           lambda j: p.str(finished_req_ids[j]))),
        ("free_encoder_input_ids", lambda: p.list(0, None)),
        ("structured_output_request_ids", lambda: p.dict(0, None)),
        ("grammar_bitmask", p.const),
        ("kv_connector_metadata", p.const),
    ]
    # ("execute_model", (scheduler_output,), {}, output_rank)
    p.tuple([lambda: p.str(EXECUTE_MODEL),
             lambda: p.tuple([lambda: p.dataclass(msgs.SchedulerOutput, fields)]),
             lambda: p.dict(0, None),
             lambda: p.int(OUTPUT_RANK)])
    return p.total()


def _spec_parts(p: "_PickleStream", req_ids, spec, write_ids: str):
    """Pickle pieces of a step's drafts: each request's ``num_scheduled_tokens`` (1 +
    its drafts), ``total_num_scheduled_tokens``, the drafted rows, and the writer of one
    ``scheduled_spec_decode_tokens`` item (the request id, a memo reference, then its
    ids: ``write_ids`` ``"list"`` for pickle, ``"array"`` (an ``array('i')``) for packed)."""
    r = len(req_ids)
    if spec is None:
        return [1] * r, r, [], None
    counts = [1 + len(d) for d in spec]
    drafted = [i for i, d in enumerate(spec) if d]

    def item(k):
        i = drafted[k]
        p.str(req_ids[i])  # the scheduler's key is the request's own id string
        if write_ids == "list":
            p.list(len(spec[i]), lambda j: p.int(spec[i][j]))
        else:
            p.array(len(spec[i]))
    return counts, sum(counts), drafted, item


def _packed_scheduler_output(req_ids, num_computed_tokens, new_block_ids, token_ids,
                             finished_req_ids, spec=None) -> int:
    """vLLM PR #54406's ``(EXECUTE_MODEL_FAST_PATH_TAG, packed, 0)`` pickle of a
    pure-decode step (``wire.codecs.pack_scheduler_output``)."""
    p = _PickleStream()
    r = len(req_ids)
    counts, total, drafted, spec_item = _spec_parts(p, req_ids, spec, "array")

    def new_tokens():
        if token_ids is None:
            p.list(0, None)  # cached: []
        else:
            p.list(r, lambda i: p.array(1))

    def num_scheduled_item(i):
        p.str(req_ids[i])  # same str object as in req_ids: a memo reference
        p.int(counts[i])

    cached = [
        lambda: p.list(r, lambda i: p.str(req_ids[i])),  # req_ids
        lambda: p.list(r, lambda i: p.const()),  # resumed_from_preemption
        new_tokens,
        lambda: p.list(r, lambda i: p.tuple([lambda: p.array(len(new_block_ids[i]))])),
        lambda: p.list(r, lambda i: p.int(num_computed_tokens[i])),
    ]
    fields = [
        lambda: p.tuple([]),  # scheduled_new_reqs: ()
        lambda: p.tuple(cached),
        lambda: p.dict(r, num_scheduled_item),
        lambda: p.int(total),
        lambda: p.dict(len(drafted), spec_item),  # scheduled_spec_decode_tokens
        lambda: p.dict(0, None),  # scheduled_encoder_inputs
        lambda: p.array(1),  # num_common_prefix_blocks: array('i', [0])
        lambda: p.set(len(finished_req_ids), lambda j: p.str(finished_req_ids[j])),
        lambda: p.list(0, None),  # free_encoder_input_ids
        lambda: p.dict(0, None),  # structured_output_request_ids
        p.const, p.const,  # grammar_bitmask, kv_connector_metadata
    ]
    p.tuple([lambda: p.str(EXECUTE_MODEL_FAST_PATH_TAG), lambda: p.tuple(fields),
             lambda: p.int(OUTPUT_RANK)])
    return p.total()


def _pickle_model_runner_output(req_ids, sampled_token_ids, index_order,
                                spec_token_ids=None) -> int:
    p = _PickleStream()
    r = len(req_ids)

    def index_item(k):
        row = index_order[k]
        p.str(req_ids[row])  # same str object as in req_ids
        p.int(row)

    fields = [
        ("req_ids", lambda: p.list(r, lambda i: p.str(req_ids[i]))),
        ("req_id_to_index", lambda: p.dict(r, index_item)),
        ("sampled_token_ids", lambda: p.list(r, lambda i: p.list(
            len(sampled_token_ids[i]), lambda j: p.int(sampled_token_ids[i][j])))),
        ("spec_token_ids", p.const if spec_token_ids is None else lambda: p.list(
            len(spec_token_ids), lambda i: p.list(
                len(spec_token_ids[i]), lambda j: p.int(spec_token_ids[i][j])))),
        ("logprobs", p.const),
        ("prompt_logprobs_dict", lambda: p.dict(0, None)),
        ("pooler_output", lambda: p.list(0, None)),
        ("finished_sending", p.const),
        ("finished_recving", p.const),
        ("num_nans_in_logits", lambda: p.dict(0, None)),
    ]
    status = WorkerProc.ResponseStatus.SUCCESS
    # (WorkerProc.ResponseStatus.SUCCESS, model_runner_output)
    p.tuple([lambda: p.reduce(type(status), [lambda: p.int(status.value)]),
             lambda: p.dataclass(VLLM_DATACLASSES.ModelRunnerOutput, fields)])
    return p.total()


# --------------------------------------------------------------------------- API


def scheduler_output_bytes(codec: str, req_ids: Sequence[str],
                           num_computed_tokens: Sequence[int],
                           new_block_ids: Sequence[Sequence[int]],
                           token_ids: Optional[Sequence[int]],
                           finished_req_ids: Sequence[str] = (),
                           spec_token_ids: Optional[Sequence[Sequence[int]]] = None) -> int:
    """Serialized bytes of a pure-decode step's ``SchedulerOutput``.

    ``req_ids``: the R scheduled requests in scheduling order (``[R]`` str, distinct);
    ``num_computed_tokens``: ``[R]`` ints as sent; ``new_block_ids``: ``[R]`` lists of
    the KV blocks allocated this step (mostly empty); ``token_ids``: ``[R]`` the token
    each request decodes, sent under the ``send`` policy, or ``None`` for ``cached``
    (``new_token_ids == []``); ``finished_req_ids``: ids finished since the previous
    step, in the set's iteration order (none of them in ``req_ids``);
    ``spec_token_ids``: speculative decoding, ``[R]`` lists of the draft ids scheduled
    for each request (``[]`` for none; ``scheduled_spec_decode_tokens`` holds the
    non-empty ones in ``req_ids`` order, and each request is scheduled ``1 + len``
    tokens; ``token_ids`` stays the one real token each: vLLM's ``num_scheduled -
    num_spec`` slice), or ``None`` (no drafts: ``{}``, one token each). Raises
    ``ValueError`` on an unknown codec or mismatched lengths.
    """
    r = len(req_ids)
    if len(num_computed_tokens) != r or len(new_block_ids) != r or (
            token_ids is not None and len(token_ids) != r) or (
            spec_token_ids is not None and len(spec_token_ids) != r):
        raise ValueError("req_ids, num_computed_tokens, new_block_ids, token_ids and "
                         "spec_token_ids must have one entry per request")
    finished = list(finished_req_ids)
    spec = None if spec_token_ids is None else [list(d) for d in spec_token_ids]
    if codec == "msgpack":
        return _msgpack_scheduler_output(req_ids, num_computed_tokens, new_block_ids,
                                         token_ids, finished, spec)
    if codec == "pickle":
        return _pickle_scheduler_output(req_ids, num_computed_tokens, new_block_ids,
                                        token_ids, finished, spec)
    if codec == "packed":
        return _packed_scheduler_output(req_ids, num_computed_tokens, new_block_ids,
                                        token_ids, finished, spec)
    raise ValueError(f"unknown codec {codec!r}; choose from {', '.join(CODECS)}")


def model_runner_output_bytes(codec: str, req_ids: Sequence[str],
                              sampled_token_ids: Sequence[Sequence[int]],
                              index_order: Optional[Sequence[int]] = None,
                              spec_token_ids: Optional[Sequence[Sequence[int]]] = None
                              ) -> int:
    """Serialized bytes of a ``ModelRunnerOutput``.

    ``req_ids``: the runner's rows in order (``[R]`` str); ``sampled_token_ids``:
    ``[R]`` lists (one id per decoding row, empty for a partial prefill; with
    speculative decoding the accepted drafts + the target's token, 1 to K + 1 ids);
    ``index_order``: the iteration order of ``req_id_to_index`` as rows (default
    ``0..R-1``; it only moves pickle's frame boundaries); ``spec_token_ids``: ``[R]``
    lists of drafts proposed for the next step, or ``None`` (no speculative decoding:
    the field is nil / ``None``). Raises ``ValueError`` on an unknown codec or
    mismatched lengths.
    """
    r = len(req_ids)
    if len(sampled_token_ids) != r:
        raise ValueError("sampled_token_ids must have one entry per request")
    order = list(range(r)) if index_order is None else list(index_order)
    if sorted(order) != list(range(r)):
        raise ValueError("index_order must be a permutation of the rows")
    if spec_token_ids is not None and len(spec_token_ids) != r:
        raise ValueError("spec_token_ids must have one entry per request")
    if codec == "msgpack":
        return _msgpack_model_runner_output(req_ids, sampled_token_ids, spec_token_ids)
    if codec in ("pickle", "packed"):  # packed replies as pickle does
        return _pickle_model_runner_output(req_ids, sampled_token_ids, order, spec_token_ids)
    raise ValueError(f"unknown codec {codec!r}; choose from {', '.join(CODECS)}")


def engine_outputs_bytes(req_ids: Sequence[str], new_token_ids: Sequence[Sequence[int]],
                         stats: Optional[tuple[int, int]] = None) -> int:
    """msgpack bytes of an ``EngineCoreOutputs`` (``engine.outputs``) with one output
    per request (``req_ids[i]``, ``new_token_ids[i]``) and, if ``stats`` is given as
    ``(num_running_reqs, num_waiting_reqs)``, a ``SchedulerStats`` (module docstring;
    its float is always 9 bytes, its prefix-cache counters 0)."""
    if len(req_ids) != len(new_token_ids):
        raise ValueError("new_token_ids must have one entry per request")
    body = sum(9 + mp_str(r) + mp_header(len(t)) + sum(mp_uint(x) for x in t)
               for r, t in zip(req_ids, new_token_ids))
    tail = 1 if stats is None else 133 + mp_uint(stats[0]) + mp_uint(stats[1])
    return 15 + mp_header(len(req_ids)) + body + tail


#: Bytes per request that ``send`` adds to a packed pure-decode ``SchedulerOutput`` once
#: the message holds 256 memo entries (about 252 running requests): one ``array('i')``
#: of one id, 4 bytes whatever the id, in 25 bytes of opcodes (``BINGET`` of the
#: reconstructor, the ``array`` class and ``'i'`` at 5 bytes each, ``MARK``,
#: ``BININT1`` 8, the ``SHORT_BINBYTES`` header, ``TUPLE``, ``REDUCE``, three
#: ``MEMOIZE``); 9 bytes fewer with 2-byte memo references.
PACKED_SEND_BYTES_PER_REQUEST = 29


def send_minus_cached_bytes(codec: str, token_ids: Sequence[int]) -> int:
    """Bytes ``send`` adds to a pure-decode ``SchedulerOutput`` of ``len(token_ids)``
    requests, excluding pickle framing (9 bytes per extra 64 KiB frame):
    msgpack ``A(R) - A(0) + sum(1 + U(t))``; pickle ``sum(3 + P(t))`` plus the
    list's batch markers (``APPEND`` for R = 1, ``MARK``/``APPENDS`` per 1,000 else).
    Packed depends on where the message's memo references point (its request ids),
    so ``ValueError``: take the difference of two ``scheduler_output_bytes``."""
    if codec == "packed":
        raise ValueError("packed: send's bytes depend on the request ids' memo entries; "
                         "subtract two scheduler_output_bytes evaluations")
    r = len(token_ids)
    if codec == "msgpack":
        return mp_header(r) - mp_header(0) + sum(1 + mp_uint(t) for t in token_ids)
    if codec == "pickle":
        markers = 0 if r == 0 else 1 if r == 1 else 2 * -(-r // BATCHSIZE)
        return markers + sum(3 + pk_int(t) for t in token_ids)
    raise ValueError(f"unknown codec {codec!r}; choose from {', '.join(CODECS)}")


def expected_token_bytes(codec: str, vocab_size: int, token_ids: str = "uniform") -> float:
    """Mean bytes of one token id drawn from ``[0, vocab_size)`` by the distribution
    ``token_ids`` (``uniform``, ``zipf`` or ``hist:PATH``; ``engine.token_ids``):
    ``E[U(t)]`` (msgpack) or ``E[P(t)]`` (pickle), i.e. the sum over the ranges of equal
    width of (probability of the range) x (width), exact for the ids the harness draws.
    Raises ``ConfigError`` on a bad ``token_ids``."""
    width = mp_uint if codec == "msgpack" else pk_int
    dist = token_id_distribution(token_ids, vocab_size)
    if dist.uniform:  # exact rational arithmetic for the uniform case
        bounds = [0, 128, 256, 65536, 2**31, 2**32]
        total = 0
        for lo, hi in zip(bounds, bounds[1:]):
            if lo >= vocab_size:
                break
            total += (min(hi, vocab_size) - lo) * width(lo)
        return total / vocab_size
    bounds = [0, 128, 256, 65536, 2**31]
    return sum(dist.mass(lo, hi) * width(lo) for lo, hi in zip(bounds, bounds[1:]))


def per_request_send_bytes(codec: str, vocab_size: int, token_ids: str = "uniform") -> float:
    """Mean bytes per running request that ``send`` adds over ``cached`` in a
    pure-decode step for ids of the distribution ``token_ids`` (``expected_token_bytes``):
    1 + E[U] msgpack, 3 + E[P] pickle; packed ``PACKED_SEND_BYTES_PER_REQUEST`` whatever
    the ids. Raises ``ValueError`` on an unknown codec."""
    if codec == "msgpack":
        return 1 + expected_token_bytes(codec, vocab_size, token_ids)
    if codec == "pickle":
        return 3 + expected_token_bytes(codec, vocab_size, token_ids)
    if codec == "packed":
        return float(PACKED_SEND_BYTES_PER_REQUEST)
    raise ValueError(f"unknown codec {codec!r}; choose from {', '.join(CODECS)}")


# --------------------------------------------------------------------------- messages


def step_content(so: SchedulerOutput) -> dict:
    """The model's inputs read from a pure-decode ``SchedulerOutput``.

    Raises ``ValueError`` if ``so`` is not pure decode (new requests, or a request
    scheduled for other than one token plus its draft tokens, or drafts listed out of
    the requests' order).
    """
    cached = so.scheduled_cached_reqs
    drafts = so.scheduled_spec_decode_tokens
    if so.scheduled_new_reqs or len(so.num_scheduled_tokens) != len(cached.req_ids) or any(
            n != 1 + len(drafts.get(r, ())) for r, n in so.num_scheduled_tokens.items()):
        raise ValueError("not a pure-decode SchedulerOutput")
    spec = None
    if drafts:
        spec = [list(drafts.get(r, ())) for r in cached.req_ids]
        if list(drafts) != [r for r in cached.req_ids if r in drafts]:
            raise ValueError("scheduled_spec_decode_tokens out of the requests' order")
    # cached sends an empty list; send one single-id list per request
    send = bool(cached.new_token_ids)
    if send and len(cached.new_token_ids) != len(cached.req_ids):
        raise ValueError("new_token_ids has neither one entry per request nor none")
    return dict(
        req_ids=list(cached.req_ids),
        num_computed_tokens=list(cached.num_computed_tokens),
        new_block_ids=[list(b[0]) for b in cached.new_block_ids],
        token_ids=[ids[0] for ids in cached.new_token_ids] if send else None,
        finished_req_ids=list(so.finished_req_ids),
        spec_token_ids=spec,
    )


def predict_scheduler_output(codec: str, so: SchedulerOutput) -> int:
    """``scheduler_output_bytes`` for the content of a pure-decode ``so``."""
    return scheduler_output_bytes(codec, **step_content(so))


def predict_model_runner_output(codec: str, out: ModelRunnerOutput) -> int:
    """``model_runner_output_bytes`` for the content of ``out``."""
    index = out.req_id_to_index
    return model_runner_output_bytes(codec, out.req_ids, out.sampled_token_ids,
                                     [index[r] for r in index], out.spec_token_ids)


def fit_linear(xs: Sequence[float], ys: Sequence[float]) -> dict:
    """Least-squares ``y = fixed + per_unit * x`` with its coefficient of determination.

    Returns ``{"fixed", "per_unit", "r2", "n"}``; ``scipy.stats.linregress``. Raises
    ``ValueError`` with fewer than 3 points or a constant ``x``.
    """
    from scipy import stats as sps

    if len(xs) != len(ys) or len(xs) < 3:
        raise ValueError(f"a line fit needs at least 3 (x, y) points, got {len(xs)}")
    if len(set(xs)) < 2:
        raise ValueError("a line fit needs at least two distinct x values")
    res = sps.linregress(xs, ys)
    return dict(fixed=float(res.intercept), per_unit=float(res.slope),
                r2=float(res.rvalue ** 2), n=len(xs))


def cached_arm_of(summaries: Sequence[dict]) -> dict[tuple[str, str], str]:
    """(workload, codec) -> the arm that runs the ``cached`` policy there, as the
    summaries name it: ``cached`` where an arm has that name, else the only arm of that
    policy (``direct`` in the pp scenario); a pair with neither is left out."""
    arms: dict[tuple[str, str], set[str]] = {}
    for s in summaries:
        if s.get("policy") == CACHED:
            arms.setdefault((s["workload"], s["codec"]), set()).add(s.get("arm") or CACHED)
    return {key: CACHED if CACHED in names else next(iter(names))
            for key, names in arms.items() if CACHED in names or len(names) == 1}


def send_difference(arm: str, cached_arm: Optional[str], cached_ran: bool) -> str:
    """What the bytes per running request that a ``send`` case's token ids add are
    named by in the byte-model line, naming only arms and policies that ran:
    ``<arm> - <cached_arm>`` when an arm of the ``cached`` policy ran beside the case
    (same workload and codec: ``send - cached``, ``send - direct`` in the pp
    scenario), else ``send - cached`` (the policies) when the ``cached`` policy ran in
    other workloads (the overhead scenario, whose arms ``steps`` and ``totals`` are not
    policies), else ``token ids in <arm>`` (only ``send`` ran: ``--policies send``)."""
    if cached_arm:
        return f"{arm} - {cached_arm}"
    if cached_ran:
        return f"{SEND} - {CACHED}"
    return f"token ids in {arm}"


def _check_frames(caps) -> tuple[int, int, int, int, int]:
    """``byte_model_report``'s count over one case's captures (``CaptureFile``s):
    ``(messages checked, of them mismatched by the model, of them SchedulerOutputs,
    the bytes the token ids add to those with token ids (B), their requests)``."""
    from ipc_bench.wire.codecs import model_runner_output_codec, scheduler_output_codec

    checked = mismatches = s2r_checked = extra_bytes = extra_reqs = 0
    for cap in caps:
        if cap.direction == "s2r":
            codec = scheduler_output_codec(cap.codec)
            for frame in cap.frames:
                content = step_content(codec.decode(frame))
                checked += 1
                s2r_checked += 1
                mismatches += scheduler_output_bytes(cap.codec, **content) != len(frame)
                if content["token_ids"] is not None and content["req_ids"]:
                    content_cached = dict(content, token_ids=None)
                    extra_bytes += len(frame) - scheduler_output_bytes(cap.codec,
                                                                       **content_cached)
                    extra_reqs += len(content["req_ids"])
        else:
            codec = model_runner_output_codec(cap.codec)
            for frame in cap.frames:
                checked += 1
                mismatches += predict_model_runner_output(
                    cap.codec, codec.decode(frame)) != len(frame)
    return checked, mismatches, s2r_checked, extra_bytes, extra_reqs


def byte_model_report(captured: Sequence[tuple], summaries: Sequence[dict]) -> list[dict]:
    """Check the model on a run's captured pure-decode messages; state what it implies.

    ``captured``: ``(CaseSpec, [CaptureFile, ...])`` of the repetition-0 cases counted
    as pure decode; ``summaries``: the run's case summaries. One row per case: the
    number of captured messages checked, both directions (``messages_checked``; of
    them ``scheduler_outputs_checked`` and ``model_runner_outputs_checked``: the steps
    the capture kept, ``capture.build_captures``, so cases of a run differ in them where
    they counted other numbers of steps, ``counted_steps``, or where a case's frames
    passed ``capture.MAX_CAPTURE_BYTES`` at fewer steps), and of
    those whose size the model misses (``mismatches``, 0 when it holds), and for ``send`` cases the
    bytes per running request that ``send`` adds over ``cached``: from the model on
    the captured steps (``model_send_minus_cached_bytes_per_request``), for uniform
    token ids of the vocabulary (``uniform_send_minus_cached_bytes_per_request``) and
    as measured, (send - cached) SchedulerOutput bytes per step / running requests,
    rounded to 1e-9 B, when both policies ran
    (``measured_send_minus_cached_bytes_per_request``); with
    ``token_ids`` (the run's ``--token-ids``), the mean for ids of that distribution
    (``expected_send_minus_cached_bytes_per_request``). ``cached_arm``: the arm of the
    ``cached`` policy a ``send`` row is against, named as the summaries name it
    (``cached_arm_of``: ``direct`` in the pp scenario), ``None`` when none ran beside
    it; ``difference``: what those bytes are named by, naming only what ran
    (``send_difference``).
    """
    rows = []
    by_key = {(s["workload"], s["codec"], s.get("arm") or s["policy"]): s
              for s in summaries if s.get("repetition") == 0 and s.get("num_steps")}
    cached_arms = cached_arm_of(summaries)
    cached_ran = any(s.get("policy") == CACHED for s in summaries)
    for spec, caps in captured:
        if not caps or spec.codec not in MODELLED_CODECS:
            continue  # nothing serialized (single-process baseline), or no model (slots)
        checked, mismatches, s2r_checked, extra_bytes, extra_reqs = _check_frames(caps)
        row = dict(workload=spec.workload_key, codec=spec.codec, arm=spec.arm_label,
                   policy=spec.policy, vocab_size=spec.model.vocab_size,
                   token_ids=spec.model.token_ids,
                   messages_checked=checked, mismatches=mismatches,
                   scheduler_outputs_checked=s2r_checked,
                   model_runner_outputs_checked=checked - s2r_checked,
                   counted_steps=max(cap.num_counted_steps for cap in caps))
        if spec.policy == SEND:
            row["model_send_minus_cached_bytes_per_request"] = (
                extra_bytes / extra_reqs if extra_reqs else None)
            row["uniform_send_minus_cached_bytes_per_request"] = per_request_send_bytes(
                spec.codec, spec.model.vocab_size)
            row["expected_send_minus_cached_bytes_per_request"] = per_request_send_bytes(
                spec.codec, spec.model.vocab_size, spec.model.token_ids)
            row["cached_arm"] = cached_arms.get((spec.workload_key, spec.codec))
            row["difference"] = send_difference(spec.arm_label, row["cached_arm"],
                                                cached_ran)
            send = by_key.get((spec.workload_key, spec.codec, spec.arm_label))
            cached = by_key.get((spec.workload_key, spec.codec, row["cached_arm"]))
            if send and cached and send.get("num_running_mean"):
                # to 1e-9 B: a difference of two means (393.45 - 373.54) has float
                # noise that printed 4.977 beside the model's 4.978 for one 4.9775 B
                row["measured_send_minus_cached_bytes_per_request"] = round(
                    (send["sched_to_runner_payload_bytes_per_step"]
                     - cached["sched_to_runner_payload_bytes_per_step"])
                    / send["num_running_mean"], 9)
        rows.append(row)
    return rows
