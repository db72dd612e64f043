"""What the server runs on its event loop and what on a worker thread (srelib.serve.scheduling),
asked of real resets and steps of a session's environment. Moved here from
test_env_protocol.py, where they asked IncidentEnv's former ``reset_loads``,
``transition_loads`` and ``patch_runs_tests``."""

from __future__ import annotations

import uuid
from dataclasses import asdict

import pytest

pytest.importorskip("openenv")

import srelib  # noqa: E402
from srelib.env.tasks import lookup  # noqa: E402
from srelib.env.tasks.ids import task_id  # noqa: E402
from srelib.serve import scheduling  # noqa: E402
from srelib.serve.scheduling import Reset, Step, on_thread  # noqa: E402
from srelib.serve.server import SreEnvironment  # noqa: E402
from srelib.serve.wire import SreAction  # noqa: E402


def loads(task=None, pool=None, mode=None) -> bool:
    return on_thread(Reset({"task": task, "pool": pool, "mode": mode}), None)


def session(**reset) -> SreEnvironment:
    env = SreEnvironment()
    env.play(Reset(dict(reset, seed=reset.get("seed", 1))))
    return env


def action(action_type: str, **parameters) -> Step:
    return Step(SreAction(action_type=action_type, parameters=parameters))


def transition(env: SreEnvironment) -> Step:
    return action("transition_to_phase2", belief=asdict(srelib.oracle_belief(env._env.scenario)))


def test_reset_loads_until_a_named_task_has_been_started_in_its_mode(monkeypatch):
    """A task's first reset in a mode may build it; a draw from a suite or a pool may build
    whichever task the seed picks."""
    monkeypatch.setattr(scheduling, "_STARTED", set())
    task = srelib.POOLS["A"].tasks[0]
    assert loads(task, "A") and loads(task, None, "p1_only")
    session(task=task, pool="A")
    assert not loads(task, "A") and not loads(task, None, "p1_only")  # pool A plays p1_only
    assert loads(task, None, "p2_only") and loads(task_id(task), "A")  # another spelling
    session(task="generated", pool="A")
    session(pool="A")
    assert loads("generated", "A") and loads(None, "A")
    assert loads(task, "Z") and loads(task, "A", "joint")  # refused by reset, on a thread


def test_a_reset_refused_for_its_types_or_options_is_refused_on_the_loop():
    """Nothing is built for a reset whose options are refused at once."""
    task = srelib.POOLS["A"].tasks[0]
    assert not on_thread(Reset({"task": task, "seed": "5"}), None)
    assert not on_thread(Reset({"task": task, "colour": "red"}), None)
    assert not on_thread(Reset({"task": 7}), None)


def test_reset_loads_again_once_what_it_loaded_has_left_memory():
    """The scenario and repository memos are bounded (the whole generated suite, both splits,
    does not fit): a task started before whose scenario or repository was evicted is built
    again, so its reset goes back to a worker thread."""
    from srelib.env.tasks.pools import reset_choices

    task = reset_choices("generated", None)[1][0]  # a generated task: its scenario is memoised
    session(task=task, mode="p2_only")
    assert not loads(task, None, "p2_only")
    for cached in (lookup.load_repo, lookup._generated):
        cached.cache_clear()
        assert loads(task, None, "p2_only")
        session(task=task, mode="p2_only")
        assert not loads(task, None, "p2_only")


def test_a_transition_loads_the_repository_while_it_is_not_in_memory():
    """Opening phase 2 loads the task's repository (tens of milliseconds the first time)
    unless it is in memory."""
    fresh = SreEnvironment()
    assert not on_thread(action("transition_to_phase2", belief={}), fresh._env)  # no episode
    assert not on_thread(action("transition_to_phase2", belief={}), None)  # closed
    env = session(task="memory_leak", mode="joint")
    lookup.load_repo.cache_clear()
    assert on_thread(transition(env), env._env)
    lookup.load_repo(env._env.scenario.repo)
    assert not on_thread(transition(env), env._env)
    lookup.load_repo.cache_clear()
    assert env.play(transition(env))[-1]["phase"] == 2
    lookup.load_repo.cache_clear()
    assert not on_thread(transition(env), env._env)  # phase 2: an invalid action, nothing loaded


def test_a_patch_runs_the_tests_in_phase_2_until_its_grade_is_memoised():
    """A patch step runs the hidden tests unless its grade is memoised; any other one costs
    what a plain step costs (invalid, inert, or graded from the memo)."""
    diff = f"--- a/{uuid.uuid4().hex}.py\n+++ b/{uuid.uuid4().hex}.py\n@@ -1 +1 @@\n-a\n+b\n"

    def runs(env, text=diff):
        return on_thread(action("propose_patch", diff=text), env._env)

    assert not runs(SreEnvironment())  # no episode
    assert not runs(session(task="memory_leak", mode="joint"))  # phase 1: an invalid action
    env = session(task="memory_leak", mode="p2_only")
    assert runs(env)
    assert env.play(action("propose_patch", diff=diff))[2]
    assert not runs(env, diff + "\n")  # the episode is over
    assert not runs(session(task="memory_leak", mode="p2_only", seed=2))  # memoised
    assert runs(session(task="severity_inversion", mode="p2_only", seed=2))
    assert on_thread(action("propose_patch", diff="x" * (scheduling.MEMO_CHECK_CHARS + 1)),
                     env._env)  # too long to ask the memo on the loop


def test_text_and_slow_actions_go_to_a_thread_and_plain_steps_stay_on_the_loop():
    env = session(task="memory_leak", mode="joint")
    assert on_thread(Step(SreAction(text="view_alerts")), env._env)
    assert on_thread(action("search_code", query="x"), env._env)
    assert not on_thread(action("view_alerts"), env._env)


def test_an_mcp_tool_call_waits_its_turn_with_the_sessions_other_calls():
    """An MCP tool call is the session's reset or step, scheduled as every route's: it waits
    while another call of the session (a /sessions or /ws one) holds the session's turn, and a
    plain step then runs on the loop."""
    import asyncio

    from srelib.serve.mcp import NEW_INCIDENT, tool_result

    async def main():
        env = SreEnvironment()
        started = await tool_result(env, NEW_INCIDENT, {"task": "memory_leak", "pool": "A",
                                                        "seed": 1})
        assert not started["isError"]
        turn = env._lock()
        await turn.acquire()  # another route's call under way
        call = asyncio.create_task(tool_result(env, "view_alerts", {}))
        await asyncio.sleep(0.2)
        assert not call.done()
        turn.release()
        result = await asyncio.wait_for(call, 30)
        assert not result["isError"] and result["structuredContent"]["observation"]["steps_taken"] == 1

    asyncio.run(main())
