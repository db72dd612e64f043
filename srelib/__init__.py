"""srelib: a notebook workbench for studying LLM agents on SRE incidents.

Public names are loaded lazily, so ``import srelib`` stays fast and pulls in no heavy library;
the ``TYPE_CHECKING`` imports below show the same names to type checkers and IDEs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from srelib._lazy import lazy_exports
from srelib._version import __version__ as __version__  # re-exported

_EXPORTS = {
    "IncidentEnv": "srelib.env.core",
    "RemoteEnv": "srelib.serve.remote",
    "ActionType": "srelib.env.actions",
    "SERVICES": "srelib.env.actions",
    "FAULT_CLASSES": "srelib.env.actions",
    "ACTION_SPECS": "srelib.env.actions",
    "BeliefState": "srelib.env.belief",
    "get_scenario": "srelib.env.tasks.lookup",
    "TASKS": "srelib.env.simulation.scenarios",
    "list_tasks": "srelib.env.tasks.catalog",
    "task_card": "srelib.env.tasks.lookup",
    "task_id": "srelib.env.tasks.ids",
    "POOLS": "srelib.env.tasks.pools",
    "oracle_belief": "srelib.env.tasks.pools",
    "score_trajectory": "srelib.env.grading.score",
    "parse_action": "srelib.env.parse",
    "EpisodeSpec": "srelib.env.tasks.spec",
    "EpisodeRun": "srelib.episode",
    "episode_steps": "srelib.episode",
    "drive": "srelib.episode",
    "Episode": "srelib.results.store",
    "load_run": "srelib.runners.runs",
    "verify_run": "srelib.runners.runs",
    "sign_run": "srelib.results.signing",
    "load_episodes": "srelib.results.store",
    "load_episode": "srelib.results.store",
    "verify_episode": "srelib.results.verify",
    "run_episode": "srelib.runners.rollout",
    "evaluate": "srelib.runners.rollout",
    "EvalConfig": "srelib.runners.eval_config",
    "measure_null_context": "srelib.analysis.ceiling",
    "ceiling_table": "srelib.analysis.ceiling",
    "ceiling_episodes": "srelib.analysis.ceiling",
    "summarize_ceiling": "srelib.analysis.ceiling",
    "POLICY_CLASSES": "srelib.policies.registry",
    "scripted_policy": "srelib.policies.registry",
    "build_policy": "srelib.policies.registry",
    "ablate": "srelib.analysis.ablations",
    "Curriculum": "srelib.analysis.curriculum",
}

if TYPE_CHECKING:  # the same names as _EXPORTS (a test keeps the two in step)
    from srelib.env.core import IncidentEnv
    from srelib.serve.remote import RemoteEnv
    from srelib.env.actions import ActionType, SERVICES, FAULT_CLASSES, ACTION_SPECS
    from srelib.env.belief import BeliefState
    from srelib.env.tasks.lookup import get_scenario
    from srelib.env.simulation.scenarios import TASKS
    from srelib.env.tasks.catalog import list_tasks
    from srelib.env.tasks.lookup import task_card
    from srelib.env.tasks.ids import task_id
    from srelib.env.tasks.pools import POOLS, oracle_belief
    from srelib.env.grading.score import score_trajectory
    from srelib.env.parse import parse_action
    from srelib.env.tasks.spec import EpisodeSpec
    from srelib.episode import EpisodeRun, episode_steps, drive
    from srelib.results.store import Episode, load_episodes, load_episode
    from srelib.runners.runs import load_run, verify_run
    from srelib.results.signing import sign_run
    from srelib.results.verify import verify_episode
    from srelib.runners.rollout import run_episode, evaluate
    from srelib.runners.eval_config import EvalConfig
    from srelib.analysis.ceiling import measure_null_context, ceiling_table, ceiling_episodes, summarize_ceiling
    from srelib.policies.registry import POLICY_CLASSES, scripted_policy, build_policy
    from srelib.analysis.ablations import ablate
    from srelib.analysis.curriculum import Curriculum

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports("srelib", _EXPORTS, globals())
