"""Clients of ``srelib serve``: OpenEnv's ``EnvClient`` for srelib, and :class:`RemoteEnv`.

:class:`SreClient` is an ``openenv`` ``EnvClient`` (async; ``.sync()`` for blocking code) that
speaks the typed models of :mod:`srelib.serve.server`. :class:`RemoteEnv` wraps it in
``IncidentEnv``'s own ``reset``/``step`` contract, so ``run_episode``, ``evaluate(env=...)``
and the widgets run against a server unchanged::

    env = srelib.RemoteEnv("http://127.0.0.1:8000")
    episode = srelib.run_episode(env, policy, task="memory_leak", pool="C", seed=7)
"""

from __future__ import annotations

import re
from typing import Any

import srelib.serve.wire  # noqa: F401,I001 - first, so a missing OpenEnv names the serve extra
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from pydantic import ValidationError

from srelib.env.actions import PARSE_ERROR
from srelib.serve.wire import (ACTION_KEYS, NoEpisodeError, SessionClosedError, SreAction,
                               SreObservation, SreState, observation_dict)

_SERVER_ERROR = re.compile(r"Server error: (?P<message>.*) \(code: (?P<code>\w+)\)\s*$", re.S)


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


class RemoteEnv:
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
        if not isinstance(url, str) or not url.startswith(("http://", "https://", "ws://",
                                                           "wss://")):
            raise ValueError(f"url must be an http(s):// or ws(s):// address, got {url!r}")
        self.url = url.rstrip("/")
        self._message_timeout, self._connect_timeout = message_timeout, connect_timeout
        self._client = None
        self._info: dict = {}
        self._trajectory: list[dict] | None = []

    def __repr__(self) -> str:
        episode = f", task={self._info.get('task')}, seed={self._info.get('seed')}" \
            if self._info else ""
        return f"RemoteEnv({self.url!r}{episode})"

    # ---- the IncidentEnv contract

    def reset(self, task: str | None = None, pool: str | None = None, mode: str | None = None,
              seed: int | None = None) -> tuple[dict, dict]:
        """Start an episode on the server; bad task, pool, mode or seed raise ValueError."""
        options = {"task": task, "pool": pool, "mode": mode, "seed": seed}
        try:
            result = self._call(lambda c: c.reset(**options))
        except SessionClosedError:  # the server closed an idle session: open a fresh one
            result = self._call(lambda c: c.reset(**options))
        return self._unpack(result)

    def step(self, action) -> tuple[dict, float, bool, bool, dict]:
        """Apply one action on the server. Agent input never raises."""
        result = self._call(lambda c: c.step(_typed_action(action)))
        obs, info = self._unpack(result)
        observation = result.observation
        return (obs, float(result.reward or 0.0), bool(observation.terminated),
                bool(observation.truncated), info)

    @property
    def trajectory(self) -> list[dict]:
        """The episode's step records (fetched from the server when they changed)."""
        trajectory = self._trajectory
        if trajectory is None:
            trajectory = self._trajectory = self._call(lambda c: c.state()).trajectory
        return trajectory

    @property
    def scenario(self):
        from srelib.env.lookup import get_scenario

        return get_scenario(self._info["task"]) if self._info.get("task") else None

    def close(self) -> None:
        """Close the server session (the server frees it)."""
        self._drop_client()

    def __enter__(self) -> "RemoteEnv":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- internals

    def _call(self, operation):
        if self._client is None:
            self._client = SreClient(base_url=self.url, connect_timeout_s=self._connect_timeout,
                                     message_timeout_s=self._message_timeout).sync()
            self._client.connect()
        try:
            return operation(self._client)
        except RuntimeError as exc:
            error = _server_error(exc)
            if isinstance(error, (ConnectionError, SessionClosedError)):
                self._drop_client()  # the server has no session for this client any more
            raise error from exc

    def _unpack(self, result: StepResult) -> tuple[dict, dict]:
        observation = result.observation
        self._info, self._trajectory = dict(observation.info), None
        fields = observation.model_dump(exclude={"reward", "done"})
        return observation_dict(fields, result.done), dict(observation.info)

    def _drop_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()


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


def _server_error(exc: RuntimeError) -> Exception:
    """The exception the in-process environment raises for what the server reported."""
    found = _SERVER_ERROR.match(str(exc))
    if found is None:
        return exc
    message, code = found["message"], found["code"]
    if code == "EXECUTION_ERROR":
        if message.startswith("no episode in this session"):
            return NoEpisodeError("call reset() before step()")
        if message.startswith("this session was closed"):
            return SessionClosedError(message)
        return ValueError(message)
    if code == "CAPACITY_REACHED":
        return ConnectionError(f"the server is full: {message}")
    return RuntimeError(f"{message} ({code})")
