"""config_change, held out: @n@ settings overridden from the environment; typed overrides
arrive, and booleans are converted with ``bool()``, so ``"false"`` turns a setting on."""

from ..shapes import Shape

_SOURCE = '''"""@N@ settings: defaults, overridden by ``@N@_<NAME>`` environment variables."""

DEFAULTS = {"batch_size": 50, "enabled": True, "strict": False, "ratio": 0.5, "region": "eu"}


def @n@_settings(env):
    """The defaults, with every ``@N@_<NAME>`` entry of ``env`` (a mapping) overriding
    ``<name>`` as a string."""
    prefix = "@N@_".upper()
    settings = dict(DEFAULTS)
    for key, value in env.items():
        if key.startswith(prefix) and key[len(prefix):].lower() in settings:
            settings[key[len(prefix):].lower()] = value
    return settings
'''
_GOOD = '''"""@N@ settings: defaults, overridden by ``@N@_<NAME>`` environment variables."""

DEFAULTS = {"batch_size": 50, "enabled": True, "strict": False, "ratio": 0.5, "region": "eu"}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _typed(default, raw):
    """``raw`` (a string) as the type of ``default``; ValueError when it is not one."""
    if isinstance(default, bool):
        word = raw.strip().lower()
        if word not in _TRUE + _FALSE:
            raise ValueError(f"not a boolean: {raw!r}")
        return word in _TRUE
    return type(default)(raw.strip())


def @n@_settings(env):
    """The defaults, with every ``@N@_<NAME>`` entry of ``env`` (a mapping) overriding
    ``<name>``, converted to the default's type."""
    prefix = "@N@_".upper()
    settings = dict(DEFAULTS)
    for key, value in env.items():
        name = key[len(prefix):].lower()
        if key.startswith(prefix) and name in settings:
            settings[name] = _typed(DEFAULTS[name], value)
    return settings
'''

SHAPE = Shape(
    name="env_overrides", family="config_change", module="@n@_env.py",
    what="@n@ settings from the environment", feature="typed environment overrides of @n@ settings",
    source=_SOURCE, good=_GOOD,
    bug=(('''    if isinstance(default, bool):
        word = raw.strip().lower()
        if word not in _TRUE + _FALSE:
            raise ValueError(f"not a boolean: {raw!r}")
        return word in _TRUE
    return type(default)(raw.strip())''', '''    if isinstance(default, bool) and raw.strip().lower() not in _TRUE + _FALSE:
        raise ValueError(f"not a boolean: {raw!r}")
    return type(default)(raw.strip())'''),),
    tests='''from @pkg@.@n@_env import DEFAULTS, @n@_settings


def test_no_overrides_gives_the_defaults():
    assert @n@_settings({"PATH": "/bin"}) == DEFAULTS
''',
    feature_tests='''

def test_numbers_are_converted():
    prefix = "@N@_".upper()
    assert @n@_settings({prefix + "BATCH_SIZE": "7"})["batch_size"] == 7
''',
    probes='''from @pkg@.@n@_env import @n@_settings

PREFIX = "@N@_".upper()


def probe_other_variables_are_ignored(rng):
    env = {f"OTHER_{rng.randrange(1000)}": "x", "HOME": "/root", PREFIX + "UNKNOWN": "1"}
    return @n@_settings(env)


def probe_numbers_and_strings_are_typed(rng):
    size, ratio = rng.randint(1, 10 ** 6), round(rng.uniform(0, 1), 3)
    region = rng.choice(["us", "ap", "sa", "me"])
    env = {PREFIX + "BATCH_SIZE": f" {size}", PREFIX + "RATIO": str(ratio), PREFIX + "REGION": region}
    return @n@_settings(env)


def probe_bad_numbers_are_refused(rng):
    @n@_settings({PREFIX + "BATCH_SIZE": rng.choice(["ten", "1e", "", "5 items"])})
    return "accepted"


def probe_true_words_turn_settings_on(rng):
    env = {PREFIX + "STRICT": rng.choice(["1", "true", "yes", "on", "TRUE", " Yes "])}
    return @n@_settings(env)["strict"]


def probe_false_words_turn_settings_off(rng):
    true, false = ["1", "true", "yes", "on", "TRUE", " Yes "], ["0", "false", "no", "off", "False", " OFF "]
    pairs = [(rng.choice(true), rng.choice(false))]
    pairs += [(rng.choice(true + false), rng.choice(true + false)) for _ in range(rng.randint(2, 8))]
    found = []
    for enabled, strict in pairs:
        settings = @n@_settings({PREFIX + "ENABLED": enabled, PREFIX + "STRICT": strict})
        found.append([settings["enabled"], settings["strict"]])
    return found
''',
    checks='''def test_other_variables_are_ignored(seen):
    assert seen.value == {"batch_size": 50, "enabled": True, "strict": False, "ratio": 0.5,
                          "region": "eu"}


def test_numbers_and_strings_are_typed(seen, rng):
    size, ratio = rng.randint(1, 10 ** 6), round(rng.uniform(0, 1), 3)
    region = rng.choice(["us", "ap", "sa", "me"])
    assert seen.value == {"batch_size": size, "enabled": True, "strict": False, "ratio": ratio,
                          "region": region}


def test_bad_numbers_are_refused(seen):
    assert seen.raised == "ValueError"


def test_true_words_turn_settings_on(seen):
    assert seen.value is True


def test_false_words_turn_settings_off(seen, rng):
    true, false = ["1", "true", "yes", "on", "TRUE", " Yes "], ["0", "false", "no", "off", "False", " OFF "]
    pairs = [(rng.choice(true), rng.choice(false))]
    pairs += [(rng.choice(true + false), rng.choice(true + false)) for _ in range(rng.randint(2, 8))]
    assert seen.value == [[enabled in true, strict in true] for enabled, strict in pairs]
''')
SPLIT = "heldout"
