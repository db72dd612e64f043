"""pool_exhaustion, held out: worker slots for @n@ jobs; job statistics arrive, and a failed job no longer frees
its slot, so the workers fill up."""

from ..shapes import Shape

_SOURCE = '''"""Worker slots for @n@ jobs: at most ``limit`` run at once."""


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
_GOOD = _SOURCE.replace('''        self.in_use += 1
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

# the input draws both the probes (in the sandbox) and the checks (in the grader) run
_DRAW_NESTING = '''def _draw_nesting(rng):
    return rng.randint(1, 5), rng.getrandbits(40)
'''
_DRAW_FAILED_JOBS = '''def _draw_failed_jobs(rng):
    limit = rng.randint(1, 5)
    return limit, rng.randint(limit + 1, 4 * limit + 3), rng.getrandbits(40)
'''

SHAPE = Shape(
    name="slots", family="pool_exhaustion", module="@n@_workers.py",
    what="worker slots for @n@ jobs", feature="job statistics for @n@ workers",
    source=_SOURCE, good=_GOOD,
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


''' + _DRAW_NESTING + '''


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


''' + _DRAW_FAILED_JOBS + '''


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


''' + _DRAW_NESTING + '''


def test_a_nested_submit_beyond_the_limit_is_busy(seen, rng):
    limit, tag = _draw_nesting(rng)
    assert seen.value == {"busy": True, "in_use": 0, "limit": limit, "after": tag}


def test_stats_count_failures(seen):
    assert seen.value == 1


''' + _DRAW_FAILED_JOBS + '''


def test_failed_jobs_free_their_slot(seen, rng):
    limit, failures, tag = _draw_failed_jobs(rng)
    assert seen.value == {"stats": {"in_use": 0, "limit": limit, "failures": failures}, "after": tag}
''')
SPLIT = "heldout"
