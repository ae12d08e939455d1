"""How token ids are distributed over the vocabulary: prompts and sampled ids.

The bytes a token id takes on the wire depend on its value (msgpack: 1 byte below
128, 2 below 256, 3 below 65,536, else 5; pickle: 2, 3 or 5), so the distribution of
the ids decides what ``send`` costs. Three choices (``--token-ids``):

- ``uniform`` (the default, and the harness's only choice before): every id of
  ``[0, vocab_size)`` equally likely. In a 128,256-id vocabulary 49 % of ids are 65,536
  or above and take 5 bytes: an upper bound for real text.
- ``zipf``: the id of rank ``k`` (``k = 0, 1, ...``) has probability proportional to
  ``1 / (k + 1) ** ZIPF_EXPONENT`` with ``ZIPF_EXPONENT = 1.0`` and id = rank (no
  permutation). Exponent: the rank-frequency law of words in natural text has an
  exponent close to 1 (Zipf 1949; Piantadosi, "Zipf's word frequency law in natural
  language", 2014), and the frequencies of BPE subword tokens follow the same law
  over most of their ranks. Id = rank: BPE tokenizers number tokens in merge order,
  so frequent tokens get low ids, which is what shrinks their encoding. It is a lower
  bound on id widths rather than a fit: real vocabularies put their 256 byte tokens
  first (Llama 3's most frequent words, e.g. `` the`` = 279, sit above 255), so text
  has fewer 1-byte ids than rank order gives. In a 128,256-id vocabulary this puts
  44.0 % of ids below 128, 5.6 % in [128, 256), 44.9 % in [256, 65,536) and 5.4 %
  above. For a measured distribution use a histogram.
- ``hist:PATH``: a histogram file, CSV of ``token_id,count`` lines (an optional
  ``token_id,count`` header, ``#`` comment lines and blank lines allowed), each id in
  ``[0, vocab_size)`` at most once, counts non-negative integers, at least one
  positive, both in ASCII digits (``traces.UINT_RE``, as a trace's counts); ids not
  listed have count 0 and are never drawn (``load_histogram``).

Draws are deterministic. Sampled ids come from a 64-bit hash (``NullModel.sample``):
``uniform`` reduces it modulo ``vocab_size`` (as before); the others take its top 53
bits as a uniform number ``u`` in ``[0, 2**53)`` and return the first id whose
cumulative threshold exceeds ``u`` (an inverse CDF, ``numpy.searchsorted``). The
thresholds are the cumulative probabilities times ``2**53``, rounded down, the last one
exactly ``2**53``: the id distribution is exactly ``diff(thresholds) / 2**53``
(``TokenIds.mass``). Prompt ids draw ``u`` from the request's seeded generator.
"""

from __future__ import annotations

import bisect
import codecs
import functools
import hashlib
from typing import Optional

import numpy as np

from ipc_bench.engine.config import ConfigError, check_token_ids_spec
from ipc_bench.engine.input_files import EMPTY_PIPE, is_pipe, open_input_fd
from ipc_bench.engine.traces import UINT_RE

#: Rank-frequency exponent of the ``zipf`` distribution.
ZIPF_EXPONENT = 1.0
#: Bits of the uniform number the inverse CDF reads.
HASH_BITS = 53
_SCALE = 2 ** HASH_BITS
_SHIFT = np.uint64(64 - HASH_BITS)
_HIST = "hist:"
#: Largest histogram count (an int64).
MAX_COUNT = 2 ** 63 - 1


