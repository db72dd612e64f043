"""Bug shapes: small working components, a feature each, and the bug a feature commit slips in.

A shape is written once with the placeholders ``@N@`` (a noun, CamelCase), ``@n@`` (snake case),
``@ns@`` (plural) and ``@pkg@`` (the service's package), and instantiated for a service's nouns.
It holds three versions of one module: ``source`` (the working component an innocent commit
adds), ``good`` (``source`` plus a feature) and the bug, a list of ``(old, new)`` replacements
that turn ``good`` into the bad commit's version. The reference fix is the inverse of the bug:
``good``, feature kept. ``probes`` and ``checks`` are the hidden tests (layout in
docs/CONTRACTS.md): they exercise the base behaviour and the feature (which a blind revert
loses) and the behaviour the bug breaks.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    """One component and the bug a feature commit carries into it (see the module doc)."""

    name: str
    family: str
    module: str  # path under the package (or "common/...": a vendored shared library)
    what: str  # what the component does, for commit messages
    feature: str  # what the feature adds, for commit messages and deploy notes
    source: str
    good: str
    bug: tuple  # ((old, new), ...) applied to ``good``
    tests: str  # visible tests of ``source`` (the innocent commit)
    feature_tests: str  # visible tests the feature commit appends
    probes: str
    checks: str

    def bad(self) -> str:
        """``good`` with the bug injected; each replacement must match exactly once."""
        text = self.good
        for old, new in self.bug:
            if text.count(old) != 1:
                raise ValueError(f"shape {self.name}: bug anchor must occur once: {old!r}")
            text = text.replace(old, new)
        return text


def fill(text: str, noun: str, plural: str, pkg: str) -> str:
    """Instantiate a template for one noun (``quote``/``quotes``) and package."""
    camel = "".join(part.capitalize() for part in noun.split("_"))
    return (text.replace("@N@", camel).replace("@ns@", plural).replace("@n@", noun)
            .replace("@pkg@", pkg))


SHAPES: dict[str, Shape] = {}


def _shape(**kw) -> None:
    SHAPES[kw["name"]] = Shape(**kw)


# ───────────────────────────────────────────────────────────────────────── memory_leak
_LRU_SOURCE = '''"""Recently used @ns@, kept in memory so repeated lookups skip the store."""

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
_lru_good = _LRU_SOURCE.replace('''    def put(self, key, value):
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
_shape(
    name="lru", family="memory_leak", module="@n@_cache.py",
    what="an LRU cache of @ns@", feature="bulk loading of @ns@",
    source=_LRU_SOURCE, good=_lru_good,
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


def _draw_recency(rng):
    size = rng.randint(2, 9)
    keys = [f"k{i}-{rng.getrandbits(32):x}" for i in range(size + 1)]
    return size, keys, [rng.getrandbits(40) for _ in keys]



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


def _draw_limit(rng):
    return rng.randint(4, 40), rng.randint(300, 1200), rng.getrandbits(40)



def probe_size_stays_within_the_limit(rng):
    limit, count, base = _draw_limit(rng)
    cache = @N@Cache(max_entries=limit)
    largest = 0
    for i in range(count):
        cache.put(f"k{i}", base + i)
        largest = max(largest, len(cache))
    return {"largest": largest, "newest": cache.get(f"k{count - 1}"), "oldest": cache.get("k0")}


def _draw_bulk(rng):
    return rng.randint(2, 30), rng.randint(100, 800), rng.getrandbits(40)



def probe_bulk_loads_stay_within_the_limit(rng):
    limit, count, base = _draw_bulk(rng)
    cache = @N@Cache(max_entries=limit)
    cache.put_many([(f"k{i}", base + i) for i in range(count)])
    return {"size": len(cache), "last": cache.get(f"k{count - 1}")}
''',
    checks='''def test_lookups_hit_after_a_put(seen):
    assert seen.value == {"hit": {"id": 1}, "miss": None}


def _draw_recency(rng):
    size = rng.randint(2, 9)
    keys = [f"k{i}-{rng.getrandbits(32):x}" for i in range(size + 1)]
    return size, keys, [rng.getrandbits(40) for _ in keys]



def test_least_recently_used_goes_first(seen, rng):
    size, keys, values = _draw_recency(rng)
    assert seen.value == {"touched": values[0], "oldest": None, "newest": values[size], "size": size}


def test_put_many_reports_what_it_stored(seen):
    assert seen.value == {"stored": 3, "a": 3, "size": 2}


def test_zero_entries_is_refused(seen):
    assert seen.raised == "ValueError"


def _draw_limit(rng):
    return rng.randint(4, 40), rng.randint(300, 1200), rng.getrandbits(40)



def test_size_stays_within_the_limit(seen, rng):
    limit, count, base = _draw_limit(rng)
    assert seen.value == {"largest": limit, "newest": base + count - 1, "oldest": None}


def _draw_bulk(rng):
    return rng.randint(2, 30), rng.randint(100, 800), rng.getrandbits(40)



def test_bulk_loads_stay_within_the_limit(seen, rng):
    limit, count, base = _draw_bulk(rng)
    assert seen.value == {"size": limit, "last": base + count - 1}
''')

_SUBS_SOURCE = '''"""Subscribers to @n@ events: handlers registered under a token, called on publish."""

import itertools


class @N@Events:
    """Handlers subscribed to @n@ events."""

    def __init__(self):
        self._handlers = {}
        self._tokens = itertools.count(1)

    def __len__(self):
        return len(self._handlers)

    def subscribe(self, handler):
        """Register ``handler``; returns the token that unsubscribes it."""
        token = next(self._tokens)
        self._handlers[token] = handler
        return token

    def unsubscribe(self, token):
        """Remove the handler registered under ``token``; True if there was one."""
        return self._handlers.pop(token, None) is not None

    def publish(self, event):
        """Call every handler with ``event``; returns how many were called."""
        for handler in list(self._handlers.values()):
            handler(event)
        return len(self._handlers)
'''
_subs_good = _SUBS_SOURCE.replace('''    def subscribe(self, handler):
        """Register ``handler``; returns the token that unsubscribes it."""
        token = next(self._tokens)
        self._handlers[token] = handler
        return token

    def unsubscribe(self, token):
        """Remove the handler registered under ``token``; True if there was one."""
        return self._handlers.pop(token, None) is not None

    def publish(self, event):
        """Call every handler with ``event``; returns how many were called."""
        for handler in list(self._handlers.values()):
            handler(event)
        return len(self._handlers)
''', '''    def subscribe(self, handler, once=False):
        """Register ``handler`` (``once``: for the next event only); returns its token."""
        token = next(self._tokens)
        self._handlers[token] = (handler, once)
        return token

    def unsubscribe(self, token):
        """Remove the handler registered under ``token``; True if there was one."""
        entry = self._handlers.pop(token, None)
        return entry is not None

    def publish(self, event):
        """Call every handler with ``event``; returns how many were called."""
        called = 0
        for token, (handler, once) in list(self._handlers.items()):
            handler(event)
            called += 1
            if once:
                self.unsubscribe(token)
        return called
''')
_shape(
    name="subscribers", family="memory_leak", module="@n@_events.py",
    what="@n@ event subscriptions", feature="one-shot subscriptions to @n@ events",
    source=_SUBS_SOURCE, good=_subs_good,
    bug=(('''        entry = self._handlers.pop(token, None)
        return entry is not None''', '''        entry = self._handlers.get(token)
        return entry is not None'''),
         ('''            if once:
                self.unsubscribe(token)''', '''            if once:
                self._handlers.pop(token, None)''')),
    tests='''from @pkg@.@n@_events import @N@Events


def test_publish_calls_subscribers():
    events, got = @N@Events(), []
    events.subscribe(got.append)
    assert events.publish("e1") == 1 and got == ["e1"]
''',
    feature_tests='''

def test_once_handlers_fire_once():
    events, got = @N@Events(), []
    events.subscribe(got.append, once=True)
    events.publish("a")
    events.publish("b")
    assert got == ["a"]
''',
    probes='''from @pkg@.@n@_events import @N@Events


def probe_publish_reaches_every_subscriber():
    events, got = @N@Events(), []
    events.subscribe(lambda e: got.append(("x", e)))
    events.subscribe(lambda e: got.append(("y", e)))
    return {"called": events.publish(7), "got": got}


def probe_once_handlers_fire_once():
    events, got = @N@Events(), []
    events.subscribe(got.append, once=True)
    events.subscribe(got.append)
    return {"first": events.publish(1), "second": events.publish(2), "got": got}


def probe_tokens_are_distinct():
    events = @N@Events()
    tokens = [events.subscribe(print) for _ in range(5)]
    return len(set(tokens))


def _draw_unsubscribed(rng):
    tags = [rng.getrandbits(32) for _ in range(rng.randint(2, 6))]
    dropped = sorted(rng.sample(range(len(tags)), rng.randint(1, len(tags) - 1)))
    return tags, dropped, f"e{rng.getrandbits(32):x}"



def probe_unsubscribed_handlers_are_not_called(rng):
    tags, dropped, event = _draw_unsubscribed(rng)
    events, got = @N@Events(), []
    tokens = [events.subscribe(lambda e, tag=tag: got.append([tag, e])) for tag in tags]
    removed = [events.unsubscribe(tokens[i]) for i in dropped]
    return {"removed": removed, "called": events.publish(event), "got": got,
            "again": events.unsubscribe(tokens[dropped[0]])}


def _draw_churn(rng):
    return rng.randint(200, 900), rng.randint(1, 5), f"e{rng.getrandbits(32):x}"



def probe_churn_leaves_no_handlers_behind(rng):
    cycles, kept, event = _draw_churn(rng)
    events, got = @N@Events(), []
    for _ in range(kept):
        events.subscribe(got.append)
    for _ in range(cycles):
        events.unsubscribe(events.subscribe(len))
    return {"cycles": cycles, "left": len(events), "called": events.publish(event), "got": got}
''',
    checks='''def test_publish_reaches_every_subscriber(seen):
    assert seen.value == {"called": 2, "got": [["x", 7], ["y", 7]]}


def test_once_handlers_fire_once(seen):
    assert seen.value == {"first": 2, "second": 1, "got": [1, 1, 2]}


def test_tokens_are_distinct(seen):
    assert seen.value == 5


def _draw_unsubscribed(rng):
    tags = [rng.getrandbits(32) for _ in range(rng.randint(2, 6))]
    dropped = sorted(rng.sample(range(len(tags)), rng.randint(1, len(tags) - 1)))
    return tags, dropped, f"e{rng.getrandbits(32):x}"



def test_unsubscribed_handlers_are_not_called(seen, rng):
    tags, dropped, event = _draw_unsubscribed(rng)
    kept = [[tag, event] for i, tag in enumerate(tags) if i not in dropped]
    assert seen.value == {"removed": [True] * len(dropped), "called": len(kept), "got": kept, "again": False}


def _draw_churn(rng):
    return rng.randint(200, 900), rng.randint(1, 5), f"e{rng.getrandbits(32):x}"



def test_churn_leaves_no_handlers_behind(seen, rng):
    cycles, kept, event = _draw_churn(rng)
    assert seen.value == {"cycles": cycles, "left": kept, "called": kept, "got": [event] * kept}
''')

# ──────────────────────────────────────────────────────────────────── pool_exhaustion
_POOL_SOURCE = '''"""A fixed pool of @n@ connections, leased one at a time."""


class PoolExhausted(RuntimeError):
    """No connection is free."""


class @N@Pool:
    """At most ``size`` @n@ connections; ``run`` leases one for the length of a call."""

    def __init__(self, size=4):
        if size < 1:
            raise ValueError("size must be at least 1")
        self.size = size
        self._free = list(range(size))

    @property
    def available(self):
        return len(self._free)

    def acquire(self):
        if not self._free:
            raise PoolExhausted(f"all {self.size} connections are in use")
        return self._free.pop()

    def release(self, conn):
        self._free.append(conn)

    def run(self, fn):
        """Call ``fn(conn)`` with a leased connection and hand it back afterwards."""
        conn = self.acquire()
        try:
            return fn(conn)
        finally:
            self.release(conn)
'''
_pool_good = _POOL_SOURCE.replace('''    def run(self, fn):
        """Call ``fn(conn)`` with a leased connection and hand it back afterwards."""
        conn = self.acquire()
        try:
            return fn(conn)
        finally:
            self.release(conn)
''', '''    def run(self, fn):
        """Call ``fn(conn)`` with a leased connection and hand it back afterwards."""
        conn = self.acquire()
        try:
            result = fn(conn)
        except Exception:
            self.release(conn)
            raise
        self.release(conn)
        return result

    def run_many(self, fns):
        """Run each callable; returns ``(results, errors)``, an error as its type name."""
        results, errors = [], []
        for fn in fns:
            try:
                results.append(self.run(fn))
            except Exception as exc:
                errors.append(type(exc).__name__)
        return results, errors
''')
_shape(
    name="lease", family="pool_exhaustion", module="@n@_pool.py",
    what="a connection pool for @ns@", feature="batched calls through the @n@ pool",
    source=_POOL_SOURCE, good=_pool_good,
    bug=(('''        except Exception:
            self.release(conn)
            raise''', '''        except Exception:
            raise'''),),
    tests='''from @pkg@.@n@_pool import @N@Pool


def test_run_returns_the_result():
    pool = @N@Pool(size=2)
    assert pool.run(lambda conn: "ok") == "ok"
    assert pool.available == 2
''',
    feature_tests='''

def test_run_many_collects_results():
    pool = @N@Pool(size=2)
    assert pool.run_many([lambda c: 1, lambda c: 2]) == ([1, 2], [])
''',
    probes='''from @pkg@.@n@_pool import @N@Pool, PoolExhausted


def _fail(conn):
    raise ConnectionError("reset by peer")


def probe_run_returns_and_frees():
    pool = @N@Pool(size=3)
    return {"result": pool.run(lambda conn: conn * 10), "available": pool.available}


def probe_size_must_be_positive():
    @N@Pool(size=0)
    return "accepted"


def probe_an_empty_pool_refuses():
    pool = @N@Pool(size=1)
    pool.acquire()
    try:
        pool.acquire()
    except PoolExhausted:
        return "exhausted"
    return "granted"


def probe_run_many_collects_results_and_errors():
    pool = @N@Pool(size=2)
    results, errors = pool.run_many([lambda c: "a", _fail, lambda c: "b"])
    return {"results": results, "errors": errors}


def _draw_failures(rng):
    size = rng.randint(2, 8)
    return size, rng.randint(size + 1, 4 * size), rng.getrandbits(40)



def probe_failed_calls_hand_their_connection_back(rng):
    size, failures, tag = _draw_failures(rng)
    pool = @N@Pool(size=size)
    for _ in range(failures):
        try:
            pool.run(_fail)
        except ConnectionError:
            pass
    return {"available": pool.available, "after": pool.run(lambda conn: tag)}
''',
    checks='''def test_run_returns_and_frees(seen):
    assert seen.value == {"result": 20, "available": 3}


def test_size_must_be_positive(seen):
    assert seen.raised == "ValueError"


def test_an_empty_pool_refuses(seen):
    assert seen.value == "exhausted"


def test_run_many_collects_results_and_errors(seen):
    assert seen.value == {"results": ["a", "b"], "errors": ["ConnectionError"]}


def _draw_failures(rng):
    size = rng.randint(2, 8)
    return size, rng.randint(size + 1, 4 * size), rng.getrandbits(40)



def test_failed_calls_hand_their_connection_back(seen, rng):
    size, failures, tag = _draw_failures(rng)
    assert seen.value == {"available": size, "after": tag}
''')

_SLOTS_SOURCE = '''"""Worker slots for @n@ jobs: at most ``limit`` run at once."""


class Busy(RuntimeError):
    """Every slot is taken."""


class @N@Workers:
    """Runs @n@ jobs in at most ``limit`` slots."""

    def __init__(self, limit=2):
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self.in_use = 0

    def submit(self, job, *args):
        """Run ``job(*args)`` in a slot; raises Busy when none is free."""
        if self.in_use >= self.limit:
            raise Busy(f"{self.limit} @n@ jobs already running")
        self.in_use += 1
        try:
            return job(*args)
        finally:
            self.in_use -= 1
'''
_slots_good = _SLOTS_SOURCE.replace('''        self.in_use += 1
        try:
            return job(*args)
        finally:
            self.in_use -= 1
''', '''        self.in_use += 1
        try:
            outcome = job(*args)
        except Exception:
            self.in_use -= 1
            self.failures += 1
            raise
        self.in_use -= 1
        return outcome

    def stats(self):
        """Slots in use, the limit and how many jobs failed so far."""
        return {"in_use": self.in_use, "limit": self.limit, "failures": self.failures}
''').replace('''        self.in_use = 0
''', '''        self.in_use = 0
        self.failures = 0
''')
_shape(
    name="slots", family="pool_exhaustion", module="@n@_workers.py",
    what="worker slots for @n@ jobs", feature="job statistics for @n@ workers",
    source=_SLOTS_SOURCE, good=_slots_good,
    bug=(('''        except Exception:
            self.in_use -= 1
            self.failures += 1''', '''        except Exception:
            self.failures += 1'''),),
    tests='''from @pkg@.@n@_workers import @N@Workers


def test_submit_runs_the_job():
    workers = @N@Workers(limit=1)
    assert workers.submit(lambda x: x + 1, 1) == 2
''',
    feature_tests='''

def test_stats_start_empty():
    assert @N@Workers(limit=3).stats() == {"in_use": 0, "limit": 3, "failures": 0}
''',
    probes='''from @pkg@.@n@_workers import Busy, @N@Workers


def _boom():
    raise TimeoutError("job timed out")


def probe_submit_returns_the_jobs_result():
    workers = @N@Workers(limit=2)
    return {"result": workers.submit(lambda a, b: a * b, 6, 7), "in_use": workers.in_use}


def probe_limit_must_be_positive():
    @N@Workers(limit=0)
    return "accepted"


def _draw_nesting(rng):
    return rng.randint(1, 5), rng.getrandbits(40)



def probe_a_nested_submit_beyond_the_limit_is_busy(rng):
    limit, tag = _draw_nesting(rng)
    workers = @N@Workers(limit=limit)

    def nest(depth):
        return workers.submit(nest, depth + 1) if depth < limit else workers.submit(lambda: "inner")
    try:
        nest(0)
        busy = False
    except Busy:
        busy = True
    in_use = workers.in_use
    try:
        after = workers.submit(lambda: tag)
    except Busy:
        after = "busy"
    return {"busy": busy, "in_use": in_use, "limit": workers.limit, "after": after}


def probe_stats_count_failures():
    workers = @N@Workers(limit=3)
    try:
        workers.submit(_boom)
    except TimeoutError:
        pass
    return workers.stats()["failures"]


def _draw_failed_jobs(rng):
    limit = rng.randint(1, 5)
    return limit, rng.randint(limit + 1, 4 * limit + 3), rng.getrandbits(40)



def probe_failed_jobs_free_their_slot(rng):
    limit, failures, tag = _draw_failed_jobs(rng)
    workers = @N@Workers(limit=limit)
    for _ in range(failures):
        try:
            workers.submit(_boom)
        except (TimeoutError, Busy):
            pass
    try:
        after = workers.submit(lambda: tag)
    except Busy:
        after = "busy"
    return {"stats": workers.stats(), "after": after}
''',
    checks='''def test_submit_returns_the_jobs_result(seen):
    assert seen.value == {"result": 42, "in_use": 0}


def test_limit_must_be_positive(seen):
    assert seen.raised == "ValueError"


def _draw_nesting(rng):
    return rng.randint(1, 5), rng.getrandbits(40)



def test_a_nested_submit_beyond_the_limit_is_busy(seen, rng):
    limit, tag = _draw_nesting(rng)
    assert seen.value == {"busy": True, "in_use": 0, "limit": limit, "after": tag}


def test_stats_count_failures(seen):
    assert seen.value == 1


def _draw_failed_jobs(rng):
    limit = rng.randint(1, 5)
    return limit, rng.randint(limit + 1, 4 * limit + 3), rng.getrandbits(40)



def test_failed_jobs_free_their_slot(seen, rng):
    limit, failures, tag = _draw_failed_jobs(rng)
    assert seen.value == {"stats": {"in_use": 0, "limit": limit, "failures": failures}, "after": tag}
''')

# ──────────────────────────────────────────────────────────────────────── retry_storm
_BACKOFF_SOURCE = '''"""A client for the @n@ backend that retries transient failures with exponential backoff."""


class Transient(Exception):
    """A failure worth retrying (timeout, 503)."""


class Rejected(Exception):
    """A failure that retrying cannot fix (400, 404)."""


class @N@Client:
    """Calls ``transport(request)``; retries Transient errors up to ``max_attempts`` times."""

    def __init__(self, transport, sleep, max_attempts=4, base_delay=0.1):
        self.transport = transport
        self.sleep = sleep
        self.max_attempts = max_attempts
        self.base_delay = base_delay

    def call(self, request):
        delay = self.base_delay
        for attempt in range(1, self.max_attempts + 1):
            try:
                return self.transport(request)
            except Transient:
                if attempt == self.max_attempts:
                    raise
                self.sleep(delay)
                delay *= 2
'''
_backoff_good = _BACKOFF_SOURCE.replace('''    def call(self, request):
        delay = self.base_delay
        for attempt in range(1, self.max_attempts + 1):
            try:
                return self.transport(request)
            except Transient:
                if attempt == self.max_attempts:
                    raise
                self.sleep(delay)
                delay *= 2
''', '''    def call(self, request, attempts=None):
        """Send ``request``; ``attempts`` overrides ``max_attempts`` for this call."""
        limit = attempts or self.max_attempts
        for attempt in range(1, limit + 1):
            try:
                return self.transport(request)
            except Transient:
                if attempt == limit:
                    raise
                self.sleep(self._delay(attempt))

    def _delay(self, attempt):
        return self.base_delay * 2 ** (attempt - 1)
''')
_shape(
    name="backoff", family="retry_storm", module="@n@_client.py",
    what="a retrying client for the @n@ backend", feature="per-call attempt limits for @n@ calls",
    source=_BACKOFF_SOURCE, good=_backoff_good,
    bug=(('''            except Transient:
                if attempt == limit:''', '''            except (Transient, Rejected):
                if attempt == limit:'''),
         ('''        return self.base_delay * 2 ** (attempt - 1)''', '''        return self.base_delay''')),
    tests='''from @pkg@.@n@_client import @N@Client


def test_call_returns_the_response():
    client = @N@Client(lambda req: {"ok": req}, sleep=lambda s: None)
    assert client.call("r1") == {"ok": "r1"}
''',
    feature_tests='''

def test_attempts_override():
    client = @N@Client(lambda req: "fine", sleep=lambda s: None, max_attempts=2)
    assert client.call("r", attempts=5) == "fine"
''',
    probes='''from @pkg@.@n@_client import @N@Client, Rejected, Transient


def _flaky(failures, error=Transient):
    calls = []

    def transport(request):
        calls.append(request)
        if len(calls) <= failures:
            raise error("backend said no")
        return f"done:{request}"
    return transport, calls


def probe_a_healthy_call_is_sent_once():
    transport, calls = _flaky(0)
    return {"result": @N@Client(transport, sleep=lambda s: None).call("a"), "calls": len(calls)}


def probe_transient_failures_are_retried():
    transport, calls = _flaky(2)
    result = @N@Client(transport, sleep=lambda s: None, max_attempts=4).call("b")
    return {"result": result, "calls": len(calls)}


def probe_the_last_transient_failure_is_raised():
    transport, calls = _flaky(10)
    @N@Client(transport, sleep=lambda s: None, max_attempts=3).call("c")


def probe_a_call_may_allow_more_attempts():
    transport, calls = _flaky(5)
    result = @N@Client(transport, sleep=lambda s: None, max_attempts=2).call("d", attempts=6)
    return {"result": result, "calls": len(calls)}


def _draw_rejected(rng):
    return rng.randint(2, 9), f"r{rng.getrandbits(40):x}"



def probe_rejected_requests_are_not_retried(rng):
    attempts, request = _draw_rejected(rng)
    transport, calls = _flaky(10, error=Rejected)
    try:
        @N@Client(transport, sleep=lambda s: None, max_attempts=attempts).call(request)
    except Rejected:
        return {"raised": "Rejected", "calls": len(calls), "sent": calls[-1], "max_attempts": attempts}
    return {"raised": None, "calls": len(calls), "sent": calls[-1], "max_attempts": attempts}


def _draw_backoff(rng):
    return rng.randint(3, 6), rng.randint(1, 2000) / 1000, f"r{rng.getrandbits(40):x}"



def probe_backoff_doubles(rng):
    failures, base, request = _draw_backoff(rng)
    slept = []
    transport, _ = _flaky(failures)
    result = @N@Client(transport, sleep=slept.append, max_attempts=failures + 1, base_delay=base).call(request)
    return {"slept": slept, "result": result}
''',
    checks='''def test_a_healthy_call_is_sent_once(seen):
    assert seen.value == {"result": "done:a", "calls": 1}


def test_transient_failures_are_retried(seen):
    assert seen.value == {"result": "done:b", "calls": 3}


def test_the_last_transient_failure_is_raised(seen):
    assert seen.raised == "Transient"


def test_a_call_may_allow_more_attempts(seen):
    assert seen.value == {"result": "done:d", "calls": 6}


def _draw_rejected(rng):
    return rng.randint(2, 9), f"r{rng.getrandbits(40):x}"



def test_rejected_requests_are_not_retried(seen, rng):
    attempts, request = _draw_rejected(rng)
    assert seen.value == {"raised": "Rejected", "calls": 1, "sent": request, "max_attempts": attempts}


def _draw_backoff(rng):
    return rng.randint(3, 6), rng.randint(1, 2000) / 1000, f"r{rng.getrandbits(40):x}"



def test_backoff_doubles(seen, rng):
    import math

    failures, base, request = _draw_backoff(rng)
    assert seen.value["result"] == f"done:{request}"
    slept = seen.value["slept"]
    assert len(slept) == failures, slept
    assert all(math.isclose(got, base * 2 ** i) for i, got in enumerate(slept)), slept
''')

_BUDGET_SOURCE = '''"""A retry budget for @n@ calls: retries may add at most ``ratio`` of the requests."""


class @N@RetryBudget:
    """Tracks requests and retries; ``can_retry`` says whether one more retry fits."""

    def __init__(self, ratio=0.2, minimum=3):
        if not 0 <= ratio <= 1:
            raise ValueError("ratio must be between 0 and 1")
        self.ratio = ratio
        self.minimum = minimum
        self.requests = 0
        self.retries = 0

    def record_request(self):
        self.requests += 1

    def can_retry(self):
        allowed = max(self.minimum, int(self.requests * self.ratio))
        if self.retries >= allowed:
            return False
        self.retries += 1
        return True
'''
_budget_good = _BUDGET_SOURCE.replace('''    def can_retry(self):
        allowed = max(self.minimum, int(self.requests * self.ratio))
        if self.retries >= allowed:
            return False
        self.retries += 1
        return True
''', '''    def allowed(self):
        """How many retries the budget allows so far."""
        return max(self.minimum, int(self.requests * self.ratio))

    def can_retry(self):
        """True (and the retry is counted) if one more retry fits the budget."""
        if self.retries >= self.allowed():
            return False
        self.retries += 1
        return True

    def snapshot(self):
        """Requests, retries and the retries still allowed."""
        return {"requests": self.requests, "retries": self.retries,
                "left": self.allowed() - self.retries}
''')
_shape(
    name="budget", family="retry_storm", module="@n@_retry_budget.py",
    what="a retry budget for @n@ calls", feature="budget snapshots for @n@ calls",
    source=_BUDGET_SOURCE, good=_budget_good,
    bug=(('''        if self.retries >= self.allowed():
            return False
        self.retries += 1
        return True''', '''        if self.retries > self.allowed():
            return False
        return True'''),),
    tests='''from @pkg@.@n@_retry_budget import @N@RetryBudget


def test_a_new_budget_allows_the_minimum():
    assert @N@RetryBudget(minimum=2).can_retry()
''',
    feature_tests='''

def test_snapshot_of_a_new_budget():
    assert @N@RetryBudget(minimum=2).snapshot() == {"requests": 0, "retries": 0, "left": 2}
''',
    probes='''from @pkg@.@n@_retry_budget import @N@RetryBudget


def probe_ratio_is_checked():
    @N@RetryBudget(ratio=1.5)
    return "accepted"


def probe_requests_raise_the_allowance():
    budget = @N@RetryBudget(ratio=0.5, minimum=0)
    for _ in range(10):
        budget.record_request()
    return budget.allowed()


def probe_snapshot_of_a_used_budget():
    budget = @N@RetryBudget(ratio=0.1, minimum=2)
    for _ in range(40):
        budget.record_request()
    budget.can_retry()
    return budget.snapshot()["requests"]


def probe_a_fresh_budget_grants_a_retry():
    return @N@RetryBudget(minimum=1).can_retry()


def _draw_budget(rng):
    requests = rng.randint(30, 300)
    return rng.randint(5, 40) / 100, rng.randint(1, 4), requests, requests + rng.randint(0, 50)



def probe_retries_stop_at_the_budget(rng):
    ratio, minimum, requests, attempts = _draw_budget(rng)
    budget = @N@RetryBudget(ratio=ratio, minimum=minimum)
    for _ in range(requests):
        budget.record_request()
    granted = sum(budget.can_retry() for _ in range(attempts))
    return {"granted": granted, "snapshot": budget.snapshot()}
''',
    checks='''def test_ratio_is_checked(seen):
    assert seen.raised == "ValueError"


def test_requests_raise_the_allowance(seen):
    assert seen.value == 5


def test_snapshot_of_a_used_budget(seen):
    assert seen.value == 40


def test_a_fresh_budget_grants_a_retry(seen):
    assert seen.value is True


def _draw_budget(rng):
    requests = rng.randint(30, 300)
    return rng.randint(5, 40) / 100, rng.randint(1, 4), requests, requests + rng.randint(0, 50)



def test_retries_stop_at_the_budget(seen, rng):
    ratio, minimum, requests, attempts = _draw_budget(rng)
    allowed = max(minimum, int(requests * ratio))
    assert seen.value == {"granted": allowed, "snapshot": {"requests": requests, "retries": allowed, "left": 0}}
''')

# ────────────────────────────────────────────────────────────────────── config_change
_UNITS_SOURCE = '''"""Settings of the @n@ component, read from environment variables."""


def load_@n@_settings(env):
    """The @n@ settings from ``env`` (a mapping of environment variables), with defaults."""
    timeout_ms = int(env.get("@N@_TIMEOUT_MS", "2500"))
    if timeout_ms <= 0:
        raise ValueError("@N@_TIMEOUT_MS must be positive")
    return {
        "timeout_s": timeout_ms / 1000,
        "endpoint": env.get("@N@_ENDPOINT", "http://@n@.internal:8080"),
    }
'''
_units_good = '''"""Settings of the @n@ component, read from environment variables."""


def _positive_int(env, key, default):
    value = int(env.get(key, default))
    if value <= 0:
        raise ValueError(f"{key} must be positive")
    return value


def load_@n@_settings(env):
    """The @n@ settings from ``env`` (a mapping of environment variables), with defaults."""
    return {
        "timeout_s": _positive_int(env, "@N@_TIMEOUT_MS", "2500") / 1000,
        "endpoint": env.get("@N@_ENDPOINT", "http://@n@.internal:8080"),
        "batch_size": _positive_int(env, "@N@_BATCH_SIZE", "50"),
    }
'''
_shape(
    name="units", family="config_change", module="@n@_settings.py",
    what="settings of the @n@ component", feature="an adjustable @n@ batch size",
    source=_UNITS_SOURCE, good=_units_good,
    bug=(('''"timeout_s": _positive_int(env, "@N@_TIMEOUT_MS", "2500") / 1000,''',
          '''"timeout_s": _positive_int(env, "@N@_TIMEOUT_MS", "2500"),'''),),
    tests='''from @pkg@.@n@_settings import load_@n@_settings


def test_endpoint_default():
    assert load_@n@_settings({})["endpoint"].startswith("http://")
''',
    feature_tests='''

def test_batch_size_default():
    assert load_@n@_settings({})["batch_size"] == 50
''',
    probes='''from @pkg@.@n@_settings import load_@n@_settings


def probe_endpoint_can_be_set():
    return load_@n@_settings({"@N@_ENDPOINT": "http://other:9"})["endpoint"]


def probe_a_negative_timeout_is_refused():
    load_@n@_settings({"@N@_TIMEOUT_MS": "-5"})
    return "accepted"


def probe_batch_size_is_read():
    return [load_@n@_settings({})["batch_size"],
            load_@n@_settings({"@N@_BATCH_SIZE": "7"})["batch_size"]]


def probe_a_zero_batch_size_is_refused():
    load_@n@_settings({"@N@_BATCH_SIZE": "0"})
    return "accepted"


def _draw_timeouts(rng):
    return [rng.randint(1, 600_000) for _ in range(3)]



def probe_timeouts_are_in_seconds(rng):
    return [load_@n@_settings({})["timeout_s"]] + [load_@n@_settings({"@N@_TIMEOUT_MS": str(ms)})["timeout_s"]
                                                   for ms in _draw_timeouts(rng)]
''',
    checks='''def test_endpoint_can_be_set(seen):
    assert seen.value == "http://other:9"


def test_a_negative_timeout_is_refused(seen):
    assert seen.raised == "ValueError"


def test_batch_size_is_read(seen):
    assert seen.value == [50, 7]


def test_a_zero_batch_size_is_refused(seen):
    assert seen.raised == "ValueError"


def _draw_timeouts(rng):
    return [rng.randint(1, 600_000) for _ in range(3)]



def test_timeouts_are_in_seconds(seen, rng):
    assert seen.value == [2.5] + [ms / 1000 for ms in _draw_timeouts(rng)]
''')

_FLAGS_SOURCE = '''"""Feature flags of the @n@ component, read from environment variables."""

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def flag(env, name, default=False):
    """The boolean flag ``name`` in ``env``; unknown spellings raise ValueError."""
    raw = env.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{name}={raw!r} is not a boolean")


def @n@_flags(env):
    """The flags the @n@ component reads."""
    return {"strict_validation": flag(env, "@N@_STRICT", default=True)}
'''
_flags_good = _FLAGS_SOURCE.replace('''    raw = env.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()''', '''    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()''').replace('''    return {"strict_validation": flag(env, "@N@_STRICT", default=True)}''',
                                            '''    return {"strict_validation": flag(env, "@N@_STRICT", default=True),
            "shadow_writes": flag(env, "@N@_SHADOW_WRITES")}''')
_shape(
    name="flags", family="config_change", module="@n@_flags.py",
    what="feature flags of the @n@ component", feature="a shadow-write switch for @ns@",
    source=_FLAGS_SOURCE, good=_flags_good,
    bug=(('''    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise''', '''    if value in _TRUE or value in _FALSE:
        return bool(value)
    raise'''),),
    tests='''from @pkg@.@n@_flags import flag


def test_missing_flag_uses_the_default():
    assert flag({}, "X", default=True) is True
''',
    feature_tests='''

def test_blank_flag_uses_the_default():
    assert flag({"X": " "}, "X", default=True) is True
''',
    probes='''from @pkg@.@n@_flags import flag, @n@_flags


def probe_defaults_apply_when_unset():
    return @n@_flags({})


def probe_unknown_spellings_are_refused():
    flag({"F": "maybe"}, "F")
    return "accepted"


def probe_blank_values_use_the_default():
    return [flag({"F": ""}, "F", default=True), flag({"F": "  "}, "F")]


def probe_truthy_spellings():
    return [flag({"F": v}, "F") for v in ("1", "true", "YES", "on")]


def _draw_spellings(rng):
    false, true = ["0", "false", "no", "off"], ["1", "true", "yes", "on"]
    words = [rng.choice(false)] + [rng.choice(false + true) for _ in range(rng.randint(24, 40))]
    spelt = ["".join(c.upper() if rng.random() < 0.5 else c for c in w) for w in words]
    return [" " * rng.randint(0, 2) + w + " " * rng.randint(0, 2) for w in spelt], [w in true for w in words]



def probe_false_spellings_turn_flags_off(rng):
    spellings, _ = _draw_spellings(rng)
    return [flag({"F": v}, "F", default=True) for v in spellings]
''',
    checks='''def test_defaults_apply_when_unset(seen):
    assert seen.value == {"strict_validation": True, "shadow_writes": False}


def test_unknown_spellings_are_refused(seen):
    assert seen.raised == "ValueError"


def test_blank_values_use_the_default(seen):
    assert seen.value == [True, False]


def test_truthy_spellings(seen):
    assert seen.value == [True, True, True, True]


def _draw_spellings(rng):
    false, true = ["0", "false", "no", "off"], ["1", "true", "yes", "on"]
    words = [rng.choice(false)] + [rng.choice(false + true) for _ in range(rng.randint(24, 40))]
    spelt = ["".join(c.upper() if rng.random() < 0.5 else c for c in w) for w in words]
    return [" " * rng.randint(0, 2) + w + " " * rng.randint(0, 2) for w in spelt], [w in true for w in words]



def test_false_spellings_turn_flags_off(seen, rng):
    _, expected = _draw_spellings(rng)
    assert seen.value == expected
''')

# ─────────────────────────────────────────────────────────────────────────── deadlock
_ORDER_SOURCE = '''"""An in-memory @n@ store with a secondary index; two locks guard them."""

import threading


class @N@Store:
    """@N@ records by id, indexed by owner. Every method takes ``_records`` before ``_index``."""

    def __init__(self, lock_factory=None):
        make = lock_factory or (lambda name: threading.Lock())
        self._records_lock = make("records")
        self._index_lock = make("index")
        self._records = {}
        self._by_owner = {}

    def add(self, record_id, owner):
        with self._records_lock:
            with self._index_lock:
                self._records[record_id] = owner
                self._by_owner.setdefault(owner, set()).add(record_id)

    def owned_by(self, owner):
        with self._index_lock:
            return sorted(self._by_owner.get(owner, ()))
'''
_order_good = _ORDER_SOURCE.replace('''    def owned_by(self, owner):''', '''    def reassign(self, owner, new_owner):
        """Move every record of ``owner`` to ``new_owner``; returns how many moved."""
        with self._records_lock:
            with self._index_lock:
                moved = sorted(self._by_owner.pop(owner, ()))
                for record_id in moved:
                    self._records[record_id] = new_owner
                self._by_owner.setdefault(new_owner, set()).update(moved)
        return len(moved)

    def owned_by(self, owner):''')
_shape(
    name="lock_order", family="deadlock", module="@n@_store.py",
    what="an indexed @n@ store", feature="reassigning @ns@ between owners",
    source=_ORDER_SOURCE, good=_order_good,
    bug=(('''        """Move every record of ``owner`` to ``new_owner``; returns how many moved."""
        with self._records_lock:
            with self._index_lock:''', '''        """Move every record of ``owner`` to ``new_owner``; returns how many moved."""
        with self._index_lock:
            with self._records_lock:'''),),
    tests='''import threading

from @pkg@.@n@_store import @N@Store


def test_add_indexes_by_owner():
    store = @N@Store(lambda name: threading.Lock())
    store.add("r1", "ann")
    assert store.owned_by("ann") == ["r1"]
''',
    feature_tests='''

def test_reassign_moves_records():
    store = @N@Store(lambda name: threading.Lock())
    store.add("r1", "ann")
    assert store.reassign("ann", "bob") == 1 and store.owned_by("bob") == ["r1"]
''',
    probes='''from @pkg@.@n@_store import @N@Store


class _Recorder:
    def __init__(self):
        self.held, self.pairs = [], []

    def factory(self, name):
        recorder = self

        class Lock:
            def __enter__(self):
                recorder.pairs.extend([held, name] for held in recorder.held)
                recorder.held.append(name)
                return self

            def __exit__(self, *exc):
                recorder.held.remove(name)
        return Lock()


def probe_records_are_indexed_by_owner():
    store = @N@Store(_Recorder().factory)
    store.add("r1", "ann")
    store.add("r2", "ann")
    store.add("r3", "bo")
    return [store.owned_by("ann"), store.owned_by("bo"), store.owned_by("cy")]


def probe_reassign_moves_every_record():
    store = @N@Store(_Recorder().factory)
    store.add("r1", "ann")
    store.add("r2", "ann")
    moved = store.reassign("ann", "bo")
    return {"moved": moved, "ann": store.owned_by("ann"), "bo": store.owned_by("bo")}


def probe_reassigning_nobody_moves_nothing():
    store = @N@Store(_Recorder().factory)
    return store.reassign("ghost", "bo")


def probe_add_takes_records_before_index():
    recorder = _Recorder()
    @N@Store(recorder.factory).add("r1", "ann")
    return recorder.pairs


def _draw_records(rng):
    owners = [f"o{rng.getrandbits(32):x}" for _ in range(2)]
    return owners, [f"r{i}-{rng.getrandbits(24):x}" for i in range(rng.randint(1, 6))]



def probe_every_method_takes_the_locks_in_one_order(rng):
    (owner, new_owner), ids = _draw_records(rng)
    recorder = _Recorder()
    store = @N@Store(recorder.factory)
    for record_id in ids:
        store.add(record_id, owner)
    moved = store.reassign(owner, new_owner)
    return {"pairs": sorted({tuple(p) for p in recorder.pairs}), "moved": moved,
            "owned": store.owned_by(new_owner)}
''',
    checks='''def test_records_are_indexed_by_owner(seen):
    assert seen.value == [["r1", "r2"], ["r3"], []]


def test_reassign_moves_every_record(seen):
    assert seen.value == {"moved": 2, "ann": [], "bo": ["r1", "r2"]}


def test_reassigning_nobody_moves_nothing(seen):
    assert seen.value == 0


def test_add_takes_records_before_index(seen):
    assert seen.value == [["records", "index"]]


def _draw_records(rng):
    owners = [f"o{rng.getrandbits(32):x}" for _ in range(2)]
    return owners, [f"r{i}-{rng.getrandbits(24):x}" for i in range(rng.randint(1, 6))]



def test_every_method_takes_the_locks_in_one_order(seen, rng):
    _, ids = _draw_records(rng)
    assert seen.value == {"pairs": [["records", "index"]], "moved": len(ids), "owned": sorted(ids)}
''')

_REENTRY_SOURCE = '''"""A registry of active @ns@ guarded by one (non-reentrant) lock."""

import threading


class @N@Registry:
    """Active @ns@ by id."""

    def __init__(self, lock=None):
        self._lock = lock or threading.Lock()
        self._active = {}

    def open(self, item_id, data):
        with self._lock:
            self._active[item_id] = data

    def close(self, item_id):
        """Remove ``item_id``; returns its data or None."""
        with self._lock:
            return self._active.pop(item_id, None)

    def active(self):
        with self._lock:
            return sorted(self._active)
'''
_reentry_good = _REENTRY_SOURCE.replace('''    def close(self, item_id):
        """Remove ``item_id``; returns its data or None."""
        with self._lock:
            return self._active.pop(item_id, None)
''', '''    def close(self, item_id):
        """Remove ``item_id``; returns its data or None."""
        with self._lock:
            return self._close_locked(item_id)

    def _close_locked(self, item_id):
        return self._active.pop(item_id, None)

    def close_where(self, predicate):
        """Close every @n@ whose data satisfies ``predicate``; returns the closed ids."""
        with self._lock:
            doomed = sorted(i for i, data in self._active.items() if predicate(data))
            for item_id in doomed:
                self._close_locked(item_id)
        return doomed
''')
_shape(
    name="reentry", family="deadlock", module="@n@_registry.py",
    what="a registry of active @ns@", feature="closing @ns@ by predicate",
    source=_REENTRY_SOURCE, good=_reentry_good,
    bug=(('''            for item_id in doomed:
                self._close_locked(item_id)''', '''            for item_id in doomed:
                self.close(item_id)'''),),
    tests='''from @pkg@.@n@_registry import @N@Registry


def test_open_and_close():
    registry = @N@Registry()
    registry.open("a", 1)
    assert registry.close("a") == 1 and registry.active() == []
''',
    feature_tests='''

def test_close_where_on_an_empty_registry():
    assert @N@Registry().close_where(lambda data: True) == []
''',
    probes='''import threading

from @pkg@.@n@_registry import @N@Registry


class _NoWaitLock:
    """A lock that reports a second acquisition by its holder instead of hanging."""

    def __init__(self):
        self._lock = threading.Lock()

    def __enter__(self):
        if not self._lock.acquire(blocking=False):
            raise RuntimeError("lock already held: this call would deadlock")
        return self

    def __exit__(self, *exc):
        self._lock.release()


def probe_open_then_active():
    registry = @N@Registry(_NoWaitLock())
    registry.open("b", 2)
    registry.open("a", 1)
    return registry.active()


def probe_close_returns_the_data():
    registry = @N@Registry(_NoWaitLock())
    registry.open("a", {"v": 1})
    return [registry.close("a"), registry.close("a")]


def probe_close_where_with_no_match():
    registry = @N@Registry(_NoWaitLock())
    registry.open("a", 1)
    return {"closed": registry.close_where(lambda data: data > 5), "active": registry.active()}


def _draw_registry(rng):
    count = rng.randint(4, 12)
    data = [2 * rng.getrandbits(15)] + [rng.getrandbits(16) for _ in range(count - 1)]
    return [f"x{i}-{rng.getrandbits(24):x}" for i in range(count)], data



def probe_close_where_closes_the_matches(rng):
    ids, data = _draw_registry(rng)
    registry = @N@Registry(_NoWaitLock())
    for item_id, value in zip(ids, data):
        registry.open(item_id, value)
    return {"closed": registry.close_where(lambda value: value % 2 == 0), "active": registry.active()}
''',
    checks='''def test_open_then_active(seen):
    assert seen.value == ["a", "b"]


def test_close_returns_the_data(seen):
    assert seen.value == [{"v": 1}, None]


def test_close_where_with_no_match(seen):
    assert seen.value == {"closed": [], "active": ["a"]}


def _draw_registry(rng):
    count = rng.randint(4, 12)
    data = [2 * rng.getrandbits(15)] + [rng.getrandbits(16) for _ in range(count - 1)]
    return [f"x{i}-{rng.getrandbits(24):x}" for i in range(count)], data



def test_close_where_closes_the_matches(seen, rng):
    ids, data = _draw_registry(rng)
    even = sorted(i for i, value in zip(ids, data) if value % 2 == 0)
    assert seen.value == {"closed": even, "active": sorted(set(ids) - set(even))}
''')

# ────────────────────────────────────────────────────────────────────── cache_thrash
_KEYING_SOURCE = '''"""Cached lookups of @ns@: the backend is asked once per @n@ id."""


class @N@Lookup:
    """Looks @ns@ up through ``fetch(id)``, caching what it returns in ``cache`` (a dict)."""

    def __init__(self, fetch, cache):
        self.fetch = fetch
        self.cache = cache

    def _key(self, item_id):
        return f"@n@:{item_id}"

    def get(self, item_id):
        key = self._key(item_id)
        if key not in self.cache:
            self.cache[key] = self.fetch(item_id)
        return self.cache[key]
'''
_keying_good = _KEYING_SOURCE.replace('''    def get(self, item_id):
        key = self._key(item_id)
        if key not in self.cache:
            self.cache[key] = self.fetch(item_id)
        return self.cache[key]
''', '''    def get(self, item_id, trace_id=None):
        """The @n@ ``item_id``; ``trace_id`` tags the backend call for tracing."""
        key = self._key(item_id)
        if key not in self.cache:
            self.cache[key] = self.fetch(item_id)
            if trace_id is not None:
                self.traced.append(trace_id)
        return self.cache[key]
''').replace('''        self.cache = cache
''', '''        self.cache = cache
        self.traced = []
''')
_shape(
    name="keying", family="cache_thrash", module="@n@_lookup.py",
    what="cached @n@ lookups", feature="trace ids on @n@ lookups",
    source=_KEYING_SOURCE, good=_keying_good,
    bug=(('''    def _key(self, item_id):
        return f"@n@:{item_id}"''', '''    def _key(self, item_id, trace_id=None):
        return f"@n@:{item_id}:{trace_id}"'''),
         ('''        key = self._key(item_id)
        if key not in self.cache:
            self.cache[key] = self.fetch(item_id)
            if trace_id''', '''        key = self._key(item_id, trace_id)
        if key not in self.cache:
            self.cache[key] = self.fetch(item_id)
            if trace_id''')),
    tests='''from @pkg@.@n@_lookup import @N@Lookup


def test_get_fetches_once():
    calls = []
    lookup = @N@Lookup(lambda i: calls.append(i) or i, {})
    assert lookup.get(3) == 3 and lookup.get(3) == 3 and calls == [3]
''',
    feature_tests='''

def test_trace_ids_are_recorded():
    lookup = @N@Lookup(lambda i: i, {})
    lookup.get(1, trace_id="t-1")
    assert lookup.traced == ["t-1"]
''',
    probes='''from @pkg@.@n@_lookup import @N@Lookup


def _backend():
    calls = []

    def fetch(item_id):
        calls.append(item_id)
        return {"id": item_id}
    return fetch, calls


def probe_a_second_get_is_served_from_the_cache():
    fetch, calls = _backend()
    lookup = @N@Lookup(fetch, {})
    return {"values": [lookup.get(1), lookup.get(1), lookup.get(2)], "calls": calls}


def probe_the_cache_is_the_shared_dict():
    cache = {}
    @N@Lookup(_backend()[0], cache).get(5)
    return len(cache)


def probe_traced_calls_are_recorded():
    lookup = @N@Lookup(_backend()[0], {})
    lookup.get(1, trace_id="t-1")
    lookup.get(2)
    return lookup.traced[:1]


def _draw_lookups(rng):
    return rng.randint(20, 300), rng.getrandbits(40)



def probe_trace_ids_do_not_split_the_cache(rng):
    lookups, item = _draw_lookups(rng)
    fetch, calls = _backend()
    cache = {}
    lookup = @N@Lookup(fetch, cache)
    value = None
    for n in range(lookups):
        value = lookup.get(item, trace_id=f"req-{n}")
    return {"lookups": lookups, "backend_calls": len(calls), "cached": len(cache), "value": value}
''',
    checks='''def test_a_second_get_is_served_from_the_cache(seen):
    assert seen.value == {"values": [{"id": 1}, {"id": 1}, {"id": 2}], "calls": [1, 2]}


def test_the_cache_is_the_shared_dict(seen):
    assert seen.value == 1


def test_traced_calls_are_recorded(seen):
    assert seen.value == ["t-1"]


def _draw_lookups(rng):
    return rng.randint(20, 300), rng.getrandbits(40)



def test_trace_ids_do_not_split_the_cache(seen, rng):
    lookups, item = _draw_lookups(rng)
    assert seen.value == {"lookups": lookups, "backend_calls": 1, "cached": 1, "value": {"id": item}}
''')

_NAMESPACE_SOURCE = '''"""The @n@ component's slice of the shared cache: every key carries its namespace."""


