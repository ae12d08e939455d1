#!/usr/bin/env python3
r"""One verification step of the torch model (speculative decoding), its rows batched
against one by one: the forward time of the step, and whether both give the same ids.

For each size of ``--num-running`` one ``TorchModel`` of ``--preset`` is built
(``--attention``, ``--num-spec-tokens`` K, K lookahead slots), its whole KV cache filled
with random values, and a step of that many verification rows formed: each row 1 + K
query tokens (its last token and K drafts) at the end of a context drawn uniformly from
``[--context-min, --context-max]`` (seeded; blocks scattered over the cache), logits at
every verified position (vLLM's ``logits_indices``). The step runs through
``TorchModel.sample_step`` (host preparation, the forward, the greedy ids back on the
host) with the rows batched (``decode_threshold = 1 + K``: one attention call per layer,
``paged_attention``) and one by one (``decode_threshold = 1``: the gathered causal path
of prefill chunks, one call per row per layer), alternated, ``--reps`` times each after
``--warmup`` rounds; the same step each time (its K/V are written again at the same
slots). Printed per size: the median ms of each, their ratio (one by one / batched),
whether the greedy ids agree and the largest logit difference of the two paths.

    python scripts/verify_step_bench.py                       # tiny, 16 and 64 running
    python scripts/verify_step_bench.py --preset cpu --vocab-size 128256 --reps 31

On a loaded CPU only the ratio means anything; a GPU's ratio (many small launches per
layer one by one) is not measured by it. Exit status 0, or 2 for bad input (one line),
such as, on the CPU, a model whose weights and KV cache (the largest ``--num-running``
rows of ``--context-max`` tokens) exceed the CPU limit: the line gives the largest
``--num-running``, ``--context-max`` and ``--vocab-size`` that fit, each at the
others' values.
"""

from __future__ import annotations

import signal

if __name__ == "__main__":
    # As bench.py: the signals of ipc_bench.harness.signals.HANDLED, spelt out
    # (tests/cli/test_script_first_mask.py compares), stay pending until main() has
    # installed its handlers (ipc_bench.harness.signals), so none lands in an import.
    signal.pthread_sigmask(signal.SIG_BLOCK, (
        signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
        signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGXCPU))

import argparse
import sys
import time
from pathlib import Path

import msgspec
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ipc_bench.cli.console import script_main  # noqa: E402
from ipc_bench.cli.once import OnceParser  # noqa: E402
from ipc_bench.cli.options import (MAX_MODEL_LEN, MAX_NUM_SEQS, MAX_SEED,  # noqa: E402
                                   _int_in, _parse_int, list_items, no_repeats)
from ipc_bench.engine.config import (MAX_CPU_MODEL_BYTES,  # noqa: E402
                                     MAX_NUM_SPEC_TOKENS, ConfigError, ModelConfig,
                                     ModelMemoryError, SchedulerConfig, TORCH_PRESETS,
                                     check_max_position, check_model_memory,
                                     kv_cache_bytes,
                                     script_memory_refusal, weight_bytes)
from ipc_bench.errors import module_doc, one_line  # noqa: E402
from ipc_bench.harness import signals  # noqa: E402

#: The name every error line starts with (``verify_step_bench.py: error: ...``).
PROG = "verify_step_bench.py"

#: Tokens per KV block (the scheduler's default, as vLLM's).
BLOCK_SIZE = 16


