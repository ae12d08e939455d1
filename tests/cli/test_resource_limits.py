"""A case stopped by a resource limit (a thread that cannot start, no memory) is said
in one line naming the limit, exit 1, with no traceback: it is the machine's limit, not
a bug (a thread limit or ``ulimit -v`` once printed a traceback and "internal error")."""

from __future__ import annotations

import errno
import json
import os

import pytest

from ipc_bench import cli
from ipc_bench.cli import execute
from ipc_bench.errors import file_size_text, resource_shortage_text

ARGS = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
        "--warmup-steps", "2", "--codecs", "msgpack", "--policies", "send",
        "--no-single-process", "--quiet"]


@pytest.mark.parametrize("exc, words", [
    (RuntimeError("can't start new thread"),
     "cannot start a thread: the process is at a resource limit: ulimit -v 186 MiB, "
     "with 182 MiB in use and a thread's stack reserving 8 MiB more (ulimit -s); raise "
     "it"),
    (MemoryError(),
     "out of memory (MemoryError): a memory limit (ulimit -v, a container's) or the "
     "machine's memory is too small for this case")])
def test_a_case_stopped_by_a_resource_limit_says_so_in_one_line(exc, words, tmp_path,
                                                                 monkeypatch, capsys):
    def limited(*args, **kwargs):
        raise exc

    monkeypatch.setattr(execute, "run_case", limited)
    _limits(monkeypatch, space=186 * 2**20, vm_size=182 * 2**20)
    run = tmp_path / "r"
    assert cli.main(ARGS + ["--output", str(run)]) == 1
    err = capsys.readouterr().err
    assert err == (f"bench.py: error: num_running=4/send/msgpack#0: {words}; run folder "
                   f"(nothing measured): {run}\n")
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["problems"]) == (
        "failed", [f"num_running=4/send/msgpack#0: {words}"])


def _limits(monkeypatch, nproc=None, user_threads=None, pids=None, space=None,
            vm_size=None, stack=8 * 2**20, uid=1000):
    """The process's limits (``None``: not set) and the figures in use, as
    ``errors.thread_limit_text`` reads them."""
    import resource

    from ipc_bench import errors

    inf, real = resource.RLIM_INFINITY, resource.getrlimit
    values = {resource.RLIMIT_NPROC: nproc, resource.RLIMIT_AS: space,
              resource.RLIMIT_STACK: stack}

    def getrlimit(which):
        if which not in values:  # the descriptors' limit, read by the run itself
            return real(which)
        return (inf if values[which] is None else values[which], inf)

    monkeypatch.setattr(errors.resource, "getrlimit", getrlimit)
    monkeypatch.setattr(errors, "_user_threads", lambda: user_threads)
    monkeypatch.setattr(errors, "_cgroup_pids", lambda: pids)
    monkeypatch.setattr(errors, "_vm_size", lambda: vm_size)
    monkeypatch.setattr(errors.os, "getuid", lambda: uid)


@pytest.mark.parametrize("limits, words", [
    (dict(nproc=4096, user_threads=4090, space=2**34, vm_size=2**30),
     "the process is at a resource limit: ulimit -u 4,096, with 4,090 processes and "
     "threads of this user seen; raise it"),
    (dict(nproc=96_362, user_threads=120, pids=(512, 510)),
     "the process is at a resource limit: a control-group pids limit of 512, with 510 in "
     "use; raise it"),
    (dict(pids=(512, 500), space=200 * 2**20, vm_size=190 * 2**20),
     "the process is at one of its resource limits: a control-group pids limit of 512, "
     "with 500 in use; ulimit -v 200 MiB, with 190 MiB in use and a thread's stack "
     "reserving 8 MiB more (ulimit -s); raise the one it reached"),
    (dict(nproc=96_362, user_threads=120),
     "no limit set on this process looks reached (ulimit -u 96,362, with 120 processes "
     "and threads of this user seen): the system's threads (kernel.threads-max) or "
     "memory may have run out"),
    (dict(nproc=200, user_threads=199, uid=0),  # root's ulimit -u is not enforced
     "no ulimit -u, ulimit -v or pids limit applies to this process: the system's threads "
     "(kernel.threads-max) or memory ran out"),
    (dict(space=64 * 2**20, vm_size=62 * 2**20, stack=None),  # glibc's 2 MiB stack
     "the process is at a resource limit: ulimit -v 64 MiB, with 62 MiB in use and a "
     "thread's stack reserving 2 MiB more (ulimit -s); raise it"),
    (dict(),
     "no ulimit -u, ulimit -v or pids limit applies to this process: the system's threads "
     "(kernel.threads-max) or memory ran out")])
def test_a_thread_that_cannot_start_names_the_limit_it_reached(limits, words, monkeypatch):
    from ipc_bench.errors import thread_limit_text

    _limits(monkeypatch, **limits)
    assert thread_limit_text() == f"cannot start a thread: {words}"


