"""Checks for PoolWorker.transfer, run by the grader on the recorded lock events."""


def _acquired(events):
    return [name for kind, name in events if kind == "acquire"]


def _inversions(events):
    """Acquisitions that go against the global (account id) order, replaying ``events``."""
    held, inversions = [], []
    for kind, name in events:
        if kind == "acquire":
            if any(other > name for other in held):
                inversions.append((tuple(held), name))
            held.append(name)
        else:
            held.remove(name)
    return inversions


def _all_released(events):
    held = []
    for kind, name in events:
        held.append(name) if kind == "acquire" else held.remove(name)
    return held == []


def _draw_pair(rng):
    """Two account ids (the lower first), their balances and an amount, drawn for one grading."""
    ids = sorted(f"acct-{rng.getrandbits(40):010x}" for _ in range(2))
    balances = [rng.randint(100, 10**6) for _ in ids]
    return ids, balances, rng.randint(1, 100)



def test_transfer_takes_row_locks_in_account_id_order(seen, rng):
    ids, _, _ = _draw_pair(rng)
    assert seen.value["raised"] is None
    assert _acquired(seen.value["events"]) == ids, seen.value["events"]
    assert _inversions(seen.value["events"]) == []


def _draw_opposites(rng):
    """Two account ids in drawn order and an amount, drawn for one grading."""
    return [f"acct-{rng.getrandbits(40):010x}" for _ in range(2)], rng.randint(1, 100)



def test_opposite_transfers_contend_for_the_same_first_lock(seen, rng):
    ids, _ = _draw_opposites(rng)
    forward = _acquired(seen.value["forward"])
    assert sorted(forward) == sorted(ids) and _acquired(seen.value["backward"]) == forward


def _draw_batch(rng):
    """Four account ids and transfers between them (the first from a higher id to a lower one)."""
    ids = [f"acct-{rng.getrandbits(40):010x}" for _ in range(4)]
    pairs = [tuple(rng.sample(range(4), 2)) for _ in range(rng.randint(4, 9))]
    pairs[0] = tuple(sorted(pairs[0], key=lambda n: ids[n], reverse=True))
    return ids, pairs



def test_no_transfer_in_a_batch_inverts_the_lock_order(seen, rng):
    ids, pairs = _draw_batch(rng)
    assert seen.value["raised"] == [None] * len(pairs)
    assert set(_acquired(seen.value["events"])) == {ids[n] for pair in pairs for n in pair}
    assert _inversions(seen.value["events"]) == [], _inversions(seen.value["events"])
    assert seen.value["completed"] == len(pairs)


def test_transfer_moves_money_and_releases_both_locks(seen):
    assert seen.value["raised"] is None and seen.value["balances"] == [300, 220]
    assert _all_released(seen.value["events"])
    assert seen.value["completed"] == 1


def test_overdraft_changes_nothing_and_releases_the_locks(seen):
    assert seen.value["raised"] == "InsufficientFunds", "an overdraft must raise InsufficientFunds"
    assert seen.value["balances"] == [50, 0]
    assert _all_released(seen.value["events"])
    assert seen.value["completed"] == 0


def test_non_positive_amounts_are_rejected_before_locking(seen):
    assert seen.value["raised"] == ["ValueError", "ValueError"], "amounts 0 and -25 must raise ValueError"
    assert seen.value["events"] == []
    assert seen.value["balances"] == [100, 100]


def test_transfer_to_the_same_account_is_rejected(seen):
    assert seen.value["raised"] == "ValueError", "a transfer from an account to itself must raise ValueError"
    assert seen.value["events"] == []
