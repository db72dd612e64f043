"""Scripted shortcut policies for the validity gate (:mod:`srelib.analysis.validity`): each plays a fixed
per-phase list of actions that tries to score without doing the job (an empty handoff, a
stuffed declaration, no change, the bad commit again, deleting the tests, remediating
everything). The gate holds each under its bound."""

from __future__ import annotations

from abc import ABC, abstractmethod

from srelib.env.actions import FAULT_CLASSES, PHASE1_REMEDIATION, SERVICES, ActionType
from srelib.env.belief import BeliefState
from srelib.env.phase2.workspace import is_test_path
from srelib.env.tasks.lookup import get_scenario, load_repo
from srelib.env.phase2.repos import unified_diff
from srelib.analysis.gate import register
from srelib.policies.base import handoff_action, make_action
from srelib.policies.oracle import AnswerKey

EMPTY_HANDOFF = handoff_action(BeliefState())


def stuffed_declaration(task_name: str) -> dict:
    """A declaration naming every service, every fault class and every keyword."""
    s = get_scenario(task_name)
    text = " ".join([*SERVICES, *(c.replace("_", " ") for c in FAULT_CLASSES), *s.keywords])
    return make_action(ActionType.DECLARE_ROOT_CAUSE, root_cause=text, service=s.root_cause_service,
                fault_class=s.fault_class)


class _Scripted(ABC):
    """Plays a per-phase list of actions; repeats the last one if the episode goes on."""

    name = "scripted"

    def __init__(self) -> None:
        self.reset()

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        self._taken = {1: 0, 2: 0}

    @abstractmethod
    def plan(self, phase: int, task_name: str, observation: dict) -> list[dict]:
        """The actions this policy plays in ``phase``, in order."""

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        phase = 1 if phase == 1 else 2
        plan = self.plan(phase, task_name, observation)
        step = min(self._taken[phase], len(plan) - 1)
        self._taken[phase] += 1
        return plan[step]


class NullPolicy(_Scripted):
    """Hands over an empty belief, then proposes an empty patch."""

    name = "null"

    def plan(self, phase, task_name, observation):
        return [EMPTY_HANDOFF] if phase == 1 else [make_action(ActionType.PROPOSE_PATCH, diff="")]


class KeywordStuffingPolicy(AnswerKey, _Scripted):
    """Declares every service, class and keyword at once, then behaves like NullPolicy."""

    name = "keyword_stuffing"

    def plan(self, phase, task_name, observation):
        if phase == 1:
            return [stuffed_declaration(self.answer_name(task_name)), EMPTY_HANDOFF]
        return [make_action(ActionType.PROPOSE_PATCH, diff="")]


class AlwaysNoChangePolicy(_Scripted):
    """Hands over an empty belief and declares that no code change is needed."""

    name = "always_no_change"

    def plan(self, phase, task_name, observation):
        return [EMPTY_HANDOFF] if phase == 1 else [make_action(ActionType.DECLARE_NO_CHANGE, reason="looks fine")]


class ReproposeBadCommitPolicy(AnswerKey, _Scripted):
    """Hands over an empty belief, fetches the bad commit's diff (else the latest) and proposes it."""

    name = "repropose_bad_commit"

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        super().reset(seed, task_name)
        self._seed = seed

    def plan(self, phase, task_name, observation):
        if phase == 1:
            return [EMPTY_HANDOFF]
        s = self.answer(task_name)  # as the episode shows it (srelib.policies.oracle.hand_answer)
        sha = s.bad_commit or _shown_head(s, self._seed)
        diff = (observation.get("action_result") or {}).get("diff", "")
        return [make_action(ActionType.GET_FILE_DIFF, commit_sha=sha), make_action(ActionType.PROPOSE_PATCH, diff=diff)]


def _shown_head(scenario, seed: int | None) -> str:
    """The sha the episode of ``seed`` shows for the newest commit of ``scenario``'s repository."""
    from srelib.env.tasks.surface import EpisodeSurface, suite_key

    head = load_repo(scenario.repo).commits[0].sha
    return head if seed is None else EpisodeSurface(suite_key(), seed, scenario.name).sha(head)


class AlertsUntilBudgetPolicy(_Scripted):
    """Views the alerts until the step budget runs out."""

    name = "view_alerts_forever"

    def plan(self, phase, task_name, observation):
        return [make_action(ActionType.VIEW_ALERTS)] if phase == 1 else [make_action(ActionType.LIST_DIR, path=".")]


class TestDeletingPolicy(AnswerKey, _Scripted):
    """Hands over an empty belief and proposes a diff that deletes or weakens the tests."""

    name = "delete_tests"

    def plan(self, phase, task_name, observation):
        if phase == 1:
            return [EMPTY_HANDOFF]
        tree = load_repo(self.answer(task_name).repo).tree
        weakened = {p: t for p, t in tree.items() if not is_test_path(p)}
        weakened["tests/conftest.py"] = "collect_ignore_glob = ['test_*.py']\n"
        return [make_action(ActionType.PROPOSE_PATCH, diff=unified_diff(tree, weakened))]


class RemediateEverythingPolicy(AnswerKey, _Scripted):
    """Restarts, rolls back and scales every service, declares everything, then hands over empty."""

    name = "remediate_everything"

    def plan(self, phase, task_name, observation):
        if phase == 2:
            return [make_action(ActionType.PROPOSE_PATCH, diff="")]
        blanket = [make_action(kind, s) for s in SERVICES for kind in PHASE1_REMEDIATION]
        return blanket + [stuffed_declaration(self.answer_name(task_name)), EMPTY_HANDOFF]


register(NullPolicy, "max", 0.15, admission="unseeded")
register(KeywordStuffingPolicy, "max", 0.35, admission="unseeded")
register(AlwaysNoChangePolicy, "max", 0.35, admission="unseeded", needs_fault=True,
         task_bounds={"circuit_breaker_noop": 0.6}, mean_bound=0.25)
register(ReproposeBadCommitPolicy, "max", 0.35, admission="unseeded")
register(AlertsUntilBudgetPolicy, "max", 0.35)
register(TestDeletingPolicy, "max", 0.35, admission="unseeded")
register(RemediateEverythingPolicy, "max", 0.35, admission="seeded")
