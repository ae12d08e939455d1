"""``scripts/device_check.sh`` installs from ``wheels/`` only what the running Python
takes (its ``cpXY`` tag, abi3 or pure Python), so a ``wheels/`` that also holds another
Python's wheels (two downloads, for 3.11 and 3.12) installs, where pip refused the
whole set and the script exited 2; one that holds none for it is refused, naming its
tag and the wheels."""

from __future__ import annotations

import re

from device_check_repo import TAG, platform, run_wheels_repo, wheel, wheels_repo

OTHER = "cp39" if TAG != "cp39" else "cp310"


def _wheel(folder, version: str, tag: str):
    """A wheel of a stand-in ``msgspec`` tagged ``tag-tag-PLATFORM``."""
    return wheel(folder, "msgspec", "msgspec", version, f"{tag}-{tag}-{platform()}")


def test_only_the_running_pythons_wheels_are_installed(tmp_path):
    repo, python = wheels_repo(tmp_path, ("msgspec",))
    _wheel(repo / "wheels", "1.0", TAG)
    _wheel(repo / "wheels", "2.0", OTHER)  # another Python's, newer
    done = run_wheels_repo(repo, python, tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"installed from wheels/ for {TAG}: msgspec-1.0"
    assert "msgspec 1.0" in lines
    # the check's heading: the budget the deadline leaves, no option after it
    assert any(re.fullmatch(r"== scripts/gpu_check.py --budget-s \d+", ln) for ln in lines), lines


def test_wheels_for_other_pythons_only_are_refused_naming_them(tmp_path):
    repo, python = wheels_repo(tmp_path, ("msgspec",))
    theirs = _wheel(repo / "wheels", "2.0", OTHER)
    done = run_wheels_repo(repo, python, tmp_path / "out")
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"device_check.sh: msgspec is missing from {python} and wheels/ holds no "
        f"wheel for it ({TAG}): {theirs.name}\n")
