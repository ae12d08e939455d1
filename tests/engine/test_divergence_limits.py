"""scripts/divergence_check.py's bounds and numbering: ``--budget-s``, ``--runs``,
``--seed`` and ``--num-running`` refused past their limits (one line, exit 2, before
any run); refusals in the script's own option names; the runs not started for want of
budget in one line; after a failed run, every pair and margin line (and the JSON)
naming the real run numbers; and an ``--output`` whose disk cannot take a write
refused before any run."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from types import SimpleNamespace

import pytest

from script_module import ROOT, load_script

div = load_script("divergence_check")

A, B = "cmpl-a-0", "cmpl-b-0"


def _record(n: int, b_token: int = 22) -> dict:
    """A completed run's record, numbered ``n``: two steps of requests A and B."""
    return dict(device="cpu (attention gather)", settings={}, n=n, steps=[
        dict(req_ids=[A, B], tokens=[11, 21], margins=[0.5, 0.25]),
        dict(req_ids=[A, B], tokens=[12, b_token], margins=[0.0625, 0.001953125])])


def _refused(argv, capsys) -> str:
    assert div.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


# ------------------------------------------------------------------ bounds


@pytest.mark.parametrize("argv,line", [
    # 1: past poll's limit this ended in an OverflowError traceback, exit 1
    (["--budget-s", "2200000"], "argument --budget-s: must be at most 86400, got 2200000"),
    (["--budget-s", "1e10"], "argument --budget-s: must be at most 86400, got 1e10"),
    # 3: a million runs printed a million lines
    (["--runs", "101"], "argument --runs: must be at most 100, got 101"),
    (["--runs", "1000000"], "argument --runs: must be at most 100, got 1000000"),
    # 4: every run failed with an OverflowError in its worker, exit 3
    (["--seed", "99999999999999999999999"], "argument --seed: must be at most "
     "9223372036854775807 (2**63 - 1, as bench.py's --seed), got 99999999999999999999999"),
    (["--seed", str(2**63)], "argument --seed: must be at most 9223372036854775807 (2**63 "
     "- 1, as bench.py's --seed), got 9223372036854775808"),
    # 5: was "max_num_seqs must be at most 65536 ... (--max-num-seqs sets it)"
    (["--num-running", "100000"], "argument --num-running: must be at most 8192 (the "
     "case's max_num_batched_tokens: every running request decodes a token each step), "
     "got 100000"),
    (["--num-running", "8193"], "argument --num-running: must be at most 8192 (the "
     "case's max_num_batched_tokens: every running request decodes a token each step), "
     "got 8193"),
])
def test_a_value_past_its_bound_is_one_line_and_exit_2(argv, line, capsys):
    assert _refused(argv, capsys) == f"divergence_check.py: error: {line}\n"


def test_the_bounds_themselves_are_taken():
    ns = div._parse(["--budget-s", "86400", "--runs", "100", "--seed", str(2**63 - 1),
                     "--num-running", "8192"])
    assert (ns.budget_s, ns.runs, ns.seed, ns.num_running) == (86400.0, 100, 2**63 - 1, 8192)


def test_the_num_running_bound_is_the_steady_cases_token_budget():
    from ipc_bench.harness.scenario import ScenarioOptions, steady_scheduler_config

    assert div.MAX_NUM_RUNNING == steady_scheduler_config(
        ScenarioOptions(), 1).max_num_batched_tokens == 8192


# ------------------------------------------------------------------ the script's own words


@pytest.mark.parametrize("argv,line", [
    (["--preset", "qwen2.5-0.5b", "--num-running", "64", "--steps", "5000"],
     "qwen2.5-0.5b needs 1.8 GiB of weights + 6.1 GiB of KV cache (num_blocks 16,640 x "
     "block_size 16), 7.9 GiB in all, on cpu; the CPU limit is 6.0 GiB: lower "
     "--num-running (at most 43: it sizes the KV cache here) or use a smaller --preset"),
    (["--preset", "llama-3.1-8b"],
     "llama-3.1-8b needs 29.9 GiB of weights + 5.0 GiB of KV cache (num_blocks 1,280 x "
     "block_size 16), 34.9 GiB in all, on cpu; the CPU limit is 6.0 GiB: the weights "
     "alone do not fit: use a smaller --preset"),
])
def test_a_memory_refusal_names_this_scripts_options(argv, line, capsys):
    err = _refused(["--device", "cpu", *argv], capsys)
    assert err == f"divergence_check.py: error: {line}\n"
    assert not any(o in err for o in ("--num-blocks", "--model-preset", "--max-num-seqs"))


