"""The scripts of scripts/ on stdout or a file that fails (``console.script_main``): as
``bench.py``, stdout on a full disk (``> /dev/full``) is one line on stderr and exit 1,
naming a file written all the same; a reader that went away (``| head``) exit 141 and
no line; stdout closed at start (``>&-``) refused before anything runs, exit 2; an output
file that cannot be written (``--json /dev/full``) one line (``PROG: error: cannot write
PATH: REASON``) and exit 1, the earlier file kept whole; pyperf's ``--append`` file
refused before any work where pyperf could not read it; never a traceback. Each script
by its ``--help``, and the cheapest real run of those that have one (no bench.py run).
The pyperf scripts (``hot_path_bench``, ``variant_table``: one ``pyperf.Runner`` a
process) run as commands; the others' ``main`` runs in this process under
``script_main`` with ``sys.stdout`` on the failing file, and one command of theirs per
behaviour checks the same from the outside."""

from __future__ import annotations

import io
import os
import resource
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from script_module import ROOT, load_script

from ipc_bench.cli.console import script_main, write_output
from ipc_bench.cli.options import append_problem

FULL = "No space left on device"

#: script -> the PROG its error lines start with
PROGS = {"aa_false_positive": "aa_false_positive.py", "byte_sweep": "byte_sweep.py",
         "codec_fit": "codec_fit.py", "decode_step_check": "decode_step_check.py",
         "divergence_check": "divergence_check.py",
         "gpu_check": "gpu_check.py", "hot_path_bench": "hot_path_bench.py",
         "null_sample_bench": "null_sample_bench.py", "oracle_cost": "oracle_cost.py", "ring_bench": "ring_bench.py",
         "variant_table": "variant_table.py", "verify_step_bench": "verify_step_bench.py"}
#: scripts whose ``main`` makes a ``pyperf.Runner`` (one a process): run as commands
PYPERF = ("hot_path_bench", "variant_table")

PUBLISHED = str(ROOT / "results" / "published" / "variants" / "variants.json.gz")
BYTE_SWEEP = ["--num-running", "1", "--steps", "1", "--formats", "numeric",
              "--vocab-sizes", "2", "--codecs", "msgpack"]
BYTE_SWEEP_PROGRESS = "... numeric ids, vocabulary 2, uniform token ids\n"
VARIANT_TABLE = ["--table-from", PUBLISHED, "--only", "send packed zipf", "--compact",
                 "--batch-sizes", "1"]
HOT_PATH_ONE = ["--only", "schedule digest repeat B=1", "-p", "1", "-n", "1", "-w", "0",
                "-l", "1"]


def _run(script: str, argv: list[str], stdout) -> subprocess.CompletedProcess:
    """``python scripts/SCRIPT.py ARGV...`` with ``stdout`` (a descriptor or file)."""
    return subprocess.run([sys.executable, str(ROOT / "scripts" / f"{script}.py"), *argv],
                          stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120,
                          cwd=ROOT)


def to_full(script: str, *argv: str) -> subprocess.CompletedProcess:
    """The script with stdout on a full disk (``> /dev/full``)."""
    with open("/dev/full", "w") as full:
        return _run(script, list(argv), full)


