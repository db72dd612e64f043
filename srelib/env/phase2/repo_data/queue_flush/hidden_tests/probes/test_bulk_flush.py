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


def _drawn_messages(rng, count):
    """``count`` messages under a drawn key prefix, each carrying a drawn tag."""
    prefix, tag = f"order{rng.getrandbits(32):x}", rng.getrandbits(40)
    return [(f"{prefix}:{n}", {"status": "paid", "n": n, "tag": tag}) for n in range(count)]


def _draw_two_flushes(rng):
    return _drawn_messages(rng, rng.randint(1, 9)), _drawn_messages(rng, rng.randint(1, 9))



def probe_each_flush_reports_only_its_own_entries(rng):
    first_batch, second_batch = _draw_two_flushes(rng)
    worker = _worker()
    _add_all(worker, first_batch)
    first = worker.flush()
    _add_all(worker, second_batch)
    return {"flushed": [first, worker.flush()], "flushed_total": worker.flushed_total,
            "last": worker.cache.get(second_batch[-1][0])}


def _draw_buffer(rng):
    return _drawn_messages(rng, rng.randint(1, 9))



def probe_flush_leaves_the_buffer_empty(rng):
    messages = _draw_buffer(rng)
    worker = _worker()
    _add_all(worker, messages)
    worker.flush()
    pending = worker.pending
    return {"pending": pending, "second_flush": worker.flush(), "round_trips": worker.cache.round_trips,
            "last": worker.cache.get(messages[-1][0])}


def _draw_backlog(rng):
    messages = _drawn_messages(rng, rng.randint(10, 60))
    return messages, rng.randint(2, 9), len(messages) + rng.randint(0, 20)



def probe_every_message_is_written_to_the_cache_once(rng):
    messages, max_batch, limit = _draw_backlog(rng)
    cache = SharedCache(capacity=1000)
    worker = _worker(cache, messages, max_batch=max_batch)
    moved = worker.run_once(limit=limit)
    return {"moved": moved, "writes": cache.writes, "round_trips": cache.round_trips,
            "flushed_total": worker.flushed_total, "last": cache.get(messages[-1][0])}


def _draw_rounds(rng):
    rounds, max_batch = rng.randint(3, 6), rng.randint(3, 12)
    return rounds, max_batch, _drawn_messages(rng, rounds * max_batch)



def probe_flushing_does_not_grow_the_cache_traffic_of_later_batches(rng):
    rounds, max_batch, messages = _draw_rounds(rng)
    cache = SharedCache(capacity=1000)
    worker = _worker(cache, messages, max_batch=max_batch)
    writes = []
    for _ in range(rounds):
        worker.run_once(limit=max_batch)
        writes.append(cache.writes)
    return {"writes": writes, "last": cache.get(messages[-1][0])}


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
