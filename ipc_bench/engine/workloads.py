"""Workloads: which requests arrive at which scheduler step (the logical clock).

A workload is deterministic for a seed: the same requests (ids, prompt ids, output
lengths) arrive at the same step numbers in every case of a run, so both policies
schedule exactly the same batches and must produce the same tokens.

- ``SteadyDecodeWorkload``: exactly ``num_running`` requests at all times; a finished
  request is replaced by a new one arriving at the next step.
- ``TraceWorkload``: replay of an Azure LLM inference trace (``ipc_bench.engine.traces``);
  a request arriving ``t`` seconds after the first one arrives at step
  ``floor(t / logical_step_s)``.

Request ids look like vLLM's OpenAI server's (``cmpl-<32 hex>-0``; other formats in
``REQ_ID_FORMATS``); prompt token ids are drawn from the vocabulary with a per-request
seeded generator, uniformly or as ``token_ids`` says (``engine.token_ids``: ``zipf``,
``hist:PATH``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from ipc_bench.engine.token_ids import token_id_distribution
from ipc_bench.engine.traces import Trace


@dataclass(frozen=True)
class RequestSpec:
    """One arriving request. ``index``: position in the workload (digest order);
    ``arrival_step``: logical step; ``arrival_s``: seconds after the first arrival
    (the trace's, or ``arrival_step * logical_step_s``)."""

    index: int
    req_id: str
    prompt_token_ids: list[int]
    max_tokens: int
    arrival_step: int
    arrival_s: float
    #: ``None``, or the prompt's length when its ids were never built because it can
    #: never fit (``Workload.never_fits``; ``prompt_token_ids`` is then empty).
    unbuilt_prompt_len: Optional[int] = None


#: Request-id formats: vLLM's OpenAI completions (``cmpl-<32 hex>-0``) and chat
#: completions (``chatcmpl-<32 hex>``) servers, and the short decimal counters of its
#: offline ``LLM`` class (``"0"``, ``"1"``, ...).
REQ_ID_FORMATS = ("cmpl", "chatcmpl", "numeric")


def make_req_id(seed: int, index: int, fmt: str = "cmpl") -> str:
    """Request id number ``index`` in format ``fmt`` (``REQ_ID_FORMATS``).

    ``cmpl``: ``cmpl-<32 hex>-0``; ``chatcmpl``: ``chatcmpl-<32 hex>``, the 32 hex
    digits drawn from ``(seed, index)``; ``numeric``: ``str(index)``. Raises
    ``ValueError`` on an unknown format.
    """
    if fmt == "numeric":
        return str(index)
    rng = np.random.default_rng([seed, index, 0x1D])
    hex32 = f"{int(rng.integers(0, 2**63)):016x}{int(rng.integers(0, 2**63)):016x}"
    if fmt == "cmpl":
        return f"cmpl-{hex32}-0"
    if fmt == "chatcmpl":
        return f"chatcmpl-{hex32}"
    raise ValueError(f"unknown request-id format {fmt!r}; choose from {', '.join(REQ_ID_FORMATS)}")


def make_prompt(seed: int, index: int, num_tokens: int, vocab_size: int,
                token_ids: str = "uniform") -> list[int]:
    """``[num_tokens]`` prompt ids in ``[0, vocab_size)`` from ``(seed, index)``, drawn
    from the distribution ``token_ids`` (``uniform``, ``zipf`` or ``hist:PATH``;
    ``engine.token_ids.TokenIds.draw``). Raises ``ConfigError`` on a bad ``token_ids``."""
    rng = np.random.default_rng([seed, index, 0x9E])
    return token_id_distribution(token_ids, vocab_size).draw(rng, num_tokens)


class Workload:
    """Interface: ``arrivals(step)``, ``next_arrival_step()``, ``on_finished``, ``name``.

    ``seed``, ``vocab_size``, ``req_id_format`` and ``token_ids`` (the prompt ids'
    distribution, ``make_prompt``) make each request's id and prompt ids
    (``make_request``), so a request is the same in every case of a run."""

    def __init__(self, name: str, *, seed: int, vocab_size: int, req_id_format: str = "cmpl",
                 token_ids: str = "uniform"):
        self.name = name
        self.seed = seed
        self.vocab_size = vocab_size
        self.req_id_format = req_id_format
        self.token_ids = token_ids
        #: Set by the scheduler loop to ``Scheduler.never_fits``: a prompt for which it
        #: is true is rejected on arrival, so its ids are never built (a trace row of
        #: 100,000,000 tokens costs nothing).
        self.never_fits: Optional[Callable[[int], bool]] = None

    def make_request(self, index: int, prompt_len: int, max_tokens: int, arrival_step: int,
                     arrival_s: float) -> RequestSpec:
        """Request number ``index``: its id (``make_req_id``) and ``[prompt_len]`` prompt
        ids (``make_prompt``) from the seed, ``max_tokens`` output tokens, arriving at
        logical step ``arrival_step`` / ``arrival_s`` seconds; no ids (and
        ``unbuilt_prompt_len``) when ``never_fits(prompt_len)``. Raises ``ValueError`` on
        an unknown ``req_id_format``."""
        req_id = make_req_id(self.seed, index, self.req_id_format)
        if self.never_fits is not None and self.never_fits(prompt_len):
            return RequestSpec(index, req_id, [], max_tokens, arrival_step, arrival_s,
                               unbuilt_prompt_len=prompt_len)
        return RequestSpec(index, req_id,
                           make_prompt(self.seed, index, prompt_len, self.vocab_size,
                                       self.token_ids),
                           max_tokens, arrival_step, arrival_s)

    def warm(self) -> None:
        """Build a request's id and one prompt id as ``make_request`` does, and drop
        them, so that what the first build costs once per process (numpy imports
        ``numpy.random`` on its first use and sets up its first draw: about 10 ms) is
        paid before a timed replay's clock starts (``harness.scheduler_loop``), not
        inside its first arrival's TTFT. Changes nothing the workload hands out."""
        make_req_id(self.seed, 0, self.req_id_format)
        make_prompt(self.seed, 0, 1, self.vocab_size, self.token_ids)

    def arrivals(self, step: int) -> list[RequestSpec]:
        """Requests arriving at ``step`` or earlier and not yet handed out."""
        raise NotImplementedError

    def next_arrival_step(self) -> int | None:
        """Step of the next pending arrival, or ``None`` when none is pending."""
        raise NotImplementedError

    def on_finished(self, num_finished: int, step: int) -> None:
        """Told how many requests finished at ``step`` (steady workloads replace them)."""


#: ``SteadyDecodeWorkload``'s default prompt and output lengths (tokens, both ends
#: included).
STEADY_PROMPT_LEN_RANGE = (32, 256)
STEADY_OUTPUT_LEN_RANGE = (512, 2048)


def _len_range(name: str, value: Any) -> tuple[int, int]:
    """``value`` as a (low, high) range of token counts, 1 <= low <= high; ``ValueError``
    naming ``name`` otherwise."""
    try:
        low, high = value
    except (TypeError, ValueError):
        low = high = None
    whole = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                for v in (low, high))
    if not (whole and 1 <= low <= high):
        raise ValueError(f"{name} {value!r}: give (low, high) token counts, "
                         f"1 <= low <= high")
    return int(low), int(high)


