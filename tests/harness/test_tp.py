"""``--tp N``: one scheduler, N runner ranks on one broadcast (``harness.tp_case``).

- N = 2 over XPUB/SUB and over the ring (block wait) produces the token stream and the
  schedule of N = 1 and of the single runner, under both policies, and every rank
  reports its per-step columns; the summary's ``tp_*`` figures follow from them.
- A rank that drifts (one sampled id corrupted in rank 1's token buffer only, through
  the ``sitecustomize`` fault injection of ``test_oracle``) fails the case naming rank 1,
  the step, the request, the position and both ids; a rank that samples another token
  under ``send`` (its buffer stays the scheduler's) fails it through the output oracle.
- A SIGKILLed rank is reported naming it; no process, socket folder or shared-memory
  segment is left; a stopped rank is named after the peer timeout; neither is anything
  left after Ctrl-C of ``bench.py`` while two ranks run.
- The tp-broadcast scenario: every case the same token stream, the saving table and
  figure from the summaries.
- Spinning readers (``shm``) leave the default sweep where N + 1 > cores, and warn when
  asked for there.
- ``--tp`` values other than 1, 2, 4: one line, exit 2.
"""

from __future__ import annotations

import json
import os
import re
import signal

import pytest

from analysis_run import bench_in_process
from fault_helpers import (ctrl_c_reaps_every_child, inject, rank_1_only, slow_schedule,
                           steady_case, wait_dead, wait_for)
from harness.test_e2e import Spy, assert_clean
from harness.test_oracle import CORRUPT, corrupted
from ipc_bench.analysis.summary import summarize_case
from ipc_bench.analysis.tp import tp_saving
from ipc_bench.harness import case_lifecycle
from ipc_bench.harness.spec import CaseError
from ipc_bench.harness.supervisor import run_case
from ipc_bench.wire.shm_ring import SHM_PREFIX, RingWriter
from ipc_bench.wire.transport import EndpointDir

pytestmark = pytest.mark.timeout(180)

#: Rank 1 only: the injected bug of ``test_oracle.CORRUPT`` in the process whose control
#: endpoint is ``.../ctl1`` (rank 1's socket; the rank's command line ends with it).
CORRUPT_RANK_1 = rank_1_only(CORRUPT, "IPC_BENCH_TEST_CORRUPT_AT")


#: Rank 1 only, under ``send``: the first id sampled at step IPC_BENCH_TEST_RESAMPLE_AT is
#: replaced by another (its token buffer is the scheduler's, so no fed id changes: only
#: the output oracle can see it).
RESAMPLE_RANK_1 = '''
import os, sys
if os.environ.get("IPC_BENCH_TEST_RESAMPLE_AT"):
    from ipc_bench.engine import model_runner as _mr
    _at = int(os.environ["IPC_BENCH_TEST_RESAMPLE_AT"])
    _real = _mr.ModelRunner.sample
    _calls = [0]

    def sample(self, inputs):
        ids = _real(self, inputs)
        if _calls[0] == _at and sys.argv[-1].endswith("/ctl1"):
            ids[0] = ids[0] + 1
        _calls[0] += 1
        return ids

    _mr.ModelRunner.sample = sample
'''


def segments() -> set[str]:
    """Ring segments in /dev/shm now (other runs on the machine may have theirs)."""
    return {n for n in os.listdir("/dev/shm") if n.startswith(SHM_PREFIX)}


def spy_on(monkeypatch) -> Spy:
    """``test_e2e.Spy`` that also records the ``--tp`` cases' socket folders and ring
    segment names (``spy.rings``)."""
    spy = Spy(monkeypatch)
    spy.rings = []

    class RecordingDir(EndpointDir):
        def __init__(self):
            super().__init__()
            spy.dirs.append(self.path)

    class RecordingRing(RingWriter):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            spy.rings.append(self.handle.shm_name)

    monkeypatch.setattr(case_lifecycle, "EndpointDir", RecordingDir)
    monkeypatch.setattr(case_lifecycle, "RingWriter", RecordingRing)
    return spy


