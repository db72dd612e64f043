"""The validity gate: policies that must score high (the reference) or low (every shortcut).

Each gate policy is a plain Policy callable ``(observation, phase, task_name) -> action`` with
``reset()``. :func:`validity_table` plays each over every task in its joint pool (C for
training tasks, D for held-out ones), or over the pool its rule names, and checks the mean per
task of the score (or of the component its rule names) against its bound
(:func:`srelib.analysis.gate.rules`: the reference's floor and every shortcut's bound, from
:mod:`srelib.adversarial`).
A policy with ``warmup_seeds`` (a learner) first plays those seeds on each task, unmeasured.
:func:`format_validity_table` renders the rows as markdown; ``python -m srelib.analysis.validity``
prints the summary table the README shows.
"""

from __future__ import annotations

from srelib.env.tasks.pools import POOLS, joint_pool as pool_for  # pool_for: the gate's name for it
from srelib.env.simulation.scenarios import TASKS
from srelib.analysis.gate import rules, within


def __getattr__(name: str):
    """``GATE`` (policy class -> (kind, bound)), ``GATE_POOLS`` (-> pool, where not joint) and
    ``GATE_METRIC`` (-> component, where not the final score): views of
    :func:`srelib.analysis.gate.rules`, read when asked for (the rules' folder loads on first use)."""
    if name == "GATE":
        return {cls: (r.kind, r.bound) for cls, r in rules().items()}
    if name == "GATE_POOLS":
        return {cls: r.pool for cls, r in rules().items() if r.pool is not None}
    if name == "GATE_METRIC":
        return {cls: r.metric for cls, r in rules().items() if r.metric != "final"}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def gate_cells(cls) -> list[tuple[str, str]]:
    """``(task, pool)`` for every task a gate policy is judged on."""
    pool = rules()[cls].pool
    if pool is None:
        return [(task, pool_for(task)) for task in TASKS]
    return [(task, pool) for task in POOLS[pool].tasks]


def play(policy, task_name: str, seed: int, pool: str | None = None,
         mode: str | None = None) -> dict:
    """One episode of ``policy`` in ``pool`` (default: the task's joint pool) or, with ``mode``
    and no pool, in that mode; returns the score breakdown. A gate policy that raises is a bug
    in the gate: RuntimeError."""
    from srelib.env.core import IncidentEnv
    from srelib.runners.rollout import run_episode

    if mode is None:
        pool = pool or pool_for(task_name)
    episode = run_episode(IncidentEnv(), policy, task_name, pool, mode, seed=seed)
    if episode.error is not None:
        raise RuntimeError(f"gate policy {type(policy).__name__} failed on {task_name}:\n"
                           f"{episode.error}")
    return episode.score


def _row(policy: str, task: str, score: float, kind: str, bound: float, metric: str = "final",
         pool: str | None = None) -> dict:
    ok = within(kind, bound, score)
    shown = f"{'>=' if kind == 'min' else '<='} {bound}"
    return {"policy": policy, "task": task, "pool": pool, "score": round(score, 4),
            "bound": shown if metric == "final" else f"{metric} {shown}", "ok": ok}


def validity_table(seeds=range(3), policies=None) -> list[dict]:
    """Gate policies (default: every one of :func:`srelib.analysis.gate.rules`) on their tasks:
    rows of policy, task, pool, mean score, bound, ok."""
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must not be empty")
    gate = rules()
    chosen = list(gate) if policies is None else list(policies)
    unknown = [c for c in chosen if c not in gate]
    if unknown:
        raise ValueError(f"not gate policies: {unknown}; valid: {[c.name for c in gate]}")
    rows = []
    for cls in chosen:
        rule = gate[cls]
        policy = cls()
        means = {}
        for task, pool in gate_cells(cls):
            for s in getattr(policy, "warmup_seeds", ()):
                play(policy, task, s, pool)
            means[task] = sum(play(policy, task, s, pool)[rule.metric] for s in seeds) / len(seeds)
            rows.append(_row(policy.name, task, means[task], rule.kind,
                             rule.task_bounds.get(task, rule.bound), rule.metric, pool))
        if rule.mean_bound is not None:
            rows.append(_row(policy.name, "(mean of all tasks)", sum(means.values()) / len(means),
                             rule.kind, rule.mean_bound))
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
    """``python -m srelib.analysis.validity [--seeds N] [--full]``: print the summary (or every row)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m srelib.analysis.validity", description=(
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
