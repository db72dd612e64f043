"""config_change, train: @n@ timeouts read from duration strings; compound durations arrive
with a unit pattern that tries ``m`` before ``ms``, so every millisecond setting is rejected."""

from ..shapes import Shape

_SOURCE = '''"""@N@ timeouts, written in settings as durations such as ``"250ms"`` or ``"2m"``."""

import re

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
_DURATION = re.compile(r"(\\d+(?:\\.\\d+)?)(ms|s|m|h)")


def parse_duration(text):
    """Seconds in a duration such as ``"1.5s"`` or ``"250ms"``; ValueError otherwise."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not a duration: {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def @n@_timeouts(settings):
    """The ``*_timeout`` entries of ``settings``, in seconds."""
    return {key: parse_duration(value) for key, value in settings.items()
            if key.endswith("_timeout")}
'''
_GOOD = _SOURCE.replace('''_DURATION = re.compile(r"(\\d+(?:\\.\\d+)?)(ms|s|m|h)")


def parse_duration(text):
    """Seconds in a duration such as ``"1.5s"`` or ``"250ms"``; ValueError otherwise."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not a duration: {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]
''', '''_PART = re.compile(r"(\\d+(?:\\.\\d+)?)(ms|s|m|h)")


def parse_duration(text):
    """Seconds in a duration such as ``"1.5s"``, ``"250ms"`` or ``"1h30m"``; ValueError
    otherwise."""
    text, total, end = text.strip(), 0.0, 0
    for match in _PART.finditer(text):
        if match.start() != end:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        end = match.end()
    if not text or end != len(text):
        raise ValueError(f"not a duration: {text!r}")
    return total
''')

SHAPE = Shape(
    name="timeouts", family="config_change", module="@n@_timeouts.py",
    what="@n@ timeout settings", feature="compound durations in @n@ timeouts",
    source=_SOURCE, good=_GOOD,
    bug=(('''_PART = re.compile(r"(\\d+(?:\\.\\d+)?)(ms|s|m|h)")''',
          '''_PART = re.compile(r"(\\d+(?:\\.\\d+)?)(h|m|s|ms)")'''),),
    tests='''from @pkg@.@n@_timeouts import parse_duration


def test_seconds_and_minutes():
    assert parse_duration("2s") == 2 and parse_duration("3m") == 180
''',
    feature_tests='''

def test_hours_and_minutes():
    assert parse_duration("1h30m") == 5400
''',
    probes='''from @pkg@.@n@_timeouts import @n@_timeouts, parse_duration


def probe_single_units(rng):
    values = [rng.randint(1, 500) for _ in range(3)]
    return [parse_duration(f"{values[0]}s"), parse_duration(f" {values[1]}m"),
            parse_duration(f"{values[2]}h ")]


def probe_garbage_is_refused(rng):
    parse_duration(rng.choice(["", "ten seconds", "5 parsecs", "12", "m5"]))
    return "accepted"


def probe_compound_durations(rng):
    h, m, s = rng.randint(1, 9), rng.randint(1, 59), rng.randint(1, 59)
    return [parse_duration(f"{h}h{m}m"), parse_duration(f"{m}m{s}s"), parse_duration(f"{h}h{m}m{s}s")]


def probe_millisecond_timeouts(rng):
    settings = {f"t{i}_timeout": f"{rng.randint(1, 5000)}ms" for i in range(rng.randint(2, 6))}
    settings["retries"] = "3"
    return @n@_timeouts(settings)
''',
    checks='''def test_single_units(seen, rng):
    a, b, c = (rng.randint(1, 500) for _ in range(3))
    assert seen.value == [a, b * 60, c * 3600]


def test_garbage_is_refused(seen):
    assert seen.raised == "ValueError"


def test_compound_durations(seen, rng):
    h, m, s = rng.randint(1, 9), rng.randint(1, 59), rng.randint(1, 59)
    assert seen.value == [h * 3600 + m * 60, m * 60 + s, h * 3600 + m * 60 + s]


def test_millisecond_timeouts(seen, rng):
    expected = {f"t{i}_timeout": rng.randint(1, 5000) / 1000 for i in range(rng.randint(2, 6))}
    assert seen.value.keys() == expected.keys()
    assert all(abs(seen.value[k] - v) < 1e-9 for k, v in expected.items())
''')
SPLIT = "train"
