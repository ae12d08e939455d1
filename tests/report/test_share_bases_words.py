"""The summary table's "Bases" caption words the share as ``send_cost.mean_share``
computes it: the mean of the pairs' differences over the mean of cached's steps, not
the mean of the per-repetition shares (the two differ: below, 15.00 % against 13.33 %)."""
from ipc_bench.analysis.send_cost import step_shares
from ipc_bench.report import findings
from tests.report.test_findings_summary import _results

CONTEXT = "emulated_context_tokens_per_request_mean"


def test_the_bases_say_the_mean_difference_over_the_mean_step():
    # differences 10 and 50 µs over cached steps 100 and 300 µs: mean(d) / mean(c) =
    # 30 / 200 = 15.00 %, not the per-pair shares' mean (10 + 16.67) / 2 = 13.33 %
    shares = step_shares([10_000.0, 50_000.0], [10_000.0, 50_000.0],
                         [100_000.0, 300_000.0], "t", "median")
    assert round(shares.whole.share, 4) == 0.15
    res = _results()
    assert findings._summary_basis(res.cases, [], {("num_running=4", "msgpack"): shares}) \
        == ("Bases: shares, send - cached in each case's median step and in its "
            "SchedulerOutput path's per-step median, over cached's step; over "
            "repetitions, the mean of the differences over the mean of cached's steps, "
            "not the mean of the per-repetition shares.")
    median = step_shares([10_000.0, 50_000.0], [10_000.0, 50_000.0],
                         [100_000.0, 300_000.0], "sign", "median")
    assert findings._summary_basis(res.cases, [], {("num_running=4", "msgpack"): median}) \
        .endswith("; over repetitions, the median of the differences over the median of "
                  "cached's steps, not the median of the per-repetition shares.")


def test_the_caption_gives_the_emulated_context_of_the_shares_steps():
    """A reader quoting an emulated share needs the context its model time was
    computed for: the caption under the summary table gives it per workload."""
    res = _results()
    res.cases["emulated"] = True
    res.cases[CONTEXT] = [391.0, 391.5] * (len(res.cases) // 2)
    items = findings.findings(res)
    assert items.caption.endswith(
        " Emulated steps at a mean context of 391.2 tokens per request (num_running=4).")
    shares = {("num_running=4", "msgpack"): None, ("num_running=16", "msgpack"): None}
    res.cases.loc[0, "workload"] = "num_running=16"
    assert findings._emulated_context_note(res.cases, shares) == (
        "Emulated steps at a mean context of 391.3 tokens per request (num_running=4), "
        "391.0 (num_running=16).")
    # a run of another model, or one before the context was recorded: nothing
    res.cases["emulated"] = False
    assert findings._emulated_context_note(res.cases, shares) == ""
