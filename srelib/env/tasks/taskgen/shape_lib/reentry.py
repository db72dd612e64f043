"""deadlock, held out: a registry of active @ns@ under one non-reentrant lock; closing by
predicate arrives, and calls ``close`` while it holds the lock."""

from ..shapes import Shape

_SOURCE = '''"""A registry of active @ns@ guarded by one (non-reentrant) lock."""

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
_GOOD = _SOURCE.replace('''    def close(self, item_id):
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

# the input draws both the probes (in the sandbox) and the checks (in the grader) run
_DRAW_REGISTRY = '''def _draw_registry(rng):
    count = rng.randint(4, 12)
    data = [2 * rng.getrandbits(15)] + [rng.getrandbits(16) for _ in range(count - 1)]
    return [f"x{i}-{rng.getrandbits(24):x}" for i in range(count)], data
'''

SHAPE = Shape(
    name="reentry", family="deadlock", module="@n@_registry.py",
    what="a registry of active @ns@", feature="closing @ns@ by predicate",
    source=_SOURCE, good=_GOOD,
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


''' + _DRAW_REGISTRY + '''


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


''' + _DRAW_REGISTRY + '''


def test_close_where_closes_the_matches(seen, rng):
    ids, data = _draw_registry(rng)
    even = sorted(i for i, value in zip(ids, data) if value % 2 == 0)
    assert seen.value == {"closed": even, "active": sorted(set(ids) - set(even))}
''')
SPLIT = "heldout"
