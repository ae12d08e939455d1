"""A ``results`` beside ``bench.py`` that is a file, not a folder, is refused saying so,
with the hint a refused default folder gets (``--output`` writes elsewhere), one line,
exit 2, the file left as it was."""
from __future__ import annotations

from ipc_bench.cli import execute, run


def test_a_results_file_is_named_as_one(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(execute, "REPO_ROOT", tmp_path)
    (tmp_path / "results").write_text("notes\n")
    code = run.main(["--scenario", "decode-steady", "--num-running", "2", "--steps", "5"])
    assert (code, capsys.readouterr().err) == (2, (
        f"bench.py: error: cannot create a results folder under {tmp_path / 'results'}: "
        "it exists and is not a folder; write it elsewhere with --output DIR\n"))
    assert (tmp_path / "results").read_text() == "notes\n"


def test_a_results_link_to_a_file_names_the_link(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(execute, "REPO_ROOT", tmp_path)
    (tmp_path / "notes.txt").write_text("notes\n")
    (tmp_path / "results").symlink_to("notes.txt")
    code = run.main(["--scenario", "decode-steady", "--num-running", "2", "--steps", "5"])
    assert (code, capsys.readouterr().err) == (2, (
        f"bench.py: error: cannot create a results folder under {tmp_path / 'results'}: "
        "it is a symbolic link to notes.txt, which is not a folder; write it elsewhere "
        "with --output DIR\n"))
    assert (tmp_path / "notes.txt").read_text() == "notes\n"
