"""``bench.py microbench``: choosing the benchmarks, pyperf's settings, the progress
shown, bad input and interruption.

A small real run (decode-steady at 4 running requests, msgpack, both policies)
provides the captured messages; pyperf runs with one worker and one value per
benchmark unless a test says otherwise, so timings are not checked, only structure.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ipc_bench.analysis import capture
from ipc_bench.analysis.microbench import (DEFAULT_SETTINGS, MAX_MIN_TIME_S, MicrobenchError,
                                           Selection, arm_benchmarks, bench_name,
                                           check_pyperf_options, probe_runner,
                                           runner_settings, select_captures,
                                           workload_labels)
from ipc_bench.cli import main
from ipc_bench.harness.affinity import format_cpus
from ipc_bench.harness.progress import duration_words
from ipc_bench.report.microbench import MicrobenchProgress

ROOT = Path(__file__).resolve().parents[2]
RUN = ["--scenario", "decode-steady", "--num-running", "2,4", "--steps", "30",
       "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor", "--no-single-process",
       "--quiet"]
QUICK = ["-p", "1", "-n", "1", "-w", "0", "-l", "1"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "small"
    assert main(RUN + ["--output", str(out)]) == 0
    return out


def _microbench(args, timeout=300):
    return subprocess.run([sys.executable, "bench.py", "microbench", *map(str, args)],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_selection_runs_only_the_chosen_benchmarks(run_dir, tmp_path):
    import pyperf

    out = tmp_path / "mb"
    proc = _microbench([run_dir, "--output", out, "--num-running", "4", "--directions",
                        "s2r", "--ops", "decode", *QUICK])
    assert proc.returncode == 0, proc.stderr
    for arm in ("send", "cached"):
        suite = pyperf.BenchmarkSuite.load(str(out / f"{arm}.json"))
        assert suite.get_benchmark_names() == ["num_running=4/s2r/msgpack/decode"]
    lines = proc.stderr.splitlines()
    assert lines[0] == (f"microbench: 2 benchmarks (send: 1, cached: 1; the arms interleaved) "
                        f"-> {out}; 1 process "
                        "x (0 warm-ups + 1 value) of >= 50 ms; pyperf options: -p 1 -n 1 "
                        "-w 0 -l 1")
    # a fast machine's estimate reads "under 1 s left" (progress.about_words)
    assert re.fullmatch(r"microbench: benchmark 1/2 done \(send num_running=4/s2r/msgpack/"
                        r"decode: \S+ [nuµm]?s \+- \S+ [nuµm]?s\), "
                        r"(about \d+|under 1) s left", lines[1])
    assert lines[2].startswith("microbench: benchmark 2/2 done (cached num_running=4/s2r/")
    assert lines[2].endswith("all done")
    rows = json.loads((out / "in_loop_vs_pyperf.json").read_text())
    assert {(r["arm"], r["workload"], r["direction"], r["op"]) for r in rows} == {
        (a, "num_running=4", "s2r", "decode") for a in ("send", "cached")}


def test_the_arms_run_interleaved_each_first_in_turn():
    from ipc_bench.analysis.microbench import interleaved_order

    names = ["n=4/s2r/msgpack/encode", "n=4/s2r/msgpack/decode", "n=4/r2s/msgpack/encode"]
    assert interleaved_order({"send": names, "cached": names}) == [
        ("send", names[0]), ("cached", names[0]),
        ("cached", names[1]), ("send", names[1]),
        ("send", names[2]), ("cached", names[2])]
    # a name only one arm has runs alone, each arm keeping its own order
    assert interleaved_order({"send": ["a", "c"], "cached": ["a", "b", "c"]}) == [
        ("send", "a"), ("cached", "a"), ("cached", "b"), ("send", "c"), ("cached", "c")]
    assert interleaved_order({"send": ["a"]}) == [("send", "a")]


def _suite_file(path: Path, values_by_name: dict) -> Path:
    import pyperf

    benches = []
    for name, values in values_by_name.items():
        run = pyperf.Run(values, warmups=[(1, values[0])],
                         metadata={"name": name, "loops": 1, "unit": "second"},
                         collect_metadata=False)
        benches.append(pyperf.Benchmark([run]))
    pyperf.BenchmarkSuite(benches).dump(str(path))
    return path


def test_the_unstable_line_counts_what_pyperf_check_would_warn_of(tmp_path):
    from ipc_bench.analysis.microbench import unstable_line

    steady = [0.100, 0.101, 0.099]
    noisy = [0.100, 0.150, 0.070]  # standard deviation 40 % of the mean
    send = _suite_file(tmp_path / "send.json", {"a": steady, "b": noisy})
    cached = _suite_file(tmp_path / "cached.json", {"a": noisy, "b": steady})
    assert unstable_line([send, cached]) == (
        "microbench: pyperf would call 2 of 4 benchmarks unstable (python -m pyperf "
        "check FILE lists them); do not quote their ratios")
    calm = _suite_file(tmp_path / "calm.json", {"a": steady})
    assert unstable_line([calm]) is None


def test_select_captures_order_and_filters(run_dir):
    everything = select_captures(str(run_dir), Selection())
    names = [bench_name(i, op) for p, i, op in arm_benchmarks(everything, "send", Selection())]
    assert names == [f"num_running={b}/{d}/msgpack/{op}" for b in (2, 4)
                     for d in ("s2r", "r2s") for op in ("encode", "decode")]
    picked = select_captures(str(run_dir), Selection(num_running=(2,), directions=("r2s",)))
    assert [(i.arm, i.workload, i.direction) for _, i in picked] == [
        ("cached", "num_running=2", "r2s"), ("send", "num_running=2", "r2s")]
    only_encode = Selection(ops=("encode",))
    assert {op for *_, op in arm_benchmarks(everything, "cached", only_encode)} == {"encode"}
    assert Selection(num_running=(2, 4), ops=("decode",)).argv() == [
        "--num-running", "2,4", "--ops", "decode"]
    assert workload_labels("num_running=16,step_time_ms=5") == {
        "num_running": "16", "step_time_ms": "5"}


@pytest.mark.parametrize("args, message", [
    (["--num-running", "32"], "--num-running 32: not among the messages captured in {run} "
                              "(available: 2, 4)"),
    (["--num-running", "4,8"], "--num-running 8: not among the messages captured in {run} "
                               "(available: 2, 4)"),
    (["--codecs", "pickle"], "--codecs pickle: not among the messages captured in {run} "
                             "(available: msgpack)"),
    (["--directions", "up"], "argument --directions: 'up' is not one of s2r, r2s"),
    (["--num-running", "x"], "argument --num-running: 'x' is not a whole number >= 1"),
    (["--num-running", "2,,4"], "argument --num-running: expected comma-separated whole "
                                "numbers, got '2,,4' (an item is empty)"),
    (["--ops", "decode,"], "argument --ops: expected comma-separated names, got 'decode,' "
                           "(an item is empty)"),
    (["--ops", "encode,encode"], "argument --ops: encode given more than once"),
    (["--codecs", "msgpack,msgpack"], "argument --codecs: msgpack given more than once"),
    (["--num-running", "4,2,4"], "argument --num-running: 4 given more than once"),
    (["--num-running", "4,04,2,2"], "argument --num-running: 4, 2 given more than once"),
    (["--directions", "s2r,r2s,s2r"], "argument --directions: s2r given more than once"),
    (["--fast", "--rigorous"], "--fast and --rigorous exclude each other"),
    (["--no-such-option"], "unrecognized arguments: --no-such-option"),
    (["-o", "x.json"], "option -o is set by microbench itself"),
    # pyperf's --affinity, which its workers would fail on, said before any starts
    (["--affinity", "abc"], "--affinity: expected a CPU list such as 0-3,5, got 'abc'"),
    (["--affinity", "1-0"], "--affinity: range 1-0 runs backwards: give N-M with N <= M"),
    (["--affinity=4096"], "--affinity: CPU 4096 is not among those this process may run "
                          "on ({allowed})"),
    # pyperf would read an empty one as not given, and run
    (["--affinity", ""], "--affinity: expected a CPU list such as 0-3,5, got ''"),
    (["--affinity= "], "--affinity: expected a CPU list such as 0-3,5, got ' '"),
    # pyperf takes any float: inf calibrated forever, nan and -1 ran as 0
    *[(["--min-time", given], f"--min-time {shown}: expected seconds above 0 and at most 10 "
                              "(the least time of each value pyperf times; at 10 a benchmark "
                              "of the default settings takes over 2 minutes)")
      for given, shown in [("inf", "inf"), ("1e9", "1e+09"), ("10.001", "10.001"),
                           ("nan", "nan"), ("-1", "-1"), ("0", "0"), ("1e-400", "0")]],
])
def test_bad_selection_or_option_is_one_line(run_dir, capsys, args, message):
    assert main(["microbench", str(run_dir), *args]) == 2
    captured = capsys.readouterr()
    allowed = format_cpus(os.sched_getaffinity(0)).replace("+", ",")
    assert captured.err == ("bench.py microbench: error: "
                            f"{message.format(run=run_dir, allowed=allowed)}\n")
    assert not (run_dir / "microbench").exists()  # nothing started, nothing created


class _RaisingParser(argparse.ArgumentParser):
    def error(self, message):
        raise MicrobenchError(message)


@pytest.mark.parametrize("rest", [["--min-time", "10"], ["--min-time=1e-9"], ["-p", "1"]])
def test_min_time_up_to_the_cap_passes(rest):
    assert MAX_MIN_TIME_S == 10.0
    assert check_pyperf_options(rest, _RaisingParser, False) is None


def test_missing_folder_reads_as_report_does(tmp_path):
    missing = tmp_path / "nope"
    for command in ("microbench", "report"):
        proc = subprocess.run([sys.executable, "bench.py", command, str(missing)], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2
        assert proc.stderr == f"bench.py {command}: error: {missing}: no such folder\n"


def test_runner_settings_default_and_rigorous():
    def parsed(rigorous: bool, rest: list[str]):
        settings, extra = runner_settings(rigorous)
        return probe_runner(**settings).parse_args(rest + extra)

    default = parsed(False, [])
    assert (default.processes, default.values, default.warmups, default.min_time) == (
        DEFAULT_SETTINGS["processes"], DEFAULT_SETTINGS["values"],
        DEFAULT_SETTINGS["warmups"], DEFAULT_SETTINGS["min_time"]) == (3, 3, 1, 0.05)
    fast = parsed(False, ["--fast"])
    assert (fast.processes, fast.values) == (3, 2)
    rigorous = parsed(True, [])  # pyperf's own defaults in its rigorous mode
    assert (rigorous.processes, rigorous.values, rigorous.min_time) == (40, 3, 0.1)


@pytest.mark.parametrize("rigorous, rest, text", [
    (False, [], "3 processes x (1 warm-up + 3 values) of >= 50 ms: the default settings, "
                "not pyperf's rigorous mode (--rigorous for that)"),
    (False, ["--fast"], "3 processes x (1 warm-up + 2 values) of >= 50 ms; pyperf options: "
                        "--fast"),
    (False, ["-p", "5", "--min-time", "0.2"], "5 processes x (1 warm-up + 3 values) of "
                                              ">= 200 ms; pyperf options: -p 5 --min-time 0.2"),
    (True, [], "pyperf --rigorous (40 processes x (1 warm-up + 3 values) of >= 100 ms)"),
    (True, ["-n", "5"], "pyperf --rigorous (40 processes x (1 warm-up + 5 values) of >= "
                        "100 ms); pyperf options: -n 5"),
])
def test_header_states_the_settings_pyperf_will_use(rigorous, rest, text):
    from ipc_bench.analysis.microbench import settings_text

    assert settings_text(rigorous, rest) == text


def test_progress_lines_estimate_the_time_left(monkeypatch):
    clock = iter([100.0, 110.0, 130.0])
    monkeypatch.setattr("ipc_bench.report.microbench.time.monotonic", lambda: next(clock))
    out = io.StringIO()
    progress = MicrobenchProgress(4, stream=out, bar=False)
    progress.done("send", "num_running=4/s2r/msgpack/encode", 2.5e-6, 1e-7)  # t = 110
    progress.done("send", "num_running=4/s2r/msgpack/decode", 4.0e-6, 0.0)  # t = 130
    assert out.getvalue().splitlines() == [
        "microbench: benchmark 1/4 done (send num_running=4/s2r/msgpack/encode: 2.5 us +- "
        "100 ns), about 30 s left",
        "microbench: benchmark 2/4 done (send num_running=4/s2r/msgpack/decode: 4 us +- "
        "0 ns), about 30 s left"]
    progress.close()
    assert [duration_words(s) for s in (0.4, 59.6, 75, 3725)] == [
        "0 s", "1 min 0 s", "1 min 15 s", "1 h 2 min"]


def _interrupt(args: list, after_line: str, timeout: float = 120):
    """Start microbench, wait for a stderr line starting with ``after_line``, send
    SIGINT to it alone; returns (exit code, stderr lines)."""
    proc = subprocess.Popen([sys.executable, "bench.py", "microbench", *map(str, args)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    lines = []
    deadline = time.monotonic() + timeout
    try:
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if line.startswith(after_line) or time.monotonic() > deadline:
                break
        proc.send_signal(signal.SIGINT)
        lines += proc.stderr.read().splitlines()
        return proc.wait(timeout=60), lines
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_interrupt_keeps_the_finished_benchmarks_loadable(run_dir, tmp_path):
    import pyperf

    out = tmp_path / "mb"
    code, lines = _interrupt([run_dir, "--output", out, "-p", "2", "-n", "1", "-w", "0",
                              "--min-time", "0.2"], "microbench: benchmark 1/16 done")
    assert code == 130, lines
    assert re.fullmatch(rf"bench.py microbench: interrupted by SIGINT after (\d+) of 16 "
                        rf"benchmarks; the benchmarks finished until then are kept in "
                        rf"{re.escape(str(out))}/send.json \(exit 130\)",
                        lines[-1]), lines
    finished = int(re.search(r"after (\d+) of", lines[-1]).group(1))
    suite = pyperf.BenchmarkSuite.load(str(out / "send.json"))
    assert len(suite.get_benchmark_names()) == finished >= 1
    assert sorted(p.name for p in out.iterdir()) == ["send.json"]  # no temporary file


def test_interrupt_before_any_benchmark_leaves_no_folder(run_dir, tmp_path):
    out = tmp_path / "mb"
    code, lines = _interrupt([run_dir, "--output", out, "-p", "3", "--min-time", "0.5"],
                             "microbench: 16 benchmarks")
    assert code == 130, lines
    assert lines[-1] == ("bench.py microbench: interrupted by SIGINT after 0 of 16 "
                         "benchmarks; nothing was written (exit 130)")
    assert not out.exists()


def test_interrupt_in_a_folder_it_did_not_make_keeps_the_folder(run_dir, tmp_path):
    out = tmp_path / "mb"
    out.mkdir()
    code, lines = _interrupt([run_dir, "--output", out, "-p", "3", "--min-time", "0.5"],
                             "microbench: 16 benchmarks")
    assert code == 130, lines
    assert lines[-1] == ("bench.py microbench: interrupted by SIGINT after 0 of 16 "
                         "benchmarks; nothing was written (exit 130)")
    assert list(out.iterdir()) == []


#: A quick run of 4 benchmarks (2 per arm) whose files stand for earlier results.
EARLIER = ["--num-running", "4", "--directions", "s2r", *QUICK]
EARLIER_FILES = ["cached.json", "in_loop_vs_pyperf.json", "send.json"]


@pytest.fixture(scope="module")
def earlier_dir(run_dir, tmp_path_factory):
    """``EARLIER`` run once into a new folder (no file replaced), for the tests that
    each start from a copy of its results."""
    out = tmp_path_factory.mktemp("earlier") / "mb"
    proc = _microbench([run_dir, "--output", out, *EARLIER])
    assert proc.returncode == 0, proc.stderr
    assert "replaced" not in proc.stderr
    return out


def _earlier_results(earlier_dir: Path, out: Path) -> dict[str, bytes]:
    """A copy of ``EARLIER``'s results (``earlier_dir``) as ``out``; its files' bytes
    by name."""
    shutil.copytree(earlier_dir, out)
    return _files(out)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("args, after_line, finished", [
    (["-p", "3", "--min-time", "0.5"], "microbench: 16 benchmarks", "0"),
    (["-p", "2", "-n", "1", "-w", "0", "--min-time", "0.2"], "microbench: benchmark 1/16 done",
     r"\d+"),
])
def test_interrupt_keeps_the_earlier_results_whole(run_dir, earlier_dir, tmp_path, args,
                                                   after_line, finished):
    """The earlier files stay as they were, byte for byte, and no new or temporary file
    is left beside them, whether benchmarks had finished or not."""
    out = tmp_path / "mb"
    earlier = _earlier_results(earlier_dir, out)
    assert sorted(earlier) == EARLIER_FILES
    code, lines = _interrupt([run_dir, "--output", out, *args], after_line)
    assert code == 130, lines
    assert re.fullmatch(rf"bench.py microbench: interrupted by SIGINT after {finished} of 16 "
                        rf"benchmarks; nothing was written, the earlier results in "
                        rf"{re.escape(str(out))} are kept \(exit 130\)", lines[-1]), lines
    assert _files(out) == earlier


def test_a_narrower_run_replaces_the_earlier_files_and_says_so(run_dir, earlier_dir,
                                                              tmp_path):
    import pyperf

    out = tmp_path / "mb"
    earlier = _earlier_results(earlier_dir, out)
    proc = _microbench([run_dir, "--output", out, *EARLIER, "--ops", "decode"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        f"microbench: replaced the earlier send.json, cached.json, in_loop_vs_pyperf.json "
        f"in {out}")
    now = _files(out)
    assert sorted(now) == EARLIER_FILES  # no new or temporary file left
    assert all(now[name] != earlier[name] for name in EARLIER_FILES)
    for arm in ("send", "cached"):
        suite = pyperf.BenchmarkSuite.load(str(out / f"{arm}.json"))
        assert suite.get_benchmark_names() == ["num_running=4/s2r/msgpack/decode"]


@pytest.mark.parametrize("earlier", [False, True])
def test_a_file_too_large_for_the_disk_is_named_and_nothing_is_left(run_dir, earlier_dir,
                                                                    tmp_path, earlier):
    """A real limit (RLIMIT_FSIZE: writes past 1 KiB fail with EFBIG, as a full disk
    fails them), not a stub: the arm cannot write its first benchmark (one per arm, so
    that the check before measuring passes the limit). One line naming the file, its
    size and the limit, exit 1; no temporary file; the earlier results as they were, or
    no folder where there were none."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    out = tmp_path / "mb"
    before = _earlier_results(earlier_dir, out) if earlier else None
    proc = subprocess.run([sys.executable, "bench.py", "microbench", str(run_dir),
                           "--output", str(out), *EARLIER, "--ops", "decode"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, preexec_fn=limit)
    kept = f", the earlier results in {out} are kept" if earlier else ""
    assert proc.returncode == 1, proc.stderr
    assert re.fullmatch(
        rf"bench\.py microbench: error: cannot write {re.escape(str(out))}/send\.json: File "
        r"too large: 1,\d{3} bytes, above the file-size limit \(ulimit -f 1: 1,024 bytes a "
        rf"file\); nothing was written{re.escape(kept)}", proc.stderr.splitlines()[-1])
    assert proc.stderr.count("error") == 1
    if earlier:
        assert _files(out) == before
    else:
        assert not out.exists()


@pytest.mark.parametrize("earlier", [False, True])
def test_in_loop_vs_pyperf_that_cannot_be_written_is_named_and_removed(
        run_dir, earlier_dir, tmp_path, monkeypatch, capsys, earlier):
    """The disk fills up under in_loop_vs_pyperf.json after a few bytes: its partial
    file goes; the earlier results stay as they were, or, where there were none, the
    finished pyperf files are kept."""
    out = tmp_path / "mb"
    before = _earlier_results(earlier_dir, out) if earlier else None
    write_text = Path.write_text

    def full(self, text, *args, **kwargs):
        if not self.name.endswith(".new"):
            return write_text(self, text, *args, **kwargs)
        write_text(self, text[:100])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    assert main(["microbench", str(run_dir), "--output", str(out), *EARLIER]) == 1
    err = capsys.readouterr().err.splitlines()
    line = f"bench.py microbench: error: cannot write {out}/in_loop_vs_pyperf.json: " \
           "No space left on device; "
    if earlier:
        assert err[-1] == line + f"nothing was written, the earlier results in {out} are kept"
        assert _files(out) == before
    else:
        assert err[-1] == line + (f"the benchmarks finished until then are kept in "
                                  f"{out}/send.json, {out}/cached.json")
        assert sorted(_files(out)) == ["cached.json", "send.json"]


def test_results_that_cannot_be_written_exit_1_as_a_runs_do(monkeypatch, capsys, tmp_path):
    """A full disk under in_loop_vs_pyperf.json: one line and exit 1 (bad input is 2)."""
    from ipc_bench.cli import microbench as cli_microbench

    def full(*_args, **_kwargs):
        raise OSError(28, "No space left on device", "/x/in_loop_vs_pyperf.json")

    monkeypatch.setattr(cli_microbench, "coordinate", full)
    assert cli_microbench.main([str(tmp_path), "--num-running", "1"]) == 1
    assert capsys.readouterr().err == ("bench.py microbench: error: cannot write "
                                       "/x/in_loop_vs_pyperf.json: No space left on device\n")


@pytest.mark.parametrize("where", ["file", "/dev/null"])
def test_an_output_that_is_not_a_folder_is_refused_as_run_and_report_say(run_dir, tmp_path,
                                                                          where):
    out = tmp_path / "f" if where == "file" else Path(where)
    if where == "file":
        out.write_text("x")
    proc = _microbench([run_dir, "--output", out, *QUICK], timeout=60)
    assert (proc.returncode, proc.stderr) == (
        2, f"bench.py microbench: error: output path {out} exists and is not a folder\n")


CASE = "num_running=16/send/msgpack#0"
#: Which cases keep messages (``capture.CAPTURE_RULE``), as said when a run has none.
RULE = ("repetition 0 of each case keeps its counted steps' messages when it finishes, "
        "except the streamed cases of soak")
KILLED = "runner process 4242 was killed by SIGKILL, noticed while {}"


def _summary(status, cases, failed_case=None):
    from ipc_bench.harness.run_folder import FORMAT_VERSION

    return {"format_version": FORMAT_VERSION, "status": status, "running_case": None,
            "failed_case": failed_case, "metadata": {"scenario": "decode-steady"},
            "cases": cases, "comparisons": [], "byte_model": [], "problems": []}


@pytest.mark.parametrize("summary,why", [
    # the runner SIGKILLed during its handshake: the one case listed, unfinished
    (_summary("failed", [{"case_id": CASE, "complete": False,
                          "error": KILLED.format("waiting for the runner's handshake")}],
              CASE),
     f"the run failed before any case finished ({CASE}: "
     f"{KILLED.format(chr(39).join(['waiting for the runner', 's handshake']))}); {RULE}"),
    # the runner SIGKILLed mid-run: the case kept its steps but did not finish
    (_summary("failed", [{"case_id": CASE, "complete": False, "failed_step": 120,
                          "steps_kept_in": "steps.csv",
                          "error": KILLED.format("waiting for ModelRunnerOutput for "
                                                 "step 120")}], CASE),
     f"the run failed before any case finished ({CASE}: "
     f"{KILLED.format('waiting for ModelRunnerOutput for step 120')}); {RULE}"),
    (_summary("incomplete", [{"case_id": CASE, "complete": False, "failed_step": 7,
                              "error": "interrupted by SIGTERM"}], CASE),
     f"the run was stopped before any case finished ({CASE}: interrupted by SIGTERM); "
     f"{RULE}"),
    (_summary("failed", [], CASE), f"the run failed before any case finished ({CASE}); {RULE}"),
    # one case finished, the next failed: only the finished one is counted
    (_summary("failed", [{"case_id": "num_running=4/send/msgpack#0", "complete": True},
                         {"case_id": CASE, "complete": False, "error": "x"}], CASE),
     f"none of the run's 1 finished case kept messages, and the run failed ({CASE}: x); "
     f"{RULE}"),
])
def test_a_run_whose_cases_did_not_finish_says_so(tmp_path, capsys, summary, why):
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    assert main(["microbench", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"bench.py microbench: error: no captured messages in {tmp_path / 'messages'}: "
        f"{why}\n")


def _bad_summary(kind: str) -> bytes:
    from ipc_bench.harness.run_folder import FORMAT_VERSION

    whole = json.dumps(_summary("complete", [{"case_id": CASE, "complete": True}])).encode()
    cut = whole.index(b'"decode-steady"') + 7  # inside a string, as a file cut short
    return {"cut": whole[:cut], "array": b"[1, 2]",
            "latin-1": "{\"status\": \"\xe9t\xe9\"}".encode("latin-1"),
            "newer": whole.replace(b'"format_version": %d' % FORMAT_VERSION,
                                   b'"format_version": %d' % (FORMAT_VERSION + 1))}[kind]


@pytest.mark.parametrize("kind,reason", [
    ("cut", "cannot read {path}: Unterminated string starting at: line 1 column {col} "
            "(char {char})"),
    ("array", "{path}: not a JSON object (the file holds an array)"),
    ("latin-1", "cannot read {path}: 'utf-8' codec can't decode byte 0xe9 in position 12: "
                "invalid continuation byte"),
    ("newer", "{path}: result format version {newer} is newer than the version this "
              "ipc-bench reads ({version}); read it with the newer ipc-bench that wrote it"),
])
def test_an_unreadable_summary_is_refused_as_report_refuses_it(run_dir, tmp_path, capsys,
                                                               kind, reason):
    from ipc_bench.harness.run_folder import FORMAT_VERSION

    run = tmp_path / "run"
    shutil.copytree(run_dir, run, ignore=shutil.ignore_patterns("microbench", "report"))
    data = _bad_summary(kind)
    (run / "summary.json").write_bytes(data)
    text = data.decode("utf-8", "replace")
    col = text.index('"decode') + 1 if kind == "cut" else 0  # where the cut string starts
    line = reason.format(path=run / "summary.json", col=col, char=col - 1,
                         newer=FORMAT_VERSION + 1, version=FORMAT_VERSION)
    for command in ("report", "microbench"):
        assert main([command, str(run)]) == 2
        assert capsys.readouterr().err == f"bench.py {command}: error: {line}\n"
    assert not (run / "microbench").exists() and not (run / "report").exists()


#: The case tables' footnote of a --pp case of 2 stages on 2 cores (``cores.footnote``).
WITHHELD_FOOTNOTE = (
    "* timings left out: N stages need N + 2 free cores, one each for them and the "
    "scheduler, a spare for the kernel and the harness's threads (N = 2 needs 4); the "
    "run\'s machine had 2. Bytes and the oracles hold.")
WITHHELD_NOTE = ("-*: the run's in-loop timing of such a case, withheld as in its own "
                 "tables; a ratio drawn from it is - too (pyperf's, timed here apart from "
                 "the run, is shown)")


def test_a_case_whose_run_withheld_its_timings_shows_none_in_loop(run_dir, tmp_path):
    """A --pp case on too few cores (analysis.cores): the run's tables show its timings
    as -, so microbench shows its in-loop times as -* and its ratio as -, with the same
    footnote; pyperf's time is shown; the JSON keeps the numbers, flagged."""
    run = tmp_path / "run"
    shutil.copytree(run_dir, run, ignore=shutil.ignore_patterns("microbench", "report"))
    summary = json.loads((run / "summary.json").read_text())
    for case in summary["cases"]:
        if case["case_id"] == "num_running=4/send/msgpack#0":
            case.update(pp=2, pp_cores=2, pp_timings_withheld=True)
    (run / "summary.json").write_text(json.dumps(summary))
    out = tmp_path / "mb"
    proc = _microbench([run, "--output", out, "--num-running", "4", "--directions", "s2r",
                        "--ops", "encode", *QUICK])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    rows = {line.split()[0]: line.split() for line in lines
            if line.startswith(("send ", "cached "))}
    assert rows["send"][6:8] == ["-*", "-*"] and rows["send"][-1] == "-"
    assert re.fullmatch(r"\d+\.\d\d", rows["send"][8])  # pyperf's own time is shown
    assert all(re.fullmatch(r"\d+\.\d\d", c) for c in rows["cached"][6:8] + rows["cached"][-1:])
    at = lines.index(WITHHELD_FOOTNOTE)
    assert lines[at + 1] == WITHHELD_NOTE
    assert re.fullmatch(r"encode: in-loop mean / pyperf mean: median \S+ \(range \S+ \.\. \S+\)"
                        r" over 1 benchmarks, 1 withheld \(\*\) left out; > 1: .*",
                        lines[at + 2]), lines[at + 2]
    data = {r["arm"]: r for r in json.loads((out / "in_loop_vs_pyperf.json").read_text())}
    assert (data["send"]["timings_withheld"], data["send"]["readers"],
            data["send"]["cores"]) == (True, 2, 2)
    assert data["send"]["in_loop_mean_ns"] > 0  # kept, as summary.json keeps them
    assert (data["cached"]["timings_withheld"], data["cached"]["readers"]) == (False, None)


def test_every_case_withheld_gives_no_ratio_summary():
    from ipc_bench.report.microbench import format_in_loop_vs_pyperf

    row = dict(arm="send", workload="num_running=4,pp=2", direction="s2r", codec="msgpack",
               op="decode", mean_payload_bytes=1234.0, in_loop_mean_ns=5000.0,
               in_loop_median_ns=4000.0, pyperf_mean_ns=2500.0, pyperf_stdev_ns=100.0,
               in_loop_to_pyperf=2.0, timings_withheld=True, readers_kind="pp", readers=2,
               cores=2)
    lines = format_in_loop_vs_pyperf([row]).splitlines()
    assert lines[-5].split() == ["send", "num_running=4,pp=2", "s2r", "msgpack", "decode",
                                 "1,234", "-*", "-*", "2.50", "+-", "0.10", "-"]
    assert lines[-4:] == [
        "bytes: the mean payload of the captured messages timed here (a sample of the "
        "case's steps), not the case's mean over all its counted steps",
        WITHHELD_FOOTNOTE, WITHHELD_NOTE,
                          "decode: in-loop mean / pyperf mean: none shown, the run withheld "
                          "the in-loop timings of its one benchmark (*)"]


def test_a_case_capture_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    """A full disk at the second direction's file removes the first's too: no case is
    left with one direction that a microbench would time alone."""
    import errno
    import os

    infos = [capture.CaptureInfo(format_version=1, case_id="w=1/cached/msgpack#0",
                                 scenario="s", workload="w=1", policy="cached",
                                 arm="cached", codec="msgpack", repetition=0, direction=d,
                                 message_type="m", num_counted_steps=0, seqs=[])
             for d in ("s2r", "r2s")]
    monkeypatch.setattr(capture, "build_captures", lambda result, n: infos)
    real, calls = capture._write_file, []

    def write(path, data):
        calls.append(path.name)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, data)

    monkeypatch.setattr(capture, "_write_file", write)
    with pytest.raises(OSError):
        capture.save_captures(tmp_path, result=None)
    assert calls == ["w=1.cached.msgpack.r0.s2r.msgpack.tmp",
                     "w=1.cached.msgpack.r0.r2s.msgpack.tmp"]
    assert list((tmp_path / "messages").iterdir()) == []


def test_a_finished_case_without_its_capture_is_named(run_dir, tmp_path):
    """Its capture removed (a run whose disk filled as the case ended): the microbench
    names it, not timing it, unless the selection leaves it out anyway."""
    from ipc_bench.analysis.microbench import uncaptured_cases

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("microbench"))
    infos = [i for _, i in capture.load_capture_infos(copy)]
    assert uncaptured_cases(str(copy), Selection(), infos) == []
    for path in (copy / "messages").glob("num_running=2.cached.*"):
        path.unlink()
    infos = [i for _, i in capture.load_capture_infos(copy)]
    assert uncaptured_cases(str(copy), Selection(), infos) == ["num_running=2/cached/msgpack#0"]
    assert uncaptured_cases(str(copy), Selection(num_running=(4,)), infos) == []


