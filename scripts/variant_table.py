#!/usr/bin/env python3
"""Bytes and microseconds per pure-decode step of each variant of the scheduler <->
runner hop (issue 15 item 5): the ``send`` policy (vLLM before PR #20291) and ``cached``
(#20291), each with the ``msgpack``, ``pickle`` (vLLM 7f280d69c's executor RPC),
``packed`` (vLLM PR #54406), ``slots`` (integer slots, raw arrays, nothing for an
unchanged request: ``ipc_bench.wire.slots``) and ``replicated`` (SGLang style: the
runner runs a replica of the scheduler, ``ipc_bench.wire.replicated``) codecs, with
uniform and Zipf token ids (``--token-ids``, ``ipc_bench.engine.token_ids``), at 1, 16,
64, 256 and 1,024 running requests.

Per step and variant: the SchedulerOutput's and the ModelRunnerOutput's payload bytes,
and pyperf's median time of building the SchedulerOutput (``Scheduler.
build_scheduler_output``), encoding and decoding it, and encoding and decoding the
ModelRunnerOutput; ``total`` is their sum. The messages are those of the last of 60
steps of a steady-decode workload stepped in one process (prompts of 100-300 tokens,
no request finishes, so every request decodes one token), built as each codec's
message classes. Not measured here: the transport.

The frontend hop (engine core -> frontend, ``EngineCoreOutputs`` in msgspec MessagePack,
as vLLM V1 and ``--frontend``) is the same under every policy and codec of the other
hop, so it is one set of benchmarks per running count and token ids (``frontend build
uniform B=16`` ...): the same step's message built by the harness's builder
(``engine.outputs.build_engine_core_outputs``, as ``harness.frontend_hop`` calls it
after ``update_from_output``; no request finished), its exact bytes (checked against
``analysis.bytemodel.engine_outputs_bytes``), and the median time of building it,
encoding it (``wire.frontend.OutputsEncoder``: ``encode_into`` a reused buffer) and
decoding it (the frontend's typed decoder). Each table row joins them: frontend B and
µs per step, the control plane's bytes (s2r + r2s + frontend) and send's saving as a
share of send's control plane ((send's control plane - cached's) / send's, as
``analysis.frontend``).

``slots`` and ``replicated`` keep state across steps, so a call cannot be repeated on
the same message: their ends (``session_codecs``) are stepped with the workload, and a
timed loop runs consecutive whole steps from step 60 on, timing one operation in each
(``_Stateful``: steps 60 to 459, then the case restarts from step 0, untimed). Their
bytes are step 60's. ``encode s2r`` is the scheduler end's encode (slots: finding what changed and writing the arrays; replicated: the
arrivals and the schedule digest), ``decode s2r`` the runner end's decode (slots:
rebuilding the SchedulerOutput from its table; replicated: the replica's ``schedule``
and ``build_scheduler_output``), ``encode r2s`` the runner end's reply (replicated:
with the replica's ``update_from_output``), ``decode r2s`` the scheduler end's. So
replicated's decode s2r + encode r2s is the scheduler CPU that every rank pays per
step. Their ``build`` is msgpack's (the same Structs; replicated's scheduler still
builds the SchedulerOutput here, for its digest, which needs only
``num_scheduled_tokens``).

Benchmarks that cannot differ are run once and shared: a ``cached`` SchedulerOutput
carries no token id, so its uniform and Zipf messages are the same; pickle and packed
build the same dataclasses and reply the same ModelRunnerOutput.

    python scripts/variant_table.py -o variants.json         # pyperf options apply
    python scripts/variant_table.py --batch-sizes 1,256 --only "packed"
    python scripts/variant_table.py --table-from variants.json   # reprint the table
    python scripts/variant_table.py --table-from variants.json --compact   # send | cached
    python scripts/variant_table.py --table-from variants.json --figure variants.png
    python scripts/variant_table.py --table-from variants.json --only "msgpack send"
    python scripts/variant_table.py --table-from results/published/variants/variants.json.gz
    python scripts/variant_table.py --only frontend -o frontend.json   # frontend hop only
    python scripts/variant_table.py --table-from variants.json --table-from frontend.json

``--table-from`` may be repeated: the files' medians are merged (a benchmark in more
than one file takes the last file's), so benchmarks run apart (e.g. ``--only
frontend``) join an earlier run's table. A table without the frontend benchmarks still
prints: their µs columns show ``-`` (bytes are computed, not read from the file).

By default each benchmark gets 2 worker processes x (1 warm-up + 3 values) of at least
20 ms (``-p``, ``-n``, ``-w``, ``--min-time`` change them; ``--rigorous`` is pyperf's):
the scheduler <-> runner hop's 250 benchmarks took 23 minutes on 2 busy cores with
the defaults, the frontend hop's 30 (``--only frontend``) 1 minute, 3 with ``-p 10``
(``results/published/variants-slots``). Medians, since other work on a shared
machine makes some values far slower.
"""