def test_the_most_running_it_advises_is_taken_and_one_more_is_refused(capsys):
    # 43 running: (43 + 1) x 256 = 11,264 blocks, within the 11,358 that fit
    assert div.main(["--device", "cpu", "--preset", "qwen2.5-0.5b", "--num-running", "43",
                     "--budget-s", "1", "--runs", "2"]) == div.EXIT_INCOMPLETE
    assert "runs 1-2: not started" in capsys.readouterr().out
    assert "(at most 43: " in _refused(["--device", "cpu", "--preset", "qwen2.5-0.5b",
                                        "--num-running", "44"], capsys)


def test_memory_words_where_not_even_one_requests_share_fits():
    exc = SimpleNamespace(needs="NEEDS", blocks_that_fit=300)  # under 2 x 256 blocks
    assert div.memory_words(exc, 16) == (
        "NEEDS: the weights and one request's share of the KV cache do not fit: use a "
        "smaller --preset")


# ------------------------------------------------------------------ runs and their numbers


class _Clock:
    """``time`` for the script: ``monotonic`` as ``now``, which the fake runs advance."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def _fake_runs(monkeypatch, outcomes: dict, seconds_each: float = 1.0) -> _Clock:
    """``run_fresh`` replaced: run ``n`` gives ``outcomes[n]`` (a record, or the reason
    it failed) and takes ``seconds_each`` of the fake clock."""
    clock = _Clock()
    monkeypatch.setattr(div, "time", clock)

    def run_fresh(settings, timeout_s, folder, n):
        clock.now += seconds_each
        got = outcomes[n]
        return (None, got) if isinstance(got, str) else (got, "")
    monkeypatch.setattr(div, "run_fresh", run_fresh)
    return clock


def test_after_a_failed_run_every_line_and_the_json_name_the_real_runs(
        tmp_path, monkeypatch, capsys):
    _fake_runs(monkeypatch, {1: _record(1), 2: "was killed by SIGKILL: no output", 3: _record(3, 99),
                             4: _record(4)})
    out = tmp_path / "div.json"
    assert div.main(["--device", "cpu", "--runs", "4", "--output", str(out)]) == 1
    lines = capsys.readouterr().out.splitlines()[1:]
    assert lines == [
        "  run 1: 2 steps, 4 tokens, 1.0 s; cpu (attention gather)",
        "  run 2: FAILED was killed by SIGKILL: no output",
        "  run 3: 2 steps, 4 tokens, 1.0 s; cpu (attention gather)",
        "  run 4: 2 steps, 4 tokens, 1.0 s; cpu (attention gather)",
        "comparing runs 1, 3 and 4, the 3 of 4 that completed",
        f"run 1 vs run 3: DIVERGE at step 1, request {B}: token 22 (top-2 margin "
        "0.00195312) vs 99 (top-2 margin 0.00195312)",
        "run 1 vs run 4: equal over 2 steps",
        f"run 3 vs run 4: DIVERGE at step 1, request {B}: token 99 (top-2 margin "
        "0.00195312) vs 22 (top-2 margin 0.00195312)",
        f"run 1: smallest top-2 margins: 0.00195312 (step 1, {B}), 0.0625 (step 1, {A}), "
        f"0.25 (step 0, {B}), 0.5 (step 0, {A})",
        "run 3: smallest top-2 margins: as run 1",
        "run 4: smallest top-2 margins: as run 1",
        "result: the runs DIVERGE: 2 of 3 pairs differ (a found divergence is this "
        "check's result, exit 1)"]
    data = json.loads(out.read_text())
    assert data["failures"] == ["run 2: FAILED was killed by SIGKILL: no output"]
    assert data["compared"] == [1, 3, 4] == [r["n"] for r in data["runs"]]
    assert [p["runs"] for p in data["pairs"]] == [[1, 3], [1, 4], [3, 4]]
    assert len(data["smallest"]) == 3


def test_two_runs_that_agree_after_a_failure_name_themselves(monkeypatch, capsys):
    _fake_runs(monkeypatch, {1: "exit 1: boom", 2: _record(2), 3: _record(3)})
    assert div.main(["--device", "cpu", "--runs", "3"]) == div.EXIT_INCOMPLETE
    assert capsys.readouterr().out.splitlines()[4:] == [
        "comparing runs 2 and 3, the 2 of 3 that completed",
        "run 2 vs run 3: equal over 2 steps",
        f"run 2: smallest top-2 margins: 0.00195312 (step 1, {B}), 0.0625 (step 1, {A}), "
        f"0.25 (step 0, {B}), 0.5 (step 0, {A})",
        "run 3: smallest top-2 margins: as run 2",
        "result: incomplete: 2 of 3 runs completed, and they agree (exit 3)"]


def test_the_runs_left_when_the_budget_runs_out_are_one_line(tmp_path, monkeypatch, capsys):
    # run 1 takes 16 of the 20 s: 4 s are left, under MIN_RUN_S (5 s)
    _fake_runs(monkeypatch, {1: _record(1)}, seconds_each=16.0)
    out = tmp_path / "div.json"
    assert div.main(["--device", "cpu", "--runs", "100", "--budget-s", "20",
                     "--output", str(out)]) == div.EXIT_INCOMPLETE
    assert capsys.readouterr().out.splitlines()[1:] == [
        "  run 1: 2 steps, 4 tokens, 16.0 s; cpu (attention gather)",
        "  runs 2-100: not started: --budget-s 20 ran out",
        f"run 1: smallest top-2 margins: 0.00195312 (step 1, {B}), 0.0625 (step 1, {A}), "
        f"0.25 (step 0, {B}), 0.5 (step 0, {A})",
        "result: incomplete: 1 of 100 runs completed (exit 3)"]
    assert json.loads(out.read_text())["failures"] == [
        "runs 2-100: not started: --budget-s 20 ran out"]


def test_the_last_run_alone_not_started_is_named_as_one_run(monkeypatch, capsys):
    _fake_runs(monkeypatch, {1: _record(1)}, seconds_each=16.0)
    assert div.main(["--device", "cpu", "--runs", "2", "--budget-s", "20"]) == 3
    assert "  run 2: not started: --budget-s 20 ran out\n" in capsys.readouterr().out


def test_compare_runs_without_numbers_counts_from_one():
    plain = [{k: v for k, v in _record(0).items() if k != "n"} for _ in range(2)]
    result = div.compare_runs(plain)
    assert (result["compared"], [p["runs"] for p in result["pairs"]]) == ([1, 2], [[1, 2]])
    assert div.compare_lines(result, 2)[0] == "run 1 vs run 2: equal over 2 steps"


# ------------------------------------------------------------------ --output's disk


def _limit_file_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))


def test_an_output_whose_disk_refuses_a_write_is_refused_before_any_run(tmp_path):
    """A real refusal (RLIMIT_FSIZE: a write past 1 KiB fails with EFBIG), as a full
    disk's ENOSPC: the output file, opened and left empty, passed, every run ran, and
    the result was lost."""
    out = tmp_path / "div.json"
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "divergence_check.py"),
                           "--device", "cpu", "--runs", "2", "--output", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env=env,
                          preexec_fn=_limit_file_size)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"divergence_check.py: error: argument --output: cannot write {out}: File "
        "too large\n")
    assert list(tmp_path.iterdir()) == []  # neither the output nor the probe is left


def test_an_output_file_that_exists_keeps_its_bytes_and_no_probe_is_left(tmp_path):
    out = tmp_path / "div.json"
    out.write_text("earlier")
    assert div.output_file(str(out)) == str(out)
    assert (out.read_text(), sorted(p.name for p in tmp_path.iterdir())) == (
        "earlier", ["div.json"])


def test_a_device_output_is_taken_without_a_probe_beside_it():
    before = set(os.listdir("/dev"))
    assert div.output_file("/dev/null") == "/dev/null"
    assert set(os.listdir("/dev")) <= before
