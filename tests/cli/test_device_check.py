"""``scripts/device_check.sh``: its refusals, and its flow (tests, then the check, then the
archive) in a copy of the repository whose ``gpu_check.py`` and CUDA tests are stand-ins
that pass or fail as asked."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from device_check_repo import ROOT, SCRIPT, cuda_tests, script_copy

USAGE = ("device_check.sh: usage: bash scripts/device_check.sh OUT_DIR [gpu_check.py "
         "options]\n")


def _run(script: Path, *args: str, python: str = sys.executable, cwd=None, tmp=None,
         **env_vars: str):
    env = dict(os.environ, PYTHON=python, TESTS_LIMIT_S="60")
    env.pop("DEADLINE_S", None)
    env.update(env_vars)
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    return subprocess.run(["bash", str(script), *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


@pytest.mark.parametrize("args,err", [
    ((), USAGE),
    (("--stages",), USAGE),
    (("OUT", "--stages", "1", "--output", "x"),
     "device_check.sh: the run folders go into OUT_DIR/gpu-check.tar.gz; drop --output\n"),
    (("OUT", "--output=x"),
     "device_check.sh: the run folders go into OUT_DIR/gpu-check.tar.gz; drop --output\n"),
])
def test_bad_use_is_one_line_and_exit_2(args, err, tmp_path):
    args = tuple(str(tmp_path / "out") if a == "OUT" else a for a in args)
    done = _run(SCRIPT, *args)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", err)
    assert not (tmp_path / "out").exists()


def test_an_out_dir_it_cannot_make_is_refused(tmp_path):
    (tmp_path / "file").write_text("")
    done = _run(SCRIPT, str(tmp_path / "file" / "out"))
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"device_check.sh: cannot write to {tmp_path / 'file' / 'out'}\n")


_FAKE_CHECK = '''\
import argparse
import sys
from pathlib import Path


def build_parser():
    parser = argparse.ArgumentParser(prog="gpu_check.py")
    parser.add_argument("--stages", choices=["1", "1,6"])
    parser.add_argument("--output")
    parser.add_argument("--budget-s")
    return parser


def main():
    args = sys.argv[1:]
    out = Path(args[args.index("--output") + 1])
    if Path(__file__).with_name("rc").read_text() == "sleep":  # stopped before writing
        import time
        time.sleep(30)
    (out / "1-smoke").mkdir(parents=True)
    (out / "1-smoke" / "summary.json").write_text("{}")
    (out / "1-smoke.log").write_text("smoke log\\n")
    if Path(__file__).with_name("late").exists():  # a process that prints after it exits
        import subprocess
        subprocess.Popen([sys.executable, "-c",
                          "import time; time.sleep(1); print('late line', flush=True)"])
    print("gpu_check args:", " ".join(a for a in args if a != str(out) and a != "--output"))
    return int(Path(__file__).with_name("rc").read_text())


if __name__ == "__main__":
    sys.exit(main())
'''


def _stand_in_python(tmp_path: Path) -> str:
    """A PYTHON for the tests of device_check.sh's own flow: the real Python, except
    that the environment line is written without importing torch and the CUDA tests
    are judged without starting pytest (exit 1, as pytest's, when a stand-in test file
    of ``_fake_repo`` holds ``assert False``). One test of each runs the real ones
    (``test_it_runs_the_tests_then_the_check_and_packs_what_they_wrote``'s first case,
    ``test_the_tests_run_under_the_projects_pytest_settings_without_xdist``)."""
    python = tmp_path / "stand-in-python"
    python.write_text(f"""#!/bin/sh
if [ "$1" = -c ]; then
    case $2 in "import sys, torch;"*)
        echo "python {sys.version.split()[0]}"; echo "torch (stand-in)"; exit 0 ;;
    esac
fi
if [ "$1 $2" = "-m pytest" ]; then
    if grep -q "assert False" tests/engine/test_cuda_step.py tests/engine/test_device_inputs.py
    then echo "1 failed, 1 passed (stand-in)"; exit 1
    fi
    echo "2 passed (stand-in)"; exit 0
