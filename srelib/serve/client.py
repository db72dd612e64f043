"""srelib's own connection to ``srelib serve``'s ``/ws``: OpenEnv's WebSocket protocol with
nothing between the socket and the message.

OpenEnv's ``EnvClient`` (:class:`~srelib.serve.remote.SreClient`) runs each message through
its asyncio connection (locks, a timeout task, a keep-alive pinger) and each reply through
the pydantic observation model. Here a reply is parsed once, into the dict the server sent
(``bench/bench_serve.py``: half the client CPU per episode of ``EnvClient``):

* :class:`Wire`: the protocol without I/O (``websockets``' sans-I/O client: the handshake,
  masked frames, fragments, pings answered, a close seen);
* :class:`BlockingLink`: a ``Wire`` over a blocking socket, for :class:`RemoteEnv`;
* :class:`AsyncLink`: a ``Wire`` on an asyncio transport, for many sessions on one event loop
  (:class:`~srelib.serve.remote.AsyncRemoteEnv`).

Each ``ask(message)`` sends one message and returns the reply's ``data``; an error reply raises
what the in-process environment would (:func:`server_error`). A link whose reply did not come
(a timeout, a lost connection) must not be used again: the next reply could be the late one.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from typing import Any

from srelib.extras import require

require("websockets", "srelib.serve.client")
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.protocol import State
from websockets.uri import parse_uri

from srelib.serve.frames import Boundaries, text_frame, whole_text
from srelib.serve.wire import NoEpisodeError, SessionClosedError, dumps, loads

#: The largest reply accepted, as OpenEnv's client allows (an observation is a few kB).
MAX_MESSAGE_BYTES = 100 * 2**20
_READ = 1 << 16


def loop_factory():
    """What makes the event loop to run many :class:`AsyncLink` sessions on: uvloop's when
    installed (the serve extra installs it; uvicorn's server runs on it too), else asyncio's.
    ``asyncio.Runner(loop_factory=loop_factory())`` on Python 3.11+."""
    try:
        import uvloop
    except ModuleNotFoundError:
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def ws_url(url: str) -> str:
    """``url``'s ``/ws`` address (http(s):// becomes ws(s)://)."""
    for plain, ws in (("http://", "ws://"), ("https://", "wss://")):
        if url.startswith(plain):
            url = ws + url[len(plain):]
    return url.rstrip("/") + "/ws"


def server_error(message: str, code: str) -> Exception:
    """The exception the in-process environment raises for what the server reported."""
    if code == "EXECUTION_ERROR":
        if message.startswith("no episode in this session"):
            return NoEpisodeError("call reset() before step()")
        if message.startswith("this session was closed"):
            return SessionClosedError(message)
        return ValueError(message)
    if code == "CAPACITY_REACHED":
        return ConnectionError(f"the server is full: {message}")
    return RuntimeError(f"{message} ({code})")


def _data(reply: bytes) -> dict:
    try:
        value = loads(reply)
    except ValueError as exc:  # not UTF-8, or not JSON
        raise ConnectionError(f"the server's reply is not JSON text ({exc})") from None
    if not isinstance(value, dict):
        raise ConnectionError(f"the server's reply is not a JSON object: {reply[:80]!r}")
    if value.get("type") == "error":
        error = value.get("data") or {}
        raise server_error(str(error.get("message", "Unknown error")),
                           str(error.get("code", "UNKNOWN")))
    return value.get("data") or {}


class Wire:
    """One WebSocket conversation with the server, without I/O: feed it what the socket read,
    send what it has to send."""

    def __init__(self, url: str):
        self.uri = parse_uri(ws_url(url))
        self.ws = ClientProtocol(self.uri, max_size=MAX_MESSAGE_BYTES)
        self.ws.send_request(self.ws.connect())
        self.replies: list[bytes] = []  # whole messages received, oldest first
        self._parts: list[bytes] = []
        self._handshake = bytearray()  # the server's bytes until the handshake is done
        self._frames: Boundaries | None = None  # where its frames end, from then on

    def outgoing(self) -> bytes:
        return b"".join(self.ws.data_to_send())

    def request(self, message: dict) -> bytes:
        """The bytes that send ``message`` (and anything else due, such as a pong)."""
        ws = self.ws
        if ws.state is not State.OPEN:
            raise ConnectionError("the server closed the connection")
        payload = dumps(message).encode()
        if ws.writes or ws.expect_continuation_frame:  # keep the order of what is due
            ws.send_text(payload)
            return self.outgoing()
        return text_frame(payload, mask=True)

    @property
    def connecting(self) -> bool:
        """Is the handshake still under way?"""
        return self.ws.state is State.CONNECTING

    def feed(self, data: bytes) -> None:
        """Take what the socket read (b"": the connection ended); whole messages join
        :attr:`replies`. Raises ConnectionError once the server has refused the handshake, or
        has closed with no reply left to read. A chunk that is one whole text frame, where the
        frames before it ended, is read here (:mod:`srelib.serve.frames`)."""
        frames = self._frames
        if data and frames is not None:
            if frames.aligned and self.ws.state is State.OPEN and self.ws.current_size is None:
                payload = whole_text(data, masked=False, limit=MAX_MESSAGE_BYTES)
                if payload is not None:
                    self.replies.append(payload)
                    return
            frames.feed(data)
        if data:
            self._receive(data)
        else:
            self.ws.receive_eof()
        for event in self.ws.events_received():
            if isinstance(event, Response) and self.ws.handshake_exc is not None:
                raise ConnectionError(f"the server refused the WebSocket at {self.uri.host}:"
                                      f"{self.uri.port}: {self.ws.handshake_exc}")
            if isinstance(event, Frame) and event.opcode in (Opcode.TEXT, Opcode.BINARY,
                                                             Opcode.CONT):
                self._parts.append(event.data)
                if event.fin:
                    self.replies.append(b"".join(self._parts))
                    self._parts.clear()
        if not self.replies and self.ws.state is State.CLOSED:
            raise ConnectionError("the server closed the connection")

    def _receive(self, data: bytes) -> None:
        """Give ``data`` to ``websockets``; once the handshake is done, the frames start after
        the response's blank line."""
        if self._frames is None:
            self._handshake += data
        self.ws.receive_data(data)
        if self._frames is None and self.ws.state is State.OPEN:
            self._frames = Boundaries()
            self._frames.feed(bytes(self._handshake[self._handshake.index(b"\r\n\r\n") + 4:]))
            self._handshake.clear()

    def reply(self) -> dict:
        """The oldest reply's data (a message that came before any request, the server's
        refusal of a session, answers the first)."""
        return _data(self.replies.pop(0))


class BlockingLink:
    """A :class:`Wire` over a blocking socket: one request, one reply, no thread or loop."""

    def __init__(self, url: str, *, connect_timeout: float, message_timeout: float):
        self.wire = wire = Wire(url)
        sock = socket.create_connection((wire.uri.host, wire.uri.port), timeout=connect_timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if wire.uri.secure:
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=wire.uri.host)
        self.sock = sock
        try:
            sock.sendall(wire.outgoing())
            while wire.connecting:
                wire.feed(sock.recv(_READ))
        except BaseException:
            sock.close()
            raise
        sock.settimeout(message_timeout)

    def ask(self, message: dict) -> dict:
        """Send ``message``; the reply's data. socket.timeout (a TimeoutError) past
        ``message_timeout``."""
        wire = self.wire
        if not wire.replies:
            self.sock.sendall(wire.request(message))
        while not wire.replies:
            wire.feed(self.sock.recv(_READ))
            due = wire.outgoing()
            if due:
                self.sock.sendall(due)
        return wire.reply()

    def close(self) -> None:
        """Say ``close`` (the server frees the session) and drop the socket."""
        try:
            self.sock.sendall(self.wire.request({"type": "close"}))
        except OSError:
            pass
        self.sock.close()


class AsyncLink(asyncio.Protocol):
    """A :class:`Wire` on an asyncio transport; open one with :meth:`connect`."""

    def __init__(self, wire: Wire, message_timeout: float):
        self.wire, self.message_timeout = wire, message_timeout
        self.transport: Any = None
        self._waiter: asyncio.Future | None = None
        self._error: Exception | None = None

    @classmethod
    async def connect(cls, url: str, *, connect_timeout: float = 10.0,
                      message_timeout: float = 120.0) -> "AsyncLink":
        link = cls(Wire(url), message_timeout)
        uri = link.wire.uri
        await asyncio.wait_for(asyncio.get_running_loop().create_connection(
            lambda: link, uri.host, uri.port,
            ssl=ssl.create_default_context() if uri.secure else None), connect_timeout)
        link.transport.write(link.wire.outgoing())
        await link._until(lambda: not link.wire.connecting, connect_timeout)
        return link

    def connection_made(self, transport) -> None:
        self.transport = transport  # asyncio and uvloop set TCP_NODELAY themselves

    def data_received(self, data: bytes) -> None:
        self._feed(data)
        due = self.wire.outgoing()
        if due:
            self.transport.write(due)

    def connection_lost(self, exc) -> None:
        self._feed(b"")
        self._fail(ConnectionError("the connection to the server was lost"))

    def _feed(self, data: bytes) -> None:
        try:
            self.wire.feed(data)
        except ConnectionError as exc:
            self._fail(exc)
        self._wake()

    def _fail(self, exc: Exception) -> None:
        self._error = self._error or exc
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def _until(self, ready, timeout: float) -> None:
        """Wait for ``ready()``; the connection's error, or TimeoutError after ``timeout`` s
        (the connection is then dropped: a late reply must not answer the next request)."""
        loop = asyncio.get_running_loop()
        timer = loop.call_later(timeout, self._fail, TimeoutError(
            f"no reply from the server within {timeout:g} s"))
        try:
            while not ready():
                if self._error is not None:
                    self.transport.abort()
                    raise self._error
                self._waiter = loop.create_future()
                try:
                    await self._waiter
                except asyncio.CancelledError:  # the reply may still come: drop the connection
                    self._fail(ConnectionError("a request was cancelled"))
                    self.transport.abort()
                    raise
        finally:
            timer.cancel()

    async def ask(self, message: dict) -> dict:
        """Send ``message``; the reply's data."""
        wire = self.wire
        if not wire.replies:
            if self._error is not None:
                raise self._error
            self.transport.write(wire.request(message))
            await self._until(lambda: wire.replies, self.message_timeout)
        return wire.reply()

    async def close(self) -> None:
        """Say ``close`` (the server frees the session) and drop the connection."""
        if self.transport is not None and not self.transport.is_closing():
            try:
                self.transport.write(self.wire.request({"type": "close"}))
            except ConnectionError:  # the server closed first
                pass
            self.transport.close()
