"""``python bench.py microbench RUN_DIR [--output DIR] [pyperf options]``: re-time a
run's captured messages with pyperf (``ipc_bench.analysis.microbench``).

Without ``--policy`` this process is the coordinator (one pyperf process per arm);
with it (internal, set by the coordinator and by pyperf's worker re-invocations of
``bench.py microbench RUN_DIR --policy ARM --worker ...``) it times one arm. Options
this parser does not know are pyperf's and are passed through. Bad input: one line
on stderr, exit code 2. Interrupted (SIGINT / SIGTERM / SIGHUP), the coordinator
stops its pyperf processes, keeps the arms that finished (an output folder it created
and nothing finished in is removed) and ends with one line and 130 / 143 / 129
(``ipc_bench.cli.main``); an arm's own processes exit with the code and no line.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from ipc_bench.analysis.capture import CaptureError
from ipc_bench.analysis.microbench import (RESERVED, MicrobenchError, coordinate, output_dir,
                                           run_arm)
from ipc_bench.cli.options import nonempty_path
from ipc_bench.harness.signals import Interrupted
from ipc_bench.report.microbench import format_in_loop_vs_pyperf


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise MicrobenchError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="bench.py microbench", allow_abbrev=False, description=(
        "Re-time encode and decode of a run's captured messages with pyperf. Other "
        "options (--fast, --rigorous, -p, -n, -w, -l, --min-time, --affinity ...) are "
        "pyperf's and are passed to it."))
    p.add_argument("run_dir", metavar="RUN_DIR", help="run folder with messages/")
    p.add_argument("--output", metavar="DIR", type=nonempty_path("folder"),
                   help="where the pyperf JSON files go (default RUN_DIR/microbench)")
    p.add_argument("--policy", metavar="ARM", help=argparse.SUPPRESS)  # internal: one arm
    return p


def main(argv: Sequence[str]) -> int:
    """``bench.py microbench ...``; returns the exit code (2: bad input)."""
    try:
        ns, rest = build_parser().parse_known_args(list(argv))
        if ns.policy is not None:
            try:
                return run_arm(ns, rest)
            except Interrupted as exc:  # the coordinator says it, once
                return exc.code
        for opt in rest:
            if opt.split("=", 1)[0] in RESERVED:
                raise MicrobenchError(f"option {opt} is set by microbench itself")
        if any(opt in ("-h", "--help") for opt in rest):  # after "--": not argparse's
            build_parser().print_help()
            return 0
        return _coordinate(ns, rest)
    except (MicrobenchError, CaptureError) as exc:
        print(f"bench.py microbench: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # in_loop_vs_pyperf.json: disk full, folder removed
        print(f"bench.py microbench: error: cannot write {exc.filename or 'the results'}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 2


def _coordinate(ns: argparse.Namespace, rest: list[str]) -> int:
    """``coordinate``, removing an output folder it created and left empty (bad input,
    a failed or interrupted first arm)."""
    out = output_dir(ns)
    created = not out.exists()
    code = 1
    try:
        code = coordinate(ns, rest, format_in_loop_vs_pyperf)
        return code
    finally:
        if created and code != 0 and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
