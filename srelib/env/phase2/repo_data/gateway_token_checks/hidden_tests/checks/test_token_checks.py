"""Checks for the gateway's token checks and retry budget, run by the grader on the probes' observations."""

#: The gateway's retry budget (settings.RETRY_RATIO, settings.RETRY_RESERVE).
RATIO, RESERVE = 0.1, 10


def _within_budget(run, failure, checks):
    assert run["raised"] == [failure], f"every check should end in {failure}: {run['raised']}"
    assert run["checks"] == checks
    retries = run["calls"] - run["checks"]
    assert 0 <= retries <= RATIO * run["checks"] + RESERVE + 1, \
        f"{run['calls']} calls to auth for {run['checks']} token checks"
    return retries


def _draw_outage(rng):
    """How many token checks the outage sees and a user, drawn for one grading."""
    return rng.randint(100, 400), f"user-{rng.getrandbits(40):x}"



def test_an_auth_outage_is_not_amplified(seen, rng):
    checks, user = _draw_outage(rng)
    assert seen.value["after"] == user
    _within_budget(seen.value, "AuthTimeout", checks)


def _draw_reserves(rng):
    """Two budget reserves, the smaller first, and a user, drawn for one grading."""
    small = rng.randint(1, 2)
    return small, rng.randint(small + 1, 15), f"user-{rng.getrandbits(40):x}"



def test_timeouts_spend_the_retry_budget(seen, rng):
    small_reserve, large_reserve, user = _draw_reserves(rng)
    assert seen.value["after"] == user
    small, large = seen.value["runs"]
    assert [small["reserve"], large["reserve"]] == [small_reserve, large_reserve]
    for run in (small, large):
        assert run["raised"] == "AuthTimeout", run
        assert 1 <= run["calls"] <= run["reserve"] + 1, f"{run['calls']} calls with a budget of {run['reserve']} retries"
        assert run["calls"] - 1 == run["reserve"] - run["remaining"], "a retry that did not spend the budget"
    assert small["calls"] <= large["calls"], "a larger budget allows no fewer retries"
    assert small["calls"] == small_reserve + 1, "a timed-out check is retried while the budget lasts"


def test_unavailable_retries_stay_within_the_budget(seen):
    assert _within_budget(seen.value, "AuthUnavailable", 100) > 0, "503s within the budget are retried"


def test_a_timed_out_check_is_retried(seen):
    assert seen.value == {"sub": "user-7", "calls": 2}, seen.value


def test_retry_after_is_honoured_and_capped(seen):
    short, long_ = seen.value
    assert short == {"sub": "user-7", "calls": 2, "sleeps": [0.3]}, short
    assert long_ == {"sub": "user-7", "calls": 2, "sleeps": [1.0]}, long_


def test_valid_token_is_checked_once_per_ttl(seen):
    assert seen.value == {"subs": ["user-7"] * 3, "calls": 2}, seen.value


def test_rejected_token_is_not_retried(seen):
    assert seen.value == {"raised": "Rejected", "calls": 1}, seen.value


def test_budget_rejects_a_ratio_above_one(seen):
    assert seen.raised == "ValueError", "ratio=1.5 must be rejected"
