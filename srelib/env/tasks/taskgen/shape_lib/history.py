"""memory_leak, train: a bounded history of recent items; sequence numbers arrive with a
trim that only runs when the history is read, so a history nobody reads grows forever."""

from ..shapes import Shape

_SOURCE = '''"""The most recent @ns@, kept in memory for the status page."""


class @N@History:
    """The last ``limit`` @ns@ recorded, oldest first."""

    def __init__(self, limit=100):
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self._items = []

    def __len__(self):
        return len(self._items)

    def record(self, item):
        """Keep ``item``, dropping the oldest beyond the limit."""
        self._items.append(item)
        if len(self._items) > self.limit:
            del self._items[0]

    def recent(self, n=None):
        """The newest ``n`` (all kept when None), oldest first."""
        if n is None:
            return list(self._items)
        return self._items[-n:] if n > 0 else []
'''
_GOOD = '''"""The most recent @ns@, kept in memory for the status page."""


class @N@History:
    """The last ``limit`` @ns@ recorded, oldest first, each with a sequence number."""

    def __init__(self, limit=100):
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self._items = []
        self._next_seq = 1

    def __len__(self):
        return len(self._items)

    def record(self, item):
        """Keep ``item``, dropping the oldest beyond the limit; returns its sequence number."""
        seq = self._next_seq
        self._next_seq += 1
        self._items.append((seq, item))
        self._trim()
        return seq

    def _trim(self):
        overflow = len(self._items) - self.limit
        if overflow > 0:
            del self._items[:overflow]

    def recent(self, n=None):
        """The newest ``n`` (all kept when None), oldest first."""
        items = [item for _, item in self._items]
        if n is None:
            return items
        return items[-n:] if n > 0 else []

    def since(self, seq):
        """The @ns@ recorded after sequence number ``seq`` that are still kept, oldest first."""
        return [item for s, item in self._items if s > seq]
'''

SHAPE = Shape(
    name="history", family="memory_leak", module="@n@_history.py",
    what="a bounded history of recent @ns@", feature="sequence numbers for recent @ns@",
    source=_SOURCE, good=_GOOD,
    bug=(('''        self._items.append((seq, item))
        self._trim()
        return seq''', '''        self._items.append((seq, item))
        return seq'''),
         ('''        items = [item for _, item in self._items]
        if n is None:''', '''        self._trim()  # trim lazily, when someone looks
        items = [item for _, item in self._items]
        if n is None:''')),
    tests='''from @pkg@.@n@_history import @N@History


def test_recent_keeps_the_newest():
    history = @N@History(limit=2)
    for item in "abc":
        history.record(item)
    assert history.recent() == ["b", "c"]
''',
    feature_tests='''

def test_record_numbers_items():
    history = @N@History(limit=5)
    assert [history.record(x) for x in "ab"] == [1, 2]
    assert history.since(1) == ["b"]
''',
    probes='''from @pkg@.@n@_history import @N@History


def probe_recent_is_the_newest_in_order(rng):
    limit = rng.randint(3, 30)
    history = @N@History(limit=limit)
    for i in range(rng.randint(limit + 1, 4 * limit)):
        history.record(i)
    return {"all": history.recent(), "two": history.recent(2), "none": history.recent(0)}


def probe_limit_must_be_positive():
    @N@History(limit=0)
    return "accepted"


def probe_sequence_numbers_count_every_record(rng):
    history = @N@History(limit=rng.randint(2, 9))
    return [history.record(f"x{i}") for i in range(rng.randint(5, 40))]


def probe_since_returns_what_came_after(rng):
    limit = rng.randint(10, 40)
    history = @N@History(limit=limit)
    for i in range(limit):
        history.record(i * 3)
    return history.since(rng.randint(1, limit))


def probe_an_unread_history_stays_bounded(rng):
    limit = rng.randint(5, 60)
    history = @N@History(limit=limit)
    largest = 0
    for i in range(rng.randint(300, 2000)):
        history.record({"n": i})
        largest = max(largest, len(history))
    return largest
''',
    checks='''def test_recent_is_the_newest_in_order(seen, rng):
    limit = rng.randint(3, 30)
    count = rng.randint(limit + 1, 4 * limit)
    kept = list(range(count - limit, count))
    assert seen.value == {"all": kept, "two": kept[-2:], "none": []}


def test_limit_must_be_positive(seen):
    assert seen.raised == "ValueError"


def test_sequence_numbers_count_every_record(seen, rng):
    rng.randint(2, 9)
    assert seen.value == list(range(1, rng.randint(5, 40) + 1))


def test_since_returns_what_came_after(seen, rng):
    limit = rng.randint(10, 40)
    after = rng.randint(1, limit)
    assert seen.value == [i * 3 for i in range(after, limit)]


def test_an_unread_history_stays_bounded(seen, rng):
    assert seen.value == rng.randint(5, 60)
''')
SPLIT = "train"
