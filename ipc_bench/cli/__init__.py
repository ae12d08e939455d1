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
130 / 143 / 129 interrupted by SIGINT / SIGTERM / SIGHUP: the runner is killed at
once, the rows measured so far are written (the interrupted case marked
``complete: false``) and ``summary.json`` says ``incomplete``; 141 stdout's reader went
away (``| head``: the results are complete, ``ipc_bench.cli.console``).

Every number has a range and every setting is checked before a process starts, so
bad input never surfaces as a traceback or a hang half-way through a run. Signals:
``bench.py`` blocks them in its first statement; ``main`` installs the handlers,
imports the command and the C extensions it loads later, then lets a pending signal
through (``ipc_bench.harness.signals``), so an interrupt at any moment of the start
ends with its exit code and one line.
"""

from __future__ import annotations

import importlib
import sys
from typing import Optional, Sequence

from ipc_bench.cli.console import Console
from ipc_bench.harness import signals
from ipc_bench.harness.signals import Interrupted

#: Command word after ``bench.py`` -> (its module, whose ``main(argv)`` runs it; the
#: modules with C extensions it imports lazily: imported before signals are let
#: through). Anything else on the command line is the run command's options.
COMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "microbench": ("ipc_bench.cli.microbench", ("pyperf",)),
    "report": ("ipc_bench.cli.report", ("pandas", "scipy.stats", "matplotlib.figure",
                                        "matplotlib.backends.backend_agg")),
}
#: The run command (no command word).
RUN_COMMAND = ("ipc_bench.cli.run", ("ipc_bench.cli.execute",))


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``bench.py``; returns the exit code. Guards stdout and stderr
    (``console.Console``), turns SIGINT / SIGTERM / SIGHUP into ``Interrupted`` (one
    line, exit 130 / 143 / 129) and restores both when the command ends."""
    argv = list(sys.argv[1:] if argv is None else argv)
    word = argv[0] if argv and argv[0] in COMMANDS else None
    module_name, preload = COMMANDS[word] if word else RUN_COMMAND
    prog = f"bench.py {word}" if word else "bench.py"
    console = Console.install()
    old_handlers = signals.install()
    code = 1
    try:
        command = importlib.import_module(module_name)
        for name in preload:
            importlib.import_module(name)
        signals.unblock()
        code = command.main(argv[1:] if word else argv)
    except Interrupted as exc:
        print(f"{prog}: interrupted by {exc.signal_name} (exit {exc.code})", file=sys.stderr)
        code = exc.code
    except SystemExit as exc:  # --help
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        signals.restore(old_handlers)
        code = console.restore(code, prog)
    return code
