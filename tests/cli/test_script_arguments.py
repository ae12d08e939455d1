"""Bad input to the scripts of scripts/ (hot_path_bench, verify_step_bench, codec_fit,
ring_bench, oracle_cost, aa_false_positive, variant_table, byte_sweep,
decode_step_check): one line on stderr, no usage banner, no
traceback, exit 2, before any run, benchmark or model; codec_fit's checks of the run
folders it is given, on synthetic summaries (no runs)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from script_module import load_script, run_script

ROOT = Path(__file__).resolve().parents[2]


#: (script, its arguments, the one line it writes on stderr before exiting 2)
BAD_INPUT = [
    ("hot_path_bench", ["--only", "nonexistent bench"], "hot_path_bench.py: error: argument "
     "--only: 'nonexistent bench' is in no benchmark's name (the names: python "
     "scripts/hot_path_bench.py --list)"),
    ("hot_path_bench", ["--only", "oracle,inproc,zz"], "hot_path_bench.py: error: argument "
     "--only: 'inproc', 'zz' are in no benchmark's name (the names: python "
     "scripts/hot_path_bench.py --list)"),
    ("hot_path_bench", ["--bogus"], "hot_path_bench.py: error: unrecognized arguments: "
     "--bogus"),
    # the engine's memory refusal with this script's advice, from its figures: 196,383
    # blocks fit, 785 rows of 250 blocks; 3 blocks a row at 60,000 rows (48 tokens) is
    # below --context-min 64, and no vocabulary fits beside 457.8 GiB of cache
    ("verify_step_bench", ["--device", "cpu", "--preset", "cpu", "--num-running", "60000",
                           "--context-max", "4000"],
     "verify_step_bench.py: error: --num-running 60000: cpu needs 0.0 GiB of weights + 457.8 "
     "GiB of KV cache (num_blocks 15,000,000 x block_size 16), 457.8 GiB in all, on cpu; "
     "the CPU limit is 6.0 GiB: lower --num-running (at most 785 at this --context-max), "
     "or use a smaller --preset"),
    # the largest size is the one checked: 65 blocks a row at 3,000 rows, 1,040 tokens
    ("verify_step_bench", ["--device", "cpu", "--preset", "cpu", "--num-running",
                           "16,3000,64", "--context-max", "4000"],
     "verify_step_bench.py: error: --num-running 3000: cpu needs 0.0 GiB of weights + 22.9 "
     "GiB of KV cache (num_blocks 750,000 x block_size 16), 22.9 GiB in all, on cpu; the "
     "CPU limit is 6.0 GiB: lower --num-running (at most 785 at this --context-max) or "
     "--context-max (at most 1,040 at this --num-running), or use a smaller --preset"),
    # the cpu preset's weights grow by 1 KiB an id (embedding and LM head of 256 floats)
    ("verify_step_bench", ["--device", "cpu", "--preset", "cpu", "--vocab-size",
                           "2000000000"],
     "verify_step_bench.py: error: --num-running 64: cpu needs 3814.7 GiB of weights + 0.1 "
     "GiB of KV cache (num_blocks 2,048 x block_size 16), 3814.8 GiB in all, on cpu; the "
     "CPU limit is 6.0 GiB: the weights alone do not fit: lower --vocab-size (at most "
     "3,109,885 at this --num-running and --context-max), or use a smaller --preset"),
    ("verify_step_bench", ["--device", "cpu", "--preset", "llama-3.1-8b", "--num-running",
                           "4"],
     "verify_step_bench.py: error: --num-running 4: llama-3.1-8b needs 26.0 GiB of weights + "
     "0.5 GiB of KV cache (num_blocks 128 x block_size 16), 26.5 GiB in all, on cpu; the "
     "CPU limit is 6.0 GiB: the weights alone do not fit: use a smaller --preset"),
    ("verify_step_bench", ["--vocab-size", "0"],
     "verify_step_bench.py: error: --vocab-size: must be at least 2, got 0"),
    ("verify_step_bench", ["--threads", "0"],
     "verify_step_bench.py: error: --threads: must be at least 1, got 0"),
    ("verify_step_bench", ["--threads", "2000"],
     "verify_step_bench.py: error: --threads: must be at most 1,024, got 2,000"),
    ("verify_step_bench", ["--seed", "-1"], "verify_step_bench.py: error: --seed: must be at "
     "least 0, got -1"),
    ("verify_step_bench", ["--preset", "x"], "verify_step_bench.py: error: --preset: invalid "
     "choice: 'x' (choose from 'cpu', 'llama-3.1-8b', 'llama-3.2-1b', 'qwen2.5-0.5b', "
     "'tiny')"),
    ("verify_step_bench", ["--context-min", "2"], "verify_step_bench.py: error: "
     "--context-min: must be at least --num-spec-tokens + 1 (3) for a row of 3 query "
     "tokens, got 2"),
    ("verify_step_bench", ["--context-max", "32"], "verify_step_bench.py: error: "
     "--context-max: must be at least --context-min (64), got 32"),
    ("verify_step_bench", ["--num-running", "65536", "--context-max", "40000"],
     "verify_step_bench.py: error: --num-running 65536: max_num_seqs x max_model_len "
     "(2621505536) exceeds the runner's 2**31-token buffer"),
    ("codec_fit", ["--steps", "0"], "codec_fit.py: error: argument --steps: must be at "
     "least 1, got 0"),
    ("codec_fit", ["--repeat", "0"], "codec_fit.py: error: argument --repeat: must be at "
     "least 1, got 0"),
    ("codec_fit", ["--json", "{missing}/dir/x.json"], "codec_fit.py: error: argument "
     "--json: {missing}/dir/x.json: No such file or directory"),
    ("codec_fit", ["--stat", "foo"], "codec_fit.py: error: argument --stat: invalid "
     "choice: 'foo' (choose from 'median', 'mean')"),
    ("codec_fit", ["--fit-run", "{missing}"], "codec_fit.py: error: argument "
     "--fit-run: no summary.json in {missing}"),
    ("codec_fit", ["--output", "/proc/runs"], "codec_fit.py: error: argument --output: "
     "/proc/runs: cannot write in /proc: No such file or directory"),
    ("codec_fit", ["--output", "{missing}/runs"], "codec_fit.py: error: argument "
     "--output: {missing}/runs: no such folder: {missing}"),
    ("codec_fit", ["--output", ""], "codec_fit.py: error: argument --output: '': the "
     "path is empty (give a folder's path)"),
    ("codec_fit", ["--output", "{missing}", "--fit-run", "{missing}", "--check-run",
                   "{missing}"], "codec_fit.py: error: --output applies to the runs made "
     "here: with --fit-run and --check-run both given none is made"),
    ("codec_fit", ["--steps", "50", "--repeat", "2", "--fit-run", "{missing}",
                   "--check-run", "{missing}"], "codec_fit.py: error: --steps, --repeat "
     "apply to the runs made here: with --fit-run and --check-run both given none is made"),
    ("codec_fit", ["--steps", "5", "--steps", "6"], "codec_fit.py: error: --steps given "
     "twice (5, then 6): give it once"),
    ("ring_bench", ["--sizes", "99999999999"], "ring_bench.py: error: --sizes: must be at "
     "most 16,777,216, got 99,999,999,999"),
    ("ring_bench", ["--sizes", "-1"], "ring_bench.py: error: --sizes: must be at least 0, "
     "got -1"),
    ("ring_bench", ["--iterations", "0"], "ring_bench.py: error: --iterations: must be at "
     "least 1, got 0"),
    ("ring_bench", ["--repeat", "0"], "ring_bench.py: error: --repeat: must be at least 1, "
     "got 0"),
    ("ring_bench", ["--transports", "ring-spin,bogus"], "ring_bench.py: error: "
     "--transports: 'bogus': choose from ring-spin, ring-block, zmq-ipc"),
    ("oracle_cost", ["--pairs", "0"], "oracle_cost.py: error: --pairs: must be at least 1, "
     "got 0"),
    ("oracle_cost", ["--bench", "--steps", "0"], "oracle_cost.py: error: --steps: must be "
     "at least 1, got 0"),
    ("oracle_cost", ["--num-running", "0"], "oracle_cost.py: error: --num-running: must be "
     "at least 1, got 0"),
    ("oracle_cost", ["--bogus"], "oracle_cost.py: error: unrecognized arguments: --bogus"),
    ("oracle_cost", ["--steps", "500"], "oracle_cost.py: error: --steps applies to --bench "
     "(without it each block is 128 steps)"),
    ("oracle_cost", ["--steps", "500", "--pairs", "3", "--num-running", "1"],
     "oracle_cost.py: error: --steps applies to --bench (without it each block is 128 "
     "steps)"),
    ("aa_false_positive", ["--group-sizes", "1"], "aa_false_positive.py: error: argument "
     "--group-sizes: must be at least 2 (a paired comparison needs at least 2 pairs), got 1"),
    ("aa_false_positive", ["--from-run", "{missing}"], "aa_false_positive.py: error: "
     "argument --from-run: {missing}: no such folder"),
    ("aa_false_positive", ["--load", "foo"], "aa_false_positive.py: error: argument --load: "
     "'foo': choose from idle, busy"),
    ("aa_false_positive", ["--pairs", "3"], "aa_false_positive.py: error: argument --pairs: "
     "must be at least the largest --group-sizes value (6), got 3"),
    ("aa_false_positive", ["--output", "/proc/aa"], "aa_false_positive.py: error: argument "
     "--output: /proc/aa: cannot write in /proc: No such file or directory"),
    ("aa_false_positive", ["--output", "{missing}/study"], "aa_false_positive.py: error: "
     "argument --output: {missing}/study: no such folder: {missing}"),
    ("aa_false_positive", ["--output", ""], "aa_false_positive.py: error: argument "
     "--output: '': the path is empty (give a folder's path)"),
    ("aa_false_positive", ["--reference-steps", "10,10", "--reference-pairs", "2,2"],
     "aa_false_positive.py: error: argument --reference-steps: 10 given more than once"),
    ("variant_table", ["--table-from", "results/published/variants/variants.json.gz",
                       "--figure", "/proc/x.png"], "variant_table.py: error: argument "
     "--figure: cannot write /proc/x.png: No such file or directory"),
    ("variant_table", ["--table-from", "results/published/variants/variants.json.gz",
                       "--figure", ""], "variant_table.py: error: argument --figure: "
     "cannot write '': the path is empty (give a file's path)"),
    ("variant_table", ["-o", "/proc/x.json", "--only", "B=1 send msgpack"],
     "variant_table.py: error: argument -o: cannot write /proc/x.json: No such file or "
     "directory"),
    ("variant_table", ["--batch-sizes", "99999999"], "variant_table.py: error: argument "
     "--batch-sizes: must be at most 65,536 (the most running requests), got 99,999,999"),
    ("hot_path_bench", ["-o", "{missing}/x.json", "--only", "oracle"], "hot_path_bench.py: "
     "error: argument -o: cannot write {missing}/x.json: No such file or directory"),
    ("hot_path_bench", ["--only", ""], "hot_path_bench.py: error: argument --only: empty: "
     "give texts, or leave --only out"),
    ("byte_sweep", ["--json", ""], "byte_sweep.py: error: argument --json: '': the path is "
     "empty (give a file's path)"),
    ("codec_fit", ["--json", ""], "codec_fit.py: error: argument --json: '': the path is "
     "empty (give a file's path)"),
    ("byte_sweep", ["--vocab-sizes", "32000,32000"], "byte_sweep.py: error: argument "
     "--vocab-sizes: 32000 given more than once"),
    ("decode_step_check", ["--configs", "gather,gather"], "decode_step_check.py: error: "
     "argument --configs: gather given more than once"),
    ("decode_step_check", ["--num-running", "4,4"], "decode_step_check.py: error: argument "
     "--num-running: 4 given more than once"),
    ("decode_step_check", ["--num-running", "99999999", "--device", "cpu"],
     "decode_step_check.py: error: tiny needs 0.0 GiB of weights + 6866.5 GiB of KV cache "
     "(num_blocks 900,000,000 x block_size 16), 6866.5 GiB in all, on cpu; the CPU limit "
     "is 6.0 GiB: lower --num-running (at most 87,154 at this --context-max), or use a "
     "smaller --preset"),
    ("decode_step_check", ["--context-max", "999999999999", "--device", "cpu"],
     "decode_step_check.py: error: tiny needs 0.0 GiB of weights + 4291534.4 GiB of KV cache "
     "(num_blocks 562,500,000,027 x block_size 16), 4291534.4 GiB in all, on cpu; the CPU "
     "limit is 6.0 GiB: lower --context-max (at most 1,394,444 at this --num-running), or "
     "use a smaller --preset"),
    # a context past the preset's max_position_embeddings, before the device is measured
    ("decode_step_check", ["--preset", "qwen2.5-0.5b", "--device", "cpu", "--num-running",
                           "1", "--steps", "2", "--warmup", "0", "--context-min", "33000",
                           "--context-max", "33000"],
     "decode_step_check.py: error: max_model_len 33,003 is above qwen2.5-0.5b's "
     "max_position_embeddings (32,768, its config.json), which vLLM refuses too: "
     "--context-max 32,765 at most (with --warmup 0 and --steps 2)"),
    ("verify_step_bench", ["--preset", "qwen2.5-0.5b", "--device", "cpu", "--num-running",
                           "1", "--context-max", "40000"],
     "verify_step_bench.py: error: max_model_len 40,001 is above qwen2.5-0.5b's "
     "max_position_embeddings (32,768, its config.json), which vLLM refuses too: "
     "--context-max 32,767 at most"),
    ("byte_sweep", ["--steps", "5", "--steps", "6"], "byte_sweep.py: error: --steps given "
     "twice (5, then 6): give it once"),
    ("oracle_cost", ["--pairs", "2", "--pairs", "3"], "oracle_cost.py: error: --pairs given "
     "twice (2, then 3): give it once"),
    ("ring_bench", ["--repeat", "2", "--repeat", "3"], "ring_bench.py: error: --repeat "
     "given twice (2, then 3): give it once"),
    ("verify_step_bench", ["--reps", "1", "--reps", "2"], "verify_step_bench.py: error: "
     "--reps given twice (1, then 2): give it once"),
    ("gpu_check", ["--budget-s", "1", "--budget-s", "2"], "gpu_check.py: error: --budget-s "
     "given twice (1, then 2): give it once"),
    ("decode_step_check", ["--device", "cpu", "--device", "cpu"], "decode_step_check.py: "
     "error: --device given twice (cpu, then cpu): give it once"),
    ("aa_false_positive", ["--pairs", "4", "--pairs", "5"], "aa_false_positive.py: error: "
     "--pairs given twice (4, then 5): give it once"),
    ("aa_false_positive", ["--codec", "x"], "aa_false_positive.py: error: argument --codec: "
     "invalid choice: 'x' (choose from 'msgpack', 'pickle', 'packed', 'slots', "
     "'replicated')"),
]


#: Scripts whose options are a ``pyperf.Runner``'s: pyperf allows one Runner a process,
#: so each of their cases runs as a command.
PYPERF_SCRIPTS = {"hot_path_bench", "variant_table"}

#: The indexes in ``BAD_INPUT`` of the cases run as a command (``python
#: scripts/NAME.py ARGV``): each script's first, and every case of ``PYPERF_SCRIPTS``;
#: the others call the script's ``main(ARGV)`` in this process, which parses ``ARGV``
#: as the command does (the exit code, the one line and no traceback of a real
#: process are each script's first case's; a process costs 0.3 s of CPU).
AS_COMMAND = {i for i, (script, _, _) in enumerate(BAD_INPUT)
              if script in PYPERF_SCRIPTS
              or i == next(j for j, case in enumerate(BAD_INPUT) if case[0] == script)}

#: ``load_script``'s modules, each loaded once for this file's in-process cases.
_LOADED: dict = {}


def _main_in_process(script: str, argv: list[str], capsys) -> tuple[int, str, str]:
    """``scripts/SCRIPT.py``'s ``main(argv)`` called in this process: its exit code (a
    ``SystemExit``'s, as the command's), stderr and stdout."""
    module = _LOADED.get(script) or _LOADED.setdefault(script, load_script(script))
    capsys.readouterr()
    try:
        code = module.main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, err, out


@pytest.mark.parametrize("index", range(len(BAD_INPUT)),
                         ids=[f"{s} {' '.join(a)}" for s, a, _ in BAD_INPUT])
def test_bad_input_is_one_line_and_exit_2(index, tmp_path, capsys):
    """``{missing}``: a path that does not exist (in this test's own folder)."""
    script, argv, line = BAD_INPUT[index]
    missing = str(tmp_path / "missing")
    argv = [a.replace("{missing}", missing) for a in argv]
    if index in AS_COMMAND:
        out = run_script(script, *argv)
        got = (out.returncode, out.stderr, out.stdout)
    else:
        got = _main_in_process(script, argv, capsys)
    assert got == (2, line.replace("{missing}", missing) + "\n", "")


#: (arguments refused, the end of the refusal, arguments at each bound it names (they
#: fit), one more than each bound (refused)): at --vocab-size 2,000,000 (3.8 GiB of
#: weights) and 500 rows at --context-max 4,000, each bound holds the other options as
#: they are; at --vocab-size 2,000,000,000 the weights alone do not fit
MEMORY_BOUNDS = [
    (["--vocab-size", "2000000", "--num-running", "16,500", "--context-max", "4000"],
     "lower --num-running (at most 285 at this --context-max) or --context-max (at most "
     "2,272 at this --num-running) or --vocab-size (at most 1,142,653 at this "
     "--num-running and --context-max), or use a smaller --preset",
     [["--vocab-size", "2000000", "--num-running", "16,285", "--context-max", "4000"],
      ["--vocab-size", "2000000", "--num-running", "16,500", "--context-max", "2272"],
      ["--vocab-size", "1142653", "--num-running", "16,500", "--context-max", "4000"]],
     [["--vocab-size", "2000000", "--num-running", "16,286", "--context-max", "4000"],
      ["--vocab-size", "2000000", "--num-running", "16,500", "--context-max", "2273"],
      ["--vocab-size", "1142654", "--num-running", "16,500", "--context-max", "4000"]]),
    (["--vocab-size", "2000000000"],
     "the weights alone do not fit: lower --vocab-size (at most 3,109,885 at this "
     "--num-running and --context-max), or use a smaller --preset",
     [["--vocab-size", "3109885"]], [["--vocab-size", "3109886"]]),
]


@pytest.mark.parametrize("argv,advice,fits,refused", MEMORY_BOUNDS,
                         ids=[" ".join(a) for a, *_ in MEMORY_BOUNDS])
def test_verify_step_bench_memory_bounds_are_the_largest_that_fit(argv, advice, fits,
                                                                   refused):
    """``verify_step_bench``'s memory refusal names bounds on its own options
    (``--num-running``, ``--context-max``, ``--vocab-size``); each is the largest
    value that ``check_model_memory`` lets through on the CPU."""
    bench = load_script("verify_step_bench")
    base = ["--device", "cpu", "--preset", "cpu"]
    with pytest.raises(bench.BadInput) as refusal:
        bench.parse_args(base + argv)
    assert str(refusal.value).endswith("the CPU limit is 6.0 GiB: " + advice)
    for more in fits:
        assert bench.parse_args(base + more).device == "cpu"
    for more in refused:
        # just over the limit, the figures have more decimals: 6.003 GiB in all
        with pytest.raises(bench.BadInput, match=r"the CPU limit is 6\.0+ GiB: lower "):
            bench.parse_args(base + more)


def test_hot_path_bench_lists_the_names_its_only_checks_and_its_examples_match():
    hot = load_script("hot_path_bench")
    names = hot.benchmark_names()
    out = run_script("hot_path_bench", "--list")
    assert (out.returncode, out.stdout.splitlines(), out.stderr) == (0, names, "")
    # every --only example of the docstrings selects something (oracle_cost's too)
    docs = hot.__doc__ + (ROOT / "scripts" / "oracle_cost.py").read_text()
    examples = re.findall(r'--only\s+"([^"]+)"', docs)
    assert "oracle,schedule" in examples
    for text in examples:
        assert hot._only(text) == text
    with pytest.raises(Exception, match="'inproc' is in no benchmark's name"):
        hot._only("oracle,schedule,inproc")


def test_hot_path_bench_runs_the_benchmarks_it_names(monkeypatch):
    """``run_benchmarks`` times exactly ``benchmark_names()``, in that order, so that
    ``--only`` is checked against the names that run (messages and time functions
    stubbed: nothing is timed)."""
    hot = load_script("hot_path_bench")
    small = {codec: hot.decode_messages(1, codec) for codec in hot.PLAIN_CODECS}
    monkeypatch.setattr(hot, "decode_messages", lambda b, codec="msgpack": small[codec])
    monkeypatch.setattr(hot, "oracle_benchmarks",
                        lambda b: [(n, None) for n in hot.oracle_names(b)])
    monkeypatch.setattr(hot, "check_round_trip", lambda: None)
    ran = []

    class Bench:
        def bench_func(self, name, *args):
            ran.append(name)

        bench_time_func = bench_func

    class Everything:
        def __contains__(self, name):
            return True

    hot.run_benchmarks(Bench(), Everything())
    assert ran == hot.benchmark_names()


def test_ring_bench_help_states_the_largest_size():
    text = " ".join(run_script("ring_bench", "--help").stdout.split())
    assert "comma-separated message sizes in bytes, each 0 to 16,777,216 (16 MiB" in text


def test_aa_false_positive_from_run_names_the_conditions_it_lacks(tmp_path):
    (tmp_path / "idle" / "aa").mkdir(parents=True)
    (tmp_path / "idle" / "aa" / "summary.json").write_text("{}")
    out = run_script("aa_false_positive", "--from-run", str(tmp_path))
    assert (out.returncode, out.stderr, out.stdout) == (
        2, f"aa_false_positive.py: error: argument --from-run: {tmp_path} has no A/A run "
        "of busy (give --load idle, the conditions it ran)\n", "")
    (tmp_path / "x").write_text("")
    out = run_script("aa_false_positive", "--from-run", str(tmp_path / "x"), "--load", "idle")
    assert (out.returncode, out.stderr) == (
        2, f"aa_false_positive.py: error: argument --from-run: {tmp_path / 'x'}: not a "
        "folder\n")


# ------------------------------------------------------------------ codec_fit's runs


def _case(policy: str, codec: str, b: int, total: float) -> dict:
    """A complete case whose codec time per step is ``total`` ns, split over the parts."""
    parts = dict(sched_encode_ns_per_step=0.4 * total, runner_decode_ns_per_step=0.3 * total,
                 runner_encode_ns_per_step=0.2 * total, sched_decode_ns_per_step=0.1 * total)
    return dict(case_id=f"{policy}-{codec}-{b}", policy=policy, codec=codec, num_running=b,
                repetition=0, complete=True, num_steps=10, encode_ns_per_step=0.6 * total,
                decode_ns_per_step=0.4 * total, **parts)


def _run(folder: Path, cases: list[dict]) -> str:
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(dict(format_version=1, cases=cases)))
    return str(folder)


