"""What stands between ``srelib serve`` and a bad client: an ASGI middleware over OpenEnv's app.

* Every WebSocket frame on ``/ws`` is checked before the session sees it: a binary frame, text over
  :data:`MAX_MESSAGE_CHARS`, JSON that does not parse (nested past :data:`MAX_DEPTH`, an integer
  past Python's digit limit), anything but an object, or a ``type`` other than
  :data:`WS_TYPES` (an MCP request included) gets an error reply in OpenEnv's form and the
  session goes on.
* ``POST /reset`` takes a seed that is a JSON integer only (``true`` or ``"7"``: 422), as
  ``/sessions/{id}/reset`` and the WebSocket do.
* Sessions belong to whoever opened them: an HTTP session's token (``X-Session-Token``) is
  needed to attach a WebSocket to it (``/ws?session_id=...&token=...``) or to close it through
  MCP (``POST /mcp``, ``openenv/session/close``); without it the answer is 404, as for a
  session that does not exist.
* A client host holds at most ``Clients.max_per_client`` sessions (WebSockets and HTTP
  sessions together): past it, a WebSocket is refused at the handshake and ``POST /sessions``
  answers 429.
"""

from __future__ import annotations

import json
import secrets
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from srelib.extras import require
from srelib.serve.wire import loads

MAX_MESSAGE_CHARS = 1 << 20
MAX_DEPTH = 64
MAX_BODY = 1 << 20  # for the POST bodies read here (/mcp, /reset)
WS_TYPES = ("reset", "step", "state", "close")


