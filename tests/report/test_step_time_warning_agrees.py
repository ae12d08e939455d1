"""A step-time case's off-nominal warnings say its shares are withheld, as its table
(``-*``) and share line withhold them, where they said the shares were "of the measured
step"; a decode-steady fixed-step case, whose shares are kept, still says that. Where
send's SchedulerOutput path cost at one B and codec changes by 1.5x or more between
step times, both resolved from 0 with intervals apart (a loaded 2-core run: 86 µs at
2 ms, 172 µs at 5 ms, msgpack at 256), the table and the findings say the cost per step
depends on the step's length there."""
from __future__ import annotations

import pandas as pd

from ipc_bench.analysis.send_cost import (STEP_TIME_WITHHELD, off_nominal_warning,
                                          whole_step_warning)
from ipc_bench.report.findings import _step_time_findings
from ipc_bench.scenarios.step_time import report

LENGTH = ("send's SchedulerOutput path cost per step changed with the step time at the "
          "same B and codec (msgpack at B = 256: 87.0 µs [74.3, 99.7] at 2 ms, 174.0 µs "
          "[148.6, 199.4] at 5 ms): the "
          "messages are the same, so on this machine the cost per step depends on the "
          "step's length, not on the messages alone, and a share at one step time does "
          "not carry to another.")


def _case(policy, b, step_ns, s2r_ns, forward_ns, step_time_ms, rep=0):
    return dict(scenario="step-time", complete=True, num_steps=200,
                step_time_ms=step_time_ms, num_running=b, codec="msgpack", repetition=rep,
                policy=policy, case_id=f"{policy}-{b}-{step_time_ms}-{rep}",
                fixed_step_ms=step_time_ms, step_ns_median=step_ns,
                s2r_build_encode_decode_ns_median=s2r_ns,
                runner_forward_ns_median=forward_ns,
                workload=f"num_running={b},step_time_ms={step_time_ms:g}")


def test_the_warnings_say_the_shares_are_withheld_as_the_table_does():
    assert STEP_TIME_WITHHELD == ("its shares are withheld (-* in the step-time table): "
                                  "the step it measured is not the nominal one")
    cached = _case("cached", 256, 3_410_000.0, 40_000.0, 2_050_000.0, 2.0)
    assert whole_step_warning(cached) == (
        "fixed step 2 ms: the whole step ran a median 3.41 ms (+70 %), more than 10 % + "
        "1.02 ms (control plane at B = 256) over nominal: a process was descheduled "
        "outside the runner's wait; its shares are withheld (-* in the step-time table): "
        "the step it measured is not the nominal one")
    late = _case("send", 16, 17_700_000.0, 4_000.0, 17_600_000.0, 5.0)
    assert off_nominal_warning(late) == (
        "fixed step 5 ms ran a median 17.6 ms (+252 %): the runner was descheduled; its "
        "shares are withheld (-* in the step-time table): the step it measured is not "
        "the nominal one")
    # the table withholds both shares of that row, as the warning says
    summaries = [cached, _case("send", 256, 3_500_000.0, 126_000.0, 2_050_000.0, 2.0)]
    text = report(summaries)
    cells = [line.split() for line in text.splitlines()]
    assert ["2", "256", "msgpack", "3.41!", "90.0", "-*", "86.00", "-*"] in cells
    # decode-steady with --model fixed-step keeps its shares, of the measured step
    steady = dict(late, scenario="decode-steady", workload="num_running=16")
    assert off_nominal_warning(steady).endswith("; its shares are of the measured step")


def test_a_path_cost_that_moves_with_the_step_length_is_said_where_the_figures_are():
    summaries = [_case("cached", 256, 2_500_000.0, 40_000.0, 2_050_000.0, 2.0),
                 _case("send", 256, 2_600_000.0, 126_000.0, 2_050_000.0, 2.0),
                 _case("cached", 256, 5_700_000.0, 50_000.0, 5_100_000.0, 5.0),
                 _case("send", 256, 5_900_000.0, 222_000.0, 5_100_000.0, 5.0)]
    # two repetitions, so that each path cost has an interval
    summaries += [dict(_case(c["policy"], 256, c["step_ns_median"],
                             c["s2r_build_encode_decode_ns_median"]
                             + (2_000.0 if c["step_time_ms"] == 2.0 else 4_000.0)
                             * (c["policy"] == "send"),
                             c["runner_forward_ns_median"], c["step_time_ms"], rep=1))
                  for c in summaries]
    text = report(summaries)
    lines = text.splitlines()
    assert LENGTH in lines
    assert lines.index(LENGTH) == 6  # under the table: blank, title, header, rule, 2 rows
    findings = _step_time_findings(pd.DataFrame(summaries))
    assert findings[-2] == "S" + LENGTH[1:]
    # within 1.5x: no line
    summaries[3]["s2r_build_encode_decode_ns_median"] = 168_000.0
    summaries[7]["s2r_build_encode_decode_ns_median"] = 168_000.0  # 118 µs, 1.36x
    assert not any("changed with the step time" in x
                   for x in report(summaries).splitlines())
