"""``SamplingParams`` as vLLM pickles it (mirrors ``vllm/sampling_params.py``, 7f280d69c).

vLLM's ``SamplingParams`` is a msgspec Struct (``omit_defaults=True, dict=True``), not a
dataclass: pickle writes it as its class and a tuple of all 33 field values, in field
order (``msgspec.Struct.__reduce__``; the ``__dict__`` that ``dict=True`` adds for
cached properties is not pickled). The class below has the same fields, order,
defaults and options, in a module whose name is as long as ``vllm.sampling_params``.
``RequestOutputKind`` (an ``Enum``) pickles as its class and its value.

Field list as in vLLM's ``vllm/sampling_params.py`` of the v0.9 series, which
7f280d69c carries (``top_k`` default 0, ``extra_args``, ``bad_words``; before the
``guided_decoding`` -> ``structured_outputs`` rename). Fields whose types are vLLM
classes (``logits_processors``, ``guided_decoding``) are ``Any`` here; text
generation leaves them ``None``.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Optional, Union

import msgspec


class RequestOutputKind(Enum):
    """How the frontend streams outputs (vLLM ``RequestOutputKind``)."""

    CUMULATIVE = 0
    DELTA = 1
    FINAL_ONLY = 2


class SamplingParams(msgspec.Struct, omit_defaults=True, dict=True):
    """Per-request sampling settings, every field of vLLM 7f280d69c's, in order.

    ``greedy(max_tokens)`` builds what vLLM's frontend hands the engine for a greedy
    request that ignores EOS (``temperature=0.0``, ``ignore_eos=True``): after
    ``__post_init__`` ``stop``, ``stop_token_ids`` and ``bad_words`` are empty lists.
    """

    n: int = 1
    best_of: Optional[int] = None
    _real_n: Optional[int] = None
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    seed: Optional[int] = None
    stop: Optional[Union[str, list[str]]] = None
    stop_token_ids: Optional[list[int]] = None
    ignore_eos: bool = False
    max_tokens: Optional[int] = 16
    min_tokens: int = 0
    logprobs: Optional[int] = None
    prompt_logprobs: Optional[int] = None
    detokenize: bool = True
    skip_special_tokens: bool = True
    spaces_between_special_tokens: bool = True
    logits_processors: Optional[Any] = None
    include_stop_str_in_output: bool = False
    truncate_prompt_tokens: Optional[int] = None
    output_kind: RequestOutputKind = RequestOutputKind.CUMULATIVE
    output_text_buffer_length: int = 0
    _all_stop_token_ids: set[int] = msgspec.field(default_factory=set)
    guided_decoding: Optional[Any] = None
    logit_bias: Optional[dict[int, float]] = None
    allowed_token_ids: Optional[list[int]] = None
    extra_args: Optional[dict[str, Any]] = None
    bad_words: Optional[list[str]] = None
    _bad_words_token_ids: Optional[list[list[int]]] = None

    @classmethod
    def greedy(cls, max_tokens: int) -> "SamplingParams":
        """A greedy request of ``max_tokens`` output tokens that ignores EOS.

        Approximation, stated: vLLM's frontend also adds the model's EOS id to
        ``_all_stop_token_ids`` (``update_from_generation_config``); the harness's
        models have no EOS, so the set stays empty here. One EOS id below 2**31 would
        add 7 bytes to each pickled ``NewRequestData`` (``MARK``, ``BININT``, ``ADDITEMS``).
        """
        return cls(temperature=0.0, stop=[], stop_token_ids=[], ignore_eos=True,
                   max_tokens=max_tokens, bad_words=[])