class SteadyDecodeWorkload(Workload):
    """``num_running`` requests at all times. Prompt lengths uniform in
    ``[prompt_len_min, prompt_len_max]``, output lengths in
    ``[output_len_min, output_len_max]`` tokens, per request from the seed (``ValueError``
    unless each range is two whole numbers, 1 <= low <= high);
    ``req_id_format``: see ``make_req_id``; ``token_ids``: see ``make_prompt``."""

    def __init__(self, num_running: int, *, seed: int, vocab_size: int,
                 prompt_len_range: tuple[int, int] = STEADY_PROMPT_LEN_RANGE,
                 output_len_range: tuple[int, int] = STEADY_OUTPUT_LEN_RANGE,
                 req_id_format: str = "cmpl", token_ids: str = "uniform"):
        super().__init__(f"steady-B{num_running}", seed=seed, vocab_size=vocab_size,
                         req_id_format=req_id_format, token_ids=token_ids)
        self.num_running = num_running
        self.prompt_len_range = _len_range("prompt_len_range", prompt_len_range)
        self.output_len_range = _len_range("output_len_range", output_len_range)
        self._next_index = 0
        self._pending: list[int] = [0] * num_running  # arrival steps of queued requests

    def request_lens(self, index: int) -> tuple[int, int]:
        """Prompt and output lengths (tokens) of the request of ``index`` (the
        ``index``-th to arrive, from 0), from the seed alone."""
        rng = np.random.default_rng([self.seed, index, 0x5E])
        prompt_len = int(rng.integers(self.prompt_len_range[0], self.prompt_len_range[1] + 1))
        max_tokens = int(rng.integers(self.output_len_range[0], self.output_len_range[1] + 1))
        return prompt_len, max_tokens

    def initial_prompt_lens(self) -> list[int]:
        """The prompt lengths (tokens) of the ``num_running`` requests that arrive at
        step 0, in arrival order (the same as ``arrivals(0)`` gives)."""
        return [self.request_lens(i)[0] for i in range(self.num_running)]

    def _make(self, arrival_step: int) -> RequestSpec:
        index = self._next_index
        self._next_index += 1
        prompt_len, max_tokens = self.request_lens(index)
        return self.make_request(index, prompt_len, max_tokens, arrival_step,
                                 float(arrival_step))

    def arrivals(self, step: int) -> list[RequestSpec]:
        due = [s for s in self._pending if s <= step]
        if not due:
            return []
        self._pending = [s for s in self._pending if s > step]
        return [self._make(s) for s in due]

    def next_arrival_step(self) -> int | None:
        return min(self._pending) if self._pending else None

    def on_finished(self, num_finished: int, step: int) -> None:
        self._pending.extend([step + 1] * num_finished)


