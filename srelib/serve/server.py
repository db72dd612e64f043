"""``srelib serve``: the incident environment as an OpenEnv server, one environment per session.

The server is OpenEnv's own (``openenv.core.env_server.HTTPEnvServer``, the server that
``create_app`` wraps): its WebSocket protocol on ``/ws`` (``reset`` / ``step`` / ``state`` /
``close`` messages, one environment per connection), ``/health``, ``/schema``, ``/metadata``,
its cap on concurrent sessions and its idle-session reaper. srelib adds:

* :mod:`srelib.serve.ws`: ``/ws`` connections that open a session of their own are served by
  srelib, message for message as OpenEnv serves them but with each reply built from the
  environment's dict (about 5 us a reply with orjson, against 57 us for the pydantic round
  trip);
* :mod:`srelib.serve.scheduling`: a session's calls one at a time, each on the event loop
  unless it may build its task, search, read text or grade (then on a worker thread), decided
  from what the environment already holds in memory;
* typed Action / Observation / State models generated from the action vocabulary
  (``srelib.env.actions``) and the observation contract;
* HTTP sessions on ``/sessions`` (open, reset, step, state, close) for clients without a
  WebSocket; they count against the same cap and time out the same way, and each is opened by
  the token ``POST /sessions`` returns (header ``X-Session-Token``: another client gets 404);
* :mod:`srelib.serve.owners`: one registry of who holds which session, whichever route opened
  it: every kind counts against its client host's ``max_per_client`` (the peer address;
  ``X-Forwarded-For`` only from the proxies ``forwarded_allow_ips`` names), and a session named
  by its id is used or closed only with its owner's token;
* ``/metadata`` with srelib's name, version, description, the action and observation schemas
  and the reward range (:data:`srelib.env.core.REWARD_RANGE`);
* the actions as MCP tools on OpenEnv's ``/mcp`` route, with MCP's session handshake, so a
  standard MCP client connects (:mod:`srelib.serve.mcp`);
* :mod:`srelib.serve.guard`: every request body is capped at 1 MiB before it is read;
  malformed WebSocket frames get an error reply; integers are strict (``"seed": true`` or
  ``"7"``: 422); a client that does not read what it is sent is not read on.

Protocol errors (invalid JSON, a field of the wrong JSON type, an unknown message) get an error
reply and the session goes on; agent errors (an unknown action, a missing parameter) are
the environment's to judge, exactly as in process: an error observation that costs a step.
Nothing is shared between sessions: each owns an :class:`~srelib.env.core.IncidentEnv`.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import uuid
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional

from srelib.extras import require

require("openenv", "srelib serve")
from openenv.core.env_server import (ConcurrencyConfig, Environment, HTTPEnvServer,
                                     SessionCapacityError, serialize_observation)
from openenv.core.env_server.types import EnvironmentMetadata
require("fastapi", "srelib serve")
from fastapi import Request  # resolved by FastAPI from this module's names
require("pydantic", "srelib.serve.server")
from pydantic import BaseModel, ConfigDict, ValidationError

from srelib.env.core import IncidentEnv
from srelib.serve.guard import MAX_MESSAGE_BYTES, BodyLimit, Guard, timed_http
from srelib.serve.mcp import McpLifecycle
from srelib.serve.owners import Clients, TooManySessions, client_host
from srelib.serve.scheduling import Call, Reset, Step, on_thread, record_reset
from srelib.serve.sessions import Sessions
from srelib.serve.wire import (NoEpisodeError, ResetOptions, SessionClosedError, SreAction,
                               SreObservation, SreState)
from srelib.serve.ws import play_socket, websocket_protocol

#: Where ``srelib serve`` listens unless told otherwise: this machine only.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_MAX_SESSIONS = 16
DEFAULT_IDLE_TIMEOUT_S = 300.0
#: Unless told otherwise, one client host holds at most this share of ``max_sessions``.
CLIENT_SHARE = 0.25
#: Seconds a connection has to deliver a whole request (headers and body).
DEFAULT_READ_TIMEOUT_S = 10.0
#: Options ``reset`` accepts.
RESET_OPTIONS = ("task", "pool", "mode", "seed", "episode_id")
class SreEnvironment(Environment[SreAction, SreObservation, SreState]):
    """One session's incident environment: one core, with OpenEnv's and MCP's faces over it.

    The core is :meth:`play` (a :class:`~srelib.serve.scheduling.Reset` or
    :class:`~srelib.serve.scheduling.Step` played on the session's
    :class:`~srelib.env.core.IncidentEnv`, returning its outcome) and :attr:`state`.
    :meth:`outcome` plays a call where :mod:`srelib.serve.scheduling` says (the event loop, or a
    worker thread for a call that may build, search or grade), one call of the session at a
    time in the order they came; :meth:`outcome_now` plays it at once when it runs on the loop
    and nothing of the session is under way (:mod:`srelib.serve.ws` answers such frames as they
    arrive). OpenEnv's ``reset``/``step`` and their ``_async`` forms are these outcomes as wire
    models; :attr:`mcp_server` serves the actions as MCP tools over the same ``reset``/``step``.

    What it keeps is bounded by construction: one episode (``reset`` starts afresh) of at most
    ``max_steps`` (40) records, each action a copy bounded by ``srelib.env.agent_input`` (1M
    characters) within a frame of ``server_guard.MAX_MESSAGE_CHARS``; ``max_sessions`` of them.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self):
        """A session with no episode yet."""
        super().__init__()
        self._env: IncidentEnv | None = IncidentEnv()
        self._info: dict = {}
        self._episode_id: str | None = None
        self._mcp = None
        self._turn: asyncio.Lock | None = None  # one call at a time, made on the server's loop

    # ---- the core

    def play(self, call: Call) -> tuple:
        """Play one call on this session's environment, here and now.

        Args:
            call: a :class:`~srelib.serve.scheduling.Reset` (its options are checked: strict
                types, no unknown option) or a :class:`~srelib.serve.scheduling.Step`.

        Returns:
            ``(obs, reward, terminated, truncated, info)`` as ``IncidentEnv`` gave them, before
            any wire model (a reset's reward is None, its terminated and truncated False).

        Raises:
            ValueError: an unknown or ill-typed reset option, or an unknown task, pool or mode.
            NoEpisodeError: a step before any reset.
            SessionClosedError: the session was closed.
        """
        if isinstance(call, Reset):
            return self._reset(**call.options)
        return self._step(call.action)

    def _reset(self, /, seed: Optional[int] = None, episode_id: Optional[str] = None,
               task: Optional[str] = None, pool: Optional[str] = None,
               mode: Optional[str] = None, **options: Any) -> tuple:
        # ``self`` positional only, here and in every reset, so that an option of that name is
        # refused as unknown, the same words by every route
        env = self._open_env()
        if options:
            raise ValueError(f"unknown reset options {sorted(options)}; valid options: "
                             f"{list(RESET_OPTIONS)}")
        ResetOptions.model_validate({"seed": seed, "episode_id": episode_id, "task": task,
                                     "pool": pool, "mode": mode})  # strict, whichever route
        obs, info = env.reset(task=task, pool=pool, mode=mode, seed=seed)
        record_reset(task, info["mode"])
        self._info, self._episode_id = info, episode_id or uuid.uuid4().hex
        return obs, None, False, False, info

    def _step(self, action: SreAction) -> tuple:
        env = self._open_env()
        if env.scenario is None:
            raise NoEpisodeError("no episode in this session yet: send a reset first")
        outcome = env.step(action.to_env())
        self._info = outcome[-1]
        return outcome

    @property
    def state(self) -> SreState:
        """The session's episode: its id, step count, task, pool, mode, seed, phase and
        trajectory (an empty state before any reset)."""
        env, info = self._env, self._info
        if env is None or env.scenario is None:
            return SreState()
        return SreState(episode_id=self._episode_id, step_count=env.trajectory[-1]["step"]
                        if env.trajectory else 0, task=info.get("task"), pool=info.get("pool"),
                        mode=info.get("mode"), seed=info.get("seed"), phase=info.get("phase"),
                        trajectory=env.trajectory)

    # ---- scheduled on the server's event loop

    async def outcome(self, call: Call) -> tuple:
        """:meth:`play` on the event loop, or on a worker thread where
        :func:`~srelib.serve.scheduling.on_thread` says; the session's calls run one at a time,
        in the order they came.

        Args:
            call: the call, as for :meth:`play`.

        Returns:
            :meth:`play`'s outcome.
        """
        async with self._lock():
            if on_thread(call, self._env):
                return await asyncio.to_thread(self.play, call)
            return self.play(call)

    def outcome_now(self, call: Call) -> tuple | None:
        """:meth:`outcome` at once, for a caller that cannot wait.

        Args:
            call: the call, as for :meth:`play`.

        Returns:
            :meth:`play`'s outcome when the call runs on the event loop and no call of this
            session is under way, else None (nothing was played).
        """
        if self._busy() or on_thread(call, self._env):
            return None
        return self.play(call)

    def _busy(self) -> bool:
        return self._turn is not None and self._turn.locked()

    def _lock(self) -> asyncio.Lock:
        if self._turn is None:
            self._turn = asyncio.Lock()
        return self._turn

    # ---- OpenEnv's face

    def reset(self, /, seed: Optional[int] = None, episode_id: Optional[str] = None,
              task: Optional[str] = None, pool: Optional[str] = None,
              mode: Optional[str] = None, **options: Any) -> SreObservation:
        """Start an episode, here and now; unknown options and unknown task/pool/mode raise
        ValueError."""
        return _observation(*self.play(Reset(dict(
            options, seed=seed, episode_id=episode_id, task=task, pool=pool, mode=mode))))

    def step(self, action: SreAction, timeout_s: Optional[float] = None,
             **options: Any) -> SreObservation:
        """Take one action, here and now."""
        return _observation(*self.play(Step(action)))

    async def reset_async(self, /, seed: Optional[int] = None, episode_id: Optional[str] = None,
                          **options: Any) -> SreObservation:
        """:meth:`reset`, scheduled as :meth:`outcome` schedules it."""
        return _observation(*await self.outcome(Reset(dict(options, seed=seed,
                                                             episode_id=episode_id))))

    async def step_async(self, action: SreAction, timeout_s: Optional[float] = None,
                         **options: Any) -> SreObservation:
        """:meth:`step`, scheduled as :meth:`outcome` schedules it."""
        return _observation(*await self.outcome(Step(action)))

    def close(self) -> None:
        self._env = None

    def get_metadata(self) -> "SreMetadata":
        """srelib's name, version and description, the schemas and the reward range."""
        return metadata()

    # ---- MCP's face

    @property
    def mcp_server(self):
        """The actions as MCP tools on this session (:mod:`srelib.serve.mcp`), built on
        first use; OpenEnv's ``/mcp`` route serves them."""
        if self._mcp is None:
            from srelib.serve.mcp import action_tools

            self._mcp = action_tools(self)
        return self._mcp

    def _open_env(self) -> IncidentEnv:
        if self._env is None:
            raise SessionClosedError("this session was closed (idle for too long, or the server "
                                     "is shutting down): open a new session")
        return self._env


