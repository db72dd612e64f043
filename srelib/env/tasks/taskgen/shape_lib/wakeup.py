"""deadlock, held out: a blocking @n@ backlog; batch puts arrive and wake a single waiting
consumer however many items they add; the others sleep until their timeout."""

from ..shapes import Shape

_SOURCE = '''"""A blocking in-memory backlog of @ns@ shared by worker threads."""

import collections
import threading


class @N@Backlog:
    """``put`` adds a @n@; ``get`` waits for one (at most ``timeout`` seconds, then None)."""

    def __init__(self, condition=None):
        self._items = collections.deque()
        self._ready = condition or threading.Condition()
        self.waiting = 0

    def __len__(self):
        with self._ready:
            return len(self._items)

    def put(self, item):
        with self._ready:
            self._items.append(item)
            self._ready.notify()

    def get(self, timeout=None):
        with self._ready:
            self.waiting += 1
            try:
                if not self._ready.wait_for(lambda: self._items, timeout):
                    return None
                return self._items.popleft()
            finally:
                self.waiting -= 1
'''
_GOOD = _SOURCE.replace('''    def get(self, timeout=None):''', '''    def put_many(self, items):
        """Add every item at once, waking as many waiting workers as there are items."""
        items = list(items)
        with self._ready:
            self._items.extend(items)
            self._ready.notify(len(items))
        return len(items)

    def get(self, timeout=None):''')

SHAPE = Shape(
    name="wakeup", family="deadlock", module="@n@_backlog.py",
    what="a blocking @n@ backlog", feature="batch puts on the @n@ backlog",
    source=_SOURCE, good=_GOOD,
    bug=(('''            self._ready.notify(len(items))''', '''            self._ready.notify()'''),),
    tests='''from @pkg@.@n@_backlog import @N@Backlog


def test_put_then_get():
    backlog = @N@Backlog()
    backlog.put("a")
    assert backlog.get(timeout=1) == "a" and backlog.get(timeout=0) is None
''',
    feature_tests='''

def test_put_many_keeps_the_order():
    backlog = @N@Backlog()
    assert backlog.put_many(["a", "b"]) == 2
    assert [backlog.get(timeout=1), backlog.get(timeout=1)] == ["a", "b"]
''',
    probes='''import threading

from @pkg@.@n@_backlog import @N@Backlog


class _Counting(threading.Condition):
    """A condition that counts the waiters it is asked to wake (all of them: "all")."""

    def __init__(self):
        super().__init__()
        self.woken = 0

    def notify(self, n=1):
        if self.woken != "all":
            self.woken += n
        super().notify(n)

    def notify_all(self):
        self.woken = "all"
        super().notify_all()


def probe_items_come_out_in_order(rng):
    backlog, items = @N@Backlog(), [rng.randrange(10 ** 6) for _ in range(rng.randint(2, 30))]
    for item in items:
        backlog.put(item)
    return {"got": [backlog.get(timeout=0) for _ in items], "items": items, "empty": backlog.get(0)}


def probe_a_waiting_consumer_gets_a_put(rng):
    backlog, item, got = @N@Backlog(), rng.randrange(10 ** 6), []
    consumer = threading.Thread(target=lambda: got.append(backlog.get(timeout=30)))
    consumer.start()
    backlog.put(item)
    consumer.join(30)
    return {"got": got, "item": item}


def probe_each_put_wakes_a_waiter(rng):
    condition = _Counting()
    backlog = @N@Backlog(condition)
    puts = rng.randint(1, 20)
    for i in range(puts):
        backlog.put(i)
    return {"woken": condition.woken, "backlogd": len(backlog)}


def probe_put_many_keeps_the_order(rng):
    backlog, items = @N@Backlog(), [f"m{rng.randrange(10 ** 6)}" for _ in range(rng.randint(2, 30))]
    added = backlog.put_many(items)
    return {"added": added, "got": [backlog.get(timeout=0) for _ in items], "items": items}


def probe_put_many_wakes_a_waiter_per_item(rng):
    condition = _Counting()
    backlog = @N@Backlog(condition)
    batches = [rng.randint(2, 12) for _ in range(rng.randint(1, 5))]
    for size in batches:
        backlog.put_many(range(size))
    return {"woken": condition.woken, "backlogd": len(backlog)}
''',
    checks='''def test_items_come_out_in_order(seen):
    assert seen.value["got"] == seen.value["items"] and seen.value["empty"] is None


def test_a_waiting_consumer_gets_a_put(seen, rng):
    item = rng.randrange(10 ** 6)
    assert seen.value == {"got": [item], "item": item}


def test_each_put_wakes_a_waiter(seen, rng):
    puts = rng.randint(1, 20)
    assert seen.value["backlogd"] == puts and seen.value["woken"] in (puts, "all")


def test_put_many_keeps_the_order(seen, rng):
    items = [f"m{rng.randrange(10 ** 6)}" for _ in range(rng.randint(2, 30))]
    assert seen.value == {"added": len(items), "got": items, "items": items}


def test_put_many_wakes_a_waiter_per_item(seen, rng):
    total = sum(rng.randint(2, 12) for _ in range(rng.randint(1, 5)))
    assert seen.value["backlogd"] == total and seen.value["woken"] in (total, "all")
''')
SPLIT = "heldout"