fi
exec {sys.executable} "$@"
""")
    python.chmod(0o755)
    return str(python)


def _fake_repo(tmp_path: Path, check_rc: int, tests_pass: bool) -> Path:
    repo = script_copy(tmp_path, _FAKE_CHECK)
    (repo / "scripts" / "rc").write_text(str(check_rc))
    cuda_tests(repo, f"assert {tests_pass}")
    return repo


@pytest.mark.parametrize("check_rc,tests_pass,rc", [
    (0, True, 0), (0, False, 1), (143, True, 143)])
def test_it_runs_the_tests_then_the_check_and_packs_what_they_wrote(
        check_rc, tests_pass, rc, tmp_path):
    repo = _fake_repo(tmp_path, check_rc, tests_pass)
    out = tmp_path / "out"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    # the real torch and pytest in the first case, the stand-ins in the others
    python = sys.executable if (check_rc, tests_pass) == (0, True) else _stand_in_python(
        tmp_path)
    done = _run(repo / "scripts" / "device_check.sh", str(out), "--stages", "1,6",
                python=python, cwd=tmp_path, tmp=tmp)
    assert list(tmp.iterdir()) == []  # the check's folders were removed once packed
    assert done.returncode == rc, done.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "device-check.log", "environment.txt", "gpu-check.tar.gz"]
    log = (out / "device-check.log").read_text()
    assert log == done.stdout
    lines = log.splitlines()
    work = re.search(r"== (\S+)/gpu-check \(run folders", log).group(1)
    assert work.startswith(f"{tmp}/device-check-")
    assert lines[0] == "== CUDA tests (at most 60 s)"
    assert f"== CUDA tests: exit {0 if tests_pass else 1}" in lines
    # the check gets what the deadline (560 s) leaves, less packing's 30 s
    budget = re.fullmatch(r"== scripts/gpu_check.py --budget-s (\d+) --stages 1,6",
                          lines[-4])
    assert budget and 450 <= int(budget.group(1)) <= 530, lines[-4]
    assert lines[-3:] == [f"gpu_check args: --budget-s {budget.group(1)} --stages 1,6",
                          f"== scripts/gpu_check.py: exit {check_rc}",
                          f"== {work}/gpu-check (run folders and stage logs) packed as "
                          f"{out}/gpu-check.tar.gz; {work} is removed"]
    with tarfile.open(out / "gpu-check.tar.gz") as tar:
        assert sorted(tar.getnames()) == ["gpu-check", "gpu-check/1-smoke",
                                          "gpu-check/1-smoke.log",
                                          "gpu-check/1-smoke/summary.json"]
    env = (out / "environment.txt").read_text().splitlines()
    assert env[1] == f"python {sys.version.split()[0]}"
    assert env[2].startswith("torch ")


def test_the_tests_run_under_the_projects_pytest_settings_without_xdist(tmp_path):
    """The project's pyproject.toml names xdist's ``--dist`` in ``addopts``; a Python
    whose pytest lacks pytest-xdist (here: the plugin blocked) refused it, exit 4, and
    the CUDA tests never ran. device_check.sh gives its own ``addopts``."""
    repo = _fake_repo(tmp_path, 0, True)
    shutil.copy(ROOT / "pyproject.toml", repo)
    done = _run(repo / "scripts" / "device_check.sh", str(tmp_path / "out"), "--stages",
                "1,6", cwd=tmp_path, PYTEST_ADDOPTS="-p no:xdist")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
    assert "== CUDA tests: exit 0" in done.stdout.splitlines()


def test_what_the_check_printed_is_logged_before_the_line_after_it(tmp_path):
    """A check that leaves a process behind which prints 1 s after the check exits:
    device_check.sh waits for the log's tee (up to 10 s) before it says the check's exit
    status, so the late line comes before it, in the log as on stdout (under load the
    status line used to land inside the check's last line)."""
    repo = _fake_repo(tmp_path, 0, True)
    (repo / "scripts" / "late").write_text("")
    out = tmp_path / "out"
    done = _run(repo / "scripts" / "device_check.sh", str(out), "--stages", "1,6",
                python=_stand_in_python(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for text in (done.stdout, (out / "device-check.log").read_text()):
        lines = text.splitlines()
        at = next(i for i, ln in enumerate(lines) if ln.startswith("== scripts/gpu_check.py "))
        budget = lines[at].split()[2:4]  # --budget-s N
        assert lines[at + 1:at + 4] == [f"gpu_check args: {' '.join(budget)} --stages 1,6",
                                        "late line", "== scripts/gpu_check.py: exit 0"]


def test_options_gpu_check_refuses_are_refused_before_the_tests(tmp_path):
    repo = _fake_repo(tmp_path, 0, True)
    out = tmp_path / "out"
    done = _run(repo / "scripts" / "device_check.sh", str(out), "--stages", "9",
                cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.endswith("gpu_check.py: error: argument --stages: invalid choice: "
                                "'9' (choose from '1', '1,6')\n")
    assert (out / "device-check.log").read_text() == ""  # no test ran


def test_the_check_gets_what_is_left_of_the_deadline(tmp_path):
    """gpu_check.py gets what the tests left of DEADLINE_S less PACK_MARGIN_S (30 s)
    as its --budget-s, so a cut stage is packed in time."""
    repo = _fake_repo(tmp_path, 0, True)
    done = _run(repo / "scripts" / "device_check.sh", str(tmp_path / "out"), "--stages",
                "1", python=_stand_in_python(tmp_path), cwd=tmp_path, DEADLINE_S="100")
    assert done.returncode == 0, done.stderr
    heading = re.search(r"^== scripts/gpu_check.py --budget-s (\d+) --stages 1$",
                        done.stdout, re.M)
    assert heading, done.stdout
    assert 40 <= int(heading.group(1)) <= 70  # 100 - 30 less the tests' few seconds
    assert f"gpu_check args: --budget-s {heading.group(1)} --stages 1" in done.stdout


def test_a_budget_of_the_users_is_kept(tmp_path):
    repo = _fake_repo(tmp_path, 0, True)
    done = _run(repo / "scripts" / "device_check.sh", str(tmp_path / "out"), "--budget-s",
                "500", python=_stand_in_python(tmp_path), cwd=tmp_path, DEADLINE_S="100")
    assert done.returncode == 0, done.stderr
    assert "gpu_check args: --budget-s 500\n" in done.stdout


def test_a_deadline_the_tests_use_up_skips_the_check(tmp_path):
    repo = _fake_repo(tmp_path, 0, True)
    done = _run(repo / "scripts" / "device_check.sh", str(tmp_path / "out"), cwd=tmp_path,
                python=_stand_in_python(tmp_path), DEADLINE_S="20")
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1] == (
        "device_check.sh: 0 s of DEADLINE_S=20 left after the tests and packing's 30 s: "
        "too little for scripts/gpu_check.py (at least 30 s), not run")
    assert "gpu_check args" not in done.stdout
    assert not (tmp_path / "out" / "gpu-check.tar.gz").exists()


def test_a_deadline_with_a_leading_zero_is_decimal(tmp_path):
    repo = _fake_repo(tmp_path, 0, True)
    done = _run(repo / "scripts" / "device_check.sh", str(tmp_path / "out"), "--stages",
                "1", python=_stand_in_python(tmp_path), cwd=tmp_path,
                DEADLINE_S="0090")  # octal would be an error
    assert done.returncode == 0, done.stderr
    budget = re.search(r"gpu_check args: --budget-s (\d+) --stages 1", done.stdout)
    assert budget and 30 <= int(budget.group(1)) <= 60, done.stdout


def test_a_deadline_that_is_not_whole_seconds_is_refused(tmp_path):
    done = _run(SCRIPT, str(tmp_path / "out"), DEADLINE_S="9m")
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", "device_check.sh: DEADLINE_S must be a whole number of seconds, not '9m'\n")


def _python(tmp_path: Path, body: str) -> Path:
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\n{body}\n")
    python.chmod(0o755)
    return python


def test_a_python_without_pytest_is_refused_before_anything_runs(tmp_path):
    repo = _fake_repo(tmp_path, 0, True)
    python = _python(tmp_path, f'exec {sys.executable} -S -I "$@"')  # no site-packages
    done = _run(repo / "scripts" / "device_check.sh", str(tmp_path / "out"),
                python=str(python))
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"device_check.sh: pytest is missing from {python} (the CUDA tests need it: "
        f"{python} -m pip install pytest, or the project's test extra)\n")
    assert (tmp_path / "out" / "device-check.log").read_text() == ""


def test_missing_packages_without_wheels_are_refused(tmp_path):
    repo = _fake_repo(tmp_path, 0, True)
    (tmp_path / "no_msgspec").mkdir()  # a Python on which msgspec does not import
    (tmp_path / "no_msgspec" / "msgspec.py").write_text("raise ImportError('msgspec')\n")
    python = _python(tmp_path, f'PYTHONPATH={tmp_path / "no_msgspec"} exec {sys.executable} "$@"')
    done = _run(repo / "scripts" / "device_check.sh", str(tmp_path / "out"),
                python=str(python))
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"device_check.sh: msgspec, pyzmq or pyperf is missing from {python} and "
        "wheels/ holds no wheel (scripts/gpu_check.py's docstring says how to fetch them; or "
        "give PYTHON=PATH a Python that has them, e.g. the project's .venv/bin/python)\n")


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_before_the_tests_stops_the_step_running_and_says_so(sig, code, tmp_path):
    """A signal while the options are checked (here a stand-in Python that takes 30 s
    over it) stops that step at once: one line, the signal's code, no test or check run."""
    repo = _fake_repo(tmp_path, 0, True)
    python = _python(tmp_path, 'case "$*" in *build_parser*) exec sleep 30 ;; esac\n'
                               f'exec {sys.executable} "$@"')
    env = dict(os.environ, PYTHON=str(python), TESTS_LIMIT_S="60")
    proc, out, err, stop_s = _signalled(repo, tmp_path / "out", env, "sleep", sig)
    assert stop_s < 10
    name = "SIGTERM" if sig == signal.SIGTERM else "SIGINT"
    assert (proc.returncode, out, err) == (
        code, "", f"device_check.sh: interrupted while checking the options (exit {code})\n"), name
    assert (tmp_path / "out" / "device-check.log").read_text() == err
    assert not (tmp_path / "out" / "environment.txt").exists()


def test_a_signal_before_the_check_wrote_anything_is_one_line(tmp_path):
    """A SIGTERM while gpu_check.py starts, before it wrote a run folder: the check is
    stopped, nothing is packed, and the last line says so, not that the check "left no
    run folder"."""
    repo = _fake_repo(tmp_path, 0, True)
    (repo / "scripts" / "rc").write_text("sleep")
    env = dict(os.environ, PYTHON=_stand_in_python(tmp_path), TESTS_LIMIT_S="60")
    proc, out, err, _ = _signalled(repo, tmp_path / "out", env, "gpu_check.py --output",
                                   signal.SIGTERM)
    assert proc.returncode == 143, err
    assert out.splitlines()[-1] == "== scripts/gpu_check.py: exit 143"
    assert err == ("device_check.sh: interrupted during scripts/gpu_check.py, before it "
                   "wrote a run folder (exit 143)\n")
    assert "left no run folder" not in out + err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "device-check.log", "environment.txt"]


