"""``python bench.py`` as a user runs it, from the repository root, in a subprocess.

Bad input: exit code 2 and exactly one line on stderr, ``bench.py: error: ...``, naming
the problem (and the row, for a malformed trace), no traceback and no result folder. An
unknown scenario goes through a real ``python bench.py``; the other kinds call
``cli.main`` in this process (``main_in_process``: the same exit code and output, without
a process's start and imports, about 0.2 s of CPU each), as do the runs that check a
trace's notes (their runners are still processes).
A tiny successful run: exit 0 and a complete result folder that pandas reads.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from analysis_run import bench_in_process
from fault_helpers import LOADED_NOTE, processes_matching
from run_notes import without_nice_note

REPO = Path(__file__).resolve().parents[2]

HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens"


def bench(*args: str, timeout: float = 120, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "bench.py", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env=env)


def main_in_process(capsys, *args: str) -> subprocess.CompletedProcess:
    """``cli.main(ARGS)`` in this process, as ``bench`` gives a process's: its exit code,
    stdout and stderr."""
    from ipc_bench import cli

    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["bench.py", *args], code, out, err)


def runner_processes_under(path: Path) -> list[str]:
    """Command lines of live runner processes whose endpoint lies under ``path``."""
    return processes_matching("-m ipc_bench.harness ", str(path))


def assert_usage_error(proc: subprocess.CompletedProcess, message: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"bench.py: error: {message}\n"
    assert proc.stdout == ""


def test_list(capsys):
    proc = main_in_process(capsys, "--list")
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    summaries = dict(line.split(None, 1) for line in lines)
    assert list(summaries) == sorted(summaries)
    assert summaries["azure-conv"] == ("Azure conversation trace, replayed on the logical "
                                       "clock (needs --trace).")
    assert summaries["decode-steady"].startswith("Steady decode: exactly B requests")


def test_unknown_scenario(tmp_path, capsys):
    proc = main_in_process(capsys, "--scenario", "nope", "--output", str(tmp_path / "out"))
    names = ", ".join(line.split()[0]
                      for line in main_in_process(capsys, "--list").stdout.splitlines())
    assert "azure-conv" in names and "decode-steady" in names
    assert_usage_error(proc, f"unknown scenario 'nope'; choose from {names}")
    assert not (tmp_path / "out").exists()


def test_num_running_zero(capsys):
    proc = main_in_process(capsys, "--scenario", "decode-steady", "--num-running", "0")
    assert_usage_error(proc, "argument --num-running: must be at least 1, got 0")


def test_unknown_codec(capsys):
    proc = main_in_process(capsys, "--scenario", "decode-steady", "--codecs", "foo")
    assert_usage_error(proc, "argument --codecs: 'foo': choose from msgpack, pickle, packed, slots, replicated")


def test_azure_conv_needs_trace(tmp_path, capsys):
    proc = main_in_process(capsys, "--scenario", "azure-conv", "--output",
                           str(tmp_path / "out"))
    assert_usage_error(proc, "scenario azure-conv needs --trace PATH "
                             "(the AzureLLMInferenceTrace_conv.csv file)")
    assert not (tmp_path / "out").exists()


def test_missing_trace_file(tmp_path, capsys):
    missing = tmp_path / "nowhere.csv"
    proc = main_in_process(capsys, "--scenario", "azure-conv", "--trace", str(missing),
                           "--output", str(tmp_path / "out"))
    assert_usage_error(proc, f"no such trace file: {missing}")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("row,problem", [
    ("2023-11-16 18:15:50.9951690,abc,109",
     "ContextTokens is not a positive integer (digits only): 'abc'"),
    ("2023-11-16 18:15:50.9951690,396",
     "expected 3 fields (TIMESTAMP,ContextTokens,GeneratedTokens), found 2: "
     "'2023-11-16 18:15:50.9951690,396'"),
    ("2023-11-16 18:15:50.9951690,396,0",
     "GeneratedTokens is 0; a request needs at least one output token"),
])
def test_malformed_trace_row(tmp_path, capsys, row, problem):
    trace = tmp_path / "trace.csv"
    trace.write_text("\n".join([HEADER, "2023-11-16 18:15:46.6805900,374,44", row,
                                "2023-11-16 18:15:51.2224670,879,55"]) + "\n")
    proc = main_in_process(capsys, "--scenario", "azure-conv", "--trace", str(trace),
                           "--output", str(tmp_path / "out"))
    assert_usage_error(proc, f"{trace} line 3: {problem}")
    assert not (tmp_path / "out").exists()


def _short_trace(tmp_path: Path, rows: int) -> Path:
    trace = tmp_path / "trace.csv"
    trace.write_text("\n".join([HEADER] + [f"2023-11-16 18:15:{46 + i}.0000000,{30 + i},4"
                                          for i in range(rows)]) + "\n")
    return trace


def test_a_trace_whose_last_row_may_be_cut_short_is_noted(tmp_path, capsys):
    """CRLF lines, the last without its line ending: replayed as read, with a note."""
    trace = tmp_path / "trace.csv"
    trace.write_bytes(("\r\n".join([HEADER, "2023-11-16 18:15:46.6805900,374,44",
                                     "2023-11-16 18:15:50.9951690,381,8"])).encode())
    out = tmp_path / "out"
    proc = main_in_process(capsys, "--scenario", "azure-conv", "--trace", str(trace),
                           "--policies", "cached", "--codecs", "msgpack", "--no-floor",
                           "--warmup-steps", "0", "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    note = ("the trace's last row (line 3) has no line ending while the lines before it "
            "end in \\r\\n: a file cut short mid-row reads so; it is replayed as read")
    assert proc.stderr.splitlines()[1] == f"note: {note}"
    assert json.loads((out / "summary.json").read_text())["metadata"]["notes"] == [note]


@pytest.mark.parametrize("max_requests,note", [
    ("99999", "the trace has 5 requests, fewer than --max-requests 99,999: all 5 are "
              "replayed"),
    ("5", None),  # as many as asked
    (None, None),  # the default (300) was not asked for
])
def test_a_trace_shorter_than_max_requests_is_noted(tmp_path, capsys, max_requests, note):
    out = tmp_path / "out"
    args = ["--scenario", "azure-conv", "--trace", str(_short_trace(tmp_path, 5)),
            "--policies", "cached", "--codecs", "msgpack", "--no-floor", "--warmup-steps", "0",
            "--output", str(out)]
    proc = main_in_process(capsys, *args,
                           *(["--max-requests", max_requests] if max_requests else []))
    assert proc.returncode == 0, proc.stderr
    lines = without_nice_note(proc.stderr.splitlines())  # the suite's niceness: not this test's
    assert lines[0] == f"ipc-bench: azure-conv, 1 case -> {out}"
    notes = [f"note: {note}"] if note else []
    assert lines[1:1 + len(notes)] == notes  # right after the first line
    assert [line for line in lines if line.startswith("note:")
            and not line.startswith(LOADED_NOTE)] == notes
    summary = json.loads((out / "summary.json").read_text())
    assert summary["metadata"]["notes"] == ([note] if note else [])
    assert summary["cases"][0]["trace"] == "azure-conv:5"


@pytest.mark.parametrize("scenario,file,note", [
    ("azure-code", "AzureLLMInferenceTrace_conv.csv",
     "azure-code replays AzureLLMInferenceTrace_conv.csv, not its own "
     "AzureLLMInferenceTrace_code.csv: the workload label trace=azure-code:N names the "
     "scenario, not the file"),
    ("azure-conv", "AzureLLMInferenceTrace_conv.csv", None),  # its own file
    ("azure-code", "trace.csv", None),  # a trace of the user's own: no claim to check
    # a link of another name: known by the name it resolves to, as metadata records it
    ("azure-conv", "renamed.csv -> AzureLLMInferenceTrace_code.csv",
     "azure-conv replays AzureLLMInferenceTrace_code.csv (--trace renamed.csv: a link to "
     "it), not its own AzureLLMInferenceTrace_conv.csv: the workload label "
     "trace=azure-conv:N names the scenario, not the file"),
    # a link named as the other file, to the scenario's own: its own, no note
    ("azure-conv", "AzureLLMInferenceTrace_code.csv -> AzureLLMInferenceTrace_conv.csv",
     None),
])
def test_the_other_azure_trace_is_noted(tmp_path, capsys, scenario, file, note):
    link, _, target = file.partition(" -> ")
    trace = _short_trace(tmp_path, 3).rename(tmp_path / (target or link))
    if target:
        (tmp_path / link).symlink_to(trace)
        trace = tmp_path / link
    out = tmp_path / "out"
    proc = main_in_process(capsys, "--scenario", scenario, "--trace", str(trace),
                           "--policies", "cached", "--codecs", "msgpack", "--no-floor",
                           "--warmup-steps", "0", "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in without_nice_note(proc.stderr.splitlines())
             if line.startswith("note:")
             and not line.startswith(LOADED_NOTE)]  # the machine's load: not this test's
    assert notes == ([f"note: {note}"] if note else [])


def test_the_other_azure_trace_is_known_by_its_published_digest():
    """A copy of a published Azure file under another name, read whole, is known by its
    SHA-256 (``traces.PUBLISHED_SHA256``)."""
    import types

    from ipc_bench.engine.traces import PUBLISHED_SHA256
    from ipc_bench.harness.scenario import other_azure_trace_note

    code = next(d for d, f in PUBLISHED_SHA256.items() if f.endswith("_code.csv"))
    trace = types.SimpleNamespace(sha256=code, resolved_path="/t/copy.csv")
    assert other_azure_trace_note("azure-conv", "AzureLLMInferenceTrace_conv.csv",
                                  "copy.csv", trace) == (
        "azure-conv replays AzureLLMInferenceTrace_code.csv (--trace copy.csv: its SHA-256 "
        "is that file's), not its own AzureLLMInferenceTrace_conv.csv: the workload label "
        "trace=azure-conv:N names the scenario, not the file")
    assert other_azure_trace_note("azure-code", "AzureLLMInferenceTrace_code.csv",
                                  "copy.csv", trace) is None
    # a pipe (no resolved path) of unknown bytes: the name given, which claims nothing
    pipe = types.SimpleNamespace(sha256="0" * 64, resolved_path=None)
    assert other_azure_trace_note("azure-conv", "AzureLLMInferenceTrace_conv.csv",
                                  "/dev/fd/63", pipe) is None


ITEM_11_FIELDS = (
    "policy", "codec", "scenario", "model", "num_running", "output_tokens",
    "output_tokens_per_s", "sched_to_runner_payload_bytes_per_step",
    "runner_to_sched_payload_bytes_per_step", "build_ns_per_step", "encode_ns_per_step",
    "decode_ns_per_step", "token_digest",
)


def test_tiny_run(tmp_path):
    out = tmp_path / "run"
    tmp = tmp_path / "tmp"  # the runs' private socket directories go here
    tmp.mkdir()
    proc = bench("--scenario", "decode-steady", "--num-running", "4", "--steps", "30",
                 "--warmup-steps", "5", "--output", str(out), "--quiet",
                 env=dict(os.environ, TMPDIR=str(tmp)))
    assert proc.returncode == 0, proc.stderr
    assert f"results: {out}" in proc.stdout
    assert list(tmp.iterdir()) == []
    assert runner_processes_under(tmp) == []

    summary = json.loads((out / "summary.json").read_text())
    # --quiet drops each case's warning lines (30 counted steps: "figures are rough"
    # in every case, more on a loaded machine) and says once how many it dropped
    recorded = sum(len(c["warnings"]) for c in summary["cases"])
    assert recorded >= len(summary["cases"]) == 6
    assert proc.stderr == ""  # stderr holds errors alone
    assert (f"\n{recorded} warnings recorded in {out / 'summary.json'} (not shown: --quiet)"
            f"\n\nresults: {out}\n") in proc.stdout
    assert summary["format_version"] == 1
    assert summary["status"] == "complete" and summary["problems"] == []
    meta = summary["metadata"]
    for key in ("git", "packages", "python_version", "cpu_model", "cpu_affinity",
                "start_time_utc", "seed", "cases"):
        assert key in meta, key
    assert {"commit", "dirty"} <= set(meta["git"])
    assert meta["seed"] == 0 and meta["scenario"] == "decode-steady"
    assert all("scheduler" in c and "model" in c for c in meta["cases"])

    cases = summary["cases"]
    ipc_cases = [c for c in cases if c["transport"] == "ipc"]
    assert sorted((c["policy"], c["codec"]) for c in ipc_cases) == [
        ("cached", "msgpack"), ("cached", "pickle"), ("send", "msgpack"), ("send", "pickle")]
    for case in cases:
        for key in ITEM_11_FIELDS:
            assert case.get(key) is not None, (case["case_id"], key)
        assert case["scenario"] == "decode-steady" and case["model"] == "null"
        assert case["num_running"] == 4 and case["complete"] is True
        assert case["output_tokens"] == 4 * case["num_steps"] > 0
    assert len({c["token_digest"] for c in cases}) == 1
    for codec in ("msgpack", "pickle"):
        by = {c["policy"]: c for c in cases if c["codec"] == codec}
        assert (by["cached"]["sched_to_runner_payload_bytes_per_step"]
                < by["send"]["sched_to_runner_payload_bytes_per_step"])

    steps = pd.read_csv(out / "steps.csv")
    requests = pd.read_csv(out / "requests.csv")
    floor = pd.read_csv(out / "floor.csv")
    assert sorted(steps["case_id"].unique()) == sorted(c["case_id"] for c in cases)
    for case in cases:
        mine = steps[steps["case_id"] == case["case_id"]]
        assert len(mine) == case["num_total_steps"]
        assert int(mine["counted"].sum()) == case["num_steps"]
        assert int(mine["warmup"].sum()) == 5
        assert mine["s2r_payload_bytes"].dtype.kind == "i"
        assert not mine["runner_idle_ns"].isna().any()
        floor_steps = len(floor[floor["case_id"] == case["case_id"]])
        assert floor_steps == (case["num_steps"] if case in ipc_cases else 0)
    assert set(requests["case_id"]) == set(steps["case_id"])
    assert (requests.groupby("case_id")["num_output_tokens"].sum().nunique()) == 1


def test_two_runs_at_once(tmp_path):
    """Two invocations side by side: private endpoints, no collision, same digests. The
    same two cases each (send and cached, msgpack: another codec's cases open their
    endpoints as these do, a single-process case opens none), started together."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    procs = [subprocess.Popen(
        [sys.executable, "bench.py", "--scenario", "decode-steady", "--num-running", "2",
         "--steps", "40", "--warmup-steps", "2", "--codecs", "msgpack", "--no-single-process",
         "--no-floor", "--quiet",
         "--output", str(tmp_path / f"run{i}")],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for i in range(2)]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    digests = [{c["token_digest"] for c in
                json.loads((tmp_path / f"run{i}" / "summary.json").read_text())["cases"]}
               for i in range(2)]
    assert digests[0] == digests[1] and len(digests[0]) == 1
    assert list(tmp.iterdir()) == []
    assert runner_processes_under(tmp) == []


