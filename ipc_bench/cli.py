"""Command line: ``python bench.py --scenario NAME [options]``, ``--list``, and
``python bench.py microbench RUN_DIR [options]`` (``ipc_bench.microbench``) and
``python bench.py report RUN_DIR [RUN_DIR ...] [--output DIR]`` (``ipc_bench.report``).

Exit codes: 0 success; 1 a case failed or the token streams of two cases differ
(the correctness oracle); 2 bad input (one line on stderr, no traceback); 130 / 143
interrupted by SIGINT / SIGTERM (results so far are kept, marked incomplete).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

from ipc_bench.config import CODECS, DEVICES, MODELS, POLICIES, TORCH_PRESETS, ConfigError
from ipc_bench.stats import METHODS
from ipc_bench.traces import TraceError
from ipc_bench.workload import REQ_ID_FORMATS

REPO_ROOT = Path(__file__).resolve().parent.parent


class UsageError(Exception):
    """Bad command-line input; exit code 2."""


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived; ``code`` is the exit code (130 or 143)."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        raise UsageError(message)


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def _choices(allowed: Sequence[str]):
    def parse(text: str) -> list[str]:
        values = [v.strip() for v in text.split(",") if v.strip()]
        bad = [v for v in values if v not in allowed]
        if bad or not values:
            raise argparse.ArgumentTypeError(
                f"{','.join(bad) or text!r}: choose from {', '.join(allowed)}")
        return list(dict.fromkeys(values))
    return parse


def _float_list(text: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}")
    if not values or any(not 0 < v < float("inf") for v in values):
        raise argparse.ArgumentTypeError(f"expected positive numbers, got {text!r}")
    return list(dict.fromkeys(values))


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="bench.py", description=(
        "Measure what shipping sampled token ids from the scheduler to the model runner "
        "costs (send) against letting the runner cache them (cached, vLLM PR #20291)."),
        epilog="Reports: python bench.py report RUN_DIR [RUN_DIR ...] [--output DIR] "
               "(see python bench.py report --help).")
    p.add_argument("--scenario", help="scenario to run (see --list)")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--output", metavar="DIR", help="run folder (default: results/<scenario>-<time>)")
    p.add_argument("--seed", type=_non_negative_int, default=0, help="workload and model seed")
    p.add_argument("--steps", type=_positive_int, help="counted steps per case (steady scenarios)")
    p.add_argument("--warmup-steps", type=_non_negative_int, help="warm-up steps per case")
    p.add_argument("--num-running", type=_int_list, metavar="B[,B...]",
                   help="running requests per case (steady scenarios)")
    p.add_argument("--trace", metavar="PATH", help="Azure LLM inference trace CSV")
    p.add_argument("--max-requests", type=_positive_int, metavar="N",
                   help="replay the first N requests of the trace")
    p.add_argument("--logical-step-ms", type=_positive_float, metavar="MS",
                   help="trace time per scheduler step on the logical clock (default 20)")
    p.add_argument("--trace-speedup", type=_positive_float, metavar="X",
                   help="timed replays: arrivals at X times real time (default 10)")
    p.add_argument("--policies", type=_choices(POLICIES), default=None,
                   help="comma-separated subset of: " + ", ".join(POLICIES)
                   + " (default: all)")
    p.add_argument("--codecs", type=_choices(CODECS), default=list(CODECS),
                   help="comma-separated subset of: " + ", ".join(CODECS))
    p.add_argument("--transport", choices=("ipc", "tcp"), default="ipc",
                   help="ZeroMQ transport (tcp binds 127.0.0.1)")
    p.add_argument("--model", choices=MODELS, help=(
        "runner model: null (no compute), fixed-step (busy-waits --step-time-ms, then "
        "samples as null), torch (decoder with a paged KV cache); default: the scenario's"))
    p.add_argument("--step-time-ms", type=_float_list, metavar="MS[,MS...]",
                   help="fixed-step model's step time (default 5; a list in step-time)")
    p.add_argument("--model-preset", choices=tuple(TORCH_PRESETS),
                   help="torch model shape (default cpu)")
    p.add_argument("--torch-threads", type=_positive_int, metavar="N",
                   help="torch threads in the runner process (default 1)")
    p.add_argument("--device", choices=DEVICES,
                   help="torch model device (default auto: cuda when available)")
    p.add_argument("--num-blocks", type=_positive_int, metavar="N",
                   help="KV-cache blocks (default: the scenario's; real memory with torch)")
    p.add_argument("--repeat", type=_positive_int, default=1,
                   help="repetitions of each case, interleaved (A B, B A, A B ...); with 2 or "
                   "more the summary compares the arms with paired 95 %% intervals")
    p.add_argument("--aa", action="store_true",
                   help="A/A run: one policy (--policies, default send) against a copy of "
                   "itself, labelled e.g. send and send'")
    p.add_argument("--ci-method", choices=METHODS, default="t",
                   help="interval of the paired comparisons: t (t-interval on log ratios, "
                   "default), bootstrap (percentile bootstrap of the median) or sign "
                   "(distribution-free sign-test interval of the median, >= 6 pairs)")
    p.add_argument("--req-id-format", choices=REQ_ID_FORMATS, default="cmpl",
                   help="request ids: cmpl (cmpl-<32 hex>-0, default), chatcmpl "
                   "(chatcmpl-<32 hex>) or numeric (0, 1, ...)")
    p.add_argument("--vocab-size", type=_positive_int, metavar="N",
                   help="vocabulary size of prompts and sampled ids (default 128256)")
    p.add_argument("--no-floor", dest="floor", action="store_false",
                   help="skip the floor (bare exchange) baseline")
    p.add_argument("--no-single-process", dest="single_process", action="store_false",
                   help="skip the single-process (no IPC) baseline cases")
    p.add_argument("--peer-timeout", type=_positive_float, default=30.0, metavar="S",
                   help="seconds to wait for the peer process before failing (default 30)")
    p.add_argument("--no-hostname", action="store_true", help="leave the hostname out of results")
    p.add_argument("--quiet", action="store_true", help="print only the final tables")
    return p


def _on_signal(signum, frame):
    raise Interrupted(128 + signum)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``bench.py``; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "microbench":
        from ipc_bench.microbench import main as microbench_main

        return microbench_main(argv[1:])
    if argv and argv[0] == "report":  # bench.py report RUN_DIR [RUN_DIR ...] [--output DIR]
        from ipc_bench.report import main as report_main

        return report_main(argv[1:])
    try:
        return _main(argv)
    except UsageError as exc:
        print(f"bench.py: error: {exc}", file=sys.stderr)
        return 2
    except (ConfigError, TraceError) as exc:
        print(f"bench.py: error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"bench.py: interrupted (exit {exc.code}); results so far are kept",
              file=sys.stderr)
        return exc.code


def _main(argv: list[str]) -> int:
    from ipc_bench.scenario import ScenarioOptions, discover, summary_line

    args = build_parser().parse_args(argv)
    scenarios = discover()
    if args.list:
        width = max(len(n) for n in scenarios)
        for name, module in scenarios.items():
            print(f"{name.ljust(width)}  {summary_line(module)}")
        return 0
    if not args.scenario:
        raise UsageError("give --scenario NAME (or --list)")
    if args.scenario not in scenarios:
        raise UsageError(f"unknown scenario {args.scenario!r}; choose from "
                         f"{', '.join(scenarios)}")
    policies = args.policies or list(POLICIES)
    if args.aa:
        if args.policies and len(args.policies) > 1:
            raise UsageError("--aa compares one policy with itself: give --policies send "
                             "or --policies cached")
        policies = [args.policies[0] if args.policies else "send"]
    opts = ScenarioOptions(
        seed=args.seed, steps=args.steps, warmup_steps=args.warmup_steps,
        num_running=args.num_running, trace=args.trace, max_requests=args.max_requests,
        logical_step_ms=args.logical_step_ms, policies=policies, codecs=args.codecs,
        transport=args.transport, floor=args.floor, peer_timeout_s=args.peer_timeout,
        repeat=args.repeat, single_process=args.single_process,
        trace_speedup=args.trace_speedup, model=args.model,
        step_time_ms=args.step_time_ms, model_preset=args.model_preset,
        torch_threads=args.torch_threads, device=args.device,
        num_blocks=args.num_blocks,
        aa=args.aa, req_id_format=args.req_id_format, vocab_size=args.vocab_size)
    module = scenarios[args.scenario]
    cases = module.cases(opts)
    for case in cases:
        case.scheduler.validate()
        case.model.validate()
    _check_torch_cases(cases)
    return _run(args, cases, getattr(module, "report", None))


def _check_torch_cases(cases) -> None:
    """Probe the torch model's device once (in a child process, so this process never
    imports torch) and check every torch case's KV cache fits it (``ConfigError``)."""
    from ipc_bench.config import check_kv_cache_memory
    from ipc_bench.model import probe_torch_device

    probed: dict[str, tuple] = {}
    for case in cases:
        model = case.model
        if model.name != "torch":
            continue
        if model.device not in probed:
            probed[model.device] = probe_torch_device(model.device)
        device, memory = probed[model.device]
        check_kv_cache_memory(case.scheduler, model, device, memory)


