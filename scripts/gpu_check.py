#!/usr/bin/env python3
r"""Staged GPU check: the torch model on CUDA, stage by stage, within one time budget.

The stages run in the order ``RUN_ORDER``: the smoke stage (1) first, with gather
attention (nothing compiled, so a broken harness, wheels, sockets or runner start
fails in seconds), then stage 0, then the others by what they deliver: 2, 4, 3, 5, 6.

Stage 0, ``decode-step``: ``scripts/decode_step_check.py`` (the torch model's decode
step alone, per attention backend with and without CUDA graphs: GPU and host time per
step, the ratio to the step's roofline, padding between buckets; at most
``DECODE_STEP_LIMIT_S``, on CUDA at most its share of the budget). The backend with the
shortest GPU time per step at the largest batch size it ran unpadded
(``fastest_backend``; step time on CPU) is the ``--attention`` of every later stage
but the smoke stage, so a backend that fails or is slow on this GPU does not decide
them. Where its JSON says the run did not finish (cut at the limit, interrupted,
killed: ``complete`` false), the stage's lines name the configurations not run
(``decode_step_state``), so one cut off does not read as one skipped.

Stages 1-6 (each one ``bench.py`` run into its own folder under ``--output``; on CUDA
stages 2 and 4 are one run per running count, folders ``2-llama-3.2-1b-64``,
``2-llama-3.2-1b-256``, ``4-aa-64``, ``4-aa-256``; each case is written to its run's
``summary.json`` as it finishes, and each run's table is printed as it ends):

1. ``smoke``: ``llama-3.2-1b``, 16 running, both policies, msgpack, 20 steps,
   ``--attention gather``. At most ``SMOKE_LIMIT_S`` (90 s, CUDA start and model load
   included); if it fails, runs out of time or is not started for lack of time
   (``gpu_check: the smoke stage was not run: the other stages are not run``), no
   other stage runs. A line under its
   table (``SMOKE_NOTE``) says its steps are too few to compare the policies.
2. ``llama-3.2-1b``: decode-steady at 64 and 256 running, both policies with msgpack
   and pickle, and the single-process cases.
3. ``llama-3.1-8b``: the same at 64 running.
4. ``aa``: the A/A pairs (send against a copy of itself), ``llama-3.2-1b`` at 64 and
   at 256 running: the noise beside stage 2's two send vs cached comparisons. The 8B
   stage's, the replay's and the async stage's comparisons have no A/A pair (the
   budget holds none).
5. ``azure-conv``: the first 100 requests of the Azure conversation trace, both
   policies, msgpack, 100 ms of trace time per logical step, on CUDA at most 64
   running in one bucket on 4,096 KV blocks (``CONV_LIMITS``; ``--trace``; the stage
   is skipped, and says so, when the file is absent).
6. ``async``: ``llama-3.2-1b`` at 64 running, ``cached`` synchronously and with
   ``--async-scheduling`` (the torch model's device-input path: step n+1's input ids
   from step n's sampled ids on the GPU, non-blocking copy back, step n+1 launched
   before step n's reply), msgpack, two processes, 40 counted steps, at most
   ``ASYNC_LIMIT_S``. Besides the table it prints per workload both tokens/s, the
   runner gap (median, µs and share of the step), the GPU's idle time between steps,
   the share of steps launched ahead and the mode the summary names (``device
   pipelining`` on CUDA; ``device-input path (CPU: process overlap only)`` on the CPU
   stages, whose async speedup is the two processes' overlap alone).
   A short device session can run it right after the smoke stage: ``--stages 1,6``.

All of it is meant to take at most ``--budget-s`` (default 300 s, issue 11's five
minutes) on one H200, CUDA start included; a stage still running when the budget (or
its own limit) ends is interrupted (``CUT_SIGNAL``, SIGTERM, then SIGCONT in case it
was stopped; its finished cases stay written), killed if it has not exited
``INTERRUPT_GRACE_S`` (15 s) later, so the check outruns its budget by at most that
(the stage's line says how long it took), and counts as failed. The time plan
(``STAGE_WEIGHTS``: each stage's estimated seconds; docs/models-and-gpu.md, "The time
plan") puts all the stages at about 477 s, more than the default budget: within 300 s
each stage is cut at its share of the budget, keeping the cases it finished, and
``scripts/device_check.sh`` gives the check what its deadline leaves (about 450 s).
The plan was never run on a GPU: it rests on the 2026-11-30 H200 run
(../shared/measurements/h200-2026-11-30: about 4 s per case outside its loop, 20 ms a
gpu-1b step at 16 and 256 running with gather) and on assumed flex compile times. Where
the attention pads to buckets (flex, varlen; ``auto`` is flex on CUDA) each run passes
its one running count (the replay: its one bucket of 64) as ``--cuda-graph-sizes``
(``bucket_args``), and the 1B runs of stages 2, 4 and 6 share one KV-cache size
(``SMALL_NUM_BLOCKS``), so a run compiles one flex kernel at start-up, which
TorchInductor's on-disk cache (``$TMPDIR/torchinductor_$USER``, shared by every
process of the user) then serves to every later process of the same shapes, not one
per power of two up to its batch in every process. ``--stages 1,3`` runs only those
stages (numbered as above). The smoke stage may take ``SMOKE_LIMIT_S`` (on the CPU,
it, ``DECODE_STEP_LIMIT_S`` and ``ASYNC_LIMIT_S`` stretched in proportion by a
``--budget-s`` above the default: ``limit_scale``); stage 0 on CUDA and each later
run gets a share of what is left of the budget when it starts, weighted by its
estimate against the runs still to come after it (``STAGE_WEIGHTS``,
``stage_limit_s``; stage 0's at most ``DECODE_STEP_LIMIT_S``, the async stage's at
most ``ASYNC_LIMIT_S``), so a stage slower than its estimate is cut with its finished
cases written, and every later stage still runs. Its heading gives its limit. A session
with little device time should run ``--stages 1,6``.

Per case it prints the steady-state output tokens/s (the counted steps' output tokens
over their summed step time: running requests / mean step in pure decode) beside the
run-level figure (every token over the case's wall time), the mean and the median step
(columns ``step ms (mean)`` and ``step ms (median)``; a line under each table defines
them), the CUDA
event times per step (GPU busy, host = step - busy, the same over pure-decode steps,
GPU idle between steps), the median ratio of GPU busy time to the step's roofline on
the figures the runner measured at start-up (``x roofline``; the torch model's
roofline is on by default on CUDA, off on the CPU stages: ``-``) and, per
workload and codec, send's share of the step (``send_shares``, ``analysis.send_cost``),
each figure named: send's SchedulerOutput build + encode + decode over cached's, per
step and as a share of cached's median step, then the whole median steps' difference
(send's - cached's) and its share, which holds whatever else differed between the two
cases, noise included::

    send's share [num_running=64] msgpack: send's build+encode+decode over cached's:
    +19.5 us per step = +0.12% of cached's 16.77 ms median step; whole median step,
    send's over cached's: +1.14 ms = +6.80%

(one line). How each stage ended is one line with the time so far (``passed``, ``failed
with exit 1``, ``killed by SIGKILL``, ``cut at its 25 s limit: SIGTERM sent; 0.4 s later
it exited 143``), saying for a failure whether the last lines of the stage's output
follow or it printed nothing; a stage that wrote no case prints no table. The line
naming the results folder is the last one printed, after the failures (``FAILED ...``
on stderr, each that line's first sentence, and for a stage that failed by itself the
reason its output gave: ``FAILED smoke: failed with exit 1: num_running=16/cached/
msgpack#0: input oracle: step 4: ...``, ``failure_line``); an interrupt's one line
names it too. Exit
status: 0 when every stage passed;
1 when a stage failed (a token oracle failure included: ``bench.py`` exits 1 when the
policies' token streams differ) or ran out of time: cut at its limit, or not started
because its share of what was left is below ``MIN_STAGE_S`` (10 s on CUDA, 5 s on the
CPU: one line, ``gpu_check: [aa-64] not run for lack of time: its share would be 6.7 s
(of the 45.0 s left of the 130 s budget), less than the 10 s a stage is given at
least``, and its ``FAILED`` line; its time goes to the later stages; a share one
decimal would print as the minimum, a few ms under it, is cut down to two decimals,
``4.99 s``: ``share_texts``), or below the
stage's own least time where its first case needs more (``STAGE_MIN_S``: the Azure
replay's 33 s on CUDA, 8 s on the CPU; ``... less than the 8 s this stage is given at
least``); 2 for bad input, refused in one
line before any stage runs (``--stages`` other than 0-6, a ``--budget-s`` that is not
a positive finite number, a ``--trace`` that is not a readable file or, where stage 5
is to run, one its ``bench.py`` would refuse (``trace_problem``: its reason, as
``bench.py`` gives it; after the device probe, with the stage's cases built as its
``bench.py`` builds them: every request rejected as longer than ``max_model_len``,
every step in the warm-up, its advice, which names ``bench.py`` options this script
does not take, replaced by what kind of trace the stage takes: ``stage_words``), an
``--output``
that cannot be created or written, or holds an earlier check's stage results; a small
file is written to the output folder and removed, as the options are read and again
before the first stage, so a full disk is refused, ``cannot write to DIR: No space left
on device``, where each stage failed on it, its reason lost with its log); 130 / 143 / 129 when interrupted by SIGINT /
SIGTERM / SIGHUP: the running stage gets the same signal, then SIGCONT (``bench.py``
then writes what it measured), is killed if it has not exited ``INTERRUPT_GRACE_S``
later, and is reaped before the script exits with one line.

Without CUDA (``torch.cuda.is_available()`` false, probed in a child process) it says
so and runs the same stages shrunk (``tiny`` and ``cpu`` presets, a few running
requests, a few steps) on the CPU, so the script itself is testable anywhere. There
stages 2 and 3 are named after the preset that ran, ``tiny-preset`` and
``cpu-preset`` (run folders ``2-tiny-preset``, ``3-cpu-preset``), and each stage's
heading starts with a line saying which preset ran in place of which GPU preset
(``stand_in_line``), so no CPU figure reads as a 1B or 8B one.

Running it on a machine whose Python has torch but not msgspec, pyzmq and pyperf, and
no package index: download the wheels where there is one, for that machine's Python
(here CPython 3.12 on x86-64 Linux; pyperf brings psutil), into the git-ignored
``wheels/`` folder of the checkout::

    pip download --only-binary=:all: --python-version 3.12 \
        --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
        -d wheels/ msgspec pyzmq pyperf

(with manylinux2014 alone, pyzmq resolves to its last such wheel, 26.4; newer ones are
manylinux_2_26 / 2_28, which a glibc 2.28 or later machine takes)

carry ``wheels/`` along with the checkout, and there install them into a folder of
their own and put it on the path (``--quiet`` runs need nothing else: no pandas,
scipy, matplotlib or tqdm)::

    python3 -m pip install --no-index --find-links wheels --target /tmp/ipc-deps \
        msgspec pyzmq pyperf
    PYTHONPATH=/tmp/ipc-deps python3 scripts/gpu_check.py --output /tmp/gpu-check

The same can be checked on any machine with a CPython 3.12 (the install works with
``--target`` into a temporary folder; the check then runs its CPU stages).
``scripts/device_check.sh OUT_DIR`` does all of it in one command, the CUDA tests
first, and packs the run folders into a few files under ``OUT_DIR``.
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
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ipc_bench.analysis.results import read_summary  # noqa: E402
from ipc_bench.cli.options import list_items, no_repeats  # noqa: E402
from ipc_bench.cli.console import script_main, written_elsewhere  # noqa: E402
from ipc_bench.cli.once import OnceParser  # noqa: E402
from ipc_bench.cli.run import trace_replay_problem  # noqa: E402
from ipc_bench.engine.config import TORCH_PRESETS, ConfigError  # noqa: E402
from ipc_bench.engine.models import probe_torch_device  # noqa: E402
from ipc_bench.engine.paged_attention import triton_toolchain_problem  # noqa: E402
from ipc_bench.engine.traces import TraceError, load_azure_trace  # noqa: E402
from ipc_bench.harness import signals  # noqa: E402
from ipc_bench.report.tables import (ROOFLINE_BELOW_ONE_NOTE, below_roofline,  # noqa: E402
                                     roofline_ratio)
from ipc_bench.errors import (broken_link_text, module_doc, one_line,  # noqa: E402
                              output_kind_text)

#: The name every error line starts with (``gpu_check.py: error: ...``).
PROG = "gpu_check.py"

#: The smoke stage's time limit, seconds (CUDA start and model load included).
SMOKE_LIMIT_S = 90.0
#: Default budget of the whole check, seconds (stage 0 included): issue 11's "at most
#: 5 minutes in all on one H200". The time plan (``STAGE_WEIGHTS``) estimates all the
#: stages at about 477 s, so within 300 s each stage is cut at its share and keeps the
#: cases it finished; ``scripts/device_check.sh`` gives the check what its command's
#: deadline leaves (about 450 s).
BUDGET_S = 300.0
#: The largest ``--budget-s``: 24 h, as ``bench.py`` caps its timeouts.
MAX_BUDGET_S = 86400.0
#: The async stage's time limit, seconds (two cases of the 1B shape at 64 running).
ASYNC_LIMIT_S = 75.0
#: Stage 0's time limit, seconds (``scripts/decode_step_check.py``), at most its share.
DECODE_STEP_LIMIT_S = 150.0
#: The order the stages run in (``--stages`` numbers): the smoke stage first (gather
#: attention, nothing compiled: a broken harness fails in seconds), then by what each
#: delivers: stage 0 (the decode step's roofline ratios and host times, and the
#: attention of the later stages), the 1B cases, their A/A pair, the 8B cases, the
#: Azure replay, the async pair.
RUN_ORDER = (1, 0, 2, 4, 3, 5, 6)
#: The time plan: each stage's estimated seconds on one H200, its weight for
#: ``stage_limit_s`` (stage 0 on CUDA, stages 2-6; the smoke stage has its own limit,
#: about 20 s expected). Never run on a GPU; the basis (docs/models-and-gpu.md, "The
#: time plan"): 4 s per process outside its cases' loops (the 2026-11-30 H200 run: 12
#: gpu-1b cases took 198 s, 147 s of it in their loops), 6 s more for the check's
#: first; a flex compile per bucket assumed 20 s cold, 3 s from the on-disk cache;
#: steps of at most 20 ms (1B, measured with gather) and 40 ms (8B, assumed). Stage 0:
#: about 100 s (four flex buckets cold). Stage 2: 12 cases in two runs, each
#: 6 x (4 + 3 + 3) s + 17 s of its cold compile. Stage 3: 6 cases of 13 s (16 GB of
#: weights, 40 steps) + 17 s. Stage 4: two pairs, 4 cases of 10 s. Stage 5: 2 cases
#: of 4 + 3 + 848 x 10 ms + 17 s cold. Stage 6: 2 cases of 10 s. In all about 20 + 100
#: + 154 + 40 + 95 + 48 + 20 = 477 s.
STAGE_WEIGHTS = {0: 100.0, 2: 154.0, 3: 95.0, 4: 40.0, 5: 48.0, 6: 20.0}
#: The least time a stage is started with, seconds, by device (``True``: CUDA): a stage
#: whose share of what is left of the budget (``stage_limit_s``) is less would be cut
#: before it wrote its first case, so it is not started (``not run for lack of time``,
#: one line as it is passed over, and it counts as failed: exit 1), and its time goes
#: to the stages after it. Its smallest work is one case of one ``bench.py`` run: on
#: CUDA the time plan's smallest, a 1B case, 4 s outside its loop (a Python start,
#: torch's import, the CUDA context, the weights) and 3 + 3 s in it; on the CPU the
#: smoke stage's ``bench.py`` with one case took 2.9 s in all (2026-12-07, a 1-minute
#: load average of 4.6 on 2 cores), and 5 s, as ``divergence_check.py``'s
#: ``MIN_RUN_S``, leaves a loaded host its margin. A stage whose first case needs more
#: has its own least time (``STAGE_MIN_S``, ``min_stage_s``).
MIN_STAGE_S = {True: 10.0, False: 5.0}
#: The least time a stage is started with where its first case needs more than
#: ``MIN_STAGE_S``: stage number -> seconds by device (``True``: CUDA). The Azure replay
#: (stage 5): on CUDA the time plan's first replay case, 4 + 3 s outside its loop, 848
#: steps of 10 ms and its bucket's cold flex compile (17 s; its KV cache is not the 1B
#: stages'): 33 s; on the CPU its ``bench.py`` wrote its first case (4 requests, 150
#: steps) 2.7-4.7 s after it started (2026-12-07, 10 runs at a 1-minute load average of
#: 2.8-5.1 on 2 cores; the smoke stage's first case 2.1-3.0 s in the same minutes), and
#: a 5 s limit in ``gpu_check`` kept its first case and cut its second before its first
#: step: 8 s, the margin ``MIN_STAGE_S`` leaves the smoke stage's case (5 s for 2.9 s).
STAGE_MIN_S = {5: {True: 33.0, False: 8.0}}
#: KV-cache blocks of every ``llama-3.2-1b`` case on CUDA but the replay's (stages 2, 4
#: and 6): what 256 running requests get by default (``steady_num_blocks(256)``, 34.5
#: GB), so that the 64-running cases of the three stages compile the same kernels (a
#: compiled flex kernel's shapes hold the cache's size) and all but the first load them
#: from TorchInductor's on-disk cache. A step stages only its rows' blocks and flex
#: reads only the blocks they list; every 1B case runs on this one cache, so their
#: steps compare among themselves.
SMALL_NUM_BLOCKS = 65792
#: The Azure replay stage on CUDA: at most 64 running (its first 100 requests, 100 ms
#: of trace time a step, peak at 47 running), one bucket of 64 (one compile), and 4,096
#: KV blocks (the requests in flight hold at most about 2,770; a null-model replay with
#: these limits preempts none and takes the same 848 steps as with the defaults).
CONV_LIMITS = ("--max-num-seqs", "64", "--num-blocks", "4096")
CONV_BUCKETS = "64"

#: After interrupting a stage (at the budget, or passing on a signal this script got),
#: how long it may take to write and exit before it is killed.
INTERRUPT_GRACE_S = 15.0
#: What a stage still running at its limit gets (then SIGCONT; ``_stop``): SIGTERM, not
#: SIGINT, which a check started as a background command of a script (as
#: ``scripts/device_check.sh`` starts it) inherits ignored, and so do its stages.
CUT_SIGNAL = signal.SIGTERM
#: The stages by number (``--stages``): 0 and the six ``build_stages`` returns.
STAGE_NAMES = ("decode-step", "smoke", "llama-3.2-1b", "llama-3.1-8b", "aa", "azure-conv",
               "async")
#: On the CPU (no CUDA) each stage runs a small test preset in place of its GPU preset:
#: CPU preset -> the GPU preset it stands in for (``build_stages``).
CPU_STAND_INS = {"tiny": "llama-3.2-1b", "cpu": "llama-3.1-8b"}
#: Under the smoke stage's table: what its few steps are for.
SMOKE_NOTE = ("  smoke: {steps} counted steps per case, to check that each case runs; too few "
              "to compare send with cached: one slow step can move a case's tok/s and mean "
              "step several-fold")
#: The requests the Azure replay stage replays (its ``--max-requests``): on CUDA
#: (``True``) and on the CPU; ``trace_problem`` reads as many rows.
CONV_REQUESTS = {True: 100, False: 4}
#: Where the Azure conversation trace is looked for when ``--trace`` is not given.
TRACE_CANDIDATES = (ROOT.parent / "shared" / "traces" / "AzureLLMInferenceTrace_conv.csv",
                    ROOT / "shared" / "traces" / "AzureLLMInferenceTrace_conv.csv")


@dataclass
class Stage:
    """One ``bench.py`` run of a stage: the stage's ``name`` (also its run folder's,
    after its number; a stage of two runs, one per running count, names each after
    its count: ``llama-3.2-1b-64``), ``bench.py`` arguments, and time limit (``None``:
    the rest of the budget). ``skip``: why the stage cannot run here. ``buckets``: its
    ``--cuda-graph-sizes`` where the attention pads to buckets (``bucket_args``; empty:
    the default buckets). ``number``: the stage's (``--stages``, ``STAGE_NAMES``)."""

    name: str
    args: list[str]
    limit_s: Optional[float] = None
    skip: str = ""
    buckets: str = ""
    #: On the CPU: which preset stands in for which, and why (``stand_in_line``),
    #: printed as the first line of the stage's heading.
    stand_in: str = ""
    #: A line printed under the stage's table (the smoke stage's: ``SMOKE_NOTE``).
    note: str = ""
    #: Its share of what is left of the budget against the stages after it
    #: (``stage_limit_s``); 0: its own ``limit_s`` alone (the smoke stage's).
    weight: float = 1.0
    number: int = 0
    #: The ``--attention`` it runs with whatever stage 0 picks ("": stage 0's pick);
    #: the smoke stage's is gather: it runs first, and compiles nothing.
    attention: str = ""


