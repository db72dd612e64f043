"""The scripted phase-1 baselines on held-out generated tasks, with diagnosis accuracy.

    python bench/phase1_baselines.py [--stride N] [--seeds K]

Plays ``investigator-partial-revert``, ``heuristic-partial-revert`` and ``reference`` on every
N-th held-out task of the generated suite in pool D and prints, per policy, the suite mean, the
share of tasks over 0.35 and :func:`srelib.results.localisation.diagnosis_summary`.
"""

from __future__ import annotations

import argparse
import time

import srelib
from srelib import scripted_policy
from srelib.analysis.stats import to_markdown
from srelib.results.localisation import diagnosis_summary

POLICIES = ("investigator-partial-revert", "heuristic-partial-revert", "reference")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stride", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=1)
    args = parser.parse_args()
    if args.stride < 1 or args.seeds < 1:
        parser.error("--stride and --seeds must be at least 1")
    held = sorted(srelib.list_tasks("generated", "heldout"))[::args.stride]
    start = time.perf_counter()
    frame = srelib.evaluate({n: scripted_policy(n) for n in POLICIES}, tasks=held, pools=["D"],
                            seeds=args.seeds, progress=False)
    table = diagnosis_summary(frame, POLICIES).set_index("policy")
    per_task = frame.groupby(["policy", "task"])["final"].mean()
    table.insert(1, "suite mean", per_task.groupby("policy").mean())
    table.insert(2, "tasks over 0.35", per_task.gt(0.35).groupby("policy").mean())
    print(f"{len(held)} held-out generated tasks (every {args.stride}th), pool D, "
          f"{args.seeds} seed(s), {time.perf_counter() - start:.0f} s\n")
    print(to_markdown(table.reset_index(), index=False))


if __name__ == "__main__":
    main()
