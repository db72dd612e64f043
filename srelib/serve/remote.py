"""Clients of ``srelib serve``: one protocol core, with a blocking and an asyncio face.

:class:`Protocol` is the client's side of the protocol without I/O: each operation (reset,
step, the trajectory) is an :class:`Exchange` that says which message to send next and what
the replies mean (the request built, the reply decoded, a session the server closed reopened
once). Its two transports only carry the messages, over :mod:`srelib.serve.client`'s links:
:class:`RemoteEnv` offers ``IncidentEnv``'s own ``reset``/``step`` contract on a blocking
socket, so ``run_episode``, ``evaluate(env=...)`` and the widgets run against a server
unchanged; :class:`AsyncRemoteEnv` the same with ``await``, for many sessions on one event loop
(a trainer's rollouts)::

    env = srelib.RemoteEnv("http://127.0.0.1:8000")
    episode = srelib.run_episode(env, policy, task="memory_leak", pool="C", seed=7)

:class:`SreClient` is OpenEnv's own ``EnvClient`` (async; ``.sync()`` for blocking code) for
those who want its typed models; it sends actions as the core does, at several times the
core's cost per step.
"""

from __future__ import annotations

from typing import Any, Generator

import srelib.serve.wire  # noqa: F401,I001 - first, so a missing OpenEnv names the serve extra

from srelib.extras import require
require("openenv", "srelib.serve.remote")
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
require("pydantic", "srelib.serve.remote")
from pydantic import ValidationError

from srelib.env.actions import PARSE_ERROR
from srelib.serve.client import AsyncLink, BlockingLink
from srelib.serve.wire import (ACTION_KEYS, SessionClosedError, SreAction, SreObservation,
                               SreState, observation_dict)


# SreObservation is a class that create_model builds from srelib.env.types.Observation, which
# pyright reads as a variable
class SreClient(EnvClient[SreAction, SreObservation, SreState]):  # pyright: ignore[reportInvalidTypeForm]
    """OpenEnv's WebSocket client for ``srelib serve``: one server session per client."""

    def _step_payload(self, action: SreAction) -> dict:
        return step_fields(action)

    def _parse_result(self, payload: dict) -> StepResult:
        fields = dict(payload.get("observation") or {})
        observation = SreObservation(**fields, reward=payload.get("reward"),
                                     done=bool(payload.get("done")))
        return StepResult(observation=observation, reward=payload.get("reward"),
                          done=bool(payload.get("done")), metadata=payload.get("metadata"))

    def _parse_state(self, payload: dict) -> SreState:
        return SreState(**payload)


#: Errors after which a link must not be used again: the server has no session for this
#: client any more, or a reply is late (OSError: ConnectionError, TimeoutError too), so the next
#: reply could be the late one.
LINK_LOST = (OSError, SessionClosedError)


def step_fields(action: Any) -> dict:
    """The ``data`` of the step message that sends ``action``.

    Args:
        action: an action dict, text, a typed :class:`~srelib.serve.wire.SreAction`, or any
            other value (sent as a parse error that says why it is not an action).

    Returns:
        The action's fields as the typed action dumps them.
    """
    fields = _plain_fields(action)
    if fields is None:
        typed = action if isinstance(action, SreAction) else _typed_action(action)
        fields = typed.model_dump(exclude_unset=True, exclude={"metadata"})
    return fields


class Exchange:
    """One operation of the protocol as a conversation: :attr:`message` is what to send next
    until :attr:`done`, then :attr:`result` is the operation's result."""

    def __init__(self, steps: Generator[dict, dict, Any]):
        """Start the conversation.

        Args:
            steps: a generator that yields each message to send, is sent each reply's data (or
                thrown the error that came instead) and returns the operation's result.
        """
        self._steps, self.done, self.result = steps, False, None
        self.message: dict = {}
        self.reply(None)

    def reply(self, data: dict | None, error: Exception | None = None) -> None:
        """Hand over what came back for :attr:`message`.

        Args:
            data: the reply's data (None with an error, and to start the conversation).
            error: the error raised instead of a reply, if one was.

        Raises:
            Exception: ``error``, where the operation does not recover from it.
        """
        try:
            self.message = self._steps.throw(error) if error is not None else self._steps.send(data)
        except StopIteration as stop:
            self.done, self.result = True, stop.value


