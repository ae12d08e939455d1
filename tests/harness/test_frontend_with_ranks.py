"""A ``CaseSpec`` built in code with ``frontend=True`` and ``tp`` or ``pp`` set is
refused by ``supervisor.run_case`` in one line (``ConfigError``), before any process
starts: the ranks' and stages' supervisors start no frontend, so it would not have
run (``bench.py`` refuses ``--frontend`` with them on its own)."""

from __future__ import annotations

import pytest

from fault_helpers import steady_case
from ipc_bench.engine.config import ConfigError
from ipc_bench.harness import pp_case, tp_case
from ipc_bench.harness.supervisor import run_case


def _never(*args, **kw):
    raise AssertionError("the case was started")


@pytest.mark.parametrize("field, n, message", [
    ("tp", 1, "tp=1 runner ranks run no frontend (their supervisor starts none): set "
              "frontend=False"),
    ("tp", 2, "tp=2 runner ranks run no frontend (their supervisor starts none): set "
              "frontend=False"),
    ("pp", 2, "pp=2 pipeline stages run no frontend (their supervisor starts none): set "
              "frontend=False"),
])
def test_a_frontend_with_ranks_or_stages_is_refused(monkeypatch, field, n, message):
    monkeypatch.setattr(tp_case, "run_tp_case", _never)
    monkeypatch.setattr(pp_case, "run_pp_case", _never)
    with pytest.raises(ConfigError) as err:
        run_case(steady_case(8, max_steps=20, frontend=True, **{field: n}))
    assert str(err.value) == message


@pytest.mark.parametrize("field", ["tp", "pp"])
def test_without_a_frontend_the_case_goes_to_its_supervisor(monkeypatch, field):
    reached = []
    monkeypatch.setattr(tp_case, "run_tp_case", lambda spec, *a, **kw: reached.append("tp"))
    monkeypatch.setattr(pp_case, "run_pp_case", lambda spec, *a, **kw: reached.append("pp"))
    run_case(steady_case(8, max_steps=20, **{field: 2}))
    assert reached == [field]