def assert_no_segment(spy: Spy) -> None:
    """Every ring segment the spied cases made is gone."""
    left = [n for n in spy.rings if os.path.exists(f"/dev/shm/{n}")]
    assert left == []


@pytest.mark.parametrize("policy", ["send", "cached"])
def test_two_ranks_compute_the_single_runners_tokens(monkeypatch, policy):
    single = run_case(steady_case(16, policy=policy, max_steps=120))
    for transport in ("ipc", "shm-block"):
        spy = spy_on(monkeypatch)
        results = {n: run_case(steady_case(16, policy=policy, max_steps=120,
                                           transport=transport, tp=n)) for n in (1, 2)}
        for n, result in results.items():
            assert result.token_digest == single.token_digest, (transport, n)
            assert result.schedule_digest == single.schedule_digest
            assert len(result.sched_rows) == 120
            assert len(result.tp_rank_columns) == n
            for cols in result.tp_rank_columns:
                assert len(cols["runner_decode_ns"]) == 120
                assert all(v > 0 for v in cols["runner_decode_ns"])
        assert [p.returncode for p in spy.procs] == [0, 0, 0]
        assert_clean(spy)
        assert_no_segment(spy)
        assert len(spy.rings) == (2 if transport == "shm-block" else 0)
        s1, s2 = (summarize_case(results[n]) for n in (1, 2))
        assert (s1["tp"], s2["tp"]) == (1, 2)
        assert s2["tp_s2r_bytes_written_per_step"] == s1["tp_s2r_bytes_written_per_step"]
        factor = 1 if transport == "shm-block" else 2
        assert s2["tp_s2r_wire_bytes_all_ranks_per_step"] == pytest.approx(
            factor * s2["tp_s2r_bytes_written_per_step"])
        assert len(s2["tp_rank_decode_ns_per_step"]) == 2
        assert s2["tp_decode_ns_all_ranks_per_step"] == pytest.approx(
            sum(s2["tp_rank_decode_ns_per_step"]))
        assert 0 < s2["tp_ready_ns_median"] < 1e9
        assert sum(s2["tp_slowest_rank_share"]) == pytest.approx(1.0)


@pytest.mark.parametrize("transport", ["ipc", "shm-block"])
def test_a_drifting_rank_fails_the_case_naming_it(monkeypatch, tmp_path, transport):
    log = tmp_path / "corrupted.txt"
    inject(monkeypatch, tmp_path, CORRUPT_RANK_1, IPC_BENCH_TEST_CORRUPT_LOG=str(log),
           IPC_BENCH_TEST_CORRUPT_AT="20")
    spy = spy_on(monkeypatch)
    with pytest.raises(CaseError) as err:
        run_case(steady_case(8, policy="cached", max_steps=300, transport=transport, tp=2,
                             input_oracle_interval=1))
    seq, req_id, pos, good, bad = corrupted(log)
    assert seq == 20
    assert str(err.value) == (
        f"rank 1: input oracle: step 21: request {req_id}: the runner fed token id {bad} "
        f"at position {pos}, the scheduler's all_token_ids hold {good}")
    assert err.value.step == 21
    assert_clean(spy)


def test_a_rank_that_samples_other_tokens_fails_the_case_naming_it(monkeypatch, tmp_path):
    inject(monkeypatch, tmp_path, RESAMPLE_RANK_1, IPC_BENCH_TEST_RESAMPLE_AT="30")
    spy = spy_on(monkeypatch)
    result_spec = steady_case(8, policy="send", max_steps=80, transport="shm-block", tp=2,
                              input_oracle_interval=1)
    with pytest.raises(CaseError) as err:
        run_case(result_spec)
    assert str(err.value) == ("rank 1: step 30: its ModelRunnerOutput differs from rank 0's "
                              "(the one the scheduler received): it sampled other tokens")
    assert err.value.step == 30
    assert_clean(spy)


