"""Scenario plumbing: options every scenario reads, discovery, the case grid, and the
case builders scenarios share.

A scenario is one module in the repository's top-level ``scenarios/`` folder, imported
as the package ``ipc_bench.scenarios`` (``pyproject.toml`` installs the folder under
that name; from a checkout, ``scenarios_package`` loads it from beside ``ipc_bench/``).
It defines ``NAME`` (the ``--scenario`` value), a module docstring (what it shows and
why; its first line is the ``--list`` summary) and ``cases(opts) -> list[CaseSpec]``.
It may also define ``report(summaries) -> str``: called by the CLI after the tables
with the cases' summary dicts (it may add derived fields to them, which are then
written to ``summary.json``); the text it returns is printed. A ``report`` that takes
a ``method`` argument is also given the run's ``--ci-method``. ``OPTIONS`` lists the
scenario-specific options it takes (``SCENARIO_OPTIONS``; e.g. ``STEADY``): any other
one on the command line is refused before anything runs; a module without
``OPTIONS`` takes them all. ``ONE_CASE = True`` says it runs one case whatever the
options (soak): ``--repeat`` above 1, ``--aa``, more than one of ``--policies`` or of
``--codecs`` and a ``--ci-method`` are then refused before anything runs, not dropped.
A scenario imports
what it shares with others from here (and the engine, analysis or report helpers it
needs), never from another scenario.
"""

from __future__ import annotations

import functools
import math
import importlib
import importlib.util
import os
import pkgutil
import random
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator, NamedTuple, Optional

import msgspec

import ipc_bench
from ipc_bench.errors import module_doc, one_line
from ipc_bench.harness.spec import (ASYNC_ARM, INPROC, INPUT_ORACLE_INTERVAL, NO_CODEC,
                                     CaseSpec)
from ipc_bench.engine.config import (CACHED, EMULATED_DEFAULT_PRESET,
                                     MAX_FIT_SIMULATED_REQUESTS, MAX_NUM_BLOCKS,
                                     MAX_SPEEDUP, NOT_THE_MOST, POLICIES, PRESET_MODELS,
                                     ConfigError, ModelConfig, SchedulerConfig, SteadyShape,
                                     check_token_ids_spec, preset_vocab_size)
from ipc_bench.engine.token_ids import read_histogram, token_id_distribution
from ipc_bench.engine.traces import PUBLISHED_SHA256, load_azure_trace
from ipc_bench.engine.workloads import (STEADY_OUTPUT_LEN_RANGE, STEADY_PROMPT_LEN_RANGE,
                                         SteadyDecodeWorkload, TraceWorkload)
from ipc_bench.harness.steady_steps import (SteadySteps, expected_tokens_per_decode,
                                            simulate_steady_steps)
from ipc_bench.wire.codecs import CODECS, DEFAULT_CODECS

#: Import name of the scenarios package (the repository's ``scenarios/`` folder).
PACKAGE = "ipc_bench.scenarios"

#: Options only some scenarios take: ``ScenarioOptions`` field (the option is
#: ``--`` + the field with ``-`` for ``_``) -> what it is for, which the error names
#: when a scenario's ``OPTIONS`` leave it out. Every other option applies to every
#: scenario.
SCENARIO_OPTIONS: dict[str, str] = {
    "num_running": "the size of a steady batch",
    "steps": "the counted steps of a steady batch",
    "trace": "the trace of a replay",
    "max_requests": "how much of a trace is replayed",
    "logical_step_ms": "the step of a replay on the logical clock",
    "trace_speedup": "the speed of a replay on the wall clock",
    "model": "the runner's model",
    "tp": "the runner ranks of a tensor-parallel broadcast",
    "tp_transports": "the transports of a tensor-parallel broadcast",
    "pp": "the stages of a pipeline",
    "step_time_ms": "the fixed-step model's step",
    "step_wait": "the fixed-step model's wait",
    "model_preset": "the torch model's shape",
    "torch_threads": "the torch model's threads",
    "device": "the torch model's device",
    "attention": "the torch model's decode attention",
    "cuda_graphs": "the torch model's CUDA graphs",
    "cuda_graph_sizes": "the torch model's decode batch buckets",
    "roofline": "the torch model's roofline",
    "vocab_size": "the vocabulary of prompts and sampled ids",
    "req_id_format": "the request ids of a generated workload",
    "token_ids": "the distribution of prompt and sampled ids",
}
#: Model options that only some models use: ``ScenarioOptions`` field -> (the models
#: that use it, what it is for). Given on the command line for a case whose model is
#: not one of those, the option is refused (a scenario's own defaults are not).
MODEL_OPTIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "step_time_ms": (("fixed-step",), "the fixed-step model's step"),
    "step_wait": (("fixed-step",), "the fixed-step model's wait"),
    "model_preset": (PRESET_MODELS, "the shape of the torch and emulated models"),
    "torch_threads": (("torch",), "the torch model's threads"),
    "device": (("torch",), "the torch model's device"),
    "attention": (("torch",), "the torch model's decode attention"),
    "cuda_graphs": (("torch",), "the torch model's CUDA graphs"),
    "cuda_graph_sizes": (("torch",), "the torch model's decode batch buckets"),
    "roofline": (("torch",), "the torch model's roofline"),
}
#: The ``ModelConfig`` field each of ``MODEL_OPTIONS`` sets, where its name differs.
MODEL_OPTION_FIELDS = {"model_preset": "preset", "torch_threads": "num_threads"}


def model_uses(model: str, field: str) -> bool:
    """Whether a case of ``model`` uses its ``ModelConfig`` ``field`` (``MODEL_OPTIONS``:
    e.g. the null model has no ``step_time_ms``); a field that no model option sets is
    used by every model."""
    for option, (models, _purpose) in MODEL_OPTIONS.items():
        if MODEL_OPTION_FIELDS.get(option, option) == field:
            return model in models
    return True


#: ``OPTIONS`` building blocks: the runner's model and the workload's ids.
MODEL = frozenset({"model", "step_time_ms", "step_wait", "model_preset", "torch_threads",
                   "device", "attention", "cuda_graphs", "cuda_graph_sizes", "roofline",
                   "vocab_size", "req_id_format", "token_ids"})
#: Steady batches (decode-steady, step-time, overhead).
STEADY = frozenset({"num_running", "steps"}) | MODEL
#: Trace replays on the logical clock (azure-conv, azure-code).
LOGICAL_REPLAY = frozenset({"trace", "max_requests", "logical_step_ms"}) | MODEL
#: Trace replays on the wall clock (azure-*-timed).
TIMED_REPLAY = frozenset({"trace", "max_requests", "trace_speedup"}) | MODEL
#: Longest wall-clock replay a ``--trace-speedup`` may ask for, in seconds: a day (the
#: whole conversation trace in real time takes about an hour).
MAX_REPLAY_S = 86400.0


@dataclass
class ScenarioOptions:
    """Command-line settings a scenario may read (``None``: the scenario's default)."""

    seed: int = 0
    #: ``--order-seed``: the seed of the arms' counterbalanced orders over the
    #: repetitions (``arm_order_rng``, ``balanced_orders``); ``None``: ``seed``'s, so the
    #: same ``--seed`` alone gives the same orders.
    order_seed: Optional[int] = None
    steps: Optional[int] = None
    warmup_steps: Optional[int] = None
    num_running: Optional[list[int]] = None
    trace: Optional[str] = None
    max_requests: Optional[int] = None
    logical_step_ms: Optional[float] = None
    policies: list[str] = field(default_factory=lambda: list(POLICIES))
    codecs: list[str] = field(default_factory=lambda: list(DEFAULT_CODECS))
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
    token_ids: Optional[str] = None
    model: Optional[str] = None
    step_time_ms: Optional[list[float]] = None
    step_wait: Optional[str] = None
    model_preset: Optional[str] = None
    torch_threads: Optional[int] = None
    device: Optional[str] = None
    attention: Optional[str] = None
    cuda_graphs: bool = False
    cuda_graph_sizes: Optional[list[int]] = None
    roofline: Optional[str] = None
    num_blocks: Optional[int] = None  # also in scheduler_overrides when given
    input_oracle_interval: int = INPUT_ORACLE_INTERVAL  # 0: the input oracle off
    tp: Optional[list[int]] = None  # --tp: runner ranks (tp-broadcast)
    tp_transports: Optional[list[str]] = None  # --tp-transports (tp-broadcast)
    remote_runners: bool = False  # --remote-runners: runners started by hand (tcp only)
    pp: Optional[list[int]] = None  # --pp: pipeline stages (pp)
    async_scheduling: bool = False  # two steps in flight (CaseSpec.async_scheduling)
    #: With ``async_scheduling``: each async case (arm ``ASYNC_ARM``) has a synchronous
    #: twin (arm ``cached``) in the grid, run next to it and paired with it.
    sync_counterpart: bool = False
    frontend: bool = False  # --frontend: a frontend process (CaseSpec.frontend)
    #: Lines the run prints before its cases and records in ``summary.json``'s
    #: ``metadata.notes`` (a scenario's ``cases`` may add them: ``replay_trace``).
    notes: list[str] = field(default_factory=list)
    #: SHA-256 of the trace bytes the replay read (``Trace.sha256``), set by
    #: ``replay_trace``: the run's ``metadata["trace"]`` (``environment.trace_record``).
    trace_sha256: Optional[str] = None
    #: The trace's path resolved when ``replay_trace`` read it (``Trace.resolved_path``;
    #: ``None`` for a pipe): the run's ``metadata["trace"]["resolved_path"]``.
    trace_resolved_path: Optional[str] = None
    #: The timed replay each of the run's timed cases makes (``check_timed_replays``),
    #: set by a scenario that replays a trace on the wall clock.
    timed_replay: Optional["TimedReplay"] = None

    def model_config(self, default: str = "null", step_time_ms: Optional[float] = None,
                     step_wait: Optional[str] = None) -> ModelConfig:
        """The ``ModelConfig`` of ``--model`` (else ``default``), ``--step-time-ms``,
        ``--step-wait`` (else ``step_wait``, else ``ModelConfig``'s: ``sleep``),
        ``--model-preset``, ``--torch-threads``, ``--device``, ``--attention``,
        ``--cuda-graphs``, ``--cuda-graph-sizes``, ``--roofline``, ``--vocab-size``,
        ``--token-ids`` (a histogram is read here: ``ConfigError`` on a bad one) and
        ``--seed``. Without ``--model-preset`` the emulated model takes
        ``EMULATED_DEFAULT_PRESET`` (``llama-3.2-1b``), the torch model ``cpu``. Vocabulary: ``--vocab-size``, else the preset's published one for the torch and
        emulated models (``config.preset_vocab_size``), else 128,256.
        ``step_time_ms`` overrides ``--step-time-ms`` (for sweeps); otherwise that option
        takes one value here (``ConfigError`` if given several)."""
        if step_time_ms is None and self.step_time_ms:
            if len(self.step_time_ms) > 1:
                raise ConfigError("--step-time-ms takes one value here (a list only in the "
                                  "step-time scenario)")
            step_time_ms = self.step_time_ms[0]
        base = ModelConfig()
        name = self.model or default
        # an empty value given is refused as unknown, not read as the default
        preset = self.model_preset
        if preset is None:
            preset = EMULATED_DEFAULT_PRESET if name == "emulated" else base.preset
        config = ModelConfig(
            name=name, seed=self.seed,
            step_time_ms=base.step_time_ms if step_time_ms is None else step_time_ms,
            step_wait=self.step_wait or step_wait or base.step_wait,
            preset=preset,
            num_threads=self.torch_threads or base.num_threads,
            device=self.device or base.device,
            attention=self.attention or base.attention, cuda_graphs=self.cuda_graphs,
            cuda_graph_sizes=tuple(sorted(set(self.cuda_graph_sizes or ()))),
            roofline=self.roofline or base.roofline,
            vocab_size=(self.vocab_size or preset_vocab_size(name, preset)
                        or base.vocab_size),
            token_ids=_absolute_histogram(base.token_ids if self.token_ids is None
                                          else self.token_ids))
        if config.token_ids != base.token_ids:
            check_token_ids_spec(config.token_ids)
            # The histogram is read here, once; the runners get its content.
            config = msgspec.structs.replace(config, token_id_histogram=read_histogram(
                config.token_ids, config.vocab_size))
            token_id_distribution(config.token_ids, config.vocab_size,
                                  config.token_id_histogram or None)
        return config

    def scheduler_config(self, default: SchedulerConfig) -> SchedulerConfig:
        """The scenario's ``default`` limits with the command line's overrides
        (``--max-num-seqs``, ``--max-num-batched-tokens``, ``--max-model-len``,
        ``--block-size``, ``--num-blocks``) applied and validated: ``ConfigError``
        names the first bad setting."""
        overrides = dict(self.scheduler_overrides)
        if self.num_blocks is not None:
            overrides["num_blocks"] = self.num_blocks
        config = msgspec.structs.replace(default, **overrides)
        try:
            config.validate()
        except ConfigError as exc:
            raise ConfigError(name_defaults(str(exc), config, set(overrides))) from None
        return config

    def process_settings(self) -> dict[str, Any]:
        """``CaseSpec`` keyword arguments for the transport, timeouts, security settings,
        the input oracle's interval, async scheduling and the frontend, the same for
        every scenario."""
        return dict(transport=self.transport, peer_timeout_s=self.peer_timeout_s,
                    startup_timeout_s=self.startup_timeout_s, host=self.host,
                    allow_pickle_over_tcp=self.allow_pickle_over_tcp,
                    input_oracle_interval=self.input_oracle_interval,
                    async_scheduling=self.async_scheduling, frontend=self.frontend)


