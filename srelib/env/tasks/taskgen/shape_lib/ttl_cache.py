"""cache_thrash, held out: a @n@ cache whose entries expire; jittered lifetimes arrive with a
misplaced bracket that spreads them by a fraction of a second, so entries stored together
still expire together and their reloads stampede."""

from ..shapes import Shape

_SOURCE = '''"""A @n@ cache whose entries expire ``ttl`` seconds after they are stored."""


class @N@TtlCache:
    """Entries by key; ``clock()`` gives the time in seconds."""

    def __init__(self, clock, ttl=300.0):
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self.clock = clock
        self.ttl = ttl
        self._entries = {}

    def _lifetime(self):
        return self.ttl

    def put(self, key, value):
        self._entries[key] = (value, self.clock() + self._lifetime())

    def get(self, key):
        """The value under ``key``, or None when it is missing or expired."""
        entry = self._entries.get(key)
        if entry is None or entry[1] <= self.clock():
            self._entries.pop(key, None)
            return None
        return entry[0]
'''
_GOOD = _SOURCE.replace('''    def __init__(self, clock, ttl=300.0):
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self.clock = clock
        self.ttl = ttl
        self._entries = {}

    def _lifetime(self):
        return self.ttl''', '''    def __init__(self, clock, ttl=300.0, jitter=0.0, draw=None):
        """``jitter`` (0 to 1) spreads each lifetime over ``ttl * (1 +- jitter)`` so entries
        stored together do not expire together; ``draw()`` gives a number in [0, 1)."""
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        if not 0 <= jitter < 1:
            raise ValueError("jitter must be in [0, 1)")
        self.clock = clock
        self.ttl = ttl
        self.jitter = jitter
        self._draw = draw or random.random
        self._entries = {}

    def _lifetime(self):
        return self.ttl * (1 + self.jitter * (2 * self._draw() - 1))''').replace(
    '''seconds after they are stored."""
''', '''seconds after they are stored."""

import random
''')

SHAPE = Shape(
    name="ttl_cache", family="cache_thrash", module="@n@_ttl_cache.py",
    what="an expiring @n@ cache", feature="jittered lifetimes for cached @ns@",
    source=_SOURCE, good=_GOOD,
    bug=(('''        return self.ttl * (1 + self.jitter * (2 * self._draw() - 1))''',
          '''        return self.ttl * 1 + self.jitter * (2 * self._draw() - 1)'''),),
    tests='''from @pkg@.@n@_ttl_cache import @N@TtlCache


def test_entries_expire():
    now = [0.0]
    cache = @N@TtlCache(lambda: now[0], ttl=10)
    cache.put("a", 1)
    assert cache.get("a") == 1
    now[0] = 11
    assert cache.get("a") is None
''',
    feature_tests='''

def test_no_jitter_keeps_the_ttl():
    now = [0.0]
    cache = @N@TtlCache(lambda: now[0], ttl=10, jitter=0.0)
    cache.put("a", 1)
    now[0] = 9.9
    assert cache.get("a") == 1
''',
    probes='''from @pkg@.@n@_ttl_cache import @N@TtlCache


def probe_entries_live_for_the_ttl(rng):
    now, ttl = [0.0], rng.uniform(1, 600)
    cache = @N@TtlCache(lambda: now[0], ttl=ttl)
    cache.put("k", {"v": 1})
    alive = cache.get("k")
    now[0] = ttl * 1.01
    return {"alive": alive, "later": cache.get("k")}


def probe_a_jitter_of_one_is_refused():
    @N@TtlCache(lambda: 0.0, ttl=5, jitter=1.0)
    return "accepted"


def probe_lifetimes_spread_around_the_ttl(rng):
    now, ttl, jitter = [0.0], rng.uniform(10, 600), rng.uniform(0.05, 0.5)
    draws = [rng.random() for _ in range(rng.randint(20, 80))]
    cache = @N@TtlCache(lambda: now[0], ttl=ttl, jitter=jitter, draw=iter(draws).__next__)
    for i in range(len(draws)):
        cache.put(i, i)
    alive = []
    for q in (0.25, 0.5, 0.75):
        now[0] = ttl * (1 + jitter * (2 * q - 1))
        alive.append(sum(cache.get(i) is not None for i in range(len(draws))))
    return alive


def probe_the_median_lifetime_is_the_ttl(rng):
    now, ttl, jitter = [0.0], rng.uniform(10, 600), rng.uniform(0.05, 0.5)
    cache = @N@TtlCache(lambda: now[0], ttl=ttl, jitter=jitter, draw=lambda: 0.5)
    cache.put("k", 1)
    now[0] = ttl * 0.999
    return cache.get("k")
''',
    checks='''def test_entries_live_for_the_ttl(seen):
    assert seen.value == {"alive": {"v": 1}, "later": None}


def test_a_jitter_of_one_is_refused(seen):
    assert seen.raised == "ValueError"


def test_lifetimes_spread_around_the_ttl(seen, rng):
    ttl, jitter = rng.uniform(10, 600), rng.uniform(0.05, 0.5)
    draws = [rng.random() for _ in range(rng.randint(20, 80))]
    ends = [ttl * (1 + jitter * (2 * d - 1)) for d in draws]
    checkpoints = [ttl * (1 + jitter * (2 * q - 1)) for q in (0.25, 0.5, 0.75)]
    assert seen.value == [sum(end > t for end in ends) for t in checkpoints]


def test_the_median_lifetime_is_the_ttl(seen):
    assert seen.value == 1
''')
SPLIT = "heldout"
