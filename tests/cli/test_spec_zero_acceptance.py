"""``--num-spec-tokens 0,2 --spec-acceptance 0.5``: the acceptance is the K = 2 cases'
only. The K = 0 cases draft nothing, so their model config stays the plain case's
(the default ``spec_acceptance``, 0.7) byte for byte, in the run and in the metadata
that ``summary.json`` records, where it once recorded 0.5 for them."""

from __future__ import annotations

from ipc_bench.cli.execute import _model_metadata
from ipc_bench.cli.run import with_spec_decoding
from ipc_bench.harness.scenario import ScenarioOptions, discover


def _cases():
    return discover()["decode-steady"].cases(ScenarioOptions(
        num_running=[4], codecs=["msgpack"], policies=["send"], single_process=False))


def test_k0_keeps_the_plain_model_and_k2_takes_the_acceptance():
    plain = _cases()
    cases = with_spec_decoding(plain, [0, 2], 0.5)
    assert [(c.scheduler.num_spec_tokens, c.model.spec_acceptance) for c in cases] == [
        (0, 0.7), (2, 0.5)]
    assert cases[0].model == plain[0].model
    assert _model_metadata(cases[0].model) == _model_metadata(plain[0].model)
    assert _model_metadata(cases[1].model)["spec_acceptance"] == 0.5


def test_without_an_acceptance_every_k_keeps_the_default():
    cases = with_spec_decoding(_cases(), [0, 2], None)
    assert [c.model.spec_acceptance for c in cases] == [0.7, 0.7]
