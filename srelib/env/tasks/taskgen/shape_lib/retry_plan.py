"""retry_storm, held out: a retry schedule for @n@ calls; delays in whole milliseconds arrive
for the scheduler, and truncating to whole seconds first makes every short delay zero."""

from ..shapes import Shape

_SOURCE = '''"""When to retry a failed @n@ call: exponential delays with a cap."""


class @N@RetryPlan:
    """``attempts`` tries in all; the delay before retry k is ``base * factor ** (k - 1)``,
    at most ``cap`` seconds."""

    def __init__(self, attempts=5, base=0.2, factor=2.0, cap=30.0):
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        if base <= 0 or factor < 1:
            raise ValueError("base must be positive and factor at least 1")
        self.attempts = attempts
        self.base = base
        self.factor = factor
        self.cap = cap

    def delays(self):
        """The delay in seconds before each retry (``attempts - 1`` of them)."""
        return [min(self.cap, self.base * self.factor ** k) for k in range(self.attempts - 1)]
'''
_GOOD = _SOURCE + '''
    def delays_ms(self):
        """The same delays in whole milliseconds, as the job scheduler takes them."""
        return [round(delay * 1000) for delay in self.delays()]
'''

SHAPE = Shape(
    name="retry_plan", family="retry_storm", module="@n@_retry_plan.py",
    what="a retry schedule for @n@ calls", feature="millisecond retry delays for the @n@ scheduler",
    source=_SOURCE, good=_GOOD,
    bug=(('''        return [round(delay * 1000) for delay in self.delays()]''',
          '''        return [int(delay) * 1000 for delay in self.delays()]'''),),
    tests='''from @pkg@.@n@_retry_plan import @N@RetryPlan


def test_delays_double():
    assert @N@RetryPlan(attempts=4, base=1, cap=60).delays() == [1, 2, 4]
''',
    feature_tests='''

def test_a_single_attempt_has_no_delays():
    assert @N@RetryPlan(attempts=1).delays_ms() == []
''',
    probes='''from @pkg@.@n@_retry_plan import @N@RetryPlan


def _plan(rng, base):
    return @N@RetryPlan(attempts=rng.randint(2, 8), base=base, factor=rng.choice([1.5, 2.0, 3.0]),
                        cap=rng.uniform(5, 120))


def probe_delays_grow_up_to_the_cap(rng):
    return _plan(rng, rng.uniform(0.01, 3.0)).delays()


def probe_a_zero_base_is_refused():
    @N@RetryPlan(base=0)
    return "accepted"


def probe_whole_second_delays_in_milliseconds(rng):
    plan = @N@RetryPlan(attempts=rng.randint(2, 6), base=rng.randint(1, 4), factor=2.0, cap=1000)
    return plan.delays_ms()


def probe_short_delays_in_milliseconds(rng):
    return _plan(rng, rng.uniform(0.01, 0.9)).delays_ms()
''',
    checks='''def _expected(rng, base):
    attempts, factor, cap = rng.randint(2, 8), rng.choice([1.5, 2.0, 3.0]), rng.uniform(5, 120)
    return [min(cap, base * factor ** k) for k in range(attempts - 1)]


def test_delays_grow_up_to_the_cap(seen, rng):
    expected = _expected(rng, rng.uniform(0.01, 3.0))
    assert len(seen.value) == len(expected)
    assert all(abs(a - b) < 1e-9 for a, b in zip(seen.value, expected))


def test_a_zero_base_is_refused(seen):
    assert seen.raised == "ValueError"


def test_whole_second_delays_in_milliseconds(seen, rng):
    attempts, base = rng.randint(2, 6), rng.randint(1, 4)
    assert seen.value == [base * 2 ** k * 1000 for k in range(attempts - 1)]


def test_short_delays_in_milliseconds(seen, rng):
    expected = _expected(rng, rng.uniform(0.01, 0.9))
    assert seen.value == [round(d * 1000) for d in expected]
''')
SPLIT = "heldout"
