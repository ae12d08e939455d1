"""Command line: ``python bench.py --scenario NAME [options]``, ``--list``, and
``python bench.py microbench RUN_DIR [options]`` (``ipc_bench.analysis.microbench``) and
``python bench.py report RUN_DIR [RUN_DIR ...] [--output DIR]`` (``ipc_bench.report.document``).

Exit codes: 0 success; 1 a case failed (the runner died, hung or broke the protocol;
the error line says which process, how and at which step) or the token streams of two
cases differ (the correctness oracle); 2 bad input (one line on stderr, no traceback);
130 / 143 interrupted by SIGINT / SIGTERM: the runner is killed at once, the rows
measured so far are written (the interrupted case marked ``complete: false``) and
``summary.json`` says ``incomplete``.

Every number has a range and every setting is checked before a process starts, so
bad input never surfaces as a traceback or a hang half-way through a run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Optional, Sequence

from ipc_bench.harness import signals
from ipc_bench.errors import one_line
from ipc_bench.engine.config import DEVICES, MODELS, POLICIES, TORCH_PRESETS, ConfigError
from ipc_bench.wire.codecs import CODECS
from ipc_bench.harness.signals import Interrupted
from ipc_bench.analysis.stats import METHODS
from ipc_bench.engine.traces import TraceError
from ipc_bench.engine.workloads import REQ_ID_FORMATS

REPO_ROOT = Path(__file__).resolve().parents[2]

#: Upper bounds of numeric options: far above any sensible run, low enough that a
#: typo (an extra digit or three) is refused before it allocates or runs for days.
MAX_STEPS = 10**9
MAX_NUM_SEQS = 65536
MAX_NUM_BLOCKS = 2**22          # the scheduler's free-block list: ~40 bytes per block
MAX_MODEL_LEN = 2**20
MAX_BLOCK_SIZE = 2**16
MAX_TIMEOUT_S = 86400.0
MAX_SPEEDUP = 1e6
MAX_SEED = 2**63 - 1
#: The runner's buffers may take at most this share of the machine's available memory.
MAX_MEMORY_SHARE = 0.5

#: ``SchedulerConfig`` fields the command line can override, with their bounds.
SCHEDULER_OVERRIDES = {
    "max_num_seqs": MAX_NUM_SEQS,
    "max_num_batched_tokens": MAX_MODEL_LEN * 16,
    "max_model_len": MAX_MODEL_LEN,
    "block_size": MAX_BLOCK_SIZE,
    "num_blocks": MAX_NUM_BLOCKS,
}


class UsageError(Exception):
    """Bad command-line input; exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        raise UsageError(message)


