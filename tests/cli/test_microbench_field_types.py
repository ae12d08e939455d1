"""``bench.py microbench``'s frame check reads each declared field of a decoded pickle
or packed message against its declared type (``codecs.check_field_types``): a str
where a list of ints is declared, an enum member where an int is, lists nested past
what the encoder can follow, are refused in one line naming the message's field and
what it held, before anything is timed (exit 2), where a pyperf worker's encode failed
on them later; a frame whose memo references would make that walk explode is refused
first. Every frame of a genuine run (speculative decoding with async scheduling, a
``--tp 2`` broadcast) passes."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from ipc_bench.analysis.capture import load_capture
from ipc_bench.v1rpc.samp import RequestOutputKind
from ipc_bench.wire import codecs
from microbench_runs import capture_path, copy_run, edit_frames, finished_run

REPO = Path(__file__).resolve().parents[2]
COMMON = ["--steps", "20", "--warmup-steps", "2", "--no-single-process", "--no-floor",
          "--quiet"]
TINY = ["--scenario", "decode-steady", "--num-running", "1", "--policies", "send",
        "--codecs", "pickle", *COMMON]
PYPERF = ["-p", "1", "-n", "1", "-w", "0", "-l", "1"]
ERROR = "bench.py microbench: error: "
MSGS = codecs.VLLM_DATACLASSES
SO = "a pickle frame decodes to a SchedulerOutput whose field"


def _scheduler_output(**changes):
    """A one-request ``SchedulerOutput`` of the pickled codecs' dataclasses; ``changes``
    set fields of it (``field=``), of its request (``req__field=``) or of the request's
    sampling params (``sp__field=``)."""
    sp = MSGS.sampling_params(16)
    req = MSGS.new_request_data("r1", [1, 2, 3], sp, ([4, 5],))
    so = MSGS.SchedulerOutput(
        scheduled_new_reqs=[req], scheduled_cached_reqs=MSGS.CachedRequestData(
            req_ids=[], resumed_from_preemption=[], new_token_ids=[], new_block_ids=[],
            num_computed_tokens=[]),
        num_scheduled_tokens={"r1": 3}, total_num_scheduled_tokens=3,
        scheduled_spec_decode_tokens={}, scheduled_encoder_inputs={},
        num_common_prefix_blocks=[0], finished_req_ids=set(), free_encoder_input_ids=[],
        structured_output_request_ids={}, grammar_bitmask=None)
    for key, value in changes.items():
        owner, _, field = key.rpartition("__")
        setattr({"": so, "req": req, "sp": sp}[owner], field, value)
    return so


def _refusal(codec: str, frame: bytes) -> str:
    with pytest.raises(codecs.RefusedPickle) as err:
        codecs.scheduler_output_codec(codec).decode_checked(frame)
    return str(err.value)


def _nested(codec: str, field: str, depth: int = 5000) -> bytes:
    """A frame of ``codec`` whose field ``field`` (as ``_scheduler_output`` names it)
    holds ``depth`` nested lists, spliced in for a placeholder string: ``pickle.dumps``
    cannot write it (RecursionError), the unpickler reads it. The FRAME opcode is left
    out (its length would be wrong)."""
    frame = codecs.scheduler_output_codec(codec).encode(
        _scheduler_output(**{field: "SENTINEL__"}))
    return (frame[:2] + frame[11:]).replace(
        b"\x8c\x0aSENTINEL__", b"]" * depth + b"a" * (depth - 1))


@pytest.mark.parametrize("changes, line", [
    ({"req__prompt_token_ids": "abc"}, "scheduled_new_reqs[0].prompt_token_ids holds str "
     "where its declared type takes list[int]"),
    ({"req__prompt_token_ids": [1, RequestOutputKind.DELTA]},
     "scheduled_new_reqs[0].prompt_token_ids[1] holds a RequestOutputKind where its "
     "declared type takes int"),
    ({"req__req_id": b"r1"}, "scheduled_new_reqs[0].req_id holds bytes where its "
     "declared type takes str"),
    ({"num_scheduled_tokens": {1: 3}}, "num_scheduled_tokens (a key) holds int where "
     "its declared type takes str"),
    ({"sp__stop_token_ids": "ab"}, "scheduled_new_reqs[0].sampling_params.stop_token_ids "
     "holds str where its declared type takes Optional[list[int]]"),
    ({"num_common_prefix_blocks": {0}}, "num_common_prefix_blocks holds a set where its "
     "declared type takes list[int]"),
    ({"total_num_scheduled_tokens": True}, "total_num_scheduled_tokens holds bool where "
     "its declared type takes int"),
])
def test_a_field_of_another_type_is_named_with_what_it_held(changes, line):
    frame = codecs.scheduler_output_codec("pickle").encode(_scheduler_output(**changes))
    assert _refusal("pickle", frame) == f"{SO} {line}: not timed"


@pytest.mark.parametrize("codec, field, path", [
    ("pickle", "req__prompt_token_ids", "scheduled_new_reqs[0].prompt_token_ids"),
    ("pickle", "req__lora_request", "scheduled_new_reqs[0].lora_request"),
    ("packed", "req__mm_inputs", "scheduled_new_reqs[0].mm_inputs"),
])
def test_lists_nested_past_the_encoder_are_named_by_their_field(codec, field, path):
    frame = _nested(codec, field)
    codecs.scheduler_output_codec(codec).decode(frame)  # the plain decode reads it
    assert _refusal(codec, frame) == (
        f"{SO} {path} holds what msgspec cannot walk (RecursionError: maximum recursion "
        "depth exceeded while serializing an object): not timed")


def test_a_packed_frame_s_unpacked_lists_are_read_by_their_declared_types():
    tag, packed, rank = pickle.loads(codecs.scheduler_output_codec("packed").encode(
        _scheduler_output()))
    frame = pickle.dumps((tag, packed[:6] + ("ab",) + packed[7:], rank), protocol=5)
    assert _refusal("packed", frame) == (
        f"{SO} num_common_prefix_blocks[0] holds str where its declared type takes int: "
        "not timed")


def test_a_reply_s_field_is_read_by_its_declared_type():
    codec = codecs.model_runner_output_codec("pickle")
    reply = MSGS.model_runner_output(["r1"], {"r1": 0}, [["7"]])
    with pytest.raises(codecs.RefusedPickle) as err:
        codec.decode_checked(codec.encode(reply))
    assert str(err.value) == (
        "a pickle frame decodes to a ModelRunnerOutput whose field sampled_token_ids[0][0] "
        "holds str where its declared type takes int: not timed")


@pytest.mark.parametrize("codec", ["pickle", "packed"])
def test_memo_references_that_would_blow_up_the_walk_are_refused(codec):
    bomb: list = [1]
    for _ in range(60):
        bomb = [bomb, bomb]  # 2**61 objects through every path, 60 lists
    frame = codecs.scheduler_output_codec(codec).encode(
        _scheduler_output(req__mm_inputs=bomb))
    assert _refusal(codec, frame) == (
        "a pickle frame refers to its own objects so often or so circularly that walking "
        f"its fields would visit more than {4 * len(frame)} objects (4 per byte): not timed")


def test_a_list_that_holds_itself_is_refused():
    loop: list = []
    loop.append(loop)
    frame = codecs.scheduler_output_codec("pickle").encode(
        _scheduler_output(req__pooling_params=loop))
    assert _refusal("pickle", frame) == (
        "a pickle frame refers to its own objects so often or so circularly that walking "
        f"its fields would visit more than {4 * len(frame)} objects (4 per byte): not timed")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished run folder of one pickle send case."""
    return finished_run(tmp_path_factory, "mbtypes", TINY)


