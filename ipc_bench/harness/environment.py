"""Environment metadata recorded with every benchmark result.

Modelled on pyperf's metadata collection (``pyperf._collect_metadata``), whose
helpers are reused where they fit (reading /proc and /sys, the CPU model),
but with our own field names and a flat, JSON-serialisable layout that is
easy to compare between two result files.

Every collector is best effort: on a machine where a /proc or /sys entry is
missing, where ``git`` or ``nvidia-smi`` is not installed, or where the code
does not live in a git checkout, the corresponding field is simply absent
from the returned dict. Nothing in this module raises because the
environment is unusual.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import importlib.metadata
import os
import platform
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from ipc_bench.engine.config import DEFAULT_VLLM_LAYOUT

try:  # pyperf's small file helpers (private API: keep a fallback).
    from pyperf._utils import proc_path, read_first_line, sysfs_path
except Exception:  # pragma: no cover - only without (a compatible) pyperf

    def read_first_line(path: str, error: bool = False) -> str:
        try:
            with open(path, encoding="utf-8") as fp:
                return fp.readline().rstrip()
        except OSError:
            if error:
                raise
            return ""

    def proc_path(path: str) -> str:
        return os.path.join("/proc", path)

    def sysfs_path(path: str) -> str:
        return os.path.join("/sys", path)


try:
    from pyperf._collect_metadata import collect_cpu_model as _pyperf_cpu_model
except Exception:  # pragma: no cover - only without (a compatible) pyperf
    _pyperf_cpu_model = None


__all__ = [
    "collect_metadata",
    "read_cpu_times",
    "cpu_usage_between",
    "compare_metadata",
    "commit_shown",
    "uncommitted_changes",
    "PACKAGES",
    "CPU_TIME_FIELDS",
]

#: Distributions whose versions are recorded under ``metadata["packages"]``
#: (importlib.metadata distribution names). ``libzmq`` is added next to
#: ``pyzmq`` when zmq is importable.
PACKAGES: tuple[str, ...] = (
    "msgspec",
    "pyzmq",
    "pyperf",
    "numpy",
    "torch",
    "pandas",
    "matplotlib",
)

#: Fields of the aggregate ``cpu`` line of /proc/stat, in kernel order.
CPU_TIME_FIELDS: tuple[str, ...] = (
    "user",
    "nice",
    "system",
    "idle",
    "iowait",
    "irq",
    "softirq",
    "steal",
)

#: Directory holding the per-CPU cpufreq entries (monkeypatchable in tests).
_SYS_CPU_DIR = sysfs_path("devices/system/cpu")

#: Timeout, in seconds, of each ``git`` / ``nvidia-smi`` subprocess.
_SUBPROCESS_TIMEOUT_S = 5.0

#: Untracked paths under this top-level directory (run folders) are not counted in
#: ``git.untracked``.
_RESULTS_PREFIX = "results/"


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def _guard(fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn(*args)``, returning None on any error (best-effort fields)."""
    try:
        return fn(*args)
    except Exception:
        return None


