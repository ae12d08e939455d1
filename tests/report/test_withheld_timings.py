"""Timings of N readers (``--tp`` ranks, ``--pp`` stages) are published only where at least
N + 2 cores are free (issue 13; ``analysis.cores``): elsewhere every table leaves the
timing cells empty (``-``), marks the row ``*`` and says why under it, while
``summary.json`` keeps the raw numbers with the flag, and bytes stay."""

from __future__ import annotations

import os

import pytest

from fault_helpers import steady_case
from ipc_bench.analysis import cores
from ipc_bench.analysis.pp import hop_table
from ipc_bench.analysis.stats import compare_cases
from ipc_bench.analysis.summary import summarize_case
from ipc_bench.harness.supervisor import run_case
from ipc_bench.report.tables import format_comparisons, format_tables
from scenarios import pp as pp_scenario
from scenarios import tp_broadcast

NOTE_2 = ("* timings left out: N ranks need N + 2 free cores, one each for them and the "
          "scheduler, a spare for the kernel and the harness's threads (N = 2 needs 4); the "
          "run\'s machine had 2. Bytes and the oracles hold.")
#: ``NOTE_2`` of ``--pp`` cases: their readers are stages.
PP_NOTE_2 = NOTE_2.replace("N ranks need", "N stages need")


def tp_summary(policy: str, n: int, n_cores: int, rep: int = 0, **kw) -> dict:
    """A ``--tp`` case summary with round numbers (what ``summarize_case`` writes)."""
    send = policy == "send"
    s = dict(scenario="tp-broadcast", workload=f"broadcast=ipc,num_running=8,tp={n}",
             case_id=f"{policy}#{rep}", policy=policy, codec="msgpack", transport="ipc",
             repetition=rep, complete=True, num_steps=100, num_running=8, tp=n,
             tp_cores=n_cores, tp_oversubscribed=n_cores < n + 1,
             tp_timings_withheld=cores.withheld(n, n_cores),
             output_tokens_per_s=50_000.0 + rep, floor_output_tokens_per_s=90_000.0,
             step_to_floor_ratio=1.8, sched_to_runner_payload_bytes_per_step=400.0 if send
             else 380.0, runner_to_sched_payload_bytes_per_step=360.0,
             decode_token_bytes_per_step=16.0 if send else 0.0,
             prompt_chunk_bytes_per_step=0.0, build_ns_per_step=10_000.0 + rep,
             encode_ns_per_step=5_000.0 + 10 * rep + (500 if send else 0),
             decode_ns_per_step=6_000.0 + 10 * rep, step_ns_mean=160_000.0 + rep,
             tp_s2r_bytes_written_per_step=402.0 if send else 382.0,
             tp_s2r_wire_bytes_all_ranks_per_step=(402.0 if send else 382.0) * n,
             tp_encode_ns_per_step=5_000.0 + (500 if send else 0),
             tp_decode_ns_all_ranks_per_step=6_000.0 * n + (700 if send else 0),
             tp_ready_ns_median=20_000.0 + (1_000 if send else 0))
    s.update(kw)
    return s


def pp_summary(arm: str, n: int, n_cores: int) -> dict:
    direct = arm == "direct"
    return dict(scenario="pp", workload=f"num_running=8,pp={n}", policy="cached" if direct
                else "send", arm=arm, codec="msgpack", transport="ipc", repetition=0,
                complete=True, num_steps=100, num_running=8, pp=n, pp_direct=direct,
                pp_cores=n_cores, pp_oversubscribed=n_cores < n + 1,
                pp_timings_withheld=cores.withheld(n, n_cores),
                pp_s2r_bytes_per_step=200.0, pp_s2r_ready_ns_median=75_000.0,
                pp_hidden_bytes_per_step=16_384.0, pp_hidden_ns_median=[250_000.0],
                pp_r2s_bytes_per_step=186.0, pp_direct_bytes_per_step=16.0 if direct else 0.0,
                pp_direct_ns_median=[350_000.0] if direct else None,
                pp_zmq_frame_head_bytes_per_step=6.0, token_digest="t0",
                output_tokens_per_s=24_658.0)


