"""Probes for the gateway's token checks and retry budget (gateway.tokens, gateway.budget); judged by checks/."""

from gateway.budget import RetryBudget
from gateway.tokens import AuthTimeout, AuthUnavailable, TokenChecker

VALID = {"valid": True, "sub": "user-7", "scope": "orders:write"}


class Auth:
    """auth's token-check API: raises the queued failures first, then answers ``answer``."""

    def __init__(self, failures=(), answer=VALID, always=None):
        self.failures = list(failures)
        self.answer = answer
        self.always = always
        self.calls = 0

    def check(self, token, timeout_s):
        self.calls += 1
        if self.always is not None:
            raise self.always()
        if self.failures:
            raise self.failures.pop(0)
        return dict(self.answer)


class Clock:
    def __init__(self):
        self.now = 500.0

    def __call__(self):
        return self.now


def _outcome(call):
    """The exception type ``call`` raised, or None if it returned."""
    try:
        call()
    except Exception as exc:
        return type(exc).__name__
    return None


def _outage(failure, checks):
    auth, sleeps = Auth(always=failure), []
    checker = TokenChecker(auth, sleep=sleeps.append)
    raised = sorted({_outcome(lambda: checker.check(f"token-{i}")) for i in range(checks)}, key=str)
    return {"checks": checks, "calls": auth.calls, "raised": raised}


def _draw_outage(rng):
    """How many token checks the outage sees and a user, drawn for one grading."""
    return rng.randint(100, 400), f"user-{rng.getrandbits(40):x}"



def _recovered(user):
    """The subject a fresh checker reads from auth's answer for ``user`` (the drawn echo)."""
    return TokenChecker(Auth(answer={**VALID, "sub": user}), sleep=lambda s: None).check(f"token-{user}")["sub"]


def probe_an_auth_outage_is_not_amplified(rng):
    checks, user = _draw_outage(rng)
    return {**_outage(AuthTimeout, checks), "after": _recovered(user)}


def _draw_reserves(rng):
    """Two budget reserves, the smaller first, and a user, drawn for one grading."""
    small = rng.randint(1, 2)
    return small, rng.randint(small + 1, 15), f"user-{rng.getrandbits(40):x}"



def probe_timeouts_spend_the_retry_budget(rng):
    small, large, user = _draw_reserves(rng)
    runs = []
    for reserve in (small, large):
        auth, budget = Auth(always=AuthTimeout), RetryBudget(ratio=0.0, reserve=reserve)
        checker = TokenChecker(auth, budget=budget, sleep=lambda s: None)
        runs.append({"reserve": reserve, "raised": _outcome(lambda: checker.check("token")),
                     "calls": auth.calls, "remaining": budget.remaining})
    return {"runs": runs, "after": _recovered(user)}


def probe_unavailable_retries_stay_within_the_budget():
    return _outage(AuthUnavailable, 100)


def probe_a_timed_out_check_is_retried():
    auth = Auth(failures=[AuthTimeout("no answer in 250ms")])
    claims = TokenChecker(auth, sleep=lambda s: None).check("token")
    return {"sub": claims["sub"], "calls": auth.calls}


def probe_retry_after_is_honoured_and_capped():
    waited = []
    for hint in (0.3, 30.0):
        sleeps = []
        auth = Auth(failures=[AuthUnavailable("503 from auth", retry_after=hint)])
        claims = TokenChecker(auth, sleep=sleeps.append).check("token")
        waited.append({"sub": claims["sub"], "calls": auth.calls, "sleeps": sleeps})
    return waited


def probe_valid_token_is_checked_once_per_ttl():
    auth, clock = Auth(), Clock()
    checker = TokenChecker(auth, sleep=lambda s: None, clock=clock)
    subs = []
    for advance in (0.0, 10.0, 21.0):
        clock.now += advance
        subs.append(checker.check("token")["sub"])
    return {"subs": subs, "calls": auth.calls}


def probe_rejected_token_is_not_retried():
    auth = Auth(answer={"valid": False, "reason": "revoked"})
    checker = TokenChecker(auth, sleep=lambda s: None)
    return {"raised": _outcome(lambda: checker.check("revoked-token")), "calls": auth.calls}


def probe_budget_rejects_a_ratio_above_one():
    RetryBudget(ratio=1.5)
    return "accepted"
