"""retry_storm: a retrying client for the @n@ backend; per-call attempt limits arrive, with retries
of rejected requests and a backoff that no longer grows."""

from ..shapes import Shape

_SOURCE = '''"""A client for the @n@ backend that retries transient failures with exponential backoff."""


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
_GOOD = _SOURCE.replace('''    def call(self, request):
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

# the input draws both the probes (in the sandbox) and the checks (in the grader) run
_DRAW_REJECTED = '''def _draw_rejected(rng):
    return rng.randint(2, 9), f"r{rng.getrandbits(40):x}"
'''
_DRAW_BACKOFF = '''def _draw_backoff(rng):
    return rng.randint(3, 6), rng.randint(1, 2000) / 1000, f"r{rng.getrandbits(40):x}"
'''

SHAPE = Shape(
    name="backoff", family="retry_storm", module="@n@_client.py",
    what="a retrying client for the @n@ backend", feature="per-call attempt limits for @n@ calls",
    source=_SOURCE, good=_GOOD,
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


''' + _DRAW_REJECTED + '''


def probe_rejected_requests_are_not_retried(rng):
    attempts, request = _draw_rejected(rng)
    transport, calls = _flaky(10, error=Rejected)
    try:
        @N@Client(transport, sleep=lambda s: None, max_attempts=attempts).call(request)
    except Rejected:
        return {"raised": "Rejected", "calls": len(calls), "sent": calls[-1], "max_attempts": attempts}
    return {"raised": None, "calls": len(calls), "sent": calls[-1], "max_attempts": attempts}


''' + _DRAW_BACKOFF + '''


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


''' + _DRAW_REJECTED + '''


def test_rejected_requests_are_not_retried(seen, rng):
    attempts, request = _draw_rejected(rng)
    assert seen.value == {"raised": "Rejected", "calls": 1, "sent": request, "max_attempts": attempts}


''' + _DRAW_BACKOFF + '''


def test_backoff_doubles(seen, rng):
    import math

    failures, base, request = _draw_backoff(rng)
    assert seen.value["result"] == f"done:{request}"
    slept = seen.value["slept"]
    assert len(slept) == failures, slept
    assert all(math.isclose(got, base * 2 ** i) for i, got in enumerate(slept)), slept
''')
SPLIT = "train"
