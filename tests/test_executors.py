"""Sweeps on real engines: workers=N, a Dask LocalCluster and a local Ray instance give the
serial run's rows, with policies defined the notebook way (lambdas, closures, local classes)."""

from __future__ import annotations

import threading

import pytest

import srelib
from srelib.policies.registry import build_policy
from srelib.runners.rollout import RayExecutor

GRID = dict(tasks=["memory_leak", "cascading_failure"], pools=["A", "C"], seeds=2,
            progress=False)


def notebook_policies():
    """Policies as a notebook defines them: a lambda, a closure and a class local to a call
    (none of which plain pickle can send to another process)."""
    phase2 = "RevertPhase2Policy"

    class Heuristic:
        def __init__(self):
            self.inner = build_policy("HeuristicPhase1Policy", phase2)

        def reset(self, seed=None, task_name=None):
            self.inner.reset(seed=seed, task_name=task_name)

        def __call__(self, observation, phase, task_name):
            return self.inner(observation, phase, task_name)

    return {"lambda": lambda: build_policy("NullPhase1Policy", phase2), "local-class": Heuristic}


def without_wall_time(frame):
    return frame.drop(columns=["wall_s"])


@pytest.fixture(scope="module")
def serial():
    return without_wall_time(srelib.evaluate(notebook_policies(), **GRID))


def test_serial_grid_is_not_trivial(serial):
    assert len(serial) == 16 and set(serial.policy) == {"lambda", "local-class"}
    assert serial.final.nunique() > 1 and serial.error.isna().all()


def test_notebook_factories_run_on_worker_processes(serial):
    frame = srelib.evaluate(notebook_policies(), workers=2, **GRID)
    assert without_wall_time(frame).equals(serial)


@pytest.mark.cluster
def test_dask_local_cluster_equals_serial(serial):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client, client.get_executor() as executor:
        frame = srelib.evaluate(notebook_policies(), executor=executor, **GRID)
        workers = client.run(lambda: __import__("os").getpid())
    assert len(set(workers.values())) == 2  # two separate worker processes
    assert without_wall_time(frame).equals(serial)


@pytest.mark.cluster
def test_ray_local_instance_equals_serial(serial):
    """A real single-node Ray instance (Ray's old ``local_mode`` is gone from Ray 2.x)."""
    ray = pytest.importorskip("ray")
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    except Exception as exc:  # noqa: BLE001 - Ray's node start has a fixed 30 s limit
        ray.shutdown()
        pytest.skip(f"Ray's local node did not start within its fixed limit (a loaded "
                    f"machine): {type(exc).__name__}: {exc}")
    try:
        frame = srelib.evaluate(notebook_policies(), executor=RayExecutor(), **GRID)
    finally:
        ray.shutdown()
    assert without_wall_time(frame).equals(serial)


def test_ray_executor_asks_for_a_connection_first():
    pytest.importorskip("ray")
    with pytest.raises(RuntimeError, match=r"ray.init"):
        RayExecutor().submit(print, "never runs")


class HoldsALock:
    """A policy instance that cannot be pickled (as one holding a client or a model)."""

    def __init__(self):
        self.lock = threading.Lock()

    def __call__(self, observation, phase, task_name):
        return {"action_type": "view_alerts"}


def test_a_policy_that_cannot_travel_gets_a_one_line_fix():
    with pytest.raises(ValueError) as caught:
        srelib.evaluate({"locked": HoldsALock()}, tasks=["memory_leak"], pools=["A"], seeds=1,
                        progress=False, workers=2)
    message = str(caught.value)
    assert "\n" not in message
    assert "'locked' cannot be sent to worker processes" in message and "lock" in message
    assert "factory" in message and "workers=1" in message
    # the fix it names works: a factory builds the lock inside the worker
    frame = srelib.evaluate({"locked": HoldsALock}, tasks=["memory_leak"], pools=["A"], seeds=1,
                            progress=False, workers=2)
    assert frame.error.isna().all() and int(frame.loc[0, "p1_steps"]) > 0