def _fit_run(folder: Path, line=lambda b: 5000 + 30 * b) -> str:
    """Send and cached with msgpack at 16, 64 and 256 running requests on ``line``, and
    the single-process rows (codec none, no codec time) beside them."""
    return _run(folder, [_case(p, c, b, 0.0 if c == "none" else line(b))
                         for p in ("send", "cached") for c in ("msgpack", "none")
                         for b in (16, 64, 256)])


def test_codec_fit_refuses_a_check_run_without_the_case_it_needs(tmp_path):
    fit = _fit_run(tmp_path / "fit")
    at_512 = _run(tmp_path / "c512", [_case(p, "msgpack", 512, 1e4) for p in ("send", "cached")])
    only_send = _run(tmp_path / "send", [_case("send", "msgpack", 1024, 1e4),
                                         _case("cached", "none", 1024, 0.0)])
    for check, line in (
            (at_512, f"{at_512} has no complete two-process case at 1,024 running requests "
                     "for cached msgpack, send msgpack (it has cached msgpack at 512; send msgpack at "
                     "512)"),
            (only_send, f"{only_send} has no complete two-process case at 1,024 running "
                        "requests for cached msgpack (it has send msgpack at 1,024)")):
        out = run_script("codec_fit", "--fit-run", fit, "--check-run", check, "--stat", "mean")
        assert (out.returncode, out.stderr, out.stdout) == (
            2, f"codec_fit.py: error: argument --check-run: {line}\n", "")
    # alone, the check run is read before the fit run would start
    out = run_script("codec_fit", "--check-run", at_512, "--stat", "mean")
    assert (out.returncode, out.stderr) == (
        2, f"codec_fit.py: error: argument --check-run: {at_512} has no complete "
        "two-process case at 1,024 running requests (it has cached msgpack at 512; send "
        "msgpack at 512)\n")