def to_closed_pipe(script: str, *argv: str) -> subprocess.CompletedProcess:
    """The script with stdout a pipe whose reader has gone (every write: EPIPE)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return _run(script, list(argv), write)
    finally:
        os.close(write)


def with_stdout_closed(script: str, *argv: str) -> subprocess.CompletedProcess:
    """``python scripts/SCRIPT.py ARGV... >&-`` in bash: stdout closed, not /dev/null."""
    line = shlex.join([sys.executable, str(ROOT / "scripts" / f"{script}.py"), *argv])
    return subprocess.run(["bash", "-c", f"exec {line} >&-"], cwd=ROOT,
                          stderr=subprocess.PIPE, text=True, timeout=120)


def script(name: str):
    """``scripts/NAME.py`` as a module (the one loaded already, if any)."""
    module = sys.modules.get(name)
    if getattr(module, "__file__", None) == str(ROOT / "scripts" / f"{name}.py"):
        return module
    return load_script(name)


def in_process(name: str, argv: list[str], stdout, monkeypatch) -> tuple[int, str]:
    """(exit code, stderr) of ``script_main(PROG, lambda: main(ARGV))`` in this process,
    ``sys.stdout`` being ``stdout`` (a file object, ``None``: closed at start) and
    ``sys.stderr`` a buffer, as ``python scripts/NAME.py ARGV...`` would end."""
    main = script(name).main
    err = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", err)
    code = script_main(PROGS[name], lambda: main(argv))
    return code, err.getvalue()


def _in_process_to(stream, name: str, argv: list[str], monkeypatch) -> tuple[int, str]:
    """``in_process`` on ``stream``, closed afterwards (what the script left in its
    buffer is lost as the failing write was)."""
    try:
        return in_process(name, argv, stream, monkeypatch)
    finally:
        try:
            stream.close()
        except OSError:
            pass


def in_process_to_full(name: str, argv: list[str], monkeypatch) -> tuple[int, str]:
    return _in_process_to(open("/dev/full", "w"), name, argv, monkeypatch)


def in_process_to_closed_pipe(name: str, argv: list[str], monkeypatch) -> tuple[int, str]:
    read, write = os.pipe()
    os.close(read)
    return _in_process_to(os.fdopen(write, "w"), name, argv, monkeypatch)


def stdout_line(script: str, written: str = "") -> str:
    return f"{PROGS[script]}: error: cannot write to stdout: {FULL}{written}\n"


def test_every_script_is_covered():
    assert sorted(PROGS) == sorted(p.stem for p in (ROOT / "scripts").glob("*.py"))


IN_PROCESS = sorted(set(PROGS) - set(PYPERF))


@pytest.mark.parametrize("name", IN_PROCESS)
def test_help_to_a_full_disk_is_one_line_and_exit_1(name, monkeypatch):
    assert in_process_to_full(name, ["--help"], monkeypatch) == (1, stdout_line(name))


@pytest.mark.parametrize("name", IN_PROCESS)
def test_help_to_a_closed_pipe_is_quiet_and_exit_141(name, monkeypatch):
    assert in_process_to_closed_pipe(name, ["--help"], monkeypatch) == (141, "")


@pytest.mark.parametrize("name", PYPERF + ("byte_sweep",))
def test_help_command_to_a_full_disk_is_one_line_and_exit_1(name):
    out = to_full(name, "--help")
    assert (out.returncode, out.stderr) == (1, stdout_line(name))


@pytest.mark.parametrize("name", PYPERF + ("byte_sweep",))
def test_help_command_to_a_closed_pipe_is_quiet_and_exit_141(name):
    out = to_closed_pipe(name, "--help")
    assert (out.returncode, out.stderr) == (141, "")


#: (script, arguments of a cheap real run that prints to stdout, stderr's lines before
#: the error line)
RUNS = [
    ("byte_sweep", BYTE_SWEEP, BYTE_SWEEP_PROGRESS),
    ("ring_bench", ["--iterations", "1", "--sizes", "64", "--transports", "zmq-ipc"], ""),
    ("oracle_cost", ["--num-running", "1", "--pairs", "1"], ""),
    ("hot_path_bench", ["--list"], ""),
    ("variant_table", VARIANT_TABLE, ""),
]
#: of ``RUNS``, those also run as commands (the pyperf scripts only ever are)
RUNS_AS_COMMANDS = ("oracle_cost",) + PYPERF


@pytest.mark.parametrize("name,argv,before", RUNS, ids=[r[0] for r in RUNS])
def test_a_run_to_a_full_disk_is_one_line_and_exit_1(name, argv, before, monkeypatch):
    if name not in PYPERF:
        assert in_process_to_full(name, argv, monkeypatch) == (1, before + stdout_line(name))
    if name in RUNS_AS_COMMANDS:
        out = to_full(name, *argv)
        assert (out.returncode, out.stderr) == (1, before + stdout_line(name))


@pytest.mark.parametrize("name,argv,before", RUNS, ids=[r[0] for r in RUNS])
def test_a_run_to_a_closed_pipe_is_quiet_and_exit_141(name, argv, before, monkeypatch):
    if name not in PYPERF:
        assert in_process_to_closed_pipe(name, argv, monkeypatch) == (141, before)
    if name in RUNS_AS_COMMANDS:
        out = to_closed_pipe(name, *argv)
        assert (out.returncode, out.stderr) == (141, before)


def _codec_fit_runs(tmp_path: Path) -> list[str]:
    """``--fit-run`` and ``--check-run`` folders of synthetic summaries (no run)."""
    from test_script_arguments import _case, _fit_run, _run as summary_run

    where = tmp_path / "codec_fit_runs"
    if not where.is_dir():
        where.mkdir()
        summary_run(where / "check", [_case(p, "msgpack", 1024, 36000.0)
                                      for p in ("send", "cached")])
        _fit_run(where / "fit")
    return ["--fit-run", str(where / "fit"), "--check-run", str(where / "check"), "--stat",
            "mean"]


#: (script, arguments whose output file is FILE, what the stdout line says of it,
#: stderr's lines before the error line)
FILES = [
    ("byte_sweep", BYTE_SWEEP + ["--json", "FILE"], "the rows are in FILE",
     BYTE_SWEEP_PROGRESS),
    ("codec_fit", ["CODEC_FIT_RUNS", "--json", "FILE"], "the fits are in FILE", ""),
    ("variant_table", VARIANT_TABLE + ["--figure", "FILE"], "the figure is in FILE", ""),
    ("hot_path_bench", HOT_PATH_ONE + ["-o", "FILE"], "the results are in FILE", ""),
]


def _argv(argv: list[str], file: str, tmp_path: Path) -> list[str]:
    out = []
    for a in argv:
        out += _codec_fit_runs(tmp_path) if a == "CODEC_FIT_RUNS" else [a.replace("FILE",
                                                                               file)]
    return out


@pytest.mark.parametrize("name,argv,note,before", FILES[:3], ids=[f[0] for f in FILES[:3]])
def test_an_output_file_on_a_full_disk_is_one_line_and_exit_1(name, argv, note, before,
                                                              tmp_path, monkeypatch):
    argv = _argv(argv, "/dev/full", tmp_path)
    line = f"{before}{PROGS[name]}: error: cannot write /dev/full: {FULL}\n"
    if name in PYPERF:
        out = _run(name, argv, subprocess.DEVNULL)
        assert (out.returncode, out.stderr) == (1, line)
    else:
        with open(os.devnull, "w") as null:
            assert in_process(name, argv, null, monkeypatch) == (1, line)


def test_an_output_file_on_a_full_disk_as_a_command():
    out = _run("byte_sweep", BYTE_SWEEP + ["--json", "/dev/full"], subprocess.DEVNULL)
    assert (out.returncode, out.stderr) == (
        1, f"{BYTE_SWEEP_PROGRESS}byte_sweep.py: error: cannot write /dev/full: {FULL}\n")


@pytest.mark.parametrize("name,argv,note,before", FILES, ids=[f[0] for f in FILES])
def test_stdout_that_fails_names_the_file_written(name, argv, note, before, tmp_path,
                                                  monkeypatch):
    file = str(tmp_path / "out.file")
    argv = _argv(argv, file, tmp_path)
    line = before + stdout_line(name, "; " + note.replace("FILE", file))
    if name in PYPERF:
        out = to_full(name, *argv)
        assert (out.returncode, out.stderr) == (1, line)
    else:
        assert in_process_to_full(name, argv, monkeypatch) == (1, line)
    assert Path(file).stat().st_size > 0


# ------------------------------------------------------------------ pyperf's --append


def _limited(script: str, argv: list[str]) -> subprocess.CompletedProcess:
    """``_run`` with stdout discarded and 2 GiB of address space: pyperf reading an
    endless file (``--append /dev/full``) fails fast rather than filling the memory."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run([sys.executable, str(ROOT / "scripts" / f"{script}.py"), *argv],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=120, cwd=ROOT, preexec_fn=limit)


