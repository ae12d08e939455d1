"""``cli.main`` run in-process with ``--cpu-affinity`` pins the calling process (the
scheduler runs in it) only for the run: a notebook or test that called it gets its CPU
set back when the run ends, finished or failed. A run pinned to ``0,0`` left its caller
on CPU 0 for good, and a later run in that process asking for CPU 1 was refused."""

from __future__ import annotations

import os

import pytest

from ipc_bench import cli

DS = ["--scenario", "decode-steady", "--num-running", "2", "--steps", "10",
      "--warmup-steps", "2", "--codecs", "msgpack", "--no-floor", "--no-single-process",
      "--quiet"]

pytestmark = pytest.mark.skipif(not {0, 1} <= os.sched_getaffinity(0),
                                reason="needs CPUs 0 and 1")


def test_a_pinned_run_gives_the_caller_its_cpus_back(tmp_path):
    before = os.sched_getaffinity(0)
    assert cli.main(DS + ["--cpu-affinity", "0,0", "--output", str(tmp_path / "a")]) == 0
    assert os.sched_getaffinity(0) == before
    # the next run in this process may take CPU 1 again
    assert cli.main(DS + ["--cpu-affinity", "1,0", "--output", str(tmp_path / "b")]) == 0
    assert os.sched_getaffinity(0) == before


@pytest.mark.parametrize("ends", ["exit 1", "Ctrl-C"])
def test_a_pinned_run_that_fails_gives_the_caller_its_cpus_back(ends, tmp_path,
                                                                 monkeypatch):
    from ipc_bench.cli import execute, run as run_command

    before = os.sched_getaffinity(0)
    seen = []

    def run_cases(*args, **kw):  # the run, seen from inside: pinned to the scheduler's set
        seen.append(os.sched_getaffinity(0))
        if ends == "Ctrl-C":
            raise KeyboardInterrupt
        return 1

    monkeypatch.setattr(execute, "run_cases", run_cases)
    argv = DS + ["--cpu-affinity", "1,0", "--output", str(tmp_path / "a")]
    if ends == "Ctrl-C":
        with pytest.raises(KeyboardInterrupt):
            run_command.main(argv)
    else:
        assert run_command.main(argv) == 1
    assert seen == [{1}]
    assert os.sched_getaffinity(0) == before
