"""Model text -> action dict, or the reason why no action could be read.

``parse_action(text, valid_actions)`` copes with what chat models really write: fenced JSON,
prose around the JSON, several objects (the first valid action wins), braces inside strings,
single-quoted or Python-literal dicts, trailing commas, a ``target_service`` given inside
``parameters`` and the ``"action_type:service"`` spelling of ``valid_actions``. It never raises
on model text; a failure comes back as a reason the model can act on, with close matches.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from srelib.env.actions import ACTION_NAMES, ACTION_SPECS, GIVE_UP, PARSE_ERROR, SERVICES, ActionType

_TYPE_KEYS = ("action_type", "action", "type", "name", "tool")
_PARAM_KEYS = ("parameters", "params", "arguments", "args")
_TARGET_KEYS = ("target_service", "target", "service")
_TARGETED = {a.value for a, spec in ACTION_SPECS.items() if spec.targeted}
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_LITERAL_NAMES = {"true": True, "false": False, "null": None, "none": None}


@dataclass(frozen=True)
class ParseResult:
    """What the parser read: ``action`` (a normalised action dict) or ``error`` (why not)."""

    action: dict[str, Any] | None
    error: str | None

    @property
    def ok(self) -> bool:
        return self.action is not None


def parse_error_action(reason: str) -> dict[str, Any]:
    """The action a policy sends when it could not read one; the env explains it to the agent."""
    return {"action_type": PARSE_ERROR, "target_service": None, "parameters": {"reason": reason}}


def give_up_action(reason: str) -> dict[str, Any]:
    """The action a policy sends after too many failures; the env ends the episode cleanly."""
    return {"action_type": GIVE_UP, "target_service": None, "parameters": {"reason": reason}}


def parse_action(text: object, valid_actions: Sequence[str] | None = None) -> ParseResult:
    """Read the first valid action from a model's reply.

    ``valid_actions`` is the observation's list (targeted actions spelled
    ``"action_type:service"``); without it the action is checked against the whole vocabulary.
    """
    if not isinstance(text, str):
        return ParseResult(None, f"expected the reply as text, got {type(text).__name__}")
    if not text.strip():
        return ParseResult(None, "the reply was empty; answer with one JSON action object")
    valid = list(valid_actions) if valid_actions is not None else None
    first_error: str | None = None
    saw_object = False
    for obj in _objects(text):
        saw_object = True
        action, error = _first_action(obj, valid)
        if action is not None:
            return ParseResult(action, None)
        first_error = first_error or error
    if not saw_object:
        bare = _bare_action(text, valid)
        if bare is not None:
            return ParseResult(bare, None)
        if _unclosed(text):
            return ParseResult(None, "the JSON object is not closed (was the reply cut off?); "
                                     "reply with one complete JSON object")
        return ParseResult(None, 'no JSON object found; reply with one object like {"action_type": '
                                 '"...", "target_service": null, "parameters": {}}')
    return ParseResult(None, first_error or "no JSON object in the reply is an action")


def _parse_action_json(text: str) -> dict[str, Any]:
    """The seed's helper, kept compatible: a dict always, the PARSE_ERROR action on failure."""
    result = parse_action(text)
    return result.action if result.action is not None else parse_error_action(result.error or "")


# ── finding objects ────────────────────────────────────────────────────────────────────────


def _objects(text: str) -> Iterator[dict]:
    """Every dict literal in ``text``, outermost first; a span that fails is searched inside."""
    for start, end in _brace_spans(text):
        obj = _load(text[start:end])
        if isinstance(obj, dict):
            yield obj
        else:
            yield from _objects(text[start + 1:end - 1])


def _brace_spans(text: str) -> list[tuple[int, int]]:
    """Top-level ``{...}`` spans, skipping braces inside quoted strings."""
    spans, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if depth and ch in "\"'" and (ch == '"' or _opens_value(text, i)):
            i = _string_end(text, i)
            continue
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
        i += 1
    return spans


def _opens_value(text: str, i: int) -> bool:
    """A single quote opens a string only where a key or value may start (not in "don't")."""
    before = text[:i].rstrip()
    return bool(before) and before[-1] in "{[,:"


def _string_end(text: str, i: int) -> int:
    quote, j = text[i], i + 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == quote:
            return j + 1
        j += 1
    return j


def _unclosed(text: str) -> bool:
    return text.count("{") > text.count("}")