def _observation(obs: dict, reward, terminated: bool, truncated: bool, info: dict):
    # validated: as cheap as pydantic's model_construct here (13 us a step either way)
    fields = {k: v for k, v in obs.items() if k != "done"}
    return SreObservation(**fields, done=bool(obs.get("done")), reward=reward,
                          terminated=bool(terminated), truncated=bool(truncated), info=info)


class SreMetadata(EnvironmentMetadata):
    """OpenEnv's metadata plus what a client needs to act: the action and observation JSON
    schemas and the range every step reward lies in."""

    action_schema: Dict[str, Any]
    observation_schema: Dict[str, Any]
    reward_range: List[float]


def metadata() -> SreMetadata:
    """What ``GET /metadata`` returns (the manifest's name and version, pyproject's
    description)."""
    from srelib._version import __version__
    from srelib.env.core import REWARD_RANGE

    return SreMetadata(
        name="srelib", version=__version__,
        description=("A notebook workbench for studying LLM agents on SRE incidents: an incident "
                     "in seven services to diagnose (phase 1), then the culprit service's code "
                     "to patch (phase 2)."),
        action_schema=SreAction.model_json_schema(),
        observation_schema=SreObservation.model_json_schema(),
        reward_range=list(REWARD_RANGE))


# ---------------------------------------------------------------------------------------------
# the app


