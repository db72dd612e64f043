"""The episode score, computed from the trajectory alone.

``score_trajectory(task, mode, trajectory)`` reads only the step records (docs/CONTRACTS.md),
the static scenario and the deterministic patch grader, so a saved trajectory re-grades to the
same score and no oracle is consulted. The components, each in [0, 1]:

* **diagnosis**: the last valid ``declare_root_cause``, else the belief handed over at the
  transition. ``DIAGNOSIS_PARTS`` of it: the structured ``service`` field (one of the
  scenario's acceptable_services; a service named only in the text earns nothing), the fault
  class (likewise from its field only), and the share of the scenario's keywords found as whole
  words in the text.
  A declaration earns nothing, as a wrong one does, when it was made blind or when it hedges.
  Blind: no valid phase-1 action before it viewed the logs, metrics or deploy history
  (``EVIDENCE_ACTIONS``) of the service it blames (of any service when it blames none), so a
  constant answer learned from the train tasks and declared at once earns no luck.
  Hedging (:func:`hedged`): the text names a service beyond the declared one and the incident's
  story (its involved services, those its correct root cause names and those the declared
  service's deploy notes name); it names more than one fault class, text and field together,
  where one is beyond those of the correct root cause; or its text uses ``FAULT_WORDS`` of
  ``VOCABULARY_CLASSES`` or more other classes (a list of the fault vocabulary). A declaration
  past ``MAX_DECLARATION_CHARS`` earns nothing either.
* **mitigation** (only where the scenario requires remediation): the share of the required
  remediation actions taken, times ``0.5 + 0.5 * share of services healthy`` at the handoff
  (the transition record's statuses) or, without a transition, at the end.
* Harmful actions (a remediation of an uninvolved service; a rollback the scenario does not
  call for, i.e. of a good deploy) cost ``HARM_PENALTY`` each, from mitigation, or from
  diagnosis where no remediation is required.
* **repair**: the :func:`repair_credit` of the proposed patch, graded by the hidden tests. It
  follows SWE-bench's ``resolved`` (which ``grade_patch`` reports beside it) and grades within
  it: 1 when resolved ``"full"``, the share of FAIL_TO_PASS tests that pass when ``"partial"``,
  0 when ``"no"`` (a patch that breaks a PASS_TO_PASS test earns nothing, whatever it fixes).
  SWE-bench's partial measures, ``fail_to_pass_rate`` (the fraction of FAIL_TO_PASS tests that
  pass) and ``pass_to_pass_rate`` (the fraction of PASS_TO_PASS tests kept), are reported in
  the breakdown beside it (None without a graded patch) and do not enter the score.
  Where no change is needed, ``declare_no_change`` scores 1 and any patch 0.
* **efficiency**: the weighted mean of the other counted components (so doing nothing earns
  nothing), times 1 up to the expected number of steps, falling linearly to 0 at
  ``1 + STEP_SLACK`` times that number.

``WEIGHTS`` (the one place they are set) combine the counted components; the final score is
their weighted mean. Counted: p1_only diagnosis, mitigation, efficiency; p2_only repair,
efficiency (pool B's handoff is the environment's, not the agent's); joint all four.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

from srelib.env.actions import FAULT_CLASSES, PHASE1_REMEDIATION, SERVICES, ActionType
from srelib.env.grading.pipeline import grade_patch
from srelib.env.tasks.pools import MODES
from srelib.env.records import agent_transition, phase_steps
from srelib.env.tasks.lookup import get_scenario
from srelib.env.simulation.scenarios import Scenario
from srelib.env.types import PatchGrade, ScoreBreakdown, Trajectory

WEIGHTS = {"diagnosis": 0.30, "mitigation": 0.25, "repair": 0.35, "efficiency": 0.10}
DIAGNOSIS_PARTS = {"service": 0.4, "fault_class": 0.3, "text": 0.3}
HARM_PENALTY = 0.25
MAX_DECLARATION_CHARS = 600
#: Each fault class's words: a declaration whose text uses the words of VOCABULARY_CLASSES or
#: more classes beyond its own and its story's lists the vocabulary instead of committing.
FAULT_WORDS: dict[str, tuple[str, ...]] = {
    "memory_leak": ("memory", "leak", "heap", "oom", "garbage"),
    "config_change": ("config", "configuration", "setting", "secret", "flag", "credential"),
    "deadlock": ("deadlock", "lock", "locks", "blocked", "circular"),
    "retry_storm": ("retry", "retries", "storm", "backoff", "throttle"),
    "cache_thrash": ("thrash", "evict", "eviction", "evicts"),
    "shared_dependency": ("shared", "library", "dependency", "vendor", "serializer", "pinned"),
    "pool_exhaustion": ("pool", "exhaustion", "exhausted", "lease", "slots"),
}
VOCABULARY_CLASSES = 2
#: The phase-1 actions that view a service's evidence (its signals and its deploys).
EVIDENCE_ACTIONS = frozenset({ActionType.QUERY_LOGS.value, ActionType.CHECK_METRICS.value,
                              ActionType.CHECK_DEPLOY_HISTORY.value})
STEP_SLACK = 2.0
_REMEDIATIONS = {a.value for a in PHASE1_REMEDIATION}
_DECLARE = ActionType.DECLARE_ROOT_CAUSE.value
_PATCH = ActionType.PROPOSE_PATCH.value
_NO_CHANGE = ActionType.DECLARE_NO_CHANGE.value


def _mentions(text: str, phrase: str) -> bool:
    """Whole-word, case-insensitive: 'auth' is in 'auth-client' but not in 'authentication'."""
    return re.search(rf"(?<![a-z0-9_]){re.escape(phrase.lower())}(?![a-z0-9_])", text) is not None


def _named_services(text: str) -> set[str]:
    return {s for s in SERVICES
            if any(_mentions(text, form) for form in {s, s.replace("_", " "), s.replace("_", "-")})}


def _named_classes(text: str) -> set[str]:
    return {c for c in FAULT_CLASSES if c != "none"
            and any(_mentions(text, form) for form in {c, c.replace("_", " "), c.replace("_", "-")})}


def _text(value: object) -> str:
    return value.strip().lower() if isinstance(value, str) else ""


def _vocabulary(text: str) -> set[str]:
    """The fault classes some of whose FAULT_WORDS the text uses."""
    return {c for c, words in FAULT_WORDS.items() if any(_mentions(text, w) for w in words)}


def hedged(scenario: Scenario, text: str, service: str, fault_class: str) -> bool:
    """Does the declaration hedge instead of committing (module doc)? Its text names a service
    beyond the declared one and the incident's story (quoting the declared service's own deploy
    notes is not hedging), or it names more than one fault class (text and field) when one is
    beyond those its correct root cause names, or its text uses the words of
    VOCABULARY_CLASSES or more fault classes beyond its own and its story's."""
    told = scenario.correct_root_cause.lower()
    notes = " ".join(d.description.lower() for d in scenario.deploy_specs(service)) if service in SERVICES else ""
    story_services = (set(scenario.involved_services) | set(scenario.acceptable_services)
                      | _named_services(told) | _named_services(notes))
    if _named_services(text) - {service} - story_services:
        return True
    story_classes = _named_classes(told) | {scenario.fault_class}
    classes = _named_classes(text) | ({fault_class} if fault_class in FAULT_CLASSES and fault_class != "none" else set())
    if len(classes) > 1 and classes - _named_classes(told):
        return True
    return len(_vocabulary(text) - {fault_class} - story_classes - _vocabulary(told)) >= VOCABULARY_CLASSES


