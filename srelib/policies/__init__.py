"""Policies: the protocols (``base``), the scripted ones (``scripted/``: baselines, a heuristic
SRE, revert, partial revert and the repair ladder, the reference) and the LLM ones (``llm/``:
prompts, tools, chat machinery, one module per provider), built by name in ``registry``.
Cheaters live apart, in :mod:`srelib.adversarial`.

Names load lazily, so importing the package pulls in neither ``openai`` nor ``transformers``.
"""

from __future__ import annotations

from srelib._lazy import lazy_exports

_EXPORTS = {
    "Policy": "srelib.policies.base",
    "CompositePolicy": "srelib.policies.base",
    "ChatPolicyBase": "srelib.policies.llm.chat",
    "ChatConfig": "srelib.policies.llm.config",
    "OpenAIChatConfig": "srelib.policies.llm.providers.openai_chat",
    "HFChatConfig": "srelib.policies.llm.providers.hf_chat",
    "call_reset": "srelib.policies.base",
    "make_action": "srelib.policies.base",
    "policy_factory": "srelib.policies.registry",
    "NullPhase1Policy": "srelib.policies.scripted.baselines",
    "RandomPhase2Policy": "srelib.policies.scripted.baselines",
    "OracleP1ThenRandomP2Policy": "srelib.policies.scripted.baselines",
    "HeuristicPhase1Policy": "srelib.policies.scripted.heuristic",
    "InvestigatorPolicy": "srelib.policies.scripted.investigator",
    "RevertPhase2Policy": "srelib.policies.scripted.revert",
    "PartialRevertPhase2Policy": "srelib.policies.scripted.repair",
    "LadderPhase2Policy": "srelib.policies.scripted.repair",
    "AimedRepairPhase2Policy": "srelib.policies.scripted.aimed",
    "AimedLadderPhase2Policy": "srelib.policies.scripted.aimed",
    "ReferencePolicy": "srelib.policies.scripted.reference",
    "OpenAIChatPolicy": "srelib.policies.llm.providers.openai_chat",
    "HFTransformersChatPolicy": "srelib.policies.llm.providers.hf_chat",
    "SYSTEM_PROMPT": "srelib.policies.llm.prompts",
    "render_observation": "srelib.policies.llm.prompts",
    "Transcript": "srelib.policies.llm.prompts",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports("srelib.policies", _EXPORTS, globals())
