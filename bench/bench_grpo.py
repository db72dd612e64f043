"""GRPO from a tool-calling agent: its learning curve, and its scores before and after.

Starts from a tool-calling agent (``--agent FOLDER``, else one trained here with
``train_agent(tools=True)``), measures it on held-out seeds of the train tasks (pools A and C)
and on the held-out tasks (pool D), runs TRL's ``GRPOTrainer`` on the train tasks through
``IncidentToolEnv`` for ``--steps`` optimiser steps, saves the result with the agent's prompt
settings and measures it again the same way. Prints the curve (reward, KL, parse-failure rate
per step, in blocks), both score tables and the change of the score, paired on the same
incidents; ``--json`` keeps everything.

    python bench/bench_grpo.py --steps 100 --agent "$(srelib agent path)"
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO_ROOT  # noqa: E402,F401 - puts the checkout on sys.path

#: Where the runs are measured: held-out seeds of the train tasks, and the held-out tasks.
SPLITS = {"train tasks (pools A, C)": ("A", "C"), "held-out tasks (pool D)": ("D",)}
CURVE_KEYS = {"reward": "reward", "kl": "kl",
              "parse_failures": "rewards/parse_failure_rate/mean"}


def measure(folder: str, name: str) -> tuple[dict, dict]:
    """Each split's parse-failure and invalid-action rates and score table for ``folder``, and
    each split's episodes (a results frame)."""
    from srelib.training.agent import agent_policy, measure_agent

    results, frames = {}, {}
    for split, pools in SPLITS.items():
        measured = measure_agent(agent_policy(folder, name=name), pools=pools)
        frames[split] = measured["frame"]
        results[split] = {"parse_failure_rate": measured["parse_failure_rate"],
                          "invalid_action_rate": measured["invalid_action_rate"],
                          "scores": measured["scores"].to_dict("records")}
    return results, frames


def paired_change(before: dict, after: dict) -> dict:
    """Each split's mean change of the final score from ``agent`` to ``agent+GRPO``, paired on
    the same incidents, with its bootstrap CI (``before`` and ``after``: frames per split)."""
    import pandas as pd

    from srelib.analysis.stats import paired_difference

    change = {}
    for split in SPLITS:
        both = pd.concat([before[split], after[split]], ignore_index=True)
        row = paired_difference(both, "agent+GRPO", "agent").iloc[-1]
        change[split] = {key: float(row[column]) for key, column in
                         (("mean", "mean_diff"), ("ci_low", "ci_low"), ("ci_high", "ci_high"))}
    return change


def run(steps: int, generations: int, turns: int, learning_rate: float, beta: float,
        temperature: float, seed: int, agent: str | None) -> dict:
    from transformers import AutoTokenizer

    from srelib.policies.llm.saved import saved_settings
    from srelib.training.agent import find_agent, save_agent, train_agent
    from srelib.training.environment import TaskDistribution
    from srelib.training.grpo import grpo_train, rollout_prompt

    start = find_agent(agent) if agent else None
    if start is None:
        start = train_agent(tempfile.mkdtemp(prefix="srelib-tool-agent-"), tools=True)
    try:
        rollout_prompt(start)  # refuses an agent that answers in text, before any measuring
    except ValueError as error:
        raise SystemExit(str(error)) from None
    before, before_frames = measure(start, "agent")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="srelib-grpo-") as scratch:
        trainer = grpo_train(start, AutoTokenizer.from_pretrained(start), scratch,
                             distribution=TaskDistribution(pools=SPLITS["train tasks (pools A, C)"],
                                                           seed=seed),
                             steps=steps, num_generations=generations, max_turns=turns,
                             max_completion_length=1536, learning_rate=learning_rate, beta=beta,
                             temperature=temperature, seed=seed, disable_tqdm=True)
        seconds = time.perf_counter() - started
        after_folder = save_agent(Path(scratch) / "after", trainer.model,
                                  trainer.processing_class, saved_settings(start))
        after, after_frames = measure(after_folder, "agent+GRPO")
    curve = [{"step": h["step"], **{k: h.get(v) for k, v in CURVE_KEYS.items()}}
             for h in trainer.state.log_history if "reward" in h]
    return {"agent": start, "steps": steps, "generations": generations, "turns": turns,
            "learning_rate": learning_rate, "beta": beta, "temperature": temperature, "seed": seed,
            "train_seconds": seconds, "curve": curve, "before": before, "after": after,
            "change": paired_change(before_frames, after_frames)}


def print_report(result: dict, block: int = 10) -> None:
    print(f"GRPO from {result['agent']}: {result['steps']} steps x {result['generations']} "
          f"rollouts, at most {result['turns']} tool calls each, lr {result['learning_rate']:g}, "
          f"beta {result['beta']:g}, temperature {result['temperature']:g}; "
          f"{result['train_seconds']:.0f} s")
    print(f"| steps | mean reward | mean KL | mean parse failures |\n|---|---|---|---|")
    curve = result["curve"]
    for first in range(0, len(curve), block):
        points = curve[first:first + block]
        means = [statistics.fmean(p[k] for p in points) for k in CURVE_KEYS]
        print(f"| {points[0]['step']}-{points[-1]['step']} | {means[0]:.3f} | {means[1]:.4f} "
              f"| {means[2]:.3f} |")
    for split in SPLITS:
        print(f"\n{split}\n| run | parse failures | refused actions | policy | mean [95% CI] |"
              "\n|---|---|---|---|---|")
        for run_name in ("before", "after"):
            measured = result[run_name][split]
            for row in measured["scores"]:
                print(f"| {run_name} | {measured['parse_failure_rate']:.3f} "
                      f"| {measured['invalid_action_rate']:.3f} | {row['policy']} "
                      f"| {row['mean']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}] |")
        change = result["change"][split]
        print(f"| after - before (paired) | | | agent+GRPO - agent | {change['mean']:.3f} "
              f"[{change['ci_low']:.3f}, {change['ci_high']:.3f}] |")


def main() -> None:
    from common import base_parser

    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--generations", type=int, default=4, help="rollouts per incident")
    parser.add_argument("--turns", type=int, default=12, help="tool calls per rollout at most")
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--beta", type=float, default=0.04, help="weight of the KL term")
    parser.add_argument("--temperature", type=float, default=1.0, help="sampling temperature")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--agent", help="a tool-calling agent's folder (default: train one)")
    args = parser.parse_args()
    result = run(args.steps, args.generations, args.turns, args.learning_rate, args.beta,
                 args.temperature, args.seed, args.agent)
    print_report(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
