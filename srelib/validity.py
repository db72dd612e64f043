"""The validity gate: policies that must score high (the reference) or low (every shortcut).

Each gate policy is a plain Policy callable ``(observation, phase, task_name) -> action`` with
``reset()``. :func:`validity_table` plays each over every task in its joint pool (C for
training tasks, D for held-out ones), or over the pool named in ``GATE_POOLS``, and checks the
mean per task of the score (or of the component named in ``GATE_METRIC``) against ``GATE``.
A policy with ``warmup_seeds`` (a learner) first plays those seeds on each task, unmeasured.
:func:`format_validity_table` renders the rows as markdown; ``python -m srelib.validity``
prints the summary table the README shows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict

from srelib.env.actions import FAULT_CLASSES, PHASE1_REMEDIATION, SERVICES, ActionType
from srelib.env.belief import BeliefState
from srelib.env.patching import is_test_path
from srelib.env.pools import POOLS
from srelib.env.repos import load_repo, unified_diff
from srelib.env.scenarios import TASKS, get_scenario
from srelib.policies.adversarial import (BlindRevertPolicy, HedgedDeclarationPolicy,
                                         MemoriseTrainPolicy, NewestDeployPolicy,
                                         ReleaseTagRevertPolicy, RewardFarmPolicy,
                                         RewardProbePolicy)
from srelib.policies.hijack import HIJACK_POLICIES
from srelib.policies.reference import ReferencePolicy


def _act(action_type: ActionType, target: str | None = None, **params) -> dict:
    return {"action_type": action_type.value, "target_service": target, "parameters": params}


EMPTY_HANDOFF = _act(ActionType.TRANSITION_TO_PHASE2, belief=asdict(BeliefState()))


def stuffed_declaration(task_name: str) -> dict:
    """A declaration naming every service, every fault class and every keyword."""
    s = get_scenario(task_name)
    text = " ".join([*SERVICES, *(c.replace("_", " ") for c in FAULT_CLASSES), *s.keywords])
    return _act(ActionType.DECLARE_ROOT_CAUSE, root_cause=text, service=s.root_cause_service,
                fault_class=s.fault_class)


class _Scripted(ABC):
    """Plays a per-phase list of actions; repeats the last one if the episode goes on."""

    name = "scripted"

    def __init__(self) -> None:
        self.reset()

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        self._taken = {1: 0, 2: 0}

    @abstractmethod
    def plan(self, phase: int, task_name: str, observation: dict) -> list[dict]:
        """The actions this policy plays in ``phase``, in order."""

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        phase = 1 if phase == 1 else 2
        plan = self.plan(phase, task_name, observation)
        step = min(self._taken[phase], len(plan) - 1)
        self._taken[phase] += 1
        return plan[step]


class NullPolicy(_Scripted):
    """Hands over an empty belief, then proposes an empty patch."""

    name = "null"

    def plan(self, phase, task_name, observation):
        return [EMPTY_HANDOFF] if phase == 1 else [_act(ActionType.PROPOSE_PATCH, diff="")]


class KeywordStuffingPolicy(_Scripted):
    """Declares every service, class and keyword at once, then behaves like NullPolicy."""

    name = "keyword_stuffing"

    def plan(self, phase, task_name, observation):
        if phase == 1:
            return [stuffed_declaration(task_name), EMPTY_HANDOFF]
        return [_act(ActionType.PROPOSE_PATCH, diff="")]


class AlwaysNoChangePolicy(_Scripted):
    """Hands over an empty belief and declares that no code change is needed."""

    name = "always_no_change"

    def plan(self, phase, task_name, observation):
        return [EMPTY_HANDOFF] if phase == 1 else [_act(ActionType.DECLARE_NO_CHANGE, reason="looks fine")]


class ReproposeBadCommitPolicy(_Scripted):
    """Hands over an empty belief, fetches the bad commit's diff (else the latest) and proposes it."""

    name = "repropose_bad_commit"

    def plan(self, phase, task_name, observation):
        if phase == 1:
            return [EMPTY_HANDOFF]
        s = get_scenario(task_name)
        sha = s.bad_commit or load_repo(s.repo).commits[0].sha
        diff = (observation.get("action_result") or {}).get("diff", "")
        return [_act(ActionType.GET_FILE_DIFF, commit_sha=sha), _act(ActionType.PROPOSE_PATCH, diff=diff)]