@pytest.mark.parametrize("transport", ["ipc", "shm-block"])
def test_a_killed_rank_is_named_and_nothing_is_left(monkeypatch, transport):
    spy = spy_on(monkeypatch)

    def kill_rank_1(seq, num_output_tokens, num_finished):
        if seq == 10:
            os.kill(spy.procs[1].pid, signal.SIGKILL)

    with pytest.raises(CaseError) as err:
        run_case(steady_case(8, policy="send", transport=transport, tp=2),
                 on_step=kill_rank_1)
    message = str(err.value)
    assert message.startswith(f"rank 1: runner process {spy.procs[1].pid} was killed by "
                              f"SIGKILL"), message
    assert spy.procs[1].returncode == -signal.SIGKILL
    assert_clean(spy)
    assert_no_segment(spy)


def test_a_rank_waits_on_the_ring_twice_the_peer_timeout(monkeypatch):
    """runner_loop.TP_RING_WAIT_TIMEOUTS: a rank on the ring waits two peer timeouts for
    the next SchedulerOutput (so that of a stuck rank and a starved one, the scheduler,
    waiting one for the stuck one, names it). A scheduler 4.5 s late with step 8 under a
    3 s peer timeout: the ranks wait (6 s: the case completes); the single runner on the
    same ring gives up after 3 s. Margins of 1.5 s both ways: 1.4 s late under 1 s left
    the ranks 0.6 s, and every other step 1 s, of a loaded machine's scheduling."""
    from types import SimpleNamespace

    from ipc_bench.harness.runner_loop import ring_wait_s

    assert ring_wait_s(SimpleNamespace(tp_size=None, peer_timeout_s=1.5)) == 1.5
    assert ring_wait_s(SimpleNamespace(tp_size=2, peer_timeout_s=1.5)) == 3.0
    slow_schedule(monkeypatch, 8, 4.5)
    spy = spy_on(monkeypatch)
    result = run_case(steady_case(8, max_steps=12, transport="shm-block", tp=2,
                                  peer_timeout_s=3.0))
    assert len(result.sched_rows) == 12
    slow_schedule(monkeypatch, 8, 4.5)
    with pytest.raises(CaseError) as err:
        run_case(steady_case(8, max_steps=12, transport="shm-block", peer_timeout_s=3.0))
    message = str(err.value)
    assert re.fullmatch(r"runner process \d+ exited with code 5 \(runner: no SchedulerOutput "
                        r"for step 8 within 3 s \(reader 0 waited for the written flag of "
                        r"chunk \d+\) \(raise --peer-timeout\)\), noticed while waiting for "
                        r"ModelRunnerOutput for step 8", message), message
    assert_clean(spy)
    assert_no_segment(spy)


@pytest.mark.parametrize("transport", ["ipc", "shm-block"])
def test_a_hung_rank_is_named_within_the_timeout(monkeypatch, transport):
    spy = spy_on(monkeypatch)

    def stop_rank_1(seq, num_output_tokens, num_finished):
        if seq == 10:
            os.kill(spy.procs[1].pid, signal.SIGSTOP)

    with pytest.raises(CaseError) as err:
        # 3 s: with 1 s, a loaded machine's stall of a healthy rank before step 10 would
        # end the case there, naming no stopped rank
        run_case(steady_case(8, policy="cached", transport=transport, tp=2,
                             peer_timeout_s=3.0), on_step=stop_rank_1)
    message = str(err.value)
    assert message.startswith("a rank stopped answering: "), message
    if transport == "ipc":  # XPUB queues on: the next input check waits for rank 1
        assert ("no input digests from the runner before step 128 within 3 s (rank(s) 1 "
                "did not answer)") in message, message
    else:  # the ring fills: the writer waits for rank 1 to read
        assert "waited for reader(s) 1 to read chunk" in message, message
    assert re.search(r" \(rank 0 [RS] \((running|sleeping)\), rank 1 T \(stopped\); "
                     r"killed\)$", message), message
    assert spy.procs[1].returncode == -signal.SIGKILL
    assert_clean(spy)