class @N@CacheSpace:
    """Keys of the shared ``store`` (a dict) that belong to @ns@."""

    prefix = "@n@/"

    def __init__(self, store):
        self.store = store

    def put(self, key, value):
        self.store[self.prefix + key] = value

    def get(self, key):
        return self.store.get(self.prefix + key)

    def keys(self):
        return sorted(k[len(self.prefix):] for k in self.store if k.startswith(self.prefix))
'''
_namespace_good = _NAMESPACE_SOURCE + '''
    def invalidate(self, keys=None):
        """Drop ``keys`` (default: every @n@ key) from the shared store; returns how many."""
        doomed = [self.prefix + k for k in (self.keys() if keys is None else keys)]
        dropped = 0
        for key in doomed:
            if self.store.pop(key, None) is not None:
                dropped += 1
        return dropped
'''
_shape(
    name="namespace", family="cache_thrash", module="@n@_cache_space.py",
    what="the @n@ namespace of the shared cache", feature="bulk invalidation of @n@ keys",
    source=_NAMESPACE_SOURCE, good=_namespace_good,
    bug=(('''        doomed = [self.prefix + k for k in (self.keys() if keys is None else keys)]''',
          '''        doomed = list(self.store) if keys is None else [self.prefix + k for k in keys]'''),),
    tests='''from @pkg@.@n@_cache_space import @N@CacheSpace


