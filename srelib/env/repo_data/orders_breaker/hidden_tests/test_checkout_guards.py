"""Hidden tests for the intentional guards of checkout (circuit_breaker_noop: no change needed)."""

from datetime import datetime, timezone

from orders.backup import in_backup_window, write_pacing_ms
from orders.circuit_breaker import CLOSED, HALF_OPEN, OPEN, CircuitBreaker
from orders.handlers.checkout import Checkout, PaymentError

SUNDAY_BACKUP = datetime(2025, 1, 19, 14, 30, tzinfo=timezone.utc)
MONDAY_NOON = datetime(2025, 1, 13, 12, 0, tzinfo=timezone.utc)


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


class FailingPayment:
    def __init__(self):
        self.calls = 0

    def charge(self, order_id, amount_cents):
        self.calls += 1
        raise PaymentError("acquirer timeout")


class Payment:
    def charge(self, order_id, amount_cents):
        return f"ch-{order_id}"


def _checkout(payment, breaker, now=MONDAY_NOON, slept=None):
    return Checkout(payment, breaker, now=lambda: now,
                    sleep=(slept.append if slept is not None else (lambda s: None)))


def test_breaker_opens_after_consecutive_slow_calls():
    breaker = CircuitBreaker(failure_threshold=3, clock=Clock())
    for _ in range(2):
        breaker.record(True, 2000)
    assert breaker.state == CLOSED
    breaker.record(True, 2000)
    assert breaker.state == OPEN and not breaker.allow()


def test_a_fast_call_resets_the_failure_count():
    breaker = CircuitBreaker(failure_threshold=3, clock=Clock())
    for latency in (2000, 2000, 10, 2000, 2000):
        breaker.record(True, latency)
    assert breaker.state == CLOSED


def test_open_breaker_answers_503_without_calling_payment():
    payment = FailingPayment()
    checkout = _checkout(payment, CircuitBreaker(failure_threshold=4, clock=Clock()))
    statuses = [checkout.submit(f"o-{i}", 100)["status"] for i in range(10)]
    assert statuses == [502] * 4 + [503] * 6
    assert payment.calls == 4


def test_breaker_half_opens_then_closes_after_good_calls():
    clock = Clock()
    breaker = CircuitBreaker(failure_threshold=1, success_threshold=2, open_seconds=30, clock=clock)
    breaker.record(False, 5)
    assert not breaker.allow()
    clock.t += 30
    assert breaker.allow() and breaker.state == HALF_OPEN
    breaker.record(True, 5)
    breaker.record(True, 5)
    assert breaker.state == CLOSED


def test_a_failed_trial_call_reopens_the_breaker():
    clock = Clock()
    breaker = CircuitBreaker(failure_threshold=1, open_seconds=30, clock=clock)
    breaker.record(False, 5)
    clock.t += 31
    assert breaker.allow()
    breaker.record(False, 5)
    assert breaker.state == OPEN and not breaker.allow()


def test_backup_window_is_sunday_afternoon_utc():
    assert in_backup_window(SUNDAY_BACKUP)
    assert not in_backup_window(MONDAY_NOON)
    assert not in_backup_window(datetime(2025, 1, 19, 16, 0, tzinfo=timezone.utc))


def test_checkout_paces_writes_only_during_the_backup_window():
    slept = []
    checkout = _checkout(Payment(), CircuitBreaker(clock=Clock()), now=SUNDAY_BACKUP, slept=slept)
    assert checkout.submit("o-1", 100) == {"status": 200, "charge_id": "ch-o-1",
                                           "pacing_ms": write_pacing_ms(SUNDAY_BACKUP)}
    assert slept == [write_pacing_ms(SUNDAY_BACKUP) / 1000] and slept[0] > 0
    quiet = _checkout(Payment(), CircuitBreaker(clock=Clock()))
    assert quiet.submit("o-2", 100)["pacing_ms"] == 0
