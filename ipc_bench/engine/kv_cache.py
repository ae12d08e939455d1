"""KV-cache block accounting on the scheduler side (vLLM V1 ``KVCacheManager``, one group).

Blocks are ids in ``[0, num_blocks)``; a request holding ``n`` tokens needs
``ceil(n / block_size)`` blocks. Free blocks are handed out in FIFO order, as vLLM's
``FreeKVCacheBlockQueue`` does (no prefix caching here).
"""

from __future__ import annotations

from collections import deque


class KVCacheManager:
    """Free-block pool. ``allocate`` returns new block ids or ``None`` when too few are free."""

    def __init__(self, num_blocks: int, block_size: int):
        self.num_blocks = num_blocks
        self.block_size = block_size
        self._free: deque[int] = deque(range(num_blocks))

    @property
    def num_free_blocks(self) -> int:
        return len(self._free)

    def blocks_needed(self, num_held_blocks: int, num_tokens: int) -> int:
        """Extra blocks a request holding ``num_held_blocks`` needs to hold ``num_tokens``."""
        return max(0, -(-num_tokens // self.block_size) - num_held_blocks)

    def allocate(self, num_new_blocks: int) -> list[int] | None:
        """Take ``num_new_blocks`` free blocks (FIFO), or ``None`` (nothing taken) if too few."""
        free = self._free
        if num_new_blocks > len(free):
            return None
        if num_new_blocks == 1:  # the common case while decoding: one block at a time
            return [free.popleft()]
        popleft = free.popleft
        return [popleft() for _ in range(num_new_blocks)]

    def free(self, block_ids: list[int]) -> None:
        """Return ``block_ids`` to the pool (they are reused after all blocks freed earlier)."""
        self._free.extend(block_ids)