from __future__ import annotations

import signal

if __name__ == "__main__":
    # As bench.py: the signals of ipc_bench.harness.signals.HANDLED, spelt out
    # (tests/cli/test_script_first_mask.py compares), stay pending until pyperf_staged
    # has installed its handlers (ipc_bench.harness.signals), so none lands in an
    # import; a pyperf worker lets them through again before its benchmark
    # (pyperf_staged).
    signal.pthread_sigmask(signal.SIG_BLOCK, (
        signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
        signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGXCPU))

import argparse
import functools
import gc
import io
import os
import stat
import itertools
import time
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyperf  # noqa: E402

from ipc_bench.analysis.bytemodel import engine_outputs_bytes  # noqa: E402
from ipc_bench.cli.console import (interruptible, one_write, pyperf_staged,  # noqa: E402
                                   script_main, written_elsewhere)
from ipc_bench.cli.options import (MAX_NUM_SEQS, append_problem, list_items,  # noqa: E402
                                   new_output_problem, output_problem, pyperf_option_words)
from ipc_bench.engine.config import ModelConfig, SchedulerConfig  # noqa: E402
from ipc_bench.engine.outputs import build_engine_core_outputs  # noqa: E402
from ipc_bench.engine.model_runner import ModelRunner  # noqa: E402
from ipc_bench.engine.scheduler import Scheduler  # noqa: E402
from ipc_bench.engine.workloads import SteadyDecodeWorkload  # noqa: E402
from ipc_bench.report.mpl_config import matplotlib_config_dir  # noqa: E402
from ipc_bench.wire.codecs import (CODECS, STATEFUL_CODECS, messages_of,  # noqa: E402
                                   model_runner_output_codec, scheduler_output_codec,
                                   session_codecs, session_end)
from ipc_bench.wire.frontend import OutputsEncoder, outputs_decoder  # noqa: E402

BATCH_SIZES = (1, 16, 64, 256, 1024)
POLICIES = ("send", "cached")
TOKEN_IDS = ("uniform", "zipf")
STEPS = 60
#: The codec whose benchmark stands for another's where they cannot differ.
SAME_BUILD = {"packed": "pickle", "slots": "msgpack", "replicated": "msgpack"}
SAME_REPLY = {"packed": "pickle"}


@functools.lru_cache(maxsize=None)
def decode_step(b: int, policy: str, codec: str, token_ids: str):
    """(scheduler, plan, SchedulerOutput, ModelRunnerOutput, ends) of the last of
    ``STEPS`` steady-decode steps at ``b`` running, built as ``codec``'s message classes.
    ``ends``: for a stateful codec, the last step's ``(frame, reply)`` through its ends
    (``session_codecs``); else ``None``."""
    cfg = SchedulerConfig(max_num_seqs=b, max_model_len=2048, num_blocks=65536)
    sched = Scheduler(cfg, policy, messages_of(codec))
    runner = ModelRunner(cfg, ModelConfig(token_ids=token_ids), policy, messages_of(codec))
    workload = SteadyDecodeWorkload(b, seed=0, vocab_size=128_256,
                                    prompt_len_range=(100, 300),
                                    output_len_range=(1000, 1500), token_ids=token_ids)
    stateful = codec in STATEFUL_CODECS
    if stateful:
        (s_enc, s_dec), (r_enc, r_dec) = (session_codecs(codec, "scheduler"),
                                          session_codecs(codec, "runner", cfg, policy))
        attach = getattr(session_end(s_enc), "attach", None)
        if attach is not None:
            attach(sched)
    for step in range(STEPS):
        for r in workload.arrivals(sched.step):
            sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
        plan = sched.schedule()
        so = sched.build_scheduler_output(plan)
        if stateful:
            frame = s_enc(so)
            out = runner.execute_model(r_dec(frame))
            reply = r_enc(out)
            sched.update_from_output(plan, s_dec(reply))
        else:
            out = runner.execute_model(so)
            sched.update_from_output(plan, out)
    if not plan.is_decode_only or len(plan.cached_reqs) != b:
        raise RuntimeError(f"step {STEPS} at {b} running is not pure decode")
    return sched, plan, so, out, ((frame, reply) if stateful else None)


