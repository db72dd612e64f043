"""Probes for the intentional guards of checkout (circuit_breaker_noop); judged by checks/."""

from datetime import datetime, timezone

from orders.backup import in_backup_window, write_pacing_ms
from orders.circuit_breaker import CircuitBreaker
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


def probe_breaker_opens_after_consecutive_slow_calls():
    breaker = CircuitBreaker(failure_threshold=3, clock=Clock())
    for _ in range(2):
        breaker.record(True, 2000)
    after_two = breaker.state
    breaker.record(True, 2000)
    return {"after_two": after_two, "after_three": breaker.state, "allows": bool(breaker.allow())}


def probe_a_fast_call_resets_the_failure_count():
    breaker = CircuitBreaker(failure_threshold=3, clock=Clock())
    for latency in (2000, 2000, 10, 2000, 2000):
        breaker.record(True, latency)
    return breaker.state


def probe_open_breaker_answers_503_without_calling_payment():
    payment = FailingPayment()
    checkout = _checkout(payment, CircuitBreaker(failure_threshold=4, clock=Clock()))
    statuses = [checkout.submit(f"o-{i}", 100)["status"] for i in range(10)]
    return {"statuses": statuses, "payment_calls": payment.calls}


def probe_breaker_half_opens_then_closes_after_good_calls():
    clock = Clock()
    breaker = CircuitBreaker(failure_threshold=1, success_threshold=2, open_seconds=30, clock=clock)
    breaker.record(False, 5)
    seen = {"allows_when_open": bool(breaker.allow())}
    clock.t += 30
    seen["allows_after_wait"] = bool(breaker.allow())
    seen["state_after_wait"] = breaker.state
    breaker.record(True, 5)
    breaker.record(True, 5)
    return {**seen, "state_after_good_calls": breaker.state}


def probe_a_failed_trial_call_reopens_the_breaker():
    clock = Clock()
    breaker = CircuitBreaker(failure_threshold=1, open_seconds=30, clock=clock)
    breaker.record(False, 5)
    clock.t += 31
    allows_trial = bool(breaker.allow())
    breaker.record(False, 5)
    return {"allows_trial": allows_trial, "state": breaker.state, "allows_after": bool(breaker.allow())}


def probe_backup_window_is_sunday_afternoon_utc():
    moments = {"sunday_14_30": SUNDAY_BACKUP, "monday_noon": MONDAY_NOON,
               "sunday_16_00": datetime(2025, 1, 19, 16, 0, tzinfo=timezone.utc)}
    return {name: bool(in_backup_window(moment)) for name, moment in moments.items()}


def probe_checkout_paces_writes_only_during_the_backup_window():
    slept = []
    busy = _checkout(Payment(), CircuitBreaker(clock=Clock()), now=SUNDAY_BACKUP, slept=slept)
    quiet = _checkout(Payment(), CircuitBreaker(clock=Clock()))
    return {"backup": busy.submit("o-1", 100), "slept": slept,
            "pacing_ms": write_pacing_ms(SUNDAY_BACKUP), "quiet": quiet.submit("o-2", 100)}
