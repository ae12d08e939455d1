"""Copies of the repository for the tests of ``scripts/device_check.sh``: the script
beside a stand-in ``gpu_check.py`` and stand-in CUDA tests, and for its wheel filter,
stand-in wheels and a Python that lacks the packages they hold."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "device_check.sh"
#: the running CPython's wheel tag (``cp312``)
TAG = f"cp{sys.version_info[0]}{sys.version_info[1]}"
#: A stand-in gpu_check.py's head: the options device_check.sh gives it, then its main
#: block, whose body (indented 4) follows.
CHECK_HEAD = '''\
import argparse
import sys
import time
from pathlib import Path


def build_parser():
    parser = argparse.ArgumentParser(prog="gpu_check.py")
    parser.add_argument("--output")
    parser.add_argument("--budget-s")
    return parser


if __name__ == "__main__":
'''


def script_copy(tmp_path: Path, check: str) -> Path:
    """``tmp_path/repo``: a copy of device_check.sh in its ``scripts/``, with ``check``
    (a Python source) as the ``gpu_check.py`` beside it."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, repo / "scripts")
    (repo / "scripts" / "gpu_check.py").write_text(check)
    return repo


def cuda_tests(repo: Path, line: str) -> None:
    """The two CUDA test files device_check.sh runs, each one test whose body is the
    one ``line``."""
    (repo / "tests" / "engine").mkdir(parents=True)
    for name in ("test_cuda_step.py", "test_device_inputs.py"):
        (repo / "tests" / "engine" / name).write_text(f"def test_it():\n    {line}\n")


def stand_in_python(tmp_path: Path, pytest: str) -> Path:
    """``tmp_path/python``: the real Python, except that the environment line is written
    without importing torch and ``-m pytest`` runs the shell command ``pytest``."""
    python = tmp_path / "python"
    python.write_text(f"""#!/bin/sh
case "$1 $2" in
    "-c import sys, torch;"*) echo "python (stand-in)"; exit 0 ;;
    "-m pytest") {pytest} ;;
esac
exec {sys.executable} "$@"
""")
    python.chmod(0o755)
    return python


def script_env(python: Path, tmp: Path, **env_vars: str) -> dict[str, str]:
    """This process's environment for device_check.sh: ``python`` its PYTHON, the CUDA
    tests' limit 60 s, no deadline, its temporary folders in ``tmp``; then
    ``env_vars``."""
    env = dict(os.environ, PYTHON=str(python), TESTS_LIMIT_S="60", TMPDIR=str(tmp),
               **env_vars)
    env.pop("DEADLINE_S", None)
    return env


def platform() -> str:
    """The platform part of the running CPython's own wheel tags."""
    from pip._vendor.packaging.tags import sys_tags

    return next(t.platform for t in sys_tags() if t.interpreter == TAG and t.abi == TAG)


def wheel(folder: Path, dist: str, module: str, version: str, tag: str) -> Path:
    """A wheel of a stand-in ``dist`` (``module.VERSION`` is ``version``), tagged ``tag``
    (``PY-ABI-PLATFORM``)."""
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


def wheels_repo(tmp_path: Path, blocked: tuple[str, ...]) -> tuple[Path, Path]:
    """A copy of the script with an empty ``wheels/``, a stand-in check that prints the
    modules' versions, CUDA tests that pass, and a Python on which the modules
    ``blocked`` do not import until the script's install folder is put before them on
    ``PYTHONPATH``."""
    repo = script_copy(tmp_path, (
        "import argparse\n"
        "def build_parser():\n"
        "    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--output'); p.add_argument('--budget-s')\n"
        "    return p\n"
        "if __name__ == '__main__':\n"
        f"    for m in {blocked!r}: print(m, __import__(m).VERSION)\n"))
    cuda_tests(repo, "pass")
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


def run_wheels_repo(repo: Path, python: Path, out: Path) -> subprocess.CompletedProcess:
    """The copy of device_check.sh in ``repo`` run into ``out`` with ``python``, no
    deadline and no ``PYTHONPATH`` of this process's, its temporary folders beside
    ``out``."""
    env = script_env(python, out.parent)
    env.pop("PYTHONPATH", None)
    return subprocess.run(["bash", str(repo / "scripts" / "device_check.sh"), str(out)],
                          capture_output=True, text=True, env=env, cwd=repo, timeout=180)
