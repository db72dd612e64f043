"""Charging a transaction and confirming it to orders through the queue."""

import time
from dataclasses import dataclass

from payment.queue_client import PublishTimeout


class ConfirmationFailed(Exception):
    """The confirmation could not be published within the retry policy."""


@dataclass(frozen=True)
class RetryPolicy:
    """How persistently a confirmation is republished after a publish timeout.

    After failed attempt ``n`` (1-based) the processor pauses
    ``min(base_delay * 2 ** (n - 1), max_delay)`` seconds before the next attempt,
    so a backed-up queue receives fewer publishes per second the longer it
    struggles, never a flood. There is no pause after the last attempt.
    """

    max_attempts: int = 10
    base_delay: float = 0.2
    max_delay: float = 5.0

    def delay(self, attempt: int) -> float:
        """Seconds to pause after failed attempt ``attempt`` (1-based)."""
        return min(self.base_delay * 2 ** (attempt - 1), self.max_delay)


class PaymentProcessor:
    """Charges a transaction, then publishes its confirmation for orders.

    ``retries_total`` counts republished confirmations (exported as the
    ``payment_confirm_retries_total`` metric).
    """

    def __init__(self, gateway, queue, policy=None, sleep=time.sleep):
        self.gateway = gateway
        self.queue = queue
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self.retries_total = 0

    def process(self, txn):
        """Charge ``txn`` and confirm it; returns the queue's ack."""
        self.gateway.charge(txn)
        return self.publish_confirmation(txn)

    def publish_confirmation(self, txn):
        """Publish the confirmation of ``txn``, retrying timeouts per the policy.

        Every attempt carries the same idempotency key, so the queue delivers a
        republished confirmation to orders at most once.
        """
        message = dict(txn.confirmation_payload(), idempotency_key=f"confirm:{txn.txn_id}")
        for attempt in range(1, self.policy.max_attempts + 1):
            try:
                return self.queue.publish(message)
            except PublishTimeout:
                if attempt == self.policy.max_attempts:
                    break
                self.retries_total += 1
                self._sleep(self.policy.delay(attempt))
        raise ConfirmationFailed(
            f"{txn.txn_id}: no ack after {self.policy.max_attempts} attempts"
        )
