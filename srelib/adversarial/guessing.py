"""Declarations that guess instead of committing: the red team's keyword soup and blind constant.

* :class:`KeywordSoupPolicy` investigates as :class:`~srelib.policies.scripted.heuristic.HeuristicPhase1Policy`
  does and declares its suspect, but its text lists the fault vocabulary (:func:`fault_vocabulary`)
  so that whatever the incident's keywords are, the text has them.
* :class:`BlindConstantPolicy` learns one answer from a suite's train tasks, the commonest fault
  class of the commonest culprit service, and declares it at once, before looking at anything.

Both hand over their declaration as the belief and then propose an empty patch: they are about
the diagnosis credit, which the grader must not pay for a guess (:mod:`srelib.env.grading.score`).
"""

from __future__ import annotations

from collections import Counter

from srelib.env.actions import FAULT_CLASSES, SERVICES, ActionType
from srelib.env.belief import BeliefState
from srelib.env.tasks.catalog import SUITES, list_tasks
from srelib.env.tasks.lookup import get_scenario
from srelib.policies.base import handoff_action, make_action
from srelib.policies.scripted.heuristic import FAULT_KEYWORDS, HeuristicPhase1Policy

_EMPTY_PATCH = make_action(ActionType.PROPOSE_PATCH, diff="")


def fault_vocabulary() -> str:
    """The soup's text: every fault word of the heuristic, of the fault classes' names and of
    the train tasks' keywords of both suites, in alphabetical order, leaving out service names and the fault classes' own
    names (a text that names three classes is refused outright)."""
    words = {w.strip() for words in FAULT_KEYWORDS.values() for w in words}
    words |= {part for c in FAULT_CLASSES for part in c.split("_")}
    words |= {k for suite in SUITES for t in list_tasks(suite, "train")
              for k in get_scenario(t).keywords}
    names = set(SERVICES) | {c for c in FAULT_CLASSES} | {"deploy", "no", "normal"}
    return " ".join(sorted(w for w in words if w.replace("-", "_") not in names))


class KeywordSoupPolicy(HeuristicPhase1Policy):
    """The heuristic's investigation and suspect, declared with the fault vocabulary as text."""

    name = "keyword_soup"

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        if phase != 1:
            return _EMPTY_PATCH
        action = super().__call__(observation, phase, task_name)
        if action["action_type"] == ActionType.DECLARE_ROOT_CAUSE.value:
            params = action["parameters"]
            text = f"{params.get('service') or ''} {fault_vocabulary()}".strip()
            return make_action(ActionType.DECLARE_ROOT_CAUSE, root_cause=text,
                               service=params.get("service"), fault_class=params.get("fault_class"))
        return action


def constant_answer(suite: str) -> tuple[str, str]:
    """``(service, fault class)``: the commonest culprit service of ``suite``'s train tasks and
    the commonest fault class among that service's (ties to the first in the suite's order)."""
    scenarios = [get_scenario(t) for t in list_tasks(suite, "train")]
    service = Counter(s.root_cause_service for s in scenarios).most_common(1)[0][0]
    fault_class = Counter(s.fault_class for s in scenarios if s.root_cause_service == service).most_common(1)[0][0]
    return service, fault_class


class BlindConstantPolicy:
    """Declares :func:`constant_answer` of ``suite`` at once, hands it over, proposes nothing."""

    name = "blind_constant"

    def __init__(self, suite: str = "classic") -> None:
        self.service, self.fault_class = constant_answer(suite)
        self.reset()

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        """New episode: start the plan over."""
        self._declared = False

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        if phase != 1:
            return _EMPTY_PATCH
        text = f"{self.fault_class.replace('_', ' ')} in {self.service}"
        if not self._declared:
            self._declared = True
            return make_action(ActionType.DECLARE_ROOT_CAUSE, root_cause=text, service=self.service,
                               fault_class=self.fault_class)
        return handoff_action(BeliefState(suspected_service=self.service, suspected_fault_class=self.fault_class,
                                          service_confidence=1.0, fault_confidence=1.0, reasoning=text))
