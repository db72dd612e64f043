"""Hidden tests for orders.auth_client: bounded, spaced-out retries and the claims cache."""

import math

from orders.auth_client import AuthClient, AuthRejected, AuthUnavailable
from orders.checkout import Checkout, CheckoutDenied, Order

CLAIMS = {"sub": "cust-9", "scope": ["orders:read", "orders:write"]}


class FlakyTransport:
    """Raises AuthUnavailable on the first ``failures`` calls, then returns CLAIMS."""

    def __init__(self, failures=0, error=AuthUnavailable):
        self.failures = failures
        self.error = error
        self.calls = 0

    def validate(self, token):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error("auth overloaded")
        return dict(CLAIMS)


class ScaledRng:
    """A stand-in for random.Random whose uniform(a, b) returns a + (b - a) * fraction."""

    def __init__(self, fraction):
        self.fraction = fraction
        self.bounds = []

    def uniform(self, low, high):
        self.bounds.append((low, high))
        return low + (high - low) * self.fraction


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _exhaust(client):
    try:
        client.validate("tok")
    except AuthUnavailable:
        return
    raise AssertionError("validate should raise AuthUnavailable when auth never answers")


def test_default_retries_are_bounded():
    transport = FlakyTransport(failures=10_000)
    _exhaust(AuthClient(transport, sleep=lambda seconds: None, rng=ScaledRng(1.0)))
    assert 2 <= transport.calls <= 6, f"{transport.calls} calls to auth for one validation"


def test_default_pauses_back_off_exponentially():
    sleeps = []
    client = AuthClient(FlakyTransport(failures=10_000), sleep=sleeps.append, rng=ScaledRng(1.0))
    _exhaust(client)
    assert sleeps and sleeps[0] > 0, sleeps
    for earlier, later in zip(sleeps, sleeps[1:]):
        assert math.isclose(later, min(client.max_delay, 2 * earlier)), sleeps


def test_default_pauses_are_jittered():
    sleeps = []
    rng = ScaledRng(0.25)
    _exhaust(AuthClient(FlakyTransport(failures=10_000), sleep=sleeps.append, rng=rng))
    assert len(rng.bounds) == len(sleeps)
    assert all(high > low for low, high in rng.bounds), rng.bounds
    assert all(math.isclose(pause, high * 0.25) for pause, (_, high) in zip(sleeps, rng.bounds))


def test_recovers_after_transient_failures():
    sleeps = []
    transport = FlakyTransport(failures=2)
    client = AuthClient(transport, max_retries=3, base_delay=0.01, max_delay=1.0,
                        sleep=sleeps.append, rng=ScaledRng(1.0))
    assert client.validate("tok") == CLAIMS
    assert transport.calls == 3
    assert len(sleeps) == 2 and math.isclose(sleeps[0], 0.01) and math.isclose(sleeps[1], 0.02)


def test_rejected_token_is_not_retried():
    transport = FlakyTransport(failures=1, error=AuthRejected)
    client = AuthClient(transport, sleep=lambda seconds: None, rng=ScaledRng(1.0))
    try:
        client.validate("expired")
    except AuthRejected:
        pass
    else:
        raise AssertionError("an invalid token must raise AuthRejected")
    assert transport.calls == 1


def test_validated_claims_are_cached_within_the_ttl():
    transport = FlakyTransport()
    clock = Clock()
    client = AuthClient(transport, sleep=lambda seconds: None, clock=clock)
    assert client.validate("tok") == CLAIMS
    clock.now += 10
    assert client.validate("tok") == CLAIMS
    assert transport.calls == 1


def test_cached_claims_expire_after_the_ttl():
    transport = FlakyTransport()
    clock = Clock()
    client = AuthClient(transport, sleep=lambda seconds: None, clock=clock, cache_ttl=30.0)
    client.validate("tok")
    clock.now += 31
    client.validate("tok")
    client.validate("other")
    assert transport.calls == 3


def test_checkout_accepts_only_the_token_owner():
    checkout = Checkout(AuthClient(FlakyTransport(), sleep=lambda seconds: None))
    order = checkout.place(Order("ord-1", "cust-9", 2500), "tok")
    assert order.status == "processing"
    try:
        checkout.place(Order("ord-2", "cust-3", 900), "tok")
    except CheckoutDenied:
        return
    raise AssertionError("a token may not place orders for another customer")
