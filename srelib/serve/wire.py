"""The wire models of ``srelib serve``: typed Action, Observation and State messages generated
from the action vocabulary (``srelib.env.actions``) and the observation contract
(``srelib.env.types.Observation``), and the errors a session reports. The server, its MCP
tools and :class:`~srelib.serve.remote.RemoteEnv` share them.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Literal, Optional

from srelib.extras import require

require("openenv", "srelib serve and RemoteEnv")
from openenv.core.env_server import Action, Observation, State
require("pydantic", "srelib.serve.wire")
from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator
require("pydantic_core", "srelib.serve.wire")
from pydantic_core import PydanticCustomError

from srelib.env.actions import ACTION_SPECS, GIVE_UP, PARSE_ERROR, SERVICES, ActionType
from srelib.env.types import PHASE2_KEYS, Status

try:  # the serve extra's fast JSON encoder; the standard library's without it
    import orjson
except ModuleNotFoundError:  # pragma: no cover - exercised where orjson is not installed
    orjson = None

#: Keys the environment reads from an action; anything else a policy adds stays client-side.
ACTION_KEYS = ("action_type", "target_service", "parameters")

ServiceName = Literal[SERVICES]  # type: ignore[valid-type]
ServiceStatus = Status


# ---------------------------------------------------------------------------------------------
# models generated from the vocabulary


def _parameters_model(action: ActionType) -> type[BaseModel]:
    """A pydantic model of one action's parameters, from its ``ActionSpec``."""
    fields = {}
    for name, param in ACTION_SPECS[action].params.items():
        kind = param.type if param.required else Optional[param.type]
        default = ... if param.required else param.default
        fields[name] = (kind, Field(default, description=param.description))
    title = "".join(part.title() for part in action.value.split("_")) + "Parameters"
    return create_model(title, __config__=ConfigDict(extra="forbid"), **fields)


#: One parameters model per action, generated from ``ACTION_SPECS``.
PARAMETER_MODELS: dict[str, type[BaseModel]] = {a.value: _parameters_model(a) for a in ACTION_SPECS}


def _action_catalogue(schema: dict) -> None:
    """Publish every action's phase, target and typed parameters in the action's JSON schema."""
    schema["x-actions"] = {
        action.value: {"phase": spec.phase, "targeted": spec.targeted, "doc": spec.doc,
                       "parameters": PARAMETER_MODELS[action.value].model_json_schema()}
        for action, spec in ACTION_SPECS.items()}


class SreAction(Action):
    """One agent action, the action dict of ``IncidentEnv.step`` as a typed message.

    The JSON types are checked here; whether the action makes sense (a known name, a valid
    target, the parameters it needs) is the environment's to judge, so a mistaken action gets
    the same error observation through the server as in process. ``text`` instead sends a
    text action (``"query_logs:orders"`` as ``valid_actions`` spells it, or JSON), read by
    the environment as in process.
    """

    model_config = ConfigDict(extra="forbid", json_schema_extra=_action_catalogue)

    action_type: Optional[str] = Field(
        default=None, description="one of: " + ", ".join([a.value for a in ActionType]
                                                         + [PARSE_ERROR, GIVE_UP]),
        json_schema_extra={"examples": [a.value for a in ActionType]})
    target_service: Optional[str] = Field(
        default=None,
        description="the service of a targeted phase-1 action: " + ", ".join(SERVICES))
    parameters: Optional[Dict[str, Any]] = Field(
        default=None, description="the action's parameters; x-actions gives each action's schema")
    text: Optional[str] = Field(
        default=None,
        description="a text action instead of the fields above, e.g. 'query_logs:orders'")

    @model_validator(mode="after")
    def _text_or_fields(self):
        if self.text is not None and self.model_fields_set & set(ACTION_KEYS):
            # a PydanticCustomError carries no exception object, so OpenEnv can send it back
            raise PydanticCustomError("text_or_fields", "send either text or the action fields "
                                      f"{list(ACTION_KEYS)}, not both")
        return self

    def to_env(self) -> dict | str:
        """What ``IncidentEnv.step`` takes: the text, or a dict of the fields the client sent."""
        if self.text is not None:
            return self.text
        sent = self.model_fields_set  # the environment copies what it reads (agent_input)
        return {key: getattr(self, key) for key in ACTION_KEYS if key in sent}


def _observation_fields() -> dict[str, Any]:
    """The pydantic fields of :class:`srelib.env.types.Observation`, with service names
    checked, the phase-2 keys optional and ``done`` left to OpenEnv's own field."""
    import typing

    from srelib.env import types

    hints = typing.get_type_hints(types.Observation)
    hints.update(service_statuses=Dict[ServiceName, ServiceStatus],
                 available_services=List[ServiceName])
    fields: dict[str, Any] = {}
    for name, kind in hints.items():
        if name == "done":
            continue
        fields[name] = (Optional[kind], Field(None, description="phase 2 only")) \
            if name in PHASE2_KEYS else (kind, ...)
    return fields


