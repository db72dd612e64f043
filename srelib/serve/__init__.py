"""``srelib serve``: the environment as an OpenEnv server (:mod:`.server`), what of a session runs
on its event loop (:mod:`.scheduling`), its ``/ws`` sessions (:mod:`.ws`), its guard against bad
clients (:mod:`.guard`) and its MCP tools (:mod:`.mcp`); and the clients that speak the same
protocol, one core (:class:`~.remote.Protocol`) with a blocking and an asyncio face,
:class:`~.remote.RemoteEnv` and :class:`~.remote.AsyncRemoteEnv` (:mod:`.remote`, over
:mod:`.client`). A front end: nothing below imports it. Needs the ``serve`` extra."""
