"""deadlock, held out: a blocking @n@ queue; batch puts arrive and wake a single waiting
consumer however many items they add; the others sleep until their timeout."""

from ..shapes import Shape

_SOURCE = '''"""A blocking in-memory queue of @ns@ shared by worker threads."""

import collections
import threading


class @N@Queue:
    """``put`` adds a @n@; ``get`` waits for one (at most ``timeout`` seconds, then None)."""

    def __init__(self):
        self._items = collections.deque()
        self._ready = threading.Condition()
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
    name="wakeup", family="deadlock", module="@n@_queue.py",
    what="a blocking @n@ queue", feature="batch puts on the @n@ queue",
    source=_SOURCE, good=_GOOD,
    bug=(('''            self._ready.notify(len(items))''', '''            self._ready.notify()'''),),
    tests='''from @pkg@.@n@_queue import @N@Queue


def test_put_then_get():
    queue = @N@Queue()
    queue.put("a")
    assert queue.get(timeout=1) == "a" and queue.get(timeout=0) is None
''',
    feature_tests='''

def test_put_many_keeps_the_order():
    queue = @N@Queue()
    assert queue.put_many(["a", "b"]) == 2
    assert [queue.get(timeout=1), queue.get(timeout=1)] == ["a", "b"]
''',
    probes='''import threading
import time

from @pkg@.@n@_queue import @N@Queue


def _consumers(queue, count, put, timeout=2.0):
    """Start ``count`` waiting consumers, call ``put`` once all wait; return what each got
    before half its timeout had passed (a consumer still asleep then was never woken)."""
    got = []

    def consume():
        start = time.monotonic()
        item = queue.get(timeout=timeout)
        got.append(item if time.monotonic() - start < timeout / 2 else None)

    threads = [threading.Thread(target=consume) for _ in range(count)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 3.0
    while queue.waiting < count and time.monotonic() < deadline:
        time.sleep(0.001)
    put()
    for thread in threads:
        thread.join(timeout + 1.0)
    return got


def probe_items_come_out_in_order(rng):
    queue, items = @N@Queue(), [rng.randrange(10 ** 6) for _ in range(rng.randint(2, 30))]
    for item in items:
        queue.put(item)
    return {"got": [queue.get(timeout=0) for _ in items], "items": items, "empty": queue.get(0)}


def probe_a_put_wakes_a_waiting_consumer(rng):
    queue, item = @N@Queue(), rng.randrange(10 ** 6)
    return {"got": _consumers(queue, 1, lambda: queue.put(item)), "item": item}


def probe_put_many_keeps_the_order(rng):
    queue, items = @N@Queue(), [f"m{rng.randrange(10 ** 6)}" for _ in range(rng.randint(2, 30))]
    added = queue.put_many(items)
    return {"added": added, "got": [queue.get(timeout=0) for _ in items], "items": items}


def probe_put_many_wakes_every_waiting_consumer(rng):
    queue, count = @N@Queue(), rng.randint(2, 5)
    items = [rng.randrange(10 ** 6) for _ in range(count)]
    got = _consumers(queue, count, lambda: queue.put_many(items))
    return {"got": sorted(x for x in got if x is not None), "items": sorted(items)}
''',
    checks='''def test_items_come_out_in_order(seen):
    assert seen.value["got"] == seen.value["items"] and seen.value["empty"] is None


def test_a_put_wakes_a_waiting_consumer(seen, rng):
    assert seen.value == {"got": [rng.randrange(10 ** 6)], "item": seen.value["item"]}


def test_put_many_keeps_the_order(seen, rng):
    items = [f"m{rng.randrange(10 ** 6)}" for _ in range(rng.randint(2, 30))]
    assert seen.value == {"added": len(items), "got": items, "items": items}


def test_put_many_wakes_every_waiting_consumer(seen, rng):
    count = rng.randint(2, 5)
    items = sorted(rng.randrange(10 ** 6) for _ in range(count))
    assert seen.value == {"got": items, "items": items}
''')
SPLIT = "heldout"
