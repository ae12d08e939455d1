"""A small real run for the analysis tests (loader, plots, report, notebook)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: The run the analysis tests read: two batch sizes, both policies and codecs, plus the
#: single-process baseline cases the scenario adds; about 2 s on 2 cores.
SMALL_RUN_ARGS = ["--scenario", "decode-steady", "--num-running", "4,16", "--steps", "50",
                  "--warmup-steps", "10"]

#: An item of the machine-load note's list (``blocks.machine_load_line``): whether the
#: note is written depends on how busy the machine was while each run ran.
MACHINE_LOAD_ITEM = re.compile(r"- `[^`]+`: (the machine [0-9.]+ % busy|not recorded)")


#: The machine-load note's own line (``blocks.machine_load_blocks``): runs whose busy
#: shares are 10 points apart, or runs that started on a loaded machine.
MACHINE_LOAD_NOTE = re.compile(r"> \*\*Note:\*\* (The machine was busie|Runs? `.+` started "
                               r"on a loaded machine)")


def setting_items(lines: list[str]) -> list[str]:
    """The ``- `` items of a report's Runs section ``lines`` less the machine-load list,
    which a test beside another under ``pytest -n 2`` may or may not get: the runs'
    mean ``machine_busy_pct`` can land 10 points apart or not, a run start on a loaded
    machine or not."""
    return [ln for ln in lines if ln.startswith("- ") and not MACHINE_LOAD_ITEM.match(ln)]


def without_machine_load(lines: list[str]) -> list[str]:
    """A report's Runs section ``lines`` less the machine-load note and its items
    (``setting_items``' reason), every other line kept in order."""
    return [ln for ln in lines if not (MACHINE_LOAD_ITEM.match(ln)
                                       or MACHINE_LOAD_NOTE.match(ln))]


def bench_in_process(args: list) -> subprocess.CompletedProcess:
    """``python bench.py ARGS`` as ``cli.main`` in this process, from the repository root,
    its ``sys.argv`` the command's (the runners, stages and ranks it starts are processes
    as ever): the run folder that command writes, the metadata's command line and folder
    included, and its exit code, stdout and stderr, without a process's start and
    imports (0.55 -> 0.30 CPU-s for a two-case run, 2026-12-06). ``ARGS``: texts or
    paths."""
    import contextlib
    import io

    from ipc_bench import cli

    out, err = io.StringIO(), io.StringIO()
    argv, cwd = sys.argv, os.getcwd()
    sys.argv = ["bench.py", *map(os.fspath, args)]
    os.chdir(REPO)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main()
    finally:
        command, sys.argv = sys.argv, argv
        os.chdir(cwd)
    return subprocess.CompletedProcess(command, code, out.getvalue(), err.getvalue())


def run_bench(path: Path, args: list[str]) -> str:
    """Run ``bench.py ARGS --quiet --output PATH`` (``bench_in_process``); asserts it
    exits 0 and returns its stdout (the tables)."""
    proc = bench_in_process([*args, "--quiet", "--output", path])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


#: A ``--pp 1,2`` run (the ``shared_pp_run`` fixture): one and two stages, send and
#: direct, 4 running requests, msgpack.
PP_RUN_ARGS = ["--scenario", "pp", "--pp", "1,2", "--num-running", "4", "--steps", "20",
               "--warmup-steps", "5", "--codecs", "msgpack"]


#: A run of two cases, send then cached (4 running, 20 counted steps, msgpack), no floor
#: and no single-process case: the ``shared_two_case_run`` fixture's, which the
#: hand-edited summary tests and others copy and edit.
TWO_CASE_ARGS = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
                 "--warmup-steps", "5", "--codecs", "msgpack", "--no-single-process",
                 "--no-floor"]

#: ``TWO_CASE_ARGS`` with each case's floor (``shared_floor_run``).
FLOOR_RUN_ARGS = [a for a in TWO_CASE_ARGS if a != "--no-floor"]

#: ``FLOOR_RUN_ARGS`` three times over, send and cached paired by repetition
#: (``shared_three_repetition_run``).
THREE_REPETITION_ARGS = FLOOR_RUN_ARGS + ["--repeat", "3"]

#: Eight cases: 2 and 4 running, send and cached, msgpack and pickle, no floor and no
#: single-process case (``shared_digest_run``: the token-digest tests').
DIGEST_RUN_ARGS = ["--scenario", "decode-steady", "--num-running", "2,4", "--steps", "20",
                   "--warmup-steps", "5", "--codecs", "msgpack,pickle", "--no-single-process",
                   "--no-floor"]


