"""Probes for the bulk-flush worker in msgqueue.worker; judged by checks/."""

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


def _add_all(worker, messages):
    for key, value in messages:
        worker.add(key, value)


def probe_each_flush_reports_only_its_own_entries():
    worker = _worker()
    _add_all(worker, _messages(3))
    first = worker.flush()
    _add_all(worker, _messages(2, prefix="refund"))
    return {"flushed": [first, worker.flush()], "flushed_total": worker.flushed_total}


def probe_flush_leaves_the_buffer_empty():
    worker = _worker()
    _add_all(worker, _messages(3))
    worker.flush()
    pending = worker.pending
    return {"pending": pending, "second_flush": worker.flush(), "round_trips": worker.cache.round_trips}


def probe_every_message_is_written_to_the_cache_once():
    cache = SharedCache(capacity=1000)
    worker = _worker(cache, _messages(20), max_batch=5)
    moved = worker.run_once(limit=100)
    return {"moved": moved, "writes": cache.writes, "round_trips": cache.round_trips,
            "flushed_total": worker.flushed_total}


def probe_flushing_does_not_grow_the_cache_traffic_of_later_batches():
    cache = SharedCache(capacity=1000)
    worker = _worker(cache, _messages(30), max_batch=10)
    writes = []
    for _ in range(3):
        worker.run_once(limit=10)
        writes.append(cache.writes)
    return writes


def probe_batch_is_written_in_one_round_trip():
    cache = SharedCache(capacity=1000)
    worker = _worker(cache)
    _add_all(worker, _messages(3))
    before = cache.round_trips
    worker.flush()
    return {"round_trips": [before, cache.round_trips], "order:2": cache.get("order:2")}


def probe_full_batch_is_flushed_without_an_explicit_call():
    cache = SharedCache(capacity=1000)
    worker = _worker(cache, max_batch=3)
    _add_all(worker, _messages(3))
    return {"cached": [f"order:{n}" in cache for n in range(3)], "round_trips": cache.round_trips}


def probe_latest_message_for_a_key_wins():
    cache = SharedCache(capacity=1000)
    worker = _worker(cache)
    worker.add("order:1", {"status": "pending"})
    worker.add("order:1", {"status": "paid"})
    return {"flushed": worker.flush(), "order:1": cache.get("order:1")}


def probe_run_once_moves_polled_messages_into_the_cache():
    cache = SharedCache(capacity=1000)
    worker = FlushWorker(ListSource(_messages(4)), cache)
    moved = worker.run_once(limit=10)
    cached = [cache.get(f"order:{n}") for n in range(4)]
    return {"moved": [moved, worker.run_once(limit=10)], "cached": cached}


def probe_cache_evicts_the_least_recently_used_key():
    cache = SharedCache(capacity=2)
    cache.set("orders:hot", 1)
    cache.set("queue:a", 2)
    cache.get("orders:hot")
    cache.set("queue:b", 3)
    return {"hot_kept": "orders:hot" in cache, "a_kept": "queue:a" in cache, "evictions": cache.evictions}
