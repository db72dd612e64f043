"""The oracle-P1 ceiling: how much a perfect phase 1 helps a phase-2 policy.

:func:`ceiling_table` runs one phase-2 policy after three kinds of handoff (the oracle belief,
the null policy's empty one, and each given phase-1 policy's own) and reports the repair under
each with paired bootstrap CIs; :func:`measure_null_context` gives the null-handoff repair that
``r_cross`` needs.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Iterable, Mapping, Sequence

from srelib.policies.specs import instantiate
from srelib.results import KEY_COLUMNS
from srelib.rollout import JOINT_POOLS, evaluate


def measure_null_context(phase2_policy, tasks: str | Sequence[str] = "all",
                         seeds: int | Iterable[int] = 20, **evaluate_kwargs) -> dict[str, float]:
    """Per task, the mean repair ``phase2_policy`` reaches after NullPhase1Policy's empty handoff.

    Episodes run in joint mode (pool C for train tasks, D for held-out ones), so the empty
    belief is what phase 2 really gets. The result is the ``null_repair`` that r_cross needs.
    """
    evaluate_kwargs.setdefault("progress", False)
    frame = evaluate({"null": null_composite(phase2_policy)}, tasks=tasks, pools=JOINT_POOLS,
                     seeds=seeds, **evaluate_kwargs)
    return {task: float(group.mean()) for task, group in frame.groupby("task")["repair"]}


def ceiling_episodes(phase2_policy, phase1_policies: Mapping[str, Any] | None = None,
                     tasks: str | Sequence[str] = "all", seeds: int | Iterable[int] = 20,
                     **evaluate_kwargs):
    """The episodes behind :func:`ceiling_table`, one row each, ``policy`` naming the handoff.

    Handoffs: ``oracle`` (pool B; held-out tasks, which pool B lacks, get the same oracle
    handoff through ``mode="p2_only"``), ``null`` (NullPhase1Policy, joint, pools C/D), and each
    of ``phase1_policies`` joined to ``phase2_policy`` (its own handoff, joint).
    """
    import pandas as pd

    from srelib.env.catalog import resolve_tasks
    from srelib.env.scenarios import TASKS

    evaluate_kwargs.setdefault("progress", False)
    wanted = list(TASKS) if tasks == "all" else resolve_tasks(tasks)
    seeds = seeds if isinstance(seeds, int) else list(seeds)
    in_b = _pool_task_set("B", wanted)
    runs = []
    for pool, mode, pool_tasks in (("B", None, [t for t in wanted if t in in_b]),
                                   (None, "p2_only", [t for t in wanted if t not in in_b])):
        if pool_tasks:
            runs.append(evaluate({"oracle": phase2_policy}, tasks=pool_tasks, pools=[pool],
                                 seeds=seeds, mode=mode, **evaluate_kwargs))
    composed = {"null": null_composite(phase2_policy)}
    for name, phase1 in (phase1_policies or {}).items():
        if name in composed or name == "oracle":
            raise ValueError(f"phase-1 policy name {name!r} is reserved; use another name")
        composed[name] = functools.partial(_compose, phase1, phase2_policy)
    runs.append(evaluate(composed, tasks=wanted, pools=JOINT_POOLS, seeds=seeds,
                         **evaluate_kwargs))
    frame = pd.concat(runs, ignore_index=True)
    return frame.sort_values(list(KEY_COLUMNS), na_position="first", kind="stable",
                             ignore_index=True)


def summarize_ceiling(frame, *, confidence: float = 0.95, seed: int = 0):
    """Per task and handoff: mean repair with a CI, and the paired gap to the oracle handoff.

    ``frame`` is :func:`ceiling_episodes` output. Columns: task, handoff, n, repair, ci_low,
    ci_high, gap (oracle - this handoff, paired on seed), gap_low, gap_high; the gap columns are
    NaN on the oracle rows. Tasks come in ``TASKS`` order; handoffs oracle first, then null,
    then the phase-1 policies.
    """
    import pandas as pd

    from srelib.stats import bootstrap_ci

    names = list(dict.fromkeys(frame["policy"]))
    if "oracle" not in names:
        raise ValueError(f"frame has no 'oracle' episodes; its policies: {names}")
    handoffs = ["oracle", *(["null"] if "null" in names else []),
                *[n for n in names if n not in ("oracle", "null")]]
    from srelib.env.scenarios import TASKS

    order = {t: i for i, t in enumerate(TASKS)}
    rows = []
    for task in sorted(set(frame["task"]), key=lambda t: order.get(t, len(order))):
        repair = {h: frame[(frame.task == task) & (frame.policy == h)].set_index("seed")["repair"]
                  for h in handoffs}
        for handoff in handoffs:
            mean, low, high = bootstrap_ci(repair[handoff], confidence=confidence, seed=seed)
            gap = (math.nan,) * 3
            if handoff != "oracle":
                gap = bootstrap_ci((repair["oracle"] - repair[handoff]).dropna(),
                                   confidence=confidence, seed=seed)
            rows.append({"task": task, "handoff": handoff,
                         "n": int(repair[handoff].notna().sum()), "repair": mean, "ci_low": low,
                         "ci_high": high, "gap": gap[0], "gap_low": gap[1], "gap_high": gap[2]})
    return pd.DataFrame(rows)


def ceiling_table(phase2_policy, phase1_policies: Mapping[str, Any] | None = None,
                  tasks: str | Sequence[str] = "all", seeds: int | Iterable[int] = 20, *,
                  confidence: float = 0.95, seed: int = 0, **evaluate_kwargs):
    """How much a perfect phase 1 helps ``phase2_policy``: repair per task under each handoff.

    Runs :func:`ceiling_episodes` (oracle, null and each phase-1 policy's own handoff) and
    summarises it with :func:`summarize_ceiling`; gaps are oracle minus each handoff, with
    paired bootstrap CIs over seeds. Extra keyword arguments go to :func:`evaluate`.
    """
    frame = ceiling_episodes(phase2_policy, phase1_policies, tasks, seeds, **evaluate_kwargs)
    return summarize_ceiling(frame, confidence=confidence, seed=seed)


def _compose(phase1_spec: Any, phase2_spec: Any):
    from srelib.policies import CompositePolicy

    return CompositePolicy(instantiate(phase1_spec, copy_instance=True),
                           instantiate(phase2_spec, copy_instance=True))


def null_composite(phase2_policy: Any) -> functools.partial:
    """A factory of NullPhase1Policy joined to ``phase2_policy``: the empty-handoff arm."""
    from srelib.policies import NullPhase1Policy

    return functools.partial(_compose, NullPhase1Policy, phase2_policy)


def _pool_task_set(name: str, tasks: Sequence[str]) -> set[str]:
    from srelib.env.pools import POOLS

    return {t for t in tasks if POOLS[name].accepts(t)}
