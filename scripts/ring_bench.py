"""The shared-memory ring against a ZeroMQ PUSH -> PULL over ipc, for the scheduler ->
runner hop: round-trip latency and one-way throughput per message size.

Usage::

    python scripts/ring_bench.py [--sizes 64,1024,16384,262144,2097152] [--iterations 2000]
                                 [--repeat 5]

Sizes go from 0 to 16 MiB. Bad input is one line on stderr naming the option and its
value, exit 2, before any process starts. SIGINT / SIGTERM / SIGHUP stop the run: the
reader process is killed and reaped, the socket folder removed, one line on stderr
(``ring_bench.py: interrupted by SIGINT (exit 130)``), exit 130 / 143 / 129; nothing is
printed before the table, at the end.

Two processes (this script starts a copy of itself as the reader). For each message
size and each transport (``ring-spin``, ``ring-block``: ``ipc_bench.wire.shm_ring`` with
the default 10 chunks of 1 MiB, so 2 MiB overflows to its ZeroMQ socket; ``zmq-ipc``:
a PUSH -> PULL pair of ``ipc://`` sockets as ``--transport ipc``):

- latency: ``iterations`` round trips, each one message of that size to the reader and
  an 8-byte answer back over a ZeroMQ PUSH -> PULL ipc pair (the same for all three, as
  the harness's replies): median and 90th percentile in microseconds;
- throughput: ``iterations`` messages sent back to back, the reader answering once it
  has the last one: messages per second and MB/s.

``--repeat R`` runs the whole set R times, the transports in a rotated order each time,
and prints each figure's median over the repetitions.

Both sides copy the payload once, as the harness does (the ring copies into and out
of the segment; pyzmq copies into a message and out into ``bytes``). Timings depend on
the machine's load: say what else ran when quoting them.
"""

from __future__ import annotations

import signal

if __name__ == "__main__":
    # As bench.py: the signals of ipc_bench.harness.signals.HANDLED, spelt out
    # (tests/cli/test_script_first_mask.py compares), stay pending until main() (or the
    # reader, ``child``) has set up its handling (ipc_bench.harness.signals), so none
    # lands in an import.
    signal.pthread_sigmask(signal.SIG_BLOCK, (
        signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
        signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGXCPU))

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's ipc_bench, installed or not

import msgspec  # noqa: E402
import zmq  # noqa: E402

from ipc_bench.cli.console import one_write, script_main  # noqa: E402
from ipc_bench.cli.once import OnceParser  # noqa: E402
from ipc_bench.cli.options import _int_in, _parse_int, list_items, no_repeats  # noqa: E402
from ipc_bench.errors import module_doc, one_line  # noqa: E402
from ipc_bench.wire.shm_ring import RingHandle, RingReader, RingWriter  # noqa: E402
from ipc_bench.wire.transport import EndpointDir, destroy_context, open_socket  # noqa: E402
from ipc_bench.harness import signals  # noqa: E402

TRANSPORTS = ("ring-spin", "ring-block", "zmq-ipc")
ACK = b"ack-0001"
#: The largest ``--sizes`` value: 16 MiB. Each size's throughput pass streams at least
#: 50 messages back to back (``_iterations``), which a reader slower than the writer
#: holds in ZeroMQ's queue: 800 MiB at this size.
MAX_SIZE = 16 << 20
MAX_ITERATIONS = 10_000_000
MAX_REPEAT = 1000


