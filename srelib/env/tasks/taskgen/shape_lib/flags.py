"""config_change, held out: feature flags of the @n@ component; a shadow-write switch arrives, and every known
spelling, "false" too, now turns a flag on."""

from ..shapes import Shape

_SOURCE = '''"""Feature flags of the @n@ component, read from environment variables."""

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def flag(env, name, default=False):
    """The boolean flag ``name`` in ``env``; unknown spellings raise ValueError."""
    raw = env.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{name}={raw!r} is not a boolean")


def @n@_flags(env):
    """The flags the @n@ component reads."""
    return {"strict_validation": flag(env, "@N@_STRICT", default=True)}
'''
_GOOD = _SOURCE.replace('''    raw = env.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()''', '''    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()''').replace('''    return {"strict_validation": flag(env, "@N@_STRICT", default=True)}''',
                                            '''    return {"strict_validation": flag(env, "@N@_STRICT", default=True),
            "shadow_writes": flag(env, "@N@_SHADOW_WRITES")}''')

# the input draws both the probes (in the sandbox) and the checks (in the grader) run
_DRAW_SPELLINGS = '''def _draw_spellings(rng):
    false, true = ["0", "false", "no", "off"], ["1", "true", "yes", "on"]
    words = [rng.choice(false)] + [rng.choice(false + true) for _ in range(rng.randint(24, 40))]
    spelt = ["".join(c.upper() if rng.random() < 0.5 else c for c in w) for w in words]
    return [" " * rng.randint(0, 2) + w + " " * rng.randint(0, 2) for w in spelt], [w in true for w in words]
'''

SHAPE = Shape(
    name="flags", family="config_change", module="@n@_flags.py",
    what="feature flags of the @n@ component", feature="a shadow-write switch for @ns@",
    source=_SOURCE, good=_GOOD,
    bug=(('''    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise''', '''    if value in _TRUE or value in _FALSE:
        return bool(value)
    raise'''),),
    tests='''from @pkg@.@n@_flags import flag


def test_missing_flag_uses_the_default():
    assert flag({}, "X", default=True) is True
''',
    feature_tests='''

def test_blank_flag_uses_the_default():
    assert flag({"X": " "}, "X", default=True) is True
''',
    probes='''from @pkg@.@n@_flags import flag, @n@_flags


def probe_defaults_apply_when_unset():
    return @n@_flags({})


def probe_unknown_spellings_are_refused():
    flag({"F": "maybe"}, "F")
    return "accepted"


def probe_blank_values_use_the_default():
    return [flag({"F": ""}, "F", default=True), flag({"F": "  "}, "F")]


def probe_truthy_spellings():
    return [flag({"F": v}, "F") for v in ("1", "true", "YES", "on")]


''' + _DRAW_SPELLINGS + '''


def probe_false_spellings_turn_flags_off(rng):
    spellings, _ = _draw_spellings(rng)
    return [flag({"F": v}, "F", default=True) for v in spellings]
''',
    checks='''def test_defaults_apply_when_unset(seen):
    assert seen.value == {"strict_validation": True, "shadow_writes": False}


def test_unknown_spellings_are_refused(seen):
    assert seen.raised == "ValueError"


def test_blank_values_use_the_default(seen):
    assert seen.value == [True, False]


def test_truthy_spellings(seen):
    assert seen.value == [True, True, True, True]


''' + _DRAW_SPELLINGS + '''


def test_false_spellings_turn_flags_off(seen, rng):
    _, expected = _draw_spellings(rng)
    assert seen.value == expected
''')
SPLIT = "heldout"