def limit_scale(budget_s: float, cuda: bool) -> float:
    """How much a ``--budget-s`` of ``budget_s`` seconds stretches the fixed limits
    (``DECODE_STEP_LIMIT_S``, a stage's ``limit_s``) of the stages' CPU stand-ins
    (``cuda`` False): ``budget_s / BUDGET_S``, at least 1. A smaller budget keeps them
    (each is cut to what is left anyway); a larger one, asked for a slow or busy host,
    gives every stage the same share of it as the default gives. On CUDA (``cuda``
    True) the limits are the GPU's sizing whatever the budget (the smoke stage at most
    ``SMOKE_LIMIT_S``): 1."""
    return 1.0 if cuda else max(1.0, budget_s / BUDGET_S)


def stage_limit_s(stage: Stage, later: list[Stage], left_s: float,
                  scale: float = 1.0) -> float:
    """Seconds ``stage`` may run when ``left_s`` seconds of the budget are left and
    ``later`` are the stages still to run after it: ``left_s`` times its ``weight``
    over its own and ``later``'s weights, so that a stage that runs long leaves each
    later one its share (a stage that ends early leaves its time to them), at most its
    own ``limit_s`` times ``scale`` (``limit_scale``). A stage of weight 0 (smoke,
    without which no other stage runs) gets that limit, at most ``left_s``."""
    share = left_s
    if stage.weight:
        share = left_s * stage.weight / (stage.weight + sum(s.weight for s in later))
    return min(share, stage.limit_s * scale if stage.limit_s else share)


