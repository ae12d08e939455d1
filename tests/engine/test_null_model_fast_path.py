"""The null model's sampler in Python ints for small batches (``NullModel._small_hashes``,
``TokenIds.ids_of_hashes``, up to ``NullModel.SMALL_BATCH`` rows) gives the same hashes
and ids, bit for bit, as its NumPy path (``NullModel._hash``, ``TokenIds.from_hash``)
for every token-id distribution; and both give the ids the sampler gave before the
Python path (pinned below)."""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipc_bench.engine.config import ModelConfig
from ipc_bench.engine.models import NullModel
from ipc_bench.engine.token_ids import normalized_histogram

VOCAB = 128_256


def _model(spec: str, vocab_size: int, seed: int, window: int, histogram: str = "",
           small_batch: int = NullModel.SMALL_BATCH) -> NullModel:
    model = NullModel(ModelConfig(token_ids=spec, vocab_size=vocab_size, seed=seed,
                                  hash_window=window, token_id_histogram=histogram))
    model.SMALL_BATCH = small_batch
    return model


@st.composite
def _cases(draw):
    """(model config, token buffer, rows, positions): buffers int32 or int64 with
    negative ids too (read as their uint64 cast), rows in any order and repeated,
    positions anywhere in a row (some before ``hash_window - 1``, some negative)."""
    spec = draw(st.sampled_from(["uniform", "zipf", "hist"]))
    if spec == "uniform":
        vocab_size = draw(st.integers(2, 2**31 - 1))
        histogram = ""
    else:
        vocab_size = draw(st.integers(2, 300))
        histogram = ""
        if spec == "hist":
            counts = draw(st.lists(st.integers(0, 2**40), min_size=vocab_size,
                                   max_size=vocab_size).filter(any))
            histogram = normalized_histogram(np.array(counts, dtype=np.int64))
            spec = "hist:counts.csv"
    seed = draw(st.integers(0, 2**64 - 1))
    window = draw(st.integers(1, 9))
    dtype = draw(st.sampled_from([np.int32, np.int64]))
    info = np.iinfo(dtype)
    num_rows = draw(st.integers(1, 6))
    width = draw(st.integers(1, 40))
    values = draw(st.lists(st.integers(int(info.min), int(info.max)),
                           min_size=num_rows * width, max_size=num_rows * width))
    token_ids = np.array(values, dtype=dtype).reshape(num_rows, width)
    n = draw(st.integers(0, 12))
    rows = np.array(draw(st.lists(st.integers(0, num_rows - 1), min_size=n, max_size=n)),
                    dtype=np.int64)
    positions = np.array(draw(st.lists(st.integers(-3, width - 1), min_size=n, max_size=n)),
                         dtype=np.int64)
    return (spec, vocab_size, seed, window, histogram), token_ids, rows, positions


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_the_python_path_gives_the_numpy_paths_hashes_and_ids(case):
    config, token_ids, rows, positions = case
    fast = _model(*config, small_batch=10**9)
    slow = _model(*config, small_batch=0)
    hashes = slow.hash_state(token_ids, rows, positions)
    assert hashes.dtype == np.uint64
    assert fast._small_hashes(token_ids, rows, positions) == hashes.tolist()
    got = fast.hash_state(token_ids, rows, positions)
    assert got.dtype == np.uint64 and got.tolist() == hashes.tolist()
    ids = slow.sample(token_ids, rows, positions)
    assert ids.dtype == np.int64
    assert fast.token_ids.ids_of_hashes(hashes.tolist()) == ids.tolist()
    got = fast.sample(token_ids, rows, positions)
    assert got.dtype == np.int64 and got.tolist() == ids.tolist()
    batch = types.SimpleNamespace(token_ids_cpu=token_ids)
    inputs = types.SimpleNamespace(sample_rows=rows, sample_positions=positions)
    assert fast.execute(batch, inputs).tolist() == ids.tolist()


# ---------------------------------------------------------------------- pinned ids

