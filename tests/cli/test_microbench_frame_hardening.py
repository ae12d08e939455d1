"""``bench.py microbench``'s frame check refuses what no frame the harness writes does:
``BUILD`` on a class (which would change the harness's class for the rest of the
process), a memo index beyond the frame's opcodes (which would make the unpickler ask
for memory by it), a decoded message whose instances hold attributes other than their
fields; a frame of the other direction's message is named so; and an arm whose pyperf
worker failed names the worker's own error."""

from __future__ import annotations

import copyreg
import io
import os
import pickle
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import msgspec
import pytest

from analysis_run import bench_in_process
from ipc_bench.analysis import microbench as mb
from ipc_bench.analysis.capture import CaptureError, load_capture
from ipc_bench.v1rpc.samp import RequestOutputKind
from ipc_bench.wire import codecs
from microbench_runs import (ERROR, FRAME_RUN, PYPERF, capture_path, copy_run, edit_frames,
                            finished_run)

REPO = Path(__file__).resolve().parents[2]
TINY = FRAME_RUN
SO = codecs.VLLM_DATACLASSES.SchedulerOutput


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished run folder of one send case per codec (msgpack, pickle, packed)."""
    return finished_run(tmp_path_factory, "mbhard", TINY)


def _frames(path: Path) -> list[bytes]:
    return msgspec.msgpack.decode(path.read_bytes())["frames"]


def _microbench(run: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "bench.py", "microbench", str(run), *args,
                           *PYPERF], cwd=REPO, capture_output=True, text=True, timeout=120)


def _where(path: Path, k: int) -> str:
    cap = load_capture(path)
    return f"{path}: message {k + 1} of {len(cap.frames)} (step {cap.seqs[k]})"


def _class_build(frame: bytes, attr: bytes, value: bytes) -> bytes:
    """``SchedulerOutput`` pushed, ``BUILD`` with slot state ``{attr: value}`` applied to
    the class itself, popped; then the frame's own opcodes (its PROTO and FRAME left out)."""
    m, n = b"ipc_bench.v1rpc.sched_out", b"SchedulerOutput"
    g = b"\x8c" + bytes([len(m)]) + m + b"\x8c" + bytes([len(n)]) + n + b"\x93"
    return (b"\x80\x05" + g + b"N}\x8c" + bytes([len(attr)]) + attr + b"\x8c"
            + bytes([len(value)]) + value + b"s\x86b0" + frame[11:])


def test_a_frame_that_sets_an_attribute_of_a_class_is_refused_and_the_class_kept(run,
                                                                                  tmp_path):
    run = copy_run(run, tmp_path)
    path = capture_path(run, "pickle", "s2r")
    edit_frames(path, lambda f: f.__setitem__(3, _class_build(f[3], b"pwned_by_pk", b"yes")))
    proc = _microbench(run, "--directions", "s2r", "--ops", "decode", "--codecs", "pickle")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"{ERROR}{_where(path, 3)}: a pickle frame applies BUILD at byte 69 to the class "
        "SchedulerOutput itself, which would change the class for the rest of the "
        "process: not unpickled\n")
    assert not (run / "microbench").exists()
    with pytest.raises(CaptureError):
        mb.check_frames(path, load_capture(path))  # in this process too
    assert not hasattr(SO, "pwned_by_pk")


def test_a_getattr_set_on_a_class_is_refused_and_later_checks_still_pass(run, tmp_path):
    run = copy_run(run, tmp_path)
    path = capture_path(run, "pickle", "s2r")
    good = _frames(path)
    edit_frames(path, lambda f: f.__setitem__(0, _class_build(f[0], b"__getattr__", b"x")))
    with pytest.raises(CaptureError) as err:
        mb.check_frames(path, load_capture(path))
    assert "to the class SchedulerOutput itself" in str(err.value)
    assert "__getattr__" not in vars(SO)
    codec = codecs.scheduler_output_codec("pickle")
    assert [codec.decode_checked(f) for f in good] == [codec.decode(f) for f in good]


def test_a_class_changed_past_the_scan_is_put_back_and_named(run, monkeypatch):
    """The second guard: each guarded class's ``__dict__`` is compared after unpickling."""
    frame = _class_build(_frames(capture_path(run, "pickle", "s2r"))[3], b"pwned_by_pk", b"yes")
    monkeypatch.setattr(codecs, "scan_pickle", lambda frame: True)
    with pytest.raises(codecs.RefusedPickle) as err:
        codecs.scheduler_output_codec("pickle").decode_checked(frame)
    assert str(err.value) == ("a pickle frame changes the class SchedulerOutput (sets "
                              "pwned_by_pk): not unpickled")
    assert not hasattr(SO, "pwned_by_pk")


