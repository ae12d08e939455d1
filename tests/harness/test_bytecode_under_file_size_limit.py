"""A process that imports the package under a file-size limit leaves no cut-short
``.pyc`` behind (``ipc_bench/__init__.py``): CPython's importlib does not check the
count of its one ``write`` of a ``.pyc``, so a module compiled under ``ulimit -f`` used
to be cut at the limit and fail every later import with ``EOFError: marshal data too
short``."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import ipc_bench

PACKAGE = Path(ipc_bench.__file__).resolve().parent
LIMIT_BYTES = 4096  # ipc_bench/errors.py compiles to about 20 kB; __init__'s .pyc fits


def _copy_of_the_package(tmp_path: Path) -> Path:
    root = tmp_path / "copy"
    shutil.copytree(PACKAGE, root / "ipc_bench", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _import_errors(root: Path, limit: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(root)

    def preexec():
        resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT_BYTES, LIMIT_BYTES))

    return subprocess.run([sys.executable, "-c", "import ipc_bench.errors, sys; "
                           "print(ipc_bench.errors.__file__, sys.dont_write_bytecode)"],
                          env=env, cwd=root, capture_output=True, text=True, timeout=60,
                          preexec_fn=preexec if limit else None)


def test_a_module_compiled_under_the_limit_writes_no_bytecode(tmp_path):
    root = _copy_of_the_package(tmp_path)
    limited = _import_errors(root, limit=True)
    assert limited.returncode == 0, limited.stderr
    assert limited.stdout == f"{root / 'ipc_bench' / 'errors.py'} True\n"
    cache = root / "ipc_bench" / "__pycache__"
    # the package's own .pyc is written as it is imported, before its first statement
    assert sorted(p.name.split(".")[0] for p in cache.iterdir()) == ["__init__"]
    # a later import without the limit compiles and caches the module whole
    unlimited = _import_errors(root, limit=False)
    assert (unlimited.returncode, unlimited.stderr) == (0, "")
    assert unlimited.stdout == f"{root / 'ipc_bench' / 'errors.py'} False\n"
    (pyc,) = cache.glob("errors.*.pyc")
    assert pyc.stat().st_size > LIMIT_BYTES
