"""Suite-wide fixtures: the temporary folder every test and process of the session uses.

``session_tmpdir`` points ``TMPDIR`` (and ``tempfile``) at a folder under pytest's base
temporary folder for the whole session, so the ``ipc-bench-*`` socket folders of every
run the suite starts land there and not in ``/tmp``, which other users' runs share;
after the last test it fails the session if any ``ipc-bench-*`` folder is left in it,
naming each with the test after which it first appeared (``leftover_witness``).
It also sets ``IPC_BENCH_KEEP_LEFTOVERS`` (``leftovers.KEEP_ENV``) for the session, so no
run removes a folder another run of the session left (``leftovers.sweep``): a folder a
run fails to remove stays to fail the session; a test of the sweep unsets it.
A test that checks that ``bench.py`` removes its socket folders gives that process the
``bench_tmpdir`` fixture's folder as ``TMPDIR`` instead, and a test that SIGKILLs it (it
then cannot remove them) ``killed_bench_tmpdir``'s: its own ``tmp_path``, or a short
folder under ``/tmp`` where socket paths under ``tmp_path`` would pass the 107-byte limit.
TorchInductor's compiled kernels are cached in one folder for the whole session, and
its precompiled C++ header in another (``_shared_precompiled_headers``).

Matplotlib's config and cache folder (``MPLCONFIGDIR``) is one folder of the session's,
``matplotlib`` in pytest's base temporary folder, for every xdist worker and every
process they start (``_matplotlib_config_dir``), set always, a ``MPLCONFIGDIR`` of the
user's included: the suite is isolated from the user's ``~/.cache/matplotlib``, whose
font list, once rebuilt while matplotlib's own fonts were missing (a virtual
environment being deleted), made every figure-drawing script print ``findfont: Font
family ['STIXGeneral'] not found`` lines on stderr. Its font list is built once, before
any test (``_build_font_list``), where the workers would each build it racing
(matplotlib locks its writers, not its readers) and a build past 5 s prints
``Matplotlib is building the font cache`` on the stderr of the test's process.

``ring_segments`` (autouse) records the segment name and ring folder of every
shared-memory ring writer (``shm_ring.RingWriter``) this process makes during a test and
fails the test if the segment is still in ``/dev/shm`` or the folder still exists after
it (and removes them): only this process's own writers count, so the segments of another
run on the machine, or of a process the test started, are never blamed on it. A ring writer's folder (``ring-XXXXXXXX``) left in the session's
``TMPDIR``, by this process or by one it started, fails the session like a socket folder.

The worker's heap is frozen (``gc.freeze``) from the start of each test's setup to the
end of its teardown (``pytest_runtest_setup``, ``pytest_runtest_teardown``), so also
while a module- or session-scoped fixture makes its runs: the full collections a case
makes in process (``end_warmup``, the floor) then walk the test's own objects, not
pytest's and every imported library's (0.1-1.2 s each in a worker late in the suite;
with torch imported, 33 collections of one module's fixture runs took 4.2 s unfrozen);
the harness leaves a heap its caller froze frozen (``memory.freeze_heap``).
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

import pytest

from ipc_bench.wire import shm_ring
from ipc_bench.wire.leftovers import KEEP_ENV, RING_FOLDER_PREFIX, SHM_DIR
from ipc_bench.wire.transport import IPC_PATH_MAX_BYTES

#: Bytes a run adds to its ``TMPDIR`` in its longest socket path (a shared-memory
#: ring's overflow socket; a pid has at most 7 digits: Linux's ``pid_max`` <= 4194304).
SOCKET_SUFFIX_BYTES = len("/ipc-bench-4194304-XXXXXXXX/ring-XXXXXXXX/overflow")


def _inductor_cache_dir(tmp_path_factory) -> Path:
    """One TorchInductor cache for the whole session, shared by every xdist worker and
    every process they start: compiled flex-attention kernels are built once, not once
    per worker (its default lives in ``TMPDIR``, which each worker points elsewhere).
    Under xdist each worker's base temporary folder is a ``popen-gwN`` folder of the
    session's."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    cache = root / "torchinductor"
    cache.mkdir(exist_ok=True)
    return cache


