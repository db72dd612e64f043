"""Hidden tests: the image's shared-serializer pin must be a release the codec supports."""

from pathlib import Path

from shared import serializer

ADVISORY_FIXED_URLLIB3 = (2, 2, 2)


def _pins():
    pins = {}
    for line in Path("requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep, f"unpinned requirement: {line!r}"
            pins[name.strip().lower()] = version.strip()
    return pins


def test_pinned_serializer_is_a_supported_release():
    version = _pins()["shared-serializer"]
    assert serializer.supports(version), f"shared-serializer {version} is not supported"


def test_the_codec_starts_with_the_pinned_release():
    codec = serializer.SchemaCodec(_pins()["shared-serializer"])
    event = {"event_id": "e-7", "kind": "payment_captured", "payload": {"amount": 1999},
             "idempotency_key": "capture:e-7"}
    assert codec.decode(codec.encode("event_v2", event))["idempotency_key"] == "capture:e-7"


def test_the_codec_still_needs_the_idempotency_key_release():
    assert serializer.supports("1.4.2") and not serializer.supports("1.3.0")
    assert "idempotency_key" in serializer.SCHEMAS["event_v2"]


def test_urllib3_keeps_the_security_advisory_pin():
    version = serializer.parse_version(_pins()["urllib3"])
    assert version >= ADVISORY_FIXED_URLLIB3, f"urllib3 {version} is affected by the advisory"


def test_every_requirement_stays_pinned():
    assert set(_pins()) == {"fastapi", "pydantic", "shared-serializer", "urllib3", "uvicorn"}
