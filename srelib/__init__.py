"""srelib: a notebook workbench for studying LLM agents on SRE incidents.

Public names are loaded lazily, so ``import srelib`` stays fast and pulls in no heavy library.
"""

from __future__ import annotations

from srelib._lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    "IncidentEnv": "srelib.env.core",
    "RemoteEnv": "srelib.remote",
    "ActionType": "srelib.env.actions",
    "SERVICES": "srelib.env.actions",
    "FAULT_CLASSES": "srelib.env.actions",
    "BeliefState": "srelib.env.belief",
    "get_scenario": "srelib.env.scenarios",
    "TASKS": "srelib.env.scenarios",
    "list_tasks": "srelib.env.catalog",
    "POOLS": "srelib.env.pools",
    "oracle_belief": "srelib.env.pools",
    "score_trajectory": "srelib.env.grading",
    "parse_action": "srelib.parse",
    "Episode": "srelib.results",
    "load_run": "srelib.results",
    "verify_episode": "srelib.verify",
    "run_episode": "srelib.rollout",
    "evaluate": "srelib.rollout",
    "measure_null_context": "srelib.rollout",
    "ceiling_table": "srelib.rollout",
    "ablate": "srelib.ablations",
    "Curriculum": "srelib.curriculum",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports("srelib", _EXPORTS, globals())
