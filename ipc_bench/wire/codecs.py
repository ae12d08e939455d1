"""Serializers for the measured messages: one module owns every choice.

- ``msgpack``: msgspec MessagePack of the ``ipc_bench.engine.messages`` Structs
  (``STRUCTS``), with typed decoders built once and reused, as vLLM's
  ``vllm/v1/serial_utils.py`` does for the frontend <-> EngineCore hop.
- ``pickle``: what vLLM's multiprocess executor puts in its ``MessageQueue`` at
  7f280d69c (``vllm/v1/executor/multiproc_executor.py``,
  ``vllm/distributed/device_communicators/shm_broadcast.py``): ``pickle.dumps(obj,
  protocol=pickle.HIGHEST_PROTOCOL)`` of the RPC tuple ``("execute_model",
  (scheduler_output,), {}, 0)`` scheduler -> runner, and of ``(WorkerProc.
  ResponseStatus.SUCCESS, model_runner_output)`` back, where the messages are the
  vLLM-shaped dataclasses of ``ipc_bench.v1rpc`` (``VLLM_DATACLASSES``), whose class
  paths are as long as vLLM's. Pickle runs code on load: only use it between
  processes you started yourself.

``msgpack`` and ``pickle`` also carry the 1d37eb37 layout (``--vllm-layout``,
``LAYOUT_CODECS``): ``messages_of``, ``scheduler_output_codec`` and ``session_codecs``
take a ``layout``; the ``ModelRunnerOutput`` is the same in both layouts.

Each codec names the message classes it carries (``Codec.messages``, ``messages_of``):
the scheduler and the runner build those directly (as vLLM builds its dataclasses),
so ``encode`` is the serializer call alone (for pickle: building the RPC tuple and
``pickle.dumps``, as ``collective_rpc`` and ``MessageQueue.enqueue`` do) and ``decode``
the deserializer alone (``pickle.loads`` and unpacking the tuple, as
``worker_busy_loop`` and ``collective_rpc`` do). No conversion between message
classes is timed, because none happens.

A ``Codec`` encodes to ``bytes`` and decodes ``bytes``-like frames into the expected
type, raising ``DecodeError`` (one line) for anything else. ``msgpack`` checks every
field's type on decode, so a truncated, corrupted or wrong-type frame never comes
back as a wrong value. ``pickle`` checks the RPC envelope and the message's class
(checking every field would cost more than the decode, and vLLM's ``pickle.loads``
checks nothing): a corrupted pickle can decode to a message whose fields have wrong
types, which the receiving loop then rejects with an error naming the step; it can
also ask for unbounded memory before failing (a fuzzed frame took 23 GB here). That,
and code execution on load, is why pickle is refused on TCP unless
``--allow-pickle-over-tcp``. Frames read from a file (``bench.py microbench``'s captured
messages) are first unpickled once by ``PickleCodec.decode_checked``, whose unpickler
resolves only the globals the harness's own messages refer to (``PICKLED_GLOBALS``), so
no code in a frame from elsewhere runs, after an opcode scan (``scan_pickle``) that
refuses memo indices beyond the frame and ``BUILD`` on a class, and before a walk of
the result (``check_decoded``), a check of every field of the message against its
declared type (``check_field_types``) and, for ``packed``, of what packing needs
(``check_packed``: an ``array('i')`` or a tuple wherever its encoder writes one,
int32 integers); ``decode`` stays vLLM's plain ``pickle.loads``.

- ``packed``: vLLM PR #54406 (open, 2026-08-30, "Pack execute_model SchedulerOutput for
  multiproc RPC") on the same hop: the ``SchedulerOutput`` dataclass flattened into a
  fixed positional tuple (``pack_scheduler_output``), every integer list in it as an
  ``array('i')`` (the PR's code converts all of them, not only large ones as its
  description says; ``CachedRequestData.num_computed_tokens`` stays a list, as there),
  pickled inside the 3-tuple ``(EXECUTE_MODEL_FAST_PATH_TAG, packed, output_rank)``;
  ``decode`` unpickles and rebuilds the dataclasses (``unpack_scheduler_output``), and
  the replies are the pickle codec's (the PR leaves them alone). The PR's messages are
  newer than 7f280d69c's; the packing here keeps its rules on the 7f280d69c fields the
  harness carries (``resumed_from_preemption`` a list of bools; ``new_block_ids`` a
  tuple of lists for every request, where the PR's base may send ``None``). Like
  pickle it is refused on TCP unless allowed (``PICKLED_CODECS``).
- ``slots``: the slots protocol (issue 15 item 4, ``wire.slots``): requests named by
  integer slots after their first step, per-request lists as raw int32 arrays, nothing
  sent for a request whose state the runner can infer. It is stateful: the loops get
  its two ends from ``session_codecs``; ``make_codec("slots", ...)`` and the other
  per-direction helpers give its stateless wire part (frame <-> ``SlotsStep`` /
  ``SlotsReply`` with their arrays), which the floor replays and captures time.
- ``replicated``: the SGLang-style baseline (``wire.replicated``): the runner runs a
  replica of the scheduler, fed the arrivals and, per step, the step number and an
  8-byte digest of the schedule, which the replica checks; replies as ``slots``'.
  Stateful like ``slots``; synchronous scheduling only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import pickle
import pickletools
import re
import types
import typing
from array import array
from itertools import chain
from operator import attrgetter
from typing import Any, Generic, Optional, TypeVar, Union

import msgspec

from ipc_bench.engine.config import DEFAULT_VLLM_LAYOUT
from ipc_bench.engine.messages import (LATER_DATACLASSES, STRUCTS, VLLM_DATACLASSES, MessageSet,
                                       in_layout)
from ipc_bench.errors import one_line
from ipc_bench.wire import replicated, slots
from ipc_bench.wire.decode_error import DecodeError
from ipc_bench.v1rpc.multiproc_executors import (EXECUTE_MODEL, EXECUTE_MODEL_FAST_PATH_TAG,
                                                  OUTPUT_RANK, WorkerProc)
from ipc_bench.v1rpc.samp import RequestOutputKind

T = TypeVar("T")


class Codec(Generic[T]):
    """Encoder/decoder pair for one message type. ``name`` is the codec's CLI name;
    ``messages`` the message classes it carries (``msg_type`` is one of them)."""

    name: str
    messages: MessageSet

    def __init__(self, msg_type: type[T]):
        self.msg_type = msg_type

    def encode(self, msg: T) -> bytes:  # pragma: no cover - interface
        raise NotImplementedError

    def decode(self, frame: Any) -> T:  # pragma: no cover - interface
        raise NotImplementedError

    def decode_checked(self, frame: Any) -> T:
        """``decode`` of a frame read from a file, where no code in it may run:
        ``decode`` itself, which runs none, but for the pickled codecs
        (``PickleCodec.decode_checked``). ``DecodeError`` (one line) as ``decode``."""
        return self.decode(frame)


class MsgpackCodec(Codec[T]):
    """msgspec MessagePack; the decoder validates the frame against ``msg_type``."""

    name = "msgpack"
    messages = STRUCTS

    def __init__(self, msg_type: type[T]):
        super().__init__(msg_type)
        self._encoder = msgspec.msgpack.Encoder()
        self._decoder = msgspec.msgpack.Decoder(msg_type)
        self.encode = self._encoder.encode  # bound C method: no Python frame per call

    def decode(self, frame: Any) -> T:
        try:
            return self._decoder.decode(frame)
        except msgspec.DecodeError as exc:
            raise DecodeError(one_line(f"{self.msg_type.__name__}: {exc}")) from None


_SUCCESS = WorkerProc.ResponseStatus.SUCCESS
_FAILURE = WorkerProc.ResponseStatus.FAILURE


def _encode_rpc_request(so, dumps=pickle.dumps, protocol=pickle.HIGHEST_PROTOCOL) -> bytes:
    """``MultiprocExecutor.collective_rpc`` + ``MessageQueue.enqueue`` of vLLM 7f280d69c:
    ``pickle.dumps((send_method, args, kwargs or {}, unique_reply_rank))``."""
    return dumps((EXECUTE_MODEL, (so,), {}, OUTPUT_RANK), protocol=protocol)


def _encode_rpc_reply(out, dumps=pickle.dumps, protocol=pickle.HIGHEST_PROTOCOL) -> bytes:
    """``WorkerProc.worker_busy_loop``'s reply: ``(ResponseStatus.SUCCESS, output)``."""
    return dumps((_SUCCESS, out), protocol=protocol)


#: The globals, ``(module, qualified name)``, that a frame of the pickled codecs
#: (``PICKLED_CODECS``) refers to: the vLLM-shaped classes of ``ipc_bench.v1rpc`` the
#: harness pickles (``VLLM_DATACLASSES``' messages, ``SamplingParams``' enum
#: ``RequestOutputKind``, the reply's ``WorkerProc.ResponseStatus``) and, for the
#: ``packed`` codec's ``array('i')``, ``array.array`` and its reconstructor. Sets,
#: dicts, lists, tuples, strings and numbers need none.
PICKLED_GLOBALS: frozenset[tuple[str, str]] = frozenset(
    [(c.__module__, c.__qualname__) for c in (
        VLLM_DATACLASSES.SchedulerOutput, VLLM_DATACLASSES.NewRequestData,
        VLLM_DATACLASSES.CachedRequestData, VLLM_DATACLASSES.SamplingParams,
        VLLM_DATACLASSES.ModelRunnerOutput, RequestOutputKind, WorkerProc.ResponseStatus,
        LATER_DATACLASSES.SchedulerOutput, LATER_DATACLASSES.NewRequestData,
        LATER_DATACLASSES.CachedRequestData)]
    + [("array", "array"), ("array", "_array_reconstructor")])


