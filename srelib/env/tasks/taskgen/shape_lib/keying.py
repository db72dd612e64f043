"""cache_thrash: cached @n@ lookups; trace ids arrive and join the cache key, so no lookup
is ever found in the cache again."""

from ..shapes import Shape

_SOURCE = '''"""Cached lookups of @ns@: the backend is asked once per @n@ id."""


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
_GOOD = _SOURCE.replace('''    def get(self, item_id):
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

# the input draws both the probes (in the sandbox) and the checks (in the grader) run
_DRAW_LOOKUPS = '''def _draw_lookups(rng):
    return rng.randint(20, 300), rng.getrandbits(40)
'''

SHAPE = Shape(
    name="keying", family="cache_thrash", module="@n@_lookup.py",
    what="cached @n@ lookups", feature="trace ids on @n@ lookups",
    source=_SOURCE, good=_GOOD,
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


''' + _DRAW_LOOKUPS + '''


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


''' + _DRAW_LOOKUPS + '''


def test_trace_ids_do_not_split_the_cache(seen, rng):
    lookups, item = _draw_lookups(rng)
    assert seen.value == {"lookups": lookups, "backend_calls": 1, "cached": 1, "value": {"id": item}}
''')
SPLIT = "train"
