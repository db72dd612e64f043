"""The one episode loop: an :class:`EpisodeSpec` resolved up front, and the stepping generator
:func:`episode_steps` that every runner drives.

``run_episode`` and the lockstep batches (:mod:`srelib.runners.rollout`), the validity gate, the
widgets' stepper and the replay of stored episodes (:mod:`srelib.results.verify`) all step an
environment through :func:`episode_steps`, so they agree on when an episode ends and how a
failure is recorded::

    steps = episode_steps(env, EpisodeSpec.resolve(task="memory_leak", pool="C", seed=7))
    run = drive(steps, lambda run: policy(run.obs, run.phase, run.task))
    run.info["score"], run.ended_by

The generator yields the live :class:`EpisodeRun` each time an action is due and takes the
action through ``send``; an exception thrown in with ``throw`` (the policy failed) ends the
episode as ``policy_error``. It returns the finished run.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Generator

from srelib.env.tasks.spec import EpisodeSpec
from srelib.env.types import Observation
from srelib.redact import redact_text

#: How an episode that did not end by itself ended: the runner's cap, a policy or env failure.
RUNNER_ENDINGS = ("max_steps", "policy_error", "env_error")


@dataclass
class EpisodeRun:
    """A running (then finished) episode as the loop sees it: the last observation, reward and
    info, the policy calls made, and how it ended."""

    spec: EpisodeSpec
    obs: Observation = field(default_factory=Observation)
    info: dict = field(default_factory=dict)
    reward: float = 0.0
    calls: int = 0
    terminated: bool = False
    truncated: bool = False
    ended_by: str | None = None
    error: str | None = None

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated or self.error is not None

    @property
    def task(self) -> str | None:
        """The task being played (drawn by ``reset`` when the spec left it open)."""
        return self.info.get("task", self.spec.task)

    @property
    def seed(self) -> int | None:
        return self.info.get("seed", self.spec.seed)

    @property
    def phase(self) -> int:
        return int(self.obs.get("current_phase", 1))

    def fail(self, ended_by: str) -> None:
        """End the episode on the exception being handled, keeping its traceback (secrets
        redacted: it is stored with the episode)."""
        self.error, self.ended_by = redact_text(traceback.format_exc(limit=8)), ended_by

    def step(self, env: Any, action: Any) -> None:
        """One ``env.step``; an exception from the environment ends this episode only."""
        try:
            obs, reward, self.terminated, self.truncated, info = env.step(action)
        except Exception:  # noqa: BLE001 - one broken episode must not lose the run
            self.fail("env_error")
            return
        self.obs, self.reward, self.info = obs, reward, info
        self.calls += 1
        if self.terminated or self.truncated:
            self.ended_by = info.get("ended_by") or ("terminated" if self.terminated else "budget")


EpisodeSteps = Generator[EpisodeRun, Any, EpisodeRun]


def episode_steps(env: Any, spec: EpisodeSpec, *,
                  max_steps: int | None = None) -> EpisodeSteps:
    """Reset ``env`` to ``spec``, then yield the run whenever an action is due and apply the
    action sent back, until the episode ends; return the finished run.

    Args:
        env: an :class:`IncidentEnv` (or anything with its ``reset`` and ``step``).
        spec: the task, pool, mode and seed (:meth:`EpisodeSpec.resolve`).
        max_steps: caps the actions taken (the environment's own budget still applies);
            hitting it ends the run as truncated with ``ended_by="max_steps"``.

    Returns:
        A generator of :class:`EpisodeRun`: send it each action; its return value is the
        finished run. Any reset failure but a ``ValueError`` ends the run at once as
        ``env_error``.

    Raises:
        ValueError: from ``reset``: an unknown task, or a task outside the pool (the caller's
            mistake).
    """
    run = EpisodeRun(spec)
    try:
        run.obs, run.info = env.reset(**spec.reset_kwargs())
    except ValueError:
        raise
    except Exception:  # noqa: BLE001 - e.g. a remote environment that failed: this episode only
        run.fail("env_error")
        return run
    while not run.done:
        if max_steps is not None and run.calls >= max_steps:
            run.truncated, run.ended_by = True, "max_steps"
            break
        try:
            action = yield run
        except Exception:  # noqa: BLE001 - thrown in by the driver: the policy failed
            run.fail("policy_error")
            break
        run.step(env, action)
    return run


def drive(steps: EpisodeSteps, choose: Callable[[EpisodeRun], Any]) -> EpisodeRun:
    """Play ``steps`` to the end, asking ``choose`` for each action.

    Args:
        steps: the generator :func:`episode_steps` returns.
        choose: ``choose(run) -> action`` for the run in progress; an exception it raises ends
            the episode as ``policy_error``.

    Returns:
        The finished :class:`EpisodeRun`.
    """
    run = advance(steps, first=True)
    while not run.done:
        try:
            action = choose(run)
        except Exception as exc:  # noqa: BLE001 - recorded on the episode, not raised
            run = advance(steps, error=exc)
        else:
            run = advance(steps, action)
    return run


def advance(steps: EpisodeSteps, action: Any = None, *, first: bool = False,
            error: BaseException | None = None) -> EpisodeRun:
    """One move of ``steps``: start it (``first``), send ``action``, or throw the policy's
    ``error`` in (the episode then ends as ``policy_error``). Returns the run, finished or not
    (the same object every time)."""
    try:
        if first:
            return next(steps)
        return steps.send(action) if error is None else steps.throw(error)
    except StopIteration as stop:
        return stop.value
