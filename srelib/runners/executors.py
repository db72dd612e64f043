"""Where episodes run: work units for worker processes and any ``concurrent.futures``
executor, the portable form policies travel in, and :class:`RayExecutor`."""

from __future__ import annotations

import pickle
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from srelib.extras import require
from srelib.policies.specs import instantiate
from srelib.results.store import Episode


class RayExecutor(Executor):
    """A ``concurrent.futures`` executor over Ray tasks, for ``evaluate(executor=...)``.

    Connect first (``ray.init()`` locally, ``ray.init("ray://head:10001")`` on a cluster);
    each submitted call runs as one Ray task and its result comes back as a future.
    """

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        require("ray", "srelib.runners.executors")
        import ray

        if not ray.is_initialized():
            raise RuntimeError("Ray is not connected: call ray.init(...) before submitting")
        return ray.remote(fn).remote(*args, **kwargs).future()


@dataclass(frozen=True)
class WorkUnit:
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

    def __init__(self, value: Any, what: str):
        self.payload = _dumps(value, what)

    def load(self) -> Any:
        return pickle.loads(self.payload)


def _dumps(value: Any, what: str) -> bytes:
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


def work_units(policies: Mapping[str, Any], jobs: Sequence, max_steps: int | None,
               null_repair: Mapping[str, float] | None, *, parallel: bool, workers: int,
               env_factory: Callable[[], Any] | None = None) -> list[WorkUnit]:
    """The jobs cut into units: one job each in this process; for workers, batches of up to 16
    jobs of one policy, with the policy spec and env factory made portable."""
    if not parallel:
        return [WorkUnit(policies[j.policy], (j,), max_steps, null_repair, env_factory)
                for j in jobs]
    size = max(1, min(16, len(jobs) // (max(workers, 2) * 4)))
    portable_env = _Portable(env_factory, "the env factory") if env_factory else None
    units = []
    for name in dict.fromkeys(j.policy for j in jobs):
        own = [j for j in jobs if j.policy == name]
        spec = _Portable(policies[name], f"policy {name!r}")
        units += [WorkUnit(spec, tuple(own[i:i + size]), max_steps,
                            dict(null_repair) if null_repair is not None else None, portable_env)
                  for i in range(0, len(own), size)]
    return units


def run_unit(unit: WorkUnit) -> list[Episode]:
    """Run a unit's jobs one after another on one environment (in whatever process it is)."""
    from srelib.env.core import IncidentEnv
    from srelib.runners.play import run_episode

    spec, make_env = (p.load() if isinstance(p, _Portable) else p
                      for p in (unit.spec, unit.env_factory))
    env = (make_env or IncidentEnv)()
    try:
        return [run_episode(env, instantiate(spec, copy_instance=True), task=job.task,
                            pool=job.pool, mode=job.mode, seed=job.seed,
                            max_steps=unit.max_steps, null_repair=unit.null_repair,
                            policy_name=job.policy)
                for job in unit.jobs]
    finally:
        close = getattr(env, "close", None)  # a RemoteEnv's session, say
        if callable(close):
            close()


def run_on(executor: Executor, units: Sequence[WorkUnit],
           record: Callable[[list[Episode]], None]) -> None:
    """Submit every unit to ``executor``; ``record`` each unit's episodes as it finishes."""
    futures = [executor.submit(run_unit, unit) for unit in units]
    for future in as_completed(futures):
        record(future.result())
