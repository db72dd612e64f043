"""srelib: a notebook workbench for studying LLM agents on SRE incidents.

Public names are loaded lazily, so ``import srelib`` stays fast and pulls in no heavy library.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "IncidentEnv": "srelib.env.core",
    "ActionType": "srelib.env.actions",
    "SERVICES": "srelib.env.actions",
    "FAULT_CLASSES": "srelib.env.actions",
    "BeliefState": "srelib.env.belief",
    "get_scenario": "srelib.env.scenarios",
    "TASKS": "srelib.env.scenarios",
    "POOLS": "srelib.env.pools",
    "oracle_belief": "srelib.env.pools",
    "score_trajectory": "srelib.env.grading",
    "parse_action": "srelib.parse",
    "Episode": "srelib.results",
    "load_run": "srelib.results",
    "run_episode": "srelib.rollout",
    "evaluate": "srelib.rollout",
    "measure_null_context": "srelib.rollout",
    "ceiling_table": "srelib.rollout",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'srelib' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