def test_the_rule_is_n_plus_two_cores():
    # N = 1 on 2 cores is shown, marked (analysis.cores.decision), as decode-steady's
    assert [cores.withheld(n, 2) for n in (1, 2, 4)] == [False, True, True]
    assert cores.withheld(1, 1) is True
    assert [cores.withheld(n, 4) for n in (1, 2, 4)] == [False, False, True]
    assert [cores.withheld(n, 16) for n in (1, 2, 4)] == [False, False, False]
    assert cores.withheld(4, None) is False  # unknown: published, as before
    # a summary written before the flag existed: derived from N and the cores
    old = {"pp": 2, "pp_cores": 3}
    assert cores.readers_and_cores(old) == (2, 3)
    assert cores.readers_and_cores({"pp": float("nan"), "tp": 2, "tp_cores": 4,
                                    "tp_timings_withheld": float("nan")}) is None


@pytest.mark.timeout(120)
@pytest.mark.parametrize("n_cores, held", [(2, True), (16, False)])
def test_a_tp_case_records_the_flag_and_keeps_its_raw_timings(monkeypatch, n_cores, held):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(n_cores)))
    s = summarize_case(run_case(steady_case(8, max_steps=40, transport="ipc", tp=2)))
    assert (s["tp_cores"], s["tp_timings_withheld"]) == (n_cores, held)
    assert s["tp_oversubscribed"] is (n_cores < 3)
    # summary.json keeps every number whatever the cores
    assert s["output_tokens_per_s"] > 0 and s["tp_ready_ns_median"] > 0
    assert s["encode_ns_per_step"] > 0
    assert cores.is_withheld(s) is held


def test_the_case_table_leaves_the_timings_out_with_the_reason():
    text = format_tables([tp_summary("send", 2, 2), tp_summary("cached", 2, 2)])
    assert text.splitlines() == [
        "tp-broadcast  [broadcast=ipc,num_running=8,tp=2]  device=?",
        "policy  codec    transport  steps  out tok/s  floor tok/s  x floor  s2r B/step  "
        "r2s B/step  tok B/step  prompt B/step  build us  encode us  decode us  mean step us",
        "------  -------  ---------  -----  ---------  -----------  -------  ----------  "
        "----------  ----------  -------------  --------  ---------  ---------  ------------",
        "send    msgpack  ipc*         100          -            -        -         400  "
        "       360          16              0         -          -          -             -",
        "cached  msgpack  ipc*         100          -            -        -         380  "
        "       360           0              0         -          -          -             -",
        "  " + NOTE_2,
        "  cached/send (msgpack; paired by repetition: geometric mean of the per-repetition "
        "ratios; 1 pair, no interval): s2r B 0.950",
    ]


def test_the_case_table_shows_the_timings_with_enough_cores():
    text = format_tables([tp_summary("send", 2, 4), tp_summary("cached", 2, 4)])
    lines = text.splitlines()
    assert lines[3] == ("send    msgpack  ipc          100     50,000       90,000     1.80  "
                        "       400         360          16              0      10.0        "
                        "5.5        6.0         160.0")
    assert "*" not in text and "timings left out" not in text
    assert lines[-1].startswith("  cached/send (msgpack; paired by repetition: geometric mean of "
                                "the per-repetition ratios; 1 pair, no interval): tok/s 1.000")


