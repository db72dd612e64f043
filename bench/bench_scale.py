"""Scale-out: ``evaluate(executor=...)`` on Dask and on Ray at 1, 2 and 4 workers.

One grid (heuristic-revert over every task of pools A and C, ``--seeds`` seeds) runs serially
in this process first (once to warm, once timed); its frame is the reference every engine's rows must equal (wall time
aside). For each engine and worker count a fresh local cluster starts (its start-up time is
reported apart), plays the grid once untimed (workers import srelib and fill their grading
memo) and then once timed. Efficiency is episodes/s per worker against the same engine at one
worker: 1.0 is perfect scaling; on a machine with fewer cores than workers it cannot be.

    python bench/bench_scale.py --seeds 10
    python bench/bench_scale.py --seeds 2 --engines dask          # Dask only
    python bench/bench_scale.py --seeds 40 --dask-scheduler tcp://head:8786   # a running cluster
    python bench/bench_scale.py --seeds 40 --ray-address auto                   # (as it is sized)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Row, base_parser, report  # noqa: E402

WORKERS = (1, 2, 4)


def policy():
    from srelib.policies.registry import build_policy

    return build_policy("HeuristicPhase1Policy", "RevertPhase2Policy")


def grid(seeds: int) -> dict:
    return dict(tasks="all", pools=["A", "C"], seeds=seeds, progress=False)


def _dask(workers: int, address: str | None = None):
    """A context manager giving a Dask executor over a local cluster of ``workers`` processes,
    or over the running cluster whose scheduler is at ``address``."""
    from contextlib import ExitStack, contextmanager

    @contextmanager
    def cluster():
        from dask.distributed import Client, LocalCluster

        with ExitStack() as stack:
            target = address or stack.enter_context(LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None))
            client = stack.enter_context(Client(target))
            yield stack.enter_context(client.get_executor())

    return cluster()


def _ray(workers: int, address: str | None = None):
    """The same over Ray: a local node with ``workers`` CPUs, or the cluster at ``address``."""
    from contextlib import contextmanager

    @contextmanager
    def cluster():
        import ray

        from srelib.runners.executors import RayExecutor

        options = {"address": address} if address else {"num_cpus": workers,
                                                        "include_dashboard": False}
        ray.init(logging_level="ERROR", log_to_driver=False, **options)
        try:
            yield RayExecutor()
        finally:
            ray.shutdown()

    return cluster()


ENGINES = {"dask": _dask, "ray": _ray}


def measure(engine: str, workers: int, seeds: int, serial, address: str | None = None) -> dict:
    import srelib

    policies = {"heuristic-revert": policy}
    start = time.perf_counter()
    with ENGINES[engine](workers, address) as executor:
        startup = time.perf_counter() - start
        srelib.evaluate(policies, executor=executor, **grid(seeds))  # warm-up, untimed
        start = time.perf_counter()
        frame = srelib.evaluate(policies, executor=executor, **grid(seeds))
        wall = time.perf_counter() - start
    same = frame.drop(columns="wall_s").equals(serial.drop(columns="wall_s"))
    return {"eps": len(frame) / wall, "startup": startup, "same": same, "episodes": len(frame)}


def main(argv: list[str] | None = None) -> list[Row]:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds per task of the grid")
    parser.add_argument("--engines", nargs="+", choices=sorted(ENGINES), default=sorted(ENGINES))
    parser.add_argument("--dask-scheduler", metavar="ADDRESS",
                        help="measure this running Dask cluster (as sized) instead")
    parser.add_argument("--ray-address", metavar="ADDRESS",
                        help="measure this running Ray cluster (as sized) instead")
    args = parser.parse_args(argv)
    addresses = {"dask": args.dask_scheduler, "ray": args.ray_address}
    import srelib

    srelib.evaluate({"heuristic-revert": policy}, **grid(args.seeds))  # warm, as the workers
    start = time.perf_counter()
    serial = srelib.evaluate({"heuristic-revert": policy}, **grid(args.seeds))
    serial_eps = len(serial) / (time.perf_counter() - start)
    rows = [Row("scale", "serial evaluate episodes/s", round(serial_eps, 2), "ep/s",
                note=f"{len(serial)} episodes, this process, {os.cpu_count()} cores")]
    for engine in args.engines:
        if addresses[engine]:
            got = measure(engine, 0, args.seeds, serial, addresses[engine])
            rows.append(Row("scale", f"{engine} cluster at {addresses[engine]} episodes/s",
                            round(got["eps"], 2), "ep/s", "rows equal serial", met=got["same"],
                            note=f"x{got['eps'] / serial_eps:.2f} serial"))
            continue
        one = None
        for workers in WORKERS:
            got = measure(engine, workers, args.seeds, serial)
            one = one or got["eps"]
            efficiency = got["eps"] / (workers * one)
            rows.append(Row("scale", f"{engine} {workers} worker(s) episodes/s",
                            round(got["eps"], 2), "ep/s", "rows equal serial", met=got["same"],
                            note=f"efficiency {efficiency:.2f}; x{got['eps'] / serial_eps:.2f} "
                                 f"serial; cluster start {got['startup']:.1f}s apart"))
    report(rows, args.json)
    return rows


if __name__ == "__main__":
    main()
