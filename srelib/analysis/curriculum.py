"""The curriculum driver: stages A → B → C over any policy, closed by a held-out evaluation (D).

Stage A trains phase 1 alone (pool A), B phase 2 alone from the oracle handoff (pool B), C both
phases joined (pool C); D evaluates on the held-out tasks (pool D). Within a stage, each episode's
task and seed are drawn from the driver's own ``random.Random(seed)``, so a run reproduces from
its seed. A :class:`VarianceGate` opens the next stage once every task of the stage has enough
recent scores and their spread is small: the policy has settled there. A stage that never
settles within ``max_episodes`` stops the training stages; the held-out evaluation still runs.

A ``learner`` callable, if given, is called with a :class:`CurriculumEvent` after every episode
and after every stage: that is where a trainer updates the policy. With ``out``, episodes are
stored as they finish (a run directory, see :mod:`srelib.results.store`) and a rerun resumes: the
same draws replay, stored episodes that verify (:func:`srelib.verify_episode`) are read back
instead of run again (their events carry ``replayed=True``), and the run goes on where it
stopped.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from srelib.env.tasks.ids import task_id

#: Training stages in order, then the evaluation stage.
TRAINING_STAGES = ("A", "B", "C")
EVALUATION_STAGE = "D"


@dataclass(frozen=True)
class VarianceGate:
    """Open the next stage when every task has ``min_samples`` scores and the standard deviation
    of its last ``window`` scores is at most ``max_std``."""

    window: int = 8
    max_std: float = 0.15
    min_samples: int = 4

    def __post_init__(self) -> None:
        if self.window < 2 or self.min_samples < 2 or self.max_std < 0:
            raise ValueError("VarianceGate needs window >= 2, min_samples >= 2 and max_std >= 0, "
                             f"got {self}")

    def spread(self, scores: Sequence[float]) -> float | None:
        """The std of the last ``window`` scores, or None before ``min_samples``."""
        if len(scores) < self.min_samples:
            return None
        return statistics.pstdev(list(scores)[-self.window:])

    def opens(self, scores_by_task: Mapping[str, Sequence[float]], tasks: Sequence[str]) -> bool:
        spreads = [self.spread(scores_by_task.get(task, ())) for task in tasks]
        return all(s is not None and s <= self.max_std for s in spreads)


@dataclass
class CurriculumEvent:
    """What the learner hook receives: ``kind`` is ``"episode"`` or ``"stage"``."""

    kind: str
    stage: str
    episode: Any = None          # the Episode (kind "episode")
    replayed: bool = False       # read back from the run directory, not run now
    opened: bool | None = None   # kind "stage": did the gate open the next stage?
    episodes: int = 0            # kind "stage": episodes the stage took


@dataclass
class CurriculumRun:
    """The stages as run: per stage, its episodes and whether its gate opened."""

    episodes: list = field(default_factory=list)
    stages: list = field(default_factory=list)

    @property
    def frame(self):
        """One row per episode, with the stage it belongs to."""
        from srelib.results.store import KEY_COLUMNS, frame_from_episodes

        stage_of = {(e.policy, e.public_task, *e.key[2:]): s for s, e in self._staged}  # as shown
        frame = frame_from_episodes(self.episodes)
        keys = frame[list(KEY_COLUMNS)].itertuples(index=False, name=None)
        return frame.assign(stage=[stage_of[k] for k in keys])

    @property
    def heldout(self):
        """The held-out evaluation's rows."""
        frame = self.frame
        return frame[frame["stage"] == EVALUATION_STAGE].reset_index(drop=True)

    @property
    def draws(self) -> list[tuple[str, str, int]]:
        """``(stage, task, seed)`` of every episode, in the order drawn."""
        return [(s, e.task, e.seed) for s, e in self._staged]

    _staged: list = field(default_factory=list, repr=False)


