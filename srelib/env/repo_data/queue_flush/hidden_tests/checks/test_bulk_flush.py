"""Checks for the bulk-flush worker, run by the grader on the probes' observations."""


def test_each_flush_reports_only_its_own_entries(seen):
    assert seen.value == {"flushed": [3, 2], "flushed_total": 5}


def test_flush_leaves_the_buffer_empty(seen):
    assert seen.value == {"pending": 0, "second_flush": 0, "round_trips": 1}


def test_every_message_is_written_to_the_cache_once(seen):
    assert seen.value == {"moved": 20, "writes": 20, "round_trips": 4, "flushed_total": 20}


def test_flushing_does_not_grow_the_cache_traffic_of_later_batches(seen):
    first, _, last = seen.value
    assert first == 10
    assert last == 30


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
