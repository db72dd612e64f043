"""IncidentEnv: the two-phase episode protocol (reset/step), validation, rewards and budget.

``step`` never raises on agent input: anything malformed becomes an invalid action with an
observation that says what was wrong and what is valid. Observation keys, step infos and
trajectory records follow docs/CONTRACTS.md.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict

from . import actions as A
from .actions import ACTION_SPECS, FAULT_CLASSES, SERVICES, ActionType
from .belief import coerce_belief
from .infra import Infrastructure
from .pools import MODES, POOLS, oracle_belief
from .scenarios import LOG_LEVELS, TASKS, get_scenario

# Shaping rewards (the episode score is separate: grading.score_trajectory).
R_INVALID = -0.05
R_REPEAT = -0.03
R_NEW_RELEVANT = 0.03  # a new diagnostic on an involved service, or the first alert view
R_NEW_DIAGNOSTIC_P2 = 0.01
R_CLEARED = 0.15  # per cleared condition, at most two per action
R_HEALED = 0.2  # once per episode, when the last harmful condition clears
R_HARMFUL = -0.2
R_RELIEF_ONLY = -0.02
R_NO_EFFECT = -0.05
R_DECLARE_SERVICE = 0.2
R_DECLARE_CLASS = 0.1
R_DECLARE_WRONG = -0.1
R_HANDOFF = 0.02
R_WORKSPACE_ERROR = -0.05

_RANGES = {"limit": (1, 50), "replicas": (1, 10), "n_commits": (1, 50), "max_hits": (1, 100)}
_SIZE_PARAMS = frozenset(("limit", "max_hits", "n_commits"))  # not part of the repeat key
_MAX_TEXT = 100_000
_VALUES = {a.value: a for a in ActionType}
_PHASE_TYPES = {
    1: [a.value for a in A.PHASE1_ACTIONS],
    2: [a.value for a in A.PHASE2_ACTIONS],
}
_TARGETED_P1 = [a for a in A.PHASE1_ACTIONS if ACTION_SPECS[a].targeted]
_VALID_P1_CACHE: dict[tuple, tuple[str, ...]] = {}
_VALID_P2 = tuple(_PHASE_TYPES[2])


def _json_safe(value, depth: int = 0):
    """A JSON-serialisable copy of agent input (long strings cut, odd objects repr'd)."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        return value[:_MAX_TEXT]
    if depth >= 6:
        return repr(type(value).__name__)
    if isinstance(value, dict):
        return {str(k)[:200]: _json_safe(v, depth + 1) for k, v in list(value.items())[:200]}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v, depth + 1) for v in list(value)[:1000]]
    return repr(value)[:200]


def _text_or_none(value) -> str | None:
    """A record's action_type / target_service: the string sent, or the repr of anything else."""
    if isinstance(value, ActionType):
        return value.value
    if value is None or isinstance(value, str):
        return _json_safe(value)
    return repr(value)[:200]


def _phase1_valid_actions(rollbackable: tuple, down: tuple, transition: bool) -> tuple[str, ...]:
    key = (rollbackable, down, transition)
    cached = _VALID_P1_CACHE.get(key)
    if cached is None:
        out = [ActionType.VIEW_ALERTS.value]
        for a in _TARGETED_P1:
            for i, s in enumerate(SERVICES):
                if (a is ActionType.ROLLBACK_DEPLOY and not rollbackable[i]) or (
                        a is ActionType.SCALE_SERVICE and down[i]):
                    continue
                out.append(f"{a.value}:{s}")
        out.append(ActionType.DECLARE_ROOT_CAUSE.value)
        if transition:
            out.append(ActionType.TRANSITION_TO_PHASE2.value)
        cached = _VALID_P1_CACHE[key] = tuple(out)
    return cached


class _Invalid(Exception):
    """Raised inside validation only; step turns it into an invalid-action observation."""


