"""retry_storm, held out: a retry budget for @n@ calls; budget snapshots arrive, and retries are no longer
counted against the budget, so it never runs out."""

from ..shapes import Shape

_SOURCE = '''"""A retry budget for @n@ calls: retries may add at most ``ratio`` of the requests."""


class @N@RetryBudget:
    """Tracks requests and retries; ``can_retry`` says whether one more retry fits."""

    def __init__(self, ratio=0.2, minimum=3):
        if not 0 <= ratio <= 1:
            raise ValueError("ratio must be between 0 and 1")
        self.ratio = ratio
        self.minimum = minimum
        self.requests = 0
        self.retries = 0

    def record_request(self):
        self.requests += 1

    def can_retry(self):
        allowed = max(self.minimum, int(self.requests * self.ratio))
        if self.retries >= allowed:
            return False
        self.retries += 1
        return True
'''
_GOOD = _SOURCE.replace('''    def can_retry(self):
        allowed = max(self.minimum, int(self.requests * self.ratio))
        if self.retries >= allowed:
            return False
        self.retries += 1
        return True
''', '''    def allowed(self):
        """How many retries the budget allows so far."""
        return max(self.minimum, int(self.requests * self.ratio))

    def can_retry(self):
        """True (and the retry is counted) if one more retry fits the budget."""
        if self.retries >= self.allowed():
            return False
        self.retries += 1
        return True

    def snapshot(self):
        """Requests, retries and the retries still allowed."""
        return {"requests": self.requests, "retries": self.retries,
                "left": self.allowed() - self.retries}
''')

# the input draws both the probes (in the sandbox) and the checks (in the grader) run
_DRAW_BUDGET = '''def _draw_budget(rng):
    requests = rng.randint(30, 300)
    return rng.randint(5, 40) / 100, rng.randint(1, 4), requests, requests + rng.randint(0, 50)
'''

SHAPE = Shape(
    name="budget", family="retry_storm", module="@n@_retry_budget.py",
    what="a retry budget for @n@ calls", feature="budget snapshots for @n@ calls",
    source=_SOURCE, good=_GOOD,
    bug=(('''        if self.retries >= self.allowed():
            return False
        self.retries += 1
        return True''', '''        if self.retries > self.allowed():
            return False
        return True'''),),
    tests='''from @pkg@.@n@_retry_budget import @N@RetryBudget


def test_a_new_budget_allows_the_minimum():
    assert @N@RetryBudget(minimum=2).can_retry()
''',
    feature_tests='''

def test_snapshot_of_a_new_budget():
    assert @N@RetryBudget(minimum=2).snapshot() == {"requests": 0, "retries": 0, "left": 2}
''',
    probes='''from @pkg@.@n@_retry_budget import @N@RetryBudget


def probe_ratio_is_checked():
    @N@RetryBudget(ratio=1.5)
    return "accepted"


def probe_requests_raise_the_allowance():
    budget = @N@RetryBudget(ratio=0.5, minimum=0)
    for _ in range(10):
        budget.record_request()
    return budget.allowed()


def probe_snapshot_of_a_used_budget():
    budget = @N@RetryBudget(ratio=0.1, minimum=2)
    for _ in range(40):
        budget.record_request()
    budget.can_retry()
    return budget.snapshot()["requests"]


def probe_a_fresh_budget_grants_a_retry():
    return @N@RetryBudget(minimum=1).can_retry()


''' + _DRAW_BUDGET + '''


def probe_retries_stop_at_the_budget(rng):
    ratio, minimum, requests, attempts = _draw_budget(rng)
    budget = @N@RetryBudget(ratio=ratio, minimum=minimum)
    for _ in range(requests):
        budget.record_request()
    granted = sum(budget.can_retry() for _ in range(attempts))
    return {"granted": granted, "snapshot": budget.snapshot()}
''',
    checks='''def test_ratio_is_checked(seen):
    assert seen.raised == "ValueError"


def test_requests_raise_the_allowance(seen):
    assert seen.value == 5


def test_snapshot_of_a_used_budget(seen):
    assert seen.value == 40


def test_a_fresh_budget_grants_a_retry(seen):
    assert seen.value is True


''' + _DRAW_BUDGET + '''


def test_retries_stop_at_the_budget(seen, rng):
    ratio, minimum, requests, attempts = _draw_budget(rng)
    allowed = max(minimum, int(requests * ratio))
    assert seen.value == {"granted": allowed, "snapshot": {"requests": requests, "retries": allowed, "left": 0}}
''')
SPLIT = "heldout"