@pytest.mark.parametrize("v2", [True, False])
def test_the_tightest_pids_limit_of_the_group_and_its_parents_is_read(v2, tmp_path,
                                                                      monkeypatch):
    """A systemd user slice's TasksMax sits above the session's scope, whose own
    pids.max is max: the slice's limit is the one read (cgroup v2, and v1's pids
    hierarchy)."""
    from pathlib import Path

    from ipc_bench import errors

    root = tmp_path / ("sys/fs/cgroup" if v2 else "sys/fs/cgroup/pids")
    scope = root / "user.slice/user-1000.slice/session-3.scope"
    scope.mkdir(parents=True)
    for folder, limit, current in ((scope, "max", 40), (scope.parent, "300", 290),
                                   (scope.parent.parent, "5000", 400)):
        (folder / "pids.max").write_text(f"{limit}\n")
        (folder / "pids.current").write_text(f"{current}\n")
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/cgroup").write_text(
        ("0::" if v2 else "5:pids:") + "/user.slice/user-1000.slice/session-3.scope\n"
        "2:cpu,cpuacct:/\n")
    monkeypatch.setattr(errors, "Path", lambda p: Path(f"{tmp_path}{p}"))
    assert errors._cgroup_pids() == (300, 290)
    (scope.parent / "pids.max").write_text("max\n")
    assert errors._cgroup_pids() == (5000, 400)
    (scope.parent.parent / "pids.max").write_text("max\n")
    assert errors._cgroup_pids() is None


def test_the_limits_in_use_are_read_from_proc():
    from ipc_bench import errors

    import threading

    stop = threading.Event()
    extra = [threading.Thread(target=stop.wait) for _ in range(3)]
    for t in extra:
        t.start()
    try:
        # every thread of this process is counted, the 3 waiting ones included (a count
        # before them, compared with one after, moves with the other processes the test
        # workers start and end meanwhile)
        mine = len(os.listdir("/proc/self/task"))
        assert mine >= 4 and errors._user_threads() >= mine
    finally:
        stop.set()
        for t in extra:
            t.join()
    assert 2**20 < errors._vm_size() < 2**40  # this interpreter's address space


def test_other_errors_are_not_called_a_limit():
    assert resource_shortage_text(RuntimeError("dictionary changed size")) is None
    assert resource_shortage_text(ValueError("can't start new thread")) is None


#: Runs bench.py as ``python bench.py`` does, with an address-space limit (KiB, or
#: none) and an import of the harness that fails as an allocation under ``ulimit -v``
#: does (a MemoryError, or CPython's SystemError), at any machine's memory figures.
_FAILING_IMPORT = """
import resource, runpy, sys
kib, error = int(sys.argv[1]), sys.argv[2]
if kib:
    resource.setrlimit(resource.RLIMIT_AS, (kib * 1024, resource.RLIM_INFINITY))
class Fail:
    def find_spec(self, name, path=None, target=None):
        if name == "ipc_bench.cli.execute":
            raise {"memory": MemoryError(), "system": SystemError(
                "error return without exception set"), "value": ValueError("a bug"),
                   "map": ImportError("libscipy_openblas64_.so: failed to map segment "
                                      "from shared object")}[error]
sys.meta_path.insert(0, Fail())
sys.argv = ["bench.py", "--scenario", "decode-steady", "--output", "/nonexistent/x"]
runpy.run_path("bench.py", run_name="__main__")
"""


def _failing_start(kib: int, error: str):
    import subprocess
    import sys
    from pathlib import Path

    return subprocess.run([sys.executable, "-c", _FAILING_IMPORT, str(kib), error],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("kib, error, exc", [(64 * 2**20, "memory", "MemoryError"),
                                             (64 * 2**20, "system", "SystemError"),
                                             (64 * 2**20, "map", "ImportError")])
def test_an_import_out_of_memory_under_ulimit_v_says_so_in_one_line(kib, error, exc):
    proc = _failing_start(kib, error)
    assert (proc.returncode, proc.stderr) == (1, (
        f"bench.py: error: out of memory ({exc}): the address-space limit of 65,536 MiB "
        "(ulimit -v) is too small for bench.py; raise it\n"))


def test_other_startup_errors_keep_their_traceback():
    # a SystemError with no memory limit, or any other error, is a bug
    for error, last in (("system", "SystemError: error return without exception set"),
                        ("value", "ValueError: a bug"),
                        ("map", "ImportError: libscipy_openblas64_.so: failed to map "
                                "segment from shared object")):
        proc = _failing_start(0, error)
        assert proc.returncode == 1
        assert proc.stderr.startswith("Traceback (most recent call last):")
        assert proc.stderr.rstrip().endswith(last)
    proc = _failing_start(0, "memory")
    assert (proc.returncode, proc.stderr) == (1, (
        "bench.py: error: out of memory (MemoryError): a memory limit (a container's) or "
        "the machine's memory is too small for bench.py; raise it\n"))


@pytest.mark.parametrize("limit,code,words", [
    (40 * 1024, errno.EFBIG, "File too large (the file-size limit, ulimit -f 40: 40 KiB a file)"),
    (2 ** 40, errno.EFBIG, "File too large (the file-size limit, ulimit -f 1073741824: "
                           "1,073,741,824 KiB a file)"),
    (1000, errno.EFBIG, "File too large (the file-size limit: 1,000 bytes a file)"),
    (None, errno.EFBIG, None),  # no limit: the file system's own EFBIG, its words alone
    (40 * 1024, errno.ENOSPC, None),
])
def test_a_write_past_the_file_size_limit_names_it(limit, code, words, monkeypatch):
    import resource

    soft = resource.RLIM_INFINITY if limit is None else limit
    monkeypatch.setattr(resource, "getrlimit", lambda which: (soft, resource.RLIM_INFINITY))
    assert file_size_text(OSError(code, os.strerror(code))) == words
