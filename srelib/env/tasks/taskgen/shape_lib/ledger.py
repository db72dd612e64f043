"""deadlock, train: @n@ balances with a lock per account; transfers arrive and lock the two
accounts in argument order, so two opposite transfers can each hold the lock the other wants."""

from ..shapes import Shape

_SOURCE = '''"""@N@ balances in memory, one lock per account."""

import threading


class @N@Ledger:
    """Balances by account; ``lock_factory(account)`` makes each account's lock."""

    def __init__(self, lock_factory=None):
        self._make_lock = lock_factory or (lambda account: threading.Lock())
        self._locks = {}
        self._balances = {}
        self._guard = threading.Lock()

    def _lock(self, account):
        with self._guard:
            if account not in self._locks:
                self._locks[account] = self._make_lock(account)
            return self._locks[account]

    def deposit(self, account, amount):
        if amount <= 0:
            raise ValueError("amount must be positive")
        with self._lock(account):
            self._balances[account] = self._balances.get(account, 0) + amount

    def balance(self, account):
        with self._lock(account):
            return self._balances.get(account, 0)
'''
_GOOD = _SOURCE + '''
    def transfer(self, source, target, amount):
        """Move ``amount`` from ``source`` to ``target``; ValueError if ``source`` lacks it.
        Both locks are taken in account order, whatever the direction."""
        if amount <= 0 or source == target:
            raise ValueError("amount must be positive and the accounts different")
        first, second = sorted((source, target))
        with self._lock(first), self._lock(second):
            if self._balances.get(source, 0) < amount:
                raise ValueError(f"{source} holds less than {amount}")
            self._balances[source] -= amount
            self._balances[target] = self._balances.get(target, 0) + amount
'''

SHAPE = Shape(
    name="ledger", family="deadlock", module="@n@_ledger.py",
    what="in-memory @n@ balances", feature="transfers between @n@ accounts",
    source=_SOURCE, good=_GOOD,
    bug=(('''        first, second = sorted((source, target))
        with self._lock(first), self._lock(second):''', '''        with self._lock(source), self._lock(target):'''),),
    tests='''from @pkg@.@n@_ledger import @N@Ledger


def test_deposits_add_up():
    ledger = @N@Ledger()
    ledger.deposit("a", 5)
    ledger.deposit("a", 2)
    assert ledger.balance("a") == 7 and ledger.balance("b") == 0
''',
    feature_tests='''

def test_transfer_moves_money():
    ledger = @N@Ledger()
    ledger.deposit("a", 5)
    ledger.transfer("a", "b", 3)
    assert (ledger.balance("a"), ledger.balance("b")) == (2, 3)
''',
    probes='''from @pkg@.@n@_ledger import @N@Ledger


class _Recorder:
    """Locks that record, for every acquisition, which locks the caller already held."""

    def __init__(self):
        self.held, self.pairs = [], set()

    def factory(self, account):
        recorder = self

        class Lock:
            def __enter__(self):
                recorder.pairs.update((held, account) for held in recorder.held)
                recorder.held.append(account)
                return self

            def __exit__(self, *exc):
                recorder.held.remove(account)
        return Lock()


def _accounts(rng):
    return [f"acct-{rng.randrange(10 ** 5):05d}-{i}" for i in range(rng.randint(3, 7))]


def probe_deposits_and_balances(rng):
    ledger, accounts = @N@Ledger(_Recorder().factory), _accounts(rng)
    for account in accounts:
        ledger.deposit(account, rng.randint(1, 100))
    return [ledger.balance(a) for a in accounts]


def probe_nonpositive_deposits_are_refused(rng):
    @N@Ledger().deposit("a", -rng.randint(0, 9))
    return "accepted"


def probe_transfers_conserve_money(rng):
    ledger, accounts = @N@Ledger(_Recorder().factory), _accounts(rng)
    for account in accounts:
        ledger.deposit(account, 1000)
    for _ in range(rng.randint(5, 40)):
        source, target = rng.sample(accounts, 2)
        ledger.transfer(source, target, rng.randint(1, 20))
    return sum(ledger.balance(a) for a in accounts) - 1000 * len(accounts)


def probe_overdrafts_are_refused(rng):
    ledger = @N@Ledger(_Recorder().factory)
    ledger.deposit("a", rng.randint(1, 50))
    ledger.transfer("a", "b", ledger.balance("a") + rng.randint(1, 50))
    return "moved"


def probe_transfers_lock_accounts_in_one_order(rng):
    recorder = _Recorder()
    ledger, accounts = @N@Ledger(recorder.factory), _accounts(rng)
    for account in accounts:
        ledger.deposit(account, 1000)
    for _ in range(rng.randint(10, 40)):
        source, target = rng.sample(accounts, 2)
        ledger.transfer(source, target, 1)
    return sorted([a, b] for a, b in recorder.pairs)
''',
    checks='''def test_deposits_and_balances(seen, rng):
    accounts = [f"acct-{rng.randrange(10 ** 5):05d}-{i}" for i in range(rng.randint(3, 7))]
    assert seen.value == [rng.randint(1, 100) for _ in accounts]


def test_nonpositive_deposits_are_refused(seen):
    assert seen.raised == "ValueError"


def test_transfers_conserve_money(seen):
    assert seen.value == 0


def test_overdrafts_are_refused(seen):
    assert seen.raised == "ValueError"


def test_transfers_lock_accounts_in_one_order(seen, rng):
    accounts = [f"acct-{rng.randrange(10 ** 5):05d}-{i}" for i in range(rng.randint(3, 7))]
    pairs = {tuple(sorted(rng.sample(accounts, 2))) for _ in range(rng.randint(10, 40))}
    assert seen.value == sorted(list(p) for p in pairs)
''')
SPLIT = "train"
