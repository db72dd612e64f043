"""IncidentEnv: the two-phase episode protocol (reset/step), validation, rewards and budget.

``step`` never raises on agent input: anything malformed becomes an invalid action with an
observation that says what was wrong and what is valid. Observation keys, step infos and
trajectory records follow docs/CONTRACTS.md.
"""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING, Any

from . import actions as A
from .actions import ACTION_SPECS, SERVICES, ActionType
from .agent_input import describe, plain_copy
from .belief import BeliefState, belief_dict, coerce_belief
from srelib.env.simulation.infra import Infrastructure
from srelib.env.simulation.phase1 import Operations
from srelib.env.tasks.pools import oracle_belief, reset_choices
from srelib.env.tasks.lookup import get_scenario
from srelib.env.simulation.scenarios import MAX_STEPS, Scenario
from srelib.env.tasks.spec import EpisodeSpec
from srelib.env.tasks.surface import EpisodeSurface, suite_key
from srelib.env.tasks.ids import task_id
from .types import EnvState, Observation, Phase, StepRecord

if TYPE_CHECKING:
    from srelib.env.phase2.workspace import Workspace

#: What ``step`` returns: Gymnasium's (observation, reward, terminated, truncated, info).
StepResult = tuple[Observation, float, bool, bool, dict[str, Any]]

# Step rewards before the last step: each depends only on what the agent's own observations
# show (see the IncidentEnv docstring); the last step pays the episode score.
R_INVALID = -0.05  # the observation says the action was invalid
R_REPEAT = -0.03  # the same query again, with nothing done in between that could change its answer
R_WORKSPACE_ERROR = -0.05  # the observation shows the phase-2 error
_LOWEST = min(R_INVALID, R_REPEAT, R_WORKSPACE_ERROR)
#: Every step reward lies in ``[low, high]``: a step before the last pays ``low`` at worst and
#: nothing at best; the last pays the score (0 to 1) minus the at most ``MAX_STEPS - 1``
#: rewards paid before it. OpenEnv's manifest (openenv.yaml) declares this range.
REWARD_RANGE = (_LOWEST, round(1.0 - (MAX_STEPS - 1) * _LOWEST, 4))

_SIZE_PARAMS = frozenset(("limit", "max_hits", "n_commits"))  # not part of the repeat key
_VALUES = {a.value: a for a in ActionType}
_PHASE_TYPES = {
    1: [a.value for a in A.PHASE1_ACTIONS],
    2: [a.value for a in A.PHASE2_ACTIONS],
}
_VALID_P2 = tuple(_PHASE_TYPES[2])


def _text_or_none(value: Any) -> str | None:
    """A record's action_type / target_service: the string sent, or a description of the rest."""
    return value if value is None or isinstance(value, str) else describe(value)


class _Invalid(Exception):
    """Raised inside validation only; step turns it into an invalid-action observation."""


