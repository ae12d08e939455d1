"""The tp-broadcast per-step figure draws each workload (``--num-running``) apart: a run
at 16 and 64 running requests drew the mean of their bytes written once (2,500 B for
1,000 and 4,000 over ipc / msgpack / cached) and of their replica scheduler times, where
each workload has its own line, and the caption says what a line is."""

from __future__ import annotations

from ipc_bench.report import blocks, plots
from test_withheld_figures import results_of
from tp_figure_cases import drawn_lines, tp_cases

#: bytes written once per step by cached, per workload (running requests); send: +20 %
WRITTEN = {16: 1000.0, 64: 4000.0}


def _cases(codec: str = "msgpack") -> list[dict]:
    def figures(case: dict) -> dict:
        b, n = case["num_running"], case["tp"]
        return dict(tp_s2r_bytes_written_per_step=WRITTEN[b] * (
                        1.2 if case["policy"] == "send" else 1.0),
                    tp_replica_scheduler_ns_all_ranks_per_step=b * 1_000.0 * n
                    if codec == "replicated" else None)
    return tp_cases(figures, 16, codecs=(codec,), num_running=tuple(WRITTEN))


def test_each_workload_has_its_own_bytes_line():
    fig = plots.tp_per_step_figure(results_of(_cases()))
    assert drawn_lines(fig.axes[0]) == {
        "ipc / msgpack / send / 16 running": ([1, 2], [1200.0, 1200.0]),
        "ipc / msgpack / cached / 16 running": ([1, 2], [1000.0, 1000.0]),
        "ipc / msgpack / send / 64 running": ([1, 2], [4800.0, 4800.0]),
        "ipc / msgpack / cached / 64 running": ([1, 2], [4000.0, 4000.0])}
    markers = {ln.get_label(): ln.get_marker() for ln in fig.axes[0].lines}
    assert markers["ipc / msgpack / send / 16 running"] \
        != markers["ipc / msgpack / send / 64 running"]
    what = plots.drawn(fig)
    assert what["workloads"] == [16, 64]
    assert blocks.caption("tp_per_step", what).endswith(
        ". No case ran `--codecs replicated`, so the right panel is empty. A line is one "
        "transport, codec and policy at one running-request count (16, 64; \"16 running\" "
        "in a label): workloads are drawn apart, never averaged together.")


def test_each_workload_has_its_own_replica_scheduler_lines():
    fig = plots.tp_per_step_figure(results_of(_cases("replicated")))
    assert drawn_lines(fig.axes[1]) == {
        "ipc / send / 16 running: N ranks": ([1, 2], [16.0, 32.0]),
        "ipc / send / 16 running: one rank": ([1, 2], [16.0, 16.0]),
        "ipc / cached / 16 running: N ranks": ([1, 2], [16.0, 32.0]),
        "ipc / cached / 16 running: one rank": ([1, 2], [16.0, 16.0]),
        "ipc / send / 64 running: N ranks": ([1, 2], [64.0, 128.0]),
        "ipc / send / 64 running: one rank": ([1, 2], [64.0, 64.0]),
        "ipc / cached / 64 running: N ranks": ([1, 2], [64.0, 128.0]),
        "ipc / cached / 64 running: one rank": ([1, 2], [64.0, 64.0])}
    assert blocks.caption("tp_per_step", plots.drawn(fig)).endswith(
        "what the machine pays. A line is one transport, codec and policy (the replica "
        "scheduler's: one transport and policy) at one running-request count (16, 64; "
        "\"16 running\" in a label): workloads are drawn apart, never averaged together.")


def test_one_workload_keeps_its_labels_and_caption():
    fig = plots.tp_per_step_figure(results_of([c for c in _cases() if c["num_running"] == 64]))
    assert drawn_lines(fig.axes[0]) == {"ipc / msgpack / send": ([1, 2], [4800.0, 4800.0]),
                                   "ipc / msgpack / cached": ([1, 2], [4000.0, 4000.0])}
    assert plots.drawn(fig)["workloads"] == []
    assert blocks.caption("tp_per_step", plots.drawn(fig)).endswith(
        "so the right panel is empty.")


def test_a_legend_of_more_than_twelve_lines_goes_under_its_panel():
    cases = [dict(c, transport=t, case_id=f"{c['case_id']}-{t}")
             for codec in ("msgpack", "pickle") for c in _cases(codec)
             for t in ("ipc", "shm", "shm-block")]
    fig = plots.tp_per_step_figure(results_of(cases))
    assert len(fig.axes[0].get_legend().get_texts()) == 24
    assert fig.get_size_inches().tolist() == [13.0, 7.0]  # 4.6 in + 12 rows of 0.2 in
    fig.canvas.draw()
    legend = fig.axes[0].get_legend().get_window_extent()
    assert legend.y1 < fig.axes[0].get_window_extent().y0
    assert legend.y0 >= 0.0  # inside the figure
    one = plots.tp_per_step_figure(results_of([c for c in cases if c["num_running"] == 16]))
    assert one.get_size_inches().tolist() == [13.0, 4.6]  # 12 lines: in the panel
