"""pool_exhaustion, held out: a pool of @n@ connections; returning a broken connection arrives,
and the pool drops it without opening a replacement, so it shrinks to nothing."""

from ..shapes import Shape

_SOURCE = '''"""A pool of open @n@ connections, checked out one at a time."""

import itertools


class PoolEmpty(RuntimeError):
    """No connection is free."""


class @N@Connections:
    """``size`` connections made by ``connect(number)``; ``checkout`` and ``checkin``."""

    def __init__(self, connect, size=4):
        if size < 1:
            raise ValueError("size must be at least 1")
        self.size = size
        self._connect = connect
        self._numbers = itertools.count(1)
        self._idle = [connect(next(self._numbers)) for _ in range(size)]
        self._out = []

    @property
    def idle(self):
        return len(self._idle)

    def checkout(self):
        if not self._idle:
            raise PoolEmpty(f"all {self.size} connections are checked out")
        conn = self._idle.pop()
        self._out.append(conn)
        return conn

    def checkin(self, conn):
        self._out.remove(conn)
        self._idle.append(conn)
'''
_GOOD = _SOURCE.replace('''    def checkin(self, conn):
        self._out.remove(conn)
        self._idle.append(conn)
''', '''    def checkin(self, conn, broken=False):
        """Return ``conn``; a ``broken`` one is closed and a fresh connection takes its place."""
        self._out.remove(conn)
        if broken:
            self.discarded.append(conn)
            conn = self._connect(next(self._numbers))
        self._idle.append(conn)
''').replace('''        self._out = []
''', '''        self._out = []
        self.discarded = []
''')

SHAPE = Shape(
    name="connections", family="pool_exhaustion", module="@n@_connections.py",
    what="a @n@ connection pool", feature="discarding broken @n@ connections",
    source=_SOURCE, good=_GOOD,
    bug=(('''        if broken:
            self.discarded.append(conn)
            conn = self._connect(next(self._numbers))
        self._idle.append(conn)''', '''        if broken:
            self.discarded.append(conn)
            return
        self._idle.append(conn)'''),),
    tests='''from @pkg@.@n@_connections import @N@Connections


def test_checkout_and_checkin():
    pool = @N@Connections(lambda n: f"c{n}", size=2)
    conn = pool.checkout()
    assert pool.idle == 1
    pool.checkin(conn)
    assert pool.idle == 2
''',
    feature_tests='''

def test_broken_connections_are_discarded():
    pool = @N@Connections(lambda n: f"c{n}", size=1)
    conn = pool.checkout()
    pool.checkin(conn, broken=True)
    assert pool.discarded == [conn]
''',
    probes='''from @pkg@.@n@_connections import @N@Connections


def probe_connections_are_made_up_front(rng):
    made = []
    pool = @N@Connections(lambda n: made.append(n) or {"conn": n}, size=rng.randint(1, 12))
    return {"made": made, "idle": pool.idle}


def probe_an_exhausted_pool_refuses(rng):
    pool = @N@Connections(lambda n: n, size=rng.randint(1, 5))
    for _ in range(pool.size + 1):
        pool.checkout()
    return "checked out"


def probe_healthy_connections_are_reused(rng):
    pool = @N@Connections(lambda n: n, size=rng.randint(2, 8))
    seen = set()
    for _ in range(rng.randint(10, 60)):
        conn = pool.checkout()
        seen.add(conn)
        pool.checkin(conn)
    return {"distinct": len(seen), "idle": pool.idle}


def probe_broken_connections_are_recorded(rng):
    pool = @N@Connections(lambda n: n, size=rng.randint(2, 9))
    conn = pool.checkout()
    pool.checkin(conn, broken=True)
    return {"discarded": pool.discarded, "conn": conn}


def probe_the_pool_survives_broken_connections(rng):
    size = rng.randint(2, 10)
    pool = @N@Connections(lambda n: n, size=size)
    for _ in range(rng.randint(size, 5 * size)):
        pool.checkin(pool.checkout(), broken=True)
    held = [pool.checkout() for _ in range(size)]
    return {"held": len(held), "distinct": len(set(held)), "newest": max(held)}
''',
    checks='''def test_connections_are_made_up_front(seen, rng):
    size = rng.randint(1, 12)
    assert seen.value == {"made": list(range(1, size + 1)), "idle": size}


def test_an_exhausted_pool_refuses(seen):
    assert seen.raised == "PoolEmpty"


def test_healthy_connections_are_reused(seen, rng):
    size = rng.randint(2, 8)
    assert seen.value == {"distinct": 1, "idle": size}


def test_broken_connections_are_recorded(seen, rng):
    size = rng.randint(2, 9)
    assert seen.value == {"discarded": [size], "conn": size}


def test_the_pool_survives_broken_connections(seen, rng):
    size = rng.randint(2, 10)
    broken = rng.randint(size, 5 * size)
    assert seen.value == {"held": size, "distinct": size, "newest": size + broken}
''')
SPLIT = "heldout"