# ---------------------------------------------------------------------------- stdout, stderr

TINY = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "20", "--warmup-steps",
        "2", "--policies", "send,cached", "--codecs", "msgpack", "--no-single-process",
        "--no-floor", "--quiet"]
NO_SPACE = "No space left on device"


def test_a_runs_first_stdout_line_is_its_first_tables_title(tmp_path):
    """``bench.py ... | head -1`` prints the title of the first table, not a blank line."""
    proc = subprocess.run(f"{sys.executable} bench.py {' '.join(TINY)} --output "
                          f"{tmp_path / 'run'} | head -1", shell=True, cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout == ("decode-steady  [num_running=2]  device=cpu  model=null (no model "
                           "computed: the step is the harness's own)\n"), proc.stderr


def bench_to(stdout, *args: str, stderr=subprocess.PIPE) -> tuple[int, str]:
    """Run ``bench.py ARGS`` with ``stdout`` as given (a descriptor or file); returns
    (exit code, stderr)."""
    proc = subprocess.run([sys.executable, "bench.py", *args], cwd=REPO, stdout=stdout,
                          stderr=stderr, text=True, timeout=120)
    return proc.returncode, proc.stderr


def closed_pipe() -> int:
    """The write end of a pipe whose reader is gone (``| head -0``)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    return write_end


def _assert_complete(run: Path, num_cases: int = 2) -> None:
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["problems"]) == ("complete", [])
    assert [c["complete"] for c in summary["cases"]] == [True] * num_cases
    steps = pd.read_csv(run / "steps.csv")
    assert sorted(steps["case_id"].unique()) == sorted(c["case_id"] for c in summary["cases"])


def test_list_into_a_closed_pipe_exits_141_silently():
    fd = closed_pipe()
    try:
        assert bench_to(fd, "--list") == (141, "")
    finally:
        os.close(fd)


def test_list_onto_a_full_disk_is_one_line():
    with open("/dev/full", "w") as full:
        assert bench_to(full, "--list") == (
            1, f"bench.py: error: cannot write to stdout: {NO_SPACE}\n")


@pytest.mark.parametrize("args,prog", [(["--help"], "bench.py"),
                                       (["report", "--help"], "bench.py report")])
def test_help_into_a_closed_pipe_or_a_full_disk(args, prog):
    fd = closed_pipe()
    try:
        assert bench_to(fd, *args) == (141, "")
    finally:
        os.close(fd)
    with open("/dev/full", "w") as full:
        assert bench_to(full, *args) == (1, f"{prog}: error: cannot write to stdout: {NO_SPACE}\n")


def test_list_with_stderr_closed_exits_0_and_with_stdout_closed_says_its_list_was_lost():
    """``2>&-`` loses nothing the command was asked for; ``>&-`` loses the list (as
    ``ls >&-`` fails), so one line on stderr and exit 1, as on a full disk."""
    got = []
    for fd in (1, 2):
        proc = subprocess.run([sys.executable, "bench.py", "--list"], cwd=REPO, text=True,
                              capture_output=True, timeout=120,
                              preexec_fn=lambda fd=fd: os.close(fd))
        got.append((proc.returncode, proc.stdout != "", proc.stderr))
    assert got == [(1, False, "bench.py: error: cannot write to stdout: Bad file "
                              "descriptor (closed at start)\n"),
                   (0, True, "")]


def test_run_into_a_closed_pipe_keeps_every_result(tmp_path):
    fd = closed_pipe()
    try:
        assert bench_to(fd, *TINY, "--output", str(tmp_path / "run")) == (141, "")
    finally:
        os.close(fd)
    _assert_complete(tmp_path / "run")


# A run onto a full disk (``> /dev/full``): tests/cli/test_run_full_stdout.py


def test_run_with_stderr_closed_keeps_every_result(tmp_path):
    proc = subprocess.run([sys.executable, "bench.py", *TINY[:-1], "--output",
                           str(tmp_path / "run")], cwd=REPO, capture_output=True, text=True,
                          timeout=120, preexec_fn=lambda: os.close(2))
    assert proc.returncode == 0 and proc.stderr == ""
    assert f"results: {tmp_path / 'run'}" in proc.stdout
    _assert_complete(tmp_path / "run")


def test_a_run_with_stdout_closed_is_refused_before_it_starts(tmp_path):
    """``>&-``: the tables would have nowhere to go, which the run would only find
    after its last case: refused once the options and cases are checked, no folder
    made."""
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "bench.py", *TINY, "--output", str(run)],
                          cwd=REPO, capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: os.close(1))
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", "bench.py: error: stdout is closed (>&-): the run's tables would go nowhere; "
               "send it to a file, or to /dev/null to keep the run folder alone\n")
    assert not run.exists()
    bad = subprocess.run([sys.executable, "bench.py", *TINY, "--steps", "0"], cwd=REPO,
                         capture_output=True, text=True, timeout=120,
                         preexec_fn=lambda: os.close(1))
    assert bad.returncode == 2 and "--steps" in bad.stderr  # bad input is named first


def test_an_ascii_stdout_gets_every_line_with_escapes(tmp_path):
    """A stdout that cannot encode a name's ``é`` (``PYTHONIOENCODING=ascii``) gets it
    as an escape, as stderr does, not a traceback that loses the tables (the comparison
    block, printed before the last line, is all there)."""
    run = tmp_path / "asé"
    env = dict(os.environ, PYTHONIOENCODING="ascii")
    proc = subprocess.run([sys.executable, "bench.py", *TINY[:-1], "--repeat", "2",
                           "--output", str(run)], cwd=REPO, env=env, capture_output=True,
                          timeout=300)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr
    out = proc.stdout.decode("ascii")
    assert "reaches beyond 1.1x either way" in out and "exact: no difference" in out
    assert out.endswith(f"results: {tmp_path}/as\\xe9\n")
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["problems"]) == ("complete", [])


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    """A finished two-case run folder (send and cached, msgpack), with captures."""
    run = tmp_path_factory.mktemp("tiny") / "run"
    assert bench_to(subprocess.DEVNULL, *TINY, "--output", str(run))[0] == 0
    return run


def test_report_into_a_closed_pipe_writes_the_report(tiny_run, tmp_path):
    # stdout is written after the report, figures or not (--no-figures: no PNG to draw)
    fd = closed_pipe()
    try:
        assert bench_to(fd, "report", str(tiny_run), "--output", str(tmp_path / "rep"),
                        "--no-figures") == (141, "")
    finally:
        os.close(fd)
    assert "</html>" in (tmp_path / "rep" / "report.html").read_text()
    with open("/dev/full", "w") as full:
        assert bench_to(full, "report", str(tiny_run), "--output", str(tmp_path / "rep2"),
                        "--no-figures") == (
            1, f"bench.py report: error: cannot write to stdout: {NO_SPACE}; the report "
               f"is in {tmp_path / 'rep2' / 'report.html'}\n")


# ---------------------------------------------------------------------------- interrupts


@pytest.mark.parametrize("where,sig,files", [
    ("render_html", "SIGINT", False),   # while rendering: nothing written
    ("copyfile", "SIGTERM", True),      # while writing: the files are written whole first
])
def test_report_interrupted_is_one_line_and_all_or_nothing(
        where, sig, files, tiny_run, tmp_path, monkeypatch, capsys, handlers_restored):
    import shutil
    import signal

    from ipc_bench import cli
    from ipc_bench.report import document

    signum = getattr(signal, sig)
    target = document.shutil if where == "copyfile" else document
    real = getattr(shutil if where == "copyfile" else document, where)

    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signum)
        return real(*args, **kwargs)

    monkeypatch.setattr(target, where, interrupted)
    out = tmp_path / "rep"
    code = cli.main(["report", str(tiny_run), "--output", str(out)])
    written = f"; the report was written before it stopped: {out}/report.html" if files else ""
    assert (code, capsys.readouterr()) == (
        128 + signum, ("", f"bench.py report: interrupted by {sig}{written} "
                           f"(exit {128 + signum})\n"))
    if files:
        assert "</html>" in (out / "report.html").read_text()
        assert (out / "run.summary.json").read_bytes() == (tiny_run / "summary.json").read_bytes()
    else:
        assert not out.exists()


def _microbench_processes(run: Path) -> list[str]:
    return processes_matching("microbench", str(run))


#: pyperf options under which each of the interrupted microbench's pyperf workers times
#: for over a minute on 2 idle cores (one warm-up and 2 values of ten million loops; the
#: run's 8 benchmarks take minutes, longer on a loaded machine): a signal sent once a
#: worker is seen lands while the first arm's workers run, however long the scan of
#: /proc that saw it took, and a process left behind by the interrupt is still timing
#: when looked for (``LEFTOVER_S``).
LONG_WORKERS = ["--fast", "-l", "10000000"]
#: How long the processes of an interrupted microbench may take to be gone from /proc,
#: in seconds: well under a worker's time under ``LONG_WORKERS``.
LEFTOVER_S = 30


def _signals_handled(pid: int) -> bool:
    """Whether process ``pid`` has run ``bench.py``'s first statement (SIGTERM blocked)
    or gone on to install its handlers (SIGTERM caught), from ``/proc/PID/status``;
    True once it is gone. Until then the interpreter itself is starting, where a signal
    gets Python's or the system's default."""
    bit = 1 << (15 - 1)  # SIGTERM
    try:
        fields = dict(line.split(":", 1) for line in
                      Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    except OSError:
        return True
    return bool((int(fields["SigBlk"], 16) | int(fields["SigCgt"], 16)) & bit)


def _interrupt_microbench(run: Path, out: Path, phase: str, kill, signum):
    """Start ``bench.py microbench RUN --output OUT`` (``LONG_WORKERS``) in a new session
    and send it ``signum`` (``kill``: ``os.killpg`` or ``os.kill``) 0.3 s after
    ``bench.py`` has blocked the signals it handles (``phase`` "start": its imports, or
    its planning where the machine is idle) or once a pyperf worker runs ("first arm");
    returns the process (exited) and its stderr."""
    proc = subprocess.Popen([sys.executable, "bench.py", "microbench", str(run),
                             "--output", str(out), *LONG_WORKERS], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    if phase == "start":  # on a loaded machine the interpreter's own start can take 0.3 s
        deadline = time.monotonic() + 60
        while not _signals_handled(proc.pid):
            assert time.monotonic() < deadline, "bench.py did not start within 60 s"
            time.sleep(0.002)
        time.sleep(0.3)
    else:  # a pyperf worker (the arm's child) is running
        first = proc.stderr.readline()
        assert first.startswith(f"microbench: 8 benchmarks (send: 4, cached: 4; the arms "
                                f"interleaved) -> {out};")
        deadline = time.monotonic() + 60
        while not any("--worker" in c for c in _microbench_processes(run)):
            assert time.monotonic() < deadline, "no pyperf worker started"
            time.sleep(0.05)
    kill(proc.pid, signum)
    return proc, proc.communicate(timeout=60)[1]


@pytest.mark.parametrize("sig,group", [("SIGINT", True), ("SIGTERM", False)])
def test_microbench_interrupted_leaves_no_process_and_no_empty_folder(sig, group, tiny_run,
                                                                       tmp_path):
    """SIGINT to the process group (Ctrl-C), SIGTERM to the coordinator alone; at start-up
    and while the first arm's pyperf workers run."""
    import signal

    signum = getattr(signal, sig)
    for phase in ("start", "first arm"):
        out = tmp_path / f"mb-{phase.replace(' ', '-')}"
        proc, err = _interrupt_microbench(tiny_run, out, phase,
                                          os.killpg if group else os.kill, signum)
        assert proc.returncode == 128 + signum, err
        # at start-up a loaded machine may not have planned the benchmarks yet: then
        # bench.py's own line (test_microbench_interrupted_before_the_plan_is_one_line)
        early = f"|bench.py microbench: interrupted by {sig} \\(exit {128 + signum}\\)"
        # a benchmark that ended just before the signal is kept in its arm's file, and
        # counted (test_microbench_interrupt_count)
        kept = re.fullmatch(f"bench.py microbench: interrupted by {sig} after [1-3] of 8 "
                            "benchmarks; the benchmarks finished until then are kept in "
                            f"(.+) \\(exit {128 + signum}\\)", err.splitlines()[-1])
        if kept:
            files = kept.group(1).split(", ")
            assert all(Path(f).parent == out and Path(f).is_file() for f in files), err
            assert sorted(p.name for p in out.iterdir()) == sorted(Path(f).name for f in files)
        else:
            assert re.fullmatch(f"bench.py microbench: interrupted by {sig} after [0-3] of 8 "
                                f"benchmarks; nothing was written \\(exit {128 + signum}\\)"
                                + (early if phase == "start" else ""),
                                err.splitlines()[-1]), err
            assert not out.exists()
        assert "Traceback" not in err
        # no process is left: within LEFTOVER_S, as on a loaded machine one scan of /proc
        # can outlast a short wait and list a process that has since gone, while one left
        # behind would still be timing then (LONG_WORKERS)
        deadline = time.monotonic() + LEFTOVER_S
        while (left := _microbench_processes(tiny_run)):
            assert time.monotonic() < deadline, left
            time.sleep(0.05)


@pytest.mark.parametrize("module,where,sig", [
    ("ipc_bench.cli.microbench", "check_pyperf_options", "SIGTERM"),  # parsing the options
    ("ipc_bench.analysis.microbench", "select_captures", "SIGINT"),   # planning
])
def test_microbench_interrupted_before_the_plan_is_one_line(
        module, where, sig, tiny_run, tmp_path, monkeypatch, capsys, handlers_restored):
    """A signal after bench.py let signals through but before the benchmarks are planned
    (about 0.2 s after the start) gets bench.py's line, not silence or "0 of 0"."""
    import importlib
    import signal

    from ipc_bench import cli

    signum = getattr(signal, sig)
    target = importlib.import_module(module)
    real = getattr(target, where)

    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signum)
        return real(*args, **kwargs)

    monkeypatch.setattr(target, where, interrupted)
    out = tmp_path / "mb"
    code = cli.main(["microbench", str(tiny_run), "--output", str(out), "--fast"])
    assert (code, capsys.readouterr()) == (
        128 + signum, ("", f"bench.py microbench: interrupted by {sig} (exit {128 + signum})\n"))
    assert not out.exists()


