"""``scripts/device_check.sh`` takes an abi3 wheel only for the CPython it was built for
and newer ones (``cp312-abi3`` needs 3.12 or later), and refuses, naming each package
the running Python lacks, when ``wheels/`` holds no wheel of it for that Python. A
``cp3(Y+1)-abi3`` wheel passed the filter on a ``cp3Y`` Python: pip then refused it
(``Could not find a version that satisfies the requirement ...``) and the script said
only that installing failed, or, the package having no wheel at all, installed the
others and said nothing of the one missing."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MINOR = sys.version_info[1]
TAG = f"cp3{MINOR}"
NEWER = f"cp3{MINOR + 1}"  # the next CPython's abi3
OLDER = f"cp3{MINOR - 5}"  # an older CPython's abi3, which this one takes


def _platform() -> str:
    from pip._vendor.packaging.tags import sys_tags

    return next(t.platform for t in sys_tags() if t.interpreter == TAG and t.abi == TAG)


def _wheel(folder: Path, dist: str, module: str, version: str, py: str, abi: str) -> Path:
    """A wheel of a stand-in ``dist`` (``module.VERSION`` is ``version``), tagged
    ``py-abi-PLATFORM``."""
    tag = f"{py}-{abi}-{_platform()}"
    path = folder / f"{dist}-{version}-{tag}.whl"
    info = f"{dist}-{version}.dist-info"
    files = {f"{module}/__init__.py": f"VERSION = {version!r}\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n",
             f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n"
                              f"Tag: {tag}\n"}
    record = "".join(
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},{len(text.encode())}\n"
        for name, text in files.items()) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in {**files, f"{info}/RECORD": record}.items():
            z.writestr(name, text)
    return path


def _repo(tmp_path: Path, blocked: tuple[str, ...]) -> tuple[Path, Path]:
    """A copy of the script with a stand-in check that prints the modules' versions,
    CUDA tests that pass, and a Python on which the modules ``blocked`` do not import
    until the script's install folder is put before them on ``PYTHONPATH``."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "device_check.sh", repo / "scripts")
    (repo / "scripts" / "gpu_check.py").write_text(
        "import argparse\n"
        "def build_parser():\n"
        "    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--output'); p.add_argument('--budget-s')\n"
        "    return p\n"
        "if __name__ == '__main__':\n"
        f"    for m in {blocked!r}: print(m, __import__(m).VERSION)\n")
    (repo / "tests" / "engine").mkdir(parents=True)
    for name in ("test_cuda_step.py", "test_device_inputs.py"):
        (repo / "tests" / "engine" / name).write_text("def test_it():\n    pass\n")
    (repo / "wheels").mkdir()
    folder = tmp_path / "blocked"
    folder.mkdir()
    for module in blocked:
        (folder / f"{module}.py").write_text(f"raise ImportError({module!r})\n")
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{folder}" '
                      f'exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return repo, python


def _run(repo: Path, python: Path, out: Path):
    env = dict(os.environ, PYTHON=str(python), TESTS_LIMIT_S="60", TMPDIR=str(out.parent))
    env.pop("DEADLINE_S", None)
    env.pop("PYTHONPATH", None)
    return subprocess.run(["bash", str(repo / "scripts" / "device_check.sh"), str(out)],
                          capture_output=True, text=True, env=env, cwd=repo, timeout=180)


def test_an_abi3_wheel_for_a_newer_python_is_refused_naming_the_package(tmp_path):
    repo, python = _repo(tmp_path, ("msgspec",))
    newer = _wheel(repo / "wheels", "msgspec", "msgspec", "2.0", NEWER, "abi3")
    pure = _wheel(repo / "wheels", "pyperf", "pyperf", "1.0", "py3", "none")
    done = _run(repo, python, tmp_path / "out")
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"device_check.sh: msgspec is missing from {python} and wheels/ holds no "
        f"wheel for it ({TAG}): {newer.name} {pure.name}\n")


def test_every_package_without_a_wheel_is_named(tmp_path):
    repo, python = _repo(tmp_path, ("msgspec", "zmq", "pyperf"))
    wheels = [_wheel(repo / "wheels", "pyzmq", "zmq", "2.0", NEWER, "abi3"),
              _wheel(repo / "wheels", "pyperf", "pyperf", "1.0", "py3", "none")]
    done = _run(repo, python, tmp_path / "out")
    names = " ".join(sorted(w.name for w in wheels))
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"device_check.sh: msgspec and pyzmq are missing from {python} and wheels/ "
        f"holds no wheel for it ({TAG}): {names}\n")


def test_an_abi3_wheel_for_an_older_python_installs(tmp_path):
    repo, python = _repo(tmp_path, ("msgspec",))
    _wheel(repo / "wheels", "msgspec", "msgspec", "1.0", OLDER, "abi3")
    _wheel(repo / "wheels", "msgspec", "msgspec", "2.0", NEWER, "abi3")  # left out
    done = _run(repo, python, tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"installed from wheels/ for {TAG}: msgspec-1.0"
    assert "msgspec 1.0" in lines
