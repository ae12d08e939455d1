"""A packed frame whose packed ``SchedulerOutput``, a packed new request or the packed
cached requests is a tuple of another length than the packed codec writes does not
decode, in one line naming that tuple, where it is in the payload, its length and the
length packing writes, in ``decode`` (the timed one) and in ``bench.py microbench``'s
frame check alike; not the well-formed execute_model tuple around it."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from ipc_bench.analysis.capture import load_capture
from ipc_bench.wire import codecs
from microbench_runs import (ERROR, FRAME_RUN, PYPERF, capture_path, copy_run, edit_frames,
                             finished_run)

REPO = Path(__file__).resolve().parents[2]
MSGS = codecs.VLLM_DATACLASSES
BAD = "SchedulerOutput: malformed packed payload: "


def _scheduler_output():
    """A ``SchedulerOutput`` of one new request ``r1`` and one cached request ``c1``."""
    req = MSGS.new_request_data("r1", [1, 2, 3], MSGS.sampling_params(16), ([4, 5],))
    cached = MSGS.CachedRequestData(req_ids=["c1"], resumed_from_preemption=[False],
                                    new_token_ids=[[9]], new_block_ids=[([6],)],
                                    num_computed_tokens=[7])
    return MSGS.SchedulerOutput(
        scheduled_new_reqs=[req], scheduled_cached_reqs=cached,
        num_scheduled_tokens={"r1": 3, "c1": 1}, total_num_scheduled_tokens=4,
        scheduled_spec_decode_tokens={}, scheduled_encoder_inputs={},
        num_common_prefix_blocks=[0], finished_req_ids=set(), free_encoder_input_ids=[],
        structured_output_request_ids={}, grammar_bitmask=None)


def _edited(frame: bytes, edit) -> bytes:
    """``frame`` (a packed frame) with its packed tuple replaced by ``edit(packed)``."""
    tag, packed, rank = pickle.loads(frame)
    return pickle.dumps((tag, edit(packed), rank), protocol=pickle.HIGHEST_PROTOCOL)


def _request(edit):
    """An edit of the packed tuple putting ``edit(first new request)`` in its place."""
    return lambda packed: ((edit(packed[0][0]),) + packed[0][1:],) + packed[1:]


def _cached(edit):
    """An edit of the packed tuple putting ``edit(cached requests)`` in their place."""
    return lambda packed: (packed[0], edit(packed[1])) + packed[2:]


@pytest.mark.parametrize("edit, line", [
    (lambda p: p[:11], "the packed SchedulerOutput (item 2 of the execute_model tuple) is "
     "a tuple of 11 items, expected 12"),
    (lambda p: p + (None,), "the packed SchedulerOutput (item 2 of the execute_model "
     "tuple) is a tuple of 13 items, expected 12"),
    (_request(lambda r: r[:9]), "scheduled_new_reqs[0] (a packed NewRequestData) is a "
     "tuple of 9 items, expected 10"),
    (_request(lambda r: list(r[:9])), "scheduled_new_reqs[0] (a packed NewRequestData) is "
     "a list of 9 items, expected 10"),
    (_cached(lambda c: c[:4]), "scheduled_cached_reqs (a packed CachedRequestData) is a "
     "tuple of 4 items, expected 5"),
    (_cached(lambda c: c + (None,)), "scheduled_cached_reqs (a packed CachedRequestData) "
     "is a tuple of 6 items, expected 5"),
])
def test_a_tuple_of_the_wrong_length_is_named_with_its_place_and_length(edit, line):
    codec = codecs.scheduler_output_codec("packed")
    frame = _edited(codec.encode(_scheduler_output()), edit)
    for decode in (codec.decode, codec.decode_checked):
        with pytest.raises(codecs.DecodeError) as err:
            decode(frame)
        assert str(err.value) == BAD + line


def test_a_frame_of_another_tag_or_outer_shape_is_still_named_by_its_outer_tuple():
    codec = codecs.scheduler_output_codec("packed")
    _tag, packed, rank = pickle.loads(codec.encode(_scheduler_output()))
    expected = ("SchedulerOutput: expected the packed execute_model tuple "
                f"('{codecs.EXECUTE_MODEL_FAST_PATH_TAG}', (12 fields), rank), got ")
    for msg, got in [(("other", packed, rank), "a tuple of 3 (str, tuple, int)"),
                     ((codecs.EXECUTE_MODEL_FAST_PATH_TAG, list(packed), rank),
                      "a tuple of 3 (str, list, int)")]:
        with pytest.raises(codecs.DecodeError) as err:
            codec.decode(pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL))
        assert str(err.value) == expected + got


# ------------------------------------------------------------- through bench.py


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished run folder of one send case per codec (msgpack, pickle, packed)."""
    return finished_run(tmp_path_factory, "mbpackedlengths", FRAME_RUN)


def _microbench(run: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "bench.py", "microbench", str(run),
                           "--directions", "s2r", "--ops", "decode", "--codecs", "packed",
                           *PYPERF], cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("edit, line", [
    (lambda p: p[:11], "the packed SchedulerOutput (item 2 of the execute_model tuple) is "
     "a tuple of 11 items, expected 12"),
    (_cached(lambda c: c[:4]), "scheduled_cached_reqs (a packed CachedRequestData) is a "
     "tuple of 4 items, expected 5"),
])
def test_microbench_names_the_tuple_of_the_wrong_length(run, tmp_path, edit, line):
    run = copy_run(run, tmp_path)
    path = capture_path(run, "packed", "s2r")
    edit_frames(path, lambda frames: frames.__setitem__(2, _edited(frames[2], edit)))
    cap = load_capture(path)
    proc = _microbench(run)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (f"{ERROR}{path}: message 3 of {len(cap.frames)} (step "
                           f"{cap.seqs[2]}): cannot be decoded: {BAD}{line}\n")
    assert not (run / "microbench").exists()
