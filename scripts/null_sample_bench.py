#!/usr/bin/env python3
"""Cost of the null model's sampler (``NullModel.sample``, what ``runner_forward_ns``
times for the null model) per call, at a range of batch sizes, next to the NumPy-only
sampler it replaced (``_old_sample`` below, kept as it was), in one run.

    python scripts/null_sample_bench.py                    # uniform, n = 1 .. 256
    python scripts/null_sample_bench.py --token-ids zipf --sizes 1,8,16
    python scripts/null_sample_bench.py --small-batch 0    # the NumPy path at every n

Each figure is the median over ``--repeat`` timeit runs of the per-call time (us) of
``model.sample(...).tolist()`` (as ``ModelRunner.sample`` calls it) on a 256 x 2,048
int32 token buffer, default model settings (hash window 4, 128,256 ids), ``n``
distinct rows at random positions; the old and new samplers alternate run by run.
Both must give the same ids (checked before timing).
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
import statistics
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from ipc_bench.cli.console import script_main  # noqa: E402
from ipc_bench.cli.once import OnceParser  # noqa: E402
from ipc_bench.cli.options import _int_in, _parse_int, list_items, no_repeats  # noqa: E402
from ipc_bench.engine.config import ModelConfig  # noqa: E402
from ipc_bench.engine.models import NullModel  # noqa: E402
from ipc_bench.engine.token_ids import normalized_histogram  # noqa: E402
from ipc_bench.errors import module_doc, one_line  # noqa: E402
from ipc_bench.harness import signals  # noqa: E402

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)


def _old_sample(model: NullModel, token_ids_cpu, rows, positions):
    """``NullModel.sample`` before the Python-int path (NumPy at every batch size)."""
    width = token_ids_cpu.shape[1]
    if len(positions) and positions.max() >= width:
        raise IndexError(f"position {int(positions.max())} outside a row of {width} tokens")
    idx = positions - model._window_col
    flat = np.maximum(idx, 0)
    flat += rows * width
    tokens = token_ids_cpu.ravel().take(flat).astype(np.uint64)
    if len(positions) and positions.min() < len(model.window) - 1:
        tokens[idx < 0] = 0
    h = positions.astype(np.uint64)
    h *= _M1
    h += model.seed
    tmp = np.empty_like(h)
    for column in tokens:
        h ^= column
        h ^= np.right_shift(h, np.uint64(30), out=tmp)
        h *= _M2
        h ^= np.right_shift(h, np.uint64(27), out=tmp)
        h *= _M3
        h ^= np.right_shift(h, np.uint64(31), out=tmp)
    return model.token_ids.from_hash(h)


#: The name every error line starts with (``null_sample_bench.py: error: ...``).
PROG = "null_sample_bench.py"
#: Rows of the token buffer the samplers read (the largest ``--sizes`` value).
MAX_ROWS = 256


class BadInput(Exception):
    """Bad input: ``main`` prints its one line (``null_sample_bench.py: error: --OPTION:
    ...``) and returns 2."""


class _Parser(OnceParser):
    """argparse's errors as ``BadInput``, naming the option without argparse's
    ``argument`` before it."""

    def error(self, message: str):
        raise BadInput(message.removeprefix("argument "))


def _sizes(text: str) -> list[int]:
    """``--sizes``: comma-separated rows per call, each 1 to ``MAX_ROWS``, no empty item
    (``list_items``), none given twice."""
    return no_repeats([_parse_int(v, 1, MAX_ROWS) for v in list_items(text, "integers")])


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog=PROG, description=module_doc(sys.modules[__name__]).split("\n\n")[0],
                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--token-ids", default="uniform", choices=("uniform", "zipf", "hist"),
                    help="the ids' distribution (default uniform; hist: a histogram over "
                    "the first 1,000 ids)")
    ap.add_argument("--sizes", type=_sizes, default=[1, 2, 4, 8, 16, 64, 256],
                    metavar="N[,N...]", help=f"rows per call, each 1 to {MAX_ROWS} "
                    "(default 1,2,4,8,16,64,256)")
    ap.add_argument("--repeat", type=_int_in(1, 10_000), default=15, metavar="N",
                    help="timeit runs of each sampler per size, 1 to 10,000 (default 15)")
    ap.add_argument("--small-batch", type=_int_in(0, MAX_ROWS), default=None, metavar="N",
                    help="NullModel.SMALL_BATCH for this run, 0 (the NumPy path at every "
                    f"size) to {MAX_ROWS} (default: the model's)")
    return ap


def main(argv=None, exiting: bool = False) -> int:
    """The table; returns the exit code: 0, 1 (the samplers differ), 2 (bad input, one
    line), 130 / 143 / 129 (interrupted by SIGINT / SIGTERM / SIGHUP, one line:
    ``null_sample_bench.py: interrupted by SIGINT (exit 130)``; one that came while the
    script started, kept pending by the block of its first statement, at the end of
    the parsing).
    ``exiting``: the process exits once this returns (the script run as a command): a
    signal leaves further ones ignored on its way out, as ``bench.py``'s; ``False``
    (``main`` called in process) puts the caller's handlers back whatever happened
    (``signals.run_command``)."""
    return signals.run_command(lambda: _parse(argv), _table,
                               lambda exc, _: exc.line(PROG), exiting=exiting)


def _parse(argv) -> "argparse.Namespace | int":
    """``argv`` parsed, or 2 for bad input (its one line printed); ``--help`` exits."""
    try:
        return build_parser().parse_args(argv)
    except BadInput as exc:
        print(f"{PROG}: error: {one_line(str(exc))}", file=sys.stderr)
        return 2


def _table(args: argparse.Namespace) -> int:
    """``main``'s work: the table, printed row by row."""
    spec, histogram = args.token_ids, ""
    if spec == "hist":  # a histogram over the first 1,000 ids (its text is passed in)
        spec = "hist:bench"
        histogram = normalized_histogram(np.arange(1000, 0, -1, dtype=np.int64))
    model = NullModel(ModelConfig(token_ids=spec, token_id_histogram=histogram))
    if args.small_batch is not None:
        model.SMALL_BATCH = args.small_batch
    runs = "run" if args.repeat == 1 else "runs"
    print(f"token ids {args.token_ids}, SMALL_BATCH {model.SMALL_BATCH}, median of "
          f"{args.repeat} {runs}, us per call")
    print(f"{'n':>5} {'old':>8} {'new':>8} {'old/new':>8}")
    rng = np.random.default_rng(0)
    tok = rng.integers(0, model.token_ids.vocab_size, size=(MAX_ROWS, 2048)).astype(np.int32)
    for n in args.sizes:
        rows = rng.permutation(MAX_ROWS)[:n].astype(np.int64)
        positions = rng.integers(0, 2048, size=n).astype(np.int64)
        old = _old_sample(model, tok, rows, positions).tolist()
        if model.sample(tok, rows, positions).tolist() != old:
            print(f"{PROG}: error: the samplers differ at n={n}", file=sys.stderr)
            return 1
        number = max(20, 2000 // n)
        t_old, t_new = [], []
        for _ in range(args.repeat):
            t_old.append(timeit.timeit(lambda: _old_sample(model, tok, rows, positions).tolist(),
                                       number=number) / number)
            t_new.append(timeit.timeit(lambda: model.sample(tok, rows, positions).tolist(),
                                       number=number) / number)
        a, b = statistics.median(t_old) * 1e6, statistics.median(t_new) * 1e6
        print(f"{n:>5} {a:>8.1f} {b:>8.1f} {a / b:>7.1f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(script_main(PROG, lambda: main(exiting=True), "the table"))
