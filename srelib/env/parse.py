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
from json.decoder import scanstring  # pyright: ignore[reportAttributeAccessIssue] - public, not in typeshed
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from srelib.env.actions import ACTION_NAMES, ACTION_SPECS, GIVE_UP, PARSE_ERROR, SERVICES, ActionType
from srelib.env.support.ast_parse import parse as parse_python

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

    Args:
        text: the reply (anything: a non-string is a parse failure, never an exception).
        valid_actions: the observation's list (targeted actions spelled
            ``"action_type:service"``); without it the action is checked against the whole
            vocabulary.

    Returns:
        A :class:`ParseResult`: the action, or the reason none was read.
    """
    if not isinstance(text, str):
        return ParseResult(None, f"expected the reply as text, got {type(text).__name__}")
    if len(text) > MAX_REPLY_CHARS:
        return ParseResult(None, f"the reply is longer than {MAX_REPLY_CHARS} characters; "
                                 "answer with one JSON action object")
    if not text.strip():
        return ParseResult(None, "the reply was empty; answer with one JSON action object")
    valid = list(valid_actions) if valid_actions is not None else None
    first_error: str | None = None
    saw_object = False
    budget = _Budget()
    for obj in _objects(text, budget):
        saw_object = True
        action, error = _first_action(obj, valid, budget)
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
#
# The work is bounded whatever the text: one scan, driven by C-level regex searches, that stops
# after MAX_TOKENS braces and quotes; at most MAX_SPANS candidate spans loaded, charged to a
# budget of characters (JSON in C; Python literals only for short spans, as ``ast`` is slow);
# and a bounded depth when looking for an action nested inside a loaded object.

MAX_REPLY_CHARS = 1_000_000
MAX_TOKENS = 10_000  # runs of braces and quotes seen by the scan inside objects
MAX_SPANS = 50  # candidate {...} spans loaded
LOAD_BUDGET = 2 * MAX_REPLY_CHARS  # characters handed to the JSON loader, over all spans
LITERAL_MAX_CHARS = 8_000  # longest span tried as a Python literal
LITERAL_BUDGET = 24_000
NESTED_DEPTH = 6  # how deep an action may sit inside a wrapper object
MAX_OPEN = 100  # brace levels whose spans are candidates
_TOKEN = re.compile(r"[{}\"']")
_RUN = {"{": re.compile(r"\{+"), "}": re.compile(r"\}+")}
_QUOTED_REST = {q: re.compile(rf"(?:[^{q}\\]++|\\.)*+{q}?", re.S) for q in "\"'"}


class _Budget:
    """What is left to spend on loading spans: their number and their characters."""

    def __init__(self) -> None:
        self.spans, self.json, self.literal = MAX_SPANS, LOAD_BUDGET, LITERAL_BUDGET

    def take_span(self, n: int) -> bool:
        self.spans -= 1
        self.json -= n
        return self.spans >= 0 and self.json >= 0

    def take_literal(self, n: int) -> bool:
        if n > LITERAL_MAX_CHARS:
            return False
        self.literal -= n
        return self.literal >= 0


def _objects(text: str, budget: _Budget) -> Iterator[dict]:
    """Every dict literal in ``text``, outermost first; a span that fails is searched inside."""
    for group in _brace_groups(text):
        inside_loaded = -1  # end of the last span that loaded as a dict: its insides are done
        for start, end in group:
            if start < inside_loaded:
                continue
            if not budget.take_span(end - start):
                return
            obj = _load(text[start:end], budget)
            if isinstance(obj, dict):
                inside_loaded = end
                yield obj


def _brace_groups(text: str) -> Iterator[list[tuple[int, int]]]:
    """For each top-level ``{...}``, its matched spans, outer before inner, then in order.

    Braces inside quoted strings do not count. Runs of braces are taken whole, spans are kept
    for the outer MAX_OPEN levels only, and the scan stops after MAX_TOKENS runs and quotes.
    """
    spans: list[tuple[int, int]] = []
    opened: list[int] = []  # starts of the open spans we keep
    deeper = pos = tokens = 0  # deeper: open braces below the MAX_OPEN levels kept
    while tokens < MAX_TOKENS:
        found = _TOKEN.search(text, pos)
        if found is None:
            return
        tokens += 1
        i = found.start()
        ch = text[i]
        if ch == "{":
            run = _match_end(_RUN["{"], text, i)
            kept = 0 if deeper else min(run - i, MAX_OPEN - len(opened))
            opened.extend(range(i, i + kept))
            deeper += run - i - kept
        elif ch == "}":
            run = _match_end(_RUN["}"], text, i)
            inner = min(deeper, run - i)
            deeper -= inner
            for close in range(i + inner + 1, min(run, i + inner + len(opened)) + 1):
                spans.append((opened.pop(), close))
            if not opened and spans:
                spans.sort()
                yield spans
                spans = []
        elif ch == '"' or _opens_value(text, i):  # no string starts in "don't"
            run = _string_end(text, i)
        else:
            run = i + 1
        pos = run if opened or deeper else text.find("{", run)  # between objects: only "{"
        if pos < 0:
            return


def _opens_value(text: str, i: int) -> bool:
    """A single quote opens a string where a key or a value may start (judged from the last
    64 characters: a quote after a longer run of spaces is not taken as a string)."""
    before = text[max(0, i - 64):i].rstrip()
    return bool(before) and before[-1] in "{[,:"


def _string_end(text: str, i: int) -> int:
    """Where the string opened by the quote at ``i`` ends (the text's end if it never does)."""
    if text[i] == '"':
        try:
            return scanstring(text, i + 1, False)[1]
        except ValueError:  # not JSON (an unknown escape, or unterminated): read it loosely
            pass
    return _match_end(_QUOTED_REST[text[i]], text, i + 1)


def _match_end(pattern: re.Pattern, text: str, start: int) -> int:
    """Where ``pattern``'s match at ``start`` ends (the callers' patterns always match there)."""
    found = pattern.match(text, start)
    assert found is not None, pattern.pattern
    return found.end()


def _unclosed(text: str) -> bool:
    return text.count("{") > text.count("}")


def _load(span: str, budget: _Budget) -> object:
    """JSON (lenient about control characters and trailing commas), then Python literals."""
    try:
        return json.loads(span, strict=False)
    except json.JSONDecodeError as exc:
        trailing_comma = exc.pos < len(span) and span[exc.pos] in "}]" and (
            span[:exc.pos].rstrip().endswith(","))
    except (ValueError, RecursionError):
        trailing_comma = False
    cleaned = _TRAILING_COMMA.sub(r"\1", span) if trailing_comma else span
    if trailing_comma:
        try:
            return json.loads(cleaned, strict=False)
        except (ValueError, RecursionError):
            pass
    if not budget.take_literal(len(span)):
        return None
    try:
        tree = parse_python(cleaned, mode="eval")
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
    if len(word) > 100 or not re.fullmatch(r"[A-Za-z_]+(:[A-Za-z_]+)?", word):
        return None
    action, _ = _normalise({"action_type": word}, valid, _Budget())
    return action


# ── normalising and validating ─────────────────────────────────────────────────────────────


def _normalise(obj: dict, valid: list[str] | None,
               budget: _Budget) -> tuple[dict | None, str | None]:
    obj = _unwrap(obj)
    raw_type = next((obj[k] for k in _TYPE_KEYS if isinstance(obj.get(k), str)), None)
    if raw_type is None:
        return None, 'the JSON object has no "action_type" string'
    params = next((obj[k] for k in _PARAM_KEYS if k in obj), None)
    if isinstance(params, str):
        params = _load(params, budget) if params.strip() else {}
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
        return None, f'"target_service" must be a service name, got {type(target).__name__}'
    target = target.strip().lower().replace(" ", "_") if target else None
    if target and action_type not in _TARGETED:
        if action_type == ActionType.DECLARE_ROOT_CAUSE.value:
            params.setdefault("service", target)
        target = None
    return _validate(action_type, target, params, valid)


def _first_action(obj: dict, valid: list[str] | None, budget: _Budget,
                  depth: int = 0) -> tuple[dict | None, str | None]:
    """The object itself, or, when it names no action at all, the first nested one that does
    (at most NESTED_DEPTH levels down)."""
    action, error = _normalise(obj, valid, budget)
    if (action is not None or depth == NESTED_DEPTH
            or any(isinstance(obj.get(k), str) for k in _TYPE_KEYS)):
        return action, error
    for value in obj.values():
        for inner in value if isinstance(value, list) else [value]:
            if isinstance(inner, dict):
                found, _ = _first_action(inner, valid, budget, depth + 1)
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
        shown = action_type[:80]
        head = (f"{shown!r} is not a valid action now" if action_type in ACTION_NAMES
                else f"unknown action_type {shown!r}")
        return None, _unknown(head, shown, sorted(types))
    if action_type in _TARGETED or any(c.startswith(action_type + ":") for c in choices):
        targets = [c.partition(":")[2] for c in choices if c.startswith(action_type + ":")]
        if valid is None:
            targets = list(SERVICES)
        if not target:
            return None, (f"{action_type} needs a target_service; valid now: "
                          + ", ".join(f"{action_type}:{t}" for t in targets))
        if target not in targets:
            spelled = f"{action_type}:{target[:80]}"
            return None, _unknown(f"{spelled!r} is not a valid action now", spelled,
                                  [f"{action_type}:{t}" for t in targets])
    return action, None


def _unknown(head: str, word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else "."
    return f"{head}{hint} Valid: {', '.join(choices)}"
