"""The actions as MCP tools on OpenEnv's ``/mcp`` route, with MCP's session handshake.

OpenEnv answers ``tools/list`` and ``tools/call`` on ``POST /mcp`` (and on the ``/mcp``
WebSocket) from an environment's ``mcp_server``. :func:`action_tools` builds that server for one
session's :class:`~srelib.serve.server.SreEnvironment`: one tool per action, its input schema the
action vocabulary's (:func:`srelib.policies.llm.tools.tool_definitions`, the schema the chat
policies and the TRL adapter use), plus :data:`NEW_INCIDENT`, which starts an episode. A call
returns MCP's ``CallToolResult``: the observation as text (as the tool-calling policies see it)
and, as structured content, the observation, reward and ``done``.

OpenEnv's route knows neither MCP's ``initialize`` handshake nor its session header, so a
standard client (``mcp``'s streamable HTTP client, ``fastmcp.Client``) could not connect.
:class:`McpLifecycle` adds them in front of it: ``initialize`` opens an OpenEnv session and
returns its handle, a secret that is not its id, as ``Mcp-Session-Id``; a request carrying that
header runs in that session (OpenEnv's ``params.session_id``); a notification gets 202;
``DELETE /mcp`` closes the session. Every session this route opens or names is in the server's
one registry (:mod:`srelib.serve.owners`): counted against the client's cap, used and closed
only by its owner.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from srelib.extras import require
from srelib.env.tasks.pools import MODES, POOLS
from srelib.serve.guard import TOKEN_HEADER, mcp_failure, read_json, replaying, respond_json
from srelib.serve.owners import Clients, TooManySessions, client_host

#: The tool that starts an episode (OpenEnv reserves ``reset`` for its own protocol).
NEW_INCIDENT = "new_incident"
_RESET_SCHEMA = {
    "type": "object",
    "properties": {
        "task": {"type": "string", "description": "a task id (srelib tasks); default: drawn "
                                                  "from the pool"},
        "pool": {"type": "string", "enum": sorted(POOLS), "description": "the task pool; "
                                                                       "default none"},
        "mode": {"type": "string", "enum": list(MODES), "description": "the episode's phases; "
                                                                     "default the pool's, else joint"},
        "seed": {"type": "integer", "description": "the episode's seed; default drawn"},
    },
    "required": [],
}
_HEADER = b"mcp-session-id"  # an MCP session's handle: its owner's token


def action_tools(env) -> Any:
    """A FastMCP server whose tools play ``env`` (a :class:`~srelib.serve.server.SreEnvironment`)."""
    require("fastmcp", "srelib.serve.mcp")
    from fastmcp import FastMCP
    from fastmcp.tools.function_tool import FunctionTool

    from srelib._version import __version__
    from srelib.policies.llm.tools import tool_definitions

    server = FastMCP("srelib", version=__version__)
    tools = [(NEW_INCIDENT, "Start an incident (an episode); call it before any action.",
              _RESET_SCHEMA)]
    tools += [(t["function"]["name"], t["function"]["description"], t["function"]["parameters"])
              for t in tool_definitions()]
    for name, description, schema in tools:
        server.add_tool(FunctionTool(name=name, description=description, parameters=schema,
                                     fn=_caller(env, name)))
    return server


def _caller(env, name: str) -> Callable:
    async def call(**arguments: Any) -> dict:
        return await tool_result(env, name, arguments)
    call.__name__ = name
    return call


async def tool_result(env, name: str, arguments: dict) -> dict:
    """MCP's ``CallToolResult`` for the tool ``name`` called on ``env``.

    The call is the session's reset or step, scheduled as every route's is
    (:meth:`~srelib.serve.server.SreEnvironment.outcome`: one call of the session at a time,
    on a worker thread where it may build, search or grade).

    Args:
        env: the session's :class:`~srelib.serve.server.SreEnvironment`.
        name: the tool: :data:`NEW_INCIDENT` or an action's name.
        arguments: the tool's arguments.

    Returns:
        The result: the observation as text and, as structured content, the observation,
        reward and ``done``; a call the environment refuses (an unknown reset option, no
        episode yet) is an error result.
    """
    require("openenv", "srelib.serve.mcp")
    from openenv.core.env_server import serialize_observation

    from srelib.policies.llm.prompts import render_observation
    from srelib.policies.llm.tools import action_from_tool_call
    from srelib.serve.wire import NoEpisodeError, SreAction, observation_dict

    try:
        if name == NEW_INCIDENT:
            observation = await env.reset_async(**arguments)
        else:
            observation = await env.step_async(SreAction(**action_from_tool_call(name, arguments)))
    except (ValueError, RuntimeError) as exc:
        hint = f" (call {NEW_INCIDENT})" if isinstance(exc, NoEpisodeError) else ""
        return {"content": [{"type": "text", "text": f"{exc}{hint}"}], "isError": True}
    served = serialize_observation(observation)
    text = render_observation(observation_dict(served["observation"], served["done"]), tools=True)
    return {"content": [{"type": "text", "text": text}], "structuredContent": served,
            "isError": False}


class McpLifecycle:
    """The ASGI middleware (module doc) over OpenEnv's ``POST /mcp`` and ``DELETE /mcp``;
    ``clients`` is the server's session registry (:class:`srelib.serve.owners.Clients`).

    Every session this route opens or names goes through ``clients``: ``initialize`` and
    OpenEnv's ``openenv/session/create`` open one under the client's cap (the latter returns
    its ``session_id`` and ``token``, a session the ``/sessions`` routes also serve);
    ``Mcp-Session-Id`` names an MCP session by its handle; ``params.session_id`` names a session
    that the ``X-Session-Token`` header must open; ``openenv/session/close`` and
    ``DELETE /mcp`` close only such a session. Anything else gets 404, as for no session."""

    def __init__(self, app, clients: Clients):
        self.app, self.clients = app, clients

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] != "/mcp" or scope["method"] not in ("POST", "DELETE"):
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        handle = headers.get(_HEADER, b"").decode(errors="replace") or None
        if scope["method"] == "DELETE":
            return await self._delete(handle, send)
        body, request = await read_json(receive)
        if body is None:
            return
        if not isinstance(request, dict):
            return await self.app(scope, replaying(body, receive), send)
        if "id" not in request and isinstance(request.get("method"), str):  # a notification
            return await _respond_empty(send, 202)
        method, request_id = request.get("method"), request.get("id")
        if method == "ping":
            return await respond_json(send, 200, _result(request_id, {}))
        if method in ("initialize", "openenv/session/create"):
            return await self._open(scope, request, send)
        params = request.get("params") if isinstance(request.get("params"), dict) else {}
        if handle is not None:
            session = self.clients.by_handle(handle)
            if session is None:
                return await respond_json(send, 404, mcp_failure(request_id, -32001, "no such MCP session"))
        else:
            session = params.get("session_id")
            if "session_id" in params and not self.clients.owns(
                    session, headers.get(TOKEN_HEADER, b"").decode(errors="replace")):
                return await respond_json(send, 404, mcp_failure(request_id, -32602, "no such session"))
        if method == "openenv/session/close" and session is not None:
            await self.clients.close(session)
            return await respond_json(send, 200, _result(request_id, {"session_id": session,
                                                                      "closed": True}))
        if handle is not None:  # OpenEnv's params.session_id: run in the MCP session
            request["params"] = {**params, "session_id": session}
            body = json.dumps(request).encode()
            kept = [(k, v) for k, v in scope["headers"] if k != b"content-length"]
            scope = {**scope, "headers": kept + [(b"content-length", str(len(body)).encode())]}
        return await self.app(scope, replaying(body, receive), send)

    async def _open(self, scope, request: dict, send) -> None:
        """``initialize`` (an MCP session, its handle the ``Mcp-Session-Id`` header) or
        ``openenv/session/create`` (its id and token in the result)."""
        require("openenv", "srelib.serve.mcp")
        from openenv.core.env_server import SessionCapacityError

        request_id, mcp = request.get("id"), request.get("method") == "initialize"
        try:
            session, token = await self.clients.open(client_host(scope), mcp=mcp)
        except TooManySessions as exc:
            return await respond_json(send, 429, mcp_failure(request_id, -32000, str(exc)))
        except SessionCapacityError as exc:
            return await respond_json(send, 503, mcp_failure(request_id, -32000, str(exc)))
        if not mcp:
            return await respond_json(send, 200, _result(request_id, {"session_id": session,
                                                                      "token": token}))
        params = request.get("params") if isinstance(request.get("params"), dict) else {}
        await respond_json(send, 200, _result(request_id, _initialized(params)), [(_HEADER, token.encode())])

    async def _delete(self, handle: str | None, send) -> None:
        session = self.clients.by_handle(handle)
        if session is None:
            return await respond_json(send, 404, {"detail": "no such MCP session"})
        await self.clients.close(session)
        await _respond_empty(send, 200)


def _initialized(params: dict) -> dict:
    """The result of ``initialize``: the protocol version asked for if it is one the ``mcp``
    package supports, else the latest; the tools capability; srelib's name and version."""
    require("mcp", "srelib.serve.mcp")
    from mcp.shared.version import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS

    from srelib._version import __version__

    asked = params.get("protocolVersion")
    return {"protocolVersion": asked if asked in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "srelib", "version": __version__},
            "instructions": f"Call {NEW_INCIDENT} to start an incident, then the actions."}


def _result(request_id, result: dict) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


async def _respond_empty(send, status: int) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})