def _run_bytes(args: list[str], cwd: str | os.PathLike[str] | None = None,
               env: dict[str, str] | None = None,
               why: list[str] | None = None) -> bytes | None:
    """Run a command (5 s timeout); return its raw stdout, None on failure. A child
    that does not end within the timeout (hung, or stopped by SIGSTOP) is killed
    then, so none holds the run longer. ``why``: given, the reason of a failure is
    appended to it: ``killed by SIGKILL``, ``exit code 1``, ``no answer within 5 s``
    or ``could not be started: ...``."""
    try:
        proc = subprocess.run(
            args,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=_SUBPROCESS_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        if why is not None:
            why.append(f"no answer within {_SUBPROCESS_TIMEOUT_S:g} s")
        return None
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        if why is not None:
            why.append(" ".join(f"could not be started: {exc}".split()))
        return None
    if proc.returncode != 0:
        if why is not None:
            why.append(_exit_reason(proc.returncode))
        return None
    return proc.stdout


def _exit_reason(code: int) -> str:
    """A child's non-zero exit status in words: ``killed by SIGKILL`` (a negative
    ``returncode``), else ``exit code N``."""
    if code >= 0:
        return f"exit code {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


def _run(args: list[str], cwd: str | os.PathLike[str] | None = None,
         env: dict[str, str] | None = None) -> str | None:
    """Run a command; return its stdout (decoded, stripped) or None."""
    out = _run_bytes(args, cwd=cwd, env=env)
    if out is None:
        return None
    return out.decode("utf-8", "replace").strip()


def _repo_root() -> Path | None:
    """Directory of the git checkout holding this package, or None.

    Walks up from this file's directory looking for a ``.git`` entry (a
    directory, or a file for worktrees/submodules).
    """
    here = Path(__file__).resolve().parent
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


# --------------------------------------------------------------------------
# Individual collectors (each returns None when unreadable)
# --------------------------------------------------------------------------


def _cpu_model() -> str | None:
    info: dict[str, Any] = {}
    if _pyperf_cpu_model is not None:
        _pyperf_cpu_model(info)  # fills cpu_model_name or cpu_machine
    model = info.get("cpu_model_name") or info.get("cpu_machine")
    return str(model) if model else None


def _cpu_affinity() -> list[int] | None:
    if not hasattr(os, "sched_getaffinity"):
        return None
    return sorted(int(c) for c in os.sched_getaffinity(0))


def _cpu_freq_and_governor(cpus: list[int]) -> tuple[float | None, str | None]:
    """Mean current frequency (MHz) and governor(s) of ``cpus`` from sysfs."""
    freqs_khz: list[int] = []
    governors: set[str] = set()
    for cpu in cpus:
        base = os.path.join(_SYS_CPU_DIR, f"cpu{cpu}", "cpufreq")
        cur = read_first_line(os.path.join(base, "scaling_cur_freq"))
        if cur:
            try:
                freqs_khz.append(int(cur))
            except ValueError:
                pass
        gov = read_first_line(os.path.join(base, "scaling_governor"))
        if gov:
            governors.add(gov)
    freq = round(sum(freqs_khz) / len(freqs_khz) / 1000.0, 1) if freqs_khz else None
    governor = ",".join(sorted(governors)) if governors else None
    return freq, governor


def _load_avg() -> list[float] | None:
    if not hasattr(os, "getloadavg"):
        return None
    return [float(x) for x in os.getloadavg()]


def _packages() -> dict[str, str]:
    versions: dict[str, str] = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except Exception:
            continue
    if "pyzmq" in versions:
        try:
            import zmq  # the harness uses zmq anyway; cheap to import

            versions["libzmq"] = str(zmq.zmq_version())
        except Exception:
            pass
    return versions


def _checkout_git() -> tuple[Path, dict[str, str], Callable[..., str | None]] | None:
    """``(root, env, git)`` of the git checkout holding this package: its folder, the
    environment git runs in there and ``git(*args)``, which runs ``git ARGS`` in it and
    returns its output (stripped; ``None`` where it failed or took over 5 s); ``None``
    when the package is not in a checkout or git is unavailable."""
    root = _repo_root()
    if root is None:
        return None
    root = Path(root)
    # Do not let the caller's GIT_DIR & co. redirect us, and never let git
    # discover a repository above ``root``.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CEILING_DIRECTORIES"] = str(root.resolve().parent)
    env["LC_ALL"] = "C"

    def git(*args: str) -> str | None:
        return _run(["git", "--no-optional-locks", *args], cwd=root, env=env)

    if git("rev-parse", "--is-inside-work-tree") != "true":
        return None
    return root, env, git


def checkout_commit() -> str | None:
    """The commit (40 hex digits) the checkout holding this package is at, as a run's
    metadata records it (``_git_info``'s ``commit``), read with two git calls and no
    ``git status``; ``None`` outside a checkout, without git or before a first
    commit."""
    checkout = _checkout_git()
    return None if checkout is None else checkout[2]("rev-parse", "--verify", "-q", "HEAD")


def checkout_state() -> tuple[str, bool | None] | None:
    """``(commit, dirty)`` for the checkout holding this package: ``checkout_commit``'s
    40 hex digits, and whether a tracked file differs from it (``_git_status``, as a
    run's metadata records ``dirty``; ``None`` when ``git status`` fails). ``None``
    where ``checkout_commit`` gives none."""
    checkout = _checkout_git()
    if checkout is None:
        return None
    root, env, git = checkout
    commit = git("rev-parse", "--verify", "-q", "HEAD")
    if not commit:
        return None
    status = _git_status(root, env)
    return commit, None if status is None else status[0]


def _git_info(notes: list[str] | None = None) -> dict[str, Any] | None:
    """``collect_metadata``'s ``git``: ``{"commit": 40-hex str, "dirty": bool,
    "untracked": int, "branch": str, "diff_sha256": 64-hex str}`` for the git checkout
    holding this package (``dirty`` and ``untracked``: ``_git_status``;
    ``diff_sha256``, only when dirty: ``_diff_sha256``, the digest of the tracked
    files' uncommitted changes, absent in runs made before it was recorded). ``None``
    when the package is not in a checkout or git is unavailable; ``commit`` is absent
    when the repository has no commit yet, ``branch`` when HEAD is detached, ``dirty``
    and ``untracked`` when ``git status`` fails, which appends a line saying so to
    ``notes`` (``git status failed (killed by SIGKILL): whether the checkout had
    changes is unknown``), when given. Each git call times out after 5 s."""
    checkout = _checkout_git()
    if checkout is None:
        return None
    root, env, git = checkout
    info: dict[str, Any] = {}
    commit = git("rev-parse", "--verify", "-q", "HEAD")
    if commit:
        info["commit"] = commit
    branch = git("symbolic-ref", "--short", "-q", "HEAD")
    if branch:
        info["branch"] = branch
    why: list[str] = []
    status = _git_status(root, env, why)
    if status is not None:
        info["dirty"], info["untracked"] = status
    elif notes is not None:
        notes.append(f"git status failed ({why[0] if why else 'no output'}): whether the "
                     f"checkout had changes is unknown")
    if commit and info.get("dirty") is True:
        digest = _diff_sha256(root, env)
        if digest:
            info["diff_sha256"] = digest
    return info


def _diff_sha256(root: Path, env: dict[str, str]) -> str | None:
    """SHA-256 (hex) of the tracked files' changes against HEAD, staged and not
    (``git diff HEAD --binary``, with the user's diff settings that change its text
    turned off: prefixes, renames, external drivers, text conversion), so that two
    dirty runs of one commit tell whether they ran the same uncommitted code; ``None``
    when ``git diff`` fails. Untracked files are not in it (they do not make a run
    dirty: ``_git_status``)."""
    out = _run_bytes(
        ["git", "--no-optional-locks", "-c", "diff.noprefix=false",
         "-c", "diff.mnemonicPrefix=false", "-c", "core.quotePath=true", "diff", "HEAD",
         "--binary", "--full-index", "--no-renames", "--no-ext-diff", "--no-textconv",
         "--no-color", "--"],
        cwd=root, env=env,
    )
    return None if out is None else hashlib.sha256(out).hexdigest()


def _git_status(root: Path, env: dict[str, str],
                why: list[str] | None = None) -> tuple[bool, int] | None:
    """``(dirty, untracked)``: ``dirty`` when a tracked file differs from the commit
    (modified, staged, deleted, renamed: what ``git status --untracked-files=no``
    lists), ``untracked`` the number of untracked paths ``git status`` lists (an
    untracked folder counts once; ignored files and those under ``results/`` are not
    counted), which leave the commit's code as it is; ``None`` when ``git status``
    fails (its reason appended to ``why``, when given: ``_run_bytes``)."""
    out = _run_bytes(
        ["git", "--no-optional-locks", "status", "--porcelain=v1", "-z",
         "--untracked-files=normal"],
        cwd=root, env=env, why=why,
    )
    if out is None:
        return None
    entries = out.decode("utf-8", "replace").split("\0")
    dirty, untracked = False, 0
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if "R" in code or "C" in code:
            i += 1  # a rename/copy entry is followed by its source path
        if code != "??":
            dirty = True
        elif not path.startswith(_RESULTS_PREFIX):
            untracked += 1
    return dirty, untracked


def _nvidia_driver() -> str | None:
    out = _run(["nvidia-smi", "--query-gpu=driver_version",
                "--format=csv,noheader"])
    if not out:
        return None
    first = out.splitlines()[0].strip()
    return first or None


#: ``nvidia-smi --query-gpu`` fields recorded per GPU, and their key in ``gpus``.
NVIDIA_SMI_FIELDS: tuple[tuple[str, str], ...] = (
    ("index", "index"),
    ("name", "name"),
    ("driver_version", "driver"),
    ("memory.total", "memory_total_mib"),
    ("clocks.sm", "sm_clock_mhz"),
    ("clocks.mem", "mem_clock_mhz"),
    ("clocks.max.sm", "sm_clock_max_mhz"),
    ("clocks.max.mem", "mem_clock_max_mhz"),
    ("power.limit", "power_limit_w"),
    ("pstate", "pstate"),
    ("persistence_mode", "persistence_mode"),
)

#: Directory of the DMI (SMBIOS) identity files (monkeypatchable in tests).
_SYS_DMI_DIR = sysfs_path("class/dmi/id")


def _smi_value(text: str) -> Any:
    """One ``nvidia-smi`` CSV cell (``nounits``): an int or float when numeric, the
    text otherwise; ``None`` for ``[N/A]``, ``[Not Supported]`` and empty cells."""
    text = text.strip()
    if not text or text.startswith("["):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _nvidia_smi_gpus() -> list[dict[str, Any]] | None:
    """Per GPU, the ``NVIDIA_SMI_FIELDS`` nvidia-smi reports (unreadable ones absent);
    ``None`` without nvidia-smi or when it fails. Does not import torch."""
    query = ",".join(field for field, _ in NVIDIA_SMI_FIELDS)
    out = _run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"])
    if not out:
        return None
    gpus = []
    for line in out.splitlines():
        cells = line.split(",")
        if len(cells) != len(NVIDIA_SMI_FIELDS):
            continue
        gpu = {key: _smi_value(cell) for (_, key), cell in zip(NVIDIA_SMI_FIELDS, cells)}
        gpus.append({k: v for k, v in gpu.items() if v is not None})
    return gpus or None


def _run_any_status(args: list[str]) -> str | None:
    """stdout of a command whatever its exit status (``systemd-detect-virt`` prints
    ``none`` and exits 1 on bare metal); ``None`` if it cannot run or prints nothing."""
    try:
        proc = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, timeout=_SUBPROCESS_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return proc.stdout.decode("utf-8", "replace").strip() or None


def _cpu_hypervisor_flag() -> bool | None:
    """Whether /proc/cpuinfo's ``flags`` include ``hypervisor`` (the CPU runs under a
    hypervisor); ``None`` when no flags line can be read (non-x86, no /proc)."""
    try:
        with open(proc_path("cpuinfo"), encoding="utf-8") as fp:
            for line in fp:
                if line.startswith("flags"):
                    return "hypervisor" in line.partition(":")[2].split()
    except OSError:
        pass
    return None


def _virtualization() -> dict[str, Any] | None:
    """What can be read about the machine's virtualisation (each key absent when
    unreadable; ``None`` when nothing is): ``product_name`` and ``sys_vendor`` (DMI),
    ``cpu_hypervisor_flag`` (/proc/cpuinfo), ``systemd_detect_virt_vm`` and
    ``systemd_detect_virt_container`` (``systemd-detect-virt --vm`` / ``--container``:
    e.g. ``kvm``, ``docker``, ``none``)."""
    info: dict[str, Any] = {}
    for name in ("product_name", "sys_vendor"):
        value = read_first_line(os.path.join(_SYS_DMI_DIR, name))
        if value:
            info[name] = value
    flag = _cpu_hypervisor_flag()
    if flag is not None:
        info["cpu_hypervisor_flag"] = flag
    for kind in ("vm", "container"):
        value = _run_any_status(["systemd-detect-virt", f"--{kind}"])
        if value:
            info[f"systemd_detect_virt_{kind}"] = value
    return info or None


def _gpu_info() -> dict[str, Any] | None:
    try:
        import torch
    except Exception:
        return None
    try:
        if not torch.cuda.is_available():
            return None
        count = int(torch.cuda.device_count())
        major, minor = torch.cuda.get_device_capability(0)
        info: dict[str, Any] = {
            "name": str(torch.cuda.get_device_name(0)),
            "count": count,
            "cuda": torch.version.cuda,
            "capability": f"{major}.{minor}",
        }
    except Exception:
        return None
    driver = _nvidia_driver()
    if driver:
        info["driver"] = driver
    return info


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def collect_metadata(*, include_hostname: bool = True,
                     command_line: list[str] | None = None,
                     probe_gpu: bool = False) -> dict:
    """Collect a JSON-serialisable description of the machine and software.

    Keys (a key is *absent* when its source cannot be read):

    - ``python_version``: ``platform.python_version()``, e.g. ``"3.11.7"``.
    - ``python_implementation``: e.g. ``"CPython"``.
    - ``executable``: ``sys.executable``; absent if empty.
    - ``platform``: ``platform.platform(aliased=True)``.
    - ``kernel``: kernel release (``platform.release()``).
    - ``hostname``: only when ``include_hostname`` is true (and non-empty).
    - ``cpu_model``: model name from /proc/cpuinfo (via pyperf); absent when
      /proc/cpuinfo is missing or has no model line (e.g. many ARM boards).
    - ``cpu_count``: ``os.cpu_count()`` (logical CPUs); absent if unknown.
    - ``cpu_affinity``: sorted list of CPU ids from
      ``os.sched_getaffinity(0)``; absent where unsupported.
    - ``cpu_freq_mhz``: mean ``scaling_cur_freq`` of the CPUs in the
      affinity set, in MHz (sysfs reports kHz), rounded to 0.1; absent
      when /sys/devices/system/cpu/cpuN/cpufreq is not readable (VMs,
      containers).
    - ``cpu_governor``: the cpufreq scaling governor of those CPUs, or the distinct
      governors joined by ``","``; absent as above.
    - ``load_avg``: ``[1 min, 5 min, 15 min]`` run-queue load averages
      (floats, number of runnable tasks); absent where unsupported. ``niceness``: the
      process's nice value (``os.getpriority``; 0 unless under ``nice``: ``nice_note``).
    - ``packages``: ``{distribution: version}`` for the installed members of
      :data:`PACKAGES` (uninstalled ones are absent), plus ``libzmq`` (the
      ``zmq.zmq_version()`` of the bundled/linked libzmq) when pyzmq is
      installed. Versions come from importlib.metadata; torch, pandas and
      matplotlib are never imported for this.
    - ``git``: ``{"commit", "dirty", "untracked", "branch", "diff_sha256"}`` of the
      git checkout holding this package (``_git_info`` says what each is and when
      it is absent); the whole key is absent outside a checkout or without git.
    - ``notes``: the run's notes on what could not be recorded (``_git_info``); absent if none.
    - ``command_line``: ``command_line`` if given, else ``sys.argv`` (copied).
    - ``start_time_utc``: this call's ISO 8601 UTC time (``"2024-05-01T12:00:00.1+00:00"``;
      ``end_time_utc``, so, by ``run_folder.RunFolder.finish``: ``run_interval``).
    - ``gpus`` (per GPU: ``nvidia-smi``'s name, driver, clocks, power limit ...;
      ``_nvidia_smi_gpus``, no torch import) and ``virtualization`` (DMI, CPU
      flag, systemd-detect-virt; ``_virtualization``): absent when unreadable.
    - ``gpu``: only when ``probe_gpu`` is true. ``None`` when torch is not
      importable or ``torch.cuda.is_available()`` is false; otherwise
      ``{"name", "count", "cuda", "capability", "driver"}`` where ``name``
      and ``capability`` (``"major.minor"``) describe device 0, ``count`` is
      the number of visible devices, ``cuda`` is ``torch.version.cuda`` and
      ``driver`` (from ``nvidia-smi``, 5 s timeout) is absent when
      nvidia-smi is missing or fails. Probing imports torch.
    """
    md: dict[str, Any] = {}

    def put(key: str, value: Any) -> None:
        if value is not None and value != "":
            md[key] = value

    put("python_version", _guard(platform.python_version))
    put("python_implementation", _guard(platform.python_implementation))
    put("executable", sys.executable or None)
    put("platform", _guard(platform.platform, True, False))
    put("kernel", _guard(platform.release))
    if include_hostname:
        put("hostname", _guard(socket.gethostname))

    _put_cpu(put, md)

    md["packages"] = _guard(_packages) or {}
    notes: list[str] = []
    put("git", _guard(_git_info, notes))

    md["command_line"] = [str(a) for a in
                          (sys.argv if command_line is None else command_line)]
    md["start_time_utc"] = datetime.datetime.now(datetime.timezone.utc).isoformat()

    put("gpus", _guard(_nvidia_smi_gpus))
    put("virtualization", _guard(_virtualization))
    if probe_gpu:
        md["gpu"] = _guard(_gpu_info)
    put("notes", notes or None)
    return md


def _put_cpu(put: Callable[[str, Any], None], md: dict) -> None:
    """The CPU keys of ``collect_metadata``: model, count, affinity, frequency,
    governor, load average."""
    put("cpu_model", _guard(_cpu_model))
    put("cpu_count", _guard(os.cpu_count))
    affinity = _guard(_cpu_affinity)
    put("cpu_affinity", affinity)
    cpus = affinity
    if not cpus and md.get("cpu_count"):
        cpus = list(range(md["cpu_count"]))
    freq_gov = _guard(_cpu_freq_and_governor, cpus or [])
    if freq_gov is not None:
        put("cpu_freq_mhz", freq_gov[0])
        put("cpu_governor", freq_gov[1])
    put("load_avg", _guard(_load_avg))
    put("niceness", _guard(os.getpriority, os.PRIO_PROCESS, 0))


def nice_note(md: dict) -> Optional[str]:
    """The ``note:`` of a run started at a lowered CPU priority (``niceness`` above 0:
    ``nice -n N python bench.py ...``), ``None`` otherwise: its processes wait for the
    machine's others, which its times then hold."""
    nice = md.get("niceness")
    if not isinstance(nice, int) or isinstance(nice, bool) or nice <= 0:
        return None
    return (f"this run runs at nice {nice} (a lowered CPU priority): on a busy machine "
            "its processes wait for the others, and its times and tokens/s hold those "
            "waits; bytes are exact whatever the priority")


def read_cpu_times() -> dict:
    """Read the aggregate ``cpu`` line of /proc/stat.

    Returns ``{"user", "nice", "system", "idle", "iowait", "irq", "softirq",
    "steal"}`` as ints, in jiffies (USER_HZ ticks, usually 1/100 s) summed
    over all CPUs since boot. Fields the kernel does not report are 0. Returns
    an empty dict when /proc/stat is missing or unparsable (non-Linux).
    """
    try:
        with open(proc_path("stat"), encoding="utf-8") as fp:
            for line in fp:
                fields = line.split()
                if not fields or fields[0] != "cpu":
                    continue
                values = [int(v) for v in fields[1:1 + len(CPU_TIME_FIELDS)]]
                values += [0] * (len(CPU_TIME_FIELDS) - len(values))
                return dict(zip(CPU_TIME_FIELDS, values))
    except (OSError, ValueError):
        pass
    return {}


def cpu_usage_between(before: dict, after: dict) -> dict:
    """Machine-wide CPU usage between two :func:`read_cpu_times` snapshots.

    Returns ``{"busy_pct": float, "steal_pct": float}``, percentages (0-100)
    of all CPU time elapsed in the interval, summed over every CPU:

    - ``busy_pct``: user + nice + system + irq + softirq (time spent running
      work; steal is *not* included);
    - ``steal_pct``: steal, time the hypervisor ran something else while a
      vCPU wanted to run (non-zero only in VMs).

    The remainder is idle + iowait. Missing keys count as 0. Both values are
    0.0 when the interval is empty (no jiffy elapsed, an empty snapshot, or
    counters that went backwards).
    """
    delta = {f: int(after.get(f, 0)) - int(before.get(f, 0))
             for f in CPU_TIME_FIELDS}
    total = sum(delta.values())
    if total <= 0:
        return {"busy_pct": 0.0, "steal_pct": 0.0}
    busy = sum(delta[f] for f in ("user", "nice", "system", "irq", "softirq"))
    return {
        "busy_pct": 100.0 * busy / total,
        "steal_pct": 100.0 * delta["steal"] / total,
    }


#: A run started on a loaded machine: its 1-minute load average (``load_avg[0]`` of the
#: metadata) at or above this share of its CPUs (``cpu_count``).
LOADED_SHARE = 0.5


def loaded_at_start(md: dict) -> Optional[tuple[float, int]]:
    """``(1-minute load average, CPUs)`` of the run whose metadata is ``md`` when that
    load average was at or above ``LOADED_SHARE`` of its CPUs as the run started
    (``collect_metadata``'s ``load_avg`` and ``cpu_count``); ``None`` otherwise, also
    when either is not recorded."""
    load, cpus = md.get("load_avg"), md.get("cpu_count")
    if not load or not cpus or load[0] < LOADED_SHARE * cpus:
        return None
    return float(load[0]), int(cpus)


def loaded_note(md: dict) -> Optional[str]:
    """The ``note:`` line a run prints after its first line when it starts on a loaded
    machine (``loaded_at_start``), e.g. ``the machine is loaded as this run starts
    (1-minute load average 3.2 on 2 CPUs): times and tokens/s will be noisy; bytes are
    exact whatever the load``; ``None`` when it is not loaded. The report says the same
    (``report.blocks``: ``The machine was loaded when this run started ...``)."""
    loaded = loaded_at_start(md)
    if loaded is None:
        return None
    return (f"the machine is loaded as this run starts (1-minute load average "
            f"{loaded[0]:.1f} on {loaded[1]} CPUs): times and tokens/s will be noisy; "
            "bytes are exact whatever the load")


_ABSENT = "absent"


def run_interval(md: dict) -> tuple[Optional[datetime.datetime], Optional[datetime.datetime]]:
    """(start, end) of the run whose metadata is ``md``: ``start_time_utc`` and
    ``end_time_utc`` (``run_folder.RunFolder.finish`` records it when the run ends;
    absent from older runs and from one killed or still running), each ``None``
    when not recorded or not a timestamp (``iso_time``)."""
    return iso_time(md.get("start_time_utc")), iso_time(md.get("end_time_utc"))


def iso_time(value: Any) -> Optional[datetime.datetime]:
    """``value`` (a metadata field) as an aware time (UTC where it names no zone), or
    ``None`` where it is no ISO 8601 text (``"yesterday"``)."""
    if not isinstance(value, str):
        return None
    try:
        t = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=datetime.timezone.utc)


