"""Clients of ``srelib serve``: OpenEnv's ``EnvClient`` for srelib, and :class:`RemoteEnv`.

:class:`SreClient` is an ``openenv`` ``EnvClient`` (async; ``.sync()`` for blocking code) that
speaks the typed models of :mod:`srelib.serve.server`. :class:`RemoteEnv` offers
``IncidentEnv``'s own ``reset``/``step`` contract over the same protocol, so ``run_episode``,
``evaluate(env=...)`` and the widgets run against a server unchanged; :class:`AsyncRemoteEnv`
is its ``async`` twin, for many sessions on one event loop (a trainer's rollouts). Both speak
through :mod:`srelib.serve.client`, at a fraction of ``EnvClient``'s cost per step::

    env = srelib.RemoteEnv("http://127.0.0.1:8000")
    episode = srelib.run_episode(env, policy, task="memory_leak", pool="C", seed=7)
"""

from __future__ import annotations

from typing import Any

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
        return action.model_dump(exclude_unset=True, exclude={"metadata"})

    def _parse_result(self, payload: dict) -> StepResult:
        fields = dict(payload.get("observation") or {})
        observation = SreObservation(**fields, reward=payload.get("reward"),
                                     done=bool(payload.get("done")))
        return StepResult(observation=observation, reward=payload.get("reward"),
                          done=bool(payload.get("done")), metadata=payload.get("metadata"))

    def _parse_state(self, payload: dict) -> SreState:
        return SreState(**payload)


class _Messages:
    """What :class:`RemoteEnv` and :class:`AsyncRemoteEnv` share: the messages they send and
    what they make of the replies."""

    url: str
    _info: dict

    def _check_url(self, url: str) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://", "ws://",
                                                           "wss://")):
            raise ValueError(f"url must be an http(s):// or ws(s):// address, got {url!r}")
        self.url, self._info = url.rstrip("/"), {}

    def __repr__(self) -> str:
        episode = f", task={self._info.get('task')}, seed={self._info.get('seed')}" \
            if self._info else ""
        return f"{type(self).__name__}({self.url!r}{episode})"

    @property
    def scenario(self):
        from srelib.env.lookup import get_scenario

        return get_scenario(self._info["task"]) if self._info.get("task") else None

    @staticmethod
    def _reset_message(task, pool, mode, seed) -> dict:
        return {"type": "reset", "data": {"task": task, "pool": pool, "mode": mode, "seed": seed}}

    @staticmethod
    def _step_message(action) -> dict:
        fields = _plain_fields(action)
        if fields is None:
            fields = _typed_action(action).model_dump(exclude_unset=True, exclude={"metadata"})
        return {"type": "step", "data": fields}

    def _reset_result(self, data: dict) -> tuple[dict, dict]:
        fields = data["observation"]
        info = fields["info"]  # parsed for this call alone
        self._info = dict(info)
        return observation_dict(fields, data["done"]), info

    def _step_result(self, data: dict) -> tuple[dict, float, bool, bool, dict]:
        obs, info = self._reset_result(data)
        fields = data["observation"]
        return (obs, float(data.get("reward") or 0.0), bool(fields["terminated"]),
                bool(fields["truncated"]), info)


class RemoteEnv(_Messages):
    """An incident environment served by ``srelib serve`` at ``url``, with ``IncidentEnv``'s
    contract: ``reset(...) -> (obs, info)``, ``step(action) -> (obs, reward, terminated,
    truncated, info)``, ``trajectory`` and ``scenario``.

    Each RemoteEnv holds one server session (opened on first use, closed by :meth:`close` or
    by leaving a ``with`` block). Observations, rewards, info and trajectories are the ones the
    same task and seed give in process, for dict and text actions alike. Any other value (a
    list, a number, a dict whose fields have the wrong JSON types) cannot be sent as a typed
    action: it is sent as a parse error whose reason says why, and costs a step.
    """

    def __init__(self, url: str, *, message_timeout: float = 120.0,
                 connect_timeout: float = 10.0):
        self._check_url(url)
        self._message_timeout, self._connect_timeout = message_timeout, connect_timeout
        self._link: BlockingLink | None = None
        self._trajectory: list[dict] | None = []

    # ---- the IncidentEnv contract

    def reset(self, task: str | None = None, pool: str | None = None, mode: str | None = None,
              seed: int | None = None) -> tuple[dict, dict]:
        """Start an episode on the server; bad task, pool, mode or seed raise ValueError."""
        message = self._reset_message(task, pool, mode, seed)
        try:
            data = self._ask(message)
        except SessionClosedError:  # the server closed an idle session: open a fresh one
            data = self._ask(message)
        self._trajectory = None
        return self._reset_result(data)

    def step(self, action) -> tuple[dict, float, bool, bool, dict]:
        """Apply one action on the server. Agent input never raises."""
        data = self._ask(self._step_message(action))
        self._trajectory = None
        return self._step_result(data)

    @property
    def trajectory(self) -> list[dict]:
        """The episode's step records (fetched from the server when they changed)."""
        if self._trajectory is None:
            self._trajectory = self._ask({"type": "state"}).get("trajectory") or []
        return self._trajectory

    def close(self) -> None:
        """Close the server session (the server frees it)."""
        link, self._link = self._link, None
        if link is not None:
            link.close()

    def __enter__(self) -> "RemoteEnv":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _ask(self, message: dict) -> dict:
        if self._link is None:
            self._link = BlockingLink(self.url, connect_timeout=self._connect_timeout,
                                      message_timeout=self._message_timeout)
        try:
            return self._link.ask(message)
        except (OSError, SessionClosedError):  # OSError: ConnectionError, TimeoutError too
            self.close()  # the server has no session for this client any more, or a reply
            raise         # is late: the next message goes on a fresh connection


class AsyncRemoteEnv(_Messages):
    """:class:`RemoteEnv` for asyncio: ``await env.reset(...)``, ``await env.step(action)``,
    ``await env.close()`` (or ``async with``); many on one event loop share it, one server
    session each."""

    def __init__(self, url: str, *, message_timeout: float = 120.0,
                 connect_timeout: float = 10.0):
        self._check_url(url)
        self._message_timeout, self._connect_timeout = message_timeout, connect_timeout
        self._link: AsyncLink | None = None

    async def reset(self, task: str | None = None, pool: str | None = None,
                    mode: str | None = None, seed: int | None = None) -> tuple[dict, dict]:
        """As :meth:`RemoteEnv.reset`."""
        message = self._reset_message(task, pool, mode, seed)
        try:
            data = await self._ask(message)
        except SessionClosedError:
            data = await self._ask(message)
        return self._reset_result(data)

    async def step(self, action) -> tuple[dict, float, bool, bool, dict]:
        """As :meth:`RemoteEnv.step`."""
        return self._step_result(await self._ask(self._step_message(action)))

    async def trajectory(self) -> list[dict]:
        """The episode's step records, from the server."""
        return (await self._ask({"type": "state"})).get("trajectory") or []

    async def close(self) -> None:
        link, self._link = self._link, None
        if link is not None:
            await link.close()

    async def __aenter__(self) -> "AsyncRemoteEnv":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def _ask(self, message: dict) -> dict:
        if self._link is None:
            self._link = await AsyncLink.connect(self.url, connect_timeout=self._connect_timeout,
                                                 message_timeout=self._message_timeout)
        try:
            return await self._link.ask(message)
        except (OSError, SessionClosedError):
            await self.close()
            raise


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
