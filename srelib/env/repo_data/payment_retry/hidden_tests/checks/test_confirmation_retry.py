"""Checks for confirmation publishing, run by the grader on the probes' observations."""

import math


def _gave_up(seen):
    assert seen.value["raised"] == "ConfirmationFailed", \
        "publish_confirmation should give up with ConfirmationFailed"
    return seen.value


def test_pauses_grow_exponentially_up_to_the_cap(seen):
    sleeps = _gave_up(seen)["sleeps"]
    assert len(sleeps) == 4, sleeps
    for got, want in zip(sleeps, [0.1, 0.2, 0.4, 0.5]):
        assert math.isclose(got, want), sleeps


def test_no_pause_after_the_publish_that_succeeds(seen):
    assert seen.value == {"ack": {"offset": 3}, "raised": None, "sleeps": [1.0, 2.0], "published": 3}


def test_default_policy_spaces_out_every_retry(seen):
    run = _gave_up(seen)
    sleeps = run["sleeps"]
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
