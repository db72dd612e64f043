"""Task pools, episode modes and the oracle belief used for the phase-2-only handoff."""

from __future__ import annotations

from dataclasses import dataclass

from .belief import BeliefState
from .scenarios import SCENARIOS, Scenario

MODES: tuple[str, ...] = ("p1_only", "p2_only", "joint")
TRAIN_TASKS: tuple[str, ...] = tuple(n for n, s in SCENARIOS.items() if not s.heldout)
HELDOUT_TASKS: tuple[str, ...] = tuple(n for n, s in SCENARIOS.items() if s.heldout)


@dataclass(frozen=True)
class Pool:
    """A named set of tasks and the mode its episodes run in."""

    name: str
    description: str
    tasks: tuple[str, ...]
    mode: str

    @property
    def oracle_handoff(self) -> bool:
        """True when reset hands over the oracle belief and starts in phase 2."""
        return self.mode == "p2_only"


POOLS: dict[str, Pool] = {
    "A": Pool("A", "phase 1 only: declare_root_cause ends the episode", TRAIN_TASKS, "p1_only"),
    "B": Pool("B", "phase 2 only: reset hands over the oracle belief", TRAIN_TASKS, "p2_only"),
    "C": Pool("C", "joint: diagnose, hand over, then work in the code", TRAIN_TASKS, "joint"),
    "D": Pool("D", "held-out tasks, joint", HELDOUT_TASKS, "joint"),
}


def oracle_belief(scenario: Scenario) -> BeliefState:
    """The ground-truth belief: the root-cause service and fault class, fully confident."""
    return BeliefState(
        suspected_service=scenario.root_cause_service,
        suspected_fault_class=scenario.fault_class,
        service_confidence=1.0,
        fault_confidence=1.0,
        evidence_gaps=[],
        estimated_p2_cost="low",
        decision="transition",
        reasoning="[oracle] ground-truth belief for the phase-2-only handoff",
    )