def _shared_precompiled_headers(tmp: Path, tmp_path_factory) -> None:
    """TorchInductor's precompiled C++ header (about 8 s of CPU to build) is kept in
    ``TMPDIR/torchinductor_USER/precompiled_headers`` (its ``default_cache_dir``, not
    ``TORCHINDUCTOR_CACHE_DIR``), and each xdist worker has its own ``TMPDIR``: that
    folder in ``tmp`` is made a link to one folder of the session's, so the header is
    built once for every worker and every process they start with that ``TMPDIR``."""
    import getpass
    import re

    try:
        user = getpass.getuser()
    except (KeyError, ModuleNotFoundError, OSError):
        user = f"uid_{os.getuid()}"
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    shared = root / "torchinductor_headers"
    shared.mkdir(exist_ok=True)
    own = tmp / ("torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user))
    own.mkdir(exist_ok=True)
    with contextlib.suppress(FileExistsError):
        (own / "precompiled_headers").symlink_to(shared, target_is_directory=True)


def _matplotlib_config_dir(config) -> Path:
    """``MPLCONFIGDIR`` of the session: ``matplotlib`` in pytest's base temporary folder,
    shared by every xdist worker as ``_inductor_cache_dir`` shares its folder (a
    worker's base temporary folder is a ``popen-gwN`` folder of the session's)."""
    base = config._tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / "matplotlib"
    folder.mkdir(exist_ok=True)
    return folder


def _build_font_list() -> Optional[subprocess.Popen]:
    """Start a process that builds matplotlib's font list (``fontlist-vNNN.json``) in
    ``MPLCONFIGDIR``, or ``None`` where none starts: the caller waits for it."""
    try:
        return subprocess.Popen([sys.executable, "-c", "import matplotlib.font_manager"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return None  # matplotlib builds it at its first use


def _terminal_dispositions() -> None:
    """Give SIGINT, SIGTERM and SIGHUP this process's default handling where its
    launcher left them ignored (``nohup``'s SIGHUP, a shell script's background job's
    SIGINT): every process the suite starts inherits it, so that a test that signals
    ``bench.py`` finds it as a terminal's job would, not ignoring the signal as
    ``signals.install`` leaves an inherited ``SIG_IGN``."""
    defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL,
                signal.SIGHUP: signal.SIG_DFL}
    for sig, default in defaults.items():
        if signal.getsignal(sig) is signal.SIG_IGN:
            signal.signal(sig, default)


@pytest.hookimpl(trylast=True)  # after pytest's own, which makes _tmp_path_factory
def pytest_configure(config):
    """Point ``MPLCONFIGDIR`` at the session's folder (``_matplotlib_config_dir``, in
    every process; its font list built in the controller while the modules compile,
    before any worker starts). Undo inherited ignored signals
    (``_terminal_dispositions``, in every process), and set ``TORCHINDUCTOR_VEC_ISA_OK=1`` (unless set) for every process of the session:
    TorchInductor then takes the vector instruction sets this CPU's flags name as
    usable, where before its first CPU kernel each process built and loaded a probe of
    each (avx512, avx2, ...: 8 s of CPU the first time in a session, a child process
    per set after); the probes of their extensions (bf16, VNNI, AMX) still run. Then
    compile the project's modules to ``__pycache__`` once, before any test (in the
    controller only, under xdist). Where ``PYTHONDONTWRITEBYTECODE`` is set, no process
    writes bytecode, so every ``bench.py``, runner and stage process the suite starts would
    compile the package from source again (3 s a process on a slow 2-core machine);
    ``compileall`` writes it anyway, and every process then reads it."""
    os.environ["MPLCONFIGDIR"] = str(_matplotlib_config_dir(config))
    _terminal_dispositions()
    os.environ.setdefault("TORCHINDUCTOR_VEC_ISA_OK", "1")  # (read at its config's import)
    if hasattr(config, "workerinput"):
        return
    fonts = _build_font_list()
    import compileall
    root = Path(__file__).resolve().parent.parent
    for folder in ("ipc_bench", "scenarios", "scripts"):
        if (root / folder).is_dir():  # (not in a copy of this file elsewhere)
            compileall.compile_dir(str(root / folder), quiet=1)
    if config.getoption("numprocesses", None) and config.getoption("assertmode") == "rewrite":
        _rewrite_test_modules(config, Path(__file__).resolve().parent)
    if fonts is not None:
        try:
            fonts.wait(timeout=300)
        except subprocess.TimeoutExpired:
            fonts.kill()
            fonts.wait()


def _rewrite_test_modules(config, tests: Path) -> None:
    """Write pytest's assertion-rewritten bytecode of every test module and conftest
    under ``tests`` (``__pycache__/NAME.cpython-3X-pytest-V.pyc``, which pytest reads
    where it exists) once, in the xdist controller, before the workers start: each
    worker imports every module to collect the session, and rewriting their asserts
    takes 6 s of CPU a worker on a 2-core machine; the workers, started at once on a
    fresh checkout, would each rewrite them all, and none writes them under
    ``PYTHONDONTWRITEBYTECODE``. A module already written is left as it is; any failure
    leaves the workers to rewrite it as before."""
    from _pytest.assertion import rewrite

    try:
        state = config.stash[rewrite.assertstate_key]
        for fn in sorted([*tests.rglob("test_*.py"), *tests.rglob("conftest.py")]):
            pyc = rewrite.get_cache_dir(fn) / (fn.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(fn, pyc) is None and rewrite.try_makedirs(pyc.parent):
                source_hash, co = rewrite._rewrite_test(fn, config)
                rewrite._write_pyc(state, co, source_hash, pyc)
    except (AttributeError, ImportError, KeyError, OSError, SyntaxError, TypeError):
        return


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    """The worker's heap frozen before the test's fixtures are set up, its module- and
    session-scoped ones included (module docstring)."""
    gc.freeze()
    yield


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """The heap thawed after the test's fixtures are torn down."""
    yield
    gc.unfreeze()


@pytest.fixture(scope="session", autouse=True)
def session_tmpdir(tmp_path_factory):
    """``TMPDIR`` for the session (short: socket paths are limited to 107 bytes), and
    ``IPC_BENCH_KEEP_LEFTOVERS=1``; after the session, no ``ipc-bench-*`` socket folder
    and no ``ring-*`` ring folder may remain in it. TorchInductor's cache goes to one folder for the session
    (``_inductor_cache_dir``) unless ``TORCHINDUCTOR_CACHE_DIR`` is set already."""
    tmp = tmp_path_factory.mktemp("tmp")
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(_inductor_cache_dir(tmp_path_factory)))
    _shared_precompiled_headers(tmp, tmp_path_factory)
    before = {name: os.environ.get(name) for name in ("TMPDIR", KEEP_ENV)}
    os.environ.update({"TMPDIR": str(tmp), KEEP_ENV: "1"})
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    try:
        yield tmp
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        tempfile.tempdir = None
    left = [_seen_after(p.name) for p in sorted(tmp.glob("ipc-bench-*"))]
    assert left == [], f"the suite left socket folders in {tmp}: {', '.join(left)}"
    rings = [_seen_after(p.name) for p in sorted(tmp.glob(RING_FOLDER_PREFIX + "*"))]
    assert rings == [], f"the suite left ring folders in {tmp}: {', '.join(rings)}"


#: Socket and ring folder name in the session's ``TMPDIR`` -> the test after which it
#: was first seen there (``leftover_witness``).
_FIRST_SEEN: dict[str, str] = {}


def _seen_after(name: str) -> str:
    return f"{name} (first seen after {_FIRST_SEEN.get(name, 'the last test')})"


@pytest.fixture(autouse=True)
def leftover_witness(request, session_tmpdir):
    """After each test, note which socket and ring folders in the session's ``TMPDIR``
    are there for the first time (``_FIRST_SEEN``): a folder left at the session's end
    is then named with the test that left it, not only the last test of its worker."""
    yield
    for pattern in ("ipc-bench-*", RING_FOLDER_PREFIX + "*"):
        for path in session_tmpdir.glob(pattern):
            _FIRST_SEEN.setdefault(path.name, request.node.nodeid)


class RingSegments:
    """What the ring writers of this process made since the current test began:
    ``created``, (ring folder, segment name) pairs in order."""

    def __init__(self):
        self.created: list[tuple[str, str]] = []

    def left(self) -> list[str]:
        """The paths of ``created`` still there: each segment in ``/dev/shm``, then each
        ring folder."""
        segments = [os.path.join(SHM_DIR, name) for _, name in self.created]
        folders = [folder for folder, _ in self.created]
        return [path for path in segments + folders if os.path.lexists(path)]

    def check(self) -> None:
        """Fail the test (``pytest.fail``), naming the paths ``left()`` finds, after
        removing them (so that one leak fails one test, not every later run); forgets
        ``created``."""
        left, self.created = self.left(), []
        for path in left:
            if path.startswith(SHM_DIR + "/"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            else:
                shutil.rmtree(path, ignore_errors=True)
        if left:
            pytest.fail(f"the test left what its shared-memory ring writers made (removed "
                        f"now): {', '.join(left)}", pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def _ring_segment_log():
    """One ``RingSegments`` for the session, filled by a wrapper of
    ``shm_ring._record_segment``, which each ``RingWriter`` calls with its folder and
    segment name before it creates the segment (readers call nothing)."""
    log, record = RingSegments(), shm_ring._record_segment

    def recording(folder: str, name: str) -> None:
        record(folder, name)
        log.created.append((folder, name))

    shm_ring._record_segment = recording
    try:
        yield log
    finally:
        shm_ring._record_segment = record


@pytest.fixture(autouse=True)
def ring_segments(_ring_segment_log):
    """Every test: the segments and ring folders this process's ring writers make during
    it must be gone after it (``RingSegments.check``: an error at the test's teardown)."""
    _ring_segment_log.created = []
    yield _ring_segment_log
    _ring_segment_log.check()


def _bench_tmpdir(tmp_path: Path, check_left: bool):
    if len(os.fsencode(str(tmp_path))) + SOCKET_SUFFIX_BYTES <= IPC_PATH_MAX_BYTES:
        yield tmp_path
        return
    short = Path(tempfile.mkdtemp(prefix="ipc-test-", dir="/tmp"))
    try:
        yield short
        left = sorted(p.name for p in short.glob("ipc-bench-*"))
    finally:
        shutil.rmtree(short, ignore_errors=True)
    if check_left:
        assert left == [], f"the test left socket folders in {short}: {', '.join(left)}"


@pytest.fixture
def bench_tmpdir(tmp_path):
    """``TMPDIR`` for a ``bench.py`` process of one test: ``tmp_path`` when the run's socket
    paths under it fit in ``IPC_PATH_MAX_BYTES`` (107 bytes), else a fresh short folder
    under ``/tmp``, removed after the test, which then fails if an ``ipc-bench-*`` socket
    folder was left in it."""
    yield from _bench_tmpdir(tmp_path, check_left=True)


@pytest.fixture
def killed_bench_tmpdir(tmp_path):
    """``bench_tmpdir`` for a ``bench.py`` process the test SIGKILLs (which leaves its
    socket folder): the short folder is removed after the test without that check."""
    yield from _bench_tmpdir(tmp_path, check_left=False)


@pytest.fixture(scope="session")
def shared_small_run(tmp_path_factory) -> Path:
    """One small real run (``analysis_run.make_small_run``: a folder named ``small-run``)
    for every test of the session that reads it (``_session_run``: the loader, plots and
    report tests, the notebook's): tests only read it, and copy it to change it.
    (``test_cut_short`` makes its own, another run.)"""
    from analysis_run import make_small_run

    def make(run: Path) -> str:
        make_small_run(run)
        return ""

    return _session_run(tmp_path_factory, "small-shared", "small-run", make)[0]


def _session_run(tmp_path_factory, name: str, folder: str, make) -> tuple[Path, str]:
    """A run made once for the whole session, every xdist worker included: the first
    worker that asks calls ``make(path) -> stdout`` under a lock in the session's base
    temporary folder (the run in ``NAME/FOLDER``, its stdout written to
    ``NAME/stdout.txt`` last, so a run that failed is made again), the others wait for
    it and read it. Returns (path, stdout). Tests only read the folder, and copy it to
    change it."""
    import fcntl

    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    root.mkdir(exist_ok=True)
    run, out = root / folder, root / "stdout.txt"
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.exists():
            shutil.rmtree(run, ignore_errors=True)
            out.write_text(make(run))
    return run, out.read_text()


def _pp_run(tmp_path_factory) -> tuple[Path, str]:
    from analysis_run import PP_RUN_ARGS, run_bench

    return _session_run(tmp_path_factory, "pp-shared", "pp",
                        lambda run: run_bench(run, PP_RUN_ARGS))


@pytest.fixture(scope="session")
def shared_pp_run(tmp_path_factory) -> Path:
    """One real ``--pp 1,2`` run (``analysis_run.PP_RUN_ARGS``: 4 running, 20 steps,
    msgpack, send and direct; a folder named ``pp``) for the whole session
    (``_session_run``): the pipeline bytes figure's tests, the figure offsets' pipeline
    bytes figure's, drawn as of 8 and 16 running, the nullable columns' beside a --tp
    and a steady run, and the pp scenario's report test (``shared_pp_stdout``): its four
    cases start six stage processes that import torch, so one run serves them all.
    Tests only read it."""
    return _pp_run(tmp_path_factory)[0]


@pytest.fixture(scope="session")
def shared_pp_stdout(tmp_path_factory) -> str:
    """The stdout (the tables, ``--quiet``) of ``shared_pp_run``'s run."""
    return _pp_run(tmp_path_factory)[1]


@pytest.fixture(scope="session")
def shared_timed_run(tmp_path_factory) -> tuple[Path, str, str, str]:
    """One real timed replay (6 requests of 8 output tokens, send then cached, msgpack,
    no single-process cases; a folder named ``run``) for the whole session
    (``_session_run``): the latency figures', the ITL notes' and the hand-edited timed
    replay's tests. Tests only read it, and copy it to change it. Returns (folder, its
    stdout, send case id, cached case id)."""
    import json

    from analysis_run import run_bench
    from test_timed_no_floor import write_trace

    def make(run: Path) -> str:
        write_trace(run.parent / "trace.csv")
        return run_bench(run, ["--scenario", "azure-conv-timed", "--trace",
                               str(run.parent / "trace.csv"), "--max-requests", "6",
                               "--codecs", "msgpack", "--warmup-steps", "2",
                               "--no-single-process"])

    run, out = _session_run(tmp_path_factory, "timed-replay", "run", make)
    cases = json.loads((run / "summary.json").read_text())["cases"]
    assert [c["policy"] for c in cases] == ["send", "cached"]
    return run, out, cases[0]["case_id"], cases[1]["case_id"]


@pytest.fixture(scope="session")
def shared_two_case_run(tmp_path_factory) -> Path:
    """One real run of two cases, send then cached (``analysis_run.TWO_CASE_ARGS``: 4
    running, 20 counted steps, msgpack, no floor), for the whole session
    (``analysis_run.shared_run``, as ``_session_run``): the hand-edited summary tests'
    and a dozen other modules' run, each of which made an equal one of its own. Tests
    only read it; a module copies it (``shutil.copytree``) to a folder of its own."""
    from analysis_run import TWO_CASE_ARGS, shared_run

    return shared_run(tmp_path_factory, TWO_CASE_ARGS)


@pytest.fixture(scope="session")
def shared_floor_run(tmp_path_factory) -> Path:
    """``shared_two_case_run``'s run with each case's floor
    (``analysis_run.FLOOR_RUN_ARGS``), made once a session. Tests only read it."""
    from analysis_run import FLOOR_RUN_ARGS, shared_run

    return shared_run(tmp_path_factory, FLOOR_RUN_ARGS)


@pytest.fixture(scope="session")
def shared_three_repetition_run(tmp_path_factory) -> Path:
    """``shared_floor_run``'s run repeated three times
    (``analysis_run.THREE_REPETITION_ARGS``), made once a session. Tests only read it."""
    from analysis_run import THREE_REPETITION_ARGS, shared_run

    return shared_run(tmp_path_factory, THREE_REPETITION_ARGS)


@pytest.fixture(scope="session")
def shared_digest_run(tmp_path_factory) -> Path:
    """One real run of eight cases, 2 and 4 running, send and cached, msgpack and pickle
    (``analysis_run.DIGEST_RUN_ARGS``), made once a session: the token-digest tests'.
    Tests only read it."""
    from analysis_run import DIGEST_RUN_ARGS, shared_run

    return shared_run(tmp_path_factory, DIGEST_RUN_ARGS)


@pytest.fixture(scope="session")
def shared_five_repetition_run(tmp_path_factory) -> Path:
    """One real run of cached against send, 5 repetitions of 10 counted steps
    (``test_arm_order_caveat.GRID`` with ``--repeat 5``), made once a session: the
    arm-order tests' ``five``. Tests only read it."""
    from analysis_run import shared_run
    from test_arm_order_caveat import GRID

    return shared_run(tmp_path_factory, GRID + ["--repeat", "5"])


@pytest.fixture
def handlers_restored():
    """This process's SIGINT / SIGTERM / SIGHUP handlers (and those of the other
    signals ``signals.HANDLED`` routes) put back after a test that interrupts a command
    in process (which leaves them ignored, as a shutting-down bench.py wants)."""
    from ipc_bench.harness.signals import HANDLED  # SIGUSR1 and the others too

    saved = {s: signal.getsignal(s) for s in HANDLED}
    yield
    for s, h in saved.items():
        signal.signal(s, h)