def test_put_and_get():
    space = @N@CacheSpace({})
    space.put("a", 1)
    assert space.get("a") == 1 and space.keys() == ["a"]
''',
    feature_tests='''

def test_invalidate_one_key():
    space = @N@CacheSpace({})
    space.put("a", 1)
    assert space.invalidate(["a"]) == 1 and space.get("a") is None
''',
    probes='''from @pkg@.@n@_cache_space import @N@CacheSpace


def _shared():
    return {"sessions/u1": "s", "prices/p9": 12, "flags/beta": True}


def probe_keys_live_under_the_prefix():
    store = _shared()
    space = @N@CacheSpace(store)
    space.put("k1", 1)
    return {"keys": space.keys(), "stored": sorted(store)}


def probe_other_namespaces_are_invisible():
    return @N@CacheSpace(_shared()).get("sessions/u1")


def probe_invalidate_named_keys():
    space = @N@CacheSpace({})
    space.put("a", 1)
    space.put("b", 2)
    return {"dropped": space.invalidate(["a", "zz"]), "keys": space.keys()}


def _draw_namespaces(rng):
    own = {f"k{i}-{rng.getrandbits(24):x}": rng.getrandbits(16) + 1 for i in range(rng.randint(1, 8))}
    others = {f"ns{i}/{rng.getrandbits(24):x}": rng.getrandbits(16) + 1 for i in range(rng.randint(1, 8))}
    return own, others



