"""With ``--frontend`` the terminal's frontend table (``tables.frontend_lines``, printed
at the end of a run) showed ``0`` in ``s2r B`` and ``r2s B`` on a single-process row,
where the report's frontend table shows ``-``: the single process sends no scheduler
<-> runner message, so it has no such bytes, not zero of them. The terminal shows
``-`` there too, in every column of what the codec does not perform
(``stats.performed``), and says so in the head line with a pair or without one; the
columns it does have (``fe B``, ``control B``, ``fe %``, the µs) keep their figures."""

from __future__ import annotations

from ipc_bench.report.tables import frontend_lines
from test_frontend_difference_column import ONE

HEAD = ("  frontend hop (EngineCoreOutputs, msgpack) beside the scheduler <-> runner hop, "
        "payload bytes and µs per counted step (fe enc: scheduler, fe dec: frontend; "
        "control = s2r + r2s + fe; - on a single-process row, which has no s2r or r2s "
        "message):")


def test_single_process_rows_without_a_pair_dash_their_scheduler_runner_bytes():
    alone = {k: v for k, v in ONE.items() if not k.startswith("send_saving")}
    assert "\n".join(frontend_lines([dict(alone, policy="send"),
                                     dict(alone, policy="cached")])) == HEAD + """
  policy  codec  transport  s2r B  r2s B   fe B  control B   fe %  fe enc us  fe dec us  codec us all  send - cached B  send - cached % send control
  ------  -----  ---------  -----  -----  -----  ---------  -----  ---------  ---------  ------------  ---------------  ----------------------------
  send    none   inproc         -      -  371.0      371.0  100.0       1.50       3.30          3.10                -                             -
  cached  none   inproc         -      -  371.0      371.0  100.0       1.50       3.30          3.10                -                             -"""
