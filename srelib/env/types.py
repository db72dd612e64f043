"""The shapes that cross module boundaries, as types: what an agent sends (:class:`Action`),
what it sees (:class:`Observation`), what the environment records per step
(:class:`StepRecord`), and how an episode is graded (:class:`ScoreBreakdown`,
:class:`PatchGrade`). They are ``TypedDict`` s: the values stay plain JSON-ready dicts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Optional, Sequence, TypedDict

#: A service's status, best first (``srelib.env.simulation.state.STATUS_NAMES`` indexes it).
Status = Literal["healthy", "degraded", "down"]
Resolution = Literal["full", "partial", "no"]
Severity = Literal["SEV1", "SEV2", "SEV3"]
Phase = Literal[1, 2]


class _ActionRequired(TypedDict):
    action_type: str


class Action(_ActionRequired, total=False):
    """``{"action_type", "target_service", "parameters"}``; the last two may be omitted.
    ``srelib.env.actions.ACTION_SPECS`` declares every action's target and parameters."""

    target_service: Optional[str]
    parameters: dict[str, Any]


class Observation(TypedDict, total=False):
    """What the agent sees after ``reset`` and every ``step``.

    ``incident_title`` never names the answer; ``time_elapsed_minutes`` counts simulated minutes
    since the page; ``steps_taken``/``max_steps``/``steps_remaining`` state the one step budget
    truthfully; ``action_result`` is an action-specific dict, or ``{"error", "valid_actions_hint"}``
    for an invalid action; ``service_statuses`` follows SERVICES order; ``valid_actions`` spells a
    targeted phase-1 action ``"action_type:service"``; ``current_reward`` and
    ``cumulative_reward`` are rounded to 4 places. The last three keys exist in phase 2 only:
    ``bad_commit_sha`` (the suspected service's latest deploy at the page, if that sha is in
    this repository; else None), ``issue`` (the incident plus the handed-over belief) and
    ``file_tree`` (sorted repository paths).
    """

    incident_title: str
    incident_summary: str
    severity: Severity
    current_phase: Phase
    time_elapsed_minutes: int
    steps_taken: int
    max_steps: int
    steps_remaining: int
    action_result: dict[str, Any]
    action_success: bool
    action_message: str
    service_statuses: dict[str, Status]
    active_alerts_count: int
    valid_actions: list[str]
    available_services: list[str]
    current_reward: float
    cumulative_reward: float
    done: bool
    bad_commit_sha: Optional[str]
    issue: str
    file_tree: list[str]


#: Every key an observation can hold, in the order above; ``PHASE2_KEYS`` are present in phase 2
#: only (absent, not None, in phase 1).
OBSERVATION_KEYS: tuple[str, ...] = tuple(Observation.__annotations__)
PHASE2_KEYS: tuple[str, ...] = ("bad_commit_sha", "issue", "file_tree")


class StepRecord(TypedDict):
    """One entry of ``IncidentEnv.trajectory`` (every step, valid or not).

    ``step`` is ``steps_taken`` after the action (the oracle handoff of a phase-2-only episode
    is recorded as step 0); ``phase`` the phase the action was taken in (a transition: 1);
    ``action`` the bounded plain copy of what the agent sent (an action that had to be cut is
    invalid); ``statuses`` after the action. ``effect`` by action: a remediation
    ``{"cleared_faults", "rolled_back_to"}``; ``declare_root_cause`` ``{"root_cause",
    "service", "fault_class"}``; ``transition_to_phase2`` ``{"belief", "bad_commit_sha"}`` (the
    oracle handoff: ``{"belief", "oracle": True}``); ``propose_patch`` ``{"diff"}``;
    ``declare_no_change`` ``{"reason"}``; otherwise None.
    """

    step: int
    phase: Phase
    minute: int
    action: dict[str, Any]
    valid: bool
    error: Optional[str]
    reward: float
    statuses: dict[str, Status]
    effect: Optional[dict[str, Any]]


#: A trajectory as its readers take it: the environment's :class:`StepRecord` s, or the same
#: records read back from JSON.
Trajectory = Sequence[Mapping[str, Any]]


class PatchGrade(TypedDict):
    """``grade_patch``'s verdict on a diff: whether it applied (and why not), which test files
    it touched, each FAIL_TO_PASS and PASS_TO_PASS test's pass/fail, the SWE-bench resolution
    and partial rates (the fraction of FAIL_TO_PASS passing, of PASS_TO_PASS kept), whether the
    patch left the bug site unchanged (then no FAIL_TO_PASS test passes), whether the run timed out, the sandbox's isolation level and whether it holds (``verified``:
    False only for a grade opted in to a weak level with ``SRELIB_SANDBOX=unsafe``)."""

    patch_applied: bool
    apply_error: Optional[str]
    tests_touched: list[str]
    FAIL_TO_PASS: dict[str, bool]
    PASS_TO_PASS: dict[str, bool]
    resolved: Resolution
    fail_to_pass_rate: Optional[float]
    pass_to_pass_rate: Optional[float]
    site_unchanged: bool
    timed_out: bool
    isolation: str
    verified: bool


class ScoreBreakdown(TypedDict):
    """``score_trajectory``'s result: ``final`` and the components (None when the mode does not
    count them), the patch's SWE-bench partial rates (None without a graded patch; not scored),
    which were ``counted`` with which ``weights``, the phase-2 ``patch`` grade (if a
    patch was proposed), whether no change was declared, the harmful remediations counted, and
    ``steps`` per phase (``{"p1", "p2"}``)."""

    final: float
    diagnosis: Optional[float]
    mitigation: Optional[float]
    repair: Optional[float]
    efficiency: Optional[float]
    fail_to_pass_rate: Optional[float]
    pass_to_pass_rate: Optional[float]
    counted: list[str]
    weights: dict[str, float]
    patch: Optional[PatchGrade]
    declared_no_change: bool
    harmful_actions: int
    steps: dict[str, int]


@dataclass(frozen=True)
class EnvState:
    """What tests and tools may read of an episode's hidden state (never shown to the agent):
    the episode's identity and progress, the deploy sha each service ran when the page
    arrived, the services that can be rolled back now, and whether every fault has cleared."""

    task: str
    pool: Optional[str]
    mode: str
    seed: int
    phase: int
    steps: int
    done: bool
    incident_deploys: dict[str, str]
    rollbackable: tuple[str, ...]
    healed: bool