def test_a_capture_file_cut_short_is_said_so(run_dir, tmp_path):
    path = next((run_dir / "messages").glob("*.msgpack"))
    cut = tmp_path / path.name
    cut.write_bytes(path.read_bytes()[:-7])
    for read in (capture.load_capture, capture.load_capture_info):
        with pytest.raises(capture.CaptureError) as err:
            read(cut)
        assert str(err.value) == (f"{cut}: cut short or altered ({cut.stat().st_size:,} "
                                  "bytes, its data running past its end): not a whole "
                                  "capture file")


def test_a_damaged_capture_the_selection_leaves_out_does_not_stop_the_others(run_dir,
                                                                              tmp_path):
    """A capture file of num_running=2 cut short: a selection of num_running=4 (or of
    r2s alone) times the rest; one that keeps it names the damaged file."""
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("microbench"))
    damaged = copy / "messages" / "num_running=2.send.msgpack.r0.s2r.msgpack"
    damaged.write_bytes(damaged.read_bytes()[:-7])
    kept = select_captures(str(copy), Selection(num_running=(4,)))
    assert kept and {i.workload for _, i in kept} == {"num_running=4"}
    assert {i.direction for _, i in select_captures(str(copy), Selection(
        directions=("r2s",)))} == {"r2s"}
    with pytest.raises(capture.CaptureError) as err:
        select_captures(str(copy), Selection(num_running=(2,)))
    assert str(err.value).startswith(f"{damaged}: cut short")


