"""What ``bench.py microbench``'s packed-frame check (``codecs.check_packed``) refuses:
wherever the packed codec's encoder writes an ``array('i')`` or a tuple, a frame holding
anything else there (a list, a tuple, an ``array('q')``, an ``array('l')``; a list for a
packed request or the cached requests), which unpacks to the same message but times
another decode, is refused in one line naming the field, what it holds and what the
codec writes there; and the refusals' paths quote a dict key whole (a harness request id,
39 characters), cutting only a key longer than ``codecs.PATH_KEY_CHARS`` inside its
quotes."""

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
#: A request id as the harness makes them (39 characters, 41 quoted).
REQ_ID = "cmpl-0335886941cc99793c5d68a67ef66417-0"


def _scheduler_output(**changes):
    """A ``SchedulerOutput`` with one new request ``r1`` (two KV-cache groups), one
    cached request ``c1``, a spec-decode and an encoder-input entry; ``changes`` set
    its fields."""
    req = MSGS.new_request_data("r1", [1, 2, 3], MSGS.sampling_params(16), ([4, 5], [8]))
    cached = MSGS.CachedRequestData(req_ids=["c1"], resumed_from_preemption=[False],
                                    new_token_ids=[[9]], new_block_ids=[([6],)],
                                    num_computed_tokens=[7])
    so = MSGS.SchedulerOutput(
        scheduled_new_reqs=[req], scheduled_cached_reqs=cached,
        num_scheduled_tokens={"r1": 3, "c1": 1}, total_num_scheduled_tokens=4,
        scheduled_spec_decode_tokens={"c1": [11, 12]}, scheduled_encoder_inputs={"r1": [0]},
        num_common_prefix_blocks=[0], finished_req_ids=set(), free_encoder_input_ids=[],
        structured_output_request_ids={}, grammar_bitmask=None)
    for field, value in changes.items():
        setattr(so, field, value)
    return so


def _frame(edit) -> bytes:
    """A packed frame of ``_scheduler_output()`` whose packed tuple ``edit`` returns
    changed (it gets the packed encoder's own tuple)."""
    tag, packed, rank = pickle.loads(codecs.scheduler_output_codec("packed").encode(
        _scheduler_output()))
    return pickle.dumps((tag, edit(packed), rank), protocol=pickle.HIGHEST_PROTOCOL)


def _refusal(codec: str, frame: bytes) -> str:
    with pytest.raises(codecs.RefusedPickle) as err:
        codecs.scheduler_output_codec(codec).decode_checked(frame)
    return str(err.value)


def _put(packed: tuple, where: tuple, value) -> tuple:
    """``packed`` with the item at ``where`` (indices down its tuples, lists and dicts)
    replaced by ``value``, each container on the way copied as its own type."""
    if not where:
        return value
    head, rest = where[0], where[1:]
    if type(packed) is dict:
        return {**packed, head: _put(packed[head], rest, value)}
    items = list(packed)
    items[head] = _put(items[head], rest, value)
    return type(packed)(items)


def _with(where: tuple, make):
    """An edit putting ``make(what the packed codec wrote there)`` at ``where``."""
    def edit(packed):
        held = packed
        for step in where:
            held = held[step]
        return _put(packed, where, make(held))
    return edit


PROMPT, BLOCKS = (0, 0, 1), (0, 0, 7)
NEW_TOKENS, NEW_BLOCKS = (1, 2), (1, 3)
ARRAY_I = "list[int], is packed as an array('i')"