class UnsafePickle(DecodeError):
    """A pickled frame that refers to a global outside ``PICKLED_GLOBALS`` (one line,
    naming it): not unpickled, as it could run any code."""


def _global_name(module: str, name: str) -> str:
    """``module.name`` as an error line quotes it: escaped where unprintable
    (``one_line``), cut to 100 characters."""
    text = one_line(f"{module}.{name}")
    return text if len(text) <= 100 else text[:97] + "..."


class RefusedPickle(DecodeError):
    """A pickled frame that would do what no frame the harness writes does (one line,
    saying what): change a class of the harness (``BUILD`` applied to anything but a
    fresh dataclass instance), ask for a memo slot beyond what the frame could fill,
    decode to objects other than well-formed messages (``check_decoded``), or to a
    message whose fields do not hold their declared types (``check_field_types``)."""


#: The dataclasses whose instances a harness frame builds with ``NEWOBJ`` then ``BUILD``
#: of their field dict (``copyreg.__reduce_ex__``); ``SamplingParams`` (a msgspec
#: Struct) and the enums come through ``REDUCE``, ``array('i')`` through its
#: reconstructor.
_BUILT: dict[str, type] = {f"{c.__module__}.{c.__qualname__}": c for c in (
    VLLM_DATACLASSES.SchedulerOutput, VLLM_DATACLASSES.NewRequestData,
    VLLM_DATACLASSES.CachedRequestData, VLLM_DATACLASSES.ModelRunnerOutput,
    LATER_DATACLASSES.SchedulerOutput, LATER_DATACLASSES.NewRequestData,
    LATER_DATACLASSES.CachedRequestData)}
_MEMO_OPS = frozenset({"PUT", "BINPUT", "LONG_BINPUT", "GET", "BINGET", "LONG_BINGET"})
_STRING_OPS = frozenset({"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"})
_FILLED_OPS = frozenset({"APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS"})


def _short(name: str) -> str:
    """The class name of a ``module.qualname`` the scan found (``SchedulerOutput``)."""
    return name.rpartition(".")[2] or name


def scan_pickle(frame: Any) -> bool:
    """Read the opcodes of the pickle ``frame`` (bytes-like) with ``pickletools.genops``,
    which executes nothing and allocates nothing by a memo index, keeping a shadow stack
    and memo of what each item is (a string, a global, a fresh instance of a class, a
    dict, anything else). ``RefusedPickle`` (one line) for the first opcode that does
    what no frame the harness writes does:

    - a memo index (``PUT``, ``BINPUT``, ``LONG_BINPUT``, ``GET``, ``BINGET``,
      ``LONG_BINGET``, and the slot ``MEMOIZE`` fills) at or beyond the number of opcodes
      before it: pickle numbers memo slots from 0 as it fills them, one opcode each, and
      the C unpickler sizes its memo by the index (``N\\x94r\\x00\\x00\\x00\\x04.`` would
      take 1 GiB);
    - ``BUILD`` applied to anything but an instance ``NEWOBJ`` made of one of the
      harness's dataclasses, with a dict for its state: ``BUILD`` on a class object sets
      attributes of the class itself for the rest of the process, and on an enum member
      or a ``REDUCE`` result changes a shared object.

    Returns ``True`` for a frame that passes to its ``STOP``; ``False`` where genops
    cannot read on (truncated, an unknown opcode) or the stack runs out, which the
    unpickler fails on in its own words at the same opcode (every opcode before it
    passed)."""
    stack: list[tuple] = []
    memo: dict[int, tuple] = {}
    ops = enumerate(pickletools.genops(frame))
    while True:
        try:
            count, (op, arg, pos) = next(ops)
        except StopIteration:
            return True
        except ValueError:  # RefusedPickle is one too: only genops' own errors here
            return False  # genops cannot read on: the unpickler names the damage
        name = op.name
        index = len(memo) if name == "MEMOIZE" else arg if name in _MEMO_OPS else None
        if index is not None and not 0 <= index < count:
            raise RefusedPickle(f"a pickle frame's {name} at byte {pos} names memo slot "
                                f"{index}, beyond the {count} opcodes before it: not "
                                "unpickled (it would ask for memory by that number)")
        if name in ("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"):
            memo[index] = stack[-1] if stack else ("other",)
            continue
        if name in ("GET", "BINGET", "LONG_BINGET"):
            stack.append(memo.get(index, ("other",)))
            continue
        popped = _pop(stack, op.stack_before)
        if popped is None:
            return False  # the stack runs out: the unpickler fails here itself
        _push(stack, name, arg, pos, popped, op.stack_after)


_MARK = ("mark",)


def _pop(stack: list, before: list) -> Optional[list]:
    """Take what an opcode of ``stack_before`` ``before`` takes off the shadow
    ``stack`` (up to its last mark, where it takes a slice); ``None`` where there is
    not enough."""
    if pickletools.markobject in before:
        at = next((i for i in range(len(stack) - 1, -1, -1) if stack[i] is _MARK), None)
        below = before.index(pickletools.markobject)
        if at is None or at < below:
            return None
        popped = stack[at - below:at] + stack[at + 1:]
        del stack[at - below:]
        return popped
    if len(stack) < len(before):
        return None
    popped = stack[len(stack) - len(before):]
    del stack[len(stack) - len(before):]
    return popped


def _push(stack: list, name: str, arg: Any, pos: int, popped: list, after: list) -> None:
    """Put what opcode ``name`` (argument ``arg``, at byte ``pos``) leaves on the shadow
    ``stack``, having taken ``popped``; ``RefusedPickle`` for a ``BUILD`` no harness
    frame holds (``scan_pickle``)."""
    if name == "BUILD":
        target, state = popped
        if target[0] == "global":
            raise RefusedPickle(
                f"a pickle frame applies BUILD at byte {pos} to the class "
                f"{_short(target[1])} itself, which would change the class for "
                "the rest of the process: not unpickled")
        if not (target[0] == "instance" and target[1] in _BUILT and state[0] == "dict"):
            what = (f"a {_short(target[1])} made by {target[2]}"
                    if target[0] == "instance" else "an object no NEWOBJ made")
            got = "a dict" if state[0] == "dict" else "a state other than a dict"
            raise RefusedPickle(
                f"a pickle frame applies BUILD at byte {pos} to {what}, with {got}, "
                "which no frame the harness writes does: not unpickled")
        stack.append(target)
    elif name in _FILLED_OPS:
        stack.append(popped[0])
    elif name in _STRING_OPS:
        stack.append(("str", arg))
    elif name == "STACK_GLOBAL":
        module, qualname = popped
        stack.append(("global", f"{module[1]}.{qualname[1]}"
                      if module[0] == qualname[0] == "str" else "?"))
    elif name == "GLOBAL":
        stack.append(("global", arg.replace(" ", ".", 1)))
    elif name in ("NEWOBJ", "NEWOBJ_EX", "OBJ", "INST", "REDUCE"):
        cls = ("global", arg.replace(" ", ".", 1)) if name == "INST" else popped[0]
        stack.append(("instance", cls[1], name) if cls[0] == "global" else ("other",))
    elif name in ("EMPTY_DICT", "DICT"):
        stack.append(("dict",))
    elif name == "DUP":
        stack.extend(popped * 2)
    else:
        stack.extend(_MARK if item is pickletools.markobject else ("other",)
                     for item in after)


#: The classes a checked frame may reach (``PICKLED_GLOBALS`` that are Python classes):
#: their ``__dict__`` is compared before and after each checked unpickling.
_GUARDED: tuple[type, ...] = (
    VLLM_DATACLASSES.SchedulerOutput, VLLM_DATACLASSES.NewRequestData,
    VLLM_DATACLASSES.CachedRequestData, VLLM_DATACLASSES.SamplingParams,
    VLLM_DATACLASSES.ModelRunnerOutput, RequestOutputKind, WorkerProc.ResponseStatus,
    LATER_DATACLASSES.SchedulerOutput, LATER_DATACLASSES.NewRequestData,
    LATER_DATACLASSES.CachedRequestData)
_MISSING = object()


def _class_changes(snapshot: dict[type, dict]) -> Optional[str]:
    """Compare each ``_GUARDED`` class with its ``snapshot`` (``dict(vars(cls))``), put
    back whatever differs, and say what changed (``the class SchedulerOutput (sets
    pwned_by_pk)``); ``None`` when nothing did."""
    said = None
    for cls, before in snapshot.items():
        now = dict(vars(cls))
        changed = sorted(k for k in before.keys() | now.keys()
                         if before.get(k, _MISSING) is not now.get(k, _MISSING))
        if not changed:
            continue
        for key in changed:
            with contextlib.suppress(Exception):  # put back what can be put back
                if key in before:
                    type.__setattr__(cls, key, before[key])
                else:
                    type.__delattr__(cls, key)
        names = ", ".join(_global_name("", k).lstrip(".") for k in changed[:3])
        said = said or f"the class {cls.__name__} (sets {names})"
    return said


