"""Batched local generation: 8 episodes in lockstep with kept KV caches against 8 one at a time.

Every side drives ``HFTransformersChatPolicy`` over the tiny offline Gemma-architecture model
(``srelib.training.tiny_model.tiny_chat_model``), greedy, on the same tasks and seeds with the same step
cap. "One at a time" is the seed's way: ``run_episode`` calls the policy once per step, and
each call encodes the whole conversation again (``kv_cache=False``). "Lockstep" is
``srelib.runners.lockstep.run_lockstep``: one batched generate per step for every running episode,
without caches; "lockstep cached" adds the kept KV caches (``kv_cache=True``): each lane
prefills only what its transcript appended, the system prompt is encoded once. The three run
interleaved in one process (so a busy machine slows all alike); medians over the repeats and
the median of the per-repeat ratios are reported, with prefill tokens per lane-step.

    python bench/bench_generation.py --episodes 8 --max-steps 8 --repeats 3
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Row, base_parser, median, profile_text, report  # noqa: E402

TARGET_RATIO = 4.0


def make_policy(model_dir: str | None, max_new_tokens: int, kv_cache: bool):
    from srelib.policies.llm.providers.hf_chat import HFTransformersChatPolicy
    from srelib.training.tiny_model import tiny_chat_model

    path = tiny_chat_model(model_dir or Path(tempfile.gettempdir()) / "srelib-bench-tiny-model")
    return HFTransformersChatPolicy(path, load_in_4bit=False, torch_dtype="float32",
                                    temperature=0.0, max_new_tokens=max_new_tokens,
                                    max_batch_size=64, kv_cache=kv_cache, name="tiny")


def jobs_for(episodes: int):
    import srelib
    from srelib.runners.rollout import EpisodeJob

    return [EpisodeJob("tiny", srelib.TASKS[n % len(srelib.TASKS)], None, "joint", n)
            for n in range(episodes)]


def one_at_a_time(policy, jobs, max_steps: int) -> tuple[float, int]:
    """(wall seconds, steps) for the jobs run one after another, one generate per step."""
    import srelib
    from srelib.runners.rollout import run_episode

    start = time.perf_counter()
    steps = 0
    for job in jobs:
        episode = run_episode(srelib.IncidentEnv(), policy, task=job.task, mode=job.mode,
                              seed=job.seed, max_steps=max_steps)
        steps += _steps(episode)
    return time.perf_counter() - start, steps


def lockstep(policy, jobs, max_steps: int) -> tuple[float, int]:
    """(wall seconds, steps) for the jobs run together, one batched generate per step."""
    from srelib.runners.lockstep import run_lockstep

    start = time.perf_counter()
    episodes = run_lockstep(policy, jobs, max_steps=max_steps)
    return time.perf_counter() - start, sum(_steps(e) for e in episodes)


def _steps(episode) -> int:
    if episode.error:
        raise RuntimeError(f"episode {episode.task}/{episode.seed} failed:\n{episode.error}")
    return sum(1 for record in episode.steps if record["step"] > 0)


RUNNERS = {"one_at_a_time": (one_at_a_time, False), "lockstep": (lockstep, False),
           "lockstep_cached": (lockstep, True)}


def run(episodes: int, max_steps: int, repeats: int, max_new_tokens: int,
        model_dir: str | None = None) -> list[Row]:
    policies = {cached: make_policy(model_dir, max_new_tokens, cached) for cached in (False, True)}
    jobs = jobs_for(episodes)
    for policy in policies.values():
        one_at_a_time(policy, jobs[:1], max_steps)  # warm-up: load kernels, fill caches
    timings: dict[str, list[tuple[float, int]]] = {name: [] for name in RUNNERS}
    prefill: dict[str, list[float]] = {name: [] for name in RUNNERS}
    for repeat in range(repeats):
        names = list(RUNNERS)[repeat % len(RUNNERS):] + list(RUNNERS)[:repeat % len(RUNNERS)]
        for name in names:
            runner, cached = RUNNERS[name]
            policy = policies[cached]
            mark = len(policy.usage)
            timings[name].append(runner(policy, jobs, max_steps))
            prefill[name] += [u["prefill_tokens"] for u in policy.usage[mark:]]
    note = f"{episodes} episodes, <= {max_steps} steps, {max_new_tokens} new tokens/step"
    rows = []
    for name, runs in timings.items():
        rows.append(Row("generation", f"{name} episodes/s", median(episodes / w for w, _ in runs),
                        "ep/s", note=note if name == "one_at_a_time" else ""))
        rows.append(Row("generation", f"{name} steps/s", median(s / w for w, s in runs), "steps/s"))
        rows.append(Row("generation", f"{name} prefill tokens per lane-step",
                        sum(prefill[name]) / len(prefill[name]), "tokens"))
    serial = [w for w, _ in timings["one_at_a_time"]]
    for name, target in (("lockstep", None), ("lockstep_cached", TARGET_RATIO)):
        ratio = median(s / w for s, (w, _) in zip(serial, timings[name]))
        rows.append(Row("generation", f"{name} / one-at-a-time episodes/s", ratio, "x",
                        f">= {target:g}x" if target else "", ratio >= target if target else None,
                        f"median of {repeats} interleaved repeats"))
    return rows


def main(argv: list[str] | None = None) -> list[Row]:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--max-steps", type=int, default=8, help="step cap per episode")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model-dir", help="where to build (or reuse) the tiny model")
    parser.add_argument("--profile", type=int, metavar="TOP",
                        help="instead, cProfile one lockstep run and print the TOP functions")
    parser.add_argument("--no-cache", action="store_true", help="profile without KV caches")
    args = parser.parse_args(argv)
    if args.profile:
        policy = make_policy(args.model_dir, args.max_new_tokens, not args.no_cache)
        jobs = jobs_for(args.episodes)
        lockstep(policy, jobs[:1], args.max_steps)
        print(profile_text(lambda: lockstep(policy, jobs, args.max_steps), args.profile))
        return []
    rows = run(args.episodes, args.max_steps, args.repeats, args.max_new_tokens, args.model_dir)
    report(rows, args.json)
    return rows


if __name__ == "__main__":
    main()
