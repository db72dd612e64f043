"""Checks for orders.handlers.batch, run by the grader on the probes' observations."""


def test_cache_stays_bounded_by_the_batch_size(seen):
    assert 1 <= seen.value["largest_cache"] <= 10, "pending orders are cached, at most a batch of them"
    assert seen.value["cache_after_flush"] == 0


def test_submit_many_leaves_nothing_cached(seen):
    assert seen.value == {"submitted": 30, "cache_size": 0, "stored": 30}


def test_an_order_resubmitted_after_its_flush_is_written_again(seen):
    assert seen.value == {"flushed": 1, "stored_amount": 250}


def test_orders_are_written_in_batches(seen):
    assert seen.value == {"submitted": 7, "write_sizes": [3, 3, 1]}


def test_every_order_is_notified_once(seen):
    assert sorted(seen.value) == sorted(f"o-{i}" for i in range(9))


def test_a_retried_pending_order_is_written_once(seen):
    assert seen.value == {"flushed": 1, "write_sizes": [1], "stored_amount": 120, "notified": ["o-1"]}


def test_pending_orders_are_readable_before_the_flush(seen):
    assert seen.value == {"in_store": False, "status": "placed", "amount_after_flush": 500}


def test_batch_size_must_be_positive(seen):
    assert seen.raised == "ValueError", "batch_size=0 was accepted"


def test_single_checkout_still_places_and_notifies(seen):
    assert seen.value == {"status": "placed", "notified": ["o-5"]}