def share_texts(share_s: float, left_s: float, least_s: float) -> tuple[str, str]:
    """``share_s`` and ``left_s`` as a stage not run for lack of time prints them: one
    decimal (``6.7``, ``45.0``), or, where that would read as ``least_s`` or more (a
    share a few ms under the minimum, start-up having taken them: ``5.0`` of a 5 s
    one), both cut down (not rounded) to the first number of decimals, two at least,
    that reads under it (``4.99``), so the line never says a share is less than what
    it prints it equal to."""
    if float(f"{share_s:.1f}") < least_s:
        return f"{share_s:.1f}", f"{left_s:.1f}"
    for digits in range(2, 10):
        unit = 10 ** digits
        share = math.floor(share_s * unit) / unit
        if share < least_s:
            return (f"{share:.{digits}f}", f"{math.floor(left_s * unit) / unit:.{digits}f}")
    return f"{share_s!r}", f"{left_s!r}"


def min_stage_s(stage: Stage, cuda: bool) -> float:
    """The least share of the budget ``stage`` is started with on CUDA (``cuda`` True)
    or the CPU: its own (``STAGE_MIN_S``, by its number), else ``MIN_STAGE_S``."""
    return STAGE_MIN_S.get(stage.number, MIN_STAGE_S)[cuda]


def bucket_args(stage: Stage, attention: str, cuda: bool) -> list[str]:
    """``--cuda-graph-sizes`` of ``stage`` (its running count; the replay's one bucket)
    where ``attention`` (``auto``: flex on CUDA) pads decode batches to buckets: every
    runner process compiles its flex kernels once per bucket at start-up, a compile
    that TorchInductor's on-disk cache (``$TMPDIR/torchinductor_$USER`` by default,
    shared by every process of the user) serves to the later processes of the same
    shapes (bucket, largest bucket, KV-cache size), so the default buckets (the powers
    of two up to the batch: 7 at 64 running, 9 at 256) would spend the budget
    compiling. Steps with fewer rows (the start's prefills) pad to the stage's size;
    its counted steps run exactly at it."""
    pads = attention in ("flex", "varlen") or (attention == "auto" and cuda)
    return ["--cuda-graph-sizes", stage.buckets] if pads and stage.buckets else []


def _steady(preset: str, running: str, steps: int, warmup: int, *extra: str) -> list[str]:
    return ["--scenario", "decode-steady", "--model-preset", preset, "--num-running", running,
            "--steps", str(steps), "--warmup-steps", str(warmup), *extra]


def stand_in_line(preset: str, for_preset: str) -> str:
    """A CPU stage's line saying that ``preset`` ran in place of the GPU stage's
    ``for_preset``, both shapes given, and why."""
    def shape(name: str) -> str:
        p = TORCH_PRESETS[name]
        return f"{p.num_layers} layers, hidden {p.hidden_size}"

    return (f"no CUDA: preset {preset} ({shape(preset)}) ran on the CPU in place of "
            f"{for_preset} ({shape(for_preset)}); its figures are not {for_preset}'s")


