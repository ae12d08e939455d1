"""With ``--remote-runners`` and no ``--output``, a default results folder the run
cannot make (``results/`` a file, a read-only one) is refused before the scheduler
binds its ports or prints the command that starts a runner: stderr is the refusal
alone, in the words of a run without ``--remote-runners``, exit 2, and the control
port was never bound. Where the folder can be made, the check leaves nothing behind:
the run makes its own."""
import errno
import os
from types import SimpleNamespace

from ipc_bench.cli import execute, run
from test_remote_output_refused_first import ARGS, _port_free


def test_a_results_file_is_refused_before_the_wait(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(execute, "REPO_ROOT", tmp_path)
    (tmp_path / "results").write_text("x")
    code = run.main(ARGS)
    assert (code, capsys.readouterr().err) == (2, (
        f"bench.py: error: cannot create a results folder under {tmp_path / 'results'}: "
        "it exists and is not a folder; write it elsewhere with --output DIR\n"))
    assert _port_free()
    assert (tmp_path / "results").read_text() == "x"


def test_a_read_only_results_folder_is_refused_before_the_wait(tmp_path, monkeypatch,
                                                               capsys):
    def refuse(root, scenario):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(execute, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(execute, "default_run_dir", refuse)
    code = run.main(ARGS)
    assert (code, capsys.readouterr().err) == (2, (
        f"bench.py: error: cannot create a results folder under {tmp_path / 'results'}: "
        "Read-only file system; write it elsewhere with --output DIR\n"))
    assert _port_free()


def _args() -> SimpleNamespace:
    return SimpleNamespace(output=None, scenario="decode-steady")


def test_the_check_removes_the_results_folder_it_made(tmp_path, monkeypatch):
    monkeypatch.setattr(execute, "REPO_ROOT", tmp_path)
    run._try_default_run_dir(_args())
    assert os.listdir(tmp_path) == []


def test_the_check_leaves_an_existing_results_folder_as_it_was(tmp_path, monkeypatch):
    monkeypatch.setattr(execute, "REPO_ROOT", tmp_path)
    (tmp_path / "results" / "decode-steady-20260101-000000").mkdir(parents=True)
    run._try_default_run_dir(_args())
    assert os.listdir(tmp_path / "results") == ["decode-steady-20260101-000000"]
    assert os.listdir(tmp_path / "results" / "decode-steady-20260101-000000") == []
