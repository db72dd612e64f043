"""Checks for orders.auth_client, run by the grader on the probes' observations."""

import math

CLAIMS = {"sub": "cust-9", "scope": ["orders:read", "orders:write"]}


def _exhausted(seen):
    assert seen.value["raised"] == "AuthUnavailable", \
        "validate should raise AuthUnavailable when auth never answers"
    return seen.value


def test_default_retries_are_bounded(seen):
    calls = _exhausted(seen)["calls"]
    assert 2 <= calls <= 6, f"{calls} calls to auth for one validation"


def test_default_pauses_back_off_exponentially(seen):
    sleeps, cap = _exhausted(seen)["sleeps"], seen.value["max_delay"]
    assert len(sleeps) >= 2 and 0 < sleeps[0] < cap, sleeps
    for earlier, later in zip(sleeps, sleeps[1:]):
        assert math.isclose(later, min(cap, 2 * earlier)), sleeps


def test_default_pauses_are_jittered(seen):
    sleeps, bounds = _exhausted(seen)["sleeps"], seen.value["bounds"]
    assert sleeps and len(bounds) == len(sleeps), (sleeps, bounds)
    assert all(high > low for low, high in bounds), bounds
    assert all(math.isclose(pause, high * 0.25) for pause, (_, high) in zip(sleeps, bounds))


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