def _depth(text: str) -> int:
    """How deeply ``text``'s brackets nest, outside strings (an upper bound for JSON)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def read_frame(message: Mapping) -> tuple[dict | None, tuple[str, str] | None]:
    """A ``websocket.receive`` event's JSON object, or ``(code, message)`` of what is wrong
    with it: ``(data, None)`` or ``(None, problem)``."""
    text = message.get("text")
    if text is None:
        return None, ("INVALID_JSON", "binary frames are not accepted: send a JSON object as text")
    if len(text) > MAX_MESSAGE_CHARS:
        return None, ("INVALID_JSON", f"a message may hold at most {MAX_MESSAGE_CHARS} characters")
    # nesting needs an opening bracket per level: few brackets in all (C-speed counts) is
    # shallow enough without the character-by-character walk
    if text.count("[") + text.count("{") > MAX_DEPTH and _depth(text) > MAX_DEPTH:
        return None, ("INVALID_JSON", f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        data = loads(text)
    except (ValueError, RecursionError) as exc:  # ValueError: also integers past the digit limit
        return None, ("INVALID_JSON", f"Invalid JSON: {str(exc)[:200]}")
    if not isinstance(data, dict):
        return None, ("INVALID_JSON", f"a message must be a JSON object, got {type(data).__name__}")
    kind = data.get("type")
    if "jsonrpc" in data and kind is None:
        return None, ("UNKNOWN_TYPE", "MCP (JSON-RPC) requests go to /mcp, not /ws")
    if kind not in WS_TYPES:
        return None, ("UNKNOWN_TYPE", f"Unknown message type {str(kind)[:50]!r}; valid: {list(WS_TYPES)}")
    return data, None


def _error(code: str, message: str) -> dict:
    return {"type": "websocket.send",
            "text": json.dumps({"type": "error", "data": {"message": message, "code": code}})}


@dataclass
class Clients:
    """Who holds what: each HTTP session's token and client host, and each host's open
    WebSockets; a host may hold at most ``max_per_client`` of the two together (None: any).
    Bounded by construction: ``tokens`` and ``owners`` by the open sessions (those closed are
    forgotten on close, those reaped at the next :meth:`full`), ``sockets`` by the open
    WebSockets."""

    max_per_client: int | None
    tokens: dict[str, str] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)
    sockets: Counter = field(default_factory=Counter)

    def full(self, host: str, live: Callable[[str], bool]) -> bool:
        """Does ``host`` hold its ``max_per_client`` sessions (None: never)? HTTP sessions that
        ``live`` says are gone are forgotten."""
        for gone in [s for s in self.tokens if not live(s)]:
            self.tokens.pop(gone)
            self.owners.pop(gone, None)
        held = self.sockets[host] + sum(owner == host for owner in self.owners.values())
        return self.max_per_client is not None and held >= self.max_per_client

    def foreign(self, session_id: object, token: object) -> bool:
        """Is ``session_id`` an HTTP session that ``token`` does not open?"""
        return isinstance(session_id, str) and session_id in self.tokens \
            and not secrets.compare_digest(self.tokens[session_id], str(token or ""))


def client_host(scope) -> str:
    return (scope.get("client") or ("unknown", 0))[0]


class Guard:
    """The middleware (module doc) over ``clients``; ``live(session_id)``: is it still open?
    ``play(scope, receive, send)`` serves a WebSocket that opens a session of its own
    (:func:`srelib.serve.ws.play_socket`); one attaching to an HTTP session goes to OpenEnv's
    ``/ws``."""

    def __init__(self, app, clients: Clients, live: Callable[[str], bool], play: Callable):
        self.app, self.clients, self.live, self.play = app, clients, live, play

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and scope["path"] == "/ws":
            return await self._websocket(scope, receive, send)
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] in ("/mcp", "/reset"):
            return await self._http(scope, receive, send)
        return await self.app(scope, receive, send)

    async def _websocket(self, scope, receive, send):
        from urllib.parse import parse_qs

        query = parse_qs(scope.get("query_string", b"").decode(errors="replace"))
        session, host = (query.get("session_id") or [None])[0], client_host(scope)
        refusal = "no such session" if self.clients.foreign(session, (query.get("token") or [None])[0]) \
            else "too many sessions from this client" if self.clients.full(host, self.live) else None
        if refusal:
            await receive()  # websocket.connect; closing now refuses the handshake (HTTP 403)
            return await send({"type": "websocket.close", "code": 4403, "reason": refusal})

        released = False

        def release() -> None:
            """Free the client's slot once: when it disconnects (a client that reconnects at
            once is not refused while its old session is torn down), else when the app ends."""
            nonlocal released
            if not released:
                released = True
                self.clients.sockets[host] -= 1
                if self.clients.sockets[host] <= 0:  # hosts come and go: keep only those connected
                    del self.clients.sockets[host]

        async def next_frame():
            """The next event let through, with its frame's JSON object (None for an event
            that is not a frame); a refused frame is answered here and never passed on."""
            while True:
                message = await receive()
                if message["type"] == "websocket.disconnect":
                    release()
                if message["type"] != "websocket.receive":
                    return None, message
                data, problem = read_frame(message)
                if problem is None:
                    return data, message
                await send(_error(*problem))

        async def checked_receive():
            return (await next_frame())[1]

        self.clients.sockets[host] += 1
        try:
            if session is None:  # a session of its own: srelib's /ws (srelib.serve.ws)
                return await self.play(scope, next_frame, send)
            return await self.app(scope, checked_receive, send)
        finally:
            release()

    def _refusal(self, path: str, request: object, token: str) -> tuple[int, dict] | None:
        """``(status, reply)`` refusing a parsed POST body, or None to pass it on."""
        if not isinstance(request, dict):
            return None  # OpenEnv's own validation answers
        if path == "/reset" and request.get("seed") is not None and type(request["seed"]) is not int:
            return 422, {"detail": [{"loc": ["body", "seed"], "type": "int_type",
                                     "msg": "seed must be an integer, not a bool or a string"}]}
        params = request.get("params")
        if path == "/mcp" and isinstance(params, dict) and self.clients.foreign(params.get("session_id"), token):
            return 404, {"jsonrpc": "2.0", "id": request.get("id"),
                         "error": {"code": -32602, "message": "no such session"}}
        return None

    async def _http(self, scope, receive, send):
        body, request = await read_json(receive, send)  # not JSON: OpenEnv's own parsing answers
        if body is None:
            return
        token = dict(scope.get("headers") or []).get(b"x-session-token", b"").decode(errors="replace")
        refusal = self._refusal(scope["path"], request, token)
        if refusal:
            return await respond_json(send, *refusal)
        return await self.app(scope, replaying(body, receive), send)


class BodyTooLarge(ValueError):
    """A request body past :data:`MAX_BODY` bytes."""


async def read_body(receive) -> bytes | None:
    """A request's body from ASGI ``receive``; None when the client left before sending it
    all; :class:`BodyTooLarge` past :data:`MAX_BODY` bytes."""
    body, more = b"", True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return None
        body += message.get("body", b"")
        more = message.get("more_body", False)
        if len(body) > MAX_BODY:
            raise BodyTooLarge(f"bodies over {MAX_BODY} bytes")
    return body


async def read_json(receive, send) -> tuple[bytes | None, Any]:
    """A request's body and its JSON value (None when the body is not JSON). The body is None
    when nothing is left to do: the client left before sending it all, or it was past
    :data:`MAX_BODY` bytes and has been answered 413."""
    try:
        body = await read_body(receive)
    except BodyTooLarge as too_large:
        await respond_json(send, 413, {"detail": str(too_large)})
        return None, None
    if body is None:
        return None, None
    try:
        return body, json.loads(body)
    except (ValueError, RecursionError):
        return body, None


def replaying(body: bytes, receive):
    """An ASGI ``receive`` that hands the app ``body`` (already read) first, then reads on."""
    replayed = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay():
        return replayed.pop() if replayed else await receive()

    return replay


async def respond_json(send: Callable, status: int, content: dict, headers=()) -> None:
    """Answer an HTTP request with ``content`` as JSON (and any extra ``headers``)."""
    data = json.dumps(content).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(data)).encode()), *headers]})
    await send({"type": "http.response.body", "body": data})


def timed_http(read_timeout: float):
    """uvicorn's h11 protocol with a read timeout: a connection must deliver each request whole
    (headers and body) within ``read_timeout`` seconds of its first byte, or of connecting,
    or it is closed (slow clients cannot hold sockets). Idle keep-alive is uvicorn's own."""
    require("h11", "srelib.serve.guard")
    import h11
    require("uvicorn", "srelib.serve.guard")
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class TimedH11Protocol(H11Protocol):
        _timer = None

        def _arm(self) -> None:
            if self._timer is None:
                self._timer = self.loop.call_later(read_timeout, self._timed_out)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _timed_out(self) -> None:
            self._timer = None
            if not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            self._arm()
            super().data_received(data)
            if self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED):
                self._disarm()

        def handle_websocket_upgrade(self, event) -> None:
            self._disarm()
            super().handle_websocket_upgrade(event)

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

    return TimedH11Protocol