def _shown_time(t: datetime.datetime) -> str:
    return t.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def overlap_line(a: dict, b: dict, names: tuple[str, str] = ("A", "B")) -> Optional[str]:
    """The line saying that runs ``a`` and ``b`` (metadata; ``names`` in the line)
    overlapped in time on one host (both recorded the same ``hostname``, and a start
    and an end, ``run_interval``), each loading the machine the other measured on;
    ``None`` when they did not, or when it cannot be told."""
    if not (a.get("hostname") and a.get("hostname") == b.get("hostname")):
        return None
    (sa, ea), (sb, eb) = run_interval(a), run_interval(b)
    if None in (sa, ea, sb, eb) or not (sa < eb and sb < ea):
        return None
    return (f"the runs overlapped in time on this host ({names[0]} from {_shown_time(sa)} "
            f"to {_shown_time(ea)}, {names[1]} from {_shown_time(sb)} to "
            f"{_shown_time(eb)} UTC): each ran on a machine the other loaded")


def commit_shown(git: Optional[dict], digits: Optional[int] = None) -> Optional[str]:
    """The commit of a run's ``git`` record (its first ``digits`` hex digits, all when
    ``None``), followed by `` (dirty)`` when a tracked file differed from it as the run
    ran (``dirty``): the code that ran is then not the commit's. ``None`` when the
    record names no commit."""
    commit = (git or {}).get("commit")
    if not commit:
        return None
    return commit[:digits] + (" (dirty)" if (git or {}).get("dirty") is True else "")


def code_identity(git: Optional[dict]) -> str:
    """The code a ``git`` record (``collect_metadata``'s) names, as one text two
    processes' records can be compared by: the full commit, `` (dirty, changes
    SHA256[:12])`` when tracked files differed from it (``(dirty)`` without a digest);
    ``unknown (not a git checkout)`` without a record or a commit."""
    shown = commit_shown(git)
    if shown is None:
        return "unknown (not a git checkout)"
    digest = (git or {}).get("diff_sha256")
    return shown.replace(" (dirty)", f" (dirty, changes {digest[:12]})") if digest else shown


def source_code() -> str:
    """``code_identity`` of this process's own checkout (``_git_info``: a few git
    calls, each at most 5 s): what a runner started by hand tells the scheduler."""
    return code_identity(_guard(_git_info, None))


#: ``uncommitted_changes``' answers.
SAME_CHANGES, DIFFERENT_CHANGES, UNKNOWN_CHANGES = "same", "different", "unknown"


def uncommitted_changes(a: Optional[dict], b: Optional[dict]) -> Optional[str]:
    """Whether two runs' ``git`` records (``collect_metadata``), both dirty at the same
    commit, ran the same uncommitted changes: ``SAME_CHANGES`` or ``DIFFERENT_CHANGES``
    by their ``diff_sha256``, ``UNKNOWN_CHANGES`` when either lacks it (a run made
    before it was recorded, or ``git diff`` failed); ``None`` when the question does
    not arise (other commits, a commit missing, or either run clean)."""
    a, b = a or {}, b or {}
    if not a.get("commit") or a.get("commit") != b.get("commit") \
            or a.get("dirty") is not True or b.get("dirty") is not True:
        return None
    da, db = a.get("diff_sha256"), b.get("diff_sha256")
    if not da or not db:
        return UNKNOWN_CHANGES
    return SAME_CHANGES if da == db else DIFFERENT_CHANGES


def compare_metadata(a: dict, b: dict, names: tuple[str, str] = ("A", "B")) -> list[str]:
    """List the differences between two metadata dicts that matter.

    Compares, in this order: ``hostname`` (only when both dicts recorded one:
    a run made with ``--no-hostname`` has none), ``cpu_model``, ``cpu_count``,
    ``python_version``, ``kernel``, every package version in either dict
    (sorted by name, including ``libzmq``), the git commit (`` (dirty)`` after it where
    the checkout was: ``git commit differs: abc123 (dirty) vs abc123``) and the GPU
    name.
    Returns one line per difference, ``"<field> differs: <a> vs <b>"``, e.g.
    ``"git commit differs: abc123 vs def456"`` or
    ``"package numpy differs: 1.26.4 vs absent"``; two runs dirty at one commit
    (``uncommitted_changes``) whose uncommitted changes differ, ``"git uncommitted
    changes differ: same commit abc123 (dirty), different uncommitted changes (diff
    sha256 1f2e... vs 9a8b...)"``, or cannot be told apart, ``"git uncommitted changes
    unknown: same commit abc123 (dirty), but B recorded no digest of its uncommitted
    changes (...): the code that ran may differ"``; a value missing on one
    side (or a ``gpu`` of None) prints as ``absent``. A field missing on
    both sides is not a difference. Last, runs of one host that overlapped in time
    (``overlap_line``, naming them ``names``). Returns ``[]`` when nothing differs.
    """
    lines: list[str] = []

    def check(label: str, va: Any, vb: Any) -> None:
        if va != vb:
            lines.append(f"{label} differs: "
                         f"{_ABSENT if va is None else va} vs "
                         f"{_ABSENT if vb is None else vb}")

    if a.get("hostname") and b.get("hostname"):
        check("hostname", a["hostname"], b["hostname"])
    for key in ("cpu_model", "cpu_count", "python_version", "kernel"):
        check(key, a.get(key), b.get(key))

    pa = a.get("packages") or {}
    pb = b.get("packages") or {}
    for name in sorted(set(pa) | set(pb)):
        check(f"package {name}", pa.get(name), pb.get(name))

    check("git commit", commit_shown(a.get("git")), commit_shown(b.get("git")))
    changes = uncommitted_changes(a.get("git"), b.get("git"))
    if changes == DIFFERENT_CHANGES:
        lines.append(f"git uncommitted changes differ: same commit "
                     f"{commit_shown(a.get('git'), 12)}, different uncommitted changes "
                     f"(diff sha256 {a['git']['diff_sha256'][:12]} vs "
                     f"{b['git']['diff_sha256'][:12]})")
    elif changes == UNKNOWN_CHANGES:
        lacking = [n for n, g in zip(names, (a["git"], b["git"])) if not g.get("diff_sha256")]
        lines.append(f"git uncommitted changes unknown: same commit "
                     f"{commit_shown(a.get('git'), 12)}, but "
                     f"{' and '.join(lacking)} recorded no digest of "
                     f"{'its' if len(lacking) == 1 else 'their'} uncommitted changes (a run "
                     "made before the digest was recorded): the code that ran may differ")

    gpu_a = a.get("gpu") or {}
    gpu_b = b.get("gpu") or {}
    check("gpu name", gpu_a.get("name"), gpu_b.get("name"))
    overlap = overlap_line(a, b, names)
    if overlap:
        lines.append(overlap)
    return lines


