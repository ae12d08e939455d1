"""``scripts/device_check.sh`` takes an abi3 wheel only for the CPython it was built for
and newer ones (``cp312-abi3`` needs 3.12 or later), and refuses, naming each package
the running Python lacks, when ``wheels/`` holds no wheel of it for that Python. A
``cp3(Y+1)-abi3`` wheel passed the filter on a ``cp3Y`` Python: pip then refused it
(``Could not find a version that satisfies the requirement ...``) and the script said
only that installing failed, or, the package having no wheel at all, installed the
others and said nothing of the one missing."""

from __future__ import annotations

import sys

from device_check_repo import TAG, platform, run_wheels_repo, wheel, wheels_repo

MINOR = sys.version_info[1]
NEWER = f"cp3{MINOR + 1}"  # the next CPython's abi3
OLDER = f"cp3{MINOR - 5}"  # an older CPython's abi3, which this one takes


def _wheel(folder, dist: str, module: str, version: str, py: str, abi: str):
    return wheel(folder, dist, module, version, f"{py}-{abi}-{platform()}")


def test_an_abi3_wheel_for_a_newer_python_is_refused_naming_the_package(tmp_path):
    repo, python = wheels_repo(tmp_path, ("msgspec",))
    newer = _wheel(repo / "wheels", "msgspec", "msgspec", "2.0", NEWER, "abi3")
    pure = _wheel(repo / "wheels", "pyperf", "pyperf", "1.0", "py3", "none")
    done = run_wheels_repo(repo, python, tmp_path / "out")
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"device_check.sh: msgspec is missing from {python} and wheels/ holds no "
        f"wheel for it ({TAG}): {newer.name} {pure.name}\n")


def test_every_package_without_a_wheel_is_named(tmp_path):
    repo, python = wheels_repo(tmp_path, ("msgspec", "zmq", "pyperf"))
    wheels = [_wheel(repo / "wheels", "pyzmq", "zmq", "2.0", NEWER, "abi3"),
              _wheel(repo / "wheels", "pyperf", "pyperf", "1.0", "py3", "none")]
    done = run_wheels_repo(repo, python, tmp_path / "out")
    names = " ".join(sorted(w.name for w in wheels))
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"device_check.sh: msgspec and pyzmq are missing from {python} and wheels/ "
        f"holds no wheel for it ({TAG}): {names}\n")


def test_an_abi3_wheel_for_an_older_python_installs(tmp_path):
    repo, python = wheels_repo(tmp_path, ("msgspec",))
    _wheel(repo / "wheels", "msgspec", "msgspec", "1.0", OLDER, "abi3")
    _wheel(repo / "wheels", "msgspec", "msgspec", "2.0", NEWER, "abi3")  # left out
    done = run_wheels_repo(repo, python, tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"installed from wheels/ for {TAG}: msgspec-1.0"
    assert "msgspec 1.0" in lines
