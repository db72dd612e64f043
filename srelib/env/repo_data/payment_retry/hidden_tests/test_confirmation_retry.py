"""Hidden tests for confirmation publishing in payment.processor."""

import math

from payment.gateway import CardDeclined, Gateway
from payment.processor import ConfirmationFailed, PaymentProcessor, RetryPolicy
from payment.queue_client import PublishTimeout
from payment.txn import Transaction


class FlakyQueue:
    """Times out on the first ``failures`` publishes, then acks; keeps a copy of each message."""

    def __init__(self, failures):
        self.failures = failures
        self.published = []

    def publish(self, message):
        self.published.append(dict(message))
        if len(self.published) <= self.failures:
            raise PublishTimeout("no ack")
        return {"offset": len(self.published)}


class DecliningApi:
    def authorize(self, order_id, amount_cents, currency):
        return {"status": "declined", "reason": "insufficient funds"}


NO_WAIT = RetryPolicy(max_attempts=4, base_delay=0.0, max_delay=0.0)


def _txn():
    return Transaction("txn-42", "order-7", 1999)


def _expect_failure(processor):
    try:
        processor.publish_confirmation(_txn())
    except ConfirmationFailed:
        return
    raise AssertionError("publish_confirmation should give up with ConfirmationFailed")


def test_pauses_grow_exponentially_up_to_the_cap():
    sleeps = []
    policy = RetryPolicy(max_attempts=5, base_delay=0.1, max_delay=0.5)
    processor = PaymentProcessor(None, FlakyQueue(failures=99), policy, sleep=sleeps.append)
    _expect_failure(processor)
    assert len(sleeps) == 4, sleeps
    for got, want in zip(sleeps, [0.1, 0.2, 0.4, 0.5]):
        assert math.isclose(got, want), sleeps


def test_no_pause_after_the_publish_that_succeeds():
    sleeps = []
    queue = FlakyQueue(failures=2)
    policy = RetryPolicy(max_attempts=5, base_delay=1.0, max_delay=10.0)
    processor = PaymentProcessor(None, queue, policy, sleep=sleeps.append)
    assert processor.publish_confirmation(_txn()) == {"offset": 3}
    assert sleeps == [1.0, 2.0]
    assert len(queue.published) == 3


def test_default_policy_spaces_out_every_retry():
    sleeps = []
    queue = FlakyQueue(failures=10_000)
    processor = PaymentProcessor(None, queue, sleep=sleeps.append)
    _expect_failure(processor)
    policy = processor.policy
    assert len(queue.published) == policy.max_attempts
    assert len(sleeps) == policy.max_attempts - 1
    assert sleeps[0] > 0
    assert all(later >= earlier for earlier, later in zip(sleeps, sleeps[1:])), sleeps
    assert max(sleeps) <= policy.max_delay


def test_confirmation_carries_an_idempotency_key():
    queue = FlakyQueue(failures=0)
    processor = PaymentProcessor(None, queue, NO_WAIT)
    assert processor.publish_confirmation(_txn()) == {"offset": 1}
    message = queue.published[0]
    assert message["idempotency_key"] == "confirm:txn-42"
    assert message["order_id"] == "order-7"
    assert message["amount_cents"] == 1999


def test_retried_confirmations_reuse_the_key_and_are_counted():
    queue = FlakyQueue(failures=2)
    processor = PaymentProcessor(None, queue, NO_WAIT)
    processor.publish_confirmation(_txn())
    keys = {message["idempotency_key"] for message in queue.published}
    assert keys == {"confirm:txn-42"}
    assert processor.retries_total == 2


def test_gives_up_after_max_attempts():
    queue = FlakyQueue(failures=99)
    processor = PaymentProcessor(None, queue, RetryPolicy(max_attempts=3, base_delay=0.0, max_delay=0.0))
    _expect_failure(processor)
    assert len(queue.published) == 3


def test_declined_card_is_never_confirmed():
    queue = FlakyQueue(failures=0)
    processor = PaymentProcessor(Gateway(DecliningApi()), queue, NO_WAIT)
    txn = _txn()
    try:
        processor.process(txn)
    except CardDeclined:
        pass
    else:
        raise AssertionError("a declined card must raise CardDeclined")
    assert txn.status == "declined"
    assert queue.published == []
