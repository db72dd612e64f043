"""Task pools, episode modes and the oracle belief used for the phase-2-only handoff.

A pool is a split and a mode, so it keeps its meaning over any suite: pools A, B and C take the
train tasks of every suite (classic or generated), D the held-out ones. A pool's ``tasks`` are
its classic tasks, the ones drawn when a reset names no task.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from srelib.env.belief import BeliefState
from .catalog import list_tasks, parse_suite, resolve_tasks, split_of
from srelib.env.simulation.scenarios import Scenario
from .surface import is_public, keyed

MODES: tuple[str, ...] = ("p1_only", "p2_only", "joint")
TRAIN_TASKS: tuple[str, ...] = tuple(list_tasks("classic", "train"))
HELDOUT_TASKS: tuple[str, ...] = tuple(list_tasks("classic", "heldout"))


@dataclass(frozen=True)
class Pool:
    """A split of every suite's tasks and the mode its episodes run in."""

    name: str
    description: str
    split: str
    mode: str

    @property
    def tasks(self) -> tuple[str, ...]:
        """The pool's classic tasks (its split of the classic suite)."""
        return TRAIN_TASKS if self.split == "train" else HELDOUT_TASKS

    @property
    def oracle_handoff(self) -> bool:
        """True when reset hands over the oracle belief and starts in phase 2."""
        return self.mode == "p2_only"

    def accepts(self, task: str) -> bool:
        """Is ``task`` (any suite's id) in this pool's split? ValueError for an unknown id."""
        return split_of(task) == self.split


POOLS: dict[str, Pool] = {
    "A": Pool("A", "phase 1 only: declare_root_cause ends the episode", "train", "p1_only"),
    "B": Pool("B", "phase 2 only: reset hands over the oracle belief", "train", "p2_only"),
    "C": Pool("C", "joint: diagnose, hand over, then work in the code", "train", "joint"),
    "D": Pool("D", "held-out tasks, joint", "heldout", "joint"),
}

#: The joint pools, one a split: where a task plays when its agent makes its own handoff.
JOINT_POOLS: tuple[str, ...] = tuple(name for name, p in POOLS.items() if p.mode == "joint")


def joint_pool(task: str) -> str:
    """The joint pool ``task`` (any suite's id) plays in: D for held-out tasks, else C."""
    return next(name for name in JOINT_POOLS if POOLS[name].accepts(task))


def reset_choices(task: str | None, pool: str | None) -> tuple[str | None, tuple[str, ...]]:
    """For ``reset(task, pool)``: ``(the task named, or None; the tasks a seeded draw picks from)``.

    ``task`` may be an id (drawn from the pool's classic tasks for the seed stream's sake, then
    ignored), a suite spec such as ``"generated"`` or ``"generated:train"`` (the draw picks one
    of its tasks in the pool's split; with no pool, a suite named without a split means its
    train split), or None (the pool's classic tasks; no pool: the classic train tasks).
    ValueError for an unknown task or one outside the pool.
    """
    suite = parse_suite(task)
    if suite is not None:
        split = POOLS[pool].split if pool is not None else (suite[1] or "train")
        if suite[1] not in (None, split):
            raise ValueError(f"{task!r} has no task in pool {pool} (its split is {split!r})")
        return None, _keyed_order(tuple(resolve_tasks(task, split)))
    candidates = POOLS[pool].tasks if pool is not None else TRAIN_TASKS
    if task is not None:
        if pool is None:
            split_of(task)  # ValueError naming the suites for an unknown id
        elif not POOLS[pool].accepts(task):
            raise ValueError(f"task {task!r} is not in pool {pool} ({POOLS[pool].split} tasks); "
                             f"its classic tasks: {list(candidates)}")
    return task, candidates


@functools.lru_cache(maxsize=64)  # one entry a suite spec and split
def _keyed_order(tasks: tuple[str, ...]) -> tuple[str, ...]:
    """``tasks`` in the order a seeded draw indexes them: as listed on the public suite, by a
    keyed hash on a private one, so which seed plays which task depends on the key."""
    return tasks if is_public() else tuple(sorted(tasks, key=lambda t: keyed("draw\0" + t)))


def oracle_belief(scenario: Scenario) -> BeliefState:
    """The ground-truth belief of a scenario.

    Args:
        scenario: the task's :class:`Scenario` (:func:`get_scenario`).

    Returns:
        A :class:`BeliefState` naming the root-cause service and fault class, fully confident.
    """
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
