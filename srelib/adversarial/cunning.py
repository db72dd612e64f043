"""Adversarial policies: shortcuts that try to score without solving the incident.

Each one plays a rule an RL trainer or a careless benchmark user could stumble on. The validity
gate (:mod:`srelib.analysis.validity`) plays them all and requires each to score low; when a new way to
score without solving is found, it joins this module.

* :class:`RewardProbePolicy` learns the answer from step rewards alone.
* :class:`RewardFarmPolicy` collects shaping reward with ever-new log queries.
* :class:`HedgedDeclarationPolicy` leaves the service field empty and names candidates in text.
* :class:`ReleaseTagRevertPolicy` reverts the newest commit whose subject carries a release tag.
* :class:`NewestDeployPolicy` blames (and rolls back) the service with the most recent deploy.
* :class:`MemoriseTrainPolicy` replays the answer of the train task with the nearest title.
* :class:`BlindRevertPolicy` reverts the handed-over suspect commit without reading anything.
"""

from __future__ import annotations

import copy
import re
from abc import ABC, abstractmethod
from dataclasses import asdict
from typing import Iterable

from srelib.env.actions import FAULT_CLASSES, SERVICES, ActionType
from srelib.env.belief import BeliefState
from srelib.env.support.memo import byte_lru
from srelib.env.tasks.lookup import get_scenario
from srelib.analysis.gate import register
from srelib.policies.base import EpisodeWatcher, handoff_action, make_action
from srelib.policies.oracle import AnswerKey
from srelib.policies.scripted.heuristic import FAULT_KEYWORDS
from srelib.policies.scripted.revert import RevertPhase2Policy, reverse_diff

_EMPTY_BELIEF = asdict(BeliefState())


def _handoff(service: str | None = None, fault_class: str | None = None, why: str = "") -> dict:
    belief = BeliefState(suspected_service=service, suspected_fault_class=fault_class,
                         service_confidence=1.0 if service else 0.0,
                         fault_confidence=1.0 if fault_class else 0.0, reasoning=why)
    return handoff_action(belief)


def _declaration(service: str | None, fault_class: str | None, text: str) -> dict:
    return make_action(ActionType.DECLARE_ROOT_CAUSE, root_cause=text, service=service,
                       fault_class=fault_class)


class _Reactive(EpisodeWatcher, ABC):
    """A policy that decides phase 1 from the observation; phase 2 defers to
    :class:`RevertPhase2Policy` (revert the handed-over suspect commit)."""

    name = "reactive"

    def __init__(self) -> None:
        self.reset()

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        self._last_step = -1
        self._revert = RevertPhase2Policy()

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        self._watch_episode(observation)
        if phase == 2:
            return self._revert(observation, 2, task_name)
        return self.phase1(observation, task_name)

    @abstractmethod
    def phase1(self, observation: dict, task_name: str) -> dict:
        """The phase-1 action for ``observation``."""


class RewardProbePolicy(_Reactive):
    """Learns the culprit service and fault class from step rewards, then reverts its deploy.

    In each episode it checks every service's metrics and keeps as candidates the services whose
    reward stood out; it declares one (service, class) guess and reads the declaration's reward.
    What a non-final step reward reveals is remembered per task across episodes (as a learner
    would), so later episodes declare what the rewards confirmed. It never reads the final
    step's reward, which carries the episode score by design. With nothing singled out by the
    rewards it hands over an empty belief.
    """

    name = "reward_probe"
    #: Unmeasured episodes per task the gate lets it learn from before scoring it.
    warmup_seeds = range(1000, 1008)

    def __init__(self) -> None:
        self._memory: dict[str, dict] = {}
        super().__init__()

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        super().reset(seed, task_name)
        self._probe_rewards: dict[str, float] = {}
        self._declared: tuple[str, str] | None = None
        self._stage = "probe"

    def phase1(self, observation: dict, task_name: str) -> dict:
        memory = self._memory.setdefault(task_name, {"service": None, "fault_class": None,
                                                      "wrong_services": set(), "wrong_classes": set()})
        reward = observation.get("current_reward", 0.0)
        if self._stage == "probe":
            probed = list(self._probe_rewards)
            if probed and self._probe_rewards[probed[-1]] is None:
                self._probe_rewards[probed[-1]] = reward
            todo = [s for s in SERVICES if s not in self._probe_rewards]
            if todo:
                self._probe_rewards[todo[0]] = None
                return make_action(ActionType.CHECK_METRICS, todo[0])
            self._stage = "declare"
        if self._stage == "declare":
            self._stage = "learn"
            guess = self._guess(memory)
            if guess is None:
                return _handoff()
            self._declared = guess
            return _declaration(*guess, f"{guess[0]} {guess[1].replace('_', ' ')}")
        if self._declared is not None and not observation.get("done"):
            self._learn(memory, reward)
        service, fault_class = self._guess(memory) or (None, None)
        return _handoff(service, fault_class, "what the rewards said")

    def _guess(self, memory: dict) -> tuple[str, str] | None:
        rewards = self._probe_rewards
        floor = min(rewards.values())
        candidates = [s for s in SERVICES if rewards[s] > floor and s not in memory["wrong_services"]]
        service = memory["service"] or next(iter(candidates), None)
        if service is None:
            return None
        fault_class = memory["fault_class"] or next(
            (c for c in FAULT_CLASSES if c not in memory["wrong_classes"]), "none")
        return service, fault_class

    def _learn(self, memory: dict, reward: float) -> None:
        """Read the declaration's reward as the judgement it was: (service right, class right)."""
        judged = {0.3: (True, True), 0.2: (True, False), 0.1: (False, True), -0.1: (False, False)}
        verdict = judged.get(round(reward, 4))
        if verdict is None:
            return
        service, fault_class = self._declared
        for field, right, wrong, value in (("service", verdict[0], "wrong_services", service),
                                           ("fault_class", verdict[1], "wrong_classes", fault_class)):
            if right:
                memory[field] = value
            else:
                memory[wrong].add(value)


