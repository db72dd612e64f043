"""What stands between ``srelib serve`` and a bad client: ASGI middlewares over OpenEnv's app.

* :class:`BodyLimit`: every HTTP request's body is capped at :data:`MAX_BODY` bytes before
  the app reads it: a request that declares more (``Content-Length``) is answered 413 at once,
  one that sends more (chunked, or past what it declared) as soon as it has.
* :class:`Guard`, on WebSockets: every frame on ``/ws`` is checked before the session sees it:
  a binary frame, text over :data:`MAX_MESSAGE_CHARS`, JSON that does not parse (nested past
  :data:`MAX_DEPTH`, an integer past Python's digit limit), anything but an object, or a
  ``type`` other than :data:`WS_TYPES` (an MCP request included) gets an error reply in
  OpenEnv's form and the session goes on. A frame on the ``/mcp`` WebSocket that names a
  session (``params.session_id``) without its token (``params.token``) gets a JSON-RPC error.
* Sessions belong to whoever opened them (:mod:`srelib.serve.owners`): attaching a WebSocket to
  a session (``/ws?session_id=...``) needs its token (header ``X-Session-Token``, or
  ``&token=``), else the handshake is refused; so is a WebSocket (``/ws`` or ``/mcp``) of a
  client host that holds its ``max_per_client`` sessions.
* ``POST /reset`` takes a seed that is a JSON integer only (``true`` or ``"7"``: 422), as
  ``/sessions/{id}/reset`` and the WebSocket do.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping

from srelib.extras import require
from srelib.serve.owners import Clients, client_host
from srelib.serve.wire import loads

MAX_MESSAGE_CHARS = 1 << 20
#: The most bytes a WebSocket message may hold (uvicorn's ``ws_max_size``; past it the
#: connection is closed, 1009): a message of :data:`MAX_MESSAGE_CHARS` characters in UTF-8.
MAX_MESSAGE_BYTES = 4 * MAX_MESSAGE_CHARS
MAX_DEPTH = 64
MAX_BODY = 1 << 20  # bytes of any HTTP request's body
#: Bytes of pipelined HTTP requests read ahead of the one being answered (uvicorn's high-water
#: mark for a request body).
MAX_PIPELINED = 1 << 16
WS_TYPES = ("reset", "step", "state", "close")
TOKEN_HEADER = b"x-session-token"


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


def _ws_frame(message: Mapping) -> tuple[dict | None, dict | None]:
    """:func:`read_frame`, its problem as the error reply to send: ``(data, None)`` or
    ``(None, reply)``."""
    data, problem = read_frame(message)
    if problem is None:
        return data, None
    code, text = problem
    return None, {"type": "websocket.send",
                  "text": json.dumps({"type": "error", "data": {"message": text, "code": code}})}


class Guard:
    """The WebSocket and ``/reset`` checks (module doc) over ``clients``. ``play(scope,
    receive, send)`` serves a ``/ws`` connection that opens a session of its own
    (:func:`srelib.serve.ws.play_socket`); one attaching to a session, and the ``/mcp``
    WebSocket, go to OpenEnv's endpoints."""

    def __init__(self, app, clients: Clients, play: Callable):
        self.app, self.clients, self.play = app, clients, play

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and scope["path"] in ("/ws", "/mcp"):
            return await self._websocket(scope, receive, send)
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == "/reset":
            return await self._reset(scope, receive, send)
        return await self.app(scope, receive, send)

    def _handshake_refusal(self, scope, host: str) -> str | None:
        if scope["path"] == "/ws":
            session, token = attached_session(scope)
            if session is not None and not self.clients.owns(session, token):
                return "no such session"
        return "too many sessions from this client" if self.clients.full(host) else None

    async def _websocket(self, scope, receive, send):
        host = client_host(scope)
        refusal = self._handshake_refusal(scope, host)
        if refusal:
            await receive()  # websocket.connect; closing now refuses the handshake (HTTP 403)
            return await send({"type": "websocket.close", "code": 4403, "reason": refusal})
        check = _ws_frame if scope["path"] == "/ws" else self._mcp_frame
        released = False

        def release() -> None:
            """Free the client's slot once: when it disconnects (a client that reconnects at
            once is not refused while its old session is torn down), else when the app ends."""
            nonlocal released
            if not released:
                released = True
                self.clients.release(host)

        async def next_frame():
            """The next event let through, with its frame's JSON object (None for an event
            that is not a frame); a refused frame is answered here and never passed on."""
            while True:
                message = await receive()
                if message["type"] == "websocket.disconnect":
                    release()
                if message["type"] != "websocket.receive":
                    return None, message
                data, problem = check(message)
                if problem is None:
                    return data, message
                await send(problem)

        async def checked_receive():
            return (await next_frame())[1]

        self.clients.reserve(host)
        try:
            if scope["path"] == "/ws" and attached_session(scope)[0] is None:
                return await self.play(scope, next_frame, send)  # srelib's /ws (srelib.serve.ws)
            return await self.app(scope, checked_receive, send)
        finally:
            release()

    def _mcp_frame(self, message: Mapping) -> tuple[None, dict | None]:
        """``(None, None)`` to pass a ``/mcp`` WebSocket frame on to OpenEnv (which parses it),
        or ``(None, reply)`` refusing one that names a session without its token."""
        try:
            request = json.loads(message.get("text") or "null")
        except (ValueError, RecursionError):
            return None, None  # OpenEnv's parse error answers
        params = request.get("params") if isinstance(request, dict) else None
        if not isinstance(params, dict) or "session_id" not in params \
                or self.clients.owns(params["session_id"], params.get("token")):
            return None, None
        return None, {"type": "websocket.send", "text": json.dumps(
            mcp_failure(request.get("id"), -32602, "no such session"))}

    async def _reset(self, scope, receive, send):
        body, request = await read_json(receive)  # not JSON: OpenEnv's own parsing answers
        if body is None:
            return
        seed = request.get("seed") if isinstance(request, dict) else None
        if seed is not None and type(seed) is not int:
            return await respond_json(send, 422, {"detail": [{
                "loc": ["body", "seed"], "type": "int_type",
                "msg": "seed must be an integer, not a bool or a string"}]})
        return await self.app(scope, replaying(body, receive), send)


