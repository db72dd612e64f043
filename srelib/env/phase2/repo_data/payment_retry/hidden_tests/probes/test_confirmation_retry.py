"""Probes for confirmation publishing in payment.processor; judged by checks/."""

from payment.gateway import Gateway
from payment.processor import PaymentProcessor, RetryPolicy
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


def _no_wait():
    return RetryPolicy(max_attempts=4, base_delay=0.0, max_delay=0.0)


def _txn():
    return Transaction("txn-42", "order-7", 1999)


def _publish(processor, txn=None):
    """``{"ack": what publish_confirmation returned, "raised": the exception type or None}``."""
    try:
        return {"ack": processor.publish_confirmation(txn or _txn()), "raised": None}
    except Exception as exc:
        return {"ack": None, "raised": type(exc).__name__}


def _draw_pauses(rng):
    """Attempts, a base delay and a cap, drawn for one grading."""
    base = rng.randint(1, 500) / 1000
    return rng.randint(4, 8), base, round(base * rng.uniform(1.5, 40.0), 6)



def probe_pauses_grow_exponentially_up_to_the_cap(rng):
    attempts, base, cap = _draw_pauses(rng)
    sleeps = []
    policy = RetryPolicy(max_attempts=attempts, base_delay=base, max_delay=cap)
    processor = PaymentProcessor(None, FlakyQueue(failures=99), policy, sleep=sleeps.append)
    return {**_publish(processor), "sleeps": sleeps}


def _draw_recovery(rng):
    """Failures before the ack, attempts, a base delay and a cap, drawn for one grading."""
    failures, base = rng.randint(1, 4), rng.randint(1, 2000) / 1000
    return failures, failures + 1 + rng.randint(0, 3), base, base * 2 ** rng.randint(0, 5)



def probe_no_pause_after_the_publish_that_succeeds(rng):
    failures, attempts, base, cap = _draw_recovery(rng)
    sleeps, queue = [], FlakyQueue(failures=failures)
    policy = RetryPolicy(max_attempts=attempts, base_delay=base, max_delay=cap)
    processor = PaymentProcessor(None, queue, policy, sleep=sleeps.append)
    return {**_publish(processor), "sleeps": sleeps, "published": len(queue.published)}


def _draw_transaction(rng):
    """A transaction's id, order and amount, drawn for one grading."""
    return f"txn-{rng.getrandbits(40):x}", f"order-{rng.getrandbits(40):x}", rng.randint(1, 10**6)



def probe_default_policy_spaces_out_every_retry(rng):
    sleeps, queue = [], FlakyQueue(failures=10_000)
    processor = PaymentProcessor(None, queue, sleep=sleeps.append)
    outcome = _publish(processor, Transaction(*_draw_transaction(rng)))
    return {**outcome, "sleeps": sleeps, "published": len(queue.published),
            "max_attempts": processor.policy.max_attempts, "max_delay": processor.policy.max_delay,
            "keys": sorted({m.get("idempotency_key") for m in queue.published}, key=str)}


def probe_confirmation_carries_an_idempotency_key():
    queue = FlakyQueue(failures=0)
    outcome = _publish(PaymentProcessor(None, queue, _no_wait()))
    return {**outcome, "messages": queue.published}


def probe_retried_confirmations_reuse_the_key_and_are_counted():
    queue = FlakyQueue(failures=2)
    processor = PaymentProcessor(None, queue, _no_wait())
    outcome = _publish(processor)
    return {**outcome, "keys": sorted({m.get("idempotency_key") for m in queue.published}, key=str),
            "retries_total": processor.retries_total}


def probe_gives_up_after_max_attempts():
    queue = FlakyQueue(failures=99)
    processor = PaymentProcessor(None, queue, RetryPolicy(max_attempts=3, base_delay=0.0, max_delay=0.0))
    return {**_publish(processor), "published": len(queue.published)}


def probe_declined_card_is_never_confirmed():
    queue, txn = FlakyQueue(failures=0), _txn()
    processor = PaymentProcessor(Gateway(DecliningApi()), queue, _no_wait())
    try:
        processor.process(txn)
        raised = None
    except Exception as exc:
        raised = type(exc).__name__
    return {"raised": raised, "status": txn.status, "published": queue.published}
