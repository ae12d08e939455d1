#!/usr/bin/env python3
"""ipc-bench: ``python bench.py --scenario NAME`` (``--list`` for the scenarios)."""

try:
    import signal

    if __name__ == "__main__":
        # Before any other import: SIGINT / SIGTERM / SIGHUP (and the others of
        # ipc_bench.harness.signals.HANDLED) stay pending until the command has
        # installed its handlers and imported its C extensions.
        signal.pthread_sigmask(signal.SIG_BLOCK, (
            signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
            signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGXCPU))
        import sys

        # The command's name for its start-up error lines, as ipc_bench.cli.main names
        # it in its own (bench.py WORD for a word of its COMMANDS), spelt out here: the
        # imports that fail are those that would tell it
        word = sys.argv[1] if len(sys.argv) > 1 else ""
        prog = (f"bench.py {word}" if word in ("microbench", "report", "runner")
                else "bench.py")

        from ipc_bench.errors import missing_dependency_text, startup_shortage_text

        try:
            from ipc_bench.cli import main

            code = main(exiting=True)
        except ModuleNotFoundError as exc:  # a declared dependency not installed
            line = missing_dependency_text(exc)
            if line is None:
                raise
            print(f"{prog}: error: {line}", file=sys.stderr)
            code = 2
        except (MemoryError, SystemError, ImportError) as exc:  # under a tight ulimit -v
            line = startup_shortage_text(exc)
            if line is None:
                raise
            print(f"{prog}: error: {line}", file=sys.stderr)
            code = 1
        sys.exit(code)
except KeyboardInterrupt:  # SIGINT before the mask above (Python's own handler)
    if __name__ != "__main__":
        raise
    import sys

    # signals.Interrupted(130).line(prog) spelt out, prog as ipc_bench.cli.main names
    # it (bench.py WORD for a word of its COMMANDS): an import here could fail too
    word = sys.argv[1] if len(sys.argv) > 1 else ""
    prog = f"bench.py {word}" if word in ("microbench", "report", "runner") else "bench.py"
    print(f"{prog}: interrupted by SIGINT (exit 130)", file=sys.stderr)
    sys.exit(130)
