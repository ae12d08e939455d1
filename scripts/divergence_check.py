#!/usr/bin/env python3
r"""One configuration of the torch model run N times, each in a fresh process, and
the runs' sampled tokens compared: the first diverging step and request, and the
top-2 logit margin there.

Each run (``--runs``, default 5) is a new Python process that drives one
decode-steady case as the harness's single-process case does
(``scenario.steady_case``: ``SteadyDecodeWorkload`` with its prompts and outputs,
the case's ``SchedulerConfig``, ``engine.scheduler.Scheduler`` and
``engine.model_runner.ModelRunner`` over ``models.TorchModel``, one
``ModelRunner.execute_model`` per step), so the batch and each request's context
change step by step exactly as in a run, and the attention backend pads as it does
there (``gather`` to the batch's longest context, ``flex`` and ``varlen`` to the
batch's bucket). The first steps prefill the prompts; every step is recorded:
``--steps`` steps in all. The model's logits are read where the runner's step makes
them (``TorchModel.forward_logits``, wrapped on the instance): for each request that
sampled a token, the token and the top-2 margin (largest logit minus the second
largest, float32); the argmax is taken from the same logits, so the tokens are the
runner's. CUDA graphs are not offered: a replayed step keeps its logits inside the
graph.

Then every pair of runs is compared step by step. Per pair it prints ``equal`` or
where the streams first differ: the step, the request, each run's token and its
top-2 margin there; and per run the smallest margins seen (the steps where a
last-bit difference could flip a greedy token). Each run keeps its number, in the
printed lines and in ``--output`` (``compared``, ``pairs``' ``runs``, each run's
``n``): after run 2 failed, runs 1 and 3 are compared, and a line says so. With random weights the top two of a
128k vocabulary are close, so a divergence usually lands where the margin is a few
ulps of the logits.

Settings to isolate a cause (each run gets the same; recorded in the output):
``--deterministic`` (``torch.use_deterministic_algorithms(True)`` and
``CUBLAS_WORKSPACE_CONFIG=:4096:8`` in the run's environment), ``--cudnn-sdpa on``
(turns cuDNN's scaled-dot-product attention back on after the model turned it off,
``cuda_step.configure_cuda_attention``), ``--sdpa-math`` (flash and memory-efficient
SDPA off, the math kernel alone). On CPU they are applied as far as they mean
anything there.

On CPU (no CUDA) the defaults shrink to the ``tiny`` preset, 4 running and 20 steps:
``python scripts/divergence_check.py``. On a GPU, for issue 11's case::

    python scripts/divergence_check.py --preset llama-3.2-1b --num-running 16 \
        --steps 300 --attention gather --output div.json
    python scripts/divergence_check.py ... --cudnn-sdpa on     # the old default
    python scripts/divergence_check.py ... --deterministic

Limits: ``--runs`` 2 to 100, ``--num-running`` at most 8192 (the case's
``max_num_batched_tokens``), ``--seed`` 0 to 2**63 - 1 (bench.py's), ``--budget-s``
at most 86400. ``--output`` is written to before any run (a small file beside it,
removed), so that a full disk is refused then.

Exit status: 0 when every run completed and all agree token for token; 1 when two
runs diverge (a found divergence is a result of the check, not a failure of it;
``--output`` then holds where), or the ``--output`` file could not be written; 2 for
bad input, one line on stderr before anything runs (an ``--output`` that cannot be
written included); 3 when a run failed or ``--budget-s`` ran out before every run
completed (the runs that completed are still compared, and a divergence among them
gives 1; the runs not started for want of budget are one line); 130 / 143 / 129 when
interrupted by SIGINT / SIGTERM / SIGHUP, with one line (the running run is killed).
"""

from __future__ import annotations

import signal

