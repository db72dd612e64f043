"""Lockstep batches: many episodes of one batch policy stepped together, one ``act_batch``
call per step for every episode still running (how chat policies batch their model calls)."""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping, Sequence

from srelib.episode import EpisodeRun, EpisodeSteps, advance, episode_steps
from srelib.policies.base import call_reset
from srelib.policies.oracle import hand_answer, needs_answer
from srelib.policies.specs import instantiate
from srelib.results.store import Episode
from srelib.runners.usage import usage_mark, usage_per_item


class _Lane:
    """One episode of a batch: its job, environment, steps and the usage it caused."""

    def __init__(self, job: Any, env: Any, steps: EpisodeSteps):
        self.job, self.env, self.steps = job, env, steps
        self.run: EpisodeRun = advance(steps, first=True)
        self.tokens: int | None = None
        self.latency_s: float | None = None

    def charge(self, usage: tuple[int, float] | None) -> None:
        if usage is not None:
            self.tokens = (self.tokens or 0) + usage[0]
            self.latency_s = (self.latency_s or 0.0) + usage[1]


def run_lockstep(policy: Any, jobs: Sequence, *, max_steps: int | None = None,
                 null_repair: Mapping[str, float] | None = None,
                 env: Callable[[], Any] | None = None) -> list[Episode]:
    """Run ``jobs`` (:class:`~srelib.runners.play.EpisodeJob`) together with a batch policy.

    ``act_batch`` receives ``(observation, phase, task_name, lane)`` for the episodes still
    running (``lane`` is the job's position), after ``reset_batch([(seed, task), ...])`` where
    the policy offers it (else one ``reset``). Usage records of a call are attributed to the
    lanes in item order (one record per conversation, as the chat policies write them). If a
    call raises, every running episode of the batch ends with that error. ``env`` is a
    zero-argument factory of environments (default ``IncidentEnv``), one per lane.
    """
    from srelib.env.core import IncidentEnv
    from srelib.runners.play import episode_record

    make_env = env or IncidentEnv
    policy = instantiate(policy, copy_instance=False)
    start = time.perf_counter()
    lanes = []
    for job in jobs:
        lane_env = make_env()
        lanes.append(_Lane(job, lane_env, episode_steps(lane_env, job.spec, max_steps=max_steps)))
    started = [lane.run for lane in lanes if lane.run.info]
    reset_batch = getattr(policy, "reset_batch", None)
    if callable(reset_batch):
        reset_batch([(run.seed, run.task) for run in started])
        for run in started:
            hand_answer(policy, run.task, run.seed)
    elif started:
        call_reset(policy, started[0].seed, started[0].task)
    while True:
        active = [i for i, lane in enumerate(lanes) if not lane.run.done]
        if not active:
            break
        items = [(lanes[i].run.obs, lanes[i].run.phase, lanes[i].run.task, i) for i in active]
        mark = usage_mark(policy)
        try:
            actions = list(policy.act_batch(items))
            if len(actions) != len(items):
                raise ValueError(f"act_batch returned {len(actions)} actions for {len(items)} items")
        except Exception as exc:  # noqa: BLE001 - record the failure on every lane, keep the run
            for i in active:
                lanes[i].run = advance(lanes[i].steps, error=exc)
            break
        for i, usage in zip(active, usage_per_item(policy, mark, len(active))):
            lanes[i].charge(usage)
        for i, action in zip(active, actions):
            lanes[i].run = advance(lanes[i].steps, action)
    wall = (time.perf_counter() - start) / max(1, len(lanes))
    oracle = needs_answer(policy)
    return [episode_record(lane.env, lane.run, lane.job.policy, null_repair, lane.tokens,
                           lane.latency_s, wall, oracle=oracle) for lane in lanes]

