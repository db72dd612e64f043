"""The action vocabulary: action names, services, fault classes and parameter schemas.

This module is the single source of truth for what an agent may send. The environment
validates against it, the prompts render it and the widgets build their forms from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class ActionType(str, Enum):
    """Every action name, in the reference's enum order (the seed's values exactly)."""

    VIEW_ALERTS = "view_alerts"
    QUERY_LOGS = "query_logs"
    CHECK_METRICS = "check_metrics"
    CHECK_DEPENDENCIES = "check_dependencies"
    CHECK_DEPLOY_HISTORY = "check_deploy_history"
    RUN_HEALTH_CHECK = "run_health_check"
    RESTART_SERVICE = "restart_service"
    ROLLBACK_DEPLOY = "rollback_deploy"
    SCALE_SERVICE = "scale_service"
    DECLARE_ROOT_CAUSE = "declare_root_cause"
    TRANSITION_TO_PHASE2 = "transition_to_phase2"
    READ_FILE = "read_file"
    SEARCH_CODE = "search_code"
    LIST_DIR = "list_dir"
    GET_GIT_LOG = "get_git_log"
    GET_FILE_DIFF = "get_file_diff"
    PROPOSE_PATCH = "propose_patch"
    DECLARE_NO_CHANGE = "declare_no_change"


SERVICES: tuple[str, ...] = (
    "api_gateway", "auth", "orders", "payment", "cache", "database", "queue",
)

#: Who each service calls. Callers (``depended_by``) are the inverse, in SERVICES order.
DEPENDS_ON: dict[str, tuple[str, ...]] = {
    "api_gateway": ("auth", "orders", "cache"),
    "auth": ("database",),
    "orders": ("database", "payment", "auth"),
    "payment": ("queue", "database"),
    "cache": (),
    "database": (),
    "queue": (),
}

DEPENDED_BY: dict[str, tuple[str, ...]] = {
    s: tuple(c for c in SERVICES if s in DEPENDS_ON[c]) for s in SERVICES
}

#: The fault-class vocabulary for ``declare_root_cause.fault_class`` and
#: ``BeliefState.suspected_fault_class``; documented here and nowhere else.
FAULT_CLASSES: dict[str, str] = {
    "memory_leak": "memory grows without bound until the process is OOM-killed",
    "config_change": "a configuration change (secret, flag, endpoint) broke the service",
    "deadlock": "threads or services wait on each other in a cycle; work stalls",
    "retry_storm": "a client retries too aggressively and overloads its dependency",
    "cache_thrash": "a worker saturates a shared cache and evicts other users' keys",
    "shared_dependency": "a shared library or pinned dependency broke several services",
    "pool_exhaustion": "a connection or worker pool is never handed back on an error path; callers wait",
    "none": "nothing is wrong: the report is spurious and no change is needed",
}

PHASE1_DIAGNOSTIC = (
    ActionType.VIEW_ALERTS, ActionType.QUERY_LOGS, ActionType.CHECK_METRICS,
    ActionType.CHECK_DEPENDENCIES, ActionType.CHECK_DEPLOY_HISTORY, ActionType.RUN_HEALTH_CHECK,
)
PHASE1_REMEDIATION = (
    ActionType.RESTART_SERVICE, ActionType.ROLLBACK_DEPLOY, ActionType.SCALE_SERVICE,
)
PHASE1_ACTIONS = PHASE1_DIAGNOSTIC + PHASE1_REMEDIATION + (ActionType.DECLARE_ROOT_CAUSE,)
PHASE2_DIAGNOSTIC = (
    ActionType.READ_FILE, ActionType.SEARCH_CODE, ActionType.LIST_DIR,
    ActionType.GET_GIT_LOG, ActionType.GET_FILE_DIFF,
)
PHASE2_TERMINAL = (ActionType.PROPOSE_PATCH, ActionType.DECLARE_NO_CHANGE)
PHASE2_ACTIONS = PHASE2_DIAGNOSTIC + PHASE2_TERMINAL


@dataclass(frozen=True)
class Param:
    """One action parameter: its JSON type, whether it is required, and what it means."""

    type: type
    required: bool = False
    doc: str = ""
    default: object = None


@dataclass(frozen=True)
class ActionSpec:
    """What an action needs: the phase it belongs to, a target service or not, parameters."""

    phase: int  # 1, 2, or 0 for the control action (transition)
    targeted: bool
    doc: str
    params: dict[str, Param] = field(default_factory=dict)


_TARGET_DOC = {
    ActionType.QUERY_LOGS: "recent log lines of one service",
    ActionType.CHECK_METRICS: "the 30-minute metric history of one service",
    ActionType.CHECK_DEPENDENCIES: "what a service calls and what calls it",
    ActionType.CHECK_DEPLOY_HISTORY: "the deploys of one service, oldest first",
    ActionType.RUN_HEALTH_CHECK: "probe one service's health endpoint",
    ActionType.RESTART_SERVICE: "restart a service (relieves symptoms briefly)",
    ActionType.ROLLBACK_DEPLOY: "roll a service back to its previous deploy",
    ActionType.SCALE_SERVICE: "change a service's replica count (helps capacity faults only)",
}

ACTION_SPECS: dict[ActionType, ActionSpec] = {
    ActionType.VIEW_ALERTS: ActionSpec(1, False, "list the alerts that are firing now"),
    **{a: ActionSpec(1, True, _TARGET_DOC[a]) for a in _TARGET_DOC},
    ActionType.QUERY_LOGS: ActionSpec(1, True, _TARGET_DOC[ActionType.QUERY_LOGS], {
        "level": Param(str, doc="only this level: DEBUG, INFO, WARN, ERROR or FATAL"),
        "keyword": Param(str, doc="only lines whose message contains this text"),
        "limit": Param(int, doc="how many of the newest matching lines (1-50)", default=15),
    }),
    ActionType.SCALE_SERVICE: ActionSpec(1, True, _TARGET_DOC[ActionType.SCALE_SERVICE], {
        "replicas": Param(int, doc="the new replica count (1-10)", default=5),
    }),
    ActionType.DECLARE_ROOT_CAUSE: ActionSpec(1, False, "state the root cause", {
        "root_cause": Param(str, required=True, doc="one or two sentences"),
        "service": Param(str, doc="the root-cause service"),
        "fault_class": Param(str, doc="one of FAULT_CLASSES"),
    }),
    ActionType.TRANSITION_TO_PHASE2: ActionSpec(0, False, "hand over to code work", {
        "belief": Param(dict, doc="a BeliefState as a dict"),
    }),
    ActionType.READ_FILE: ActionSpec(2, False, "read a file of the repository", {
        "path": Param(str, required=True, doc="path relative to the repository root"),
        "start_line": Param(int, doc="first line to show (1-based)"),
        "end_line": Param(int, doc="last line to show (inclusive)"),
    }),
    ActionType.SEARCH_CODE: ActionSpec(2, False, "search the repository's files", {
        "query": Param(str, required=True, doc="text to find (a regex if regex is true)"),
        "regex": Param(bool, doc="treat query as a Python regular expression", default=False),
        "path_glob": Param(str, doc="only paths matching this glob, e.g. '*.py'", default="*"),
        "max_hits": Param(int, doc="at most this many hits (1-100)", default=50),
    }),
    ActionType.LIST_DIR: ActionSpec(2, False, "list a directory of the repository", {
        "path": Param(str, doc="directory path; '.' is the root", default="."),
    }),
    ActionType.GET_GIT_LOG: ActionSpec(2, False, "recent commits, newest first", {
        "path": Param(str, doc="only commits touching this file or directory"),
        "n_commits": Param(int, doc="how many commits (1-50)", default=10),
    }),
    ActionType.GET_FILE_DIFF: ActionSpec(2, False, "the unified diff of one commit", {
        "commit_sha": Param(str, required=True, doc="the commit's sha (a unique prefix works)"),
        "path": Param(str, doc="only this file's part of the diff"),
    }),
    ActionType.PROPOSE_PATCH: ActionSpec(2, False, "end the episode with a unified diff", {
        "diff": Param(str, required=True, doc="a unified diff against the repository"),
    }),
    ActionType.DECLARE_NO_CHANGE: ActionSpec(2, False, "end the episode: no code change needed", {
        "reason": Param(str, doc="why no change is needed"),
    }),
}

ACTION_NAMES: tuple[str, ...] = tuple(a.value for a in ActionType)

#: Reserved action types a policy sends when it could not read an action from a model's reply.
#: PARSE_ERROR is rejected with its ``parameters["reason"]`` shown to the agent (and costs a
#: step); GIVE_UP ends the episode cleanly as truncated (the policy gave up after K failures).
PARSE_ERROR = "__parse_error__"
GIVE_UP = "__give_up__"