def test_microbench_refuses_nested_lists_before_timing_anything(run, tmp_path):
    run = copy_run(run, tmp_path)
    path = capture_path(run, "pickle", "s2r")
    codec = codecs.scheduler_output_codec("pickle")

    def nest(frames):
        so = codec.decode(frames[3])
        so.grammar_bitmask = "SENTINEL__"
        frame = codec.encode(so)
        frames[3] = (frame[:2] + frame[11:]).replace(b"\x8c\x0aSENTINEL__",
                                                     b"]" * 5000 + b"a" * 4999)

    edit_frames(path, nest)
    proc = subprocess.run([sys.executable, "bench.py", "microbench", str(run), "--ops",
                           "encode", *PYPERF], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    cap = load_capture(path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"{ERROR}{path}: message 4 of {len(cap.frames)} (step {cap.seqs[3]}): {SO} "
        "grammar_bitmask holds what msgspec cannot walk (RecursionError: maximum "
        "recursion depth exceeded while serializing an object): not timed\n")
    assert not (run / "microbench").exists()


@pytest.mark.parametrize("args", [
    ["--scenario", "decode-steady", "--num-running", "4", "--num-spec-tokens", "3",
     "--async-scheduling"],
    ["--scenario", "tp-broadcast", "--tp", "2", "--num-running", "4",
     "--tp-transports", "ipc"],
], ids=["spec-async", "tp2"])
def test_every_frame_of_a_genuine_run_passes(tmp_path_factory, args):
    folder = finished_run(tmp_path_factory, "mbgenuine",
                          [*args, "--codecs", "pickle,packed", *COMMON])
    files = sorted((folder / "messages").glob("*.msgpack"))
    assert len(files) == 8
    for path in files:
        cap = load_capture(path)
        make = {"s2r": codecs.scheduler_output_codec,
                "r2s": codecs.model_runner_output_codec}[cap.direction]
        codec = make(cap.codec)
        assert [codec.decode_checked(f) for f in cap.frames] == [
            codec.decode(f) for f in cap.frames]
