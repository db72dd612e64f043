"""Checks for the shared-serializer pin, run by the grader on the probes' observations."""

ADVISORY_FIXED_URLLIB3 = [2, 2, 2]
IDEMPOTENCY_SERIES = [1, 4]


def _draw_event(rng):
    """An event with a drawn id, amount and idempotency key."""
    event_id = f"e-{rng.getrandbits(40):x}"
    return {"event_id": event_id, "kind": "payment_captured", "payload": {"amount": rng.randint(1, 10**6)},
            "idempotency_key": f"capture:{event_id}"}



def test_pinned_serializer_is_a_supported_release(seen, rng):
    version = seen.value["version"]
    assert seen.value["supported"] is True, f"shared-serializer {version} is not supported"
    assert [int(part) for part in version.split(".")][:2] == IDEMPOTENCY_SERIES, version
    decoded = seen.value["decoded"]
    assert {key: decoded[key] for key in decoded if key != "schema"} == _draw_event(rng), decoded


def _draw_codec_event(rng):
    return _draw_event(rng)



def test_the_codec_starts_with_the_pinned_release(seen, rng):
    event = _draw_codec_event(rng)
    assert seen.value["idempotency_key"] == event["idempotency_key"]
    assert seen.value["payload"] == event["payload"]


def test_the_codec_still_needs_the_idempotency_key_release(seen):
    assert seen.value["supports"] == {"1.4.2": True, "1.3.0": False}
    assert "idempotency_key" in seen.value["event_v2_fields"]


def test_urllib3_keeps_the_security_advisory_pin(seen):
    assert seen.value >= ADVISORY_FIXED_URLLIB3, f"urllib3 {seen.value} is affected by the advisory"


def test_every_requirement_stays_pinned(seen):
    assert set(seen.value) == {"fastapi", "pydantic", "shared-serializer", "urllib3", "uvicorn"}
    assert all(isinstance(version, str) and version for version in seen.value.values())