def trace_record(path: str, sha256: Optional[str],
                 resolved_path: Optional[str] = None) -> dict[str, Any]:
    """What identifies the trace a run replays (``metadata["trace"]``): ``path`` as
    given, ``resolved_path``, the path resolved as the replay read it
    (``engine.traces.Trace.resolved_path``: ``os.path.realpath``, a relative path
    against the run's working directory; ``None`` for a pipe or when unknown), and
    ``sha256``, the SHA-256 of the bytes the replay read as it loaded the
    trace (``engine.traces.Trace.sha256``: the header through the last row replayed;
    ``None`` when unknown), so that two runs of the same name but other content tell
    apart, and two names of one file are known as one. The file is not opened again:
    a pipe (``<(...)``, a FIFO) can be read once."""
    return {"path": path, "resolved_path": resolved_path, "sha256": sha256}


#: Fields of a case's recorded settings (``metadata["cases"]``) that name the case or
#: only bound how long its processes wait, not what it measures: left out of
#: ``compare_settings``.
_CASE_IDENTITY = frozenset({"case_id", "labels", "policy", "arm", "codec", "repetition",
                            "peer_timeout_s", "startup_timeout_s"})
#: ... and whether ``--no-floor`` left a case's floor out (``no_floor``): the flag's
#: line says it (``MEASUREMENT_FLAGS``, ``_flag_text``), not a case setting's.
_NOT_COMPARED = _CASE_IDENTITY | {"no_floor"}

#: Case settings (``_flat`` names) recorded only since they were added -> the value a
#: case recorded before them ran with, which its absence is compared as:
#: ``--vllm-layout``'s ``scheduler.vllm_layout``.
SETTINGS_ADDED: dict[str, Any] = {"scheduler.vllm_layout": DEFAULT_VLLM_LAYOUT}


#: Case settings (``_flat`` names) that change how fast a case runs, never what its
#: steps carry: a difference in them is listed, but with ``compare_settings``'s
#: ``exact`` the workloads stay comparable by their bytes per step; each with what it
#: sets, in words (``report.blocks.TIMING_ONLY_NOTE``).
TIMING_ONLY_SETTINGS = {"cpu_affinity": "CPU pinning",  # --cpu-affinity
                        "model.step_wait": "how the fixed-step model waits"}


#: Scenario options that choose which workloads run (each a workload label's value:
#: ``num_running=4``, ``trace=azure-conv:20``...), not how a workload runs: a
#: difference in them is listed but leaves the workloads both runs ran comparable.
_WORKLOAD_OPTIONS = frozenset({"num_running", "max_requests", "step_time_ms", "tp",
                               "tp_transports", "pp"})


def _flat(d: dict, prefix: str = "") -> dict[str, Any]:
    """``d`` with nested dicts flattened to dotted keys (``model.vocab_size``)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _case_key(case: dict) -> tuple[str, tuple]:
    """(workload, arm) of a recorded case: its labels as sorted ``k=v`` pairs (as
    ``CaseSpec.workload_key``), and its policy, arm and codec."""
    labels = case.get("labels") or {}
    workload = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    return workload, (case.get("policy"), case.get("arm"), case.get("codec"))


def _case_keys(md: dict) -> set[tuple[str, tuple]]:
    return {_case_key(c) for c in md.get("cases") or [] if isinstance(c, dict)}


def _workload_settings(md: dict, keys: Optional[set] = None) -> dict[str, dict[str, list[str]]]:
    """Per workload (its labels as sorted ``k=v`` pairs, as ``CaseSpec.workload_key``),
    each recorded case setting (``_flat``, identity fields left out, and the model
    settings the case's model does not use: ``scenario.model_uses``) -> the sorted
    distinct values its cases ran with, as text. ``keys``: only the cases whose
    ``_case_key`` is among them (the arms both compared runs ran)."""
    from ipc_bench.harness.scenario import model_uses

    out: dict[str, dict[str, set]] = {}
    for case in md.get("cases") or []:
        if not isinstance(case, dict) or (keys is not None and _case_key(case) not in keys):
            continue
        key = _case_key(case)[0]
        settings = out.setdefault(key, {})
        model = case.get("model")
        unused = set()
        if isinstance(model, dict):
            unused = {f"model.{k}" for k in model
                      if not model_uses(str(model.get("name")), k)}
        flat = _flat({k: v for k, v in case.items() if k not in _NOT_COMPARED})
        for name, value in SETTINGS_ADDED.items():  # a run from before them ran these
            if isinstance(case.get(name.partition(".")[0]), dict) and flat.get(name) is None:
                flat[name] = value
        for name in set(flat) | set(settings):
            values = settings.setdefault(name, set())
            if name not in unused:  # unused by every case: empty, and not compared
                values.add(_setting_text(name, flat.get(name)))
    return {w: {k: sorted(v) for k, v in s.items()} for w, s in out.items()}


def _repetitions(md: dict, keys: set) -> dict[str, int]:
    """Per workload (as ``_workload_settings``), how many repetitions (``--repeat``:
    distinct ``repetition`` values) its cases whose ``_case_key`` is among ``keys``
    ran; a workload whose cases recorded no repetition is left out."""
    reps: dict[str, set] = {}
    for case in md.get("cases") or []:
        if (isinstance(case, dict) and _case_key(case) in keys
                and case.get("repetition") is not None):
            reps.setdefault(_case_key(case)[0], set()).add(_text(case["repetition"]))
    return {w: len(r) for w, r in reps.items()}


def _values_text(values: list[str]) -> str:
    """A setting's values over a workload's cases, joined by ``, `` or, where a value
    holds a comma itself (a CPU list: ``0,1``), by ``; ``: ``0; 0,1``."""
    return ("; " if any("," in v for v in values) else ", ").join(values)


def _setting_text(name: str, value: Any) -> str:
    """A recorded case setting ``name``'s ``value`` as text (``_text``), but
    ``cpu_affinity`` as ``--cpu-affinity`` reads it (``0,1``; ``not pinned`` for None)."""
    if name == "cpu_affinity":
        return "not pinned" if value is None else ",".join(map(str, value))
    return _text(value)


def _text(value: Any) -> str:
    """A recorded setting as text: ``absent`` for None."""
    if value is None:
        return _ABSENT
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def _trace_text(trace: dict) -> str:
    digest = trace.get("sha256")
    return f"{trace.get('path')} (sha256 {digest[:12] if digest else 'unread'})"


#: Scenario options -> the case setting (``_flat`` name, ``metadata["cases"]``) that
#: each one sets, so that an option left to its scenario's default (``None`` in
#: ``metadata["options"]``) compares by the value its run's cases ran with. The options
#: that choose workloads set a workload label (``labels.*``: tp-broadcast's
#: ``broadcast`` is the transport of ``--tp-transports``). Not here: ``max_requests``
#: (a replay's label counts the requests replayed, which a shorter trace makes fewer)
#: and ``logical_step_ms`` (no case records it): left to their defaults they take the
#: values their scenario declares (``scenario_option_defaults``).
OPTION_SETTINGS: dict[str, str] = {
    "num_running": "labels.num_running", "tp": "labels.tp",
    "tp_transports": "labels.broadcast", "pp": "labels.pp",
    "steps": "counted_steps", "warmup_steps": "warmup_steps",
    "trace_speedup": "trace_speedup", "model": "model.name",
    "step_time_ms": "model.step_time_ms", "step_wait": "model.step_wait",
    "model_preset": "model.preset", "torch_threads": "model.num_threads",
    "device": "model.device", "attention": "model.attention",
    "cuda_graphs": "model.cuda_graphs", "cuda_graph_sizes": "model.cuda_graph_sizes",
    "roofline": "model.roofline", "vocab_size": "model.vocab_size",
    "token_ids": "model.token_ids",
    "max_num_seqs": "scheduler.max_num_seqs",
    "max_num_batched_tokens": "scheduler.max_num_batched_tokens",
    "max_model_len": "scheduler.max_model_len", "block_size": "scheduler.block_size",
    "num_blocks": "scheduler.num_blocks"}


#: Case settings that the harness derives from options, -> those options: a difference
#: in one of them is said by the option's line alone (``_settings_stated``). A steady
#: case's ``max_steps`` (``scenario.steady_case_max_steps``) is its warm-up and
#: counted steps plus the prefill and mixed steps its scheduler settings take.
DERIVED_SETTINGS: dict[str, frozenset[str]] = {
    "max_steps": frozenset({"steps", "warmup_steps", "max_num_seqs",
                            "max_num_batched_tokens", "max_model_len", "block_size",
                            "num_blocks"})}


def _elements(value: Any) -> set[str]:
    """``value``'s items as text (``_text``): a list's elements, else the value."""
    return {_text(v) for v in value} if isinstance(value, (list, tuple)) else {_text(value)}


def effective_option(md: dict, name: str) -> Optional[set[str]]:
    """The values scenario option ``name`` took in the run of metadata ``md``, as text
    (``_elements``): the value given (``metadata["options"]``), else, for an option
    left to its scenario's default, the values its cases ran with (``OPTION_SETTINGS``;
    a model setting only from the cases whose model uses it, ``scenario.model_uses``).
    ``None`` when it cannot be told: no such case setting, or a case that recorded none
    (an older run, or a case the option does not apply to, such as the counted steps of
    a replay). An option no case records (``--max-requests``, ``--logical-step-ms``)
    takes its scenario's declared default (``scenario_option_defaults``: ``{"300"}``
    for an Azure replay's ``--max-requests``), ``None`` where it declares none."""
    from ipc_bench.harness.scenario import model_uses

    given = (md.get("options") or {}).get(name)
    if given is not None:
        return _elements(given)
    setting = OPTION_SETTINGS.get(name)
    if setting is None:
        defaults = scenario_option_defaults(md.get("scenario")) or {}
        return _elements(defaults[name]) if name in defaults else None
    out: set[str] = set()
    for case in md.get("cases") or []:
        if not isinstance(case, dict):
            continue
        model = case.get("model") if isinstance(case.get("model"), dict) else {}
        if setting.startswith("model.") and not model_uses(str(model.get("name")),
                                                             setting.split(".", 1)[1]):
            continue
        value = _flat(case).get(setting)
        if value is None:
            return None
        out |= _elements(value)
    return out or None


