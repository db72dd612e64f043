"""memory_leak: an LRU cache of @ns@; bulk loading arrives and evicts only when a key is
cached already, so new @ns@ pile up past the limit."""

from ..shapes import Shape

_SOURCE = '''"""Recently used @ns@, kept in memory so repeated lookups skip the store."""

from collections import OrderedDict


class @N@Cache:
    """An LRU cache of @ns@ holding at most ``max_entries`` of them."""

    def __init__(self, max_entries=128):
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self._entries = OrderedDict()

    def __len__(self):
        return len(self._entries)

    def get(self, key):
        """The cached @n@ for ``key``, or None."""
        if key not in self._entries:
            return None
        self._entries.move_to_end(key)
        return self._entries[key]

    def put(self, key, value):
        """Remember ``value`` under ``key``; the least recently used go beyond the limit."""
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
'''
_GOOD = _SOURCE.replace('''    def put(self, key, value):
        """Remember ``value`` under ``key``; the least recently used go beyond the limit."""
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
''', '''    def put(self, key, value):
        """Remember ``value`` under ``key``; the least recently used go beyond the limit."""
        self.put_many([(key, value)])

    def put_many(self, pairs):
        """Remember every ``(key, value)`` pair in order; returns how many were stored."""
        stored = 0
        for key, value in pairs:
            if key in self._entries:
                self._entries.move_to_end(key)
            self._entries[key] = value
            stored += 1
            self._evict()
        return stored

    def _evict(self):
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
''')

# the input draws both the probes (in the sandbox) and the checks (in the grader) run
_DRAW_RECENCY = '''def _draw_recency(rng):
    size = rng.randint(2, 9)
    keys = [f"k{i}-{rng.getrandbits(32):x}" for i in range(size + 1)]
    return size, keys, [rng.getrandbits(40) for _ in keys]
'''
_DRAW_LIMIT = '''def _draw_limit(rng):
    return rng.randint(4, 40), rng.randint(300, 1200), rng.getrandbits(40)
'''
_DRAW_BULK = '''def _draw_bulk(rng):
    return rng.randint(2, 30), rng.randint(100, 800), rng.getrandbits(40)
'''

SHAPE = Shape(
    name="lru", family="memory_leak", module="@n@_cache.py",
    what="an LRU cache of @ns@", feature="bulk loading of @ns@",
    source=_SOURCE, good=_GOOD,
    bug=(('''                self._entries.move_to_end(key)
            self._entries[key] = value
            stored += 1
            self._evict()
''', '''                self._entries.move_to_end(key)
                self._evict()
            self._entries[key] = value
            stored += 1
'''),),
    tests='''from @pkg@.@n@_cache import @N@Cache


def test_get_returns_what_was_put():
    cache = @N@Cache(max_entries=2)
    cache.put("a", 1)
    assert cache.get("a") == 1 and cache.get("b") is None
''',
    feature_tests='''

def test_put_many_stores_every_pair():
    cache = @N@Cache(max_entries=4)
    assert cache.put_many([("a", 1), ("b", 2)]) == 2
    assert cache.get("b") == 2
''',
    probes='''from @pkg@.@n@_cache import @N@Cache


def probe_lookups_hit_after_a_put():
    cache = @N@Cache(max_entries=3)
    cache.put("k1", {"id": 1})
    return {"hit": cache.get("k1"), "miss": cache.get("k9")}


''' + _DRAW_RECENCY + '''


def probe_least_recently_used_goes_first(rng):
    size, keys, values = _draw_recency(rng)
    cache = @N@Cache(max_entries=size)
    for key, value in zip(keys[:size], values):
        cache.put(key, value)
    cache.get(keys[0])
    cache.put(keys[size], values[size])
    return {"touched": cache.get(keys[0]), "oldest": cache.get(keys[1]), "newest": cache.get(keys[size]),
            "size": len(cache)}


def probe_put_many_reports_what_it_stored():
    cache = @N@Cache(max_entries=10)
    stored = cache.put_many([("a", 1), ("b", 2), ("a", 3)])
    return {"stored": stored, "a": cache.get("a"), "size": len(cache)}


def probe_zero_entries_is_refused():
    @N@Cache(max_entries=0)
    return "accepted"


''' + _DRAW_LIMIT + '''


def probe_size_stays_within_the_limit(rng):
    limit, count, base = _draw_limit(rng)
    cache = @N@Cache(max_entries=limit)
    largest = 0
    for i in range(count):
        cache.put(f"k{i}", base + i)
        largest = max(largest, len(cache))
    return {"largest": largest, "newest": cache.get(f"k{count - 1}"), "oldest": cache.get("k0")}


''' + _DRAW_BULK + '''


def probe_bulk_loads_stay_within_the_limit(rng):
    limit, count, base = _draw_bulk(rng)
    cache = @N@Cache(max_entries=limit)
    cache.put_many([(f"k{i}", base + i) for i in range(count)])
    return {"size": len(cache), "last": cache.get(f"k{count - 1}")}
''',
    checks='''def test_lookups_hit_after_a_put(seen):
    assert seen.value == {"hit": {"id": 1}, "miss": None}


''' + _DRAW_RECENCY + '''


def test_least_recently_used_goes_first(seen, rng):
    size, keys, values = _draw_recency(rng)
    assert seen.value == {"touched": values[0], "oldest": None, "newest": values[size], "size": size}


def test_put_many_reports_what_it_stored(seen):
    assert seen.value == {"stored": 3, "a": 3, "size": 2}


def test_zero_entries_is_refused(seen):
    assert seen.raised == "ValueError"


''' + _DRAW_LIMIT + '''


def test_size_stays_within_the_limit(seen, rng):
    limit, count, base = _draw_limit(rng)
    assert seen.value == {"largest": limit, "newest": base + count - 1, "oldest": None}


''' + _DRAW_BULK + '''


def test_bulk_loads_stay_within_the_limit(seen, rng):
    limit, count, base = _draw_bulk(rng)
    assert seen.value == {"size": limit, "last": base + count - 1}
''')
SPLIT = "train"
