"""docs/usage.md's "Exit codes" says what a run whose stdout fails (``> /dev/full``)
records, as the program does it (docs/faults.md's closed-output item): every case
written, ``summary.json`` ``complete`` with the stdout line in ``problems``, exit 1,
where usage.md put it among the failures that leave ``summary.json`` ``failed``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINE = "cannot write to stdout: No space left on device"


def _exit_codes_text() -> str:
    """The "Exit codes" paragraph of docs/usage.md, its lines joined by spaces."""
    text = (REPO / "docs" / "usage.md").read_text()
    section = text.split("## Exit codes and failed cases\n", 1)[1].split("\n## ", 1)[0]
    return " ".join(section.strip().split("\n\n", 1)[0].split())


def test_usage_says_a_failed_stdout_leaves_the_run_complete():
    text = _exit_codes_text()
    assert "results or stdout could not be written" not in text
    assert (f"or stdout could not be written (`> /dev/full`: `bench.py: error: {LINE}; the "
            "results are in RUN_DIR`; every case was measured and written, so "
            f"`summary.json` says `complete`, with `{LINE}` in `problems`") in text


def test_a_run_whose_stdout_fails_is_as_usage_says(tmp_path):
    out = tmp_path / "run"
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "bench.py", "--scenario", "decode-steady", "--num-running", "2",
             "--steps", "10", "--warmup-steps", "2", "--codecs", "msgpack", "--policies",
             "send", "--no-single-process", "--no-floor", "--quiet", "--output", str(out)],
            cwd=REPO, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert (proc.returncode, proc.stderr.splitlines()[-1]) == (
        1, f"bench.py: error: {LINE}; the results are in {out}")
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["status"], summary["problems"]) == ("complete", [LINE])
    assert re.search(r"the line added to its problems", _exit_codes_text())