class TraceWorkload(Workload):
    """Logical-clock replay of ``trace``; ``logical_step_s``: seconds of trace time per
    scheduler step. Prompts have the trace's ``ContextTokens``; ``max_tokens`` is its
    ``GeneratedTokens`` (no EOS, so each request generates exactly that many, unless
    ``max_model_len`` stops it first)."""

    def __init__(self, trace: Trace, *, name: str, seed: int, vocab_size: int,
                 logical_step_s: float, req_id_format: str = "cmpl",
                 token_ids: str = "uniform"):
        if not logical_step_s > 0 or not math.isfinite(logical_step_s):
            raise ValueError(f"logical_step_s must be > 0, got {logical_step_s}")
        super().__init__(name, seed=seed, vocab_size=vocab_size, req_id_format=req_id_format,
                         token_ids=token_ids)
        self.trace = trace
        self.logical_step_s = logical_step_s
        # Checked before the cast: a step number past int64 would wrap (numpy warns and
        # casts it to the lowest int64), putting the arrival at the start of the replay.
        with np.errstate(all="ignore"):
            steps = np.floor(trace.arrival_s / logical_step_s)
        if steps.size and not steps.max() < 2.0**63:
            raise ValueError(f"logical_step_s {logical_step_s:g} puts the trace's last "
                             f"arrival ({float(trace.arrival_s.max()):g} s) past the largest "
                             f"step number (2**63 - 1)")
        self.arrival_steps = steps.astype(np.int64)
        self._next = 0

    def __len__(self) -> int:
        return len(self.trace)

    def _take(self, n: int) -> list[RequestSpec]:
        t = self.trace
        out = [self.make_request(i, int(t.prompt_lens[i]), int(t.output_lens[i]),
                                 int(self.arrival_steps[i]), float(t.arrival_s[i]))
               for i in range(self._next, self._next + n)]
        self._next += n
        return out

    def arrivals(self, step: int) -> list[RequestSpec]:
        n = 0
        while self._next + n < len(self.trace) and self.arrival_steps[self._next + n] <= step:
            n += 1
        return self._take(n) if n else []

    def next_arrival_step(self) -> int | None:
        if self._next >= len(self.trace):
            return None
        return int(self.arrival_steps[self._next])

    # Timed clock: arrivals by trace time instead of step number.
    def arrivals_until(self, t_s: float) -> list[RequestSpec]:
        """Requests whose trace arrival time is ``<= t_s`` and not yet handed out."""
        n = 0
        arrival = self.trace.arrival_s
        while self._next + n < len(self.trace) and arrival[self._next + n] <= t_s:
            n += 1
        return self._take(n) if n else []

    def next_arrival_s(self) -> float | None:
        """Trace time of the next pending arrival, or ``None``."""
        if self._next >= len(self.trace):
            return None
        return float(self.trace.arrival_s[self._next])
