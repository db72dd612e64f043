"""Moves messages from the broker into the shared cache in bulk."""

from msgqueue import config


class FlushWorker:
    """Buffers polled messages and writes them to the shared cache in batches.

    ``add`` buffers one message under its key; a later message for the same key
    replaces the earlier one. ``flush`` writes the buffered batch in a single
    ``set_many`` round trip, returns the number of entries it wrote and leaves
    the buffer empty, so each message reaches the cache once. The buffer is
    flushed as soon as it holds ``max_batch`` entries.
    """

    def __init__(self, source, cache, max_batch=config.FLUSH_BATCH):
        self.source = source
        self.cache = cache
        self.max_batch = max_batch
        self.flushed_total = 0
        self._batch = {}

    @property
    def pending(self):
        """Number of buffered messages not yet written to the cache."""
        return len(self._batch)

    def add(self, key, value):
        """Buffer one message, flushing when the batch is full."""
        self._batch[key] = value
        if len(self._batch) >= self.max_batch:
            self.flush()

    def flush(self):
        """Write the buffered batch to the cache; returns how many entries were written."""
        batch = list(self._batch.items())
        self._batch.clear()
        self.cache.set_many(batch)
        self.flushed_total += len(batch)
        return len(batch)

    def run_once(self, limit=config.POLL_LIMIT):
        """Buffer up to ``limit`` pending messages and flush them; returns how many were polled."""
        messages = self.source.poll(limit)
        for key, value in messages:
            self.add(key, value)
        self.flush()
        return len(messages)

    def run_forever(self, stop, idle_wait_s=config.IDLE_WAIT_S):
        """Flush until the ``stop`` event is set, pausing while the broker is empty."""
        while not stop.is_set():
            if self.run_once() == 0:
                stop.wait(idle_wait_s)
