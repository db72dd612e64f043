"""The red team against the grader (issue 28, requirements 5-7): replayed verdicts, keyword soup
and a blind constant guess, each held to the bar on both suites.

The bar: per suite and pool, a mean <= 0.2 with at most 10% of tasks over 0.35 (0.6 on tasks
that need no change); a test-runner hack repairs <= 0.15 on every task.
"""

from __future__ import annotations

import random
import statistics

import pytest

from srelib.env.actions import SERVICES, ActionType
from srelib.env.tasks.catalog import list_tasks
from srelib.env.grading.pipeline import grade_patch
from srelib.env.tasks.lookup import get_scenario
from srelib.policies.base import make_action
from srelib.adversarial.guessing import BlindConstantPolicy, KeywordSoupPolicy, constant_answer, fault_vocabulary
from srelib.adversarial.hijack import HIJACK_POLICIES, REPLAY_KINDS, recorded_observations, replay_hijack_patch
from srelib.analysis.validity import play

POOL_SPLIT = {"A": "train", "B": "train", "C": "train", "D": "heldout"}
GENERATED_SAMPLE = 12  # generated tasks per pool for the slower (grading) checks


def _sample(tasks: list[str], k: int, seed: int = 28) -> list[str]:
    return tasks if len(tasks) <= k else random.Random(seed).sample(tasks, k)


def _fixable(suite: str, split: str = "train") -> list[str]:
    return [t for t in list_tasks(suite, split) if get_scenario(t).needs_fix]


def _under_the_bar(scores: dict[str, float]) -> None:
    over = [t for t, s in scores.items() if s > (0.35 if get_scenario(t).needs_fix else 0.6)]
    assert statistics.mean(scores.values()) <= 0.2, scores
    assert len(over) <= 0.1 * len(scores), over


# ---------------------------------------------------------------- replayed observations

@pytest.mark.parametrize("kind", REPLAY_KINDS)
@pytest.mark.parametrize("suite", ["classic", "generated"])
def test_replaying_what_the_fixed_code_reported_never_repairs(kind, suite):
    """The issue's hijack: the bug left alone, an ``__init__.py`` frame walk to the emitter that
    reports what the reference-fixed code reported at an earlier grading (``replay_touch`` also
    edits the bug's function without changing it, to get past the bug-site guard)."""
    tasks = _fixable(suite) if suite == "classic" else _sample(_fixable(suite), GENERATED_SAMPLE)
    for task in tasks:
        repair = play(HIJACK_POLICIES[kind](), task, 0, pool="B")["repair"]
        assert repair <= 0.15, (kind, task, repair)


def test_the_replay_does_take_the_runner_over():
    """The defence is not that the replay fails to arrive: its records are the fixed code's, and
    without the guard and the drawn inputs they would resolve the task."""
    task = "memory_leak"
    scenario = get_scenario(task)
    records = recorded_observations(task)
    assert {r["id"] for r in records} >= set(grade_patch(scenario.repo, task, "")["FAIL_TO_PASS"])
    plain, touched = (grade_patch(scenario.repo, task, replay_hijack_patch(k, task)) for k in REPLAY_KINDS)
    assert plain["patch_applied"] and plain["site_unchanged"] and plain["resolved"] == "no"
    assert touched["patch_applied"] and not touched["site_unchanged"] and touched["resolved"] == "no"
    assert touched["fail_to_pass_rate"] == 0.0 and touched["pass_to_pass_rate"] == 1.0


# ---------------------------------------------------------------- keyword soup

class _WrongDeclaration(KeywordSoupPolicy):
    """The soup's investigation with a plainly wrong declaration: the yardstick it may not beat."""

    name = "wrong_declaration"

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        action = super().__call__(observation, phase, task_name)
        if action["action_type"] != ActionType.DECLARE_ROOT_CAUSE.value:
            return action
        s = get_scenario(task_name)
        service = next(x for x in SERVICES if x not in s.acceptable_services and x not in s.involved_services)
        return make_action(ActionType.DECLARE_ROOT_CAUSE, root_cause="", service=service,
                           fault_class="none" if s.fault_class != "none" else "deadlock")


@pytest.mark.parametrize("suite", ["classic", "generated"])
def test_keyword_soup_scores_no_better_than_a_wrong_declaration_on_held_out_tasks(suite):
    for task in _sample(list_tasks(suite, "heldout"), 2 * GENERATED_SAMPLE):
        soup, wrong = (play(cls(), task, 0, pool="D") for cls in (KeywordSoupPolicy, _WrongDeclaration))
        assert soup["diagnosis"] == 0.0, task
        assert soup["final"] <= wrong["final"] + 1e-9, (task, soup["final"], wrong["final"])


def test_the_soup_holds_the_words_of_every_fault_family():
    words = fault_vocabulary().split()
    assert {"memory", "leak", "retry", "storm", "lock", "pool", "exhaustion", "thrash", "library"} <= set(words)


# ---------------------------------------------------------------- blind constant guess

@pytest.mark.parametrize("suite", ["classic", "generated"])
@pytest.mark.parametrize("pool", sorted(POOL_SPLIT))
def test_a_constant_declared_at_once_is_under_the_bar_in_every_pool(suite, pool):
    service, fault_class = constant_answer(suite)
    tasks = list_tasks(suite, POOL_SPLIT[pool])
    lucky = [t for t in tasks if (get_scenario(t).root_cause_service, get_scenario(t).fault_class)
             == (service, fault_class)]
    assert lucky or pool == "D", "the constant is right on some train tasks, so the test can fail"
    _under_the_bar({t: play(BlindConstantPolicy(suite), t, 0, pool=pool)["final"] for t in tasks})
