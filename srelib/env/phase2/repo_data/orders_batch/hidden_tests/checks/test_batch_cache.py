"""Checks for orders.handlers.batch, run by the grader on the probes' observations."""


def _draw_stream(rng):
    """A batch size, an order count, an id prefix and a first amount, drawn for one grading."""
    return rng.randint(5, 40), rng.randint(1500, 3000), f"o{rng.getrandbits(40):x}", rng.randint(100, 10**6)



def test_cache_stays_bounded_by_the_batch_size(seen, rng):
    batch_size, count, _, amount = _draw_stream(rng)
    assert 1 <= seen.value["largest_cache"] <= batch_size, "pending orders are cached, at most a batch of them"
    assert seen.value["cache_after_flush"] == 0
    assert seen.value["stored"] == count and seen.value["last_amount"] == amount + count - 1


def _draw_bulk(rng):
    """A batch size, an order count, an id prefix and a first amount, drawn for one grading."""
    return rng.randint(3, 12), rng.randint(20, 200), f"o{rng.getrandbits(40):x}", rng.randint(100, 10**6)



def test_submit_many_leaves_nothing_cached(seen, rng):
    _, count, _, amount = _draw_bulk(rng)
    assert seen.value == {"submitted": count, "cache_size": 0, "stored": count, "last_amount": amount + count - 1}


def _draw_resubmission(rng):
    """A batch size, an order id and the order's two amounts, drawn for one grading."""
    first = rng.randint(1, 10**6)
    return rng.randint(2, 20), f"o{rng.getrandbits(40):x}", first, first + rng.randint(1, 10**6)



def test_an_order_resubmitted_after_its_flush_is_written_again(seen, rng):
    _, _, _, second = _draw_resubmission(rng)
    assert seen.value == {"flushed": 1, "stored_amount": second}


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
