"""Running episodes: one at a time, over grids (in processes, on any executor, or in lockstep
batches), and the oracle-P1 ceiling built on top.

Every episode gets a fresh policy (a factory's product or a deep copy of the given instance)
reset with the episode's seed, so a grid gives the same frame however it is split across
processes.
"""

from __future__ import annotations

import copy
import functools
import inspect
import math
import pickle
import time
import traceback
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from srelib.policies import base as policy_base
from srelib.policies.base import call_reset
from srelib.redact import redact_text
from srelib.results import (KEY_COLUMNS, Episode, RunStore, count_parse_failures,
                            frame_from_episodes, iter_episodes)
from srelib.workers import process_pool

#: Pools to use for a task when a joint (own-handoff) episode is wanted.
JOINT_POOLS = ("C", "D")
#: ``reset_policy(policy, seed, task)``: how every runner here (and the widgets) resets a policy.
reset_policy = call_reset


def run_episode(env, policy, task: str | None = None, pool: str | None = None,
                mode: str | None = None, seed: int | None = None, max_steps: int | None = None,
                *, null_repair: Mapping[str, float] | None = None,
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
    ``null_repair`` maps a task to its null-handoff repair (see :func:`measure_null_context`);
    with it the episode gets ``r_cross``.
    """
    start = time.perf_counter()
    name = policy_name or policy_base.policy_name(policy)
    state = _EpisodeState()
    try:
        obs, info = env.reset(task=task, pool=pool, mode=mode, seed=seed)
    except ValueError:
        raise  # a task, pool or mode that does not exist: the caller's mistake
    except Exception:  # noqa: BLE001 - e.g. a remote environment that failed: this episode only
        state.fail("env_error")
        return Episode(policy=name, task=str(task), pool=pool, mode=_mode_of(pool, mode),
                       seed=int(seed or 0), error=state.error, ended_by=state.ended_by,
                       wall_s=round(time.perf_counter() - start, 6))
    task, pool, mode, seed = info["task"], info["pool"], info["mode"], info["seed"]
    usage_mark = _usage_mark(policy)
    try:
        reset_policy(policy, seed, task)
    except Exception:  # noqa: BLE001 - a broken policy must not lose the run
        state.fail("policy_error")
    while not state.done:
        if max_steps is not None and state.calls >= max_steps:
            state.truncated, state.ended_by = True, "max_steps"
            break
        try:
            action = policy(obs, obs.get("current_phase", 1), task)
        except Exception:  # noqa: BLE001 - a broken policy must not lose the run
            state.fail("policy_error")
            break
        obs, info = state.step(env, action, obs, info)
    tokens, latency = _usage_since(policy, usage_mark)
    return _finish(env, state, info, name, task, pool, mode, seed, null_repair, tokens, latency,
                   time.perf_counter() - start)


def _mode_of(pool: str | None, mode: str | None) -> str:
    """The mode an episode of ``pool`` runs in, when ``reset`` could not say."""
    from srelib.env.pools import POOLS

    return mode or (POOLS[pool].mode if pool in POOLS else "joint")


@dataclass(frozen=True)
class EpisodeJob:
    """One cell of an evaluation grid: which policy, on which task, pool, mode and seed."""

    policy: str
    task: str
    pool: str | None
    mode: str | None
    seed: int

    def key(self, mode: str) -> tuple:
        return (self.policy, self.task, self.pool, mode, self.seed)


def plan(policy_names: Iterable[str], tasks: str | Sequence[str] = "all",
         pools: Sequence[str | None] = ("C",), seeds: int | Iterable[int] = 10,
         mode: str | None = None) -> list[EpisodeJob]:
    """The grid of episodes :func:`evaluate` runs: every policy x pool x pool task x seed.

    ``tasks="all"`` takes every classic task of each pool; otherwise ``tasks`` is a task spec
    (ids, suite names such as ``"generated"`` or ``"generated:heldout"``, or a list of them)
    and each pool keeps the tasks of its split (pool None keeps every task). ``seeds`` is a
    count (``range(seeds)``) or explicit seeds.
    """
    from srelib.env.catalog import resolve_tasks
    from srelib.env.pools import MODES, POOLS
    from srelib.env.scenarios import TASKS

    if mode is not None and mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; valid modes: {list(MODES)} or None")
    seed_list = list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]
    if not seed_list:
        raise ValueError(f"seeds must be a count >= 1 or a non-empty list, got {seeds!r}")
    pools = _as_list(pools)
    unknown = [p for p in pools if p is not None and p not in POOLS]
    if unknown:
        raise ValueError(f"unknown pools {unknown}; valid pools: {sorted(POOLS)} or None")
    wanted = list(TASKS) if tasks == "all" else resolve_tasks(tasks)
    jobs = []
    for name in policy_names:
        for pool in pools:
            for task in (t for t in wanted if pool is None or POOLS[pool].accepts(t)):
                jobs.extend(EpisodeJob(name, task, pool, mode, s) for s in seed_list)
    if not jobs:
        raise ValueError(f"no episodes: tasks {wanted} are in none of the pools {pools}")
    return jobs


def evaluate(policies: Mapping[str, Any], tasks: str | Sequence[str] = "all",
             pools: Sequence[str | None] = ("C",), seeds: int | Iterable[int] = 10, *,
             mode: str | None = None, workers: int = 1, executor: Executor | None = None,
             out=None, resume: bool = True, progress: bool = True,
             null_repair: Mapping[str, float] | None = None, max_steps: int | None = None,
             batch_size: int = 32, env: Callable[[], Any] | None = None):
    """Run every policy on a grid of episodes and return one row per episode (a DataFrame).

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
    adds ``r_cross``. Rows are sorted by policy, task, pool, mode and seed.
    """
    from tqdm.auto import tqdm

    if not policies:
        raise ValueError("policies is empty: pass a mapping of name -> policy or factory")
    if workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    seeds = seeds if isinstance(seeds, int) else [int(s) for s in seeds]
    jobs = plan(policies, tasks, pools, seeds, mode)
    store = RunStore(out, resume=resume) if out is not None else None
    if store is not None:
        store.write_config(_run_config(policies, tasks, pools, seeds, mode, max_steps,
                                       null_repair, workers))
    todo = [j for j in jobs if store is None or not (store.done & _possible_keys(j))]
    finished: list[Episode] = []
    with tqdm(total=len(jobs), initial=len(jobs) - len(todo), desc="episodes", unit="ep",
              disable=not progress) as bar:
        def record(episodes: list[Episode]) -> None:
            for episode in episodes:
                if store is not None:
                    store.append(episode)
                finished.append(episode)
            bar.update(len(episodes))

        batched = {n for n, spec in policies.items() if _is_batch_policy(spec)}
        for name in sorted(batched):
            chunk = [j for j in todo if j.policy == name]
            policy = _instantiate(policies[name], copy_instance=False) if chunk else None
            for i in range(0, len(chunk), batch_size):
                record(run_lockstep(policy, chunk[i:i + batch_size], max_steps=max_steps,
                                    null_repair=null_repair, env=env))
        scripted = [j for j in todo if j.policy not in batched]
        units = _work_units(policies, scripted, max_steps, null_repair,
                            parallel=executor is not None or workers > 1,
                            workers=workers, env_factory=env)
        if executor is not None:
            _run_on(executor, units, record)
        elif workers > 1 and units:
            with process_pool(workers) as pool_executor:
                _run_on(pool_executor, units, record)
        else:
            for unit in units:
                record(_run_unit(unit))
    if store is not None:
        wanted = {k for j in jobs for k in _possible_keys(j)}
        finished = [e for e in iter_episodes(store.path) if e.key in wanted]
    return frame_from_episodes(finished)


def run_lockstep(policy, jobs: Sequence[EpisodeJob], *, max_steps: int | None = None,
                 null_repair: Mapping[str, float] | None = None,
                 env: Callable[[], Any] | None = None) -> list[Episode]:
    """Run ``jobs`` together with a batch policy: one ``act_batch`` call per step.

    ``act_batch`` receives ``(observation, phase, task_name, lane)`` for the episodes still
    running (``lane`` is the job's position), after ``reset_batch([(seed, task), ...])`` where
    the policy offers it (else one ``reset``). Usage records of a call are attributed to the
    lanes in item order (one record per conversation, as the chat policies write them). If a
    call raises, every running episode of the batch ends with that error. ``env`` is a
    zero-argument factory of environments (default ``IncidentEnv``), one per lane.
    """
    from srelib.env.core import IncidentEnv

    make_env = env or IncidentEnv
    policy = _instantiate(policy, copy_instance=False)
    start = time.perf_counter()
    lanes = []
    for job in jobs:
        lane_env = make_env()
        obs, info = lane_env.reset(task=job.task, pool=job.pool, mode=job.mode, seed=job.seed)
        lanes.append(_Lane(job, lane_env, obs, info))
    reset_batch = getattr(policy, "reset_batch", None)
    if callable(reset_batch):
        reset_batch([(lane.info["seed"], lane.info["task"]) for lane in lanes])
    else:
        reset_policy(policy, lanes[0].info["seed"], lanes[0].info["task"])
    while True:
        for lane in lanes:
            if not lane.state.done and max_steps is not None and lane.state.calls >= max_steps:
                lane.state.truncated, lane.state.ended_by = True, "max_steps"
        active = [i for i, lane in enumerate(lanes) if not lane.state.done]
        if not active:
            break
        items = [(lanes[i].obs, lanes[i].obs.get("current_phase", 1), lanes[i].info["task"], i)
                 for i in active]
        mark = _usage_mark(policy)
        try:
            actions = list(policy.act_batch(items))
            if len(actions) != len(items):
                raise ValueError(f"act_batch returned {len(actions)} actions for {len(items)} items")
        except Exception:  # noqa: BLE001 - record the failure on every lane, keep the run
            for i in active:
                lanes[i].state.fail("policy_error")
            break
        _attribute_usage(policy, mark, [lanes[i] for i in active])
        for i, action in zip(active, actions):
            lanes[i].obs, lanes[i].info = lanes[i].state.step(lanes[i].env, action, lanes[i].obs,
                                                              lanes[i].info)
    wall = (time.perf_counter() - start) / max(1, len(lanes))
    return [_finish(lane.env, lane.state, lane.info, lane.job.policy, lane.info["task"],
                    lane.info["pool"], lane.info["mode"], lane.info["seed"], null_repair,
                    lane.tokens, lane.latency_s, wall)
            for lane in lanes]


def measure_null_context(phase2_policy, tasks: str | Sequence[str] = "all",
                         seeds: int | Iterable[int] = 20, **evaluate_kwargs) -> dict[str, float]:
    """Per task, the mean repair ``phase2_policy`` reaches after NullPhase1Policy's empty handoff.

    Episodes run in joint mode (pool C for train tasks, D for held-out ones), so the empty
    belief is what phase 2 really gets. The result is the ``null_repair`` that r_cross needs.
    """
    evaluate_kwargs.setdefault("progress", False)
    frame = evaluate({"null": _null_composite(phase2_policy)}, tasks=tasks, pools=JOINT_POOLS,
                     seeds=seeds, **evaluate_kwargs)
    return {task: float(group.mean()) for task, group in frame.groupby("task")["repair"]}


def ceiling_episodes(phase2_policy, phase1_policies: Mapping[str, Any] | None = None,
                     tasks: str | Sequence[str] = "all", seeds: int | Iterable[int] = 20,
                     **evaluate_kwargs):
    """The episodes behind :func:`ceiling_table`, one row each, ``policy`` naming the handoff.

    Handoffs: ``oracle`` (pool B; held-out tasks, which pool B lacks, get the same oracle
    handoff through ``mode="p2_only"``), ``null`` (NullPhase1Policy, joint, pools C/D), and each
    of ``phase1_policies`` joined to ``phase2_policy`` (its own handoff, joint).
    """
    import pandas as pd

    from srelib.env.catalog import resolve_tasks
    from srelib.env.scenarios import TASKS

    evaluate_kwargs.setdefault("progress", False)
    wanted = list(TASKS) if tasks == "all" else resolve_tasks(tasks)
    seeds = seeds if isinstance(seeds, int) else list(seeds)
    in_b = _pool_task_set("B", wanted)
    runs = []
    for pool, mode, pool_tasks in (("B", None, [t for t in wanted if t in in_b]),
                                   (None, "p2_only", [t for t in wanted if t not in in_b])):
        if pool_tasks:
            runs.append(evaluate({"oracle": phase2_policy}, tasks=pool_tasks, pools=[pool],
                                 seeds=seeds, mode=mode, **evaluate_kwargs))
    composed = {"null": _null_composite(phase2_policy)}
    for name, phase1 in (phase1_policies or {}).items():
        if name in composed or name == "oracle":
            raise ValueError(f"phase-1 policy name {name!r} is reserved; use another name")
        composed[name] = functools.partial(_compose, phase1, phase2_policy)
    runs.append(evaluate(composed, tasks=wanted, pools=JOINT_POOLS, seeds=seeds,
                         **evaluate_kwargs))
    frame = pd.concat(runs, ignore_index=True)
    return frame.sort_values(list(KEY_COLUMNS), na_position="first", kind="stable",
                             ignore_index=True)


def summarize_ceiling(frame, *, confidence: float = 0.95, seed: int = 0):
    """Per task and handoff: mean repair with a CI, and the paired gap to the oracle handoff.

    ``frame`` is :func:`ceiling_episodes` output. Columns: task, handoff, n, repair, ci_low,
    ci_high, gap (oracle - this handoff, paired on seed), gap_low, gap_high; the gap columns are
    NaN on the oracle rows. Tasks come in ``TASKS`` order; handoffs oracle first, then null,
    then the phase-1 policies.
    """
    import pandas as pd

    from srelib.stats import bootstrap_ci

    names = list(dict.fromkeys(frame["policy"]))
    if "oracle" not in names:
        raise ValueError(f"frame has no 'oracle' episodes; its policies: {names}")
    handoffs = ["oracle", *(["null"] if "null" in names else []),
                *[n for n in names if n not in ("oracle", "null")]]
    from srelib.env.scenarios import TASKS

    order = {t: i for i, t in enumerate(TASKS)}
    rows = []
    for task in sorted(set(frame["task"]), key=lambda t: order.get(t, len(order))):
        repair = {h: frame[(frame.task == task) & (frame.policy == h)].set_index("seed")["repair"]
                  for h in handoffs}
        for handoff in handoffs:
            mean, low, high = bootstrap_ci(repair[handoff], confidence=confidence, seed=seed)
            gap = (math.nan,) * 3
            if handoff != "oracle":
                gap = bootstrap_ci((repair["oracle"] - repair[handoff]).dropna(),
                                   confidence=confidence, seed=seed)
            rows.append({"task": task, "handoff": handoff,
                         "n": int(repair[handoff].notna().sum()), "repair": mean, "ci_low": low,
                         "ci_high": high, "gap": gap[0], "gap_low": gap[1], "gap_high": gap[2]})
    return pd.DataFrame(rows)


def ceiling_table(phase2_policy, phase1_policies: Mapping[str, Any] | None = None,
                  tasks: str | Sequence[str] = "all", seeds: int | Iterable[int] = 20, *,
                  confidence: float = 0.95, seed: int = 0, **evaluate_kwargs):
    """How much a perfect phase 1 helps ``phase2_policy``: repair per task under each handoff.

    Runs :func:`ceiling_episodes` (oracle, null and each phase-1 policy's own handoff) and
    summarises it with :func:`summarize_ceiling`; gaps are oracle minus each handoff, with
    paired bootstrap CIs over seeds. Extra keyword arguments go to :func:`evaluate`.
    """
    frame = ceiling_episodes(phase2_policy, phase1_policies, tasks, seeds, **evaluate_kwargs)
    return summarize_ceiling(frame, confidence=confidence, seed=seed)


class RayExecutor(Executor):
    """A ``concurrent.futures`` executor over Ray tasks, for ``evaluate(executor=...)``.

    Connect first (``ray.init()`` locally, ``ray.init("ray://head:10001")`` on a cluster);
    each submitted call runs as one Ray task and its result comes back as a future.
    """

    def submit(self, fn, /, *args, **kwargs):
        import ray

        if not ray.is_initialized():
            raise RuntimeError("Ray is not connected: call ray.init(...) before submitting")
        return ray.remote(fn).remote(*args, **kwargs).future()


# ---------------------------------------------------------------------------------------------
# internals


class _EpisodeState:
    """What the step loop knows about a running episode."""

    def __init__(self):
        self.calls = 0
        self.terminated = self.truncated = False
        self.ended_by: str | None = None
        self.error: str | None = None

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated or self.error is not None

    def fail(self, ended_by: str) -> None:
        """End the episode on the exception being handled, keeping its traceback (secrets
        redacted: it is stored with the episode)."""
        self.error, self.ended_by = redact_text(traceback.format_exc(limit=8)), ended_by

    def step(self, env, action, obs: dict, info: dict):
        """One ``env.step``; an exception from the environment ends this episode only."""
        try:
            obs, _reward, self.terminated, self.truncated, info = env.step(action)
        except Exception:  # noqa: BLE001 - one broken episode must not lose the run
            self.fail("env_error")
            return obs, info
        self.calls += 1
        if self.terminated or self.truncated:
            self.ended_by = info.get("ended_by") or ("terminated" if self.terminated else "budget")
        return obs, info


def _finish(env, state: _EpisodeState, info: dict, policy_name: str, task: str, pool, mode: str,
            seed: int, null_repair, tokens, latency, wall_s: float) -> Episode:
    from srelib.env.grading import r_cross, score_trajectory

    trajectory = copy.deepcopy(env.trajectory)
    score = info.get("score") if (state.terminated or state.truncated) else None
    if score is None:
        score = score_trajectory(task, mode, trajectory)
    cross = None
    if null_repair is not None and task in null_repair and score.get("repair") is not None:
        cross = float(r_cross(score["repair"], null_repair[task]))
    return Episode(policy=policy_name, task=task, pool=pool, mode=mode, seed=seed,
                   steps=trajectory, score=score, r_cross=cross,
                   parse_failures=count_parse_failures(trajectory), tokens=tokens,
                   latency_s=latency, terminated=bool(state.terminated),
                   truncated=bool(state.truncated), ended_by=state.ended_by,
                   wall_s=round(wall_s, 6), error=state.error)


class _Lane:
    """One episode of a lockstep batch."""

    def __init__(self, job: EpisodeJob, env, obs: dict, info: dict):
        self.job, self.env, self.obs, self.info = job, env, obs, info
        self.state = _EpisodeState()
        self.tokens: int | None = None
        self.latency_s: float | None = None


def _attribute_usage(policy, mark: int | None, lanes: list[_Lane]) -> None:
    """Credit each call record since ``mark`` to the lane it served: its ``item`` index in the
    batch (records without one are taken to come in batch order)."""
    usage = getattr(policy, "usage", None)
    if mark is None or not isinstance(usage, list):
        return
    for position, record in enumerate(usage[mark:]):
        item = record.get("item", position) if isinstance(record, dict) else position
        if not isinstance(item, int) or not 0 <= item < len(lanes):
            continue
        tokens, latency = _tokens_and_latency([record])
        lanes[item].tokens = (lanes[item].tokens or 0) + tokens
        lanes[item].latency_s = (lanes[item].latency_s or 0.0) + latency


def _usage_mark(policy) -> int | None:
    usage = getattr(policy, "usage", None)
    return len(usage) if isinstance(usage, list) else None


def _usage_since(policy, mark: int | None) -> tuple[int | None, float | None]:
    """Tokens and latency of the calls a policy recorded in ``policy.usage`` since ``mark``."""
    usage = getattr(policy, "usage", None)
    if mark is None or not isinstance(usage, list):
        return None, None
    return _tokens_and_latency(usage[mark:])


def _tokens_and_latency(records) -> tuple[int, float]:
    calls = [u for u in records if isinstance(u, dict)]
    tokens = sum(int(u.get("total_tokens") or (u.get("prompt_tokens") or 0)
                     + (u.get("completion_tokens") or 0)) for u in calls)
    latency = sum(float(u.get("latency_s") or 0.0) for u in calls)
    return tokens, latency


@dataclass(frozen=True)
class _WorkUnit:
    """A batch of jobs for one worker: the policy spec and environment factory travel with it
    (as :class:`_Portable` when the unit goes to another process)."""

    spec: Any
    jobs: tuple
    max_steps: int | None
    null_repair: Mapping[str, float] | None
    env_factory: Any = None


class _Portable:
    """A policy spec or environment factory on its way to a worker process, as cloudpickle
    bytes: lambdas, closures and classes defined in a notebook travel by value."""

    def __init__(self, value, what: str):
        self.payload = _dumps(value, what)

    def load(self):
        return pickle.loads(self.payload)


def _dumps(value, what: str) -> bytes:
    """``value`` pickled for another process, or a one-line ValueError saying how to fix it."""
    try:
        import cloudpickle
    except ModuleNotFoundError:
        cloudpickle = None
    try:
        return (cloudpickle or pickle).dumps(value)
    except Exception as exc:  # noqa: BLE001 - pickling raises many types; all mean "cannot travel"
        reason = (str(exc).splitlines() or [""])[0]
        fix = ("pass a zero-argument factory that builds it inside the worker "
               "(e.g. lambda: MyPolicy(...)), or run with workers=1" if cloudpickle else
               "pip install cloudpickle (lambdas and notebook classes then travel), define it "
               "at module level, or run with workers=1")
        raise ValueError(f"{what} cannot be sent to worker processes "
                         f"({type(exc).__name__}: {reason}); {fix}") from None


def _work_units(policies, jobs, max_steps, null_repair, *, parallel: bool, workers: int,
                env_factory=None):
    if not parallel:
        return [_WorkUnit(policies[j.policy], (j,), max_steps, null_repair, env_factory)
                for j in jobs]
    size = max(1, min(16, len(jobs) // (max(workers, 2) * 4)))
    portable_env = _Portable(env_factory, "the env factory") if env_factory else None
    units = []
    for name in dict.fromkeys(j.policy for j in jobs):
        own = [j for j in jobs if j.policy == name]
        spec = _Portable(policies[name], f"policy {name!r}")
        units += [_WorkUnit(spec, tuple(own[i:i + size]), max_steps,
                            dict(null_repair) if null_repair is not None else None, portable_env)
                  for i in range(0, len(own), size)]
    return units


def _run_unit(unit: _WorkUnit) -> list[Episode]:
    from srelib.env.core import IncidentEnv

    spec, make_env = (p.load() if isinstance(p, _Portable) else p
                      for p in (unit.spec, unit.env_factory))
    env = (make_env or IncidentEnv)()
    try:
        return [run_episode(env, _instantiate(spec, copy_instance=True), task=job.task,
                            pool=job.pool, mode=job.mode, seed=job.seed,
                            max_steps=unit.max_steps, null_repair=unit.null_repair,
                            policy_name=job.policy)
                for job in unit.jobs]
    finally:
        if callable(getattr(env, "close", None)):
            env.close()


def _run_on(executor: Executor, units, record: Callable[[list[Episode]], None]) -> None:
    futures = [executor.submit(_run_unit, unit) for unit in units]
    for future in as_completed(futures):
        record(future.result())


def _possible_keys(job: EpisodeJob) -> set[tuple]:
    """Store keys the job may have been saved under (its mode is known only after reset)."""
    from srelib.env.pools import MODES

    modes = [job.mode] if job.mode is not None else list(MODES)
    return {job.key(m) for m in modes}


def _is_factory(spec) -> bool:
    if isinstance(spec, type):
        return True
    if hasattr(spec, "reset") or hasattr(spec, "act_batch"):
        return False
    try:
        inspect.signature(spec).bind()
    except (TypeError, ValueError):
        return False
    return True


def _instantiate(spec, *, copy_instance: bool):
    if _is_factory(spec):
        return spec()
    if not copy_instance:
        return spec
    try:
        return copy.deepcopy(spec)
    except Exception:  # noqa: BLE001 - uncopyable (clients, models): reuse it, reset per episode
        return spec


def _is_batch_policy(spec) -> bool:
    target = spec if not isinstance(spec, functools.partial) else spec.func
    return callable(getattr(target, "act_batch", None))


def _compose(phase1_spec, phase2_spec):
    from srelib.policies import CompositePolicy

    return CompositePolicy(_instantiate(phase1_spec, copy_instance=True),
                           _instantiate(phase2_spec, copy_instance=True))


def _null_composite(phase2_policy):
    from srelib.policies import NullPhase1Policy

    return functools.partial(_compose, NullPhase1Policy, phase2_policy)


def _pool_task_set(name: str, tasks: Sequence[str]) -> set[str]:
    from srelib.env.pools import POOLS

    return {t for t in tasks if POOLS[name].accepts(t)}


def _as_list(value) -> list:
    if value is None or isinstance(value, str):
        return [value] if value is None else [v.strip() for v in value.split(",") if v.strip()]
    return list(value)


def _run_config(policies, tasks, pools, seeds, mode, max_steps, null_repair, workers) -> dict:
    return {"policies": {n: _describe(p) for n, p in policies.items()}, "tasks": tasks,
            "pools": _as_list(pools), "seeds": seeds if isinstance(seeds, int) else list(seeds),
            "mode": mode, "max_steps": max_steps, "null_repair": null_repair, "workers": workers}


def _describe(spec) -> str:
    if isinstance(spec, functools.partial):
        parts = [_describe(a) for a in spec.args] + [f"{k}={v!r}" for k, v in spec.keywords.items()]
        return f"{getattr(spec.func, '__name__', spec.func)}({', '.join(parts)})"
    if isinstance(spec, type) or inspect.isfunction(spec):
        return f"{spec.__module__}.{spec.__qualname__}"
    return repr(spec) if type(spec).__repr__ is not object.__repr__ else type(spec).__qualname__