def test_num_running_on_a_trace_replay_says_it_has_no_such_label(run_dir, capsys,
                                                                 monkeypatch):
    """A trace replay's messages are labelled ``trace=NAME:N``, with no num_running:
    the line says so plainly and what to do (was ``available: none (no such label)``)."""
    from ipc_bench.analysis import microbench

    infos = microbench._capture_infos

    def as_a_replay(run, selection):
        return [(p, capture.CaptureInfo(**{**{f: getattr(i, f) for f in i.__struct_fields__},
                                           "workload": "trace=azure-conv:20"}))
                for p, i in infos(run, selection)]

    monkeypatch.setattr(microbench, "_capture_infos", as_a_replay)
    assert main(["microbench", str(run_dir), "--num-running", "9"]) == 2
    assert capsys.readouterr().err == (
        f"bench.py microbench: error: --num-running 9: the messages captured in {run_dir} "
        "carry no num_running label (a trace replay): leave out --num-running\n")
    assert not (run_dir / "microbench").exists()


@pytest.mark.parametrize("given", [False, True])
def test_an_output_folder_that_cannot_be_made_is_bad_input(run_dir, capsys, monkeypatch,
                                                           tmp_path, given):
    """RUN_DIR/microbench on a read-only file system: exit 2 before anything is timed,
    and the default place's refusal points at --output (as report's does); an --output
    given that is refused gets no such hint."""
    out = tmp_path / "mb" if given else run_dir / "microbench"
    mkdir = Path.mkdir

    def read_only(self, *args, **kwargs):
        if self == out:
            raise OSError(30, "Read-only file system", str(self))
        return mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", read_only)
    args = ["--output", str(out)] if given else []
    assert main(["microbench", str(run_dir), *args, *QUICK]) == 2
    hint = "" if given else "; write it elsewhere with --output DIR"
    assert capsys.readouterr().err == (f"bench.py microbench: error: cannot write to {out}: "
                                       f"Read-only file system{hint}\n")
    assert not out.exists()


