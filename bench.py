#!/usr/bin/env python3
"""ipc-bench: ``python bench.py --scenario NAME`` (``--list`` for the scenarios)."""

import sys

from ipc_bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
