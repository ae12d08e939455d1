"""A runner's answer to a schedule, and a count of the calls of the scheduler's
``ConstantList`` view (the read-only ``Request.all_token_ids`` that mirrors vLLM's),
shared by the view's tests and the input oracle's."""

from __future__ import annotations

from ipc_bench.engine.messages import ModelRunnerOutput
from ipc_bench.engine.scheduler import ConstantList, Scheduler


class Counts:
    """Calls of the view's read methods, by method name."""

    def __init__(self, monkeypatch):
        self.calls: dict[str, int] = {}
        for name in ("__getitem__", "__len__", "__iter__", "__contains__", "index"):
            method = getattr(ConstantList, name)
            monkeypatch.setattr(ConstantList, name, self._counting(name, method))

    def _counting(self, name, method):
        def counted(view, *args):
            self.calls[name] = self.calls.get(name, 0) + 1
            return method(view, *args)
        return counted

    def take(self) -> dict[str, int]:
        calls, self.calls = self.calls, {}
        return calls


def answer(sched: Scheduler, plan) -> ModelRunnerOutput:
    """A runner's answer to ``plan``: one id (``1000 + 10 * step + i``) for each
    scheduled request whose prompt is then computed, none for a partial prefill."""
    req_ids = list(plan.num_scheduled_tokens)
    sampled = []
    for i, req_id in enumerate(req_ids):
        req = sched.requests[req_id]
        done = req.num_computed_tokens >= req.num_tokens
        sampled.append([1000 + 10 * plan.step + i] if done else [])
    return ModelRunnerOutput(req_ids=req_ids,
                             req_id_to_index={r: i for i, r in enumerate(req_ids)},
                             sampled_token_ids=sampled)
