"""deadlock: an indexed @n@ store; reassigning @ns@ arrives, taking the two locks in the
opposite order to every other method."""

from ..shapes import Shape

_SOURCE = '''"""An in-memory @n@ store with a secondary index; two locks guard them."""

import threading


class @N@Store:
    """@N@ records by id, indexed by owner. Every method takes ``_records`` before ``_index``."""

    def __init__(self, lock_factory=None):
        make = lock_factory or (lambda name: threading.Lock())
        self._records_lock = make("records")
        self._index_lock = make("index")
        self._records = {}
        self._by_owner = {}

    def add(self, record_id, owner):
        with self._records_lock:
            with self._index_lock:
                self._records[record_id] = owner
                self._by_owner.setdefault(owner, set()).add(record_id)

    def owned_by(self, owner):
        with self._index_lock:
            return sorted(self._by_owner.get(owner, ()))
'''
_GOOD = _SOURCE.replace('''    def owned_by(self, owner):''', '''    def reassign(self, owner, new_owner):
        """Move every record of ``owner`` to ``new_owner``; returns how many moved."""
        with self._records_lock:
            with self._index_lock:
                moved = sorted(self._by_owner.pop(owner, ()))
                for record_id in moved:
                    self._records[record_id] = new_owner
                self._by_owner.setdefault(new_owner, set()).update(moved)
        return len(moved)

    def owned_by(self, owner):''')

# the input draws both the probes (in the sandbox) and the checks (in the grader) run
_DRAW_RECORDS = '''def _draw_records(rng):
    owners = [f"o{rng.getrandbits(32):x}" for _ in range(2)]
    return owners, [f"r{i}-{rng.getrandbits(24):x}" for i in range(rng.randint(1, 6))]
'''

SHAPE = Shape(
    name="lock_order", family="deadlock", module="@n@_store.py",
    what="an indexed @n@ store", feature="reassigning @ns@ between owners",
    source=_SOURCE, good=_GOOD,
    bug=(('''        """Move every record of ``owner`` to ``new_owner``; returns how many moved."""
        with self._records_lock:
            with self._index_lock:''', '''        """Move every record of ``owner`` to ``new_owner``; returns how many moved."""
        with self._index_lock:
            with self._records_lock:'''),),
    tests='''import threading

from @pkg@.@n@_store import @N@Store


def test_add_indexes_by_owner():
    store = @N@Store(lambda name: threading.Lock())
    store.add("r1", "ann")
    assert store.owned_by("ann") == ["r1"]
''',
    feature_tests='''

def test_reassign_moves_records():
    store = @N@Store(lambda name: threading.Lock())
    store.add("r1", "ann")
    assert store.reassign("ann", "bob") == 1 and store.owned_by("bob") == ["r1"]
''',
    probes='''from @pkg@.@n@_store import @N@Store


class _Recorder:
    def __init__(self):
        self.held, self.pairs = [], []

    def factory(self, name):
        recorder = self

        class Lock:
            def __enter__(self):
                recorder.pairs.extend([held, name] for held in recorder.held)
                recorder.held.append(name)
                return self

            def __exit__(self, *exc):
                recorder.held.remove(name)
        return Lock()


def probe_records_are_indexed_by_owner():
    store = @N@Store(_Recorder().factory)
    store.add("r1", "ann")
    store.add("r2", "ann")
    store.add("r3", "bo")
    return [store.owned_by("ann"), store.owned_by("bo"), store.owned_by("cy")]


def probe_reassign_moves_every_record():
    store = @N@Store(_Recorder().factory)
    store.add("r1", "ann")
    store.add("r2", "ann")
    moved = store.reassign("ann", "bo")
    return {"moved": moved, "ann": store.owned_by("ann"), "bo": store.owned_by("bo")}


def probe_reassigning_nobody_moves_nothing():
    store = @N@Store(_Recorder().factory)
    return store.reassign("ghost", "bo")


def probe_add_takes_records_before_index():
    recorder = _Recorder()
    @N@Store(recorder.factory).add("r1", "ann")
    return recorder.pairs


''' + _DRAW_RECORDS + '''


def probe_every_method_takes_the_locks_in_one_order(rng):
    (owner, new_owner), ids = _draw_records(rng)
    recorder = _Recorder()
    store = @N@Store(recorder.factory)
    for record_id in ids:
        store.add(record_id, owner)
    moved = store.reassign(owner, new_owner)
    return {"pairs": sorted({tuple(p) for p in recorder.pairs}), "moved": moved,
            "owned": store.owned_by(new_owner)}
''',
    checks='''def test_records_are_indexed_by_owner(seen):
    assert seen.value == [["r1", "r2"], ["r3"], []]


def test_reassign_moves_every_record(seen):
    assert seen.value == {"moved": 2, "ann": [], "bo": ["r1", "r2"]}


def test_reassigning_nobody_moves_nothing(seen):
    assert seen.value == 0


def test_add_takes_records_before_index(seen):
    assert seen.value == [["records", "index"]]


''' + _DRAW_RECORDS + '''


def test_every_method_takes_the_locks_in_one_order(seen, rng):
    _, ids = _draw_records(rng)
    assert seen.value == {"pairs": [["records", "index"]], "moved": len(ids), "owned": sorted(ids)}
''')
SPLIT = "train"