if __name__ == "__main__":
    # As bench.py: the signals of ipc_bench.harness.signals.HANDLED, spelt out
    # (tests/cli/test_script_first_mask.py compares), stay pending until main() has
    # installed its handlers (ipc_bench.harness.signals), so none lands in an import.
    signal.pthread_sigmask(signal.SIG_BLOCK, (
        signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
        signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGXCPU))

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ipc_bench.cli.console import script_main, write_output  # noqa: E402
from ipc_bench.cli.once import OnceParser  # noqa: E402
from ipc_bench.cli.options import MAX_SEED, writable_file  # noqa: E402
from ipc_bench.errors import module_doc  # noqa: E402
from ipc_bench.harness import signals  # noqa: E402

PROG = "divergence_check.py"

#: Exit status when a run failed or the budget ran out before every run completed.
EXIT_INCOMPLETE = 3
#: How many of the smallest top-2 margins each run reports.
SMALLEST = 5
#: ``--budget-s``'s default, seconds for all runs together.
DEFAULT_BUDGET_S = 600.0
#: The least budget a further run is started with, seconds.
MIN_RUN_S = 5.0
#: ``--budget-s``'s bound, a day (as gpu_check.py's ``MAX_BUDGET_S``): a run's wait
#: (``communicate(timeout=...)``, a poll in whole milliseconds) cannot go past about
#: 24.8 days, and a larger budget ended in a traceback.
MAX_BUDGET_S = 86400.0
#: ``--runs``' bound: 100 runs are 4,950 pairs, far more than a divergence needs.
MAX_RUNS = 100
#: ``--num-running``'s bound: the decode-steady case's token budget per step
#: (``scenario.steady_scheduler_config``'s ``max_num_batched_tokens``), which every
#: running request's decode takes a token of; this script has no option to raise it.
MAX_NUM_RUNNING = 8192


# ---------------------------------------------------------------------------- compare


def _stream(run: dict[str, Any]) -> list[dict[str, Any]]:
    return run.get("steps", [])


def first_divergence(a: dict[str, Any], b: dict[str, Any]) -> Optional[dict[str, Any]]:
    """Where runs ``a`` and ``b`` (each ``{"steps": [{"req_ids", "tokens",
    "margins"}, ...]}``) first differ: ``None`` when their common steps are equal;
    else ``{"step", "request", "tokens": [a's, b's], "margins": [a's, b's]}`` at the
    first step whose requests or tokens differ, the first request there that differs
    (a request only one run sampled has ``None`` for the other's token and margin)."""
    for i, (sa, sb) in enumerate(zip(_stream(a), _stream(b))):
        if sa["req_ids"] == sb["req_ids"] and sa["tokens"] == sb["tokens"]:
            continue
        at_a = dict(zip(sa["req_ids"], zip(sa["tokens"], sa["margins"])))
        at_b = dict(zip(sb["req_ids"], zip(sb["tokens"], sb["margins"])))
        order = list(sa["req_ids"]) + [r for r in sb["req_ids"] if r not in at_a]
        for req in order:
            ta, tb = at_a.get(req, (None, None)), at_b.get(req, (None, None))
            if ta[0] != tb[0]:
                return dict(step=i, request=req, tokens=[ta[0], tb[0]],
                            margins=[ta[1], tb[1]])
        return dict(step=i, request=None, tokens=[None, None], margins=[None, None])
    return None


def smallest_margins(run: dict[str, Any], k: int = SMALLEST) -> list[dict[str, Any]]:
    """The ``k`` smallest top-2 margins of ``run``: ``{"step", "request", "margin"}``,
    smallest first (ties in step order)."""
    seen = [(m, i, req) for i, s in enumerate(_stream(run))
            for req, m in zip(s["req_ids"], s["margins"])]
    return [dict(step=i, request=req, margin=m) for m, i, req in sorted(
        seen, key=lambda t: (t[0], t[1]))[:k]]


