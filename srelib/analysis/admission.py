"""Admission of generated tasks: their derived tests, then the validity gate's policies.

:func:`derived_test_reasons` says why a candidate's derived tests reject it (at least 1
FAIL_TO_PASS, except in the no-fault family, at least 3 PASS_TO_PASS, and a reference fix that
passes every hidden test). :func:`gate_reasons` plays each policy of :func:`admission_policies`
on a candidate task and returns the bounds of ``srelib.analysis.validity.GATE`` it breaks (empty:
admitted). The suite build (:mod:`srelib.analysis.suite_build`) calls both for every candidate.
The runner-hijack, reward-probing and step-budget policies are left to the validity table: each
costs a sandbox run or dozens of episodes per task, and none depends on the bug site.

:func:`audit_reasons` runs the tell audit (:mod:`srelib.analysis.tell_audit`) on the admitted
suite: each single-field predictor over its bar is a finding the suite file records.
"""

from __future__ import annotations

from srelib.env.pools import POOLS
from srelib.env.lookup import get_scenario
from srelib.env.taskgen.families import FAMILIES
from srelib.analysis.tell_audit import audit_tasks, failures
from srelib.policies.adversarial import (BlindRevertPolicy, HedgedDeclarationPolicy,
                                         NewestDeployPolicy)
from srelib.policies.reference import ReferencePolicy
from srelib.policies.shortcut_scripts import (AlwaysNoChangePolicy, KeywordStuffingPolicy,
                                              NullPolicy, RemediateEverythingPolicy,
                                              ReproposeBadCommitPolicy, TestDeletingPolicy)
from srelib.analysis.validity import GATE, GATE_POOLS, play

MIN_FAIL_TO_PASS, MIN_PASS_TO_PASS = 1, 3
SEEDS = (0, 1, 2)
#: Policies whose play depends on what the simulation shows: judged on every seed.
SEEDED = (ReferencePolicy, NewestDeployPolicy, RemediateEverythingPolicy)
#: Policies whose play ignores the simulation: judged on the first seed.
UNSEEDED = (NullPolicy, AlwaysNoChangePolicy, BlindRevertPolicy, KeywordStuffingPolicy,
            HedgedDeclarationPolicy, ReproposeBadCommitPolicy, TestDeletingPolicy)


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
        if (mean < bound) if kind == "min" else (mean > bound):
            reasons.append(f"{cls.name} {'below' if kind == 'min' else 'above'} {bound}")
        if cls is BlindRevertPolicy and any((s["patch"] or {}).get("resolved") == "full" for s in scores):
            reasons.append("blind revert resolves full")
    return reasons


def audit_reasons(train: list[str], heldout: list[str]) -> list[str]:
    """The tell audit's findings for a suite split into ``train`` and ``heldout`` task ids
    (empty: no single field predicts an answer above its bar)."""
    return failures(audit_tasks(train, heldout))
