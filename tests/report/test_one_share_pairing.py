"""One pairing of two arms' records into shares (``send_cost.pair_step_shares``): send
against cached (``record_step_shares``) and an A/A pair's arms (``findings.
_aa_share_words``) both call it, so a pair lacking a figure is left out, and its net
share given, alike."""
from ipc_bench.analysis.send_cost import pair_step_shares, record_step_shares

BASE = [1_000_000.0, 1_010_000.0, 990_000.0]
DIFFS = [30_000.0, 35_000.0, 32_000.0]


def _rec(policy, rep, d, net=True):
    r = dict(policy=policy, repetition=rep, complete=True, scenario="decode-steady",
             workload="num_running=16", codec="msgpack", transport="zmq", model="null",
             case_id=f"{policy}#{rep}", run_id="run", step_ns_median=BASE[rep] + d,
             s2r_build_encode_decode_ns_median=200_000.0 + d)
    if net:
        r["s2r_net_ns_median"] = 260_000.0 + d
    return r


def test_send_against_cached_and_a_pair_list_give_the_same_shares():
    pairs = [(_rec("send", r, d), _rec("cached", r, 0.0)) for r, d in enumerate(DIFFS)]
    shares = pair_step_shares(pairs)
    assert (round(shares.s2r.diff_ns, 6), round(shares.s2r.share, 6), shares.s2r.pairs) == (
        32_333.333333, 0.032333, 3)
    assert round(shares.net.diff_ns, 6) == 32_333.333333
    records = [x for pair in pairs for x in pair]
    assert record_step_shares(records) == {("num_running=16", "msgpack"): shares}


def test_a_pair_without_a_path_is_left_out_and_no_net_without_one():
    pairs = [(_rec("send", r, d, net=False), _rec("cached", r, 0.0, net=False))
             for r, d in enumerate(DIFFS)]
    pairs[2][0].pop("s2r_build_encode_decode_ns_median")
    shares = pair_step_shares(pairs)
    assert (shares.s2r.pairs, round(shares.s2r.diff_ns, 6), shares.net) == (
        2, 32_500.0, None)
    assert pair_step_shares([({"step_ns_median": 1.0}, {"step_ns_median": 1.0})]) is None