class _Stateful:
    """One timed operation of a stateful codec: consecutive steady-decode steps from
    step ``STEPS`` on, each run whole (schedule, build, both ends, the runner, the
    update) with only ``what`` timed. Every ``RESTART`` steps the case restarts from
    step 0 (untimed), so every timed step is one of steps ``STEPS`` to ``STEPS +
    RESTART - 1``: pure decode, no request finishes."""

    RESTART = 400

    def __init__(self, what: str, key: tuple):
        self.what, self.key = what, key
        self.left = 0

    def _start(self) -> None:
        b, policy, codec, token_ids = self.key
        cfg = SchedulerConfig(max_num_seqs=b, max_model_len=2048, num_blocks=65536)
        self.sched = Scheduler(cfg, policy, messages_of(codec))
        self.runner = ModelRunner(cfg, ModelConfig(token_ids=token_ids), policy,
                                  messages_of(codec))
        self.workload = SteadyDecodeWorkload(b, seed=0, vocab_size=128_256,
                                             prompt_len_range=(100, 300),
                                             output_len_range=(1000, 1500),
                                             token_ids=token_ids)
        (self.s_enc, self.s_dec), (self.r_enc, self.r_dec) = (
            session_codecs(codec, "scheduler"), session_codecs(codec, "runner", cfg, policy))
        attach = getattr(session_end(self.s_enc), "attach", None)
        if attach is not None:
            attach(self.sched)
        for _ in range(STEPS - 1):
            self.step(None)
        gc.collect()
        gc.freeze()  # as the harness after its warm-up: collections see the young heap
        self.left = self.RESTART

    def step(self, what, perf=time.perf_counter) -> float:
        """One whole step; seconds of ``what`` in it (0 for ``None``)."""
        sched = self.sched
        for r in self.workload.arrivals(sched.step):
            sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
        plan = sched.schedule()
        so = sched.build_scheduler_output(plan)
        t0 = perf()
        frame = self.s_enc(so)
        t1 = perf()
        so_runner = self.r_dec(frame)
        t2 = perf()
        out = self.runner.execute_model(so_runner)
        t3 = perf()
        reply = self.r_enc(out)
        t4 = perf()
        out_sched = self.s_dec(reply)
        t5 = perf()
        sched.update_from_output(plan, out_sched)
        return {None: 0.0, "encode s2r": t1 - t0, "decode s2r": t2 - t1,
                "encode r2s": t4 - t3, "decode r2s": t5 - t4}[what]

    def run(self, loops: int) -> float:
        """Seconds of ``what`` over ``loops`` consecutive steps (restarts untimed)."""
        total = 0.0
        for _ in range(loops):
            if self.left == 0:
                self._start()
            total += self.step(self.what)
            self.left -= 1
        return total


_STATEFUL: dict[tuple, _Stateful] = {}


def _call(what: str, b: int, policy: str, codec: str, token_ids: str):
    """(function, argument) of one timed operation on ``decode_step``'s messages, or a
    ``_Stateful`` for a stateful codec's encode or decode."""
    if what != "build" and codec in STATEFUL_CODECS:  # one per worker: restarts are rare
        key = (what, b, policy, codec, token_ids)
        if key not in _STATEFUL:
            _STATEFUL[key] = _Stateful(what, key[1:])
        return _STATEFUL[key]
    sched, plan, so, out, ends = decode_step(b, policy, codec, token_ids)
    if what == "build":
        return sched.build_scheduler_output, plan
    s_codec, r_codec = scheduler_output_codec(codec), model_runner_output_codec(codec)
    return {"encode s2r": (s_codec.encode, so),
            "decode s2r": (s_codec.decode, s_codec.encode(so)),
            "encode r2s": (r_codec.encode, out),
            "decode r2s": (r_codec.decode, r_codec.encode(out))}[what]


def time_func(*key):
    """A pyperf time function of ``_call(*key)``: messages built once per worker,
    outside the timing."""
    def run(loops: int) -> float:
        call = _frontend_call(*key) if len(key) == 3 else _call(*key)
        if isinstance(call, _Stateful):
            return call.run(loops)
        fn, arg = call
        t0 = pyperf.perf_counter()
        for _ in range(loops):
            fn(arg)
        return pyperf.perf_counter() - t0
    return run


