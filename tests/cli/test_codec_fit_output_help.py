"""codec_fit's ``--output`` help says what it takes: a folder made if missing, but only
in a folder that exists; one whose parent is missing is refused (exit 2)."""

from __future__ import annotations

import pytest

from script_module import load_script


def test_the_output_help_says_a_missing_parent_is_refused(capsys):
    codec_fit = load_script("codec_fit")
    with pytest.raises(SystemExit) as exc:
        codec_fit.parse_args(["--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert ("--output DIR folder the runs made here go in, as fit-<time> and "
            "check1024-<time> (default results/ of the checkout); made if missing, in a "
            "folder that exists: one whose parent is missing is refused") in text


def test_a_missing_parent_is_refused(tmp_path, capsys):
    codec_fit = load_script("codec_fit")
    with pytest.raises(SystemExit) as exc:
        codec_fit.parse_args(["--output", str(tmp_path / "no" / "runs")])
    assert (exc.value.code, capsys.readouterr().err) == (
        2, f"codec_fit.py: error: argument --output: {tmp_path / 'no' / 'runs'}: no such "
           f"folder: {tmp_path / 'no'}\n")