class TokenIds:
    """A distribution of token ids over ``[0, vocab_size)``.

    ``spec``: ``uniform``, ``zipf`` or ``hist:PATH``; ``thresholds``: ``None`` for
    uniform, else uint64 ``[vocab_size]`` cumulative thresholds in ``[0, 2**53]``,
    non-decreasing, the last ``2**53`` (id ``k`` is drawn when ``thresholds[k-1] <= u <
    thresholds[k]``).
    """

    def __init__(self, spec: str, vocab_size: int, thresholds: Optional[np.ndarray]):
        self.spec = spec
        self.vocab_size = vocab_size
        self.thresholds = thresholds
        self.uniform = thresholds is None
        self._vocab = np.uint64(vocab_size)
        self._threshold_view: Optional[memoryview] = None  # for ids_of_hashes

    def from_hash(self, h: np.ndarray) -> np.ndarray:
        """Ids for uint64 hashes ``h`` (``[n]``; modified in place): ``h % vocab_size``
        for uniform, else the inverse CDF at ``h >> 11`` (the top 53 bits). Returns int64
        ``[n]``."""
        if self.uniform:
            h %= self._vocab
            return h.astype(np.int64)
        h >>= _SHIFT
        return np.searchsorted(self.thresholds, h, side="right").astype(np.int64)

    def ids_of_hashes(self, hashes: list[int]) -> list[int]:
        """``from_hash`` over Python ints in ``[0, 2**64)`` (``[n]``), as a list of
        ints: ``h % vocab_size`` for uniform, else ``bisect_right`` of the thresholds at
        ``h >> 11`` (``searchsorted(side="right")``'s index). The same ids as
        ``from_hash``, without a NumPy call: the faster for a few hashes."""
        if self.uniform:
            vocab = self.vocab_size
            return [h % vocab for h in hashes]
        if self._threshold_view is None:
            self._threshold_view = memoryview(np.ascontiguousarray(self.thresholds))
        thresholds, shift = self._threshold_view, 64 - HASH_BITS
        return [bisect.bisect_right(thresholds, h >> shift) for h in hashes]

    def draw(self, rng: np.random.Generator, n: int) -> list[int]:
        """``n`` ids from ``rng``: ``rng.integers(0, vocab_size, n)`` for uniform (the
        harness's prompts before this module), else the inverse CDF at ``n`` uniform
        53-bit numbers from ``rng``."""
        if self.uniform:
            return rng.integers(0, self.vocab_size, size=n).tolist()
        u = rng.integers(0, _SCALE, size=n, dtype=np.uint64)
        return np.searchsorted(self.thresholds, u, side="right").tolist()

    def mass(self, lo: int, hi: int) -> float:
        """Probability that a drawn id lies in ``[lo, hi)`` (clipped to the vocabulary):
        exact for ``from_hash`` of uniform 53-bit inputs and for ``draw``; for uniform,
        ``(hi - lo) / vocab_size``."""
        lo, hi = max(0, lo), min(self.vocab_size, hi)
        if hi <= lo:
            return 0.0
        if self.uniform:
            return (hi - lo) / self.vocab_size
        below = int(self.thresholds[lo - 1]) if lo > 0 else 0
        return (int(self.thresholds[hi - 1]) - below) / _SCALE

    def __repr__(self) -> str:
        return f"<TokenIds {self.spec} over {self.vocab_size:,} ids>"


def _thresholds(weights: np.ndarray) -> np.ndarray:
    """uint64 cumulative thresholds of non-negative float64 ``weights`` (some positive),
    scaled to ``2**53``; the last is exactly ``2**53``."""
    cdf = np.cumsum(weights)
    scaled = np.floor(cdf * (_SCALE / cdf[-1]))
    np.minimum(scaled, _SCALE, out=scaled)
    thresholds = scaled.astype(np.uint64)
    thresholds[-1] = _SCALE
    return thresholds


def zipf_weights(vocab_size: int, exponent: float = ZIPF_EXPONENT) -> np.ndarray:
    """float64 ``[vocab_size]``: ``1 / (k + 1) ** exponent`` for id = rank ``k``."""
    return 1.0 / np.arange(1, vocab_size + 1, dtype=np.float64) ** exponent


def load_histogram(path: str, vocab_size: int) -> np.ndarray:
    """Counts, int64 ``[vocab_size]``, from a ``token_id,count`` CSV file (format in the
    module docstring), read once (a pipe too: ``engine.input_files``); a UTF-8
    byte-order mark at its start is skipped, as a trace's is. Raises ``ConfigError``
    (one line naming the file and line) on an unreadable file, bytes that are not
    UTF-8 (the line and byte, as a trace's error gives them, line 1's counted after
    the mark), a
    malformed line (a number in other than ASCII digits included), an id outside
    ``[0, vocab_size)`` or listed twice, a negative count, a count above ``2**63 - 1``,
    an empty file (nothing but blank lines: ``line 1: empty file; expected rows of
    'token_id,count' (two integers)``, as an empty trace's line says it) or no positive
    count."""
    try:
        with open(open_input_fd(path), "rb") as f:
            data = f.read()
            if not data and is_pipe(f.fileno()):
                raise OSError(0, EMPTY_PIPE)
    except OSError as exc:
        reason = exc.strerror or exc
        raise ConfigError(f"cannot read token-id histogram {path}: {reason}") from None
    try:  # utf-8-sig: a byte-order mark an editor saved the file with is no error, as
        text = data.decode("utf-8-sig")  # in a trace (engine.traces)
    except UnicodeDecodeError as exc:  # where, as a trace's line says it
        if data.startswith(codecs.BOM_UTF8):  # exc.start counts from after the mark,
            data = data[len(codecs.BOM_UTF8):]  # and so does a trace's line 1
        newline = b"\n"
        line, start = data.count(newline, 0, exc.start) + 1, data.rfind(newline, 0, exc.start)
        raise ConfigError(f"token-id histogram {path} line {line}: not UTF-8 text (byte "
                          f"{exc.start - start} of the line)") from None
    return parse_histogram(text, path, vocab_size)


