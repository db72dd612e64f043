"""Checks for the bulk-flush worker, run by the grader on the probes' observations."""


def _drawn_messages(rng, count):
    """``count`` messages under a drawn key prefix, each carrying a drawn tag."""
    prefix, tag = f"order{rng.getrandbits(32):x}", rng.getrandbits(40)
    return [(f"{prefix}:{n}", {"status": "paid", "n": n, "tag": tag}) for n in range(count)]


def _draw_two_flushes(rng):
    return _drawn_messages(rng, rng.randint(1, 9)), _drawn_messages(rng, rng.randint(1, 9))



def test_each_flush_reports_only_its_own_entries(seen, rng):
    first, second = _draw_two_flushes(rng)
    assert seen.value == {"flushed": [len(first), len(second)], "flushed_total": len(first) + len(second),
                          "last": second[-1][1]}


def _draw_buffer(rng):
    return _drawn_messages(rng, rng.randint(1, 9))



def test_flush_leaves_the_buffer_empty(seen, rng):
    messages = _draw_buffer(rng)
    assert seen.value == {"pending": 0, "second_flush": 0, "round_trips": 1, "last": messages[-1][1]}


def _draw_backlog(rng):
    messages = _drawn_messages(rng, rng.randint(10, 60))
    return messages, rng.randint(2, 9), len(messages) + rng.randint(0, 20)



def test_every_message_is_written_to_the_cache_once(seen, rng):
    messages, max_batch, _ = _draw_backlog(rng)
    count = len(messages)
    assert seen.value == {"moved": count, "writes": count, "round_trips": -(-count // max_batch),
                          "flushed_total": count, "last": messages[-1][1]}


def _draw_rounds(rng):
    rounds, max_batch = rng.randint(3, 6), rng.randint(3, 12)
    return rounds, max_batch, _drawn_messages(rng, rounds * max_batch)



def test_flushing_does_not_grow_the_cache_traffic_of_later_batches(seen, rng):
    rounds, max_batch, messages = _draw_rounds(rng)
    assert seen.value == {"writes": [max_batch * (n + 1) for n in range(rounds)], "last": messages[-1][1]}


def test_batch_is_written_in_one_round_trip(seen):
    assert seen.value == {"round_trips": [0, 1], "order:2": {"status": "paid", "n": 2}}


def test_full_batch_is_flushed_without_an_explicit_call(seen):
    assert seen.value == {"cached": [True, True, True], "round_trips": 1}


def test_latest_message_for_a_key_wins(seen):
    assert seen.value == {"flushed": 1, "order:1": {"status": "paid"}}


def test_run_once_moves_polled_messages_into_the_cache(seen):
    assert seen.value["moved"] == [4, 0]
    assert [entry["n"] for entry in seen.value["cached"]] == [0, 1, 2, 3]


def test_cache_evicts_the_least_recently_used_key(seen):
    assert seen.value == {"hot_kept": True, "a_kept": False, "evictions": 1}
