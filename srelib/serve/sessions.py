"""OpenEnv's session registry as ``srelib serve`` uses it: the one place that touches private
members of OpenEnv's ``HTTPEnvServer`` (openenv 0.10).

OpenEnv opens a session only for a WebSocket connection and publishes no API to open one for
another transport, find its environment, close it or count its activity. srelib's HTTP
sessions (``/sessions``) and MCP sessions (``/mcp``) need exactly that, sharing OpenEnv's cap
on concurrent sessions and its idle reaper, so :class:`Sessions` calls these private members
and no other module does:

* ``_create_session()``: open a session (a slot under the cap, an environment, its activity
  record), as OpenEnv's ``/ws`` route does;
* ``_destroy_session(id)``: close it, releasing the slot, as ``/ws`` does on disconnect;
* ``_sessions``: a session's environment, to call its public ``reset_async``/``step_async``;
* ``_update_session_activity(id, increment_step=)``: keep a used session from the idle reaper.

Everything else goes through public API: ``get_session_info`` (is a session live),
``get_capacity_status``, ``register_routes`` and the ``Environment`` methods.
"""

from __future__ import annotations

from typing import Any


class Sessions:
    """The session operations srelib's HTTP and MCP sessions need, over one OpenEnv server."""

    def __init__(self, server: Any):
        self.server = server

    def live(self, session_id: str) -> bool:
        """True while ``session_id`` is open and its environment built."""
        return self.server.get_session_info(session_id) is not None

    def environment(self, session_id: str) -> Any | None:
        """The session's environment, or None when there is no such open session."""
        return self.server._sessions.get(session_id) if self.live(session_id) else None

    async def open(self) -> tuple[str, Any]:
        """``(session id, environment)``; raises OpenEnv's ``SessionCapacityError`` when full."""
        return await self.server._create_session()

    async def close(self, session_id: str) -> None:
        await self.server._destroy_session(session_id)

    def used(self, session_id: str, *, stepped: bool = False) -> None:
        """Record activity (and a step) so the idle reaper keeps the session."""
        self.server._update_session_activity(session_id, increment_step=stepped)
