"""Probes for orders.handlers.batch (memory_leak); judged by checks/."""

from orders.handlers.batch import BatchProcessor
from orders.handlers.single import SingleOrderHandler
from orders.models import Order
from orders.notifier import RecordingNotifier
from orders.storage import OrderStore


def _orders(n, prefix="o"):
    return [Order(f"{prefix}-{i}", "c-1", 100 + i, items=["sku"]) for i in range(n)]


def _processor(batch_size=10):
    store, notifier = OrderStore(), RecordingNotifier()
    return BatchProcessor(store, notifier, batch_size=batch_size), store, notifier


def _draw_stream(rng):
    """A batch size, an order count, an id prefix and a first amount, drawn for one grading."""
    return rng.randint(5, 40), rng.randint(1500, 3000), f"o{rng.getrandbits(40):x}", rng.randint(100, 10**6)



def probe_cache_stays_bounded_by_the_batch_size(rng):
    batch_size, count, prefix, amount = _draw_stream(rng)
    processor, store, _ = _processor(batch_size=batch_size)
    largest = 0
    for i in range(count):
        processor.submit(Order(f"{prefix}-{i}", "c-1", amount + i, items=["sku"]))
        largest = max(largest, processor.cache_size)
    processor.flush()
    return {"largest_cache": largest, "cache_after_flush": processor.cache_size, "stored": len(store),
            "last_amount": store.get(f"{prefix}-{count - 1}").amount_cents}


def _draw_bulk(rng):
    """A batch size, an order count, an id prefix and a first amount, drawn for one grading."""
    return rng.randint(3, 12), rng.randint(20, 200), f"o{rng.getrandbits(40):x}", rng.randint(100, 10**6)



def probe_submit_many_leaves_nothing_cached(rng):
    batch_size, count, prefix, amount = _draw_bulk(rng)
    processor, store, _ = _processor(batch_size=batch_size)
    orders = [Order(f"{prefix}-{i}", "c-1", amount + i, items=["sku"]) for i in range(count)]
    submitted = processor.submit_many(orders)
    return {"submitted": submitted, "cache_size": processor.cache_size, "stored": len(store),
            "last_amount": store.get(f"{prefix}-{count - 1}").amount_cents}


def _draw_resubmission(rng):
    """A batch size, an order id and the order's two amounts, drawn for one grading."""
    first = rng.randint(1, 10**6)
    return rng.randint(2, 20), f"o{rng.getrandbits(40):x}", first, first + rng.randint(1, 10**6)



def probe_an_order_resubmitted_after_its_flush_is_written_again(rng):
    batch_size, order_id, first, second = _draw_resubmission(rng)
    processor, store, _ = _processor(batch_size=batch_size)
    processor.submit(Order(order_id, "c-1", first, items=["sku"]))
    processor.flush()
    processor.submit(Order(order_id, "c-1", second, items=["sku", "sku-2"]))
    return {"flushed": processor.flush(), "stored_amount": store.get(order_id).amount_cents}


def probe_orders_are_written_in_batches():
    processor, store, _ = _processor(batch_size=3)
    return {"submitted": processor.submit_many(_orders(7)), "write_sizes": list(store.write_sizes)}


def probe_every_order_is_notified_once():
    processor, _, notifier = _processor(batch_size=4)
    processor.submit_many(_orders(9))
    return list(notifier.sent)


def probe_a_retried_pending_order_is_written_once():
    processor, store, notifier = _processor(batch_size=10)
    processor.submit(Order("o-1", "c-1", 100, items=["sku"]))
    processor.submit(Order("o-1", "c-1", 120, items=["sku"]))
    return {"flushed": processor.flush(), "write_sizes": list(store.write_sizes),
            "stored_amount": store.get("o-1").amount_cents, "notified": list(notifier.sent)}


def probe_pending_orders_are_readable_before_the_flush():
    processor, store, _ = _processor(batch_size=10)
    processor.submit(Order("o-9", "c-2", 500, items=["sku"]))
    before = {"in_store": store.get("o-9") is not None, "status": processor.get("o-9").status}
    processor.flush()
    return {**before, "amount_after_flush": processor.get("o-9").amount_cents}


def probe_batch_size_must_be_positive():
    BatchProcessor(OrderStore(), RecordingNotifier(), batch_size=0)
    return "accepted"


def probe_single_checkout_still_places_and_notifies():
    store, notifier = OrderStore(), RecordingNotifier()
    SingleOrderHandler(store, notifier).place(Order("o-5", "c-3", 900, items=["sku"]))
    return {"status": store.get("o-5").status, "notified": list(notifier.sent)}
