"""``scripts/device_check.sh`` installs from ``wheels/`` only what the running Python
takes (its ``cpXY`` tag, abi3 or pure Python), so a ``wheels/`` that also holds another
Python's wheels (two downloads, for 3.11 and 3.12) installs, where pip refused the
whole set and the script exited 2; one that holds none for it is refused, naming its
tag and the wheels."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TAG = f"cp{sys.version_info[0]}{sys.version_info[1]}"
OTHER = "cp39" if TAG != "cp39" else "cp310"


def _platform() -> str:
    from pip._vendor.packaging.tags import sys_tags

    return next(t.platform for t in sys_tags() if t.interpreter == TAG and t.abi == TAG)


def _wheel(folder: Path, version: str, tag: str, platform: str) -> Path:
    """A wheel of a stand-in ``msgspec`` (``msgspec.VERSION`` is ``version``) tagged
    ``tag-tag-platform``."""
    path = folder / f"msgspec-{version}-{tag}-{tag}-{platform}.whl"
    files = {"msgspec/__init__.py": f"VERSION = {version!r}\n",
             f"msgspec-{version}.dist-info/METADATA":
                 f"Metadata-Version: 2.1\nName: msgspec\nVersion: {version}\n",
             f"msgspec-{version}.dist-info/WHEEL":
                 f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n"
                 f"Tag: {tag}-{tag}-{platform}\n"}
    record = "".join(
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},{len(text.encode())}\n"
        for name, text in files.items()) + f"msgspec-{version}.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in {**files, f"msgspec-{version}.dist-info/RECORD": record}.items():
            z.writestr(name, text)
    return path


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the script with a stand-in check and CUDA tests that pass, and a
    Python on which msgspec does not import until the script's install folder is put
    before it on ``PYTHONPATH``."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "device_check.sh", repo / "scripts")
    (repo / "scripts" / "gpu_check.py").write_text(
        "import argparse, sys\n"
        "def build_parser():\n"
        "    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--output'); p.add_argument('--budget-s')\n"
        "    return p\n"
        "if __name__ == '__main__':\n"
        "    import msgspec; print('msgspec', msgspec.VERSION)\n")
    (repo / "tests" / "engine").mkdir(parents=True)
    for name in ("test_cuda_step.py", "test_device_inputs.py"):
        (repo / "tests" / "engine" / name).write_text("def test_it():\n    pass\n")
    (repo / "wheels").mkdir()
    blocked = tmp_path / "no_msgspec"
    blocked.mkdir()
    (blocked / "msgspec.py").write_text("raise ImportError('msgspec')\n")
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{blocked}" '
                      f'exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return repo, python


def _run(repo: Path, python: Path, out: Path):
    env = dict(os.environ, PYTHON=str(python), TESTS_LIMIT_S="60", TMPDIR=str(out.parent))
    env.pop("DEADLINE_S", None)
    env.pop("PYTHONPATH", None)
    return subprocess.run(["bash", str(repo / "scripts" / "device_check.sh"), str(out)],
                          capture_output=True, text=True, env=env, cwd=repo, timeout=180)


def test_only_the_running_pythons_wheels_are_installed(tmp_path):
    repo, python = _repo(tmp_path)
    _wheel(repo / "wheels", "1.0", TAG, _platform())
    _wheel(repo / "wheels", "2.0", OTHER, _platform())  # another Python's, newer
    done = _run(repo, python, tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"installed from wheels/ for {TAG}: msgspec-1.0"
    assert "msgspec 1.0" in lines
    # the check's heading: the budget the deadline leaves, no option after it
    assert any(re.fullmatch(r"== scripts/gpu_check.py --budget-s \d+", ln) for ln in lines), lines


def test_wheels_for_other_pythons_only_are_refused_naming_them(tmp_path):
    repo, python = _repo(tmp_path)
    wheel = _wheel(repo / "wheels", "2.0", OTHER, _platform())
    done = _run(repo, python, tmp_path / "out")
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"device_check.sh: msgspec is missing from {python} and wheels/ holds no "
        f"wheel for it ({TAG}): {wheel.name}\n")
