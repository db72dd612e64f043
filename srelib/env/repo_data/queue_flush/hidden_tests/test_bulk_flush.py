"""Hidden tests for the bulk-flush worker in msgqueue.worker."""

from msgqueue.cache import SharedCache
from msgqueue.worker import FlushWorker


class ListSource:
    """Hands out queued (key, value) messages in order, ``limit`` at a time."""

    def __init__(self, messages):
        self.messages = list(messages)

    def poll(self, limit):
        taken, self.messages = self.messages[:limit], self.messages[limit:]
        return taken


def _messages(count, prefix="order"):
    return [(f"{prefix}:{n}", {"status": "paid", "n": n}) for n in range(count)]


def _worker(cache=None, messages=(), max_batch=10):
    if cache is None:
        cache = SharedCache(capacity=1000)
    return FlushWorker(ListSource(messages), cache, max_batch=max_batch)


def test_each_flush_reports_only_its_own_entries():
    worker = _worker()
    for key, value in _messages(3):
        worker.add(key, value)
    assert worker.flush() == 3
    for key, value in _messages(2, prefix="refund"):
        worker.add(key, value)
    assert worker.flush() == 2
    assert worker.flushed_total == 5


def test_flush_leaves_the_buffer_empty():
    worker = _worker()
    for key, value in _messages(3):
        worker.add(key, value)
    worker.flush()
    assert worker.pending == 0
    assert worker.flush() == 0
    assert worker.cache.round_trips == 1


def test_every_message_is_written_to_the_cache_once():
    cache = SharedCache(capacity=1000)
    worker = _worker(cache, _messages(20), max_batch=5)
    assert worker.run_once(limit=100) == 20
    assert cache.writes == 20
    assert cache.round_trips == 4
    assert worker.flushed_total == 20


def test_flushing_does_not_grow_the_cache_traffic_of_later_batches():
    cache = SharedCache(capacity=1000)
    worker = _worker(cache, _messages(30), max_batch=10)
    worker.run_once(limit=10)
    first = cache.writes
    worker.run_once(limit=10)
    worker.run_once(limit=10)
    assert first == 10
    assert cache.writes == 30


def test_batch_is_written_in_one_round_trip():
    cache = SharedCache(capacity=1000)
    worker = _worker(cache)
    for key, value in _messages(3):
        worker.add(key, value)
    assert cache.round_trips == 0
    worker.flush()
    assert cache.round_trips == 1
    assert cache.get("order:2") == {"status": "paid", "n": 2}


def test_full_batch_is_flushed_without_an_explicit_call():
    cache = SharedCache(capacity=1000)
    worker = _worker(cache, max_batch=3)
    for key, value in _messages(3):
        worker.add(key, value)
    assert all(f"order:{n}" in cache for n in range(3))
    assert cache.round_trips == 1


def test_latest_message_for_a_key_wins():
    cache = SharedCache(capacity=1000)
    worker = _worker(cache)
    worker.add("order:1", {"status": "pending"})
    worker.add("order:1", {"status": "paid"})
    assert worker.flush() == 1
    assert cache.get("order:1") == {"status": "paid"}


def test_run_once_moves_polled_messages_into_the_cache():
    cache = SharedCache(capacity=1000)
    worker = FlushWorker(ListSource(_messages(4)), cache)
    assert worker.run_once(limit=10) == 4
    assert [cache.get(f"order:{n}")["n"] for n in range(4)] == [0, 1, 2, 3]
    assert worker.run_once(limit=10) == 0


def test_cache_evicts_the_least_recently_used_key():
    cache = SharedCache(capacity=2)
    cache.set("orders:hot", 1)
    cache.set("queue:a", 2)
    cache.get("orders:hot")
    cache.set("queue:b", 3)
    assert "orders:hot" in cache and "queue:a" not in cache
    assert cache.evictions == 1