# ---------------------------------------------------------------------------- report output

#: The files a report of ``tiny_run`` writes, in the order it writes them.
REPORT_ORDER = ["bytes_per_step.png", "codec_time_per_step.png", "throughput.png",
                "step_breakdown.png", "report.md", "report.html", "run.summary.json"]


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (relative), hidden ones included, with a file's bytes
    (``None`` for a folder)."""
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
            for p in sorted(root.rglob("*"))}


def _disk_full_at(monkeypatch, under: Path, name: str) -> list[str]:
    """Every file opened for writing under ``under`` is noted (its name) in the list
    returned; the one named ``name`` gets its first bytes, then the disk is full
    (``OSError`` ENOSPC), as ``open`` itself would fail on a full disk mid-report."""
    import builtins
    import errno

    real_open, opened = builtins.open, []

    def full_open(file, mode="r", *args, **kwargs):
        if (isinstance(file, (str, os.PathLike)) and any(m in mode for m in "wax")
                and Path(file).is_relative_to(under)):
            opened.append(Path(file).name)
            if Path(file).name == name:
                with real_open(file, mode, *args, **kwargs) as f:
                    f.write(b"\x89PNG" if "b" in mode else "partial")
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", full_open)
    return opened


@pytest.fixture(scope="module")
def earlier_report(tiny_run, tmp_path_factory) -> Path:
    """A report of ``tiny_run`` without figures, made once for the module: the full-disk
    tests copy it to where an earlier report lies."""
    from ipc_bench import cli

    out = tmp_path_factory.mktemp("earlier") / "rep"
    assert cli.main(["report", str(tiny_run), "--output", str(out), "--no-figures"]) == 0
    return out


@pytest.mark.parametrize("name,earlier", [
    ("bytes_per_step.png", False),   # the first file
    ("throughput.png", True),        # a figure after others were written
    ("report.md", False),
    ("report.html", True),
    ("run.summary.json", True),      # the last file (copied)
])
def test_report_onto_a_full_disk_names_the_file_and_changes_nothing(
        name, earlier, tiny_run, earlier_report, tmp_path, monkeypatch, capsys):
    """A disk that fills at any file of the report: one line naming that file, exit 1
    (the report failed, as a run whose results cannot be written), and the folder holds
    what it held before: nothing (no output folder, no parent
    folder created for it, no temporary folder), or an earlier report byte for byte."""
    from ipc_bench import cli

    out = tmp_path / "reports" / "rep"
    if earlier:  # what it held before: a report's files, its figures or not
        shutil.copytree(earlier_report, out)
        (out / "report.md").write_text("an earlier report\n\n![Old](stale.png)\n")
        (out / "stale.png").write_bytes(b"an earlier figure")
    capsys.readouterr()
    before = _tree(tmp_path)
    opened = _disk_full_at(monkeypatch, tmp_path, name)
    assert cli.main(["report", str(tiny_run), "--output", str(out)]) == 1
    assert capsys.readouterr() == (
        "", f"bench.py report: error: cannot write {out / name}: {NO_SPACE}\n")
    assert opened == REPORT_ORDER[:REPORT_ORDER.index(name) + 1]
    assert _tree(tmp_path) == before


def test_report_that_cannot_be_moved_into_place_keeps_the_earlier_one(
        tiny_run, tmp_path, monkeypatch, capsys):
    """Every file written, then the rename that puts the new folder in place fails: the
    earlier report is renamed back and nothing else is left."""
    import errno

    from ipc_bench import cli
    from ipc_bench.report import document

    out = tmp_path / "rep"
    # figures or not, the same rename (--no-figures: none to draw)
    assert cli.main(["report", str(tiny_run), "--output", str(out), "--no-figures"]) == 0
    (out / "report.md").write_text("an earlier report\n")
    capsys.readouterr()
    before = _tree(tmp_path)
    real_replace = os.replace

    def replace(src, dst):
        if Path(src).name.startswith(".rep.tmp-"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(document.os, "replace", replace)
    assert cli.main(["report", str(tiny_run), "--output", str(out), "--no-figures"]) == 1
    assert capsys.readouterr() == ("", f"bench.py report: error: cannot write {out}: "
                                       f"{NO_SPACE}\n")
    assert _tree(tmp_path) == before


def test_a_read_only_run_folder_points_at_output(tiny_run, tmp_path, monkeypatch, capsys):
    """The default place, RUN_DIR/report, refused for a read-only file system (or its
    permissions): the line says --output writes it elsewhere; a refused --output DIR
    gets no such hint."""
    import errno

    from ipc_bench import cli
    from ipc_bench.report import document

    def mkdtemp(prefix, dir):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(dir))

    monkeypatch.setattr(document.tempfile, "mkdtemp", mkdtemp)
    assert cli.main(["report", str(tiny_run), "--no-figures"]) == 2
    assert capsys.readouterr() == ("", f"bench.py report: error: cannot write "
                                       f"{tiny_run / 'report'}: Read-only file system; write "
                                       "it elsewhere with --output DIR\n")
    out = tmp_path / "rep"
    assert cli.main(["report", str(tiny_run), "--output", str(out), "--no-figures"]) == 2
    assert capsys.readouterr() == ("", f"bench.py report: error: cannot write {out}: "
                                       "Read-only file system\n")


def test_an_output_that_cannot_be_replaced_exits_2_as_one_that_cannot_be_made(
        tiny_run, tmp_path, monkeypatch, capsys):
    """An existing, empty folder that cannot be renamed aside to be replaced (immutable:
    ``chattr +i``) is bad input, exit 2, as ``--output OUT/x`` under it, which cannot
    be made, is; the report written beside it is removed; and the default place,
    RUN_DIR/report, refused so gets the --output hint. (The refusals are mocked: root
    may rename a folder its mode forbids; the real one is the test below.)"""
    import errno

    from ipc_bench import cli
    from ipc_bench.report import document

    out = tmp_path / "rep"
    out.mkdir()
    run = tmp_path / "run"  # a copy whose RUN_DIR/report is an empty folder
    shutil.copytree(tiny_run, run, ignore=shutil.ignore_patterns("report"))
    (run / "report").mkdir()
    real_replace, real_mkdtemp = os.replace, document.tempfile.mkdtemp
    locked = {out, run / "report"}

    def replace(src, dst):
        if Path(src) in locked:
            raise OSError(errno.EPERM, os.strerror(errno.EPERM), str(src))
        real_replace(src, dst)

    def mkdtemp(prefix, dir):
        if Path(dir) in locked:
            raise OSError(errno.EPERM, os.strerror(errno.EPERM), str(dir))
        return real_mkdtemp(prefix=prefix, dir=dir)

    monkeypatch.setattr(document.os, "replace", replace)
    monkeypatch.setattr(document.tempfile, "mkdtemp", mkdtemp)
    before = _tree(tmp_path)
    assert cli.main(["report", str(tiny_run), "--output", str(out), "--no-figures"]) == 2
    assert capsys.readouterr() == ("", f"bench.py report: error: cannot write {out}: "
                                       "Operation not permitted\n")
    assert cli.main(["report", str(tiny_run), "--output", str(out / "x"),
                     "--no-figures"]) == 2
    assert capsys.readouterr() == ("", f"bench.py report: error: cannot write {out / 'x'}: "
                                       "Operation not permitted\n")
    assert cli.main(["report", str(run), "--no-figures"]) == 2
    assert capsys.readouterr() == ("", f"bench.py report: error: cannot write "
                                       f"{run / 'report'}: Operation not permitted; "
                                       "write it elsewhere with --output DIR\n")
    assert _tree(tmp_path) == before


def test_a_disk_failure_renaming_the_earlier_output_aside_exits_1(tiny_run, tmp_path,
                                                                  capsys, monkeypatch):
    """A full disk or an I/O error while the earlier --output folder is renamed aside is
    the disk's failure (exit 1), not an output that may not be replaced (exit 2)."""
    import errno

    from ipc_bench import cli
    from ipc_bench.report import document

    out = tmp_path / "rep"
    out.mkdir()
    real_replace = os.replace

    def replace(src, dst):
        if Path(src) == out:
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(src))
        real_replace(src, dst)

    monkeypatch.setattr(document.os, "replace", replace)
    assert cli.main(["report", str(tiny_run), "--output", str(out), "--no-figures"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bench.py report: error: ") and os.strerror(errno.EIO) in err, err
    assert list(out.iterdir()) == []


def test_an_immutable_output_folder_exits_2_in_either_form(tiny_run, tmp_path, capsys):
    """The refusal of a real immutable folder (``chattr +i``, which stops root too),
    where this machine can set it: both forms exit 2 and leave nothing beside it."""
    from ipc_bench import cli

    out = tmp_path / "locked"
    out.mkdir()
    if shutil.which("chattr") is None or subprocess.run(
            ["chattr", "+i", str(out)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here (not root, or the file system)")
    try:
        before = _tree(tmp_path)
        for given in (out, out / "x"):
            assert cli.main(["report", str(tiny_run), "--output", str(given),
                             "--no-figures"]) == 2
            assert capsys.readouterr() == ("", f"bench.py report: error: cannot write "
                                               f"{given}: Operation not permitted\n")
        assert _tree(tmp_path) == before
    finally:
        subprocess.run(["chattr", "-i", str(out)], check=True)


def test_report_names_its_folder_as_the_runs_were_given(tiny_run, tmp_path, monkeypatch,
                                                          capsys):
    """One run and several runs name their report the same way: relative to the
    current folder when the run folders were given relative, absolute when absolute."""
    from analysis_run import copy_as_another_run
    from ipc_bench import cli
    from ipc_bench.report import document

    a = copy_as_another_run(tiny_run, tmp_path / "results" / "a")
    copy_as_another_run(tiny_run, tmp_path / "results" / "b", seconds=2.0)
    monkeypatch.setattr(document.time, "strftime", lambda fmt, t=None: "20261202-001500")
    monkeypatch.chdir(tmp_path)
    # the folder named is the same with figures (test_report_replaces_an_earlier_report_whole)
    assert cli.main(["report", "results/a", "--no-figures"]) == 0
    assert cli.main(["report", "results/a", "results/b", "--no-figures"]) == 0
    monkeypatch.chdir(a)
    assert cli.main(["report", ".", "../b", "--no-figures"]) == 0
    assert cli.main(["report", str(a), str(tmp_path / "results" / "b"), "--no-figures"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "report: results/a/report/report.html",
        "report: results/report-20261202-001500/report.html",
        # the same second (the clock held): a folder of their own, never the first's
        "report: ../report-20261202-001500-2/report.html",
        f"report: {tmp_path}/results/report-20261202-001500-3/report.html"]


def test_report_replaces_an_earlier_report_whole(tiny_run, tmp_path, capsys):
    """A new report replaces the earlier one in the same folder: no figure of the earlier
    render stays (here the earlier one has figures, the new one none), and nothing
    temporary is left beside it."""
    from ipc_bench import cli

    out = tmp_path / "rep"
    assert cli.main(["report", str(tiny_run), "--output", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(REPORT_ORDER)
    assert cli.main(["report", str(tiny_run), "--output", str(out), "--no-figures"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.md",
                                                     "run.summary.json"]
    (out / "run.summary.json").write_bytes((tiny_run / "summary.json").read_bytes()[:-2])
    # a copy of a summary cut short is the user's, not the report's: refused
    assert cli.main(["report", str(tiny_run), "--output", str(out)]) == 2
    assert capsys.readouterr() == (
        f"report: {out / 'report.html'}\n" * 2,
        f"bench.py report: error: output folder {out} holds files that are not a "
        "report's (run.summary.json); give --output a new folder or an earlier report's\n")
    (out / "run.summary.json").write_bytes((tiny_run / "summary.json").read_bytes())
    assert cli.main(["report", str(tiny_run), "--output", str(out)]) == 0
    assert capsys.readouterr() == (f"report: {out / 'report.html'}\n", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]
    assert sorted(p.name for p in out.iterdir()) == sorted(REPORT_ORDER)
    assert (out / "report.md").read_text().startswith("# ipc-bench report")
    assert oct(out.stat().st_mode & 0o777) == oct(0o777 & ~_umask())


@pytest.mark.parametrize("files, shown", [
    # no report.md or report.html: not a report, whatever it holds
    ({"holiday.png": b"\x89PNG", "notes.summary.json": b"hi\n"},
     "holiday.png, notes.summary.json"),
    ({"throughput.png": b"\x89PNG"}, "throughput.png"),
    # a report with a picture it does not show and a summary that is not a run's
    ({"report.md": b"# mine\n\n![a](a.png)\n", "a.png": b"\x89PNG", "holiday.png": b"x",
      "notes.summary.json": b'{"format_version": 1}'}, "holiday.png, notes.summary.json"),
    ({"report.html": b"<p>mine</p>", "n.summary.json": b"[" * 100_000 + b"]" * 100_000},
     "n.summary.json"),
    ({"report.md": b"", "pics": None, "a.txt": b"", "b.txt": b"", "c.txt": b""},
     "a.txt, b.txt, c.txt, ..."),
])
def test_report_replaces_only_an_empty_folder_or_an_earlier_report(files, shown, tiny_run,
                                                                    tmp_path, capsys):
    """An --output folder that is not empty and not a report this tool wrote (report.md
    or report.html, the figures report.md shows, copies of runs' summaries) is refused
    in one line naming what it holds that is not the report's, exit 2, nothing
    changed: PNG and *.summary.json files of the user's are not a report's."""
    from ipc_bench import cli

    out = tmp_path / "mine"
    out.mkdir()
    for name, data in files.items():
        if data is None:
            (out / name).mkdir()
        else:
            (out / name).write_bytes(data)
    before = _tree(tmp_path)
    assert cli.main(["report", str(tiny_run), "--output", str(out), "--no-figures"]) == 2
    assert capsys.readouterr() == ("", f"bench.py report: error: output folder {out} holds "
                                       f"files that are not a report's ({shown}); give "
                                       "--output a new folder or an earlier report's\n")
    assert _tree(tmp_path) == before


def test_report_replaces_an_earlier_reports_own_files(tiny_run, tmp_path, capsys):
    """A folder holding report.md, the figures it shows and a run's summary copy (an
    earlier report, of another run) is replaced, and an empty folder is used."""
    from ipc_bench import cli

    out = tmp_path / "rep"
    out.mkdir()
    (out / "report.md").write_text("# ipc-bench report\n\n![Old](old-throughput.png)\n")
    (out / "old-throughput.png").write_bytes(b"\x89PNG")
    (out / "old.summary.json").write_bytes((tiny_run / "summary.json").read_bytes())
    (tmp_path / "empty").mkdir()
    assert cli.main(["report", str(tiny_run), "--output", str(out), "--no-figures"]) == 0
    assert cli.main(["report", str(tiny_run), "--output", str(tmp_path / "empty"),
                     "--no-figures"]) == 0
    assert capsys.readouterr() == (f"report: {out / 'report.html'}\n"
                                   f"report: {tmp_path / 'empty' / 'report.html'}\n",
                                   f"bench.py report: replaced the earlier report of old "
                                   f"in {out}\n")
    for folder in (out, tmp_path / "empty"):
        assert sorted(p.name for p in folder.iterdir()) == ["report.html", "report.md",
                                                            "run.summary.json"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_report_refuses_an_output_path_that_is_a_file(tiny_run, tmp_path, capsys):
    """Worded as the run's refusal of the same --output (``output path PATH exists and
    is not a folder``), exit 2, the file untouched."""
    from ipc_bench import cli

    out = tmp_path / "f"
    out.write_text("mine\n")
    assert cli.main(["report", str(tiny_run), "--output", str(out)]) == 2
    assert capsys.readouterr() == ("", f"bench.py report: error: output path {out} exists "
                                       "and is not a folder\n")
    assert out.read_text() == "mine\n"


def test_report_error_lines_stay_one_line(tiny_run, tmp_path, capsys):
    """A line break in a path given is escaped, as the run's lines escape it: the error
    is one line on stderr, exit 2."""
    from ipc_bench import cli

    missing = tmp_path / "a\nb"
    assert cli.main(["report", str(missing)]) == 2
    assert capsys.readouterr() == ("", f"bench.py report: error: {tmp_path}/a\\nb: no such "
                                       "folder\n")
    (tmp_path / "f").write_text("x")
    out = tmp_path / "f" / "c\nd"
    assert cli.main(["report", str(tiny_run), "--output", str(out)]) == 2
    assert capsys.readouterr() == ("", f"bench.py report: error: cannot write the report to "
                                       f"{tmp_path}/f/c\\nd: {tmp_path}/f is not a folder\n")


def test_success_lines_stay_one_line(tmp_path, capsys):
    """A line break in a run folder's path is escaped in the run's last lines (the
    --quiet count and ``results: DIR``) and in the report's ``report: PATH`` line, as
    the error lines escape it: each stays one line."""
    from ipc_bench import cli

    run = tmp_path / "a\nb"
    proc = bench_in_process([*TINY, "--output", run])
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    recorded = sum(len(c["warnings"])
                   for c in json.loads((run / "summary.json").read_text())["cases"])
    assert lines[-3:] == [f"{recorded} warnings recorded in {tmp_path}/a\\nb/summary.json "
                          "(not shown: --quiet)", "", f"results: {tmp_path}/a\\nb"]
    # without --quiet the run's first line names the folder too
    loud = bench_in_process([*[a for a in TINY if a != "--quiet"], "--output",
                             tmp_path / "e\nf"])
    assert loud.returncode == 0, loud.stderr
    assert loud.stderr.splitlines()[0] == (
        f"ipc-bench: decode-steady, 2 cases -> {tmp_path}/e\\nf")
    assert cli.main(["report", str(run), "--no-figures"]) == 0
    assert cli.main(["report", str(run), "--no-figures", "--output",
                     str(tmp_path / "c\nd")]) == 0
    assert capsys.readouterr() == (f"report: {tmp_path}/a\\nb/report/report.html\n"
                                   f"report: {tmp_path}/c\\nd/report.html\n", "")
    assert (run / "report" / "report.html").is_file()
    assert (tmp_path / "c\nd" / "report.html").is_file()


def test_report_refuses_an_output_folder_holding_other_files(tiny_run, tmp_path, capsys):
    from ipc_bench import cli

    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    (out / "report.md").write_text("mine too\n")
    before = _tree(tmp_path)
    assert cli.main(["report", str(tiny_run), "--output", str(out)]) == 2
    assert capsys.readouterr() == ("", f"bench.py report: error: output folder {out} holds "
                                       "files that are not a report's (notes.txt); give "
                                       "--output a new folder or an earlier report's\n")
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("output, reason", [
    ("w" * 300, "File name too long"),
    ("w" * 300 + "/sub", "File name too long"),
])
def test_report_output_that_cannot_be_looked_up_says_why(output, reason, tiny_run, tmp_path,
                                                          capsys):
    """An --output with a name over 255 bytes: the system's own reason for that path,
    exit 2, nothing written (a link loop: tests/report/test_output_link_loop.py; under a
    file: tests/cli/test_output_under_a_file.py)."""
    from ipc_bench import cli

    (tmp_path / "file").write_text("x")
    (tmp_path / "loop").symlink_to("loop")
    out = tmp_path / output
    assert cli.main(["report", str(tiny_run), "--output", str(out)]) == 2
    assert capsys.readouterr() == ("", f"bench.py report: error: cannot write {out}: "
                                       f"{reason}\n")
    assert sorted(os.listdir(tmp_path)) == ["file", "loop"]


@pytest.mark.parametrize("first,second,shown", [
    ("run", "run", "run folder run is given twice"),
    ("run", "run/", "run folder run is given twice (also as run/)"),
    ("./run", "run", "run folder ./run is given twice (also as run)"),
    ("run", "alias", "run folder run is given twice (also as alias)"),  # a symlink to it
    ("alias/", "./run/", "run folder alias/ is given twice (also as ./run/)"),
])
def test_report_refuses_a_run_given_twice(first, second, shown, tiny_run, tmp_path,
                                          monkeypatch, capsys):
    """The same run folder twice, however it is spelt, would compare the run with
    itself: one line naming it, exit 2, nothing written."""
    import shutil

    from ipc_bench import cli

    shutil.copytree(tiny_run, tmp_path / "run")
    (tmp_path / "alias").symlink_to("run")
    monkeypatch.chdir(tmp_path)
    before = _tree(tmp_path)
    assert cli.main(["report", first, second]) == 2
    assert capsys.readouterr() == ("", f"bench.py report: error: {shown}: a run is not "
                                       "compared with itself; give each run once\n")
    assert _tree(tmp_path) == before


def test_quiet_says_once_how_many_warnings_it_did_not_show(tmp_path):
    from ipc_bench.cli.execute import quiet_warnings_line

    cases = [{"warnings": ["a", "b"]}, {"warnings": []}, {"warnings": ["c"]}]
    assert quiet_warnings_line(cases, tmp_path) == (
        f"3 warnings recorded in {tmp_path}/summary.json (not shown: --quiet)")
    assert quiet_warnings_line(cases[2:], tmp_path) == (
        f"1 warning recorded in {tmp_path}/summary.json (not shown: --quiet)")
    assert quiet_warnings_line(cases[1:2], tmp_path) is None


@pytest.mark.parametrize("make, shown", [
    (os.mkfifo, "steps.csv is a FIFO, not a regular file"),
    (lambda p: p.symlink_to(p.name), "steps.csv cannot be read: Too many levels of "
                                     "symbolic links"),
    (os.mkdir, "steps.csv is a folder, not a regular file"),
    (lambda p: p.symlink_to("gone.csv"), "steps.csv is a dangling link (to gone.csv), not a "
                                         "regular file"),
])
def test_report_says_what_a_steps_csv_that_is_no_file_is(make, shown, tiny_run, tmp_path,
                                                         capsys):
    """A steps.csv that is a FIFO (never opened: reading it would block), a link loop, a
    folder or a link to nothing is named as what it is, not as missing; exit 2, nothing
    written."""
    import shutil

    from ipc_bench import cli

    run = tmp_path / "run"
    shutil.copytree(tiny_run, run, ignore=shutil.ignore_patterns("report"))
    (run / "steps.csv").unlink()
    make(run / "steps.csv")

    def names():  # not _tree: a FIFO's bytes cannot be read
        return sorted((top, tuple(sorted(dirs)), tuple(sorted(files)))
                      for top, dirs, files in os.walk(tmp_path))

    before = names()
    assert cli.main(["report", str(run), "--no-figures"]) == 2
    assert capsys.readouterr() == ("", f"bench.py report: error: {run}: not a complete run "
                                       f"folder ({shown})\n")
    assert names() == before


@pytest.mark.parametrize("writable,advice", [
    (True, "give --output a folder inside it"),
    (False, "it cannot be written either (read-only, or no permission): give --output a "
            "folder elsewhere")])
def test_report_refuses_a_mount_point_as_its_output(tiny_run, tmp_path, monkeypatch,
                                                    capsys, writable, advice):
    """An --output that is a mount point (empty, read-only) cannot be renamed aside to
    put the report in its place (EBUSY: was ``cannot write X: Device or resource busy``,
    exit 1): it is bad input, exit 2, the line says what to give instead, nothing is
    written. (``os.path.ismount`` stands in for a mount: a test cannot mount.)"""
    from ipc_bench import cli
    from ipc_bench.report import document

    out = tmp_path / "mnt"
    out.mkdir()
    monkeypatch.setattr(document.os.path, "ismount", lambda p: Path(p) == out)
    access = document.os.access
    monkeypatch.setattr(document.os, "access",  # a read-only mount, where not writable
                        lambda p, mode: writable if Path(p) == out else access(p, mode))
    before = _tree(tmp_path)
    assert cli.main(["report", str(tiny_run), "--no-figures", "--output", str(out)]) == 2
    assert capsys.readouterr() == ("", f"bench.py report: error: output folder {out} is a "
                                       "mount point, which a report cannot replace (it is "
                                       f"written beside it and renamed into place): {advice}\n")
    assert _tree(tmp_path) == before


def test_the_report_quotes_its_command_as_a_shell_would_take_it(tiny_run, tmp_path, capsys):
    """The report's ``Rendered ... by`` line gives the command with each argument quoted
    where a shell needs it (a folder whose name has a space), so it can be run again."""
    from analysis_run import copy_as_another_run
    from ipc_bench import cli
    from ipc_bench.cli.command_line import SCRIPT

    run = copy_as_another_run(tiny_run, tmp_path / "my runs" / "a b")
    assert cli.main(["report", str(run), "--no-figures"]) == 0
    capsys.readouterr()
    text = (run / "report" / "report.md").read_text()
    assert (f" by `cd {os.getcwd()} && python {SCRIPT} report '{run}' --no-figures` "
            "from run folder ") in text


@pytest.mark.parametrize("name", ["AzureLLMInferenceTrace_conv.csv",
                                  "AzureLLMInferenceTrace_code.csv"])
def test_a_published_trace_replayed_whole_gets_no_cut_short_note(name):
    """The published Azure files end without a line break after their last row: read
    whole (their SHA-256 the published one), that is no sign of a file cut short."""
    from ipc_bench.engine.traces import PUBLISHED_SHA256
    from ipc_bench.harness.scenario import ScenarioOptions, replay_trace

    path = Path(__file__).resolve().parents[3] / "shared" / "traces" / name
    if not path.is_file():
        pytest.skip("Azure traces not in ../shared/traces")
    opts = ScenarioOptions(trace=str(path), max_requests=10**6)
    trace = replay_trace(opts)
    assert trace.unterminated_row == len(trace) + 1  # the last row has no line ending
    assert PUBLISHED_SHA256[opts.trace_sha256] == name
    assert not any("cut short" in note for note in opts.notes), opts.notes


def test_a_public_preset_on_the_cpu_is_noted():
    """The torch model with a public model's shape on the CPU runs, with a note that
    its steps take about a second; the test shapes get none."""
    from types import SimpleNamespace

    from ipc_bench.cli.run import _cpu_preset_note
    from ipc_bench.engine.config import ModelConfig

    def case(preset, steps):
        return SimpleNamespace(model=ModelConfig(name="torch", preset=preset),
                               max_steps=steps)
    assert _cpu_preset_note([case("tiny", 10), case("cpu", 10)]) is None
    assert _cpu_preset_note([case("cpu", 10), case("llama-3.2-1b", 23)]) == (
        "the torch model runs llama-3.2-1b on the CPU (4.6 GiB of float32 weights, every "
        "one read each step): expect about a second a step or more; its case runs 23 "
        "steps, warm-up included; presets tiny and cpu are sized for CPU runs")


def test_list_is_one_write_whatever_stdout_buffering(monkeypatch):
    # with PYTHONUNBUFFERED=1 each print was two writes (line, then "\n"): `--list |
    # head -1` exited 141 when head had left before the second
    import io

    from ipc_bench.cli.run import list_scenarios
    from ipc_bench.harness.scenario import discover

    writes: list[str] = []

    class Unbuffered(io.StringIO):
        def write(self, text: str) -> int:
            writes.append(text)
            return len(text)

    monkeypatch.setattr(sys, "stdout", Unbuffered())
    scenarios = discover({})
    assert list_scenarios(scenarios, {}) == 0
    assert len(writes) == 1 and writes[0].count("\n") == len(scenarios) >= 10
    assert writes[0].startswith("azure-code ")