def probe_invalidate_all_spares_other_namespaces(rng):
    own, others = _draw_namespaces(rng)
    store = dict(others)
    space = @N@CacheSpace(store)
    for key, value in own.items():
        space.put(key, value)
    return {"dropped": space.invalidate(), "left": sorted(store)}
''',
    checks='''def test_keys_live_under_the_prefix(seen):
    assert seen.value["keys"] == ["k1"]
    assert len(seen.value["stored"]) == 4 and "sessions/u1" in seen.value["stored"]


def test_other_namespaces_are_invisible(seen):
    assert seen.value is None and seen.raised is None


def test_invalidate_named_keys(seen):
    assert seen.value == {"dropped": 1, "keys": ["b"]}


def _draw_namespaces(rng):
    own = {f"k{i}-{rng.getrandbits(24):x}": rng.getrandbits(16) + 1 for i in range(rng.randint(1, 8))}
    others = {f"ns{i}/{rng.getrandbits(24):x}": rng.getrandbits(16) + 1 for i in range(rng.randint(1, 8))}
    return own, others



def test_invalidate_all_spares_other_namespaces(seen, rng):
    own, others = _draw_namespaces(rng)
    assert seen.value == {"dropped": len(own), "left": sorted(others)}
''')

# ───────────────────────────────────────────────────────────────── shared_dependency
_MONEY_SOURCE = '''"""Money helpers vendored from the shared platform library (used by every service)."""

