"""Scenario plumbing: options every scenario reads, discovery, and the case grid.

A scenario is one module in the top-level ``scenarios`` package defining ``NAME``
(the ``--scenario`` value), a module docstring (what it shows and why; its first
line is the ``--list`` summary) and ``cases(opts) -> list[CaseSpec]``.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any, Callable, Optional

import msgspec

from ipc_bench.case import CaseSpec
from ipc_bench.config import CODECS, POLICIES, ConfigError, SchedulerConfig


@dataclass
class ScenarioOptions:
    """Command-line settings a scenario may read (``None``: the scenario's default)."""

    seed: int = 0
    steps: Optional[int] = None
    warmup_steps: Optional[int] = None
    num_running: Optional[list[int]] = None
    trace: Optional[str] = None
    max_requests: Optional[int] = None
    logical_step_ms: Optional[float] = None
    policies: list[str] = field(default_factory=lambda: list(POLICIES))
    codecs: list[str] = field(default_factory=lambda: list(CODECS))
    transport: str = "ipc"
    floor: bool = True
    peer_timeout_s: float = 10.0
    repeat: int = 1
    single_process: bool = True
    trace_speedup: Optional[float] = None
    #: ``SchedulerConfig`` fields set on the command line (``--max-num-seqs`` ...).
    scheduler_overrides: dict[str, int] = field(default_factory=dict)
    startup_timeout_s: float = 120.0
    host: str = "127.0.0.1"
    allow_pickle_over_tcp: bool = False

    def scheduler_config(self, default: SchedulerConfig) -> SchedulerConfig:
        """The scenario's ``default`` limits with the command line's overrides applied
        (validated: ``ConfigError`` names the first bad setting)."""
        config = msgspec.structs.replace(default, **self.scheduler_overrides)
        config.validate()
        return config

    def process_settings(self) -> dict[str, Any]:
        """``CaseSpec`` keyword arguments for the transport, timeouts and security
        settings, the same for every scenario."""
        return dict(transport=self.transport, peer_timeout_s=self.peer_timeout_s,
                    startup_timeout_s=self.startup_timeout_s, host=self.host,
                    allow_pickle_over_tcp=self.allow_pickle_over_tcp)


def discover() -> dict[str, ModuleType]:
    """``NAME`` -> module for every module in the ``scenarios`` package."""
    import scenarios

    found: dict[str, ModuleType] = {}
    for info in sorted(pkgutil.iter_modules(scenarios.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"scenarios.{info.name}")
        name = getattr(module, "NAME", None)
        if name and callable(getattr(module, "cases", None)):
            found[name] = module
    return found


def summary_line(module: ModuleType) -> str:
    doc = (module.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


def grid(opts: ScenarioOptions, workloads: list[dict[str, Any]],
         make: Callable[[dict[str, Any], str, str, int], CaseSpec],
         single_process: bool = False) -> list[CaseSpec]:
    """Cases for every workload x codec x policy, interleaved for fair comparison.

    Order: for each repetition, for each workload, for each codec: the policies in
    turn (send, cached, send, cached, ... across codecs), so both sides of each
    comparison run next to each other under the same machine conditions. With
    ``single_process`` (and ``opts.single_process``), each workload also gets the
    single-process baseline per policy (codec ``none``, transport ``inproc``).
    ``make(labels, policy, codec, repetition)`` builds one two-process case.
    """
    if not workloads:
        raise ConfigError("scenario has no workloads")
    codecs = list(opts.codecs)
    if single_process and opts.single_process:
        codecs.append("none")
    cases = []
    for rep in range(opts.repeat):
        for labels in workloads:
            for codec in codecs:
                for policy in opts.policies:
                    if codec == "none":
                        case = replace(make(labels, policy, "msgpack", rep), codec="none",
                                       transport="inproc", floor=False)
                    else:
                        case = make(labels, policy, codec, rep)
                    cases.append(case)
    return cases
