"""Probes for orders.auth_client (retries and the claims cache); judged by checks/."""

from orders.auth_client import AuthClient, AuthUnavailable
from orders.checkout import Checkout, Order

CLAIMS = {"sub": "cust-9", "scope": ["orders:read", "orders:write"]}


class FlakyTransport:
    """Raises ``error`` on the first ``failures`` calls, then returns CLAIMS."""

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
        self.bounds.append([low, high])
        return low + (high - low) * self.fraction


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _outcome(call):
    """The exception type ``call`` raised, or None if it returned."""
    try:
        call()
    except Exception as exc:
        return type(exc).__name__
    return None


def _never_answers(fraction):
    sleeps, rng, transport = [], ScaledRng(fraction), FlakyTransport(failures=10_000)
    client = AuthClient(transport, sleep=sleeps.append, rng=rng)
    return {"raised": _outcome(lambda: client.validate("tok")), "calls": transport.calls,
            "sleeps": sleeps, "bounds": rng.bounds, "max_delay": getattr(client, "max_delay", None)}


def _draw_fraction(rng):
    """Where in its jitter range each pause falls, drawn for one grading."""
    return 0.05 + 0.95 * (rng.getrandbits(32) + 1) / 2**32



def probe_default_retries_are_bounded(rng):
    return _never_answers(_draw_fraction(rng))


def _draw_backoff(rng):
    return _draw_fraction(rng)



def probe_default_pauses_back_off_exponentially(rng):
    return _never_answers(_draw_backoff(rng))


def _draw_jitter(rng):
    return _draw_fraction(rng)



def probe_default_pauses_are_jittered(rng):
    return _never_answers(_draw_jitter(rng))


def probe_recovers_after_transient_failures():
    sleeps, transport = [], FlakyTransport(failures=2)
    client = AuthClient(transport, max_retries=3, base_delay=0.01, max_delay=1.0,
                        sleep=sleeps.append, rng=ScaledRng(1.0))
    return {"claims": client.validate("tok"), "calls": transport.calls, "sleeps": sleeps}


def probe_rejected_token_is_not_retried():
    from orders.auth_client import AuthRejected

    transport = FlakyTransport(failures=1, error=AuthRejected)
    client = AuthClient(transport, sleep=lambda seconds: None, rng=ScaledRng(1.0))
    return {"raised": _outcome(lambda: client.validate("expired")), "calls": transport.calls}


def probe_validated_claims_are_cached_within_the_ttl():
    transport, clock = FlakyTransport(), Clock()
    client = AuthClient(transport, sleep=lambda seconds: None, clock=clock)
    first = client.validate("tok")
    clock.now += 10
    return {"claims": [first, client.validate("tok")], "calls": transport.calls}


def probe_cached_claims_expire_after_the_ttl():
    transport, clock = FlakyTransport(), Clock()
    client = AuthClient(transport, sleep=lambda seconds: None, clock=clock, cache_ttl=30.0)
    client.validate("tok")
    clock.now += 31
    client.validate("tok")
    client.validate("other")
    return transport.calls


def probe_checkout_accepts_only_the_token_owner():
    checkout = Checkout(AuthClient(FlakyTransport(), sleep=lambda seconds: None))
    order = checkout.place(Order("ord-1", "cust-9", 2500), "tok")
    return {"status": order.status,
            "other_customer": _outcome(lambda: checkout.place(Order("ord-2", "cust-3", 900), "tok"))}
