"""The per-step memory check (``memory.check_step_memory``) for the cases it once left
out: ``--pp`` stages (``STEP_BYTES_PP_*``, in the requests of a micro-batch) and draft
tokens (``STEP_BYTES_SPEC*``, at 8 drafts, plus a draft's bytes over 8), with
``MemAvailable`` faked through its seam (``cli.run.available_memory_bytes``)."""

from __future__ import annotations

import dataclasses

import msgspec
import pytest

from ipc_bench import cli
from ipc_bench.cli import execute
from ipc_bench.cli import run as cli_run
from ipc_bench.harness import memory
from ipc_bench.harness.memory import case_steps, check_step_memory, step_bytes

COMMON = ["--codecs", "msgpack", "--no-single-process"]
STEADY = ["--scenario", "decode-steady"] + COMMON
PP = ["--scenario", "pp"] + COMMON


@pytest.fixture
def no_run(monkeypatch):
    """Cases that pass every check are not run: ``run_cases`` answers 0 at once."""
    ran = []
    monkeypatch.setattr(execute, "run_cases", lambda args, cases, *a, **k: ran.append(
        len(cases)) or 0)
    return ran


def _main(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, err.splitlines(), out


def _cases(argv):
    from ipc_bench.cli.options import build_parser
    from ipc_bench.harness.scenario import discover

    args = build_parser().parse_args(argv)
    module = discover()[args.scenario]
    opts = cli_run._scenario_options(args)
    cases = cli_run._build_cases(args.scenario, module, opts)
    return cli_run.with_spec_decoding(cases, args.num_spec_tokens, args.spec_acceptance)


def test_the_measured_constants():
    assert (memory.STEP_BYTES_SPEC, memory.STEP_BYTES_SPEC_PER_DRAFT,
            memory.SPEC_MEASURED_DRAFTS) == ((1_100, 585, 300, 323), (12, 12), 8)
    assert (memory.STEP_BYTES_PP_SCHEDULER, memory.STEP_BYTES_PP_LAST_STAGE,
            memory.STEP_BYTES_PP_OTHER_STAGE) == ((0, 231, 1_628), (860, 123, 1_120), (1_010, 23))


def test_drafts_are_estimated_from_their_own_figures():
    four, many, _, more = _cases(STEADY + ["--num-running", "4,256", "--steps", "100",
                                           "--num-spec-tokens", "8,16", "--policies",
                                           "send"])
    assert [c.labels for c in (four, many, more)] == [
        {"num_running": 4, "num_spec_tokens": 8}, {"num_running": 256, "num_spec_tokens": 8},
        {"num_running": 256, "num_spec_tokens": 16}]
    # 8 drafts: 1,100 + 585 x 4 + 300 + 323 x 4; 1,100 + 585 x 256 + 300 + 323 x 256
    assert (step_bytes(four), step_bytes(many)) == (3_440 + 1_592, 150_860 + 82_988) == (
        5_032, 233_848)
    assert step_bytes(many, remote_runners=True) == 150_860
    # with or without a floor: the same figures
    assert step_bytes(dataclasses.replace(many, floor=False)) == 233_848
    # 16 drafts, 8 over 8: + 12 bytes a running request each, in both processes
    assert step_bytes(more) == 1_100 + (585 + 96) * 256 + 300 + (323 + 96) * 256 == 283_000
    # fewer than 8 drafts: 8's figures
    two = dataclasses.replace(many, scheduler=msgspec.structs.replace(
        many.scheduler, num_spec_tokens=2))
    assert step_bytes(two) == 233_848
    # --tp: each rank at the runner's figures
    assert step_bytes(dataclasses.replace(many, tp=2)) == 150_860 + 2 * 82_988
    assert case_steps(many) == 200


def test_a_draft_run_that_cannot_fit_is_refused(monkeypatch, capsys, no_run):
    monkeypatch.setattr(cli_run, "available_memory_bytes", lambda: 10**10)
    code, lines, out = _main(STEADY + ["--num-running", "256", "--num-spec-tokens", "8",
                                       "--steps", "100000"], capsys)
    # 233,848 bytes a step x 100,100 steps and the floor's chunk, 4,096 x (462 + 354) x
    # 256 = 855,638,016 bytes; advice: (10**10 // 2 - 855,638,016) // 233,848 - 100 =
    # 17,622, rounded down to two significant digits
    assert (code, lines, out, no_run) == (2, [
        "bench.py: error: the largest case, num_running=256,num_spec_tokens=8/send/msgpack#0 "
        "(100,100 steps with warm-up), needs about 24.3 GB of memory for its per-step "
        "records (233,848 bytes a step, and 856 MB for its floor's chunk of 4,096 decoded "
        "steps), more than the 10.0 GB available (MemAvailable): --steps 17,000 or fewer "
        "fits in half of it (--scenario soak writes its steps to disk as it goes and runs "
        "as long as asked)"], "", [])


def test_a_draft_run_over_half_the_memory_is_warned_and_runs(monkeypatch, capsys, no_run):
    monkeypatch.setattr(cli_run, "available_memory_bytes", lambda: 10**9)
    code, lines, _ = _main(STEADY + ["--num-running", "256", "--num-spec-tokens", "8",
                                     "--steps", "1500"], capsys)
    # 233,848 x 1,600 + 1,500 x (462 + 354) x 256 = 687,500,800 bytes: over half of 1 GB,
    # under all of it
    assert (code, no_run) == (0, [2])
    assert lines == [
        "bench.py: warning: the largest case, num_running=256,num_spec_tokens=8/send/"
        "msgpack#0 (1,600 steps with warm-up), needs about 688 MB of memory for its "
        "per-step records (233,848 bytes a step, and 313 MB for its floor's chunk of 1,500 "
        "decoded steps), 69 % of the 1.0 GB available (MemAvailable)"]


def test_pipeline_stages_are_estimated_in_their_micro_batches():
    one, two, four = (_cases(PP + ["--pp", str(n), "--num-running", "256", "--steps", "100",
                                   "--policies", "send"])[0] for n in (1, 2, 4))
    assert [(c.pp, c.floor, c.labels) for c in (one, two, four)] == [
        (n, False, {"num_running": 256, "pp": n}) for n in (1, 2, 4)]
    # --pp 2, micro-batches of 128: the scheduler 231 x 128 + 1,628 x 2, the last stage
    # 860 + 123 x 128 + 1,120 x 1, the other 1,010 + 23 x 128
    assert step_bytes(two) == 32_824 + 17_724 + 3_954 == 54_502
    assert step_bytes(two, remote_runners=True) == 32_824
    # --pp 4, micro-batches of 64: 231 x 64 + 1,628 x 4; 860 + 123 x 64 + 1,120 x 3;
    # three others of 1,010 + 23 x 64
    assert step_bytes(four) == 21_296 + 12_092 + 3 * 2_482 == 40_834
    # --pp 1: one stage, the last, with the whole batch
    assert step_bytes(one) == 231 * 256 + 1_628 + 860 + 123 * 256 == 93_112
    # a batch that does not divide: micro-batches of ceil(6 / 4) = 2
    odd = dataclasses.replace(four, labels={"num_running": 6, "pp": 4})
    assert step_bytes(odd) == (462 + 6_512) + (860 + 246 + 3_360) + 3 * (1_010 + 46)
    assert case_steps(two) == 130  # 30 warm-up steps


def _estimate_lines(lines):
    """The memory check's lines (a --pp run on too few cores also warns of that)."""
    return [line for line in lines if "per-step records" in line]


def test_a_pipeline_run_that_cannot_fit_is_refused(monkeypatch, capsys, no_run):
    monkeypatch.setattr(cli_run, "available_memory_bytes", lambda: 10**10)
    code, lines, out = _main(PP + ["--pp", "1", "--num-running", "256", "--steps",
                                   "1000000"], capsys)
    # 93,112 bytes a step x 1,000,030 steps; advice: 10**10 // 2 // 93,112 - 30 = 53,668,
    # rounded down to two significant digits
    assert (code, _estimate_lines(lines), out, no_run) == (2, [
        "bench.py: error: the largest case, num_running=256,pp=1/send/msgpack#0 "
        "(1,000,030 steps with warm-up), needs about 93.1 GB of memory for its per-step "
        "records (93,112 bytes a step), more than the 10.0 GB available (MemAvailable): "
        "--steps 53,000 or fewer fits in half of it (--scenario soak writes its steps to "
        "disk as it goes and runs as long as asked)"], "", [])


def test_a_pipeline_run_over_half_the_memory_is_warned_and_runs(monkeypatch, capsys,
                                                                 no_run):
    monkeypatch.setattr(cli_run, "available_memory_bytes", lambda: 10**9)
    code, lines, _ = _main(PP + ["--pp", "2", "--num-running", "256", "--steps", "15000"],
                           capsys)
    # 54,502 x 15,030 = 819,165,060 bytes: over half of 1 GB, under all of it
    assert (code, no_run) == (0, [2])
    assert _estimate_lines(lines) == [
        "bench.py: warning: the largest case, num_running=256,pp=2/send/msgpack#0 "
        "(15,030 steps with warm-up), needs about 819 MB of memory for its per-step "
        "records (54,502 bytes a step), 82 % of the 1.0 GB available (MemAvailable)"]
