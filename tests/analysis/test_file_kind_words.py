"""The words for a run's file that is not a regular file are public and shared
(``run_files.file_kind``, ``run_files.why_not_a_file``): the loader's refusal of a CSV file
and microbench's of a capture file and of ``messages`` read the same kinds, where
``capture`` imported results' private ``_not_a_file`` and ``_FILE_KINDS``."""

from __future__ import annotations

import os
import stat

from ipc_bench.analysis import capture, results
from ipc_bench.analysis.run_files import FILE_KINDS, file_kind, why_not_a_file


def test_file_kind_names_each_kind_in_the_loaders_words(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "file").write_bytes(b"x")
    assert [file_kind(os.stat(p).st_mode) for p in
            (tmp_path, tmp_path / "fifo", tmp_path / "file", "/dev/null")] == [
        "a folder", "a FIFO", "a regular file", "a character device"]
    assert file_kind(stat.S_IFLNK) == "something else"
    assert FILE_KINDS[stat.S_IFSOCK] == "a socket"


def test_why_not_a_file_says_what_is_there(tmp_path):
    os.mkfifo(tmp_path / "steps.csv")
    (tmp_path / "floor.csv").mkdir()
    (tmp_path / "itl.csv").symlink_to("itl.csv")
    assert [why_not_a_file(tmp_path / n) for n in
            ("steps.csv", "floor.csv", "requests.csv", "itl.csv")] == [
        "steps.csv is a FIFO, not a regular file",
        "floor.csv is a folder, not a regular file",
        "no requests.csv",
        "itl.csv cannot be read: Too many levels of symbolic links"]


def test_capture_uses_the_public_words_and_not_the_private_names(tmp_path):
    (tmp_path / "messages").write_bytes(b"x")
    assert capture.not_a_messages_folder(tmp_path) == (
        f"{tmp_path}: messages is a regular file, not a folder of captured messages")
    (tmp_path / "x.msgpack").mkdir()
    try:
        capture.load_capture(tmp_path / "x.msgpack")
    except capture.CaptureError as exc:
        assert str(exc) == f"{tmp_path}: x.msgpack is a folder, not a regular file"
    else:
        raise AssertionError("a folder was read as a capture file")
    assert not hasattr(results, "_not_a_file") and not hasattr(results, "_FILE_KINDS")
