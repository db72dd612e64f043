"""Checks for confirmation publishing, run by the grader on the probes' observations."""

import math


def _gave_up(seen):
    assert seen.value["raised"] == "ConfirmationFailed", \
        "publish_confirmation should give up with ConfirmationFailed"
    return seen.value


def _draw_pauses(rng):
    """Attempts, a base delay and a cap, drawn for one grading."""
    base = rng.randint(1, 500) / 1000
    return rng.randint(4, 8), base, round(base * rng.uniform(1.5, 40.0), 6)



def test_pauses_grow_exponentially_up_to_the_cap(seen, rng):
    attempts, base, cap = _draw_pauses(rng)
    sleeps = _gave_up(seen)["sleeps"]
    assert len(sleeps) == attempts - 1, sleeps
    for n, got in enumerate(sleeps):
        assert math.isclose(got, min(base * 2 ** n, cap)), sleeps


def _draw_recovery(rng):
    """Failures before the ack, attempts, a base delay and a cap, drawn for one grading."""
    failures, base = rng.randint(1, 4), rng.randint(1, 2000) / 1000
    return failures, failures + 1 + rng.randint(0, 3), base, base * 2 ** rng.randint(0, 5)



def test_no_pause_after_the_publish_that_succeeds(seen, rng):
    failures, _, base, cap = _draw_recovery(rng)
    run = seen.value
    assert {k: run[k] for k in ("ack", "raised", "published")} == \
        {"ack": {"offset": failures + 1}, "raised": None, "published": failures + 1}, run
    assert len(run["sleeps"]) == failures, run
    assert all(math.isclose(got, min(base * 2 ** n, cap)) for n, got in enumerate(run["sleeps"])), run


def _draw_transaction(rng):
    """A transaction's id, order and amount, drawn for one grading."""
    return f"txn-{rng.getrandbits(40):x}", f"order-{rng.getrandbits(40):x}", rng.randint(1, 10**6)



def test_default_policy_spaces_out_every_retry(seen, rng):
    txn_id, _, _ = _draw_transaction(rng)
    run = _gave_up(seen)
    sleeps = run["sleeps"]
    assert run["keys"] == [f"confirm:{txn_id}"], run["keys"]
    assert run["published"] == run["max_attempts"]
    assert len(sleeps) == run["max_attempts"] - 1
    assert sleeps[0] > 0
    assert all(later >= earlier for earlier, later in zip(sleeps, sleeps[1:])), sleeps
    assert max(sleeps) <= run["max_delay"]


def test_confirmation_carries_an_idempotency_key(seen):
    assert seen.value["ack"] == {"offset": 1} and seen.value["raised"] is None
    message = seen.value["messages"][0]
    assert message["idempotency_key"] == "confirm:txn-42"
    assert message["order_id"] == "order-7"
    assert message["amount_cents"] == 1999


def test_retried_confirmations_reuse_the_key_and_are_counted(seen):
    assert seen.value["raised"] is None
    assert seen.value["keys"] == ["confirm:txn-42"]
    assert seen.value["retries_total"] == 2


def test_gives_up_after_max_attempts(seen):
    assert _gave_up(seen)["published"] == 3


def test_declined_card_is_never_confirmed(seen):
    assert seen.value == {"raised": "CardDeclined", "status": "declined", "published": []}, \
        "a declined card must raise CardDeclined and publish nothing"