@pytest.mark.parametrize("transport", ["ipc", "shm-block"])
def test_ctrl_c_reaps_every_rank_and_leaves_no_segment(tmp_path, bench_tmpdir, transport):
    before = segments()
    ctrl_c_reaps_every_child(
        tmp_path, bench_tmpdir, ["--scenario", "tp-broadcast", "--tp", "2", "--tp-transports",
                                 transport, "--num-running", "16", "--steps", "60000",
                                 "--policies", "send", "--codecs", "msgpack"], 2, "two ranks")
    # Another run's ring may exist for a while (a name lives until its readers attach,
    # which a rank of a loaded machine importing torch can take 16 s over, so not 5 s);
    # one of ours would stay.
    wait_for(lambda: not segments() - before, timeout_s=60, what="no new ring segment")


def test_the_scenario_reports_the_saving_against_n(tmp_path, bench_tmpdir, monkeypatch):
    # bench.py in this process (analysis_run.bench_in_process: its ranks are processes
    # as ever); what is checked is the run's folder, tables and figure, not the process
    import tempfile

    run_dir = tmp_path / "run"
    monkeypatch.setenv("TMPDIR", str(bench_tmpdir))
    monkeypatch.setattr(tempfile, "tempdir", str(bench_tmpdir))
    proc = bench_in_process(
        ["--scenario", "tp-broadcast", "--tp", "1,2", "--tp-transports", "shm-block,ipc",
         "--num-running", "8", "--steps", "30", "--warmup-steps", "5", "--codecs", "msgpack",
         "--output", run_dir, "--quiet"])
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    cases = summary["cases"]
    assert sorted((c["tp"], c["transport"], c["policy"]) for c in cases) == sorted(
        (n, t, p) for n in (1, 2) for t in ("ipc", "shm-block") for p in ("send", "cached"))
    assert len({c["token_digest"] for c in cases}) == 1
    assert "token streams across N, transports and policies: B=8: one token stream" \
        in proc.stdout
    rows = tp_saving(cases)
    assert [(r["transport"], r["tp"]) for r in rows] == [("ipc", 1), ("ipc", 2),
                                                         ("shm-block", 1), ("shm-block", 2)]
    for r in rows:  # send ships 8 one-id lists a step: a header and a 3- or 5-byte id each
        assert 8 * 3 <= r["saving_tp_s2r_bytes_written_per_step"] <= 8 * 5 + 2
    from ipc_bench.analysis.results import load
    from ipc_bench.report import plots

    fig = plots.tp_saving_figure(load(run_dir))
    # ipc's and shm-block's bytes written once are equal: one line names both
    line = next(ln for ln in fig.axes[0].lines
                if ln.get_label() == "ipc = shm-block / msgpack")
    assert list(line.get_xdata()) == [1, 2]
    assert list(line.get_ydata()) == pytest.approx(
        [r["saving_tp_s2r_bytes_written_per_step"] for r in rows if r["transport"] == "ipc"])
    assert all(y for _, y in plots.axis_labels(fig))


@pytest.mark.parametrize("value, why", [
    ("3", "each value must be one of 1, 2, 4, got 3"),
    ("0", "must be at least 1, got 0"),
    ("8", "must be at most 4, got 8"),
    ("two", "expected an integer, got 'two'"),
])
def test_bad_tp_values_get_one_line_and_exit_2(value, why):
    proc = bench_in_process(["--scenario", "tp-broadcast", "--tp", value])  # cli.main
    assert proc.returncode == 2
    assert proc.stderr == f"bench.py: error: argument --tp: {why}\n"
    assert proc.stdout == ""