def _fields(obj: Any) -> Optional[tuple[str, ...]]:
    """The declared fields of an instance of a message class (``None`` for others)."""
    cls = type(obj)
    if cls in _BUILT.values():
        return tuple(f.name for f in dataclasses.fields(cls))
    if cls is VLLM_DATACLASSES.SamplingParams:
        return cls.__struct_fields__
    return None


_PLAIN = (str, int, float, bool, bytes, type(None))
_CONTAINERS = (list, tuple, set, frozenset, dict)


def _parts(obj: Any) -> list:
    """What ``check_decoded`` walks into from ``obj``: a container's items (a dict's keys
    and values, no temporary pairs whose ids a later object could take), a message's
    declared fields (``_fields``); ``[]`` for anything else."""
    cls = type(obj)
    if cls is dict:
        return [*obj, *obj.values()]
    if cls in _CONTAINERS:
        return list(obj)
    fields = _fields(obj)
    return [getattr(obj, f) for f in fields] if fields else []


def check_decoded(msg: Any, frame_bytes: int) -> None:
    """Walk what a checked unpickling returned (``msg``: the RPC tuple, or the packed
    tuple, from a frame of ``frame_bytes`` bytes) and raise ``RefusedPickle`` (one
    line) unless it is made only of what the harness's messages hold: strings,
    numbers, ``None``, bytes, lists, tuples, sets, dicts, ``array.array``, the members
    of ``RequestOutputKind`` and ``WorkerProc.ResponseStatus``, and instances of the
    message classes whose attributes are exactly their declared fields (a dataclass's
    ``__dict__`` holds its fields and no more; a ``SamplingParams`` has every field set
    and an empty ``__dict__``). An instance ``__dict__`` entry such as ``__reduce_ex__``
    would otherwise be called by the encoder later. Where an object is reached along
    more than one path (memo references), the walk that ``check_field_types`` makes
    through every path may not exceed ``SHARED_WALK_FACTOR`` times ``frame_bytes``
    nodes, nor go round a cycle. Field types are checked after, on the opened message
    (``check_field_types``)."""
    todo, seen, shared = [msg], set(), False
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            shared = shared or bool(_parts(obj))
            continue
        seen.add(id(obj))
        cls = type(obj)
        if cls in _PLAIN or cls is array:
            continue
        if cls in _CONTAINERS:
            todo.extend(_parts(obj))
            continue
        if cls in (RequestOutputKind, WorkerProc.ResponseStatus):
            if any(obj is member for member in cls):
                continue
            raise RefusedPickle(f"a pickle frame decodes to a {cls.__name__} that is not "
                                "one of its members: not timed")
        _check_attributes(obj)
        todo.extend(_parts(obj))
    limit = SHARED_WALK_FACTOR * frame_bytes
    if shared and _walk_size(msg, limit) is None:
        raise RefusedPickle(f"a pickle frame refers to its own objects so often or so "
                            f"circularly that walking its fields would visit more than "
                            f"{limit} objects ({SHARED_WALK_FACTOR} per byte): not timed")


def _check_attributes(obj: Any) -> None:
    """``RefusedPickle`` unless ``obj`` is an instance of a message class whose
    attributes are exactly its declared fields (``check_decoded``)."""
    cls = type(obj)
    fields = _fields(obj)
    if fields is None:
        raise RefusedPickle(f"a pickle frame decodes to a "
                            f"{_global_name(cls.__module__, cls.__qualname__)}, which "
                            "no message of the harness holds: not timed")
    attrs = vars(obj) if hasattr(obj, "__dict__") else {}
    if cls is VLLM_DATACLASSES.SamplingParams:
        extra = sorted(map(str, attrs))
        missing = [f for f in fields if not hasattr(obj, f)]
    else:
        extra = sorted(str(k) for k in attrs if type(k) is not str or k not in fields)
        missing = [f for f in fields if f not in attrs]
    if extra or missing:
        what = (f"the attribute {_global_name('', extra[0]).lstrip('.')}, not one of "
                "its fields" if extra else f"no field {missing[0]}")
        raise RefusedPickle(f"a pickle frame decodes to a {cls.__name__} with {what}: "
                            "not timed")


#: How many objects, per byte of a frame, the walk of its fields through every path
#: (``check_field_types``'s) may visit where the frame refers to one object more than
#: once (``check_decoded``). A frame the harness writes visits at most one per byte:
#: every item it holds costs an opcode of a byte or more.
SHARED_WALK_FACTOR = 4


