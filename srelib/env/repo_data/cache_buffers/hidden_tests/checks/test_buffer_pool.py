"""Checks for the cache's value store and buffer pool, run by the grader on the probes' observations."""


def test_pool_keeps_a_bounded_number_of_free_buffers(seen):
    assert seen.value["entries"] == 300, "every write must be stored"
    assert 1 <= seen.value["free"] <= 64, f"{seen.value['free']} idle buffers kept after 300 writes"


def test_pool_memory_stays_bounded_under_churn(seen):
    assert seen.value["largest_frame"] > 250, seen.value
    assert 0 < seen.value["free_bytes"] <= 64 * seen.value["largest_frame"], seen.value


def test_values_round_trip(seen):
    assert seen.value == {"page:/home": "<html>home</html>", "empty": "",
                          "greeting": "grüße, 世界", "missing": None}


def test_same_size_writes_reuse_a_buffer(seen):
    assert seen.value == {"hits": 2, "misses": 1, "b": "y" * 40}


def test_reused_buffers_never_show_earlier_bytes(seen):
    assert seen.value["reused"], "a same-size buffer should be reused"
    assert seen.value["nonzero_bytes"] == 0, "a reused buffer still holds another caller's bytes"


def test_entries_expire_after_their_ttl(seen):
    assert seen.value["before"] == "cart=3" and seen.value["after"] is None
    assert seen.value["left"] == 0
    assert seen.value["stats"]["expired"] == 1


def test_non_positive_ttl_is_rejected(seen):
    assert seen.raised == "ValueError", "ttl_s=0 must be rejected"