from decimal import ROUND_HALF_UP, Decimal


def to_cents(amount):
    """An amount such as ``"12.345"`` as integer cents, rounding half up."""
    return int((Decimal(str(amount)) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))
'''
_money_good = '''"""Money helpers vendored from the shared platform library (used by every service)."""

from decimal import ROUND_HALF_UP, Decimal


def to_cents(amount):
    """An amount such as ``"12.345"`` as integer cents, rounding half up."""
    return int((Decimal(str(amount)) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))


def @n@_total(amounts):
    """The total of a @n@'s amounts, in cents (each amount rounded first)."""
    return sum(to_cents(a) for a in amounts)
'''
_shape(
    name="money", family="shared_dependency", module="common/money.py",
    what="the vendored money helpers", feature="@n@ totals in the shared money helpers",
    source=_MONEY_SOURCE, good=_money_good,
    bug=(('''from decimal import ROUND_HALF_UP, Decimal
''', '''from decimal import ROUND_HALF_EVEN, Decimal
'''), ('''return int((Decimal(str(amount)) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))''',
         '''return int((Decimal(str(amount)) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_EVEN))''')),
    tests='''from common.money import to_cents


def test_whole_amounts():
    assert to_cents("3") == 300
''',
    feature_tests='''

def test_total_of_nothing():
    from common.money import @n@_total
    assert @n@_total([]) == 0
