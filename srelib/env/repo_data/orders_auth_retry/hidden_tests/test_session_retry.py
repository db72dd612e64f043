"""Hidden tests for token introspection retries (orders.auth_session, orders.retry, orders.settings)."""

import math

from orders.auth_session import AuthSession, AuthUnreachable, InvalidToken
from orders.retry import RetryPolicy, retry_call

ACTIVE = {"active": True, "sub": "cust-4", "scope": "orders:write"}


class AuthTransport:
    """Raises AuthUnreachable for the first ``failures`` posts, then answers ``response``."""

    def __init__(self, failures=0, response=ACTIVE):
        self.failures = failures
        self.response = response
        self.calls = 0

    def post(self, url, body, timeout_s):
        self.calls += 1
        if self.calls <= self.failures:
            raise AuthUnreachable("503 from auth")
        return dict(self.response)


class ScaledRng:
    """A stand-in for random.Random whose uniform(a, b) returns a + (b - a) * fraction."""

    def __init__(self, fraction):
        self.fraction = fraction
        self.bounds = []

    def uniform(self, low, high):
        self.bounds.append((low, high))
        return low + (high - low) * self.fraction


def _pauses_until_exhausted(transport, rng):
    sleeps = []
    session = AuthSession(transport, sleep=sleeps.append, rng=rng)
    try:
        session.introspect("tok")
    except AuthUnreachable:
        return sleeps
    raise AssertionError("introspect should raise AuthUnreachable when auth never answers")


def test_introspection_retries_are_bounded():
    transport = AuthTransport(failures=10_000)
    _pauses_until_exhausted(transport, ScaledRng(1.0))
    assert 2 <= transport.calls <= 5, f"{transport.calls} introspection calls for one token"


def test_introspection_pauses_are_jittered():
    rng = ScaledRng(0.25)
    sleeps = _pauses_until_exhausted(AuthTransport(failures=10_000), rng)
    assert sleeps and len(rng.bounds) == len(sleeps), (sleeps, rng.bounds)
    assert all(math.isclose(pause, high * 0.25) and high > 0 for pause, (_, high) in zip(sleeps, rng.bounds))


def test_replicas_do_not_retry_in_lockstep():
    first = _pauses_until_exhausted(AuthTransport(failures=10_000), ScaledRng(0.2))
    second = _pauses_until_exhausted(AuthTransport(failures=10_000), ScaledRng(0.7))
    assert first != second, first


def test_retry_call_pauses_grow_to_the_cap():
    sleeps = []
    calls = []

    def always_unreachable():
        calls.append(1)
        raise AuthUnreachable("down")

    policy = RetryPolicy(attempts=5, base_delay=0.5, max_delay=1.5, jitter=False)
    try:
        retry_call(always_unreachable, policy, retry_on=AuthUnreachable, sleep=sleeps.append)
    except AuthUnreachable:
        pass
    else:
        raise AssertionError("the last failure must be re-raised")
    assert len(calls) == 5
    assert sleeps == [0.5, 1.0, 1.5, 1.5]


def test_other_errors_are_not_retried():
    calls = []

    def broken():
        calls.append(1)
        raise KeyError("sub")

    try:
        retry_call(broken, RetryPolicy(attempts=4), retry_on=AuthUnreachable, sleep=lambda s: None)
    except KeyError:
        pass
    else:
        raise AssertionError("a non-retryable error must propagate")
    assert len(calls) == 1


def test_introspect_recovers_after_a_transient_failure():
    sleeps = []
    transport = AuthTransport(failures=1)
    policy = RetryPolicy(attempts=3, base_delay=0.2, max_delay=1.0, jitter=False)
    session = AuthSession(transport, policy=policy, sleep=sleeps.append)
    assert session.customer_id("tok") == "cust-4"
    assert transport.calls == 2 and sleeps == [0.2]


def test_inactive_token_is_rejected_without_retrying():
    transport = AuthTransport(response={"active": False})
    session = AuthSession(transport, sleep=lambda s: None, rng=ScaledRng(1.0))
    try:
        session.introspect("revoked")
    except InvalidToken:
        pass
    else:
        raise AssertionError("an inactive token must raise InvalidToken")
    assert transport.calls == 1


def test_policy_requires_at_least_one_attempt():
    try:
        RetryPolicy(attempts=0)
    except ValueError:
        return
    raise AssertionError("attempts=0 must be rejected")
