"""``srelib serve``: the environment as an OpenEnv server (:mod:`.server`), its guard against bad
clients (:mod:`.guard`) and its MCP tools (:mod:`.mcp`); and the client that speaks the same
protocol, :class:`~.remote.RemoteEnv` (:mod:`.remote`). A front end: nothing below imports it.
Needs the ``serve`` extra."""
