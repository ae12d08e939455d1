"""The runner process: ``python -m ipc_bench.harness CTL_ENDPOINT`` (``runner_loop.runner_main``).

``bench.py`` starts it for each case. A missing, extra or malformed argument
(``transport.check_endpoint``) prints one line and exits 2, as does an endpoint that
cannot be connected to (``runner_main``). Before numpy loads, as ``bench.py``'s commands
do (``errors.one_blas_thread``), it takes one OpenBLAS thread where none is set and tries
the address space numpy needs: under a ``ulimit -v`` too small for its start
(``errors.startup_shortage_text``: ``MemoryError``, or ``SystemError`` or the
``ImportError`` of a library that cannot be mapped) it prints ``python -m
ipc_bench.harness: error: out of memory (MemoryError): the address-space limit of 29 MiB
(ulimit -v) is too small for the runner; raise it`` and exits 1, where numpy's import
ended it with a traceback or OpenBLAS's own line.
"""

import sys

from ipc_bench.errors import one_blas_thread, one_line, startup_shortage_text

PROG = "python -m ipc_bench.harness"
USAGE = f"{PROG} CTL_ENDPOINT (the runner process: bench.py starts it for each case)"


def main(argv=None) -> int:
    """Parse the command line and run the runner; returns its exit code."""
    import argparse

    one_blas_thread()

    from ipc_bench.harness.runner_loop import EXIT_USAGE, runner_main
    from ipc_bench.wire.transport import check_endpoint

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str):  # one line, exit 2
            print(one_line(f"{PROG}: error: {message}; usage: {USAGE}"), file=sys.stderr)
            sys.exit(EXIT_USAGE)

    def _endpoint(text: str) -> str:
        try:
            return check_endpoint(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parser = _Parser(prog=PROG, usage=USAGE,
                     description="The runner process of ipc-bench (bench.py starts it).")
    parser.add_argument("ctl_endpoint", type=_endpoint, metavar="CTL_ENDPOINT",
                        help="the scheduler's control socket: ipc://PATH or tcp://ADDR:PORT")
    args = parser.parse_args(argv)
    return runner_main(args.ctl_endpoint)


if __name__ == "__main__":
    try:
        code = main()
    except (MemoryError, SystemError, ImportError) as exc:  # under a tight ulimit -v
        line = startup_shortage_text(exc, "the runner")
        if line is None:
            raise
        print(f"{PROG}: error: {line}", file=sys.stderr)
        code = 1
    sys.exit(code)