def bench_key(what: str, b: int, policy: str, codec: str, token_ids: str) -> tuple:
    """The benchmark that measures ``what`` for a variant (shared where it cannot
    differ); its name is ``' '.join`` of the key."""
    if what == "build":
        return (what, b, policy, SAME_BUILD.get(codec, codec), "uniform")
    if what.endswith("r2s"):
        return (what, b, "send", SAME_REPLY.get(codec, codec), token_ids)
    return (what, b, policy, codec, token_ids if policy == "send" else "uniform")


def bench_name(key: tuple) -> str:
    if len(key) == 3:  # frontend_key
        what, b, token_ids = key
        return f"{what} {token_ids} B={b}"
    what, b, policy, codec, token_ids = key
    return f"{what} {codec} {policy} {token_ids} B={b}"


WHATS = ("build", "encode s2r", "decode s2r", "encode r2s", "decode r2s")
FRONTEND_WHATS = ("build", "encode", "decode")


def frontend_key(what: str, b: int, token_ids: str) -> tuple:
    """The frontend hop's benchmark of ``what`` (one of ``FRONTEND_WHATS``): one per
    running count and token ids, whatever the other hop's policy and codec."""
    return (f"frontend {what}", b, token_ids)


@functools.lru_cache(maxsize=None)
def frontend_step(b: int, token_ids: str):
    """(builder arguments, EngineCoreOutputs, frame) of ``decode_step``'s step for the
    frontend: ``build_engine_core_outputs(*args)`` as ``FrontendHop.step`` calls it
    after the step's ``update_from_output`` (which finished no request), and the frame
    as ``OutputsEncoder`` writes it. ``RuntimeError`` if the frame's size is not
    ``engine_outputs_bytes``'."""
    sched, plan, so, out, ends = decode_step(b, "send", "msgpack", token_ids)
    if len(sched.running) != b or sched.waiting:
        raise RuntimeError(f"step {STEPS} at {b} running finished or queued a request")
    args = (sched, plan, out, [])
    msg = build_engine_core_outputs(*args)
    frame = bytes(OutputsEncoder().encode(msg))
    model = engine_outputs_bytes([o.request_id for o in msg.outputs],
                                 [o.new_token_ids for o in msg.outputs],
                                 (len(sched.running), len(sched.waiting)))
    if len(frame) != model:
        raise RuntimeError(f"EngineCoreOutputs at {b} running: {len(frame)} B, the byte "
                           f"model says {model}")
    return args, msg, frame


def _frontend_call(what: str, b: int, token_ids: str):
    """(function, argument) of one timed operation of the frontend hop."""
    args, msg, frame = frontend_step(b, token_ids)
    what = what.removeprefix("frontend ")
    if what == "build":
        return functools.partial(build_engine_core_outputs, *args[:3]), args[3]
    if what == "encode":  # encode_into the same reused buffer every call, as the hop
        return OutputsEncoder().encode, msg
    return outputs_decoder().decode, frame


def variants(batch_sizes):
    return itertools.product(batch_sizes, POLICIES, CODECS, TOKEN_IDS)


def variant_row(means: dict[str, float], b: int, policy: str, codec: str,
                token_ids: str) -> tuple[int, int, list]:
    """(SchedulerOutput bytes, ModelRunnerOutput bytes, [seconds of each of ``WHATS``,
    ``None`` where not measured]) of one variant."""
    _, _, so, out, ends = decode_step(b, policy, codec, token_ids)
    if ends is not None:
        s2r, r2s = len(ends[0]), len(ends[1])
    else:
        s2r = len(scheduler_output_codec(codec).encode(so))
        r2s = len(model_runner_output_codec(codec).encode(out))
    return s2r, r2s, [means.get(bench_name(bench_key(w, b, policy, codec, token_ids)))
                      for w in WHATS]


def frontend_row(means: dict[str, float], b: int, token_ids: str) -> tuple[int, list]:
    """(EngineCoreOutputs bytes, [seconds of each of ``FRONTEND_WHATS``, ``None`` where
    not measured]) at ``b`` running."""
    return (len(frontend_step(b, token_ids)[2]),
            [means.get(bench_name(frontend_key(w, b, token_ids))) for w in FRONTEND_WHATS])