def compare_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Every pair of ``runs`` compared (``first_divergence``): ``{"compared": [the
    runs' numbers], "pairs": [{"runs": [m, n], "equal", "steps" (compared),
    "divergence"}], "smallest": [per run of "compared", smallest_margins], "diverged":
    any pair differs}``. A run is numbered by its ``n`` (the run number its progress
    line and a failure name; ``run_fresh`` sets it), else by its place (1-based): after
    run 2 failed, runs 1 and 3 are compared as ``[1, 3]``. Runs of different lengths are
    compared over their common steps; ``equal`` is then about those (a run cut short is
    not a record at all: ``run_fresh``)."""
    numbers = [r.get("n", i) for i, r in enumerate(runs, 1)]
    pairs = []
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            div = first_divergence(runs[i], runs[j])
            pairs.append(dict(runs=[numbers[i], numbers[j]], equal=div is None,
                              steps=min(len(_stream(runs[i])), len(_stream(runs[j]))),
                              divergence=div))
    return dict(compared=numbers, pairs=pairs, smallest=[smallest_margins(r) for r in runs],
                diverged=any(not p["equal"] for p in pairs))


def _margin(m: Optional[float]) -> str:
    return "-" if m is None else f"{m:.6g}"


def _token(t: Optional[int]) -> str:
    return "none" if t is None else str(t)


def _listed(numbers: list[int]) -> str:
    """``[1, 3, 4]`` -> ``1, 3 and 4``."""
    words = [str(n) for n in numbers]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def compare_lines(result: dict[str, Any], asked: Optional[int] = None) -> list[str]:
    """``compare_runs``'s result as the lines the script prints, each run by its number:
    where fewer than ``asked`` runs completed and two or more did, first which are
    compared (``comparing runs 1 and 3, the 2 of 3 that completed``); one line per pair,
    then per run its smallest margins (``as run N`` where they are run N's)."""
    numbers = result["compared"]
    lines = []
    if asked is not None and 2 <= len(numbers) < asked:
        lines.append(f"comparing runs {_listed(numbers)}, the {len(numbers)} of {asked} "
                     "that completed")
    for p in result["pairs"]:
        i, j = p["runs"]
        d = p["divergence"]
        if d is None:
            lines.append(f"run {i} vs run {j}: equal over {p['steps']} steps")
        elif d["request"] is None:
            lines.append(f"run {i} vs run {j}: DIVERGE at step {d['step']}: the requests "
                         "sampled differ")
        else:
            lines.append(f"run {i} vs run {j}: DIVERGE at step {d['step']}, request "
                         f"{d['request']}: token {_token(d['tokens'][0])} (top-2 margin "
                         f"{_margin(d['margins'][0])}) vs {_token(d['tokens'][1])} "
                         f"(top-2 margin {_margin(d['margins'][1])})")
    for k, (n, small) in enumerate(zip(numbers, result["smallest"])):
        same = next((m for m, other in zip(numbers[:k], result["smallest"][:k])
                     if other == small), None)
        lines.append(f"run {n}: smallest top-2 margins: " + (
            f"as run {same}" if same is not None and small else ", ".join(
                f"{_margin(s['margin'])} (step {s['step']}, {s['request']})" for s in small)
            or "none (no token sampled)"))
    return lines


# ---------------------------------------------------------------------------- one run


def apply_settings(torch, settings: dict[str, Any]) -> None:
    """Before the model is built: ``--deterministic``, ``--sdpa-math``."""
    if settings["deterministic"]:
        torch.use_deterministic_algorithms(True)
    if settings["sdpa_math"]:
        torch.backends.cuda.enable_flash_sdp(False)
        torch.backends.cuda.enable_mem_efficient_sdp(False)


def build_case(settings: dict[str, Any]):
    """The decode-steady case the run drives (``scenario.steady_case``, as
    ``bench.py run decode-steady --model torch`` builds it, single-process)."""
    from ipc_bench.harness.scenario import ScenarioOptions, steady_case

    opts = ScenarioOptions(seed=settings["seed"], model="torch",
                           model_preset=settings["preset"], device=settings["device"],
                           attention=settings["attention"],
                           num_running=[settings["num_running"]],
                           steps=settings["steps"], warmup_steps=0)
    return steady_case(opts, "decode-steady", {"num_running": settings["num_running"]},
                       "cached", "none", 0, model=opts.model_config(),
                       steps=settings["steps"], warmup=0)


class MarginTap:
    """Wraps ``model.forward_logits`` on the instance: after each call, the top-2
    margin of each logits row (``last``: float list, in the step's row order) and the
    row's largest logit's index (``top``: what the greedy sampler picks, checked
    against the runner's token by ``run_once``)."""

    def __init__(self, model):
        self.last: list[float] = []
        self.top: list[int] = []
        forward = model.forward_logits

        def tapped(*args, **kwargs):
            logits = forward(*args, **kwargs)
            if logits.shape[0] and logits.shape[-1] > 1:
                top = logits.topk(2, dim=-1)
                self.last = (top.values[:, 0] - top.values[:, 1]).float().cpu().tolist()
                self.top = top.indices[:, 0].cpu().tolist()
            else:
                self.last = [math.inf] * int(logits.shape[0])
                self.top = logits.argmax(dim=-1).cpu().tolist()
            return logits

        model.forward_logits = tapped


def run_once(settings: dict[str, Any]) -> dict[str, Any]:
    """One run in this process: ``{"device", "settings", "steps"}``, each step
    ``{"req_ids", "tokens", "margins"}`` of the requests that sampled a token."""
    import torch

    from ipc_bench.engine.model_runner import ModelRunner
    from ipc_bench.engine.scheduler import Scheduler

    apply_settings(torch, settings)
    case = build_case(settings)
    sched = Scheduler(case.scheduler, case.policy)
    runner = ModelRunner(case.scheduler, case.model, case.policy)
    model = runner.model
    if settings["cudnn_sdpa"] == "on":
        torch.backends.cuda.enable_cudnn_sdp(True)
    tap = MarginTap(model)
    workload = case.make_workload()
    workload.never_fits = sched.never_fits
    steps = []
    for _ in range(settings["steps"]):
        for r in workload.arrivals(sched.step):
            sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens,
                              r.unbuilt_prompt_len)
        plan = sched.schedule()
        out = runner.execute_model(sched.build_scheduler_output(plan))
        rows = [(req, ids[0], tap.last[i]) for i, (req, ids) in
                enumerate(zip(out.req_ids, out.sampled_token_ids)) if ids]
        if any(ids and ids[0] != tap.top[i] and tap.last[i] > 0  # a tie may pick either
               for i, ids in enumerate(out.sampled_token_ids)):
            raise RuntimeError(f"step {len(steps)}: the logits read do not give the "
                               "runner's tokens: the margins would not be theirs")
        steps.append(dict(req_ids=[r[0] for r in rows], tokens=[int(r[1]) for r in rows],
                          margins=[float(r[2]) for r in rows]))
        finished = sched.update_from_output(plan, out)
        workload.on_finished(len(finished), plan.step)
    return dict(device=model.device, settings=settings, steps=steps)


