"""Checks for the guards of checkout, run by the grader on the probes' observations."""


def test_breaker_opens_after_consecutive_slow_calls(seen):
    assert seen.value == {"after_two": "closed", "after_three": "open", "allows": False}


def test_a_fast_call_resets_the_failure_count(seen):
    assert seen.value == "closed"


def test_open_breaker_answers_503_without_calling_payment(seen):
    assert seen.value == {"statuses": [502] * 4 + [503] * 6, "payment_calls": 4}


def test_breaker_half_opens_then_closes_after_good_calls(seen):
    assert seen.value == {"allows_when_open": False, "allows_after_wait": True,
                          "state_after_wait": "half_open", "state_after_good_calls": "closed"}


def test_a_failed_trial_call_reopens_the_breaker(seen):
    assert seen.value == {"allows_trial": True, "state": "open", "allows_after": False}


def test_backup_window_is_sunday_afternoon_utc(seen):
    assert seen.value == {"sunday_14_30": True, "monday_noon": False, "sunday_16_00": False}


def test_checkout_paces_writes_only_during_the_backup_window(seen):
    pacing = seen.value["pacing_ms"]
    assert pacing > 0
    assert seen.value["backup"] == {"status": 200, "charge_id": "ch-o-1", "pacing_ms": pacing}
    assert seen.value["slept"] == [pacing / 1000]
    assert seen.value["quiet"]["pacing_ms"] == 0