#: Options that choose which cases a run runs in any scenario, not how a case runs:
#: its policies, codecs and arms (``--aa``, ``--async-scheduling``), the draft counts
#: of its workloads, its single-process baselines, and its transport where the runs
#: share no arm (else each shared arm's ``transport`` case setting states it, marking
#: its workload). A run records them in ``metadata["options"]``
#: (``no_single_process``: whether ``--no-single-process`` was given); one written
#: before did not, so each is compared by what the run's cases ran
#: (``ran_selection``), never by its value as given alone, and marks no workload: the
#: cases both runs ran stay comparable.
CASE_SELECTION_OPTIONS = ("policies", "codecs", "aa", "async_scheduling",
                          "num_spec_tokens", "no_single_process", "transport")

#: Flags that leave out a measurement a case takes after its counted steps, not a
#: case, -> the case setting that records whether a case took it: ``--no-floor``
#: (``no_floor`` in ``metadata["options"]``: whether it was given; a case's ``floor``).
#: Compared as the flags of ``CASE_SELECTION_OPTIONS`` are, by what the run's cases did
#: (``ran_selection``), and marking no workload: the floor replays a case's frames once
#: its counted steps are measured, so the case's own rows (its tokens/s, step times
#: and bytes per step) are the same with it or without (``AFTER_STEPS_SETTINGS``).
MEASUREMENT_FLAGS = {"no_floor": "floor"}
#: Case settings of what a case measures after its counted steps (``MEASUREMENT_FLAGS``):
#: a difference in them is listed but marks no workload in ``compare_settings``.
AFTER_STEPS_SETTINGS = frozenset(MEASUREMENT_FLAGS.values())


def ran_selection(md: dict, name: str) -> Optional[set[str]]:
    """What case-selection option ``name`` (``CASE_SELECTION_OPTIONS``, or a flag of
    ``MEASUREMENT_FLAGS``) took in the run
    of metadata ``md``, as text, read from its recorded cases: the policies, the codecs
    and transports (the single-process cases left out: codec ``none``, transport
    ``inproc``), whether an A/A copy (an arm ending
    ``'``), an async case or a single-process case ran (``{"True"}`` / ``{"False"}``:
    ``no_single_process`` is ``True`` where none ran), the draft counts (workload label
    ``num_spec_tokens``; ``0`` where a case has none); ``no_floor``: ``{"True"}`` where
    no case replayed a floor (its ``floor`` setting), ``None`` where no case recorded
    whether it did. ``None`` when the run recorded no case."""
    from ipc_bench.harness.spec import NO_CODEC

    cases = [c for c in md.get("cases") or [] if isinstance(c, dict)]
    if not cases:
        return None
    if name in MEASUREMENT_FLAGS:
        took = [c[MEASUREMENT_FLAGS[name]] for c in cases if MEASUREMENT_FLAGS[name] in c]
        return {str(not any(t is True for t in took))} if took else None
    if name == "policies":
        return {_text(c.get("policy")) for c in cases}
    if name in ("codecs", "transport"):
        field = name.rstrip("s")
        return {_text(c.get(field)) for c in cases if c.get("codec") != NO_CODEC} or None
    if name == "num_spec_tokens":
        return {_text((c.get("labels") or {}).get("num_spec_tokens", 0)) for c in cases}
    ran = {"aa": lambda c: str(c.get("arm") or "").endswith("'"),
           "async_scheduling": lambda c: c.get("async_scheduling") is True,
           "no_single_process": lambda c: c.get("codec") == NO_CODEC}[name]
    hit = any(ran(c) for c in cases)
    return {str(not hit if name == "no_single_process" else hit)}


def _selection_text(options: dict, name: str, ran: set[str]) -> str:
    """Case-selection option ``name`` of a run as a difference line shows it: its value
    as given, followed by what its cases ran where that is other (``[msgpack, pickle]
    (in effect: msgpack)``); ``default (msgpack, pickle)`` where it was not given (a
    flag left off included); ``not recorded (msgpack)`` for a run written before the
    option was recorded."""
    values = ", ".join(sorted(ran, key=_number_first))
    if name not in options:
        return f"not recorded ({values})"
    given = options[name]
    if given is None or given is False:
        return f"default ({values})"
    if _elements(given) == ran:
        return _text(given)
    return f"{_text(given)} (in effect: {values})"


#: The cases each flag of ``CASE_SELECTION_OPTIONS`` adds (or, ``--no-single-process``,
#: leaves out), and the measurement each of ``MEASUREMENT_FLAGS`` leaves out, as
#: ``_selection_lines`` names them.
FLAG_CASES = {"aa": "A/A copies (--aa)", "async_scheduling": "cached+async cases",
              "no_single_process": "single-process cases", "no_floor": "floors"}


def _floorless_cases(md: dict) -> Optional[str]:
    """Why the cases of the run of metadata ``md`` run no floor where every one of them
    runs none whatever ``--no-floor`` (``CaseSpec.no_floor``): ``azure-conv-timed's
    timed replays run none`` where they are timed replays (a recorded
    ``trace_speedup``), with or without the single-process cases beside them;
    ``single-process cases run none`` where they are all those; ``pp runs none``
    where each recorded that it runs none though the flag did not leave it out
    (``floor`` and ``no_floor`` false: ``overhead``, ``pp``) or is a ``--pp`` case
    (``pp`` set: ``harness.pp_case``, a run written before ``no_floor`` was recorded);
    ``None`` where some case could have run one, or none is recorded."""
    from ipc_bench.harness.spec import NO_CODEC

    cases = [c for c in md.get("cases") or [] if isinstance(c, dict)]
    timed = [c.get("trace_speedup") is not None for c in cases]
    single = [c.get("codec") == NO_CODEC for c in cases]
    own = [c.get("pp") is not None or (c.get("floor") is False and c.get("no_floor") is False)
           for c in cases]
    if not cases or not all(any(why) for why in zip(timed, single, own)):
        return None
    scenario = md.get("scenario")
    if any(timed):
        return (f"{scenario}'s " if isinstance(scenario, str) else "") + "timed replays run none"
    if all(single):
        return "single-process cases run none"
    return f"{scenario} runs none" if isinstance(scenario, str) else "its cases run none"


def _flag_text(options: dict, name: str, ran: set[str], md: dict) -> str:
    """What a run of metadata ``md`` did about flag ``name`` (``FLAG_CASES``), from what
    its cases ran (``ran``, ``ran_selection``) and its options as given (``options``):
    ``run`` or ``not run``, then why: ``(--no-single-process given)``, ``(azure-conv's
    default)`` where the flag was left off, ``(not recorded)`` for a run written before
    the flag was recorded; floors not run by cases that run none whatever the flag
    (``_floorless_cases``), that, not the flag: ``not run (azure-conv-timed's timed
    replays run none, --no-floor or not)``, ``not run (overhead runs none, --no-floor
    or not)``. A ``no_`` flag's ``ran`` is ``{"True"}``
    where none ran."""
    did = ("False" in ran) if name.startswith("no_") else ("True" in ran)
    floorless = _floorless_cases(md) if name == "no_floor" and not did else None
    if floorless:
        return f"not run ({floorless}, --no-floor or not)"
    scenario = md.get("scenario")
    why = ("not recorded" if name not in options
           else f"--{name.replace('_', '-')} given" if options[name]
           else f"{scenario}'s default" if isinstance(scenario, str) else "default")
    return f"{'run' if did else 'not run'} ({why})"


def _selection_lines(oa: dict, ob: dict, a: dict, b: dict) -> list[tuple[str, bool]]:
    """The case-selection options (``CASE_SELECTION_OPTIONS``) whose cases ran other
    values in runs ``a`` and ``b`` (``ran_selection``), ``a``'s first, as
    ``_option_lines`` states them (``option --codecs differs: [msgpack] vs default
    (msgpack, pickle)``; a flag by the cases it adds, ``_flag_text``: ``single-process
    cases differ: not run (azure-conv's default) vs run (decode-steady's default)``),
    the synchronous cached cases after the cached+async ones (``_sync_cached_line``);
    none makes a workload incomparable. The transport only where
    the runs share no arm (``_case_keys``). Then the flags of ``MEASUREMENT_FLAGS`` as
    the others: ``floors differ: not run (--no-floor given) vs run (decode-steady's
    default)``; a timed replay's, which runs none whatever the flag, ``not run
    (azure-conv-timed's timed replays run none, --no-floor or not)``, and so a scenario's
    that never runs one (``_floorless_cases``: ``not run (pp runs none, --no-floor or
    not)``)."""
    out = []
    shared = bool(_case_keys(a) & _case_keys(b))
    for name in CASE_SELECTION_OPTIONS + tuple(MEASUREMENT_FLAGS):
        if name == "no_single_process":  # after the cached+async cases' line
            sync = _sync_cached_line(oa, ob, a, b)
            out += [(sync, False)] if sync else []
        if name == "transport" and shared:
            continue  # a case setting of the arms both ran (``compare_settings``)
        ea, eb = ran_selection(a, name), ran_selection(b, name)
        unrecorded = ea is None or eb is None
        if name == "transport" and unrecorded:
            # a run that recorded no case (metadata edited, or written by another
            # tool): the transport as given, which makes every row incomparable; only
            # where the other ran one (tp-broadcast's come from a workload label)
            ea, eb = (_given_transport(oa, ea), _given_transport(ob, eb))
            if not (ea is None or eb is None or ea == eb or max(len(ea), len(eb)) > 1):
                out.append((f"option --transport differs: {_selection_text(oa, name, ea)} "
                            f"vs {_selection_text(ob, name, eb)}", True))
            continue
        if ea is None or eb is None or ea == eb:
            continue
        if name in FLAG_CASES:
            out.append((f"{FLAG_CASES[name]} differ: {_flag_text(oa, name, ea, a)} vs "
                        f"{_flag_text(ob, name, eb, b)}", False))
            continue
        narrowed = _narrowed_default(oa, ob, a, b, ea, eb) if name == "policies" else None
        if narrowed is not None:
            out.append((narrowed, False))
            continue
        given = oa.get(name)
        if name in oa and name in ob and given == ob.get(name) and given is not None:
            out.append((_in_effect_line(name, given, ea, eb, a, b), False))
            continue
        out.append((f"option --{name.replace('_', '-')} differs: "
                    f"{_selection_text(oa, name, ea)} vs {_selection_text(ob, name, eb)}",
                    False))
    return out


