"""Playing one episode: a policy reset for the episode, stepped by the one loop in
:mod:`srelib.episode`, and the :class:`~srelib.results.store.Episode` it leaves; and
:class:`EpisodeJob`, the cell of a grid that the executors and lockstep batches play.
:mod:`srelib.runners.rollout` builds grids of them."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping

from srelib.episode import EpisodeRun, EpisodeSpec, drive, episode_steps
from srelib.policies import base as policy_base
from srelib.policies.base import call_reset
from srelib.policies.oracle import needs_answer
from srelib.results.store import KEY_COLUMNS, Episode, count_parse_failures
from srelib.runners.usage import usage_mark, usage_since

#: ``reset_policy(policy, seed, task)``: how every runner here (and the widgets) resets a policy.
reset_policy = call_reset


def run_episode(env: Any, policy: Any, task: str | None = None, pool: str | None = None,
                mode: str | None = None, seed: int | None = None,
                max_steps: int | None = None, *,
                null_repair: Mapping[str, float] | None = None,
                policy_name: str | None = None) -> Episode:
    """Run one episode of ``policy`` on ``env`` and return its :class:`Episode`.

    The policy is first reset with the episode's seed and task, in the first form its
    ``reset`` accepts (``srelib.policies.call_reset``: ``reset(seed=, task_name=)``,
    ``reset(seed=)``, ``reset(task_name)``, ``reset()``), so the seed's policies work unchanged.
    ``max_steps`` caps the policy calls (the environment's own budget still applies); hitting it
    ends the episode as truncated with ``ended_by="max_steps"``. A policy or environment
    exception ends it cleanly too (``ended_by`` ``"policy_error"`` or ``"env_error"``): the
    traceback is kept in ``error`` and the partial trajectory is scored; an environment that
    fails to reset gives an episode with no steps and no score (a ``ValueError`` from ``reset``,
    an unknown task, pool or mode, is the caller's mistake and is raised).
    ``null_repair`` maps a task to its null-handoff repair (see
    :func:`srelib.analysis.ceiling.measure_null_context`); with it the episode gets ``r_cross``.

    Args:
        env: the environment (an :class:`IncidentEnv` or a :class:`RemoteEnv`).
        policy: the policy: ``act(obs)``, or a callable of the seed's forms.
        task: a task id or name.
        pool: the pool, which sets the mode and the split.
        mode: ``"p1_only"``, ``"p2_only"`` or ``"joint"`` when no pool is given.
        seed: the incident's seed.
        max_steps: caps the policy calls.
        null_repair: task -> null-handoff repair, which adds ``r_cross``.
        policy_name: the name stored in the episode (default: the policy's class name).

    Returns:
        The finished :class:`Episode`, scored.

    Raises:
        ValueError: an unknown task, pool or mode, or a task outside the pool.
    """
    start = time.perf_counter()
    name = policy_name or policy_base.policy_name(policy)
    spec = EpisodeSpec.resolve(task, pool, mode, seed)
    mark = usage_mark(policy)
    fresh = [True]

    def choose(run: EpisodeRun) -> Any:
        if fresh[0]:
            fresh[0] = False
            reset_policy(policy, run.seed, run.task)
        return policy(run.obs, run.phase, run.task)

    run = drive(episode_steps(env, spec, max_steps=max_steps), choose)
    tokens, latency = usage_since(policy, mark)
    return episode_record(env, run, name, null_repair, tokens, latency,
                          time.perf_counter() - start, oracle=needs_answer(policy))


def episode_record(env: Any, run: EpisodeRun, policy_name: str,
                   null_repair: Mapping[str, float] | None, tokens: int | None,
                   latency: float | None, wall_s: float, *, oracle: bool = False) -> Episode:
    """The :class:`Episode` of a finished run: its trajectory, score (graded here when the run
    ended before the environment did) and costs; ``oracle`` when the policy was handed the
    answer. A run whose reset failed has no steps and no score; one the grader could not grade
    has no score and its ``grading_error``."""
    from srelib.env.grading.score import r_cross, score_trajectory
    from srelib.env.grading.errors import GradingError
    from srelib.env.tasks.ids import by_task

    spec, info = run.spec, run.info
    if not info:  # reset failed: nothing was played
        return Episode(policy=policy_name, task=_stored_id(spec.task), pool=spec.pool,
                       mode=spec.mode, seed=int(spec.seed or 0), error=run.error,
                       ended_by=run.ended_by, wall_s=round(wall_s, 6), oracle=oracle)
    task = info["task"]
    # the environment never changes a record once its step is over, and reset starts a new
    # list: the episode keeps the records, not a copy of them
    trajectory = list(env.trajectory)
    score = info.get("score") if (run.terminated or run.truncated) else None
    grading_error = info.get("grading_error")
    if score is None and grading_error is None:
        try:
            score = score_trajectory(task, spec.mode, trajectory)
        except GradingError as exc:
            grading_error = exc.record()
    if score is None:  # not graded: the episode keeps why, and a resumed run plays it again
        return Episode(policy=policy_name, task=task, pool=info["pool"], mode=info["mode"],
                       seed=info["seed"], steps=trajectory, parse_failures=count_parse_failures(
                           trajectory), tokens=tokens, latency_s=latency,
                       terminated=bool(run.terminated), truncated=bool(run.truncated),
                       ended_by=run.ended_by, wall_s=round(wall_s, 6), error=run.error,
                       oracle=oracle, grading_error=grading_error)
    cross = None
    null = None if null_repair is None else by_task(null_repair, task)
    repair = score.get("repair")
    if null is not None and repair is not None:
        cross = float(r_cross(repair, null))
    return Episode(policy=policy_name, task=task, pool=info["pool"], mode=info["mode"],
                   seed=info["seed"], steps=trajectory, score=score, r_cross=cross,
                   parse_failures=count_parse_failures(trajectory), tokens=tokens,
                   latency_s=latency, terminated=bool(run.terminated),
                   truncated=bool(run.truncated), ended_by=run.ended_by,
                   wall_s=round(wall_s, 6), error=run.error, oracle=oracle)


def _stored_id(task: Any) -> str:
    """The opaque id stored for a task that never started (kept as given if it names none)."""
    from srelib.env.tasks.ids import task_id

    try:
        return task_id(str(task))
    except ValueError:
        return str(task)


@dataclass(frozen=True)
class EpisodeJob:
    """One cell of an evaluation grid: which policy, on which task, pool, mode and seed (the
    mode resolved up front, see :class:`~srelib.episode.EpisodeSpec`)."""

    policy: str
    task: str
    pool: str | None
    mode: str
    seed: int

    @classmethod
    def of(cls, policy: str, spec: EpisodeSpec) -> "EpisodeJob":
        return cls(policy, str(spec.task), spec.pool, spec.mode, int(spec.seed or 0))

    @property
    def spec(self) -> EpisodeSpec:
        return EpisodeSpec(self.task, self.pool, self.mode, self.seed)

    @property
    def key(self) -> tuple:
        """The run store's key of this job's episode (:attr:`srelib.results.Episode.key`)."""
        return tuple(getattr(self, k) for k in KEY_COLUMNS)
