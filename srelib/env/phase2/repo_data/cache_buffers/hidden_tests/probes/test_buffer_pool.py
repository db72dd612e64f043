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


def _draw_writes(rng):
    """A number of writes of growing size, a key prefix and a tag, drawn for one grading."""
    return rng.randint(200, 500), f"fragment{rng.getrandbits(32):x}", rng.getrandbits(40)



def probe_pool_keeps_a_bounded_number_of_free_buffers(rng):
    count, prefix, tag = _draw_writes(rng)
    store = ValueStore()
    for i in range(count):
        store.set(f"{prefix}:{i}", f"{tag}:" + "v" * (1 + i))
    return {"free": store.pool.free_count(), "entries": len(store), "last": store.get(f"{prefix}:{count - 1}")}


def _draw_churn(rng):
    """Rounds of writes, their number and a tag, drawn for one grading."""
    return rng.randint(2, 5), rng.randint(150, 300), rng.getrandbits(40)



def probe_pool_memory_stays_bounded_under_churn(rng):
    rounds, width, tag = _draw_churn(rng)
    store = ValueStore()
    read = None
    for _ in range(rounds):
        for i in range(width):
            store.set(f"fragment:{i}", f"{tag}:" + "v" * (1 + i))
        read = store.get(f"fragment:{width - 1}")
        for i in range(width):
            store.delete(f"fragment:{i}")
    return {"free_bytes": store.pool.free_bytes(), "read": read,
            "largest_frame": framed_size(f"{tag}:{'v' * width}".encode())}


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