def diagnosis_score(scenario: Scenario, text: object, service: object, fault_class: object) -> float:
    """Score one declaration (text, service, fault class) against the scenario; see the module."""
    text, service, fault_class = _text(text), _text(service), _text(fault_class)
    if len(text) > MAX_DECLARATION_CHARS or hedged(scenario, text, service, fault_class):
        return 0.0
    hits = sum(_mentions(text, k) for k in scenario.keywords)
    return (DIAGNOSIS_PARTS["service"] * (service in scenario.acceptable_services)
            + DIAGNOSIS_PARTS["fault_class"] * (fault_class == scenario.fault_class)
            + DIAGNOSIS_PARTS["text"] * (hits / len(scenario.keywords) if scenario.keywords else 0.0))


def _action(record: Mapping[str, Any]) -> tuple[str | None, str | None, dict]:
    action = record.get("action") or {}
    params = action.get("parameters")
    return action.get("action_type"), action.get("target_service"), params if isinstance(params, dict) else {}


def viewed_evidence(records: Trajectory) -> set[str]:
    """The services whose logs, metrics or deploy history a valid phase-1 action viewed."""
    return {target for record in records for kind, target, _ in [_action(record)]
            if kind in EVIDENCE_ACTIONS and record.get("valid") and record.get("phase") == 1
            and isinstance(target, str)}