#: The cases ``_sync_cached_line`` names: the cached policy run synchronously, which
#: ``--async-scheduling`` runs beside each async case where given no ``--policies`` and
#: no ``--aa``, and leaves out otherwise.
SYNC_CACHED_CASES = "synchronous cached cases"


def _sync_cached(md: dict) -> Optional[bool]:
    """Whether the run of metadata ``md`` ran a synchronous case of the cached policy
    (an arm of it not async, its A/A copy included; the single-process cases left out:
    their own line says whether they ran); ``None`` where it recorded no such case."""
    from ipc_bench.engine.config import CACHED
    from ipc_bench.harness.spec import NO_CODEC

    cases = [c for c in md.get("cases") or [] if isinstance(c, dict)
             and c.get("codec") != NO_CODEC and c.get("policy") == CACHED]
    return any(c.get("async_scheduling") is not True for c in cases) if cases else None


def _sync_cached_line(oa: dict, ob: dict, a: dict, b: dict) -> Optional[str]:
    """The line of runs ``a`` and ``b`` (options ``oa`` and ``ob``) that both ran the
    cached policy, one of them synchronously and the other only with async scheduling,
    ``a``'s first, each with the options that chose it: ``synchronous cached cases
    differ: run (--async-scheduling given) vs not run (--async-scheduling and --policies
    cached given)``, ``run (decode-steady's default)`` for a run given none of
    ``--async-scheduling``, ``--aa`` and ``--policies``; ``(not recorded)`` for a run
    written before they were. ``None`` where both ran it or neither, or either ran no
    cached case (the policies' line says so)."""
    did = [_sync_cached(md) for md in (a, b)]
    if None in did or did[0] == did[1]:
        return None
    shown = []
    for options, md, ran in ((oa, a, did[0]), (ob, b, did[1])):
        given = [f"--{n.replace('_', '-')}" for n in ("async_scheduling", "aa")
                 if options.get(n) is True]
        if isinstance(options.get("policies"), list):
            given.append(f"--policies {', '.join(map(str, options['policies']))}")
        scenario = md.get("scenario")
        why = ("not recorded" if "async_scheduling" not in options
               else f"{scenario}'s default" if not given and isinstance(scenario, str)
               else "default" if not given
               else f"{given[0]} given" if len(given) == 1
               else f"{', '.join(given[:-1])} and {given[-1]} given")
        shown.append(f"{'run' if ran else 'not run'} ({why})")
    return f"{SYNC_CACHED_CASES} differ: {shown[0]} vs {shown[1]}"


#: The line head of policies that differ only because ``--aa`` or ``--async-scheduling``
#: narrowed a default (``_narrowed_default``); ``report.blocks.SAME_ROWS_DIFFERENCES``
#: reads it as a difference that changes no figure of a row both runs have.
NARROWED_POLICIES = "default policies differ: "


def _narrowed_default(oa: dict, ob: dict, a: dict, b: dict, ea: set[str],
                      eb: set[str]) -> Optional[str]:
    """The line of policies ``ea`` and ``eb`` (what runs of metadata ``a`` and ``b``, with
    options ``oa`` and ``ob``, ran: ``ran_selection``) that differ only because ``--aa``
    (one policy and its A/A copy) or ``--async-scheduling`` (the cached policy alone)
    narrowed the default of a run given no ``--policies``: ``default policies differ:
    send vs cached, send (--policies not given: --aa runs one policy alone)``; a run
    given the policies its flags run without ``--policies`` (``_same_as_not_given``:
    ``--policies send,cached``, the default's two; ``--aa --policies send``, what
    ``--aa`` runs) counts as one given none, the line then saying ``(--policies not
    given or given as its default: ...)``, or, where a flag's one policy was given,
    ``(--policies not given or given as the flags run it: ...)``. The flag's own line
    (``FLAG_CASES``) says the rest. ``None`` where either run was given other
    ``--policies`` (or did not record them), or the runs' policies would differ without
    the flags (``engine.config.POLICIES``, the default, where a flag narrowed it)."""
    from ipc_bench.engine.config import CACHED, POLICIES

    given = [o.get("policies", ()) for o in (oa, ob)]
    if not all(_same_as_not_given(o) for o in (oa, ob)):
        return None
    flags = []
    full = []
    for md, ran in ((a, ea), (b, eb)):
        mine = [f for f in ("aa", "async_scheduling") if ran_selection(md, f) == {"True"}]
        flags += [f for f in mine if f not in flags]
        full.append(set(POLICIES) if mine else ran)
    if not flags or full[0] != full[1]:
        return None
    why = {"aa": "--aa runs one policy alone",
           "async_scheduling": f"--async-scheduling runs the {CACHED} policy alone"}
    values = [", ".join(sorted(r, key=_number_first)) for r in (ea, eb)]
    how = ("not given" if given == [None, None] else
           "not given or given as its default" if all(
               g is None or sorted(map(str, g)) == sorted(POLICIES) for g in given)
           else "not given or given as the flags run it")
    return (f"{NARROWED_POLICIES}{values[0]} vs {values[1]} (--policies {how}: "
            f"{', '.join(why[f] for f in sorted(flags))})")


def _same_as_not_given(options: dict) -> bool:
    """Whether a run of options ``options`` (``metadata["options"]``) ran the policies it
    would have run without ``--policies``: not given, or given as the policies its
    flags run without it (``cli.run``'s choice): the default's two (``send, cached``,
    any order) where no ``--aa`` was given, else the one ``--aa`` takes, the default's
    first (``send``) or, with ``--async-scheduling``, ``cached``. ``--async-scheduling``
    alone given ``--policies cached`` is not: without it, each async case also runs
    synchronously. ``False`` for policies not recorded or not a list."""
    from ipc_bench.engine.config import CACHED, POLICIES

    given = options.get("policies", ())
    if given is None:
        return True
    if not isinstance(given, list):
        return False
    if options.get("aa") is True:
        return list(map(str, given)) == [CACHED if options.get("async_scheduling") is True
                                         else POLICIES[0]]
    return options.get("async_scheduling") is not True and \
        sorted(map(str, given)) == sorted(POLICIES)


def _given_transport(options: dict, ran: Optional[set[str]]) -> Optional[set[str]]:
    """What a run's cases ran on (``ran``), else the ``--transport`` it was given
    (``options``), else ``None``: a default whose value its recorded cases do not say."""
    if ran is not None:
        return ran
    given = options.get("transport")
    return None if given is None else _elements(given)


#: What a case-selection option (``CASE_SELECTION_OPTIONS``, not a flag) chooses, as
#: ``_in_effect_line`` names it.
SELECTION_NAMES = {"policies": "policies", "codecs": "codecs",
                   "num_spec_tokens": "draft counts", "transport": "transports"}


def _in_effect_line(name: str, given: Any, ea: set[str], eb: set[str], a: dict,
                    b: dict) -> str:
    """The line of a case-selection option both runs (metadata ``a`` and ``b``) were
    given as one value ``given`` but whose cases ran other values (``ea``, ``eb``):
    what differs is the values in effect, not the option, e.g. ``transports in effect
    differ: ipc vs ipc, shm, shm-block (--transport ipc in both; tp-broadcast's cases
    run its --tp-transports, default)``: a tp-broadcast run's cases run the transports
    of its broadcast (``options_taken``: a scenario that takes ``--tp-transports``)."""
    def values(ran: set[str]) -> str:
        return ", ".join(sorted(ran, key=_number_first))

    why = [f"--{name.replace('_', '-')} {_text(given)} in both"]
    if name == "transport":
        for md in (a, b):
            taken = options_taken(md.get("scenario"))
            if taken is not None and "tp_transports" in taken:
                chosen = (md.get("options") or {}).get("tp_transports")
                why.append(f"{md.get('scenario')}'s cases run its --tp-transports, "
                           f"{'default' if chosen is None else _text(chosen)}")
    return (f"{SELECTION_NAMES.get(name, name)} in effect differ: {values(ea)} vs "
            f"{values(eb)} ({'; '.join(dict.fromkeys(why))})")


def _number_first(text: str) -> tuple:
    """Sort key of a value as text (``_text``): numbers by value, before other text."""
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


@functools.lru_cache(maxsize=None)
def options_taken(scenario: Any) -> Optional[frozenset[str]]:
    """The ``scenario.SCENARIO_OPTIONS`` fields scenario ``scenario`` (its ``NAME``)
    takes (``scenario.options_taken``); ``None`` when no scenario of that name can be
    loaded (an unknown or renamed one: every option is then compared)."""
    from ipc_bench.harness import scenario as scenarios

    module = scenarios.discover().get(scenario) if isinstance(scenario, str) else None
    return None if module is None else scenarios.options_taken(module)


@functools.lru_cache(maxsize=None)
def scenario_option_defaults(scenario: Any) -> Optional[dict[str, Any]]:
    """The option defaults scenario ``scenario`` (its ``NAME``) declares for options no
    case records (``scenario.option_defaults``: azure-conv's ``max_requests`` 300 and
    ``logical_step_ms`` 20.0); ``None`` when no scenario of that name can be loaded."""
    from ipc_bench.harness import scenario as scenarios

    module = scenarios.discover().get(scenario) if isinstance(scenario, str) else None
    return None if module is None else scenarios.option_defaults(module)


def _unused_by_models(md: dict, name: str) -> bool:
    """Whether option ``name`` sets a model setting (``OPTION_SETTINGS``: ``model.*``)
    that no case of the run of metadata ``md`` uses (``scenario.model_uses``: the null
    model's ``step_time_ms``), so that, left to its default, it took no value."""
    from ipc_bench.harness.scenario import model_uses

    setting = OPTION_SETTINGS.get(name) or ""
    cases = [c for c in md.get("cases") or [] if isinstance(c, dict)]
    if not setting.startswith("model.") or not cases:
        return False
    models = [c["model"] if isinstance(c.get("model"), dict) else {} for c in cases]
    return not any(model_uses(str(m.get("name")), setting.split(".", 1)[1])
                   for m in models)


def _option_named(line: str) -> str | None:
    """The option (``max_num_seqs``) an ``_option_lines`` line is of, ``None`` for
    another line."""
    m = re.match(r"option --([\w-]+) differs", line)
    return m.group(1).replace("-", "_") if m else None


def _same_where_shared(a: dict, b: dict, wa: dict, wb: dict, shared: list[str]) -> set[str]:
    """The options both runs ``a`` and ``b`` left to their defaults whose case setting
    (``OPTION_SETTINGS``, not a workload label) took the same values in every workload
    they share (``wa``, ``wb``: ``_workload_settings``): a default that follows another
    option (``--max-num-seqs`` and ``--num-blocks`` follow ``--num-running``) differs
    between the runs' grids only where they do not overlap, which changes no number
    compared. Empty where they share no workload."""
    oa, ob = a.get("options"), b.get("options")
    if not shared or not (isinstance(oa, dict) and isinstance(ob, dict)):
        return set()
    out = set()
    for name, setting in OPTION_SETTINGS.items():
        if setting.startswith("labels.") or oa.get(name, "") is not None \
                or ob.get(name, "") is not None:
            continue  # given (or not recorded) in a run: its line stands
        if all(setting in wa[w] and wa[w].get(setting) == wb[w].get(setting)
               for w in shared):
            out.add(name)
    return out