def control_plane(b: int, codec: str, token_ids: str) -> dict[str, int]:
    """Per policy, the control plane's bytes per step: s2r + r2s + frontend."""
    fe = len(frontend_step(b, token_ids)[2])
    return {p: sum(variant_row({}, b, p, codec, token_ids)[:2]) + fe for p in POLICIES}


def _saving(cp: dict[str, int]) -> str:
    """Send's saving as a share of send's control plane."""
    return f"{(cp['send'] - cp['cached']) / cp['send'] * 100:.2f} %"


def _sum_us(seconds: list) -> str:
    return _us(None if None in seconds else sum(seconds))


def _us(seconds) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:,.1f}"


def selection(only: str) -> list[frozenset]:
    """``--only``: comma-separated alternatives, each a set of words (any order)."""
    return [frozenset(alt.split()) for alt in only.split(",") if alt.split()]


def selected(alts: list[frozenset], what: str, b: int, policy: str, codec: str,
             token_ids: str) -> bool:
    """Whether ``what`` of a variant is selected: no alternative, or every word of one
    alternative is among ``what``'s words, the policy, codec, token ids and ``B=b``."""
    words = {*what.split(), policy, codec, token_ids, f"B={b}"}
    return not alts or any(alt <= words for alt in alts)


def selected_rows(batch_sizes, alts) -> list[tuple]:
    """The variants (b, policy, codec, token ids) with at least one selected
    measurement."""
    return [v for v in variants(batch_sizes) if any(selected(alts, w, *v) for w in WHATS)]


def selected_frontend(alts: list[frozenset], what: str, b: int, token_ids: str) -> bool:
    """Whether the frontend hop's ``what`` (one of ``FRONTEND_WHATS``) at ``b`` running
    with ``token_ids`` is selected: no alternative, or every word of one is among
    ``frontend``, ``what``, the token ids and ``B=b``."""
    words = {"frontend", what, token_ids, f"B={b}"}
    return not alts or any(alt <= words for alt in alts)


def print_table(batch_sizes, means: dict[str, float], rows=None) -> None:
    """Markdown table: one row per variant of ``rows`` (default: every variant), bytes
    and µs per step (``means``: benchmark name -> seconds per call, pyperf's median),
    with the frontend hop joined: its bytes and µs (build + encode + decode), the row's
    control plane bytes (s2r + r2s + frontend) and send's saving as a share of send's
    control plane."""
    print("\n| running | policy | codec | token ids | s2r B | r2s B | build µs | encode "
          "s2r µs | decode s2r µs | encode r2s µs | decode r2s µs | total µs | frontend B "
          "| frontend µs | control plane B | send saves / control plane |")
    print("| ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
          "| ---: | ---: | ---: | ---: |")
    for b, policy, codec, token_ids in (variants(batch_sizes) if rows is None else rows):
        s2r, r2s, us = variant_row(means, b, policy, codec, token_ids)
        fe, fe_us = frontend_row(means, b, token_ids)
        cp = control_plane(b, codec, token_ids)
        print(f"| {b:,} | {policy} | {codec} | {token_ids} | {s2r:,} | {r2s:,} | "
              f"{' | '.join(map(_us, us))} | {_sum_us(us)} | {fe:,} | {_sum_us(fe_us)} | "
              f"{cp[policy]:,} | {_saving(cp)} |")


def print_compact(batch_sizes, means: dict[str, float], rows=None) -> None:
    """Markdown table: one row per (running, codec, token ids) with a variant in
    ``rows`` (default: all), send beside cached: both directions' bytes and the whole
    per-step µs (build + both encodes and decodes), then the frontend hop's bytes and
    µs (build + encode + decode), the control plane's bytes (s2r + r2s + frontend)
    under each policy and send's saving as a share of send's control plane."""
    keep = None if rows is None else {(b, c, t) for b, _, c, t in rows}
    print("\n| running | codec | token ids | s2r B send | s2r B cached | r2s B | µs/step "
          "send | µs/step cached | frontend B | frontend µs/step | control plane B send | "
          "control plane B cached | send saves / control plane |")
    print("| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
          "| ---: |")
    for b, codec, token_ids in itertools.product(batch_sizes, CODECS, TOKEN_IDS):
        if keep is not None and (b, codec, token_ids) not in keep:
            continue
        send = variant_row(means, b, "send", codec, token_ids)
        cached = variant_row(means, b, "cached", codec, token_ids)
        fe, fe_us = frontend_row(means, b, token_ids)
        cp = control_plane(b, codec, token_ids)
        print(f"| {b:,} | {codec} | {token_ids} | {send[0]:,} | {cached[0]:,} | "
              f"{send[1]:,} | {_sum_us(send[2])} | {_sum_us(cached[2])} | {fe:,} | "
              f"{_sum_us(fe_us)} | {cp['send']:,} | {cp['cached']:,} | {_saving(cp)} |")