def test_spinning_readers_are_left_out_where_cores_are_short(monkeypatch, capsys):
    from ipc_bench.harness.scenario import ScenarioOptions
    from ipc_bench.scenarios import tp_broadcast

    monkeypatch.setattr(tp_broadcast, "cores", lambda: 2)
    opts = ScenarioOptions()
    assert tp_broadcast.transports_for(1, opts) == ["ipc", "shm-block", "shm"]
    assert tp_broadcast.transports_for(2, opts) == ["ipc", "shm-block"]
    assert tp_broadcast.transports_for(4, opts) == ["ipc", "shm-block"]
    assert capsys.readouterr().err == ""
    opts = ScenarioOptions(tp_transports=["shm"])
    assert tp_broadcast.transports_for(1, opts) == ["shm"]
    assert capsys.readouterr().err == ""
    assert tp_broadcast.transports_for(4, opts) == ["shm"]
    assert capsys.readouterr().err == ""  # the warning goes with each case (below)
    from ipc_bench.analysis.summary import noise_warnings

    base = dict(num_steps=1000, tp=4, tp_cores=2, tp_oversubscribed=True)
    assert noise_warnings(dict(base, transport="shm")) == [
        "--tp 4 with spinning readers (shm) on 2 core(s): 5 processes share them; those "
        "timings are not comparable"]
    # readers that sleep wake together for each broadcast: the cores are shared too
    assert noise_warnings(dict(base, transport="shm-block")) == [
        "--tp 4 over shm-block on 2 core(s): the 4 ranks sleep between steps but wake "
        "together for each step's broadcast, so 5 processes share the cores while they "
        "run it; those timings are not comparable"]
    assert noise_warnings(dict(base, transport="shm", tp_oversubscribed=False)) == []
    monkeypatch.setattr(tp_broadcast, "cores", lambda: 5)
    assert tp_broadcast.transports_for(4, ScenarioOptions()) == ["ipc", "shm-block", "shm"]
    specs = tp_broadcast.cases(ScenarioOptions(tp=[4], codecs=["msgpack"]))
    assert sorted({(c.tp, c.transport) for c in specs}) == [(4, "ipc"), (4, "shm"),
                                                            (4, "shm-block")]
    assert all(c.labels == {"num_running": 256, "tp": 4, "broadcast": c.transport}
               for c in specs)


def test_tp_transports_are_the_local_ones():
    proc = bench_in_process(["--scenario", "tp-broadcast", "--tp-transports", "shm,tcp"])
    assert proc.returncode == 2
    assert proc.stderr == ("bench.py: error: argument --tp-transports: 'tcp': choose from ipc, "
                           "shm, shm-block\n")


def test_tp_is_refused_by_scenarios_without_ranks():
    proc = bench_in_process(["--scenario", "decode-steady", "--tp", "2"])
    assert proc.returncode == 2
    assert proc.stderr == ("bench.py: error: scenario decode-steady does not take --tp (the "
                           "runner ranks of a tensor-parallel broadcast)\n")


def test_a_refused_transport_names_the_default_of_this_machine(monkeypatch):
    from ipc_bench.engine.config import ConfigError
    from ipc_bench.harness.scenario import ScenarioOptions
    from ipc_bench.scenarios import tp_broadcast

    monkeypatch.setattr(tp_broadcast, "cores", lambda: 2)
    with pytest.raises(ConfigError) as err:
        tp_broadcast.check_transport(ScenarioOptions(tp=[2], transport="shm"))
    assert str(err.value) == (
        "scenario tp-broadcast broadcasts each SchedulerOutput to its ranks over each "
        "transport of --tp-transports (default ipc and shm-block, and shm for --tp N where "
        "N + 1 cores are available: 2 here): drop --transport shm (--tp-transports shm runs "
        "that broadcast alone)")


_TP_FLOOR = ["--scenario", "tp-broadcast", "--tp", "2", "--tp-transports", "ipc",
             "--num-running", "8", "--steps", "50", "--policies", "send", "--codecs",
             "msgpack", "--quiet"]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP])
