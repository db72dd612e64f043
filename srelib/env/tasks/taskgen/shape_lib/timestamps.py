"""shared_dependency, held out: the vendored timestamp helpers; @n@ ages arrive, and a timestamp with an
offset is relabelled as UTC instead of converted."""

from ..shapes import Shape

_SOURCE = '''"""Timestamp helpers vendored from the shared platform library (used by every service)."""

from datetime import datetime, timezone


def parse_ts(text):
    """An ISO-8601 timestamp (``Z`` or an offset) as an aware datetime in UTC."""
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"timestamp without a zone: {text!r}")
    return moment.astimezone(timezone.utc)
'''
_GOOD = _SOURCE + '''

def @n@_age_s(created, now):
    """Seconds between a @n@'s ``created`` timestamp and ``now`` (both ISO-8601 strings)."""
    return (parse_ts(now) - parse_ts(created)).total_seconds()
'''

# the input draws both the probes (in the sandbox) and the checks (in the grader) run
_DRAW_MOMENTS = '''def _draw_moments(rng, count):
    from datetime import datetime, timedelta, timezone

    moments = []
    for _ in range(count):
        utc = datetime(2020, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=rng.randint(0, 300_000_000))
        hours = rng.choice([h for h in range(-11, 14) if h])
        zone = timezone(timedelta(hours=hours, minutes=rng.choice([0, 30]) * (1 if hours > 0 else -1)))
        moments.append(utc.astimezone(zone).isoformat())
    return moments
'''
_DRAW_AGE = '''def _draw_age(rng):
    from datetime import datetime, timedelta, timezone

    age = rng.randint(60, 10**6)
    created = _draw_moments(rng, 1)[0]
    now = (datetime.fromisoformat(created) + timedelta(seconds=age)).astimezone(timezone.utc)
    return created, now.strftime("%Y-%m-%dT%H:%M:%SZ"), age
'''

SHAPE = Shape(
    name="timestamps", family="shared_dependency", module="common/timefmt.py",
    what="the vendored timestamp helpers", feature="@n@ ages in the shared timestamp helpers",
    source=_SOURCE, good=_GOOD,
    bug=(('''    return moment.astimezone(timezone.utc)
''', '''    return moment.replace(tzinfo=timezone.utc)
'''),),
    tests='''from common.timefmt import parse_ts


def test_zulu_is_utc():
    assert parse_ts("2025-01-15T14:00:00Z").hour == 14
''',
    feature_tests='''

def test_age_of_now_is_zero():
    from common.timefmt import @n@_age_s
    assert @n@_age_s("2025-01-15T14:00:00Z", "2025-01-15T14:00:00Z") == 0
''',
    probes='''from common.timefmt import @n@_age_s, parse_ts


def probe_zulu_timestamps():
    return parse_ts("2025-01-15T14:00:00Z").isoformat()


def probe_naive_timestamps_are_refused():
    parse_ts("2025-01-15T14:00:00")
    return "accepted"


def probe_ages_between_zulu_times():
    return @n@_age_s("2025-01-15T14:00:00Z", "2025-01-15T14:02:30Z")


''' + _DRAW_MOMENTS + '''


def probe_offsets_convert_to_utc(rng):
    return [parse_ts(moment).isoformat() for moment in _draw_moments(rng, rng.randint(2, 6))]


''' + _DRAW_AGE + '''


def probe_ages_across_offsets(rng):
    created, now, _ = _draw_age(rng)
    return @n@_age_s(created, now)
''',
    checks='''def test_zulu_timestamps(seen):
    assert seen.value == "2025-01-15T14:00:00+00:00"


def test_naive_timestamps_are_refused(seen):
    assert seen.raised == "ValueError"


def test_ages_between_zulu_times(seen):
    assert seen.value == 150.0


''' + _DRAW_MOMENTS + '''


def test_offsets_convert_to_utc(seen, rng):
    from datetime import datetime, timezone

    assert seen.value == [datetime.fromisoformat(m).astimezone(timezone.utc).isoformat()
                          for m in _draw_moments(rng, rng.randint(2, 6))]


''' + _DRAW_AGE + '''


def test_ages_across_offsets(seen, rng):
    _, _, age = _draw_age(rng)
    assert seen.value == age
''')
SPLIT = "heldout"
