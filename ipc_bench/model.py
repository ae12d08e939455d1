"""Runner models. ``null``: no compute, the control plane alone.

Every model computes each token from the runner's own token buffer, so a bookkeeping
bug (wrong row, off-by-one, missed write) changes the token stream and the token
digest that both policies must agree on.
"""

from __future__ import annotations

import numpy as np

from ipc_bench.config import ModelConfig

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, in place on a uint64 array (wraps modulo 2**64)."""
    h ^= h >> _S30
    h *= _M2
    h ^= h >> _S27
    h *= _M3
    h ^= h >> _S31
    return h


class NullModel:
    """Greedy "sampler" with no forward pass.

    ``sample(token_ids_cpu, rows, positions)``: for each ``rows[i]``, the next token
    is a splitmix64 hash of the ``hash_window`` tokens of ``token_ids_cpu[rows[i]]``
    ending at ``positions[i]`` (the last scheduled position; earlier ones before 0
    read as 0), of ``positions[i]`` and of the seed, reduced into ``[0, vocab_size)``.
    Shapes: ``rows``, ``positions``: ``[num_reqs]`` int; returns ``[num_reqs]`` int64.
    Uniform ids over 128,256 take 3 or 5 msgpack bytes, as real ones mostly do.
    """

    device = "cpu"

    def __init__(self, config: ModelConfig):
        self.vocab_size = np.uint64(config.vocab_size)
        self.window = np.arange(config.hash_window, dtype=np.int64)
        self.seed = np.uint64(config.seed & 0xFFFFFFFFFFFFFFFF)

    def sample(self, token_ids_cpu: np.ndarray, rows: np.ndarray,
               positions: np.ndarray) -> np.ndarray:
        idx = positions[:, None] - self.window[None, :]  # [num_reqs, hash_window]
        valid = idx >= 0
        tokens = token_ids_cpu[rows[:, None], np.maximum(idx, 0)].astype(np.uint64)
        tokens[~valid] = 0
        h = positions.astype(np.uint64) * _M1 + self.seed
        for j in range(tokens.shape[1]):
            h ^= tokens[:, j]
            h = _mix(h)
        return (h % self.vocab_size).astype(np.int64)


def make_model(config: ModelConfig) -> NullModel:
    """The model named by ``config.name``; ``ValueError`` if unknown."""
    if config.name == "null":
        return NullModel(config)
    raise ValueError(f"unknown model {config.name!r}")