def _absolute_histogram(spec: str) -> str:
    """``hist:PATH`` with ``PATH`` made absolute (as recorded in the run's metadata);
    any other ``--token-ids`` value as it is."""
    if spec.startswith("hist:") and len(spec) > 5:
        return "hist:" + os.path.abspath(spec[5:])
    return spec


def scenarios_package() -> ModuleType:
    """The ``ipc_bench.scenarios`` package. Installed (``pip install .``), it is a
    subpackage of ``ipc_bench`` like any other; in a checkout (``python bench.py``, or
    ``pip install -e .``) it is the ``scenarios/`` folder beside ``ipc_bench/``, loaded
    from there under that name, so no top-level ``scenarios`` package is needed."""
    if PACKAGE in sys.modules:
        return sys.modules[PACKAGE]
    here = Path(ipc_bench.__file__).resolve().parent
    init = here.parent / "scenarios" / "__init__.py"
    if not (here / "scenarios" / "__init__.py").is_file() and init.is_file():
        spec = importlib.util.spec_from_file_location(
            PACKAGE, init, submodule_search_locations=[str(init.parent)])
        package = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = package
        try:
            spec.loader.exec_module(package)
        except BaseException:
            del sys.modules[PACKAGE]
            raise
        return package
    return importlib.import_module(PACKAGE)


def discover(problems: Optional[dict[str, str]] = None) -> dict[str, ModuleType]:
    """``NAME`` -> module for every module in the scenarios package (``_``-prefixed
    modules are skipped: helpers, not scenarios). A module that cannot be imported (any
    ``Exception``: a syntax error, a missing import), one that lacks what a scenario
    must declare (``missing_parts``: ``NAME``, a docstring, ``cases``), and every
    module of a ``NAME`` that two modules declare, are left out; with ``problems``,
    each is added there: its ``NAME`` (for a module that did not load or declares no
    usable ``NAME``, or whose ``NAME`` a usable module has, its file name with ``-``
    for ``_``) -> one line saying why, naming the file(s)."""
    package = scenarios_package()
    found: dict[str, ModuleType] = {}
    files: dict[str, list[str]] = {}  # NAME -> the files that declare it
    lacking: list[tuple[str, Optional[str], str]] = []  # (file's name, NAME, why)
    problems = {} if problems is None else problems
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        stem = info.name.replace("_", "-")
        try:
            module = importlib.import_module(f"{PACKAGE}.{info.name}")
        except Exception as exc:
            path = Path(info.module_finder.path) / f"{info.name}.py"
            problems[stem] = one_line(
                f"{path} cannot be imported: {type(exc).__name__}: {exc}")
            continue
        name = getattr(module, "NAME", None)
        name = name if isinstance(name, str) and name else None
        missing = missing_parts(module)
        if missing:
            lacking.append((stem, name, f"{module.__file__} {missing}"))
            continue
        found.setdefault(name, module)
        files.setdefault(name, []).append(str(module.__file__))
    for name, paths in files.items():
        if len(paths) > 1:
            del found[name]
            problems[name] = f"{' and '.join(paths)} all declare NAME {name!r}" \
                if len(paths) > 2 else f"{paths[0]} and {paths[1]} both declare NAME {name!r}"
    for stem, name, why in lacking:
        key = name if name and name not in found and name not in problems else stem
        problems[key] = f"{problems[key]}; {why}" if key in problems else why
    return found


def missing_parts(module: ModuleType) -> Optional[str]:
    """What a scenario module lacks of what it must declare, as the reason ``discover``
    gives (``declares no NAME (the --scenario value, a non-empty str)``, ``has no
    docstring (its first line is the --list summary)``, ``declares no cases(opts)
    function``, joined with ``, `` and ``and``), or ``None`` when it has all three."""
    name = getattr(module, "NAME", None)
    parts = []
    if not (isinstance(name, str) and name):
        parts.append("declares no NAME (the --scenario value, a non-empty str)"
                     if name is None else
                     f"declares NAME {name!r}, not a non-empty str (the --scenario value)")
    if not (module_doc(module) or "").strip():
        parts.append("has no docstring (its first line is the --list summary)")
    if not callable(getattr(module, "cases", None)):
        parts.append("declares no cases(opts) function")
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def options_taken(module: ModuleType) -> frozenset[str]:
    """The ``SCENARIO_OPTIONS`` fields a scenario module takes: its ``OPTIONS``, or all
    of them when it declares none."""
    return frozenset(getattr(module, "OPTIONS", SCENARIO_OPTIONS))


@dataclass(frozen=True)
class TimedReplay:
    """One timed replay of a run: ``num_requests`` arrivals spread over ``span_s``
    seconds of trace time, at ``speedup`` times real time (``given``: whether the
    command line gave it). ``duration_s``: its wall time, ``span_s / speedup``."""

    span_s: float
    num_requests: int
    speedup: float
    given: bool = True

    @property
    def duration_s(self) -> float:
        return self.span_s / self.speedup


def _seconds(s: float) -> str:
    """Seconds as a refusal writes them: ``380,160``; ``1e+302`` from a trillion on
    (a speedup such as 1e-300 would otherwise print hundreds of digits); ``more than
    1.8e+308`` past the largest float (a speedup of 1e-320)."""
    if not math.isfinite(s):
        return f"more than {sys.float_info.max:.2g}"
    return f"{s:,.0f}" if s < 1e12 else f"{s:.3g}"


def check_replay_duration(span_s: float, speedup: float, num_requests: int,
                          given: bool = True, num_replays: int = 1) -> None:
    """Refuse (``ConfigError``) a ``--trace-speedup`` under which ``num_replays``
    replays of ``num_requests`` arrivals spread over ``span_s`` seconds of trace time
    would take longer than ``MAX_REPLAY_S`` of wall time in all (the cap is the run's,
    not each replay's). ``given``: whether the command line gave the speedup (else the
    line says ``the default --trace-speedup X``)."""
    each_s = span_s / speedup
    total_s = each_s * num_replays
    if total_s <= MAX_REPLAY_S:
        return
    # a subnormal speedup (1e-320) keeps only a few digits: 9.99989e-321 at 6
    shown = f"{speedup:.3g}" if speedup < sys.float_info.min else f"{speedup:g}"
    speedup_text = f"{'' if given else 'the default '}--trace-speedup {shown}"
    if num_replays == 1:
        last = f"the replay of {num_requests:,} requests last {_seconds(total_s)} s"
    else:
        last = (f"the {num_replays:,} replays of {num_requests:,} requests last "
                f"{_seconds(total_s)} s in all ({_seconds(each_s)} s each)")
    raise ConfigError(f"{speedup_text} would make {last}; at most {MAX_REPLAY_S:,.0f} s "
                      f"({MAX_REPLAY_S / 3600:g} h){_speedup_that_fits(span_s, num_replays)}")