class _StepBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: SreAction


def build_app(*, max_sessions: int = DEFAULT_MAX_SESSIONS,
              idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT_S, max_per_client: int | None = None):
    """The FastAPI app: OpenEnv's routes for :class:`SreEnvironment` plus HTTP ``/sessions``.

    ``max_sessions`` caps concurrent sessions (WebSocket and HTTP together), ``max_per_client``
    those of one client host (None: :func:`per_client_default`, so that no one client takes
    every slot); a session idle for more than
    ``idle_timeout`` seconds is closed (None: never). OpenEnv checks for idle sessions every
    ``max(idle_timeout / 4, 5)`` seconds.
    """
    require("fastapi", "srelib.serve.server")
    from fastapi import FastAPI

    from srelib._version import __version__

    if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
        raise ValueError(f"max_sessions must be a positive integer, got {max_sessions!r}")
    if max_per_client is None:
        max_per_client = per_client_default(max_sessions)
    if isinstance(max_per_client, bool) or not isinstance(max_per_client, int) or max_per_client < 1:
        raise ValueError(f"max_per_client must be a positive integer or None, got {max_per_client!r}")
    if idle_timeout is not None and not idle_timeout > 0:
        raise ValueError(f"idle_timeout must be positive seconds or None, got {idle_timeout!r}")
    server = HTTPEnvServer(SreEnvironment, SreAction, SreObservation, env_name="srelib",
                           state_cls=SreState, concurrency_config=ConcurrencyConfig(
                               max_concurrent_envs=max_sessions, session_timeout=idle_timeout))
    app = FastAPI(title="srelib incident environment", version=__version__,
                  description="SRE incidents for LLM agents, served over OpenEnv's protocol.")
    # registered before OpenEnv's routes, so it answers /metadata with the schemas
    app.get("/metadata", tags=["Environment Info"], summary="Get environment metadata")(metadata)
    server.register_routes(app, mode="simulation")
    sessions = Sessions(server)
    clients = Clients(max_per_client, sessions)
    _add_sessions(app, server, sessions, idle_timeout, clients)
    app.add_middleware(Guard, clients=clients, play=functools.partial(play_socket, sessions))
    app.add_middleware(McpLifecycle, clients=clients)
    app.add_middleware(BodyLimit)  # outermost: no route reads more than MAX_BODY bytes
    app.state.openenv_server = server
    return app


