"""Checks for the cache's value store and buffer pool, run by the grader on the probes' observations."""


def _draw_writes(rng):
    """A number of writes of growing size, a key prefix and a tag, drawn for one grading."""
    return rng.randint(200, 500), f"fragment{rng.getrandbits(32):x}", rng.getrandbits(40)



def test_pool_keeps_a_bounded_number_of_free_buffers(seen, rng):
    count, _, tag = _draw_writes(rng)
    assert seen.value["entries"] == count, "every write must be stored"
    assert seen.value["last"] == f"{tag}:" + "v" * count
    assert 1 <= seen.value["free"] <= 64, f"{seen.value['free']} idle buffers kept after {count} writes"


def _draw_churn(rng):
    """Rounds of writes, their number and a tag, drawn for one grading."""
    return rng.randint(2, 5), rng.randint(150, 300), rng.getrandbits(40)



def test_pool_memory_stays_bounded_under_churn(seen, rng):
    _, width, tag = _draw_churn(rng)
    assert seen.value["read"] == f"{tag}:" + "v" * width
    assert seen.value["largest_frame"] > width, seen.value
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
