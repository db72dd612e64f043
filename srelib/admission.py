"""Admission of generated tasks by the validity gate: the gate's policies played on one task.

:func:`gate_reasons` plays each policy of :func:`admission_policies` on a candidate task and
returns the bounds of ``srelib.validity.GATE`` it breaks (empty: admitted). The generator
(``srelib.env.taskgen``) calls it for every candidate whose derived tests admit it. The
runner-hijack, reward-probing and step-budget policies are left to the validity table: each
costs a sandbox run or dozens of episodes per task, and none depends on the bug site.

:func:`audit_reasons` runs the tell audit (:mod:`srelib.tell_audit`) on the admitted suite:
each single-field predictor over its bar is a finding the suite file records.
"""

from __future__ import annotations

from srelib.env.pools import POOLS
from srelib.env.scenarios import get_scenario
from srelib.tell_audit import audit_tasks, failures
from srelib.policies.adversarial import (BlindRevertPolicy, HedgedDeclarationPolicy,
                                         NewestDeployPolicy)
from srelib.policies.reference import ReferencePolicy
from srelib.policies.shortcut_scripts import (AlwaysNoChangePolicy, KeywordStuffingPolicy,
                                              NullPolicy, RemediateEverythingPolicy,
                                              ReproposeBadCommitPolicy, TestDeletingPolicy)
from srelib.validity import GATE, GATE_POOLS, play, within

SEEDS = (0, 1, 2)
#: Policies whose play depends on what the simulation shows: judged on every seed.
SEEDED = (ReferencePolicy, NewestDeployPolicy, RemediateEverythingPolicy)
#: Policies whose play ignores the simulation: judged on the first seed.
UNSEEDED = (NullPolicy, AlwaysNoChangePolicy, BlindRevertPolicy, KeywordStuffingPolicy,
            HedgedDeclarationPolicy, ReproposeBadCommitPolicy, TestDeletingPolicy)


def admission_policies() -> list[tuple[type, str, tuple]]:
    """``(policy class, mode, seeds)`` of every policy admission plays; the mode is that of the
    pool ``GATE_POOLS`` names (joint otherwise)."""
    return [(cls, POOLS[GATE_POOLS[cls]].mode if cls in GATE_POOLS else "joint",
             SEEDS if cls in SEEDED else SEEDS[:1]) for cls in SEEDED + UNSEEDED]


def gate_reasons(task: str) -> list[str]:
    """The gate bounds ``task`` breaks, as rejection reasons (empty: admitted)."""
    needs_fix = get_scenario(task).needs_fix
    reasons = []
    for cls, mode, seeds in admission_policies():
        kind, bound = GATE[cls]
        if cls is AlwaysNoChangePolicy and not needs_fix:
            continue  # declaring no change is the right answer in the no-fault family
        scores = [play(cls(), task, seed, mode=mode) for seed in seeds]
        mean = sum(s["final"] for s in scores) / len(scores)
        if not within(kind, bound, mean):
            reasons.append(f"{cls.name} {'below' if kind == 'min' else 'above'} {bound}")
        if cls is BlindRevertPolicy and any((s["patch"] or {}).get("resolved") == "full" for s in scores):
            reasons.append("blind revert resolves full")
    return reasons


def audit_reasons(train: list[str], heldout: list[str]) -> list[str]:
    """The tell audit's findings for a suite split into ``train`` and ``heldout`` task ids
    (empty: no single field predicts an answer above its bar)."""
    return failures(audit_tasks(train, heldout))