def _signalled(repo: Path, out_dir: Path, env: dict, child: str, sig: int):
    """Run the copy of device_check.sh in ``repo`` into ``out_dir`` with ``env``, send
    it ``sig`` once one of its children's command lines holds ``child`` (within 60 s),
    and return ``(process, stdout, stderr, seconds from the signal to its end)``; the
    stop itself must take under 20 s."""
    proc = subprocess.Popen(["bash", str(repo / "scripts" / "device_check.sh"),
                             str(out_dir)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while not any(child in _cmdline(p) for p in _children(proc.pid)):
            assert time.monotonic() < deadline, f"no child ran {child!r}"
            time.sleep(0.05)
        sent = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    return proc, out, err, time.monotonic() - sent


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_wheels_and_the_shared_link_are_git_ignored(tmp_path):
    """What a device session adds to its checkout (docs/models-and-gpu.md, "One device
    session") stays out of ``git status``, so it is never committed: the wheels, and
    the link ``shared -> ../shared`` (a link, not a folder, to ``.gitignore``)."""
    shutil.copy(ROOT / ".gitignore", tmp_path / ".gitignore")
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / "pyperf-2.11.0-py3-none-any.whl").write_bytes(b"")
    (tmp_path / "shared").symlink_to("../shared")
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "shared").symlink_to("../shared")  # only the top one
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    git = ["git", "-c", "core.excludesFile=/dev/null", "-c", "status.showUntrackedFiles=all"]
    subprocess.run(git + ["init", "-q"], cwd=tmp_path, env=env, check=True)
    done = subprocess.run(git + ["status", "--porcelain"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=True)
    assert done.stdout == "?? .gitignore\n?? scenarios/shared\n"


def test_the_check_ends_when_the_script_above_it_is_sigkilled(tmp_path):
    """A machine's time limit may SIGKILL device_check.sh, whose trap then never runs:
    gpu_check.py asks the kernel for a SIGTERM when its parent dies
    (``_end_with_parent``), so it does not run on with its stage (a SIGTERM ends it as
    its handler says; here, with none installed, at once)."""
    pid_file = tmp_path / "child.pid"
    code = ("import os, sys, time; sys.path.insert(0, 'scripts'); import gpu_check; "
            f"gpu_check._end_with_parent(); open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
            "time.sleep(60)")
    parent = subprocess.Popen(["bash", "-c", f"{sys.executable} -c \"{code}\" & wait"],
                              cwd=ROOT)
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(pid_file.read_text())
    parent.kill()
    parent.wait()
    for _ in range(100):  # reaped by init once it died
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("gpu_check.py outlived its SIGKILLed parent by 5 s")
