"""One schema source: the action vocabulary gives every tool surface (the OpenAI tools, the tools a
chat template receives, the TRL adapter's methods as TRL reads them, the MCP tools) the same
names, types, enums, required parameters and descriptions, and defaults and bounds wherever a
surface can carry them as keys."""

from __future__ import annotations

import inspect
import json

import pytest

from srelib.env.actions import ACTION_NAMES, ActionType
from srelib.policies.llm.tools import parameter_text, tool_definitions, tool_parameters

#: The keys ``transformers.utils.get_json_schema`` (TRL's reading of a method) has no way to
#: write; the description states them instead.
_UNWRITABLE = ("default", "minimum", "maximum")


def _openai() -> dict[str, dict]:
    return {t["function"]["name"]: t["function"] for t in tool_definitions()}


def _through_template(tools: list) -> dict[str, dict]:
    """The tool schemas a chat template receives for ``tools`` (dicts or callables)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    rendered, _ = render_jinja_template([[{"role": "user", "content": "-"}]], tools=tools,
                                        chat_template="{{ tools | tojson }}")
    return {t["function"]["name"]: t["function"] for t in json.loads(rendered[0])}


def _trl_tools(env) -> list:
    """The methods GRPOTrainer(environment_factory=...) exposes as tools: the class's public
    functions other than reset and get_reward, bound to the instance."""
    return [getattr(env, name) for name, _ in inspect.getmembers(type(env), inspect.isfunction)
            if name not in ("reset", "get_reward") and not name.startswith("_")]


def _without_unwritable(parameters: dict) -> dict:
    """``parameters`` as a Python signature can state them: no default or bound keys, and an
    object parameter without its nested fields."""
    properties = {}
    for name, schema in parameters["properties"].items():
        kept = {k: v for k, v in schema.items() if k not in _UNWRITABLE}
        if kept["type"] == "object":
            kept = {"type": "object", "description": kept["description"]}
        properties[name] = kept
    required = {"required": parameters["required"]} if parameters["required"] else {}
    return {"type": "object", "properties": properties, **required}


def test_the_openai_tools_state_every_declaration_of_the_vocabulary():
    tools = _openai()
    assert list(tools) == list(ACTION_NAMES)
    for action in ActionType:
        parameters = tools[action.value]["parameters"]
        declared = tool_parameters(action)
        assert list(parameters["properties"]) == list(declared)
        assert parameters["required"] == [n for n, p in declared.items() if p.required]
        for name, param in declared.items():
            schema = parameters["properties"][name]
            assert schema.get("enum") == (list(param.choices) if param.choices else None)
            assert (schema.get("default"), schema.get("minimum"), schema.get("maximum")) == \
                (param.default, param.minimum, param.maximum), (action, name)
            assert schema["description"] == parameter_text(param)
            if param.default is not None:
                assert f"default {json.dumps(param.default)}" in schema["description"]
            if param.minimum is not None:
                assert str(param.minimum) in schema["description"]


def test_a_chat_template_receives_the_openai_tools_unchanged():
    assert _through_template(tool_definitions()) == _openai()


def test_trl_reads_the_adapters_methods_as_the_openai_tools():
    """Everything a signature can state matches exactly, the description included (which
    names the default and bounds TRL's schema has no key for)."""
    pytest.importorskip("transformers")
    from srelib.training.environment import IncidentToolEnv

    read = _through_template(_trl_tools(IncidentToolEnv()))
    assert sorted(read) == sorted(ACTION_NAMES)
    for name, function in _openai().items():
        assert read[name]["description"] == function["description"]
        assert read[name]["parameters"] == _without_unwritable(function["parameters"]), name


def test_the_mcp_tools_are_the_openai_tools():
    pytest.importorskip("openenv")
    from openenv.core.env_server.mcp_environment import get_server_tools

    from srelib.serve.server import SreEnvironment
    from srelib.serve.mcp import NEW_INCIDENT

    served = get_server_tools(SreEnvironment().mcp_server)
    assert list(served) == [NEW_INCIDENT, *ACTION_NAMES]
    for name, function in _openai().items():
        assert (served[name].description, served[name].parameters) == \
            (function["description"], function["parameters"])