def plot(batch_sizes, means: dict[str, float], path: str) -> list[str]:
    """PNG at ``path``: SchedulerOutput bytes per running request and the hop's µs per
    step (build + both encodes and decodes) against running requests, log-log; one
    colour per codec, solid send, dashed cached, uniform ids (Zipf's lines lie within
    2 % of them). The µs panel draws the variants whose five timings ``means`` holds at
    a running count of ``batch_sizes``, on the bytes panel's x axis (its limits and
    scale: a run timed at one count is not drawn on a range of its own); when it holds
    none, the panel says so in its middle and the returned list holds that line (else
    it is empty). ``OSError`` when the file cannot be written."""
    matplotlib_config_dir()  # a read-only HOME: a folder of its own, before matplotlib
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"msgpack": "tab:blue", "pickle": "tab:orange", "packed": "tab:green",
              "slots": "tab:red", "replicated": "tab:purple"}
    fig, (ax_b, ax_t) = plt.subplots(1, 2, figsize=(11, 4.2))
    timed = False
    for codec, policy in itertools.product(CODECS, POLICIES):
        rows = [variant_row(means, b, policy, codec, "uniform") for b in batch_sizes]
        style = dict(color=colors.get(codec), linestyle="-" if policy == "send" else "--",
                     marker="o" if policy == "send" else "s", label=f"{policy} / {codec}")
        ax_b.plot(batch_sizes, [max(r[0] / b, 0.01) for r, b in zip(rows, batch_sizes)],
                  **style)
        us = [None if None in r[2] or sum(r[2]) <= 0 else sum(r[2]) * 1e6 for r in rows]
        if any(u is not None for u in us):  # a log axis of nothing cannot be drawn
            ax_t.plot(batch_sizes, us, **style)
            timed = True
    if timed:  # one x axis: the µs panel's few points at the bytes panel's counts
        ax_t.sharex(ax_b)
    empty = []
    for ax, label in ((ax_b, "SchedulerOutput bytes per running request"),
                      (ax_t, "µs per step (build, encode, decode)")):
        ax.set_xlabel("running requests (pure decode)")
        ax.set_ylabel(label)
        if ax is ax_t and not timed:
            empty.append("the µs panel is empty: the run holds no variant's five timings "
                         f"at running {', '.join(f'{b:,}' for b in batch_sizes)}")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.text(0.5, 0.5, "no timings in the run\nat these running counts",
                    ha="center", va="center", transform=ax.transAxes)
            continue
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    ax_b.legend(fontsize=8)
    fig.suptitle("send / cached x msgpack / pickle / packed (vLLM PR #54406) / slots / "
                 "replicated (SGLang style), uniform ids")
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110)
    plt.close(fig)
    # written here: matplotlib's own file loses a failed close (--figure /dev/full)
    Path(path).write_bytes(png.getvalue())
    return empty


#: ``--help``'s description (pyperf's Runner says ``Benchmark``).
DESCRIPTION = ("Bytes and microseconds per pure-decode step of each variant of the "
               "scheduler <-> runner hop (send and cached, each codec, uniform and Zipf "
               "token ids) and of the frontend hop, timed with pyperf.")
ONLY_HELP = ("comma-separated alternatives, each a set of words matched in any order: "
             "a measurement is selected when every word of one alternative is one of "
             "its words: the operation (build, encode, decode, s2r, r2s), the policy "
             f"({', '.join(POLICIES)}), the codec ({', '.join(CODECS)}), the token ids "
             f"({', '.join(TOKEN_IDS)}), B=<running>, or frontend (the frontend hop's "
             "benchmarks, one per running count and token ids, joined onto every row). "
             "E.g. \"send packed uniform\", "
             "\"encode s2r B=256\", \"slots,replicated\". Running, it picks the "
             "benchmarks; with --table-from, the rows (a row when any of its "
             "measurements is selected; --compact: send beside cached of those rows). "
             "Selecting nothing, an empty alternative or one given more than once is an "
             "error (exit 2)")