@pytest.mark.parametrize("name,argv", [("hot_path_bench", HOT_PATH_ONE),
                                       ("variant_table", ["--batch-sizes", "1"])])
def test_append_to_a_device_is_refused_before_any_work(name, argv):
    out = _limited(name, argv + ["--append", "/dev/full"])
    assert (out.returncode, out.stderr) == (
        2, f"{PROGS[name]}: error: argument --append: /dev/full: not a regular file (pyperf "
           "reads the file it appends to)\n")


def test_append_to_a_file_pyperf_cannot_read_is_refused(tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text("")
    out = _limited("hot_path_bench", HOT_PATH_ONE + ["--append", str(empty)])
    assert (out.returncode, out.stderr) == (
        2, f"hot_path_bench.py: error: argument --append: {empty}: not a pyperf benchmark "
           "suite (JSONDecodeError: Expecting value: line 1 column 1 (char 0))\n")
    assert empty.read_text() == ""


def test_append_problem(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    not_suite = tmp_path / "rows.json"
    not_suite.write_text("[]\n")
    assert append_problem(str(fifo)) == (
        f"{fifo}: not a regular file (pyperf reads the file it appends to)")
    assert append_problem(str(not_suite)) == (
        f"{not_suite}: not a pyperf benchmark suite (AttributeError: 'list' object has no "
        "attribute 'get')")
    # a suite, a new file and a folder (output_problem names the folder) are not its
    assert [append_problem(p) for p in (PUBLISHED, str(tmp_path / "new.json"),
                                        str(tmp_path))] == [None, None, None]


# ------------------------------------------------------------------ stdout closed at start


def test_stdout_closed_at_start_is_refused_before_anything_runs(tmp_path):
    rows = tmp_path / "rows.json"
    out = with_stdout_closed("byte_sweep", *BYTE_SWEEP, "--json", str(rows))
    assert (out.returncode, out.stderr) == (
        2, "byte_sweep.py: error: stdout is closed (>&-): the table would go nowhere; send "
           "it to a file, or to /dev/null to keep the --json file alone\n")
    assert not rows.exists()


def test_stdout_closed_at_start_is_refused_by_a_pyperf_script(tmp_path):
    results = tmp_path / "hot.json"
    out = with_stdout_closed("hot_path_bench", *HOT_PATH_ONE, "-o", str(results))
    assert (out.returncode, out.stderr) == (
        2, "hot_path_bench.py: error: stdout is closed (>&-): pyperf's results would go "
           "nowhere; send it to a file, or to /dev/null to keep the -o or --append file "
           "alone\n")
    assert not results.exists()


def test_stdout_closed_at_start_of_a_script_that_writes_no_file():
    out = with_stdout_closed("ring_bench", "--help")
    assert (out.returncode, out.stderr) == (
        2, "ring_bench.py: error: stdout is closed (>&-): the table would go nowhere; send "
           "it to a file\n")


def test_script_main_refuses_a_closed_stdout_without_running_main(monkeypatch):
    ran = []
    err = io.StringIO()
    monkeypatch.setattr(sys, "stdout", None)  # what Python sets for a closed descriptor 1
    monkeypatch.setattr(sys, "stderr", err)
    assert script_main("prog", lambda: ran.append(1), "the rows", "the --json file") == 2
    assert script_main("prog", lambda: ran.append(1)) == 2
    assert (ran, err.getvalue()) == ([], (
        "prog: error: stdout is closed (>&-): the rows would go nowhere; send it to a file, "
        "or to /dev/null to keep the --json file alone\n"
        "prog: error: stdout is closed (>&-): its output would go nowhere; send it to a "
        "file\n"))


# ------------------------------------------------------------------ write_output


def _write_too_large(path: Path) -> str:
    """``write_output`` of 100 bytes to ``path`` with files limited to 10 bytes
    (``ulimit -f``: the write fails with EFBIG, as on a full disk); its error line."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (10, hard))
    try:
        write_output(path, "x" * 100, "prog", f"the rows are in {path}")
    except SystemExit as exc:
        return str(exc.code)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    return "written"


def test_a_failed_write_keeps_the_earlier_file_and_leaves_no_partial_one(tmp_path):
    rows = tmp_path / "rows.json"
    rows.write_text("earlier\n")
    assert _write_too_large(rows) == f"prog: error: cannot write {rows}: File too large"
    assert rows.read_text() == "earlier\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.json"]
    new = tmp_path / "new.json"
    assert _write_too_large(new) == f"prog: error: cannot write {new}: File too large"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.json"]


def test_write_output_keeps_the_mode_a_link_and_a_device(tmp_path):
    rows = tmp_path / "rows.json"
    rows.write_text("earlier\n")
    rows.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(rows)
    write_output(link, "new\n", "prog", "note")
    write_output(os.devnull, "new\n", "prog", "note")  # written to, not replaced
    assert (rows.read_text(), rows.stat().st_mode & 0o777, link.is_symlink()) == (
        "new\n", 0o640, True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "rows.json"]
    assert Path(os.devnull).is_char_device()


# ------------------------------------------------------------------ aa_false_positive


def test_aa_false_positive_errors_start_as_its_parser_errors():
    aa = script("aa_false_positive")
    cases = [dict(arm=a, repetition=0) for a in ("send", "cached", "send'")]
    with pytest.raises(SystemExit) as three:
        aa.pair_sequence(cases)
    cases = [dict(arm="send", repetition=0), dict(arm="send'", repetition=1)]
    with pytest.raises(SystemExit) as apart:
        aa.pair_sequence(cases)
    assert [three.value.code, apart.value.code] == [
        "aa_false_positive.py: error: expected two arms, got ['send', 'cached', \"send'\"]",
        "aa_false_positive.py: error: cases 0 and 1 are not one pair run back to back"]
