"""Probes: the image's shared-serializer pin and what the codec makes of it; judged by checks/."""

from pathlib import Path

from shared import serializer


def _pins():
    pins = {}
    for line in Path("requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            pins[name.strip().lower()] = version.strip() if sep else None
    return pins


def _draw_event(rng):
    """An event with a drawn id, amount and idempotency key."""
    event_id = f"e-{rng.getrandbits(40):x}"
    return {"event_id": event_id, "kind": "payment_captured", "payload": {"amount": rng.randint(1, 10**6)},
            "idempotency_key": f"capture:{event_id}"}



def probe_pinned_serializer_is_a_supported_release(rng):
    version = _pins()["shared-serializer"]
    codec = serializer.SchemaCodec(version)
    return {"version": version, "supported": serializer.supports(version),
            "decoded": codec.decode(codec.encode("event_v2", _draw_event(rng)))}


def _draw_codec_event(rng):
    return _draw_event(rng)



def probe_the_codec_starts_with_the_pinned_release(rng):
    codec = serializer.SchemaCodec(_pins()["shared-serializer"])
    return codec.decode(codec.encode("event_v2", _draw_codec_event(rng)))


def probe_the_codec_still_needs_the_idempotency_key_release():
    return {"supports": {v: serializer.supports(v) for v in ("1.4.2", "1.3.0")},
            "event_v2_fields": list(serializer.SCHEMAS["event_v2"])}


def probe_urllib3_keeps_the_security_advisory_pin():
    return list(serializer.parse_version(_pins()["urllib3"]))


def probe_every_requirement_stays_pinned():
    return _pins()