class RewardFarmPolicy(_Reactive):
    """Queries logs with a new keyword every step until the budget ends, on the service whose
    queries paid best so far."""

    name = "reward_farm"

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        super().reset(seed, task_name)
        self._n = 0
        self._paid: dict[str, float] = {}
        self._last: str | None = None

    def phase1(self, observation: dict, task_name: str) -> dict:
        if self._last is not None:
            self._paid[self._last] = observation.get("current_reward", 0.0)
        untried = [s for s in SERVICES if s not in self._paid]
        self._last = untried[0] if untried else max(SERVICES, key=lambda s: self._paid[s])
        self._n += 1
        return make_action(ActionType.QUERY_LOGS, self._last, keyword=f"probe{self._n}")


def hedged_declaration(task_name: str) -> dict:
    """The answer's fault class and keywords, the service field empty, the text naming the
    culprit plus one more service (an involved one where there is one)."""
    s = get_scenario(task_name)
    others = [x for x in s.involved_services if x != s.root_cause_service]
    other = others[0] if others else next(x for x in SERVICES if x != s.root_cause_service)
    text = " ".join([f"either {s.root_cause_service} or {other}:", *s.keywords])
    return _declaration(None, s.fault_class, text)


class HedgedDeclarationPolicy(AnswerKey, _Reactive):
    """Declares a hedged answer at once (:func:`hedged_declaration`), then hands over empty."""

    name = "hedged_declaration"

    def phase1(self, observation: dict, task_name: str) -> dict:
        first = observation.get("steps_taken", 0) == 0
        return hedged_declaration(self.answer_name(task_name)) if first else _handoff()


#: A release tag in a commit subject: v1.2, v1.2.3, (1.2.3), release-1.2 and the like.
RELEASE_TAG = re.compile(r"(?i)\b(?:v\d+\.\d+(?:\.\d+)?|\d+\.\d+\.\d+|release[-_ ]?\d[\w.]*)\b")


class _RevertPolicy(_Reactive):
    """Hands over an empty belief; in phase 2 reverts the commit :meth:`choose` picks."""

    def phase1(self, observation: dict, task_name: str) -> dict:
        return _handoff()

    @abstractmethod
    def choose(self, observation: dict, commits: list[dict]) -> dict | None:
        """The commit to revert among the git log's ``commits`` (newest first), if any."""

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        self._watch_episode(observation)
        if phase != 2:
            return self.phase1(observation, task_name)
        result = observation.get("action_result") or {}
        if isinstance(result.get("diff"), str) and result["diff"].strip():
            return make_action(ActionType.PROPOSE_PATCH, diff=reverse_diff(result["diff"]))
        if "commits" not in result:
            return make_action(ActionType.GET_GIT_LOG, n_commits=50)
        pick = self.choose(observation, [c for c in result["commits"]
                                         if isinstance(c, dict) and c.get("sha")])
        if pick is None:
            return make_action(ActionType.DECLARE_NO_CHANGE, reason="no commit to revert")
        return make_action(ActionType.GET_FILE_DIFF, commit_sha=pick["sha"])


class ReleaseTagRevertPolicy(_RevertPolicy):
    """Reverts the newest commit whose subject carries a release tag (else the newest commit)."""

    name = "release_tag_revert"

    def choose(self, observation: dict, commits: list[dict]) -> dict | None:
        tagged = [c for c in commits if RELEASE_TAG.search(str(c.get("message", "")).split("\n")[0])]
        return (tagged or commits or [None])[0]


class BlindRevertPolicy(_RevertPolicy):
    """Reverts the handed-over suspect commit without reading any code.

    The suspect is the observation's ``bad_commit_sha`` (else the newest commit); it never
    declares that no change is needed.
    """

    name = "blind_revert"

    def choose(self, observation: dict, commits: list[dict]) -> dict | None:
        sha = observation.get("bad_commit_sha")
        return next((c for c in commits if c["sha"] == sha), (commits or [None])[0])


