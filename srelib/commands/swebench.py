"""``srelib swebench``: export the train tasks as a SWE-bench dataset, and grade SWE-bench
predictions in srelib's sandbox."""

from __future__ import annotations

import sys
from pathlib import Path

from srelib.commands.options import output_dir, quoted


def cmd_swebench_export(args) -> int:
    """``srelib swebench export``: the train tasks as a SWE-bench dataset and repositories."""
    from srelib.integrations.swebench import DATASET_FILE, export_dataset

    out = output_dir(args.out, "OUT")
    instances = export_dataset(out, suite=args.suite, seed=args.seed)
    print(f"{len(instances)} instances in {out / DATASET_FILE}; repositories in {out / 'repos'}")
    return 0


def cmd_swebench_grade(args) -> int:
    """``srelib swebench grade``: grade predictions; 1 if a line had a problem."""
    from srelib.integrations.swebench import PROBLEMS_FILE, grade_predictions

    if not Path(args.predictions).is_file():
        raise ValueError(f"{quoted(args.predictions)} is not a file")
    result = grade_predictions(args.predictions, output_dir(args.out, "--out"))
    for problem in result["problems"]:
        print(f"line {problem['line']}: {problem['error']}", file=sys.stderr)
    for model, s in result["summaries"].items():
        print(f"{model}: {s['resolved_instances']} of {s['submitted_instances']} resolved, "
              f"{s['empty_patch_instances']} empty, {s['error_instances']} errors")
    print(f"reports in {args.out} ({len(result['problems'])} problem(s) in {PROBLEMS_FILE})")
    return 1 if result["problems"] else 0
