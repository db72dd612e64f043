"""The grid a run's plan must be: what one :func:`srelib.evaluate` call plans.

``evaluate`` plans every policy x task x pool x seed, each pool keeping the tasks of its split
and playing its own mode, the seeds a count (``0..N-1``) or a list. So a plan that is not the
full product of its own policies, tasks, pools and seeds was not made by ``evaluate``: a
best-of-N cherry-pick (a different seed kept per cell), a dropped episode, a task kept in one
pool and not another. Seeds that are not ``0..N-1`` are legal but chosen by someone, so they are
reported as a claim. A task list that is not a whole suite or split srelib names is legal too
(``evaluate(tasks=[...])``), but a reader must see that the set was chosen: :func:`hand_picked`
names it, and :mod:`srelib.results.settings` shows it wherever the run's scores are shown. A task planned under its name, or under two names (its id and its
public name), is a problem: ``evaluate`` plans each task once, by its opaque id.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable


def task_shown(task: Any) -> Any:
    """A task as tables show it (its public name; as given when it names no task)."""
    from srelib.env.tasks.ids import public_name

    try:
        return public_name(str(task)) if isinstance(task, str) else task
    except (ValueError, TypeError):
        return task


def episode_name(key: tuple) -> str:
    """An episode key with its task as tables show it (its public name)."""
    key = tuple(key)
    return repr((key[0], task_shown(key[1]), *key[2:]) if len(key) > 1 else key)


def _name_problems(keys: list[tuple]) -> list[str]:
    """Tasks planned otherwise than ``evaluate`` plans them: under several names (one task
    counted as several), or under a name instead of its opaque id."""
    from srelib.env.tasks.ids import task_id

    said: dict[str, set] = {}
    for k in keys:
        try:
            said.setdefault(task_id(k[1]), set()).add(k[1])
        except (ValueError, TypeError):  # an unknown task: the replay names it
            pass
    problems = []
    for task, names in sorted(said.items()):
        if len(names) > 1:
            problems.append(f"task {task_shown(task)!r} is planned under "
                            f"{len(names)} names {sorted(names)}: one task counted as several")
        elif names != {task}:
            problems.append(f"task {sorted(names)[0]!r} is planned by its name, not its id "
                            f"{task!r}: evaluate plans every task by its id")
    return problems


def _named_selections() -> list[set[str]]:
    """The task sets a task spec names: each suite's, whole and per split."""
    from srelib.env.tasks.catalog import SPLITS, SUITES, list_tasks

    return [set(list_tasks(suite, split)) for suite in SUITES for split in (None, *SPLITS)]


def hand_picked(keys: Iterable[tuple]) -> str | None:
    """A sentence naming the planned tasks when, in some pool, they are not a union of whole
    suites or splits that a task spec names (``"classic"``, ``"generated:train"``): the task
    list was chosen by someone. None when every pool plays whole ones (a pool that holds only
    some of a suite's splits, as pool D the held-out ones, plays its whole splits).

    Args:
        keys: the plan's episode keys ``(policy, task, pool, mode, seed)``.

    Returns:
        The notice, or None.
    """
    from srelib.env.tasks.ids import resolve

    by_pool: dict = {}
    try:
        for k in keys:
            if isinstance(k, (list, tuple)) and len(k) == 5 and isinstance(k[1], str):
                by_pool.setdefault(k[2], set()).add(resolve(k[1]))  # plans hold opaque ids
        selections = _named_selections()
    except (ValueError, KeyError):  # an unknown task or suite: the replay names it
        return None
    picked: set[str] = set()
    for tasks in by_pool.values():
        covered = set().union(*(s for s in selections if s and s <= tasks))
        if covered != tasks:
            picked |= tasks
    if not picked:
        return None
    names = sorted({str(task_shown(t)) for t in picked})
    shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
    return (f"tasks hand-picked: {shown} (not a whole suite or split srelib names: that the set "
            "was chosen before any episode ran is the run's claim)")


def _in_pool(task: str, pool: str | None) -> bool:
    from srelib.env.tasks.pools import POOLS

    try:
        return pool is None or POOLS[pool].accepts(task)
    except (ValueError, KeyError, TypeError):  # an unknown task or pool: the replay names it
        return True


def _seed_text(seeds: list[int]) -> str:
    if seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}..{seeds[-1]}"
    return repr(seeds)


def grid_findings(planned: Iterable[tuple]) -> tuple[list[str], list[str]]:
    """``(problems, claims)`` of a planned grid (episode keys ``(policy, task, pool, mode,
    seed)``): each key the product of the plan's policies, tasks, pools and seeds holds but the
    plan lacks is a problem naming that episode, as is a key planned twice; seeds other than
    ``0..N-1`` are a claim.

    Args:
        planned: the plan's episode keys.

    Returns:
        Two lists of sentences: what no ``evaluate`` call plans, and what the run claims.
    """
    keys = [tuple(k) for k in planned]
    if not keys:
        return ["the plan holds no episodes"], []
    if any(len(k) != 5 for k in keys):
        return ["the plan holds keys that are not (policy, task, pool, mode, seed)"], []
    counts = Counter(keys)
    problems = _name_problems(keys)
    problems += [f"{episode_name(k)}: planned {n} times" for k, n in sorted(counts.items(), key=repr)
                 if n > 1]
    policies = sorted({k[0] for k in keys}, key=repr)
    tasks = sorted({k[1] for k in keys}, key=repr)
    pools = sorted({(k[2], k[3]) for k in keys}, key=repr)  # a pool plays one mode
    try:
        seeds = sorted({int(k[4]) for k in keys})
    except (TypeError, ValueError):
        return [*problems, "the plan holds seeds that are not whole numbers"], []
    cells = [(t, p, m) for t in tasks for p, m in pools if _in_pool(t, p)]
    grid = {(policy, *cell, seed) for policy in policies for cell in cells for seed in seeds}
    shape = (f"{len(policies)} policies x {len(tasks)} tasks x {len(pools)} pools x seeds "
             f"{_seed_text(seeds)}")
    problems += [f"{episode_name(k)}: the plan's grid ({shape}) holds it but the plan does not: "
                 "no evaluate call plans this run" for k in sorted(grid - set(keys), key=repr)]
    problems += [f"{episode_name(k)}: planned in pool {k[2]}, whose split does not hold its task"
                 for k in sorted(set(keys) - grid, key=repr)]
    claims = [] if seeds == list(range(len(seeds))) else [
        f"the seeds {_seed_text(seeds)} are not 0..{len(seeds) - 1}: that they were fixed "
        "before any episode ran is the run's claim"]
    return problems, claims
