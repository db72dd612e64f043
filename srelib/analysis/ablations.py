"""Ablations: named conditions run on the same tasks and seeds, compared with paired CIs.

:func:`ablate` runs each :class:`Condition` through :func:`srelib.evaluate` (so it gets
progress, workers, executors and resume) and compares every condition with a baseline:
episodes are paired on (task, seed), the same incident, when the two conditions share any;
conditions on disjoint tasks (train against held-out, say) are compared as two independent
samples. Four ready experiments ask the questions the seed's ablation runners asked, each built
so that its conditions *can* differ: :func:`stopping_experiment`, :func:`credit_experiment`,
:func:`oracle_phase1_experiment` and :func:`heldout_experiment`.
"""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from srelib.extras import require

#: Columns that pair two conditions' episodes: the same incident.
PAIR_ON = ("task", "seed")


@dataclass(frozen=True)
class Condition:
    """One arm of an ablation: a policy (or zero-argument factory) and where it runs.

    ``pools``, ``tasks``, ``mode`` and ``max_steps`` override the ablation's own for this arm;
    ``outcome`` is the frame column compared (default ``"final"``) or a function of the frame
    returning one value per row; ``null_repair`` (task -> null-handoff repair) adds ``r_cross``.
    """

    policy: Any
    pools: Sequence[str | None] | None = None
    tasks: str | Sequence[str] | None = None
    mode: str | None = None
    max_steps: int | None = None
    outcome: str | Callable[[Any], Any] = "final"
    null_repair: Mapping[str, float] | None = None


@dataclass
class Ablation:
    """What :func:`ablate` returns: the episodes, their tidy frame, and the comparisons.

    ``frame`` has one row per episode, ``policy`` holding the condition name and ``outcome`` the
    compared value; ``summary`` has per condition n, mean outcome with a CI and mean phase-1
    steps; ``differences`` has each condition minus ``baseline`` with a bootstrap CI.
    """

    frame: Any
    episodes: list = field(repr=False)
    summary: Any
    differences: Any
    baseline: str


def ablate(conditions: Mapping[str, Any], *, baseline: str | None = None,
           tasks: str | Sequence[str] = "all", pools: Sequence[str | None] = ("C",),
           seeds: int | Iterable[int] = 10, out=None, confidence: float = 0.95, seed: int = 0,
           **evaluate_kwargs) -> Ablation:
    """Run every condition on the same tasks and seeds and compare each with ``baseline``.

    Args:
        conditions: a name to a :class:`Condition`, or to a bare policy or factory (a condition
            with no overrides).
        baseline: the condition the others are compared with (default: the first).
        tasks: ``"all"``, a suite name or a list of task ids or names.
        pools: the pools to play.
        seeds: a count N (seeds 0..N-1) or the seeds themselves.
        out: keeps each condition's episodes in ``out/<name>`` (resumable); without it they go
            to a temporary directory.
        confidence: the level of the paired bootstrap CIs.
        seed: the bootstrap's seed.
        **evaluate_kwargs: passed to :func:`srelib.evaluate`.

    Returns:
        An :class:`Ablation`: every condition's episodes and the paired differences from the
        baseline, with CIs.

    Raises:
        ValueError: no condition, or ``baseline`` is not one of them.
    """
    require("pandas", "srelib.analysis.ablations")
    import pandas as pd

    from srelib.results.store import load_episodes
    from srelib.runners.rollout import evaluate

    if not conditions:
        raise ValueError("conditions is empty: pass a mapping of name -> Condition or policy")
    arms = {name: c if isinstance(c, Condition) else Condition(c) for name, c in conditions.items()}
    baseline = next(iter(arms)) if baseline is None else baseline
    if baseline not in arms:
        raise ValueError(f"baseline {baseline!r} is not a condition; conditions: {list(arms)}")
    evaluate_kwargs.setdefault("progress", False)
    seeds = seeds if isinstance(seeds, int) else list(seeds)
    frames, episodes = [], []
    with tempfile.TemporaryDirectory(prefix="srelib-ablate-") as scratch:
        root = Path(out) if out is not None else Path(scratch)
        for name, arm in arms.items():
            run_dir = root / name
            frame = evaluate({name: arm.policy}, tasks=arm.tasks or tasks,
                             pools=arm.pools or pools, seeds=seeds, mode=arm.mode,
                             max_steps=arm.max_steps, null_repair=arm.null_repair,
                             out=run_dir, **evaluate_kwargs)
            frames.append(frame.assign(outcome=_outcome(frame, arm.outcome)))
            wanted = set(zip(frame["task"], frame["pool"], frame["seed"]))
            episodes += [e for e in load_episodes(run_dir)
                         if (e.public_task, e.pool, e.seed) in wanted]
    frame = pd.concat(frames, ignore_index=True)
    summary = summarize_conditions(frame, confidence=confidence, seed=seed)
    differences = compare(frame, baseline, confidence=confidence, seed=seed)
    return Ablation(frame, episodes, summary, differences, baseline)


