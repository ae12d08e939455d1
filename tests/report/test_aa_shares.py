"""An A/A pair (``--aa``: one policy run twice) gives its SchedulerOutput path share
and net share in the report, by the computation send's against cached's are read by
(``send_cost.step_shares``, ``path_difference``), so that a reader sees what identical
code gives on this machine; an interval that excludes 0 there is said plainly."""
from ipc_bench.cli import main as cli_main
from ipc_bench.report.findings import (AA_SHARE_EXCLUDES_0, AA_SHARE_HOLDS_0,
                                       _aa_share_words)

AA = dict(treatment="send'", baseline="send")
BASE = [1_000_000.0, 1_010_000.0, 990_000.0, 1_000_000.0, 1_000_000.0]


def _pairs(diffs):
    def rec(arm, rep, d):
        return dict(arm=arm, repetition=rep, step_ns_median=BASE[rep] + d,
                    s2r_build_encode_decode_ns_median=200_000.0 + d,
                    s2r_net_ns_median=260_000.0 + d)
    return [(rec("send'", r, d), rec("send", r, 0.0)) for r, d in enumerate(diffs)]


def test_an_aa_share_excluding_0_is_said_plainly():
    # identical code, send' 33 µs per step quicker: send - send' is +33 µs, 3.41 % of
    # the step of send' (about 0.967 ms), as the comparison table's send-send' column
    assert _aa_share_words(AA, _pairs([-30_000.0, -35_000.0, -32_000.0, -28_000.0,
                                       -40_000.0])) == (
        " A/A shares, by the computation of send's against cached's: the SchedulerOutput "
        "path, send against send', costs 33.00 µs per step more than that of send', 3.41 % "
        "of the step of send' (send - send': [+2.80, +4.03] %, 95 % Student-t interval); "
        "the net share (the path plus the runner's token-id bookkeeping), send against "
        "send', costs 33.00 µs per step more than that of send', 3.41 % of the step of "
        "send' (send - send': [+2.80, +4.03] %, 95 % Student-t interval). That is, for "
        "identical code, an "
        "interval that excludes 0: this machine's noise exceeds what this run's share "
        "intervals claim, so a send against cached share interval excluding 0 by as little "
        "does not establish a cost here.")
    assert AA_SHARE_EXCLUDES_0.startswith("for identical code, an interval that excludes 0")


def test_an_aa_share_holding_0_is_what_the_machine_alone_gives():
    words = _aa_share_words(AA, _pairs([-3_000.0, 2_000.0, 1_000.0, -1_000.0, 500.0]))
    assert words == (
        " A/A shares, by the computation of send's against cached's: the SchedulerOutput "
        "path, send against send', is within noise of that of send': +0.10 µs per step, "
        "+0.01 % of the step of send' (send - send': [-0.23, +0.25] %, 95 % Student-t "
        "interval); the net share (the path plus the runner's token-id bookkeeping), send "
        "against send', is within noise of that of send': +0.10 µs per step, +0.01 % of "
        "the step of send' (send - send': [-0.23, +0.25] %, 95 % Student-t interval). This "
        "is " + AA_SHARE_HOLDS_0 + ".")
    # no path figures: nothing
    assert _aa_share_words(AA, [({"step_ns_median": 1.0}, {"step_ns_median": 1.0})]) == ""


def test_an_aa_runs_report_gives_its_shares(tmp_path):
    out = tmp_path / "aa"
    assert cli_main(["--scenario", "decode-steady", "--num-running", "16", "--steps", "30",
                     "--warmup-steps", "5", "--codecs", "msgpack", "--policies", "send",
                     "--aa", "--repeat", "3", "--no-floor", "--no-single-process",
                     "--output", str(out)]) == 0
    assert cli_main(["report", str(out), "--no-figures", "--output",
                     str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    (line,) = [x for x in md.splitlines() if "the A/A pair send' against send" in x]
    assert (" A/A shares, by the computation of send's against cached's: the "
            "SchedulerOutput path, send against send', ") in line
    assert "the net share (the path plus the runner's token-id bookkeeping), send " \
        "against send', " in line
    # the comparison table's difference column has the same orientation
    assert "| send-send' (per-pair mean) |" in md
