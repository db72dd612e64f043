"""The grid a run's plan must be: what one :func:`srelib.evaluate` call plans.

``evaluate`` plans every policy x task x pool x seed, each pool keeping the tasks of its split
and playing its own mode, the seeds a count (``0..N-1``) or a list. So a plan that is not the
full product of its own policies, tasks, pools and seeds was not made by ``evaluate``: a
best-of-N cherry-pick (a different seed kept per cell), a dropped episode, a task kept in one
pool and not another. Seeds that are not ``0..N-1`` are legal but chosen by someone, so they are
reported as a claim.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable


def episode_name(key: tuple) -> str:
    """An episode key with its task as tables show it (its public name)."""
    from srelib.env.task_ids import public_name

    try:
        key = (key[0], public_name(key[1]), *key[2:])
    except (ValueError, TypeError, IndexError):
        pass
    return repr(tuple(key))


def _in_pool(task: str, pool: str | None) -> bool:
    from srelib.env.pools import POOLS

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
    problems = [f"{episode_name(k)}: planned {n} times" for k, n in sorted(counts.items(), key=repr)
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