def _speedup_that_fits(span_s: float, num_replays: int) -> str:
    """``: --trace-speedup 1.2 or more fits``: the least speedup of 2 significant digits
    under which ``num_replays`` replays of ``span_s`` seconds of trace time last
    ``MAX_REPLAY_S`` at most, checked as ``check_replay_duration`` checks it (so the
    value named is never refused by it), written as the option takes it (no thousands
    separator; ``1.2e-11`` below 1e-4); ``: no --trace-speedup fits (1,000,000 at
    most)`` past ``MAX_SPEEDUP``; ``''`` where the speedup needed is no finite
    number."""
    need = span_s * num_replays / MAX_REPLAY_S
    if not math.isfinite(need) or need <= 0:
        return ""
    if need > MAX_SPEEDUP:
        return f": no --trace-speedup fits ({MAX_SPEEDUP:,.0f} at most)"
    exponent = math.floor(math.log10(need))
    digits = max(0, 1 - exponent)
    k = math.ceil(need / 10.0 ** (exponent - 1))
    while True:
        value = k * 10.0 ** (exponent - 1)
        value = round(value, digits) if digits else float(round(value))
        if span_s / value * num_replays <= MAX_REPLAY_S or value >= MAX_SPEEDUP:
            break
        k += 1
    text = f"{value:.2g}" if value < 1e-4 else f"{value:.{digits}f}"
    if "." in text and "e" not in text:
        text = text.rstrip("0").rstrip(".")
    return f": --trace-speedup {text} or more fits"


def timed_cases(cases: list[CaseSpec]) -> int:
    """How many of ``cases`` replay on the wall clock (``trace_speedup`` set)."""
    return sum(case.trace_speedup is not None for case in cases)


def check_timed_replays(opts: ScenarioOptions, cases: list[CaseSpec]) -> None:
    """``check_replay_duration`` of the run: ``opts.timed_replay`` once per timed case
    of ``cases`` (every case and repetition); nothing without a timed replay."""
    replay = opts.timed_replay
    if replay is not None:
        check_replay_duration(replay.span_s, replay.speedup, replay.num_requests,
                              replay.given, timed_cases(cases))


def summary_line(module: ModuleType) -> str:
    doc = (module_doc(module) or "").strip()
    return doc.splitlines()[0] if doc else ""


#: How ``grid`` orders the arms of one repetition (recorded in a run's metadata).
ARM_ORDER = ("counterbalanced per workload and codec with --repeat 2 or more: each "
             "repetition runs a row of a balanced Latin square (Williams design; two "
             "arms: A B or B A), so each arm runs first, and in each place, in as many "
             "repetitions as their number allows; the arms' places in the square, which "
             "rows a number of repetitions that is not a multiple of the rows' count "
             "leaves out, and the rows' sequence are drawn at random (seeded by "
             "--order-seed, default the --seed value); the codec blocks of each "
             "workload (the single-process block too) are ordered the same way over "
             "the repetitions, from a draw of their own, the first repetition's in the "
             "order given; as given with one repetition")


def arm_order_rng(seed: int) -> random.Random:
    """The generator ``grid`` draws the arm orders from: ``random.Random`` seeded with
    the string ``"arm-order/<seed>"``, ``seed`` the order seed (``order_seed``: the same
    orders for the same ``--order-seed`` on any machine or Python 3 version;
    independent of the workload's generator)."""
    return random.Random(f"arm-order/{seed}")


def block_order_rng(seed: int) -> random.Random:
    """The generator ``grid`` draws the codec blocks' orders from: ``random.Random``
    seeded with the string ``"block-order/<seed>"`` (``seed`` as ``arm_order_rng``'s),
    apart from the arms' draws, so the arms' orders of a seed do not depend on how many
    codec blocks a run has."""
    return random.Random(f"block-order/{seed}")


def order_seed(opts: ScenarioOptions) -> int:
    """The seed of ``opts``'s arm orders: ``--order-seed`` where given, else ``--seed``
    (so the same ``--seed`` alone gives the same orders)."""
    return opts.seed if opts.order_seed is None else opts.order_seed


def williams_rows(k: int) -> list[tuple[int, ...]]:
    """The rows of a balanced Latin square of ``k`` arms (Williams, 1949), each a
    tuple of the arm indices ``0 .. k-1`` in running order: ``k`` rows for an even
    ``k`` (``[(0, 1), (1, 0)]`` for 2; ``[(0, 1, 3, 2), (1, 2, 0, 3), (2, 3, 1, 0),
    (3, 0, 2, 1)]`` for 4), the square and its mirror, ``2k`` rows, for an odd ``k``
    (``[(0,)]`` for 1). Over all the rows each arm takes each place equally often and
    follows each other arm equally often, and each row's reverse is a row too (so
    each arm runs before each other one in half the rows). Raises ``ValueError`` for
    ``k`` < 1."""
    if k < 1:
        raise ValueError(f"a Latin square needs at least one arm, not {k}")
    first, low, high = [0], 1, k - 1
    while len(first) < k:
        first.append(low)
        low += 1
        if len(first) < k:
            first.append(high)
            high -= 1
    rows = [tuple((a + i) % k for a in first) for i in range(k)]
    if k % 2 and k > 1:
        rows += [row[::-1] for row in rows]
    return rows


