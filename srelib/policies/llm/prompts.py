"""Prompting shared by the chat policies: the system prompt, observation text and history.

The system prompt carries the action schema (from ``ACTION_SPECS``: each parameter's type,
bounds or allowed values), the fault classes and the handoff belief schema (from
``BELIEF_PARAMS``); every turn carries the valid actions and the phase's instructions. Those
parts are never dropped. What varies (logs, metrics, file contents, diffs) is cut in the middle,
with a marked cut, so the observation fits its character budget; old turns are dropped first
when the conversation grows, but the system prompt and the incident always stay.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from srelib.env.actions import ACTION_SPECS, BELIEF_PARAMS, FAULT_CLASSES, ActionType, Param
from srelib.env.types import OBSERVATION_KEYS, PHASE2_KEYS, Observation

PHASE_INSTRUCTIONS = {
    1: ("Phase 1 (operations): find what broke. Look at the alerts, then the metrics, logs, "
        "deploy history and dependencies of the degraded services; the root cause is often "
        "upstream of the loudest symptom. Mitigate (rollback_deploy, restart_service, "
        "scale_service) only with evidence, declare_root_cause with service and fault_class, "
        "then transition_to_phase2 with your belief."),
    2: ("Phase 2 (code): find the change that caused the incident. Use bad_commit_sha if "
        "given (get_file_diff), else get_git_log, search_code and read_file. End with "
        "propose_patch (a unified diff against the repository, e.g. the reverse of the bad "
        "change) or declare_no_change if no code change is needed."),
}

#: The system text of a conversation in tool turns (the actions are the tools).
TOOL_SYSTEM_PROMPT = (
    "You are the on-call SRE. Investigate the incident below by calling the tools, one per "
    "turn: diagnose and mitigate it (phase 1), hand over with transition_to_phase2, then fix "
    "the code with propose_patch or end with declare_no_change (phase 2).")

CUT_MARK = "[... {n} characters cut ...]"


def _param_text(name: str, p: Param) -> str:
    """``name?: type`` with the declared range (``1-50``, ``>=1``) or values (``A|B``)."""
    text = f"{name}{'' if p.required else '?'}: {p.type.__name__}"
    if p.minimum is not None:
        text += f" {p.minimum}-{p.maximum}" if p.maximum is not None else f" >={p.minimum}"
    elif p.maximum is not None:
        text += f" <={p.maximum}"
    if p.choices is not None:
        text += " " + "|".join(p.choices)
    return text


def _action_schema() -> str:
    lines = []
    for action, spec in ACTION_SPECS.items():
        target = " target_service=<service>" if spec.targeted else ""
        params = ", ".join(_param_text(name, p) for name, p in spec.params.items())
        lines.append(f"- {action.value}{target}" + (f" {{{params}}}" if params else "")
                     + f": {spec.doc}")
    return "\n".join(lines)


def _belief_schema() -> str:
    return "\n".join(f"- {name}: {p.description}" for name, p in BELIEF_PARAMS.items())


SYSTEM_PROMPT = (
    "You are an SRE on call for a production incident in a system of seven services. Each "
    "turn you get an observation and the list of valid actions. Reply with exactly one JSON "
    "object and nothing else:\n"
    '{"action_type": "<action>", "target_service": "<service or null>", "parameters": {...}}\n'
    "A valid action written as \"check_metrics:orders\" means action_type \"check_metrics\" "
    "with target_service \"orders\".\n\nActions (parameters marked ? are optional):\n"
    + _action_schema()
    + "\n\nFault classes:\n"
    + "\n".join(f"- {name}: {doc}" for name, doc in FAULT_CLASSES.items())
    + "\n\nThe transition_to_phase2 belief (parameters.belief) has these fields:\n"
    + _belief_schema()
)


def cut_middle(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else its head and tail with a marked cut."""
    if len(text) <= limit:
        return text
    keep = max(0, limit - len(CUT_MARK.format(n=len(text))) - 2)
    head, tail = text[: (keep + 1) // 2], text[len(text) - keep // 2:] if keep // 2 else ""
    return f"{head}\n{CUT_MARK.format(n=len(text) - len(head) - len(tail))}\n{tail}"


def render_value(value: Any, limit: int) -> str:
    """Compact text for one observation field: tables for lists of records, cut strings."""
    if isinstance(value, str):
        return cut_middle(value, limit)
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return _table(value, limit)
    if isinstance(value, list):
        return cut_middle(", ".join(str(v) for v in value), limit)
    if isinstance(value, dict):
        return cut_middle(_fields(value, limit), limit)
    return str(value)


def _table(rows: list[dict], limit: int) -> str:
    """A header and one line per record; rows are dropped from the middle to fit ``limit``."""
    columns = [c for c in dict.fromkeys(k for r in rows for k in r)
               if any(r.get(c) is not None for r in rows)]
    header = " | ".join(columns)
    body = [cut_middle(" | ".join(_cell(r.get(c)) for c in columns), max(80, limit // 4))
            for r in rows]
    head, tail, used = [], [], len(header)
    while body:
        line = body.pop(0) if len(head) <= len(tail) else body.pop()
        if used + len(line) + 40 > limit:
            body.append(line)
            break
        (head if len(head) <= len(tail) else tail).append(line)
        used += len(line) + 1
    cut = [f"[... {len(body)} rows cut ...]"] if body else []
    return "\n".join([header] + head + cut + tail[::-1])


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _fields(record: dict, limit: int) -> str:
    lines: list[str] = []
    for key, value in record.items():
        room = limit - sum(len(line) + 1 for line in lines) - len(key) - limit // 12 - 8
        text = render_value(value, max(80, room))
        if "\n" in text or isinstance(value, dict):
            lines.append(f"{key}:\n" + "\n".join("  " + line for line in text.splitlines()))
        else:
            lines.append(f"{key}: {text}")
    return "\n".join(lines)


def render_valid_actions(valid_actions: list[str]) -> str:
    """Valid actions grouped by type: targeted ones list their services on one line."""
    groups: dict[str, list[str]] = {}
    for entry in valid_actions:
        action, _, service = entry.partition(":")
        groups.setdefault(action, [])
        if service:
            groups[action].append(service)
    return "\n".join(f"- {a}" + (f" (target_service: {', '.join(s)})" if s else "")
                     for a, s in groups.items())


def render_incident(observation: dict) -> str:
    """The incident as reported: title, severity and summary (kept for the whole episode)."""
    return (f"INCIDENT [{observation.get('severity', '?')}] {observation.get('incident_title', '')}\n"
            f"{observation.get('incident_summary', '')}").strip()


_HEADER_KEYS = ("current_phase", "steps_taken", "max_steps", "steps_remaining",
                "time_elapsed_minutes", "active_alerts_count")
#: Shown elsewhere (the header, the incident, the result) or not at all: every key but phase 2's.
_SKIPPED_KEYS = set(OBSERVATION_KEYS) - set(PHASE2_KEYS)


def render_observation(observation: dict, budget: int = 6000, tools: bool = False) -> str:
    """The observation as compact text of at most about ``budget`` characters.

    Valid actions and the phase's instructions are always included in full; the action
    result and the other variable fields share what is left of the budget. The last line asks
    for a JSON action, or with ``tools`` for a tool call.

    Args:
        observation: The environment's observation.
        budget: About how many characters the text may take.
        tools: Ask for a tool call rather than a JSON action.

    Returns:
        The text.
    """
    phase = observation.get("current_phase", 1)
    fixed_tail = (f"VALID ACTIONS:\n{render_valid_actions(list(observation.get('valid_actions') or []))}"
                  f"\n\n{PHASE_INSTRUCTIONS.get(phase, PHASE_INSTRUCTIONS[1])}\n"
                  + ("Call one tool." if tools else "Reply with one JSON action object."))
    header = ", ".join(f"{k}={observation[k]}" for k in _HEADER_KEYS if k in observation)
    statuses = observation.get("service_statuses") or {}
    status_line = "services: " + ", ".join(f"{s}={v}" for s, v in statuses.items()) if statuses else ""
    last = ""
    if "action_message" in observation:
        ok = "ok" if observation.get("action_success") else "FAILED"
        last = f"LAST ACTION ({ok}): {observation.get('action_message', '')}"
    fixed = [p for p in (header, status_line, last) if p]
    room = max(200, budget - len(fixed_tail) - sum(len(p) + 1 for p in fixed))
    extras = {k: v for k, v in observation.items() if k not in _SKIPPED_KEYS and v not in (None, "", [])}
    variable = []
    result = observation.get("action_result")
    if result:
        variable.append("RESULT:\n" + render_value(result, room * 2 // 3))
    for key, value in extras.items():
        variable.append(f"{key.upper()}:\n{render_value(value, max(120, room // 3))}")
    body = cut_middle("\n\n".join(variable), room) if variable else ""
    return "\n".join(fixed + ([body] if body else []) + ["", fixed_tail])


def fold_system(messages: list[dict]) -> list[dict]:
    """Messages without a system turn: its text opens the first user turn instead."""
    if not messages or messages[0]["role"] != "system":
        return list(messages)
    system, rest = messages[0]["content"], list(messages[1:])
    if rest and rest[0]["role"] == "user":
        return [{"role": "user", "content": f"{system}\n\n{rest[0]['content']}"}] + rest[1:]
    return [{"role": "user", "content": system}] + rest


@dataclass
class Transcript:
    """One episode's conversation: system prompt, the incident turn, then rolling turns.

    ``messages()`` keeps the system prompt and the first user turn (which holds the incident),
    then the recent (assistant, user) pairs within ``max_history`` and ``max_chars``. Old pairs
    are dropped in a block, down to half of either limit, so that the prompt then only grows
    by appending for a few turns: a kept KV cache (or a server's prefix cache) stays valid
    between trims instead of being invalidated on every turn.

    With ``tool_turns`` the conversation has the shape TRL's ``GRPOTrainer`` builds with
    :class:`~srelib.training.environment.IncidentToolEnv`: the system text opens the first user
    turn, a reply that is an action becomes an assistant ``tool_calls`` message, and the
    observation it brought back is a ``tool`` message named for the action.
    """

    system: str = SYSTEM_PROMPT
    obs_chars: int = 6000
    max_history: int = 8
    max_chars: int = 32000
    tool_turns: bool = False
    turns: list[dict] = field(default_factory=list)
    start: int = 0  # index in turns[1:] of the oldest kept message (an assistant reply)

    def add_observation(self, observation: Observation) -> None:
        if self.turns and self.turns[-1]["role"] in ("user", "tool"):
            self.turns.pop()  # that call got no reply; the new observation supersedes it
        text = render_observation(observation, self.obs_chars, self.tool_turns)
        if not self.turns:
            text = f"{render_incident(observation)}\n\n{text}"
        calls = self.turns[-1].get("tool_calls") if self.turns else None
        if calls:
            self.turns.append({"role": "tool", "name": calls[0]["function"]["name"],
                               "content": text})
        else:
            self.turns.append({"role": "user", "content": text})

    def add_reply(self, text: str) -> None:
        call = tool_call_message(text) if self.tool_turns else None
        self.turns.append(call or {"role": "assistant", "content": cut_middle(text, self.obs_chars)})

    def messages(self) -> list[dict]:
        if not self.turns:
            return self._opening([])
        first, rest = self.turns[0], self.turns[1:]
        fixed = len(self.system) + len(first["content"])
        limit = max(1, self.max_history)

        def fits(pairs: int, chars: int) -> bool:
            kept = rest[self.start:]
            return (len(kept) // 2 <= pairs
                    and fixed + sum(len(_text(m)) for m in kept) <= chars)

        if not fits(limit, self.max_chars):
            pairs, chars = max(1, limit // 2), fixed + max(0, self.max_chars - fixed) // 2
            while len(rest) - self.start > 2 and not fits(pairs, chars):
                self.start += 2
        return self._opening([first] + rest[self.start:])

    def _opening(self, kept: list[dict]) -> list[dict]:
        """The system prompt and then ``kept``; in tool turns, the system text opens the first
        user turn."""
        messages = [{"role": "system", "content": self.system}, *kept]
        return fold_system(messages) if self.tool_turns else messages


def tool_call_message(text: str) -> dict | None:
    """The assistant ``tool_calls`` message for a reply that is one action as JSON
    (``{"action_type", "target_service", "parameters"}``), else None."""
    try:
        action = json.loads(text)
    except (ValueError, RecursionError):  # a deeply nested reply is not an action either
        return None
    if not (isinstance(action, dict) and action.get("action_type") in {a.value for a in ActionType}
            and isinstance(action.get("parameters", {}), dict)):
        return None
    target = action.get("target_service")
    arguments = {**({"target_service": target} if target is not None else {}),
                 **action.get("parameters", {})}
    return {"role": "assistant", "content": "",
            "tool_calls": [{"type": "function",
                            "function": {"name": action["action_type"], "arguments": arguments}}]}


def arguments_as_text(messages: list[dict]) -> list[dict]:
    """``messages`` with each tool call's arguments as their JSON text (OpenAI's form)."""
    def call(c: dict) -> dict:
        arguments = json.dumps(c["function"]["arguments"], ensure_ascii=False)
        return {**c, "function": {**c["function"], "arguments": arguments}}

    return [{**m, "tool_calls": [call(c) for c in m["tool_calls"]]} if m.get("tool_calls")
            else m for m in messages]


def _text(message: dict) -> str:
    """A message's text as the model reads it, tool calls included."""
    calls = message.get("tool_calls")
    return message["content"] + (json.dumps(calls) if calls else "")