def per_client_default(max_sessions: int) -> int:
    """The sessions one client host may hold unless told: :data:`CLIENT_SHARE` of
    ``max_sessions``, at least one."""
    return max(1, int(max_sessions * CLIENT_SHARE))


def _add_sessions(app, server: HTTPEnvServer, sessions: Sessions, idle_timeout: float | None,
                  clients: Clients) -> None:
    """HTTP sessions over OpenEnv's session registry (same cap, same idle reaper), each opened
    by the token ``POST /sessions`` returns, sent as ``X-Session-Token``."""
    require("fastapi", "srelib.serve.server")
    from fastapi import Header, HTTPException
    from fastapi.responses import JSONResponse

    @app.exception_handler(ValidationError)
    async def _bad_types(_request, exc):  # e.g. POST /reset with "seed": true
        return JSONResponse(status_code=422, content={"detail": exc.errors(include_url=False,
                                                                           include_input=False)})

    @app.exception_handler(NoEpisodeError)
    async def _no_episode(_request, exc):  # POST /step has no session to step
        return JSONResponse(status_code=409, content={
            "detail": f"{exc}. POST /step runs on a fresh environment; for an episode open a "
                      "session (POST /sessions, then /sessions/{id}/reset and /step) or use "
                      "the WebSocket /ws"})

    @app.exception_handler(ValueError)
    async def _bad_request(_request, exc):  # e.g. POST /reset with an unknown task
        return JSONResponse(status_code=400, content={"detail": str(exc)})

    def _env(session_id: str, token: str | None) -> SreEnvironment:
        env = sessions.environment(session_id) if clients.owns(session_id, token) else None
        if env is None:
            lapse = f"idle for more than {idle_timeout:g} s, " if idle_timeout else ""
            raise HTTPException(404, f"no session {session_id!r}: it was closed, {lapse}or "
                                     "never opened; POST /sessions opens one")
        return env

    async def _run(session_id: str, call, *args, stepped: bool = False, **kwargs):
        try:
            result = await call(*args, **kwargs)
        except (ValueError, RuntimeError) as exc:
            raise HTTPException(400, str(exc)) from exc
        sessions.used(session_id, stepped=stepped)
        return result

    @app.get("/sessions", tags=["Sessions"], summary="Session capacity and timeout")
    async def capacity() -> dict:
        status = server.get_capacity_status()
        return {"active_sessions": status.active_sessions, "max_sessions": status.max_sessions,
                "max_per_client": clients.max_per_client, "idle_timeout_s": idle_timeout}

    @app.post("/sessions", status_code=201, tags=["Sessions"], summary="Open a session")
    async def open_session(request: Request) -> dict:
        try:
            session_id, token = await clients.open(client_host(request.scope))
        except TooManySessions as exc:
            raise HTTPException(429, str(exc)) from exc
        except SessionCapacityError as exc:
            raise HTTPException(503, f"{exc}; close a session or retry later") from exc
        return {"session_id": session_id, "token": token}

    @app.post("/sessions/{session_id}/reset", tags=["Sessions"], summary="Start an episode")
    async def reset_session(session_id: str, body: ResetOptions | None = None,
                            x_session_token: str | None = Header(None)) -> dict:
        options = body.model_dump(exclude_unset=True) if body is not None else {}
        obs = await _run(session_id, _env(session_id, x_session_token).reset_async, **options)
        return serialize_observation(obs)

    @app.post("/sessions/{session_id}/step", tags=["Sessions"], summary="Take one action")
    async def step_session(session_id: str, body: _StepBody,
                           x_session_token: str | None = Header(None)) -> dict:
        env = _env(session_id, x_session_token)
        obs = await _run(session_id, env.step_async, body.action, stepped=True)
        return serialize_observation(obs)

    @app.get("/sessions/{session_id}/state", tags=["Sessions"], summary="The session's episode")
    async def session_state(session_id: str, x_session_token: str | None = Header(None)) -> dict:
        env = _env(session_id, x_session_token)
        sessions.used(session_id)
        return env.state.model_dump()

    @app.delete("/sessions/{session_id}", tags=["Sessions"], summary="Close a session")
    async def close_session(session_id: str, x_session_token: str | None = Header(None)) -> dict:
        _env(session_id, x_session_token)
        await clients.close(session_id)
        return {"session_id": session_id, "closed": True}


