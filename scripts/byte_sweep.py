#!/usr/bin/env python3
"""Bytes per step against request-id format, vocabulary size and token-id distribution,
per policy and codec.

What changes the bytes of a pure-decode step: the request ids (sent twice per request
in each direction) and the token ids' integer widths (the vocabulary, and how ids are
distributed over it: ``--token-ids``, ``ipc_bench.engine.token_ids``). For each
request-id format (``cmpl-<32 hex>-0``, ``chatcmpl-<32 hex>``, short numeric ids),
vocabulary size (32,000 Llama 2, 128,256 Llama 3, 151,936 Qwen 2) and token-id
distribution (``uniform``, ``zipf``, ``hist:PATH``), this runs the decode-steady case
for real (two processes, ZeroMQ) with each policy and codec, prints the measured
payload bytes per step in each direction, checks every counted step's frames against
the analytic model (``ipc_bench.analysis.bytemodel``), and prints what ``send`` costs
over ``cached`` per running request, measured and as the model expects for the
distribution (``expected``). Exit 1 if the model misses any frame. A case that fails
is one line naming it, as ``bench.py`` gives it, with the sweep point it ran at
(``byte_sweep.py: error: num_running=256/send/msgpack#0 (cmpl ids, vocabulary 32,000,
uniform token ids): runner process 4242 was killed by SIGKILL, noticed while waiting
for ModelRunnerOutput for step 1185``), exit 1.

Usage (about 1-2 minutes on 2 cores with the defaults; each extra distribution adds as
much again):

    python scripts/byte_sweep.py [--num-running 256] [--steps 100]
        [--formats cmpl,chatcmpl,numeric] [--vocab-sizes 32000,128256,151936]
        [--codecs msgpack,pickle] [--token-ids uniform,zipf] [--json PATH]
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
import itertools
import json
import sys
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from ipc_bench.analysis import bytemodel  # noqa: E402
from ipc_bench.harness.spec import SCHED_COLUMNS  # noqa: E402
from ipc_bench.wire.codecs import model_runner_output_codec, scheduler_output_codec  # noqa: E402
from ipc_bench.harness.supervisor import run_case  # noqa: E402
from ipc_bench.harness.scenario import ScenarioOptions, steady_cases  # noqa: E402
from ipc_bench.engine.workloads import REQ_ID_FORMATS  # noqa: E402
from ipc_bench.engine.config import ConfigError  # noqa: E402
from ipc_bench.engine.token_ids import token_id_distribution  # noqa: E402
from ipc_bench.cli.console import (failure_line, one_write, script_main,  # noqa: E402
                                   write_output)
from ipc_bench.cli.once import OnceParser  # noqa: E402
from ipc_bench.cli.options import (MAX_NUM_SEQS, _choices, _int_in, _parse_int,  # noqa: E402
                                   list_items, no_repeats, writable_file)
from ipc_bench.harness import signals  # noqa: E402
from ipc_bench.errors import module_doc  # noqa: E402

COL = {c: i for i, c in enumerate(SCHED_COLUMNS)}


def measure(fmt: str, vocab: int, num_running: int, steps: int, codecs: list[str],
            token_ids: str = "uniform") -> list[dict]:
    """Rows of the decode-steady cases at ``num_running`` for one request-id format,
    vocabulary and token-id distribution: bytes per counted step in each direction and
    the frames the byte model misses."""
    opts = ScenarioOptions(num_running=[num_running], steps=steps, warmup_steps=20,
                           codecs=codecs, floor=False, single_process=False,
                           req_id_format=fmt, vocab_size=vocab, token_ids=token_ids)
    rows = []
    for case in steady_cases(opts, "decode-steady", [num_running]):
        try:
            result = run_case(case)
        except Exception as exc:
            code = case_failure(case.case_id, sweep_point(fmt, vocab, token_ids), exc)
            if code is None:
                raise  # a bug: its traceback
            raise SystemExit(code) from None
        a = np.asarray(result.sched_rows, dtype=np.int64)
        counted = a[a[:, COL["counted"]] == 1]
        s_codec = scheduler_output_codec(case.codec)
        r_codec = model_runner_output_codec(case.codec)
        mismatches = 0
        for f in result.s2r_frames:
            mismatches += bytemodel.predict_scheduler_output(case.codec, s_codec.decode(f)) != len(f)
        for f in result.r2s_frames:
            mismatches += bytemodel.predict_model_runner_output(
                case.codec, r_codec.decode(f)) != len(f)
        id_lens = [len(r["req_id"]) for r in result.requests]
        rows.append(dict(req_id_format=fmt, req_id_len=sum(id_lens) / len(id_lens),
                         vocab_size=vocab, token_ids=token_ids, num_running=num_running,
                         policy=case.policy, codec=case.codec, steps=len(counted),
                         s2r_bytes_per_step=float(counted[:, COL["s2r_payload_bytes"]].mean()),
                         r2s_bytes_per_step=float(counted[:, COL["r2s_payload_bytes"]].mean()),
                         frames_checked=len(result.s2r_frames) + len(result.r2s_frames),
                         model_mismatches=mismatches, token_digest=result.token_digest))
    return rows


def sweep_point(fmt: str, vocab: int, token_ids: str) -> str:
    """The sweep point a case runs at, as the progress line names it: ``cmpl ids,
    vocabulary 32,000, uniform token ids``."""
    return f"{fmt} ids, vocabulary {vocab:,}, {token_ids} token ids"


def case_failure(case_id: str, point: str, exc: Exception) -> Optional[int]:
    """A case that raised ``exc``: its one line on stderr, which names the case as
    ``bench.py`` names a failed one (``CaseSpec.case_id``), then the sweep point
    (``sweep_point``), then the reason (``console.failure_line``):
    ``byte_sweep.py: error: num_running=256/send/msgpack#0 (cmpl ids, vocabulary
    32,000, uniform token ids): runner process 4242 was killed by SIGKILL, noticed
    while waiting for ModelRunnerOutput for step 1185``; returns the exit code, 1 (2
    for sockets that could not be set up or a process out of file descriptors).
    ``None``, nothing printed, for any other exception (a bug: its traceback is
    worth more)."""
    failure = failure_line("byte_sweep.py", exc, f"{case_id} ({point})")
    if failure is None:
        return None
    print(failure[0], file=sys.stderr)
    return failure[1]


def print_table(rows: list[dict], num_running: int) -> None:
    """One line per (request-id format, vocabulary, distribution, codec)."""
    print(f"bytes per pure-decode step at {num_running} running requests "
          "(measured means over counted steps; model: frames the formula misses)")
    header = (f"{'ids':9} {'id len':>6} {'vocab':>8} {'tokens':8} {'codec':8} "
              f"{'s2r send':>9} {'s2r cached':>10} {'r2s':>8} {'send-cached':>11} "
              f"{'B/req':>6} {'expected':>8} {'model':>6}")
    print(header)
    print("-" * len(header))
    keys = dict.fromkeys((r["req_id_format"], r["vocab_size"], r["token_ids"], r["codec"])
                         for r in rows)
    for fmt, vocab, dist, codec in keys:
        sel = {r["policy"]: r for r in rows if (r["req_id_format"], r["vocab_size"],
                                                r["token_ids"], r["codec"])
               == (fmt, vocab, dist, codec)}
        send, cached = sel["send"], sel["cached"]
        diff = send["s2r_bytes_per_step"] - cached["s2r_bytes_per_step"]
        miss = send["model_mismatches"] + cached["model_mismatches"]
        checked = send["frames_checked"] + cached["frames_checked"]
        print(f"{fmt:9} {send['req_id_len']:>6.1f} {vocab:>8,} {dist:8} {codec:8} "
              f"{send['s2r_bytes_per_step']:>9,.0f} {cached['s2r_bytes_per_step']:>10,.0f} "
              f"{send['r2s_bytes_per_step']:>8,.0f} {diff:>11,.1f} "
              f"{diff / num_running:>6.2f} "
              f"{bytemodel.per_request_send_bytes(codec, vocab, dist):>8.2f} "
              f"{'exact' if miss == 0 else f'{miss}/{checked} off':>6}")


class _Parser(OnceParser):
    """Bad input: one line on stderr (``byte_sweep.py: error: ...``), exit 2."""

    def error(self, message: str):
        print(f"byte_sweep.py: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _vocab_sizes(text: str) -> list[int]:
    """``--vocab-sizes``: comma-separated integers of at least 2, none given twice
    (``no_repeats``, as ``--formats``); no empty item (``list_items``)."""
    parts = list_items(text, "integers")
    return no_repeats([_parse_int(v, 2, 2**31 - 1) for v in parts])


def _token_ids(text: str) -> list[str]:
    """``--token-ids``: comma-separated distributions, checked once the vocabulary sizes
    are known; no empty item (``list_items``)."""
    return list_items(text, "token-id distributions")


def parse_args(argv=None) -> argparse.Namespace:
    """The options, every one checked (histograms read) before any case runs."""
    doc = module_doc(sys.modules[__name__])  # also under python -OO
    p = _Parser(prog="byte_sweep.py", description=doc.split("\n\nUsage")[0],
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--num-running", type=_int_in(1, MAX_NUM_SEQS), default=256, metavar="N",
                   help="running requests of every decode-steady case (default 256)")
    p.add_argument("--steps", type=_int_in(1, 1_000_000), default=100, metavar="N",
                   help="counted steps per case (default 100)")
    p.add_argument("--formats", type=_choices(REQ_ID_FORMATS),
                   default=list(REQ_ID_FORMATS), metavar="F[,F...]",
                   help="request-id formats, comma-separated: "
                   f"{', '.join(REQ_ID_FORMATS)} (default: all)")
    p.add_argument("--vocab-sizes", type=_vocab_sizes, default=[32000, 128256, 151936],
                   metavar="N[,N...]", help="vocabulary sizes, at least 2 each "
                   "(default 32000,128256,151936: Llama 2, Llama 3, Qwen 2)")
    p.add_argument("--codecs", type=_choices(bytemodel.MODELLED_CODECS),
                   default=["msgpack", "pickle"], metavar="C[,C...]",
                   help="codecs, comma-separated, those the byte model covers: "
                   f"{', '.join(bytemodel.MODELLED_CODECS)} "
                   "(default msgpack,pickle)")
    p.add_argument("--token-ids", type=_token_ids, default="uniform", metavar="D[,D...]",
                   help="comma-separated token-id distributions: uniform, zipf, hist:PATH "
                   "(default uniform)")
    p.add_argument("--json", metavar="PATH", type=writable_file,
                   help="also write the rows as JSON")
    args = p.parse_args(argv)
    for dist in args.token_ids:
        for vocab in args.vocab_sizes:
            try:
                token_id_distribution(dist, vocab)
            except ConfigError as exc:
                p.error(f"argument --token-ids: {exc}")
    return args


def main(argv=None, exiting: bool = False) -> int:
    """Exit 0, 1 if the model misses a frame, a case fails (``run_case`` raises
    ``CaseError``: one line naming the case, ``case_failure``) or the ``--json`` file
    cannot be written (disk full: ``byte_sweep.py: error: cannot write PATH: REASON``),
    2 on bad input; SIGINT / SIGTERM / SIGHUP end the running case as ``bench.py``
    does (``ipc_bench.harness.signals``: the runner reaped, the socket folder removed),
    one line, exit 130 / 143 / 129.
    ``exiting``: the process exits once this returns (the script run as a command): a
    signal leaves further ones ignored on its way out, as ``bench.py``'s; ``False``
    (``main`` called in process) puts the caller's handlers back whatever happened
    (``signals.run_command``)."""
    return signals.run_command(
        lambda: parse_args(argv), _sweep,
        lambda exc, _: exc.line("byte_sweep.py"),
        exiting=exiting)


def _sweep(args: argparse.Namespace) -> int:
    rows = []
    for fmt, vocab, dist in itertools.product(args.formats, args.vocab_sizes, args.token_ids):
        print(f"... {sweep_point(fmt, vocab, dist)}", file=sys.stderr, flush=True)
        rows += measure(fmt, vocab, args.num_running, args.steps, args.codecs, dist)
    with one_write():  # the table in one write: | head -1 takes it whole
        print_table(rows, args.num_running)
    if args.json:
        write_output(args.json, json.dumps(rows, indent=1) + "\n", "byte_sweep.py",
                     f"the rows are in {args.json}")
    bad = sum(r["model_mismatches"] for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(script_main("byte_sweep.py", lambda: main(exiting=True), "the table",
                         "the --json file"))