@pytest.mark.parametrize("frame, op, at, slot, before", [
    (b"\x80\x05N\x94r\x00\x00\x00\x04.", "LONG_BINPUT", 4, 67108864, 3),
    (b"\x80\x05N\x94r\xff\xff\xff\xff.", "LONG_BINPUT", 4, 4294967295, 3),
    (b"\x80\x05Np4000000000\n.", "PUT", 3, 4000000000, 2),
    (b"\x80\x05N\x94j\x00\x00\x00\x04.", "LONG_BINGET", 4, 67108864, 3),
])
def test_a_memo_index_beyond_the_frame_is_refused_before_any_memory(frame, op, at, slot,
                                                                   before):
    codec = codecs.scheduler_output_codec("pickle")
    # the old check took ~1 s and 1 GiB: this process's CPU time and the memory traced,
    # not the wall clock, which a loaded machine stretches past any bound of this size
    t0 = time.process_time()
    with pytest.raises(codecs.RefusedPickle):
        codec.decode_checked(frame)
    assert time.process_time() - t0 < 0.05
    tracemalloc.start()
    try:
        with pytest.raises(codecs.RefusedPickle) as err:
            codec.decode_checked(frame)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20
    assert str(err.value) == (f"a pickle frame's {op} at byte {at} names memo slot {slot}, "
                              f"beyond the {before} opcodes before it: not unpickled (it "
                              "would ask for memory by that number)")


def _with_dict_entry(msg, key, value) -> bytes:
    """The RPC request of ``msg`` pickled with ``key: value`` added to the instance
    dict the frame builds for it (what no harness frame holds)."""
    buf = io.BytesIO()

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj):
            if obj is msg:
                return copyreg.__newobj__, (type(obj),), {**vars(obj), key: value}
            return NotImplemented

    Pickler(buf, protocol=5).dump(("execute_model", (msg,), {}, 0))
    return buf.getvalue()


def test_an_instance_dict_entry_no_field_names_is_refused(run, tmp_path):
    run = copy_run(run, tmp_path)
    path = capture_path(run, "pickle", "s2r")
    codec = codecs.scheduler_output_codec("pickle")
    edit_frames(path, lambda f: f.__setitem__(2, _with_dict_entry(
        codec.decode(f[2]), "__reduce_ex__", RequestOutputKind)))
    proc = bench_in_process(["microbench", run, "--directions", "s2r", "--ops", "encode",
                             "--codecs", "pickle", *PYPERF])
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (f"{ERROR}{_where(path, 2)}: a pickle frame decodes to a "
                           "SchedulerOutput with the attribute __reduce_ex__, not one of "
                           "its fields: not timed\n")
    assert not (run / "microbench").exists()


def test_a_frame_of_the_other_directions_message_is_named_so(run, tmp_path):
    run = copy_run(run, tmp_path)
    path = capture_path(run, "msgpack", "s2r")
    reply = _frames(capture_path(run, "msgpack", "r2s"))[2]
    edit_frames(path, lambda f: f.__setitem__(2, reply))
    proc = bench_in_process(["microbench", run, "--codecs", "msgpack", *PYPERF])
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (f"{ERROR}{_where(path, 2)}: cannot be decoded: a "
                           "ModelRunnerOutput, not a SchedulerOutput: a capture of the other "
                           "direction? (the file says s2r)\n")


#: A ``sitecustomize`` that breaks the packed codec's encode in pyperf's workers only
#: (``--worker`` in their arguments; pyperf hands its workers ``PYTHONPATH``).
_BROKEN_WORKER_ENCODE = """import sys
if "--worker" in sys.argv:
    from ipc_bench.wire import codecs

    def _encode(so, *args, **kwargs):
        raise RuntimeError("packed encode broken in this worker")

    codecs._encode_packed_request = _encode
"""


def test_a_failed_worker_s_own_error_is_in_the_line(run, tmp_path):
    """A worker whose timed encode fails where the coordinator's check of the same
    frames passed (every frame that passes the check encodes, so the worker's encoder
    itself is broken here, by a ``sitecustomize`` only pyperf's workers act on)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_BROKEN_WORKER_ENCODE)
    env = {**os.environ, "PYTHONPATH": str(site)}
    proc = subprocess.run([sys.executable, "bench.py", "microbench", str(run),
                           "--directions", "s2r", "--ops", "encode", "--codecs", "packed",
                           *PYPERF], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env=env)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.splitlines()[-1] == (
        f"{ERROR}pyperf run of arm send exited with 1: RuntimeError: {sys.executable} "
        "failed with exit code 1; the worker's error: RuntimeError: packed encode broken "
        "in this worker; nothing was written")


def test_the_arm_error_line_reads_the_worker_s_error_before_pyperf_s():
    err = ("Traceback (most recent call last):\n  File \"x\", line 1, in <module>\n"
           "TypeError: 'str' object is not callable\n"
           "Traceback (most recent call last):\n  File \"y\", line 2, in main\n"
           "RuntimeError: /usr/bin/python failed with exit code 1\n")
    assert mb.arm_error_line(err, "no message") == (
        "RuntimeError: /usr/bin/python failed with exit code 1; the worker's error: "
        "TypeError: 'str' object is not callable")
    assert mb.arm_error_line("ValueError: x\n", "no message") == "ValueError: x"
    assert mb.arm_error_line("", "no message") == "no message"