def build_stages(cuda: bool, trace: Optional[str]) -> list[Stage]:
    """The check's ``bench.py`` runs, in stage order (1-6; ``RUN_ORDER`` is the order
    they run in): on CUDA the public presets, stages 2 and 4 one run per running count
    (``llama-3.2-1b-64``, ``aa-256``: each with only its own bucket), the 1B runs
    sharing one KV-cache size (``SMALL_NUM_BLOCKS``) so that their compiled kernels
    are shared through TorchInductor's on-disk cache, the replay sized for its 100
    requests (``CONV_LIMITS``); on CPU the same stages shrunk (``tiny`` / ``cpu``
    presets, few requests and steps), one run each, stages 2 and 3 named after the
    preset that ran (``tiny-preset``, ``cpu-preset``) and each with its ``stand_in``
    line (``CPU_STAND_INS``)."""
    if cuda:
        small, big, smoke_preset = "llama-3.2-1b", "llama-3.1-8b", "llama-3.2-1b"
        smoke_b, b_small, b_big, b_aa = "16", "64,256", "64", "64,256"
        steps, steps_big, warmup = 60, 30, 10
        b_async, steps_async, steps_smoke = "64", 40, 20
        kv_small = ["--num-blocks", str(SMALL_NUM_BLOCKS)]
    else:
        small, big, smoke_preset = "tiny", "cpu", "tiny"
        smoke_b, b_small, b_big, b_aa = "2", "4", "2", "2"
        steps, steps_big, warmup = 6, 4, 2
        b_async, steps_async, steps_smoke = "4", 8, 5
        kv_small = []
    # 100 ms of trace time per logical step (default 20): the first 100 requests take
    # 848 steps instead of 2,370, at 21 running on average instead of 7
    conv = ["--scenario", "azure-conv", "--model-preset", small, "--trace", str(trace),
            "--max-requests", str(CONV_REQUESTS[cuda]), "--codecs", "msgpack",
            "--warmup-steps", str(warmup), "--logical-step-ms", "100"]
    conv += list(CONV_LIMITS) if cuda else ["--num-blocks", "2048"]

    def per_count(stage: Stage, counts: str) -> list[Stage]:
        """``stage`` as one run per running count of ``counts`` on CUDA (each named
        after its count, with its own bucket and its share of the stage's weight)."""
        if not cuda or "," not in counts:
            return [stage]
        runs = counts.split(",")
        at = stage.args.index("--num-running") + 1
        return [Stage(f"{stage.name}-{b}", stage.args[:at] + [b] + stage.args[at + 1:],
                      buckets=b, weight=stage.weight / len(runs), number=stage.number)
                for b in runs]

    stages = [
        Stage("smoke", _steady(smoke_preset, smoke_b, steps_smoke, 5 if cuda else 2,
                               "--codecs", "msgpack", "--no-single-process", "--no-floor"),
              SMOKE_LIMIT_S, buckets=smoke_b, note=SMOKE_NOTE.format(steps=steps_smoke),
              weight=0, number=1, attention="gather"),
        *per_count(Stage(small if cuda else f"{small}-preset",
                         _steady(small, b_small, steps, warmup, "--codecs",
                                 "msgpack,pickle" if cuda else "msgpack", *kv_small),
                         buckets=b_small, weight=STAGE_WEIGHTS[2], number=2), b_small),
        Stage(big if cuda else f"{big}-preset",
              _steady(big, b_big, steps_big, warmup, "--codecs", "msgpack,pickle")
              if cuda else _steady(big, b_big, steps_big, warmup, "--codecs", "msgpack",
                                   "--no-single-process", "--no-floor"), buckets=b_big,
              weight=STAGE_WEIGHTS[3], number=3),
        *per_count(Stage("aa", _steady(small, b_aa, steps, warmup, "--aa",
                                       "--policies", "send", "--codecs", "msgpack",
                                       "--no-single-process", *kv_small),
                         buckets=b_aa, weight=STAGE_WEIGHTS[4], number=4), b_aa),
        # the replay's batches vary (about 21 running on average, 47 at most): on CUDA
        # one bucket of CONV_BUCKETS, on the CPU the default buckets
        Stage("azure-conv", conv, skip="" if trace and Path(trace).is_file()
              else "no Azure conversation trace (give --trace PATH)",
              buckets=CONV_BUCKETS if cuda else "", weight=STAGE_WEIGHTS[5], number=5),
        Stage("async", _steady(small, b_async, steps_async, warmup, "--async-scheduling",
                               "--codecs", "msgpack", "--no-single-process", "--no-floor",
                               *kv_small),
              ASYNC_LIMIT_S, buckets=b_async, weight=STAGE_WEIGHTS[6], number=6),
    ]
    if not cuda:
        for stage in stages:
            preset = stage.args[stage.args.index("--model-preset") + 1]
            stage.stand_in = stand_in_line(preset, CPU_STAND_INS[preset])
    return stages


def run_plan(cuda: bool, trace: Optional[str], wanted: Optional[set[int]]) -> list[Stage]:
    """The runs of the stages ``wanted`` (``None``: all) in the order they run
    (``RUN_ORDER``), stage 0 as a ``Stage`` named ``decode-step`` with no ``bench.py``
    arguments (its limit ``DECODE_STEP_LIMIT_S``; on CUDA also at most its share of the
    budget, weight ``STAGE_WEIGHTS[0]``; on the CPU, where it compiles flex for the
    shrunk stages' few steps, its own limit alone)."""
    stages = build_stages(cuda, trace) + [
        Stage("decode-step", [], DECODE_STEP_LIMIT_S, number=0,
              weight=STAGE_WEIGHTS[0] if cuda else 0)]
    return [s for n in RUN_ORDER if wanted is None or n in wanted
            for s in stages if s.number == n]


def failure_line(how: str) -> str:
    """The line a ``FAILED`` line gives for a stage that ended as ``how`` says
    (``run_stage``'s: its first line, then the last lines of its output, indented):
    that first line, and where it failed with an error line of its own, that error's
    words (``failed with exit 1: num_running=2/cached/msgpack#0: input oracle: step 4:
    ...``; ``error_reason``)."""
    first, _, output = how.partition("\n")
    reason = error_reason(output) if first.startswith("failed") else ""
    return f"{first}: {reason}" if reason else first