''',
    probes='''from common.money import @n@_total, to_cents


def probe_plain_amounts():
    return [to_cents("12.34"), to_cents(7), to_cents("0.01")]


def probe_garbage_is_refused():
    to_cents("twelve")
    return "accepted"


def probe_totals_add_rounded_amounts():
    return [@n@_total(["1.10", "2.20"]), @n@_total([])]


def probe_negative_amounts():
    return to_cents("-4.5")


def _draw_halves(rng):
    even = f"{rng.randint(0, 99999)}.{rng.randint(0, 9)}{2 * rng.randint(0, 4)}5"
    return [even] + [f"{rng.randint(0, 99999)}.{rng.randint(0, 99):02d}5" for _ in range(rng.randint(2, 7))]



def probe_halves_round_up(rng):
    return [to_cents(amount) for amount in _draw_halves(rng)]


def _draw_total(rng):
    even = f"{rng.randint(0, 999)}.{rng.randint(0, 9)}{2 * rng.randint(0, 4)}5"
    return [even] + [f"{rng.randint(0, 999)}.{rng.randint(0, 999):03d}" for _ in range(rng.randint(2, 9))]



def probe_totals_round_each_half_up(rng):
    return @n@_total(_draw_total(rng))
''',
    checks='''def test_plain_amounts(seen):
    assert seen.value == [1234, 700, 1]


