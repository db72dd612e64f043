"""The shallow-agent battery in full: every row on the generated suite (train -> held-out) and
the classic ten (leave-one-task-out), as markdown.

    python bench/battery.py [--stride N] [--suite generated|classic|both] [--gap] [--json PATH]

``--stride N`` reads every N-th generated task of each split (1: all of them); ``--gap`` also
plays the investigator on the same test tasks and prints the investigation gap.
"""

from __future__ import annotations

import argparse
import json
import time

from srelib.analysis import battery


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stride", type=int, default=1)
    parser.add_argument("--suite", choices=("generated", "classic", "both"), default="both")
    parser.add_argument("--gap", action="store_true", help="also play the investigator")
    parser.add_argument("--json", help="also write the rows (and gaps) as JSON to this path")
    args = parser.parse_args()
    if args.stride < 1:
        parser.error(f"--stride must be at least 1, got {args.stride}")
    found: dict = {}
    for suite in (("generated", "classic") if args.suite == "both" else (args.suite,)):
        start = time.perf_counter()
        rows = battery.run(suite, stride=args.stride)
        found[suite] = {"rows": rows}
        print(f"## {suite}" + (f" (every {args.stride}th task of each split)" if suite == "generated"
                               else " (leave-one-task-out)") + "\n")
        print(battery.format_battery(rows))
        if args.gap:
            gap = found[suite]["gap"] = battery.investigation_gap(suite, rows, stride=args.stride)
            print(f"\ninvestigator culprit {gap['investigator']:.2f}, class {gap['class']:.2f}, "
                  f"suite mean {gap['mean']:.3f}; best battery row {gap['best_row']:.2f}; "
                  f"gap {gap['gap']:+.2f}")
        print(f"\n({time.perf_counter() - start:.0f} s)\n", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(found, out, indent=1)


if __name__ == "__main__":
    main()
