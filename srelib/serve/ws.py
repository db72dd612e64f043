"""OpenEnv's WebSocket protocol on ``/ws``, served by srelib at the cost of an in-process step.

OpenEnv's own ``/ws`` endpoint turns every reply into pydantic models and back (the observation
validated, dumped to a dict, validated again inside the reply, dumped to JSON) behind
Starlette's WebSocket wrapper; that cost the server more CPU than the step itself
(``bench/bench_serve.py --profile``). :func:`play_socket` speaks the same protocol, message for
message, straight over ASGI:

* ``reset`` / ``step`` / ``state`` / ``close`` messages, validated by OpenEnv's own message
  models and :class:`~srelib.serve.wire.SreAction`, so a malformed message gets the same
  ``VALIDATION_ERROR`` reply and an environment error the same ``EXECUTION_ERROR``;
* the reply to a reset or a step is built from the environment's own dict
  (:func:`~srelib.serve.wire.observation_message`): the keys and values OpenEnv's
  ``serialize_observation`` sends;
* one session per connection under OpenEnv's cap and idle reaper (:class:`~.sessions.Sessions`),
  closed when the client leaves; a full server answers ``CAPACITY_REACHED`` and closes.

A connection that attaches to an existing HTTP session (``/ws?session_id=...``) is left to
OpenEnv's endpoint; :class:`~srelib.serve.guard.Guard` has checked its frames and its token
before either sees them. :func:`websocket_protocol` is the uvicorn protocol the server runs
WebSockets on: it reads a whole text frame itself (:mod:`srelib.serve.frames`), and while
:func:`play_socket` waits for the next message it answers a reset or a step that runs on the
event loop on the spot (:class:`Lane`: the same checks, the same reply), without the queue,
the task switch and the ASGI send a message costs on the way through ``play_socket``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Awaitable, Callable

from srelib.extras import require

require("openenv", "srelib.serve.ws")
from openenv.core.env_server import SessionCapacityError
from openenv.core.env_server.exceptions import EnvironmentFactoryError
from openenv.core.env_server.types import (WSCloseMessage, WSErrorCode, WSErrorResponse,
                                           WSResetMessage, WSStateMessage, WSStateResponse,
                                           WSStepMessage)
require("pydantic", "srelib.serve.ws")
from pydantic import ValidationError
require("pydantic_core", "srelib.serve.ws")
from pydantic_core import PydanticSerializationError

from srelib.serve.frames import Boundaries, text_frame, whole_text
from srelib.serve.guard import read_frame
from srelib.serve.scheduling import Reset, Step
from srelib.serve.sessions import Sessions
from srelib.serve.wire import SreAction, observation_message

Receive = Callable[[], Awaitable[tuple[dict | None, dict]]]
Send = Callable[[dict], Awaitable[None]]


def _error(**data: Any) -> str:
    reply = WSErrorResponse(data=data)
    try:
        return reply.model_dump_json()
    except PydanticSerializationError:  # a lone surrogate in an input: JSON escapes it
        return json.dumps(reply.model_dump(mode="json"), separators=(",", ":"))


def _refusal(exc: Exception) -> str:
    """The error reply of a connection that got no session, in OpenEnv's words."""
    if isinstance(exc, SessionCapacityError):
        return _error(message=str(exc), code=WSErrorCode.CAPACITY_REACHED,
                      active_sessions=exc.active_sessions, max_sessions=exc.max_sessions)
    if isinstance(exc, EnvironmentFactoryError):
        return _error(message=str(exc), code=WSErrorCode.FACTORY_ERROR,
                      factory_name=exc.factory_name)
    return _error(message=str(exc), code=WSErrorCode.SESSION_ERROR)


def _failure(exc: Exception) -> str:
    """The error reply to a message whose answer raised ``exc``, as OpenEnv's."""
    if isinstance(exc, ValidationError):
        return _error(message="Invalid message", code=WSErrorCode.VALIDATION_ERROR,
                      errors=exc.errors())
    return _error(message=str(exc), code=WSErrorCode.EXECUTION_ERROR)


def _text(text: str) -> dict:
    return {"type": "websocket.send", "text": text}


def _action(data: dict) -> SreAction:
    """The action of a step message: ``{"type": "step", "data": {...}}`` is a valid
    ``WSStepMessage`` as it stands (its data a JSON object), anything else is checked by it."""
    action = data.get("data")
    if len(data) != 2 or type(action) is not dict:
        action = WSStepMessage(**data).data
    return SreAction.model_validate(action)


