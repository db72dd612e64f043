"""Soak: ``srelib serve`` under session churn and bad clients, its RSS and p99 step latency over time.

Sessions clients each play episodes of the scripted heuristic-revert policy (which proposes
patches, so grading and its memo are exercised), every episode on a fresh WebSocket session
(open, reset, steps, close); one more client keeps sending malformed frames. Every
``--window`` seconds the server's RSS and the p50/p99 latency of the steps in that window are
recorded. Held to: no failed episode, every bad frame answered, and RSS flat after warm-up
(the last window within ``RSS_TARGET_MB`` of the first window with steps).

    python bench/bench_soak.py                      # 10 minutes, 30 s windows
    python bench/bench_soak.py --minutes 1 --window 10
"""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_serve import ServerProcess, episode_mix, policy  # noqa: E402
from common import Row, base_parser, report  # noqa: E402

RSS_TARGET_MB = 20.0
BAD_FRAMES = ("null", "[1, 2]", "[" * 5000 + "]" * 5000, '{"type": "reset", "data": {"seed": ' + "9" * 5000 + "}}",
              '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}')


async def _episode(url: str, job, latencies: list) -> None:
    from srelib.serve.remote import SreClient
    from srelib.runners.rollout import reset_policy
    from srelib.serve.wire import SreAction, observation_dict

    task, pool, seed = job
    agent = policy()
    async with SreClient(base_url=url) as client:  # a fresh session per episode: churn
        result = await client.reset(task=task, pool=pool, seed=seed)
        reset_policy(agent, seed, task)
        while not result.done:
            fields = result.observation.model_dump(exclude={"reward", "done"})
            obs = observation_dict(fields, result.done)
            start = time.perf_counter()
            result = await client.step(SreAction(**agent(obs, obs["current_phase"], task)))
            latencies.append((time.monotonic(), time.perf_counter() - start))


async def _bad_client(url: str, deadline: float, counts: dict) -> None:
    """Malformed frames on one WebSocket, reconnecting (and counting it) if it is lost."""
    from websockets.asyncio.client import connect

    frames = itertools.cycle(BAD_FRAMES)
    while time.monotonic() < deadline:
        try:
            async with connect(url.replace("http", "ws") + "/ws", max_size=None) as ws:
                while time.monotonic() < deadline:
                    await ws.send(next(frames))
                    reply = json.loads(await ws.recv())
                    counts["bad_frames"] += 1
                    counts["answered"] += reply.get("type") == "error"
                    await asyncio.sleep(0.2)
        except Exception as exc:  # noqa: BLE001 - counted and reported, the soak goes on
            counts["bad_client_lost"] += 1
            print(f"bad client lost its connection: {exc!r}", file=sys.stderr)


def soak(server: ServerProcess, sessions: int, seconds: float, window: float) -> tuple[list, dict]:
    """Run the soak; ``(windows, counts)``, a window being ``(t_s, rss_mb, steps, p50_ms, p99_ms)``."""
    jobs = itertools.cycle(episode_mix(2))
    latencies: list = []
    counts = {"episodes": 0, "errors": 0, "bad_frames": 0, "answered": 0, "bad_client_lost": 0}
    windows: list = []
    start = time.monotonic()
    deadline = start + seconds

    async def player():
        while time.monotonic() < deadline:
            try:
                await _episode(server.url, next(jobs), latencies)
                counts["episodes"] += 1
            except Exception as exc:  # noqa: BLE001 - counted and reported, the soak goes on
                counts["errors"] += 1
                print(f"episode failed: {exc}", file=sys.stderr)

    async def sampler():
        mark = start
        while time.monotonic() < deadline:
            await asyncio.sleep(window)
            now = time.monotonic()
            recent = sorted(d for t, d in latencies if mark <= t < now)
            mark = now
            p99 = recent[min(len(recent) - 1, int(0.99 * len(recent)))] if recent else float("nan")
            windows.append((round(now - start), round(server.rss_mb(), 1), len(recent),
                            round(1000 * statistics.median(recent), 2) if recent else float("nan"),
                            round(1000 * p99, 2)))
            print(f"t={windows[-1][0]}s rss={windows[-1][1]} MB steps={windows[-1][2]} "
                  f"p50={windows[-1][3]} ms p99={windows[-1][4]} ms", file=sys.stderr)

    async def everything():
        await asyncio.gather(sampler(), _bad_client(server.url, deadline, counts),
                             *(player() for _ in range(sessions)))

    asyncio.run(everything())
    return windows, counts


def main(argv: list[str] | None = None) -> list[Row]:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--window", type=float, default=30.0, help="seconds per sample")
    parser.add_argument("--sessions", type=int, default=8, help="concurrent playing clients")
    args = parser.parse_args(argv)
    server = ServerProcess(max_sessions=args.sessions + 4)
    try:
        windows, counts = soak(server, args.sessions, 60 * args.minutes, args.window)
    finally:
        server.close()
    warm = next((w for w in windows if w[2]), windows[0])  # the first window with steps
    growth = windows[-1][1] - warm[1]
    rows = [Row("soak", f"{t}s: RSS, steps, p50, p99", f"{rss} MB, {n}, {p50} ms, {p99} ms")
            for t, rss, n, p50, p99 in windows]
    rows += [
        Row("soak", "episodes, each on a fresh session", counts["episodes"], "ep", "no errors",
            met=counts["errors"] == 0, note=f"{counts['errors']} errors"),
        Row("soak", "bad frames answered with an error", counts["answered"], "frames",
            f"all {counts['bad_frames']}", met=counts["answered"] == counts["bad_frames"] > 0,
            note=f"the bad client's connection lost {counts['bad_client_lost']} times"),
        Row("soak", f"RSS growth, {warm[0]}s to the end", round(growth, 1), "MB",
            f"< {RSS_TARGET_MB:g} MB", met=growth < RSS_TARGET_MB),
    ]
    report(rows, args.json)
    return rows


if __name__ == "__main__":
    main()
