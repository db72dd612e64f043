"""shared_dependency, held out: the vendored paging helpers; @n@ page counts arrive with
``page_bounds`` switched to zero-based pages, so page 1 skips the first page of results."""

from ..shapes import Shape

_SOURCE = '''"""Paging helpers vendored from the shared platform library (used by every service)."""


def page_bounds(page, size):
    """``(start, stop)`` indices of 1-based ``page`` of ``size`` items."""
    if page < 1 or size < 1:
        raise ValueError("page and size start at 1")
    start = (page - 1) * size
    return start, start + size


def paginate(items, page, size):
    """The items on ``page`` (1-based) of ``size`` items each."""
    start, stop = page_bounds(page, size)
    return list(items[start:stop])
'''
_GOOD = _SOURCE + '''

def @n@_page_count(total, size):
    """How many pages of ``size`` hold ``total`` @ns@ (at least 1, for the empty first page)."""
    if total < 0:
        raise ValueError("total cannot be negative")
    page_bounds(1, size)
    return max(1, -(-total // size))
'''

SHAPE = Shape(
    name="paging", family="shared_dependency", module="common/paging.py",
    what="the vendored paging helpers", feature="@n@ page counts in the shared paging helpers",
    source=_SOURCE, good=_GOOD,
    bug=(('''    if page < 1 or size < 1:
        raise ValueError("page and size start at 1")
    start = (page - 1) * size''', '''    if page < 0 or size < 1:
        raise ValueError("page starts at 0 and size at 1")
    start = page * size'''),),
    tests='''from common.paging import paginate


def test_pages_past_the_end_are_empty():
    assert paginate([1, 2], 3, 1) == []
''',
    feature_tests='''

def test_no_items_is_one_page():
    from common.paging import @n@_page_count
    assert @n@_page_count(0, 10) == 1
''',
    probes='''from common.paging import @n@_page_count, paginate


def probe_page_counts(rng):
    size = rng.randint(1, 50)
    totals = [0, size, size + 1, rng.randint(0, 10 ** 5)]
    return [@n@_page_count(t, size) for t in totals]


def probe_size_zero_is_refused(rng):
    @n@_page_count(rng.randint(0, 100), 0)
    return "accepted"


def probe_negative_totals_are_refused(rng):
    @n@_page_count(-rng.randint(1, 100), 10)
    return "accepted"


def probe_pages_past_the_end_are_empty(rng):
    size = rng.randint(1, 20)
    items = list(range(rng.randint(0, 60)))
    return paginate(items, len(items) // size + 2, size)


def probe_pages_split_the_items_in_order(rng):
    size = rng.randint(2, 25)
    items = [f"@n@-{rng.randrange(10 ** 6)}-{i}" for i in range(rng.randint(size + 1, 8 * size))]
    pages = @n@_page_count(len(items), size)
    return [paginate(items, page, size) for page in range(1, pages + 1)]
''',
    checks='''def test_page_counts(seen, rng):
    size = rng.randint(1, 50)
    total = [0, size, size + 1, rng.randint(0, 10 ** 5)][-1]
    assert seen.value == [1, 1, 2, max(1, -(-total // size))]


def test_size_zero_is_refused(seen):
    assert seen.raised == "ValueError"


def test_negative_totals_are_refused(seen):
    assert seen.raised == "ValueError"


def test_pages_past_the_end_are_empty(seen):
    assert seen.value == []


def test_pages_split_the_items_in_order(seen, rng):
    size = rng.randint(2, 25)
    items = [f"@n@-{rng.randrange(10 ** 6)}-{i}" for i in range(rng.randint(size + 1, 8 * size))]
    assert seen.value == [items[k:k + size] for k in range(0, len(items), size)]
''')
SPLIT = "heldout"