def error_reason(output: str) -> str:
    """The one-line reason in a failed stage's ``output``: its first ``SCRIPT.py:
    error: REASON`` line's REASON (``; partial results: DIR``, which the check's last
    line names, left out; ``(N more error lines in its output)`` where more followed),
    else its last
    line that reads as an exception (``RuntimeError: CUDA error: ...``); ``""`` when
    there is neither."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    errors = [ln.split(": error: ", 1)[1] for ln in lines
              if ln.split(": error: ", 1)[0].endswith(".py") and ": error: " in ln]
    if errors:
        reason = errors[0].split("; partial results: ", 1)[0]
        more = len(errors) - 1
        return reason + (f" ({more} more error line{'s' if more > 1 else ''} in its output)"
                         if more else "")
    raised = [ln for ln in lines if re.match(r"[A-Za-z_][\w.]*(Error|Exception|Interrupt)"
                                            r"(: |$)", ln)]
    return raised[-1] if raised else ""


# ------------------------------------------------------------------ printing


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value / 1e6:.2f}"


def _ratio(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}"


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:,.0f}"


def case_rows(cases: list[dict[str, Any]]) -> list[list[str]]:
    """Per case: workload, arm, codec, transport, steady and run-level tokens/s, mean
    and median step, GPU busy, host, host per decode step and GPU idle ms per step, the
    compute / roofline ratio, outcome, device (``HEADER``, defined by ``LEGEND``)."""
    rows = []
    for s in cases:
        rows.append([
            str(s.get("workload", "?")), str(s.get("arm", s.get("policy", "?"))),
            str(s.get("codec", "?")), str(s.get("transport", "?")),
            _num(s.get("output_tokens_per_s")), _num(s.get("run_output_tokens_per_s")),
            _ms(s.get("step_ns_mean")), _ms(s.get("step_ns_median")),
            _ms(s.get("gpu_busy_ns_per_step")),
            _ms(s.get("host_ns_per_step")), _ms(s.get("host_ns_per_decode_step")),
            _ms(s.get("gpu_idle_ns_per_step")), roofline_ratio(s.get("compute_to_roofline_ratio")),
            "ok" if s.get("complete") else "FAILED", str(s.get("runner_device", "?"))])
    return rows


HEADER = ["workload", "arm", "codec", "transport", "tok/s", "run tok/s", "step ms (mean)",
          "step ms (median)", "GPU busy ms", "host ms", "host ms/decode", "GPU idle ms",
          "x roofline", "case", "device"]
#: Under each stage's table: what its tokens/s and step columns are. ``tok/s`` rests on
#: the mean step (the counted steps' tokens over their summed time), so a slow step
#: (a first step's CUDA graph capture) moves it and the mean, not the median.
LEGEND = ("  tok/s: output tokens of the counted steps over their summed step time (running "
          "requests / step ms (mean) when every counted step decodes one token each); run "
          "tok/s: every token over the case's wall time, warm-up and start-up included (CUDA "
          "only: - on the CPU stages); step ms (mean), (median): of the counted steps; GPU "
          "busy, host, host/decode and GPU idle ms: CUDA events per step, x roofline: GPU busy "
          "over the step's roofline (CUDA only: - on the CPU stages)")


def send_shares(cases: list[dict[str, Any]]) -> list[str]:
    """Per (workload, codec) with both policies, the figures of
    ``analysis.send_cost.pair_cost``, each named: send's SchedulerOutput build + encode
    + decode over cached's (``s2r_build_encode_decode_ns_median``, send's - cached's)
    per step and as a share of cached's ``step_ns_median`` (the step the case
    measured; send's share as every output gives it), then the whole median steps'
    difference (``step_ns_median``, send's - cached's) and its share, which holds
    everything else that differed between the two cases, noise included."""
    from ipc_bench.analysis.send_cost import pair_cost

    lines = []
    key = "s2r_build_encode_decode_ns_median"
    groups: dict[tuple, dict[str, dict]] = {}
    for s in cases:
        if s.get("complete") and s.get(key) is not None and s.get("arm") in ("send", "cached"):
            groups.setdefault((s["workload"], s["codec"]), {})[s["arm"]] = s
    for (workload, codec), arms in groups.items():
        if "send" not in arms or "cached" not in arms:
            continue
        cost = pair_cost(arms["send"], arms["cached"])
        if cost["send_cost_s2r_share_of_step"] is None:
            continue
        line = (f"  send's share [{workload}] {codec}: send's build+encode+decode over "
                f"cached's: {cost['send_cost_s2r_ns'] / 1e3:+.1f} us per step = "
                f"{cost['send_cost_s2r_share_of_step']:+.2%} of cached's "
                f"{cost['send_cost_measured_step_ns'] / 1e6:.2f} ms median step")
        if cost["send_cost_share_of_step"] is not None:
            line += (f"; whole median step, send's over cached's: "
                     f"{cost['send_cost_step_ns'] / 1e6:+.2f} ms = "
                     f"{cost['send_cost_share_of_step']:+.2%}")
        lines.append(line)
    return lines


def async_lines(cases: list[dict[str, Any]]) -> list[str]:
    """Per workload with a sync ``cached`` case and its ``cached+async`` twin: both
    tokens/s and their ratio, the runner gap (median µs and share of the step) of each,
    the async case's GPU idle ms per step, share of steps launched ahead
    (``runner_lookahead_share``) and mode (``async_scheduling_mode``)."""
    groups: dict[str, dict[str, dict]] = {}
    for s in cases:
        if s.get("complete") and s.get("arm") in ("cached", "cached+async"):
            groups.setdefault(s["workload"], {})[s["arm"]] = s
    lines = []

    def gap(s: dict) -> str:
        us, share = s.get("runner_gap_ns_median"), s.get("runner_gap_share_median")
        return "-" if us is None else f"{us / 1e3:,.0f} us ({share:.1%})"

    for workload, arms in groups.items():
        if "cached" not in arms or "cached+async" not in arms:
            continue
        sync, asyn = arms["cached"], arms["cached+async"]
        ts, ta = sync.get("output_tokens_per_s"), asyn.get("output_tokens_per_s")
        ratio = f" = x{ta / ts:.2f}" if ts and ta else ""
        ahead = asyn.get("runner_lookahead_share")
        lines.append(
            f"  async [{workload}]: tok/s sync {_num(ts)} -> async {_num(ta)}{ratio}; "
            f"runner gap p50 sync {gap(sync)} -> async {gap(asyn)}; GPU idle ms/step "
            f"sync {_ms(sync.get('gpu_idle_ns_per_step'))} -> async "
            f"{_ms(asyn.get('gpu_idle_ns_per_step'))}; launched ahead "
            f"{'-' if ahead is None else f'{ahead:.0%}'}; mode: "
            f"{asyn.get('async_scheduling_mode')}")
    return lines


def format_stage(run_dir: Path, note: str = "") -> str:
    """The stage's table, ``note`` (the stage's line under it, if any), send's shares
    and the async comparison, from its ``summary.json``; ``""`` when it holds no case."""
    cases = read_summary(str(run_dir))["cases"]
    if not cases:
        return ""
    rows = case_rows(cases)
    widths = [max(len(h), *(len(r[i]) for r in rows))
              for i, h in enumerate(HEADER)]
    lines = ["  ".join(c.ljust(w) if i < 4 or i >= len(HEADER) - 2 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(row, widths)))
             for row in [HEADER] + rows]
    lines.append(LEGEND)
    if below_roofline(s.get("compute_to_roofline_ratio") for s in cases):
        lines.append(ROOFLINE_BELOW_ONE_NOTE)
    if note:
        lines.append(note)
    return "\n".join(lines + send_shares(cases) + async_lines(cases))


# ------------------------------------------------------------------ running


def _stop(proc: subprocess.Popen, signum: int) -> str:
    """Send ``signum`` to ``proc``, then SIGCONT to it and its descendants (a stopped
    process cannot act on ``signum`` until continued; a running one is left alone by
    it), give it ``INTERRUPT_GRACE_S`` to write and exit, then SIGKILL it; reaped either
    way. Returns how it ended, e.g. ``0.4 s later it exited 130``, ``15 s later it had
    not exited and was killed by SIGKILL``, after ``it was stopped (SIGSTOP or
    SIGTSTP), so SIGCONT followed; `` where it was."""
    t0 = time.monotonic()
    note = ""
    if proc.poll() is None:  # not reaped: the pid is still its own
        family = [proc.pid, *_descendants(proc.pid)]
        stopped = sum(_is_stopped(pid) for pid in family)
        if stopped:
            note = ("it was stopped" if _is_stopped(proc.pid) else
                    f"{stopped} of its processes {'was' if stopped == 1 else 'were'} stopped")
            note += " (SIGSTOP or SIGTSTP), so SIGCONT followed; "
        proc.send_signal(signum)
        for pid in family:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:  # gone meanwhile
                pass
    try:
        proc.wait(timeout=INTERRUPT_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return f"{note}{INTERRUPT_GRACE_S:g} s later it had not exited and was killed by SIGKILL"
    ended = signals.child_ended(proc.returncode)
    return f"{note}{time.monotonic() - t0:.1f} s later it {ended}"


def _is_stopped(pid: int) -> bool:
    """Whether ``pid`` is stopped (state ``T`` in ``/proc/PID/stat``; False without one)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    except (OSError, IndexError):
        return False


def _descendants(pid: int) -> list[int]:
    """The pids of ``pid``'s live descendants (from ``/proc``; none without one)."""
    parent = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                parent[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):  # gone meanwhile
                continue
    found, level = [], {pid}
    while level:
        level = {child for child, ppid in parent.items() if ppid in level}
        found += sorted(level)
    return found


#: How often a running stage's output is copied from memory to its log, seconds.
COPY_EVERY_S = 0.2


def write_problem(folder: Path) -> Optional[str]:
    """Why ``folder`` does not take a file of ``run_folder.PROBE_BYTES`` (written and
    removed again: ``run_folder.probe_write``): ``No space left on device`` for a full
    disk, the quota's or permission's words; ``None`` where it does. (An empty file,
    which a full disk still takes, says nothing.)"""
    from ipc_bench.harness.run_folder import probe_write

    try:
        probe_write(folder, ".gpu-check-probe-")
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _memory_file(name: str):
    """A file in memory (Linux ``memfd_create``; a temporary file elsewhere) for a
    child's output: its writes do not fail for a full disk."""
    if hasattr(os, "memfd_create"):
        return open(os.memfd_create(f"gpu-check-{name}"), "w+b")
    return tempfile.TemporaryFile("w+b")


class _LogCopy:
    """Copies what a stage wrote to its output file (``_memory_file``) on to its log at
    ``log`` (``None``: nothing copied) as it comes (``copy``: every ``COPY_EVERY_S``
    while the stage runs, and once it ended); where the log cannot be opened or written
    (``error``: the reason, e.g. ``No space left on device``), the copying stops and
    the output stays whole in memory."""

    def __init__(self, sink, log: Optional[Path]):
        self.sink, self.done, self.fd, self.error = sink, 0, None, ""
        if log is not None:
            try:
                self.fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC,
                                  0o644)
            except OSError as exc:
                self.error = exc.strerror or str(exc)

    def copy(self) -> None:
        while self.fd is not None and not self.error:
            data = os.pread(self.sink.fileno(), 1 << 16, self.done)
            if not data:
                return
            try:
                while data:
                    n = os.write(self.fd, data)
                    data, self.done = data[n:], self.done + n
            except OSError as exc:
                self.error = exc.strerror or str(exc)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def run_child(name: str, cmd: list[str], timeout_s: float,
              log: Optional[Path] = None) -> tuple[int, str, str]:
    """Run stage ``name``'s ``cmd`` for at most ``timeout_s``: (exit code, output, how
    it was cut): the last ``""`` when it ended by itself, else how it ended after it
    was cut at the limit (``_stop``: ``CUT_SIGNAL``, SIGCONT, then SIGKILL after
    ``INTERRUPT_GRACE_S``; ``SIGTERM sent; 0.4 s later it exited 143``). Its stdout
    and stderr go together to a file in memory (``_memory_file``) and from there to
    ``log`` as they come (``_LogCopy``, every ``COPY_EVERY_S``), so a check killed from
    outside (a machine's own time limit) leaves each stage's output so far beside its
    run folder, and where the log cannot be written (a full disk) the output is whole
    all the same, for the stage's lines and its ``FAILED`` line's reason (a line says
    so: ``gpu_check: [smoke] its log DIR/1-smoke.log could not be written (No space
    left on device): its output was kept in memory``). A signal this script gets meanwhile
    (``signals.Interrupted``) is passed on to the child the same way, and raised once
    the child is reaped, so no stage outlives the script; and should this script be
    SIGKILLed, the child is SIGTERMed by the kernel (``signals.terminated_with_parent``)
    and exits 143 with what it has written. ``cmd`` starts with SIGINT, SIGTERM and
    SIGHUP blocked (``signals.child_start``) and must lift them once its handlers are
    in, as ``bench.py`` and ``decode_step_check.py`` do (``signals.install``); else
    the cut's SIGTERM waits and it is killed ``INTERRUPT_GRACE_S`` later."""
    proc = None
    with _memory_file(name) as sink:
        copier = _LogCopy(sink, log)
        try:
            # no signal between the fork and holding the handle; the child starts with
            # them blocked, so one passed on while its interpreter starts waits for
            # bench.py's handlers (signals.child_start)
            with signals.child_start():
                proc = subprocess.Popen(cmd, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL,
                                        preexec_fn=signals.terminated_with_parent(os.getpid()))
            cut = ""
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    proc.wait(timeout=max(0.0, min(COPY_EVERY_S,
                                                   deadline - time.monotonic())))
                    break
                except subprocess.TimeoutExpired:
                    copier.copy()
                    if time.monotonic() >= deadline:
                        cut = f"{CUT_SIGNAL.name} sent; {_stop(proc, CUT_SIGNAL)}"
                        break
            copier.copy()
            if copier.error:
                print(f"gpu_check: [{name}] its log {log} could not be written "
                      f"({copier.error}): its output was kept in memory", flush=True)
            sink.seek(0)
            return proc.returncode, sink.read().decode("utf-8", errors="replace"), cut
        except signals.Interrupted as exc:
            if proc is not None:
                with signals.deferred():
                    ended = _stop(proc, exc.code - 128)
                print(f"gpu_check: [{name}] stopped: {exc.signal_name} passed on; {ended}",
                      flush=True)
            raise
        finally:
            copier.copy()
            copier.close()


