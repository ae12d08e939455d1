"""A divergence_check run whose process a signal killed is named as bench.py's scripts
name such an end (``signals.child_ended``: ``was killed by SIGKILL``), not by its
negative return code (``exit -9``)."""
from __future__ import annotations

import os
import sys

from script_module import load_script

div = load_script("divergence_check")


def test_a_run_killed_by_sigkill_says_so(tmp_path, monkeypatch):
    killer = tmp_path / "python"
    killer.write_text("#!/bin/sh\necho 'started' >&2\nkill -9 $$\n")
    killer.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(killer))
    monkeypatch.setattr(div, "_settings_argv", lambda settings: [])
    monkeypatch.setattr(div, "worker_env", lambda settings: dict(os.environ))
    assert div.run_fresh({}, 60.0, str(tmp_path), 2) == (
        None, "was killed by SIGKILL: started")
