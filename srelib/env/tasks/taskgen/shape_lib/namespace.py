"""cache_thrash, held out: the @n@ namespace of the shared cache; bulk invalidation arrives, and with no
keys given it drops every namespace's keys."""

from ..shapes import Shape

_SOURCE = '''"""The @n@ component's slice of the shared cache: every key carries its namespace."""


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
_GOOD = _SOURCE + '''
    def invalidate(self, keys=None):
        """Drop ``keys`` (default: every @n@ key) from the shared store; returns how many."""
        doomed = [self.prefix + k for k in (self.keys() if keys is None else keys)]
        dropped = 0
        for key in doomed:
            if self.store.pop(key, None) is not None:
                dropped += 1
        return dropped
'''

# the input draws both the probes (in the sandbox) and the checks (in the grader) run
_DRAW_NAMESPACES = '''def _draw_namespaces(rng):
    own = {f"k{i}-{rng.getrandbits(24):x}": rng.getrandbits(16) + 1 for i in range(rng.randint(1, 8))}
    others = {f"ns{i}/{rng.getrandbits(24):x}": rng.getrandbits(16) + 1 for i in range(rng.randint(1, 8))}
    return own, others
'''

SHAPE = Shape(
    name="namespace", family="cache_thrash", module="@n@_cache_space.py",
    what="the @n@ namespace of the shared cache", feature="bulk invalidation of @n@ keys",
    source=_SOURCE, good=_GOOD,
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


''' + _DRAW_NAMESPACES + '''


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


''' + _DRAW_NAMESPACES + '''


def test_invalidate_all_spares_other_namespaces(seen, rng):
    own, others = _draw_namespaces(rng)
    assert seen.value == {"dropped": len(own), "left": sorted(others)}
''')
SPLIT = "heldout"