def supported(service: object, viewed: set[str]) -> bool:
    """Was the evidence for blaming ``service`` viewed: its own, or any service's when the
    declaration blames none?"""
    return _text(service) in viewed if _text(service) in SERVICES else bool(viewed)


def _diagnosis(scenario: Scenario, records: Trajectory) -> float:
    for at in range(len(records) - 1, -1, -1):
        kind, _, params = _action(records[at])
        if kind == _DECLARE and records[at].get("valid"):
            source = records[at].get("effect") or params
            if not supported(source.get("service"), viewed_evidence(records[:at])):
                return 0.0
            return diagnosis_score(scenario, source.get("root_cause"), source.get("service"),
                                   source.get("fault_class"))
    transition = agent_transition(records)
    if transition is None:
        return 0.0
    belief = (transition.get("effect") or {}).get("belief") or {}
    if not supported(belief.get("suspected_service"), viewed_evidence(records)):
        return 0.0
    return diagnosis_score(scenario, belief.get("reasoning"), belief.get("suspected_service"),
                           belief.get("suspected_fault_class"))


def _remediations(records: Trajectory) -> list[str]:
    """``"action:service"`` of every valid phase-1 remediation, in order."""
    out = []
    for record in records:
        kind, target, _ = _action(record)
        if kind in _REMEDIATIONS and record.get("valid") and record.get("phase") == 1:
            out.append(f"{kind}:{target}")
    return out


def harmful_remediations(scenario: Scenario, records: Trajectory) -> list[str]:
    """``"action:service"`` of each remediation of an uninvolved service and each rollback the
    scenario does not call for, in order."""
    return [
        r for r in _remediations(records)
        if r.split(":", 1)[1] not in scenario.involved_services
        or (r.startswith(ActionType.ROLLBACK_DEPLOY.value) and r not in scenario.required_remediation)
    ]


def harmful_actions(scenario: Scenario, records: Trajectory) -> int:
    """How many :func:`harmful_remediations` the records hold."""
    return len(harmful_remediations(scenario, records))


def _mitigation(scenario: Scenario, records: Trajectory) -> float:
    required = set(scenario.required_remediation)
    taken = required & set(_remediations(records))
    handoff = agent_transition(records) or (records[-1] if records else {})
    statuses = handoff.get("statuses") or {}
    healthy = sum(v == "healthy" for v in statuses.values()) / len(SERVICES)
    return len(taken) / len(required) * (0.5 + 0.5 * healthy)


def repair_score(scenario: Scenario, task: str, records: Trajectory) -> tuple[float, PatchGrade | None, bool]:
    """``(repair, grade_patch result or None, declared_no_change)`` from the phase-2 ending."""
    for record in reversed(records):
        kind, _, params = _action(record)
        if record.get("phase") != 2 or not record.get("valid") or kind not in (_PATCH, _NO_CHANGE):
            continue
        if kind == _NO_CHANGE:
            return (0.0 if scenario.needs_fix else 1.0), None, True
        diff = (record.get("effect") or params).get("diff", "")
        patch = grade_patch(scenario.repo, task, diff)
        return (repair_credit(patch) if scenario.needs_fix else 0.0), patch, False
    return 0.0, None, False