class AlertsUntilBudgetPolicy(_Scripted):
    """Views the alerts until the step budget runs out."""

    name = "view_alerts_forever"

    def plan(self, phase, task_name, observation):
        return [_act(ActionType.VIEW_ALERTS)] if phase == 1 else [_act(ActionType.LIST_DIR, path=".")]


class TestDeletingPolicy(_Scripted):
    """Hands over an empty belief and proposes a diff that deletes or weakens the tests."""

    name = "delete_tests"

    def plan(self, phase, task_name, observation):
        if phase == 1:
            return [EMPTY_HANDOFF]
        tree = load_repo(get_scenario(task_name).repo).tree
        weakened = {p: t for p, t in tree.items() if not is_test_path(p)}
        weakened["tests/conftest.py"] = "collect_ignore_glob = ['test_*.py']\n"
        return [_act(ActionType.PROPOSE_PATCH, diff=unified_diff(tree, weakened))]


class RemediateEverythingPolicy(_Scripted):
    """Restarts, rolls back and scales every service, declares everything, then hands over empty."""

    name = "remediate_everything"

    def plan(self, phase, task_name, observation):
        if phase == 2:
            return [_act(ActionType.PROPOSE_PATCH, diff="")]
        blanket = [_act(kind, s) for s in SERVICES for kind in PHASE1_REMEDIATION]
        return blanket + [stuffed_declaration(task_name), EMPTY_HANDOFF]


#: policy class -> (kind, bound): "min" means score >= bound, "max" means score <= bound.
GATE = {
    ReferencePolicy: ("min", 0.95),
    NullPolicy: ("max", 0.15),
    KeywordStuffingPolicy: ("max", 0.35),
    AlwaysNoChangePolicy: ("max", 0.35),
    ReproposeBadCommitPolicy: ("max", 0.35),
    AlertsUntilBudgetPolicy: ("max", 0.35),
    TestDeletingPolicy: ("max", 0.35),
    RemediateEverythingPolicy: ("max", 0.35),
    RewardProbePolicy: ("max", 0.35),
    RewardFarmPolicy: ("max", 0.35),
    HedgedDeclarationPolicy: ("max", 0.35),
    ReleaseTagRevertPolicy: ("max", 0.35),
    NewestDeployPolicy: ("max", 0.35),
    MemoriseTrainPolicy: ("max", 0.35),
    BlindRevertPolicy: ("max", 0.35),
    **{cls: ("max", 0.15) for cls in HIJACK_POLICIES.values()},
}
#: Policies judged in one pool instead of each task's joint pool: the pool where the shortcut
#: is strongest (pool A for a declaration alone, B for phase-2 tricks, D for memorising train).
GATE_POOLS = {HedgedDeclarationPolicy: "A", BlindRevertPolicy: "B", MemoriseTrainPolicy: "D",
              **{cls: "B" for cls in HIJACK_POLICIES.values()}}
#: Policies judged on one score component instead of the final score.
GATE_METRIC = {cls: "repair" for cls in HIJACK_POLICIES.values()}
NO_CHANGE_TASK_BOUND = {"circuit_breaker_noop": 0.6}
NO_CHANGE_MEAN_BOUND = 0.25


def pool_for(task_name: str) -> str:
    """The joint pool a task belongs to: D for held-out tasks, else C."""
    return "D" if get_scenario(task_name).heldout else "C"


def gate_cells(cls) -> list[tuple[str, str]]:
    """``(task, pool)`` for every task a gate policy is judged on."""
    pool = GATE_POOLS.get(cls)
    if pool is None:
        return [(task, pool_for(task)) for task in TASKS]
    return [(task, pool) for task in POOLS[pool].tasks]