#: Options whose scenario default follows other options, -> those options: a steady
#: case's ``max_num_seqs`` is its running requests and its ``num_blocks``
#: ``steady_num_blocks(num_running, block_size)`` (``steady_scheduler_config``).
FOLLOWING_DEFAULTS: dict[str, frozenset[str]] = {
    "max_num_seqs": frozenset({"num_running"}),
    "num_blocks": frozenset({"num_running", "block_size"})}


def _follows_a_listed_option(a: dict, b: dict, listed: set[str | None],
                             shared: list[str]) -> set[str]:
    """The options of ``FOLLOWING_DEFAULTS`` both runs ``a`` and ``b`` left to their
    defaults, where they share no workload (``shared`` empty) and an option such a
    default follows is among ``listed`` (the options whose lines say they differ):
    ``option --num-running differs: [8] vs [4]`` then says why their
    ``--max-num-seqs`` and ``--num-blocks`` took other values, so theirs would say
    the same difference again, of no workload compared. Empty where a workload is
    shared (``_same_where_shared`` decides there)."""
    oa, ob = a.get("options"), b.get("options")
    if shared or not (isinstance(oa, dict) and isinstance(ob, dict)):
        return set()
    return {name for name, leaders in FOLLOWING_DEFAULTS.items()
            if name in oa and name in ob and oa[name] is None and ob[name] is None
            and leaders & listed}


def _options_said(a: dict, b: dict, wa: dict, wb: dict,
                  shared: list[str]) -> list[tuple[str, bool]]:
    """``_option_lines(a, b)`` less those of a default that is no difference
    (``_same_where_shared``, ``_follows_a_listed_option``)."""
    derived = _same_where_shared(a, b, wa, wb, shared)
    options = [(line, wide) for line, wide in _option_lines(a, b)
               if _option_named(line) not in derived]
    derived = _follows_a_listed_option(a, b, {_option_named(x) for x, _ in options}, shared)
    return [(line, wide) for line, wide in options if _option_named(line) not in derived]


def _settings_stated(lines) -> set[str]:
    """The case settings (``OPTION_SETTINGS``) of the options that ``lines``
    (``_option_lines``) say differ (``option --max-num-seqs differs: ...``), and those
    derived from them (``DERIVED_SETTINGS``), so that the same difference is not said
    again as a case setting; so is a flag's of ``MEASUREMENT_FLAGS`` whose line
    (``floors differ: ...``) is among them."""
    lines = list(lines)
    names = {_option_named(line) for line in lines}
    names |= {n for n in MEASUREMENT_FLAGS for line in lines
              if line.startswith(f"{FLAG_CASES[n]} differ: ")}
    stated = {OPTION_SETTINGS.get(n, MEASUREMENT_FLAGS.get(n)) for n in names
              if n in OPTION_SETTINGS or n in MEASUREMENT_FLAGS}
    return stated | {s for s, options in DERIVED_SETTINGS.items() if names & options}


def _option_lines(a: dict, b: dict) -> list[tuple[str, bool]]:
    """The scenario options as given (``metadata["options"]``) that differ between runs
    ``a`` and ``b``, ``a``'s value first, each with whether it makes every shared
    workload incomparable (not one of ``_WORKLOAD_OPTIONS``). An option that either
    run's scenario does not take (``options_taken``: ``--steps`` of a replay) is not
    compared: nothing of it is in effect there; except those of ``EVERY_SCENARIO``
    (``--model``, ``--warmup-steps``), and ``--tp`` / ``--pp`` where one run's scenario
    takes it (``_reader_line``). An option left to its
    scenario's default prints as ``default``, followed by the values its cases ran
    with, or its scenario declares, where known (``effective_option``): ``option
    --model differs: torch vs default (null)``, ``option --max-requests differs: 40 vs
    default (300)``; one whose model setting no case's model uses took none: ``option
    --step-time-ms differs: 5.0 vs default (none: no case's model uses it)``. Options compare by their values in effect where both are known:
    the same values are no difference (``--model null`` against a scenario whose model
    is null by default), other values are one, even where both runs left the option to
    their scenarios' defaults (``option --model differs: default (fixed-step) vs
    default (null)``); where either is unknown, by the values as given. A run written
    before an option was recorded shows ``not recorded`` and the values its cases ran
    with (``option --warmup-steps differs: 10 vs not recorded (30)``)."""
    oa, ob = a.get("options"), b.get("options")
    if not (isinstance(oa, dict) and isinstance(ob, dict)):
        return []
    out = _selection_lines(oa, ob, a, b)
    taken = [options_taken(md.get("scenario")) for md in (a, b)]
    for name in sorted(set(oa) | set(ob)):
        if name in CASE_SELECTION_OPTIONS or name in MEASUREMENT_FLAGS or \
                name == "order_seed":  # the arms' order alone: ``_order_seed_lines``
            continue
        if name in READER_OPTIONS and None not in taken and \
                (name in taken[0]) != (name in taken[1]):
            out.append((_reader_line(name, a, b, taken), False))
            continue
        if name not in EVERY_SCENARIO and any(t is not None and name not in t for t in taken):
            continue  # not an option of a run's scenario: nothing in effect to compare
        ea, eb = effective_option(a, name), effective_option(b, name)
        known = ea is not None and eb is not None
        if (ea == eb) if known else (oa.get(name) == ob.get(name)):
            continue
        shown = []
        for md, o, e in ((a, oa, ea), (b, ob, eb)):
            if o.get(name) is not None:
                shown.append(_text(o.get(name)))
            elif name not in o and e:  # a run written before the option was recorded
                shown.append(f"not recorded ({', '.join(sorted(e, key=_number_first))})")
            elif e:
                shown.append(f"default ({', '.join(sorted(e, key=_number_first))})")
            else:
                shown.append("default" + (" (none: no case's model uses it)"
                                          if _unused_by_models(md, name) else ""))
        out.append((f"option --{name.replace('_', '-')} differs: {shown[0]} vs {shown[1]}",
                    name not in _WORKLOAD_OPTIONS))
    return out


#: Options every scenario takes, compared whatever the runs' scenarios (``options_taken``
#: lists the scenario options of ``scenario.SCENARIO_OPTIONS`` a scenario takes):
#: ``--model``, since every case runs one (a soak's, which takes no ``--model``, is
#: null), ``--warmup-steps`` and the scheduler limits (``--max-num-seqs``,
#: ``--max-num-batched-tokens``, ``--max-model-len``, ``--block-size``,
#: ``--num-blocks``), which are no scenario options but every scenario's.
EVERY_SCENARIO = ("model", "warmup_steps", "max_num_seqs", "max_num_batched_tokens",
                  "max_model_len", "block_size", "num_blocks")
#: Options of the readers of the broadcast (``--tp`` ranks, ``--pp`` stages), compared
#: where one run's scenario takes the option and the other's does not (``_reader_line``):
#: they set the shape of the system, not only a setting of its cases.
READER_OPTIONS = ("tp", "pp")


def _reader_line(name: str, a: dict, b: dict, taken: list) -> str:
    """The line of reader option ``name`` (``READER_OPTIONS``) that the scenario of one
    of runs ``a`` and ``b`` takes (``taken``: their ``options_taken``) and the other's
    does not, ``a``'s first: the values in effect of the one (as ``_option_lines``
    shows them) against ``none`` in the other, e.g. ``option --pp differs: default (1,
    2) vs none (scenario tp-broadcast takes no --pp)``."""
    flag = f"--{name.replace('_', '-')}"
    shown = []
    for md, t in zip((a, b), taken):
        if name not in t:
            shown.append(f"none (scenario {md.get('scenario')} takes no {flag})")
            continue
        given, ran = (md.get("options") or {}).get(name), effective_option(md, name)
        shown.append(_text(given) if given is not None else
                     f"default ({', '.join(sorted(ran, key=_number_first))})" if ran else
                     "default")
    return f"option {flag} differs: {shown[0]} vs {shown[1]}"


def _same_trace_file(ta: dict, tb: dict) -> Optional[str]:
    """The file two runs' trace records (``trace_record``) both name, or ``None``: by
    the paths resolved as read (``resolved_path``; a pipe, ``None``, is no file) where
    both runs recorded them, else (an older run) by the paths as given."""
    if "resolved_path" in ta and "resolved_path" in tb:
        same = ta["resolved_path"] is not None and ta["resolved_path"] == tb["resolved_path"]
        return ta["resolved_path"] if same else None
    return ta.get("path") if ta.get("path") == tb.get("path") else None


def _trace_line(a: dict, b: dict) -> str:
    """The line of two runs' traces whose SHA-256 (of the header through the last row
    replayed, ``trace_record``) differ: where both read one file
    (``_same_trace_file``: its resolved path, so ``../t/conv.csv`` and ``/t/conv.csv``
    from ``/w`` are one) with other
    ``--max-requests`` (``effective_option``), the rows replayed differ, not
    necessarily the file (``trace rows differ: the same file P read to other rows
    (--max-requests 20 vs 10; sha256 of the rows replayed 1ea16e3c91a1 vs
    f1b25979cb62)``, P the resolved path); else ``trace differs: A (sha256 ...) vs B
    (sha256 ...)``, the paths as given."""
    ta, tb = a["trace"], b["trace"]
    ma, mb = effective_option(a, "max_requests"), effective_option(b, "max_requests")
    same = _same_trace_file(ta, tb)
    if same is None or not ma or not mb or ma == mb:
        return f"trace differs: {_trace_text(ta)} vs {_trace_text(tb)}"
    digests = [(t.get("sha256") or "unread")[:12] for t in (ta, tb)]
    counts = [", ".join(sorted(m, key=_number_first)) for m in (ma, mb)]
    return (f"trace rows differ: the same file {same} read to other rows "
            f"(--max-requests {counts[0]} vs {counts[1]}; sha256 of the rows replayed "
            f"{digests[0]} vs {digests[1]})")


def _order_seed(md: dict) -> Optional[tuple[Any, bool]]:
    """The seed of the arm orders of the run of metadata ``md`` (``metadata
    ["order_seed"]``; a run written before it was recorded drew them from its seed) and
    whether ``--order-seed`` was given (``options["order_seed"]``); ``None`` without a
    recorded seed."""
    if "order_seed" not in md and "seed" not in md:
        return None
    given = (md.get("options") or {}).get("order_seed") is not None
    return md.get("order_seed", md.get("seed")), given


