"""memory_leak, held out: an interning table of names; reference counts arrive, and a release
that reaches zero forgets the forward entry but keeps the reverse one."""

from ..shapes import Shape

_SOURCE = '''"""Small integer ids for @n@ names, so hot paths compare ints instead of strings."""


class @N@Names:
    """Interns @n@ names: the same name always maps to the same id while it is known."""

    def __init__(self):
        self._ids = {}
        self._names = {}
        self._next = 0

    def __len__(self):
        return len(self._ids)

    def intern(self, name):
        """The id of ``name``, allocating one the first time."""
        if not isinstance(name, str) or not name:
            raise ValueError("a name is a non-empty string")
        if name not in self._ids:
            self._ids[name] = self._next
            self._names[self._next] = name
            self._next += 1
        return self._ids[name]

    def name_of(self, ident):
        """The name interned under ``ident``, or None."""
        return self._names.get(ident)
'''
_GOOD = '''"""Small integer ids for @n@ names, so hot paths compare ints instead of strings."""


class @N@Names:
    """Interns @n@ names: the same name maps to the same id while someone holds it."""

    def __init__(self):
        self._ids = {}
        self._names = {}
        self._refs = {}
        self._next = 0

    def __len__(self):
        return len(self._ids)

    def stats(self):
        """How many names, reverse entries and holders the table keeps."""
        return {"names": len(self._ids), "ids": len(self._names), "refs": sum(self._refs.values())}

    def intern(self, name):
        """The id of ``name`` (allocated the first time); each call holds the name once more."""
        if not isinstance(name, str) or not name:
            raise ValueError("a name is a non-empty string")
        if name not in self._ids:
            self._ids[name] = self._next
            self._names[self._next] = name
            self._next += 1
        ident = self._ids[name]
        self._refs[ident] = self._refs.get(ident, 0) + 1
        return ident

    def release(self, ident):
        """Drop one hold on ``ident``; the name is forgotten when nobody holds it."""
        if ident not in self._refs:
            raise KeyError(f"unknown id {ident}")
        self._refs[ident] -= 1
        if self._refs[ident] == 0:
            del self._refs[ident]
            del self._ids[self._names.pop(ident)]

    def name_of(self, ident):
        """The name interned under ``ident``, or None."""
        return self._names.get(ident)
'''

SHAPE = Shape(
    name="names", family="memory_leak", module="@n@_names.py",
    what="interned @n@ names", feature="releasing interned @n@ names",
    source=_SOURCE, good=_GOOD,
    bug=(('''            del self._ids[self._names.pop(ident)]''',
          '''            del self._ids[self._names[ident]]'''),),
    tests='''from @pkg@.@n@_names import @N@Names


def test_same_name_same_id():
    names = @N@Names()
    assert names.intern("a") == names.intern("a") != names.intern("b")
    assert names.name_of(names.intern("b")) == "b"
''',
    feature_tests='''

def test_release_forgets_unheld_names():
    names = @N@Names()
    names.release(names.intern("a"))
    assert len(names) == 0
''',
    probes='''from @pkg@.@n@_names import @N@Names


def _words(rng, n):
    return [f"w{rng.randrange(10 ** 6)}-{i}" for i in range(n)]


def probe_ids_are_stable_and_reversible(rng):
    names, words = @N@Names(), _words(rng, rng.randint(3, 25))
    ids = [names.intern(w) for w in words]
    again = [names.intern(w) for w in reversed(words)]
    return {"ids": ids, "again": again, "back": [names.name_of(i) for i in ids]}


def probe_empty_names_are_refused():
    @N@Names().intern("")
    return "accepted"


def probe_held_names_survive_one_release(rng):
    names = @N@Names()
    word = _words(rng, 1)[0]
    ident = names.intern(word)
    names.intern(word)
    names.release(ident)
    return {"name": names.name_of(ident), "size": len(names)}


def probe_released_names_leave_nothing_behind(rng):
    names = @N@Names()
    for word in _words(rng, rng.randint(50, 400)):
        names.release(names.intern(word))
    keepers = _words(rng, rng.randint(2, 9))
    ids = [names.intern(word) for word in keepers]
    return {"stats": names.stats(), "kept": [names.name_of(i) for i in ids]}
''',
    checks='''def test_ids_are_stable_and_reversible(seen, rng):
    n = rng.randint(3, 25)
    words = [f"w{rng.randrange(10 ** 6)}-{i}" for i in range(n)]
    assert seen.value == {"ids": list(range(n)), "again": list(range(n))[::-1], "back": words}


def test_empty_names_are_refused(seen):
    assert seen.raised == "ValueError"


def test_held_names_survive_one_release(seen, rng):
    word = f"w{rng.randrange(10 ** 6)}-0"
    assert seen.value == {"name": word, "size": 1}


def test_released_names_leave_nothing_behind(seen, rng):
    for i in range(rng.randint(50, 400)):
        rng.randrange(10 ** 6)
    keepers = [f"w{rng.randrange(10 ** 6)}-{i}" for i in range(rng.randint(2, 9))]
    count = len(keepers)
    assert seen.value == {"stats": {"names": count, "ids": count, "refs": count}, "kept": keepers}
''')
SPLIT = "heldout"
