"""The actions as MCP tools on ``srelib serve``'s ``/mcp``, driven by the ``mcp`` package's own
client over streamable HTTP: the handshake, ``tools/list`` (the action vocabulary's schemas)
and a whole episode of ``tools/call`` that matches the same episode in process."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("openenv")
pytest.importorskip("mcp")

import requests  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from srelib.env.actions import ACTION_NAMES  # noqa: E402
from srelib.policies.llm.tools import tool_definitions  # noqa: E402
from srelib.serve.server import running  # noqa: E402
from srelib.serve.wire import observation_dict  # noqa: E402
from srelib.serve.mcp import NEW_INCIDENT  # noqa: E402
from tests.test_serve import active_sessions, in_process, policy  # noqa: E402
from srelib.runners.rollout import reset_policy  # noqa: E402

TASK, POOL, SEED = "memory_leak", "A", 3


def _arguments(action: dict) -> dict:
    """A policy's action dict as a tool call's arguments."""
    target = {"target_service": action["target_service"]} if action.get("target_service") else {}
    return {**target, **(action.get("parameters") or {})}


async def _session(url: str, play):
    async with streamable_http_client(f"{url}/mcp") as (read, write, _session_id):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            return init, await play(session)


def test_mcp_client_lists_the_action_tools_with_the_vocabulary_schemas():
    async def listed(session):
        return (await session.list_tools()).tools

    with running() as url:
        init, tools = asyncio.run(_session(url, listed))
        assert active_sessions(url) == 0  # the client's DELETE closed its session
    assert init.serverInfo.name == "srelib" and init.capabilities.tools is not None
    by_name = {tool.name: tool for tool in tools}
    assert list(by_name) == [NEW_INCIDENT, *ACTION_NAMES]
    for definition in tool_definitions():
        function = definition["function"]
        tool = by_name[function["name"]]
        assert tool.inputSchema == function["parameters"]
        assert tool.description == function["description"]


def test_an_episode_through_mcp_tool_calls_is_the_episode_in_process():
    expected = in_process(TASK, POOL, SEED)
    agent = policy()
    reset_policy(agent, SEED, TASK)

    async def play(session):
        refused = await session.call_tool("view_alerts", {})
        assert refused.isError and NEW_INCIDENT in refused.content[0].text
        bad = await session.call_tool(NEW_INCIDENT, {"task": TASK, "colour": "red"})
        assert bad.isError and "colour" in bad.content[0].text
        opened = await session.call_tool(NEW_INCIDENT, {"task": TASK, "pool": POOL, "seed": SEED})
        seen = [opened.structuredContent]
        obs = observation_dict(seen[0]["observation"], seen[0]["done"])
        while not obs["done"]:
            action = agent(obs, obs["current_phase"], TASK)
            result = await session.call_tool(action["action_type"], _arguments(action))
            assert not result.isError and result.content[0].text
            seen.append(result.structuredContent)
            obs = observation_dict(seen[-1]["observation"], seen[-1]["done"])
        return seen

    with running() as url:
        _init, seen = asyncio.run(_session(url, play))
    assert len(seen) == len(expected)
    for served, (obs, reward, _info) in zip(seen, expected):
        assert observation_dict(served["observation"], served["done"]) == obs
        assert served["reward"] == reward


def test_mcp_handshake_refuses_unknown_sessions_and_answers_pings():
    with running() as url:
        head = {"Accept": "application/json, text/event-stream"}
        ping = requests.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                             headers=head, timeout=10)
        assert ping.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
        stale = requests.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                              headers={**head, "Mcp-Session-Id": "nope"}, timeout=10)
        assert stale.status_code == 404
        note = requests.post(f"{url}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                             headers=head, timeout=10)
        assert note.status_code == 202
        gone = requests.delete(f"{url}/mcp", headers={"Mcp-Session-Id": "nope"}, timeout=10)
        assert gone.status_code == 404
