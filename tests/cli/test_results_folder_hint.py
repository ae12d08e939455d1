"""A default results folder the system refuses (read-only, no permission) is refused
with the hint ``report`` and ``microbench`` give: ``--output`` writes elsewhere."""

from __future__ import annotations

import errno

from ipc_bench.cli import execute, run


def _refusal(monkeypatch, capsys, exc: OSError) -> tuple[int, str]:
    def refuse(root, scenario):
        raise exc

    monkeypatch.setattr(execute, "default_run_dir", refuse)
    code = run.main(["--scenario", "decode-steady", "--num-running", "2", "--steps", "5"])
    return code, capsys.readouterr().err


def test_a_read_only_results_folder_names_output(monkeypatch, capsys):
    code, err = _refusal(monkeypatch, capsys,
                         OSError(errno.EROFS, "Read-only file system"))
    assert (code, err) == (2, (
        f"bench.py: error: cannot create a results folder under "
        f"{execute.REPO_ROOT / 'results'}: Read-only file system; write it elsewhere "
        "with --output DIR\n"))


def test_another_reason_has_no_hint(monkeypatch, capsys):
    code, err = _refusal(monkeypatch, capsys, OSError(errno.ENOTDIR, "Not a directory"))
    assert (code, err) == (2, (
        f"bench.py: error: cannot create a results folder under "
        f"{execute.REPO_ROOT / 'results'}: Not a directory\n"))