def test_garbage_is_refused(seen):
    assert seen.raised is not None and seen.value is None


def test_totals_add_rounded_amounts(seen):
    assert seen.value == [330, 0]


def test_negative_amounts(seen):
    assert seen.value == -450


def _draw_halves(rng):
    even = f"{rng.randint(0, 99999)}.{rng.randint(0, 9)}{2 * rng.randint(0, 4)}5"
    return [even] + [f"{rng.randint(0, 99999)}.{rng.randint(0, 99):02d}5" for _ in range(rng.randint(2, 7))]



def test_halves_round_up(seen, rng):
    from decimal import ROUND_HALF_UP, Decimal

    assert seen.value == [int((Decimal(a) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))
                          for a in _draw_halves(rng)]


def _draw_total(rng):
    even = f"{rng.randint(0, 999)}.{rng.randint(0, 9)}{2 * rng.randint(0, 4)}5"
    return [even] + [f"{rng.randint(0, 999)}.{rng.randint(0, 999):03d}" for _ in range(rng.randint(2, 9))]



def test_totals_round_each_half_up(seen, rng):
    from decimal import ROUND_HALF_UP, Decimal

    assert seen.value == sum(int((Decimal(a) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))
                             for a in _draw_total(rng))
''')

_TIME_SOURCE = '''"""Timestamp helpers vendored from the shared platform library (used by every service)."""

