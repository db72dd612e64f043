"""pool_exhaustion: a connection pool for @ns@; batched calls arrive, and a failed call no longer hands
its connection back, so the pool runs dry."""

from ..shapes import Shape

_SOURCE = '''"""A fixed pool of @n@ connections, leased one at a time."""


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
_GOOD = _SOURCE.replace('''    def run(self, fn):
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

# the input draws both the probes (in the sandbox) and the checks (in the grader) run
_DRAW_FAILURES = '''def _draw_failures(rng):
    size = rng.randint(2, 8)
    return size, rng.randint(size + 1, 4 * size), rng.getrandbits(40)
'''

SHAPE = Shape(
    name="lease", family="pool_exhaustion", module="@n@_pool.py",
    what="a connection pool for @ns@", feature="batched calls through the @n@ pool",
    source=_SOURCE, good=_GOOD,
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


''' + _DRAW_FAILURES + '''


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


''' + _DRAW_FAILURES + '''


def test_failed_calls_hand_their_connection_back(seen, rng):
    size, failures, tag = _draw_failures(rng)
    assert seen.value == {"available": size, "after": tag}
''')
SPLIT = "train"
