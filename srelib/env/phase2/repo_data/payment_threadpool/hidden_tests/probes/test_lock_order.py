"""Probes for PoolWorker.transfer: row-lock order, validation, balances; judged by checks/.

Locks are replaced by stand-ins that record every acquire and release, so the order in which
a transfer takes its locks is observed deterministically on one thread.
"""

from payment.ledger import Account
from payment.threadpool import PoolWorker


class RecordingLock:
    """Behaves like threading.Lock for a single thread and appends to a shared event list."""

    def __init__(self, name, events):
        self.name = name
        self.events = events
        self.locked = False

    def acquire(self, blocking=True, timeout=-1):
        if self.locked:
            raise RuntimeError(f"{self.name} acquired twice: this would self-deadlock")
        self.locked = True
        self.events.append(["acquire", self.name])
        return True

    def release(self):
        self.locked = False
        self.events.append(["release", self.name])

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc_info):
        self.release()
        return False


def _accounts(events, *balances, ids=None):
    """Accounts with ``balances`` whose locks record into ``events``; ids acct-1, acct-2, ...
    unless ``ids`` names them."""
    accounts = []
    for n, balance in enumerate(balances, start=1):
        account = Account(ids[n - 1] if ids else f"acct-{n}", balance)
        account.lock = RecordingLock(account.account_id, events)
        accounts.append(account)
    return accounts


def _transfer(worker, src, dst, amount):
    """The exception type the transfer raised, or None."""
    try:
        worker.transfer(src, dst, amount)
    except Exception as exc:
        return type(exc).__name__
    return None


def _draw_pair(rng):
    """Two account ids (the lower first), their balances and an amount, drawn for one grading."""
    ids = sorted(f"acct-{rng.getrandbits(40):010x}" for _ in range(2))
    balances = [rng.randint(100, 10**6) for _ in ids]
    return ids, balances, rng.randint(1, 100)



def probe_transfer_takes_row_locks_in_account_id_order(rng):
    ids, balances, amount = _draw_pair(rng)
    events = []
    low, high = _accounts(events, *balances, ids=ids)
    return {"raised": _transfer(PoolWorker(), high, low, amount), "events": events}


def _draw_opposites(rng):
    """Two account ids in drawn order and an amount, drawn for one grading."""
    return [f"acct-{rng.getrandbits(40):010x}" for _ in range(2)], rng.randint(1, 100)



def probe_opposite_transfers_contend_for_the_same_first_lock(rng):
    ids, amount = _draw_opposites(rng)
    forward, backward = [], []
    a, b = _accounts(forward, 1000, 1000, ids=ids)
    worker = PoolWorker()
    _transfer(worker, a, b, amount)
    a.lock.events = b.lock.events = backward
    _transfer(worker, b, a, amount)
    return {"forward": forward, "backward": backward}


def _draw_batch(rng):
    """Four account ids and transfers between them (the first from a higher id to a lower one)."""
    ids = [f"acct-{rng.getrandbits(40):010x}" for _ in range(4)]
    pairs = [tuple(rng.sample(range(4), 2)) for _ in range(rng.randint(4, 9))]
    pairs[0] = tuple(sorted(pairs[0], key=lambda n: ids[n], reverse=True))
    return ids, pairs



def probe_no_transfer_in_a_batch_inverts_the_lock_order(rng):
    ids, pairs = _draw_batch(rng)
    events = []
    accounts = _accounts(events, 1000, 1000, 1000, 1000, ids=ids)
    worker = PoolWorker()
    raised = [_transfer(worker, accounts[src], accounts[dst], 5) for src, dst in pairs]
    return {"raised": raised, "events": events, "completed": worker.completed}


def probe_transfer_moves_money_and_releases_both_locks():
    events = []
    a, b = _accounts(events, 500, 20)
    worker = PoolWorker()
    raised = _transfer(worker, a, b, 200)
    return {"raised": raised, "balances": [a.balance_cents, b.balance_cents], "events": events,
            "completed": worker.completed}


def probe_overdraft_changes_nothing_and_releases_the_locks():
    events = []
    a, b = _accounts(events, 50, 0)
    worker = PoolWorker()
    raised = _transfer(worker, a, b, 80)
    return {"raised": raised, "balances": [a.balance_cents, b.balance_cents], "events": events,
            "completed": worker.completed}


def probe_non_positive_amounts_are_rejected_before_locking():
    events = []
    a, b = _accounts(events, 100, 100)
    raised = [_transfer(PoolWorker(), a, b, amount) for amount in (0, -25)]
    return {"raised": raised, "events": events, "balances": [a.balance_cents, b.balance_cents]}


def probe_transfer_to_the_same_account_is_rejected():
    events = []
    (a,) = _accounts(events, 100)
    return {"raised": _transfer(PoolWorker(), a, a, 10), "events": events}
