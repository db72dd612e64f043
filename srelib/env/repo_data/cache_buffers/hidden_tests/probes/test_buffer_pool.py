"""Probes for the cache's value store and its shared buffer pool (cachesvc.store); judged by checks/."""

from cachesvc.codec import framed_size
from cachesvc.store import ValueStore


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _varied_writes(store, count):
    for i in range(count):
        store.set(f"fragment:{i}", "v" * (1 + i))


def probe_pool_keeps_a_bounded_number_of_free_buffers():
    store = ValueStore()
    _varied_writes(store, 300)
    return {"free": store.pool.free_count(), "entries": len(store)}


def probe_pool_memory_stays_bounded_under_churn():
    store = ValueStore()
    for round_ in range(4):
        _varied_writes(store, 250)
        for i in range(250):
            store.delete(f"fragment:{i}")
    return {"free_bytes": store.pool.free_bytes(), "largest_frame": framed_size(b"v" * 250)}


def probe_values_round_trip():
    store = ValueStore()
    values = {"page:/home": "<html>home</html>", "empty": "", "greeting": "grüße, 世界"}
    for key, value in values.items():
        store.set(key, value)
    return {key: store.get(key) for key in [*values, "missing"]}


def probe_same_size_writes_reuse_a_buffer():
    store = ValueStore()
    store.set("a", "x" * 40)
    store.set("b", "y" * 40)
    store.set("c", "z" * 40)
    return {"hits": store.pool.hits, "misses": store.pool.misses, "b": store.get("b")}


def probe_reused_buffers_never_show_earlier_bytes():
    store = ValueStore()
    secret = "session-token=4f1c9e77a2"
    store.set("session:1", secret)
    buf = store.pool.acquire(framed_size(secret.encode()))
    return {"reused": store.pool.hits == 1, "nonzero_bytes": sum(1 for b in buf if b)}


def probe_entries_expire_after_their_ttl():
    clock = FakeClock()
    store = ValueStore(clock=clock)
    store.set("session:9", "cart=3", ttl_s=30)
    clock.now += 29
    before = store.get("session:9")
    clock.now += 1
    return {"before": before, "after": store.get("session:9"), "left": len(store),
            "stats": dict(store.stats)}


def probe_non_positive_ttl_is_rejected():
    ValueStore().set("k", "v", ttl_s=0)