def test_the_saving_table_keeps_bytes_and_drops_times():
    summaries = [tp_summary(p, n, 2, rep) for n in (1, 2) for p in ("send", "cached")
                 for rep in (0, 1)]
    lines = tp_broadcast.report(summaries).splitlines()
    # the per-case table first: bytes kept, N = 2's timing cells left out too; N = 1 on
    # 2 cores is shown, marked (analysis.cores.decision)
    assert lines[4:6] == [
        "     ipc°  msgpack  cached  1  8     2           382.0       382.0           6.0  "
        "                    -             -",
        "     ipc*  msgpack  cached  2  8     2           382.0       764.0             -  "
        "                    -             -"]
    assert lines[10:] == [
        "transport    codec  N  B  reps  B written  B to ranks       encode us    N decodes us  "
        "slowest ready us",
        "---------  -------  -  -  ----  ---------  ----------  --------------  --------------  "
        "----------------",
        "     ipc°  msgpack  1  8     2         20          20  0.5 (0.5..0.5)  0.7 (0.7..0.7)  "
        "  1.0 (1.0..1.0)",
        "     ipc*  msgpack  2  8     2         20          40               -               -  "
        "               -",
        "* timings left out: N ranks need N + 2 free cores, one each for them and the "
        "scheduler, a spare for the kernel and the harness's threads (N = 2 needs 4); the "
        "run's machine had 2. Bytes and the oracles hold.",
        "° 2 cores: the scheduler and its rank had a core each and none was spare for the "
        "kernel and the harness's threads; no A/A pair in this table measures the noise this "
        "leaves.",
        "token streams across N, transports and policies: B=8: one token stream",
    ]
    # with 4 cores N = 1 and 2 are published, unmarked
    lines = tp_broadcast.report([tp_summary(p, n, 4, rep) for n in (1, 2)
                                 for p in ("send", "cached") for rep in (0, 1)]).splitlines()
    assert lines[4] == ("      ipc  msgpack  cached  1  8     2           382.0       382.0     "
                        "      6.0                      -             -")
    assert lines[12:14] == [
        "      ipc  msgpack  1  8     2         20          20  0.5 (0.5..0.5)  0.7 (0.7..0.7)  "
        "  1.0 (1.0..1.0)",
        "      ipc  msgpack  2  8     2         20          40  0.5 (0.5..0.5)  0.7 (0.7..0.7)  "
        "  1.0 (1.0..1.0)"]
    assert not any("timings left out" in ln for ln in lines)


def test_the_hop_table_keeps_bytes_and_drops_times():
    header, rows = hop_table([pp_summary("send", 2, 2), pp_summary("direct", 2, 2),
                              pp_summary("send", 2, 16)])
    assert header[4:6] == ["sched->stages B", "s->st0 us"] and header[-2:] == [
        "ZMTP heads B", "tok/s"]
    assert rows == [
        ["2*", "direct", "msgpack", "0", "200", "-", "16,384", "-", "186", "16", "-", "6",
         "-"],
        ["2*", "send", "msgpack", "0", "200", "-", "16,384", "-", "186", "-", "-", "6", "-"],
        ["2", "send", "msgpack", "0", "200", "75.0", "16,384", "250.0", "186", "-", "-", "6",
         "24,658"],
    ]
    text = pp_scenario.report([pp_summary("send", 2, 2), pp_summary("direct", 2, 2)])
    assert PP_NOTE_2 in text.splitlines()


def test_comparisons_compare_no_timing_and_say_why():
    summaries = [tp_summary(p, 2, 2, rep) for p in ("send", "cached") for rep in range(3)]
    (entry,) = compare_cases(summaries)
    assert sorted(entry["metrics"]) == ["runner_to_sched_payload_bytes_per_step",
                                        "sched_to_runner_payload_bytes_per_step"]
    assert entry["timings_withheld"] == NOTE_2
    assert format_comparisons([entry]).splitlines()[-1] == NOTE_2[2:]
    published = compare_cases([tp_summary(p, 2, 4, rep) for p in ("send", "cached")
                               for rep in range(3)])[0]
    assert "encode_ns_per_step" in published["metrics"]
    assert "timings_withheld" not in published


def _pp_pair(n_cores: int) -> list[dict]:
    send, direct = pp_summary("send", 2, n_cores), pp_summary("direct", 2, n_cores)
    send.update(pp_s2r_bytes_per_step=391.0, pp_r2s_bytes_per_step=362.0)
    direct.update(pp_s2r_bytes_per_step=371.0, pp_r2s_bytes_per_step=362.0,
                  pp_s2r_ready_ns_median=60_000.0, output_tokens_per_s=30_000.0)
    return [send, direct]


