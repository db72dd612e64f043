"""Policies: scripted baselines, a heuristic SRE, revert, partial revert and the repair ladder,
the reference, and chat policies.

Names load lazily, so importing the package pulls in neither ``openai`` nor ``transformers``.
"""

from __future__ import annotations

from srelib._lazy import lazy_exports

_EXPORTS = {
    "Policy": "srelib.policies.base",
    "CompositePolicy": "srelib.policies.base",
    "ChatPolicyBase": "srelib.policies.base",
    "call_reset": "srelib.policies.base",
    "make_action": "srelib.policies.base",
    "NullPhase1Policy": "srelib.policies.baselines",
    "RandomPhase2Policy": "srelib.policies.baselines",
    "OracleP1ThenRandomP2Policy": "srelib.policies.baselines",
    "HeuristicPhase1Policy": "srelib.policies.heuristic",
    "RevertPhase2Policy": "srelib.policies.revert",
    "PartialRevertPhase2Policy": "srelib.policies.repair",
    "LadderPhase2Policy": "srelib.policies.repair",
    "ReferencePolicy": "srelib.policies.reference",
    "OpenAIChatPolicy": "srelib.policies.openai_chat",
    "HFTransformersChatPolicy": "srelib.policies.hf_chat",
    "SYSTEM_PROMPT": "srelib.policies.prompts",
    "render_observation": "srelib.policies.prompts",
    "Transcript": "srelib.policies.prompts",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports("srelib.policies", _EXPORTS, globals())