class IncidentEnv:
    """The embedded incident environment (Gymnasium-style ``reset``/``step``)."""

    def __init__(self) -> None:
        self._infra: Infrastructure | None = None
        self.scenario = None
        self.trajectory: list[dict] = []

    # ------------------------------------------------------------------ reset
    def reset(self, task: str | None = None, pool: str | None = None, mode: str | None = None,
              seed: int | None = None) -> tuple[dict, dict]:
        """Start an episode. Unknown task/pool/mode raise ValueError naming the valid ones."""
        if pool is not None and pool not in POOLS:
            raise ValueError(f"unknown pool {pool!r}; valid pools: {list(POOLS)}")
        if mode is not None and mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; valid modes: {list(MODES)}")
        if task is not None and task not in TASKS:
            raise ValueError(f"unknown task {task!r}; valid tasks: {list(TASKS)}")
        if seed is None:
            seed = random.SystemRandom().randrange(2**63)
        elif isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an int or None, got {type(seed).__name__}")
        rng = random.Random(seed)
        candidates = POOLS[pool].tasks if pool is not None else TASKS
        drawn = candidates[rng.randrange(len(candidates))]  # drawn even when given: one stream
        task = task or drawn
        self.scenario = scenario = get_scenario(task)
        self._infra = infra = Infrastructure(scenario, rng)
        self._task, self._pool, self._seed = task, pool, seed
        self._mode = mode or (POOLS[pool].mode if pool is not None else "joint")
        self._summary = scenario.summary.format_map(infra.vars)
        self._phase = 1
        self._steps = 0
        self._cum = 0.0
        self._terminated = self._truncated = False
        self._seen: set = set()
        self._epoch = 0
        self._declared = False
        self._healed_paid = False
        self._workspace = None
        self._p2: dict = {}
        self.trajectory = []
        result, message = {"message": "Incident opened. Begin the investigation."}, "Episode started"
        if self._mode == "p2_only":
            belief = oracle_belief(scenario)
            error = self._open_phase2(belief)
            if error is not None:
                raise RuntimeError(f"cannot start phase 2 for {task}: {error}")
            b = asdict(belief)
            self.trajectory.append(self._record(
                {"action_type": ActionType.TRANSITION_TO_PHASE2.value, "target_service": None,
                 "parameters": {"belief": b}}, 1, True, None, 0.0, {"belief": b, "oracle": True}, step=0))
            result = {"message": "Phase 1 was handed over with the oracle belief; work in the code."}
            message = "Episode started in phase 2"
        return self._observation(result, True, message, 0.0), self._info()

    # ------------------------------------------------------------------ step
    def step(self, action) -> tuple[dict, float, bool, bool, dict]:
        """Apply one action. Never raises on agent input."""
        if self._infra is None:
            raise RuntimeError("call reset() before step()")
        if self._terminated or self._truncated:
            info = self._info(valid=False, error="the episode is over; call reset() to start a new one")
            obs = self._observation({"error": info["error"], "valid_actions_hint": []}, False,
                                    "Episode already finished", 0.0)
            return obs, 0.0, self._terminated, self._truncated, info
        phase = self._phase
        safe = self._safe_action(action)
        try:
            atype, target, params = self._validate(action)
        except _Invalid as exc:
            return self._invalid(safe, phase, str(exc))
        if atype == A.GIVE_UP:
            self._steps += 1
            self._truncated = True
            self.trajectory.append(self._record(safe, phase, True, None, 0.0, None))
            obs = self._observation({"message": "The policy gave up."}, True, "Episode ended: gave up", 0.0)
            return obs, 0.0, False, True, self._finish(self._info(valid=True), "give_up")
        if atype is ActionType.TRANSITION_TO_PHASE2:
            return self._transition(safe, params)
        if phase == 1:
            return self._phase1(safe, atype, target, params)
        return self._phase2(safe, atype, params)

    # ------------------------------------------------------------------ validation
    @staticmethod
    def _safe_action(action) -> dict:
        if not isinstance(action, dict):
            return {"action_type": None, "target_service": None, "parameters": {"raw": _json_safe(action)}}
        params = action.get("parameters")
        return {"action_type": _text_or_none(action.get("action_type")),
                "target_service": _text_or_none(action.get("target_service")),
                "parameters": _json_safe(params) if isinstance(params, dict) else (
                    {} if params is None else {"raw": _json_safe(params)})}

    def _validate(self, action):
        """(action type, target, params with defaults) or raise _Invalid with the reason."""
        if not isinstance(action, dict):
            raise _Invalid(f"an action must be a dict with keys action_type, target_service and "
                           f"parameters, got {type(action).__name__}")
        raw_type = action.get("action_type")
        if isinstance(raw_type, ActionType):
            raw_type = raw_type.value
        if not isinstance(raw_type, str):
            raise _Invalid("action_type must be a string naming an action")
        params = action.get("parameters")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise _Invalid(f"parameters must be a dict, got {type(params).__name__}")
        if raw_type == A.PARSE_ERROR:
            reason = params.get("reason")
            reason = reason[:500] if isinstance(reason, str) else "no reason given"
            raise _Invalid(f"Your reply could not be parsed as an action: {reason}")
        if raw_type == A.GIVE_UP:
            return A.GIVE_UP, None, {}
        atype = _VALUES.get(raw_type)
        if atype is None:
            raise _Invalid(f"unknown action_type {raw_type[:100]!r}")
        spec = ACTION_SPECS[atype]
        if spec.phase == 0:
            if self._phase == 2:
                raise _Invalid("already in phase 2: transition_to_phase2 can only be used once")
            if self._mode == "p1_only":
                raise _Invalid("this episode is phase 1 only: end it with declare_root_cause")
        elif spec.phase != self._phase:
            raise _Invalid(f"{raw_type} is a phase-{spec.phase} action; this is phase {self._phase}")
        target = None
        if spec.targeted:
            target = action.get("target_service")
            if target is None or target == "":
                raise _Invalid(f"{raw_type} needs a target_service, one of {list(SERVICES)}")
            if not isinstance(target, str) or target not in SERVICES:
                raise _Invalid(f"unknown target_service {_json_safe(target)!r}; valid: {list(SERVICES)}")
        clean = {}
        for name, p in spec.params.items():
            value = params.get(name)
            if value is None:
                if p.required:
                    raise _Invalid(f"{raw_type} needs parameters.{name} ({p.type.__name__}): {p.doc}")
                clean[name] = p.default
                continue
            if not isinstance(value, p.type) or (p.type is int and isinstance(value, bool)):
                raise _Invalid(f"parameters.{name} must be {p.type.__name__}, got {type(value).__name__}")
            if name in _RANGES:
                lo, hi = _RANGES[name]
                if not lo <= value <= hi:
                    raise _Invalid(f"parameters.{name} must be between {lo} and {hi}")
            clean[name] = value
        self._check_semantics(atype, target, clean)
        return atype, target, clean

    def _check_semantics(self, atype, target, clean) -> None:
        if atype is ActionType.QUERY_LOGS and clean["level"] is not None:
            level = clean["level"].upper()
            if level not in LOG_LEVELS:
                raise _Invalid(f"parameters.level must be one of {list(LOG_LEVELS)}")
            clean["level"] = level
        elif atype is ActionType.ROLLBACK_DEPLOY and not self._infra.can_rollback(target):
            raise _Invalid(f"{target} has no earlier deploy to roll back to")
        elif atype is ActionType.SCALE_SERVICE and self._infra.statuses[SERVICES.index(target)] == 2:
            raise _Invalid(f"cannot scale {target} while it is down")
        elif atype is ActionType.DECLARE_ROOT_CAUSE:
            if not clean["root_cause"].strip():
                raise _Invalid("parameters.root_cause must be a non-empty description")
            if clean["service"] is not None and clean["service"] not in SERVICES:
                raise _Invalid(f"parameters.service must be one of {list(SERVICES)}")
            if clean["fault_class"] is not None and clean["fault_class"] not in FAULT_CLASSES:
                raise _Invalid(f"parameters.fault_class must be one of {list(FAULT_CLASSES)}")

    def _invalid(self, safe, phase, error):
        self._steps += 1
        self._cum += R_INVALID
        self.trajectory.append(self._record(safe, phase, False, error, R_INVALID, None))
        self._check_budget()
        hint = list(_PHASE_TYPES[self._phase])
        if self._phase == 1 and self._mode != "p1_only":
            hint.append(ActionType.TRANSITION_TO_PHASE2.value)
        obs = self._observation({"error": error, "valid_actions_hint": hint}, False,
                                f"Invalid action: {error}", R_INVALID)
        info = self._info(valid=False, error=error)
        if self._truncated:
            self._finish(info, "budget")
        return obs, R_INVALID, False, self._truncated, info

    # ------------------------------------------------------------------ phase 1
    def _phase1(self, safe, atype, target, params):
        infra = self._infra
        effect = None
        terminated = False
        if atype in A.PHASE1_REMEDIATION:
            healed_before = infra.healed()
            if atype is ActionType.RESTART_SERVICE:
                outcome = infra.restart(target)
            elif atype is ActionType.ROLLBACK_DEPLOY:
                outcome = infra.rollback(target)
            else:
                outcome = infra.scale(target, params["replicas"])
            infra.tick()
            reward = self._remediation_reward(outcome, healed_before)
            effect = {"cleared_faults": outcome.cleared, "rolled_back_to": outcome.rolled_back_to}
            result = {"service": target, "outcome": outcome.message}
            message = outcome.message
        elif atype is ActionType.DECLARE_ROOT_CAUSE:
            infra.tick()
            effect = {"root_cause": params["root_cause"][:_MAX_TEXT], "service": params["service"],
                      "fault_class": params["fault_class"]}
            reward = self._declare_reward(effect)
            terminated = self._mode == "p1_only"
            result = {"declared": effect, "message": "Root cause recorded." + (
                "" if terminated else " The episode continues: hand over to phase 2 when ready.")}
            message = f"Root cause declared: {effect['root_cause'][:120]}"
        else:
            infra.tick()
            result, message = self._diagnose(atype, target, params)
            key = (atype, target, tuple(sorted((k, v) for k, v in params.items()
                                                 if k not in _SIZE_PARAMS)), self._epoch)
            if key in self._seen:
                reward = R_REPEAT
            else:
                self._seen.add(key)
                relevant = target is None or target in self.scenario.involved_services
                reward = R_NEW_RELEVANT if relevant else 0.0
        return self._finish_step(safe, 1, reward, result, True, message, effect, terminated,
                                 "declare_root_cause")

    def _diagnose(self, atype, target, params):
        infra = self._infra
        if atype is ActionType.VIEW_ALERTS:
            alerts = infra.alerts()
            return {"alerts": alerts, "count": len(alerts)}, f"{len(alerts)} alert(s) firing"
        if atype is ActionType.QUERY_LOGS:
            logs = infra.logs(target, params["level"], params["keyword"], params["limit"])
            return {"service": target, "logs": logs, "count": len(logs)}, f"{len(logs)} log line(s) from {target}"
        if atype is ActionType.CHECK_METRICS:
            points = infra.metric_history(target)
            return {"service": target, "metrics": points, "data_points": len(points)}, \
                f"{len(points)} metric points for {target}"
        if atype is ActionType.CHECK_DEPENDENCIES:
            deps = {"depends_on": list(A.DEPENDS_ON[target]), "depended_by": list(A.DEPENDED_BY[target])}
            return {"service": target, "dependencies": deps}, f"Dependencies of {target}"
        if atype is ActionType.CHECK_DEPLOY_HISTORY:
            deploys = infra.deploy_history(target)
            return {"service": target, "deploys": deploys, "count": len(deploys)}, \
                f"{len(deploys)} deploy(s) of {target}"
        check = infra.health_check(target)
        return {"service": target, "health_check": check}, f"{target} is {check['status']}"

    def _remediation_reward(self, outcome, healed_before: bool) -> float:
        if outcome.cleared:
            self._epoch += 1
            reward = R_CLEARED * min(2, len(outcome.cleared))
            if not healed_before and not self._healed_paid and self._infra.healed():
                self._healed_paid = True
                reward += R_HEALED
            return reward
        if outcome.harmful:
            self._epoch += 1
            return R_HARMFUL
        return R_RELIEF_ONLY if outcome.relieved else R_NO_EFFECT

    def _declare_reward(self, declared: dict) -> float:
        if self._declared:
            return R_REPEAT
        self._declared = True
        sc = self.scenario
        reward = 0.0
        if declared["service"] in sc.acceptable_services:
            reward += R_DECLARE_SERVICE
        if declared["fault_class"] == sc.fault_class:
            reward += R_DECLARE_CLASS
        return reward or R_DECLARE_WRONG

    # ------------------------------------------------------------------ transition and phase 2
    def _transition(self, safe, params):
        belief, error = coerce_belief(params["belief"])
        if error is None:
            error = self._open_phase2(belief)
        if error is not None:
            return self._invalid(safe, 1, error)
        self._infra.tick()
        reward = R_HANDOFF if belief.suspected_service in SERVICES else 0.0
        handed = asdict(belief)
        effect = {"belief": handed, "bad_commit_sha": self._p2["bad_commit_sha"]}
        result = {"message": "Handed over to phase 2: read the issue and work in the repository.",
                  "belief": dict(handed, evidence_gaps=list(handed["evidence_gaps"]))}
        return self._finish_step(safe, 1, reward, result, True, "Transitioned to phase 2", effect,
                                 False, None)

    def _open_phase2(self, belief) -> str | None:
        """Open the workspace for the scenario's repository; the reason on failure.

        ``bad_commit_sha`` is the suspected service's latest deploy as it stood when the page
        arrived (a rollback during the episode does not move it), if that sha is a commit of
        the repository; otherwise None.
        """
        try:
            from .repos import load_repo
            from .workspace import Workspace
        except ImportError as exc:
            return f"phase 2 is unavailable: {exc}"
        sc = self.scenario
        repo = load_repo(sc.repo)
        shas = {c.sha for c in repo.commits}
        bad = None
        if belief.suspected_service in SERVICES:
            sha = self._infra.incident_deploys[SERVICES.index(belief.suspected_service)]
            bad = sha if sha in shas else None
        self._workspace = Workspace(repo)
        self._p2 = {"bad_commit_sha": bad, "issue": self._issue_text(belief),
                    "file_tree": tuple(sorted(repo.tree))}
        self._phase = 2
        return None

    def _issue_text(self, belief) -> str:
        def conf(x: float) -> str:
            return f"{x:.2f}"
        lines = [f"## Incident: {self.scenario.title}", "", self._summary, "",
                 "## Phase-1 hand-over",
                 f"- Suspected service: {belief.suspected_service or 'unknown'} "
                 f"(confidence {conf(belief.service_confidence)})",
                 f"- Suspected fault class: {belief.suspected_fault_class or 'unknown'} "
                 f"(confidence {conf(belief.fault_confidence)})"]
        if belief.evidence_gaps:
            lines.append(f"- Evidence gaps: {', '.join(belief.evidence_gaps)}")
        if belief.reasoning:
            lines.append(f"- Reasoning: {belief.reasoning}")
        return "\n".join(lines)

    def _phase2(self, safe, atype, params):
        ok, result, message = self._workspace.execute(atype.value, params)
        self._infra.tick()
        effect = None
        terminated = False
        if not ok:
            reward = R_WORKSPACE_ERROR
        elif atype in A.PHASE2_TERMINAL:
            reward = 0.0
            terminated = True
            effect = ({"diff": params["diff"]} if atype is ActionType.PROPOSE_PATCH
                      else {"reason": params["reason"] or ""})
        else:
            key = (atype, tuple(sorted((k, v) for k, v in params.items() if k not in _SIZE_PARAMS)))
            reward = R_REPEAT if key in self._seen else R_NEW_DIAGNOSTIC_P2
            self._seen.add(key)
        return self._finish_step(safe, 2, reward, result, ok, message, effect, terminated, atype.value)

    # ------------------------------------------------------------------ bookkeeping
    def _finish_step(self, safe, phase, reward, result, success, message, effect, terminated, ended_by):
        reward = round(reward, 4)
        self._steps += 1
        self._cum += reward
        self._terminated = terminated
        self.trajectory.append(self._record(safe, phase, True, None, reward, effect))
        self._check_budget()
        obs = self._observation(result, success, message, reward)
        info = self._info(valid=True)
        if terminated:
            self._finish(info, ended_by)
        elif self._truncated:
            self._finish(info, "budget")
        return obs, reward, terminated, self._truncated, info

    def _check_budget(self) -> None:
        if not self._terminated and self._steps >= self.scenario.max_steps:
            self._truncated = True

    def _finish(self, info: dict, ended_by: str) -> dict:
        info["ended_by"] = ended_by
        try:
            from .grading import score_trajectory
        except ModuleNotFoundError as exc:
            if exc.name != f"{__package__}.grading":
                raise
            info["score"] = None
        else:
            info["score"] = score_trajectory(self._task, self._mode, self.trajectory)
        return info

    def _record(self, safe, phase, valid, error, reward, effect, step=None) -> dict:
        infra = self._infra
        return {"step": self._steps if step is None else step, "phase": phase,
                "minute": infra.now - infra.page, "action": safe, "valid": valid, "error": error,
                "reward": round(reward, 4), "statuses": infra.status_names(), "effect": effect}

    def _info(self, **extra) -> dict:
        return {"task": self._task, "pool": self._pool, "mode": self._mode, "seed": self._seed,
                "phase": self._phase, **extra}

    def _valid_actions(self) -> list[str]:
        if self._terminated or self._truncated:
            return []
        if self._phase == 2:
            return list(_VALID_P2)
        infra = self._infra
        return list(_phase1_valid_actions(
            tuple(infra.can_rollback(s) for s in SERVICES), tuple(st == 2 for st in infra.statuses),
            self._mode != "p1_only"))

    def _observation(self, result, success, message, reward) -> dict:
        infra, sc = self._infra, self.scenario
        obs = {
            "incident_title": sc.title,
            "incident_summary": self._summary,
            "severity": sc.severity,
            "current_phase": self._phase,
            "time_elapsed_minutes": infra.now - infra.page,
            "steps_taken": self._steps,
            "max_steps": sc.max_steps,
            "steps_remaining": max(0, sc.max_steps - self._steps),
            "action_result": result,
            "action_success": success,
            "action_message": message,
            "service_statuses": infra.status_names(),
            "active_alerts_count": infra.alert_count(),
            "valid_actions": self._valid_actions(),
            "available_services": list(SERVICES),
            "current_reward": round(reward, 4),
            "cumulative_reward": round(self._cum, 4),
            "done": self._terminated or self._truncated,
        }
        if self._phase == 2:
            obs["bad_commit_sha"] = self._p2["bad_commit_sha"]
            obs["issue"] = self._p2["issue"]
            obs["file_tree"] = list(self._p2["file_tree"])
        return obs