def test_an_arm_killed_by_a_signal_names_it():
    """A negative exit code is a signal: the arm process's own (``Popen``'s) and the
    one pyperf reports for a worker in the arm's last line both name it."""
    from ipc_bench.analysis.microbench import arm_failed_line

    assert arm_failed_line("cached", 1, "RuntimeError: /v/bin/python failed with exit code "
                           "-9") == (
        "bench.py microbench: error: pyperf run of arm cached exited with 1: RuntimeError: "
        "/v/bin/python failed with exit code -9 (killed by SIGKILL)")
    assert arm_failed_line("send", -15, "no message") == (
        "bench.py microbench: error: pyperf run of arm send was killed by SIGTERM: no "
        "message")
    assert arm_failed_line("send", 2, "ValueError: exit code 3") == (
        "bench.py microbench: error: pyperf run of arm send exited with 2: ValueError: exit "
        "code 3")


def test_an_empty_run_folder_name_is_refused_as_an_empty_output_is(capsys):
    """``bench.py microbench ""`` read as the current folder (``.: not a run folder``)."""
    assert main(["microbench", ""]) == 2
    assert capsys.readouterr().err == ("bench.py microbench: error: argument RUN_DIR: "
                                       "expected the path of a folder, got ''\n")


def test_a_folder_of_runs_is_answered_with_one_of_them(tmp_path, capsys):
    """microbench takes one RUN_DIR: a folder of runs is answered "give one of them"
    (report, which takes several, says "one or more of them")."""
    for name in ("b-run", "a-run"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text("{}")
    assert main(["microbench", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"bench.py microbench: error: {tmp_path}: not a run folder (no summary.json); it "
        f"holds 2 run folders: give one of them, e.g. {tmp_path}/a-run\n")
