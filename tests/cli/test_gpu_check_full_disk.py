"""``scripts/gpu_check.py`` on a full output disk: the output folder is written to (a
small file, removed) before the first stage, so a full disk is refused in one line,
exit 2; and a stage whose log cannot be written keeps its output in memory, so its
``FAILED`` line still gives its reason. The check ran its smoke stage into a full
tmpfs, whose log came back empty: ``[smoke] failed with exit 2 ...; it printed
nothing`` and ``FAILED smoke: failed with exit 2``, bench.py's reason lost."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from script_module import ROOT, load_script

gpu_check = load_script("gpu_check")


def _can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    done = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=8k tmpfs "
                           "/mnt"], capture_output=True, timeout=30)
    return done.returncode == 0


needs_mount = pytest.mark.skipif(not _can_mount(), reason="needs unshare -m and mount")


def _on_a_full_disk(tmp_path: Path, command: str, env: str = ""):
    """``command`` (run in the checkout) with ``$FULL`` a full 8 KiB tmpfs (a private
    mount namespace); then ``ls -A $FULL``. (exit code of the command, stdout, stderr)."""
    full = tmp_path / "full"
    full.mkdir()
    script = (f"mount -t tmpfs -o size=8k tmpfs {full} && "
              f"dd if=/dev/zero of={full}/fill bs=1k count=100 2>/dev/null; "
              f"export FULL={full}; {env} {command}; rc=$?; echo \"left: $(ls -A {full})\"; "
              "exit $rc")
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


@needs_mount
def test_a_full_output_disk_is_refused_before_any_stage(tmp_path):
    code, out, err = _on_a_full_disk(
        tmp_path, f"{sys.executable} scripts/gpu_check.py --device cpu --stages 1 "
        "--output $FULL/g")
    full = tmp_path / "full"
    assert (code, out, err) == (
        2, "left: fill\n",
        f"gpu_check.py: error: argument --output: cannot write to {full}/g: No space "
        "left on device\n")


def test_a_disk_full_by_the_first_stage_is_refused_there(monkeypatch, tmp_path, capsys):
    """The folder took the probe as the options were read, not before the first stage
    (a stand-in for a disk that filled meanwhile): one line, exit 2, the folders made
    for it removed, no stage run."""
    said = iter([None, "No space left on device"])
    monkeypatch.setattr(gpu_check, "write_problem", lambda folder: next(said))
    monkeypatch.setattr(gpu_check, "_preflight", lambda device: (False, 0))
    monkeypatch.setattr(gpu_check, "run_stage", lambda *a: pytest.fail("a stage ran"))
    out = tmp_path / "a" / "g"
    assert gpu_check.main(["--output", str(out), "--stages", "1"]) == 2
    printed = capsys.readouterr()
    assert printed.err == f"gpu_check.py: error: cannot write to {out}: No space left on device\n"
    assert list(tmp_path.iterdir()) == []


def test_the_probe_says_why_a_folder_takes_no_file(tmp_path):
    assert gpu_check.write_problem(tmp_path) is None
    assert list(tmp_path.iterdir()) == []  # the probe is removed
    assert gpu_check.write_problem(tmp_path / "none") == "No such file or directory"


ERROR = ("bench.py: error: cannot write results to /tmp/full/g/1-smoke: No space left on "
         "device")
FAKE_STAGE = [sys.executable, "-c", f"import sys; print({ERROR!r}); sys.exit(2)"]


def test_a_stage_whose_log_cannot_be_written_keeps_its_output(tmp_path, capsys):
    log = tmp_path / "1-smoke.log"
    log.mkdir()  # the log cannot be opened for writing: Is a directory
    code, text, cut = gpu_check.run_child("smoke", FAKE_STAGE, 30, log)
    assert (code, text, cut) == (2, ERROR + "\n", "")
    assert capsys.readouterr().out == (
        f"gpu_check: [smoke] its log {log} could not be written (Is a directory): its "
        "output was kept in memory\n")


def test_the_failed_line_keeps_the_reason_when_the_log_cannot_be_written(
        monkeypatch, tmp_path, capsys):
    """The smoke stage's bench.py (a stand-in that fails as it fails on a full disk),
    its log a folder in its way: the reason reaches the FAILED line."""
    real = gpu_check.run_child
    blocked = tmp_path / "blocked.log"
    blocked.mkdir()
    monkeypatch.setattr(gpu_check, "run_child",
                        lambda name, cmd, t, log: real(name, FAKE_STAGE, t, blocked))
    monkeypatch.setattr(gpu_check, "_preflight", lambda device: (False, 0))
    out = tmp_path / "out"
    assert gpu_check.main(["--output", str(out), "--stages", "1"]) == 1
    printed = capsys.readouterr()
    lines = printed.out.splitlines()
    assert (f"gpu_check: [smoke] its log {blocked} could not be written (Is a directory): "
            "its output was kept in memory") in lines
    assert any(re.fullmatch(r"gpu_check: \[smoke\] failed with exit 2 \(\d+ s so far\); "
                            r"the last lines of its output follow", ln) for ln in lines)
    assert f"    {ERROR}" in lines
    assert printed.err == ("gpu_check: FAILED smoke: failed with exit 2: cannot write "
                           "results to /tmp/full/g/1-smoke: No space left on device\n")
