"""``bench.py microbench`` decodes every captured frame once before anything is timed:
a frame that refers to a global no message of the harness holds (a run folder from
elsewhere whose pickle frames would run code) is not unpickled, and a damaged frame is
named with its file, message and step and the decoder's words; one line, exit 2, no
output folder made. The timed decode stays the plain ``pickle.loads``."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from ipc_bench.analysis import microbench as mb
from ipc_bench.analysis.capture import CaptureError, load_capture
from ipc_bench.wire import codecs
from microbench_runs import (ERROR, FRAME_RUN, PYPERF, capture_path, copy_run, edit_frames,
                            finished_run)

REPO = Path(__file__).resolve().parents[2]
TINY = FRAME_RUN
UNSAFE = ("a pickle frame refers to posix.system, which no SchedulerOutput or "
          "ModelRunnerOutput holds: not unpickled (a run folder from elsewhere can run "
          "code through pickle)")


class _Touch:
    """Pickles as ``os.system("touch PATH")``: what a hostile capture file holds."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished run folder of one send case per codec (msgpack, pickle, packed)."""
    return finished_run(tmp_path_factory, "mbframes", TINY)


def _microbench(run: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "bench.py", "microbench", str(run), *args,
                           *PYPERF], cwd=REPO, capture_output=True, text=True, timeout=120)


def _where(path: Path, k: int) -> str:
    cap = load_capture(path)
    return f"{path}: message {k + 1} of {len(cap.frames)} (step {cap.seqs[k]})"


@pytest.mark.parametrize("codec", ["pickle", "packed"])
def test_a_pickle_frame_that_would_run_code_is_refused_unrun(run, tmp_path, codec):
    run = copy_run(run, tmp_path)
    marker = tmp_path / "pwned"
    for path in (run / "messages").glob(f"*.{codec}.*"):
        edit_frames(path, lambda frames: frames.__setitem__(
            slice(None), [pickle.dumps(_Touch(marker))] * len(frames)))
    proc = _microbench(run, "--codecs", codec)
    first = capture_path(run, codec, "s2r")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"{ERROR}{_where(first, 0)}: {UNSAFE}\n"
    assert not marker.exists()
    assert not (run / "microbench").exists()


def test_one_hostile_reply_among_good_frames_is_named_by_its_message(run, tmp_path):
    run = copy_run(run, tmp_path)
    marker = tmp_path / "pwned"
    path = capture_path(run, "pickle", "r2s")
    edit_frames(path, lambda frames: frames.__setitem__(
        5, pickle.dumps(_Touch(marker), protocol=0)))
    proc = _microbench(run, "--codecs", "pickle", "--directions", "r2s", "--ops", "encode")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"{ERROR}{_where(path, 5)}: {UNSAFE}\n"
    assert not marker.exists()
    assert not (run / "microbench").exists()


@pytest.mark.parametrize("codec, why", [
    ("msgpack", "SchedulerOutput: Input data was truncated"),
    ("pickle", "SchedulerOutput: UnpicklingError: pickle data was truncated"),
])
def test_one_truncated_frame_is_named_with_the_decoders_words(run, tmp_path, codec, why):
    run = copy_run(run, tmp_path)
    path = capture_path(run, codec, "s2r")
    edit_frames(path, lambda frames: frames.__setitem__(5, frames[5][:40]))
    proc = _microbench(run, "--codecs", codec)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"{ERROR}{_where(path, 5)}: cannot be decoded: {why}\n"
    assert not (run / "microbench").exists()


def test_the_process_that_times_checks_the_frames_it_reads_itself(run, tmp_path):
    """An arm's worker reads the file again: one changed after the coordinator's check
    is refused there too, before any frame meets the plain ``pickle.loads``."""
    run = copy_run(run, tmp_path)
    marker = tmp_path / "pwned"
    path = capture_path(run, "pickle", "s2r")
    edit_frames(path, lambda frames: frames.__setitem__(0, pickle.dumps(_Touch(marker))))
    with pytest.raises(CaptureError) as err:
        mb._TimedOp(path, "decode")(1)
    assert str(err.value) == f"{_where(path, 0)}: {UNSAFE}"
    assert not marker.exists()


def test_every_frame_the_harness_writes_passes_and_decodes_as_the_plain_decode(run):
    selected = mb.select_captures(str(run), mb.Selection())
    assert sorted(i.codec for _, i in selected) == ["msgpack"] * 2 + ["packed"] * 2 + [
        "pickle"] * 2
    mb.check_captures(selected)  # raises nothing
    msgs = codecs.VLLM_DATACLASSES
    new = msgs.new_request_data("r1", [1, 2, 3], msgs.sampling_params(5), ([1, 2],))
    so = msgs.SchedulerOutput(
        scheduled_new_reqs=[new], scheduled_cached_reqs=msgs.CachedRequestData(
            req_ids=["a"], resumed_from_preemption=[True], new_token_ids=[[7]],
            new_block_ids=[([3],)], num_computed_tokens=[4]),
        num_scheduled_tokens={"r1": 3, "a": 1}, total_num_scheduled_tokens=4,
        scheduled_spec_decode_tokens={"a": [1, 2]}, scheduled_encoder_inputs={},
        num_common_prefix_blocks=[1], finished_req_ids={"x"}, free_encoder_input_ids=[],
        structured_output_request_ids={}, grammar_bitmask=None)
    out = msgs.model_runner_output(["a"], {"a": 0}, [[1]], [[2, 3]])
    for name in ("pickle", "packed"):
        for codec, msg in ((codecs.scheduler_output_codec(name), so),
                           (codecs.model_runner_output_codec(name), out)):
            frame = codec.encode(msg)
            assert codec.decode_checked(frame) == codec.decode(frame) == msg