def _order_seed_lines(a: dict, b: dict) -> list[str]:
    """The line of runs ``a`` and ``b`` whose arms were ordered by other seeds
    (``--order-seed``), where either run was given the option (else their seeds
    differ, which ``seed differs`` says): ``option --order-seed differs: 1 vs default
    (--seed 0)``. The order seed draws the order of the same cases alone, so the line
    marks no workload."""
    oa, ob = _order_seed(a), _order_seed(b)
    if oa is None or ob is None or oa[0] == ob[0] or not (oa[1] or ob[1]):
        return []
    shown = [f"{seed}" if given else f"default (--seed {seed})" for seed, given in (oa, ob)]
    return [f"option --order-seed differs: {shown[0]} vs {shown[1]}"]


#: What ``metadata["remote_runners"]`` must be (``remote_runners_shape``), in the words
#: of the loader's line that leaves out one that is not.
REMOTE_RUNNERS_WORDS = ("an object of the runners' count (a whole number from 1), their "
                        "host (a text) and their ports (an object of port numbers)")


def _port(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535


#: The most runners a run can start by hand: each has a control port of its own, and
#: the data ports follow them, all within 1-65535 (``wire.remote.remote_ports``).
MAX_REMOTE_RUNNERS = 65533

#: The ports a run writes in ``metadata["remote_runners"]["ports"]``
#: (``wire.remote.RemotePorts``' fields).
REMOTE_PORT_NAMES = ("ctls", "s2r", "r2s", "store")


def remote_runners_problem(value: Any, shown: Callable[[Any], str] = repr) -> Optional[str]:
    """What is wrong with ``value`` as a ``metadata["remote_runners"]`` (``cli.execute``
    writes it: an object of ``count``, a whole number from 1 to ``MAX_REMOTE_RUNNERS``,
    ``host``, a non-empty text, and, where there, ``ports``, an object of the
    ``REMOTE_PORT_NAMES``, each null, a port number 1-65535 or a list of them), as the
    first bad part of it and its value quoted by ``shown``: ``ports.ctls is -1, not a
    port number (1-65535)``; ``""`` for a value that is not an object or lacks its count
    or host (the caller quotes it whole); ``None`` where there is nothing wrong."""
    if not isinstance(value, dict) or "count" not in value or "host" not in value:
        return ""
    count, host, ports = value["count"], value["host"], value.get("ports", {})
    if not (isinstance(count, int) and not isinstance(count, bool)
            and 1 <= count <= MAX_REMOTE_RUNNERS):
        return (f"count is {shown(count)}, not a whole number of runners from 1 to "
                f"{MAX_REMOTE_RUNNERS}")
    if not (isinstance(host, str) and host != ""):
        return f"host is {shown(host)}, not a non-empty text"
    if not isinstance(ports, dict):
        return f"ports is {shown(ports)}, not an object of port numbers"
    for name, port in ports.items():
        if name not in REMOTE_PORT_NAMES:
            return (f"ports has a port named {shown(name)}, not one of "
                    f"{', '.join(REMOTE_PORT_NAMES)}")
        for i, p in enumerate(port if isinstance(port, list) else [port]):
            if not (_port(p) or (p is None and not isinstance(port, list))):
                where = f"ports.{name}" + (f"[{i}]" if isinstance(port, list) else "")
                return f"{where} is {shown(p)}, not a port number (1-65535)"
    return None


def remote_runners_shape(value: Any) -> bool:
    """Whether ``value`` is a ``metadata["remote_runners"]`` as a run with
    ``--remote-runners`` writes it (``remote_runners_problem`` finds nothing)."""
    return remote_runners_problem(value) is None


def remote_ports_text(ports: dict) -> str:
    """The ports of a ``remote_runners_shape`` value as a line names them: ``ctls
    5600, 5601; s2r 5602; r2s 5603`` (a null one left out; names escaped to one line,
    ``errors.one_line``)."""
    from ipc_bench.errors import one_line

    return "; ".join(f"{one_line(str(k))} "
                     + (", ".join(map(str, v)) if isinstance(v, list) else str(v))
                     for k, v in ports.items() if v is not None)


def _runners(md: dict) -> Optional[str]:
    """How a run's runners were started, as its metadata records it: by hand
    (``--remote-runners``: ``metadata["remote_runners"]``, an object of their count and
    host; ports aside, which change no number) as ``2 started by hand on 10.0.0.5
    (--remote-runners)`` (the host escaped to one line, ``errors.one_line``), else by
    the run itself (``spawned by the run``); ``None`` for metadata of no run (no
    ``scenario``: a hand-made summary) and for a ``remote_runners`` there but not as a
    run writes it (``remote_runners_shape``; the loader leaves such a one out as null,
    with a warning), which tell neither."""
    from ipc_bench.errors import one_line

    remote = md.get("remote_runners")
    if remote_runners_shape(remote):
        return (f"{remote['count']} started by hand on {one_line(remote['host'])} "
                "(--remote-runners)")
    if "remote_runners" in md:
        return None
    return "spawned by the run" if "scenario" in md else None


def _workload_lines(a: dict, b: dict) -> list[str]:
    """The differences of runs ``a`` and ``b`` in what every workload replays or runs
    on: the trace's content (``_trace_line``), the seed, and where its runners ran
    (``_runners``: started by hand, perhaps on another machine and over a network,
    or spawned beside the scheduler): ``runners differ: 1 started by hand on
    127.0.0.1 (--remote-runners) vs spawned by the run``."""
    lines = []
    ta, tb = a.get("trace"), b.get("trace")
    if isinstance(ta, dict) and isinstance(tb, dict) and ta.get("sha256") != tb.get("sha256"):
        lines.append(_trace_line(a, b))
    if "seed" in a and "seed" in b and a["seed"] != b["seed"]:
        lines.append(f"seed differs: {a['seed']} vs {b['seed']}")
    ra, rb = _runners(a), _runners(b)
    if ra is not None and rb is not None and ra != rb:
        lines.append(f"runners differ: {ra} vs {rb}")
    return lines


def compare_settings(a: dict, b: dict, exact: bool = False,
                     shared_rows: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """The settings two runs' metadata recorded that change the numbers and differ,
    ``a``'s value first: the replayed trace's content (``metadata["trace"]``,
    ``trace_record``; its path alone is no difference), the seed, the runners (``_runners``),
    the interval method
    (``metadata["ci_method"]``, ``--ci-method``: it changes the intervals and verdicts,
    not the measured rows, so it marks no workload), the seed of the arms' order
    (``--order-seed``, ``_order_seed_lines``: it reorders the same cases, so it marks
    no workload either), the scenario options as given (``metadata["options"]``,
    ``None``: the scenario's default, ``default`` in the line with the values its cases
    ran with, ``_option_lines``; one that either run's scenario does not take is not
    compared; an option given as the value the other run's default took is no
    difference, two defaults that took other values are one; those that only choose
    the workloads, ``_WORKLOAD_OPTIONS``, are listed but mark no workload; those that
    choose the cases, ``CASE_SELECTION_OPTIONS``, by what the cases ran: ``option
    --codecs differs: [msgpack] vs default (msgpack, pickle)``), and each
    case setting (``metadata["cases"]``: scheduler, model, steps, transport...) of the
    arms (policy, arm, codec) both runs ran in a workload: an arm one run alone ran,
    such as its single-process cases, is no difference; so is the number of
    repetitions (``--repeat``) of each workload both ran (``repetitions differ: 2 vs 1
    (workload num_running=4)``; listed, the workload not marked: its means are over
    fewer or more repetitions of the same workload). Returns (lines, workloads): one line per difference
    (``trace differs: A (sha256 ...) vs B (sha256 ...)``, or ``trace rows differ: ...``
    where one file was read to other ``--max-requests``, ``_trace_line``; ``option
    --ci-method differs: bootstrap vs t``, ``option --vocab-size
    differs: 100 vs default (128256)``, ``case setting transport differs: tcp vs ipc
    (workload trace=azure-conv:20)``; a case setting an option sets is said by the
    option's line alone, ``_settings_stated``), and the workload keys both runs ran whose rows
    are not comparable (every shared one when a run-wide setting differs). A setting
    missing from one run's metadata (an older run) is not compared, nor is a model
    setting that a run's model does not use (``scenario.model_uses``: the null
    model's ``step_time_ms``). ``exact``: the workloads whose bytes per step are not
    comparable: a case setting that changes timings alone (``TIMING_ONLY_SETTINGS``)
    still gives its line but marks no workload; one of what a case measures after its
    counted steps (``AFTER_STEPS_SETTINGS``: the floor) never marks one.
    ``shared_rows``: the workloads both runs have rows of (the report's loaded cases),
    returned for a run-wide difference where either run's metadata records no case
    (a hand-edited summary.json, or one another tool wrote), which names none."""
    lines = _workload_lines(a, b)
    run_wide = bool(lines)
    if a.get("ci_method") and b.get("ci_method") and a["ci_method"] != b["ci_method"]:
        lines.append(f"option --ci-method differs: {a['ci_method']} vs {b['ci_method']}")
    lines += _order_seed_lines(a, b)
    both = _case_keys(a) & _case_keys(b)  # an arm one run alone ran is no difference
    wa, wb = _workload_settings(a, both), _workload_settings(b, both)
    shared = [w for w in wa if w in wb]
    options = _options_said(a, b, wa, wb, shared)
    lines += [line for line, _ in options]
    run_wide = run_wide or any(wide for _, wide in options)
    stated = _settings_stated(line for line, _ in options)
    differing: dict[tuple[str, str, str], list[str]] = {}
    unlike: list[str] = []
    for w in shared:
        for name in sorted(set(wa[w]) | set(wb[w])):
            if wa[w].get(name) == [] or wb[w].get(name) == []:
                continue  # a model setting a run's model does not use
            va = _values_text(wa[w].get(name, [_setting_text(name, None)]))
            vb = _values_text(wb[w].get(name, [_setting_text(name, None)]))
            if va != vb:
                differing.setdefault((name, va, vb), []).append(w)
                if w not in unlike and name not in AFTER_STEPS_SETTINGS and \
                        not (exact and name in TIMING_ONLY_SETTINGS):
                    unlike.append(w)
    ra, rb = _repetitions(a, both), _repetitions(b, both)
    for w in shared:
        if w in ra and w in rb and ra[w] != rb[w]:  # listed; still one workload
            differing.setdefault(("repetitions", str(ra[w]), str(rb[w])), []).append(w)
    for (name, va, vb), workloads in differing.items():
        if name in stated:  # its option's line says it, run-wide
            continue
        where = ("every workload in both runs' grids"
                 if len(workloads) == len(shared) > 1 else
                 f"workload{'s' if len(workloads) > 1 else ''} {', '.join(workloads)}")
        what = "repetitions" if name == "repetitions" else f"case setting {name}"
        lines.append(f"{what} differ{'' if name == 'repetitions' else 's'}: {va} vs {vb} "
                     f"({where})")
    if run_wide and not (_case_keys(a) and _case_keys(b)):
        shared = list(shared_rows)
    return lines, (shared if run_wide else unlike)
