"""The ceiling that moves: the aimed repairer's oracle-over-null gain and the repair ladder.

Runs :func:`srelib.analysis.ceiling.ceiling_episodes` with AimedRepairPhase2Policy (oracle and
null handoffs) on the classic tasks (``--seeds`` seeds) and on every ``--step``-th generated
task of each split (one seed), prints the paired oracle-minus-null gain per suite
(:func:`srelib.analysis.ceiling.handoff_gain`), then the repair ladder of each repairer
(``--ladders``) on the same tasks (:func:`srelib.analysis.ceiling.summarize_ladder`).

    python bench/bench_ceiling.py --seeds 4 --step 1
    python bench/bench_ceiling.py --seeds 2 --step 10 --ladders aimed
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path

import pandas as pd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4, help="seeds per classic task")
    parser.add_argument("--step", type=int, default=1, help="every step-th generated task")
    parser.add_argument("--ladders", nargs="*", default=["partial_revert", "aimed"])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--json", default=None, help="also write the tables as JSON here")
    args = parser.parse_args()

    import srelib
    from srelib.analysis.ceiling import (ceiling_episodes, handoff_gain, ladder_episodes,
                                         summarize_ladder)
    from srelib.analysis.stats import to_markdown
    from srelib.env.tasks.catalog import SPLITS, list_tasks
    from srelib.policies import AimedRepairPhase2Policy

    suites = [(list(srelib.TASKS), args.seeds)] + \
        [(list_tasks("generated", split)[::args.step], 1) for split in SPLITS]
    started = time.perf_counter()
    ceiling = pd.concat([ceiling_episodes(functools.partial(AimedRepairPhase2Policy), None, tasks,
                                          seeds, workers=args.workers) for tasks, seeds in suites],
                        ignore_index=True)
    print("AimedRepairPhase2Policy, repair after the oracle and the null handoff, paired on "
          "task and seed:\n")
    gain = handoff_gain(ceiling)
    print(to_markdown(gain.round(3), index=False))
    tables = {"gain": gain.to_dict(orient="records")}
    for repairer in args.ladders:
        ladder = pd.concat([ladder_episodes(tasks, seeds, repairer=repairer, workers=args.workers)
                            for tasks, seeds in suites], ignore_index=True)
        summary = summarize_ladder(ladder)[["suite", "policy", "n", "full", "full_low",
                                            "full_high", "repair"]]
        print(f"\nrepair ladder climbed with {repairer!r}:\n")
        print(to_markdown(summary.round(3), index=False))
        tables[f"ladder:{repairer}"] = summary.to_dict(orient="records")
    print(f"\n{time.perf_counter() - started:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(tables, indent=1) + "\n")


if __name__ == "__main__":
    main()