def _failure(code: int) -> str:
    """How a stage that was not cut failed: ``failed with exit 1``, ``killed by
    SIGKILL``."""
    if code >= 0:
        return f"failed with exit {code}"
    return signals.child_ended(code).replace("was ", "", 1)


def run_stage(stage: Stage, base: list[str], out: Path, timeout_s: float) -> tuple[int, str]:
    """Run one stage's ``bench.py`` into ``out``, its output into ``OUT.log`` beside
    it; (exit code, how it ended: one line, a whole sentence, then for a failure the
    last lines of the stage's output, if any, indented). Its heading: the stage's
    ``stand_in`` line (CPU), then its command line. A stage still running at
    ``timeout_s`` gets ``CUT_SIGNAL`` (``bench.py`` writes what finished) and SIGCONT,
    then SIGKILL after ``INTERRUPT_GRACE_S`` (``_stop``)."""
    cmd = [sys.executable, str(ROOT / "bench.py"), *stage.args, *base, "--output", str(out)]
    if stage.stand_in:
        print(f"gpu_check: [{stage.name}] {stage.stand_in}", flush=True)
    print(f"gpu_check: [{stage.name}] python bench.py "
          + " ".join(cmd[2:]) + f"  (limit {timeout_s:.0f} s)", flush=True)
    code, text, cut = run_child(stage.name, cmd, timeout_s, out.parent / f"{out.name}.log")
    if cut:
        how = f"cut at its {timeout_s:.0f} s limit: {cut}"
    elif code == 0:
        return 0, "passed"
    else:
        how = _failure(code)
    return code or 1, how + ("\n" + _tail(text) if text.strip() else "")


def fastest_backend(rows: list[dict[str, Any]]) -> str:
    """The backend (without graphs) of the shortest median GPU time per step (step
    time on CPU) at the largest batch size every backend ran unpadded (its ``bucket``
    the size itself: decode_step_check's B + 1 rows, padded to the next bucket by flex
    and varlen only, measure the padding, not the backend at the stages' sizes);
    ``gather`` when there is no such size (``decode_step_check``'s JSON rows)."""
    eager = [r for r in rows if "+" not in r["config"]
             and r.get("bucket", r["num_running"]) == r["num_running"]]
    if not eager:
        return "gather"
    common = set.intersection(*({r["num_running"] for r in eager if r["config"] == c}
                                for c in {r["config"] for r in eager}))
    if not common:
        return "gather"
    size = max(common)
    best = min((r for r in eager if r["num_running"] == size),
               key=lambda r: r["gpu_busy_ns"] if r["gpu_busy_ns"] is not None else r["step_ns"])
    return best["config"]


def run_decode_step(cuda: bool, out: Path, timeout_s: float) -> tuple[str, list[str]]:
    """Stage 0: ``decode_step_check.py`` into ``out/0-decode-step.json``, its output
    into ``out/0-decode-step.log`` as it comes and printed when it ends. Returns (the
    ``--attention`` for the later stages, failure lines): on CUDA the fastest backend
    (``fastest_backend``); on CPU, where it runs shrunk (2 running, 3 counted steps),
    always ``gather``: there the backends' step times differ by noise (gather 1.61 ms
    against flex 1.60 ms at 3 running, one run), and flex would compile in every later
    runner. Where the JSON says the run did not finish (``decode_step_state``), its
    last line and failure line say which configurations were not run, and so does a
    line printed when a signal stops the check during the stage."""
    path = out / "0-decode-step.json"
    cmd = [sys.executable, str(ROOT / "scripts" / "decode_step_check.py"), "--json", str(path)]
    if not cuda:
        cmd += ["--device", "cpu", "--num-running", "2", "--steps", "3", "--warmup", "1"]
    print(f"gpu_check: [decode-step] python {' '.join(cmd[1:])}  (limit {timeout_s:.0f} s)",
          flush=True)
    try:
        code, text, cut = run_child("decode-step", cmd, timeout_s, out / "0-decode-step.log")
    except signals.Interrupted:
        state = decode_step_state(path)[1]
        if state:
            print(f"gpu_check: [decode-step] {state}", flush=True)
        raise
    print("\n".join(ln for ln in text.splitlines() if "Warning" not in ln), flush=True)
    rows, state = decode_step_state(path)
    attention = fastest_backend(rows) if cuda else "gather"
    reason = error_reason(text) if code and not cut else ""
    problems = ([f"cut at its {timeout_s:.0f} s limit: {cut}" if cut
                 else _failure(code) + (f": {reason}" if reason else "")]
                if cut or code else []) + ([state] if state else [])
    print("gpu_check: [decode-step] " + ("FAILED: " + "; ".join(problems) if problems
                                         else "passed")
          + f"; later stages use --attention {attention}", flush=True)
    return attention, ["decode-step: " + "; ".join(problems)] if problems else []


def decode_step_state(path: Path) -> tuple[list[dict[str, Any]], str]:
    """Stage 0's JSON at ``path``: (its rows, ``""`` when the run finished, else a
    sentence saying what is missing: ``0-decode-step.json is incomplete (interrupted by
    SIGTERM): flex, flex+graphs not run``; also when the file is absent or not whole
    JSON)."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return [], f"it wrote no {path.name}"
    except (OSError, ValueError) as exc:
        return [], f"its {path.name} could not be read ({exc})"
    rows = data.get("rows", [])
    if data.get("complete", True):
        return rows, ""
    by = f" (interrupted by {data['interrupted_by']})" if data.get("interrupted_by") else ""
    not_run = data.get("not_run")
    return rows, f"{path.name} is incomplete{by}: " + (
        f"{', '.join(not_run)} not run" if not_run else "not every configuration ran")


def report_stage(stage: Stage, code: int, how: str, run_dir: Path, so_far_s: float) -> None:
    """Print how ``stage`` ended (``run_stage``'s ``how``): its first line with the
    check's time so far, and for a failure whether the last lines of the stage's
    output follow (then them) or it printed nothing; then its table (``format_stage``)
    where it wrote a case, else, where it wrote a ``summary.json``, a line saying no
    case was written."""
    first, _, output = how.partition("\n")
    said = "" if code == 0 else ("; the last lines of its output follow" if output
                                 else "; it printed nothing")
    print(f"gpu_check: [{stage.name}] {first} ({so_far_s:.0f} s so far){said}", flush=True)
    if output:
        print(output, flush=True)
    if (run_dir / "summary.json").exists():
        print(format_stage(run_dir, stage.note)
              or f"gpu_check: [{stage.name}] no case was written, so there is no table",
              flush=True)


def _tail(text: str, lines: int = 8) -> str:
    return "\n".join("    " + ln for ln in (text or "").strip().splitlines()[-lines:])


def _preflight(device: str) -> tuple[bool, int]:
    """(CUDA present, exit code if the probe failed)."""
    try:
        found, memory = probe_torch_device(device)
    except ConfigError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return False, 2
    if found == "cuda":
        print(f"gpu_check: CUDA present ({memory / 1e9:.1f} GB free): stages on the GPU",
              flush=True)
        return True, 0
    print("gpu_check: no CUDA device (torch.cuda.is_available() is False): running the "
          "stages shrunk on the CPU (tiny and cpu presets) instead", flush=True)
    return False, 0


class _Parser(OnceParser):
    """Bad input: one line on stderr (``gpu_check.py: error: ...``), exit 2; an option
    given twice is refused (``OnceParser``)."""

    def error(self, message: str):
        print(f"{PROG}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def budget_seconds(text: str) -> float:
    """argparse type of ``--budget-s``: a number of seconds > 0, at most ``MAX_BUDGET_S``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive, finite number of seconds, "
                                         f"got {text!r}")
    if value > MAX_BUDGET_S:  # as bench.py caps its timeouts
        raise argparse.ArgumentTypeError(f"must be at most {MAX_BUDGET_S:.0f}, got {text}")
    return value