def test_codec_fit_refuses_a_fit_run_of_too_few_batch_sizes(tmp_path):
    fit = _run(tmp_path / "fit", [_case("send", "msgpack", b, 100.0) for b in (16, 64)])
    out = run_script("codec_fit", "--fit-run", fit, "--check-run", fit, "--stat", "mean")
    assert (out.returncode, out.stderr, out.stdout) == (
        2, f"codec_fit.py: error: argument --fit-run: {fit}: send msgpack at 2 batch "
        "size(s) (16, 64); a line fit needs at least 3\n", "")


def test_codec_fit_leaves_the_single_process_rows_out(tmp_path):
    fit = _fit_run(tmp_path / "fit")
    check = _run(tmp_path / "check", [_case(p, c, 1024, 36000.0 if c != "none" else 0.0)
                                      for p in ("send", "cached") for c in ("msgpack", "none")])
    out = run_script("codec_fit", "--fit-run", fit, "--check-run", check, "--stat", "mean",
                  "--json", str(tmp_path / "fits.json"))
    assert (out.returncode, out.stderr) == (0, "")
    rows = [line.split() for line in out.stdout.splitlines()[2:]]
    assert rows == [[p, "msgpack", "5.00", "30.0", "1.0000", "35.7", "36.0", "-0.8%"]
                    for p in ("send", "cached")]
    fits = json.loads((tmp_path / "fits.json").read_text())["fits"]
    assert {f["codec"] for f in fits} == {"msgpack"} and all(f["physical"] for f in fits)