def shared_run(tmp_path_factory, args: list[str], make=None, kind: str = "") -> Path:
    """The run folder of ``bench.py ARGS`` made once for the whole session, every xdist
    worker included: the first test that asks for ``args`` makes it under a lock in the
    session's base temporary folder (``make(path, args)``, by default ``run_bench``;
    a folder named ``run`` in one named by the hash of ``kind`` and ``args``, marked
    done last, so a run that failed is made again by the next), the others wait for it.
    A ``make`` that writes something else than the run of ``args`` (several runs, say)
    names it by a ``kind`` of its own. Tests only read it; copy it
    (``shutil.copytree``) to change it."""
    import fcntl
    import hashlib

    base = tmp_path_factory.getbasetemp()
    key = hashlib.sha256("\0".join([kind, *args]).encode()).hexdigest()[:16]
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / f"run-{key}"
    root.mkdir(exist_ok=True)
    run, done = root / "run", root / "done"
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(run, ignore_errors=True)
            (make or run_bench)(run, args)
            done.write_text("")
    return run


#: Two runs a report compares (``send_and_both_runs``): send and cached, then send alone.
PAIR_ARGS = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
             "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor", "--no-single-process"]


def send_and_both_runs(tmp_path_factory, base: Path, both: str, send: str) -> Path:
    """Copies in ``base`` of the session's two runs of ``PAIR_ARGS`` (``shared_run``):
    ``both`` (send and cached) and ``send`` (``--policies send``), made one after the
    other as a module made them; returns ``base``."""
    def make(folder: Path, args: list[str]) -> None:
        run_bench(folder / "both", args)
        run_bench(folder / "send", args + ["--policies", "send"])

    pair = shared_run(tmp_path_factory, PAIR_ARGS, make, kind="send-and-both")
    shutil.copytree(pair / "both", base / both)
    shutil.copytree(pair / "send", base / send)
    return base


def make_small_run(path: Path) -> Path:
    """Run ``bench.py`` with ``SMALL_RUN_ARGS`` into ``path``; returns ``path``."""
    run_bench(path, SMALL_RUN_ARGS)
    return path


#: A run of four cases (2 and 4 running, both policies, msgpack) with no floor, ITL or
#: single-process rows: the loader's edge-case tests copy and edit it.
FOUR_CASE_ARGS = ["--scenario", "decode-steady", "--num-running", "2,4", "--steps", "40",
                  "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor",
                  "--no-single-process", "--quiet"]


def make_four_case_run(path: Path) -> Path:
    """Run ``FOUR_CASE_ARGS`` in this process into ``path`` (asserts exit 0); returns
    ``path``."""
    from ipc_bench import cli

    assert cli.main(FOUR_CASE_ARGS + ["--output", str(path)]) == 0
    return path


def four_case_copy(tmp_path_factory, path: Path) -> Path:
    """A copy at ``path`` of the session's run of ``FOUR_CASE_ARGS`` (``shared_run``,
    made in this process by ``make_four_case_run``); returns ``path``."""
    shutil.copytree(shared_run(tmp_path_factory, FOUR_CASE_ARGS,
                               lambda run, _: make_four_case_run(run)), path)
    return path


def copy_as_another_run(run: Path, path: Path, seconds: float = 1.0) -> Path:
    """Copy the run folder ``run`` to ``path`` as another run: its metadata's
    ``start_time_utc`` moved ``seconds`` later (the loader refuses a copy that still
    has its source's, ``results.check_copies``), or, when ``run`` recorded its
    ``end_time_utc``, both moved so that the copy starts ``seconds`` after ``run``
    ended (runs of one host that overlapped in time differ). The first warm-up row of
    each case in ``steps.csv`` waits as many ns longer as the start moved in µs (its
    ``wait_ns`` and ``step_ns``; no figure counts a warm-up step): another run never
    times its steps as this one did (``results.check_copied_steps``). Returns
    ``path``."""
    import datetime
    import json
    import shutil

    shutil.copytree(run, path)
    summary = json.loads((path / "summary.json").read_text())
    md = summary["metadata"]
    start = datetime.datetime.fromisoformat(md["start_time_utc"])
    shift = datetime.timedelta(seconds=seconds)
    if md.get("end_time_utc"):
        end = datetime.datetime.fromisoformat(md["end_time_utc"])
        shift += end - start
        md["end_time_utc"] = (end + shift).isoformat()
    md["start_time_utc"] = (start + shift).isoformat()
    (path / "summary.json").write_text(json.dumps(summary))
    _wait_longer_in_warmup(path / "steps.csv", shift // datetime.timedelta(microseconds=1))
    return path


def copy_without_case_field(run: Path, path: Path, field: str) -> Path:
    """Copy the run folder ``run`` to ``path`` with ``field`` deleted from every case of
    its ``summary.json``, as a run written before the harness recorded that field;
    returns ``path``."""
    import json

    shutil.copytree(run, path)
    summary = json.loads((path / "summary.json").read_text())
    for case in summary["cases"]:
        del case[field]
    (path / "summary.json").write_text(json.dumps(summary))
    return path


def _wait_longer_in_warmup(steps_csv: Path, extra_ns: int) -> None:
    """Add ``extra_ns`` (at least 1) to the ``wait_ns`` and ``step_ns`` of the first
    uncounted row of each case of ``steps_csv``."""
    import csv

    with open(steps_csv, newline="") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)
    done = set()
    for row in rows:
        if row["counted"] == "0" and row["case_id"] not in done:
            done.add(row["case_id"])
            for col in ("wait_ns", "step_ns"):
                row[col] = str(int(row[col]) + max(extra_ns, 1))
    with open(steps_csv, "w", newline="") as f:
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows(rows)