def summarize_conditions(frame, *, confidence: float = 0.95, seed: int = 0):
    """Per condition: n, mean outcome with a bootstrap CI, mean phase-1 and phase-2 steps."""
    require("pandas", "srelib.analysis.ablations")
    import pandas as pd

    from srelib.analysis.stats import bootstrap_ci

    rows = []
    for name, group in frame.groupby("policy", sort=False):
        mean, low, high = bootstrap_ci(group["outcome"], confidence=confidence, seed=seed)
        rows.append({"condition": name, "n": len(group), "mean": mean, "ci_low": low,
                     "ci_high": high, "p1_steps": group["p1_steps"].mean(),
                     "p2_steps": group["p2_steps"].mean()})
    return pd.DataFrame(rows)


def compare(frame, baseline: str, *, confidence: float = 0.95, seed: int = 0):
    """Each condition's outcome minus the baseline's, with a bootstrap CI.

    Paired on (task, seed) where the two share episodes (``paired`` True); otherwise the
    difference of two independent means, each side resampled on its own.
    """
    require("pandas", "srelib.analysis.ablations")
    import pandas as pd

    from srelib.analysis.stats import bootstrap_ci, bootstrap_mean_difference

    base = frame[frame["policy"] == baseline]
    rows = []
    for name, group in frame.groupby("policy", sort=False):
        if name == baseline:
            continue
        pairs = group.merge(base, on=list(PAIR_ON), suffixes=("", "_base"))
        pairs = pairs.dropna(subset=["outcome", "outcome_base"])
        if len(pairs):
            diff = bootstrap_ci(pairs["outcome"] - pairs["outcome_base"],
                                confidence=confidence, seed=seed)
        else:
            diff = bootstrap_mean_difference(group["outcome"], base["outcome"],
                                             confidence=confidence, seed=seed)
        rows.append({"condition": name, "baseline": baseline, "paired": bool(len(pairs)),
                     "n": len(pairs) if len(pairs) else len(group), "mean_diff": diff[0],
                     "ci_low": diff[1], "ci_high": diff[2],
                     "excludes_0": bool(diff[1] > 0 or diff[2] < 0)})
    return pd.DataFrame(rows, columns=["condition", "baseline", "paired", "n", "mean_diff",
                                       "ci_low", "ci_high", "excludes_0"])


# ── the four ready experiments ─────────────────────────────────────────────────────────────


def stopping_experiment(seeds: int | Iterable[int] = 10, tasks: str | Sequence[str] = "all", *,
                        thresholds: Sequence[float] = (0.5, 0.7, 0.9), tuned: bool = True,
                        tuning_seeds: Iterable[int] = range(1000, 1008),
                        **ablate_kwargs) -> Ablation:
    """When should phase 1 stop? Confidence-threshold stopping at fixed thresholds and, with
    ``tuned``, a threshold per task tuned on ``tuning_seeds`` (kept apart from ``seeds``), all
    joined to the revert phase-2 policy, in joint episodes. Baseline: the first threshold."""
    from srelib.policies.scripted.stopping import _stop_then
    from srelib.policies.scripted.revert import RevertPhase2Policy

    conditions = {f"stop@{t:g}": functools.partial(_stop_then, t, RevertPhase2Policy)
                  for t in thresholds}
    if tuned:
        per_task = tune_thresholds(RevertPhase2Policy, tasks, tuning_seeds)
        conditions["stop@tuned"] = functools.partial(_stop_then, per_task, RevertPhase2Policy)
    return ablate(conditions, tasks=tasks, pools=("C", "D"), seeds=seeds, **ablate_kwargs)


#: Thresholds that :func:`tune_thresholds` tries by default.
THRESHOLD_GRID = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def tune_thresholds(phase2_policy, tasks: str | Sequence[str] = "all",
                    seeds: Iterable[int] = range(1000, 1008),
                    grid: Sequence[float] = THRESHOLD_GRID, **evaluate_kwargs) -> dict[str, float]:
    """Per task, the threshold of ``grid`` with the best mean final score over ``seeds``.

    Run on seeds kept apart from the ones a tuned policy is evaluated on (the default seeds start
    at 1000), in joint episodes (pools C and D) with ``phase2_policy`` after the handoff. Ties go
    to the lower threshold, the cheaper investigation.
    """
    from srelib.policies.scripted.stopping import _stop_then
    from srelib.runners.rollout import JOINT_POOLS, evaluate

    evaluate_kwargs.setdefault("progress", False)
    conditions = {f"{t:g}": functools.partial(_stop_then, t, phase2_policy) for t in grid}
    frame = evaluate(conditions, tasks=tasks, pools=JOINT_POOLS, seeds=list(seeds),
                     **evaluate_kwargs)
    means = frame.groupby(["task", "policy"])["final"].mean()
    return {task: min(grid, key=lambda t: (-means[(task, f"{t:g}")], t))
            for task in sorted(set(frame["task"]))}


