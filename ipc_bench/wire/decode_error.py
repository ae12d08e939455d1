"""``DecodeError``: a frame could not be decoded (``wire.codecs`` re-exports it; here so
that ``wire.slots``, which ``wire.codecs`` imports, can raise it too)."""


class DecodeError(ValueError):
    """A frame could not be decoded into the expected message type (one line)."""