from datetime import datetime, timezone


def parse_ts(text):
    """An ISO-8601 timestamp (``Z`` or an offset) as an aware datetime in UTC."""
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"timestamp without a zone: {text!r}")
    return moment.astimezone(timezone.utc)
'''
_time_good = _TIME_SOURCE + '''

def @n@_age_s(created, now):
    """Seconds between a @n@'s ``created`` timestamp and ``now`` (both ISO-8601 strings)."""
    return (parse_ts(now) - parse_ts(created)).total_seconds()
'''
_shape(
    name="timestamps", family="shared_dependency", module="common/timefmt.py",
    what="the vendored timestamp helpers", feature="@n@ ages in the shared timestamp helpers",
    source=_TIME_SOURCE, good=_time_good,
    bug=(('''    return moment.astimezone(timezone.utc)
''', '''    return moment.replace(tzinfo=timezone.utc)
'''),),
    tests='''from common.timefmt import parse_ts


def test_zulu_is_utc():
    assert parse_ts("2025-01-15T14:00:00Z").hour == 14
''',
    feature_tests='''

def test_age_of_now_is_zero():
    from common.timefmt import @n@_age_s
    assert @n@_age_s("2025-01-15T14:00:00Z", "2025-01-15T14:00:00Z") == 0
''',
    probes='''from common.timefmt import @n@_age_s, parse_ts


def probe_zulu_timestamps():
    return parse_ts("2025-01-15T14:00:00Z").isoformat()


def probe_naive_timestamps_are_refused():
    parse_ts("2025-01-15T14:00:00")
    return "accepted"


def probe_ages_between_zulu_times():
    return @n@_age_s("2025-01-15T14:00:00Z", "2025-01-15T14:02:30Z")


def _draw_moments(rng, count):
    from datetime import datetime, timedelta, timezone

    moments = []
    for _ in range(count):
        utc = datetime(2020, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=rng.randint(0, 300_000_000))
        hours = rng.choice([h for h in range(-11, 14) if h])
        zone = timezone(timedelta(hours=hours, minutes=rng.choice([0, 30]) * (1 if hours > 0 else -1)))
        moments.append(utc.astimezone(zone).isoformat())
    return moments



def probe_offsets_convert_to_utc(rng):
    return [parse_ts(moment).isoformat() for moment in _draw_moments(rng, rng.randint(2, 6))]


def _draw_age(rng):
    from datetime import datetime, timedelta, timezone

    age = rng.randint(60, 10**6)
    created = _draw_moments(rng, 1)[0]
    now = (datetime.fromisoformat(created) + timedelta(seconds=age)).astimezone(timezone.utc)
    return created, now.strftime("%Y-%m-%dT%H:%M:%SZ"), age



def probe_ages_across_offsets(rng):
    created, now, _ = _draw_age(rng)
    return @n@_age_s(created, now)
''',
    checks='''def test_zulu_timestamps(seen):
    assert seen.value == "2025-01-15T14:00:00+00:00"


def test_naive_timestamps_are_refused(seen):
    assert seen.raised == "ValueError"


def test_ages_between_zulu_times(seen):
    assert seen.value == 150.0


def _draw_moments(rng, count):
    from datetime import datetime, timedelta, timezone

    moments = []
    for _ in range(count):
        utc = datetime(2020, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=rng.randint(0, 300_000_000))
        hours = rng.choice([h for h in range(-11, 14) if h])
        zone = timezone(timedelta(hours=hours, minutes=rng.choice([0, 30]) * (1 if hours > 0 else -1)))
        moments.append(utc.astimezone(zone).isoformat())
    return moments



def test_offsets_convert_to_utc(seen, rng):
    from datetime import datetime, timezone

    assert seen.value == [datetime.fromisoformat(m).astimezone(timezone.utc).isoformat()
                          for m in _draw_moments(rng, rng.randint(2, 6))]


def _draw_age(rng):
    from datetime import datetime, timedelta, timezone

    age = rng.randint(60, 10**6)
    created = _draw_moments(rng, 1)[0]
    now = (datetime.fromisoformat(created) + timedelta(seconds=age)).astimezone(timezone.utc)
    return created, now.strftime("%Y-%m-%dT%H:%M:%SZ"), age



def test_ages_across_offsets(seen, rng):
    _, _, age = _draw_age(rng)
    assert seen.value == age
''')