def balanced_orders(arms: list, repeat: int, rng: random.Random) -> list[list]:
    """``repeat`` orders of ``arms`` (k of them), one per repetition, counterbalanced:
    the rows of ``williams_rows(k)``, the arms put in the square's places in an order
    drawn from ``rng`` (``rng.sample``), each row ``repeat // rows`` times and,
    where ``repeat`` is not a multiple of the rows' count, the leftover rows drawn
    without repetition (an even ``k``: whole pairs of a row and its reverse first, then
    one row of another pair; an odd ``k``: rows of one of its two Latin squares, then
    of the other), and their sequence shuffled (``rng.shuffle``). So each arm runs
    first, and in each place, in ``repeat // k`` or ``repeat // k + 1`` of the
    repetitions, and with an even ``k`` each arm runs before each other one in
    ``repeat // 2`` or ``repeat // 2 + 1``. The same ``rng`` state gives the same orders.
    One arm, or ``repeat`` below 2: ``arms`` as given each time, nothing drawn. Each
    order is a new list of the items of ``arms``."""
    k = len(arms)
    if k < 2 or repeat < 2:
        return [list(arms) for _ in range(repeat)]
    placed = rng.sample(list(arms), k)
    rows = williams_rows(k)
    whole, left = divmod(repeat, len(rows))
    chosen = rows * whole
    if left:
        if k % 2 == 0:
            # a row and its reverse keep every two arms' order balanced: whole such
            # pairs, then one row of another
            pairs = [(row, row[::-1]) for row in rows if row < row[::-1]]
            rng.shuffle(pairs)
            for row, back in pairs[:left // 2]:
                chosen += [row, back]
            if left % 2:
                chosen.append(rng.choice(pairs[left // 2]))
        else:  # the square, then its mirror, each a Latin square: distinct places
            squares = [rows[:k], rows[k:]]
            rng.shuffle(squares)
            chosen += rng.sample(squares[0], min(left, k))
            if left > k:
                chosen += rng.sample(squares[1], left - k)
    rng.shuffle(chosen)
    return [[placed[i] for i in row] for row in chosen]


def first_as_given(orders: list[list[int]]) -> list[list[int]]:
    """``orders`` (``balanced_orders`` of the indices ``0 .. k-1``) with the indices
    renamed so that the first order is ``0 .. k-1``: the first repetition runs the codec
    blocks in the order given, so the tables and findings, which list workloads and
    codecs in the order first seen, read in that order in every run. A renaming keeps
    the balance: each index still takes each place as often as before."""
    if not orders:
        return orders
    rename = {b: i for i, b in enumerate(orders[0])}
    return [[rename[b] for b in order] for order in orders]


def codec_block_orders(opts: ScenarioOptions, k: int,
                       n_workloads: int) -> list[list[list[int]]]:
    """For each of ``n_workloads`` workloads, the order of its ``k`` codec blocks (the
    indices ``0 .. k-1`` of the run's codecs, the single-process block ``none`` last)
    in each of ``opts.repeat`` repetitions: counterbalanced over the repetitions as
    the arms are (``balanced_orders``), from a draw of their own
    (``block_order_rng(order_seed(opts))``), so each block runs first, and in each
    place, in ``repeat // k`` or ``repeat // k + 1`` of them and no block always runs
    after the others (a drift within a repetition, a warmer parent process, would
    otherwise land on the single-process ratio and on msgpack against pickle always
    one way). The first repetition runs them in the order given (``first_as_given``),
    and so does a single one."""
    rng = block_order_rng(order_seed(opts))
    return [first_as_given(balanced_orders(list(range(k)), opts.repeat, rng))
            for _ in range(n_workloads)]


def grid(opts: ScenarioOptions, workloads: list[dict[str, Any]],
         make: Callable[[dict[str, Any], str, str, int], CaseSpec],
         single_process: bool = False) -> list[CaseSpec]:
    """Cases for every workload x codec x policy, interleaved for fair comparison.

    Order: for each repetition, for each workload, for each codec: the policies in
    turn, so both sides of each comparison run next to each other under the same
    machine conditions. With two or more repetitions the orders of each workload and
    codec (the single-process block of codec ``none`` too) are counterbalanced over
    the repetitions (``balanced_orders``, ``ARM_ORDER``): each repetition runs a row
    of a balanced Latin square (``williams_rows``). The arm sets a run makes are of
    two arms, A B or B A: two policies; one policy and its A/A copy (``opts.aa``, which
    the CLI allows for one policy only); ``cached`` and ``ASYNC_ARM``
    (``opts.sync_counterpart``); ``ASYNC_ARM`` and its copy; the single-process block
    has the same arms as the two-process cases; one arm keeps its one order. The
    ordering itself takes any number k of arms (k rows for an even k, 2k for an odd
    one), so each arm runs first, and in each place, in
    ``repeat // k`` or ``repeat // k + 1`` of the ``repeat`` repetitions of its k
    arms, and each arm before each other one in ``repeat // 2`` or one more (an even
    k); which arm takes which place in the square, the leftover rows where
    ``repeat`` is not a multiple of the rows' count, and the rows' sequence are drawn
    from ``arm_order_rng(order_seed(opts))``, one workload and codec after the other
    in the order given (workloads, then ``--codecs`` and the single process last,
    whatever order the codec blocks then run in): the same for the same ``--order-seed``, default
    ``--seed``, on any machine; another order seed reorders the same cases. A
    single repetition, which gets no interval, keeps the order given (``--policies``)
    so its tables read the same from run to run. Counterbalancing removes the bias of
    running first or second (a drift, a warmer or fuller parent process) within each
    run, where independent draws only cancelled it on average over seeds (5 pairs
    could all run cached first); shuffling the rows keeps a burst of noise across a
    pair boundary from landing on the same arm on both sides of every other boundary,
    as the fixed alternating A B, B A order did (neighbouring pairs' ratios positively
    correlated, intervals too narrow): with two arms the same arm sits on both sides
    of a boundary with chance n / (2(n - 1)) over n pairs, n even, (n + 1) / (2n), n
    odd (1 at n = 2, where balance leaves no other orders; 2/3 at 3 and 4; towards
    1/2, that of independent draws, as n grows). With
    ``single_process`` (and ``opts.single_process``), each workload also gets the
    single-process baseline per policy (codec ``none``, transport ``inproc``). The
    codec blocks of each workload (``none`` among them) are counterbalanced too
    (``codec_block_orders``).
    ``make(labels, policy, codec, repetition)`` builds one two-process case. With
    ``opts.aa`` each policy runs twice, the copy labelled ``<policy>'``
    (``CaseSpec.arm``): an A/A comparison through the same code paths. With
    ``opts.async_scheduling`` and ``opts.sync_counterpart`` the arms are ``cached``
    run synchronously and ``cached`` with async scheduling, labelled ``ASYNC_ARM``;
    with ``opts.async_scheduling`` alone every case is async and labelled so
    (``ASYNC_ARM``, its A/A copy ``ASYNC_ARM'``), never as a synchronous ``cached``.
    """
    if not workloads:
        raise ConfigError("scenario has no workloads")
    codecs = list(opts.codecs)
    if single_process and opts.single_process:
        codecs.append(NO_CODEC)
    arms = ([(p, a) for p in opts.policies for a in ("", p + "'")] if opts.aa
            else [(p, "") for p in opts.policies])
    counterpart = opts.async_scheduling and opts.sync_counterpart
    if counterpart:
        arms = [(CACHED, ""), (CACHED, ASYNC_ARM)]
    elif opts.async_scheduling:  # every case async: cached+async (and cached+async')
        arms = [(p, ASYNC_ARM + ("'" if a else "")) for p, a in arms]
    rng = arm_order_rng(order_seed(opts))
    orders = [[balanced_orders(arms, opts.repeat, rng) for _ in codecs] for _ in workloads]
    blocks = codec_block_orders(opts, len(codecs), len(workloads))
    cases = []
    for rep in range(opts.repeat):
        for w, labels in enumerate(workloads):
            for c in blocks[w][rep]:
                codec = codecs[c]
                for policy, arm in orders[w][c][rep]:
                    if codec == NO_CODEC:
                        case = replace(make(labels, policy, CODECS[0], rep), codec=NO_CODEC,
                                       transport=INPROC, floor=False, no_floor=False)
                    else:
                        case = make(labels, policy, codec, rep)
                    case.arm = arm
                    if counterpart:
                        case.async_scheduling = arm == ASYNC_ARM
                    cases.append(case)
    return cases


# ------------------------------------------------------------- shared case builders

#: Longest prompt and output of the steady-decode workload (``SteadyDecodeWorkload``
#: defaults).
PROMPT_LEN_MAX = STEADY_PROMPT_LEN_RANGE[1]
OUTPUT_LEN_MAX = STEADY_OUTPUT_LEN_RANGE[1]


#: KV-cache tokens per running request in a steady batch's default cache (``--num-blocks``
#: not given): more than ``steady_context_max`` ever reaches (at most
#: ``PROMPT_LEN_MAX + OUTPUT_LEN_MAX - 1`` tokens + 2 x ``MAX_NUM_SPEC_TOKENS`` slots).
STEADY_TOKENS_PER_REQUEST = 4096


def steady_blocks_per_request(block_size: int) -> int:
    """Blocks of ``block_size`` tokens that hold ``STEADY_TOKENS_PER_REQUEST`` tokens."""
    return -(-STEADY_TOKENS_PER_REQUEST // block_size)


def steady_num_blocks(b: int, block_size: int = 16) -> int:
    """KV blocks a steady batch of ``b`` running requests gets when ``--num-blocks`` is
    not given: ``STEADY_TOKENS_PER_REQUEST`` tokens per request in whole blocks of
    ``block_size``, for ``b + 1`` requests (``b * 256 + 256`` at the default block size
    16), capped at ``MAX_NUM_BLOCKS`` (reached from 1,024 running at block size 1, or
    16,384 at block size 16). Below the cap every request's most slots fit its share
    at any block size, so ``check_steady_cache`` passes it; at the cap it checks
    what the case's requests reach in its steps."""
    return min((b + 1) * steady_blocks_per_request(block_size), MAX_NUM_BLOCKS)


def steady_running_for_blocks(num_blocks: int, block_size: int = 16) -> int:
    """The largest batch ``b`` whose ``steady_num_blocks(b, block_size)`` is at most
    ``num_blocks`` (0 when not even one request's share fits)."""
    return max(0, num_blocks // steady_blocks_per_request(block_size) - 1)


#: The limits a refusal may name, each set by ``--NAME`` (dashes for underscores).
SCHEDULER_LIMITS = ("max_num_seqs", "max_num_batched_tokens", "max_model_len", "block_size",
                    "num_blocks")


def name_defaults(message: str, config: SchedulerConfig, given: set) -> str:
    """``message`` (a refusal of ``config``) followed, for each limit of
    ``SCHEDULER_LIMITS`` it names that is not in ``given`` (the command line's
    overrides), by that the value is the scenario's default and which option sets it."""
    notes = [f"{name} {getattr(config, name)} is the scenario's default "
             f"(--{name.replace('_', '-')} sets it)" for name in SCHEDULER_LIMITS
             if name not in given and re.search(rf"(?<![\w-]){name}(?!\w)", message)]
    return "; ".join([message] + notes)


def steady_prompt_problem(max_model_len: int, prompt_len_max: int) -> Optional[str]:
    """Why a steady workload whose prompts reach ``prompt_len_max`` tokens cannot run
    under ``max_model_len`` (the scheduler rejects a prompt of ``max_model_len`` tokens
    or more on arrival, and a steady batch would then run fewer requests than asked),
    one line; ``None`` when it can."""
    if max_model_len > prompt_len_max:
        return None
    return (f"max_model_len {max_model_len} must exceed the workload's longest prompt "
            f"({prompt_len_max:,} tokens)")


def steady_scheduler_config(opts: ScenarioOptions, b: int,
                            prompt_len_max: int = PROMPT_LEN_MAX) -> SchedulerConfig:
    """Limits for B running requests, with the command line's overrides (without
    ``--num-blocks`` the cache is ``steady_num_blocks`` at the block size in force);
    refuses limits under which B requests cannot all decode each step, or under which a
    prompt of ``prompt_len_max`` tokens is rejected (``steady_prompt_problem``;
    ``ConfigError``).
    Whether the KV cache holds them is checked per case (``check_steady_cache``: drafts,
    set later, need more)."""
    block_size = opts.scheduler_overrides.get("block_size", SchedulerConfig().block_size)
    cfg = opts.scheduler_config(SchedulerConfig(
        max_num_seqs=b, max_num_batched_tokens=8192, max_model_len=4096,
        num_blocks=steady_num_blocks(b, max(1, block_size))))
    problem = None
    if b > cfg.max_num_seqs:
        problem = (f"--num-running {b} is larger than max_num_seqs {cfg.max_num_seqs}: a "
                   f"steady batch of {b} cannot run")
    elif steady_prompt_problem(cfg.max_model_len, prompt_len_max):
        problem = steady_prompt_problem(cfg.max_model_len, prompt_len_max)
    elif cfg.max_num_batched_tokens < b:
        problem = (f"max_num_batched_tokens {cfg.max_num_batched_tokens} is smaller than "
                   f"--num-running {b}: not every request can decode each step")
    if problem:
        raise ConfigError(name_defaults(problem, cfg, set(opts.scheduler_overrides)))
    # The KV cache is checked per case once drafts are set (check_steady_cache).
    return cfg


def steady_context_max(cfg: SchedulerConfig, max_steps: int, prompt_len_max: int = PROMPT_LEN_MAX,
                       output_len_max: int = OUTPUT_LEN_MAX) -> int:
    """The most KV-cache slots one request of a steady workload whose prompts and
    outputs are at most ``prompt_len_max`` and ``output_len_max`` tokens (the default
    workload's by default) holds in a case of
    ``max_steps`` scheduler steps under ``cfg``, from ``Scheduler.schedule``'s rule
    (``AsyncScheduler`` and ``PipelineScheduler`` schedule no further).

    A request of prompt P and output M stops at ``S = min(P + M, max_model_len)``
    tokens and its last sampled token is never fed back, so it is scheduled up to
    ``S - 1`` tokens; with K drafts (``num_spec_tokens``) up to K past its tokens,
    cut at ``max_model_len - 1``. Arriving at step 0 (the steady workload's first
    requests), it is scheduled its prompt at step 0 and gains at most K + 1 tokens a
    step, so at step t at most ``P + t * (K + 1)`` are scheduled; the last step is
    ``max_steps - 1``. The scheduler allocates ``num_lookahead_tokens`` slots past the
    scheduled tokens, capped at ``max_model_len``. Every bound grows with P and M, so
    the workload's longest prompt and output give the worst case; a request arriving
    later reaches less."""
    k = cfg.num_spec_tokens
    stop = min(prompt_len_max + output_len_max, cfg.max_model_len)
    scheduled = min(prompt_len_max + (max_steps - 1) * (k + 1), stop - 1 + k,
                    cfg.max_model_len - 1)
    if cfg.num_lookahead_tokens:
        return min(scheduled + cfg.num_lookahead_tokens, cfg.max_model_len)
    return scheduled


def steady_blocks_needed(case: CaseSpec) -> Optional[int]:
    """KV blocks a steady case (a ``num_running`` label and ``max_steps``) holds at
    most: ``num_running * ceil(slots / block_size)``, ``slots`` the most each request
    reaches in the case (``steady_case_context_max``); ``None`` for other cases."""
    b = case.labels.get("num_running")
    if not isinstance(b, int) or case.max_steps is None:
        return None
    return b * -(-steady_case_context_max(case) // case.scheduler.block_size)


def steady_case_context_max(case: CaseSpec) -> int:
    """``steady_context_max`` of ``case``: its limits and ``max_steps``, the longest
    prompt and output of its workload (``steady_lens``) when it is a steady case
    (``is_steady``), else of the default steady workload."""
    if not is_steady(case):
        return steady_context_max(case.scheduler, case.max_steps)
    lens = steady_lens(case)
    return steady_context_max(case.scheduler, case.max_steps, lens.prompt_len_range[1],
                              lens.output_len_range[1])


def check_steady_cache(case: CaseSpec, num_blocks_given: bool = True) -> None:
    """Refuse (``ConfigError``, one line with the figures) a steady case (a
    ``num_running`` label and ``max_steps``) whose KV cache cannot hold all of its
    ``num_running`` requests at once at the most slots each holds in the case
    (``steady_context_max``): a steady batch promises ``num_running`` requests at
    every step, and a cache that must preempt would run fewer. The bound is the
    worst case and exact: a cache of ``num_running * ceil(slots / block_size)`` blocks
    runs. The advice names the ``--num-blocks`` that fits and, when ``--num-blocks``
    was given (``num_blocks_given``; otherwise ``--num-running`` sizes the cache), the
    largest ``--num-running`` that fits it (``steady_running_that_fits``; where its
    search stops short, a batch that runs, said so); where the need is past
    ``MAX_NUM_BLOCKS``, the least ``--block-size`` at which it fits, with the blocks it
    then holds (``_block_size_that_fits``), that ``--num-running``, and the most
    ``--steps`` below its own that fit its cache (``_steps_that_fit``), where one does.
    Other cases pass."""
    need = steady_blocks_needed(case)
    if need is None or case.scheduler.num_blocks >= need:
        return
    b, cfg = case.labels["num_running"], case.scheduler
    slots = steady_case_context_max(case)
    per_request = need // b
    what = "tokens"
    if cfg.num_spec_tokens:
        k, lookahead = cfg.num_spec_tokens, cfg.num_lookahead_tokens
        what = (f"KV slots ({k} draft{'s' if k > 1 else ''} a step"
                + (f", {lookahead} lookahead slot{'s' if lookahead > 1 else ''}"
                   if lookahead else "") + ")")
    fit, exact = steady_running_that_fits(case, cfg.num_blocks)
    fewer = ([f"--num-running {fit} or fewer" + ("" if exact else f" ({NOT_THE_MOST})")]
             if fit >= 1 else [])
    if need <= MAX_NUM_BLOCKS:
        advice = ", or ".join([f"give --num-blocks {need:,} or more"]
                              + (fewer if num_blocks_given else []))
    else:
        size, blocks = _block_size_that_fits(case)
        larger = ([f"--block-size {size} or more" + (
            f" with --num-blocks {blocks:,} or more" if num_blocks_given else
            f" ({blocks:,} blocks at {size})")] if size else [])
        most = _steps_that_fit(case)
        steps = [f"--steps {most:,} or fewer"] if most else []
        advice = (f"--num-blocks is at most {MAX_NUM_BLOCKS:,}: give "
                  + ", or ".join(larger + fewer + steps) if larger or fewer or steps else
                  f"--num-blocks is at most {MAX_NUM_BLOCKS:,}")
    raise ConfigError(
        f"--num-running {b} needs {need:,} KV blocks ({_count(b, 'request')} x "
        f"{_count(per_request, 'block')} of {_count(cfg.block_size, 'token')}: each reaches "
        f"up to {slots:,} {what} in up to "
        f"{case.max_steps:,} steps, warm-up included) and the cache has {cfg.num_blocks:,}: "
        f"a steady batch holds every request at once, and one that must preempt runs "
        f"fewer requests than asked; {advice}")


def _steps_that_fit(case: CaseSpec) -> int:
    """The most counted steps (``--steps``) below the steady case ``case``'s whose case
    needs at most the blocks its cache has (``check_steady_cache``'s advice past
    ``MAX_NUM_BLOCKS``: that bound, or the ``--num-blocks`` given below it, so the figure
    runs with nothing else changed); 0 where none does, or where ``case``'s
    ``max_steps`` is not its count's (``is_steady`` false: no schedule to simulate). A
    count's case keeps the warm-up and has its cap on the steps in all computed again
    (``steady_case_max_steps``, one simulation of its schedule: ``_fits_at_steps``):
    fewer counted steps, fewer steps in all, shorter requests. Bisection between one
    counted step (probed first: none fits where it does not) and the fewest counted
    steps whose case cannot fit at any schedule (``_least_blocks_per_request``, no
    simulation: its cap with no prefill and no mixed step, which bounds the search at
    a few hundred steps past what fits where the case asks 100,000), so the named count
    fits and one more does not. 2,048 running at block size 1: 11 simulations, 0.5 s
    at 3,000 counted steps and 0.8 s at 100,000 (2 cores at a load of 4), where a
    bisection up to the case's own count took 18 simulations, 2.8 s."""
    steps = case.counted_steps
    blocks = min(case.scheduler.num_blocks, MAX_NUM_BLOCKS)
    if not is_steady(case) or steps <= 1 or not _fits_at_steps(case, 1, blocks):
        return 0
    per_request = blocks // case.labels["num_running"]
    lo, hi = 1, steps  # lo fits; hi does not, or is the case's own count
    while hi - lo > 1:  # no simulation: the least a count's requests hold
        mid = (lo + hi) // 2
        if _least_blocks_per_request(replace(case, counted_steps=mid)) <= per_request:
            lo = mid
        else:
            hi = mid
    lo = 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _fits_at_steps(case, mid, blocks):
            lo = mid
        else:
            hi = mid
    return lo


def _fits_at_steps(case: CaseSpec, steps: int, blocks: int) -> bool:
    """Whether the steady case ``case`` at ``steps`` counted steps, its warm-up kept and
    its ``max_steps`` computed again (``steady_case_max_steps``: one simulation), needs at
    most ``blocks`` blocks (``steady_blocks_needed``)."""
    at = replace(case, counted_steps=steps)
    at.max_steps = steady_case_max_steps(at)
    need = steady_blocks_needed(at)
    return need is not None and need <= blocks


def _block_size_that_fits(case: CaseSpec) -> tuple[Optional[int], int]:
    """The least ``--block-size`` at which the steady case ``case``'s requests fit
    ``MAX_NUM_BLOCKS``, up to its ``max_model_len``, and the blocks they then hold
    (``steady_blocks_needed`` at that size: the slots each reaches do not depend on it,
    nor does its schedule); ``(None, 0)`` where none does."""
    b, cfg = case.labels["num_running"], case.scheduler
    per_request = MAX_NUM_BLOCKS // b
    if not per_request:
        return None, 0
    size = max(cfg.block_size + 1, -(-steady_case_context_max(case) // per_request))
    need = steady_blocks_needed(replace(
        case, scheduler=msgspec.structs.replace(cfg, block_size=size)))
    if size > cfg.max_model_len or need is None or need > MAX_NUM_BLOCKS:
        return None, 0
    return size, need


def steady_case_at(case: CaseSpec, num_running: int, num_blocks: int) -> CaseSpec:
    """The steady case ``case`` as ``--num-running num_running --num-blocks num_blocks``
    builds it (``steady_case``, ``set_steady_cap``): its ``num_running`` label, a cache
    of ``num_blocks`` blocks, ``max_num_seqs`` ``num_running`` where it was the case's
    count (``steady_scheduler_config``; else ``--max-num-seqs`` set it, kept), and its
    cap on the steps in all computed again (``steady_case_max_steps``: a smaller batch
    finishes fewer requests a step, so it takes fewer steps and its requests reach less).
    Its workload's seed and lengths are ``case``'s, which is all the checks read of it."""
    cfg, b = case.scheduler, case.labels["num_running"]
    seqs = num_running if cfg.max_num_seqs == b else cfg.max_num_seqs
    at = replace(case, labels={**case.labels, "num_running": num_running},
                 scheduler=msgspec.structs.replace(cfg, num_blocks=num_blocks,
                                                   max_num_seqs=seqs))
    at.max_steps = steady_case_max_steps(at)
    return at


def steady_batch_runs(case: CaseSpec) -> bool:
    """Whether the steady case ``case`` passes the checks its count can fail: its KV
    cache holds its requests (``check_steady_cache``: ``steady_blocks_needed`` at most
    its ``num_blocks``) and it counts its steps (``check_steady_steps``: at most
    ``MAX_SIMULATED_REQUESTS`` requests, ``_steady_steps_problem`` none)."""
    need = steady_blocks_needed(case)
    return (case.labels["num_running"] <= MAX_SIMULATED_REQUESTS
            and (need is None or need <= case.scheduler.num_blocks)
            and _steady_steps_problem(case) is None)


class RunningThatFits(NamedTuple):
    """``steady_running_that_fits``'s answer: ``most``, the largest ``--num-running``
    found to run (0: none), and ``exact``, whether one more is known not to."""

    most: int
    exact: bool


def steady_running_that_fits(case: CaseSpec, num_blocks: int) -> RunningThatFits:
    """The largest ``--num-running`` below the steady case ``case``'s count whose case
    with ``--num-blocks num_blocks`` given runs (``steady_batch_runs`` of
    ``steady_case_at``). A smaller batch takes fewer steps, so its requests reach less
    and hold fewer blocks each: more than ``num_blocks`` over the blocks one of
    ``case``'s requests holds run (llama-3.1-8b's 5,000 at 27 blocks in 57,038: 2,619,
    not 2,112). Bisection, each count's schedule simulated once, between that quotient
    (tried first) and the most that ``_least_blocks_per_request`` leaves (no larger
    count fits; ``case``'s own count, whose need is above ``num_blocks``, does not run);
    0.2 s for llama-3.1-8b's 1,024 at the defaults. Past ``MAX_FIT_SIMULATED_REQUESTS``
    it stops, ``exact`` false. A case whose ``max_steps`` is not its count's
    (``is_steady`` false: no schedule to simulate, no steps to check) holds as many blocks
    a request at any count: that quotient, exact."""
    b = case.labels["num_running"]
    if not is_steady(case):
        return RunningThatFits(min(b - 1, num_blocks // (steady_blocks_needed(case) // b)),
                               True)
    lo, hi = 0, min(b, num_blocks // _least_blocks_per_request(case) + 1)
    probe = min(num_blocks // (steady_blocks_needed(case) // b), hi - 1)
    spent = 0
    while hi - lo > 1 and spent + probe <= MAX_FIT_SIMULATED_REQUESTS:
        spent += probe
        if probe > lo and steady_batch_runs(steady_case_at(case, probe, num_blocks)):
            lo = probe
        elif probe > lo:
            hi = probe
        probe = (lo + hi) // 2
    return RunningThatFits(lo, hi - lo <= 1)


def _least_blocks_per_request(case: CaseSpec) -> int:
    """The fewest blocks one request of the steady case ``case`` holds at its longest at
    any count: ``steady_context_max`` at the fewest steps in all a count can take
    (``steady_max_steps`` with no prefill and no mixed step), in blocks of its size."""
    lens = steady_lens(case)
    steps = steady_max_steps(case.counted_steps, case.warmup_steps, 0, 0)
    slots = steady_context_max(case.scheduler, steps, lens.prompt_len_range[1],
                               lens.output_len_range[1])
    return -(-slots // case.scheduler.block_size)


def steady_shape(case: CaseSpec) -> SteadyShape:
    """What ``steady_running_that_fits`` reads of the steady case ``case``
    (``SteadyShape``), for a runner's memory refusal (``RunnerConfig.steady_shape``)."""
    lens = steady_lens(case)
    return SteadyShape(case.scheduler, case.labels["num_running"], case.warmup_steps,
                       case.counted_steps, case.max_steps, lens.seed,
                       tuple(lens.prompt_len_range), tuple(lens.output_len_range),
                       case.model.spec_acceptance, case.labels.get("pp"),
                       bool(case.async_scheduling))


def steady_shape_case(shape: SteadyShape) -> CaseSpec:
    """A steady case of ``shape`` (``steady_shape``'s inverse in all that
    ``steady_running_that_fits`` reads: its workload is only its seed and lengths)."""
    lens = SteadyLens(shape.seed, tuple(shape.prompt_len_range),
                      tuple(shape.output_len_range))
    labels = {"num_running": shape.num_running,
              **({"pp": shape.pp} if shape.pp is not None else {})}
    return CaseSpec(scenario="decode-steady", labels=labels, policy=CACHED,
                    codec="msgpack", scheduler=shape.scheduler,
                    model=ModelConfig(spec_acceptance=shape.spec_acceptance),
                    make_workload=lambda: lens, warmup_steps=shape.warmup_steps,
                    max_steps=shape.max_steps, counted_steps=shape.counted_steps,
                    count="decode_only", async_scheduling=shape.async_scheduling)


def steady_shape_fits(shape: SteadyShape) -> Callable[[int], RunningThatFits]:
    """``check_model_memory``'s ``running_with_blocks`` for the steady case of ``shape``
    (``steady_running_that_fits`` of ``steady_shape_case``), as the scheduler's check
    gives it (``cli.run._running_with_blocks``)."""
    case = steady_shape_case(shape)
    return lambda num_blocks: steady_running_that_fits(case, num_blocks)


def _count(n: int, word: str) -> str:
    """``1 token``, ``4 tokens``, ``1,024 tokens``."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


#: A steady case may take at most this many steps in all per counted step past its
#: warm-up and its first prompts' prefill (whichever ends later), or it is refused
#: (``check_steady_steps``): fewer than one step in 10 would be pure decode. At the
#: default 8,192-token budget a simulation of 20,000 steps finds 95 % of steps pure
#: decode at B = 64, 82 % at 256, 47 % at 1,024, 23 % at 2,048, 6.4 % at 4,096 and
#: none at 8,192 (the replacements' prompts share what the decodes leave), so every
#: scenario default (B up to 256) runs with room to spare.
MAX_STEPS_PER_COUNTED = 10
#: Requests the simulation of a steady case draws at most (``simulate_steady_steps``'s
#: ``max_requests``; about 10-20 us each, so 0.4 s at most): past them the steps are
#: extrapolated from the share of pure-decode steps simulated.
MAX_SIMULATED_REQUESTS = 20_000


@functools.lru_cache(maxsize=64)
def steady_steps(b: int, seed: int, cfg: SchedulerConfig, acceptance: float, warmup: int,
                 steps: int, pp: int = 1, async_scheduling: bool = False,
                 prompt_len_range: tuple[int, int] = STEADY_PROMPT_LEN_RANGE,
                 output_len_range: tuple[int, int] = STEADY_OUTPUT_LEN_RANGE) -> SteadySteps:
    """The simulated schedule (``harness.steady_steps``) of a steady case of ``b``
    requests of the workload of ``seed``, ``prompt_len_range`` and ``output_len_range``
    under ``cfg`` (its budget, ``max_model_len``,
    ``max_num_seqs`` and drafts, accepted with probability ``acceptance``), ``warmup``
    warm-up steps and ``steps`` counted, ``pp`` micro-batches in flight or
    ``async_scheduling``, for up to ``MAX_STEPS_PER_COUNTED`` steps per counted step
    and ``MAX_SIMULATED_REQUESTS`` requests (cached: every policy, codec and
    repetition of a grid asks)."""
    return simulate_steady_steps(
        b, seed=seed, max_num_batched_tokens=cfg.max_num_batched_tokens,
        max_model_len=cfg.max_model_len, warmup_steps=warmup, counted_steps=steps,
        patience=MAX_STEPS_PER_COUNTED * steps, num_spec_tokens=cfg.num_spec_tokens,
        acceptance=acceptance, max_requests=MAX_SIMULATED_REQUESTS, pp=pp,
        async_scheduling=async_scheduling, max_num_seqs=cfg.max_num_seqs,
        prompt_len_range=prompt_len_range, output_len_range=output_len_range)


def steady_steps_needed(sim: SteadySteps, steps: int) -> Optional[int]:
    """The steps in all a steady case needs to count ``steps`` steps: the simulation's
    own figure when it got there, else its steps so far and the rest at its share of
    pure-decode steps past the first prefill (``None`` when it simulated none)."""
    if sim.steps_in_all is not None:
        return sim.steps_in_all
    fraction = sim.pure_fraction
    if not fraction:
        return None
    return sim.simulated_steps + math.ceil((steps - sim.counted) / fraction)


def steady_max_steps(steps: int, warmup: int, prefill_steps: int, mixed_steps: int) -> int:
    """The cap on the steps in all of a steady case of ``steps`` counted and ``warmup``
    warm-up steps, whose first prompts take ``prefill_steps`` steps and which takes
    ``mixed_steps`` uncounted steps past both (``steady_case_max_steps``: from a
    simulation of its schedule, with its ``--pp`` micro-batches or async scheduling):
    ``max(warmup, prefill_steps) + steps + 2 * (mixed_steps + 10)``, twice the mixed
    steps and 20 more (the simulation's steps in all + its mixed steps + 20). A case
    that reaches the cap counted fewer steps than asked, and its summary warns."""
    return max(warmup, prefill_steps) + steps + 2 * (mixed_steps + 10)


class SteadyLens(NamedTuple):
    """What a steady case's cap and checks read of its workload (``steady_lens``): its
    seed and the ranges its prompt and output lengths are drawn from (tokens)."""

    seed: int
    prompt_len_range: tuple[int, int]
    output_len_range: tuple[int, int]

    @property
    def output_len_mean(self) -> float:
        """The mean output (tokens): the range is uniform."""
        return sum(self.output_len_range) / 2


def steady_lens(case: CaseSpec) -> SteadyLens:
    """The ``SteadyLens`` of what ``case.make_workload()`` returns: a
    ``SteadyDecodeWorkload``'s seed, ``prompt_len_range`` and ``output_len_range``
    (another workload's seed, with the default ranges where it has none)."""
    workload = case.make_workload()
    return SteadyLens(workload.seed,
                      tuple(getattr(workload, "prompt_len_range", STEADY_PROMPT_LEN_RANGE)),
                      tuple(getattr(workload, "output_len_range", STEADY_OUTPUT_LEN_RANGE)))


def steady_case_sim(case: CaseSpec) -> SteadySteps:
    """``steady_steps`` of the steady case ``case`` (its ``num_running`` label, its
    workload's seed and lengths: ``steady_lens``, its scheduler limits with their
    drafts, its model's acceptance, its warm-up and counted steps, its ``pp`` label and
    async scheduling)."""
    lens = steady_lens(case)
    return steady_steps(case.labels["num_running"], lens.seed, case.scheduler,
                        case.model.spec_acceptance, case.warmup_steps, case.counted_steps,
                        case.labels.get("pp") or 1, bool(case.async_scheduling),
                        lens.prompt_len_range, lens.output_len_range)


def steady_case_max_steps(case: CaseSpec) -> int:
    """``steady_max_steps`` of the steady case ``case`` from its simulation
    (``steady_case_sim``); a case the simulation finds too slow to count its steps
    (``check_steady_steps`` refuses it) gets the most the refusal allows."""
    sim = steady_case_sim(case)
    steps, warmup = case.counted_steps, case.warmup_steps
    prefill = sim.first_prefill_steps or 0
    start = max(warmup, prefill)
    needed = steady_steps_needed(sim, steps)
    bound = start + MAX_STEPS_PER_COUNTED * steps
    mixed = max(0, min(bound if needed is None else needed, bound) - start - steps)
    return steady_max_steps(steps, warmup, prefill, mixed)


def is_steady(case: CaseSpec) -> bool:
    """Whether ``case`` is a steady case: a ``num_running`` label (an int), ``count``
    ``decode_only`` and a number of counted steps."""
    return (isinstance(case.labels.get("num_running"), int) and case.count == "decode_only"
            and bool(case.counted_steps))


def set_steady_cap(case: CaseSpec) -> CaseSpec:
    """Set the steady case ``case``'s ``max_steps`` (``steady_case_max_steps``) and
    ``output_len_mean`` from what its ``make_workload`` returns now (``steady_lens``);
    returns it. The CLI sets them again for every steady case a scenario's ``cases``
    returns, so a ``make_workload`` swapped in after ``steady_case`` counts. Refuses
    (``ConfigError``) a workload whose longest prompt ``max_model_len`` does not exceed
    (``steady_prompt_problem``)."""
    lens = steady_lens(case)
    problem = steady_prompt_problem(case.scheduler.max_model_len, lens.prompt_len_range[1])
    if problem:
        raise ConfigError(f"case {case.case_id}: {problem}")
    case.max_steps = steady_case_max_steps(case)
    case.output_len_mean = lens.output_len_mean
    return case


def output_len_text(mean: float) -> str:
    """A mean output as the advice words it: ``1,280``, ``40``, ``40.5``."""
    return f"{mean:,.0f}" if mean == int(mean) else f"{mean:,.1f}"


#: The default steady workload's mean output (tokens): ``STEADY_OUTPUT_LEN_RANGE`` is
#: uniform.
OUTPUT_LEN_MEAN = sum(STEADY_OUTPUT_LEN_RANGE) / 2


#: The budgets ``check_steady_steps`` tries are multiples of this many tokens.
BUDGET_STEP_TOKENS = 50
#: The most tokens a step past the decodes ``check_steady_steps`` tries before it finds
#: that no budget lets a case count its steps: this many of the workload's longest
#: prompts a step (``BUDGET_ROOM_TOKENS`` with the default workload).
BUDGET_ROOM_PROMPTS = 16
BUDGET_ROOM_TOKENS = BUDGET_ROOM_PROMPTS * PROMPT_LEN_MAX


def check_steady_steps(case: CaseSpec) -> None:
    """Refuse (``ConfigError``, one line with the arithmetic) a steady case (a
    ``num_running`` label, ``count`` ``decode_only``) whose simulation
    (``steady_case_sim``) needs more than ``MAX_STEPS_PER_COUNTED`` steps per counted
    step past its warm-up and its first prompts' prefill: B requests see about B / M
    finishes a step (B x tokens a decode gains / M with drafts; M the mean output of
    its workload, ``steady_lens``: 1,280 by default), and the
    step after each prefills its replacement from the budget the decodes leave. The
    advice names the smallest budget (a multiple of ``BUDGET_STEP_TOKENS``) that lets
    the case pass when one does (the budget is the cause: it leaves too few tokens
    for the replacements' prompts), else the largest power of two below B whose case
    passes (with the steps it takes in all), and fewer ``--steps`` only when a number
    of steps (halving) passes. A ``--pp`` case and an async one are judged by their own
    simulation (micro-batches of B / N requests, each decoding every N steps; a
    replacement admitted a step later). A case of more than ``MAX_SIMULATED_REQUESTS``
    running requests, which the simulation cannot start, is refused as such
    (``_too_many_to_simulate``), advising that many where it passes. Other cases
    pass."""
    b = case.labels.get("num_running")
    if not isinstance(b, int) or case.count != "decode_only" or not case.counted_steps:
        return
    if b > MAX_SIMULATED_REQUESTS:
        advice = _fewer_running(case)
        raise ConfigError(_too_many_to_simulate(case)
                          + (f"; {advice[0]}" if advice else ""))
    problem = _steady_steps_problem(case)
    if problem is None:
        return
    budget = _budget_that_fits(case)
    if budget is not None:
        cause = _budget_cause(case)
        needed = steady_steps_needed(steady_case_sim(_with_budget(case, budget)),
                                     case.counted_steps)
        advice = [f"raise --max-num-batched-tokens to {budget:,} or more (about "
                  f"{_round2(needed):,} steps in all at {budget:,})"]
    else:
        cause = _finish_cause(case)
        advice = _fewer_running(case)
    steps = _fewer_steps(case)
    if steps is not None:
        advice.append(f"give --steps {steps:,} or fewer")
    tail = f"; {', or '.join(advice)}" if advice else ""
    raise ConfigError(f"{cause}, so {problem}{tail}")


def _with_budget(case: CaseSpec, budget: int) -> CaseSpec:
    """``case`` with a budget of ``budget`` tokens a step."""
    return replace(case, scheduler=msgspec.structs.replace(case.scheduler,
                                                           max_num_batched_tokens=budget))


def _decode_tokens(case: CaseSpec) -> int:
    """Tokens of budget the decodes of a steady case take a step (K + 1 each with K
    drafts; ``--pp N``: one micro-batch's, B / N requests)."""
    b = -(-case.labels["num_running"] // (case.labels.get("pp") or 1))
    return b * (case.scheduler.num_spec_tokens + 1)


def _budget_that_fits(case: CaseSpec) -> Optional[int]:
    """The smallest budget, a multiple of ``BUDGET_STEP_TOKENS`` above ``case``'s,
    whose case passes (bisection, taking a larger budget to pass whenever a smaller
    one does), up to 16 of its workload's longest prompts past the decodes
    (``BUDGET_ROOM_TOKENS`` with the default workload; ``None``: none does)."""
    unit = BUDGET_STEP_TOKENS
    room = BUDGET_ROOM_PROMPTS * steady_lens(case).prompt_len_range[1]
    lo = case.scheduler.max_num_batched_tokens // unit  # fails
    hi = -(-(max(case.scheduler.max_num_batched_tokens, _decode_tokens(case))
             + room) // unit)
    if _steady_steps_problem(_with_budget(case, hi * unit)) is not None:
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _steady_steps_problem(_with_budget(case, mid * unit)) is None:
            hi = mid
        else:
            lo = mid
    return hi * unit


def _fewer_running(case: CaseSpec) -> list[str]:
    """``lower --num-running to F or less (about N steps in all at F)`` for the first F
    of ``_running_candidates`` whose case passes (none: an empty list)."""
    for fit in _running_candidates(case):
        smaller = replace(case, labels={**case.labels, "num_running": fit})
        if _steady_steps_problem(smaller) is None:
            needed = steady_steps_needed(steady_case_sim(smaller), case.counted_steps)
            return [f"lower --num-running to {fit} or less (about {_round2(needed):,} "
                    f"steps in all at {fit:,})"]
    return []


def _running_candidates(case: CaseSpec) -> Iterator[int]:
    """The running-request counts ``_fewer_running`` tries, largest first: the powers
    of two below B; for a B above ``MAX_SIMULATED_REQUESTS``, that count first (down
    to a multiple of the case's ``--pp``), then the powers of two below it."""
    b, pp = case.labels["num_running"], case.labels.get("pp") or 1
    fit = b // 2
    if b > MAX_SIMULATED_REQUESTS:
        top = MAX_SIMULATED_REQUESTS // pp * pp
        if top:
            yield top
        fit = 1 << max(0, (top - 1).bit_length() - 1)  # the largest power of two below
    while fit >= 1:
        yield fit
        fit //= 2


def _too_many_to_simulate(case: CaseSpec) -> str:
    """Why ``check_steady_steps`` refuses a case of more running requests than
    ``MAX_SIMULATED_REQUESTS``: its simulation draws them all before its first step, so
    it simulates none (``simulate_steady_steps`` stops at once)."""
    b, steps = case.labels["num_running"], case.counted_steps
    return (f"--num-running {b}: the check of a steady case's steps simulates at most "
            f"{MAX_SIMULATED_REQUESTS:,} requests, fewer than the {b:,} of its first "
            f"batch, so it simulated no step and cannot tell whether "
            f"{_count(steps, 'counted step')} fit ({MAX_STEPS_PER_COUNTED} steps per "
            f"counted step at most, past the warm-up and the first prompts' prefill)")


def _fewer_steps(case: CaseSpec) -> Optional[int]:
    """The largest of ``--steps`` / 2, / 4, ... whose case passes (``None``: none)."""
    steps = case.counted_steps // 2
    while steps >= 1:
        if _steady_steps_problem(replace(case, counted_steps=steps)) is None:
            return steps
        steps //= 2
    return None


def _finish_cause(case: CaseSpec) -> str:
    """``--num-running B: about F requests finish a step (...) and the step after each
    prefills its replacement`` (``--pp N``: ``--num-running B in N micro-batches``,
    each step decoding one of them), from the mean output of its workload."""
    b, cfg = case.labels["num_running"], case.scheduler
    pp = case.labels.get("pp") or 1
    gain = expected_tokens_per_decode(cfg.num_spec_tokens, case.model.spec_acceptance)
    drafts = "" if not cfg.num_spec_tokens else (
        f", {gain:.2f} a decode with {_count(cfg.num_spec_tokens, 'draft')} accepted at "
        f"{case.model.spec_acceptance:g}")
    where = f" in {pp} micro-batches" if pp > 1 else ""
    mean = steady_lens(case).output_len_mean
    return (f"--num-running {b}{where}: about {b / pp * gain / mean:.1f} "
            f"requests finish a "
            f"step (outputs average {output_len_text(mean)} tokens{drafts}) and the step "
            f"after each prefills its replacement")


def _budget_cause(case: CaseSpec) -> str:
    """``--max-num-batched-tokens T leaves L tokens a step past the decodes of
    --num-running B for the replacements' prompts (32 to 256 tokens each)`` (its
    workload's prompt lengths; ``--pp N``: ``... the decodes of a micro-batch of
    --num-running B in N ...``)."""
    b, budget = case.labels["num_running"], case.scheduler.max_num_batched_tokens
    pp = case.labels.get("pp") or 1
    left = budget - _decode_tokens(case)
    lo, hi = steady_lens(case).prompt_len_range
    whose = f"a micro-batch of --num-running {b} in {pp}" if pp > 1 else f"--num-running {b}"
    if left < 0:  # the decodes alone overrun the budget (many drafts a request)
        k = case.scheduler.num_spec_tokens
        return (f"the decodes of {whose} take {_decode_tokens(case):,} tokens a step "
                f"({k + 1} each: 1 + {_count(k, 'draft')}), more than "
                f"--max-num-batched-tokens {budget} (each step leaves some of them to a "
                f"later one)")
    return (f"--max-num-batched-tokens {budget} leaves {_count(left, 'token')} a step past "
            f"the decodes of {whose} for the prompts of the requests that "
            f"replace those that finish ({lo} to {hi} tokens each)")


def _steady_steps_problem(case: CaseSpec) -> Optional[str]:
    """Why ``check_steady_steps`` refuses ``case``, its simulated share of pure-decode
    steps against the cap (``None``: it passes)."""
    steps = case.counted_steps
    sim = steady_case_sim(case)
    start = max(case.warmup_steps, sim.first_prefill_steps or 0)
    needed = steady_steps_needed(sim, steps)
    cap = start + MAX_STEPS_PER_COUNTED * steps
    if needed is not None and needed <= cap:
        return None
    counted = _count(steps, "counted step")
    if sim.first_prefill_steps is None:  # its draws ran out first: no cap to tell
        return (f"the first prompts' prefill had not ended after the "
                f"{sim.simulated_steps:,} steps simulated (the simulation draws at most "
                f"{MAX_SIMULATED_REQUESTS:,} requests, replacements included): none of "
                f"{counted} came in them (at most {MAX_STEPS_PER_COUNTED} steps per "
                f"counted step past the warm-up and that prefill)")
    if needed is None:
        share = (f"no step of the {sim.window_steps:,} simulated past the first prompts' "
                 f"prefill is pure decode: {counted} would need more steps in all than "
                 f"the cap of {cap:,}")
    else:
        share = (f"about {_percent(sim.pure_fraction)} of steps are pure decode: {counted} "
                 f"would need about {_round2(needed):,} steps in all, more than the cap "
                 f"of {cap:,}")
    return (f"{share} (the warm-up or the first prompts' prefill, whichever ends later: "
            f"{_count(start, 'step')}, then {MAX_STEPS_PER_COUNTED} steps per counted step)")


def _percent(fraction: float) -> str:
    """``0.2 %``, ``23 %``; ``under 0.1 %`` for a share above 0 that rounds to 0."""
    pct = 100 * fraction
    if 0 < pct < 0.05:
        return "under 0.1 %"
    return f"{pct:.1f} %" if pct < 10 else f"{pct:.0f} %"


def _round2(n: int) -> int:
    """``n`` to two significant digits (12,345 -> 12,000)."""
    digits = max(0, len(str(n)) - 2)
    return round(n, -digits)


def steady_case(opts: ScenarioOptions, scenario: str, labels: dict[str, Any], policy: str,
                codec: str, rep: int, *, model: ModelConfig, steps: int, warmup: int,
                prompt_len_range: tuple[int, int] = STEADY_PROMPT_LEN_RANGE,
                output_len_range: tuple[int, int] = STEADY_OUTPUT_LEN_RANGE) -> CaseSpec:
    """One steady-decode case (decode-steady, step-time, overhead):
    ``labels["num_running"]`` = B requests decoding at all times
    (``SteadyDecodeWorkload``, prompts and outputs drawn uniformly from
    ``prompt_len_range`` and ``output_len_range`` tokens), ``warmup`` warm-up
    steps then exactly ``steps`` counted pure-decode steps (``counted_steps``), the
    mixed steps between them (a replacement prefilling, a preempted request resuming)
    uncounted;
    ``max_steps`` caps the steps in all at ``steady_case_max_steps`` (``set_steady_cap``:
    a case that reaches it counted fewer, and its summary warns; the CLI sets it again
    from the workload ``make_workload`` returns then, with the drafts of
    ``--num-spec-tokens``); 8,192-token budget, ``max_model_len`` 4,096,
    ``steady_num_blocks(B, block_size)`` KV blocks (``steady_scheduler_config``:
    overrides apply,
    ``ConfigError`` on limits B requests cannot run under; the CLI checks the cache
    with ``check_steady_cache`` and the steps with ``check_steady_steps``); ``opts``
    gives the seed, request-id format, floor and process settings (transport,
    timeouts, host)."""
    b = labels["num_running"]
    scheduler = steady_scheduler_config(opts, b, prompt_len_range[1])
    case = CaseSpec(
        scenario=scenario, labels=labels, policy=policy, codec=codec,
        scheduler=scheduler,
        model=model,
        make_workload=lambda: SteadyDecodeWorkload(b, seed=opts.seed,
                                                   vocab_size=model.vocab_size,
                                                   prompt_len_range=prompt_len_range,
                                                   output_len_range=output_len_range,
                                                   req_id_format=opts.req_id_format,
                                                   token_ids=model.token_ids),
        warmup_steps=warmup, counted_steps=steps, count="decode_only", floor=opts.floor,
        no_floor=not opts.floor, repetition=rep,
        **opts.process_settings())
    return set_steady_cap(case)


def steady_cases(opts: ScenarioOptions, scenario: str, num_running: list[int],
                 single_process: bool = False, *,
                 prompt_len_range: tuple[int, int] = STEADY_PROMPT_LEN_RANGE,
                 output_len_range: tuple[int, int] = STEADY_OUTPUT_LEN_RANGE
                 ) -> list[CaseSpec]:
    """The steady-decode grid (decode-steady, overhead): one workload per B in
    ``num_running``, ``--steps`` (default 1000) counted steps after ``--warmup-steps``
    (default 100), the model of ``--model`` (default null); ``single_process`` as in
    ``grid``; ``prompt_len_range`` and ``output_len_range`` as in ``steady_case``."""
    steps = opts.steps or 1000
    warmup = 100 if opts.warmup_steps is None else opts.warmup_steps
    model = opts.model_config()

    def make(labels, policy, codec, rep):
        return steady_case(opts, scenario, labels, policy, codec, rep, model=model,
                           steps=steps, warmup=warmup, prompt_len_range=prompt_len_range,
                           output_len_range=output_len_range)

    return grid(opts, [{"num_running": b} for b in num_running], make,
                single_process=single_process)


#: Requests an Azure trace replay (azure-conv, azure-code and their -timed twins)
#: replays when ``--max-requests`` is not given.
DEFAULT_MAX_REQUESTS = 300
#: The step of a replay on the logical clock (azure-conv, azure-code), in ms, when
#: ``--logical-step-ms`` is not given.
DEFAULT_LOGICAL_STEP_MS = 20.0
#: ``OPTION_DEFAULTS`` of the replays (``option_defaults``): the values in effect of
#: the options left to their defaults that no case records.
LOGICAL_REPLAY_DEFAULTS = {"max_requests": DEFAULT_MAX_REQUESTS,
                           "logical_step_ms": DEFAULT_LOGICAL_STEP_MS}
TIMED_REPLAY_DEFAULTS = {"max_requests": DEFAULT_MAX_REQUESTS}


def option_defaults(module: ModuleType) -> dict[str, Any]:
    """The defaults a scenario module declares (its ``OPTION_DEFAULTS``) for options
    whose value in effect no case records (``--max-requests``, ``--logical-step-ms``),
    option field -> value as the run's ``metadata["options"]`` would record it
    given; empty when it declares none."""
    return dict(getattr(module, "OPTION_DEFAULTS", {}))


def replay_trace(opts: ScenarioOptions, default: Optional[int] = DEFAULT_MAX_REQUESTS):
    """The first ``--max-requests`` requests of ``--trace`` (else ``default``; ``None``:
    the whole trace), an ``engine.traces.Trace``; ``opts.trace_sha256`` is set to the
    SHA-256 of the bytes it read and ``opts.trace_resolved_path`` to the path resolved
    as it was read (``Trace.resolved_path``). When ``--max-requests`` was given and
    the trace has fewer, ``opts.notes`` gets a line that says so; so it does where the
    last row replayed has no line ending in a CRLF file (``Trace.unterminated_row``:
    perhaps cut short), but for a published Azure file read whole
    (``traces.PUBLISHED_SHA256``), which ends so. Raises ``TraceError``
    on an unreadable trace."""
    trace = load_azure_trace(opts.trace, max_requests=opts.max_requests or default)
    opts.trace_sha256 = trace.sha256
    opts.trace_resolved_path = trace.resolved_path
    if opts.max_requests is not None and len(trace) < opts.max_requests:
        n = len(trace)
        every = "it is" if n == 1 else "both are" if n == 2 else f"all {n:,} are"
        opts.notes.append(f"the trace has {n:,} request{'' if n == 1 else 's'}, fewer than "
                          f"--max-requests {opts.max_requests:,}: {every} replayed")
    if trace.unterminated_row is not None and trace.sha256 not in PUBLISHED_SHA256:
        opts.notes.append(f"the trace's last row (line {trace.unterminated_row:,}) has no "
                          "line ending while the lines before it end in \\r\\n: a file cut "
                          "short mid-row reads so; it is replayed as read")
    return trace


#: The Azure LLM inference traces (November 2023) the azure-* scenarios replay: the
#: CSV's expected file name and the limits of its scenarios (logical and timed).
CONV_TRACE_FILE = "AzureLLMInferenceTrace_conv.csv"
#: 2,048-token chunks, room for the conversation trace's longest conversations.
CONV_SCHEDULER = SchedulerConfig(max_num_seqs=256, max_num_batched_tokens=2048,
                                 max_model_len=16384, num_blocks=131072)
CODE_TRACE_FILE = "AzureLLMInferenceTrace_code.csv"
#: The file names of the two traces (a scenario given the other one says so).
AZURE_TRACE_FILES = (CONV_TRACE_FILE, CODE_TRACE_FILE)
CODE_SCHEDULER = SchedulerConfig(max_num_seqs=256, max_num_batched_tokens=2048,
                                 max_model_len=8192, num_blocks=131072)


def other_azure_trace_note(name: str, trace_file: str, given_path, trace) -> Optional[str]:
    """The note of scenario ``name`` (whose own file is ``trace_file``) replaying the
    other Azure trace, else ``None``. The file is known by, first, the SHA-256 of the
    bytes read (``trace.sha256``, a ``traces.Trace``; the published file's where read
    whole: ``traces.PUBLISHED_SHA256``), then the name of the path as resolved
    (``trace.resolved_path``: a link followed), then the name given (``given_path``);
    a name that is neither Azure file claims nothing. E.g. ``azure-conv replays
    AzureLLMInferenceTrace_code.csv (--trace renamed.csv: a link to it), not its own
    AzureLLMInferenceTrace_conv.csv: ...``."""
    given = os.path.basename(os.fspath(given_path))
    resolved = os.path.basename(trace.resolved_path or "") or given
    by_digest = PUBLISHED_SHA256.get(trace.sha256)
    file = by_digest or (resolved if resolved in AZURE_TRACE_FILES else given)
    if file not in AZURE_TRACE_FILES or file == trace_file:
        return None
    via = "a link to it" if file == resolved else "its SHA-256 is that file's"
    how = "" if file == given else f" (--trace {given}: {via})"
    return (f"{name} replays {file}{how}, not its own {trace_file}: the workload label "
            f"trace={name}:N names the scenario, not the file")


def trace_cases(opts: ScenarioOptions, name: str, trace_file: str,
                scheduler: SchedulerConfig, timed: bool = False) -> list[CaseSpec]:
    """Replay cases of an Azure trace (the azure-* scenarios): logical clock, or with
    ``timed`` the wall clock at ``--trace-speedup`` times real time (default 10; no
    floor case), of the first ``--max-requests`` requests (``replay_trace``; default
    ``DEFAULT_MAX_REQUESTS``). ``trace_file``: the CSV's expected name, for the error message;
    ``scheduler``: the scenario's limits (the command line's overrides apply). Raises
    ``ConfigError`` without ``--trace`` or on bad limits, ``TraceError`` on an
    unreadable trace."""
    if not opts.trace:
        raise ConfigError(f"scenario {name} needs --trace PATH (the {trace_file} file)")
    scheduler = opts.scheduler_config(scheduler)
    trace = replay_trace(opts)
    note = other_azure_trace_note(name, trace_file, opts.trace, trace)
    if note:
        opts.notes.append(note)
    step_s = (opts.logical_step_ms or DEFAULT_LOGICAL_STEP_MS) / 1000.0
    warmup = 50 if opts.warmup_steps is None else opts.warmup_steps
    model = opts.model_config()
    workload_name = f"{name}:{len(trace)}"
    speedup = (opts.trace_speedup or 10.0) if timed else None
    if speedup is not None and len(trace):
        opts.timed_replay = TimedReplay(float(trace.arrival_s[-1]), len(trace), speedup,
                                        given=opts.trace_speedup is not None)

    def make(labels, policy, codec, rep):
        return CaseSpec(
            scenario=name, labels=labels, policy=policy, codec=codec,
            scheduler=scheduler, model=model,
            make_workload=lambda: TraceWorkload(trace, name=workload_name, seed=opts.seed,
                                                vocab_size=model.vocab_size,
                                                logical_step_s=step_s,
                                                req_id_format=opts.req_id_format,
                                                token_ids=model.token_ids),
            warmup_steps=warmup, max_steps=None, count="all",
            floor=opts.floor and not timed, no_floor=not opts.floor and not timed,
            repetition=rep, trace_speedup=speedup,
            **opts.process_settings())

    cases = grid(opts, [{"trace": workload_name}], make)
    check_timed_replays(opts, cases)
    return cases