class Protocol:
    """The client's side of the protocol for one server session, without I/O."""

    def __init__(self, url: str, *, message_timeout: float, connect_timeout: float):
        """Check the address and keep the timeouts.

        Args:
            url: the server's http(s):// or ws(s):// address.
            message_timeout: seconds a reply may take.
            connect_timeout: seconds the connection may take.

        Raises:
            ValueError: ``url`` is not such an address.
        """
        if not isinstance(url, str) or not url.startswith(("http://", "https://", "ws://",
                                                           "wss://")):
            raise ValueError(f"url must be an http(s):// or ws(s):// address, got {url!r}")
        self.url, self.info = url.rstrip("/"), {}
        self.records: list[dict] | None = []  # the trajectory as last fetched; None: stale
        self.timeouts = {"message_timeout": message_timeout, "connect_timeout": connect_timeout}

    def reset(self, options: dict) -> Exchange:
        """A reset: its result ``(obs, info)``; a session the server closed (idle) is reopened
        once.

        Args:
            options: ``task``, ``pool``, ``mode`` and ``seed``, as ``IncidentEnv.reset`` takes
                them.

        Returns:
            The exchange.
        """
        return Exchange(self._reset({"type": "reset", "data": options}))

    def step(self, action: Any) -> Exchange:
        """A step: its result ``(obs, reward, terminated, truncated, info)``.

        Args:
            action: any value, as for ``IncidentEnv.step`` (:func:`step_fields`).

        Returns:
            The exchange.
        """
        return Exchange(self._step({"type": "step", "data": step_fields(action)}))

    def trajectory(self) -> Exchange:
        """The episode's step records: fetched from the session's state when a reset or a step
        was sent since they last were.

        Returns:
            The exchange.
        """
        return Exchange(self._trajectory())

    def _reset(self, message: dict):
        self.records = None
        try:
            data = yield message
        except SessionClosedError:  # the transport dropped the link: a fresh session
            data = yield message
        return self._observation(data)

    def _step(self, message: dict):
        self.records = None
        data = yield message
        fields = data["observation"]
        obs, info = self._observation(data)
        return (obs, float(data.get("reward") or 0.0), bool(fields["terminated"]),
                bool(fields["truncated"]), info)

    def _trajectory(self):
        if self.records is None:
            self.records = (yield {"type": "state"}).get("trajectory") or []
        return self.records

    def _observation(self, data: dict) -> tuple[dict, dict]:
        fields = data["observation"]
        info = fields["info"]  # parsed for this call alone
        self.info = dict(info)
        return observation_dict(fields, data["done"]), info


class _Face:
    """What both transports share: the core, the link (opened on first use), the address and
    the episode's scenario."""

    def __init__(self, url: str, *, message_timeout: float = 120.0,
                 connect_timeout: float = 10.0):
        """A client of the server at ``url``; nothing is connected until the first call.

        Args:
            url: the server's http(s):// or ws(s):// address.
            message_timeout: seconds a reply may take (then TimeoutError).
            connect_timeout: seconds the connection may take.

        Raises:
            ValueError: ``url`` is not such an address.
        """
        self._core = Protocol(url, message_timeout=message_timeout,
                              connect_timeout=connect_timeout)
        self._link: Any = None

    @property
    def url(self) -> str:
        """The server's address."""
        return self._core.url

    @property
    def scenario(self):
        """The episode's scenario (None before any reset)."""
        from srelib.env.tasks.lookup import get_scenario

        task = self._core.info.get("task")
        return get_scenario(task) if task else None

    def __repr__(self) -> str:
        info = self._core.info
        episode = f", task={info.get('task')}, seed={info.get('seed')}" if info else ""
        return f"{type(self).__name__}({self.url!r}{episode})"


