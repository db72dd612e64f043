"""Ending a generated reply once its action is complete, on the device, lane by lane.

A reply answered in JSON text is read by :func:`srelib.env.parse.parse_action`, which takes the
first object that is an action; one answered in tool turns is read up to its first
``</tool_call>``. Generating past that point costs time and changes nothing the parser reads,
so :func:`action_end` gives ``generate`` a stopping criterion per reply form:

- JSON text: :class:`ObjectEnd` follows, per lane, the brace depth of the reply, skipping
  braces inside double-quoted strings (with backslash escapes) as the parser does, and stops a
  lane when its first top-level object closes. Its state moves one token at a time through
  tables built once from the vocabulary, so each step is a few gathers on the device: no host
  sync, no Python loop over lanes. A reply whose first object is not an action is cut there
  and fails to parse, as a model told to answer with one object has failed.
- tool turns: transformers' ``StopStringCriteria`` on the close of a tool call, as the
  tokenizer's ``response_template`` spells it (``</tool_call>`` in srelib's tool format).
"""

from __future__ import annotations

import re
from typing import Any

from srelib.extras import require

_BYTE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
#: String states: outside a string, inside one, inside one right after a backslash.
_OUT, _IN, _ESCAPED = 0, 1, 2


def _step(char: str, depth: int, state: int) -> tuple[int, int]:
    """One character of the scan inside an object: the new depth and string state."""
    if state == _ESCAPED:
        return depth, _IN
    if state == _IN:
        return depth, {"\\": _ESCAPED, '"': _OUT}.get(char, _IN)
    if char == '"':
        return depth, _IN
    return depth + {"{": 1, "}": -1}.get(char, 0), _OUT


def token_effects(text: str) -> tuple[list[tuple[int, int, int]], tuple[bool, int, int]]:
    """How a token's ``text`` moves the scan.

    First, for each string state a lane may enter it in while inside an object: the net depth
    change, the lowest depth reached (relative to the entry) and the state it leaves in; a lane
    at depth ``d`` completes its object within the token when ``d + lowest <= 0``. Second, for
    a lane outside any object (where quotes and stray closing braces do not count): whether an
    object opens and closes within the token, and the depth and state it leaves in.
    """
    inside = []
    for entry in (_OUT, _IN, _ESCAPED):
        depth, state, lowest = 0, entry, 0
        for char in text:
            depth, state = _step(char, depth, state)
            lowest = min(lowest, depth)
        inside.append((depth, lowest, state))
    depth, state, closes = 0, _OUT, False
    for char in text:
        if depth == 0 and char != "{":
            continue
        depth, state = _step(char, depth, state)
        if depth == 0:
            closes = True
            break
    return inside, (closes, depth, state)


def _token_text(token: str | None) -> str:
    """The characters a vocabulary entry stands for, as far as braces and quotes go."""
    return _BYTE.sub(lambda m: chr(int(m.group(1), 16)), token or "")


class ObjectTables:
    """:func:`token_effects` for a whole vocabulary, as tensors indexed by token id."""

    def __init__(self, tokenizer: Any, size: int):
        require("torch", "srelib.policies.llm.reply_end")
        import torch

        delta = torch.zeros((size, 3), dtype=torch.long)
        lowest = torch.zeros((size, 3), dtype=torch.long)
        state = torch.tensor([_OUT, _IN, _ESCAPED]).repeat(size, 1)
        closes = torch.zeros(size, dtype=torch.bool)
        depth0 = torch.zeros(size, dtype=torch.long)
        state0 = torch.zeros(size, dtype=torch.long)
        count = min(size, len(tokenizer))
        for token_id, token in enumerate(tokenizer.convert_ids_to_tokens(list(range(count)))):
            text = _token_text(token)
            if not any(c in text for c in '{}"\\'):
                continue
            inside, (closes[token_id], depth0[token_id], state0[token_id]) = token_effects(text)
            for entry, (d, low, s) in enumerate(inside):
                delta[token_id, entry], lowest[token_id, entry], state[token_id, entry] = d, low, s
        self.tensors = {"delta": delta, "lowest": lowest, "state": state, "closes": closes,
                        "depth0": depth0, "state0": state0}
        self.device = None

    def to(self, device) -> dict:
        """The tables on ``device`` (moved once)."""
        if self.device != device:
            self.tensors = {k: v.to(device) for k, v in self.tensors.items()}
            self.device = device
        return self.tensors


def _object_end_class():
    require("transformers", "srelib.policies.llm.reply_end")
    from transformers import StoppingCriteria

    class ObjectEnd(StoppingCriteria):
        """Stops each lane when the first top-level JSON object of its reply closes."""

        def __init__(self, tables: ObjectTables):
            self.tables = tables
            self.depth = self.state = None

        def __call__(self, input_ids, scores, **kwargs):
            require("torch", "srelib.policies.llm.reply_end")
            import torch

            t = self.tables.to(input_ids.device)
            token = input_ids[:, -1]
            if self.depth is None:
                self.depth = torch.zeros_like(token)
                self.state = torch.zeros_like(token)
            inside = self.depth > 0
            entry = self.state[:, None]
            lowest = t["lowest"][token].gather(1, entry)[:, 0]
            done = torch.where(inside, self.depth + lowest <= 0, t["closes"][token])
            self.depth = torch.where(inside, self.depth + t["delta"][token].gather(1, entry)[:, 0],
                                     t["depth0"][token])
            self.state = torch.where(inside, t["state"][token].gather(1, entry)[:, 0],
                                     t["state0"][token])
            return done

    return ObjectEnd


def tool_call_close(tokenizer: Any) -> str | None:
    """The text that closes a tool call in ``tokenizer.response_template``, if it is a plain
    string (optionally followed by ``\\s*``); else None."""
    fields = (getattr(tokenizer, "response_template", None) or {}).get("fields", {})
    pattern = fields.get("tool_calls", {}).get("close_pattern", "")
    pattern = pattern.removesuffix(r"\s*")
    text = re.sub(r"\\(.)", r"\1", pattern)
    return text if text and pattern in (text, re.escape(text)) else None


def action_end(tokenizer: Any, tables: ObjectTables | None, tools: bool):
    """The stopping criterion for one ``generate`` call: the tool call's close in tool turns
    (None when the template has no plain close), else the first JSON object's (``tables``
    built for the tokenizer)."""
    if tools:
        require("transformers", "srelib.policies.llm.reply_end")
        from transformers import StopStringCriteria

        close = tool_call_close(tokenizer)
        return StopStringCriteria(tokenizer, [close]) if close else None
    return _object_end_class()(tables)
