"""The codec time figure draws send's markers small and filled over the other arms'
larger hollow ones (``plots.bytes_marker``); its caption says so where send is drawn
beside another arm, and not where it is not."""

from __future__ import annotations

import pytest

from ipc_bench.analysis.results import load
from ipc_bench.cli import main as cli_main
from ipc_bench.report import blocks, plots

HEAD = ("Serializer time per step (mean over counted steps, repetitions pooled), both "
        "directions summed (the scheduler's SchedulerOutput and the runner's "
        "ModelRunnerOutput), one panel per codec (msgpack), one line per arm: ")
MARKERS = (" `send`'s markers are small and filled, drawn over the other arms' larger "
           "hollow ones, so where an arm's time equals `send`'s both show.")


def _caption(out, *extra: str) -> tuple[str, object]:
    assert cli_main(["--scenario", "decode-steady", "--steps", "8", "--warmup-steps", "2",
                     "--codecs", "msgpack", "--no-floor", "--no-single-process",
                     "--num-running", "2", *extra, "--output", str(out)]) == 0
    with plots.report_style():
        fig = plots.codec_time_per_step(load(out).by_arm())
    return blocks.caption("codec_time_per_step", plots.drawn(fig)), fig


def test_send_beside_cached_names_its_filled_markers(tmp_path):
    text, fig = _caption(tmp_path / "both")
    assert text == HEAD + "`send` and `cached`." + MARKERS
    lines = {ln.get_label(): ln for ln in fig.axes[0].lines}
    assert lines["send"].get_markerfacecolor() != "white"
    assert lines["cached"].get_markerfacecolor() == "white"


@pytest.mark.parametrize("extra, arms", [(("--policies", "send"), "`send`"),
                                         (("--async-scheduling",), "`cached` and `cached+async`")])
def test_without_send_beside_another_arm_no_marker_words(tmp_path, extra, arms):
    text, _ = _caption(tmp_path / "one", *extra)
    assert text.startswith(HEAD + arms + ".")
    assert "markers" not in text