def build_step(rng: np.random.Generator, num_rows: int, k: int, lo: int, hi: int,
               num_blocks: int, vocab: int):
    """``sample_step``'s arguments of a step of ``num_rows`` verification rows of ``1 +
    k`` tokens each, contexts uniform in ``[lo, hi]`` (after the step), blocks scattered
    over ``num_blocks``. Returns ``(ids, positions, query_start_loc, seq_lens,
    block_table, logits_indices)``."""
    lens = rng.integers(lo, hi + 1, num_rows)
    width = -(-hi // BLOCK_SIZE)
    table = rng.permutation(num_blocks)[:num_rows * width].reshape(num_rows, width)
    nq = k + 1
    positions = (lens[:, None] - nq + np.arange(nq)[None, :]).ravel()
    qsl = np.arange(num_rows + 1) * nq
    ids = rng.integers(0, vocab, num_rows * nq)
    return ids, positions, qsl, lens, table.astype(np.int32), np.arange(num_rows * nq)


def run_size(torch, args, num_rows: int) -> dict:
    """Medians (ms) of both paths at ``num_rows`` rows, the ids' agreement, the
    largest logit difference."""
    sched = scheduler_config(args, num_rows)
    model = torch_model(args, sched)
    gen = torch.Generator().manual_seed(args.seed)
    model.kv_cache.copy_(torch.randn(model.kv_cache.shape, generator=gen))
    step = build_step(np.random.default_rng(args.seed), num_rows, args.num_spec_tokens,
                      args.context_min, args.context_max, sched.num_blocks,
                      model.vocab_size)
    threshold = {"batched": 1 + args.num_spec_tokens, "one by one": 1}
    times = {name: [] for name in threshold}
    ids = {}
    logits = {}
    for rep in range(args.warmup + args.reps):
        order = list(threshold) if rep % 2 == 0 else list(threshold)[::-1]
        for name in order:
            model.decode_threshold = threshold[name]
            t0 = time.perf_counter_ns()
            ids[name] = model.sample_step(*step)
            dt = time.perf_counter_ns() - t0
            if rep >= args.warmup:
                times[name].append(dt / 1e6)
    for name in threshold:  # the logits of each path, once more, outside the timing
        model.decode_threshold = threshold[name]
        logits[name] = model.forward_logits(*step[:5], logits_indices=step[5])
    med = {name: float(np.median(t)) for name, t in times.items()}
    return dict(running=num_rows, batched_ms=med["batched"], serial_ms=med["one by one"],
                ratio=med["one by one"] / med["batched"],
                same_ids=bool((ids["batched"] == ids["one by one"]).all()),
                max_diff=float((logits["batched"] - logits["one by one"]).abs().max()))


def scheduler_config(args, num_rows: int) -> SchedulerConfig:
    """The scheduler settings of ``num_rows`` verification rows: a KV cache of each
    row's blocks at ``--context-max``, K drafts and K lookahead slots."""
    width = -(-args.context_max // BLOCK_SIZE)
    return SchedulerConfig(max_num_seqs=num_rows, max_model_len=args.context_max + 1,
                           block_size=BLOCK_SIZE, num_blocks=num_rows * width,
                           num_spec_tokens=args.num_spec_tokens,
                           num_lookahead_tokens=args.num_spec_tokens)


def model_config(args) -> ModelConfig:
    return ModelConfig(name="torch", preset=args.preset, vocab_size=args.vocab_size,
                       device=args.device, attention=args.attention,
                       num_threads=args.threads, seed=args.seed)


def torch_model(args, sched: SchedulerConfig):
    from ipc_bench.engine.models import TorchModel

    return TorchModel(model_config(args), sched)


class BadInput(Exception):
    """Bad input: ``main`` prints its one line (``verify_step_bench.py: error: --OPTION:
    ...``, as the other scripts start theirs: ``gpu_check: error: ...``) and returns 2."""


class _Parser(OnceParser):
    """argparse's errors as ``BadInput``, naming the option without argparse's
    ``argument`` before it, and without the usage banner."""

    def error(self, message: str):
        raise BadInput(message.removeprefix("argument "))


def _num_running(text: str) -> list[int]:
    """``--num-running``: comma-separated whole numbers of 1 to ``MAX_NUM_SEQS``, no
    empty item (``list_items``), none given twice."""
    return no_repeats([_parse_int(v, 1, MAX_NUM_SEQS) for v in list_items(text, "integers")])


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(description=module_doc(sys.modules[__name__]).split("\n\n")[0],
                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="tiny", choices=sorted(TORCH_PRESETS))
    ap.add_argument("--vocab-size", type=_int_in(2, 2**31 - 1), default=512, metavar="N",
                    help="vocabulary size, 2 to 2**31-1 (default 512)")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--attention", default="gather", choices=("gather", "flex", "varlen"))
    ap.add_argument("--num-running", type=_num_running, default=[16, 64], metavar="N[,N...]",
                    help="comma-separated numbers of verification rows, each 1 to "
                    f"{MAX_NUM_SEQS:,} (default 16,64)")
    ap.add_argument("--num-spec-tokens", type=_int_in(1, MAX_NUM_SPEC_TOKENS), default=2,
                    metavar="K", help=f"drafts per row, 1 to {MAX_NUM_SPEC_TOKENS} (default 2)")
    ap.add_argument("--context-min", type=_int_in(2, MAX_MODEL_LEN), default=64, metavar="N",
                    help="shortest context, at least --num-spec-tokens + 1 (default 64)")
    ap.add_argument("--context-max", type=_int_in(2, MAX_MODEL_LEN), default=512, metavar="N",
                    help=f"longest context, --context-min to {MAX_MODEL_LEN:,} (default 512)")
    ap.add_argument("--reps", type=_int_in(1, 100_000), default=21, metavar="N",
                    help="timed rounds of each path (default 21)")
    ap.add_argument("--warmup", type=_int_in(0, 100_000), default=3, metavar="N",
                    help="untimed rounds first (default 3)")
    ap.add_argument("--threads", type=_int_in(1, 1024), default=1, metavar="N",
                    help="torch threads, 1 to 1024 (default 1)")
    ap.add_argument("--seed", type=_int_in(0, MAX_SEED), default=0, metavar="N",
                    help="seed of the contexts, drafts and KV cache (default 0)")
    return ap


def parse_args(argv=None) -> argparse.Namespace:
    """The options, each in range, and the settings of every size checked before any
    model is built (``SchedulerConfig.validate``; on the CPU, that the weights and KV
    cache fit: ``check_model_memory``); ``BadInput`` otherwise."""
    args = build_parser().parse_args(argv)
    k = args.num_spec_tokens
    if args.context_min < k + 1:
        raise BadInput(f"--context-min: must be at least --num-spec-tokens + 1 ({k + 1}) "
                       f"for a row of {k + 1} query tokens, got {args.context_min}")
    if args.context_max < args.context_min:
        raise BadInput(f"--context-max: must be at least --context-min "
                       f"({args.context_min}), got {args.context_max}")
    for n in args.num_running:
        try:
            scheduler_config(args, n).validate()
        except ConfigError as err:
            raise BadInput(f"--num-running {n}: {err}") from None
    try:  # the rows' contexts reach --context-max + 1 (the bonus token)
        check_max_position(scheduler_config(args, 1), model_config(args),
                           lambda most: f"--context-max {most - 1:,} at most")
    except ConfigError as err:
        raise BadInput(str(err)) from None
    if args.device == "cpu":  # the largest size needs the most memory
        rows = max(args.num_running)
        sched = scheduler_config(args, rows)
        try:
            check_model_memory(sched, model_config(args), "cpu")
        except ModelMemoryError as err:
            raise BadInput(f"--num-running {rows}: {memory_refusal(err, args, sched)}") \
                from None
        except ConfigError as err:
            raise BadInput(f"--num-running {rows}: {err}") from None
    return args


def memory_refusal(err: ModelMemoryError, args: argparse.Namespace,
                   sched: SchedulerConfig) -> str:
    """``check_model_memory``'s refusal on the CPU of the largest ``--num-running``
    (``sched``) as one line naming this script's options (``script_memory_refusal``:
    the engine's advice names ``bench.py``'s): the largest ``--num-running`` (rows) at
    this ``--context-max`` and ``--context-max`` (tokens) at this ``--num-running``
    where blocks fit beside the weights, the largest ``--vocab-size`` (ids: the
    embedding and LM head grow with it) at both where one of at least 2 fits, or a
    smaller ``--preset``. Raises nothing."""
    vocab = vocab_that_fits(sched, model_config(args))
    more = ((f"--vocab-size (at most {vocab:,} at this --num-running and --context-max)",)
            if vocab >= 2 else ())
    return script_memory_refusal(err, block_size=BLOCK_SIZE, rows=sched.max_num_seqs,
                                 context_max=args.context_max,
                                 context_min=args.context_min, more=more)


def vocab_that_fits(sched: SchedulerConfig, model: ModelConfig) -> int:
    """The largest vocabulary (ids) at which ``model``'s float32 weights and the KV
    cache of ``sched`` fit ``MAX_CPU_MODEL_BYTES`` together (``weight_bytes`` grows by
    the same bytes per id); below 2 where none does. Raises ``ConfigError`` for an
    unknown preset."""
    base = weight_bytes(msgspec.structs.replace(model, vocab_size=1), "cpu")
    per_id = weight_bytes(msgspec.structs.replace(model, vocab_size=2), "cpu") - base
    room = MAX_CPU_MODEL_BYTES - kv_cache_bytes(sched, model, "cpu") - (base - per_id)
    return room // per_id


def main(argv=None, exiting: bool = False) -> int:
    """The table; returns the exit code: 0, 2 (bad input, one line), 130 / 143 /
    129 (interrupted by SIGINT / SIGTERM / SIGHUP, one line: ``verify_step_bench.py:
    interrupted by SIGINT (exit 130)``; one that came while the script started, kept
    pending by the block of its first statement, at the end of the parsing).
    ``exiting``: the process exits once this returns (the script run as a command): a
    signal leaves further ones ignored on its way out, as ``bench.py``'s; ``False``
    (``main`` called in process) puts the caller's handlers back whatever happened
    (``signals.run_command``)."""
    return signals.run_command(lambda: _parse(argv), _table,
                               lambda exc, _: exc.line(PROG), exiting=exiting)


def _parse(argv) -> "argparse.Namespace | int":
    """``argv`` parsed, or 2 for bad input (its one line printed); ``--help`` exits."""
    try:
        return parse_args(argv)
    except BadInput as exc:
        print(f"{PROG}: error: {one_line(str(exc))}", file=sys.stderr)
        return 2


def _table(args: argparse.Namespace) -> int:
    """``main``'s work: the table, printed row by row."""
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print(f"{PROG}: error: --device: cuda, but torch sees no CUDA device",
              file=sys.stderr)
        return 2
    k = args.num_spec_tokens
    print(f"preset {args.preset}, vocab {args.vocab_size}, {args.device}, attention "
          f"{args.attention}, K = {k}, contexts {args.context_min}-{args.context_max}, "
          f"{args.reps} alternated reps, {args.threads} thread(s)")
    print(f"{'running':>8} {'batched ms':>11} {'one-by-one ms':>14} {'ratio':>6} "
          f"{'same ids':>9} {'max |dlogit|':>13}")
    for n in args.num_running:
        try:
            r = run_size(torch, args, n)
        except ConfigError as err:
            print(f"{PROG}: error: {one_line(str(err))}", file=sys.stderr)
            return 2
        print(f"{r['running']:>8} {r['batched_ms']:>11.2f} {r['serial_ms']:>14.2f} "
              f"{r['ratio']:>6.2f} {str(r['same_ids']):>9} {r['max_diff']:>13.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(script_main(PROG, lambda: main(exiting=True), "the table"))
