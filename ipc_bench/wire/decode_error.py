"""``DecodeError``: a frame could not be decoded (``wire.codecs`` re-exports it; here so
that ``wire.slots``, which ``wire.codecs`` imports, can raise it too), and the text that
names an undecodable ``ModelRunnerOutput`` (``undecodable_text``: the scheduler loop and
the floor both use it; the runner process imports the floor but not the scheduler loop)."""

from __future__ import annotations

from typing import Optional


class DecodeError(ValueError):
    """A frame could not be decoded into the expected message type (one line)."""


def undecodable_text(size: int, origin: Optional[str]) -> str:
    """``undecodable ModelRunnerOutput from the runner (227 bytes)``, or where the frame
    cannot be attributed (``reply_origin``), ``undecodable ModelRunnerOutput (227
    bytes) on the tcp port 5602: from the runner or another peer``."""
    if origin is None:
        return f"undecodable ModelRunnerOutput from the runner ({size:,} bytes)"
    return f"undecodable ModelRunnerOutput ({size:,} bytes) {origin}"
