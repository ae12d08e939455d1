"""``python bench.py microbench RUN_DIR [--output DIR] [selection] [--rigorous] [pyperf
options]``: re-time a run's captured messages with pyperf
(``ipc_bench.analysis.microbench``).

Without ``--policy`` this process is the coordinator (one pyperf process per arm);
with it (internal, set by the coordinator and by pyperf's worker re-invocations of
``bench.py microbench RUN_DIR --policy ARM --worker ...``) it times one arm. Options
this parser does not know are pyperf's and are passed through (checked by pyperf's
parser first); a list option refuses an item given more than once. Bad input: one
line on stderr, exit code 2; so is an output folder that cannot be made or written
(``cannot write to DIR: REASON``, before anything is timed: a small file is written
there and removed first, so a full disk says ``No space left on device`` then). A file
that cannot be written once the folder is made: one line naming it, exit code 1. stdout that fails once the files
are written (``> /dev/full``): ``bench.py microbench: error: cannot write to stdout:
REASON; the results are in DIR (send.json, cached.json, in_loop_vs_pyperf.json)``, exit
code 1 (``console.written_elsewhere``). Interrupted: earlier results in the output folder are kept as they were (the
finished benchmarks only where there were none), exit code 130 (SIGINT) or 143
(SIGTERM), with one line on stderr:
``coordinate``'s (how many benchmarks had finished) once the benchmarks are planned,
``bench.py``'s own before that (``interrupted by SIGTERM (exit 143)``). An arm process
stops without a line: the coordinator that stopped it reports.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from ipc_bench.analysis.capture import DIRECTIONS, CaptureError
from ipc_bench.analysis.microbench import (OPS, Coordination, MicrobenchError, Selection,
                                           check_pyperf_options, coordinate,
                                           pyperf_option_strings, run_arm)
from ipc_bench.cli.console import closed_stdout_refusal, one_write, written_elsewhere
from ipc_bench.cli.once import OnceParser
from ipc_bench.cli.options import list_items, no_repeats, nonempty_path
from ipc_bench.harness.signals import Interrupted, set_parent_death_signal


class _Parser(OnceParser):
    path_positionals = True  # RUN_DIR: a folder named -x is given as ./-x

    def error(self, message: str):
        raise MicrobenchError(message)

    def options_elsewhere(self) -> Sequence[str]:
        """pyperf's options, which this parser leaves to pyperf: ``microbench --fast``
        lacks RUN_DIR, ``microbench -x`` names ``-x`` as unrecognized."""
        return pyperf_option_strings()


def _list_of(kind: str, choices: Sequence[str] = ()):
    """argparse type: a comma-separated list of whole numbers >= 1 (``kind`` ``int``)
    or of names (of ``choices`` when given), none empty (``options.list_items``) and
    none given more than once (``options.no_repeats``, as the run command refuses
    ``--tp 2,2``); a tuple."""
    def parse(text: str) -> tuple:
        items = list_items(text, "whole numbers" if kind == "int" else "names")
        for t in items:
            if kind == "int" and not (t.isdigit() and int(t) >= 1):
                raise argparse.ArgumentTypeError(f"{t!r} is not a whole number >= 1")
            if choices and t not in choices:
                raise argparse.ArgumentTypeError(
                    f"{t!r} is not one of {', '.join(choices)}")
        return tuple(no_repeats([int(t) if kind == "int" else t for t in items]))
    return parse


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="bench.py microbench", allow_abbrev=False, description=(
        "Re-time encode and decode of a run's captured messages with pyperf. Default: "
        "every captured case, 3 worker processes x (1 warm-up + 3 values) of >= 50 ms "
        "per benchmark (about 1.5 minutes for decode-steady's 64 benchmarks on 2 idle "
        "cores). Other options (--fast, -p, -n, -w, -l, --min-time, --affinity ...) are "
        "pyperf's and are passed to it, within caps no real use reaches: -p and -n at "
        "most 1000, -w at most 300, -l at most 2^32 (pyperf's own calibration limits "
        "for the last two), --min-time at most 10 s."))
    p.add_argument("run_dir", metavar="RUN_DIR", type=nonempty_path("folder"),
                   help="run folder with messages/")
    p.add_argument("--output", metavar="DIR", type=nonempty_path("folder"),
                   help="where the pyperf JSON files go (default RUN_DIR/microbench; "
                        "earlier microbench files there are replaced once the new ones "
                        "are all written, and kept when the run stops short)")
    s = p.add_argument_group("which benchmarks (default: all captured)")
    s.add_argument("--num-running", type=_list_of("int"), metavar="N[,N...]",
                   help="running-request counts (the num_running of steady cases)")
    s.add_argument("--codecs", type=_list_of("str"), metavar="NAME[,NAME...]",
                   help="codecs, e.g. msgpack or msgpack,pickle")
    s.add_argument("--directions", type=_list_of("str", tuple(DIRECTIONS)),
                   metavar="DIR[,DIR...]",
                   help="s2r (SchedulerOutput) and/or r2s (ModelRunnerOutput)")
    s.add_argument("--ops", type=_list_of("str", OPS), metavar="OP[,OP...]",
                   help="encode and/or decode")
    p.add_argument("--rigorous", action="store_true",
                   help="pyperf's rigorous mode on pyperf's own defaults: 40 processes "
                        "x (1 warm-up + 3 values) of >= 100 ms per benchmark (about 15 "
                        "times the default's time)")
    p.add_argument("--policy", metavar="ARM", help=argparse.SUPPRESS)  # internal: one arm
    p.add_argument("--arm-json", metavar="FILE", help=argparse.SUPPRESS)  # internal
    return p


def _is_arm(argv: Sequence[str]) -> bool:
    """Whether ``argv`` runs one arm (``--policy``, set by the coordinator)."""
    return any(a == "--policy" or a.startswith("--policy=") for a in argv)


def main(argv: Sequence[str]) -> int:
    """``bench.py microbench ...``; returns the exit code (2: bad input, an output
    folder that cannot be made or written included; 1: results that could not be
    written once it is made, as a run's; 130 / 143: interrupted)."""
    try:
        ns, rest = build_parser().parse_known_args(list(argv))
        selection = Selection(num_running=ns.num_running, codecs=ns.codecs,
                              directions=ns.directions, ops=ns.ops)
        if ns.policy is not None:
            # an arm dies with its coordinator, a pyperf worker with its arm: a stopped
            # run leaves no worker timing on by itself. The coordinator's arms and the
            # arms' pyperf workers already have it from their start (killed_with_parent,
            # between fork and exec); kept for an arm or a worker started otherwise, by
            # hand (--policy is accepted on any command line, a worker's command re-run
            # to reproduce it), which no preexec_fn of this code reached
            set_parent_death_signal()
            return run_arm(ns, rest, selection)
        if any(opt in ("-h", "--help") for opt in rest):  # after "--": not argparse's
            build_parser().print_help()
            return 0
        check_pyperf_options(rest, _Parser, ns.rigorous)
        refusal = closed_stdout_refusal("the comparison table", "the pyperf files")
        if refusal is not None:  # refused before any benchmark, as a run and a report
            raise MicrobenchError(refusal)
        # imported here: pyperf's workers re-run this module and need neither
        from ipc_bench.report.microbench import MicrobenchProgress, format_in_loop_vs_pyperf

        return coordinate(ns, rest, selection, Coordination(
            format_in_loop_vs_pyperf, MicrobenchProgress, one_write, written_elsewhere))
    except (MicrobenchError, CaptureError) as exc:
        print(f"bench.py microbench: error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        if _is_arm(argv):  # an arm process stopped by the coordinator, which reports
            return exc.code
        raise  # before coordinate() planned the benchmarks: bench.py's one line
    except OSError as exc:  # in_loop_vs_pyperf.json: disk full, folder removed
        print(f"bench.py microbench: error: cannot write {exc.filename or 'the results'}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 1
