"""pool_exhaustion, train: a pool of @n@ tokens; all-or-nothing batch leases arrive, and a
batch that cannot be filled keeps the tokens it took before it gave up."""

from ..shapes import Shape

_SOURCE = '''"""Tokens that bound how many @n@ operations run at once."""


class NoTokens(RuntimeError):
    """Every token is taken."""


class @N@Tokens:
    """``capacity`` tokens; ``take`` hands one out, ``give_back`` returns it."""

    def __init__(self, capacity=8):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._free = list(range(capacity))

    @property
    def available(self):
        return len(self._free)

    def take(self):
        if not self._free:
            raise NoTokens(f"all {self.capacity} tokens are taken")
        return self._free.pop()

    def give_back(self, token):
        if token in self._free or not 0 <= token < self.capacity:
            raise ValueError(f"token {token} is not out")
        self._free.append(token)
'''
_GOOD = _SOURCE + '''
    def take_many(self, count):
        """``count`` tokens at once, or none: NoTokens if they are not all free."""
        taken = []
        try:
            for _ in range(count):
                taken.append(self.take())
        except NoTokens:
            for token in taken:
                self.give_back(token)
            raise
        return taken
'''

SHAPE = Shape(
    name="tokens", family="pool_exhaustion", module="@n@_tokens.py",
    what="concurrency tokens for @n@ operations", feature="batch leases of @n@ tokens",
    source=_SOURCE, good=_GOOD,
    bug=(('''        try:
            for _ in range(count):
                taken.append(self.take())
        except NoTokens:
            for token in taken:
                self.give_back(token)
            raise
''', '''        for _ in range(count):
            taken.append(self.take())
'''),),
    tests='''from @pkg@.@n@_tokens import @N@Tokens


def test_take_and_give_back():
    tokens = @N@Tokens(capacity=2)
    token = tokens.take()
    assert tokens.available == 1
    tokens.give_back(token)
    assert tokens.available == 2
''',
    feature_tests='''

def test_take_many_takes_that_many():
    tokens = @N@Tokens(capacity=3)
    assert len(tokens.take_many(2)) == 2 and tokens.available == 1
''',
    probes='''from @pkg@.@n@_tokens import NoTokens, @N@Tokens


def probe_tokens_come_back(rng):
    tokens = @N@Tokens(capacity=rng.randint(2, 20))
    held = [tokens.take() for _ in range(tokens.capacity)]
    empty = tokens.available
    for token in held:
        tokens.give_back(token)
    return {"distinct": len(set(held)), "empty": empty, "after": tokens.available}


def probe_an_empty_pool_refuses(rng):
    tokens = @N@Tokens(capacity=rng.randint(1, 6))
    for _ in range(tokens.capacity):
        tokens.take()
    tokens.take()
    return "took one"


def probe_a_token_goes_back_once():
    tokens = @N@Tokens(capacity=2)
    token = tokens.take()
    tokens.give_back(token)
    tokens.give_back(token)
    return "accepted twice"


def probe_take_many_within_capacity(rng):
    capacity = rng.randint(4, 30)
    tokens = @N@Tokens(capacity=capacity)
    got = tokens.take_many(rng.randint(1, capacity))
    return {"got": len(got), "distinct": len(set(got)), "left": tokens.available}


def probe_a_batch_that_does_not_fit_takes_nothing(rng):
    capacity = rng.randint(3, 25)
    tokens = @N@Tokens(capacity=capacity)
    held = [tokens.take() for _ in range(rng.randint(1, capacity - 1))]
    refused = 0
    for _ in range(rng.randint(2, 12)):
        try:
            tokens.take_many(tokens.available + rng.randint(1, 5))
        except NoTokens:
            refused += 1
    for token in held:
        tokens.give_back(token)
    return {"refused": refused, "available": tokens.available}
''',
    checks='''def test_tokens_come_back(seen, rng):
    capacity = rng.randint(2, 20)
    assert seen.value == {"distinct": capacity, "empty": 0, "after": capacity}


def test_an_empty_pool_refuses(seen):
    assert seen.raised == "NoTokens"


def test_a_token_goes_back_once(seen):
    assert seen.raised == "ValueError"


def test_take_many_within_capacity(seen, rng):
    capacity = rng.randint(4, 30)
    want = rng.randint(1, capacity)
    assert seen.value == {"got": want, "distinct": want, "left": capacity - want}


def test_a_batch_that_does_not_fit_takes_nothing(seen, rng):
    capacity = rng.randint(3, 25)
    rng.randint(1, capacity - 1)
    tries = rng.randint(2, 12)
    assert seen.value == {"refused": tries, "available": capacity}
''')
SPLIT = "train"
