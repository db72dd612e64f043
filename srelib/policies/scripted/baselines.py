"""The seed's three scripted baselines, with their names and constructor parameters.

``NullPhase1Policy`` hands over an empty belief at once; ``RandomPhase2Policy`` is a cheap
phase-2 explorer (list, read a few random files, git log, the suspect's diff, propose it);
``OracleP1ThenRandomP2Policy`` hands over the ground-truth belief, then explores like
``RandomPhase2Policy``. ``reset(seed=...)`` reseeds the random ones per episode, so a
distribution over seeds is reproducible and still varies. A new episode is also recognised
from the observation (the step count goes back), so a runner that forgets to reset is safe.
"""

from __future__ import annotations

import random
from srelib.env.actions import ActionType
from srelib.env.belief import BeliefState
from srelib.policies.base import EpisodeWatcher, handoff_action, make_action
from srelib.policies.oracle import AnswerKey


class NullPhase1Policy:
    """Refuses to investigate: transitions at once with an empty BeliefState.

    The "no phase-1 context" baseline. In phase 2 it declares that no change is needed.
    """

    name = "null_p1"

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        """Stateless: nothing to reset.

        Args:
            seed: The episode's seed (unused).
            task_name: The episode's task (accepted for the protocol; unused).
        """

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        if phase == 1:
            return handoff_action(BeliefState())
        return make_action(ActionType.DECLARE_NO_CHANGE, reason="null policy: no phase-2 work")


class RandomPhase2Policy(EpisodeWatcher):
    """A weak, cheap phase-2 explorer (the seed's lower-bound baseline):

    1. ``list_dir(.)``; 2. ``read_file`` of one to three random files from the listing;
    3. ``get_git_log(5)``; 4. ``get_file_diff(bad_commit_sha)`` when there is one;
    5. ``propose_patch`` of whatever diff it saw (empty without one). Re-proposing the bad
    commit's own diff rarely fixes anything, which is the point of a lower bound.
    In phase 1 (used alone in a joint episode) it hands over an empty belief.

    Args:
        seed: The seed of its random choices, until :meth:`reset` is given another.
    """

    name = "random_p2"

    def __init__(self, seed: int = 0):
        self._base_seed = seed
        self._rng = random.Random(seed)
        self._clear()

    def _clear(self) -> None:
        self._plan: list[dict] | None = None  # None until list_dir has been sent
        self._planned = False

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        """Start a new episode.

        Args:
            seed: The episode's seed; the random choices are redrawn from it (None: from the constructor's).
            task_name: The episode's task (accepted for the protocol; unused).
        """
        self._rng = random.Random(self._base_seed if seed is None else f"{self._base_seed}:{seed}")
        self._clear()

    def _on_new_episode(self) -> None:
        self._clear()  # the random stream goes on: only reset(seed=...) redraws it

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        self._watch_episode(observation)
        if phase != 2:
            return handoff_action(BeliefState())
        return self._phase2(observation)

    def _phase2(self, observation: dict) -> dict:
        result = observation.get("action_result") or {}
        if self._plan is None:
            self._plan = []
            return make_action(ActionType.LIST_DIR, path=".")
        if not self._planned:
            self._planned = True
            entries = result.get("entries") or []
            files = [e["name"] for e in entries if isinstance(e, dict) and e.get("type") == "file"]
            if not files:
                files = list(observation.get("file_tree") or [])
            reads = self._rng.sample(files, min(len(files), self._rng.randint(1, 3)))
            self._plan = [make_action(ActionType.READ_FILE, path=p) for p in reads]
            self._plan.append(make_action(ActionType.GET_GIT_LOG, n_commits=5))
            sha = observation.get("bad_commit_sha")
            if sha:
                self._plan.append(make_action(ActionType.GET_FILE_DIFF, commit_sha=sha))
        if self._plan:
            return self._plan.pop(0)
        diff = result.get("diff") if isinstance(result, dict) else None
        return make_action(ActionType.PROPOSE_PATCH, diff=diff if isinstance(diff, str) else "")


class OracleP1ThenRandomP2Policy(AnswerKey, RandomPhase2Policy):
    """Views the culprit's deploy history (the evidence a diagnosis needs to earn credit), hands
    over the perfect belief (from the scenario), then explores at random.

    The ceiling for "how much does a perfect phase 1 help a weak phase-2 agent?".
    """

    name = "oracle_p1+random_p2"

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        if phase == 1:
            from srelib.env.tasks.pools import oracle_belief

            scenario = self.answer(task_name)
            if observation.get("steps_taken", 0) == 0 and scenario.root_cause_service:
                return make_action(ActionType.CHECK_DEPLOY_HISTORY, scenario.root_cause_service)
            return handoff_action(oracle_belief(scenario))
        return super().__call__(observation, phase, task_name)
