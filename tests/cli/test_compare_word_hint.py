"""``bench.py diff A B`` and ``bench.py compare A B`` (the words a user tries first for
comparing two runs) are refused pointing at ``report``, which compares runs, one line,
exit 2; a typo of a command word still gets its ``did you mean``."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(*argv: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, str(ROOT / "bench.py"), *argv],
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("word", ["diff", "compare", "Compare"])
def test_compare_words_point_at_report(word, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert _run(word, str(a), str(b)) == (
        2, "", f"bench.py: error: unrecognized arguments: {word} {a} {b} (to compare runs: "
               f"python bench.py report RUN_DIR RUN_DIR ...)\n")


def test_a_typo_of_report_still_gets_did_you_mean(tmp_path):
    assert _run("reprot", str(tmp_path)) == (
        2, "", f"bench.py: error: unrecognized arguments: reprot {tmp_path} "
               f"(did you mean report?)\n")
