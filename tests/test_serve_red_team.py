"""Hostile and unusual input against the served path's shortcuts (``srelib.serve.frames``, the
server's fast path, ``wire.loads``, plain actions): each must give what the general path
(``websockets``, the standard library's JSON, the typed action) gives."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openenv")

from srelib.serve.server import running  # noqa: E402

RESET = {"type": "reset", "data": {"task": "memory_leak", "pool": "A", "seed": 4}}
#: Integers that orjson can read only as floats (past 64 bits, either sign), and the edges
#: that it reads exactly.
LONG_INTEGERS = [10**20, 2**64, -(2**63) - 1, 123456789012345678901234567890, 2**64 - 1, -(2**63)]


def test_integers_past_64_bits_reach_the_session_as_the_integers_sent():
    """A step whose parameters hold integers past 64 bits is recorded with those integers, as
    the standard library reads the frame (orjson reads them as floats)."""
    from websockets.sync.client import connect

    parameters = {f"n{i}": value for i, value in enumerate(LONG_INTEGERS)}
    with running() as url, connect(url.replace("http", "ws") + "/ws", open_timeout=10) as ws:
        ws.send(json.dumps(RESET))
        assert json.loads(ws.recv(timeout=60))["type"] == "observation"
        ws.send(json.dumps({"type": "step", "data": {
            "action_type": "query_logs", "target_service": "orders", "parameters": parameters}}))
        assert json.loads(ws.recv(timeout=60))["type"] == "observation"
        ws.send(json.dumps({"type": "state"}))
        recorded = json.loads(ws.recv(timeout=60))["data"]["trajectory"][-1]["action"]
    assert recorded["parameters"] == parameters
    assert all(type(value) is int for value in recorded["parameters"].values()), recorded


@pytest.mark.parametrize("value", LONG_INTEGERS + [1e400, "1" * 25, 0.1234567890123456789])
def test_json_text_reads_as_the_standard_library_reads_it(value):
    from srelib.serve.wire import loads

    text = json.dumps({"a": [value, {"b": value}]})
    for given in (text, text.encode()):
        read = loads(given)
        assert read == json.loads(text) and type(read["a"][0]) is type(value), given


def _cyclic() -> dict:
    parameters: dict = {}
    parameters["self"] = parameters
    return parameters


def _deep(levels: int) -> list:
    outer = inner = []
    for _ in range(levels):
        inner.append([])
        inner = inner[0]
    return outer


@pytest.mark.parametrize("parameters", [_cyclic(), {"a": _deep(5000)}],
                         ids=["cyclic", "deeper-than-the-recursion-limit"])
def test_an_action_that_is_not_json_fails_as_the_typed_action_fails(parameters):
    """A dict action whose parameters cannot be written as JSON raises the typed path's
    TypeError (not a RecursionError from checking whether they are plain), and the session
    goes on."""
    from srelib.serve.remote import RemoteEnv, _typed_action
    from srelib.serve.wire import dumps

    action = {"action_type": "query_logs", "target_service": "orders", "parameters": parameters}
    with pytest.raises(TypeError) as typed:
        dumps(_typed_action(action).model_dump(exclude_unset=True, exclude={"metadata"}))
    with running() as url, RemoteEnv(url) as env:
        env.reset(task="memory_leak", pool="A", seed=4)
        with pytest.raises(TypeError) as sent:
            env.step(action)
        assert str(sent.value) == str(typed.value)
        assert env.step({"action_type": "view_alerts"})[0]["steps_taken"] == 1


@pytest.mark.parametrize("fragmented", [False, True], ids=["fast-path", "asgi-path"])
def test_a_lone_surrogate_in_an_invalid_action_gets_the_validation_error(fragmented):
    """The validation error of a step whose bad input holds a lone surrogate (valid JSON text,
    ``"\\ud800"``) is sent like any other, and the session goes on (it dropped the connection)."""
    from websockets.sync.client import connect

    bad = '{"type": "step", "data": {"action_type": 5, "bogus": "\\ud800"}}'
    with running() as url, connect(url.replace("http", "ws") + "/ws", open_timeout=10) as ws:
        ws.send(json.dumps(RESET))
        assert json.loads(ws.recv(timeout=60))["type"] == "observation"
        ws.send([bad[:20], bad[20:]] if fragmented else bad)
        error = json.loads(ws.recv(timeout=60))["data"]
        assert error["code"] == "VALIDATION_ERROR"
        assert [(e["loc"], e["input"]) for e in error["errors"]] == [(["action_type"], 5),
                                                                     (["bogus"], "\ud800")]
        ws.send(json.dumps({"type": "step", "data": {"action_type": "view_alerts"}}))
        assert json.loads(ws.recv(timeout=60))["data"]["observation"]["steps_taken"] == 1


def test_integers_past_64_bits_and_lone_surrogates_are_written_as_in_process():
    """A reset whose seed is past 64 bits gets its observation (the reply is not an
    EXECUTION_ERROR about the reply's JSON after the episode started), and RemoteEnv sends such
    integers and lone surrogates in an action, as an in-process step takes them."""
    from websockets.sync.client import connect

    from srelib.env.core import IncidentEnv
    from srelib.serve.remote import RemoteEnv

    seed = 2**64 + 7
    with running() as url:
        with connect(url.replace("http", "ws") + "/ws", open_timeout=10) as ws:
            ws.send(json.dumps({"type": "reset", "data": {**RESET["data"], "seed": seed}}))
            reply = json.loads(ws.recv(timeout=60))
            assert reply["type"] == "observation", reply
            assert reply["data"]["observation"]["info"]["seed"] == seed
        action = {"action_type": "query_logs", "target_service": "orders",
                  "parameters": {"lines": 10**20, "grep": "\ud800"}}
        local = IncidentEnv()
        local.reset(task="memory_leak", pool="A", seed=4)
        with RemoteEnv(url) as env:
            env.reset(task="memory_leak", pool="A", seed=4)
            assert env.step(action)[1:4] == local.step(action)[1:4]
            assert env.trajectory[-1]["action"] == local.trajectory[-1]["action"]


def test_a_transition_that_loads_the_repository_runs_on_a_worker_thread():
    """Opening phase 2 builds the task's repository unless it is in memory (40 ms median,
    100 ms worst for a generated task on a cold cache): such a transition is not answered on
    the event loop; once the repository is in memory it is."""
    from srelib.env.tasks import lookup
    from srelib.env.belief import belief_dict
    from srelib.env.tasks.pools import oracle_belief
    from srelib.serve.scheduling import Step
    from srelib.serve.server import SreEnvironment
    from srelib.serve.wire import SreAction

    env = SreEnvironment()
    env.reset(task="memory_leak", mode="joint", seed=1)
    transition = SreAction(action_type="transition_to_phase2",
                           parameters={"belief": belief_dict(oracle_belief(env._env.scenario))})
    lookup.load_repo.cache_clear()
    assert env.outcome_now(Step(transition)) is None
    lookup.load_repo(env._env.scenario.repo)
    assert env.outcome_now(Step(transition))[-1]["phase"] == 2
