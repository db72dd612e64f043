"""cache_thrash, train: cached @n@ responses; query parameters join the cache key, in the
order the request lists them, so the same query written two ways never shares an entry."""

from ..shapes import Shape

_SOURCE = '''"""Cached @n@ responses: a handler's result is kept per path."""


class @N@Responses:
    """Serves ``handler(path, params)``, caching the result in ``cache`` (a dict) per path."""

    def __init__(self, handler, cache):
        self.handler = handler
        self.cache = cache
        self.misses = 0

    def key(self, path, params):
        return f"@n@:{path}"

    def get(self, path, params=None):
        params = dict(params or {})
        key = self.key(path, params)
        if key not in self.cache:
            self.misses += 1
            self.cache[key] = self.handler(path, params)
        return self.cache[key]
'''
_GOOD = _SOURCE.replace('''    def key(self, path, params):
        return f"@n@:{path}"''', '''    def key(self, path, params):
        """One key per path and set of query parameters, however the request orders them."""
        query = "&".join(f"{name}={params[name]}" for name in sorted(params))
        return f"@n@:{path}?{query}" if query else f"@n@:{path}"''')

SHAPE = Shape(
    name="responses", family="cache_thrash", module="@n@_responses.py",
    what="cached @n@ responses", feature="query parameters in @n@ response caching",
    source=_SOURCE, good=_GOOD,
    bug=(('''        query = "&".join(f"{name}={params[name]}" for name in sorted(params))''',
          '''        query = "&".join(f"{name}={value}" for name, value in params.items())'''),),
    tests='''from @pkg@.@n@_responses import @N@Responses


def test_repeated_paths_are_served_from_the_cache():
    responses = @N@Responses(lambda path, params: path.upper(), {})
    assert responses.get("/a") == responses.get("/a") == "/A"
    assert responses.misses == 1
''',
    feature_tests='''

def test_different_parameters_are_different_entries():
    responses = @N@Responses(lambda path, params: dict(params), {})
    assert responses.get("/a", {"page": 1}) != responses.get("/a", {"page": 2})
''',
    probes='''from @pkg@.@n@_responses import @N@Responses


def _handler(path, params):
    return {"path": path, "params": sorted(params.items())}


def _params(rng):
    names = rng.sample(["page", "size", "sort", "lang", "filter", "fields", "since"], rng.randint(3, 6))
    return {name: str(rng.randrange(100)) for name in names}


def probe_paths_without_parameters_hit(rng):
    responses = @N@Responses(_handler, {})
    paths = [f"/v1/@ns@/{rng.randrange(1000)}" for _ in range(rng.randint(2, 8))]
    for _ in range(3):
        for path in paths:
            responses.get(path)
    return {"misses": responses.misses, "paths": len(set(paths))}


def probe_parameters_reach_the_handler(rng):
    params = _params(rng)
    return @N@Responses(_handler, {}).get("/search", params)


def probe_different_parameters_miss(rng):
    responses = @N@Responses(_handler, {})
    for page in range(rng.randint(2, 9)):
        responses.get("/list", {"page": page})
    return responses.misses


def probe_reordered_parameters_hit(rng):
    responses = @N@Responses(_handler, {})
    queries = [_params(rng) for _ in range(rng.randint(2, 6))]
    for _ in range(rng.randint(3, 10)):
        for params in queries:
            names = list(params)
            rng.shuffle(names)
            responses.get("/search", {name: params[name] for name in names})
    return {"misses": responses.misses, "entries": len(responses.cache)}
''',
    checks='''def test_paths_without_parameters_hit(seen):
    assert seen.value["misses"] == seen.value["paths"]


def test_parameters_reach_the_handler(seen, rng):
    names = rng.sample(["page", "size", "sort", "lang", "filter", "fields", "since"], rng.randint(3, 6))
    params = {name: str(rng.randrange(100)) for name in names}
    assert seen.value == {"path": "/search", "params": sorted([k, v] for k, v in params.items())}


def test_different_parameters_miss(seen, rng):
    assert seen.value == rng.randint(2, 9)


def test_reordered_parameters_hit(seen, rng):
    names = ["page", "size", "sort", "lang", "filter", "fields", "since"]
    queries = [{n: str(rng.randrange(100)) for n in rng.sample(names, rng.randint(3, 6))}
               for _ in range(rng.randint(2, 6))]
    distinct = len({tuple(sorted(q.items())) for q in queries})
    assert seen.value == {"misses": distinct, "entries": distinct}
''')
SPLIT = "train"
