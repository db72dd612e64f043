"""Checks for orders.auth_client, run by the grader on the probes' observations."""

import math

CLAIMS = {"sub": "cust-9", "scope": ["orders:read", "orders:write"]}


def _exhausted(seen):
    assert seen.value["raised"] == "AuthUnavailable", \
        "validate should raise AuthUnavailable when auth never answers"
    return seen.value


def _draw_fraction(rng):
    """Where in its jitter range each pause falls, drawn for one grading."""
    return 0.05 + 0.95 * (rng.getrandbits(32) + 1) / 2**32



def _jittered(seen, fraction):
    """The run, once it gave up and each pause fell ``fraction`` of the way up its jitter range."""
    run = _exhausted(seen)
    sleeps, bounds = run["sleeps"], run["bounds"]
    assert sleeps and len(bounds) == len(sleeps), (sleeps, bounds)
    assert all(math.isclose(pause, low + (high - low) * fraction) for pause, (low, high) in zip(sleeps, bounds))
    return run


def test_default_retries_are_bounded(seen, rng):
    calls = _jittered(seen, _draw_fraction(rng))["calls"]
    assert 2 <= calls <= 6, f"{calls} calls to auth for one validation"


def _draw_backoff(rng):
    return _draw_fraction(rng)



def test_default_pauses_back_off_exponentially(seen, rng):
    run = _jittered(seen, _draw_backoff(rng))
    highs, cap = [high for _, high in run["bounds"]], run["max_delay"]
    assert len(highs) >= 2 and 0 < highs[0] < cap, highs
    for earlier, later in zip(highs, highs[1:]):
        assert math.isclose(later, min(cap, 2 * earlier)), highs


def _draw_jitter(rng):
    return _draw_fraction(rng)



def test_default_pauses_are_jittered(seen, rng):
    bounds = _jittered(seen, _draw_jitter(rng))["bounds"]
    assert all(high > low for low, high in bounds), bounds


def test_recovers_after_transient_failures(seen):
    assert seen.value["claims"] == CLAIMS and seen.value["calls"] == 3
    sleeps = seen.value["sleeps"]
    assert len(sleeps) == 2 and math.isclose(sleeps[0], 0.01) and math.isclose(sleeps[1], 0.02)


def test_rejected_token_is_not_retried(seen):
    assert seen.value == {"raised": "AuthRejected", "calls": 1}


def test_validated_claims_are_cached_within_the_ttl(seen):
    assert seen.value == {"claims": [CLAIMS, CLAIMS], "calls": 1}


def test_cached_claims_expire_after_the_ttl(seen):
    assert seen.value == 3


def test_checkout_accepts_only_the_token_owner(seen):
    assert seen.value == {"status": "processing", "other_customer": "CheckoutDenied"}, \
        "a token may not place orders for another customer"
