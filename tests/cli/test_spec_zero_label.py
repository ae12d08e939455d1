"""``--num-spec-tokens 0`` runs as a case without the option does (no drafts, the same
messages byte for byte), so its K = 0 cases carry no ``num_spec_tokens`` label: the
same case ids and workloads as a plain run's, paired with them in a side-by-side
report, where they were once labelled ``num_spec_tokens=0`` and paired with nothing."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

from fault_helpers import REPO
from ipc_bench.analysis.capture import load_capture
from ipc_bench.analysis.results import load
from ipc_bench.cli.run import with_spec_decoding
from ipc_bench.harness.scenario import ScenarioOptions, discover
from ipc_bench.report.blocks import setting_differences, unshared_lines

TINY = ["--scenario", "decode-steady", "--num-running", "4", "--steps", "20",
        "--warmup-steps", "5", "--codecs", "msgpack", "--no-floor", "--no-single-process",
        "--quiet"]


def _cases():
    return discover()["decode-steady"].cases(ScenarioOptions(
        num_running=[4], codecs=["msgpack"], policies=["send"], single_process=False))


def test_k0_keeps_the_plain_label_and_k2_adds_its_own():
    plain = _cases()
    cases = with_spec_decoding(plain, [0, 2], None)
    assert [c.case_id for c in cases] == ["num_running=4/send/msgpack#0",
                                          "num_running=4,num_spec_tokens=2/send/msgpack#0"]
    assert [c.workload_key for c in cases] == ["num_running=4",
                                               "num_running=4,num_spec_tokens=2"]
    assert [c.scheduler.num_spec_tokens for c in cases] == [0, 2]
    assert cases[0].case_id == plain[0].case_id
    assert len({c.case_id for c in cases}) == len(cases)


def test_a_k0_list_given_twice_is_refused_so_no_two_cases_share_an_id(capsys):
    from ipc_bench import cli

    assert cli.main(TINY + ["--num-spec-tokens", "0,0"]) == 2
    assert capsys.readouterr().err == (
        "bench.py: error: argument --num-spec-tokens: 0 given more than once\n")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("k0")
    for name, extra in (("plain", []), ("k0", ["--num-spec-tokens", "0"])):
        subprocess.run([sys.executable, str(REPO / "bench.py"), *TINY, *extra,
                        "--output", str(root / name)], cwd=REPO, check=True,
                       capture_output=True, timeout=300)
    return root


def test_k0_sends_the_plain_runs_bytes_under_the_same_ids(runs):
    names = sorted(p.name for p in (runs / "plain" / "messages").iterdir())
    assert names == sorted(p.name for p in (runs / "k0" / "messages").iterdir()) == [
        "num_running=4.cached.msgpack.r0.r2s.msgpack",
        "num_running=4.cached.msgpack.r0.s2r.msgpack",
        "num_running=4.send.msgpack.r0.r2s.msgpack",
        "num_running=4.send.msgpack.r0.s2r.msgpack"]
    for name in names:
        a, b = (load_capture(runs / run / "messages" / name) for run in ("plain", "k0"))
        assert a.frames == b.frames and len(a.frames) > 0
        assert (a.case_id, a.workload) == (b.case_id, b.workload)


def test_k0_pairs_with_the_plain_run_side_by_side(runs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = load([runs / "plain", runs / "k0"])
    assert unshared_lines(results.finished()) == []
    assert setting_differences(results) == ([], {("k0", "plain"): set()})  # none differ
    by_run = {r: sorted(zip(sel["workload"].astype(str), sel["policy"],
                            sel["sched_to_runner_wire_bytes_per_step"]))
              for r, sel in results.cases.groupby("run_id", observed=True)}
    assert by_run["plain"] == by_run["k0"]
    assert [w for w, _, _ in by_run["k0"]] == ["num_running=4", "num_running=4"]
    tokens = results.cases.set_index(["run_id", "policy"])["token_digest"]
    assert tokens["plain"].to_dict() == tokens["k0"].to_dict()
