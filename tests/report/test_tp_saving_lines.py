"""The tp-broadcast saving figure draws the bytes that reach the N ranks together beside
the bytes written once (XPUB's grow with N, a ring's do not), and transports whose
lines are equal are drawn as one line naming each, where their legend named three
colours of which one showed."""

from __future__ import annotations

from ipc_bench.report import blocks, plots
from test_withheld_figures import results_of
from tp_figure_cases import drawn_lines, reaching, tp_cases


def _cases() -> list[dict]:
    """send and cached at N = 1, 2, 4 over ipc and shm-block, and shm at N = 1 (a
    spinning ring's one rank): 20 bytes more written once by send everywhere; 20 x N
    reaching the ranks over ipc, 20 over a ring."""
    def figures(case: dict) -> dict:
        written = 402.0 if case["policy"] == "send" else 382.0
        return dict(tp_s2r_bytes_written_per_step=written,
                    tp_s2r_wire_bytes_all_ranks_per_step=reaching(case, written))
    return tp_cases(figures, 1, transports=(("ipc", (1, 2, 4)), ("shm", (1,)),
                                            ("shm-block", (1, 2, 4))))


def test_equal_lines_are_one_line_and_the_ranks_bytes_have_a_panel():
    fig = plots.tp_saving_figure(results_of(_cases()))
    assert [ax.get_title() for ax in fig.axes] == [
        "bytes the scheduler writes (once)", "bytes reaching the N ranks, all together",
        "the N ranks' decodes, summed", "slowest rank's receive-to-ready (median)"]
    written, reaching = fig.axes[0], fig.axes[1]
    assert drawn_lines(written) == {
        "ipc = shm (N = 1) = shm-block / msgpack": ([1, 2, 4], [20.0, 20.0, 20.0])}
    assert drawn_lines(reaching) == {
        "ipc = shm (N = 1) / msgpack": ([1, 2, 4], [20.0, 40.0, 80.0]),
        "shm-block / msgpack": ([1, 2, 4], [20.0, 20.0, 20.0])}
    # each panel's legend names its own lines
    assert [t.get_text() for t in reaching.get_legend().get_texts()] == [
        "ipc = shm (N = 1) / msgpack", "shm-block / msgpack"]
    # each line in its first transport's colour, as where it is drawn alone
    colours = {ln.get_label(): ln.get_color() for ln in reaching.lines}
    assert colours["ipc = shm (N = 1) / msgpack"] != colours["shm-block / msgpack"]
    what = plots.drawn(fig)
    assert what["merged"] == {
        "bytes the scheduler writes (once)": [["ipc", "shm (N = 1)", "shm-block"]],
        "bytes reaching the N ranks, all together": [["ipc", "shm (N = 1)"]]}
    caption = blocks.caption("tp_saving", what)
    assert ("the bytes that reach the N ranks all together "
            "(tp_s2r_wire_bytes_all_ranks_per_step: the ring's chunk once, read by every "
            "rank; XPUB's frame N times, one per connection)") in caption
    assert (" Transports whose lines are equal at every N they share (of one workload "
            "and codec) are drawn as one line in the first one's colour, its label naming "
            "each (a transport run at fewer Ns with them): bytes the scheduler writes "
            "(once): ipc = shm (N = 1) = shm-block / msgpack; bytes reaching the N ranks, "
            "all together: ipc = shm (N = 1) / msgpack.") in caption


def test_lines_that_differ_stay_apart():
    cases = [dict(c, tp_s2r_bytes_written_per_step=c["tp_s2r_bytes_written_per_step"] + 3)
             if c["transport"] == "ipc" and c["policy"] == "send" else c for c in _cases()]
    fig = plots.tp_saving_figure(results_of(cases))
    assert drawn_lines(fig.axes[0]) == {
        "ipc / msgpack": ([1, 2, 4], [23.0, 23.0, 23.0]),
        "shm (N = 1) = shm-block / msgpack": ([1, 2, 4], [20.0, 20.0, 20.0])}