async def _reply(env: Any, session_id: str, sessions: Sessions, data: dict) -> str | None:
    """The reply to one reset, step or state message (``data``, parsed); None for close."""
    kind = data["type"]
    if kind == "reset":
        options = WSResetMessage(**data).data
        outcome = await env.outcome(Reset(options))
        sessions.used(session_id)
        return observation_message(*outcome)
    if kind == "step":
        action = _action(data)
        outcome = await env.outcome(Step(action))
        sessions.used(session_id, stepped=True)
        return observation_message(*outcome)
    if kind == "close":
        WSCloseMessage(**data)
        return None
    WSStateMessage(**data)
    return WSStateResponse(data=env.state.model_dump()).model_dump_json()


class Lane:
    """The resets and steps of one session that :func:`websocket_protocol` answers as their
    frame arrives, while :func:`play_socket` waits for the next message (so nothing of the
    session is under way), with the reply ``play_socket`` would send: one that runs on the event
    loop, one that fails validation and one that raises. Any other message (a frame the guard
    refuses, a state or close message, a reset or step run on a worker thread) is left to
    ``play_socket``."""

    def __init__(self, env: Any, session_id: str, sessions: Sessions):
        self.env, self.session_id, self.sessions = env, session_id, sessions

    def answer(self, text: str) -> str | None:
        """The reply to the frame ``text``, or None to leave the message to ``play_socket``."""
        data, problem = read_frame({"text": text})
        if problem is not None or data["type"] not in ("step", "reset"):
            return None
        try:
            step = data["type"] == "step"
            outcome = self.env.outcome_now(Step(_action(data)) if step
                                           else Reset(WSResetMessage(**data).data))
            if outcome is None:
                return None
            self.sessions.used(self.session_id, stepped=step)
            return observation_message(*outcome)
        except Exception as exc:  # noqa: BLE001 - reported to the client, as by play_socket
            return _failure(exc)


#: The ASGI scope extension through which :func:`play_socket` hands the protocol its
#: :class:`Lane`: ``scope["extensions"][LANE](lane)``.
LANE = "srelib.lane"


async def play_socket(sessions: Sessions, scope: dict, receive: Receive, send: Send) -> None:
    """Serve one WebSocket connection: a fresh session, then messages until ``close`` or
    disconnect. ``receive`` returns ``(message, event)``: the frame's parsed JSON object (None
    for any other event) and the ASGI event; frames the guard refused never come through. A
    protocol that offers the :data:`LANE` extension in ``scope`` gets the session's
    :class:`Lane`."""
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    try:
        session_id, env = await sessions.open()
    except Exception as exc:  # noqa: BLE001 - no session: the client is told why, as by OpenEnv
        await send(_text(_refusal(exc)))
        return await send({"type": "websocket.close", "code": 1000})
    attach = (scope.get("extensions") or {}).get(LANE)
    if attach is not None:
        attach(Lane(env, session_id, sessions))
    try:
        while True:
            data, event = await receive()
            if event["type"] == "websocket.disconnect":
                return
            if data is None:
                continue
            try:
                text = await _reply(env, session_id, sessions, data)
            except Exception as exc:  # noqa: BLE001 - reported to the client, as OpenEnv does
                text = _failure(exc)
            if text is None:
                break
            await send(_text(text))
        await send({"type": "websocket.close", "code": 1000})
    finally:
        await sessions.close(session_id)


#: Messages a client may send ahead of the replies before the server stops reading its socket,
#: and the characters (bytes for a binary message) they may hold: a message may be as long as
#: uvicorn's ``ws_max_size`` (16 MiB), so a count alone would let one connection queue 256 MiB.
MAX_AHEAD = 16
MAX_AHEAD_CHARS = 1 << 20
#: The frames one message may come in (a first frame and its continuations): each costs the
#: parser a pass and the message a buffer, so a message of a few MiB in one-byte frames would
#: cost the server far more memory and CPU than its size. Past it the connection is closed, 1009.
MAX_FRAGMENTS = 1024


def _length(event: dict) -> int:
    return len(event.get("text") or event.get("bytes") or "")


class _MeasuredQueue(asyncio.Queue):
    """The queue of ASGI events for the app, which knows how many characters (or bytes) the
    messages it holds add up to (:attr:`size`)."""

    size = 0

    def _put(self, item) -> None:
        super()._put(item)
        self.size += _length(item)

    def _get(self):
        item = super()._get()
        self.size -= _length(item)
        return item