def stage_numbers(text: str) -> set[int]:
    """argparse type of ``--stages``: comma-separated numbers of ``STAGE_NAMES``; no
    empty item (``list_items``) nor one given twice (``no_repeats``, as every list
    option of ``bench.py``)."""
    known = ", ".join(f"{i} {name}" for i, name in enumerate(STAGE_NAMES))
    items = list_items(text, "stage numbers")
    for t in items:
        if not (t.isascii() and t.isdigit() and int(t) < len(STAGE_NAMES)):
            raise argparse.ArgumentTypeError(f"unknown stage {t!r}; the stages are {known}")
    return set(no_repeats([int(t) for t in items]))


def trace_file(text: str) -> str:
    """argparse type of ``--trace``: a readable file (stage 5 would otherwise be skipped
    after the others ran), as an absolute path: the stages' ``bench.py`` runs in the
    checkout, whatever folder a relative path was given from. What it holds is checked
    once the stages are known (``trace_problem``)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected the path of a file, got {text!r}")
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"no such trace file: {text}")
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"{text} is not a file")
    if not os.access(text, os.R_OK):
        raise argparse.ArgumentTypeError(f"cannot read {text}: permission denied")
    return os.path.abspath(text)


def trace_problem(trace: str, cuda: Optional[bool]) -> Optional[str]:
    """Why the Azure replay stage's ``bench.py`` would refuse ``trace``, in its words
    (one line, what follows its ``bench.py: error: ``), else ``None``. Before the
    device is known (``cuda`` ``None``): the trace read as that ``bench.py`` reads it
    (``traces.load_azure_trace``), as many rows as the stage replays on both devices
    (``CONV_REQUESTS``: the fewer), rows after them unread, so a trace of any size is
    checked in about a millisecond; ``--trace`` of random bytes:
    ``/tmp/garbage.csv line 1: not UTF-8 text (byte 1 of the line)``. Once it is known:
    the stage's own command line (``replay_args``) checked as its ``bench.py`` checks it
    before its first case (``cli.run.trace_replay_problem``: its cases built on this
    machine, then every request rejected as longer than ``max_model_len`` or the KV
    cache, a served request that outgrows the cache, every step in the warm-up,
    refused), which takes about 20 ms with the Azure trace's first 100 rows."""
    if cuda is not None:
        return trace_replay_problem(replay_args(cuda, trace))
    try:
        load_azure_trace(trace, max_requests=min(CONV_REQUESTS.values()))
    except TraceError as exc:
        return one_line(str(exc))
    return None


def base_args(cuda: bool) -> list[str]:
    """The ``bench.py`` options every stage gets (before stage 0 picks its
    ``--attention``): the torch model on the device found, quiet, no hostname."""
    return ["--model", "torch", "--device", "cuda" if cuda else "cpu", "--quiet",
            "--no-hostname"]


def replay_args(cuda: bool, trace: str) -> list[str]:
    """The Azure replay stage's ``bench.py`` command line but ``--output`` (and the
    ``--attention`` stage 0 picks, which builds the same cases)."""
    stage = next(s for s in build_stages(cuda, trace) if s.name == "azure-conv")
    return [*stage.args, *base_args(cuda)]


#: The advice of ``bench.py``'s trace refusals (``harness.trace_checks``) names options
#: of its own (``raise --max-model-len to 200,001 or more``, ``raise --num-blocks ...``,
#: ``set --warmup-steps below 1 ... or replay a longer trace``), which the Azure replay
#: stage sets itself and this script does not take: ``(marker, what the stage takes)``,
#: the refusal kept up to its marker's ``: `` and the rest replaced (``stage_words``).
_STAGE_ADVICE = (
    # every request rejected on arrival (rejection_problem)
    (", so the run would measure nothing: ",
     "stage 5 sets its max_model_len and KV cache itself ({script} has no option for "
     "them), so this trace cannot be used there: it takes one with a request among its "
     "first {rows} rows (those the stage replays) whose prompt they admit"),
    # a served request outgrows the whole KV cache (overflow_problem)
    (", which preempting every other request does not free: ",
     "stage 5 sets its KV cache and max_model_len itself ({script} has no option for "
     "them), so this trace cannot be used there: it takes one whose requests among its "
     "first {rows} rows (those the stage replays) fit that cache to their last step"),
    # every step in the warm-up (warmup_problem)
    (": set --warmup-steps below ",
     "stage 5 sets its warm-up and replays at most {rows} rows ({script} has no option "
     "for them), so this trace cannot be used there: it takes one whose first {rows} "
     "rows take more steps than that warm-up (longer outputs, or more rows where it has "
     "fewer than {rows})"),
)


def stage_words(problem: str, cuda: bool) -> str:
    """``problem`` (``trace_problem``'s once the device is known: the stage's
    ``bench.py``'s words) with advice this script's user can follow: where it ends in
    advice naming ``bench.py`` options (``_STAGE_ADVICE``), what it says up to that
    advice, then what kind of trace the stage takes instead; else ``problem`` as it
    is (a trace it cannot read)."""
    for marker, advice in _STAGE_ADVICE:
        at = problem.find(marker)
        if at >= 0:
            keep = at + marker.index(": ") + 2
            return problem[:keep] + advice.format(rows=CONV_REQUESTS[cuda], script=PROG)
    return problem


def _refuse_trace(trace: Optional[str], given: bool, cuda: Optional[bool]) -> bool:
    """Print the line refusing ``trace`` (``trace_problem``, its advice this script's
    once the device is known: ``stage_words``) and return ``True`` where the stage's
    ``bench.py`` would refuse it: ``gpu_check.py: error: argument --trace: REASON``
    for a ``--trace`` given, else one naming the default trace found
    (``TRACE_CANDIDATES``); ``False`` where it reads, or there is none."""
    problem = trace_problem(trace, cuda) if trace else None
    if problem is None:
        return False
    if cuda is not None:
        problem = stage_words(problem, cuda)
    if given:
        print(f"{PROG}: error: argument --trace: {problem}", file=sys.stderr)
    else:
        print(f"{PROG}: error: the default --trace, {trace}, cannot be replayed: {problem}; "
              "give --trace PATH, or leave stage 5 out (--stages)", file=sys.stderr)
    return True


def stage_entries(folder: Path) -> list[str]:
    """The names in ``folder`` that a stage writes (``N-NAME`` run folders, their
    ``.log`` files, ``0-decode-step.json``: ``STAGE_NAMES``), sorted; ``[]`` where it
    is missing or cannot be listed."""
    names = {f"{i}-{name}" for i, name in enumerate(STAGE_NAMES)}
    names |= {f"{s.number}-{s.name}" for cuda in (True, False)
              for s in build_stages(cuda, None)}
    try:
        listed = os.listdir(folder)
    except OSError:
        return []
    # (not split at the first dot: the CUDA folders' preset names hold dots)
    return sorted(n for n in listed if n.removesuffix(".log").removesuffix(".json") in names)


