"""Admission of generated tasks by the validity gate: the gate's policies played on one task.

:func:`gate_reasons` plays each policy of :func:`admission_policies` on a candidate task and
returns the bounds of the gate rules (:func:`srelib.gate.rules`) it breaks (empty: admitted). The generator
(``srelib.env.taskgen``) calls it for every candidate whose derived tests admit it. The
runner-hijack, reward-probing and step-budget policies are left to the validity table: each
costs a sandbox run or dozens of episodes per task, and none depends on the bug site.

:func:`audit_reasons` runs the tell audit (:mod:`srelib.tell_audit`) on the admitted suite:
each single-field predictor over its bar is a finding the suite file records.
"""

from __future__ import annotations

from srelib.env.pools import POOLS
from srelib.env.scenarios import get_scenario
from srelib.gate import rules
from srelib.tell_audit import audit_tasks, failures
from srelib.validity import play

SEEDS = (0, 1, 2)


def admission_policies() -> list[tuple[type, str, tuple]]:
    """``(policy class, mode, seeds)`` of every policy admission plays (those whose rule says
    ``admission``): seeded ones first, each on every seed, then unseeded ones on the first; the
    mode is that of the rule's pool (joint otherwise)."""
    chosen = [r for kind in ("seeded", "unseeded") for r in rules().values() if r.admission == kind]
    return [(r.policy, POOLS[r.pool].mode if r.pool else "joint",
             SEEDS if r.admission == "seeded" else SEEDS[:1]) for r in chosen]


def gate_reasons(task: str) -> list[str]:
    """The gate bounds ``task`` breaks, as rejection reasons (empty: admitted)."""
    needs_fix = get_scenario(task).needs_fix
    reasons = []
    for cls, mode, seeds in admission_policies():
        rule = rules()[cls]
        if rule.needs_fault and not needs_fix:
            continue  # the policy's answer is the right one in the no-fault family
        scores = [play(cls(), task, seed, mode=mode) for seed in seeds]
        mean = sum(s["final"] for s in scores) / len(scores)
        if not rule.holds(mean):
            reasons.append(f"{cls.name} {'below' if rule.kind == 'min' else 'above'} {rule.bound}")
        if rule.never_full and any((s["patch"] or {}).get("resolved") == "full" for s in scores):
            reasons.append(f"{cls.name.replace('_', ' ')} resolves full")
    return reasons


def audit_reasons(train: list[str], heldout: list[str]) -> list[str]:
    """The tell audit's findings for a suite split into ``train`` and ``heldout`` task ids
    (empty: no single field predicts an answer above its bar)."""
    return failures(audit_tasks(train, heldout))
