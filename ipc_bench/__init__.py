"""ipc-bench: the scheduler <-> model-runner IPC benchmark harness.

Importing the package turns off the writing of bytecode (``sys.dont_write_bytecode``)
in a process started under a file-size limit (``ulimit -f``, ``RLIMIT_FSIZE``):
CPython's importlib writes a module's ``.pyc`` in one ``write`` whose count it does not
check (``importlib._bootstrap_external._write_atomic``, CPython 3.10-3.13), so a module
compiled under the limit, its ``.pyc`` missing or older than its source, leaves a
``.pyc`` cut at the limit, and every later import of that module, with or without the
limit, fails with ``EOFError: marshal data too short``. The package's modules are then
compiled in memory, as with ``PYTHONDONTWRITEBYTECODE``; the processes a run starts
import the package first and inherit the limit, so they do the same.
"""

import resource as _resource
import sys as _sys

if _resource.getrlimit(_resource.RLIMIT_FSIZE)[0] != _resource.RLIM_INFINITY:
    _sys.dont_write_bytecode = True
