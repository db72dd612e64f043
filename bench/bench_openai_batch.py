"""OpenAI-compatible batching: ``act_batch`` overlapping requests against calls one at a time.

A real ``transformers serve`` on loopback serves the tiny offline Gemma-architecture model
(``srelib.training.tiny_model.serve_tiny_model``). The same 8 first-turn observations (8 tasks, seed n)
go to ``OpenAIChatPolicy`` two ways, interleaved: one ``act_batch`` call with
``max_concurrency=8``, and 8 single calls one after another. Reported: medians of the wall
times, the median of the per-repeat ratios, and the most requests that were in flight at once
during a batched call (from each call's start and end), which shows the overlap whatever the
server makes of it.

    python bench/bench_openai_batch.py --lanes 8 --repeats 5
    python bench/bench_openai_batch.py --continuous-batching   # the server batches too
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Row, base_parser, median, report  # noqa: E402


def first_turns(lanes: int) -> list[tuple]:
    """``act_batch`` items: the reset observation of ``lanes`` episodes (distinct tasks/seeds)."""
    import srelib

    items = []
    for n in range(lanes):
        task = srelib.TASKS[n % len(srelib.TASKS)]
        observation, _ = srelib.IncidentEnv().reset(task=task, mode="joint", seed=n)
        items.append((observation, 1, task, n))
    return items


def in_flight(records: list[dict]) -> int:
    """The most calls running at the same moment, from their end times and latencies."""
    events = sorted([(r["t"] - r["latency_s"], 1) for r in records] +
                    [(r["t"], -1) for r in records], key=lambda e: (e[0], e[1]))
    running = peak = 0
    for _, change in events:
        running += change
        peak = max(peak, running)
    return peak


def run(lanes: int, repeats: int, max_tokens: int, continuous_batching: bool,
        model_dir: str | None) -> list[Row]:
    from srelib.policies import OpenAIChatPolicy
    from srelib.training.tiny_model import TINY_PROMPT_LIMITS, serve_tiny_model

    items = first_turns(lanes)
    args = ("--continuous-batching",) if continuous_batching else ()
    path = model_dir or Path(tempfile.gettempdir()) / "srelib-bench-tiny-model"
    with serve_tiny_model(path, serve_args=args) as served:
        policy = OpenAIChatPolicy(served.model, base_url=served.base_url, api_key="local",
                                  temperature=0.0, max_tokens=max_tokens, max_concurrency=lanes,
                                  max_retries=0, timeout=300, fold_system=True,
                                  **TINY_PROMPT_LIMITS)

        def batched() -> tuple[float, int]:
            policy.reset(seed=0)
            mark = len(policy.usage)
            start = time.perf_counter()
            policy.act_batch(items)
            wall = time.perf_counter() - start
            return wall, in_flight(policy.usage[mark:])

        def one_by_one() -> tuple[float, int]:
            policy.reset(seed=0)
            start = time.perf_counter()
            for item in items:
                policy.act_batch([item])
            return time.perf_counter() - start, 1

        one_by_one()  # warm-up: the server's first request loads the model
        timings: dict[str, list[tuple[float, int]]] = {"sequential": [], "act_batch": []}
        runners = {"sequential": one_by_one, "act_batch": batched}
        for repeat in range(repeats):
            for name in (list(runners) if repeat % 2 == 0 else list(runners)[::-1]):
                timings[name].append(runners[name]())
        failed = [u for u in policy.usage if u.get("error")]
    if failed:
        raise RuntimeError(f"{len(failed)} calls failed; first: {failed[0]['error']}")
    server = "continuous batching" if continuous_batching else "default server"
    ratios = [s / b for (s, _), (b, _) in zip(timings["sequential"], timings["act_batch"])]
    return [
        Row("openai_batch", f"{lanes} calls one at a time", median(w for w, _ in
            timings["sequential"]), "s", note=f"transformers serve, {server}, "
            f"{max_tokens} max tokens"),
        Row("openai_batch", f"act_batch, max_concurrency={lanes}",
            median(w for w, _ in timings["act_batch"]), "s"),
        Row("openai_batch", "requests in flight at once (act_batch)",
            min(n for _, n in timings["act_batch"]), "", f"= {lanes}",
            min(n for _, n in timings["act_batch"]) == lanes, "the least over the repeats"),
        Row("openai_batch", "act_batch / sequential speed-up", median(ratios), "x",
            note=f"median of {repeats} interleaved pairs"),
    ]


def main(argv: list[str] | None = None) -> list[Row]:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--continuous-batching", action="store_true",
                        help="start transformers serve with --continuous-batching")
    parser.add_argument("--model-dir", help="where to build (or reuse) the tiny model")
    args = parser.parse_args(argv)
    rows = run(args.lanes, args.repeats, args.max_tokens, args.continuous_batching,
               args.model_dir)
    report(rows, args.json)
    return rows


if __name__ == "__main__":
    main()
