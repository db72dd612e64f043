"""shared_dependency: the vendored money helpers; @n@ totals arrive, and rounding to cents switches
from half-up to half-even."""

from ..shapes import Shape

_SOURCE = '''"""Money helpers vendored from the shared platform library (used by every service)."""

from decimal import ROUND_HALF_UP, Decimal


def to_cents(amount):
    """An amount such as ``"12.345"`` as integer cents, rounding half up."""
    return int((Decimal(str(amount)) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))
'''
_GOOD = '''"""Money helpers vendored from the shared platform library (used by every service)."""

from decimal import ROUND_HALF_UP, Decimal


def to_cents(amount):
    """An amount such as ``"12.345"`` as integer cents, rounding half up."""
    return int((Decimal(str(amount)) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))


def @n@_total(amounts):
    """The total of a @n@'s amounts, in cents (each amount rounded first)."""
    return sum(to_cents(a) for a in amounts)
'''

# the input draws both the probes (in the sandbox) and the checks (in the grader) run
_DRAW_HALVES = '''def _draw_halves(rng):
    even = f"{rng.randint(0, 99999)}.{rng.randint(0, 9)}{2 * rng.randint(0, 4)}5"
    return [even] + [f"{rng.randint(0, 99999)}.{rng.randint(0, 99):02d}5" for _ in range(rng.randint(2, 7))]
'''
_DRAW_TOTAL = '''def _draw_total(rng):
    even = f"{rng.randint(0, 999)}.{rng.randint(0, 9)}{2 * rng.randint(0, 4)}5"
    return [even] + [f"{rng.randint(0, 999)}.{rng.randint(0, 999):03d}" for _ in range(rng.randint(2, 9))]
'''

SHAPE = Shape(
    name="money", family="shared_dependency", module="common/money.py",
    what="the vendored money helpers", feature="@n@ totals in the shared money helpers",
    source=_SOURCE, good=_GOOD,
    bug=(('''from decimal import ROUND_HALF_UP, Decimal
''', '''from decimal import ROUND_HALF_EVEN, Decimal
'''), ('''return int((Decimal(str(amount)) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))''',
         '''return int((Decimal(str(amount)) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_EVEN))''')),
    tests='''from common.money import to_cents


def test_whole_amounts():
    assert to_cents("3") == 300
''',
    feature_tests='''

def test_total_of_nothing():
    from common.money import @n@_total
    assert @n@_total([]) == 0
''',
    probes='''from common.money import @n@_total, to_cents


def probe_plain_amounts():
    return [to_cents("12.34"), to_cents(7), to_cents("0.01")]


def probe_garbage_is_refused():
    to_cents("twelve")
    return "accepted"


def probe_totals_add_rounded_amounts():
    return [@n@_total(["1.10", "2.20"]), @n@_total([])]


def probe_negative_amounts():
    return to_cents("-4.5")


''' + _DRAW_HALVES + '''


def probe_halves_round_up(rng):
    return [to_cents(amount) for amount in _draw_halves(rng)]


''' + _DRAW_TOTAL + '''


def probe_totals_round_each_half_up(rng):
    return @n@_total(_draw_total(rng))
''',
    checks='''def test_plain_amounts(seen):
    assert seen.value == [1234, 700, 1]


def test_garbage_is_refused(seen):
    assert seen.raised is not None and seen.value is None


def test_totals_add_rounded_amounts(seen):
    assert seen.value == [330, 0]


def test_negative_amounts(seen):
    assert seen.value == -450


''' + _DRAW_HALVES + '''


def test_halves_round_up(seen, rng):
    from decimal import ROUND_HALF_UP, Decimal

    assert seen.value == [int((Decimal(a) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))
                          for a in _draw_halves(rng)]


''' + _DRAW_TOTAL + '''


def test_totals_round_each_half_up(seen, rng):
    from decimal import ROUND_HALF_UP, Decimal

    assert seen.value == sum(int((Decimal(a) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))
                             for a in _draw_total(rng))
''')
SPLIT = "train"
