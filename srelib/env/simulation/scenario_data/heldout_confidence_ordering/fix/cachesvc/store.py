"""ValueStore: the cache's key/value map.

A write borrows a buffer from the shared pool, frames the value into it, keeps an exact copy
of the frame and hands the buffer back, so buffers are reused across writes. Every entry may
carry a time to live; an expired entry reads as missing and is dropped on that read.
``stats`` counts hits, misses and expiries for the metrics exporter.
"""

from __future__ import annotations

import time
from typing import Callable

from cachesvc.codec import framed_size, read_frame, write_frame
from vendor.shared_buffers import BufferPool

#: Buffers the pool keeps between writes; shared-buffers 2.x keeps every one unless told.
MAX_FREE_BUFFERS = 64


class ValueStore:
    """String keys to string values, encoded through pooled buffers."""

    def __init__(self, pool: BufferPool | None = None, clock: Callable[[], float] = time.monotonic):
        self.pool = pool if pool is not None else BufferPool(max_free=MAX_FREE_BUFFERS)
        self._clock = clock
        self._frames: dict[str, tuple[bytes, float | None]] = {}
        self.stats = {"hits": 0, "misses": 0, "expired": 0}

    def set(self, key: str, value: str, ttl_s: float | None = None) -> None:
        if ttl_s is not None and ttl_s <= 0:
            raise ValueError("ttl_s must be positive (or None for no expiry)")
        payload = value.encode("utf-8")
        buf = self.pool.acquire(framed_size(payload))
        try:
            size = write_frame(buf, payload)
            expires = None if ttl_s is None else self._clock() + ttl_s
            self._frames[key] = (bytes(buf[:size]), expires)
        finally:
            self.pool.release(buf)

    def get(self, key: str) -> str | None:
        entry = self._frames.get(key)
        if entry is None:
            self.stats["misses"] += 1
            return None
        frame, expires = entry
        if expires is not None and self._clock() >= expires:
            del self._frames[key]
            self.stats["expired"] += 1
            self.stats["misses"] += 1
            return None
        self.stats["hits"] += 1
        return read_frame(frame).decode("utf-8")

    def delete(self, key: str) -> bool:
        return self._frames.pop(key, None) is not None

    def __len__(self) -> int:
        return len(self._frames)
