"""srelib as an Inspect AI task: ``inspect eval srelib/integrations/inspect_ai.py --model ...``.

:func:`srelib_incidents` is the ``@task``. Each sample is one episode (task, pool, seed) of a
task spec (``-T tasks=classic -T pool=C -T seeds=1``); its input is the opening observation.
The solver (:func:`play_incident`) plays it through Inspect's tool calls: the tools are the
actions, with the schemas of :func:`srelib.policies.llm.tools.tool_definitions`, and each call steps
the sample's :class:`~srelib.env.core.IncidentEnv` and returns the observation as the
tool-calling policies see it. The episode ends when the environment ends it (a patch, a
declaration, the step budget) or when the model answers without a tool call. The scorer
(:func:`episode_score`) is srelib's grader, ``score_trajectory``: the value is the final
score, the metadata every component of its breakdown. Needs the ``inspect`` extra.
"""

from __future__ import annotations

from typing import Any

from srelib.extras import require

require("inspect_ai", "srelib.integrations.inspect_ai")
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.scorer import Score, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolDef, ToolParams

_ENV_KEY = "srelib_env"  # where a sample's environment lives in its store
_OBS_CHARS = 4000


def incident_samples(tasks: str = "classic", pool: str = "C", seeds: int = 1) -> list[Sample]:
    """One sample per task of ``tasks`` that ``pool`` accepts and seed ``0..seeds-1``."""
    from srelib.env.tasks.catalog import resolve_tasks
    from srelib.env.tasks.pools import POOLS

    if pool not in POOLS:
        raise ValueError(f"unknown pool {pool!r}; valid pools: {sorted(POOLS)}")
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"seeds must be a positive integer, got {seeds!r}")
    from srelib.env.tasks.ids import task_id

    chosen = [task_id(t) for t in resolve_tasks(tasks) if POOLS[pool].accepts(t)]
    if not chosen:
        raise ValueError(f"no task of {tasks!r} is in pool {pool}")
    return [Sample(id=f"{t}:{pool}:{seed}", input=_opening(t, pool, seed),
                   metadata={"task": t, "pool": pool, "seed": seed})
            for t in chosen for seed in range(seeds)]


def _opening(task_id: str, pool: str, seed: int) -> str:
    from srelib.env.core import IncidentEnv
    from srelib.policies.llm.prompts import render_incident, render_observation

    observation, _ = IncidentEnv().reset(task=task_id, pool=pool, seed=seed)
    return f"{render_incident(observation)}\n\n{render_observation(observation, _OBS_CHARS, tools=True)}"


def action_tools(env) -> list[ToolDef]:
    """The actions as Inspect tools that step ``env``."""
    from srelib.policies.llm.tools import tool_definitions

    return [ToolDef(_stepper(env, f["name"]), name=f["name"], description=f["description"],
                    parameters=ToolParams.model_validate(f["parameters"]))
            for f in (t["function"] for t in tool_definitions())]


def _stepper(env, name: str):
    async def step(**arguments: Any) -> str:
        from srelib.policies.llm.prompts import render_observation
        from srelib.policies.llm.tools import action_from_tool_call

        if env.state.done:
            return "The episode is over; no further actions are taken."
        observation, *_ = env.step(action_from_tool_call(name, arguments))
        return render_observation(observation, _OBS_CHARS, tools=True)
    return step


@solver
def play_incident(max_turns: int = 60):
    """Play the sample's episode: a fresh environment, the actions as tools, one model turn
    (and its tool calls) at a time until the episode ends or the model calls no tool."""
    from srelib.env.core import IncidentEnv
    from srelib.policies.llm.prompts import TOOL_SYSTEM_PROMPT

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        env = IncidentEnv()
        meta = state.metadata
        env.reset(task=meta["task"], pool=meta["pool"], seed=meta["seed"])
        state.store.set(_ENV_KEY, env)
        state.tools = action_tools(env)
        state.messages = [ChatMessageSystem(content=TOOL_SYSTEM_PROMPT),
                          ChatMessageUser(content=state.input_text)]
        for _turn in range(max_turns):
            state = await generate(state, tool_calls="single")
            if not state.output.message.tool_calls or env.state.done:
                break
        return state

    return solve


@scorer(metrics=[mean(), stderr()])
def episode_score():
    """srelib's grader on the sample's trajectory (an unfinished episode as it stands)."""
    async def score(state: TaskState, target: Target) -> Score:
        from srelib.env.grading.score import score_trajectory

        env = state.store.get(_ENV_KEY)
        breakdown = dict(score_trajectory(env.state.task, env.state.mode, env.trajectory))
        return Score(value=breakdown["final"], answer=f"{len(env.trajectory)} steps",
                     explanation="srelib score_trajectory; metadata holds every component",
                     metadata=breakdown)
    return score


@task
def srelib_incidents(tasks: str = "classic", pool: str = "C", seeds: int = 1,
                     max_turns: int = 60) -> Task:
    """srelib's incidents, played through tool calls and scored by srelib's grader."""
    return Task(dataset=MemoryDataset(incident_samples(tasks, pool, int(seeds)), name="srelib"),
                solver=play_incident(int(max_turns)), scorer=episode_score())