def _parse_int(text: str, lo: int, hi: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < lo:
        raise argparse.ArgumentTypeError(f"must be at least {lo}, got {value}")
    if value > hi:
        raise argparse.ArgumentTypeError(f"must be at most {hi:,}, got {value:,}")
    return value


def _int_in(lo: int, hi: int):
    def parse(text: str) -> int:
        return _parse_int(text, lo, hi)
    return parse


def _int_list(hi: int):
    def parse(text: str) -> list[int]:
        parts = [v for v in text.split(",") if v.strip()]
        if not parts:
            raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
        return list(dict.fromkeys(_parse_int(v, 1, hi) for v in parts))
    return parse


def _choices(allowed: Sequence[str]):
    def parse(text: str) -> list[str]:
        values = [v.strip() for v in text.split(",") if v.strip()]
        bad = [v for v in values if v not in allowed]
        if bad or not values:
            raise argparse.ArgumentTypeError(
                f"{','.join(bad) or text!r}: choose from {', '.join(allowed)}")
        return list(dict.fromkeys(values))
    return parse


def _float_in(hi: float):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not value > 0 or value == float("inf"):
            raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
        if value > hi:
            raise argparse.ArgumentTypeError(f"must be at most {hi:g}, got {text}")
        return value
    return parse


def _float_list(text: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}")
    if not values or any(not 0 < v < float("inf") for v in values):
        raise argparse.ArgumentTypeError(f"expected positive numbers, got {text!r}")
    if len(values) > 1000:
        raise argparse.ArgumentTypeError(f"at most 1000 values, got {len(values)}")
    return list(dict.fromkeys(values))


_positive_int = _int_in(1, 2**31 - 1)


def _host(text: str) -> str:
    from ipc_bench.wire.transport import check_host

    try:
        return check_host(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="bench.py", description=(
        "Measure what shipping sampled token ids from the scheduler to the model runner "
        "costs (send) against letting the runner cache them (cached, vLLM PR #20291)."),
        epilog="Reports: python bench.py report RUN_DIR [RUN_DIR ...] [--output DIR] "
               "(see python bench.py report --help).")
    p.add_argument("--scenario", help="scenario to run (see --list)")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--output", metavar="DIR", help="run folder (default: results/<scenario>-<time>)")
    p.add_argument("--seed", type=_int_in(0, MAX_SEED), default=0,
                   help="workload and model seed")
    p.add_argument("--steps", type=_int_in(1, MAX_STEPS),
                   help="counted-steps budget per case (steady scenarios): the case runs "
                        "about this many pure-decode steps, a few more as finished "
                        "requests are replaced")
    p.add_argument("--warmup-steps", type=_int_in(0, MAX_STEPS), help="warm-up steps per case")
    p.add_argument("--num-running", type=_int_list(MAX_NUM_SEQS), metavar="B[,B...]",
                   help="running requests per case (steady scenarios)")
    p.add_argument("--trace", metavar="PATH", help="Azure LLM inference trace CSV")
    p.add_argument("--max-requests", type=_int_in(1, MAX_STEPS), metavar="N",
                   help="replay the first N requests of the trace")
    p.add_argument("--logical-step-ms", type=_float_in(MAX_TIMEOUT_S * 1e3), metavar="MS",
                   help="trace time per scheduler step on the logical clock (default 20)")
    p.add_argument("--trace-speedup", type=_float_in(MAX_SPEEDUP), metavar="X",
                   help="timed replays: arrivals at X times real time (default 10)")
    p.add_argument("--policies", type=_choices(POLICIES), default=None,
                   help="comma-separated subset of: " + ", ".join(POLICIES)
                   + " (default: all)")
    p.add_argument("--codecs", type=_choices(CODECS), default=None,
                   help="comma-separated subset of: " + ", ".join(CODECS)
                   + " (default: all; msgpack only with --transport tcp)")
    p.add_argument("--transport", choices=("ipc", "tcp"), default="ipc",
                   help="ZeroMQ transport (ipc: socket files in a private 0700 directory)")
    p.add_argument("--host", type=_host, default=None, metavar="ADDR",
                   help="address tcp sockets bind to (default 127.0.0.1; an IP address)")
    p.add_argument("--allow-pickle-over-tcp", action="store_true",
                   help="let the pickle codec decode frames from a TCP peer (pickle runs "
                   "code on load: only if every host that can reach the port is trusted)")
    p.add_argument("--model", choices=MODELS, help=(
        "runner model: null (no compute), fixed-step (busy-waits --step-time-ms, then "
        "samples as null), torch (decoder with a paged KV cache); default: the scenario's"))
    p.add_argument("--step-time-ms", type=_float_list, metavar="MS[,MS...]",
                   help="fixed-step model's step time (default 5; a list in step-time)")
    p.add_argument("--model-preset", choices=tuple(TORCH_PRESETS),
                   help="torch model shape (default cpu)")
    p.add_argument("--torch-threads", type=_int_in(1, 1024), metavar="N",
                   help="torch threads in the runner process (default 1)")
    p.add_argument("--device", choices=DEVICES,
                   help="torch model device (default auto: cuda when available)")
    g = p.add_argument_group("scheduler limits (override the scenario's SchedulerConfig)")
    for name, hi in SCHEDULER_OVERRIDES.items():
        g.add_argument("--" + name.replace("_", "-"), type=_int_in(1, hi), metavar="N",
                       help=f"vLLM's {name} (1 to {hi:,})"
                       + ("; real memory with the torch model" if name == "num_blocks" else ""))
    p.add_argument("--repeat", type=_int_in(1, 1000), default=1,
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
    p.add_argument("--vocab-size", type=_int_in(2, 2**31 - 1), metavar="N",
                   help="vocabulary size of prompts and sampled ids (default 128256)")
    p.add_argument("--no-floor", dest="floor", action="store_false",
                   help="skip the floor (bare exchange) baseline")
    p.add_argument("--no-single-process", dest="single_process", action="store_false",
                   help="skip the single-process (no IPC) baseline cases")
    p.add_argument("--peer-timeout", type=_float_in(MAX_TIMEOUT_S), default=10.0, metavar="S",
                   help="seconds to wait for the other process's reply to a step before "
                   "failing the case (default 10; raise it for a large model on CPU)")
    p.add_argument("--startup-timeout", type=_float_in(MAX_TIMEOUT_S), default=120.0,
                   metavar="S", help="seconds allowed for the runner's start-up and first "
                   "step: imports, model load, CUDA init (default 120)")
    p.add_argument("--no-hostname", action="store_true", help="leave the hostname out of results")
    p.add_argument("--quiet", action="store_true", help="print only the final tables")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``bench.py``; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "microbench":
        from ipc_bench.analysis.microbench import main as microbench_main

        return microbench_main(argv[1:])
    if argv and argv[0] == "report":  # bench.py report RUN_DIR [RUN_DIR ...] [--output DIR]
        from ipc_bench.report.document import main as report_main

        return report_main(argv[1:])
    old_handlers = signals.install()
    try:
        return _main(argv)
    except (UsageError, ConfigError, TraceError) as exc:
        print(f"bench.py: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"bench.py: interrupted by {exc.signal_name} (exit {exc.code})", file=sys.stderr)
        return exc.code
    finally:
        signals.restore(old_handlers)


def _main(argv: list[str]) -> int:
    from ipc_bench.harness.scenario import ScenarioOptions, discover, summary_line

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
    codecs = _check_transport(args)
    overrides = {k: getattr(args, k) for k in SCHEDULER_OVERRIDES
                 if getattr(args, k) is not None}
    opts = ScenarioOptions(
        seed=args.seed, steps=args.steps, warmup_steps=args.warmup_steps,
        num_running=args.num_running, trace=args.trace, max_requests=args.max_requests,
        logical_step_ms=args.logical_step_ms, policies=policies, codecs=codecs,
        transport=args.transport, floor=args.floor, peer_timeout_s=args.peer_timeout,
        repeat=args.repeat, single_process=args.single_process,
        trace_speedup=args.trace_speedup, scheduler_overrides=overrides,
        startup_timeout_s=args.startup_timeout, host=args.host or "127.0.0.1",
        allow_pickle_over_tcp=args.allow_pickle_over_tcp, model=args.model,
        step_time_ms=args.step_time_ms, model_preset=args.model_preset,
        torch_threads=args.torch_threads, device=args.device,
        num_blocks=args.num_blocks,
        aa=args.aa, req_id_format=args.req_id_format, vocab_size=args.vocab_size)
    module = scenarios[args.scenario]
    cases = module.cases(opts)
    if not cases:
        raise UsageError(f"scenario {args.scenario} has no cases for these options")
    for case in cases:
        for name, value in overrides.items():
            if getattr(case.scheduler, name) != value:
                raise UsageError(f"scenario {args.scenario} does not take "
                                 f"--{name.replace('_', '-')}")
        case.scheduler.validate()
        case.model.validate()
        step_s = getattr(case.model, "step_time_ms", 0) / 1e3 if case.model.name == "fixed-step" \
            else 0.0
        if step_s >= case.peer_timeout_s:
            raise UsageError(f"a fixed step of {step_s * 1e3:g} ms is not shorter than "
                             f"--peer-timeout {case.peer_timeout_s:g} s")
    _check_memory(cases)
    _check_torch_cases(cases)
    return _run(args, cases, getattr(module, "report", None))


def _check_torch_cases(cases) -> None:
    """Probe the torch model's device once (in a child process, so this process never
    imports torch) and check every torch case's KV cache fits it (``ConfigError``)."""
    from ipc_bench.engine.config import check_kv_cache_memory
    from ipc_bench.engine.models import probe_torch_device

    probed: dict[str, tuple] = {}
    for case in cases:
        model = case.model
        if model.name != "torch":
            continue
        if model.device not in probed:
            probed[model.device] = probe_torch_device(model.device)
        device, memory = probed[model.device]
        check_kv_cache_memory(case.scheduler, model, device, memory)


def _check_transport(args) -> list[str]:
    """The codecs to run; refuses ``--host`` without tcp and pickle over tcp unless
    ``--allow-pickle-over-tcp`` (then pickle is left out of the default codecs)."""
    if args.host is not None and args.transport != "tcp":
        raise UsageError("--host applies to --transport tcp only")
    if args.codecs is None:
        if args.transport == "tcp" and not args.allow_pickle_over_tcp:
            return ["msgpack"]
        return list(CODECS)
    if "pickle" in args.codecs and args.transport == "tcp" and not args.allow_pickle_over_tcp:
        raise UsageError("refusing to decode pickle from a TCP peer: pickle runs code on load "
                         "and any local user can connect to a TCP port; use --codecs msgpack "
                         "or --transport ipc, or pass --allow-pickle-over-tcp if every host "
                         "that can reach the port is trusted")
    return args.codecs


def _available_memory_bytes() -> Optional[int]:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _check_memory(cases) -> None:
    """Refuse limits whose runner buffers (int32 ``[max_num_seqs, max_model_len]``
    tokens + ``[max_num_seqs, max_blocks_per_req]`` block table) would take more than
    ``MAX_MEMORY_SHARE`` of the available memory."""
    avail = _available_memory_bytes()
    if avail is None:
        return
    for case in cases:
        cfg = case.scheduler
        need = 4 * cfg.max_num_seqs * (cfg.max_model_len + cfg.max_blocks_per_req)
        if need > MAX_MEMORY_SHARE * avail:
            raise UsageError(
                f"max_num_seqs {cfg.max_num_seqs} x max_model_len {cfg.max_model_len} needs "
                f"{need / 2**20:,.0f} MiB of runner buffers, more than "
                f"{MAX_MEMORY_SHARE:.0%} of the {avail / 2**20:,.0f} MiB available")


def _run(args, cases, scenario_report=None) -> int:
    from ipc_bench.analysis.bytemodel import byte_model_report
    from ipc_bench.analysis.capture import build_captures, save_captures
    from ipc_bench.harness.spec import CaseResult
    from ipc_bench.harness.environment import collect_metadata, cpu_usage_between, read_cpu_times
    from ipc_bench.analysis.summary import (attach_token_bytes, check_digests, noise_warnings,
                                   summarize_case)
    from ipc_bench.harness.spec import CaseError
    from ipc_bench.harness.supervisor import run_case
    from ipc_bench.harness.progress import case_progress, progress_enabled
    from ipc_bench.harness.run_folder import RunWriter, default_run_dir
    from ipc_bench.engine.scheduler import SchedulerError
    from ipc_bench.analysis.stats import compare_cases
    from ipc_bench.report.tables import format_byte_model, format_comparisons, format_tables

    # Nothing this run writes (results, captures, socket files) is group- or
    # world-writable, whatever umask it was started with.
    os.umask(os.umask(0) | 0o022)
    try:
        run_dir = (Path(args.output) if args.output
                   else default_run_dir(REPO_ROOT / "results", args.scenario))
    except OSError as exc:
        raise UsageError(f"cannot create a results folder under {REPO_ROOT / 'results'}: "
                         f"{exc.strerror}") from None
    if run_dir.exists() and not run_dir.is_dir():
        raise UsageError(f"output path {run_dir} exists and is not a folder")
    if run_dir.exists() and any(run_dir.iterdir()):
        raise UsageError(f"output folder {run_dir} exists and is not empty")
    try:  # claim the folder: of two runs given the same --output, one is refused
        run_dir.mkdir(parents=True, exist_ok=True)
        os.close(os.open(run_dir / ".claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        raise UsageError(f"output folder {run_dir} is in use by another run") from None
    except OSError as exc:
        raise UsageError(f"cannot write results to {run_dir}: {exc.strerror}") from None
    metadata = collect_metadata(include_hostname=not args.no_hostname)
    metadata["scenario"] = args.scenario
    metadata["seed"] = args.seed
    metadata["aa"] = bool(getattr(args, "aa", False))
    metadata["ci_method"] = getattr(args, "ci_method", "t")
    metadata["cases"] = [dict(case_id=c.case_id, labels=c.labels, policy=c.policy,
                              arm=c.arm_label, codec=c.codec, scheduler=_struct(c.scheduler),
                              model=_struct(c.model), warmup_steps=c.warmup_steps,
                              max_steps=c.max_steps, count=c.count, transport=c.transport,
                              repetition=c.repetition, peer_timeout_s=c.peer_timeout_s,
                              startup_timeout_s=c.startup_timeout_s, stream=c.stream)
                         for c in cases]
    try:
        writer = RunWriter(run_dir, metadata)
    except OSError as exc:
        raise UsageError(f"cannot write results to {run_dir}: "
                         f"{exc.strerror or exc}") from None
    log = (lambda *a: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr,
                                                                  flush=True))
    log(f"ipc-bench: {args.scenario}, {len(cases)} cases -> {run_dir}")

    def partial_summary(result) -> dict:
        """Summary of a case that did not finish; never raises."""
        try:
            return summarize_case(result)
        except Exception as exc:  # the partial data itself may be what is broken
            return dict(case_id=result.spec.case_id, scenario=result.spec.scenario,
                        policy=result.spec.policy, codec=result.spec.codec,
                        workload=result.spec.workload_key, complete=False,
                        error=result.error, failed_step=result.failed_step,
                        num_total_steps=len(result.sched_rows),
                        summary_error=f"{type(exc).__name__}: {exc}")

    def stop_case(result, message: str, status: str) -> None:
        result.error = message
        if result.failed_step is None and result.sched_rows:
            result.failed_step = result.sched_rows[-1][0] + 1
        with signals.deferred():
            writer.add_case(result, partial_summary(result))
            writer.finish(status, [f"{result.spec.case_id}: {message}"],
                          failed_case=result.spec.case_id)

    show_progress = progress_enabled(args.quiet)
    captured: list = []
    for i, case in enumerate(cases, 1):
        t0 = time.perf_counter()
        cpu_before = read_cpu_times()
        result = CaseResult(spec=case)
        writer.begin_case(case)
        bar = case_progress(case, f"[{i}/{len(cases)}] {case.case_id}") \
            if show_progress else None
        try:
            run_case(case, on_step=bar, result=result, sink=writer)
        except (CaseError, SchedulerError, ConfigError) as exc:
            log(f"[{i}/{len(cases)}] {case.case_id}: FAILED: {exc}")
            stop_case(result, str(exc), "failed")
            print(f"bench.py: error: {case.case_id}: {exc}", file=sys.stderr)
            print(f"bench.py: partial results: {run_dir}", file=sys.stderr)
            return 1
        except Interrupted as exc:
            stop_case(result, f"interrupted by {exc.signal_name}", "incomplete")
            where = (f"at step {result.failed_step}" if result.failed_step is not None
                     else "before its first step")
            print(f"bench.py: {case.case_id}: interrupted by {exc.signal_name} {where}; "
                  f"partial results: {run_dir}", file=sys.stderr)
            raise
        except OSError as exc:  # the run folder became unwritable (disk full, removed)
            stop_case(result, f"cannot write results: {exc}", "failed")
            print(f"bench.py: error: cannot write results to {run_dir}: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            return 1
        except Exception as exc:  # a bug: keep what was measured, show where it broke
            traceback.print_exc(file=sys.stderr)
            stop_case(result, f"internal error: {type(exc).__name__}: {exc}", "failed")
            print(f"bench.py: internal error in {case.case_id}: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
            return 1
        finally:
            if bar is not None:
                bar.close()
        with signals.deferred():  # a finished case is written whole, then the signal acts
            usage = cpu_usage_between(cpu_before, read_cpu_times())
            attach_token_bytes(result)
            summary = summarize_case(result)
            summary["machine_busy_pct"] = usage.get("busy_pct")
            summary["cpu_steal_pct"] = usage.get("steal_pct")
            summary["warnings"] = noise_warnings(summary, usage)
            for w in summary["warnings"]:
                log(f"  warning: {w}")
            writer.add_case(result, summary)
            if case.repetition == 0 and not case.stream:  # a streamed case kept no frames
                captures = build_captures(result)
                save_captures(run_dir, result)
                if case.count == "decode_only":
                    captured.append((case, captures))
        log(f"[{i}/{len(cases)}] {case.case_id}: {summary.get('num_steps', 0)} steps, "
            f"{summary.get('output_tokens_per_s') or 0:,.0f} tok/s "
            f"({time.perf_counter() - t0:.1f} s)")
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
