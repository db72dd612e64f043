"""Who holds which session: one registry for every route of ``srelib serve`` that opens one.

* Every session, whichever route opened it (``POST /sessions``, MCP ``initialize`` or
  ``openenv/session/create`` on ``POST /mcp``, a ``/ws`` or ``/mcp`` WebSocket), is held by a
  client host (:func:`client_host`, the peer address) and counts against that host's
  ``max_per_client``; so does a WebSocket attached to a session.
* A session that a client names by its id (a URL path, ``/ws?session_id=``,
  ``params.session_id`` of an MCP request, ``Mcp-Session-Id``) is used or closed only with its
  owner's token (:meth:`Clients.owns`). A session no route names (a WebSocket's own) is in no
  table of tokens, so no id, guessed or leaked, reaches it.
"""

from __future__ import annotations

import functools
import ipaddress
import secrets
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

#: The host every loopback address counts as: 127.0.0.0/8, ::1 and ::ffff:127.x are this machine.
LOOPBACK = "loopback"
#: An IPv6 client counts by its network of this prefix: one host is routinely given a /64.
IPV6_PREFIX = 64


class TooManySessions(Exception):
    """The client host already holds ``max_per_client`` sessions."""


@functools.lru_cache(maxsize=4096)
def host_key(address: str) -> str:
    """The client host that a peer ``address`` counts as: an IPv4-mapped IPv6 address as its
    IPv4 address, every loopback address as :data:`LOOPBACK`, an IPv6 address as its
    /:data:`IPV6_PREFIX` network; anything that is not an IP address (a Unix socket) as given."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # without an IPv6 zone (fe80::1%eth0)
    except ValueError:
        return address
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return LOOPBACK
    if ip.version == 6:
        return str(ipaddress.ip_network(f"{ip}/{IPV6_PREFIX}", strict=False))
    return str(ip)


def client_host(scope: dict) -> str:
    """The client host of an ASGI connection (:func:`host_key` of its peer address). The peer
    is the socket's, unless uvicorn was told to trust a proxy (``--forwarded-allow-ips``) and
    the peer is one: then it is the address that proxy forwarded."""
    return host_key(str((scope.get("client") or ("unknown", 0))[0]))


@dataclass
class Holder:
    """A session that clients name: its host and its owner's token."""

    host: str
    token: str


@dataclass
class Clients:
    """The registry (module doc) over ``sessions`` (:class:`srelib.serve.sessions.Sessions`).

    ``held``: the sessions that clients name, by id; ``handles``: MCP's ``Mcp-Session-Id``
    of each MCP session, to its session id; ``reserved``: per host, the WebSocket connections
    open and the sessions being opened. Bounded by construction: ``held`` and ``handles`` by the
    open sessions (those closed are forgotten on close, those reaped at the next count),
    ``reserved`` by the open connections.
    """

    max_per_client: int | None
    sessions: Any
    held: dict[str, Holder] = field(default_factory=dict)
    handles: dict[str, str] = field(default_factory=dict)
    reserved: Counter = field(default_factory=Counter)

    def full(self, host: str) -> bool:
        """Does ``host`` hold its ``max_per_client`` sessions (None: never)?"""
        self._prune()
        held = self.reserved[host] + sum(h.host == host for h in self.held.values())
        return self.max_per_client is not None and held >= self.max_per_client

    def reserve(self, host: str) -> None:
        """Count one more session of ``host`` until :meth:`release` (a WebSocket's)."""
        self.reserved[host] += 1

    def release(self, host: str) -> None:
        self.reserved[host] -= 1
        if self.reserved[host] <= 0:  # hosts come and go: keep only those connected
            del self.reserved[host]

    async def open(self, host: str, *, mcp: bool = False) -> tuple[str, str]:
        """Open a session that ``host`` names by id.

        Args:
            host: the client host (:func:`client_host`).
            mcp: an MCP session: its token is also its ``Mcp-Session-Id`` (:meth:`by_handle`).

        Returns:
            ``(session id, token)``.

        Raises:
            TooManySessions: ``host`` holds ``max_per_client`` sessions.
            SessionCapacityError: (OpenEnv's) the server holds ``max_sessions``.
        """
        if self.full(host):
            raise TooManySessions(f"this client holds {self.max_per_client} sessions, the most "
                                  "one client may; close one first")
        self.reserve(host)  # held while the environment is built: a concurrent open counts it
        try:
            session_id, _env = await self.sessions.open()
        finally:
            self.release(host)
        token = secrets.token_urlsafe(24)
        self.held[session_id] = Holder(host, token)
        if mcp:
            self.handles[token] = session_id
        return session_id, token

    def owns(self, session_id: object, token: object) -> bool:
        """Does ``token`` open the live session ``session_id``? False for a session that no
        client names (a WebSocket's own), one closed and anything that is not a string."""
        holder = self.held.get(session_id) if isinstance(session_id, str) else None
        return holder is not None and isinstance(token, str) and self.sessions.live(session_id) \
            and secrets.compare_digest(holder.token.encode(), token.encode(errors="replace"))

    def by_handle(self, handle: str | None) -> str | None:
        """The live MCP session whose ``Mcp-Session-Id`` is ``handle``, or None."""
        session_id = self.handles.get(handle) if handle else None
        return session_id if session_id is not None and self.owns(session_id, handle) else None

    async def close(self, session_id: str) -> None:
        """Close a session that :meth:`owns` says the caller holds, and forget it."""
        self._forget(session_id)
        if self.sessions.live(session_id):
            await self.sessions.close(session_id)

    def _forget(self, session_id: str) -> None:
        holder = self.held.pop(session_id, None)
        if holder is not None:
            self.handles.pop(holder.token, None)

    def _prune(self) -> None:
        for gone in [s for s in self.held if not self.sessions.live(s)]:  # reaped when idle
            self._forget(gone)
