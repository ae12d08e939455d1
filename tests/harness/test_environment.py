"""Tests for ipc_bench.harness.environment (fast: no torch import, tiny git repos)."""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import msgspec
import pytest
import zmq

from ipc_bench.harness import environment as env

HAS_GIT = shutil.which("git") is not None
needs_git = pytest.mark.skipif(not HAS_GIT, reason="git not installed")


def _git(repo: Path, *args: str) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    clean.update(
        GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com",
        GIT_CONFIG_NOSYSTEM="1", HOME=str(repo),
    )
    subprocess.run(["git", *args], cwd=repo, env=clean, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh git checkout (no commit yet) that _repo_root points at."""
    root = tmp_path / "checkout"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    monkeypatch.setattr(env, "_repo_root", lambda: root)
    return root


def _commit(root: Path) -> None:
    (root / "code.py").write_text("x = 1\n")
    _git(root, "add", "code.py")
    _git(root, "commit", "-q", "-m", "init")


# -------------------------------------------------------------- basic fields


def test_basic_fields_match_the_running_interpreter():
    md = env.collect_metadata()
    assert md["python_version"] == platform.python_version()
    assert md["python_implementation"] == platform.python_implementation()
    assert md["executable"] == sys.executable
    assert md["kernel"] == platform.release()
    assert md["platform"] == platform.platform(True, False)
    assert md["cpu_count"] == os.cpu_count()
    if hasattr(os, "sched_getaffinity"):
        assert md["cpu_affinity"] == sorted(os.sched_getaffinity(0))
        assert all(type(c) is int for c in md["cpu_affinity"])
    if hasattr(os, "getloadavg"):
        assert len(md["load_avg"]) == 3
        assert all(isinstance(x, float) and x >= 0 for x in md["load_avg"])
    assert md["command_line"] == sys.argv
    assert "gpu" not in md
    # Round-trips through JSON unchanged.
    assert json.loads(json.dumps(md)) == md


def test_start_time_is_iso8601_utc_and_current():
    before = datetime.datetime.now(datetime.timezone.utc)
    md = env.collect_metadata()
    after = datetime.datetime.now(datetime.timezone.utc)
    t = datetime.datetime.fromisoformat(md["start_time_utc"])
    assert t.utcoffset() == datetime.timedelta(0)
    assert before <= t <= after


def test_hostname_included_or_omitted():
    assert "hostname" in env.collect_metadata(include_hostname=True)
    assert "hostname" not in env.collect_metadata(include_hostname=False)


def test_command_line_override_is_used():
    md = env.collect_metadata(command_line=["bench", "--n", "3"])
    assert md["command_line"] == ["bench", "--n", "3"]


def test_package_versions():
    pkgs = env.collect_metadata()["packages"]
    assert pkgs["msgspec"] == msgspec.__version__
    assert pkgs["pyzmq"] == zmq.__version__
    assert pkgs["libzmq"] == zmq.zmq_version()
    import numpy
    import pyperf

    assert pkgs["numpy"] == numpy.__version__
    assert pkgs["pyperf"] == pyperf.__version__
    assert set(pkgs) <= set(env.PACKAGES) | {"libzmq"}


def test_uninstalled_package_is_absent(monkeypatch):
    monkeypatch.setattr(env, "PACKAGES", ("msgspec", "no-such-dist-xyz"))
    pkgs = env.collect_metadata()["packages"]
    assert pkgs == {"msgspec": msgspec.__version__}


def test_collect_does_not_import_heavy_packages():
    code = (
        "import sys; from ipc_bench.harness.environment import collect_metadata; "
        "collect_metadata(); "
        "print([m for m in ('torch', 'pandas', 'matplotlib') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True,
                         cwd=Path(env.__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- cpufreq


def test_cpu_freq_and_governor_from_fake_sysfs(tmp_path, monkeypatch):
    for cpu, khz, gov in ((0, 2000000, "performance"),
                          (1, 3000000, "performance"),
                          (2, 9999999, "powersave")):  # cpu2 not in affinity
        d = tmp_path / f"cpu{cpu}" / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_cur_freq").write_text(f"{khz}\n")
        (d / "scaling_governor").write_text(f"{gov}\n")
    monkeypatch.setattr(env, "_SYS_CPU_DIR", str(tmp_path))
    monkeypatch.setattr(env, "_cpu_affinity", lambda: [0, 1])
    md = env.collect_metadata()
    assert md["cpu_freq_mhz"] == 2500.0
    assert md["cpu_governor"] == "performance"

    monkeypatch.setattr(env, "_cpu_affinity", lambda: [0, 2])
    md = env.collect_metadata()
    assert md["cpu_governor"] == "performance,powersave"


def test_cpu_freq_absent_without_sysfs(tmp_path, monkeypatch):
    monkeypatch.setattr(env, "_SYS_CPU_DIR", str(tmp_path / "missing"))
    md = env.collect_metadata()
    assert "cpu_freq_mhz" not in md
    assert "cpu_governor" not in md


# -------------------------------------------------------------------- git


def test_git_absent_for_non_git_directory(tmp_path, monkeypatch):
    fake = tmp_path / "not_a_repo"
    fake.mkdir()
    monkeypatch.setattr(env, "_repo_root", lambda: fake)
    assert "git" not in env.collect_metadata()


def test_git_absent_when_no_repo_root(monkeypatch):
    monkeypatch.setattr(env, "_repo_root", lambda: None)
    assert "git" not in env.collect_metadata()


@needs_git
def test_git_without_commits_has_no_commit(repo):
    (repo / "code.py").write_text("x = 1\n")
    assert env.collect_metadata()["git"] == {"branch": "main", "dirty": False,
                                             "untracked": 1}
    _git(repo, "add", "code.py")  # staged: the index differs from the (empty) commit
    assert env.collect_metadata()["git"] == {"branch": "main", "dirty": True,
                                             "untracked": 0}


@needs_git
def test_git_commit_and_dirty_flag(repo):
    _commit(repo)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, text=True,
                          capture_output=True, check=True).stdout.strip()
    git = env.collect_metadata()["git"]
    assert re.fullmatch(r"[0-9a-f]{40}", git["commit"])
    assert git["commit"] == head
    assert git["branch"] == "main"
    assert git["dirty"] is False

    assert git["untracked"] == 0

    # Untracked files never make the checkout dirty: they are counted apart,
    # results/ left out ...
    (repo / "results").mkdir()
    (repo / "results" / "run1.json").write_text("{}")
    assert env.collect_metadata()["git"] == {"commit": head, "branch": "main",
                                             "dirty": False, "untracked": 0}
    _git(repo, "add", "-f", "results/run1.json")
    _git(repo, "commit", "-q", "-m", "results")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, text=True,
                          capture_output=True, check=True).stdout.strip()
    (repo / "results" / "run2.json").write_text("{}")
    (repo / "run1.log").write_text("")
    (repo / "run2.log").write_text("")
    (repo / "logs").mkdir()
    (repo / "logs" / "a.log").write_text("")
    (repo / "logs" / "b.log").write_text("")
    assert env.collect_metadata()["git"] == {"commit": head, "branch": "main",
                                             "dirty": False, "untracked": 3}

    # ... a tracked file that differs from the commit does, staged or not.
    (repo / "code.py").write_text("x = 2\n")
    git = env.collect_metadata()["git"]
    assert re.fullmatch(r"[0-9a-f]{64}", git.pop("diff_sha256"))
    assert git == {"commit": head, "branch": "main", "dirty": True, "untracked": 3}
    _git(repo, "add", "code.py")
    assert env.collect_metadata()["git"]["dirty"] is True


@needs_git
def test_git_detached_head_has_no_branch(repo):
    _commit(repo)
    _git(repo, "checkout", "-q", "--detach")
    git = env.collect_metadata()["git"]
    assert "branch" not in git
    assert re.fullmatch(r"[0-9a-f]{40}", git["commit"])


@needs_git
def test_git_ignores_callers_git_dir(repo, tmp_path, monkeypatch):
    _commit(repo)
    other = tmp_path / "other"
    other.mkdir()
    _git(other, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    git = env.collect_metadata()["git"]
    assert re.fullmatch(r"[0-9a-f]{40}", git["commit"])


def fake_git(folder: Path, on_status: str) -> Path:
    """A ``git`` in ``folder`` that runs ``on_status`` (shell) for ``git status`` and is
    the real git for anything else; ``folder`` goes first on PATH."""
    real = shutil.which("git")
    folder.mkdir()
    script = folder / "git"
    script.write_text(f'#!/bin/sh\nfor a in "$@"; do [ "$a" = status ] && {{ {on_status}; }}; '
                      f'done\nexec {real} "$@"\n')
    script.chmod(0o755)
    return folder


@needs_git
@pytest.mark.parametrize("on_status,why", [
    ("kill -s KILL $$", "killed by SIGKILL"),
    ("kill -s TERM $$", "killed by SIGTERM"),
    ("kill -s INT $$", "killed by SIGINT"),
    ("exit 1", "exit code 1"),
    ("exit 128", "exit code 128"),
])
def test_a_failed_git_status_leaves_a_note(repo, tmp_path, monkeypatch, on_status, why):
    """``git status`` killed or failing: the record keeps what the other git calls gave,
    without ``dirty`` and ``untracked``, and a note says why they are missing."""
    _commit(repo)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, text=True,
                          capture_output=True, check=True).stdout.strip()
    (repo / "code.py").write_text("x = 2\n")  # dirty, which the record cannot tell
    folder = fake_git(tmp_path / "bin", on_status)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    md = env.collect_metadata()
    assert md["git"] == {"commit": head, "branch": "main"}
    assert md["notes"] == [f"git status failed ({why}): whether the checkout had changes "
                           f"is unknown"]


@needs_git
def test_a_stopped_git_status_holds_the_run_no_longer_than_its_timeout(
        repo, tmp_path, monkeypatch):
    """A ``git status`` stopped by SIGSTOP is killed when its timeout ends (here 0.5 s),
    reaped, and noted. The call itself is timed: the rest of ``collect_metadata`` (the
    other git calls, the packages' versions) can take seconds of its own on a loaded
    machine; the call, its 0.5 s and a kill, is well under 4 s there, and under the 5 s
    of the default timeout."""
    import time

    _commit(repo)
    folder = fake_git(tmp_path / "bin", "kill -s STOP $$")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(env, "_SUBPROCESS_TIMEOUT_S", 0.5)
    calls, run_bytes = [], env._run_bytes

    def timed(args, *rest, **kwargs):
        start = time.monotonic()
        try:
            return run_bytes(args, *rest, **kwargs)
        finally:
            calls.append((args, time.monotonic() - start))

    monkeypatch.setattr(env, "_run_bytes", timed)
    md = env.collect_metadata()
    (took,) = [s for args, s in calls if "status" in args]
    assert 0.5 <= took < 4.0
    assert set(md["git"]) == {"commit", "branch"}
    assert md["notes"] == ["git status failed (no answer within 0.5 s): whether the "
                           "checkout had changes is unknown"]


@needs_git
def test_a_git_status_that_works_leaves_no_note(repo):
    _commit(repo)
    md = env.collect_metadata()
    assert "notes" not in md
    assert (md["git"]["dirty"], md["git"]["untracked"]) == (False, 0)


def test_this_checkout_does_not_raise():
    # Whatever state the project repository is in (no commit yet, dirty...),
    # the git entry is either absent or well formed.
    git = env.collect_metadata().get("git")
    if git is not None:
        assert set(git) <= {"commit", "dirty", "untracked", "branch", "diff_sha256"}
        if "commit" in git:
            assert re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", git["commit"])


# ------------------------------------------------------ hostile environment


def test_missing_proc_sys_and_git_never_raise(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no git, no nvidia-smi
    monkeypatch.setattr(env, "_SYS_CPU_DIR", str(tmp_path / "nosys"))
    monkeypatch.setattr(env, "proc_path", lambda p: str(tmp_path / "noproc" / p))
    monkeypatch.setattr(env, "_pyperf_cpu_model", None)

    def no_loadavg():
        raise OSError("unavailable")

    monkeypatch.setattr(os, "getloadavg", no_loadavg)
    md = env.collect_metadata()
    for key in ("git", "cpu_model", "cpu_freq_mhz", "cpu_governor", "load_avg"):
        assert key not in md, key
    assert md["python_version"] == platform.python_version()
    assert env.read_cpu_times() == {}
    assert env.cpu_usage_between(env.read_cpu_times(), env.read_cpu_times()) == {
        "busy_pct": 0.0, "steal_pct": 0.0}


# -------------------------------------------------------------------- gpu


def _fake_torch(available: bool) -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(
        is_available=lambda: available,
        device_count=lambda: 2,
        get_device_name=lambda i=0: "Fake GPU 9000",
        get_device_capability=lambda i=0: (9, 0),
    )
    torch.version = types.SimpleNamespace(cuda="12.4")
    return torch


def test_gpu_none_when_torch_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    md = env.collect_metadata(probe_gpu=True)
    assert "gpu" in md and md["gpu"] is None


def test_gpu_none_when_cuda_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(False))
    assert env.collect_metadata(probe_gpu=True)["gpu"] is None


def test_gpu_fields_when_available(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(True))
    monkeypatch.setattr(env, "_nvidia_driver", lambda: "550.54.15")
    gpu = env.collect_metadata(probe_gpu=True)["gpu"]
    assert gpu == {"name": "Fake GPU 9000", "count": 2, "cuda": "12.4",
                   "capability": "9.0", "driver": "550.54.15"}

    monkeypatch.setattr(env, "_nvidia_driver", lambda: None)
    gpu = env.collect_metadata(probe_gpu=True)["gpu"]
    assert "driver" not in gpu and gpu["name"] == "Fake GPU 9000"


def test_gpu_absent_unless_probed(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(True))
    assert "gpu" not in env.collect_metadata(probe_gpu=False)


# -------------------------------------------------------------- cpu times


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="no /proc/stat")
def test_read_cpu_times_from_proc():
    t = env.read_cpu_times()
    assert list(t) == list(env.CPU_TIME_FIELDS)
    assert all(type(v) is int and v >= 0 for v in t.values())
    assert t["idle"] > 0
    t2 = env.read_cpu_times()
    assert all(t2[k] >= t[k] for k in t)
    usage = env.cpu_usage_between(t, t2)
    assert 0.0 <= usage["busy_pct"] <= 100.0
    assert 0.0 <= usage["steal_pct"] <= 100.0


def test_read_cpu_times_parses_fake_stat(tmp_path, monkeypatch):
    (tmp_path / "stat").write_text(
        "cpu  10 1 5 100 2 3 4 7 0 0\n"
        "cpu0 5 0 2 50 1 1 2 3 0 0\n"
        "intr 12345\n")
    monkeypatch.setattr(env, "proc_path", lambda p: str(tmp_path / p))
    assert env.read_cpu_times() == {
        "user": 10, "nice": 1, "system": 5, "idle": 100, "iowait": 2,
        "irq": 3, "softirq": 4, "steal": 7}
    # An old kernel without steal: missing fields are 0.
    (tmp_path / "stat").write_text("cpu  10 1 5 100\n")
    assert env.read_cpu_times()["steal"] == 0


def _times(**kw: int) -> dict:
    return {f: kw.get(f, 0) for f in env.CPU_TIME_FIELDS}


def test_cpu_usage_between_exact_percentages():
    before = _times(user=100, nice=0, system=50, idle=1000, iowait=10,
                    irq=1, softirq=2, steal=3)
    after = _times(user=150, nice=5, system=60, idle=1020, iowait=15,
                   irq=3, softirq=5, steal=8)
    # deltas: user 50, nice 5, system 10, idle 20, iowait 5, irq 2,
    # softirq 3, steal 5 -> total 100; busy = 50+5+10+2+3 = 70.
    usage = env.cpu_usage_between(before, after)
    assert usage == {"busy_pct": 70.0, "steal_pct": 5.0}


def test_cpu_usage_between_quarter_steal():
    usage = env.cpu_usage_between(_times(), _times(user=1, idle=2, steal=1))
    assert usage == {"busy_pct": 25.0, "steal_pct": 25.0}


def test_cpu_usage_between_empty_interval():
    t = _times(user=5, idle=9)
    assert env.cpu_usage_between(t, dict(t)) == {"busy_pct": 0.0, "steal_pct": 0.0}
    assert env.cpu_usage_between({}, {}) == {"busy_pct": 0.0, "steal_pct": 0.0}


# ------------------------------------------------------------------ compare


def _meta(**over):
    base = {
        "cpu_model": "AMD EPYC 9654",
        "cpu_count": 16,
        "python_version": "3.11.7",
        "kernel": "6.1.0",
        "hostname": "a",
        "load_avg": [0.1, 0.2, 0.3],
        "packages": {"msgspec": "0.18.6", "pyzmq": "26.0.3",
                     "libzmq": "4.3.5", "numpy": "1.26.4"},
        "git": {"commit": "abc123", "dirty": False, "branch": "main"},
        "gpu": {"name": "NVIDIA H200", "count": 1},
        "start_time_utc": "2024-01-01T00:00:00+00:00",
    }
    base.update(over)
    return base


def test_compare_identical_is_empty():
    assert env.compare_metadata(_meta(), _meta()) == []
    # Fields that do not matter for comparison are ignored.
    assert env.compare_metadata(
        _meta(), _meta(load_avg=[9, 9, 9],
                       start_time_utc="2025-01-01T00:00:00+00:00",
                       git={"commit": "abc123", "dirty": False,
                            "branch": "other"})) == []


def test_compare_names_a_dirty_checkout_of_the_same_commit():
    # a tracked file differed from the commit: the code that ran is not the commit's
    dirty = _meta(git={"commit": "abc123", "dirty": True, "branch": "main"})
    assert env.compare_metadata(dirty, _meta()) == [
        "git commit differs: abc123 (dirty) vs abc123"]
    # two dirty runs of one commit made before the diff's digest was recorded: the
    # code that ran may differ, and the line says why it cannot tell
    assert env.compare_metadata(dirty, dirty, ("b", "a")) == [
        "git uncommitted changes unknown: same commit abc123 (dirty), but b and a "
        "recorded no digest of their uncommitted changes (a run made before the digest "
        "was recorded): the code that ran may differ"]


def test_compare_tells_the_uncommitted_changes_of_one_commit_apart():
    def dirty(digest=None):
        git = {"commit": "abc123", "dirty": True, "branch": "main"}
        return _meta(git=git | ({"diff_sha256": digest} if digest else {}))

    one, other = "1f" * 32, "9a" * 32
    assert env.compare_metadata(dirty(one), dirty(one)) == []
    assert env.uncommitted_changes(dirty(one)["git"], dirty(one)["git"]) == "same"
    assert env.compare_metadata(dirty(one), dirty(other), ("b", "a")) == [
        "git uncommitted changes differ: same commit abc123 (dirty), different "
        "uncommitted changes (diff sha256 1f1f1f1f1f1f vs 9a9a9a9a9a9a)"]
    assert env.compare_metadata(dirty(one), dirty(), ("b", "a")) == [
        "git uncommitted changes unknown: same commit abc123 (dirty), but a recorded no "
        "digest of its uncommitted changes (a run made before the digest was recorded): "
        "the code that ran may differ"]
    # a clean run and a dirty one, or two commits: the commit line says it all
    assert env.uncommitted_changes(dirty(one)["git"], _meta()["git"]) is None
    assert env.uncommitted_changes(dirty(one)["git"],
                                   dict(dirty(one)["git"], commit="def456")) is None


@needs_git
def test_the_digest_follows_the_uncommitted_changes(repo):
    import hashlib

    _commit(repo)
    assert "diff_sha256" not in env.collect_metadata()["git"]  # clean: nothing to digest
    (repo / "code.py").write_text("x = 2\n")
    first = env.collect_metadata()["git"]["diff_sha256"]
    diff = subprocess.run(["git", "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false",
                           "-c", "core.quotePath=true", "diff", "HEAD", "--binary", "--full-index",
                           "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color",
                           "--"], cwd=repo, capture_output=True, check=True).stdout
    assert first == hashlib.sha256(diff).hexdigest()
    _git(repo, "add", "code.py")  # staged or not, the same change: the same digest
    assert env.collect_metadata()["git"]["diff_sha256"] == first
    (repo / "code.py").write_text("x = 3\n")
    assert env.collect_metadata()["git"]["diff_sha256"] not in (first, None)
    (repo / "notes.txt").write_text("untracked\n")  # untracked: not in the digest
    second = env.collect_metadata()["git"]["diff_sha256"]
    (repo / "notes.txt").write_text("changed\n")
    assert env.collect_metadata()["git"]["diff_sha256"] == second


def test_compare_hostname_only_when_both_recorded_one():
    assert env.compare_metadata(_meta(), _meta(hostname="b")) == [
        "hostname differs: a vs b"]
    no_host = _meta()
    del no_host["hostname"]  # a run made with --no-hostname
    assert env.compare_metadata(_meta(), no_host) == []
    assert env.compare_metadata(no_host, _meta(hostname="b")) == []


def test_compare_lists_exactly_the_differing_fields():
    a = _meta()
    b = _meta(cpu_count=32, kernel="6.8.0",
              packages={"msgspec": "0.18.6", "pyzmq": "26.1.0",
                        "libzmq": "4.3.5", "torch": "2.3.0"},
              git={"commit": "def456", "dirty": False, "branch": "main"},
              gpu={"name": "NVIDIA H100", "count": 1})
    assert env.compare_metadata(a, b) == [
        "cpu_count differs: 16 vs 32",
        "kernel differs: 6.1.0 vs 6.8.0",
        "package numpy differs: 1.26.4 vs absent",
        "package pyzmq differs: 26.0.3 vs 26.1.0",
        "package torch differs: absent vs 2.3.0",
        "git commit differs: abc123 vs def456",
        "gpu name differs: NVIDIA H200 vs NVIDIA H100",
    ]


def test_compare_missing_fields_and_no_gpu():
    a = _meta()
    b = _meta(gpu=None, python_version="3.12.1")
    del b["cpu_model"]
    del b["git"]
    assert env.compare_metadata(a, b) == [
        "cpu_model differs: AMD EPYC 9654 vs absent",
        "python_version differs: 3.11.7 vs 3.12.1",
        "git commit differs: abc123 vs absent",
        "gpu name differs: NVIDIA H200 vs absent",
    ]
    # Absent on both sides is not a difference.
    assert env.compare_metadata({}, {"gpu": None, "packages": {}}) == []


def test_compare_real_metadata_with_itself():
    md = env.collect_metadata()
    assert env.compare_metadata(md, json.loads(json.dumps(md))) == []


# ------------------------------------------------ nvidia-smi, virtualisation


def _fake_command(folder: Path, name: str, stdout: str, status: int = 0) -> None:
    """An executable ``name`` in ``folder`` that prints ``stdout`` and exits ``status``."""
    path = folder / name
    lines = "".join(f"printf '%s\\n' '{line}'\n" for line in stdout.splitlines())
    path.write_text(f"#!/bin/sh\n{lines}exit {status}\n")  # builtins only: PATH is bare
    path.chmod(0o755)


def test_gpus_from_nvidia_smi(tmp_path, monkeypatch):
    # two GPUs as `nvidia-smi --query-gpu=... --format=csv,noheader,nounits` prints them
    _fake_command(tmp_path, "nvidia-smi",
                  "0, NVIDIA H200, 580.159.04, 143771, 1980, 3201, 1980, 3201, 700.00, P0, "
                  "Enabled\n"
                  "1, NVIDIA H200, 580.159.04, 143771, 345, 3201, 1980, 3201, [N/A], P8, "
                  "[Not Supported]")
    monkeypatch.setenv("PATH", str(tmp_path))
    gpus = env.collect_metadata()["gpus"]
    assert gpus[0] == {"index": 0, "name": "NVIDIA H200", "driver": "580.159.04",
                       "memory_total_mib": 143771, "sm_clock_mhz": 1980,
                       "mem_clock_mhz": 3201, "sm_clock_max_mhz": 1980,
                       "mem_clock_max_mhz": 3201, "power_limit_w": 700.0, "pstate": "P0",
                       "persistence_mode": "Enabled"}
    assert gpus[1]["sm_clock_mhz"] == 345
    assert "power_limit_w" not in gpus[1] and "persistence_mode" not in gpus[1]


def test_gpus_absent_when_nvidia_smi_fails_or_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "gpus" not in env.collect_metadata()
    _fake_command(tmp_path, "nvidia-smi", "NVIDIA-SMI has failed", status=9)
    assert "gpus" not in env.collect_metadata()


def test_virtualization_fields(tmp_path, monkeypatch):
    dmi = tmp_path / "dmi"
    dmi.mkdir()
    (dmi / "product_name").write_text("KVM\n")
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nflags\t\t: fpu vme hypervisor avx\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # systemd-detect-virt prints "none" and exits 1 when it finds nothing
    (bin_dir / "systemd-detect-virt").write_text(
        '#!/bin/sh\nif [ "$1" = --vm ]; then echo kvm; else echo none; exit 1; fi\n')
    (bin_dir / "systemd-detect-virt").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(env, "_SYS_DMI_DIR", str(dmi))
    monkeypatch.setattr(env, "proc_path", lambda p: str(tmp_path / p))
    assert env.collect_metadata()["virtualization"] == {
        "product_name": "KVM", "cpu_hypervisor_flag": True,
        "systemd_detect_virt_vm": "kvm", "systemd_detect_virt_container": "none"}


def test_virtualization_absent_when_nothing_can_be_read(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(env, "_SYS_DMI_DIR", str(tmp_path / "nodmi"))
    monkeypatch.setattr(env, "proc_path", lambda p: str(tmp_path / "noproc" / p))
    assert "virtualization" not in env.collect_metadata()
    (tmp_path / "noproc").mkdir()
    (tmp_path / "noproc" / "cpuinfo").write_text("processor\t: 0\nflags\t\t: fpu vme\n")
    assert env.collect_metadata()["virtualization"] == {"cpu_hypervisor_flag": False}


def _settings(model: dict) -> dict:
    return {"cases": [{"case_id": "num_running=4/send/msgpack#0",
                       "labels": {"num_running": 4}, "policy": "send",
                       "model": model}]}


def test_compare_settings_leaves_out_what_the_model_does_not_use():
    null = {"name": "null", "step_time_ms": 5.0, "step_wait": "sleep", "preset": "cpu",
            "num_threads": 1, "vocab_size": 100}
    fixed = dict(null, name="fixed-step", step_time_ms=1.0, preset="tiny", num_threads=4)
    lines, unlike = env.compare_settings(_settings(null), _settings(fixed))
    assert lines == ["case setting model.name differs: null vs fixed-step "
                     "(workload num_running=4)"]
    assert unlike == ["num_running=4"]
    # Both fixed-step: the step time is compared; the preset and threads are not.
    lines, _ = env.compare_settings(_settings(dict(fixed, step_time_ms=2.0, preset="cpu")),
                                    _settings(fixed))
    assert lines == ["case setting model.step_time_ms differs: 2.0 vs 1.0 "
                     "(workload num_running=4)"]
    # The null model records the default step time it does not use.
    lines, unlike = env.compare_settings(_settings(null), _settings(dict(null,
                                                                         step_time_ms=1.0)))
    assert (lines, unlike) == ([], [])


def _timed(start, end, **over):
    md = _meta(start_time_utc=f"2024-01-01T00:{start}+00:00", **over)
    if end is not None:
        md["end_time_utc"] = f"2024-01-01T00:{end}+00:00"
    return md


def test_runs_of_one_host_that_overlapped_in_time_differ():
    a, b = _timed("00:00", "10:00"), _timed("05:00", "12:30")
    assert env.compare_metadata(b, a, ("b", "a")) == [
        "the runs overlapped in time on this host (b from 2024-01-01 00:05:00 to "
        "2024-01-01 00:12:30, a from 2024-01-01 00:00:00 to 2024-01-01 00:10:00 UTC): "
        "each ran on a machine the other loaded"]


@pytest.mark.parametrize("b", [
    _timed("10:00", "12:00"),                 # one after the other
    _timed("05:00", "12:00", hostname="b"),   # another host (said as such)
    _timed("05:00", None),                    # an end not recorded: cannot be told
])
def test_runs_that_did_not_overlap_or_cannot_be_told_are_no_overlap(b):
    a = _timed("00:00", "10:00")
    assert not any("overlapped" in line for line in env.compare_metadata(b, a))
    assert env.overlap_line(b, a) is None


def _repeated(n: int, labels=None) -> dict:
    labels = labels or [{"num_running": 4}]
    return {"cases": [{"case_id": f"{lab}/{p}/msgpack#{r}", "labels": lab, "policy": p,
                       "arm": p, "codec": "msgpack", "repetition": r}
                      for lab in labels for r in range(n) for p in ("send", "cached")]}


def test_a_different_number_of_repetitions_is_listed_but_leaves_one_workload():
    """Means over 2 and over 1 repetition of the same workload are still of one
    workload: the difference is listed, no workload marked not comparable."""
    lines, unlike = env.compare_settings(_repeated(2), _repeated(1))
    assert lines == ["repetitions differ: 2 vs 1 (workload num_running=4)"]
    assert unlike == []
    two = [{"num_running": 4}, {"num_running": 16}]
    lines, unlike = env.compare_settings(_repeated(1, two), _repeated(3, two))
    assert lines == ["repetitions differ: 1 vs 3 (every workload in both runs' grids)"]
    assert unlike == []
    assert env.compare_settings(_repeated(2), _repeated(2)) == ([], [])


def test_a_soaks_model_is_compared_though_the_soak_takes_no_model_option():
    """A soak refuses --model (its model is null); against a timed replay given
    --model fixed-step the model still differs, and the line says so."""
    timed = {"scenario": "azure-conv-timed", "options": {"model": "fixed-step"},
             "cases": [{"case_id": "trace=azure-conv-timed:20/send/msgpack#0",
                        "policy": "send", "model": {"name": "fixed-step"}}]}
    soak = {"scenario": "soak", "options": {"model": None},
            "cases": [{"case_id": "trace=soak:100/send/msgpack#0", "policy": "send",
                       "model": {"name": "null"}}]}
    assert ("option --model differs: fixed-step vs default (null)", True) in \
        env._option_lines(timed, soak)
