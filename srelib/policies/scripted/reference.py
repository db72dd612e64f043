"""ReferencePolicy: the answer key played as an episode (the validity gate's upper bound).

It is handed the scenario (:mod:`srelib.policies.oracle`), so its episodes are marked oracle. Phase 1: ``view_alerts``, the culprit's deploy history, the required
remediation, a correct ``declare_root_cause``, then a transition with the oracle belief.
Phase 2: read the file the fix changes (for a no-change task, the latest commit's first file)
and propose the reference fix, or declare that no change is needed. Each phase stays within the
scenario's expected steps. """

from __future__ import annotations

from srelib.env.actions import ActionType
from srelib.env.tasks.pools import oracle_belief
from srelib.env.tasks.lookup import get_scenario, load_repo
from srelib.policies.base import handoff_action, make_action
from srelib.policies.oracle import AnswerKey


def phase1_plan(task_name: str) -> list[dict]:
    """The reference's phase-1 actions for a task, in order."""
    s = get_scenario(task_name)
    plan = [make_action(ActionType.VIEW_ALERTS),
            make_action(ActionType.CHECK_DEPLOY_HISTORY, s.root_cause_service)]
    for remedy in s.required_remediation:
        kind, target = remedy.split(":", 1)
        plan.append(make_action(ActionType(kind), target))
    plan.append(make_action(ActionType.DECLARE_ROOT_CAUSE, root_cause=s.correct_root_cause,
                     service=s.root_cause_service, fault_class=s.fault_class))
    plan.append(handoff_action(oracle_belief(s)))
    return plan


def phase2_plan(task_name: str) -> list[dict]:
    """The reference's phase-2 actions for a task: read the culprit file, then end."""
    s = get_scenario(task_name)
    repo = load_repo(s.repo)
    fixed = repo.fixed_tree(task_name)
    if fixed is None:
        culprit = repo.commits[0].files[0]
        ending = make_action(ActionType.DECLARE_NO_CHANGE,
                      reason="the reported behaviour is intended; no code change is needed")
    else:
        culprit = next(p for p in sorted(fixed) if fixed[p] != repo.tree.get(p))
        ending = make_action(ActionType.PROPOSE_PATCH, diff=repo.fix_diff(task_name))
    return [make_action(ActionType.READ_FILE, path=culprit), ending]


class ReferencePolicy(AnswerKey):
    """Plays the known answer (handed over: ``needs_answer``); see the module docstring."""

    name = "reference"

    def __init__(self) -> None:
        self.reset()

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        self._task: str | None = task_name
        self._taken = {1: 0, 2: 0}

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        if task_name != self._task:
            self.reset(task_name=task_name)
        phase = 1 if phase == 1 else 2
        name = self.answer_name(task_name)
        plan = phase1_plan(name) if phase == 1 else phase2_plan(name)
        valid = observation.get("valid_actions") or []
        if phase == 1 and valid and ActionType.TRANSITION_TO_PHASE2.value not in valid:
            plan = plan[:-1]  # p1_only: the declaration is the last word
        step = min(self._taken[phase], len(plan) - 1)
        self._taken[phase] += 1
        return plan[step]
