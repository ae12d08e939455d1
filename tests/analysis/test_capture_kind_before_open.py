"""A capture file's kind is looked up before it is opened (``capture._capture_bytes``):
a folder or a socket in its place is refused as a FIFO is, in the words of ``bench.py
report`` (``NAME is a folder, not a regular file``), exit code 2, where a folder
opened and then failed outside the check (``error: cannot write 3: Is a directory``,
exit 1) and a socket failed to open (``cannot read PATH: No such device or address``).
And ``messages`` that is there but is not a folder (a file, a FIFO, a device, a
dangling link) is said to be so (``capture.not_a_messages_folder``), where it was read
as a run that kept no messages (``no captured messages in RUN/messages: none of the
run's 3 finished cases kept messages; ...``)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from ipc_bench import cli
from ipc_bench.analysis import capture
from microbench_runs import ERROR, FRAME_RUN, capture_path, copy_run, finished_run

NAME = "num_running=1.send.msgpack.r0.s2r.msgpack"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory, "capture-kinds", FRAME_RUN)


def _refusal(run: Path, capsys) -> tuple[int, str, str]:
    code = cli.main(["microbench", str(run), "--fast"])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_folder_in_place_of_a_capture_file_is_refused_as_not_a_file(finished, tmp_path,
                                                                      capsys):
    run = copy_run(finished, tmp_path)
    path = capture_path(run, "msgpack", "s2r")
    path.unlink()
    path.mkdir()
    assert _refusal(run, capsys) == (
        2, "", f"{ERROR}{run / 'messages'}: {NAME} is a folder, not a regular file\n")
    assert not (run / "microbench").exists()


def test_a_socket_in_place_of_a_capture_file_is_named_a_socket(finished, tmp_path, capsys,
                                                               monkeypatch):
    run = copy_run(finished, tmp_path)
    path = capture_path(run, "msgpack", "s2r")
    path.unlink()
    monkeypatch.chdir(path.parent)  # a relative name: the full path may pass 107 bytes
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(NAME)
        with pytest.raises(capture.CaptureError) as info:
            capture.load_capture(path)
        assert str(info.value) == (f"{run / 'messages'}: {NAME} is a socket, not a "
                                   "regular file")
        assert _refusal(run, capsys) == (
            2, "", f"{ERROR}{run / 'messages'}: {NAME} is a socket, not a regular file\n")


@pytest.mark.parametrize("kind, make, words", [
    ("file", lambda p: p.write_bytes(b"x"), "a regular file"),
    ("fifo", os.mkfifo, "a FIFO"),
    ("dev-null", lambda p: p.symlink_to("/dev/null"), "a character device"),
    ("dangling", lambda p: p.symlink_to("/nowhere/at/all"),
     "a dangling link (to /nowhere/at/all)"),
])
def test_messages_that_is_not_a_folder_is_said_to_be_so(finished, tmp_path, capsys, kind,
                                                         make, words):
    run = copy_run(finished, tmp_path)
    for path in (run / "messages").iterdir():
        path.unlink()
    (run / "messages").rmdir()
    make(run / "messages")
    assert _refusal(run, capsys) == (
        2, "", f"{ERROR}{run}: messages is {words}, not a folder of captured messages\n")


def test_a_link_loop_as_messages_is_said_unreadable(finished, tmp_path):
    run = copy_run(finished, tmp_path)
    for path in (run / "messages").iterdir():
        path.unlink()
    (run / "messages").rmdir()
    (run / "messages").symlink_to("messages")
    assert capture.not_a_messages_folder(run) == (
        f"{run}: messages cannot be read: Too many levels of symbolic links")


def test_a_messages_folder_or_none_is_not_refused_here(finished, tmp_path):
    run = copy_run(finished, tmp_path)
    assert capture.not_a_messages_folder(run) is None
    assert capture.capture_paths(run)[0] == capture_path(run, "msgpack", "r2s")
    for path in (run / "messages").iterdir():
        path.unlink()
    (run / "messages").rmdir()
    assert capture.not_a_messages_folder(run) is None
