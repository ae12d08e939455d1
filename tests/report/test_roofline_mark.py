"""A roofline ratio below 1 (faster than a lower bound: the start-up figures
underestimated the device) is marked ``!`` and explained, not clamped, in the case
tables, decode_step_check's and gpu_check's."""

from __future__ import annotations

from ipc_bench.report.tables import ROOFLINE_BELOW_ONE_NOTE, model_time_lines
from script_module import load_script

NOTE = ("!: x roofline below 1, faster than the roofline, which is meant as a lower bound: "
        "its inputs, the copy bandwidth and matmul rate measured once at start-up "
        "(roofline.measure_device_figures), underestimated the device (e.g. measured while "
        "other work loaded it); the ratio is shown as measured, not clamped")


def _case(ratio):
    return dict(scenario="s", workload="w", policy="send", codec="msgpack", transport="ipc",
                runner_forward_ns_per_step=1e6, roofline_ns_per_step=2e6,
                compute_to_roofline_ratio=ratio)


def test_case_table_marks_a_ratio_below_one():
    assert ROOFLINE_BELOW_ONE_NOTE == NOTE
    lines = model_time_lines([_case(0.53), _case(1.25)])
    assert lines[-3:] == ["  send    msgpack  ipc              1.00         2.00       0.53!",
                          "  send    msgpack  ipc              1.00         2.00        1.25",
                          f"  {NOTE}"]
    assert NOTE not in "\n".join(model_time_lines([_case(1.0)]))


def test_decode_step_check_marks_a_ratio_below_one():
    dsc = load_script("decode_step_check")
    row = dict(config="gather", num_running=3, bucket=4, step_ns=1e6, gpu_busy_ns=None,
               host_ns=None, roofline_ns=2e6, x_roofline=0.53, tokens=[1])
    assert dsc.format_rows([row]).splitlines()[1:] == [
        "gather        3       4    1.000       -        -               -        2.000       "
        "0.53!       100.0%",
        NOTE]
    assert NOTE not in dsc.format_rows([dict(row, x_roofline=1.5)])


def test_gpu_check_marks_a_ratio_below_one():
    gc = load_script("gpu_check")
    assert gc.case_rows([dict(compute_to_roofline_ratio=0.53)])[0][12] == "0.53!"
    assert gc.case_rows([dict(compute_to_roofline_ratio=2.0)])[0][12] == "2.00"