def _regular_file(text: str) -> str:
    """argparse type of ``--table-from``: an existing regular file (a FIFO or a device
    would block or never end)."""
    try:
        st = os.stat(text)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{text}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise argparse.ArgumentTypeError(f"{text}: not a regular file")
    return text


def _batch_sizes(text: str) -> list[int]:
    """``--batch-sizes``: comma-separated whole numbers from 1 to ``MAX_NUM_SEQS``, no
    repeats; no
    empty item (``list_items``)."""
    parts = list_items(text, "whole numbers")
    if not all(p.isascii() and p.isdigit() for p in parts):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated whole numbers, got {text!r}")
    values = [int(p) for p in parts]
    if min(values) < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {min(values)}")
    if max(values) > MAX_NUM_SEQS:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_NUM_SEQS:,} (the most running requests), "
            f"got {max(values):,}")
    if len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"a size given more than once in {text!r}")
    return values


def _only(text: str) -> str:
    """``--only``: known words; no empty value or alternative (``list_items``), no
    alternative (a set of words) given more than once."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty: give words, or leave --only out")
    alts = [alt.split() for alt in list_items(text, "alternatives")]
    seen, repeated = set(), []
    for alt in alts:
        if frozenset(alt) in seen and " ".join(alt) not in repeated:
            repeated.append(" ".join(alt))
        seen.add(frozenset(alt))
    if repeated:
        raise argparse.ArgumentTypeError(f"{', '.join(repeated)} given more than once")
    words = set().union(*selection(text))
    known = {"build", "encode", "decode", "s2r", "r2s", "frontend", *POLICIES, *CODECS,
             *TOKEN_IDS}
    bad = sorted(w for w in words if w not in known
                 and not (w.startswith("B=") and w[2:].isdigit()))
    if bad:
        raise argparse.ArgumentTypeError(
            f"unknown word {bad[0]!r}: use build, encode, decode, s2r, r2s, frontend, "
            f"{', '.join(POLICIES)}, {', '.join(CODECS)}, {', '.join(TOKEN_IDS)}, B=N")
    return text


def _unwritable(path: str) -> str | None:
    """Why a file cannot be written at ``path`` (``output_problem``: ``cannot write
    PATH: REASON`` for an empty path, a folder, a missing or unwritable folder, a file or
    a link that cannot be followed above it, the system's reason), or ``None``."""
    return output_problem(path)


def _output_refusal(args: argparse.Namespace) -> str | None:
    """Why an output file of the command line cannot be used (``argument FLAG: cannot
    write REASON``; for ``--append``, ``argument --append: REASON`` where pyperf could
    not read it first: ``append_problem``), or ``None``. Notes each pyperf output for a
    stdout that fails later (``written_elsewhere``)."""
    if args.table_from and args.output and new_output_problem(args.output):
        return f"argument -o: {new_output_problem(args.output)}"  # pyperf refuses it too
    for flag, path in (("-o", None if args.table_from else args.output),
                       ("--append", None if args.table_from else args.append),
                       ("--figure", args.figure)):
        if path is None:
            continue
        # pyperf reads an --append file that exists before it adds the results
        why = flag == "--append" and append_problem(path)
        if why:
            return f"argument {flag}: {why}"
        why = _unwritable(path)  # cannot write PATH: ...
        if why:
            return f"argument {flag}: {why}"
        why = flag == "-o" and new_output_problem(path)
        if why:
            return f"argument {flag}: {why}"
        if flag != "--figure":
            written_elsewhere(f"the results are in {path}")  # stdout that fails says so
    return None


def _load_medians(path: str) -> dict[str, float]:
    """Benchmark name -> median of the pyperf suite at ``path`` (.json or .json.gz);
    ``ValueError`` with one line if it is not one."""
    try:
        suite = pyperf.BenchmarkSuite.load(path)
        medians = {b.get_name(): b.median() for b in suite.get_benchmarks()}
    except Exception as exc:  # pyperf raises KeyError, TypeError, ValueError, ...
        raise ValueError(f"{path}: not a pyperf benchmark suite "
                         f"({type(exc).__name__}: {exc})".replace("\n", " ")) from None
    if not medians:
        raise ValueError(f"{path}: no benchmark in it")
    return medians


def main() -> int:
    prog = "variant_table.py"

    def worker_args(cmd, args):
        if args.only is not None:
            cmd.extend(["--only", args.only])
        cmd.extend(["--batch-sizes", ",".join(map(str, args.batch_sizes))])

    def error(message: str):  # one line, exit 2
        print(f"{prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)

    runner = pyperf.Runner(processes=2, values=3, warmups=1, min_time=0.02,
                           add_cmdline_args=worker_args)
    runner.argparser.error = error
    runner.argparser.description = DESCRIPTION
    pyperf_option_words(runner.argparser)  # -p 0, --min-time nan: the run's words
    runner.argparser.add_argument("--only", type=_only, metavar="WORDS[,WORDS...]",
                                  help=ONLY_HELP)
    runner.argparser.add_argument("--batch-sizes", type=_batch_sizes,
                                  default=list(BATCH_SIZES), metavar="N[,N...]",
                                  help="running requests of each case, each 1 to "
                                  f"{MAX_NUM_SEQS:,} (default: "
                                  f"{','.join(map(str, BATCH_SIZES))})")
    runner.argparser.add_argument("--table-from", metavar="JSON", type=_regular_file,
                                  action="append",
                                  help="print the table of a finished run (pyperf's "
                                  ".json or .json.gz) and exit. Repeat to merge runs, e.g. "
                                  "'--table-from variants.json --table-from "
                                  "frontend.json' after '--only frontend -o "
                                  "frontend.json': a benchmark in several files takes "
                                  "the last file's median; benchmarks in none show '-'")
    runner.argparser.add_argument("--compact", action="store_true",
                                  help="with --table-from: send beside cached, µs per step")
    runner.argparser.add_argument("--figure", metavar="PNG",
                                  help="with --table-from: also draw bytes and µs per step "
                                  "against running requests into PNG")
    # checked before runner.parse_args, whose own checks (-o PATH that exists) print on
    # stdout and exit 1
    args = runner.argparser.parse_args()
    if not args.table_from:
        for flag in ("--compact", "--figure"):
            if getattr(args, flag[2:]):
                error(f"{flag} applies to --table-from")
    why = None if args.worker else _output_refusal(args)
    if why:
        error(why)
    args = runner.parse_args()
    batch_sizes, alts = args.batch_sizes, selection(args.only or "")
    rows = selected_rows(batch_sizes, alts)
    frontend_only = not rows and any(selected_frontend(alts, w, b, t) for b in batch_sizes
                                     for t in TOKEN_IDS for w in FRONTEND_WHATS)
    if frontend_only:  # the frontend hop joins every row
        rows = list(variants(batch_sizes))
    if not rows:
        error(f"--only {args.only!r} selects nothing at --batch-sizes "
              f"{','.join(map(str, batch_sizes))}")
    if args.table_from:  # a signal since the start: one line (interruptible)
        def table() -> int:
            medians = {}
            for path in args.table_from:
                try:
                    medians.update(_load_medians(path))
                except ValueError as exc:
                    error(f"argument --table-from: {exc}")
            if args.figure:
                try:
                    empty = plot(batch_sizes, medians, args.figure)
                except OSError as exc:  # disk full (--figure /dev/full)
                    raise SystemExit(f"{prog}: error: cannot write {args.figure}: "
                                     f"{exc.strerror or exc}") from None
                for line in empty:
                    print(f"{prog}: warning: {args.figure}: {line} (--batch-sizes picks "
                          "the running counts)", file=sys.stderr)
                written_elsewhere(f"the figure is in {args.figure}")
            with one_write():  # the table in one write: | head -1 takes it whole
                if args.compact:
                    print_compact(batch_sizes, medians, rows)
                else:
                    print_table(batch_sizes, medians, rows)
            return 0
        return interruptible(prog, table)
    keys = dict.fromkeys(bench_key(w, *v) for v in variants(batch_sizes) for w in WHATS
                         if selected(alts, w, *v))
    keys.update(dict.fromkeys(frontend_key(w, b, t) for b in batch_sizes for t in TOKEN_IDS
                              for w in FRONTEND_WHATS if selected_frontend(alts, w, b, t)))

    def work() -> int:
        means = {}  # benchmark name -> median seconds
        for key in keys:
            name = bench_name(key)
            result = runner.bench_time_func(name, time_func(*key))
            if result is not None and not args.worker:
                means[name] = result.median()
        if not args.worker:
            with one_write():  # the table in one write, after pyperf's lines
                print_table(batch_sizes, means, rows)
        return 0
    return pyperf_staged(prog, args, work)


if __name__ == "__main__":
    sys.exit(script_main("variant_table.py", main, "the table",
                         "the -o or --append file and the --figure"))