def repair_credit(patch: PatchGrade) -> float:
    """Graded credit for a ``grade_patch`` result (module doc): the share of FAIL_TO_PASS tests
    that pass, as long as every PASS_TO_PASS test still passes (1 when resolved ``"full"``, the
    share when ``"partial"``); a patch that breaks working behaviour earns nothing, as in
    SWE-bench, however many failing tests it fixes (a blind revert of a commit that also
    brought a feature)."""
    f2p, p2p = patch["FAIL_TO_PASS"], patch["PASS_TO_PASS"]
    if not f2p or not all(p2p.values()):
        return 0.0
    return sum(f2p.values()) / len(f2p)


def _counted(scenario: Scenario, mode: str) -> list[str]:
    phase1 = ["diagnosis"] + (["mitigation"] if scenario.required_remediation else [])
    return {"p1_only": phase1, "p2_only": ["repair"], "joint": phase1 + ["repair"]}[mode] + ["efficiency"]


def _step_factor(steps: int, expected: int) -> float:
    if steps <= expected:
        return 1.0
    return max(0.0, 1.0 - (steps - expected) / (STEP_SLACK * expected))


def score_trajectory(task: str, mode: str, trajectory: Trajectory) -> ScoreBreakdown:
    """The score breakdown of one episode (shape in docs/CONTRACTS.md).

    Args:
        task: a task name or an opaque id.
        mode: ``"p1_only"``, ``"p2_only"`` or ``"joint"``.
        trajectory: the episode's records (``env.trajectory``).

    Returns:
        The :class:`ScoreBreakdown`: ``final``, each component, the patch's verdict.

    Raises:
        ValueError: an unknown task or mode.
    """
    scenario = get_scenario(task)
    task = scenario.name
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; valid: {list(MODES)}")
    if not isinstance(trajectory, list) or not all(isinstance(r, dict) for r in trajectory):
        raise ValueError("trajectory must be a list of step-record dicts")
    counted = _counted(scenario, mode)
    p1, p2 = phase_steps(trajectory)
    harm = harmful_actions(scenario, trajectory) if mode != "p2_only" else 0
    scores: dict[str, float] = {}  # the counted components
    patch, no_change = None, False
    if "diagnosis" in counted:
        scores["diagnosis"] = _diagnosis(scenario, trajectory)
        if "mitigation" in counted:
            scores["mitigation"] = max(0.0, _mitigation(scenario, trajectory) - HARM_PENALTY * harm)
        else:
            scores["diagnosis"] = max(0.0, scores["diagnosis"] - HARM_PENALTY * harm)
    if "repair" in counted:
        scores["repair"], patch, no_change = repair_score(scenario, task, trajectory)
    others = [c for c in counted if c != "efficiency"]
    correctness = sum(WEIGHTS[c] * scores[c] for c in others) / sum(WEIGHTS[c] for c in others)
    steps, expected = {"p1_only": (p1, scenario.expected_p1_steps),
                       "p2_only": (p2, scenario.expected_p2_steps),
                       "joint": (p1 + p2, scenario.expected_p1_steps + scenario.expected_p2_steps)}[mode]
    scores["efficiency"] = correctness * _step_factor(steps, expected)
    final = sum(WEIGHTS[c] * scores[c] for c in counted) / sum(WEIGHTS[c] for c in counted)
    final = min(1.0, max(0.0, final)) if math.isfinite(final) else 0.0
    shown = {c: (round(scores[c], 4) if c in scores else None) for c in WEIGHTS}
    return {
        "final": round(final, 4), "diagnosis": shown["diagnosis"], "mitigation": shown["mitigation"],
        "repair": shown["repair"], "efficiency": shown["efficiency"],
        "fail_to_pass_rate": None if patch is None else patch["fail_to_pass_rate"],
        "pass_to_pass_rate": None if patch is None else patch["pass_to_pass_rate"],
        "counted": counted, "weights": dict(WEIGHTS), "patch": patch,
        "declared_no_change": no_change, "harmful_actions": harm, "steps": {"p1": p1, "p2": p2},
    }


def r_cross(repair: float, null_repair: float) -> float:
    """max(0, repair with this episode's handoff - repair of the same policy after a null handoff)."""
    for name, value in (("repair", repair), ("null_repair", null_repair)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return max(0.0, repair - null_repair)
