"""The metrics registry (``ipc_bench.analysis.metrics``) and the tables that read it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipc_bench.analysis import metrics, stats
from ipc_bench.analysis.metrics import METRICS, metric
from ipc_bench.report import blocks, findings, plots, tables

PACKAGE = Path(__file__).resolve().parents[2] / "ipc_bench"


def _summary(policy: str, rep: int, tps: float, step: float) -> dict:
    send = policy == "send"
    return dict(case_id=f"num_running=4/{policy}/msgpack#{rep}", scenario="decode-steady",
                workload="num_running=4", num_running=4, policy=policy, arm=policy,
                codec="msgpack", transport="ipc", model="null", repetition=rep, complete=True,
                num_steps=200, runner_device="cpu", output_tokens_per_s=tps,
                floor_output_tokens_per_s=2 * tps, step_to_floor_ratio=2.0,
                sched_to_runner_payload_bytes_per_step=1530.0 if send else 1449.0,
                runner_to_sched_payload_bytes_per_step=1424.0,
                decode_token_bytes_per_step=64.0 if send else 0.0,
                prompt_chunk_bytes_per_step=0.0,
                build_ns_per_step=8100.0 if send else 3200.0, encode_ns_per_step=5400.0,
                decode_ns_per_step=16500.0, step_ns_mean=step, step_ns_median=step - 1000,
                sched_cpu_ns_per_step=step / 2)


SUMMARIES = [_summary("send", 0, 56602.0, 282700.0), _summary("cached", 0, 69154.0, 231400.0),
             _summary("send", 1, 56000.0, 285000.0), _summary("cached", 1, 70000.0, 230000.0)]

# Rendered by the tables of commit da7147c (before the registry) from SUMMARIES, with
# the repetition column added since and the ratio line now the comparison block's
# paired ratios (GOLDEN_COMPARISONS' cached/send and ratio CI columns).
GOLDEN_TABLES = """\
decode-steady  [num_running=4]  device=cpu  model=null (no model computed: the step is the harness's own)
rep  policy  codec    transport  steps  out tok/s  floor tok/s  x floor  s2r B/step  r2s B/step  tok B/step  prompt B/step  build us  encode us  decode us  mean step us
---  ------  -------  ---------  -----  ---------  -----------  -------  ----------  ----------  ----------  -------------  --------  ---------  ---------  ------------
0    send    msgpack  ipc          200     56,602      113,204     2.00       1,530       1,424          64              0       8.1        5.4       16.5         282.7
0    cached  msgpack  ipc          200     69,154      138,308     2.00       1,449       1,424           0              0       3.2        5.4       16.5         231.4
1    send    msgpack  ipc          200     56,000      112,000     2.00       1,530       1,424          64              0       8.1        5.4       16.5         285.0
1    cached  msgpack  ipc          200     70,000      140,000     2.00       1,449       1,424           0              0       3.2        5.4       16.5         230.0
  cached/send (msgpack; paired by repetition: geometric mean of the per-repetition ratios [95 % Student-t interval]; 2 pairs): tok/s 1.236 [1.069, 1.429], s2r B 0.947 [0.947, 0.947], build 0.395 [0.395, 0.395], encode 1.000 [1.000, 1.000], decode 1.000 [1.000, 1.000], mean step 0.813 [0.743, 0.889]"""

# With the p-value column and Holm's adjustment over the timed metrics: two pairs
# support no timed verdict but the build time's (the same in both pairs); those whose
# interval reaches beyond 1.1x either way are inconclusive, not "no significant difference", and
# say why: here each one's unadjusted interval excludes 1, but the Holm-adjusted test
# finds no significant difference. The title names the ratio as the ratio line does
# (stats.ratio_phrase); the ratio and diff columns' heads name the per-pair statistic
# each shows; the arms are each arm's geometric mean over the pairs, whose quotient is
# the ratio (56,300 and 69,576 tok/s: 69,576 / 56,300 = 1.236), not the medians
# (56,301 and 69,577) they were, whose quotient need not be.
# The diff CI column holds one form: out tok/s's interval needs `` to `` (its ends have
# thousands separators), so every row's reads so (``[29.6 to 76.7]``).
GOLDEN_COMPARISONS = """
cached vs send  [num_running=4]  msgpack: cached/send paired by repetition: geometric mean of the per-repetition ratios [95 % Student-t interval]; 2 pairs; verdicts Holm-adjusted over 7 timed metrics
metric       unit   send (geometric mean) [IQR]  cached (geometric mean) [IQR]  cached/send (per-pair geomean)        ratio CI  send-cached (per-pair mean)              diff CI         p [Holm]                                     verdict
-----------  -----  ---------------------------  -----------------------------  ------------------------------  --------------  ---------------------------  -------------------  ---------------  ------------------------------------------
step mean    us     283.8 [1.15]                                  230.7 [0.70]                           0.813  [0.743, 0.889]                         53.1       [29.6 to 76.7]    0.022 [0.130]    inconclusive: not significant after Holm
step median  us     282.8 [1.15]                                  229.7 [0.70]                           0.812  [0.742, 0.889]                         53.1       [29.6 to 76.7]    0.022 [0.130]    inconclusive: not significant after Holm
out tok/s    tok/s  56,300 [301.0]                              69,576 [423.0]                           1.236  [1.069, 1.429]                      -13,276  [-22,475 to -4,077]    0.034 [0.130]    inconclusive: not significant after Holm
build        us     8.10 [0]                                          3.20 [0]                           0.395  [0.395, 0.395]                         4.90       [4.90 to 4.90]  <0.001 [<0.001]  significant: cached 60.5 % lower than send
encode       us     5.40 [0]                                          5.40 [0]                           1.000  [1.000, 1.000]                            0             [0 to 0]    1.000 [1.000]                   no significant difference
decode       us     16.5 [0]                                          16.5 [0]                           1.000  [1.000, 1.000]                            0             [0 to 0]    1.000 [1.000]                   no significant difference
sched cpu    us     141.9 [0.58]                                  115.3 [0.35]                           0.813  [0.743, 0.889]                         26.6       [14.8 to 38.3]    0.022 [0.130]    inconclusive: not significant after Holm
s2r bytes    B      1,530 [0]                                        1,449 [0]                           0.947  [0.947, 0.947]                         81.0       [81.0 to 81.0]            exact         exact: cached 5.3 % lower than send
r2s bytes    B      1,424 [0]                                        1,424 [0]                           1.000  [1.000, 1.000]                            0             [0 to 0]            exact                        exact: no difference
not significant after Holm: the ratio CI excludes 1 but is unadjusted (as are the diff CI and the first p); the verdict comes from the p adjusted over the comparison's timed metrics [in brackets], above 0.05: no significant difference; yet the interval reaches beyond 1.1x either way, so a difference of 10 % or more is not ruled out either: inconclusive"""

GOLDEN_LATENCY = """
Latency (timed replay at 2x real time; TTFT from intended arrival)
policy  codec    transport  TTFT p50 ms  TTFT p99 ms  TPOT mean ms  ITL p50 ms  ITL p99 ms  E2E p50 ms  E2E p99 ms
------  -------  ---------  -----------  -----------  ------------  ----------  ----------  ----------  ----------
send    msgpack  ipc               1.23        45.68         0.123       0.457       8.900        12.3     1,234.6
Note: pace not recorded (a run before the figures that label it): tokens/s (wall) may be arrival-bound, and then not a throughput comparison between arms."""


def test_case_table_renders_the_golden_text():
    assert tables.format_tables(SUMMARIES) == GOLDEN_TABLES


def test_times_of_a_thousand_us_and_more_have_thousands_separators():
    """A step of 1,039.3 µs and 4,387 steps read as the byte and tok/s columns beside
    them do; the text starts with the table's title, not a blank line
    (``bench.py | head -1``)."""
    slow = dict(SUMMARIES[0], repetition=0, step_ns_mean=1_039_300.0,
                decode_ns_per_step=12_345_678.0, num_steps=4387)
    lines = tables.format_tables([slow]).splitlines()
    assert lines[0] == ("decode-steady  [num_running=4]  device=cpu  model=null (no model "
                        "computed: the step is the harness's own)")
    assert lines[3].startswith("send    msgpack  ipc        4,387     56,602"), lines[3]
    assert lines[3].endswith("  0       8.1        5.4   12,345.7       1,039.3"), lines[3]
    assert metrics.metric("e2e_ms_p99").cell(1234.56) == "1,234.6"


def test_comparison_block_renders_the_golden_text():
    assert tables.format_comparisons(stats.compare_cases(SUMMARIES)) == GOLDEN_COMPARISONS


def test_comparison_block_says_once_why_a_method_gives_no_verdict():
    text = tables.format_comparisons(stats.compare_cases(SUMMARIES, method="bootstrap"))
    head, _, _, *rows, arms = text.strip().splitlines()
    assert arms == ("arms: each arm's geometric mean over the pairs [IQR over them]; the "
                    "bootstrap ratio beside them is the median of the per-pair ratios, "
                    "which can differ from their quotient")
    assert head.endswith("cached/send paired by repetition: median of the per-repetition "
                         "ratios; 2 pairs; no verdict: "
                         "the bootstrap needs >= 34 pairs, have 2 (use --repeat 34 or more, "
                         "or --ci-method t)")
    assert len(rows) == 9 and all(r.endswith("  no verdict") for r in rows[:7])
    # the bytes are exact: no p and the same verdict under every method
    assert rows[7].endswith("  -     exact  exact: cached 5.3 % lower than send")
    assert rows[8].endswith("  -     exact                 exact: no difference")


def _pairs(n: int) -> list[dict]:
    """``n`` send/cached pairs of ``SUMMARIES``' kind, cached 18 % faster in every one."""
    return [_summary(policy, rep, tps + 100 * rep, step + 1000 * rep)
            for rep in range(n)
            for policy, tps, step in (("send", 56000.0, 285000.0),
                                      ("cached", 69000.0, 233700.0))]


@pytest.mark.parametrize("method", ["t", "sign", "bootstrap"])
def test_bytes_are_exact_under_every_method(method):
    """The payload bytes have no p-value and one verdict whatever the method: the sign
    test's 6 pairs cannot give p < 0.001, and the bootstrap withholds its own."""
    (c,) = stats.compare_cases(_pairs(6), method=method)
    rows = {r[0]: r for r in tables.comparison_parts(c)[2]}
    assert rows["s2r bytes"][-2:] == ["exact", "exact: cached 5.3 % lower than send"]
    assert rows["r2s bytes"][-2:] == ["exact", "exact: no difference"]
    s2r = c["metrics"]["sched_to_runner_payload_bytes_per_step"]
    assert (s2r["p_value"], s2r["p_adjusted"], s2r["significant"]) == (None, None, None)
    assert len(c["family"]) == (0 if method == "bootstrap" else 7)  # bytes never in it


SIGN_FLOOR_6 = ("with 6 pairs the sign test's smallest p is 0.031, 0.219 after Holm over 7 "
                "timed metrics: no timed metric can be significant; --repeat 9 or more")


def test_sign_test_says_once_when_holm_leaves_it_no_verdict_to_give():
    """6 pairs, all on one side: the sign test's p is 2/2^6 = 0.031 for every timed
    metric, 0.219 after Holm over 7; 8 pairs give 7 x 2^-7 = 0.055, still too much;
    9 pairs give 7 x 2^-8 = 0.027, and the build time is significant."""
    for n, floor in ((6, SIGN_FLOOR_6), (8, SIGN_FLOOR_6.replace("6 pairs", "8 pairs")
                                         .replace("0.031, 0.219", "0.008, 0.055"))):
        (c,) = stats.compare_cases(_pairs(n), method="sign")
        title, _, rows, under = tables.comparison_parts(c)
        assert under.splitlines()[0] == floor
        assert title.count("smallest p") == 0
        assert {r[0]: r[-2] for r in rows}["build"] == (
            "0.031 [0.219]" if n == 6 else "0.008 [0.055]")
    (c,) = stats.compare_cases(_pairs(9), method="sign")
    _, _, rows, under = tables.comparison_parts(c)
    assert "smallest p" not in under
    assert {r[0]: r[-2:] for r in rows}["build"] == [
        "0.004 [0.027]", "significant: cached 60.5 % lower than send"]
    for method in ("t", "bootstrap"):  # no such floor
        assert stats.unreachable_note(method, 6, 7) == ""
        assert stats.unreachable_note(method, 40, 7) == ""
    assert stats.unreachable_note("sign", 5, 7) == ""  # withheld: said otherwise
    assert stats.unreachable_note("sign", 6, 1) == ""  # 0.031 <= 0.05
    assert [stats.sign_pairs_needed(m) for m in (1, 2, 3, 4, 7)] == [6, 7, 7, 8, 9]
    assert stats.sign_min_p(6) == 2 / 64


def test_latency_table_renders_the_golden_text():
    s = dict(SUMMARIES[0], trace_speedup=2.0, ttft_ms_p50=1.2345, ttft_ms_p99=45.678,
             tpot_ms_mean=0.12345, itl_ms_p50=0.4567, itl_ms_p99=8.9, e2e_ms_p50=12.34,
             e2e_ms_p99=1234.56)
    assert tables.format_latency([s]) == GOLDEN_LATENCY


@pytest.mark.parametrize("keys", [
    tables.CASE_TABLE, tables.LATENCY_TABLE, tables.RATIO_METRICS, stats.COMPARED_KEYS,
    blocks.PAIR_TABLE, blocks.SIDE_BY_SIDE, plots.S2R_COST_COLUMNS,
    (plots.S2R_MEDIAN_COLUMN, plots.THROUGHPUT),
    tuple(findings.PAIR_METRICS.values()),
], ids=["case", "latency", "ratios", "compared", "pairs", "side-by-side", "s2r-cost",
        "plots", "findings"])
def test_every_listed_metric_is_in_the_registry(keys):
    for key in keys:
        if key in tables.IDENTITY:
            continue
        assert metric(key).key == key


def test_registry_entries():
    assert all(m.key == k for k, m in METRICS.items())
    assert len({m.header for m in METRICS.values()}) == len(METRICS)  # headers tell apart
    for m in METRICS.values():
        assert m.unit and m.label and m.header
        if m.scale is not None:
            assert m.display_unit
    # compare_cases records each metric's unit as the registry has it
    assert dict(stats.COMPARED_METRICS) == {k: METRICS[k].unit for k in stats.COMPARED_KEYS}
    step = metric("step_ns_mean")
    assert (step.unit, step.display_unit, step.display(282700.0)) == ("ns", "us", 282.7)
    assert (step.cell(282700.0), step.cell(None)) == ("282.7", "-")
    # counts shown as recorded, with thousands separators
    assert (metric("num_steps").cell(213), metric("num_steps").cell(4387)) == ("213", "4,387")
    assert (step.short, step.ratio_short) == ("step mean", "mean step")
    with pytest.raises(KeyError, match="not in the metrics registry"):
        metric("no_such_metric")
    assert metrics.metric is metric


def test_cells_and_headers_follow_the_registry():
    keys = ("policy", "output_tokens_per_s", "build_ns_per_step", "no_value_here")
    with pytest.raises(KeyError):
        tables.header(keys)
    keys = keys[:3]
    assert tables.header(keys) == ["policy", "out tok/s", "build us"]
    assert tables.cells(SUMMARIES[0], keys) == ["send", "56,602", "8.1"]
    assert tables.cells({}, keys) == ["-", "-", "-"]


def test_cases_without_the_input_oracle_are_named_under_the_table_and_in_the_report():
    import types

    import pandas as pd

    cases = [dict(input_oracle_interval=0), dict(input_oracle_interval=128), dict()]
    note = ("INPUT ORACLE OFF: 1 of 3 cases did not check the token ids their runner fed "
            "(input_oracle_interval 0)")
    assert tables.unchecked_note(cases) == note
    assert tables.unchecked_note(cases[1:]) is None  # older summaries: checked every 128
    one = types.SimpleNamespace(cases=pd.DataFrame([{"input_oracle_interval": 0},
                                                    {"input_oracle_interval": 128},
                                                    {"input_oracle_interval": None}]))
    assert blocks._unchecked_block(one) == (
        "note", note + ": a runner that fed wrong token ids would have gone unnoticed in them.")
    one.cases = pd.DataFrame([{"case_id": "a"}])
    assert blocks._unchecked_block(one) is None


def test_an_aa_pair_shows_each_arms_own_label_in_the_tables():
    first = _summary("send", 0, 56602.0, 282700.0)
    second = dict(_summary("send", 0, 56000.0, 285000.0), arm="send'",
                  case_id="num_running=4/send'/msgpack#0")
    for s, gap in ((first, 80000.0), (second, 90000.0)):
        s.update(runner_gap_ns_median=gap, runner_gap_ns_p99=2 * gap,
                 runner_gap_share_median=0.5, runner_gap_share_p99=0.9,
                 runner_step_ns_median=2 * gap)
    assert tables.format_tables([first, second]) == """\
decode-steady  [num_running=4]  device=cpu  model=null (no model computed: the step is the harness's own)
policy  codec    transport  steps  out tok/s  floor tok/s  x floor  s2r B/step  r2s B/step  tok B/step  prompt B/step  build us  encode us  decode us  mean step us
------  -------  ---------  -----  ---------  -----------  -------  ----------  ----------  ----------  -------------  --------  ---------  ---------  ------------
send    msgpack  ipc          200     56,602      113,204     2.00       1,530       1,424          64              0       8.1        5.4       16.5         282.7
send'   msgpack  ipc          200     56,000      112,000     2.00       1,530       1,424          64              0       8.1        5.4       16.5         285.0
  runner gap per counted step (end of one forward + sampling to the start of the next; % of the runner's step):
  policy  codec    transport  scheduling  gap us p50  gap us p99  gap % p50  gap % p99  runner step us p50
  ------  -------  ---------  ----------  ----------  ----------  ---------  ---------  ------------------
  send    msgpack  ipc        sync              80.0       160.0       50.0       90.0               160.0
  send'   msgpack  ipc        sync              90.0       180.0       50.0       90.0               180.0
  send'/send (msgpack; paired by repetition: geometric mean of the per-repetition ratios; 1 pair, no interval): tok/s 0.989, s2r B 1.000, build 1.000, encode 1.000, decode 1.000, mean step 1.008"""
    assert tables.cells(dict(policy="send"), ("policy",)) == ["send"]  # a summary without an arm


def test_ratio_lines_compare_arms_not_policies():
    """An A/A copy (``send'``) or an async arm (``cached+async``) never joins another
    arm's mean, and a pp run's ``direct`` arm is compared with ``send`` by name."""
    send, cached = _summary("send", 0, 50000.0, 282700.0), _summary("cached", 0, 60000.0, 231400.0)
    copy = dict(_summary("send", 0, 10000.0, 282700.0), arm="send'")
    asyn = dict(_summary("cached", 0, 90000.0, 231400.0), arm="cached+async")
    direct = dict(_summary("cached", 0, 55000.0, 231400.0), arm="direct")
    head = ("(msgpack; paired by repetition: geometric mean of the per-repetition ratios; "
            "1 pair, no interval): ")
    ratio = [ln for ln in tables.format_tables([send, copy, cached, asyn]).splitlines()
             if "/send (" in ln or "/cached (" in ln]
    assert ratio == ["  cached/send " + head + "tok/s 1.200, s2r B 0.947, "
                     "build 0.395, encode 1.000, decode 1.000, mean step 0.819",
                     "  send'/send " + head + "tok/s 0.200, s2r B 1.000, "
                     "build 1.000, encode 1.000, decode 1.000, mean step 1.000",
                     "  cached+async/cached " + head + "tok/s 1.500, s2r B 1.000, "
                     "build 1.000, encode 1.000, decode 1.000, mean step 1.000"]
    ratio = [ln for ln in tables.format_tables([send, direct]).splitlines() if "/send (" in ln]
    assert ratio == ["  direct/send " + head + "tok/s 1.100, s2r B 0.947, "
                     "build 0.395, encode 1.000, decode 1.000, mean step 0.819"]
    assert not [ln for ln in tables.format_tables([copy, asyn]).splitlines() if "/send (" in ln]


def test_the_ratio_line_is_the_paired_geometric_mean_not_the_ratio_of_means():
    """Two noisy repetitions: the arms' means give 0.821 (58,980 / 71,800), the paired
    ratios 0.700 and 1.100 a geometric mean of 0.877; the terminal's line gives the
    latter with its interval, as the comparison block and the report's pair table do,
    and no ratio of means."""
    summaries = [_summary("send", 0, 100_000.0, 282700.0),
                 _summary("cached", 0, 70_000.0, 231400.0),
                 _summary("send", 1, 43_600.0, 285000.0),
                 _summary("cached", 1, 47_960.0, 230000.0)]
    line = tables.format_tables(summaries).splitlines()[-1]
    assert line.startswith(
        "  cached/send (msgpack; paired by repetition: geometric mean of the per-repetition "
        "ratios [95 % Student-t interval]; 2 pairs): tok/s 0.877 [0.050, 15.500], ")
    tput = stats.compare_cases(summaries)[0]["metrics"]["output_tokens_per_s"]
    assert f"{tput['ratio_geomean']:.3f}" == "0.877"
    assert stats.paired_ratio([100_000.0, 43_600.0], [70_000.0, 47_960.0])[0] == \
        pytest.approx(0.8775, abs=1e-4)
    assert "0.821" not in line and "mean over repetitions" not in line
    assert tables.format_tables(summaries, method="sign").splitlines()[-1].startswith(
        "  cached/send (msgpack; paired by repetition: median of the per-repetition ratios; "
        "2 pairs, no interval): tok/s 0.900, ")


def _single_process(policy: str, rep: int, encode_ns: float) -> dict:
    """A single-process case (codec none): no serialization, no bytes; its encode and
    decode times are clock reads around no work."""
    return dict(_summary(policy, rep, 40_000.0 + rep, 50_000.0 + 100 * rep),
                case_id=f"num_running=4/{policy}/none#{rep}", codec="none",
                transport="inproc", sched_to_runner_payload_bytes_per_step=0.0,
                runner_to_sched_payload_bytes_per_step=0.0, decode_token_bytes_per_step=0.0,
                encode_ns_per_step=encode_ns, decode_ns_per_step=encode_ns / 2)


def test_no_ratio_of_what_the_single_process_case_does_not_do():
    """0.2 µs against 4.3 µs of 'encode' in a case that encodes nothing gave 'encode
    23.595': the ratio line, the comparison block and the report's pair table leave
    the single-process case's encode, decode and bytes out."""
    cases = [_single_process("send", 0, 200.0), _single_process("cached", 0, 4300.0),
             _single_process("send", 1, 210.0), _single_process("cached", 1, 4400.0)]
    (line,) = tables._ratio_lines("none", cases)
    assert line.startswith("  cached/send (none; ")
    assert line.split("): ", 1)[1] == (
        "tok/s 1.000 [1.000, 1.000], build 0.395 [0.395, 0.395], "
        "mean step 1.000 [1.000, 1.000]")
    (cmp,) = stats.compare_cases(cases)
    assert not {"encode_ns_per_step", "decode_ns_per_step",
                "sched_to_runner_payload_bytes_per_step",
                "runner_to_sched_payload_bytes_per_step"} & set(cmp["metrics"])
    assert "build_ns_per_step" in cmp["metrics"]
    text = tables.format_comparisons([cmp])
    assert "\nencode " not in text and "\ndecode " not in text and "s2r bytes" not in text


def _arm_case(arm: str, rep: int, tok_s: float) -> dict:
    """A single-process case of ``arm`` (its policy the arm's, less any ``'`` or
    ``+async``) with ``tok_s`` output tokens/s and the build and step of ``_summary``."""
    policy = arm.split("+")[0].rstrip("'")
    return dict(_single_process(policy, rep, 200.0), arm=arm, output_tokens_per_s=tok_s,
                case_id=f"num_running=4/{arm}/none#{rep}")


def test_aa_and_async_runs_print_their_ratio_lines_as_plain_runs_do():
    """--aa printed no send'/send line and --async-scheduling no cached+async/cached
    line; each is printed by the same function with the same phrase as cached/send."""
    aa = [_arm_case(arm, rep, tok + rep) for rep in range(3)
          for arm, tok in (("send", 100.0), ("send'", 110.0), ("cached", 120.0))]
    lines = tables._ratio_lines("none", aa)
    head = ("(none; paired by repetition: geometric mean of the per-repetition ratios "
            "[95 % Student-t interval]; 3 pairs): ")
    assert [ln.split(" (")[0] for ln in lines] == ["  cached/send", "  send'/send"]
    assert lines[1].startswith("  send'/send " + head)
    point, low, high = stats.paired_ratio([100, 101, 102], [110, 111, 112])
    assert lines[1].split("): ", 1)[1].startswith(
        f"tok/s {tables.ratio_text(point, low, high)}, ")
    asyn = [_arm_case(arm, rep, tok + rep) for rep in range(2)
            for arm, tok in (("send", 100.0), ("cached", 120.0), ("cached+async", 150.0))]
    lines = tables._ratio_lines("none", asyn)
    assert [ln.split(" (")[0] for ln in lines] == ["  cached/send", "  cached+async/cached"]
    point, low, high = stats.paired_ratio([120, 121], [150, 151])
    assert lines[1].startswith(
        "  cached+async/cached (none; paired by repetition: geometric mean of the "
        "per-repetition ratios [95 % Student-t interval]; 2 pairs): tok/s "
        + tables.ratio_text(point, low, high) + ", ")


def test_a_ratio_without_an_interval_names_no_interval_kind():
    """'[95 % Student-t interval]; 1 pair, no interval' named an interval it then said
    was not there: with one pair the label names the point alone, in the ratio line,
    the comparison block's first line and the throughput figure's caption."""
    from ipc_bench.report import blocks

    assert tables.ratio_line_head("cached", "msgpack", 1, False) == (
        "cached/send (msgpack; paired by repetition: geometric mean of the per-repetition "
        "ratios; 1 pair, no interval)")
    assert tables.ratio_line_head("cached", "msgpack", 2, True) == (
        "cached/send (msgpack; paired by repetition: geometric mean of the per-repetition "
        "ratios [95 % Student-t interval]; 2 pairs)")
    one = [_summary("send", 0, 50_000.0, 282700.0), _summary("cached", 0, 60_000.0, 231400.0)]
    title = tables.comparison_parts(stats.compare_cases(one)[0])[0]
    assert title == (
        "cached vs send  [num_running=4]  msgpack: cached/send paired by repetition: "
        "geometric mean of the per-repetition ratios; 1 pair; no verdict: the t-interval "
        "needs >= 2 pairs, have 1 (use --repeat 2 or more)")
    caption = blocks.caption("throughput", dict(
        series=[("send", "msgpack"), ("cached", "msgpack")],
        panels=["tokens/s", "cached/send"], repeated=False, method="sign"))
    assert "cached/send, paired by repetition: median of the per-repetition ratios; one " \
           "pair each, so no interval" in caption and "interval]" not in caption


def test_an_inconclusive_row_says_why_it_is_inconclusive():
    """A row whose unadjusted interval excludes 1 read just "inconclusive", as did one
    whose interval merely reaches beyond 1.1x either way: each now says which, and a line under
    the table says what the first means."""
    holm = stats.compare_cases(SUMMARIES)[0]
    noisy = stats.compare_cases([_summary("send", 0, 100_000.0, 282700.0),
                                 _summary("cached", 0, 70_000.0, 231400.0),
                                 _summary("send", 1, 43_600.0, 285000.0),
                                 _summary("cached", 1, 47_960.0, 230000.0)])[0]
    cells = {}
    for name, c in (("holm", holm), ("noisy", noisy)):
        _, _, rows, held = tables.comparison_parts(c)
        cells[name] = ({r[0]: r[-1] for r in rows}["out tok/s"], held)
    # [1.069, 1.429] excludes 1; p 0.034, Holm-adjusted 0.130: not significant
    # no line blaming the interval's width: [1.069, 1.429] lies wholly beyond +10 %
    assert cells["holm"] == ("inconclusive: not significant after Holm",
                             tables.INCONCLUSIVE_HOLM_NOTE)
    # summary.json records the same reason, with the unadjusted interval
    assert holm["metrics"]["output_tokens_per_s"]["verdict"] == (
        "inconclusive: not significant after Holm; the 95 % interval [+6.9, +42.9] % does "
        "not include 0 % but is unadjusted")
    # [0.050, 15.500] holds 1 and reaches far beyond 1.1x either way
    assert cells["noisy"][0] == "inconclusive: interval reaches beyond 1.1x either way"
    assert tables.INCONCLUSIVE_HOLM_NOTE == (
        "not significant after Holm: the ratio CI excludes 1 but is unadjusted "
        "(as are the diff CI and the first p); the verdict comes from the p adjusted over "
        "the comparison's timed metrics [in brackets], above 0.05: no significant "
        "difference; yet the interval reaches beyond 1.1x either way, so a difference of 10 % or "
        "more is not ruled out either: inconclusive")


def test_the_comparison_tables_paired_columns_name_their_per_pair_statistic():
    """The ratio column is the geometric mean (t) or the median (bootstrap, sign) of the
    per-pair ratios, the diff column the mean or median of the per-pair differences:
    neither is the ratio or difference of the arms' medians (283.9 and 230.7 for step
    mean here, the pairs' 282.7/231.4 and 285.0/230.0). The arm columns are each arm's
    geometric mean over the pairs [IQR], headed as the report's pair table heads them."""
    heads = {}
    for method in ("t", "bootstrap", "sign"):
        (c,) = stats.compare_cases(SUMMARIES, method=method)
        _, header, rows, _ = tables.comparison_parts(c)
        heads[method] = header
        assert [r[4] for r in rows][:1] == ["0.813"]  # the same figures, whatever the head
    assert heads["t"] == [
        "metric", "unit", "send (geometric mean) [IQR]", "cached (geometric mean) [IQR]",
        "cached/send (per-pair geomean)", "ratio CI", "send-cached (per-pair mean)",
        "diff CI", "p [Holm]", "verdict"]
    assert heads["bootstrap"][4:7] == heads["sign"][4:7] == [
        "cached/send (per-pair median)", "ratio CI", "send-cached (per-pair median)"]


def test_pair_table_caption_says_once_when_the_sign_test_cannot_reach_significance(
        monkeypatch):
    """The report's pair-table caption carries the block's line, once for a run whose
    comparisons all have 6 pairs under sign; none with 9 pairs or under t."""
    runs = {}
    monkeypatch.setattr(findings, "run_comparisons", lambda results: runs)
    for method, n, note in (("sign", 6, f" Verdicts: {SIGN_FLOOR_6}."), ("sign", 9, ""),
                            ("t", 6, "")):
        comparisons = stats.compare_cases(_pairs(n), method=method)
        runs.clear()
        runs.update(a=comparisons * 2, b=comparisons)
        assert blocks.verdict_floor_note(None) == note


def test_an_aa_finding_counts_the_tested_metrics_not_the_exact_bytes():
    """Six A/A pairs whose timed metrics move ±1 %: seven metrics were tested, the two
    byte counts (exact, no test) are not among them."""
    aa = []
    for c in _pairs(6):
        if c["policy"] == "send":
            odd = c["repetition"] % 2
            aa += [c, dict(c, arm="send'",
                           step_ns_mean=c["step_ns_mean"] * (1.01 if odd else 0.99),
                           output_tokens_per_s=c["output_tokens_per_s"] * (
                               0.99 if odd else 1.01))]
    (c,) = stats.compare_cases(aa)
    assert findings._comparison_finding(c, lambda w: "At 4 running requests") == (
        "At 4 running requests (msgpack), the A/A pair send' against send (one policy run "
        "twice) over 6 paired repetitions shows no significant difference in any of its 7 "
        "compared metrics, so the machine's noise alone gave no verdict: output tokens/s "
        "-0.01 % [-1.1, +1.2] %, mean step -0.01 % [-1.1, +1.2] %.")


# Three pairs whose step times are 4 to 6 % lower in cached (each pair's ratio 0.94,
# 0.95, 0.96): unadjusted p 0.014, interval [0.925, 0.975]; Holm over the 7 timed
# metrics (build's difference has the smallest p) makes it 6 x 0.014 = 0.082.
HOLM_SUMMARIES = [s for rep, (f, g) in enumerate(zip((0.94, 0.95, 0.96), (1.0, 1.02, 0.98)))
                  for s in (_summary("send", rep, 50_000.0, 300_000.0),
                            _summary("cached", rep, 50_000.0 * g, 300_000.0 * f))]


def test_a_row_whose_interval_excludes_1_says_holm_decided_its_verdict():
    """An interval within 1.1x either way that excludes 1 beside "no significant difference"
    read as a contradiction: the verdict names the adjustment, in summary.json's
    comparison as in the table, and the line under the table says why."""
    c = stats.compare_cases(HOLM_SUMMARIES)[0]
    m = c["metrics"]["step_ns_mean"]
    assert (m["verdict"], round(m["p_value"], 3), round(m["p_adjusted"], 3)) == (
        "not significant after Holm", 0.014, 0.082)
    assert f"[{m['ratio_ci_low']:.3f}, {m['ratio_ci_high']:.3f}]" == "[0.925, 0.975]"
    assert c["metrics"]["output_tokens_per_s"]["verdict"] == "no significant difference"
    _, _, rows, held = tables.comparison_parts(c)
    assert [r[-1] for r in rows] == [
        "not significant after Holm",
        "not significant after Holm",
        "no significant difference", "significant: cached 60.5 % lower than send",
        "no significant difference", "no significant difference",
        "not significant after Holm",
        "exact: cached 5.3 % lower than send", "exact: no difference"]
    assert held == (
        "not significant after Holm: the ratio CI excludes 1 but is unadjusted "
        "(as are the diff CI and the first p); the verdict comes from the p adjusted over "
        "the comparison's timed metrics [in brackets], above 0.05: no significant "
        "difference")
    # a summary.json written before this verdict recorded the plain one, and one written
    # before its present words "no significant difference after Holm adjustment": both
    # read the same
    for before in ("no significant difference",
                   "no significant difference after Holm adjustment"):
        old = dict(c, metrics={k: dict(v, verdict=before)
                               if v["verdict"] == "not significant after Holm" else v
                               for k, v in c["metrics"].items()})
        assert tables.comparison_parts(old) == tables.comparison_parts(c)
        assert stats.verdict_of(old["metrics"]["step_ns_mean"]) == m["verdict"]
    # with an inconclusive row of the same kind, the line says both once
    assert tables.holm_note([tables.INCONCLUSIVE_HOLM, stats.NOT_SIGNIFICANT_HOLM]) == (
        tables.HOLM_NOTE + "; in the inconclusive rows the interval also reaches beyond "
        "1.1x either way, so a difference of 10 % or more is not ruled out either")
    assert tables.holm_note(["no significant difference"]) == ""


def test_a_ratio_interval_prints_its_far_ends_bounded():
    """Two noisy repetitions gave a ratio interval [0.000, 5151328244741.149]: a ratio's
    end is never 0 and those digits are noise; ends beyond 1000 and 0.001 are bounded."""
    assert stats.ratio_interval(0.9204, 1.0123) == "[0.920, 1.012]"
    assert stats.ratio_interval(1.6e-13, 5151328244741.149) == "[<0.001, >1000]"
    assert stats.ratio_interval(0.001, 1000.0) == "[0.001, 1000.000]"
    assert stats.ratio_interval(0.0009, 999.9, digits=4) == "[<0.001, 999.9000]"
    assert stats.ratio_interval(0.92, 1.012, percent=True) == "[-8.0, +1.2] %"
    assert stats.ratio_interval(1e-13, 5e12, percent=True) == "[<-99.9, >+99900.0] %"
    assert tables.ratio_text(0.92, 1.6e-13, 5151328244741.149) == "0.920 [<0.001, >1000]"
    wild = [_summary("send", 0, 50_000.0, 300_000.0), _summary("cached", 0, 50_000.0, 3.0),
            _summary("send", 1, 50_000.0, 300_000.0),
            _summary("cached", 1, 50_000.0, 300_000_000.0)]
    c = stats.compare_cases(wild)[0]
    _, _, rows, _ = tables.comparison_parts(c)
    row = {r[0]: r for r in rows}["step mean"]
    assert row[4:6] == ["0.100", "[<0.001, >1000]"]
    assert stats.verdict_of(c["metrics"]["step_ns_mean"]) == (
        "inconclusive: the 95 % interval [<-99.9, >+99900.0] % reaches beyond 1.1x either way: too "
        "few repetitions or too noisy to tell a 10 % difference from none")


def test_an_interval_end_never_rounds_onto_the_null_it_is_not():
    """An upper end of 0.99999 printed 1.000 beside "significant" (or -0.0 % beside
    "does not include 0 %") read as an interval holding the null: such an end takes the
    decimals that show its side, up to 6, then a bound; the null itself prints as is."""
    assert stats.ratio_interval(0.812, 0.99999) == "[0.812, 0.99999]"
    assert stats.ratio_interval(1.00001, 1.2) == "[1.00001, 1.200]"
    assert stats.ratio_interval(0.9996, 1.0004) == "[0.9996, 1.0004]"
    assert stats.ratio_interval(0.9, 1.0) == "[0.900, 1.000]"
    assert stats.ratio_interval(1.0, 1.0, percent=True) == "[+0.0, +0.0] %"
    assert stats.ratio_interval(0.812, 1 - 4e-7, percent=True) == "[-18.8, -0.00004] %"
    assert stats.ratio_interval(0.995, 0.999, digits=2) == "[0.99, 0.999]"
    assert stats.ratio_interval(0.812, 1 - 1e-9) == "[0.812, <1]"
    assert stats.ratio_interval(1 + 1e-9, 1.2, percent=True) == "[>0, +20.0] %"
    assert stats.interval_end(-3e-6, 2, sign=True) == "-0.000003"
    assert stats.interval_end(0.0, 2, sign=True) == "+0.00"
    assert (stats.shown_end(0.9999, 2, 1.0), stats.shown_end(0.97, 2, 1.0),
            stats.shown_end(1 - 1e-9, 2, 1.0)) == (0.9999, 0.97, 1 - 1e-9)
    assert stats.holm_inconclusive_verdict(0.812, 1 - 4e-7) == (
        "inconclusive: not significant after Holm; the 95 % interval [-18.8, -0.00004] % "
        "does not include 0 % but is unadjusted")
    assert stats.inconclusive_verdict(0.812, 1.0) == (
        "inconclusive: the 95 % interval [-18.8, +0.0] % reaches beyond 1.1x either way: "
        "too few repetitions or too noisy to tell a 10 % difference from none")


def test_an_interval_end_never_prints_across_or_onto_the_noise_bands_edge():
    """-9.0887 % printed -9.1 beside "within noise" read as beyond the band's -9.09 %,
    and 1.1004 printed 1.10 as on its edge, within: an end gets the digits that show its
    side of the band's edges as printed (0.9091 and 1.1, -9.09 and +10 %), onto an
    edge only where it is that edge; beyond 6 decimals, a bound."""
    assert stats.ratio_interval(1 - 0.090887, 1.073, percent=True) == "[-9.089, +7.3] %"
    assert stats.ratio_interval(1 - 0.094, 1.055, percent=True) == "[-9.4, +5.5] %"
    assert stats.ratio_interval(0.9, 1.1004, percent=True) == "[-10.0, +10.04] %"
    assert stats.ratio_interval(0.9092, 1.1004) == "[0.9092, 1.1004]"
    assert stats.ratio_interval(0.9089, 1.0996) == "[0.909, 1.0996]"
    assert stats.ratio_interval(0.905, 1.1004, digits=2) == "[0.905, 1.1004]"
    assert stats.ratio_interval(0.9095, 1.05, digits=2) == "[0.91, 1.05]"
    assert stats.ratio_interval(1 / 1.1, 1.1) == "[0.9091, 1.100]"
    assert stats.ratio_interval(0.95, 1.1 + 1e-9) == "[0.950, >1.1]"
    # between the exact edge -9.0909... % and the printed -9.09 %: within, as the edge
    assert stats.interval_end(-9.0905, 2, sign=True, band="percent") == "-9.09"
    assert stats.interval_end(-9.0912, 2, sign=True, band="percent") == "-9.091"
    assert stats.interval_end(10.00004, 2, sign=True, band="percent") == "+10.00004"
    assert (stats.shown_end(1.1004, 2, 1.0, "ratio"), stats.shown_end(0.905, 2, 1.0, "ratio"),
            stats.shown_end(0.9095, 2, 1.0, "ratio")) == (1.1004, 0.905, 0.91)
    assert stats.inconclusive_verdict(0.95, 1.1004) == (
        "inconclusive: the 95 % interval [-5.0, +10.04] % reaches beyond 1.1x either way: "
        "too few repetitions or too noisy to tell a 10 % difference from none")


def test_the_comparison_block_prints_an_end_near_the_null_on_its_side():
    # cached 0.03 to 0.07 % below send each repetition: significant, and the interval,
    # [0.999, 1.000] at 3 decimals, prints its upper end 0.99970 as 0.9997
    ks = [0.9993, 0.9995, 0.9997, 0.9994, 0.9996]
    c = stats.compare_cases([s for rep, k in enumerate(ks) for s in (
        _summary("send", rep, 50_000.0, 282700.0),
        _summary("cached", rep, 50_000.0 * k, 282700.0))])[0]
    row = {r[0]: r for r in tables.comparison_parts(c)[2]}["out tok/s"]
    assert row == ["out tok/s", "tok/s", "50,000 [0]", "49,975 [10.0]", "0.999",
                   "[0.999, 0.9997]", "25.0", "[15.2, 34.8]", "0.002 [0.013]",
                   "significant: cached 0.1 % lower than send"]
    # steps 1 to 5 ns shorter: ratio ends of 0.99998 and 0.999996, difference ends of
    # 0.0010 and 0.0050 us (0.00 at 2 decimals) beside a verdict of Holm's adjustment,
    # the unadjusted interval excluding 1 as it prints; the points beside them, 0.99999
    # and 0.003 us, printed 1.000 and 0.00 on the null, show their side too
    c = stats.compare_cases([s for rep, d in enumerate([2, 4, 3, 5, 1]) for s in (
        _summary("send", rep, 50_000.0, 282700.0),
        _summary("cached", rep, 50_000.0, 282700.0 - d))])[0]
    row = {r[0]: r for r in tables.comparison_parts(c)[2]}["step mean"]
    assert row[4:] == ["0.99999", "[0.99998, 0.999996]", "0.003", "[0.001, 0.005]",
                       "0.013 [0.079]", "not significant after Holm"]


def test_a_point_never_rounds_onto_the_null_it_is_not():
    """Points beside intervals printed on the null their intervals exclude (``1.00x
    [1.00001, 1.00001]``, ``1.000 [0.99998, 0.999996]``, ``0.00`` beside ``[0.001,
    0.005]``) and a change of -0.02 % printed ``-0.0 %``: a point takes the digits that
    show its side of the null, as an interval end does; the null itself prints as is."""
    assert stats.point_text(1.000012, 2, 1.0) == "1.00001"
    assert stats.point_text(-0.02, 1, sign=True) == "-0.02"
    assert stats.point_text(0.004, 2) == "0.004"
    assert stats.point_text(1.0, 3, 1.0) == "1.000"
    assert stats.point_text(1 + 1e-9, 3, 1.0) == ">1"
    assert tables.ratio_text(0.99998, 0.99997, 0.999996) == "0.99998 [0.99997, 0.999996]"
    assert tables.ratio_text(1.000012) == "1.00001"
    assert tables.ratio_text(1.0, 1.0, 1.0) == "1.000 [1.000, 1.000]"
    assert tables._diff_point(4.0, 1e-3) == "0.004"
    assert tables._diff_point(-4.0, 1e-3) == "-0.004"
    assert tables._diff_point(0.0, 1e-3) == "0"
    assert tables._diff_point(30_830.0, 1e-3) == "30.8"
    assert findings._pct(0.9998) == "-0.02 %"
    assert findings._pct(1.134) == "+13.4 %"
    assert findings._pct(1.0) == "+0.0 %"


def test_a_diff_interval_that_parts_from_its_ratio_interval_is_explained():
    """Differences of 10, 11 and 12 tok/s are consistent (diff CI [8.5, 13.5] excludes
    0) while the ratios 0.5, 0.989 and 0.9999 are not (ratio CI holds 1): the verdict,
    from the ratios, says no difference beside a diff CI that says one; the line under
    the table says why, naming the row."""
    reps = [(20.0, 10.0), (1000.0, 989.0), (100_000.0, 99_988.0)]
    c = stats.compare_cases([s for rep, (send, cached) in enumerate(reps)
                             for s in (_summary("send", rep, send, 282700.0),
                                       _summary("cached", rep, cached, 282700.0))])[0]
    m = c["metrics"]["output_tokens_per_s"]
    assert (round(m["diff_ci_low"], 2), round(m["diff_ci_high"], 2)) == (8.52, 13.48)
    assert m["ratio_ci_low"] < 1 < m["ratio_ci_high"]
    assert stats.diff_disagrees(m)
    assert [k for k, v in c["metrics"].items() if stats.diff_disagrees(v)] == [
        "output_tokens_per_s"]
    _, _, rows, held = tables.comparison_parts(c)
    assert held.splitlines()[0] == tables.INCONCLUSIVE_NOTE  # [0.295, 2.120]: far too wide
    assert held.splitlines()[1] == (
        "diff CI and ratio CI disagree on out tok/s: both come from the same pairs, as "
        "separate intervals on different scales (the per-pair differences, the per-pair "
        "log ratios), and part where one pair lies far from the others; the verdict "
        "follows the ratio CI")
    assert stats.diff_disagrees(dict(m, diff_ci_low=None)) is False
    # SUMMARIES' intervals agree: no such line
    assert "disagree" not in tables.comparison_parts(stats.compare_cases(SUMMARIES)[0])[3]


def test_the_terminals_sub_tables_name_the_repetition_of_each_row():
    """With ``--repeat`` the replicated table's rows of one arm are told apart by their
    repetition, as the case table's are; with one repetition there is no ``rep``."""
    def case(policy, rep, sched_us):
        return dict(policy=policy, codec="replicated", transport="ipc", repetition=rep,
                    sched_to_runner_payload_bytes_per_step=18.0,
                    runner_to_sched_payload_bytes_per_step=24.0,
                    replica_scheduler_ns_per_step=sched_us * 1e3,
                    sched_cpu_ns_per_step=50_000.0)

    lines = tables.replica_lines([case("send", 0, 21.2), case("send", 1, 16.4)])
    assert [ln.split()[:3] for ln in lines[1:]] == [
        ["rep", "policy", "codec"], ["---", "------", "----------"],
        ["0", "send", "replicated"], ["1", "send", "replicated"]]
    assert lines[3].split()[-2:] == ["21.2", "50.0"]
    assert tables.replica_lines([case("send", 0, 21.2)])[1].split()[:2] == [
        "policy", "codec"]


def test_a_timed_replays_latencies_get_paired_ratios_in_the_terminal():
    """Under a timed replay's ratio line (its per-step ratios and tok/s withheld), the
    latencies' paired ratios: TTFT p50 cached/send 2.68/0.99 and 2.47/3.43, geometric
    mean sqrt(2.707 x 0.720) = 1.396; t(0.975, 1) = 12.706 on the logs' standard error
    0.662: [<0.001, >1000]."""
    send = [dict(ttft_ms_p50=0.99, ttft_ms_p99=10.16), dict(ttft_ms_p50=3.43, ttft_ms_p99=12.35)]
    cached = [dict(ttft_ms_p50=2.68, ttft_ms_p99=6.70), dict(ttft_ms_p50=2.47, ttft_ms_p99=8.90)]
    assert tables._latency_ratio_line(send, cached, "t") == [
        "    latency ratios (each its own interval, not adjusted for the others): TTFT p50 "
        "1.396 [<0.001, >1000], p99 0.689 [0.392, 1.211]"]
    assert tables._latency_ratio_line(send, cached, "sign") == [
        "    latency ratios (no interval): TTFT p50 1.714, p99 0.690"]  # medians
    assert tables._latency_ratio_line([{}], [{}], "t") == []


def test_an_arms_iqr_is_grouped_as_its_figure():
    # the comparison block printed 62,757 [10288]: the IQR, one figure in its brackets,
    # takes the thousands separators its arm's figure has
    m = {"baseline_geomean": 62_757.0, "baseline_iqr": 10_288.0,
         "treatment_geomean": 230.0, "treatment_iqr": 12.3}
    assert tables._arm_cell(m, "baseline", 1.0) == "62,757 [10,288]"
    assert tables._arm_cell(m, "treatment", 1.0) == "230.0 [12.3]"
