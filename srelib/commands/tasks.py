"""``srelib tasks``: list the tasks and pools (or the generated suite), check a scenario folder,
audit single-field tells, and build the public or a private keyed suite."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from srelib.commands.options import quoted


def cmd_tasks(args) -> int:
    """``srelib tasks``: the classic tasks and pools as tables, or the generated suite's counts."""
    if args.suite == "generated":
        from srelib.analysis.suite_tables import print_generated

        print_generated()
        return 0

    from srelib.env.tasks.pools import POOLS
    from srelib.env.tasks.lookup import get_scenario
    from srelib.env.simulation.scenarios import TASKS
    from srelib.analysis.stats import markdown_table

    tasks = [[t, s.severity, s.heldout, s.repo, ",".join(p for p in POOLS if t in POOLS[p].tasks),
              s.title] for t, s in ((t, get_scenario(t)) for t in TASKS)]
    pools = [[p, pool.split, pool.mode, len(pool.tasks), pool.description]
             for p, pool in POOLS.items()]
    print(markdown_table(["task", "severity", "held out", "repo", "pools", "title"], tasks))
    print()
    print(markdown_table(["pool", "split", "mode", "classic tasks", "description"], pools))
    return 0


def cmd_tasks_check(args) -> int:
    """``srelib tasks check PATH``: each problem of a scenario folder; 1 if there is one."""
    from srelib.env.grading.scenario_check import check_folder

    if not Path(args.path).is_dir():
        raise ValueError(f"{quoted(args.path)} is not a folder")
    problems = check_folder(args.path)
    for problem in problems:
        print(f"problem: {problem}")
    print(f"{args.path}: {len(problems)} problem(s)" if problems else f"{args.path}: ok")
    return 1 if problems else 0


def cmd_tasks_audit(args) -> int:
    """``srelib tasks audit``: the tell audit's table, then (unless ``--no-battery``) the
    shallow-agent battery's with the investigation gap; 1 if a single-field predictor is over
    its bar. The battery's verdicts are printed, not yet enforced: the current generator fails
    them (docs/phase1_investigation.md)."""
    from srelib.analysis.tell_audit import audit, failures, format_audit

    rows = audit(args.suite)
    print(format_audit(rows, only_failures=args.failures))
    found = failures(rows)
    print(f"\n{args.suite} suite: {len(rows)} predictors, {len(found)} over the bar "
          f"(held-out rate <= {min(r['bar'] for r in rows):.2f}..{max(r['bar'] for r in rows):.2f})")
    if not args.no_battery:
        _print_battery(args.suite, args.stride, args.failures)
    return 1 if found else 0


def _print_battery(suite: str, stride: int, only_failures: bool) -> None:
    """The shallow-agent battery's table on ``suite`` and the investigation gap."""
    from srelib.analysis import battery

    table = battery.run(suite, stride=stride)
    shown = [r for r in table if not r["passes"]] if only_failures else table
    print(f"\nshallow-agent battery ({suite}"
          + (f", every {stride}th task of each split" if suite == "generated" else
             ", leave-one-task-out") + "):\n")
    print(battery.format_battery(shown))
    beaten = sum(not r["passes"] for r in table)
    gap = battery.investigation_gap(suite, table, stride=stride)
    print(f"\nbattery: {len(table)} rows, {beaten} over a bar (reported, not enforced yet); "
          f"investigation gap (investigator culprit {gap['investigator']:.2f} minus best row "
          f"{gap['best_row']:.2f}) = {gap['gap']:+.2f}")


def cmd_tasks_build(args) -> int:
    """``srelib tasks build [--key FILE] [--shapes DIR] [--out DIR]``: the suite, built in a
    fresh process (the key is read once per process): the public one into the package, a
    private one into its folder with its own digests, audit and private shapes."""
    from srelib.env.tasks.surface import DIR_VARIABLE, KEY_VARIABLE, read_key_file

    env = dict(os.environ)
    key = args.key or env.get(KEY_VARIABLE)
    if args.shapes and not key:
        raise ValueError("--shapes adds modules to a private suite: give --key FILE too")
    if key:
        read_key_file(key)  # ValueError: unreadable or too short
        out = Path(args.out or env.get(DIR_VARIABLE) or key + ".suite")
        shapes = out / "shapes"
        if args.shapes:
            source = Path(args.shapes)
            if not source.is_dir():
                raise ValueError(f"--shapes {quoted(args.shapes)} is not a folder")
            shutil.rmtree(shapes, ignore_errors=True)
            shapes.mkdir(parents=True)
            for module in sorted(source.glob("*.py")):
                shutil.copy2(module, shapes / module.name)
        out.mkdir(parents=True, exist_ok=True)
        env.update({KEY_VARIABLE: str(Path(key).resolve()), DIR_VARIABLE: str(out.resolve())})
    else:
        env.pop(KEY_VARIABLE, None)
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "srelib.analysis.suite_build"], env=env)
    if run.returncode != 0:
        return run.returncode
    print(f"built in {time.perf_counter() - start:.0f} s")
    return 0