class Curriculum:
    """Drive ``policy`` (an instance or a zero-argument factory, built once so a learner can
    update it) through the stages; see the module doc."""

    def __init__(self, policy: Any, *, seed: int = 0, gate: VarianceGate = VarianceGate(),
                 max_episodes: int = 200, heldout_episodes: int = 20, out=None,
                 learner: Callable[[CurriculumEvent], None] | None = None,
                 name: str = "curriculum", stages: Sequence[str] = TRAINING_STAGES):
        from srelib.env.tasks.pools import POOLS
        from srelib.policies.specs import instantiate

        unknown = [s for s in stages if s not in TRAINING_STAGES]
        if unknown or not stages:
            raise ValueError(f"unknown stages {unknown}; valid stages: {list(TRAINING_STAGES)}")
        if max_episodes < 1 or heldout_episodes < 0:
            raise ValueError("need max_episodes >= 1 and heldout_episodes >= 0")
        self.policy = instantiate(policy, copy_instance=False)
        self.seed, self.gate, self.name = seed, gate, name
        self.max_episodes, self.heldout_episodes = max_episodes, heldout_episodes
        self.learner, self.stages = learner, tuple(stages)
        self._pools = POOLS
        self._store = None
        if out is not None:
            from srelib.results.store import RunStore

            self._store = RunStore(out, resume=True)
            self._store.write_config({"curriculum": name, "seed": seed, "gate": vars(gate),
                                      "max_episodes": max_episodes,
                                      "heldout_episodes": heldout_episodes,
                                      "stages": list(stages)})

    def run(self) -> CurriculumRun:
        """Run every training stage until one does not open the next, then the evaluation."""
        rng = random.Random(self.seed)
        stored = self._stored()
        run = CurriculumRun()
        for stage in self.stages:
            scores: dict[str, list[float]] = {}
            tasks = [task_id(t) for t in self._pools[stage].tasks]  # episodes carry the ids
            count, opened = 0, False
            while count < self.max_episodes and not opened:
                episode = self._episode(stage, rng, stored, run)
                scores.setdefault(episode.task, []).append(episode.final or 0.0)
                count += 1
                opened = self.gate.opens(scores, tasks)
            self._stage_done(run, stage, count, opened, scores)
            if not opened:
                break
        for _ in range(self.heldout_episodes):
            self._episode(EVALUATION_STAGE, rng, stored, run)
        self._stage_done(run, EVALUATION_STAGE, self.heldout_episodes, None, {})
        return run

    def _episode(self, stage: str, rng: random.Random, stored: dict, run: CurriculumRun):
        from srelib.env.core import IncidentEnv
        from srelib.runners.rollout import run_episode

        task = rng.choice(list(self._pools[stage].tasks))
        episode_seed = rng.randrange(2**31)
        key = (self.name, task_id(task), stage, self._pools[stage].mode, episode_seed)
        episode = stored.get(key)
        replayed = episode is not None
        if episode is None:
            episode = run_episode(IncidentEnv(), self.policy, task=task, pool=stage,
                                  seed=episode_seed, policy_name=self.name)
            if self._store is not None:
                self._store.append(episode)
        run.episodes.append(episode)
        run._staged.append((stage, episode))
        self._tell(CurriculumEvent("episode", stage, episode=episode, replayed=replayed))
        return episode

    def _stage_done(self, run: CurriculumRun, stage: str, count: int, opened: bool | None,
                    scores: Mapping[str, list[float]]) -> None:
        spreads = {t: self.gate.spread(s) for t, s in sorted(scores.items())}
        run.stages.append({"stage": stage, "episodes": count, "opened": opened,
                           "spread": spreads})
        self._tell(CurriculumEvent("stage", stage, opened=opened, episodes=count))

    def _tell(self, event: CurriculumEvent) -> None:
        if self.learner is not None:
            self.learner(event)

    def _stored(self) -> dict:
        """The run directory's episodes that replay to their own records and score; any other
        is run again (a saved episode is verified, never trusted)."""
        if self._store is None:
            return {}
        import warnings

        from srelib.results.store import iter_episodes
        from srelib.results.verify import verify_episode

        stored = list(iter_episodes(self._store.path))
        kept = {e.key: e for e in stored if verify_episode(e)}
        if len(kept) < len(stored):
            warnings.warn(f"{len(stored) - len(kept)} stored episode(s) in {self._store.path} do "
                          "not replay; they are run again", stacklevel=3)
        return kept