def _worker(settings: dict[str, Any], path: str) -> int:
    """``--worker-output``: one run, its record written to ``path``."""
    from ipc_bench.engine.config import ConfigError

    try:
        record = run_once(settings)
    except ConfigError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    Path(path).write_text(json.dumps(record))
    return 0


# ---------------------------------------------------------------------------- parent


def _settings_argv(settings: dict[str, Any]) -> list[str]:
    """The command line that gives a worker ``settings``."""
    argv = ["--preset", settings["preset"], "--num-running", str(settings["num_running"]),
            "--steps", str(settings["steps"]), "--attention", settings["attention"],
            "--device", settings["device"], "--seed", str(settings["seed"]),
            "--cudnn-sdpa", settings["cudnn_sdpa"]]
    return (argv + (["--deterministic"] if settings["deterministic"] else [])
            + (["--sdpa-math"] if settings["sdpa_math"] else []))


def worker_env(settings: dict[str, Any]) -> dict[str, str]:
    """The environment of a run: this one, with ``CUBLAS_WORKSPACE_CONFIG=:4096:8``
    under ``--deterministic`` (cuBLAS needs it set before CUDA starts)."""
    env = dict(os.environ)
    if settings["deterministic"]:
        env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    return env


def run_fresh(settings: dict[str, Any], timeout_s: float, folder: str, n: int
              ) -> tuple[Optional[dict[str, Any]], str]:
    """Run number ``n`` in a new process, at most ``timeout_s``: (its record, with ``n``
    added, and ``""``) or (``None``, why it failed in one line). The process is killed if this is
    interrupted or it runs past ``timeout_s``."""
    path = os.path.join(folder, f"run-{n}.json")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker-output", path,
           *_settings_argv(settings)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=worker_env(settings))
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, f"cut at {timeout_s:.0f} s (--budget-s)"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    if proc.returncode != 0:
        last = [ln for ln in err.strip().splitlines() if ln.strip()][-1:] or ["no output"]
        return None, f"{signals.child_ended(proc.returncode)}: {last[0][:300]}"
    return dict(json.loads(Path(path).read_text()), n=n), ""