def class_from_description(description: str) -> str | None:
    """The fault class whose words (``heuristic.FAULT_KEYWORDS``) a deploy description uses
    most, if any."""
    text = description.lower()
    counts = {fault: sum(text.count(w) for w in words) for fault, words in FAULT_KEYWORDS.items()}
    best = max(counts, key=lambda fault: (counts[fault], fault))
    return best if counts[best] else None


class NewestDeployPolicy(_Reactive):
    """Blames, rolls back and hands over the service with the most recent deploy.

    It reads every service's deploy history, takes the fault class from the newest deploy's
    description (:func:`class_from_description`), declares both, and in phase 2 reverts the
    handed-over suspect commit.
    """

    name = "newest_deploy"

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        super().reset(seed, task_name)
        self._latest: dict[str, dict] = {}
        self._asked: str | None = None
        self._queue: list[dict] = []

    def phase1(self, observation: dict, task_name: str) -> dict:
        result = observation.get("action_result") or {}
        if self._asked is not None:
            deploys = [d for d in result.get("deploys") or [] if isinstance(d, dict)]
            if deploys:
                self._latest[self._asked] = max(deploys, key=lambda d: str(d.get("timestamp")))
            self._asked = None
        todo = [s for s in SERVICES if s not in self._latest and f"check_deploy_history:{s}"
                in observation.get("valid_actions", [])]
        if todo and not self._queue:
            self._asked = todo[0]
            self._latest.setdefault(todo[0], {})
            return make_action(ActionType.CHECK_DEPLOY_HISTORY, todo[0])
        if not self._queue:
            dated = {s: d for s, d in self._latest.items() if d.get("timestamp")}
            if not dated:
                return _handoff()
            service = max(dated, key=lambda s: str(dated[s]["timestamp"]))
            fault_class = class_from_description(str(dated[service].get("description", "")))
            why = f"{service} has the newest deploy"
            if f"rollback_deploy:{service}" in observation.get("valid_actions", []):
                self._queue.append(make_action(ActionType.ROLLBACK_DEPLOY, service))
            self._queue += [_declaration(service, fault_class, why), _handoff(service, fault_class, why)]
        return self._queue.pop(0) if len(self._queue) > 1 else self._queue[0]


@byte_lru(4 << 20)  # keyed by any tuple of tasks: bounded in bytes
def train_answers(tasks: tuple[str, ...] | None = None) -> dict[str, dict[int, tuple]]:
    """Incident text (title and summary) -> the reference's actions on that train task, by phase
    (1 and 2); ``tasks``
    defaults to the classic train tasks."""
    from srelib.env.tasks.pools import TRAIN_TASKS
    from srelib.policies.scripted.reference import phase1_plan, phase2_plan

    return {_incident(get_scenario(task).title, get_scenario(task).summary):
            {1: tuple(phase1_plan(task)), 2: tuple(phase2_plan(task))}
            for task in (TRAIN_TASKS if tasks is None else tasks)}


def _incident(title: str, summary: str) -> str:
    """What a memoriser keys an incident by: its title and summary as the pager shows them."""
    return f"{title}\n{summary}"


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


class MemoriseTrainPolicy(EpisodeWatcher):
    """Replays the answer of the train task whose incident text (title and summary) is nearest
    to this one's: what memorising the train tasks buys (the splits hold it to the gate's bound
    on held-out tasks).

    Nearest is the most words shared (Jaccard; the same text wins); the answer is the
    reference's episode on that train task (:func:`train_answers`): its declaration,
    remediation, handoff and patch. ``train_tasks`` defaults to the classic train tasks.
    """

    name = "memorise_train"

    def __init__(self, train_tasks: Iterable[str] | None = None) -> None:
        self._tasks = None if train_tasks is None else tuple(train_tasks)
        if self._tasks == ():
            raise ValueError("train_tasks must name at least one task")
        self.reset()

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        self._last_step = -1
        self._taken = {1: 0, 2: 0}

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        self._watch_episode(observation)
        answers = train_answers(self._tasks)
        seen = _words(_incident(str(observation.get("incident_title", "")),
                                str(observation.get("incident_summary", ""))))
        nearest = max(answers, key=lambda t: (len(_words(t) & seen) / len(_words(t) | seen), t))
        phase = 1 if phase == 1 else 2
        plan = answers[nearest][phase]
        valid = observation.get("valid_actions") or []
        if phase == 1 and valid and "transition_to_phase2" not in valid:
            plan = plan[:-1]  # a phase-1-only episode ends with the declaration
        step = min(self._taken[phase], len(plan) - 1)
        self._taken[phase] += 1
        return copy.deepcopy(plan[step])


# pools: where each shortcut is strongest (A for a declaration alone, B for phase-2 tricks,
# D for memorising train)
register(RewardProbePolicy, "max", 0.35)
register(RewardFarmPolicy, "max", 0.35)
register(HedgedDeclarationPolicy, "max", 0.35, pool="A", admission="unseeded")
register(ReleaseTagRevertPolicy, "max", 0.35)
register(NewestDeployPolicy, "max", 0.35, admission="seeded")
register(MemoriseTrainPolicy, "max", 0.35, pool="D")
register(BlindRevertPolicy, "max", 0.35, pool="B", admission="unseeded", never_full=True)