def attached_session(scope) -> tuple[str | None, str | None]:
    """The session a ``/ws`` connection attaches to (``?session_id=``) and the token it gives
    (the ``X-Session-Token`` header, else ``?token=``): ``(None, None)`` for a session of its
    own."""
    from urllib.parse import parse_qs

    query = parse_qs(scope.get("query_string", b"").decode(errors="replace"))
    headers = [value for name, value in scope.get("headers") or [] if name.lower() == TOKEN_HEADER]
    token = headers[-1].decode(errors="replace") if headers else (query.get("token") or [None])[0]
    return (query.get("session_id") or [None])[0], token


def mcp_failure(request_id, code: int, message: str) -> dict:
    """A JSON-RPC error reply."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


class BodyLimit:
    """The outermost middleware (module doc): the app gets a request's body already read,
    at most :data:`MAX_BODY` bytes of it; the 413 closes the connection, so that what the client
    still sends is never read."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and int(declared) > MAX_BODY:  # h11 let only digits through
            return await _too_large(send)
        try:
            body = await read_body(receive)
        except BodyTooLarge:
            return await _too_large(send)
        if body is None:
            return
        return await self.app(scope, replaying(body, receive), send)


async def _too_large(send) -> None:
    await respond_json(send, 413, {"detail": f"a request body may hold at most {MAX_BODY} bytes"},
                       [(b"connection", b"close")])


class BodyTooLarge(ValueError):
    """A request body past :data:`MAX_BODY` bytes."""


async def read_body(receive) -> bytes | None:
    """A request's body from ASGI ``receive``; None when the client left before sending it
    all; :class:`BodyTooLarge` as soon as it is past :data:`MAX_BODY` bytes."""
    chunks, size, more = [], 0, True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        more = message.get("more_body", False)
        if size > MAX_BODY:
            raise BodyTooLarge(f"bodies over {MAX_BODY} bytes")
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def read_json(receive) -> tuple[bytes | None, Any]:
    """A request's body (:class:`BodyLimit` has capped it) and its JSON value (None when the
    body is not JSON); the body is None when the client left before sending it all."""
    body = await read_body(receive)
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
    or it is closed (slow clients cannot hold sockets). Idle keep-alive is uvicorn's own.
    Reading also pauses while the write buffer is past its high-water mark (a client that
    does not read what it is sent is not read on) and while more than :data:`MAX_PIPELINED`
    bytes of pipelined requests wait (uvicorn resumes reading at every response it completes,
    so a client that pipelines requests faster than they are answered was read without end)."""
    require("h11", "srelib.serve.guard")
    import h11
    require("uvicorn", "srelib.serve.guard")
    from uvicorn.protocols.http.flow_control import FlowControl
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class BoundFlow(FlowControl):
        """uvicorn's flow control: the transport reads while neither side is paused and the
        requests received but not yet handled (``backlog()`` bytes) are few."""

        def __init__(self, transport, backlog: Callable[[], int]):
            super().__init__(transport)
            self.backlog = backlog

        def resume_reading(self) -> None:
            if self.backlog() > MAX_PIPELINED:
                return  # still paused: the next response completed asks again
            if not self.write_paused:
                return super().resume_reading()
            self.read_paused = False  # read again once the client has read (resume_writing)

        def pause_writing(self) -> None:
            super().pause_writing()
            self._transport.pause_reading()

        def resume_writing(self) -> None:
            super().resume_writing()
            if not self.read_paused:
                self._transport.resume_reading()

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
            self.flow = BoundFlow(transport, lambda: len(self.conn.trailing_data[0]))
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