def test_codec_fit_warns_of_a_negative_fixed_cost(tmp_path):
    fit = _fit_run(tmp_path / "fit", line=lambda b: 30 * b - 400)
    check = _run(tmp_path / "check", [_case(p, "msgpack", 1024, 30000.0)
                                      for p in ("send", "cached")])
    out = run_script("codec_fit", "--fit-run", fit, "--check-run", check, "--stat", "mean")
    assert out.returncode == 0
    assert out.stderr.splitlines() == [
        f"codec_fit.py: warning: {p} msgpack: fitted fixed cost -0.40 us below 0: the fit "
        "is not physical (likely noise or load on the machine; rerun with more --steps or "
        "--repeat on a quieter machine)" for p in ("send", "cached")]


def test_codec_fit_refuses_before_making_a_run_folder(tmp_path):
    before = set((ROOT / "results").glob("fit-*"))
    for argv in (["--steps", "0"], ["--repeat", "0"], ["--json", str(tmp_path / "no" / "x")]):
        assert run_script("codec_fit", *argv).returncode == 2
    assert set((ROOT / "results").glob("fit-*")) == before


def test_codec_fit_makes_its_runs_under_output(tmp_path, monkeypatch, capsys):
    """``--output DIR``: the fit and check runs made here go into ``DIR/fit-<time>`` and
    ``DIR/check1024-<time>`` (DIR made if missing), none under the checkout's
    ``results/`` (``run`` stubbed: it writes the summary a run of the line 5 us +
    30 ns x B would)."""
    codec_fit = load_script("codec_fit")
    made = []

    def run(sizes, steps, repeat, out, pairs=None):
        made.append((sizes, steps, repeat, out.parent, out.name.split("-")[0], pairs))
        b_values = [int(b) for b in sizes.split(",")]
        out.rmdir()  # _run makes it again, as bench.py fills the folder it is given
        _run(out, [_case(p, "msgpack", b, 5000 + 30 * b) for p in ("send", "cached")
                   for b in b_values])

    monkeypatch.setattr(codec_fit, "run", run)
    before = set((ROOT / "results").glob("*"))
    runs = tmp_path / "runs"
    assert codec_fit.main(["--output", str(runs), "--stat", "mean", "--steps", "7",
                           "--repeat", "1"]) == 0
    pairs = {("send", "msgpack"), ("cached", "msgpack")}
    assert made == [("16,64,128,256,512", 7, 1, runs, "fit", set()),
                    ("1024", 7, 1, runs, "check1024", pairs)]
    assert sorted(p.name.split("-")[0] for p in runs.iterdir()) == ["check1024", "fit"]
    assert set((ROOT / "results").glob("*")) == before
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    assert rows == [[p, "msgpack", "5.00", "30.0", "1.0000", "35.7", "35.7", "+0.0%"]
                    for p in ("send", "cached")]


def test_codec_fit_removes_the_folder_of_a_run_that_failed(tmp_path):
    """A run that ``bench.py`` refuses (here a codec it does not know) leaves no empty
    folder behind."""
    codec_fit = load_script("codec_fit")
    out = tmp_path / "fit-run"
    out.mkdir()
    with pytest.raises(SystemExit, match=r"codec_fit.py: error: run failed \(exit 2\)"):
        codec_fit.run("16", 1, 1, out, {("send", "bogus")})
    assert not out.exists()


def test_hot_path_bench_list_to_a_closed_pipe_is_quiet():
    """``--list | head``: a reader that went away costs nothing, no traceback; exit 141,
    as ``bench.py --list``'s (``console.script_main``)."""
    import os
    import subprocess
    import sys

    from script_module import ROOT

    read, write = os.pipe()
    os.close(read)  # every write gets EPIPE
    try:
        proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "hot_path_bench.py"),
                               "--list"], stdout=write, stderr=subprocess.PIPE, text=True,
                              timeout=60, cwd=ROOT)
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (141, "")