def test_a_rank_lost_in_the_floor_keeps_the_case_as_finished_without_its_floor(
        monkeypatch, tmp_path, capsys, sig):
    """Rank 1 killed (SIGKILL) or stopped (SIGSTOP) as the floor's replay starts, after
    every counted step: as for the single runner, the case is written as finished with
    its counted figures, no floor and no runner columns, ``floor_failed`` holding the
    line, which names rank 1; the run is failed, exit 1, one line; every rank reaped."""
    from ipc_bench import cli
    from ipc_bench.harness import supervisor

    spy = spy_on(monkeypatch)
    replay = supervisor.replay_floor

    def lose_rank_1_then_replay(*args, **kwargs):
        os.kill(spy.procs[1].pid, sig)
        if sig == signal.SIGKILL:
            wait_dead(spy.procs[1].pid)
        return replay(*args, **kwargs)

    monkeypatch.setattr(supervisor, "replay_floor", lose_rank_1_then_replay)
    run_dir = tmp_path / "run"
    # a dead rank is noticed by the first message sent to it: BeginFloor, as long as no
    # KeepAlive falls due before it (a quarter of the peer timeout after the last step's
    # frame, 0.5 s of 2 s, which a busy machine's kill and reaping can pass); a stopped
    # rank is noticed by the peer timeout, which its line names (5 s: rank 0's own
    # floor-ready, which a loaded machine can hold back a second or two, comes within it)
    timeout = "5" if sig == signal.SIGSTOP else "60"
    assert cli.main(_TP_FLOOR + ["--peer-timeout", timeout, "--output", str(run_dir)]) == 1
    err = capsys.readouterr().err.splitlines()
    pid = spy.procs[1].pid
    assert len(err) == 1, err
    case_id, line = re.fullmatch(rf"bench\.py: error: (\S+): (.*); partial results: "
                                 rf"{re.escape(str(run_dir))}", err[0]).groups()
    if sig == signal.SIGKILL:
        # dead before the replay: noticed as the floor's first message goes to it
        assert line == (f"rank 1: runner process {pid} was killed by SIGKILL, noticed "
                        "while sending BeginFloor to rank 1")
    else:
        assert re.fullmatch(r"a rank stopped answering: no floor-ready message from the "
                            r"runner within 5 s \(rank\(s\) 1 did not answer\) \(rank 0 [RS] "
                            r"\((running|sleeping)\), rank 1 T \(stopped\); killed\)", line), line
    assert [p.returncode for p in spy.procs] == [
        spy.procs[0].returncode, -signal.SIGKILL]  # rank 1 killed, whatever its signal
    assert_clean(spy)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["status"], summary["problems"], summary["failed_case"]) == (
        "failed", [f"{case_id}: {line}"], case_id)
    case, = summary["cases"]
    assert case["complete"] is True and case["error"] is None and "failed_step" not in case
    assert case["floor_failed"] == line and "floor_interrupted" not in case
    assert case["num_steps"] == 50 and case["output_tokens_per_s"] > 0
    assert case.get("floor_output_tokens_per_s") is None
    last = case["num_total_steps"] - 1
    assert (f"the runner failed while replaying the floor after step {last} (steps.csv seq: "
            f"warm-up and uncounted steps included): {line}: the floor's figures (floor "
            "tok/s, x floor) are absent, and so are the runner's per-step columns (its "
            "report comes after the floor)") in case["warnings"]


def test_a_saving_that_rounds_to_zero_from_below_prints_zero():
    from scenarios import tp_broadcast

    # send's encode 29.9 ns shorter than cached's: no saving at 0.1 us, not -0.0
    row = {"saving_x": -29.9, "saving_x_range": (-41.0, -20.0), "n": 1}
    assert tp_broadcast._us(row, "x") == "0.0"
    assert tp_broadcast._us(dict(row, n=2), "x") == "0.0 (0.0..0.0)"
    assert tp_broadcast._us({"saving_x": -1260.0, "saving_x_range": (-1400.0, 12.3e6),
                             "n": 2}, "x") == "-1.3 (-1.4..12,300.0)"
    assert tp_broadcast._cell(-0.4, digits=0) == "0"
    assert tp_broadcast._cell(1234.56) == "1,234.6"
