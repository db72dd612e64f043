"""Reading trajectory records: the handoff and the steps per phase, defined once for the
grader, the results and the widgets."""

from __future__ import annotations

from typing import Any, Mapping

from .actions import ActionType
from .types import Trajectory

_TRANSITION = ActionType.TRANSITION_TO_PHASE2.value


def handoff(records: Trajectory) -> tuple[dict | None, bool]:
    """``(belief, oracle)`` handed to phase 2 in ``records``: the agent's own belief, or the
    oracle's in a phase-2-only episode (``oracle`` True); ``(None, False)`` before any handoff."""
    for record in records:
        effect = record.get("effect") or {}
        if record.get("valid") and "belief" in effect:
            return effect["belief"], bool(effect.get("oracle"))
    return None, False


def agent_transition(records: Trajectory) -> Mapping[str, Any] | None:
    """The agent's own (valid, non-oracle) transition record, if any."""
    for record in records:
        action = record.get("action") or {}
        effect = record.get("effect") or {}
        if action.get("action_type") == _TRANSITION and record.get("valid") and \
                not effect.get("oracle"):
            return record
    return None


def phase_steps(records: Trajectory) -> tuple[int, int]:
    """Steps taken in phase 1 and in phase 2; the oracle handoff of a phase-2-only episode
    (recorded as step 0) is not a step."""
    p1 = sum(1 for r in records if r.get("phase") == 1 and r.get("step", 1) > 0)
    p2 = sum(1 for r in records if r.get("phase") == 2)
    return p1, p2
