"""retry_storm, train: a circuit breaker in front of the @n@ backend; a half-open trial
arrives, and a failed trial closes the breaker instead of opening it again."""

from ..shapes import Shape

_SOURCE = '''"""A circuit breaker: after repeated failures, calls to the @n@ backend stop for a while."""


class BreakerOpen(RuntimeError):
    """The breaker is open: the call was not sent."""


class @N@Breaker:
    """Opens after ``threshold`` failures in a row; stays open for ``cooldown`` seconds."""

    def __init__(self, clock, threshold=5, cooldown=30.0):
        if threshold < 1:
            raise ValueError("threshold must be at least 1")
        self.clock = clock
        self.threshold = threshold
        self.cooldown = cooldown
        self.failures = 0
        self.opened_at = None

    @property
    def state(self):
        return "closed" if self.opened_at is None else "open"

    def call(self, fn, *args):
        """``fn(*args)`` unless the breaker is open; failures count towards opening it."""
        if self.opened_at is not None:
            if self.clock() - self.opened_at < self.cooldown:
                raise BreakerOpen("@n@ backend circuit is open")
            self.opened_at = None
        try:
            result = fn(*args)
        except Exception:
            self.failures += 1
            if self.failures >= self.threshold:
                self.opened_at = self.clock()
            raise
        self.failures = 0
        return result
'''
_GOOD = '''"""A circuit breaker: after repeated failures, calls to the @n@ backend stop for a while."""


class BreakerOpen(RuntimeError):
    """The breaker is open: the call was not sent."""


class @N@Breaker:
    """Opens after ``threshold`` failures in a row; after ``cooldown`` seconds one trial call
    goes through (half-open): success closes the breaker, failure opens it again."""

    def __init__(self, clock, threshold=5, cooldown=30.0):
        if threshold < 1:
            raise ValueError("threshold must be at least 1")
        self.clock = clock
        self.threshold = threshold
        self.cooldown = cooldown
        self.failures = 0
        self.opened_at = None
        self.trial = False

    @property
    def state(self):
        if self.trial:
            return "half-open"
        return "closed" if self.opened_at is None else "open"

    def call(self, fn, *args):
        """``fn(*args)`` unless the breaker is open; failures count towards opening it."""
        if self.opened_at is not None:
            if self.trial or self.clock() - self.opened_at < self.cooldown:
                raise BreakerOpen("@n@ backend circuit is open")
            self.trial = True
        try:
            result = fn(*args)
        except Exception:
            self._failed()
            raise
        self.failures, self.opened_at, self.trial = 0, None, False
        return result

    def _failed(self):
        self.failures += 1
        if self.trial or self.failures >= self.threshold:
            self.opened_at = self.clock()
        self.trial = False
'''