SEND_DIRECT_BYTES = (
    "B=8 N=2 (msgpack): direct sends 20 fewer payload bytes per step to the stages than "
    "send (391 -> 371 B, 5.1 % of send's bytes: no new_token_ids) and 16 B of sampled ids per step "
    "over gloo, last stage -> the other stage; payload all stages receive per step: send "
    "782 B (2 x 391), direct 758 B (2 x 371 + 16), send - direct 24 B; hidden states "
    "16,384 B per hop under "
    "both, the reply 362 B under both")


def test_send_against_direct_gives_bytes_and_times_only_where_published():
    from ipc_bench.analysis.pp import send_direct_lines

    assert send_direct_lines(_pp_pair(2)) == [
        SEND_DIRECT_BYTES + "; times and tokens/s left out (fewer than N + 2 cores)."]
    assert send_direct_lines(_pp_pair(16)) == [
        SEND_DIRECT_BYTES + "; send -> direct: scheduler -> stage 0 median 75.0 -> 60.0 us, "
        "direct ids median 350.0 us (mean over receiving stages), output tokens/s 24,658 -> "
        "30,000 (+21.7 %)."]
    # one arm only: nothing compared (the token line says so)
    assert send_direct_lines(_pp_pair(2)[:1]) == []


def test_a_pp_reports_findings_are_the_terminals_lines():
    """The report's findings of a --pp run: the lines the terminal printed after the
    hop table (send against direct, the footnote, the token check), same figures."""
    import pandas as pd

    from ipc_bench.report.findings import _pp_findings

    summaries = _pp_pair(2)
    terminal = pp_scenario.report(summaries).splitlines()
    assert terminal[-4:] == [
        PP_NOTE_2, "send against direct per step (means over repetitions):",
        SEND_DIRECT_BYTES + "; times and tokens/s left out (fewer than N + 2 cores).",
        "token streams of send and direct: B=8 N=2: one token stream"]
    assert _pp_findings(pd.DataFrame(summaries)) == [
        terminal[-2], "`*`" + PP_NOTE_2[1:], terminal[-1] + "."]
    assert _pp_findings(pd.DataFrame([tp_summary("send", 2, 2)])) == []


GAP = dict(runner_gap_ns_median=300_000.0, runner_gap_ns_p99=8e6,
           runner_gap_share_median=0.9, runner_gap_share_p99=0.99,
           runner_step_ns_median=400_000.0)


def test_a_withheld_runner_gap_is_one_line_in_the_terminal_and_the_report():
    from types import SimpleNamespace

    import pandas as pd

    from ipc_bench.report.blocks import _gap_blocks

    withheld = [tp_summary("send", 2, 2, **GAP), tp_summary("cached", 2, 2, **GAP)]
    text = format_tables(withheld).splitlines()
    assert text[-2:] == [
        "  runner gap: left out with the timings (*) of 2 cases",
        "  cached/send (msgpack; paired by repetition: geometric mean of the per-repetition "
        "ratios; 1 pair, no interval): s2r B 0.950"]
    assert not any("gap us" in ln for ln in text)
    results = SimpleNamespace(cases=pd.DataFrame(withheld))
    assert _gap_blocks(results, 2) == [
        ("h", 2, "Runner gap"), ("p", "Runner gap: left out with the timings (*) of 2 cases.")]
    shown = tp_summary("send", 2, 4, **GAP)
    blocks = _gap_blocks(SimpleNamespace(cases=pd.DataFrame(withheld[:1] + [shown])), 2)
    assert blocks[1][2] == [["0", "broadcast=ipc,num_running=8,tp=2", "send", "msgpack",
                             "ipc", "sync", "300", "8,000", "90.0", "99.0", "400"]]
    assert blocks[2][1].endswith(
        "(forward start to forward start). Runner gap: left out with the timings (*) of 1 "
        "case.")
