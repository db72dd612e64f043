"""Environment throughput: srelib against the reference system, side by side in one run.

The seed's three scripted policies (NullPhase1Policy in joint mode, RandomPhase2Policy in
p2_only mode, OracleP1ThenRandomP2Policy in joint mode) run over every task and seed on both
systems. srelib runs the seed's own policy module with its imports pointed at srelib and grades
every proposed patch with its hidden tests (memoised); the reference runs its own
``training/policies.py`` through ``training/rollouts.run_episode`` with its trivial text
grader. Each system's first sweep (imports, srelib's memo cold) is reported apart; after it the
timed sweeps of the two systems alternate, and the medians over the repeats are reported, with
the median of the per-repeat ratios.

    python bench/bench_env.py --reference /tmp/reference --seeds 5 --repeats 5
    python bench/bench_env.py --profile 25      # cProfile one srelib sweep, top 25 functions
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path
from typing import Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Row, base_parser, load_seed_policies, median, profile_text, report  # noqa: E402

#: (label, policy class in the seed module, constructor kwargs, mode)
CONFIGS = (
    ("null", "NullPhase1Policy", {}, "joint"),
    ("random_p2", "RandomPhase2Policy", {"seed": 0}, "p2_only"),
    ("oracle_random", "OracleP1ThenRandomP2Policy", {"seed": 0}, "joint"),
)
TARGET_RATIO = 10.0  # issue 33: the environment at ten times the reference system

#: label -> (episodes, steps, seconds) for one sweep
Sweep = dict[str, tuple[int, int, float]]


def srelib_sweeper(seeds: int) -> Callable[[], Sweep]:
    """A function that runs every config x task x seed once on srelib and times each config."""
    import srelib
    from srelib.runners.rollout import run_episode

    policies = load_seed_policies()
    env = srelib.IncidentEnv()

    def run(policy, task: str, mode: str, seed: int) -> int:
        episode = run_episode(env, policy, task=task, mode=mode, seed=seed)
        if episode.error:
            raise RuntimeError(f"srelib episode {task}/{mode}/{seed} failed:\n{episode.error}")
        return sum(1 for record in episode.steps if record["step"] > 0)

    return _sweeper(policies, srelib.TASKS, seeds, run)


def reference_root(path: str | Path) -> Path:
    """The folder to put on sys.path: the one holding ``incident_env/`` (or its parent)."""
    path = Path(path).resolve()
    if (path / "incident_env").is_dir():
        return path
    if path.name == "incident_env" and path.is_dir():
        return path.parent
    raise ValueError(f"no incident_env package at {path} (give the folder that holds it)")


def reference_sweeper(path: str | Path, seeds: int) -> Callable[[], Sweep]:
    """The same sweep on the reference checkout at ``path``, with its own policies."""
    root = str(reference_root(path))
    if root not in sys.path:
        sys.path.insert(0, root)
    from incident_env import tasks
    from incident_env.server.incident_environment import IncidentEnvironment
    from incident_env.training import policies
    from incident_env.training.rollouts import run_episode

    env = IncidentEnvironment()

    def run(policy, task: str, mode: str, seed: int) -> int:
        result = run_episode(env, policy, task_name=task, mode=mode, seed=seed)
        return len(result["per_step_rewards"])

    return _sweeper(policies, tasks.TASK_NAMES, seeds, run)


def _sweeper(policies, tasks, seeds: int, run: Callable[..., int]) -> Callable[[], Sweep]:
    def sweep() -> Sweep:
        timings: Sweep = {}
        for label, cls, kwargs, mode in CONFIGS:
            policy = getattr(policies, cls)(**kwargs)
            episodes = steps = 0
            start = time.perf_counter()
            for task in tasks:
                for seed in range(seeds):
                    steps += run(policy, task, mode, seed)
                    episodes += 1
            timings[label] = (episodes, steps, time.perf_counter() - start)
        return timings

    return sweep


def totals(sweep: Sweep) -> tuple[float, float]:
    """(episodes/s, steps/s) of a whole sweep."""
    episodes = sum(e for e, _, _ in sweep.values())
    steps = sum(s for _, s, _ in sweep.values())
    seconds = sum(t for _, _, t in sweep.values())
    return episodes / seconds, steps / seconds


def measure(systems: dict[str, Callable[[], Sweep]], repeats: int) -> dict[str, list[Sweep]]:
    """Warm every system with one sweep (kept under "<name> first"), then alternate timed
    sweeps ``repeats`` times."""
    results: dict[str, list[Sweep]] = {f"{name} first": [sweep()]
                                       for name, sweep in systems.items()}
    results.update({name: [] for name in systems})
    names = list(systems)
    for repeat in range(repeats):
        for name in names if repeat % 2 == 0 else names[::-1]:
            gc.collect()
            results[name].append(systems[name]())
    return results


def rows_from(results: dict[str, list[Sweep]], seeds: int) -> list[Row]:
    rows = []
    note = f"{len(CONFIGS)} policies x all tasks x {seeds} seeds"
    for name in [n for n in results if n.endswith(" first")]:
        rows.append(Row("env", f"{name} sweep episodes/s", totals(results[name][0])[0], "ep/s",
                        note="memo cold, imports" if name.startswith("srelib") else "imports"))
    for name, sweeps in [(n, s) for n, s in results.items() if not n.endswith(" first")]:
        rates = [totals(s) for s in sweeps]
        rows.append(Row("env", f"{name} episodes/s", median(r[0] for r in rates), "ep/s",
                        note=note + (", test-graded, memo warmed" if name == "srelib" else "")))
        rows.append(Row("env", f"{name} steps/s", median(r[1] for r in rates), "steps/s"))
        for label, *_ in CONFIGS:
            rows.append(Row("env", f"{name} {label} episodes/s",
                            median(s[label][0] / s[label][2] for s in sweeps), "ep/s"))
    if {"srelib", "reference"} <= results.keys():
        ratios = [totals(mine)[0] / totals(theirs)[0]
                  for mine, theirs in zip(results["srelib"], results["reference"])]
        ratio = median(ratios)
        rows.append(Row("env", "srelib / reference episodes/s", ratio, "x",
                        f">= {TARGET_RATIO:g}x", ratio >= TARGET_RATIO,
                        note=f"median of {len(ratios)} interleaved pairs"))
    return rows


def profile_srelib(seeds: int, top: int) -> str:
    """cProfile one warmed srelib sweep: the ``top`` functions by own time."""
    sweep = srelib_sweeper(seeds)
    sweep()
    return profile_text(sweep, top)


def run(reference: str | None, seeds: int, repeats: int) -> list[Row]:
    systems = {"srelib": srelib_sweeper(seeds)}
    if reference:
        systems["reference"] = reference_sweeper(reference, seeds)
    return rows_from(measure(systems, repeats), seeds)


def main(argv: list[str] | None = None) -> list[Row]:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--reference", metavar="PATH",
                        help="folder holding the reference's incident_env package")
    parser.add_argument("--seeds", type=int, default=5, help="seeds per task and policy")
    parser.add_argument("--repeats", type=int, default=5, help="timed sweeps per system")
    parser.add_argument("--profile", type=int, metavar="TOP",
                        help="instead, cProfile one srelib sweep and print the TOP functions")
    args = parser.parse_args(argv)
    if args.profile:
        print(profile_srelib(args.seeds, args.profile))
        return []
    rows = run(args.reference, args.seeds, args.repeats)
    report(rows, args.json)
    return rows


if __name__ == "__main__":
    main()
