"""The action vocabulary: action names, services, fault classes and parameter schemas.

This module is the single source of truth for what an agent may send. Every parameter is
declared once, as a :class:`Param` (type, default, bounds or allowed values, meaning);
:func:`clean_parameters` checks an action's parameters against those declarations for the
environment and the workspace, and the prompt, the tool definitions and the widgets' forms
are all generated from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


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

#: Log levels, least to most severe; ``query_logs.level`` takes one, in any case.
LOG_LEVELS: tuple[str, ...] = ("DEBUG", "INFO", "WARN", "ERROR", "FATAL")

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
    """One action parameter, declared once.

    ``type`` is its JSON type; ``default`` stands in when it is absent or null; ``minimum`` and
    ``maximum`` bound a number; ``choices`` close a string's vocabulary (matched in any case when
    ``any_case``, and cleaned to the declared spelling); ``nonblank`` refuses whitespace-only
    text. ``doc`` says what it means; :attr:`description` adds the bounds or choices.
    """

    type: type
    required: bool = False
    doc: str = ""
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    any_case: bool = False
    nonblank: bool = False

    @property
    def description(self) -> str:
        """``doc`` with the allowed range or values, as the prompt, tools and forms show it."""
        if self.minimum is not None and self.maximum is not None:
            return f"{self.doc} ({self.minimum}-{self.maximum})"
        if self.minimum is not None:
            return f"{self.doc} (at least {self.minimum})"
        if self.maximum is not None:
            return f"{self.doc} (at most {self.maximum})"
        if self.choices is not None:
            return f"{self.doc}: one of {', '.join(self.choices)}"
        return self.doc

    def type_problem(self, name: str, value: Any) -> str | None:
        """Why a present ``value`` has the wrong type or lies out of bounds, or None."""
        if not isinstance(value, self.type) or (self.type is int and isinstance(value, bool)):
            return f"parameters.{name} must be {self.type.__name__}, got {type(value).__name__}"
        if self.minimum is not None and self.maximum is not None:
            if not self.minimum <= value <= self.maximum:
                return f"parameters.{name} must be between {self.minimum} and {self.maximum}"
        elif self.minimum is not None and value < self.minimum:
            return f"parameters.{name} must be at least {self.minimum}"
        elif self.maximum is not None and value > self.maximum:
            return f"parameters.{name} must be at most {self.maximum}"
        return None

    def choose(self, name: str, value: Any) -> tuple[Any, str | None]:
        """A well-typed ``value`` checked against ``nonblank`` and ``choices``: ``(value, None)``
        with the declared spelling, or ``(None, reason)``."""
        if self.nonblank and not value.strip():
            return None, f"parameters.{name} must be a non-empty description"
        if self.choices is None:
            return value, None
        chosen = ({c.upper(): c for c in self.choices}.get(value.upper()) if self.any_case
                  else value if value in self.choices else None)
        if chosen is None:
            return None, f"parameters.{name} must be one of {list(self.choices)}"
        return chosen, None


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
        "level": Param(str, doc="only lines of this level", choices=LOG_LEVELS, any_case=True),
        "keyword": Param(str, doc="only lines whose message contains this text"),
        "limit": Param(int, doc="how many of the newest matching lines", default=15,
                       minimum=1, maximum=50),
    }),
    ActionType.SCALE_SERVICE: ActionSpec(1, True, _TARGET_DOC[ActionType.SCALE_SERVICE], {
        "replicas": Param(int, doc="the new replica count", default=5, minimum=1, maximum=10),
    }),
    ActionType.DECLARE_ROOT_CAUSE: ActionSpec(1, False, "state the root cause", {
        "root_cause": Param(str, required=True, doc="one or two sentences", nonblank=True),
        "service": Param(str, doc="the root-cause service", choices=SERVICES),
        "fault_class": Param(str, doc="the kind of fault", choices=tuple(FAULT_CLASSES)),
    }),
    ActionType.TRANSITION_TO_PHASE2: ActionSpec(0, False, "hand over to code work", {
        "belief": Param(dict, doc="a BeliefState as a dict"),
    }),
    ActionType.READ_FILE: ActionSpec(2, False, "read a file of the repository", {
        "path": Param(str, required=True, doc="path relative to the repository root"),
        "start_line": Param(int, doc="first line to show; default the first", minimum=1),
        "end_line": Param(int, doc="last line to show, inclusive; default the last", minimum=1),
    }),
    ActionType.SEARCH_CODE: ActionSpec(2, False, "search the repository's files", {
        "query": Param(str, required=True, doc="text to find (a regex if regex is true)"),
        "regex": Param(bool, doc="treat query as a regular expression (RE2 syntax)", default=False),
        "path_glob": Param(str, doc="only paths matching this glob, e.g. '*.py'", default="*"),
        "max_hits": Param(int, doc="at most this many hits", default=50, minimum=1, maximum=100),
    }),
    ActionType.LIST_DIR: ActionSpec(2, False, "list a directory of the repository", {
        "path": Param(str, doc="directory path; '.' is the root", default="."),
    }),
    ActionType.GET_GIT_LOG: ActionSpec(2, False, "recent commits, newest first", {
        "path": Param(str, doc="only commits touching this file or directory"),
        "n_commits": Param(int, doc="how many commits", default=10, minimum=1, maximum=50),
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

#: The fields of ``transition_to_phase2.belief`` (BeliefState's, in its order); the belief
#: is read leniently by :func:`srelib.env.belief.coerce_belief`, and these declarations
#: drive its tool schema, its prompt text and its form.
BELIEF_PARAMS: dict[str, Param] = {
    "suspected_service": Param(str, doc="the service whose change caused the incident, or null",
                               choices=SERVICES),
    "suspected_fault_class": Param(str, doc="the fault class, or null", choices=tuple(FAULT_CLASSES)),
    "service_confidence": Param(float, doc="how sure you are of the service", default=0.0,
                                minimum=0, maximum=1),
    "fault_confidence": Param(float, doc="how sure you are of the fault class", default=0.0,
                              minimum=0, maximum=1),
    "evidence_gaps": Param(list, doc="what you could not check, as a list of strings"),
    "estimated_p2_cost": Param(str, doc="how hard the code fix looks", default="unknown",
                               choices=("low", "medium", "high", "unknown")),
    "decision": Param(str, doc="whether to hand over now", default="continue",
                      choices=("transition", "continue", "abort")),
    "reasoning": Param(str, doc="one or two sentences of evidence", default=""),
}

ACTION_NAMES: tuple[str, ...] = tuple(a.value for a in ActionType)


def clean_parameters(action_type: ActionType | str, params: Any) -> tuple[dict | None, str | None]:
    """An action's parameters checked against its declarations: ``(clean, None)`` or
    ``(None, reason)``; never raises on agent input.

    ``clean`` holds every declared parameter: a missing or null one gets its default, closed
    vocabularies their declared spelling; undeclared keys are dropped. Types, required ones
    and bounds are checked first, in declaration order, then blank text and choices. Cleaning
    clean parameters returns them unchanged. An unknown ``action_type`` is a programmer's
    error (ValueError naming the valid ones).
    """
    try:
        action = ActionType(action_type)
    except ValueError:
        raise ValueError(f"unknown action_type {action_type!r}; valid: {list(ACTION_NAMES)}") from None
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return None, f"parameters must be a dict, got {type(params).__name__}"
    declared = ACTION_SPECS[action].params
    clean = {}
    for name, p in declared.items():
        value = params.get(name)
        if value is None:
            if p.required:
                return None, (f"{action.value} needs parameters.{name} ({p.type.__name__}): "
                              f"{p.description}")
            clean[name] = p.default
            continue
        problem = p.type_problem(name, value)
        if problem is not None:
            return None, problem
        clean[name] = value
    for name, p in declared.items():
        if clean[name] is not None and p.type is str:
            clean[name], problem = p.choose(name, clean[name])
            if problem is not None:
                return None, problem
    return clean, None

#: Reserved action types a policy sends when it could not read an action from a model's reply.
#: PARSE_ERROR is rejected with its ``parameters["reason"]`` shown to the agent (and costs a
#: step); GIVE_UP ends the episode cleanly as truncated (the policy gave up after K failures).
PARSE_ERROR = "__parse_error__"
GIVE_UP = "__give_up__"
