"""Running episodes: one at a time, and over grids (serially, in worker processes, on any
executor, or in lockstep batches for batch policies).

Every episode gets a fresh policy (a factory's product or a deep copy of the given instance)
reset with the episode's seed and task, so a grid gives the same frame however it is split
across processes. One episode is played by :mod:`srelib.runners.play` (re-exported here).
"""

from __future__ import annotations

import os
import warnings
from concurrent.futures import Executor
from typing import Any, Callable, Iterable, Mapping, Sequence

from srelib.env.tasks.pools import JOINT_POOLS
from srelib.episode import EpisodeSpec
from srelib.policies.base import supports_batch
from srelib.policies.specs import describe, instantiate
from srelib.results.settings import nonstandard_settings
from srelib.results.store import Episode, RunStore, frame_from_episodes, iter_episodes
from srelib.runners.eval_config import EvalConfig, eval_config, pool_list
from srelib.runners.executors import RayExecutor, run_on, run_unit, work_units
from srelib.runners.play import EpisodeJob, episode_record, reset_policy, run_episode
from srelib.runners.rerun import scripted_name
from srelib.runners.workers import process_pool

__all__ = ["JOINT_POOLS", "EpisodeJob", "EvalConfig", "RayExecutor", "episode_record", "evaluate",
           "plan", "reset_policy", "run_episode"]



def plan(policy_names: Iterable[str], tasks: str | Sequence[str] = "all",
         pools: str | Sequence[str | None] | None = ("C",), seeds: int | Iterable[int] = 10,
         mode: str | None = None) -> list[EpisodeJob]:
    """The grid of episodes :func:`evaluate` runs: every policy x pool x pool task x seed.

    ``tasks="all"`` takes every classic task of each pool; otherwise ``tasks`` is a task spec
    (ids, suite names such as ``"generated"`` or ``"generated:heldout"``, or a list of them)
    and each pool keeps the tasks of its split (pool None keeps every task). ``seeds`` is a
    count (``range(seeds)``) or explicit seeds. Jobs name tasks by their opaque ids.
    """
    from srelib.env.tasks.catalog import expand_tasks
    from srelib.env.tasks.pools import POOLS
    from srelib.env.tasks.ids import task_id

    EpisodeSpec.resolve(mode=mode)  # an unknown mode fails before anything else
    seed_list = list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]
    if not seed_list:
        raise ValueError(f"seeds must be a count >= 1 or a non-empty list, got {seeds!r}")
    pools = pool_list(pools)
    unknown = [p for p in pools if p is not None and p not in POOLS]
    if unknown:
        raise ValueError(f"unknown pools {unknown}; valid pools: {sorted(POOLS)} or None")
    wanted = expand_tasks(tasks)
    jobs = []
    for name in policy_names:
        for pool in pools:
            for task in (t for t in wanted if pool is None or POOLS[pool].accepts(t)):
                jobs.extend(EpisodeJob.of(name, EpisodeSpec.resolve(task_id(task), pool, mode, s))
                            for s in seed_list)
    if not jobs:
        raise ValueError(f"no episodes: tasks {wanted} are in none of the pools {pools}")
    return jobs