def websocket_protocol():
    """uvicorn's WebSocket protocol (``websockets``' sans-I/O) with srelib's fast path:

    * a chunk that is one whole text frame, where the frames before it ended, is read here
      (:func:`~srelib.serve.frames.whole_text`) and goes to the app (or its :class:`Lane`)
      as ``websockets`` and uvicorn would pass it on; anything else goes through them;
    * reading pauses only while a client is more than :data:`MAX_AHEAD` messages or
      :data:`MAX_AHEAD_CHARS` characters ahead (uvicorn pauses after every message and resumes
      when the app takes it: two ``epoll`` calls a message, for a protocol in which a client
      waits for each reply anyway); it resumes when the app has taken them all;
    * reading also pauses while the write buffer is past its high-water mark (the client does
      not read what it is sent): ``websockets`` answers every ping with a pong written at once,
      so a client that pings and never reads would otherwise queue pongs without end;
    * a message in more than :data:`MAX_FRAGMENTS` frames closes the connection (1009);
    * a ``token=`` in the query moves to an ``X-Session-Token`` header before anything sees the
      request, so the access log, which prints the query, never shows a session's token.
    """
    require("uvicorn", "srelib.serve.ws")
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
    require("websockets", "srelib.serve.ws")
    from websockets.protocol import OPEN

    class AheadProtocol(WebSocketsSansIOProtocol):
        _frames: Boundaries | None = None  # where frames end, from the end of the handshake
        _lane: Lane | None = None
        _parked = False  # is the app waiting in receive()?
        _write_blocked = False  # is the write buffer past its high-water mark?
        _fragments = 0  # the frames of the message being received

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.queue = self._queued = _MeasuredQueue()

        def handle_connect(self, event) -> None:
            super().handle_connect(event)
            if self.response.status_code == 101:
                _token_to_header(self.scope)
                self.scope["extensions"][LANE] = self._attach
                # uvicorn hands over the handshake request alone: frames start with the next
                # bytes (a client that sent frames with its request gets no fast path)
                if not self.conn.reader.buffer:
                    self._frames = Boundaries()

        def _attach(self, lane: Lane) -> None:
            self._lane = lane

        def data_received(self, data: bytes) -> None:
            frames, conn = self._frames, self.conn
            if frames is not None and frames.aligned and conn.state is OPEN \
                    and conn.current_size is None and not conn.writes and not self.close_sent:
                payload = whole_text(data, masked=True, limit=conn.max_message_size)
                if payload is not None and self._take(payload):
                    return
            if frames is not None:
                frames.feed(data)
            super().data_received(data)

        def _take(self, payload: bytes) -> bool:
            """Pass on a whole text frame's payload, or answer it through the lane; False if
            it is not UTF-8 (``websockets`` and uvicorn close the connection)."""
            try:
                text = payload.decode()
            except UnicodeDecodeError:
                return False
            if self._lane is not None and self._parked and self.queue.empty() \
                    and self.writable.is_set():
                reply = self._lane.answer(text)
                if reply is not None:
                    self.transport.write(text_frame(reply.encode(), mask=False))
                    return True
            self.queue.put_nowait({"type": "websocket.receive", "text": text})
            self._hold_back()
            return True

        async def receive(self):
            """uvicorn's, noting while the app waits in it (when the lane may answer); it
            resumes reading, unless the client does not read what it is sent."""
            self._parked = True
            try:
                return await super().receive()
            finally:
                self._parked = False
                if self._write_blocked:
                    self.transport.pause_reading()

        def pause_writing(self) -> None:
            super().pause_writing()
            self._write_blocked = True
            self.transport.pause_reading()

        def resume_writing(self) -> None:
            super().resume_writing()
            self._write_blocked = False
            if not self.read_paused:
                self.transport.resume_reading()

        def handle_text(self, event) -> None:
            self._fragments = 1
            super().handle_text(event)

        def handle_bytes(self, event) -> None:
            self._fragments = 1
            super().handle_bytes(event)

        def handle_cont(self, event) -> None:
            self._fragments += 1
            if self._fragments <= MAX_FRAGMENTS:
                return super().handle_cont(event)
            if not self.close_sent:
                self.frames = []
                self.conn.fail(1009, f"a message may come in at most {MAX_FRAGMENTS} frames")
                self.handle_parser_exception()

        def send_receive_event_to_app(self) -> None:
            paused, self.read_paused = self.read_paused, True  # uvicorn: pause if not paused
            super().send_receive_event_to_app()
            self.read_paused = paused
            self._hold_back()

        def _hold_back(self) -> None:
            queued = self._queued
            if not self.read_paused and (queued.qsize() > MAX_AHEAD
                                         or queued.size > MAX_AHEAD_CHARS):
                self.read_paused = True
                self.transport.pause_reading()

    return AheadProtocol


def _token_to_header(scope: dict) -> None:
    """Move a ``token`` of ``scope``'s query string into an ``X-Session-Token`` header."""
    from urllib.parse import parse_qsl, urlencode

    pairs = parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)
    tokens = [value for key, value in pairs if key == "token"]
    if tokens:
        scope["query_string"] = urlencode([(k, v) for k, v in pairs if k != "token"]).encode()
        scope["headers"] = [*scope["headers"], (b"x-session-token", tokens[0].encode("latin-1"))]
