"""The oracle-P1 ceiling and the repair ladder: how much phase-2 repair each piece of the answer buys.

:func:`ceiling_table` runs one phase-2 policy after three kinds of handoff (the oracle belief,
the null policy's empty one, and each given phase-1 policy's own) and reports the repair under
each with paired bootstrap CIs; :func:`measure_null_context` gives the null-handoff repair that
``r_cross`` needs. :func:`ladder_episodes` and :func:`summarize_ladder` climb the repair
ladder (:class:`srelib.policies.LadderPhase2Policy`: the oracle handoff, then the bad commit, the
bad file, the bad function, the reference patch) on each suite, next to real policies.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Iterable, Mapping, Sequence

from srelib.extras import require
from srelib.policies.base import compose
from srelib.results.store import KEY_COLUMNS
from srelib.runners.rollout import JOINT_POOLS, evaluate


def measure_null_context(phase2_policy, tasks: str | Sequence[str] = "all",
                         seeds: int | Iterable[int] = 20, **evaluate_kwargs) -> dict[str, float]:
    """Per task, the mean repair ``phase2_policy`` reaches after NullPhase1Policy's empty handoff.

    Episodes run in joint mode (pool C for train tasks, D for held-out ones), so the empty
    belief is what phase 2 really gets.

    Args:
        phase2_policy: the phase-2 policy (or factory) under study.
        tasks: ``"all"`` or a list of classic tasks.
        seeds: a count N or the seeds themselves.
        **evaluate_kwargs: passed to :func:`srelib.evaluate`.

    Returns:
        Task -> mean repair: the ``null_repair`` that ``r_cross`` needs.
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

    Args:
        phase2_policy: the phase-2 policy (or factory) under study.
        phase1_policies: a handoff name to a phase-1 policy (or factory).
        tasks: ``"all"`` or a list of classic tasks.
        seeds: a count N or the seeds themselves.
        **evaluate_kwargs: passed to :func:`srelib.evaluate`.

    Returns:
        A results frame, one row per episode.

    Raises:
        ValueError: a phase-1 policy named ``oracle`` or ``null`` (the handoffs' own names).
    """
    require("pandas", "srelib.analysis.ceiling")
    import pandas as pd

    from srelib.env.tasks.catalog import expand_tasks

    evaluate_kwargs.setdefault("progress", False)
    wanted = expand_tasks(tasks)
    seeds = seeds if isinstance(seeds, int) else list(seeds)
    runs = [oracle_handoff_episodes({"oracle": phase2_policy}, wanted, seeds, **evaluate_kwargs)]
    composed = {"null": null_composite(phase2_policy)}
    for name, phase1 in (phase1_policies or {}).items():
        if name in composed or name == "oracle":
            raise ValueError(f"phase-1 policy name {name!r} is reserved; use another name")
        composed[name] = functools.partial(compose, phase1, phase2_policy)
    runs.append(evaluate(composed, tasks=wanted, pools=JOINT_POOLS, seeds=seeds,
                         **evaluate_kwargs))
    frame = pd.concat(runs, ignore_index=True)
    return frame.sort_values(list(KEY_COLUMNS), na_position="first", kind="stable",
                             ignore_index=True)


def oracle_handoff_episodes(policies: Mapping[str, Any], tasks: Sequence[str],
                            seeds: int | Iterable[int], **evaluate_kwargs):
    """Each phase-2 policy after the oracle handoff: pool B where it holds the task, else (the
    held-out and generated tasks pool B lacks) the same handoff through ``mode="p2_only"``."""
    require("pandas", "srelib.analysis.ceiling")
    import pandas as pd

    in_b = _pool_task_set("B", tasks)
    runs = []
    for pool, mode, pool_tasks in (("B", None, [t for t in tasks if t in in_b]),
                                   (None, "p2_only", [t for t in tasks if t not in in_b])):
        if pool_tasks:
            runs.append(evaluate(policies, tasks=pool_tasks, pools=[pool], seeds=seeds,
                                 mode=mode, **evaluate_kwargs))
    return pd.concat(runs, ignore_index=True)


def summarize_ceiling(frame, *, confidence: float = 0.95, seed: int = 0):
    """Per task and handoff: mean repair with a CI, and the paired gap to the oracle handoff.

    Tasks come in ``TASKS`` order; handoffs oracle first, then null, then the phase-1 policies.

    Args:
        frame: :func:`ceiling_episodes` output.
        confidence: the level of the CIs.
        seed: the bootstrap's seed.

    Returns:
        A DataFrame with columns task, handoff, n, repair, ci_low, ci_high, gap (oracle - this
        handoff, paired on seed), gap_low, gap_high; the gap columns are NaN on the oracle rows.

    Raises:
        ValueError: ``frame`` holds no ``oracle`` episodes.
    """
    require("pandas", "srelib.analysis.ceiling")
    import pandas as pd

    from srelib.analysis.stats import bootstrap_ci

    names = list(dict.fromkeys(frame["policy"]))
    if "oracle" not in names:
        raise ValueError(f"frame has no 'oracle' episodes; its policies: {names}")
    handoffs = ["oracle", *(["null"] if "null" in names else []),
                *[n for n in names if n not in ("oracle", "null")]]
    from srelib.env.simulation.scenarios import TASKS

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
    paired bootstrap CIs over seeds.

    Args:
        phase2_policy: the phase-2 policy (or factory) under study.
        phase1_policies: a handoff name to a phase-1 policy (or factory).
        tasks: ``"all"`` or a list of classic tasks.
        seeds: a count N or the seeds themselves.
        confidence: the level of the CIs.
        seed: the bootstrap's seed.
        **evaluate_kwargs: passed to :func:`srelib.evaluate`.

    Returns:
        The :func:`summarize_ceiling` table.
    """
    frame = ceiling_episodes(phase2_policy, phase1_policies, tasks, seeds, **evaluate_kwargs)
    return summarize_ceiling(frame, confidence=confidence, seed=seed)


def ladder_episodes(tasks: str | Sequence[str] = "all", seeds: int | Iterable[int] = 20, *,
                    real: Mapping[str, Any] | None = None, joint: Mapping[str, Any] | None = None,
                    repairer: str | type = "aimed", rungs: bool = True, **evaluate_kwargs):
    """The episodes of the repair ladder on ``tasks``, one row each.

    ``repairer`` is the repair the rungs climb with: ``"aimed"``
    (:class:`srelib.policies.AimedLadderPhase2Policy`, which aims its edit with each piece of
    the answer), ``"partial_revert"`` (:class:`srelib.policies.LadderPhase2Policy`) or a
    class built as ``cls(rung)``. Every rung of :data:`srelib.policies.scripted.repair.RUNGS`
    (policy ``rung:<name>``) and every
    phase-2 policy of ``real`` play after the oracle handoff (:func:`oracle_handoff_episodes`),
    the rungs only when ``rungs`` is true; the policies of ``joint`` play both phases themselves (pool C for train tasks, D for
    held-out ones). A ``suite`` column names each task's suite and split
    (``classic:train``, ``generated:heldout``, ...).
    """
    require("pandas", "srelib.analysis.ceiling")
    import pandas as pd

    from srelib.env.tasks.catalog import expand_tasks, split_of, suite_of
    from srelib.policies.scripted.repair import RUNGS

    evaluate_kwargs.setdefault("progress", False)
    wanted = expand_tasks(tasks)
    seeds = seeds if isinstance(seeds, int) else list(seeds)
    ladder = ladder_class(repairer)
    ladder_rungs = {f"rung:{r}": functools.partial(ladder, r) for r in RUNGS}
    clash = set(ladder_rungs) & (set(real or {}) | set(joint or {}))
    if clash:
        raise ValueError(f"policy names {sorted(clash)} are the ladder's; use other names")
    handed = {**(ladder_rungs if rungs else {}), **(real or {})}
    if not handed and not joint:
        raise ValueError("nothing to play: no rungs, no real and no joint policy")
    runs = [oracle_handoff_episodes(handed, wanted, seeds, **evaluate_kwargs)] if handed else []
    if joint:
        runs.append(evaluate(dict(joint), tasks=wanted, pools=JOINT_POOLS, seeds=seeds,
                             **evaluate_kwargs))
    frame = pd.concat(runs, ignore_index=True)
    frame.insert(0, "suite", [f"{suite_of(t)}:{split_of(t)}" for t in frame["task"]])
    return frame.sort_values(list(KEY_COLUMNS), na_position="first", kind="stable",
                             ignore_index=True)


def ladder_class(repairer: str | type) -> type:
    """The ladder policy class for ``repairer`` (see :func:`ladder_episodes`).

    Raises:
        ValueError: ``repairer`` is a name that is not a ladder's.
    """
    if isinstance(repairer, type):
        return repairer
    from srelib.policies import AimedLadderPhase2Policy, LadderPhase2Policy

    ladders = {"aimed": AimedLadderPhase2Policy, "partial_revert": LadderPhase2Policy}
    if repairer not in ladders:
        raise ValueError(f"unknown ladder repairer {repairer!r}; valid: {', '.join(ladders)}")
    return ladders[repairer]


def suite_ladder(seeds: int | Iterable[int] = 20, generated_tasks: int | None = None, *,
                 real: Mapping[str, Any] | None = None, joint: Mapping[str, Any] | None = None,
                 **evaluate_kwargs):
    """:func:`ladder_episodes` on both suites: every classic task with ``seeds``, and each
    generated split (train, held-out) with one seed per task, its ``generated_tasks`` evenly
    spaced tasks (default all). Extra keyword arguments (``repairer`` among them) go to
    :func:`ladder_episodes`."""
    require("pandas", "srelib.analysis.ceiling")
    import pandas as pd

    from srelib.env.tasks.catalog import SPLITS, list_tasks

    if generated_tasks is not None and (isinstance(generated_tasks, bool) or
                                        not isinstance(generated_tasks, int) or generated_tasks < 1):
        raise ValueError(f"generated_tasks must be a whole number >= 1 or None; got {generated_tasks!r}")
    runs = [ladder_episodes("all", seeds, real=real, joint=joint, **evaluate_kwargs)]
    for split in SPLITS:
        tasks = list_tasks("generated", split)
        if generated_tasks is not None and generated_tasks < len(tasks):
            tasks = [tasks[i * len(tasks) // generated_tasks] for i in range(generated_tasks)]
        runs.append(ladder_episodes(tasks, 1, real=real, joint=joint, **evaluate_kwargs))
    return pd.concat(runs, ignore_index=True)


def sampled_ladder(real: Mapping[str, Any], seeds: int | Iterable[int] = 1,
                   generated_tasks: int = 3, **evaluate_kwargs):
    """The rows of the ``real`` phase-2 policies alone, after the oracle handoff, on a sample of
    both suites: for a policy too slow for the whole ladder, such as the saved CPU agent of
    ``make agent``, which can play out its whole step budget on every episode.

    Args:
        real: Phase-2 policy factories by name, as :func:`ladder_episodes` takes them.
        seeds: Seeds per classic task.
        generated_tasks: Evenly spaced tasks per generated split, one seed each.
        **evaluate_kwargs: Passed on to :func:`suite_ladder` (``repairer``, ``workers``, ...).

    Returns:
        The :func:`suite_ladder` rows of ``real``'s policies, to concatenate with a ladder.
    """
    return suite_ladder(seeds, generated_tasks, real=real, joint={}, rungs=False, **evaluate_kwargs)


def summarize_ladder(frame, *, confidence: float = 0.95, seed: int = 0):
    """Per suite and policy: episodes, mean repair and the share repaired in full
    (:func:`full_repair`), each with a bootstrap CI, and the mean localisation columns ``commit_diffed`` and ``bad_file_edited``.
    Suites come train split first.

    ``frame`` is :func:`ladder_episodes` output. Columns: suite, policy, kind (``rung``,
    ``oracle handoff`` or ``joint``), n, repair, repair_low, repair_high, full, full_low,
    full_high, commit_diffed, bad_file_edited. Rungs come first, in ladder order.
    """
    require("pandas", "srelib.analysis.ceiling")
    import pandas as pd

    from srelib.analysis.stats import bootstrap_ci

    rows = []
    suites = sorted(set(frame["suite"]), key=lambda s: (s.split(":")[0], not s.endswith(":train")))
    for suite in suites:
        by_suite = frame[frame["suite"] == suite]
        names = list(dict.fromkeys(by_suite["policy"]))
        names = [n for n in names if n.startswith("rung:")] + \
            [n for n in names if not n.startswith("rung:")]
        for name in names:
            group = by_suite[by_suite.policy == name]
            repair = bootstrap_ci(group["repair"].astype(float), confidence=confidence, seed=seed)
            full = bootstrap_ci(full_repair(group).astype(float), confidence=confidence, seed=seed)
            kind = "rung" if name.startswith("rung:") else \
                "joint" if (group["mode"] == "joint").all() else "oracle handoff"
            rows.append({"suite": suite, "policy": name, "kind": kind, "n": len(group),
                         "repair": repair[0], "repair_low": repair[1], "repair_high": repair[2],
                         "full": full[0], "full_low": full[1], "full_high": full[2],
                         **{c: pd.to_numeric(group[c], errors="coerce").mean()
                            for c in ("commit_diffed", "bad_file_edited")}})
    return pd.DataFrame(rows)


def full_repair(frame):
    """Per episode, whether phase 2 was repaired in full: a patch that resolved ``"full"``, or
    a correct "no change needed" on a task with nothing to fix (repair 1 without a patch)."""
    return (frame["resolved"] == "full") | (frame["resolved"].isna() & (frame["repair"] == 1))


def null_composite(phase2_policy: Any) -> functools.partial:
    """A factory of NullPhase1Policy joined to ``phase2_policy``: the empty-handoff arm."""
    from srelib.policies import NullPhase1Policy

    return functools.partial(compose, NullPhase1Policy, phase2_policy)


def _pool_task_set(name: str, tasks: Sequence[str]) -> set[str]:
    from srelib.env.tasks.pools import POOLS

    return {t for t in tasks if POOLS[name].accepts(t)}


def handoff_gain(frame, better: str = "oracle", worse: str = "null", *,
                 confidence: float = 0.95, seed: int = 0):
    """Per suite, the paired gain in repair of handoff ``better`` over handoff ``worse``.

    Args:
        frame: :func:`ceiling_episodes` output (handoffs in ``policy``).
        better, worse: the two handoffs compared.
        confidence, seed: of the bootstrap CI (:func:`srelib.analysis.stats.bootstrap_ci`).

    Returns:
        One row per suite (``classic:train``, ``generated:heldout``, ...) and a final ``all``
        row: n_pairs, the two mean repairs, the mean paired difference and its CI. Episodes
        pair on task and seed (the two handoffs run in different pools and modes).

    Raises:
        ValueError: a handoff is missing from ``frame`` or the two share no task and seed.
    """
    require("pandas", "srelib.analysis.ceiling")
    import pandas as pd

    from srelib.analysis.stats import bootstrap_ci
    from srelib.env.tasks.catalog import split_of, suite_of

    for name in (better, worse):
        if name not in set(frame["policy"]):
            raise ValueError(f"handoff {name!r} is not in the frame; handoffs: "
                             f"{sorted(set(frame['policy']))}")
    sides = [frame[frame["policy"] == name].set_index(["task", "seed"])["repair"]
             for name in (better, worse)]
    pairs = pd.concat(sides, axis=1, keys=["a", "b"], join="inner").dropna().reset_index()
    if pairs.empty:
        raise ValueError(f"{better!r} and {worse!r} share no task and seed")
    pairs["suite"] = [f"{suite_of(t)}:{split_of(t)}" for t in pairs["task"]]
    rows = []
    for suite, group in [*pairs.groupby("suite", sort=True), ("all", pairs)]:
        mean, low, high = bootstrap_ci(group["a"] - group["b"], confidence=confidence, seed=seed)
        rows.append({"suite": suite, "n_pairs": len(group), f"repair ({better})": group["a"].mean(),
                     f"repair ({worse})": group["b"].mean(), "gain": mean, "gain_low": low,
                     "gain_high": high})
    return pd.DataFrame(rows)
