"""A Gemma-style chat format that can carry tool calls, for models trained here.

Gemma 3's own template has no tool role, so tool calls need a format of their own: the tools are
listed in a ``tools`` turn, one line each in name order (``name(param, optional?): description``, the same
line whether the schema came from :func:`srelib.policies.llm.tools.tool_definitions` or from TRL
reading :class:`~srelib.training.environment.IncidentToolEnv`'s methods), a model turn carries ``<tool_call>{"name": ..., "arguments": {...}}
</tool_call>`` blocks (the arguments a mapping or, as OpenAI's format has them, its JSON text:
the same line either way), and each tool result comes back in a ``tool`` turn. :data:`RESPONSE_TEMPLATE`
tells ``tokenizer.parse_response`` (and so TRL) how to read a model turn back into a message
with ``tool_calls``. :func:`use_tool_format` puts both on a tokenizer.
"""

from __future__ import annotations

START, END = "<start_of_turn>", "<end_of_turn>"
TOOL_OPEN, TOOL_CLOSE = "<tool_call>", "</tool_call>"

TOOL_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% if tools %}"
    "{{ '" + START + "tools\\nCall one tool per turn, as " + TOOL_OPEN
    + "{\"name\": ..., \"arguments\": {...}}" + TOOL_CLOSE + ".\\n' }}"
    "{% for tool in tools | sort(attribute='function.name') %}"
    "{% set function = tool.function if tool.function is defined else tool %}"
    "{% set required = function.parameters.required or [] %}"
    "{{ function.name }}("
    "{% for name in function.parameters.properties %}"
    "{{ name }}{% if name not in required %}?{% endif %}{% if not loop.last %}, {% endif %}"
    "{% endfor %}"
    "): {{ function.description }}{{ '\\n' }}"
    "{% endfor %}"
    "{{ '" + END + "\\n' }}"
    "{% endif %}"
    "{% for message in messages %}"
    "{% set role = {'assistant': 'model', 'system': 'user'}.get(message['role'], message['role']) %}"
    "{{ '" + START + "' + role + '\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] | trim }}{% endif %}"
    "{% for call in message.get('tool_calls') or [] %}"
    "{% set function = call.function if call.function is defined else call %}"
    "{{ '" + TOOL_OPEN + "{\"name\": ' }}{{ function.name | tojson }}{{ ', \"arguments\": ' }}"
    "{% if function.arguments is string %}{{ function.arguments }}"
    "{% else %}{{ function.arguments | tojson }}{% endif %}"
    "{{ '}" + TOOL_CLOSE + "' }}"
    "{% endfor %}"
    "{{ '" + END + "\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '" + START + "model\\n' }}{% endif %}"
)

RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": START + "model\n",
    "fields": {
        "tool_calls": {
            "open": TOOL_OPEN,
            "close_pattern": TOOL_CLOSE + r"\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": END + r"\s*", "content": "text"},
    },
}


def use_tool_format(tokenizer):
    """Give ``tokenizer`` the tool-capable template and its response template; returns it."""
    tokenizer.chat_template = TOOL_CHAT_TEMPLATE
    tokenizer.response_template = RESPONSE_TEMPLATE
    return tokenizer