_TOKENS = (np.arange(36, dtype=np.int64).reshape(3, 12) * 7919 % VOCAB).astype(np.int32)
_TOKENS[2, 5] = -1
_ROWS = np.array([2, 0, 1, 2, 0], dtype=np.int64)
_POSITIONS = np.array([0, 2, 11, 7, 5], dtype=np.int64)
_HIST = normalized_histogram(np.array([0, 3, 0, 5, 1, 0, 0, 2], dtype=np.int64))

#: (token ids, vocabulary, histogram, seed, hash window) -> the sampled ids at
#: ``_ROWS`` / ``_POSITIONS`` and the hashes of the first two rows, as the NumPy-only
#: sampler gave them before the Python path.
_PINNED = [
    (("uniform", VOCAB, "", 0, 4), [30100, 29060, 75325, 56267, 106235],
     [7558742871123236500, 18354438415632598148]),
    (("uniform", VOCAB, "", 2**40 + 7, 3), [19521, 64686, 65173, 21824, 126746],
     [4711747610771334465, 2664972300766450350]),
    (("zipf", VOCAB, "", 0, 4), [87, 120576, 164, 21176, 13884],
     [7558742871123236500, 18354438415632598148]),
    (("zipf", VOCAB, "", 2**40 + 7, 3), [12, 2, 166, 7, 24],
     [4711747610771334465, 2664972300766450350]),
    (("hist:x", 8, _HIST, 0, 4), [3, 7, 3, 7, 7],
     [7558742871123236500, 18354438415632598148]),
    (("hist:x", 8, _HIST, 2**40 + 7, 3), [1, 1, 3, 1, 3],
     [4711747610771334465, 2664972300766450350]),
]


@pytest.mark.parametrize("small_batch", [0, 10**9])
@pytest.mark.parametrize("config, ids, hashes", _PINNED)
def test_pinned_ids_on_both_paths(config, ids, hashes, small_batch):
    spec, vocab_size, histogram, seed, window = config
    model = _model(spec, vocab_size, seed, window, histogram, small_batch)
    assert model.sample(_TOKENS, _ROWS, _POSITIONS).tolist() == ids
    assert model.hash_state(_TOKENS, _ROWS[:2], _POSITIONS[:2]).tolist() == hashes
    assert model._small_hashes(_TOKENS, _ROWS[:2], _POSITIONS[:2]) == hashes


def test_drafts_are_unchanged():
    """``propose`` (NumPy at every batch size) gives the drafts it gave before."""
    batch = types.SimpleNamespace(token_ids_cpu=_TOKENS)
    args = (np.array([2, 0, 1]), np.array([6, 2, 10]), np.array([6, 1, 9]),
            np.array([[11, 0], [12, 13], [14, 15]]), 3, 0.6)
    assert _model("uniform", VOCAB, 5, 4).propose(batch, *args).tolist() == [
        [38695, 12777, 75035], [104099, 108183, 88665], [7753, 120091, 70447]]
    assert _model("zipf", VOCAB, 5, 4).propose(batch, *args).tolist() == [
        [1537, 38, 147], [77, 6, 0], [23585, 1, 2]]


@pytest.mark.parametrize("small_batch", [0, 10**9])
def test_a_position_outside_the_row_is_the_same_error_on_both_paths(small_batch):
    model = _model("uniform", VOCAB, 0, 4, small_batch=small_batch)
    with pytest.raises(IndexError) as err:
        model.sample(_TOKENS, np.array([0, 1]), np.array([3, 13]))
    assert str(err.value) == "position 13 outside a row of 12 tokens"


def test_the_switch_is_at_small_batch_rows():
    """Up to ``SMALL_BATCH`` rows the NumPy hash is not called; one more row, it is."""
    model = _model("uniform", VOCAB, 0, 4)
    calls = []
    model._hash = lambda tokens, positions: calls.append(len(positions)) or \
        NullModel._hash(model, tokens, positions)
    n = NullModel.SMALL_BATCH
    token_ids = np.arange(2 * (n + 1) * 8, dtype=np.int32).reshape(2 * (n + 1), 8)
    rows = np.arange(n + 1, dtype=np.int64)
    positions = np.full(n + 1, 7, dtype=np.int64)
    model.sample(token_ids, rows[:n], positions[:n])
    assert calls == []
    model.sample(token_ids, rows, positions)
    assert calls == [n + 1]
