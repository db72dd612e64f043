"""Admission of generated tasks: their derived tests, then the validity gate's policies.

:func:`derived_test_reasons` says why a candidate's derived tests reject it (at least 1
FAIL_TO_PASS, except in the no-fault family, at least 3 PASS_TO_PASS, and a reference fix that
passes every hidden test). :func:`gate_reasons` plays each policy of :func:`admission_policies`
on a candidate task and returns the bounds of the gate's rules
(:func:`srelib.analysis.gate.rules`) it breaks (empty: admitted). The suite build
(:mod:`srelib.analysis.suite_build`) calls both for every candidate.
The runner-hijack, reward-probing and step-budget policies are left to the validity table: each
costs a sandbox run or dozens of episodes per task, and none depends on the bug site.

:func:`audit_reasons` runs the tell audit (:mod:`srelib.analysis.tell_audit`) on the admitted
suite: each single-field predictor over its bar is a finding the suite file records.
"""

from __future__ import annotations

from srelib.env.tasks.pools import POOLS
from srelib.env.tasks.lookup import get_scenario
from srelib.env.tasks.taskgen.family_lib import FAMILIES
from srelib.analysis.gate import rules
from srelib.analysis.tell_audit import audit_tasks, failures
from srelib.analysis.validity import play

MIN_FAIL_TO_PASS, MIN_PASS_TO_PASS = 1, 3
SEEDS = (0, 1, 2)


def derived_test_reasons(task: str, tests: dict) -> list[str]:
    """Why the derived tests reject ``task`` (empty: they admit it)."""
    reasons = []
    if tests["broken"]:
        reasons.append("reference fix fails hidden tests")
    if FAMILIES[task.split(".", 1)[0]].needs_fix and len(tests["fail_to_pass"]) < MIN_FAIL_TO_PASS:
        reasons.append(f"fewer than {MIN_FAIL_TO_PASS} FAIL_TO_PASS")
    if len(tests["pass_to_pass"]) < MIN_PASS_TO_PASS:
        reasons.append(f"fewer than {MIN_PASS_TO_PASS} PASS_TO_PASS")
    return reasons


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