def _run(args, cases, scenario_report=None) -> int:
    from ipc_bench.bytemodel import byte_model_report
    from ipc_bench.capture import build_captures, save_captures
    from ipc_bench.environment import collect_metadata, cpu_usage_between, read_cpu_times
    from ipc_bench.metrics import (attach_token_bytes, check_digests, noise_warnings,
                                   summarize_case)
    from ipc_bench.processes import CaseError, run_case
    from ipc_bench.progress import case_progress, progress_enabled
    from ipc_bench.results import RunWriter, default_run_dir
    from ipc_bench.scheduler import SchedulerError
    from ipc_bench.stats import compare_cases
    from ipc_bench.tables import format_byte_model, format_comparisons, format_tables

    run_dir = Path(args.output) if args.output else default_run_dir(REPO_ROOT / "results",
                                                                    args.scenario)
    if run_dir.exists() and any(run_dir.iterdir()):
        raise UsageError(f"output folder {run_dir} exists and is not empty")
    metadata = collect_metadata(include_hostname=not args.no_hostname)
    metadata["scenario"] = args.scenario
    metadata["seed"] = args.seed
    metadata["aa"] = bool(getattr(args, "aa", False))
    metadata["ci_method"] = getattr(args, "ci_method", "t")
    metadata["cases"] = [dict(case_id=c.case_id, labels=c.labels, policy=c.policy,
                              arm=c.arm_label, codec=c.codec, scheduler=_struct(c.scheduler),
                              model=_struct(c.model), warmup_steps=c.warmup_steps,
                              max_steps=c.max_steps, count=c.count, transport=c.transport,
                              repetition=c.repetition) for c in cases]
    try:
        writer = RunWriter(run_dir, metadata)
    except OSError as exc:
        raise UsageError(f"cannot write results to {run_dir}: {exc.strerror}") from None
    log = (lambda *a: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr,
                                                                  flush=True))
    log(f"ipc-bench: {args.scenario}, {len(cases)} cases -> {run_dir}")
    show_progress = progress_enabled(args.quiet)
    old_handlers = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    failures: list[str] = []
    captured: list = []
    try:
        for i, case in enumerate(cases, 1):
            t0 = time.perf_counter()
            bar = case_progress(case, f"[{i}/{len(cases)}] {case.case_id}") \
                if show_progress else None
            cpu_before = read_cpu_times()
            try:
                result = run_case(case, on_step=bar)
            except (CaseError, SchedulerError) as exc:
                if bar is not None:
                    bar.close()
                failures.append(f"{case.case_id}: {exc}")
                log(f"[{i}/{len(cases)}] {case.case_id}: FAILED: {exc}")
                writer.finish("failed", failures)
                print(f"bench.py: error: {case.case_id}: {exc}", file=sys.stderr)
                return 1
            finally:
                if bar is not None:
                    bar.close()
            usage = cpu_usage_between(cpu_before, read_cpu_times())
            attach_token_bytes(result)
            summary = summarize_case(result)
            summary["machine_busy_pct"] = usage.get("busy_pct")
            summary["cpu_steal_pct"] = usage.get("steal_pct")
            summary["warnings"] = noise_warnings(summary, usage)
            for w in summary["warnings"]:
                log(f"  warning: {w}")
            writer.add_case(result, summary)
            if case.repetition == 0:
                captures = build_captures(result)
                save_captures(run_dir, result)
                if case.count == "decode_only":
                    captured.append((case, captures))
            log(f"[{i}/{len(cases)}] {case.case_id}: {summary.get('num_steps', 0)} steps, "
                f"{summary.get('output_tokens_per_s', 0):,.0f} tok/s "
                f"({time.perf_counter() - t0:.1f} s)")
    except Interrupted:
        writer.finish("incomplete", ["interrupted"])
        raise
    finally:
        for s, h in old_handlers.items():
            signal.signal(s, h)
    problems = check_digests(writer.cases)
    writer.comparisons = compare_cases(writer.cases, method=getattr(args, "ci_method", "t"))
    writer.byte_model = byte_model_report(captured, writer.cases)
    problems += [f"byte model: {r['workload']} {r['codec']} {r['arm']}: "
                 f"{r['mismatches']} of {r['messages_checked']} captured messages differ "
                 "from the formula" for r in writer.byte_model if r["mismatches"]]
    print(format_tables(writer.cases))
    if any(c["n_pairs"] >= 2 for c in writer.comparisons):
        print(format_comparisons(c for c in writer.comparisons if c["n_pairs"] >= 2))
    if writer.byte_model:
        print(format_byte_model(writer.byte_model))
    if scenario_report is not None:
        extra = scenario_report(writer.cases)
        if extra:
            print(extra)
    print(f"\nresults: {run_dir}")
    if problems:
        writer.finish("failed", problems)
        for p in problems:
            print(f"bench.py: error: {p}", file=sys.stderr)
        return 1
    writer.finish("complete")
    return 0


def _struct(obj) -> dict:
    import msgspec

    return msgspec.to_builtins(obj)