SHAPE = Shape(
    name="breaker", family="retry_storm", module="@n@_breaker.py",
    what="a circuit breaker for the @n@ backend", feature="half-open trial calls to the @n@ backend",
    source=_SOURCE, good=_GOOD,
    bug=(('''        if self.trial or self.failures >= self.threshold:
            self.opened_at = self.clock()
        self.trial = False''', '''        if self.trial:
            self.opened_at = None
        elif self.failures >= self.threshold:
            self.opened_at = self.clock()
        self.trial = False'''),),
    tests='''from @pkg@.@n@_breaker import @N@Breaker


def test_successful_calls_pass_through():
    breaker = @N@Breaker(clock=lambda: 0.0)
    assert breaker.call(lambda x: x + 1, 1) == 2 and breaker.state == "closed"
''',
    feature_tests='''

def test_a_good_trial_closes_the_breaker():
    now = [0.0]
    breaker = @N@Breaker(clock=lambda: now[0], threshold=1, cooldown=5)
    try:
        breaker.call(lambda: 1 / 0)
    except ZeroDivisionError:
        pass
    now[0] = 10.0
    assert breaker.call(lambda: "ok") == "ok" and breaker.state == "closed"
''',
    probes='''from @pkg@.@n@_breaker import @N@Breaker


class _Backend:
    def __init__(self, failing):
        self.failing, self.calls = failing, 0

    def __call__(self):
        self.calls += 1
        if self.failing:
            raise ConnectionError("backend down")
        return "ok"


def _hammer(breaker, backend, tries):
    outcomes = {}
    for _ in range(tries):
        try:
            breaker.call(backend)
            kind = "ok"
        except Exception as exc:
            kind = type(exc).__name__
        outcomes[kind] = outcomes.get(kind, 0) + 1
    return outcomes


def probe_the_breaker_opens_after_the_threshold(rng):
    threshold = rng.randint(2, 9)
    backend = _Backend(failing=True)
    breaker = @N@Breaker(clock=lambda: 0.0, threshold=threshold, cooldown=10)
    outcomes = _hammer(breaker, backend, threshold + rng.randint(1, 20))
    return {"sent": backend.calls, "outcomes": outcomes, "state": breaker.state}


def probe_successes_reset_the_count(rng):
    threshold = rng.randint(3, 9)
    breaker = @N@Breaker(clock=lambda: 0.0, threshold=threshold)
    for _ in range(rng.randint(2, 20)):
        _hammer(breaker, _Backend(failing=True), threshold - 1)
        _hammer(breaker, _Backend(failing=False), 1)
    return breaker.state


def probe_a_good_trial_closes_it(rng):
    now = [0.0]
    cooldown = rng.uniform(1, 60)
    breaker = @N@Breaker(clock=lambda: now[0], threshold=1, cooldown=cooldown)
    _hammer(breaker, _Backend(failing=True), 1)
    now[0] = cooldown + rng.uniform(0.1, 5)
    return {"outcomes": _hammer(breaker, _Backend(failing=False), 3), "state": breaker.state}


def probe_the_trial_call_runs_half_open(rng):
    now = [0.0]
    breaker = @N@Breaker(clock=lambda: now[0], threshold=rng.randint(1, 4), cooldown=5)
    states = [breaker.call(lambda: breaker.state)]
    _hammer(breaker, _Backend(failing=True), breaker.threshold)
    now[0] = rng.uniform(5.5, 100)
    states.append(breaker.call(lambda: breaker.state))
    return states + [breaker.state]


def probe_a_failed_trial_opens_it_again(rng):
    now = [0.0]
    cooldown = rng.uniform(1, 60)
    threshold = rng.randint(2, 8)
    backend = _Backend(failing=True)
    breaker = @N@Breaker(clock=lambda: now[0], threshold=threshold, cooldown=cooldown)
    _hammer(breaker, backend, threshold)
    now[0] = cooldown + rng.uniform(0.1, 5)
    outcomes = _hammer(breaker, backend, rng.randint(5, 50))
    return {"sent": backend.calls, "outcomes": outcomes, "state": breaker.state}
''',
    checks='''def test_the_breaker_opens_after_the_threshold(seen, rng):
    threshold = rng.randint(2, 9)
    rest = rng.randint(1, 20)
    assert seen.value == {"sent": threshold, "outcomes": {"ConnectionError": threshold,
                                                          "BreakerOpen": rest},
                          "state": "open"}


def test_successes_reset_the_count(seen):
    assert seen.value == "closed"


def test_a_good_trial_closes_it(seen):
    assert seen.value == {"outcomes": {"ok": 3}, "state": "closed"}


def test_the_trial_call_runs_half_open(seen):
    assert seen.value == ["closed", "half-open", "closed"]


def test_a_failed_trial_opens_it_again(seen, rng):
    rng.uniform(1, 60)
    threshold = rng.randint(2, 8)
    rng.uniform(0.1, 5)
    tries = rng.randint(5, 50)
    assert seen.value == {"sent": threshold + 1,
                          "outcomes": {"ConnectionError": 1, "BreakerOpen": tries - 1},
                          "state": "open"}
''')
SPLIT = "train"
