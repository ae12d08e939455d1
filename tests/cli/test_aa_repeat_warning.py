"""``--aa`` without ``--repeat 2`` or more: the A/A pair can give no verdict, and the run
says so before its first case (the findings otherwise say it only at the end)."""

from __future__ import annotations

import pytest

from ipc_bench import cli

ARGS = ["--scenario", "decode-steady", "--aa", "--num-running", "2", "--steps", "5",
        "--warmup-steps", "2", "--codecs", "msgpack", "--no-single-process", "--no-floor",
        "--quiet"]
WARNING = ("bench.py: warning: --aa with one repetition gives the A/A pair no verdict "
           "(its comparison's interval needs >= 2 pairs): add --repeat 2 or more to see "
           "this machine's noise; bytes and times are measured all the same")


@pytest.mark.parametrize("repeat, warned", [([], True), (["--repeat", "2"], False)])
def test_an_aa_run_of_one_repetition_is_warned_up_front(tmp_path, capsys, repeat, warned):
    assert cli.main(ARGS + repeat + ["--output", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert (WARNING in err) is warned
    if warned:  # before the first case's line
        assert err.index(WARNING) == 0