def evaluate(policies: Mapping[str, Any], tasks: str | Sequence[str] = "all",
             pools: Sequence[str | None] = ("C",), seeds: int | Iterable[int] = 10, *,
             mode: str | None = None, workers: int = 1, executor: Executor | None = None,
             out: str | os.PathLike | None = None, resume: bool = True, progress: bool = True,
             null_repair: Mapping[str, float] | None = None, max_steps: int | None = None,
             batch_size: int = 32, env: Callable[[], Any] | None = None,
             config: EvalConfig | None = None) -> Any:
    """Run every policy on a grid of episodes and return one row per episode (a DataFrame).

    The grid and its split (``tasks`` to ``batch_size``, but not ``policies``, ``executor``,
    ``out``, ``resume``, ``progress`` or ``env``) may come as one :class:`EvalConfig` instead
    of keywords (``evaluate(policies, config=EvalConfig(seeds=3))``), with the same frame;
    ``run.json`` stores it under ``config`` (:meth:`EvalConfig.from_run` reads it back).

    ``policies`` maps a name to a policy or a zero-argument factory (a class, a
    ``functools.partial``, a function, a lambda). Each episode gets a fresh policy, so results
    never depend on the order episodes run in. ``env`` is a zero-argument factory of
    environments (default ``IncidentEnv``), e.g. ``lambda: srelib.RemoteEnv(url)`` to run the
    episodes on a ``srelib serve`` server.

    Where episodes run:

    * serially in this process by default;
    * ``workers=N`` spreads scripted policies over a ``ProcessPoolExecutor`` of N processes;
    * ``executor=`` takes any ``concurrent.futures.Executor`` instead, e.g. a cluster::

          from dask.distributed import Client
          with Client("tcp://scheduler:8786").get_executor() as ex:
              frame = srelib.evaluate(policies, seeds=1000, executor=ex)

      (:class:`RayExecutor` after ``ray.init(...)``, ``mpi4py.futures.MPIPoolExecutor`` or
      loky's reusable executor work the same way);
    * policies and ``env`` travel to worker processes by cloudpickle, so lambdas, closures and
      classes defined in a notebook work there; one that cannot travel (it holds a lock, a
      socket, a model) raises a one-line ValueError that says to pass a factory instead;
    * policies with ``act_batch`` always run here, ``batch_size`` environments in lockstep with
      one batch call per step.

    ``out`` names a run directory (``run.json`` + ``episodes.jsonl``, written as episodes
    finish); with ``resume=True`` the episodes already stored are skipped, with ``resume=False``
    the directory's episodes are discarded first. ``null_repair`` (task -> null-handoff repair)
    adds ``r_cross``. Rows are sorted by policy, task, pool, mode and seed;
    ``frame.attrs["nonstandard"]`` names the settings other than srelib's the episodes were
    scored under (``max_steps``, ``null_repair``, a hand-picked task list:
    :mod:`srelib.results.settings`). Episodes the
    grader could not grade (:mod:`srelib.env.grading.errors`) have no score, their
    ``grading_error`` column says why, ``frame.attrs["grading_errors"]`` counts them and a
    :class:`GradingErrorWarning` names them; with ``out``, running again plays them again.

    Args:
        policies: a name to a policy or a zero-argument factory.
        tasks: ``"all"``, a suite name or a list of task ids or names.
        pools: the pools to play (None with ``mode``: every task in that mode).
        seeds: a count N (seeds 0..N-1) or the seeds themselves.
        mode: ``"p1_only"``, ``"p2_only"`` or ``"joint"``, overriding the pools' modes.
        workers: processes for scripted policies.
        executor: any ``concurrent.futures.Executor`` to run the episodes on.
        out: a run directory to write (and resume from).
        resume: skip the episodes ``out`` already holds (False: discard them first).
        progress: show a progress bar (when tqdm is installed).
        null_repair: task -> null-handoff repair, which adds ``r_cross``.
        max_steps: caps the policy calls of each episode.
        batch_size: environments a batched policy plays in lockstep.
        env: a zero-argument factory of environments.
        config: the grid and its split as one :class:`EvalConfig`, instead of their keywords.

    Returns:
        A pandas DataFrame, one row per episode (``srelib.results.COLUMNS``).

    Raises:
        ValueError: an empty or invalid grid (unknown policy, task, pool or mode), or a policy
            that cannot travel to a worker process.
        TypeError: ``config`` given along with grid keywords away from their defaults.
        MissingExtra: pandas is not installed (the ``demo`` extra).
    """
    from srelib.extras import progress_bar, require

    require("pandas", "evaluate")  # before any episode runs: its result is a DataFrame
    if not policies:
        raise ValueError("policies is empty: pass a mapping of name -> policy or factory")
    grid = eval_config(config, tasks=tasks, pools=pools, seeds=seeds, mode=mode,
                       max_steps=max_steps, null_repair=null_repair, workers=workers,
                       batch_size=batch_size)
    max_steps, null_repair, workers, batch_size = (grid.max_steps, grid.null_repair,
                                                   grid.workers, grid.batch_size)
    jobs = plan(policies, grid.tasks, grid.pools, grid.seeds, grid.mode)
    store = RunStore(out, resume=resume) if out is not None else None
    if store is not None:
        store.write_config(_run_config(policies, grid), plan=[j.key for j in jobs])
    todo = [j for j in jobs if store is None or j.key not in store.done]
    finished: list[Episode] = []
    with progress_bar(total=len(jobs), initial=len(jobs) - len(todo), desc="episodes",
                      unit="ep", disable=not progress) as bar:
        def record(episodes: list[Episode]) -> None:
            for episode in episodes:
                if store is not None:
                    store.append(episode)
                finished.append(episode)
            bar.update(len(episodes))

        batch_policies = _batch_policies(policies, {j.policy for j in todo})
        for name, policy in sorted(batch_policies.items()):
            from srelib.runners.lockstep import run_lockstep

            chunk = [j for j in todo if j.policy == name]
            for i in range(0, len(chunk), batch_size):
                record(run_lockstep(policy, chunk[i:i + batch_size], max_steps=max_steps,
                                    null_repair=null_repair, env=env))
        scripted = [j for j in todo if j.policy not in batch_policies]
        units = work_units(policies, scripted, max_steps, null_repair,
                           parallel=executor is not None or workers > 1,
                           workers=workers, env_factory=env)
        if executor is not None:
            run_on(executor, units, record)
        elif workers > 1 and units:
            with process_pool(workers) as pool_executor:
                run_on(pool_executor, units, record)
        else:
            for unit in units:
                record(run_unit(unit))
    if store is not None:
        wanted = {j.key for j in jobs}
        finished = [e for e in iter_episodes(store.path) if e.key in wanted]
    frame = frame_from_episodes(finished)
    frame.attrs["nonstandard"] = nonstandard_settings({
        "config": {"max_steps": max_steps, "null_repair": null_repair},
        "plan": {"episodes": [list(j.key) for j in jobs]}})
    ungraded = [e for e in finished if e.grading_error is not None]
    frame.attrs["grading_errors"] = len(ungraded)
    if ungraded:
        kinds = sorted({str(e.grading_error.get("kind")) for e in ungraded if e.grading_error})
        warnings.warn(f"{len(ungraded)} of {len(finished)} episodes could not be graded (the "
                      f"grader failed: {', '.join(kinds)}); their rows have no score and "
                      "'grading_error' says why" + ("; run again with the same out= to grade "
                      "them" if store is not None else ""), GradingErrorWarning, stacklevel=2)
    return frame


class GradingErrorWarning(UserWarning):
    """Some episodes of an evaluation could not be graded: the grader failed, not the agent
    (:mod:`srelib.env.grading.errors`). They are counted apart, never scored."""


def _batch_policies(policies: Mapping[str, Any], names: set[str]) -> dict[str, Any]:
    """The policies among ``names`` that act in batches, built once each. A policy says so by
    offering ``act_batch`` (:class:`~srelib.policies.base.BatchPolicy`), whether it was given
    as an instance or a factory; a class without it is known to be scripted without building."""
    built = {}
    for name in sorted(names):
        spec = policies[name]
        if isinstance(spec, type) and not supports_batch(spec):
            continue
        policy = instantiate(spec, copy_instance=False)
        if supports_batch(policy):
            built[name] = policy
    return built


def _run_config(policies: Mapping[str, Any], grid: EvalConfig) -> dict:
    registered = {n: scripted_name(p) for n, p in policies.items()}
    return {"policies": {n: describe(p) for n, p in policies.items()},
            "registered": {n: r for n, r in registered.items() if r is not None},
            **grid.to_json()}