class RemoteEnv(_Face):
    """An incident environment served by ``srelib serve`` at ``url``, with ``IncidentEnv``'s
    contract: ``reset(...) -> (obs, info)``, ``step(action) -> (obs, reward, terminated,
    truncated, info)``, ``trajectory`` and ``scenario``.

    Each RemoteEnv holds one server session (opened on first use, closed by :meth:`close` or
    by leaving a ``with`` block). Observations, rewards, info and trajectories are the ones the
    same task and seed give in process, for dict and text actions alike. Any other value (a
    list, a number, a dict whose fields have the wrong JSON types) cannot be sent as a typed
    action: it is sent as a parse error whose reason says why, and costs a step.
    """

    def reset(self, task: str | None = None, pool: str | None = None, mode: str | None = None,
              seed: int | None = None) -> tuple[dict, dict]:
        """Start an episode on the server.

        Args:
            task: as for ``IncidentEnv.reset``.
            pool: as for ``IncidentEnv.reset``.
            mode: as for ``IncidentEnv.reset``.
            seed: as for ``IncidentEnv.reset``.

        Returns:
            ``(obs, info)``, as ``IncidentEnv.reset``.

        Raises:
            ValueError: a bad task, pool, mode or seed.
        """
        options = {"task": task, "pool": pool, "mode": mode, "seed": seed}
        return self._play(self._core.reset(options))

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        """Apply one action on the server. Agent input never raises.

        Args:
            action: any value, as for ``IncidentEnv.step``.

        Returns:
            ``(obs, reward, terminated, truncated, info)``, as ``IncidentEnv.step``.
        """
        return self._play(self._core.step(action))

    @property
    def trajectory(self) -> list[dict]:
        """The episode's step records (fetched from the server when they changed)."""
        return self._play(self._core.trajectory())

    def close(self) -> None:
        """Close the server session (the server frees it)."""
        link, self._link = self._link, None
        if link is not None:
            link.close()

    def __enter__(self) -> "RemoteEnv":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _play(self, exchange: Exchange) -> Any:
        while not exchange.done:
            self._link = self._link or BlockingLink(self.url, **self._core.timeouts)
            try:
                exchange.reply(self._link.ask(exchange.message))
            except LINK_LOST as exc:
                self.close()
                exchange.reply(None, exc)
        return exchange.result


class AsyncRemoteEnv(_Face):
    """:class:`RemoteEnv` for asyncio: ``await env.reset(...)``, ``await env.step(action)``,
    ``await env.trajectory()``, ``await env.close()`` (or ``async with``); many on one event
    loop share it, one server session each."""

    async def reset(self, task: str | None = None, pool: str | None = None,
                    mode: str | None = None, seed: int | None = None) -> tuple[dict, dict]:
        """As :meth:`RemoteEnv.reset`."""
        options = {"task": task, "pool": pool, "mode": mode, "seed": seed}
        return await self._play(self._core.reset(options))

    async def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        """As :meth:`RemoteEnv.step`."""
        return await self._play(self._core.step(action))

    async def trajectory(self) -> list[dict]:
        """The episode's step records (fetched from the server when they changed)."""
        return await self._play(self._core.trajectory())

    async def close(self) -> None:
        """Close the server session (the server frees it)."""
        link, self._link = self._link, None
        if link is not None:
            await link.close()

    async def __aenter__(self) -> "AsyncRemoteEnv":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def _play(self, exchange: Exchange) -> Any:
        while not exchange.done:
            self._link = self._link or await AsyncLink.connect(self.url, **self._core.timeouts)
            try:
                exchange.reply(await self._link.ask(exchange.message))
            except LINK_LOST as exc:
                await self.close()
                exchange.reply(None, exc)
        return exchange.result


_SCALARS = (str, int, float, bool, type(None))


def _plain(value: Any) -> bool:
    """Is ``value`` JSON as it stands (scalars, lists, str-keyed dicts; no subclasses)?"""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is list:
        return all(_plain(item) for item in value)
    return kind is dict and all(type(key) is str and _plain(item) for key, item in value.items())


def _plain_fields(action: Any) -> dict | None:
    """The fields of a dict action whose values are already JSON of their types (names str or
    None, parameters None or a dict), as the typed action dumps them; None for an action that
    the typed action must check or convert (:func:`_typed_action`)."""
    if type(action) is not dict:
        return None
    fields = {key: action[key] for key in ACTION_KEYS if key in action}
    for key in ("action_type", "target_service"):
        if fields.get(key) is not None and type(fields[key]) is not str:
            return None
    parameters = fields.get("parameters")
    try:
        if parameters is not None and (type(parameters) is not dict or not _plain(parameters)):
            return None
    except RecursionError:  # cyclic, or nested past the recursion limit: the typed path says
        return None
    return fields


def _typed_action(action: Any) -> SreAction:
    """The action as the typed message, or a parse error saying why it cannot be one."""
    if isinstance(action, str):
        return SreAction(text=action)
    if isinstance(action, dict):
        try:
            return SreAction(**{k: action[k] for k in ACTION_KEYS if k in action})
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                                 for e in exc.errors())
            reason = f"the action's fields have the wrong types ({problems})"
    else:
        reason = (f"an action must be a dict with keys action_type, target_service and "
                  f"parameters, or text, got {type(action).__name__}")
    return SreAction(action_type=PARSE_ERROR, parameters={"reason": reason})