def scale_case_times(run: Path, case_id: str, factor: float) -> None:
    """Make case ``case_id`` of the run folder ``run`` look as if it ran ``factor``
    times slower, consistently, so the loader takes it (``results`` checks a case's
    figures against its rows): every ``*_ns`` value of its ``steps.csv`` rows and of
    its ``summary.json`` entry times ``factor`` (rows: rounded to whole ns), every
    ``*_per_s`` figure over ``factor``, ``wall_s`` times ``factor``. Ratios (shares,
    ``step_ns_block_cv``), bytes, counts and the floor (``floor_*``, from floor.csv)
    are unchanged."""
    import csv
    import json

    with open(run / "steps.csv", newline="") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)
    for row in rows:
        if row["case_id"] == case_id:
            for col in fields:
                if col.endswith("_ns") and row[col] not in ("", "nan"):
                    row[col] = str(round(float(row[col]) * factor))
    with open(run / "steps.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows(rows)
    summary = json.loads((run / "summary.json").read_text())
    case = next(c for c in summary["cases"] if c["case_id"] == case_id)
    for key, value in case.items():
        if (not isinstance(value, (int, float)) or isinstance(value, bool)
                or key.startswith("floor_")):
            continue
        if "_ns" in key and "share" not in key and not key.endswith("_cv"):
            case[key] = value * factor
        elif key.endswith("_per_s"):
            case[key] = value / factor
        elif key == "wall_s":
            case[key] = value * factor
    (run / "summary.json").write_text(json.dumps(summary))


def sigkill_in_first_case(path: Path, args: list[str], tmpdir: Path) -> Path:
    """Start ``bench.py ARGS --quiet --output PATH`` (``TMPDIR`` ``tmpdir``: a SIGKILLed
    bench.py leaves its socket folder there) and SIGKILL it once its first case's
    ``steps.partial.csv`` holds rows (2 minutes at most); returns ``path``."""
    proc = subprocess.Popen([sys.executable, "bench.py", *args, "--quiet", "--output", str(path)],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, TMPDIR=str(tmpdir)))
    partial = path / "steps.partial.csv"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
                partial.is_file() and partial.read_bytes().count(b"\n") > 2):
            time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return path


def interrupt_in_case(path: Path, args: list[str], index: int) -> Path:
    """Run ``bench.py ARGS --quiet --output PATH`` and interrupt it (SIGINT, as Ctrl-C)
    once ``summary.json`` names its case number ``index`` (from 0, in the order of its
    metadata's ``cases``) as running (2 minutes at most): the cases before it finish,
    that one is recorded as interrupted, the later ones are never run. Asserts it exits
    130; returns ``path``."""
    import json

    proc = subprocess.Popen([sys.executable, "bench.py", *args, "--quiet", "--output", str(path)],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                summary = json.loads((path / "summary.json").read_text())
                planned = summary["metadata"]["cases"]
                if summary.get("running_case") == planned[index]["case_id"]:
                    break
            except (OSError, ValueError, KeyError, IndexError):
                pass
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return path


def load_with_warnings(run):
    """``results.load(run)`` (the notebook's loader) and the lines of the
    ``ResultsWarning``s it gave, in order: ``(results, lines)``."""
    import warnings

    from ipc_bench.analysis.results import load
    from ipc_bench.analysis.run_files import ResultsWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResultsWarning)
        results = load(run)
    return results, [str(w.message) for w in caught if issubclass(w.category, ResultsWarning)]
