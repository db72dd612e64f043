"""Hidden tests for PoolWorker.transfer: global row-lock order, validation, balances.

Locks are replaced by instrumented stand-ins that record every acquire and release
and flag an acquisition that goes against the global order, so an AB-BA risk is
detected deterministically on one thread.
"""

from payment.ledger import Account, InsufficientFunds
from payment.threadpool import PoolWorker


class OrderTracker:
    """Shared record of lock events and of locks held right now."""

    def __init__(self):
        self.events = []
        self.held = []
        self.violations = []


class RecordingLock:
    """Behaves like threading.Lock for a single thread and reports to an OrderTracker."""

    def __init__(self, name, tracker):
        self.name = name
        self.tracker = tracker

    def acquire(self, blocking=True, timeout=-1):
        if self.name in self.tracker.held:
            raise AssertionError(f"{self.name} acquired twice: this would self-deadlock")
        if any(other > self.name for other in self.tracker.held):
            self.tracker.violations.append((tuple(self.tracker.held), self.name))
        self.tracker.held.append(self.name)
        self.tracker.events.append(("acquire", self.name))
        return True

    def release(self):
        self.tracker.held.remove(self.name)
        self.tracker.events.append(("release", self.name))

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc_info):
        self.release()
        return False


def _accounts(tracker, *balances):
    accounts = []
    for n, balance in enumerate(balances, start=1):
        account = Account(f"acct-{n}", balance)
        account.lock = RecordingLock(account.account_id, tracker)
        accounts.append(account)
    return accounts


def _acquired(tracker):
    return [name for kind, name in tracker.events if kind == "acquire"]


def test_transfer_takes_row_locks_in_account_id_order():
    tracker = OrderTracker()
    low, high = _accounts(tracker, 100, 100)
    PoolWorker().transfer(high, low, 30)
    assert _acquired(tracker) == ["acct-1", "acct-2"], tracker.events
    assert tracker.violations == []


def test_opposite_transfers_contend_for_the_same_first_lock():
    tracker = OrderTracker()
    a, b = _accounts(tracker, 100, 100)
    worker = PoolWorker()
    worker.transfer(a, b, 10)
    forward = _acquired(tracker)
    tracker.events.clear()
    worker.transfer(b, a, 10)
    assert _acquired(tracker) == forward


def test_no_transfer_in_a_batch_inverts_the_lock_order():
    tracker = OrderTracker()
    accounts = _accounts(tracker, 1000, 1000, 1000, 1000)
    worker = PoolWorker()
    for src, dst in [(0, 1), (3, 0), (2, 1), (1, 3), (3, 2)]:
        worker.transfer(accounts[src], accounts[dst], 5)
    assert tracker.violations == [], tracker.violations
    assert worker.completed == 5


def test_transfer_moves_money_and_releases_both_locks():
    tracker = OrderTracker()
    a, b = _accounts(tracker, 500, 20)
    worker = PoolWorker()
    worker.transfer(a, b, 200)
    assert (a.balance_cents, b.balance_cents) == (300, 220)
    assert tracker.held == []
    assert worker.completed == 1


def test_overdraft_changes_nothing_and_releases_the_locks():
    tracker = OrderTracker()
    a, b = _accounts(tracker, 50, 0)
    worker = PoolWorker()
    try:
        worker.transfer(a, b, 80)
    except InsufficientFunds:
        pass
    else:
        raise AssertionError("an overdraft must raise InsufficientFunds")
    assert (a.balance_cents, b.balance_cents) == (50, 0)
    assert tracker.held == []
    assert worker.completed == 0


def test_non_positive_amounts_are_rejected_before_locking():
    tracker = OrderTracker()
    a, b = _accounts(tracker, 100, 100)
    for amount in (0, -25):
        try:
            PoolWorker().transfer(a, b, amount)
        except ValueError:
            continue
        raise AssertionError(f"amount {amount} must be rejected with ValueError")
    assert tracker.events == []
    assert (a.balance_cents, b.balance_cents) == (100, 100)


def test_transfer_to_the_same_account_is_rejected():
    tracker = OrderTracker()
    (a,) = _accounts(tracker, 100)
    try:
        PoolWorker().transfer(a, a, 10)
    except ValueError:
        pass
    else:
        raise AssertionError("a transfer from an account to itself must raise ValueError")
    assert tracker.events == []