def _walk_size(root: Any, limit: int) -> Optional[int]:
    """How many objects a walk of ``root`` through every path visits (an object
    reached by two paths counts twice, a leaf once), computed once per object, not by
    walking; ``None`` once it exceeds ``limit``, or where ``root`` holds itself."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        obj, done = stack.pop()
        key = id(obj)
        if done:
            active.discard(key)
            sizes[key] = 1 + sum(sizes.get(id(p), 1) for p in _parts(obj))
            if sizes[key] > limit:
                return None
        elif key not in sizes:
            parts = _parts(obj)
            if not parts:
                continue
            if key in active:
                return None  # an object that holds itself: no walk ends
            active.add(key)
            stack.append((obj, True))
            stack.extend((p, False) for p in parts if id(p) not in sizes)
    return sizes.get(id(root), 1)


#: What ``msgspec.to_builtins`` passes through as it is in ``check_field_types``:
#: bytes stay bytes (not base64 text, which a ``str`` field would take).
_KEPT_TYPES = (bytes, bytearray, memoryview)


def check_field_types(msg: Any) -> None:
    """Check every declared field of the message ``msg`` (a ``SchedulerOutput`` or
    ``ModelRunnerOutput`` of ``VLLM_DATACLASSES`` that passed ``check_decoded``),
    nested messages included, against its declared type: ``msgspec.to_builtins`` then
    ``msgspec.convert`` back to ``type(msg)`` with ``strict=True`` (no str for an int,
    no int for a bool, no list for a dict; ``Optional``, unions, tuples, sets and
    enums as declared), and the result must equal ``msg`` (an enum member where an int
    is declared, a set where a list is, a list where a tuple is, comes back as another
    value). The fields declared ``Any`` stand for vLLM objects no harness frame can
    carry (its classes, numpy arrays, tensors: the unpickler resolves only
    ``PICKLED_GLOBALS``), so each takes only what text generation sends there, ``None``
    or an empty list (``UNFILLED_FIELDS``); ``SamplingParams.extra_args`` alone, user
    data that vLLM pickles as given, takes any value ``check_decoded`` allows whose
    round trip is equal (no set inside it: it comes back as a list; a tuple stays one,
    ``to_builtins`` keeping tuples).

    ``RefusedPickle`` (one line) naming the message, the field's path, what it held and
    the declared type as the message definitions spell it: ``a pickle frame decodes to
    a SchedulerOutput whose field scheduled_new_reqs[0].prompt_token_ids holds str where
    its declared type takes list[int]: not timed``, ``... whose field
    scheduled_new_reqs[0].block_ids holds a list where its declared type takes
    tuple[list[int], ...]: not timed``, ``... whose field grammar_bitmask holds [1, 2]
    where its declared type, Optional[Any], takes only None (vLLM's
    Optional[npt.NDArray[np.int32]], an array no harness frame carries): not timed``;
    an object msgspec cannot walk (``array.array`` outside the packed tuple, lists
    nested past Python's recursion limit) is named with its words. Costs about one
    ``to_builtins`` and one ``convert`` of the message: about 6 µs for a step of 1
    running request, 140 µs at 256."""
    cls = type(msg)
    start = f"a pickle frame decodes to a {cls.__name__} whose field"
    try:
        back = msgspec.convert(msgspec.to_builtins(msg, builtin_types=_KEPT_TYPES), cls,
                               strict=True)
        same = back == msg
    except msgspec.ValidationError as exc:
        raise RefusedPickle(one_line(f"{start} {_invalid(msg, str(exc))}: not timed")
                            ) from None
    except Exception as exc:  # TypeError (array.array), RecursionError (deep nesting)
        path = _unwalkable(msg)
        raise RefusedPickle(one_line(f"{start} {path} holds what msgspec cannot walk "
                                     f"({type(exc).__name__}: {exc}): not timed")) from None
    unfilled = _unfilled(msg)
    if unfilled:
        raise RefusedPickle(one_line(f"{start} {unfilled}: not timed"))
    if not same:
        raise RefusedPickle(one_line(f"{start} {_changed(msg, back)}: not timed"))


#: The fields declared ``Any`` (or holding ``Any``) that stand for vLLM objects no
#: harness frame carries, by message class: ``(field, what it may hold, vLLM's type of
#: it)``. ``None``: only ``None``; ``[]``: only an empty list; ``EACH_NONE``: a dict or
#: list whose every value is ``None``. Text generation at 7f280d69c sends exactly these
#: (``sched_out``'s and ``v1rpc``'s docstrings); V1 refuses per-request logits
#: processors, so ``logits_processors`` is ``None`` whatever the request.
EACH_NONE = "each None"
UNFILLED_FIELDS: dict[type, tuple[tuple[str, Any, str], ...]] = {
    VLLM_DATACLASSES.SchedulerOutput: (
        ("grammar_bitmask", None, "vLLM's Optional[npt.NDArray[np.int32]], an array"),
        ("kv_connector_metadata", None, "vLLM's Optional[KVConnectorMetadata], an object")),
    VLLM_DATACLASSES.NewRequestData: (
        ("mm_inputs", [], "vLLM's list[MultiModalKwargs], objects"),
        ("mm_positions", [], "vLLM's list[PlaceholderRange], objects"),
        ("pooling_params", None, "vLLM's Optional[PoolingParams], an object"),
        ("lora_request", None, "vLLM's Optional[LoRARequest], an object")),
    VLLM_DATACLASSES.SamplingParams: (
        ("logits_processors", None, "vLLM V1 refuses per-request logits processors; "
         "callables"),
        ("guided_decoding", None, "vLLM's Optional[GuidedDecodingParams], an object")),
    VLLM_DATACLASSES.ModelRunnerOutput: (
        ("logprobs", None, "vLLM's Optional[LogprobsLists], an object"),
        ("prompt_logprobs_dict", EACH_NONE,
         "vLLM's dict[str, Optional[LogprobsTensors]], objects"),
        ("pooler_output", EACH_NONE, "vLLM's list[Optional[torch.Tensor]], tensors")),
}


def _unfilled(msg: Any) -> Optional[str]:
    """``PATH holds VALUE where its declared type, TYPE, takes only None (...)`` for the
    first field of ``UNFILLED_FIELDS`` in ``msg`` or its new requests and their
    sampling params that holds more than it may; ``None`` when none does."""
    owners: list[tuple[list, Any]] = [([], msg)]
    if type(msg) is VLLM_DATACLASSES.SchedulerOutput:
        for i, req in enumerate(msg.scheduled_new_reqs):
            at = [("field", "scheduled_new_reqs"), ("index", i)]
            owners += [(at, req), (at + [("field", "sampling_params")], req.sampling_params)]
    for steps, owner in owners:
        for field, only, vllm in UNFILLED_FIELDS.get(type(owner), ()):
            value = getattr(owner, field)
            if only is None:
                if value is None:
                    continue
            elif only is EACH_NONE:
                if not value or all(v is None for v in (
                        value.values() if type(value) is dict else value)):
                    continue
            elif value == only:
                continue
            return _unfilled_line(msg, steps + [("field", field)], value, only, vllm)
    return None


def _unfilled_line(msg: Any, steps: list, value: Any, only: Any, vllm: str) -> str:
    """The words of ``_unfilled`` for the field at ``steps`` of ``msg`` holding
    ``value``, of ``UNFILLED_FIELDS``' ``only`` and ``vllm``; for ``EACH_NONE``, naming
    the first item that is not ``None``."""
    if only is EACH_NONE:
        kind = "value" if type(value) is dict else "index"
        key = next(k for k, v in (value.items() if kind == "value" else enumerate(value))
                   if v is not None)
        value, only, steps = value[key], None, steps + [(kind, key)]
    declared = _follow(msg, steps)[2]
    return (f"{_path(steps)} holds {value!r:.60} where its declared type, {declared}, "
            f"takes only {only!r} ({vllm} no harness frame carries)")


def _changed(msg: Any, back: Any) -> str:
    """``PATH holds ...`` of the first place where ``msg`` and its round trip ``back``
    differ (``_difference``): the type held against the declared type, as the message
    definitions spell it; the two values where the types are the same; what ``Any``
    reads it back as, under ``Any``."""
    steps, held, back_as = _difference(msg, back)
    path = _path(steps)
    if type(held) is type(back_as):
        return (f"{path} holds {held!r:.60} where its declared type reads it as "
                f"{back_as!r:.60}")
    try:
        hint, declared = _follow(msg, steps)[1:]
    except Exception:  # a path the declared types do not follow: msgspec's reading
        hint, declared = None, type(back_as).__name__
    if hint is Any:
        return (f"{path} holds a {type(held).__name__}, which its declared type, Any, "
                f"reads back as a {type(back_as).__name__}")
    return f"{path} holds a {type(held).__name__} where its declared type takes {declared}"


def _invalid(msg: Any, text: str) -> str:
    """``PATH holds GOT where its declared type takes EXPECTED`` of a
    ``msgspec.ValidationError`` text (``Expected `array`, got `str` - at `$.a[0]```)
    about ``msg``: GOT the type of what ``msg`` holds there, EXPECTED its declared type
    as the message definitions spell it (``list[int]``, ``Optional[list[int]]``, where
    msgspec says ``array``, ``array | null``), a dict value msgspec leaves unnamed
    (``[...]``) named by its key; in msgspec's names where the path cannot be followed;
    ``(msgspec: TEXT)`` where the text has another form."""
    why, sep, where = text.partition(" - at `")
    key = where.startswith("key` in `")
    where = where.removeprefix("key` in `").rstrip("`").removeprefix("$")
    steps = _msgspec_steps(where) if sep else None
    if steps:
        try:
            path, obj, hint, declared = _follow(msg, steps, path_too=True)
            if key:
                args = typing.get_args(_arm(hint, obj, "value"))
                obj, declared = _first_bad(obj, args[0], keys=True), _spelled(args[0])
            got = "None" if obj is None else type(obj).__name__
            if " of length " in why and type(obj) in (list, tuple):
                got = f"a {got} of length {len(obj)}"
            return (f"{path}{' (a key)' if key else ''} holds {got} where its declared "
                    f"type takes {declared}")
        except Exception:  # a path the declared types do not follow: msgspec's words
            pass
    path = where.lstrip(".")
    expected, got = why.partition("Expected `")[2], why.partition(", got `")[2]
    if not (sep and path and expected and got):
        return f"(msgspec: {text})"
    return (f"{path}{' (a key)' if key else ''} holds {got.rstrip('`')} where its "
            f"declared type takes {expected.partition('`')[0]}")


#: One step of a msgspec error path: ``.field``, ``[index]``, or ``[...]`` (a dict value).
_STEP = re.compile(r"\.([A-Za-z_]\w*)|\[(\d+)\]|(\[\.\.\.\])")
#: The key of a dict value msgspec does not name (``[...]``): the first that fails.
_SOME_KEY = object()


def _msgspec_steps(where: str) -> Optional[list[tuple[str, Any]]]:
    """The steps (``("field", name)``, ``("index", i)``, ``("value", key)``) of a
    msgspec error path after its ``$``; ``None`` for a path of another form."""
    steps, pos = [], 0
    while pos < len(where):
        m = _STEP.match(where, pos)
        if m is None:
            return None
        steps.append(("field", m[1]) if m[1] else ("index", int(m[2])) if m[2]
                     else ("value", _SOME_KEY))
        pos = m.end()
    return steps or None


#: The longest dict key a refusal's path quotes whole (its ``repr``, quotes included);
#: a longer one keeps its first characters and its closing quote around ``...``.
PATH_KEY_CHARS = 80


def _path(steps: list[tuple[str, Any]]) -> str:
    """A field's path as the refusals name it: ``scheduled_new_reqs[0].block_ids[0]``,
    ``num_scheduled_tokens['cmpl-0335886941cc99793c5d68a67ef66417-0']`` (``?`` for
    none); a key whose ``repr`` is longer than ``PATH_KEY_CHARS`` is cut to that many
    characters, ``...`` before its closing quote."""
    text = "".join(f".{arg}" if kind == "field" else f"[{arg}]" if kind == "index"
                   else f"[{_key_text(arg)}]" for kind, arg in steps)
    return text.lstrip(".") or "?"


def _key_text(key: Any) -> str:
    """``repr(key)``, cut to ``PATH_KEY_CHARS`` with ``...`` inside its quotes (a str
    or bytes key) or at its end (any other)."""
    text = repr(key)
    if len(text) <= PATH_KEY_CHARS:
        return text
    if type(key) in (str, bytes):
        return text[:PATH_KEY_CHARS - 4] + "..." + text[-1]
    return text[:PATH_KEY_CHARS - 3] + "..."


def _follow(msg: Any, steps: list[tuple[str, Any]], path_too: bool = False) -> tuple:
    """Follow ``steps`` down ``msg`` and its declared types together: ``(what is
    there, its declared type, that type as the message definitions spell it)`` (a
    field's own annotation text, ``list[int]``; below it, the type written out the same
    way), with the path in front where ``path_too`` (a dict value of ``_SOME_KEY``
    named by the first key whose value fails its declared type). Raises whatever a step
    the value or the types do not have raises (``KeyError``, ``IndexError``, ...)."""
    obj, hint, spelled, done = msg, type(msg), type(msg).__name__, []
    for kind, arg in steps:
        if kind == "field":
            owner = type(obj)
            hint = typing.get_type_hints(owner)[arg]
            spelled = owner.__annotations__.get(arg) or _spelled(hint)
            obj = getattr(obj, arg)
        else:
            hint = _arm(hint, obj, kind)
            args = typing.get_args(hint)
            if kind == "index":
                obj = (list(obj) if type(obj) in (set, frozenset) else obj)[arg]
                ellipsis = typing.get_origin(hint) is tuple and args[-1:] != (Ellipsis,)
                hint = (args[arg] if ellipsis else args[0]) if args else Any
            else:
                hint = args[1] if len(args) == 2 else Any
                arg = _first_bad(obj, hint, keys=False) if arg is _SOME_KEY else arg
                obj = obj[arg]
            spelled = _spelled(hint)
        done.append((kind, arg))
    return (_path(done), obj, hint, spelled) if path_too else (obj, hint, spelled)


def _arm(hint: Any, obj: Any, kind: str) -> Any:
    """The arm of the union ``hint`` (``Optional[...]``, ``Union[...]``) that ``obj``
    is an instance of, else the first container arm where a ``kind`` step goes below
    it (``index``: a list, tuple or set; ``value``: a dict); ``hint`` if not a union."""
    if typing.get_origin(hint) not in (Union, types.UnionType):
        return hint
    arms = [a for a in typing.get_args(hint) if a is not type(None)]
    for arm in arms:
        base = typing.get_origin(arm) or arm
        if isinstance(base, type) and isinstance(obj, base):
            return arm
    kinds = (dict,) if kind == "value" else (list, tuple, set, frozenset)
    return next((a for a in arms if typing.get_origin(a) in kinds), arms[0])


def _spelled(hint: Any) -> str:
    """``hint`` written as the message definitions write types: ``list[int]``,
    ``tuple[list[int], ...]``, ``Optional[Union[str, list[str]]]``, ``Any``,
    ``NewRequestData``."""
    if hint is Any or hint is type(None):
        return "Any" if hint is Any else "None"
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        arms = [a for a in args if a is not type(None)]
        inner = (_spelled(arms[0]) if len(arms) == 1
                 else f"Union[{', '.join(map(_spelled, arms))}]")
        return f"Optional[{inner}]" if len(arms) < len(args) else inner
    if origin is not None:
        return (f"{origin.__name__}["
                f"{', '.join('...' if a is Ellipsis else _spelled(a) for a in args)}]")
    return getattr(hint, "__name__", str(hint))


def _first_bad(obj: dict, hint: Any, keys: bool) -> Any:
    """The first key of the dict ``obj`` whose key (``keys``) or value does not convert
    to ``hint`` as ``check_field_types`` converts; its first key if none fails."""
    for key, value in obj.items():
        try:
            msgspec.convert(msgspec.to_builtins(key if keys else value,
                                                builtin_types=_KEPT_TYPES),
                            hint, strict=True)
        except Exception:  # msgspec.ValidationError, or whatever the walk fails with
            return key
    return next(iter(obj))


def _named_parts(obj: Any) -> list[tuple[tuple[str, Any], Any]]:
    """``(step, part)`` of a message (``("field", name)``), list or tuple
    (``("index", i)``) or dict (``("value", key)``, its values)."""
    fields = _fields(obj)
    if fields:
        return [(("field", f), getattr(obj, f)) for f in fields]
    if type(obj) in (list, tuple):
        return [(("index", i), v) for i, v in enumerate(obj)]
    if type(obj) is dict:
        return [(("value", k), v) for k, v in obj.items()]
    return []


def _unwalkable(msg: Any) -> str:
    """The path of the field of ``msg`` that ``msgspec.to_builtins`` fails on, down
    through nested messages and lists of them."""
    steps: list[tuple[str, Any]] = []
    obj = msg
    while True:
        for step, part in _named_parts(obj):
            try:
                msgspec.to_builtins(part, builtin_types=_KEPT_TYPES)
            except Exception:  # the part that fails
                if _fields(part) is None and not any(
                        _fields(p) for p in (part if type(part) in (list, tuple) else ())):
                    return _path(steps + [step])
                steps, obj = steps + [step], part
                break
        else:
            return _path(steps)


def _difference(msg: Any, back: Any) -> tuple[list[tuple[str, Any]], Any, Any]:
    """``(steps, held, read back)`` of the first place where ``msg`` and its round
    trip ``back`` (``check_field_types``) differ, down through messages, lists, tuples
    and dicts of the same type and length (``steps`` as ``_named_parts`` gives them)."""
    steps: list[tuple[str, Any]] = []
    while type(msg) is type(back):
        parts, back_parts = _named_parts(msg), _named_parts(back)
        if not parts or len(parts) != len(back_parts):
            break
        diff = next(((s, a, b) for (s, a), (t, b) in zip(parts, back_parts)
                     if s != t or a != b), None)
        if diff is None:
            break
        steps, msg, back = steps + [diff[0]], diff[1], diff[2]
    return steps, msg, back


class _CheckedUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` that resolves only ``PICKLED_GLOBALS`` (Python's "Restricting
    Globals"), raising ``UnsafePickle`` for any other global before it is looked up."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in PICKLED_GLOBALS:
            return super().find_class(module, name)
        raise UnsafePickle(f"a pickle frame refers to {_global_name(module, name)}, which "
                           "no SchedulerOutput or ModelRunnerOutput holds: not unpickled")


class PickleCodec(Codec[T]):
    """pickle at ``HIGHEST_PROTOCOL`` (5 on Python >= 3.8) of vLLM's execute_model RPC.

    ``msg_type`` is ``VLLM_DATACLASSES.SchedulerOutput`` (encoded inside the request
    tuple ``("execute_model", (so,), {}, 0)``; or ``LATER_DATACLASSES``' in the 1d37eb37
    layout) or ``VLLM_DATACLASSES.ModelRunnerOutput`` (inside the reply
    ``(WorkerProc.ResponseStatus.SUCCESS, out)``); ``decode`` returns the message
    itself. ``ValueError`` for any other type.
    """

    name = "pickle"
    messages = VLLM_DATACLASSES

    def __init__(self, msg_type: type[T]):
        super().__init__(msg_type)
        self._check_packing: Optional[Any] = None
        if msg_type in (VLLM_DATACLASSES.SchedulerOutput, LATER_DATACLASSES.SchedulerOutput):
            self.encode, self._open = _encode_rpc_request, self._open_request
        elif msg_type is VLLM_DATACLASSES.ModelRunnerOutput:
            self.encode, self._open = _encode_rpc_reply, self._open_reply
        else:
            raise ValueError(f"the pickle codec carries vLLM's SchedulerOutput and "
                             f"ModelRunnerOutput dataclasses, not {msg_type!r}")

    def decode(self, frame: Any) -> T:
        try:
            msg = pickle.loads(frame)
        except Exception as exc:  # pickle raises many types on corrupt input
            raise DecodeError(one_line(
                f"{self.msg_type.__name__}: {type(exc).__name__}: {exc}")) from None
        return self._open(msg)

    def decode_checked(self, frame: Any) -> T:
        """``decode`` of ``frame`` (bytes-like), unpickled by an unpickler that resolves
        only ``PICKLED_GLOBALS``, so that no code in a frame read from a file runs: the
        same message as ``decode`` for every frame the harness writes. ``UnsafePickle``
        (one line, naming the global) for a frame that refers to any other global;
        ``DecodeError`` (one line) as ``decode`` for anything else. Slower than
        ``decode`` (vLLM's plain ``pickle.loads``): it checks frames before they are
        timed, and is never timed itself. Before unpickling, ``scan_pickle`` refuses
        (``RefusedPickle``) a frame whose memo indices exceed its opcodes or that
        ``BUILD``s anything but a fresh dataclass instance; after it, a guarded class
        that changed is put back and the frame refused, ``check_decoded`` refuses
        objects other than well-formed messages, ``check_field_types`` a message
        whose field holds a value of another type than the declared one, and for the
        packed codec's ``SchedulerOutput`` ``check_packed`` an integer that
        ``array('i')`` cannot hold, or anything but an ``array('i')`` or a tuple where
        the codec's encoder writes one."""
        read = scan_pickle(frame)  # RefusedPickle before anything is unpickled
        snapshot = {cls: dict(vars(cls)) for cls in _GUARDED}
        try:
            msg = _CheckedUnpickler(io.BytesIO(frame)).load()
        except UnsafePickle:
            raise
        except Exception as exc:  # pickle raises many types on corrupt input
            changed = _class_changes(snapshot)
            if changed:
                raise RefusedPickle(f"a pickle frame changes {changed}: not unpickled")
            raise DecodeError(one_line(
                f"{self.msg_type.__name__}: {type(exc).__name__}: {exc}")) from None
        changed = _class_changes(snapshot)
        if changed:
            raise RefusedPickle(f"a pickle frame changes {changed}: not unpickled")
        if not read:
            raise RefusedPickle("a pickle frame that pickletools cannot read to its STOP "
                                "unpickles: not timed")
        check_decoded(msg, len(frame))
        opened = self._open(msg)
        check_field_types(opened)
        if self._check_packing is not None:
            self._check_packing(msg[1], opened)
        return opened

    def _open_request(self, msg: Any) -> T:
        """``worker_busy_loop``: ``method, args, kwargs, output_rank = msg``, then
        ``getattr(worker, method)(*args, **kwargs)``."""
        if type(msg) is tuple and len(msg) == 4 and type(msg[0]) is str \
                and msg[0] == EXECUTE_MODEL:
            args, kwargs = msg[1], msg[2]
            if type(args) is tuple and len(args) == 1 and type(kwargs) is dict and not kwargs:
                return self._checked(args[0])
        raise DecodeError(f"{self.msg_type.__name__}: expected the RPC tuple "
                          f"('{EXECUTE_MODEL}', (SchedulerOutput,), {{}}, rank), got "
                          f"{_shape(msg)}")

    def _open_reply(self, msg: Any) -> T:
        """``collective_rpc``: ``status, result = msg``; anything but ``SUCCESS`` fails."""
        if type(msg) is tuple and len(msg) == 2:
            if msg[0] is _SUCCESS:
                return self._checked(msg[1])
            if msg[0] is _FAILURE:
                raise DecodeError(one_line(f"{self.msg_type.__name__}: the worker failed: "
                                           f"{_safe_text(msg[1])[:200]}"))
        raise DecodeError(f"{self.msg_type.__name__}: expected the RPC reply "
                          f"(ResponseStatus.SUCCESS, ModelRunnerOutput), got {_shape(msg)}")

    def _checked(self, msg: Any) -> T:
        if type(msg) is not self.msg_type:
            got = type(msg).__name__
            if got == self.msg_type.__name__:  # e.g. the msgpack codec's Struct
                got = f"{type(msg).__module__}.{got}"
            raise DecodeError(f"{self.msg_type.__name__}: expected "
                              f"{self.msg_type.__name__}, got {got}")
        return msg


def _safe_text(obj: Any) -> str:
    """``str(obj)``, or ``<TYPE that cannot be printed>`` when its ``__str__`` raises
    (an unpickled object's ``__dict__`` need not hold the fields its class prints)."""
    try:
        return str(obj)
    except Exception:  # any __str__ or __repr__ of a decoded object may raise
        return f"<{type(obj).__name__} that cannot be printed>"


def _shape(msg: Any) -> str:
    """A short description of an unpickled object (for error messages)."""
    if type(msg) is tuple:
        return f"a tuple of {len(msg)} ({', '.join(type(x).__name__ for x in msg[:4])})"
    return type(msg).__name__


# ------------------------------------------------------------ packed (vLLM PR #54406)

#: Fields of the packed ``SchedulerOutput`` tuple, of each packed ``NewRequestData`` and of
#: the packed ``CachedRequestData``, in order (``pack_scheduler_output``).
PACKED_FIELDS = 12
PACKED_NEW_REQUEST_FIELDS = 10
PACKED_CACHED_FIELDS = 5


def _block_ids(groups) -> tuple:
    """``([ids...], ...)`` -> a tuple of ``array('i')``, one per KV-cache group."""
    return tuple([array("i", ids) for ids in groups])


def _id_dict(d: dict) -> dict:
    """``{req_id: [ints]}`` -> ``{req_id: array('i')}``."""
    return {k: array("i", v) for k, v in d.items()}


def pack_scheduler_output(so) -> tuple:
    """vLLM PR #54406's ``pack_scheduler_output_for_execute_model_fast_path`` on the
    7f280d69c ``SchedulerOutput`` of ``ipc_bench.v1rpc.sched_out``: a ``PACKED_FIELDS``
    tuple of its fields in order, each new request a ``PACKED_NEW_REQUEST_FIELDS`` tuple,
    the cached requests one ``PACKED_CACHED_FIELDS`` tuple; every integer list (prompt ids,
    block ids, new token ids, spec-decode and encoder-input dict values,
    ``num_common_prefix_blocks``) becomes an ``array('i')`` except the cached requests'
    ``num_computed_tokens``. Raises ``OverflowError`` for an int outside int32."""
    c = so.scheduled_cached_reqs
    new = tuple([(r.req_id, array("i", r.prompt_token_ids), r.mm_inputs, r.mm_hashes,
                  r.mm_positions, r.sampling_params, r.pooling_params,
                  _block_ids(r.block_ids), r.num_computed_tokens, r.lora_request)
                 for r in so.scheduled_new_reqs])
    cached = (c.req_ids, c.resumed_from_preemption,
              [array("i", ids) for ids in c.new_token_ids],
              [_block_ids(groups) for groups in c.new_block_ids], c.num_computed_tokens)
    return (new, cached, so.num_scheduled_tokens, so.total_num_scheduled_tokens,
            _id_dict(so.scheduled_spec_decode_tokens), _id_dict(so.scheduled_encoder_inputs),
            array("i", so.num_common_prefix_blocks), so.finished_req_ids,
            so.free_encoder_input_ids, so.structured_output_request_ids, so.grammar_bitmask,
            so.kv_connector_metadata)


def _lists(groups) -> tuple:
    """A tuple of ``array('i')`` -> a tuple of lists."""
    return tuple([list(ids) for ids in groups])


def unpack_scheduler_output(packed: tuple):
    """The ``SchedulerOutput`` (``VLLM_DATACLASSES``) of a ``pack_scheduler_output``
    tuple, arrays back to lists (PR #54406's
    ``unpack_scheduler_output_from_execute_model_fast_path``). Raises ``ValueError``,
    ``TypeError`` or ``IndexError`` on a tuple of another shape."""
    msgs = VLLM_DATACLASSES
    (new, cached, num_scheduled, total, spec, encoder, prefix, finished, free, structured,
     bitmask, kv) = packed
    req_ids, resumed, new_token_ids, new_block_ids, num_computed = cached
    return msgs.SchedulerOutput(
        scheduled_new_reqs=[msgs.NewRequestData(
            req_id=r[0], prompt_token_ids=list(r[1]), mm_inputs=r[2], mm_hashes=r[3],
            mm_positions=r[4], sampling_params=r[5], pooling_params=r[6],
            block_ids=_lists(r[7]), num_computed_tokens=r[8], lora_request=r[9])
            for r in new],
        scheduled_cached_reqs=msgs.CachedRequestData(
            req_ids=req_ids, resumed_from_preemption=resumed,
            new_token_ids=[list(ids) for ids in new_token_ids],
            new_block_ids=[_lists(groups) for groups in new_block_ids],
            num_computed_tokens=num_computed),
        num_scheduled_tokens=num_scheduled, total_num_scheduled_tokens=total,
        scheduled_spec_decode_tokens={k: list(v) for k, v in spec.items()},
        scheduled_encoder_inputs={k: list(v) for k, v in encoder.items()},
        num_common_prefix_blocks=list(prefix), finished_req_ids=finished,
        free_encoder_input_ids=free, structured_output_request_ids=structured,
        grammar_bitmask=bitmask, kv_connector_metadata=kv)


#: What ``array('i')`` holds (int32 where a C int is 4 bytes): the range of every
#: integer that ``pack_scheduler_output`` packs.
PACKED_INT_BITS = 8 * array("i").itemsize
PACKED_INT_RANGE = (-(1 << (PACKED_INT_BITS - 1)), (1 << (PACKED_INT_BITS - 1)) - 1)


def check_packed(packed: tuple, so) -> None:
    """Check what the packed codec needs of a packed ``SchedulerOutput`` beyond its
    fields' declared types (``check_field_types`` of ``so``, the message ``packed``
    unpacks to): ``so`` is packed again by the codec's own ``pack_scheduler_output``,
    so every integer that packing turns into an ``array('i')`` must lie within int32
    (``PACKED_INT_RANGE``), and ``packed`` must hold, wherever packing writes a new
    container, one of the same type and length (``array('i')`` for every integer list
    but the cached requests' ``num_computed_tokens``, a tuple for each new request,
    the cached requests and each tuple of block-id lists; an ``array('q')``, a list or
    a tuple unpacks to the same message, so only the packed payload tells, and it
    times another decode than the codec's). ``RefusedPickle`` (one line) for the
    first that is not, in field order: ``a pickle frame decodes to a SchedulerOutput
    whose field num_common_prefix_blocks[0] holds 1099511627776, outside int32
    (-2147483648 to 2147483647), which the packed codec's array('i') cannot hold: not
    timed``; ``... whose field scheduled_new_reqs[0].prompt_token_ids is packed as a
    list where its declared type, list[int], is packed as an array('i'): not timed``;
    ``... scheduled_new_reqs[0].block_ids is packed as a list where its declared type,
    tuple[list[int], ...], is packed as a tuple: not timed``. Costs one pass of
    ``_packed_fits`` over what packing writes (the probe's shape made once), packing
    again only a frame it refuses: about 9 µs for a step of 1 running request, 60 µs
    at 256."""
    if _packed_fits([packed], _packed_shape()):
        return
    start = "a pickle frame decodes to a SchedulerOutput whose field"
    try:
        written = pack_scheduler_output(so)
    except OverflowError:
        where, value = _beyond_packed_range(so)
        low, high = PACKED_INT_RANGE
        raise RefusedPickle(one_line(
            f"{start} {_path(where)} holds {value}, outside int{PACKED_INT_BITS} ({low} "
            f"to {high}), which the packed codec's array('i') cannot hold: not timed")
            ) from None
    unlike = _packed_unlike(packed, written)
    if unlike is not None:
        at, held, wrote = unlike
        where = _packed_steps(so, at)
        raise RefusedPickle(one_line(
            f"{start} {_path(where)} is packed as {_packed_kind(held, wrote)} where its "
            f"declared type, {_follow(so, where)[2]}, is packed as "
            f"{_packed_kind(wrote, held)}: not timed"))


def _packed_probe(n: int):
    """A ``SchedulerOutput`` (``VLLM_DATACLASSES``) with ``n`` items in every list,
    tuple and dict whose length varies, each integer list of ``n`` items."""
    msgs, ids = VLLM_DATACLASSES, [1] * n
    reqs = [msgs.new_request_data(f"r{i}", ids, msgs.sampling_params(1), (ids,) * n)
            for i in range(n)]
    names = [f"c{i}" for i in range(n)]
    cached = msgs.CachedRequestData(
        req_ids=names, resumed_from_preemption=[False] * n, new_token_ids=[ids] * n,
        new_block_ids=[(ids,) * n] * n, num_computed_tokens=ids)
    return msgs.SchedulerOutput(
        scheduled_new_reqs=reqs, scheduled_cached_reqs=cached,
        num_scheduled_tokens=dict.fromkeys(names, 1), total_num_scheduled_tokens=n,
        scheduled_spec_decode_tokens=dict.fromkeys(names, ids),
        scheduled_encoder_inputs=dict.fromkeys(names, ids), num_common_prefix_blocks=ids,
        finished_req_ids=set(), free_encoder_input_ids=[],
        structured_output_request_ids={}, grammar_bitmask=None)


@functools.cache
def _packed_shape() -> Any:
    """What ``pack_scheduler_output`` writes, read off its output for two probes
    (``_packed_probe`` of 1 and of 2 items): ``None`` where it passes the message's own
    object on, ``(array, typecode)``, ``(type, length, ((index, shape), ...))`` for a
    tuple or list of fixed length (a packed message: the shapes of the fields it does
    not pass on), ``(type, shape)`` for one whose length follows the message (a dict:
    its values), all items of that one shape."""
    one, two = _packed_probe(1), _packed_probe(2)
    own = {id(o) for o in _message_parts(one)}
    return _shape_of(pack_scheduler_output(one), pack_scheduler_output(two), own)


def _message_parts(obj: Any) -> list:
    """``obj`` and every message, list, tuple, set and dict in it, values included."""
    parts, todo = [], [obj]
    while todo:
        part = todo.pop()
        parts.append(part)
        fields = _fields(part)
        todo += ([getattr(part, f) for f in fields] if fields else list(part.values())
                 if type(part) is dict else list(part) if type(part) in _CONTAINERS
                 else [])
    return parts


def _shape_of(one: Any, two: Any, own: set) -> Any:
    """``_packed_shape`` of ``one`` and ``two``, packed probes of 1 and 2 items."""
    if id(one) in own or type(one) not in _PACKED_CONTAINERS:
        return None
    if type(one) is array:
        return array, one.typecode
    if type(one) is dict:
        return dict, _shape_of(next(iter(one.values())), next(iter(two.values())), own)
    if len(one) != len(two):
        return type(one), _shape_of(one[0], two[0], own)
    shapes = [(i, _shape_of(a, b, own)) for i, (a, b) in enumerate(zip(one, two))]
    return type(one), len(one), tuple((i, s) for i, s in shapes if s is not None)


def _packed_fits(nodes: list, shape: Any) -> bool:
    """Whether every one of ``nodes`` (parts of packed payloads) is what ``shape``
    (``_packed_shape``) says packing writes there, one shape at a time over all nodes
    it covers, in passes Python runs in C: ``False`` where one may not be."""
    todo = [(nodes, shape)]
    while todo:
        nodes, shape = todo.pop()
        if shape is None or not nodes:
            continue
        kind, inner = shape[0], shape[1]
        if set(map(type, nodes)) != {kind}:
            return False
        if kind is array:
            if set(map(attrgetter("typecode"), nodes)) != {inner}:
                return False
        elif len(shape) == 3:
            if set(map(len, nodes)) != {inner}:
                return False
            todo += [([n[i] for n in nodes], s) for i, s in shape[2]]
        elif inner is not None:
            todo.append((list(chain.from_iterable(
                map(dict.values, nodes) if kind is dict else nodes)), inner))
    return True


#: The containers ``pack_scheduler_output`` writes, which ``check_packed`` walks.
_PACKED_CONTAINERS = (tuple, list, dict, array)


def _packed_unlike(held: Any, wrote: Any) -> Optional[tuple[list, Any, Any]]:
    """``(positions, held there, written there)`` of the first place, depth first,
    where the packed payload ``held`` and what ``pack_scheduler_output`` writes for
    its message, ``wrote``, differ in type, array typecode or length, down through the
    tuples, lists and dicts packing writes (positions: indices and dict keys); ``None``
    where none does. What packing passes on as it is (the same object in both) is not
    walked."""
    kind = type(wrote)
    if held is wrote or (type(held) is kind and kind not in _PACKED_CONTAINERS):
        return None
    if type(held) is not kind or len(held) != len(wrote) or (
            kind is array and held.typecode != wrote.typecode):
        return [], held, wrote
    if kind is array:
        return None
    pairs = (zip(held.keys(), held.values(), wrote.values()) if type(wrote) is dict
             else zip(range(len(held)), held, wrote))
    for at, h, w in pairs:
        if h is w or (type(w) is array and type(h) is array and h.typecode == w.typecode):
            continue
        unlike = _packed_unlike(h, w)
        if unlike is not None:
            return [at] + unlike[0], unlike[1], unlike[2]
    return None


def _packed_steps(so, positions: list) -> list[tuple[str, Any]]:
    """The steps (as ``_path`` takes them) of ``positions`` in a packed payload: a
    tuple packed from a message holds its fields in their declared order, a list or
    tuple its items, a dict its values by key, as ``pack_scheduler_output`` writes."""
    steps, obj = [], so
    for at in positions:
        fields = _fields(obj)
        step = (("field", fields[at]) if fields else ("value", at) if type(obj) is dict
                else ("index", at))
        steps.append(step)
        obj = getattr(obj, step[1]) if fields else obj[at]
    return steps


def _packed_kind(obj: Any, other: Any) -> str:
    """What a packed ``obj`` is as ``check_packed`` names it: ``a list``, ``an
    array('i')``, ``a tuple``, with its length where ``other`` is of its type and
    typecode but not of its length (``a tuple of 11 items``)."""
    kind = (f"an array({obj.typecode!r})" if type(obj) is array
            else f"an {type(obj).__name__}" if type(obj).__name__[:1] in "aeiou"
            else f"a {type(obj).__name__}")
    if (type(obj) is type(other) and getattr(obj, "typecode", None) ==
            getattr(other, "typecode", None) and len(obj) != len(other)):
        kind += f" of {len(obj)} items"
    return kind


def _beyond_packed_range(so) -> tuple[list, int]:
    """``(steps, value)`` of the first integer of ``so``, in field order, that packing
    puts in an ``array('i')`` and that lies outside ``PACKED_INT_RANGE``."""
    low, high = PACKED_INT_RANGE
    c = so.scheduled_cached_reqs
    lists: list[tuple[list, list]] = []
    for i, req in enumerate(so.scheduled_new_reqs):
        at = [("field", "scheduled_new_reqs"), ("index", i)]
        lists.append((at + [("field", "prompt_token_ids")], req.prompt_token_ids))
        lists += [(at + [("field", "block_ids"), ("index", g)], ids)
                  for g, ids in enumerate(req.block_ids)]
    at = [("field", "scheduled_cached_reqs")]
    lists += [(at + [("field", "new_token_ids"), ("index", i)], ids)
              for i, ids in enumerate(c.new_token_ids)]
    lists += [(at + [("field", "new_block_ids"), ("index", i), ("index", g)], ids)
              for i, groups in enumerate(c.new_block_ids) for g, ids in enumerate(groups)]
    for name in ("scheduled_spec_decode_tokens", "scheduled_encoder_inputs"):
        lists += [([("field", name), ("value", k)], ids)
                  for k, ids in getattr(so, name).items()]
    lists.append(([("field", "num_common_prefix_blocks")], so.num_common_prefix_blocks))
    return next((steps + [("index", j)], v) for steps, ids in lists
                for j, v in enumerate(ids) if not low <= v <= high)


def _encode_packed_request(so, dumps=pickle.dumps, protocol=pickle.HIGHEST_PROTOCOL) -> bytes:
    """PR #54406's ``execute_model`` enqueue: ``pickle.dumps((EXECUTE_MODEL_FAST_PATH_TAG,
    pack_scheduler_output(so), output_rank))``."""
    return dumps((EXECUTE_MODEL_FAST_PATH_TAG, pack_scheduler_output(so), OUTPUT_RANK),
                 protocol=protocol)


class PackedCodec(PickleCodec[T]):
    """vLLM PR #54406's execute_model fast path: the ``SchedulerOutput`` packed
    (``pack_scheduler_output``) into ``(EXECUTE_MODEL_FAST_PATH_TAG, packed, rank)`` and
    pickled at ``HIGHEST_PROTOCOL``; ``decode`` unpickles and unpacks it
    (``unpack_scheduler_output``), ``DecodeError`` (one line) for any other shape. The
    ``ModelRunnerOutput`` travels as with ``PickleCodec``. ``encode`` raises
    ``OverflowError`` for a packed int outside int32."""

    name = "packed"

    def __init__(self, msg_type: type[T]):
        super().__init__(msg_type)
        if msg_type is VLLM_DATACLASSES.SchedulerOutput:
            self.encode, self._open = _encode_packed_request, self._open_packed
            self._check_packing = check_packed

    def _open_packed(self, msg: Any) -> T:
        """PR #54406's ``worker_busy_loop``: a 3-tuple whose first item is the tag and
        whose second the packed ``SchedulerOutput`` of ``PACKED_FIELDS`` items.
        ``DecodeError`` (one line) naming the tuple of the wrong length, where one is,
        with its place and the length packing writes (``_packed_length_fault``)."""
        name = self.msg_type.__name__
        if not (type(msg) is tuple and len(msg) == 3 and type(msg[0]) is str
                and msg[0] == EXECUTE_MODEL_FAST_PATH_TAG and type(msg[1]) is tuple
                and len(msg[1]) == PACKED_FIELDS):
            if (type(msg) is tuple and len(msg) == 3 and type(msg[0]) is str
                    and msg[0] == EXECUTE_MODEL_FAST_PATH_TAG and type(msg[1]) is tuple):
                raise DecodeError(f"{name}: malformed packed payload: the packed "
                                  f"SchedulerOutput (item 2 of the execute_model tuple) "
                                  f"is a tuple of {len(msg[1])} items, expected "
                                  f"{PACKED_FIELDS}")
            raise DecodeError(f"{name}: expected the packed execute_model "
                              f"tuple ('{EXECUTE_MODEL_FAST_PATH_TAG}', ({PACKED_FIELDS} "
                              f"fields), rank), got {_shape(msg)}")
        try:
            return unpack_scheduler_output(msg[1])
        except (TypeError, ValueError, LookupError) as exc:  # a short request tuple
            why = _packed_length_fault(msg[1]) or f"{type(exc).__name__}: {exc}"
            raise DecodeError(one_line(f"{name}: malformed packed payload: {why}")) from None


def _packed_length_fault(packed: tuple) -> Optional[str]:
    """Where the packed ``SchedulerOutput`` ``packed`` (a tuple of ``PACKED_FIELDS``)
    holds a packed request of another length than packing writes, the first such, as
    ``scheduled_new_reqs[0] (a packed NewRequestData) is a tuple of 9 items, expected
    10`` or ``scheduled_cached_reqs (a packed CachedRequestData) is a tuple of 4
    items, expected 5``; ``None`` where none is (a tuple or list of its length, or
    anything that has no length, is left to the caller's own words)."""
    def fault(obj: Any, where: str, what: str, want: int) -> Optional[str]:
        if type(obj) in (tuple, list) and len(obj) != want:
            return (f"{where} (a packed {what}) is a {type(obj).__name__} of {len(obj)} "
                    f"items, expected {want}")
        return None

    new = packed[0] if type(packed[0]) in (tuple, list) else ()
    faults = [fault(r, f"scheduled_new_reqs[{i}]", "NewRequestData",
                    PACKED_NEW_REQUEST_FIELDS) for i, r in enumerate(new)]
    faults.append(fault(packed[1], "scheduled_cached_reqs", "CachedRequestData",
                        PACKED_CACHED_FIELDS))
    return next((f for f in faults if f is not None), None)


# ------------------------------------------------------------------- slots (issue 15)


class _StatefulWire(Codec[T]):
    """The stateless wire part of a stateful codec: ``encode`` / ``decode`` map a
    frame to and from ``(header message, out-of-band arrays)``
    (``wire.slots.SlotsWireCodec``). ``STEP``: the header type of the scheduler's
    frames; replies are ``wire.slots.SlotsReply``."""

    messages = STRUCTS
    STEP: type

    def __init__(self, msg_type: type[T]):
        super().__init__(msg_type)
        if msg_type is STRUCTS.SchedulerOutput:
            wire = slots.SlotsWireCodec(self.STEP)
        elif msg_type is STRUCTS.ModelRunnerOutput:
            wire = slots.SlotsWireCodec(slots.SlotsReply)
        else:
            raise ValueError(f"the {self.name} codec carries SchedulerOutput and "
                             f"ModelRunnerOutput, not {msg_type!r}")
        self.encode, self.decode = wire.encode, wire.decode


class SlotsCodec(_StatefulWire[T]):
    """The slots protocol's stateless wire part (``wire.slots.SlotsWireCodec``):
    ``encode`` / ``decode`` map a frame to and from ``(SlotsStep or SlotsReply, arrays)``.
    The engine's messages are the Structs; the loops encode and decode them through
    ``session_codecs``, whose ends keep the slot tables."""

    name = "slots"
    STEP = slots.SlotsStep


class ReplicatedCodec(_StatefulWire[T]):
    """The ``replicated`` baseline's stateless wire part (``wire.replicated``): frames
    of ``ReplicatedStep`` (step, arrivals, schedule digest) and ``SlotsReply``."""

    name = "replicated"
    STEP = replicated.ReplicatedStep


#: The codecs registry: ``--codecs`` name -> class, in the order runs and tables use.
CODEC_CLASSES: dict[str, type[Codec]] = {"msgpack": MsgpackCodec, "pickle": PickleCodec,
                                         "packed": PackedCodec, "slots": SlotsCodec,
                                         "replicated": ReplicatedCodec}
CODECS: tuple[str, ...] = tuple(CODEC_CLASSES)
#: The codecs a run compares when ``--codecs`` is not given.
DEFAULT_CODECS: tuple[str, ...] = ("msgpack", "pickle")
#: The codecs that unpickle what they receive (refused on TCP unless allowed).
PICKLED_CODECS: frozenset[str] = frozenset({"pickle", "packed"})
#: The codecs whose two ends keep state across steps (``session_codecs``): a frame of
#: theirs decodes to a ``SchedulerOutput`` only in order, from the first step.
STATEFUL_CODECS: frozenset[str] = frozenset({"slots", "replicated"})


def session_codecs(name: str, side: str, config=None, policy: Optional[str] = None,
                   layout: str = DEFAULT_VLLM_LAYOUT):
    """The ``(encode, decode)`` functions one loop uses for a whole case: on the
    ``"scheduler"`` side, encode ``SchedulerOutput`` and decode ``ModelRunnerOutput``;
    on the ``"runner"`` side, decode ``SchedulerOutput`` and encode
    ``ModelRunnerOutput``. For the stateless codecs these are ``scheduler_output_codec``
    and ``model_runner_output_codec``'s; for ``slots`` the two ends of
    ``wire.slots``, which share the slot table of their side; for ``replicated`` those of
    ``wire.replicated`` (the runner's end needs the case's ``SchedulerConfig`` and
    ``policy`` for its replica). ``session_end(encode)`` gives a stateful end back.
    ``layout``: the ``SchedulerOutput`` layout (``config.VLLM_LAYOUTS``); with a
    ``config``, its ``vllm_layout``."""
    if config is not None:
        layout = config.vllm_layout
    if name == "slots":
        end = slots.SlotsSchedulerSide() if side == "scheduler" else slots.SlotsRunnerSide()
        return end.encode, end.decode
    if name == "replicated":
        end = (replicated.ReplicatedSchedulerSide() if side == "scheduler"
               else replicated.ReplicatedRunnerSide(config, policy))
        return end.encode, end.decode
    if side == "scheduler":
        return (scheduler_output_codec(name, layout).encode,
                model_runner_output_codec(name).decode)
    return model_runner_output_codec(name).encode, scheduler_output_codec(name, layout).decode


def session_end(encode) -> Any:
    """The stateful end behind an ``encode`` of ``session_codecs`` (``None`` for a
    stateless codec): what ``attach`` and the runner's extra columns reach."""
    end = getattr(encode, "__self__", None)
    return end if isinstance(end, (slots.SlotsSchedulerSide, slots.SlotsRunnerSide,
                                   replicated.ReplicatedSchedulerSide,
                                   replicated.ReplicatedRunnerSide)) else None


#: The codecs that carry the 1d37eb37 layout (``--vllm-layout``): the others pack or
#: rewrite the 7f280d69c fields.
LAYOUT_CODECS: frozenset[str] = frozenset({"msgpack", "pickle"})


def _layout_messages(cls: type[Codec], layout: str) -> MessageSet:
    """``cls.messages`` in ``layout``; ``ValueError`` for a codec that carries only the
    7f280d69c layout (outside ``LAYOUT_CODECS``)."""
    if layout == DEFAULT_VLLM_LAYOUT:
        return cls.messages
    if cls.name not in LAYOUT_CODECS:
        raise ValueError(f"the {cls.name} codec carries the {DEFAULT_VLLM_LAYOUT} layout "
                         f"only, not {layout}")
    return in_layout(cls.messages, layout)


def make_codec(name: str, msg_type: type[T]) -> Codec[T]:
    """Codec ``name`` (``CODECS``; for ``slots`` and ``replicated`` their stateless wire
    part) for ``msg_type``, one of
    ``messages_of(name)``'s classes; ``KeyError`` if the codec is unknown."""
    return CODEC_CLASSES[name](msg_type)


def messages_of(name: str, layout: str = DEFAULT_VLLM_LAYOUT) -> MessageSet:
    """The message classes codec ``name`` carries (``STRUCTS`` for msgpack,
    ``VLLM_DATACLASSES`` for pickle and packed; in ``layout``, ``config.VLLM_LAYOUTS``);
    the Structs for anything else, i.e. the
    single-process baseline (codec ``none``), which then builds the same objects as the
    msgpack path, so that comparing the two isolates the cost of IPC."""
    cls = CODEC_CLASSES.get(name)
    return in_layout(STRUCTS if cls is None else cls.messages, layout)


def scheduler_output_codec(name: str, layout: str = DEFAULT_VLLM_LAYOUT) -> Codec:
    """The codec for the scheduler -> runner direction (its ``SchedulerOutput`` in
    ``layout``; ``ValueError`` where the codec has no such layout)."""
    cls = CODEC_CLASSES[name]
    return cls(_layout_messages(cls, layout).SchedulerOutput)


def model_runner_output_codec(name: str) -> Codec:
    """The codec for the runner -> scheduler direction (its ``ModelRunnerOutput``)."""
    cls = CODEC_CLASSES[name]
    return cls(cls.messages.ModelRunnerOutput)
