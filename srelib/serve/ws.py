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
WebSockets on.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from openenv.core.env_server import SessionCapacityError
from openenv.core.env_server.exceptions import EnvironmentFactoryError
from openenv.core.env_server.types import (WSCloseMessage, WSErrorCode, WSErrorResponse,
                                           WSResetMessage, WSStateMessage, WSStateResponse,
                                           WSStepMessage)
from pydantic import ValidationError

from srelib.serve.sessions import Sessions
from srelib.serve.wire import SreAction, observation_message

Receive = Callable[[], Awaitable[tuple[dict | None, dict]]]
Send = Callable[[dict], Awaitable[None]]


def _error(**data: Any) -> str:
    return WSErrorResponse(data=data).model_dump_json()


def _refusal(exc: Exception) -> str:
    """The error reply of a connection that got no session, in OpenEnv's words."""
    if isinstance(exc, SessionCapacityError):
        return _error(message=str(exc), code=WSErrorCode.CAPACITY_REACHED,
                      active_sessions=exc.active_sessions, max_sessions=exc.max_sessions)
    if isinstance(exc, EnvironmentFactoryError):
        return _error(message=str(exc), code=WSErrorCode.FACTORY_ERROR,
                      factory_name=exc.factory_name)
    return _error(message=str(exc), code=WSErrorCode.SESSION_ERROR)


def _text(text: str) -> dict:
    return {"type": "websocket.send", "text": text}


async def _reply(env: Any, session_id: str, sessions: Sessions, data: dict) -> str | None:
    """The reply to one reset, step or state message (``data``, parsed); None for close."""
    kind = data["type"]
    if kind == "reset":
        options = WSResetMessage(**data).data
        outcome = await env.reset_outcome(**options)
        sessions.used(session_id)
        return observation_message(*outcome)
    if kind == "step":
        action = SreAction.model_validate(WSStepMessage(**data).data)
        outcome = await env.step_outcome(action)
        sessions.used(session_id, stepped=True)
        return observation_message(*outcome)
    if kind == "close":
        WSCloseMessage(**data)
        return None
    WSStateMessage(**data)
    return WSStateResponse(data=env.state.model_dump()).model_dump_json()


async def play_socket(sessions: Sessions, receive: Receive, send: Send) -> None:
    """Serve one WebSocket connection: a fresh session, then messages until ``close`` or
    disconnect. ``receive`` returns ``(message, event)``: the frame's parsed JSON object (None
    for any other event) and the ASGI event; frames the guard refused never come through."""
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    try:
        session_id, env = await sessions.open()
    except Exception as exc:  # noqa: BLE001 - no session: the client is told why, as by OpenEnv
        await send(_text(_refusal(exc)))
        return await send({"type": "websocket.close", "code": 1000})
    try:
        while True:
            data, event = await receive()
            if event["type"] == "websocket.disconnect":
                return
            if data is None:
                continue
            try:
                text = await _reply(env, session_id, sessions, data)
            except ValidationError as exc:
                text = _error(message="Invalid message", code=WSErrorCode.VALIDATION_ERROR,
                              errors=exc.errors())
            except Exception as exc:  # noqa: BLE001 - reported to the client, as OpenEnv does
                text = _error(message=str(exc), code=WSErrorCode.EXECUTION_ERROR)
            if text is None:
                break
            await send(_text(text))
        await send({"type": "websocket.close", "code": 1000})
    finally:
        await sessions.close(session_id)


#: Messages a client may send ahead of the replies before the server stops reading its socket.
MAX_AHEAD = 16


def websocket_protocol():
    """uvicorn's WebSocket protocol (``websockets``' sans-I/O), reading paused only while a
    client is more than :data:`MAX_AHEAD` messages ahead. uvicorn pauses after every message
    and resumes when the app takes it: two ``epoll`` calls a message, for a protocol in which
    a client waits for each reply anyway."""
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

    class AheadProtocol(WebSocketsSansIOProtocol):
        def send_receive_event_to_app(self) -> None:
            paused, self.read_paused = self.read_paused, True  # uvicorn: pause if not paused
            super().send_receive_event_to_app()
            self.read_paused = paused
            if not paused and self.queue.qsize() > MAX_AHEAD:
                self.read_paused = True
                self.transport.pause_reading()

    return AheadProtocol
