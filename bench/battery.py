"""The shallow-agent battery in full: every row on the generated suite (train -> held-out) and
the classic ten (leave-one-task-out), as markdown.

    python bench/battery.py [--stride N] [--suite generated|classic|both]

``--stride N`` reads every N-th generated task of each split (1: all of them).
"""

from __future__ import annotations

import argparse
import time

from srelib.analysis import battery


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stride", type=int, default=1)
    parser.add_argument("--suite", choices=("generated", "classic", "both"), default="both")
    parser.add_argument("--gap", action="store_true", help="also play the investigator")
    args = parser.parse_args()
    for suite in (("generated", "classic") if args.suite == "both" else (args.suite,)):
        start = time.perf_counter()
        rows = battery.run(suite, stride=args.stride)
        print(f"## {suite}" + (f" (every {args.stride}th task of each split)" if suite == "generated" else
                               " (leave-one-task-out)") + "\n")
        print(battery.format_battery(rows))
        if args.gap:
            gap = battery.investigation_gap(suite, rows, stride=args.stride)
            print(f"\ninvestigator culprit {gap['investigator']:.2f}, class {gap['class']:.2f}, "
                  f"suite mean {gap['mean']:.3f}; best battery row {gap['best_row']:.2f}; "
                  f"gap {gap['gap']:+.2f}")
        print(f"\n({time.perf_counter() - start:.0f} s)\n")


if __name__ == "__main__":
    main()
