"""config_change: settings of the @n@ component; an adjustable batch size arrives, and the timeout in
milliseconds is no longer turned into seconds."""

from ..shapes import Shape

_SOURCE = '''"""Settings of the @n@ component, read from environment variables."""


def load_@n@_settings(env):
    """The @n@ settings from ``env`` (a mapping of environment variables), with defaults."""
    timeout_ms = int(env.get("@N@_TIMEOUT_MS", "2500"))
    if timeout_ms <= 0:
        raise ValueError("@N@_TIMEOUT_MS must be positive")
    return {
        "timeout_s": timeout_ms / 1000,
        "endpoint": env.get("@N@_ENDPOINT", "http://@n@.internal:8080"),
    }
'''
_GOOD = '''"""Settings of the @n@ component, read from environment variables."""


def _positive_int(env, key, default):
    value = int(env.get(key, default))
    if value <= 0:
        raise ValueError(f"{key} must be positive")
    return value


def load_@n@_settings(env):
    """The @n@ settings from ``env`` (a mapping of environment variables), with defaults."""
    return {
        "timeout_s": _positive_int(env, "@N@_TIMEOUT_MS", "2500") / 1000,
        "endpoint": env.get("@N@_ENDPOINT", "http://@n@.internal:8080"),
        "batch_size": _positive_int(env, "@N@_BATCH_SIZE", "50"),
    }
'''

# the input draws both the probes (in the sandbox) and the checks (in the grader) run
_DRAW_TIMEOUTS = '''def _draw_timeouts(rng):
    return [rng.randint(1, 600_000) for _ in range(3)]
'''

SHAPE = Shape(
    name="units", family="config_change", module="@n@_settings.py",
    what="settings of the @n@ component", feature="an adjustable @n@ batch size",
    source=_SOURCE, good=_GOOD,
    bug=(('''"timeout_s": _positive_int(env, "@N@_TIMEOUT_MS", "2500") / 1000,''',
          '''"timeout_s": _positive_int(env, "@N@_TIMEOUT_MS", "2500"),'''),),
    tests='''from @pkg@.@n@_settings import load_@n@_settings


def test_endpoint_default():
    assert load_@n@_settings({})["endpoint"].startswith("http://")
''',
    feature_tests='''

def test_batch_size_default():
    assert load_@n@_settings({})["batch_size"] == 50
''',
    probes='''from @pkg@.@n@_settings import load_@n@_settings


def probe_endpoint_can_be_set():
    return load_@n@_settings({"@N@_ENDPOINT": "http://other:9"})["endpoint"]


def probe_a_negative_timeout_is_refused():
    load_@n@_settings({"@N@_TIMEOUT_MS": "-5"})
    return "accepted"


def probe_batch_size_is_read():
    return [load_@n@_settings({})["batch_size"],
            load_@n@_settings({"@N@_BATCH_SIZE": "7"})["batch_size"]]


def probe_a_zero_batch_size_is_refused():
    load_@n@_settings({"@N@_BATCH_SIZE": "0"})
    return "accepted"


''' + _DRAW_TIMEOUTS + '''


def probe_timeouts_are_in_seconds(rng):
    return [load_@n@_settings({})["timeout_s"]] + [load_@n@_settings({"@N@_TIMEOUT_MS": str(ms)})["timeout_s"]
                                                   for ms in _draw_timeouts(rng)]
''',
    checks='''def test_endpoint_can_be_set(seen):
    assert seen.value == "http://other:9"


def test_a_negative_timeout_is_refused(seen):
    assert seen.raised == "ValueError"


def test_batch_size_is_read(seen):
    assert seen.value == [50, 7]


def test_a_zero_batch_size_is_refused(seen):
    assert seen.raised == "ValueError"


''' + _DRAW_TIMEOUTS + '''


def test_timeouts_are_in_seconds(seen, rng):
    assert seen.value == [2.5] + [ms / 1000 for ms in _draw_timeouts(rng)]
''')
SPLIT = "train"