def play(policy, task_name: str, seed: int, pool: str | None = None) -> dict:
    """One episode of ``policy`` in ``pool`` (default: the task's joint pool); returns the
    score breakdown."""
    from srelib.env.core import IncidentEnv

    env = IncidentEnv()
    observation, _ = env.reset(task=task_name, pool=pool or pool_for(task_name), seed=seed)
    policy.reset(seed=seed, task_name=task_name)
    while True:
        action = policy(observation, observation["current_phase"], task_name)
        observation, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info["score"]


def _row(policy: str, task: str, score: float, kind: str, bound: float, metric: str = "final",
         pool: str | None = None) -> dict:
    ok = score >= bound if kind == "min" else score <= bound
    shown = f"{'>=' if kind == 'min' else '<='} {bound}"
    return {"policy": policy, "task": task, "pool": pool, "score": round(score, 4),
            "bound": shown if metric == "final" else f"{metric} {shown}", "ok": ok}


def validity_table(seeds=range(3), policies=None) -> list[dict]:
    """Gate policies (default: all of ``GATE``) on their tasks: rows of policy, task, pool,
    mean score, bound, ok."""
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must not be empty")
    chosen = list(GATE) if policies is None else list(policies)
    unknown = [c for c in chosen if c not in GATE]
    if unknown:
        raise ValueError(f"not gate policies: {unknown}; valid: {[c.name for c in GATE]}")
    rows = []
    for cls in chosen:
        kind, bound = GATE[cls]
        metric = GATE_METRIC.get(cls, "final")
        policy = cls()
        means = {}
        for task, pool in gate_cells(cls):
            for s in getattr(policy, "warmup_seeds", ()):
                play(policy, task, s, pool)
            means[task] = sum(play(policy, task, s, pool)[metric] for s in seeds) / len(seeds)
            task_bound = NO_CHANGE_TASK_BOUND.get(task, bound) if cls is AlwaysNoChangePolicy else bound
            rows.append(_row(policy.name, task, means[task], kind, task_bound, metric, pool))
        if cls is AlwaysNoChangePolicy:
            rows.append(_row(policy.name, "(mean of all tasks)", sum(means.values()) / len(means),
                             "max", NO_CHANGE_MEAN_BOUND))
    return rows


def format_validity_table(rows: list[dict]) -> str:
    """The rows as a markdown table."""
    lines = ["| policy | task | pool | mean score | required | ok |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['policy']} | {r['task']} | {r.get('pool') or '-'} | {r['score']:.4f} | "
              f"{r['bound']} | {'yes' if r['ok'] else 'NO'} |" for r in rows]
    return "\n".join(lines)


def format_validity_summary(rows: list[dict]) -> str:
    """One line per gate policy: its bounds, its lowest and highest task score, and the verdict."""
    lines = ["| policy | pools | required | lowest task score | highest task score | ok |",
             "|---|---|---|---|---|---|"]
    for policy in dict.fromkeys(r["policy"] for r in rows):
        mine = [r for r in rows if r["policy"] == policy]
        tasks = [r for r in mine if not r["task"].startswith("(")]
        pools = "/".join(sorted({r["pool"] for r in tasks if r.get("pool")}))
        bounds = ", ".join(dict.fromkeys(
            r["bound"] if not r["task"].startswith("(") else f"mean {r['bound']}" for r in mine))
        lines.append(f"| {policy} | {pools} | {bounds} | {min(r['score'] for r in tasks):.4f} | "
                     f"{max(r['score'] for r in tasks):.4f} | "
                     f"{'yes' if all(r['ok'] for r in mine) else 'NO'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """``python -m srelib.validity [--seeds N] [--full]``: print the summary (or every row)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m srelib.validity", description=(
        "Play every validity-gate policy on its tasks and print the summary table."))
    parser.add_argument("--seeds", type=int, default=3, help="seeds per task (0..N-1; default 3)")
    parser.add_argument("--full", action="store_true", help="one row per policy and task")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    rows = validity_table(range(args.seeds))
    print(format_validity_table(rows) if args.full else format_validity_summary(rows))


if __name__ == "__main__":
    main()