#: What the agent sees after a reset or a step (:class:`srelib.env.types.Observation`), plus
#: the step's ``terminated``, ``truncated`` and ``info`` (``score`` on the last step).
SreObservation = create_model(
    "SreObservation", __base__=Observation, __module__=__name__,
    terminated=(bool, False), truncated=(bool, False),
    info=(Dict[str, Any], Field(default_factory=dict)), **_observation_fields())


class SreState(State):
    """The session's episode: its task, pool, mode, seed, phase and trajectory (for trainers
    and runners; agents get observations)."""

    task: Optional[str] = None
    pool: Optional[str] = None
    mode: Optional[str] = None
    seed: Optional[int] = None
    phase: Optional[int] = None
    trajectory: List[Dict[str, Any]] = Field(default_factory=list)


#: The fields of an observation message, as OpenEnv's ``serialize_observation`` sends them:
#: every :class:`SreObservation` field but ``reward`` and ``done``, which travel beside it.
MESSAGE_FIELDS = tuple(name for name in SreObservation.model_fields if name not in ("reward", "done"))


def dumps(value: Any) -> str:
    """``value`` as compact JSON text: orjson's (ten times faster) when installed, else the
    standard library's. Keys that are not strings are written as strings, as the standard
    library does (orjson's option for them, which slows every dump, only when one turns up).
    What orjson cannot write (integers past 64 bits, lone surrogates) the standard library
    writes; what neither can (a cycle, a set) raises orjson's TypeError."""
    if orjson is None:
        return json.dumps(value, separators=(",", ":"))
    for option in (None, orjson.OPT_NON_STR_KEYS):
        try:
            return orjson.dumps(value, option=option).decode()
        except TypeError as exc:
            error = exc
    try:
        return json.dumps(value, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        raise error from None


#: Every digit as "0": 19 digits in a row (``_LONG_RUN``) may be an integer past 64 bits.
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19


def loads(text: bytes | str) -> Any:
    """JSON text's value: orjson's parser when installed (four times faster), the standard
    library's for what orjson refuses (NaN, lone surrogates), for the error of text that is not
    JSON, and for text with 19 digits in a row (orjson reads an integer past 64 bits as a
    float), so the value and the error are the standard library's."""
    if orjson is not None:
        raw = text.encode(errors="surrogatepass") if isinstance(text, str) else text
        if _LONG_RUN not in raw.translate(_DIGITS):
            try:
                return orjson.loads(raw)
            except orjson.JSONDecodeError:
                pass
    return json.loads(text)


def observation_message(obs: dict, reward, terminated: bool, truncated: bool, info: dict) -> str:
    """OpenEnv's WebSocket reply to a reset or a step (``{"type": "observation", "data":
    serialize_observation(SreObservation(...))}``) as JSON text, built from what
    ``IncidentEnv`` returned without a pydantic round trip: the same keys and values (phase-2
    keys None in phase 1, ``metadata`` empty) for a fraction of the cost."""
    fields = {name: obs.get(name) for name in MESSAGE_FIELDS}
    fields.update(metadata={}, terminated=bool(terminated), truncated=bool(truncated), info=info)
    done = bool(obs.get("done"))
    return dumps({"type": "observation", "data": {"observation": fields, "reward": reward,
                                                  "done": done}})


def observation_dict(fields: dict, done: bool) -> dict:
    """The ``IncidentEnv`` observation dict back from an :class:`SreObservation`'s fields."""
    extra = {"terminated", "truncated", "info", "metadata", "reward", "done"}
    obs = {k: v for k, v in fields.items() if k not in extra}
    if obs.get("current_phase") != 2:
        for key in PHASE2_KEYS:
            obs.pop(key, None)
    obs["done"] = bool(done)
    return obs


class ResetOptions(BaseModel):
    """The options of a reset, as every route takes them: strict types (``"5"`` is not a seed,
    as in process), nothing else."""

    model_config = ConfigDict(extra="forbid", strict=True)

    task: Optional[str] = None
    pool: Optional[str] = None
    mode: Optional[str] = None
    seed: Optional[int] = None
    episode_id: Optional[str] = None


# ---------------------------------------------------------------------------------------------
# the environment of one session


class NoEpisodeError(RuntimeError):
    """A step came before any reset in this session."""


class SessionClosedError(RuntimeError):
    """The session's environment was closed (idle timeout or server shutdown)."""
