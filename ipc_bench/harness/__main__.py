"""The runner process: ``python -m ipc_bench.harness CTL_ENDPOINT`` (``runner_loop.runner_main``)."""

import sys

from ipc_bench.harness.runner_loop import runner_main

if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m ipc_bench.harness CTL_ENDPOINT (the runner process: "
              "bench.py starts it for each case)", file=sys.stderr)
        sys.exit(2)
    sys.exit(runner_main(sys.argv[1]))