def _load(span: str) -> object:
    """JSON (lenient about control characters and trailing commas), then Python literals."""
    for candidate in (span, _TRAILING_COMMA.sub(r"\1", span)):
        try:
            return json.loads(candidate, strict=False)
        except ValueError:
            pass
    try:
        tree = ast.parse(_TRAILING_COMMA.sub(r"\1", span), mode="eval")
        return ast.literal_eval(_LiteralNames().visit(tree))
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None


class _LiteralNames(ast.NodeTransformer):
    """Let ``true``/``false``/``null`` (JSON spellings) through ``ast.literal_eval``."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id.lower() in _LITERAL_NAMES:
            return ast.copy_location(ast.Constant(_LITERAL_NAMES[node.id.lower()]), node)
        return node


def _bare_action(text: str, valid: list[str] | None) -> dict[str, Any] | None:
    """A reply that is nothing but an action name, e.g. ``check_metrics:orders``."""
    word = text.strip().strip("`'\" \n").strip()
    if not re.fullmatch(r"[A-Za-z_]+(:[A-Za-z_]+)?", word):
        return None
    action, _ = _normalise({"action_type": word}, valid)
    return action


# ── normalising and validating ─────────────────────────────────────────────────────────────


def _normalise(obj: dict, valid: list[str] | None) -> tuple[dict | None, str | None]:
    obj = _unwrap(obj)
    raw_type = next((obj[k] for k in _TYPE_KEYS if isinstance(obj.get(k), str)), None)
    if raw_type is None:
        return None, 'the JSON object has no "action_type" string'
    params = next((obj[k] for k in _PARAM_KEYS if k in obj), None)
    if isinstance(params, str):
        params = _load(params) if params.strip() else {}
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return None, f'"parameters" must be an object, got {type(params).__name__}'
    params = dict(params)
    action_type = re.sub(r"[\s\-]+", "_", raw_type.strip()).lower()
    target = next((obj[k] for k in _TARGET_KEYS if obj.get(k) not in (None, "")), None)
    if ":" in action_type:
        action_type, _, spelled_target = action_type.partition(":")
        target = target or spelled_target
    if target is None and action_type in _TARGETED:
        target = params.pop("target_service", None) or params.pop("service", None)
    params.pop("target_service", None)
    if target is not None and not isinstance(target, str):
        return None, f'"target_service" must be a service name, got {target!r}'
    target = target.strip().lower().replace(" ", "_") if target else None
    if target and action_type not in _TARGETED:
        if action_type == ActionType.DECLARE_ROOT_CAUSE.value:
            params.setdefault("service", target)
        target = None
    return _validate(action_type, target, params, valid)


def _first_action(obj: dict, valid: list[str] | None) -> tuple[dict | None, str | None]:
    """The object itself, or, when it names no action at all, the first nested one that does."""
    action, error = _normalise(obj, valid)
    if action is not None or any(isinstance(obj.get(k), str) for k in _TYPE_KEYS):
        return action, error
    for value in obj.values():
        for inner in value if isinstance(value, list) else [value]:
            if isinstance(inner, dict):
                found, _ = _first_action(inner, valid)
                if found is not None:
                    return found, None
    return None, error


def _unwrap(obj: dict) -> dict:
    """``{"action": {...}}`` or ``{"thought": ..., "action": {...}}`` wrappers."""
    inner = obj.get("action")
    if isinstance(inner, dict):
        return inner
    return obj


def _validate(action_type: str, target: str | None, params: dict,
              valid: list[str] | None) -> tuple[dict | None, str | None]:
    action = {"action_type": action_type, "target_service": target, "parameters": params}
    if action_type in (PARSE_ERROR, GIVE_UP):
        return None, f"{action_type!r} is reserved; choose one of the valid actions"
    choices = valid if valid is not None else list(ACTION_NAMES)
    types = {c.partition(":")[0] for c in choices}
    if action_type not in types:
        head = (f"{action_type!r} is not a valid action now" if action_type in ACTION_NAMES
                else f"unknown action_type {action_type!r}")
        return None, _unknown(head, action_type, sorted(types))
    if action_type in _TARGETED or any(c.startswith(action_type + ":") for c in choices):
        targets = [c.partition(":")[2] for c in choices if c.startswith(action_type + ":")]
        if valid is None:
            targets = list(SERVICES)
        if not target:
            return None, (f"{action_type} needs a target_service; valid now: "
                          + ", ".join(f"{action_type}:{t}" for t in targets))
        if target not in targets:
            spelled = f"{action_type}:{target}"
            return None, _unknown(f"{spelled!r} is not a valid action now", spelled,
                                  [f"{action_type}:{t}" for t in targets])
    return action, None


def _unknown(head: str, word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else "."
    return f"{head}{hint} Valid: {', '.join(choices)}"
