"""No single field finds the answer: every shortcut rule stays at or below the ceiling, and the
held-out tasks share nothing with the train tasks."""

from __future__ import annotations

import pytest

from srelib.env.tasks.pools import HELDOUT_TASKS, TRAIN_TASKS
from srelib.env.tasks.surface import EpisodeSurface, suite_key
from srelib.env.tasks.lookup import get_scenario, load_repo
from srelib.env.simulation.scenarios import TASKS
from srelib.analysis.shortcuts import (MAX_HIT_RATE, RULES, TARGETS, format_rule_table, gather, is_hit,
                              newest_tagged_commit, shortcut_rule_table)


@pytest.fixture(scope="module")
def table():
    return shortcut_rule_table(seeds=20)


def test_no_single_field_rule_finds_the_answer_most_of_the_time(table, capsys):
    with capsys.disabled():
        print("\n" + format_rule_table(table))
    assert [r["rule"] for r in table] == [r.name for r in RULES]
    assert {r["target"] for r in table} == set(TARGETS)
    needs_fix = sum(get_scenario(t).bad_commit is not None for t in TASKS)
    for row in table:
        assert row["episodes"] == 20 * (needs_fix if row["target"] == "bad_commit" else len(TASKS))
        assert row["hit_rate"] <= MAX_HIT_RATE, row


def test_incidents_still_often_follow_a_deploy():
    """Realism stays: the culprit shipped a deploy shortly before the page in every episode
    with a bad deploy, and other services often shipped later ones."""
    later = 0
    for task in TASKS:
        sc = get_scenario(task)
        if sc.bad_commit is None:
            continue
        for seed in range(5):
            ev = gather(task, seed)
            bad = EpisodeSurface(suite_key(), seed, sc.name).sha(sc.bad_commit)  # as shown
            culprit = max((d[-1]["timestamp"], s) for s, d in ev.deploys.items()
                          if s in sc.acceptable_services and d[-1]["commit_hash"] == bad)
            later += any(d and d[-1]["timestamp"] > culprit[0] for d in ev.deploys.values())
    assert later >= 10


def test_commit_subjects_carry_no_release_tag():
    for task in TASKS:
        ev = gather(task, 0)
        assert newest_tagged_commit(ev) is None, task


def test_a_rule_hit_is_judged_against_the_scenario():
    task = next(t for t in TASKS if get_scenario(t).bad_commit is not None)
    ev = gather(task, 0)
    sc = get_scenario(task)
    by_name = {r.name: r for r in RULES}
    assert is_hit(by_name["newest commit"], ev) is (ev.commits[0]["sha"] == sc.bad_commit)
    no_fix = [t for t in TASKS if get_scenario(t).bad_commit is None]
    if no_fix:
        assert is_hit(by_name["newest commit"], gather(no_fix[0], 0)) is None


def test_table_rejects_bad_arguments():
    with pytest.raises(ValueError, match="seeds"):
        shortcut_rule_table(seeds=0)
    with pytest.raises(ValueError, match=TASKS[0]):
        shortcut_rule_table(seeds=1, tasks=("no_such_task",))


def _pattern(task: str) -> tuple:
    sc = get_scenario(task)
    return sc.root_cause_service, frozenset(sc.involved_services), frozenset(sc.required_remediation)


@pytest.mark.parametrize("task", HELDOUT_TASKS)
def test_heldout_task_shares_nothing_with_train_tasks(task):
    sc = get_scenario(task)
    repo = load_repo(sc.repo)
    train = [get_scenario(t) for t in TRAIN_TASKS]
    assert sc.repo not in {t.repo for t in train}, "its own repository"
    assert sc.bad_commit not in {t.bad_commit for t in train}, "its own bad commit"
    assert repo.tasks == (task,), "its own fix and hidden tests"
    train_tests = {name: text for t in train for name, text in load_repo(t.repo).hidden_tests.items()}
    assert not set(repo.hidden_tests) & set(train_tests)
    assert not set(repo.hidden_tests.values()) & set(train_tests.values())
    assert _pattern(task) not in {_pattern(t) for t in TRAIN_TASKS}, "its own involvement pattern"
    assert frozenset(sc.involved_services) not in {frozenset(t.involved_services) for t in train}