def output_folder(text: str) -> str:
    """argparse type of ``--output``: a folder this script can create (if missing) and
    write in, found out by making its missing folders and writing a small file in it
    (``write_problem``: a full disk says ``cannot write to DIR: No space left on
    device``), all removed again, so a bad path is refused before any stage runs and leaves nothing; one that
    holds an earlier check's stage results (``stage_entries``) is refused too (each
    stage's ``bench.py`` would refuse its run folder, and its log be overwritten). A
    file, a file above it or a link that cannot be followed is refused in the run's
    words (``output path PATH exists and is not a folder``, ``output path PATH is a
    symbolic link to TARGET, which is not a folder``: ``errors.output_kind_text``;
    ``errors.broken_link_text``: ``cannot write results to PATH: FILE is not a
    folder``)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected the path of a folder, got {text!r}")
    earlier = stage_entries(Path(text))
    if earlier:
        shown = ", ".join(earlier[:4]) + (f" and {len(earlier) - 4} more" if len(earlier) > 4
                                          else "")
        raise argparse.ArgumentTypeError(
            f"{text} holds an earlier check's stage results ({shown}), which the stages "
            "would refuse or overwrite: give a new or empty folder")
    problem = broken_link_text(Path(text), "results")  # the run's words
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    kind = output_kind_text(Path(text), text)
    if kind is not None:
        raise argparse.ArgumentTypeError(kind)
    missing, folder = [], Path(text)
    while not os.path.lexists(folder):
        missing.append(folder)
        folder = folder.parent
    created: list[Path] = []
    try:
        for folder in reversed(missing):
            folder.mkdir()
            created.append(folder)
        problem = write_problem(Path(text))  # a full disk takes an empty file
        if problem is not None:
            raise argparse.ArgumentTypeError(f"cannot write to {text}: {problem}")
    except OSError as exc:
        raise argparse.ArgumentTypeError(
            f"cannot write to {text}: {exc.strerror or exc}") from None
    finally:
        for folder in reversed(created):
            folder.rmdir()
    return text


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(description=module_doc(sys.modules[__name__]).splitlines()[0])
    p.add_argument("--output", type=output_folder, help="folder for the stages' run folders "
                   "(default: a new folder gpu-check-XXXXXXXX in the temporary folder, here "
                   f"{tempfile.gettempdir()} ($TMPDIR, else /tmp), kept; the last line "
                   "names it)")
    p.add_argument("--trace", type=trace_file, help="Azure conversation trace CSV (default: "
                   "../shared/traces/AzureLLMInferenceTrace_conv.csv when present; without "
                   "one stage 5 is skipped)")
    p.add_argument("--budget-s", type=budget_seconds, default=BUDGET_S,
                   help=f"time budget of the whole check in seconds (default {BUDGET_S:.0f}); "
                   "on the CPU a larger one stretches the stages' own limits in proportion")
    p.add_argument("--device", choices=("auto", "cpu"), default="auto",
                   help="auto: CUDA when present; cpu: the shrunk CPU stages")
    p.add_argument("--stages", type=stage_numbers,
                   help="comma-separated stage numbers to run (default: all: "
                   + ", ".join(f"{i} {n}" for i, n in enumerate(STAGE_NAMES))
                   + "). They run in the order " + ", ".join(map(str, RUN_ORDER))
                   + " whatever order they are given in: the smoke stage, 1, first (with gather; its failure stops "
                   "the check), then stage 0 (it picks the --attention of the later stages; "
                   "without it they use auto, or gather where Triton lacks a C compiler or "
                   "Python's headers), then the others by what they deliver")
    return p


def main(argv=None, exiting: bool = False) -> int:
    """The check; returns the exit code: 0, 1 (a stage failed), 2 (bad input), 130 /
    143 / 129 (interrupted by SIGINT / SIGTERM / SIGHUP: the running stage gets the
    same signal and is reaped, killed after ``INTERRUPT_GRACE_S``, before the exit;
    one line, ``gpu_check.py: interrupted by SIGTERM; results so far in DIR (exit
    143)``, the part naming DIR where the output folder is there: ``interrupt_line``). One
    that came while the script started, kept pending by the block of its first
    statement, ends it at the end of the parsing.
    ``exiting``: the process exits once this returns (the script run as a command): a
    signal leaves further ones ignored on its way out, as ``bench.py``'s; ``False``
    (``main`` called in process) puts the caller's handlers back whatever happened
    (``signals.run_command``)."""
    made: list[Path] = []  # the output folder, once named
    return signals.run_command(lambda: _parse(argv), lambda args: _run(args, made),
                               lambda exc, _: interrupt_line(exc, made), exiting=exiting)


def _parse(argv) -> "argparse.Namespace | int":
    """``argv`` parsed, or the exit code of ``--help`` (0) or of a bad option (2, its
    one line printed)."""
    try:
        return build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, or the one-line error
        return exc.code if isinstance(exc.code, int) else 2


def _run(args: argparse.Namespace, made: list[Path]) -> int:
    """``main``'s work: the stages into the output folder (appended to ``made`` once
    named), or a new temporary folder, removed again when no stage ran. A relative
    ``--output`` or ``--trace`` is read against the folder the script was started in, as
    its checks read them, though each stage runs from the repository root."""
    _end_with_parent()
    for name in ("output", "trace"):
        if getattr(args, name):
            setattr(args, name, os.path.abspath(getattr(args, name)))
    try:
        out = Path(args.output or tempfile.mkdtemp(prefix="gpu-check-"))
    except OSError as exc:
        print(f"{PROG}: error: cannot create a temporary folder: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 2
    made.append(out)
    code = _check(args, out)
    if code == 2 and args.output is None:  # probe failed, or trace refused: no stage ran
        out.rmdir()
    return code


def interrupt_line(exc: signals.Interrupted, made: list[Path]) -> str:
    """``gpu_check.py: interrupted by SIGINT (exit 130)`` (``Interrupted.line``), with
    ``; results so far in DIR`` before ``(exit 130)`` where the output folder
    (``made``: its path, once named) is there."""
    return exc.line(PROG, f"results so far in {made[0]}" if made and made[0].is_dir()
                    else "")


def _end_with_parent() -> None:
    """Have this process SIGTERMed when its parent dies (Linux ``PR_SET_PDEATHSIG``;
    ``signals.set_parent_death_signal``), so that a ``device_check.sh`` SIGKILLed (a
    machine's time limit) does not leave the check and its stage running: it ends as a
    SIGTERM ends it (the stage told, what it measured written, exit 143). A parent
    that died before this ran is noticed too (``signals.Interrupted`` at once)."""
    parent = os.getppid()
    if signals.set_parent_death_signal(signal.SIGTERM) and os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


def _check(args: argparse.Namespace, out: Path) -> int:
    """``main``'s stages, into ``out``; 2 (nothing created) when the device probe
    fails, when ``out`` does not take a small file before the first stage
    (``write_problem``: ``gpu_check.py: error: cannot write to DIR: No space left on
    device``), or when stage 5 is to run and its ``bench.py`` would refuse the trace
    (``trace_problem``: one line, before the device probe where the rows both devices
    replay tell, else right after it, the stage's cases built as its ``bench.py``
    builds them). After the stages, the failures (``FAILED ...``,
    on stderr), then the line naming ``out``, last."""
    wanted = args.stages
    t0 = time.monotonic()
    trace = args.trace or next((str(t) for t in TRACE_CANDIDATES if t.is_file()), None)
    replay = trace if wanted is None or 5 in wanted else None
    # the rows both devices replay before the device probe, the device's after it
    if _refuse_trace(replay, bool(args.trace), None):
        return 2
    cuda, code = _preflight(args.device)
    if code:
        return code
    if _refuse_trace(replay, bool(args.trace), cuda):
        return 2
    missing, folder = [], out
    while not os.path.lexists(folder):
        missing.append(folder)
        folder = folder.parent
    out.mkdir(parents=True, exist_ok=True)
    # before the first stage, whose log and run folder would be written there: a disk
    # that filled since the options were read (or the default folder's) is refused
    problem = write_problem(out)
    if problem is not None:
        for folder in missing:  # the folders made here go, as they came
            try:
                folder.rmdir()
            except OSError:
                break
        print(f"{PROG}: error: cannot write to {out}: {problem}", file=sys.stderr)
        return 2
    written_elsewhere(f"the results are in {out}")  # stdout that fails says so
    base = base_args(cuda)
    failed: list[str] = []
    scale = limit_scale(args.budget_s, cuda)  # the fixed limits, stretched on the CPU
    attention = "auto"  # without stage 0 the later stages use auto
    plan = run_plan(cuda, trace, wanted)
    for at, stage in enumerate(plan):
        if stage.skip:
            print(f"gpu_check: [{stage.name}] SKIPPED: {stage.skip}", flush=True)
            continue
        left = args.budget_s - (time.monotonic() - t0)
        limit = stage_limit_s(stage, [s for s in plan[at + 1:] if not s.skip], left, scale)
        least = min_stage_s(stage, cuda)
        if left <= 0 or limit < least:
            who = "this stage" if stage.number in STAGE_MIN_S else "a stage"
            share, of = share_texts(limit, left, least)
            why = (f"not run, the {args.budget_s:g} s budget is spent" if left <= 0 else
                   f"not run for lack of time: its share would be {share} s (of the "
                   f"{of} s left of the {args.budget_s:g} s budget), less than the "
                   f"{least:g} s {who} is given at least")
            print(f"gpu_check: [{stage.name}] {why}", flush=True)
            failed.append(f"{stage.name}: {why}")
            if stage.name == "smoke":  # as a failed smoke stage: nothing after it runs
                print("gpu_check: the smoke stage was not run: the other stages are not run",
                      flush=True)
                break
            continue
        if stage.number == 0:
            attention, problems = run_decode_step(cuda, out, limit)
            failed += problems
            continue
        if stage.number > 1 and attention == "auto" and cuda:
            if triton_toolchain_problem() is not None:
                attention = "gather"  # auto would be flex, which every runner would refuse
                print("gpu_check: the stages use --attention gather: "
                      f"{triton_toolchain_problem()}", flush=True)
        use = stage.attention or attention
        run_dir = out / f"{stage.number}-{stage.name}"
        code, how = run_stage(stage, base + (["--attention", use] if use != "auto" else [])
                              + bucket_args(stage, use, cuda), run_dir, limit)
        report_stage(stage, code, how, run_dir, time.monotonic() - t0)
        if code != 0:
            failed.append(f"{stage.name}: {failure_line(how)}")
            if stage.name == "smoke":
                print("gpu_check: the smoke stage failed: the other stages are not run",
                      flush=True)
                break
    for line in failed:
        print(f"gpu_check: FAILED {line}", file=sys.stderr, flush=True)
    print(f"gpu_check: results in {out} ({time.monotonic() - t0:.0f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(script_main(PROG, lambda: main(exiting=True), "the stages' results",
                         "the output folder"))
