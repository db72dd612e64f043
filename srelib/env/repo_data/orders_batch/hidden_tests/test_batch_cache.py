"""Hidden tests for orders.handlers.batch (memory_leak)."""

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


def test_cache_stays_bounded_by_the_batch_size():
    processor, _, _ = _processor(batch_size=10)
    for order in _orders(2000):
        processor.submit(order)
        assert processor.cache_size <= 10
    processor.flush()
    assert processor.cache_size == 0


def test_submit_many_leaves_nothing_cached():
    processor, store, _ = _processor(batch_size=7)
    assert processor.submit_many(_orders(30)) == 30
    assert processor.cache_size == 0
    assert len(store) == 30


def test_an_order_resubmitted_after_its_flush_is_written_again():
    processor, store, _ = _processor(batch_size=5)
    processor.submit(Order("o-1", "c-1", 100, items=["sku"]))
    processor.flush()
    processor.submit(Order("o-1", "c-1", 250, items=["sku", "sku-2"]))
    assert processor.flush() == 1
    assert store.get("o-1").amount_cents == 250


def test_orders_are_written_in_batches():
    processor, store, _ = _processor(batch_size=3)
    assert processor.submit_many(_orders(7)) == 7
    assert store.write_sizes == [3, 3, 1]


def test_every_order_is_notified_once():
    processor, _, notifier = _processor(batch_size=4)
    processor.submit_many(_orders(9))
    assert sorted(notifier.sent) == sorted(f"o-{i}" for i in range(9))


def test_a_retried_pending_order_is_written_once():
    processor, store, notifier = _processor(batch_size=10)
    processor.submit(Order("o-1", "c-1", 100, items=["sku"]))
    processor.submit(Order("o-1", "c-1", 120, items=["sku"]))
    assert processor.flush() == 1
    assert store.write_sizes == [1]
    assert store.get("o-1").amount_cents == 120
    assert notifier.sent == ["o-1"]


def test_pending_orders_are_readable_before_the_flush():
    processor, store, _ = _processor(batch_size=10)
    processor.submit(Order("o-9", "c-2", 500, items=["sku"]))
    assert store.get("o-9") is None
    assert processor.get("o-9").status == "placed"
    processor.flush()
    assert processor.get("o-9").amount_cents == 500


def test_batch_size_must_be_positive():
    try:
        BatchProcessor(OrderStore(), RecordingNotifier(), batch_size=0)
    except ValueError:
        return
    raise AssertionError("batch_size=0 was accepted")


def test_single_checkout_still_places_and_notifies():
    store, notifier = OrderStore(), RecordingNotifier()
    SingleOrderHandler(store, notifier).place(Order("o-5", "c-3", 900, items=["sku"]))
    assert store.get("o-5").status == "placed" and notifier.sent == ["o-5"]
