"""A capture file that is a dangling link is said to be one, naming its target, as
``messages`` that is one is (``run_files.dangling_link``): ``RUN/messages: NAME is a
dangling link (to TARGET), not a regular file``, exit code 2, where microbench said
``cannot read RUN/messages/NAME: No such file or directory``."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipc_bench import cli
from ipc_bench.analysis import capture
from ipc_bench.analysis.run_files import dangling_link
from microbench_runs import ERROR, FRAME_RUN, capture_path, copy_run, finished_run

NAME = "num_running=1.send.msgpack.r0.s2r.msgpack"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory, "dangling-capture", FRAME_RUN)


def test_a_dangling_capture_file_link_is_named_with_its_target(finished, tmp_path, capsys):
    run = copy_run(finished, tmp_path)
    path = capture_path(run, "msgpack", "s2r")
    path.unlink()
    path.symlink_to("/nowhere/at/all.msgpack")
    line = (f"{run / 'messages'}: {NAME} is a dangling link (to /nowhere/at/all.msgpack), "
            "not a regular file")
    with pytest.raises(capture.CaptureError) as info:
        capture.load_capture(path)
    assert str(info.value) == line
    assert cli.main(["microbench", str(run), "--fast"]) == 2
    assert capsys.readouterr() == ("", f"{ERROR}{line}\n")
    assert not (run / "microbench").exists()


def test_messages_and_a_capture_file_that_dangle_are_worded_alike(tmp_path):
    (tmp_path / "messages").symlink_to("gone")
    assert capture.not_a_messages_folder(tmp_path) == (
        f"{tmp_path}: messages is a dangling link (to gone), not a folder of captured "
        "messages")
    assert dangling_link(tmp_path / "messages") == "a dangling link (to gone)"
    (tmp_path / "loop").symlink_to("loop")
    assert [dangling_link(tmp_path / n) for n in ("loop", "absent", ".")] == [None] * 3
