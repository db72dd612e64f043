"""srelib as a TRL environment: ``GRPOTrainer(environment_factory=IncidentToolEnv)``.

TRL's ``GRPOTrainer`` builds one environment per rollout, calls ``reset(**row)`` with the
dataset row, exposes every public method as a tool the model may call, and scores the finished
rollout with ``get_reward()``. :class:`IncidentToolEnv` has one method per agent action,
generated from the action vocabulary (the same schema as :func:`srelib.policies.llm.tools.tool_definitions`:
typed parameters, a docstring with each parameter's meaning). A method steps the environment
and returns the rendered observation, as the chat policies render it; an action outside the
current phase or after the budget is spent gets the environment's error text and ends nothing
by itself. ``get_reward`` is the episode score, the validity-gated one, never shaping.

``reset`` takes the row's ``task``, ``pool`` and ``seed`` when the dataset has those columns;
otherwise it takes the row's ``rollout`` (an integer) and draws them from a
:class:`TaskDistribution` seeded by it. Either way every completion of one prompt (a GRPO
group) plays the same incident and a run reproduces.
"""

from __future__ import annotations

import inspect
import random
from dataclasses import dataclass
from typing import Any, Sequence

from srelib.env.actions import PARSE_ERROR, ActionType
from srelib.policies.llm.tools import (action_from_tool_call, parameter_annotation, parameter_text,
                                   tool_description, tool_parameters)


@dataclass(frozen=True)
class TaskDistribution:
    """Which incidents a training run plays: ``tasks`` (``"all"``, the classic tasks, or a task
    spec: ids and suites such as ``"generated:train"``) in ``pools``, each pool keeping the
    tasks of its split, drawn with ``random.Random(f"{seed}:{rollout}")`` for rollout ``rollout``."""

    tasks: str | Sequence[str] = "all"
    pools: Sequence[str] = ("C",)
    seed: int = 0

    def choices(self) -> list[tuple[str, str]]:
        """Every ``(task, pool)`` this distribution draws from."""
        from srelib.env.tasks.catalog import expand_tasks
        from srelib.env.tasks.pools import POOLS

        unknown = [p for p in self.pools if p not in POOLS]
        if unknown or not self.pools:
            raise ValueError(f"unknown pools {unknown}; valid pools: {sorted(POOLS)}")
        wanted = expand_tasks(self.tasks)
        pairs = [(t, p) for p in self.pools for t in wanted if POOLS[p].accepts(t)]
        if not pairs:
            raise ValueError(f"tasks {self.tasks!r} are in none of the pools {list(self.pools)}")
        return pairs

    def draw(self, rollout: int) -> tuple[str, str, int]:
        """``(task, pool, seed)`` for rollout index ``rollout``: the same index, the same draw."""
        rng = random.Random(f"{self.seed}:{int(rollout)}")
        task, pool = rng.choice(self.choices())
        return task, pool, rng.randrange(2**31)


class IncidentToolEnv:
    """One rollout's environment for TRL (see the module doc)."""

    distribution = TaskDistribution()

    def __init__(self, distribution: TaskDistribution | None = None, obs_chars: int = 4000):
        from srelib.env.core import IncidentEnv

        self.distribution = distribution or self.distribution
        self.obs_chars = obs_chars
        self.env = IncidentEnv()
        self.info: dict[str, Any] = {}
        self.done = False
        self.final: float | None = None
        self.unreadable_calls = 0

    def reset(self, rollout: int = 0, task: str | None = None, pool: str | None = None,
              seed: int | None = None, **row: Any) -> str:
        """Start an incident; returns its opening observation as text. A dataset row's
        ``task``, ``pool`` and ``seed`` choose it where present (a task without a pool plays
        in the environment's default pool); the rest is drawn for ``rollout``. Other columns
        are ignored."""
        from srelib.policies.llm.prompts import render_incident, render_observation

        chosen = dict(zip(("task", "pool", "seed"), self.distribution.draw(rollout)))
        if task is not None or pool is not None:  # the row names the incident
            chosen.update(task=task, pool=pool)
        if seed is not None:
            chosen["seed"] = seed
        observation, self.info = self.env.reset(**chosen)
        self.done, self.final, self.unreadable_calls = False, None, 0
        return f"{render_incident(observation)}\n\n{render_observation(observation, self.obs_chars, tools=True)}"

    def get_reward(self) -> float:
        """The episode's final score (a rollout that never finished is scored as it stands).

        Raises:
            GradingError: the grader could not grade it (:mod:`srelib.env.grading.errors`):
                no reward is made up for it.
        """
        if self.final is None:
            from srelib.env.grading.score import score_trajectory

            self.final = float(score_trajectory(self.info["task"], self.info["mode"],
                                                self.env.trajectory)["final"])
        return self.final

    def _act(self, name: str, arguments: dict[str, Any]) -> str:
        from srelib.policies.llm.prompts import render_observation

        if self.done:
            return "The episode is over; no further actions are taken."
        action = action_from_tool_call(name, arguments)
        self.unreadable_calls += action["action_type"] == PARSE_ERROR
        observation, _reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            self.done = True  # no score where the grader failed: get_reward grades again
            self.final = None if info.get("score") is None else float(info["score"]["final"])
        return render_observation(observation, self.obs_chars, tools=True)


def _tool_method(action: ActionType):
    """A method named for ``action`` whose signature and docstring state its tool schema
    (:mod:`srelib.policies.llm.tools`: types, choices as ``Literal``, defaults, descriptions)."""
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    lines = [tool_description(action), "", "Args:"]
    for name, param in tool_parameters(action).items():
        annotation = parameter_annotation(param)
        default = inspect.Parameter.empty if param.required else param.default
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                            default=default, annotation=annotation))
        annotations[name] = annotation
        lines.append(f"    {name}: {parameter_text(param)}")
    if len(lines) == 3:
        lines = lines[:1]
    lines += ["", "Returns:", "    What the action showed, as text."]

    def method(self, **arguments: Any) -> str:
        return self._act(action.value, {k: v for k, v in arguments.items() if v is not None})

    method.__name__ = method.__qualname__ = action.value
    method.__doc__ = "\n".join(lines)
    method.__annotations__ = annotations
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)
    return method


for _action in ActionType:
    setattr(IncidentToolEnv, _action.value, _tool_method(_action))
del _action
