"""Policies by name: the scripted ones (what ``srelib eval``, the widgets' policy picker, the
notebooks and the tests call ``"heuristic"`` or ``"reference"``) and the LLM providers
(``"openai"``, ``"hf"``: :mod:`srelib.policies.llm.providers`), built by :func:`policy_factory`."""

from __future__ import annotations

import functools
from typing import Any

#: Scripted policies by CLI name: the classes of ``srelib.policies`` they are built from
#: (two names: phase 1 and phase 2 joined by CompositePolicy).
POLICY_CLASSES: dict[str, tuple[str, ...]] = {
    "null": ("NullPhase1Policy",),
    "random": ("NullPhase1Policy", "RandomPhase2Policy"),
    "oracle-random": ("OracleP1ThenRandomP2Policy",),
    "heuristic": ("HeuristicPhase1Policy", "RandomPhase2Policy"),
    "revert": ("NullPhase1Policy", "RevertPhase2Policy"),
    "heuristic-revert": ("HeuristicPhase1Policy", "RevertPhase2Policy"),
    "partial-revert": ("NullPhase1Policy", "PartialRevertPhase2Policy"),
    "heuristic-partial-revert": ("HeuristicPhase1Policy", "PartialRevertPhase2Policy"),
    "aimed-repair": ("NullPhase1Policy", "AimedRepairPhase2Policy"),
    "heuristic-aimed-repair": ("HeuristicPhase1Policy", "AimedRepairPhase2Policy"),
    "investigator": ("InvestigatorPolicy", "RandomPhase2Policy"),
    "investigator-partial-revert": ("InvestigatorPolicy", "PartialRevertPhase2Policy"),
    "reference": ("ReferencePolicy",),
}


def build_policy(*class_names: str) -> Any:
    """A fresh policy from ``srelib.policies`` class names.

    Args:
        *class_names: one class name (a whole policy), or two (a phase-1 and a phase-2 policy,
            joined by ``CompositePolicy``).

    Returns:
        The new policy.

    Raises:
        ValueError: no name, more than two, or a name ``srelib.policies`` does not export.
    """
    import srelib.policies as policies

    from srelib.policies.base import compose

    if not 1 <= len(class_names) <= 2:
        raise ValueError(f"build_policy takes one or two class names, got {len(class_names)}")
    unknown = [name for name in class_names if name not in policies.__all__]
    if unknown:
        raise ValueError(f"srelib.policies has no policy class {unknown[0]!r}; "
                         f"classes: {', '.join(sorted(policies.__all__))}")
    parts = [getattr(policies, name) for name in class_names]
    return parts[0]() if len(parts) == 1 else compose(*parts)


def scripted_policy(name: str) -> functools.partial:
    """A picklable zero-argument factory for a registered scripted policy.

    Args:
        name: a name of ``srelib.POLICY_CLASSES`` (as ``srelib eval --policy`` takes).

    Returns:
        A ``functools.partial`` that builds a fresh policy (what :func:`srelib.evaluate` takes).

    Raises:
        ValueError: an unknown name; the message lists the valid ones.
    """
    if name not in POLICY_CLASSES:
        raise ValueError(f"unknown policy {name!r}; valid policies: {', '.join(POLICY_CLASSES)}")
    return functools.partial(build_policy, *POLICY_CLASSES[name])


def policy_factory(name: str, **options: Any) -> functools.partial:
    """A picklable zero-argument factory for the policy called ``name``: a scripted policy
    (:data:`POLICY_CLASSES`, no options) or an LLM provider's policy built with ``options``
    (``policy_factory("openai", model="gpt-4o-mini")``)."""
    from srelib.policies.llm.providers import providers

    if name in POLICY_CLASSES:
        if options:
            raise ValueError(f"scripted policy {name!r} takes no options, got {sorted(options)}")
        return scripted_policy(name)
    found = providers()
    if name not in found:
        raise ValueError(f"unknown policy {name!r}; scripted: {', '.join(POLICY_CLASSES)}; "
                         f"LLM providers: {', '.join(sorted(found))}")
    return functools.partial(found[name], **options)


def registered_name(policy: Any) -> str | None:
    """The name ``srelib eval`` gives a policy built from the same srelib classes, if any
    (``CompositePolicy(HeuristicPhase1Policy(), RevertPhase2Policy())`` is heuristic-revert)."""
    import srelib.policies as policies

    parts = (policy.phase1, policy.phase2) if isinstance(policy, policies.CompositePolicy) \
        else (policy,)
    for name, classes in POLICY_CLASSES.items():
        if len(classes) == len(parts) and \
                all(type(p) is getattr(policies, c) for p, c in zip(parts, classes)):
            return name
    return None
