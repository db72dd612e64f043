"""The clients' one protocol core (srelib.serve.remote.Protocol), without I/O: the messages
an operation sends and what it makes of the replies, fed the replies a real environment's
outcomes give on the wire; and its reset's one retry against a real server."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openenv")

from srelib.env.actions import PARSE_ERROR  # noqa: E402
from srelib.env.core import IncidentEnv  # noqa: E402
from srelib.serve.remote import AsyncRemoteEnv, Protocol, RemoteEnv  # noqa: E402
from srelib.serve.server import running  # noqa: E402
from srelib.serve.wire import SessionClosedError, observation_message  # noqa: E402

EPISODE = {"task": "memory_leak", "pool": "A", "mode": None, "seed": 3}


def wire_data(obs, reward, terminated, truncated, info) -> dict:
    """The ``data`` of the server's reply to this outcome, as it arrives."""
    return json.loads(observation_message(obs, reward, terminated, truncated, info))["data"]


def protocol() -> Protocol:
    return Protocol("http://127.0.0.1:1", message_timeout=1.0, connect_timeout=1.0)


def test_a_reset_is_sent_again_once_after_the_server_closed_the_session():
    env, core = IncidentEnv(), protocol()
    obs, info = env.reset(**EPISODE)
    exchange = core.reset(dict(EPISODE))
    assert exchange.message == {"type": "reset", "data": EPISODE} and not exchange.done
    exchange.reply(None, SessionClosedError("this session was closed"))
    assert exchange.message == {"type": "reset", "data": EPISODE} and not exchange.done
    exchange.reply(wire_data(obs, None, False, False, info))
    assert exchange.done and exchange.result == (obs, info) and core.info == info
    again = core.reset(dict(EPISODE))
    again.reply(None, SessionClosedError("closed"))
    with pytest.raises(SessionClosedError):  # a second closed session is the caller's
        again.reply(None, SessionClosedError("closed"))


def test_a_lost_connection_is_raised_and_a_step_is_not_retried():
    core = protocol()
    with pytest.raises(ConnectionError):
        core.reset(dict(EPISODE)).reply(None, ConnectionError("lost"))
    step = core.step({"action_type": "view_alerts"})
    with pytest.raises(SessionClosedError):
        step.reply(None, SessionClosedError("closed"))


def test_a_step_decodes_the_outcome_and_the_trajectory_is_fetched_only_when_stale():
    env, core = IncidentEnv(), protocol()
    env.reset(**EPISODE)
    outcome = env.step({"action_type": "view_alerts"})
    exchange = core.step({"action_type": "view_alerts"})
    assert exchange.message == {"type": "step", "data": {"action_type": "view_alerts"}}
    exchange.reply(wire_data(*outcome))
    assert exchange.result == outcome
    fetch = core.trajectory()
    assert fetch.message == {"type": "state"}
    fetch.reply({"trajectory": env.trajectory})
    assert fetch.result == env.trajectory
    cached = core.trajectory()
    assert cached.done and cached.result == env.trajectory  # nothing sent since
    assert not core.step([1, 2]).done and not core.trajectory().done  # stale again


def test_an_action_that_is_not_one_is_sent_as_a_parse_error():
    message = protocol().step([1, 2]).message
    assert message["data"]["action_type"] == PARSE_ERROR
    assert "got list" in message["data"]["parameters"]["reason"]


def test_both_faces_reopen_a_session_the_server_closed_when_reset():
    """An idle session closed by the server: the next reset on either face opens a fresh one
    and plays the same episode."""
    import asyncio

    async def reset_after_idle(base):
        async with AsyncRemoteEnv(base) as env:
            first = await env.reset(**EPISODE)
            await asyncio.sleep(7)  # OpenEnv's reaper looks every max(timeout / 4, 5) s
            again = await env.reset(**EPISODE)
            await env.step({"action_type": "view_alerts"})
            return first, again, await env.trajectory()

    with running(idle_timeout=1) as base, RemoteEnv(base) as env:
        first = env.reset(**EPISODE)
        before, after, records = asyncio.run(reset_after_idle(base))  # env idles meanwhile
        assert before == after == first and [r["step"] for r in records] == [1]
        assert env.reset(**EPISODE) == first and env.trajectory == []