def parse_histogram(text: str, path: str, vocab_size: int) -> np.ndarray:
    """``load_histogram`` of a file's content ``text`` (``path`` names it in errors)."""
    if not text.strip():
        raise ConfigError(f"token-id histogram {path} line 1: empty file; expected rows "
                          "of 'token_id,count' (two integers)")
    lines = text.splitlines()
    counts = np.zeros(vocab_size, dtype=np.int64)
    seen: dict[int, int] = {}
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#") or (not seen and text.replace(" ", "") ==
                                                "token_id,count"):
            continue
        where = f"token-id histogram {path} line {number}"
        parts = [p.strip() for p in text.split(",")]
        if len(parts) != 2 or not all(UINT_RE.fullmatch(p.removeprefix("-"))
                                      for p in parts):  # ASCII digits, as a trace's
            raise ConfigError(f"{where}: expected 'token_id,count' (two integers), got "
                              f"{text[:60]!r}")
        token, count = _whole(parts[0]), _whole(parts[1])
        if not 0 <= token < vocab_size:
            raise ConfigError(f"{where}: token id {_shown(parts[0])} outside the "
                              f"vocabulary [0, {vocab_size:,})")
        if token in seen:
            raise ConfigError(f"{where}: token id {token} already listed on line "
                              f"{seen[token]}")
        if count < 0:
            raise ConfigError(f"{where}: count {_shown(parts[1])} is negative")
        if count > MAX_COUNT:
            raise ConfigError(f"{where}: count {_shown(parts[1])} is above the largest "
                              f"allowed, 2**63 - 1 = {MAX_COUNT:,}")
        seen[token] = number
        counts[token] = count
    if not counts.any():
        raise ConfigError(f"token-id histogram {path} has no positive count")
    return counts


def _whole(text: str) -> int:
    """``text`` (ASCII digits, perhaps after a ``-``) as an int; one of more than 20
    digits past its leading zeros as +-10**20, above any count or id allowed, since
    ``int`` refuses more than 4,300 digits."""
    digits = text.removeprefix("-").lstrip("0")
    if len(digits) <= 20:
        return int(text)
    return -10**20 if text.startswith("-") else 10**20


def _shown(text: str) -> str:
    """A number of a histogram line as written, its first 40 characters and its length
    when longer."""
    return text if len(text) <= 40 else f"{text[:40]}... ({len(text):,} characters)"


def normalized_histogram(counts: np.ndarray) -> str:
    """The canonical text of a histogram: ``token_id,count`` lines, one per positive
    count, in increasing id order, each ending in a newline (no header, comments or zero
    counts). Two files with the same counts give the same text; it is what the runner
    processes receive (``ModelConfig.token_id_histogram``) and what
    ``histogram_digest`` hashes."""
    ids = np.flatnonzero(counts)
    return "".join(f"{i},{c}\n" for i, c in zip(ids.tolist(), counts[ids].tolist()))


def histogram_digest(normalized: str) -> str:
    """SHA-256 (hex) of ``normalized_histogram``'s text, UTF-8: the run's record of which
    histogram it drew from (``token_ids_sha256`` in summary.json)."""
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()


#: Histogram texts read in this process: ``hist:PATH`` -> ``normalized_histogram``. A
#: file is read once per process (``read_histogram``); every later draw uses this copy.
_READ: dict[str, str] = {}


def forget_histograms() -> None:
    """Forget the histograms read so far (a new run in the same process reads its
    file again, once)."""
    _READ.clear()


def read_histogram(spec: str, vocab_size: int) -> str:
    """The normalized text of ``spec``'s histogram (``hist:PATH``), read from the file
    the first time only (``ConfigError`` on a bad one); ``""`` for ``uniform`` and
    ``zipf``."""
    check_token_ids_spec(spec)
    if not spec.startswith(_HIST):
        return ""
    if spec not in _READ:
        counts = load_histogram(spec[len(_HIST):], vocab_size)
        _READ[spec] = normalized_histogram(counts)
    return _READ[spec]


def token_id_distribution(spec: str, vocab_size: int,
                          histogram: Optional[str] = None) -> TokenIds:
    """The ``TokenIds`` of ``spec`` (``uniform``, ``zipf`` or ``hist:PATH``) over
    ``vocab_size`` ids. For ``hist:``, ``histogram`` is the histogram's normalized text
    (the runner's ``ModelConfig.token_id_histogram``); ``None`` takes this process's
    one read of the file (``read_histogram``). Raises ``ConfigError`` on a bad spec or
    histogram."""
    check_token_ids_spec(spec)
    if spec.startswith(_HIST):
        if histogram is None:
            histogram = read_histogram(spec, vocab_size)
        if not histogram:
            raise ConfigError(f"--token-ids {spec}: the histogram's content was not "
                              "passed to this process")
    else:
        histogram = ""
    return _distribution(spec, vocab_size, histogram)


@functools.lru_cache(maxsize=8)
def _distribution(spec: str, vocab_size: int, histogram: str) -> TokenIds:
    if spec == "uniform":
        return TokenIds(spec, vocab_size, None)
    if spec == "zipf":
        return TokenIds(spec, vocab_size, _thresholds(zipf_weights(vocab_size)))
    counts = parse_histogram(histogram, spec[len(_HIST):], vocab_size)
    return TokenIds(spec, vocab_size, _thresholds(counts.astype(np.float64)))
