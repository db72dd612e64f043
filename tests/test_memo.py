"""Every memo a long-running server or evaluation keeps is bounded in bytes: filled past its
bound, it stays under it and drops the least recently used entries first."""

from __future__ import annotations

import itertools

import pytest

from srelib.env.tasks import lookup
from srelib.env.grading import pipeline as patching
from srelib.env.simulation import phase1
from srelib.env.phase2 import repos
from srelib.env.grading.verdicts import rules as verdicts
from srelib.env.actions import SERVICES
from srelib.env.support.memo import ByteLRU, byte_lru, deep_size
from srelib.env.tasks.pools import TRAIN_TASKS
from srelib.env.tasks.taskgen import tasks as taskgen_tasks
from srelib.adversarial import cunning as adversarial
from srelib import redact


def _assert_bounded(memo: ByteLRU) -> None:
    assert 0 < memo.nbytes <= memo.max_bytes
    assert memo.nbytes == sum(size for _, size in memo._entries.values())


def test_byte_lru_drops_the_least_recently_used_past_its_bound():
    memo = ByteLRU(1000, size=lambda key, value: len(value))
    for k in range(5):
        memo.put(k, "x" * 300)
    assert list(memo._entries) == [2, 3, 4] and memo.nbytes == 900
    memo.get(2)  # now the most recent: 3 goes next
    memo.put(5, "y" * 300)
    assert list(memo._entries) == [4, 2, 5]
    memo.put(5, "z" * 100)  # replacing an entry counts its new size only
    assert memo.nbytes == 700 and memo.get(5) == "z" * 100
    memo.put(6, "w" * 5000)  # too big for the bound: kept alone, the newest is always there
    assert list(memo._entries) == [6] and memo.nbytes == 5000
    with pytest.raises(ValueError, match="positive integer"):
        ByteLRU(0)


def test_byte_lru_memoises_and_recomputes_what_it_dropped():
    calls = []

    @byte_lru(2000)
    def square(n: int) -> list[int]:
        calls.append(n)
        return [n * n] * 20

    first = square(1)
    assert square(1) is first and calls == [1]
    for n in range(2, 30):
        square(n)
    _assert_bounded(square.memo)
    assert (1,) not in square.memo and square(1) == first and calls.count(1) == 2
    assert square.peek(1) == first and square.peek(0) is None and calls.count(0) == 0  # no call
    square.cache_clear()
    assert len(square.memo) == 0 and square.memo.nbytes == 0


def test_deep_size_counts_contents_once_and_not_shared_code():
    text = "a" * 10_000
    assert deep_size([text, text]) < deep_size([text, "b" * 10_000])
    assert deep_size({"k": text}) > 10_000
    assert deep_size(deep_size) < 1000  # a function: its own size, not its module's


def _generated_ids(n):
    return [(task,) for task in itertools.islice(taskgen_tasks._candidates(), n)]


def _checks_keys(n):
    keys = []
    for name in repos.list_repos():
        checks = lookup.load_repo(name).checks
        keys += [(name, file, checks[file]) for file in sorted(checks)]
    return keys[:n]


def _valid_actions_keys(n):
    flags = itertools.product((True, False), repeat=len(SERVICES))
    return [(r, (False,) * len(SERVICES), True) for r in itertools.islice(flags, n)]


def _secret_keys(n):
    return [(frozenset({f"sk-test-{k:04d}-" + "q" * 40}),) for k in range(n)]


def _task_pairs(n):
    return [(pair,) for pair in itertools.islice(itertools.permutations(TRAIN_TASKS, 2), n)]


MEMOISED = {
    "generated scenarios": (lookup._generated, _generated_ids),
    "repositories": (lookup.load_repo, lambda n: [(r,) for r in repos.list_repos()[:n]]),
    "generated histories": (taskgen_tasks.task_history, _generated_ids),
    "compiled checks": (verdicts.checks_in, _checks_keys),
    "valid actions": (phase1._valid_actions, _valid_actions_keys),
    "secret patterns": (redact._secrets_pattern, _secret_keys),
    "memorised answers": (adversarial.train_answers, _task_pairs),
}


@pytest.mark.parametrize("name", MEMOISED)
def test_each_memo_stays_under_its_bound_in_bytes(name, monkeypatch):
    function, keys = MEMOISED[name]
    args = keys(8)
    assert len(set(args)) == 8
    function.cache_clear()
    try:
        for key in args:  # each entry's size, measured as the memo measures it
            function(*key)
        sizes = [function.memo._entries[key][1] for key in args]
        function.cache_clear()
        monkeypatch.setattr(function.memo, "max_bytes", sum(sizes[-3:]) + min(sizes) // 2)
        for key in args:
            function(*key)
        _assert_bounded(function.memo)
        assert list(function.memo._entries) == args[-3:], "the oldest entries went"
    finally:
        function.cache_clear()


def test_the_grade_memo_stays_under_its_bound_in_bytes(monkeypatch):
    monkeypatch.setattr(patching, "grading_level", lambda: ("bwrap", True))
    monkeypatch.setattr(patching._MEMO, "max_bytes", 4000)
    patching._MEMO.clear()
    try:
        for k in range(40):  # a bad path: graded without running anything
            diff = f"--- a/../evil{k}.py\n+++ b/../evil{k}.py\n@@ -0,0 +1 @@\n+x\n"
            result = patching.grade_patch(lookup.get_scenario("memory_leak").repo, "memory_leak", diff)
            assert result["resolved"] == "no" and "'..'" in result["apply_error"]
        _assert_bounded(patching._MEMO)
        assert 1 < len(patching._MEMO) < 40
        assert not any("evil0.py" in str(key) for key in patching._MEMO._entries)
    finally:
        patching._MEMO.clear()