@pytest.mark.parametrize("edit, line", [
    (_with(PROMPT, list), "scheduled_new_reqs[0].prompt_token_ids is packed as a list where "
     f"its declared type, {ARRAY_I}"),
    (_with(PROMPT, tuple), "scheduled_new_reqs[0].prompt_token_ids is packed as a tuple "
     f"where its declared type, {ARRAY_I}"),
    (_with(PROMPT, lambda a: array("q", a)), "scheduled_new_reqs[0].prompt_token_ids is "
     f"packed as an array('q') where its declared type, {ARRAY_I}"),
    (_with(BLOCKS + (1,), list), "scheduled_new_reqs[0].block_ids[1] is packed as a list "
     f"where its declared type, {ARRAY_I}"),
    (_with(NEW_TOKENS + (0,), list), "scheduled_cached_reqs.new_token_ids[0] is packed as "
     f"a list where its declared type, {ARRAY_I}"),
    (_with(NEW_TOKENS + (0,), tuple), "scheduled_cached_reqs.new_token_ids[0] is packed as "
     f"a tuple where its declared type, {ARRAY_I}"),
    (_with(NEW_TOKENS + (0,), lambda a: array("q", a)), "scheduled_cached_reqs."
     f"new_token_ids[0] is packed as an array('q') where its declared type, {ARRAY_I}"),
    (_with(NEW_TOKENS + (0,), lambda a: array("l", a)), "scheduled_cached_reqs."
     f"new_token_ids[0] is packed as an array('l') where its declared type, {ARRAY_I}"),
    (_with(NEW_TOKENS, tuple), "scheduled_cached_reqs.new_token_ids is packed as a tuple "
     "where its declared type, list[list[int]], is packed as a list"),
    (_with(NEW_BLOCKS + (0, 0), list), "scheduled_cached_reqs.new_block_ids[0][0] is packed "
     f"as a list where its declared type, {ARRAY_I}"),
    (_with((6,), list), f"num_common_prefix_blocks is packed as a list where its declared "
     f"type, {ARRAY_I}"),
    (_with((4, "c1"), list), "scheduled_spec_decode_tokens['c1'] is packed as a list where "
     f"its declared type, {ARRAY_I}"),
    (_with((5, "r1"), lambda a: array("l", a)), "scheduled_encoder_inputs['r1'] is packed "
     f"as an array('l') where its declared type, {ARRAY_I}"),
    (_with((0, 0), list), "scheduled_new_reqs[0] is packed as a list where its declared "
     "type, NewRequestData, is packed as a tuple"),
    (_with((0, 0), lambda r: r + (None,)), "scheduled_new_reqs[0] is packed as a tuple of "
     "11 items where its declared type, NewRequestData, is packed as a tuple of 10 items"),
    (_with((0,), list), "scheduled_new_reqs is packed as a list where its declared type, "
     "list[NewRequestData], is packed as a tuple"),
    (_with((1,), list), "scheduled_cached_reqs is packed as a list where its declared type, "
     "CachedRequestData, is packed as a tuple"),
    (_with(BLOCKS, list), "scheduled_new_reqs[0].block_ids is packed as a list where its "
     "declared type, tuple[list[int], ...], is packed as a tuple"),
])
def test_what_the_packed_codec_does_not_write_is_named_with_what_it_writes(edit, line):
    frame = _frame(edit)
    codec = codecs.scheduler_output_codec("packed")
    assert codec.decode(frame) == _scheduler_output()  # unpacks to the same message
    assert _refusal("packed", frame) == f"{SO} {line}: not timed"


def test_a_packed_request_of_too_few_items_does_not_decode():
    frame = _frame(_with((0, 0), lambda r: r[:9]))
    for decode in ("decode", "decode_checked"):
        with pytest.raises(codecs.DecodeError) as err:
            getattr(codecs.scheduler_output_codec("packed"), decode)(frame)
        assert str(err.value) == ("SchedulerOutput: malformed packed payload: "
                                  "scheduled_new_reqs[0] (a packed NewRequestData) is a "
                                  "tuple of 9 items, expected 10")


def test_an_integer_beyond_int32_is_named_so_in_a_wider_array_too():
    frame = _frame(_with(NEW_TOKENS + (0,), lambda a: array("q", [1, 2 ** 40])))
    assert _refusal("packed", frame) == (
        f"{SO} scheduled_cached_reqs.new_token_ids[0][1] holds 1099511627776, outside "
        "int32 (-2147483648 to 2147483647), which the packed codec's array('i') cannot "
        "hold: not timed")


