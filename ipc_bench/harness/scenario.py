"""Scenario plumbing: options every scenario reads, discovery, and the case grid.

A scenario is one module in the top-level ``scenarios`` package defining ``NAME``
(the ``--scenario`` value), a module docstring (what it shows and why; its first
line is the ``--list`` summary) and ``cases(opts) -> list[CaseSpec]``. It may also
define ``report(summaries) -> str``: called by the CLI after the tables with the
cases' summary dicts (it may add derived fields to them, which are then written to
``summary.json``); the text it returns is printed.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any, Callable, Optional

import msgspec

from ipc_bench.harness.spec import CaseSpec
from ipc_bench.engine.config import POLICIES, ConfigError, ModelConfig, SchedulerConfig
from ipc_bench.wire.codecs import CODECS


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
    aa: bool = False
    req_id_format: str = "cmpl"
    vocab_size: Optional[int] = None
    model: Optional[str] = None
    step_time_ms: Optional[list[float]] = None
    model_preset: Optional[str] = None
    torch_threads: Optional[int] = None
    device: Optional[str] = None
    num_blocks: Optional[int] = None  # also in scheduler_overrides when given

    def model_config(self, default: str = "null",
                     step_time_ms: Optional[float] = None) -> ModelConfig:
        """The ``ModelConfig`` of ``--model`` (else ``default``), ``--step-time-ms``,
        ``--model-preset``, ``--torch-threads``, ``--device``, ``--vocab-size`` and ``--seed``.
        ``step_time_ms`` overrides ``--step-time-ms`` (for sweeps); otherwise that option
        takes one value here (``ConfigError`` if given several)."""
        if step_time_ms is None and self.step_time_ms:
            if len(self.step_time_ms) > 1:
                raise ConfigError("--step-time-ms takes one value here (a list only in the "
                                  "step-time scenario)")
            step_time_ms = self.step_time_ms[0]
        base = ModelConfig()
        return ModelConfig(
            name=self.model or default, seed=self.seed,
            step_time_ms=base.step_time_ms if step_time_ms is None else step_time_ms,
            preset=self.model_preset or base.preset,
            num_threads=self.torch_threads or base.num_threads,
            device=self.device or base.device,
            vocab_size=self.vocab_size or base.vocab_size)

    def scheduler_config(self, default: SchedulerConfig) -> SchedulerConfig:
        """The scenario's ``default`` limits with the command line's overrides
        (``--max-num-seqs``, ``--max-num-batched-tokens``, ``--max-model-len``,
        ``--block-size``, ``--num-blocks``) applied and validated: ``ConfigError``
        names the first bad setting."""
        overrides = dict(self.scheduler_overrides)
        if self.num_blocks is not None:
            overrides["num_blocks"] = self.num_blocks
        config = msgspec.structs.replace(default, **overrides)
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
    turn, so both sides of each comparison run next to each other under the same
    machine conditions; odd repetitions take the policies in reverse order (send
    cached, cached send, send cached, ...: ABBA counterbalancing), so that an effect
    of running first or second (a drift, a warmer or fuller parent process) cancels
    over pairs instead of biasing every pair the same way. With ``single_process``
    (and ``opts.single_process``), each workload also gets the single-process
    baseline per policy (codec ``none``, transport ``inproc``).
    ``make(labels, policy, codec, repetition)`` builds one two-process case. With
    ``opts.aa`` each policy runs twice in a row, the second copy labelled
    ``<policy>'`` (``CaseSpec.arm``): an A/A comparison through the same code paths.
    """
    if not workloads:
        raise ConfigError("scenario has no workloads")
    codecs = list(opts.codecs)
    if single_process and opts.single_process:
        codecs.append("none")
    arms = ([(p, a) for p in opts.policies for a in ("", p + "'")] if opts.aa
            else [(p, "") for p in opts.policies])
    cases = []
    for rep in range(opts.repeat):
        for labels in workloads:
            for codec in codecs:
                for policy, arm in (arms if rep % 2 == 0 else arms[::-1]):
                    if codec == "none":
                        case = replace(make(labels, policy, "msgpack", rep), codec="none",
                                       transport="inproc", floor=False)
                    else:
                        case = make(labels, policy, codec, rep)
                    case.arm = arm
                    cases.append(case)
    return cases
