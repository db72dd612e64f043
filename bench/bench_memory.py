"""Memory: RSS growth over many episodes in one process.

The seed's OracleP1ThenRandomP2Policy runs joint episodes, cycling over every task with a new
seed each time, on one environment; each episode's record is dropped once it is finished, as a
sweep that streams results to disk would. RSS is read after a warm-up and again at the end.

    python bench/bench_memory.py --episodes 10000 --warmup 500
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Row, base_parser, load_seed_policies, report, rss_mb  # noqa: E402

TARGET_MB = 50.0


def run(episodes: int, warmup: int) -> list[Row]:
    if not 0 < warmup < episodes:
        raise ValueError(f"need 0 < warmup < episodes, got warmup={warmup}, episodes={episodes}")
    import srelib
    from srelib.runners.rollout import run_episode

    policy = load_seed_policies().OracleP1ThenRandomP2Policy(seed=0)
    env = srelib.IncidentEnv()
    tasks = srelib.TASKS
    readings = {}
    for n in range(episodes):
        episode = run_episode(env, policy, task=tasks[n % len(tasks)], mode="joint", seed=n)
        if episode.error:
            raise RuntimeError(f"episode {n} failed:\n{episode.error}")
        if n + 1 in (warmup, episodes):
            gc.collect()
            readings[n + 1] = rss_mb()
    growth = readings[episodes] - readings[warmup]
    return [
        Row("memory", f"RSS after {warmup} episodes", readings[warmup], "MiB"),
        Row("memory", f"RSS after {episodes} episodes", readings[episodes], "MiB"),
        Row("memory", f"RSS growth, episodes {warmup}..{episodes}", growth, "MiB",
            f"< {TARGET_MB:g} MiB", growth < TARGET_MB),
    ]


def main(argv: list[str] | None = None) -> list[Row]:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--warmup", type=int, default=500)
    args = parser.parse_args(argv)
    rows = run(args.episodes, args.warmup)
    report(rows, args.json)
    return rows


if __name__ == "__main__":
    main()
