"""The validity gate's rules: which policies it plays, where, and the bound each must keep.

The reference's floor is registered here. Every shortcut policy lives in the
:mod:`srelib.adversarial` folder, whose modules register their own rules with :func:`register`
when they are imported; :func:`rules` finds them with ``pkgutil``, so adding a gate policy is one
new module in that folder and no edit elsewhere. Nothing in srelib imports the folder by name
except through :data:`POLICY_FOLDER` here.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from srelib.policies.scripted.reference import ReferencePolicy

#: The package whose every module may register gate policies.
POLICY_FOLDER = "srelib.adversarial"
KINDS = ("min", "max")
#: How admission plays a rule's policy on a candidate: on every seed (its play depends on what
#: the simulation shows), on the first seed only (it ignores the simulation), or not at all.
ADMISSION = ("seeded", "unseeded", None)


@dataclass(frozen=True)
class GateRule:
    """One gate policy and its bound: ``kind`` "min" means the mean score must be at least
    ``bound``, "max" at most."""

    policy: type
    kind: str
    bound: float
    pool: str | None = None  # judged in this pool instead of each task's joint pool
    metric: str = "final"  # the score component judged
    admission: str | None = None  # see ADMISSION
    task_bounds: Mapping[str, float] = field(default_factory=dict)  # per-task bounds
    mean_bound: float | None = None  # a bound on the mean over every task, too
    needs_fault: bool = False  # admission skips tasks with no fault (the policy is right there)
    never_full: bool = False  # admission rejects a task this policy resolves in full

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"gate rule for {self.policy.__name__}: kind must be one of "
                             f"{KINDS}, got {self.kind!r}")
        if self.admission not in ADMISSION:
            raise ValueError(f"gate rule for {self.policy.__name__}: admission must be one of "
                             f"{ADMISSION}, got {self.admission!r}")

    def holds(self, score: float, task: str | None = None) -> bool:
        """Does a mean ``score`` (on ``task``) keep this rule's bound?"""
        bound = self.task_bounds.get(task, self.bound) if task is not None else self.bound
        return within(self.kind, bound, score)


def within(kind: str, bound: float, score: float) -> bool:
    """The gate's rule for one bound: ``score >= bound`` for a "min" bound, ``score <= bound``
    for a "max" one (the validity table and admission both judge by it)."""
    return score >= bound if kind == "min" else score <= bound


_RULES: dict[type, GateRule] = {}


def register(policy: type, kind: str, bound: float, **options) -> type:
    """Make ``policy`` (a class with ``name`` and ``reset``) a gate policy; returns it. The
    rule's other fields (:class:`GateRule`) come as keywords."""
    if policy in _RULES:
        raise ValueError(f"{policy.__name__} is a gate policy already")
    _RULES[policy] = GateRule(policy, kind, bound, **options)
    return policy


register(ReferencePolicy, "min", 0.95, admission="seeded")


@functools.lru_cache(maxsize=1)  # no arguments: the folder is read once per process
def _folder_modules() -> tuple[str, ...]:
    """The folder's modules in name order, each imported (registering its rules)."""
    package = importlib.import_module(POLICY_FOLDER)
    names = tuple(f"{POLICY_FOLDER}.{info.name}" for info in
                  sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name))
    for name in names:
        importlib.import_module(name)
    return names


def rules() -> Mapping[type, GateRule]:
    """Every gate rule by policy class: the reference's, then those of each module of
    :data:`POLICY_FOLDER` in module-name order, each module's in the order it registers them
    (whichever module a process happened to import first)."""
    rank = {name: k for k, name in enumerate(_folder_modules())}
    ordered = sorted(_RULES.values(), key=lambda r: rank.get(r.policy.__module__, -1))
    return MappingProxyType({r.policy: r for r in ordered})
