"""The tp-broadcast saving figure draws each workload (``--num-running``) apart: a run at
16 and 64 running requests drew their mean (200 B written once, 200 -> 400 B to the
ranks over ipc) where each workload saves 80 / 320 B (ipc: 80 -> 160, 320 -> 640).
Equal lines merge only within one workload and codec, and the caption names the codec
and workload of each merged line, as the legend does."""

from __future__ import annotations

from ipc_bench.report import blocks, plots
from test_withheld_figures import results_of
from tp_figure_cases import drawn_lines, reaching, tp_cases

#: send - cached bytes written once per workload (running requests)
SAVED = {16: 80.0, 64: 320.0}


def _cases(codecs=("msgpack",)) -> list[dict]:
    def figures(case: dict) -> dict:
        b = case["num_running"]
        written = 1000.0 * b / 16 + (SAVED[b] if case["policy"] == "send" else 0.0)
        return dict(tp_s2r_bytes_written_per_step=written,
                    tp_s2r_wire_bytes_all_ranks_per_step=reaching(case, written))
    return tp_cases(figures, 1, transports=(("ipc", (1, 2)), ("shm-block", (1, 2))),
                    codecs=codecs, num_running=tuple(SAVED))


def test_each_workload_has_its_own_lines():
    fig = plots.tp_saving_figure(results_of(_cases()))
    written, reaching = fig.axes[0], fig.axes[1]
    assert drawn_lines(written) == {
        "ipc = shm-block / msgpack / 16 running": ([1, 2], [80.0, 80.0]),
        "ipc = shm-block / msgpack / 64 running": ([1, 2], [320.0, 320.0])}
    assert drawn_lines(reaching) == {
        "ipc / msgpack / 16 running": ([1, 2], [80.0, 160.0]),
        "shm-block / msgpack / 16 running": ([1, 2], [80.0, 80.0]),
        "ipc / msgpack / 64 running": ([1, 2], [320.0, 640.0]),
        "shm-block / msgpack / 64 running": ([1, 2], [320.0, 320.0])}
    # the two workloads' lines of one transport differ in marker
    markers = {ln.get_label(): ln.get_marker() for ln in reaching.lines}
    assert markers["ipc / msgpack / 16 running"] != markers["ipc / msgpack / 64 running"]
    what = plots.drawn(fig)
    assert what["workloads"] == [16, 64]
    caption = blocks.caption("tp_saving", what)
    assert (" A line is one transport and codec at one running-request count (16, 64; "
            "\"16 running\" in a label): workloads are drawn apart, never averaged "
            "together.") in caption
    assert ("(a transport run at fewer Ns with them): bytes the scheduler writes (once): "
            "ipc = shm-block / msgpack / 16 running, ipc = shm-block / msgpack / 64 "
            "running.") in caption


def test_lines_of_two_workloads_equal_at_every_n_are_not_merged():
    cases = [dict(c, tp_s2r_bytes_written_per_step=c["tp_s2r_bytes_written_per_step"]
                  - (240.0 if c["policy"] == "send" and c["num_running"] == 64 else 0.0))
             for c in _cases()]  # 64 running saves 80 too
    fig = plots.tp_saving_figure(results_of(cases))
    assert drawn_lines(fig.axes[0]) == {
        "ipc = shm-block / msgpack / 16 running": ([1, 2], [80.0, 80.0]),
        "ipc = shm-block / msgpack / 64 running": ([1, 2], [80.0, 80.0])}


def test_the_caption_names_each_merged_line_s_codec():
    cases = [c for c in _cases(("msgpack", "pickle")) if c["num_running"] == 16]
    what = plots.drawn(plots.tp_saving_figure(results_of(cases)))
    assert what["workloads"] == []
    assert what["merged_labels"] == {
        "bytes the scheduler writes (once)": ["ipc = shm-block / msgpack",
                                              "ipc = shm-block / pickle"]}
    caption = blocks.caption("tp_saving", what)
    assert "A line is one transport" not in caption
    assert ("(a transport run at fewer Ns with them): bytes the scheduler writes (once): "
            "ipc = shm-block / msgpack, ipc = shm-block / pickle.") in caption