def _iterations(size: int, iterations: int) -> int:
    """Fewer rounds for large messages: about 1 GB moved per case at most."""
    return min(iterations, max(50, (1 << 30) // max(size, 1) // 2))


def child(transport: str, handle_json: str, s2r: str, r2s: str, plan_json: str) -> None:
    """The reader: for each (size, count) of the plan, answer ``count`` round trips,
    then take ``count`` messages and answer once. It ignores SIGINT and SIGHUP (a
    Ctrl-C reaches the whole process group: the writer stops and reaps it) and is
    SIGKILLed should the writer die (``signals.child_of_scheduler``)."""
    signals.child_of_scheduler()
    signals.unblock()  # SIGTERM: the default, end at once
    ctx = zmq.Context()
    back = open_socket(ctx, zmq.PUSH, r2s, bind=False)
    if transport == "zmq-ipc":
        pull = open_socket(ctx, zmq.PULL, s2r, bind=False)
        pull.setsockopt(zmq.RCVTIMEO, 30_000)
        recv = pull.recv
    else:
        reader = RingReader(msgspec.json.decode(handle_json, type=RingHandle), 0,
                            timeout_s=30.0, ctx=ctx)
        recv = reader.recv
    back.send(b"ready")
    for size, count in json.loads(plan_json):
        for _ in range(count):
            if len(recv()) != size:
                raise SystemExit(f"reader: a message of the wrong size (expected {size})")
            back.send(ACK)
        for _ in range(count):
            recv()
        back.send(ACK)
    destroy_context(ctx)


def measure(transport: str, plan: list[tuple[int, int]]) -> list[dict]:
    """Run ``plan`` over ``transport`` with a reader process; one row per size. The
    reader is killed and reaped, and the socket folder removed, however this ends
    (``signals.Interrupted`` included: the clean-up runs deferred, whole)."""
    folder, ctx = EndpointDir(), zmq.Context()
    writer, rows = None, []
    try:
        pull = open_socket(ctx, zmq.PULL, f"ipc://{folder.path}/r2s", bind=True)
        pull.setsockopt(zmq.RCVTIMEO, 30_000)
        handle = ""
        if transport == "zmq-ipc":
            push = open_socket(ctx, zmq.PUSH, f"ipc://{folder.path}/s2r", bind=True)
            push.setsockopt(zmq.SNDTIMEO, 30_000)
            send = push.send
        else:
            writer = RingWriter(1, wait=transport.split("-")[1], folder=folder.path, ctx=ctx,
                                timeout_s=30.0)
            handle = msgspec.json.encode(writer.handle).decode()
            send = writer.send
        with signals.deferred():  # no signal between the fork and holding the handle
            proc = subprocess.Popen([sys.executable, __file__, "--child", transport, handle,
                                     f"ipc://{folder.path}/s2r", f"ipc://{folder.path}/r2s",
                                     json.dumps(plan)])
        try:
            ready = pull.recv()  # not an assert: -O would drop the receive with it
            if ready != b"ready":
                raise SystemExit(f"ring_bench.py: the reader's first message was "
                                 f"{ready[:40]!r}, not b'ready'")
            if writer is not None:
                writer.wait_for_readers()
            for size, count in plan:
                rows.append(_one_size(transport, size, count, send, pull.recv))
            if proc.wait(60) != 0:
                raise SystemExit(f"{transport}: the reader process failed")
        finally:
            with signals.deferred():
                proc.kill()
                proc.wait(10)
    finally:
        with signals.deferred():
            if writer is not None:
                writer.close()
            destroy_context(ctx)
            folder.cleanup()
    return rows


def _one_size(transport: str, size: int, count: int, send, recv) -> dict:
    payload = os.urandom(size)
    rtts = []
    perf = time.perf_counter_ns
    for _ in range(count):
        t0 = perf()
        send(payload)
        recv()
        rtts.append(perf() - t0)
    t0 = perf()
    for _ in range(count):
        send(payload)
    recv()
    seconds = (perf() - t0) / 1e9
    rtts.sort()
    return dict(transport=transport, size=size, count=count,
                rtt_median_us=statistics.median(rtts) / 1e3,
                rtt_p90_us=rtts[int(0.9 * (len(rtts) - 1))] / 1e3,
                msgs_per_s=count / seconds, mb_per_s=count * size / seconds / 1e6)


def _medians(runs: list[dict]) -> list[dict]:
    """One row per (transport, size): each figure's median over the repetitions."""
    groups: dict[tuple, list[dict]] = {}
    for row in runs:
        groups.setdefault((row["transport"], row["size"]), []).append(row)
    return [dict(rows[0], **{k: statistics.median(r[k] for r in rows)
                             for k in ("rtt_median_us", "rtt_p90_us", "msgs_per_s", "mb_per_s")})
            for rows in groups.values()]


class _Parser(OnceParser):
    """Bad input: one line on stderr naming the option and value (``ring_bench.py:
    error: --iterations: must be at least 1, got 0``), no usage banner, exit 2."""

    def error(self, message: str):
        print(one_line(f"ring_bench.py: error: {message.removeprefix('argument ')}"),
              file=sys.stderr)
        raise SystemExit(2)


def _sizes(text: str) -> list[int]:
    """``--sizes``: comma-separated byte counts from 0 to ``MAX_SIZE``, no empty item
    (``list_items``), none given twice."""
    return no_repeats([_parse_int(v, 0, MAX_SIZE) for v in list_items(text, "integers")])


def _transports(text: str) -> list[str]:
    """``--transports``: comma-separated names of ``TRANSPORTS``, no empty item
    (``list_items``), none given twice."""
    names = list_items(text, "transports")
    bad = [t for t in names if t not in TRANSPORTS]
    if bad:
        raise argparse.ArgumentTypeError(f"{','.join(bad)!r}: choose from "
                                         f"{', '.join(TRANSPORTS)}")
    return no_repeats(names)


def parse_args(argv=None) -> argparse.Namespace:
    doc = module_doc(sys.modules[__name__])  # also under python -OO
    p = _Parser(prog="ring_bench.py", description=" ".join(doc.split("\n\n")[0].split()))
    p.add_argument("--sizes", type=_sizes, default=[64, 1024, 16384, 262144, 2097152],
                   metavar="N[,N...]",
                   help=f"comma-separated message sizes in bytes, each 0 to {MAX_SIZE:,} "
                   "(16 MiB: each size's throughput pass streams at least 50 messages back "
                   "to back) (default 64,1024,16384,262144,2097152)")
    p.add_argument("--iterations", type=_int_in(1, MAX_ITERATIONS), default=2000, metavar="N",
                   help="round trips (and streamed messages) per size, fewer above 256 KiB, "
                   f"1 to {MAX_ITERATIONS:,} (default 2000)")
    p.add_argument("--transports", type=_transports, default=list(TRANSPORTS),
                   metavar="T[,T...]",
                   help=f"comma-separated, of {', '.join(TRANSPORTS)} (default: all three)")
    p.add_argument("--repeat", type=_int_in(1, MAX_REPEAT), default=1, metavar="R",
                   help="repetitions, transports in rotated order; medians are printed "
                   f"(1 to {MAX_REPEAT}, default 1)")
    return p.parse_args(argv)


def main(argv=None, exiting: bool = False) -> int:
    """Parse the options, run every transport, print one table; exit 0, 2 on bad
    input. SIGINT / SIGTERM / SIGHUP: the reader process is killed and reaped and the
    socket folder removed (``measure``), then one line on stderr, exit 130 / 143 /
    129 (nothing is printed before the table, at the end).
    ``exiting``: the process exits once this returns (the script run as a command): a
    signal leaves further ones ignored on its way out, as ``bench.py``'s; ``False``
    (``main`` called in process) puts the caller's handlers back whatever happened
    (``signals.run_command``)."""
    return signals.run_command(
        lambda: parse_args(argv), _bench,
        lambda exc, _: exc.line("ring_bench.py"),
        exiting=exiting)


def _bench(args: argparse.Namespace) -> int:
    """``main``'s work: every transport run, the table printed."""
    sizes, transports = args.sizes, args.transports
    plan = [(s, _iterations(s, args.iterations)) for s in sizes]
    runs = []
    for r in range(args.repeat):
        order = transports[r % len(transports):] + transports[:r % len(transports)]
        runs.extend(row for t in order for row in measure(t, plan))
    rows = _medians(runs)
    with one_write():  # the table in one write: | head -1 takes it whole
        print(f"{'size B':>9}  {'transport':<10}  {'rounds':>6}  {'RTT med us':>10}  "
              f"{'RTT p90 us':>10}  {'msgs/s':>9}  {'MB/s':>8}")
        for row in sorted(rows, key=lambda r: (r["size"], transports.index(r["transport"]))):
            print(f"{row['size']:>9,}  {row['transport']:<10}  {row['count']:>6}  "
                  f"{row['rtt_median_us']:>10.1f}  {row['rtt_p90_us']:>10.1f}  "
                  f"{row['msgs_per_s']:>9,.0f}  {row['mb_per_s']:>8,.1f}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(*sys.argv[2:7])
    else:
        sys.exit(script_main("ring_bench.py", lambda: main(exiting=True), "the table"))