def test_what_the_packed_codec_writes_passes_and_is_what_it_checks_against():
    codec = codecs.scheduler_output_codec("packed")
    for so in (_scheduler_output(), _scheduler_output(scheduled_new_reqs=[]),
               codecs._packed_probe(3)):
        frame = codec.encode(so)
        assert codec.decode_checked(frame) == codec.decode(frame) == so
    arr = (array, "i")
    assert codecs._packed_shape() == (tuple, 12, (
        (0, (tuple, (tuple, 10, ((1, arr), (7, (tuple, arr)))))),
        (1, (tuple, 5, ((2, (list, arr)), (3, (list, (tuple, arr)))))),
        (4, (dict, arr)), (5, (dict, arr)), (6, arr)))


# ------------------------------------------------------------ dict keys in refusal paths


@pytest.mark.parametrize("key, shown", [
    (REQ_ID, f"'{REQ_ID}'"),
    ("r" * 78, "'" + "r" * 78 + "'"),
    ("r" * 79, "'" + "r" * 75 + "...'"),
    ("r" * 200, "'" + "r" * 75 + "...'"),
])
def test_a_dict_key_is_quoted_whole_up_to_80_characters(key, shown):
    so = _scheduler_output(num_scheduled_tokens={"r1": 3, key: "1"})
    frame = codecs.scheduler_output_codec("pickle").encode(so)
    assert _refusal("pickle", frame) == (
        f"{SO} num_scheduled_tokens[{shown}] holds str where its declared type takes int: "
        "not timed")


# ------------------------------------------------------------- through bench.py


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished run folder of one send case per codec (msgpack, pickle, packed)."""
    return finished_run(tmp_path_factory, "mbpackedshapes", FRAME_RUN)


def _microbench(run: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "bench.py", "microbench", str(run),
                           "--directions", "s2r", "--ops", "decode", "--codecs", "packed",
                           *PYPERF], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_microbench_refuses_a_listed_token_list_and_quotes_a_request_id_whole(run,
                                                                             tmp_path):
    run = copy_run(run, tmp_path)
    path = capture_path(run, "packed", "s2r")
    ids = {}

    def tamper(frames):
        tag, packed, rank = pickle.loads(frames[3])
        cached = packed[1][:2] + ([list(a) for a in packed[1][2]],) + packed[1][3:]
        frames[3] = pickle.dumps((tag, (packed[0], cached) + packed[2:], rank),
                                 protocol=pickle.HIGHEST_PROTOCOL)
        tag, packed, rank = pickle.loads(frames[5])
        ids["key"] = next(iter(packed[2]))
        counts = dict.fromkeys(packed[2], "1")
        frames[5] = pickle.dumps((tag, packed[:2] + (counts,) + packed[3:], rank),
                                 protocol=pickle.HIGHEST_PROTOCOL)

    edit_frames(path, tamper)
    cap = load_capture(path)
    head = f"{ERROR}{path}: message 4 of {len(cap.frames)} (step {cap.seqs[3]}): {SO} "
    proc = _microbench(run)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (f"{head}scheduled_cached_reqs.new_token_ids[0] is packed as a "
                           f"list where its declared type, {ARRAY_I}: not timed\n")
    edit_frames(path, lambda frames: frames.__setitem__(3, frames[4]))
    cap = load_capture(path)
    assert len(ids["key"]) == len(REQ_ID)
    proc = _microbench(run)
    assert proc.stderr == (
        f"{ERROR}{path}: message 6 of {len(cap.frames)} (step {cap.seqs[5]}): {SO} "
        f"num_scheduled_tokens['{ids['key']}'] holds str where its declared type takes "
        "int: not timed\n")
    assert not (run / "microbench").exists()