def credit_experiment(seeds: int | Iterable[int] = 10, tasks: str | Sequence[str] = "all",
                      **ablate_kwargs) -> Ablation:
    """How much credit does counting r_cross move onto phase 1? The same heuristic handoffs,
    scored by phase 1's own components alone and with r_cross added (the repair its handoff
    earned over an empty one, calibrated per task by :func:`srelib.measure_null_context`)."""
    from srelib.policies.scripted.revert import RevertPhase2Policy
    from srelib.analysis.ceiling import measure_null_context
    from srelib.runners.rollout import JOINT_POOLS

    null_repair = measure_null_context(RevertPhase2Policy, tasks=tasks, seeds=seeds)
    policy = functools.partial(_heuristic_then, RevertPhase2Policy)
    conditions = {
        "r_cross off": Condition(policy, outcome=phase1_credit, null_repair=null_repair),
        "r_cross on": Condition(policy, outcome=phase1_credit_with_cross, null_repair=null_repair),
    }
    return ablate(conditions, tasks=tasks, pools=JOINT_POOLS, seeds=seeds, **ablate_kwargs)


def oracle_phase1_experiment(seeds: int | Iterable[int] = 10,
                             tasks: str | Sequence[str] = "all", *, outcome: str = "final",
                             **ablate_kwargs) -> Ablation:
    """Oracle against learned phase 1, for the same phase-2 policy (revert): the oracle hands
    over the true belief at once, the heuristic investigates, mitigates and hands over what it
    found. Baseline: oracle. ``outcome="repair"`` isolates phase 2's share; with the revert
    policy it differs only where the handoff changes phase 2's ending (a blind revert
    repairs nothing, so mostly on the no-fault task)."""
    from srelib.policies.base import compose
    from srelib.policies.scripted.baselines import OracleP1ThenRandomP2Policy
    from srelib.policies.scripted.revert import RevertPhase2Policy
    from srelib.runners.rollout import JOINT_POOLS

    conditions = {
        "oracle_p1": Condition(functools.partial(compose, OracleP1ThenRandomP2Policy,
                                                 RevertPhase2Policy), outcome=outcome),
        "heuristic_p1": Condition(functools.partial(_heuristic_then, RevertPhase2Policy),
                                  outcome=outcome),
    }
    return ablate(conditions, tasks=tasks, pools=JOINT_POOLS, seeds=seeds, **ablate_kwargs)


def heldout_experiment(policy=None, seeds: int | Iterable[int] = 10,
                       **ablate_kwargs) -> Ablation:
    """Does a policy generalise? The same policy (default: heuristic + revert) on the train
    tasks (pool C) and on the held-out tasks (pool D); the tasks differ, so unpaired."""
    from srelib.policies.scripted.revert import RevertPhase2Policy

    policy = policy or functools.partial(_heuristic_then, RevertPhase2Policy)
    conditions = {"train (C)": Condition(policy, pools=("C",)),
                  "held-out (D)": Condition(policy, pools=("D",))}
    return ablate(conditions, tasks="all", seeds=seeds, **ablate_kwargs)


# ── outcomes ───────────────────────────────────────────────────────────────────────────────


def phase1_credit(frame):
    """Phase 1's own score: its counted components (diagnosis, mitigation) in their weights."""
    from srelib.env.grading.score import WEIGHTS

    parts = ["diagnosis", "mitigation"]
    weights = [WEIGHTS[c] for c in parts]
    counted = (frame[parts].notna() * weights).sum(axis=1)
    return (frame[parts].fillna(0.0) * weights).sum(axis=1) / counted


def phase1_credit_with_cross(frame):
    """:func:`phase1_credit` plus r_cross, capped at 1."""
    return (phase1_credit(frame) + frame["r_cross"].fillna(0.0)).clip(upper=1.0)


def _outcome(frame, outcome):
    if callable(outcome):
        return outcome(frame)
    if outcome not in frame.columns:
        raise ValueError(f"unknown outcome column {outcome!r}; columns: {list(frame.columns)}")
    return frame[outcome]


def _heuristic_then(phase2_factory):
    from srelib.policies.base import compose
    from srelib.policies.scripted.heuristic import HeuristicPhase1Policy

    return compose(HeuristicPhase1Policy, phase2_factory)
