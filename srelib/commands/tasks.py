"""``srelib tasks``: list the tasks and pools (or the generated suite), check a scenario folder,
and audit single-field tells."""

from __future__ import annotations

from pathlib import Path

from srelib.commands.options import quoted


def cmd_tasks(args) -> int:
    """``srelib tasks``: the classic tasks and pools as tables, or the generated suite's counts."""
    if args.suite == "generated":
        from srelib.analysis.suite_tables import print_generated

        print_generated()
        return 0

    from srelib.env.pools import POOLS
    from srelib.env.lookup import get_scenario
    from srelib.env.scenarios import TASKS
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
    from srelib.env.scenario_check import check_folder

    if not Path(args.path).is_dir():
        raise ValueError(f"{quoted(args.path)} is not a folder")
    problems = check_folder(args.path)
    for problem in problems:
        print(f"problem: {problem}")
    print(f"{args.path}: {len(problems)} problem(s)" if problems else f"{args.path}: ok")
    return 1 if problems else 0


def cmd_tasks_audit(args) -> int:
    """``srelib tasks audit``: the tell audit's table; 1 if a predictor is over the
    bar."""
    from srelib.analysis.tell_audit import audit, failures, format_audit

    rows = audit(args.suite)
    print(format_audit(rows, only_failures=args.failures))
    found = failures(rows)
    print(f"\n{args.suite} suite: {len(rows)} predictors, {len(found)} over the bar "
          f"(held-out rate <= {min(r['bar'] for r in rows):.2f}..{max(r['bar'] for r in rows):.2f})")
    return 1 if found else 0