def __getattr__(name: str):
    """``srelib.serve.server:app`` (the manifest's entry point) is built on first use."""
    if name == "app":
        globals()["app"] = value = build_app()
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------------------------------
# running it


def _config(host: str, port: int, log_level: str, read_timeout: float,
            forwarded_allow_ips: str | None, **app_options):
    require("uvicorn", "srelib.serve.server")
    import uvicorn

    # no permessage-deflate: an observation is a few kB, and compressing every frame cost the
    # server more CPU than the whole step (bench/bench_serve.py --profile). X-Forwarded-For is
    # read only from the proxies named (uvicorn's default trusts it from 127.0.0.1, and its
    # FORWARDED_ALLOW_IPS environment variable): passed explicitly either way.
    return uvicorn.Config(build_app(**app_options), host=host, port=port, log_level=log_level,
                          http=timed_http(read_timeout), ws=websocket_protocol(),
                          ws_max_size=MAX_MESSAGE_BYTES, ws_per_message_deflate=False,
                          proxy_headers=forwarded_allow_ips is not None,
                          forwarded_allow_ips=forwarded_allow_ips or "")


def serve(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *,
          max_sessions: int = DEFAULT_MAX_SESSIONS, max_per_client: int | None = None,
          idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT_S,
          read_timeout: float = DEFAULT_READ_TIMEOUT_S, forwarded_allow_ips: str | None = None,
          log_level: str = "info") -> None:
    """Run the server until interrupted (what ``srelib serve`` does); options as in
    :func:`build_app`, ``read_timeout`` (:func:`srelib.serve.guard.timed_http`) and
    ``forwarded_allow_ips``: the proxies (comma-separated addresses or networks, ``*`` for any)
    whose ``X-Forwarded-For`` names the client; None: none, the peer is the client."""
    require("uvicorn", "srelib.serve.server")
    import uvicorn

    uvicorn.Server(_config(host, port, log_level, read_timeout, forwarded_allow_ips,
                           max_sessions=max_sessions, max_per_client=max_per_client,
                           idle_timeout=idle_timeout)).run()


@contextmanager
def running(host: str = DEFAULT_HOST, port: int = 0, *, max_sessions: int = DEFAULT_MAX_SESSIONS,
            max_per_client: int | None = None, idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT_S,
            read_timeout: float = DEFAULT_READ_TIMEOUT_S, forwarded_allow_ips: str | None = None,
            log_level: str = "warning", start_timeout: float = 30.0) -> Iterator[str]:
    """Serve in a background thread of this process; yields the base URL (``port=0``: any free
    port). For notebooks, tests and benchmarks; the server stops when the block ends."""
    import time

    require("uvicorn", "srelib.serve.server")
    import uvicorn

    config = _config(host, port, log_level, read_timeout, forwarded_allow_ips,
                     max_sessions=max_sessions, max_per_client=max_per_client,
                     idle_timeout=idle_timeout)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="srelib-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the server did not start on {host}:{port} "
                               f"within {start_timeout:g} s")
        time.sleep(0.02)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://[{host}]:{bound}" if ":" in host else f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