class IncidentEnv:
    """The embedded incident environment, with Gymnasium's ``reset``/``step`` contract.

    **The episode.** One incident in two phases that share one step budget. In phase 1 the
    agent is the on-call SRE: it reads alerts, logs, metrics, deploy histories and
    dependencies of seven services, may remediate (restart, roll back, scale) and declare a
    root cause, and hands a belief to phase 2 with ``transition_to_phase2``. In phase 2 it is a
    developer in the culprit service's repository: it lists, reads and searches files and the
    git history, then ends with ``propose_patch`` (a unified diff, graded by hidden tests) or
    ``declare_no_change``. The mode picks the phases: ``joint`` (both), ``p1_only``
    (``declare_root_cause`` ends the episode) or ``p2_only`` (``reset`` hands over the oracle
    belief); a pool fixes a mode and a set of tasks: ``A`` p1_only, ``B`` p2_only, ``C`` joint
    over the train tasks, ``D`` joint over the held-out tasks. The same task, pool, mode and
    seed always give the same episode::

        env = IncidentEnv()
        obs, info = env.reset(task="memory_leak", pool="C", seed=7)
        while not obs["done"]:
            action = obs["valid_actions"][0]          # or an action dict, below
            obs, reward, terminated, truncated, info = env.step(action)
        info["score"]                                   # the episode's score breakdown

    **Actions** (:class:`~srelib.env.types.Action`): ``{"action_type": str, "target_service":
    str | None, "parameters": dict}``; ``srelib.env.actions.ACTION_SPECS`` declares each
    action's phase, target and parameters (type, bounds, default). ``step`` also takes a string:
    an entry of ``obs["valid_actions"]`` such as ``"query_logs:orders"``, or JSON, read by
    :func:`srelib.env.parse.parse_action`. Agent input never raises: an invalid action costs a step
    and its observation's ``action_result`` says what was wrong and lists what is valid.

    **Observations** (:class:`~srelib.env.types.Observation`): the incident's title, summary
    and severity; the phase; the budget (``steps_taken``, ``max_steps``, ``steps_remaining``);
    the last action's ``action_result``, ``action_success`` and ``action_message``; the
    services' statuses and the number of alerts firing; ``valid_actions``; the rewards; and
    ``done``. Phase 2 adds ``issue``, ``file_tree`` and ``bad_commit_sha``.

    **Rewards** reveal nothing the observations have not shown. Before the last step a reward
    is ``R_INVALID`` for an invalid action, ``R_REPEAT`` for a query repeated with no
    remediation in between, ``R_WORKSPACE_ERROR`` for a phase-2 action that failed, else 0: no
    bonus for looking at the right service, no judgement of a declaration when it is made (the
    score grades the last one). The step that ends the episode pays the episode score minus
    the rewards paid before it, so every episode's undiscounted return equals its score.

    **Termination.** ``terminated`` is True when the agent ends the episode itself
    (``propose_patch``, ``declare_no_change``, or ``declare_root_cause`` in p1_only).
    ``truncated`` is True when the step budget runs out or the policy gives up. Either way
    ``info["score"]`` holds the :class:`~srelib.env.types.ScoreBreakdown` and
    ``info["ended_by"]`` says what ended it. ``reset`` info is ``{task, pool, mode, seed,
    phase}``, ``task`` being the task's opaque id (:mod:`srelib.env.tasks.ids`), never its name; ``step`` info adds ``valid`` and, for an invalid action, ``error``.

    ``env.trajectory`` records every step (:class:`~srelib.env.types.StepRecord`, JSON-safe),
    and :func:`srelib.score_trajectory` re-grades it; :attr:`state` is the hidden state tests
    and tools may read.
    """

    def __init__(self) -> None:
        self._infra: Infrastructure | None = None
        self.scenario: Scenario | None = None
        self.trajectory: list[StepRecord] = []

    @property
    def state(self) -> EnvState:
        """The current episode's hidden state (:class:`~srelib.env.types.EnvState`)."""
        infra = self._require_episode()
        return EnvState(
            task=self._task, pool=self._pool, mode=self._mode, seed=self._seed,
            phase=self._phase, steps=self._steps, done=self._terminated or self._truncated,
            incident_deploys=dict(zip(SERVICES, infra.incident_deploys)),
            rollbackable=tuple(s for s in SERVICES if infra.can_rollback(s)),
            healed=infra.healed())

    def _require_episode(self) -> Infrastructure:
        if self._infra is None:
            raise RuntimeError("call reset() before step()")
        return self._infra

    def _require_scenario(self) -> Scenario:
        if self.scenario is None:
            raise RuntimeError("call reset() before step()")
        return self.scenario

    # ------------------------------------------------------------------ reset
    def reset(self, task: str | None = None, pool: str | None = None, mode: str | None = None,
              seed: int | None = None) -> tuple[Observation, dict[str, Any]]:
        """Start an episode of ``task``: an id of any suite, or a suite (``"generated"``,
        ``"generated:train"``) to draw one of its tasks in the pool's split. Unknown
        task/pool/mode raise ValueError naming the valid ones."""
        mode = EpisodeSpec.resolve(task, pool, mode, seed).mode
        named, candidates = reset_choices(task, pool)  # None: task is a suite (then drawn)
        if seed is None:
            seed = random.SystemRandom().randrange(2**63)
        elif isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an int or None, got {type(seed).__name__}")
        rng = random.Random(seed)
        drawn = candidates[rng.randrange(len(candidates))]  # drawn even when given: one stream
        task = named or drawn
        self.scenario = scenario = get_scenario(task)
        # what this episode shows of commit and deploy shas and authors: seed and suite key
        self._surface = EpisodeSurface(suite_key(), seed, scenario.name)
        self._infra = infra = Infrastructure(self._surface.scenario(scenario), rng)
        self._ops = Operations(infra)
        self._task, self._pool, self._seed = scenario.name, pool, seed
        self._task_id = task_id(scenario.name)  # what info (and so every agent) is shown
        self._mode = mode
        self._summary = scenario.summary.format_map(infra.vars)
        self._phase: Phase = 1
        self._steps = 0
        self._cum = 0.0
        self._terminated = self._truncated = False
        self._seen: set = set()
        self._epoch = 0
        self._workspace: Workspace | None = None
        self._p2: dict = {}
        self.trajectory = []
        result, message = {"message": "Incident opened. Begin the investigation."}, "Episode started"
        if self._mode == "p2_only":
            belief = oracle_belief(scenario)
            error = self._open_phase2(belief)
            if error is not None:
                raise RuntimeError(f"cannot start phase 2 for {task}: {error}")
            b = belief_dict(belief)
            self.trajectory.append(self._record(
                {"action_type": ActionType.TRANSITION_TO_PHASE2.value, "target_service": None,
                 "parameters": {"belief": b}}, 1, True, None, 0.0, {"belief": b, "oracle": True}, step=0))
            result = {"message": "Phase 1 was handed over with the oracle belief; work in the code."}
            message = "Episode started in phase 2"
        return self._observation(result, True, message, 0.0), self._info()

    # ------------------------------------------------------------------ step
    def step(self, action: Any) -> StepResult:
        """Apply one action. Never raises on agent input."""
        self._require_episode()
        if self._terminated or self._truncated:
            info = self._info(valid=False, error="the episode is over; call reset() to start a new one")
            obs = self._observation({"error": info["error"], "valid_actions_hint": []}, False,
                                    "Episode already finished", 0.0)
            return obs, 0.0, self._terminated, self._truncated, info
        phase = self._phase
        if isinstance(action, str):
            action = self._read_text_action(str.__str__(action))
        action, problem = plain_copy(action)  # the env acts on, and records, this bounded copy
        safe = self._safe_action(action) if problem is None else {  # replays as invalid too
            "action_type": None, "target_service": None, "parameters": {"raw": action}}
        try:
            if problem is not None:
                raise _Invalid(f"{problem}; an action is plain JSON data (dicts, lists, strings, "
                               "numbers) of bounded size")
            atype, target, params = self._validate(action)
        except _Invalid as exc:
            return self._invalid(safe, phase, str(exc))
        if not isinstance(atype, ActionType):  # A.GIVE_UP, the one reserved type that is valid
            self._steps += 1
            self._truncated = True
            self.trajectory.append(self._record(safe, phase, True, None, 0.0, None))
            info = self._info(valid=True)
            reward = self._finish(info, "give_up", 0.0)
            obs = self._observation({"message": "The policy gave up."}, True, "Episode ended: gave up", reward)
            return obs, reward, False, True, info
        if atype is ActionType.TRANSITION_TO_PHASE2:
            return self._transition(safe, params)
        if phase == 1:
            return self._phase1(safe, atype, target, params)
        return self._phase2(safe, atype, params)

    # ------------------------------------------------------------------ validation
    def _read_text_action(self, text: str) -> dict:
        """A string action (``"query_logs:orders"`` as ``valid_actions`` spells it, or JSON)
        read by the chat policies' parser; unreadable text becomes a parse-error action."""
        from srelib.env.parse import parse_action, parse_error_action

        valid = self._valid_actions()
        parsed = parse_action(text, valid)
        if not parsed.ok and text.strip() and "{" not in text:  # a bare name: say what is wrong
            parsed = parse_action(json.dumps({"action_type": text.strip()}), valid)
        return parsed.action if parsed.action is not None else parse_error_action(parsed.error or "")

    @staticmethod
    def _safe_action(action: Any) -> dict:
        """The trajectory record of an action already made plain by ``plain_copy``. An action
        that is not a dict, or whose parameters are not one, is kept whole under
        ``parameters.raw`` with no action type, so that its record replays as invalid too."""
        params = action.get("parameters") if isinstance(action, dict) else None
        if not isinstance(action, dict) or not isinstance(params, (dict, type(None))):
            return {"action_type": None, "target_service": None, "parameters": {"raw": action}}
        return {"action_type": _text_or_none(action.get("action_type")),
                "target_service": _text_or_none(action.get("target_service")),
                "parameters": params or {}}

    def _validate(self, action: Any) -> tuple[ActionType | str, str | None, dict]:
        """(action type, target, params with defaults) or raise _Invalid with the reason."""
        if not isinstance(action, dict):
            raise _Invalid(f"an action must be a dict with keys action_type, target_service and "
                           f"parameters (or a string from valid_actions), got {type(action).__name__}")
        raw_type = action.get("action_type")
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
                raise _Invalid(f"unknown target_service {describe(target)[:100]}; valid: {list(SERVICES)}")
        clean, error = A.clean_parameters(atype, params)
        if clean is not None and spec.phase == 1:
            error = self._ops.check(atype, target)
        if clean is None or error is not None:
            raise _Invalid(str(error))
        return atype, target, clean

    def _invalid(self, safe: dict, phase: Phase, error: str) -> StepResult:
        self._steps += 1
        self.trajectory.append(self._record(safe, phase, False, error, R_INVALID, None))
        self._check_budget()
        info = self._info(valid=False, error=error)
        reward = self._finish(info, "budget", R_INVALID) if self._truncated else R_INVALID
        self._cum += reward
        hint = list(_PHASE_TYPES[self._phase])
        if self._phase == 1 and self._mode != "p1_only":
            hint.append(ActionType.TRANSITION_TO_PHASE2.value)
        obs = self._observation({"error": error, "valid_actions_hint": hint}, False,
                                f"Invalid action: {error}", reward)
        return obs, reward, False, self._truncated, info

    # ------------------------------------------------------------------ phase 1
    def _phase1(self, safe: dict, atype: ActionType, target: str | None,
                params: dict) -> StepResult:
        terminated = atype is ActionType.DECLARE_ROOT_CAUSE and self._mode == "p1_only"
        result, message, effect = self._ops.execute(atype, target, params, final=terminated)
        reward = 0.0  # a declaration is judged only in the score, which grades the last one
        if atype in A.PHASE1_REMEDIATION:
            self._epoch += 1  # the system may have changed: looking again is not a repeat
        elif atype is not ActionType.DECLARE_ROOT_CAUSE:
            key = (atype, target, tuple(sorted((k, v) for k, v in params.items()
                                                 if k not in _SIZE_PARAMS)), self._epoch)
            reward = R_REPEAT if key in self._seen else 0.0
            self._seen.add(key)
        return self._finish_step(safe, 1, reward, result, True, message, effect, terminated,
                                 "declare_root_cause")

    # ------------------------------------------------------------------ transition and phase 2
    def _transition(self, safe: dict, params: dict) -> StepResult:
        belief, error = coerce_belief(params["belief"])
        if belief is not None:
            error = self._open_phase2(belief)
        if belief is None or error is not None:
            return self._invalid(safe, 1, str(error))
        self._require_episode().tick()
        reward = 0.0
        handed = belief_dict(belief)
        effect = {"belief": handed, "bad_commit_sha": self._p2["bad_commit_sha"]}
        result = {"message": "Handed over to phase 2: read the issue and work in the repository.",
                  "belief": dict(handed, evidence_gaps=list(handed["evidence_gaps"]))}
        return self._finish_step(safe, 1, reward, result, True, "Transitioned to phase 2", effect,
                                 False, None)

    def _open_phase2(self, belief: BeliefState) -> str | None:
        """Open the workspace for the scenario's repository; the reason on failure.

        ``bad_commit_sha`` is the suspected service's latest deploy as it stood when the page
        arrived (a rollback during the episode does not move it), if that sha is a commit of
        the repository; otherwise None. The repository's commits are shown as the episode's
        surface draws them (:class:`~.surface.EpisodeSurface`).
        """
        try:
            from srelib.env.tasks.lookup import load_repo
            from srelib.env.phase2.workspace import Workspace
        except ImportError as exc:
            return f"phase 2 is unavailable: {exc}"
        stored = load_repo(self._require_scenario().repo)
        repo = stored.with_commits(self._surface.commits(stored.commits))
        shas = repo.shas
        bad = None
        if belief.suspected_service in SERVICES:
            sha = self._require_episode().incident_deploys[SERVICES.index(belief.suspected_service)]
            bad = sha if sha in shas else None
        self._workspace = Workspace(repo)
        self._p2 = {"bad_commit_sha": bad, "issue": self._issue_text(belief),
                    "file_tree": repo.paths}
        self._phase = 2
        return None

    def _issue_text(self, belief: BeliefState) -> str:
        def conf(x: float) -> str:
            return f"{x:.2f}"
        lines = [f"## Incident: {self._require_scenario().title}", "", self._summary, "",
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

    def _phase2(self, safe: dict, atype: ActionType, params: dict) -> StepResult:
        if self._workspace is None:
            raise RuntimeError("phase 2 runs in the workspace that the transition opened")
        ok, result, message = self._workspace.execute(atype.value, params)
        self._require_episode().tick()
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
            reward = R_REPEAT if key in self._seen else 0.0
            self._seen.add(key)
        return self._finish_step(safe, 2, reward, result, ok, message, effect, terminated, atype.value)

    # ------------------------------------------------------------------ bookkeeping
    def _finish_step(self, safe: dict, phase: Phase, reward: float, result: dict, success: bool,
                     message: str, effect: dict | None, terminated: bool,
                     ended_by: str | None) -> StepResult:
        reward = round(reward, 4)
        self._steps += 1
        self._terminated = terminated
        self.trajectory.append(self._record(safe, phase, True, None, reward, effect))
        self._check_budget()
        info = self._info(valid=True)
        if terminated or self._truncated:
            reward = self._finish(info, ended_by if terminated and ended_by else "budget", reward)
        self._cum += reward
        obs = self._observation(result, success, message, reward)
        return obs, reward, terminated, self._truncated, info

    def _check_budget(self) -> None:
        if not self._terminated and self._steps >= self._require_scenario().max_steps:
            self._truncated = True

    def _finish(self, info: dict, ended_by: str, reward: float) -> float:
        """End the episode: put the score in ``info`` and return the last step's reward, the
        score minus the rewards paid before (so the episode's return is its score). Where the
        grader could not run, the score is None and ``info["grading_error"]`` says why
        (:mod:`srelib.env.grading.errors`); the step's own reward stands."""
        info["ended_by"] = ended_by
        try:
            from srelib.env.grading.score import score_trajectory
        except ModuleNotFoundError as exc:
            if exc.name != f"{__package__}.grading":
                raise
            info["score"] = None
            return reward
        from srelib.env.grading.errors import GradingError

        try:
            info["score"] = score_trajectory(self._task, self._mode, self.trajectory)
        except GradingError as exc:  # the grader could not run: no score, and no verdict
            info["score"], info["grading_error"] = None, exc.record()
            return reward
        reward = round(info["score"]["final"] - self._cum, 4)
        self.trajectory[-1]["reward"] = reward
        return reward

    def _record(self, safe: dict, phase: Phase, valid: bool, error: str | None, reward: float,
                effect: dict | None, step: int | None = None) -> StepRecord:
        infra = self._require_episode()
        return {"step": self._steps if step is None else step, "phase": phase,
                "minute": infra.now - infra.page, "action": safe, "valid": valid, "error": error,
                "reward": round(reward, 4), "statuses": infra.status_names(), "effect": effect}

    def _info(self, **extra: Any) -> dict[str, Any]:
        return {"task": self._task_id, "pool": self._pool, "mode": self._mode, "seed": self._seed,
                "phase": self._phase, **extra}

    def _valid_actions(self) -> list[str]:
        if self._terminated or self._truncated:
            return []
        if self._phase == 2:
            return list(_VALID_P2)
        return list(self._ops.valid_actions(self._mode != "p1_only"))

    def _observation(self, result: dict, success: bool, message: str,
                     reward: float) -> Observation:
        infra, sc = self._require_episode(), self._require_scenario()
        obs: Observation = {
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
