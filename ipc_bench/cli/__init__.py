"""Command line: ``python bench.py [COMMAND] ...``, one argparse parser per command.

- run (the default, no command word): ``python bench.py --scenario NAME [options]``,
  and ``python bench.py --list`` (``ipc_bench.cli.run``; options in
  ``ipc_bench.cli.options``, the cases run by ``ipc_bench.cli.execute``);
- ``python bench.py report RUN_DIR [RUN_DIR ...] [--output DIR]``
  (``ipc_bench.cli.report``);
- ``python bench.py microbench RUN_DIR [options]`` (``ipc_bench.cli.microbench``).

Exit codes: 0 success; 1 a case failed (the runner died, hung or broke the protocol;
the error line says which process, how and at which step) or the token streams of two
cases differ (the correctness oracle); 2 bad input (one line on stderr, no traceback);
130 / 143 interrupted by SIGINT / SIGTERM: the runner is killed at once, the rows
measured so far are written (the interrupted case marked ``complete: false``) and
``summary.json`` says ``incomplete``.

Every number has a range and every setting is checked before a process starts, so
bad input never surfaces as a traceback or a hang half-way through a run.
"""

from __future__ import annotations

import sys
from typing import Callable, Optional, Sequence


def _run(argv: list[str]) -> int:
    from ipc_bench.cli.run import main

    return main(argv)


def _report(argv: list[str]) -> int:
    from ipc_bench.cli.report import main

    return main(argv)


def _microbench(argv: list[str]) -> int:
    from ipc_bench.cli.microbench import main

    return main(argv)


#: Command words after ``bench.py``; anything else is the run command's options.
COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "microbench": _microbench,
    "report": _report,
}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``bench.py``; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        return COMMANDS[argv[0]](argv[1:])
    return _run(argv)
