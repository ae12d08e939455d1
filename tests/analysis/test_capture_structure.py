"""A capture file whose lists no run writes is refused, exit 2, before anything is timed:
``frames`` shorter than ``seqs`` was re-timed over 10 frames and set beside in-loop
times of 200 steps (exit 0, ratios of ~35), a negative in-loop time printed a negative
time and ratio. Data that runs past the file's end is said to be cut short or altered
(a whole file with bytes changed read as "cut short")."""

from __future__ import annotations

import msgspec
import pytest

from analysis_run import bench_in_process
from ipc_bench.analysis import capture


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    where = tmp_path_factory.mktemp("caprun") / "run"
    proc = bench_in_process(["--scenario", "decode-steady", "--num-running", "4", "--steps",
                             "30", "--warmup-steps", "2", "--policies", "send", "--codecs",
                             "msgpack", "--no-single-process", "--quiet", "--output", where])
    assert proc.returncode == 0, proc.stderr
    return where


def _s2r(run_dir):
    (path,) = (run_dir / "messages").glob("*.s2r.msgpack")
    return path


def _edited(path, tmp_path, **fields):
    cap = capture.load_capture(path)
    out = tmp_path / path.name
    out.write_bytes(msgspec.msgpack.encode(msgspec.structs.replace(cap, **fields)))
    return out


def test_a_run_writes_captures_with_no_problem(run_dir):
    cap = capture.load_capture(_s2r(run_dir))
    assert len(cap.seqs) == len(cap.frames) == 30 == cap.num_counted_steps
    assert capture.capture_problem(cap) is None


@pytest.mark.parametrize("edit, problem", [
    (lambda c: dict(frames=c.frames[:10]), "30 seqs but 10 frames"),
    (lambda c: dict(in_loop_encode_ns=[], frames=[]), "30 seqs but 0 in_loop_encode_ns and 0 frames"),
    (lambda c: dict(seqs=[], in_loop_encode_ns=[], in_loop_decode_ns=[], frames=[]),
     "no frames"),
    (lambda c: dict(num_counted_steps=29), "30 seqs, more than its num_counted_steps (29)"),
    (lambda c: dict(seqs=c.seqs[:5] + [c.seqs[3]] + c.seqs[6:]),
     "seqs not increasing (seqs[4] is 6, seqs[5] is 5)"),
    (lambda c: dict(in_loop_decode_ns=c.in_loop_decode_ns[:2] + [-1000]
                    + c.in_loop_decode_ns[3:]), "in_loop_decode_ns[2] is -1000, a negative time"),
    (lambda c: dict(in_loop_encode_ns=[10**18] + c.in_loop_encode_ns[1:]),
     "in_loop_encode_ns[0] is 1,000,000,000,000,000,000 ns, more than 1e+15 (a run's "
     "summary takes no larger time)"),
    (lambda c: dict(seqs=[-5] + c.seqs[1:]), "seqs[0] is -5, a negative step"),
])
def test_what_no_run_writes_is_named(run_dir, tmp_path, edit, problem):
    path = _s2r(run_dir)
    edited = _edited(path, tmp_path, **edit(capture.load_capture(path)))
    with pytest.raises(capture.CaptureError) as err:
        capture.load_capture(edited)
    assert str(err.value) == f"{edited}: {problem}: not a capture file a run wrote"


def test_microbench_refuses_a_short_frames_list_before_timing(run_dir, tmp_path):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    path = _s2r(copy)
    cap = capture.load_capture(path)
    path.write_bytes(msgspec.msgpack.encode(msgspec.structs.replace(cap, frames=cap.frames[:10])))
    done = bench_in_process(["microbench", copy, "--fast", "--output", tmp_path / "mb"])
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"bench.py microbench: error: {path}: 30 seqs but 10 frames: not a "
                           "capture file a run wrote\n")
    assert not (tmp_path / "mb").exists()


def test_bytes_altered_inside_a_whole_file_are_not_called_only_cut_short(run_dir, tmp_path):
    path = _s2r(run_dir)
    data = bytearray(path.read_bytes())
    cap = capture.load_capture(path)
    # the first frame's MessagePack bin 16 length (4 running, send: ~390-byte frames)
    # made 65,535, more than the file holds after it
    first = bytes(cap.frames[0])
    i = data.index(first)
    assert data[i - 3:i] == bytes([0xC5]) + len(first).to_bytes(2, "big")
    data[i - 2:i] = b"\xff\xff"
    assert len(data) - i < 0xFFFF
    altered = tmp_path / path.name
    altered.write_bytes(bytes(data))
    assert len(data) == path.stat().st_size
    with pytest.raises(capture.CaptureError) as err:
        capture.load_capture(altered)
    assert str(err.value) == (f"{altered}: cut short or altered ({len(data):,} bytes, its data "
                              "running past its end): not a whole capture file")