def _settings(args: argparse.Namespace, cuda: bool) -> dict[str, Any]:
    return dict(preset=args.preset or ("llama-3.2-1b" if cuda else "tiny"),
                num_running=args.num_running or (16 if cuda else 4),
                steps=args.steps or (300 if cuda else 20), attention=args.attention,
                device="cuda" if cuda else "cpu", seed=args.seed,
                deterministic=args.deterministic, cudnn_sdpa=args.cudnn_sdpa,
                sdpa_math=args.sdpa_math)


def _error(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


def memory_words(exc, block_size: int) -> str:
    """``check_model_memory``'s refusal (a ``ModelMemoryError``) in this script's
    options: the engine's figures (``exc.needs``), then, where ``--num-running`` (which
    sizes the case's KV cache, ``scenario.steady_num_blocks``) can be lowered enough,
    the most that fits, else that the weights (or they and one request's share of the
    cache) do not fit; then a smaller ``--preset``. The engine's own advice names
    ``bench.py``'s ``--num-blocks`` and ``--model-preset``, which this script has not."""
    from ipc_bench.harness.scenario import steady_running_for_blocks

    fit = exc.blocks_that_fit
    running = steady_running_for_blocks(fit, block_size) if fit >= 1 else 0
    if running >= 1:
        advice = (f"lower --num-running (at most {running:,}: it sizes the KV cache here) "
                  "or use a smaller --preset")
    elif fit >= 1:
        advice = ("the weights and one request's share of the KV cache do not fit: use a "
                  "smaller --preset")
    else:
        advice = "the weights alone do not fit: use a smaller --preset"
    return f"{exc.needs}: {advice}"


def _check(args: argparse.Namespace) -> int:
    """``main``'s run, signals routed to ``signals.Interrupted``."""
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        return _error("--device cuda: no CUDA device here (torch.cuda.is_available() is "
                      "False); use --device cpu or auto")
    cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    settings = _settings(args, cuda)
    if args.worker_output:
        return _worker(settings, args.worker_output)
    from ipc_bench.engine.config import (ConfigError, ModelMemoryError, check_max_position,
                                         check_model_memory)
    from ipc_bench.engine.paged_attention import resolve_attention

    try:  # bad input before any run: the case's limits, the model's shape and memory
        attention = resolve_attention(settings["attention"], settings["device"])
        case = build_case(settings)
        case.model.validate()
        check_max_position(case.scheduler, case.model)
        check_model_memory(case.scheduler, case.model, settings["device"],
                           torch.cuda.mem_get_info()[0] if cuda else None)
    except ModelMemoryError as exc:
        return _error(memory_words(exc, case.scheduler.block_size))
    except (ConfigError, ValueError) as exc:
        return _error(str(exc))
    print(f"{PROG}: {args.runs} runs of {settings['preset']} on {settings['device']}, "
          f"{settings['num_running']} running, {settings['steps']} steps, attention "
          f"{settings['attention']}"
          + (f" ({attention})" if attention != settings["attention"] else "")
          + f"; deterministic {'on' if settings['deterministic'] else 'off'}"
          f", cuDNN SDPA {settings['cudnn_sdpa']}, SDPA math only "
          f"{'on' if settings['sdpa_math'] else 'off'}", flush=True)
    deadline = time.monotonic() + args.budget_s
    runs, failures = [], []
    with tempfile.TemporaryDirectory(prefix="divergence-") as folder:
        for n in range(1, args.runs + 1):
            left = deadline - time.monotonic()
            if left < MIN_RUN_S:  # this run and every later one, in one line
                which = f"run {n}" if n == args.runs else f"runs {n}-{args.runs}"
                failures.append(f"{which}: not started: --budget-s {args.budget_s:g} ran out")
                print(f"  {failures[-1]}", flush=True)
                break
            t0 = time.monotonic()
            record, why = run_fresh(settings, left, folder, n)
            if record is None:
                failures.append(f"run {n}: FAILED {why}")
                print(f"  {failures[-1]}", flush=True)
                continue
            runs.append(record)
            print(f"  run {n}: {len(record['steps'])} steps, "
                  f"{sum(len(s['tokens']) for s in record['steps'])} tokens, "
                  f"{time.monotonic() - t0:.1f} s; {record['device']}", flush=True)
    result = compare_runs(runs)
    for line in compare_lines(result, args.runs):
        print(line)
    code = verdict(result, len(runs), args.runs, failures)
    print(verdict_line(result, len(runs), args.runs, code))
    if args.output:
        text = json.dumps(dict(settings=settings, runs_asked=args.runs, failures=failures,
                               devices=[r["device"] for r in runs], **result,
                               runs=runs), indent=1)
        try:
            write_output(args.output, text, PROG, f"the runs are in {args.output}")
        except SystemExit as exc:
            print(exc.code, file=sys.stderr)
            return 1
    return code


def verdict(result: dict[str, Any], done: int, asked: int, failures: list[str]) -> int:
    """0: every run done and all agree; 1: two runs diverge; ``EXIT_INCOMPLETE``:
    otherwise (a run failed or was not started)."""
    if result["diverged"]:
        return 1
    return 0 if done == asked and not failures else EXIT_INCOMPLETE


def verdict_line(result: dict[str, Any], done: int, asked: int, code: int) -> str:
    if code == 1:
        differ = sum(not p["equal"] for p in result["pairs"])
        return (f"result: the runs DIVERGE: {differ} of {len(result['pairs'])} pairs differ "
                f"(a found divergence is this check's result, exit 1)")
    if code == 0:
        return f"result: all {done} runs agree token for token"
    return (f"result: incomplete: {done} of {asked} runs completed"
            + (", and they agree" if done > 1 else "") + f" (exit {EXIT_INCOMPLETE})")


# ---------------------------------------------------------------------------- options


class _Parser(OnceParser):
    """Bad input: one line on stderr (``divergence_check.py: error: ...``), exit 2; an
    option given twice is refused (``OnceParser``)."""

    def error(self, message: str):
        print(f"{PROG}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def whole_number(low: int, high: Optional[int] = None, why: str = ""):
    """argparse type: a whole number >= ``low`` and, where given, <= ``high`` (``must
    be at most HIGH (WHY), got N``)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}"
                                             + (f" ({why})" if why else "") + f", got {value}")
        return value
    return parse


def seconds(text: str) -> float:
    """argparse type of ``--budget-s``: a finite number of seconds > 0, at most
    ``MAX_BUDGET_S``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text}")
    if value > MAX_BUDGET_S:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_BUDGET_S:.0f}, got {text}")
    return value


