"""The action vocabulary as tools: one function definition per action, and back again.

This is the one schema source for every tool surface. :func:`tool_definitions` renders
``ACTION_SPECS`` as OpenAI-style function tools (name, the action's description, each
parameter's JSON schema from its ``Param``: type, default, bounds as ``minimum``/``maximum``,
closed vocabularies as ``enum``, and :func:`parameter_text` as its description); the chat
policies send them to servers and chat templates, and ``srelib serve`` publishes them as MCP
tools. The TRL adapter (:mod:`srelib.training.environment`) states the same schema as typed
method signatures (:func:`parameter_annotation`) whose docstrings carry the same text; TRL's
reading of them (``transformers.utils.get_json_schema``) keeps names, types, enums, required
and descriptions, and the description states the default and bounds it has no key for.
:func:`action_from_tool_call` turns the call a model made back into the action dict the
environment takes; the text parser (:func:`srelib.env.parse.parse_action`) reads the same actions
from plain replies.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from srelib.env.actions import (ACTION_SPECS, BELIEF_PARAMS, PARSE_ERROR, PHASE1_ACTIONS,
                                PHASE2_ACTIONS, SERVICES, ActionType, Param)

_JSON_TYPES = {str: "string", int: "integer", bool: "boolean", float: "number", dict: "object",
               list: "array"}
_MAX_ARGUMENT_CHARS = 200_000
#: The ``target_service`` of a targeted action, as a parameter.
TARGET = Param(str, required=True, doc="the service to act on", choices=SERVICES)


def parameter_text(param: Param) -> str:
    """A parameter's description in every tool schema: its meaning, bounds or choices
    (``Param.description``) and its default."""
    if param.default is None:
        return param.description
    return f"{param.description}; default {json.dumps(param.default)}"


def parameter_annotation(param: Param) -> Any:
    """The Python annotation that states ``param``'s type and choices (``Literal`` of them), as
    a schema read from a signature needs it."""
    if param.choices is not None:
        return Literal[param.choices]
    return list[str] if param.type is list else param.type


def _param_schema(param: Param, nullable: bool = False) -> dict[str, Any]:
    """The JSON schema of one declared parameter, with its default and description;
    ``nullable`` admits null as well."""
    kind = _JSON_TYPES[param.type]
    schema: dict[str, Any] = {"type": [kind, "null"] if nullable else kind}
    if param.type is list:  # the vocabulary's lists are lists of strings
        schema["items"] = {"type": "string"}
    if param.choices is not None:
        schema["enum"] = [*param.choices, None] if nullable else list(param.choices)
    if param.minimum is not None:
        schema["minimum"] = param.minimum
    if param.maximum is not None:
        schema["maximum"] = param.maximum
    if param.default is not None:
        schema["default"] = param.default
    schema["description"] = parameter_text(param)
    return schema


#: The hand-over belief's JSON schema, from ``BELIEF_PARAMS`` (a field that defaults to null
#: may be null).
BELIEF_SCHEMA = {
    "type": "object",
    "properties": {name: _param_schema(p, nullable=p.default is None and p.type is not list)
                   for name, p in BELIEF_PARAMS.items()},
}
_ACTION_NAMES = frozenset(a.value for a in ActionType)


def tool_definitions(phase: int | None = None) -> list[dict[str, Any]]:
    """OpenAI ``tools`` entries for the actions of ``phase`` (1 or 2; the hand-over belongs to
    phase 1) or, with None, for every action."""
    if phase not in (None, 1, 2):
        raise ValueError(f"phase must be 1, 2 or None, got {phase!r}")
    chosen = {None: list(ActionType), 1: [*PHASE1_ACTIONS, ActionType.TRANSITION_TO_PHASE2],
              2: list(PHASE2_ACTIONS)}[phase]
    return [{"type": "function", "function": _function(action)} for action in chosen]


def tool_description(action: ActionType) -> str:
    """What ``action`` does, as the sentence both tool schemas carry."""
    doc = ACTION_SPECS[action].doc
    return f"{doc[0].upper()}{doc[1:]}."


def tool_parameters(action: ActionType) -> dict[str, Param]:
    """Every parameter of ``action``'s tool, in order: ``target_service`` for a targeted
    action, then its declared parameters."""
    spec = ACTION_SPECS[action]
    return {**({"target_service": TARGET} if spec.targeted else {}), **spec.params}


def _function(action: ActionType) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required = []
    for name, param in tool_parameters(action).items():
        properties[name] = ({**BELIEF_SCHEMA, "description": parameter_text(param)}
                            if name == "belief" else _param_schema(param))
        if param.required:
            required.append(name)
    return {"name": action.value, "description": tool_description(action),
            "parameters": {"type": "object", "properties": properties, "required": required}}


def action_from_tool_call(name: Any, arguments: Any) -> dict[str, Any]:
    """The action dict for a tool call: ``name`` is the action, ``arguments`` its parameters (a
    dict, or the JSON text of one) with ``target_service`` lifted to the top level. A call that
    cannot be an action becomes a PARSE_ERROR action whose reason says why."""
    if not isinstance(name, str) or name not in _ACTION_NAMES:
        return _unreadable(f"unknown tool {str(name)[:60]!r}; tools are the action names")
    if isinstance(arguments, str):
        if len(arguments) > _MAX_ARGUMENT_CHARS:
            return _unreadable(f"the arguments of {name} are longer than {_MAX_ARGUMENT_CHARS} characters")
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return _unreadable(f"the arguments of {name} are not a JSON object")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return _unreadable(f"the arguments of {name} must be a JSON object")
    parameters = dict(arguments)
    target = parameters.pop("target_service", None)
    return {"action_type": name, "target_service": target, "parameters": parameters}


def tool_call_text(call: Any) -> str:
    """The action an OpenAI-style tool call (``{"function": {"name", "arguments"}}``) names, as
    the JSON text the parser reads; ValueError with the reason when it names no action."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        raise ValueError("the tool call has no function")
    action = action_from_tool_call(function.get("name"), function.get("arguments"))
    if action["action_type"] == PARSE_ERROR:
        raise ValueError(action["parameters"]["reason"])
    return json.dumps(action)


def _unreadable(reason: str) -> dict[str, Any]:
    return {"action_type": PARSE_ERROR, "target_service": None, "parameters": {"reason": reason}}
