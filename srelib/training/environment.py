"""srelib as a TRL environment: ``GRPOTrainer(environment_factory=IncidentToolEnv)``.

TRL's ``GRPOTrainer`` builds one environment per rollout, calls ``reset(**row)`` with the
dataset row, exposes every public method as a tool the model may call, and scores the finished
rollout with ``get_reward()``. :class:`IncidentToolEnv` has one method per agent action,
generated from the action vocabulary (the same schema as :func:`srelib.policies.tools.tool_definitions`:
typed parameters, a docstring with each parameter's meaning). A method steps the environment
and returns the rendered observation, as the chat policies render it; an action outside the
current phase or after the budget is spent gets the environment's error text and ends nothing
by itself. ``get_reward`` is the episode score, the validity-gated one, never shaping.

``reset`` takes the row's ``rollout`` (an integer) and draws the task, pool and seed from a
:class:`TaskDistribution` seeded by it, so every completion of one prompt (a GRPO group) plays
the same incident and a run reproduces.
"""

from __future__ import annotations

import inspect
import random
from dataclasses import dataclass
from typing import Any, Sequence

from srelib.env.actions import ACTION_SPECS, PARSE_ERROR, SERVICES, ActionType
from srelib.policies.tools import action_from_tool_call, tool_description

_PY_TYPES = {str: str, int: int, bool: bool, float: float, dict: dict}


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
        from srelib.env.catalog import resolve_tasks
        from srelib.env.pools import POOLS

        unknown = [p for p in self.pools if p not in POOLS]
        if unknown or not self.pools:
            raise ValueError(f"unknown pools {unknown}; valid pools: {sorted(POOLS)}")
        wanted = None if self.tasks == "all" else resolve_tasks(self.tasks)
        pairs = [(t, p) for p in self.pools
                 for t in (POOLS[p].tasks if wanted is None else wanted) if POOLS[p].accepts(t)]
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

    def reset(self, rollout: int = 0, **row: Any) -> str:
        """Start the incident drawn for ``rollout``; returns its opening observation as text."""
        from srelib.policies.prompts import render_incident, render_observation

        task, pool, seed = self.distribution.draw(rollout)
        observation, self.info = self.env.reset(task=task, pool=pool, seed=seed)
        self.done, self.final, self.unreadable_calls = False, None, 0
        return f"{render_incident(observation)}\n\n{render_observation(observation, self.obs_chars, tools=True)}"

    def get_reward(self) -> float:
        """The episode's final score (a rollout that never finished is scored as it stands)."""
        if self.final is None:
            from srelib.env.grading import score_trajectory

            self.final = float(score_trajectory(self.info["task"], self.info["mode"],
                                                self.env.trajectory)["final"])
        return self.final

    def _act(self, name: str, arguments: dict[str, Any]) -> str:
        from srelib.policies.prompts import render_observation

        if self.done:
            return "The episode is over; no further actions are taken."
        action = action_from_tool_call(name, arguments)
        self.unreadable_calls += action["action_type"] == PARSE_ERROR
        observation, _reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            self.done = True
            self.final = float(info["score"]["final"])
        return render_observation(observation, self.obs_chars, tools=True)


def _tool_method(action: ActionType):
    """A method named for ``action`` whose signature and docstring state its parameters."""
    spec = ACTION_SPECS[action]
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    lines = [tool_description(action), "", "Args:"]
    if spec.targeted:
        parameters.append(inspect.Parameter("target_service", inspect.Parameter.KEYWORD_ONLY,
                                            annotation=str))
        annotations["target_service"] = str
        lines.append(f"    target_service: the service to act on, one of {', '.join(SERVICES)}")
    for name, param in spec.params.items():
        kind = _PY_TYPES[param.type]
        annotation = kind if param.required else kind | None
        default = inspect.Parameter.empty if param.required else param.default
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                            default=default, annotation=annotation))
        annotations[name] = annotation
        lines.append(f"    {name}: {param.description}")
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