def output_file(text: str) -> str:
    """argparse type of ``--output``: ``writable_file``'s checks, then, for a regular
    file or a new one, ``run_folder.probe_write`` in its folder (4 KiB written and removed),
    so that a full disk, an exhausted quota or a file-size limit is refused before any
    run (``cannot write PATH: No space left on device``), where the runs' result was
    lost after them. A device (``/dev/null``, ``/dev/full``, a terminal) is taken as
    ``writable_file`` takes it: nothing is written beside it."""
    text = writable_file(text)
    if os.path.exists(text) and not os.path.isfile(text):
        return text
    from ipc_bench.harness.run_folder import probe_write

    try:
        probe_write(os.path.dirname(os.path.realpath(text)), ".divergence_check-probe-")
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot write {text}: {exc.strerror}") from None
    return text


def preset_name(text: str) -> str:
    """argparse type of ``--preset``: a ``TORCH_PRESETS`` name."""
    from ipc_bench.engine.config import RETIRED_PRESETS, TORCH_PRESETS

    if text in RETIRED_PRESETS:
        raise argparse.ArgumentTypeError(f"preset {text!r} was retired: use "
                                         f"{RETIRED_PRESETS[text]}")
    if text not in TORCH_PRESETS:
        raise argparse.ArgumentTypeError(f"unknown preset {text!r}; choose from "
                                         f"{', '.join(TORCH_PRESETS)}")
    return text


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(description=module_doc(sys.modules[__name__]).split("\n\n")[0],
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=whole_number(2, MAX_RUNS), default=5,
                   help="runs of the configuration, each a fresh process (default 5, at "
                   f"most {MAX_RUNS})")
    p.add_argument("--preset", type=preset_name,
                   help="model shape (default: llama-3.2-1b on CUDA, tiny on CPU)")
    p.add_argument("--num-running", type=whole_number(
                       1, MAX_NUM_RUNNING, "the case's max_num_batched_tokens: every "
                       "running request decodes a token each step"),
                   help="requests decoding at once (default 16 on CUDA, 4 on CPU; at most "
                   f"{MAX_NUM_RUNNING})")
    p.add_argument("--steps", type=whole_number(1),
                   help="scheduler steps per run, prefill included (default 300 on CUDA, "
                   "20 on CPU)")
    p.add_argument("--attention", choices=("auto", "gather", "flex", "varlen"),
                   default="auto", help="decode attention backend (default auto: the "
                   "harness's)")
    p.add_argument("--deterministic", action="store_true",
                   help="torch.use_deterministic_algorithms(True) and "
                   "CUBLAS_WORKSPACE_CONFIG=:4096:8 in every run")
    p.add_argument("--cudnn-sdpa", choices=("off", "on"), default="off",
                   help="cuDNN's SDPA backend (default off, as the torch model sets it)")
    p.add_argument("--sdpa-math", action="store_true",
                   help="flash and memory-efficient SDPA off: the math kernel alone")
    p.add_argument("--seed", type=whole_number(0, MAX_SEED, "2**63 - 1, as bench.py's "
                                               "--seed"), default=0,
                   help=f"the workload's seed (default 0, at most {MAX_SEED}, as bench.py's)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--budget-s", type=seconds, default=DEFAULT_BUDGET_S,
                   help=f"seconds for all runs together (default {DEFAULT_BUDGET_S:g}, at "
                   f"most {MAX_BUDGET_S:.0f}); a run past it is killed")
    p.add_argument("--output", metavar="PATH", type=output_file,
                   help="also write the settings, the comparison and every run's tokens "
                   "and margins as JSON")
    p.add_argument("--worker-output", metavar="PATH", help=argparse.SUPPRESS)
    return p


def _parse(argv) -> "argparse.Namespace | int":
    try:
        return build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, or the one-line error
        return exc.code if isinstance(exc.code, int) else 2


def main(argv=None, exiting: bool = False) -> int:
    """The check; returns the exit code (the module docstring's). ``exiting``: as
    ``decode_step_check.main``'s."""
    return signals.run_command(lambda: _parse(argv), _check,
                               lambda exc, _: exc.line(PROG), exiting=exiting)


if __name__ == "__main__":
    sys.exit(script_main(PROG, lambda: main(exiting=True), "the comparison",
                         "the --output file"))
