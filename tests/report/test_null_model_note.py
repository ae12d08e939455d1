"""A report of null-model cases says that no model ran: their step is the harness's
own, so tokens/s is not a serving throughput."""
import pandas as pd

from ipc_bench.report.blocks import _null_block
from ipc_bench.report.tables import null_note

NOTE = ("NULL MODEL: {} of {} cases ran the null model (`--model null`, the default): no "
        "model computed their steps, so each step is the harness's own work (its "
        "scheduler, its messages and the null model's sampler, on this machine's CPU), "
        "and step times and tokens/s are the harness's, not a serving throughput. A "
        "model's step comes with `--model emulated` (a GPU roofline, no GPU needed) or "
        "`--model torch`.")


def _cases(*models):
    return [dict(policy=p, codec="msgpack", model=m) for m in models for p in ("send", "cached")]


def test_null_cases_are_counted_and_said_to_be_the_harness_s_step():
    assert null_note(_cases("null")) == NOTE.format(2, 2)
    assert null_note(_cases("null", "emulated")) == NOTE.format(2, 4)
    assert _null_block(pd.DataFrame(_cases("null", "torch"))) == ("note", NOTE.format(2, 4))


def test_no_note_without_a_null_case():
    assert null_note(_cases("emulated", "torch", "fixed-step")) is None
    assert null_note([dict(policy="send", codec="msgpack")]) is None
    assert _null_block(pd.DataFrame(_cases("emulated"))) is None
    assert _null_block(pd.DataFrame([dict(policy="send")])) is None
    assert _null_block(pd.DataFrame()) is None
