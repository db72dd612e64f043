"""A bounded, plain copy of whatever Python object an agent hands the environment.

:func:`plain_copy` turns any object into JSON data (dicts with string keys, lists, strings,
ints, finite floats, bools, None) without calling the object's own methods: containers are read
through the built-in types' methods, so a dict subclass whose ``get`` raises, a str subclass
with a hostile ``__eq__`` or an object whose ``__repr__`` raises are all copied safely. Depth,
item counts, string lengths, integer sizes and the total amount copied are bounded; where a
bound cuts something, the copy says so and the environment rejects the action with that reason.
The environment acts on this copy and records it, so a saved trajectory replays as it ran.
"""

from __future__ import annotations

from typing import Any, TypeVar

_T = TypeVar("_T")

MAX_DEPTH = 8
MAX_ITEMS = 1000  # per list or dict
MAX_NODES = 10_000  # values in one action
MAX_TEXT = 100_000  # characters in one string
MAX_TOTAL_TEXT = 1_000_000  # characters in one action
MAX_INT_BITS = 256
_NAMED = 200  # characters kept from the description of an object that is not plain data


def plain_copy(value: object) -> tuple[object, str | None]:
    """``(copy, problem)``: the bounded JSON-data copy, and why it is not exact (or None)."""
    copier = _Copier()
    return copier.copy(value, 0, _ROOT), copier.problem


def describe(value: object) -> str:
    """A short printable description of plain data (as :func:`plain_copy` returns)."""
    return repr(value)[:_NAMED]


#: Where a value sits in the action, built only when a bound cuts it: None for the action
#: itself, else ``(parent, how, name)`` with ``how`` one of "item", "index", "key".
_ROOT = None


def _where(place) -> str:
    if place is None:
        return "the action"
    parent, how, name = place
    if how == "key":
        return f"a key of {_where(parent)}"
    if how == "index":
        return f"{_where(parent)}[{name}]"
    above = _where(parent)
    return name[:40] if above == "the action" else f"{above}.{name[:40]}"


class _Copier:
    def __init__(self) -> None:
        self.nodes = self.chars = 0
        self.problem: str | None = None

    def _cut(self, place, why: str, stand_in: _T) -> _T:
        if self.problem is None:
            self.problem = f"{_where(place)} {why}"
        return stand_in

    def copy(self, value: Any, depth: int, where) -> object:
        # ``value`` is anything an agent sent: read by its exact type, through the built-in
        # types' own methods (never ``isinstance``, which asks the object for its ``__class__``)
        self.nodes += 1
        if self.nodes > MAX_NODES:
            return self._cut(where, f"is too large (more than {MAX_NODES} values in one action)",
                             None)
        kind = type(value)
        if value is None or kind is bool:
            return value
        if kind is str:  # the common case first; a subclass is read below
            return self._text(value, where)
        if issubclass(kind, int):
            number = int.__index__(value)
            if number.bit_length() > MAX_INT_BITS:
                return self._cut(where, f"is an integer larger than 2**{MAX_INT_BITS}",
                                 f"<int of {number.bit_length()} bits>")
            return number
        if issubclass(kind, float):
            number = float.__float__(value)
            return number if number - number == 0 else repr(number)  # nan, inf: as text
        if issubclass(kind, str):
            return self._text(str.__str__(value), where)
        if depth >= MAX_DEPTH:
            return self._cut(where, f"is nested deeper than {MAX_DEPTH} levels", "<too deep>")
        if issubclass(kind, dict):
            return self._dict(value, depth, where)
        if issubclass(kind, (list, tuple)):
            base = list if issubclass(kind, list) else tuple
            size = base.__len__(value)
            items = base.__getitem__(value, slice(0, MAX_ITEMS))
            if size > MAX_ITEMS:
                self._cut(where, f"has more than {MAX_ITEMS} items", None)
            return [self.copy(v, depth + 1, (where, "index", i)) for i, v in enumerate(items)]
        return self._cut(where, f"is not JSON data (got {_type_name(kind)})",
                         f"<{_type_name(kind)} object>")

    def _text(self, text: str, where) -> str:
        if len(text) > MAX_TEXT:
            text = self._cut(where, f"is longer than {MAX_TEXT} characters", text[:MAX_TEXT])
        self.chars += len(text)
        if self.chars > MAX_TOTAL_TEXT:
            return self._cut(where, f"is too large (more than {MAX_TOTAL_TEXT} characters in "
                                    "one action)", "")
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: keep the rest of the text
                text = text.encode("utf-8", "replace").decode("utf-8")
        return text

    def _dict(self, value: dict, depth: int, where) -> dict:
        size = dict.__len__(value)
        if size > MAX_ITEMS:
            self._cut(where, f"has more than {MAX_ITEMS} keys", None)
        out: dict[str, object] = {}
        for number, (key, item) in enumerate(dict.items(value)):
            if number == MAX_ITEMS:
                break
            key = self.copy(key, depth + 1, (where, "key", None))
            name = key if isinstance(key, str) else describe(key)
            out[name] = self.copy(item, depth + 1, (where, "item", name))
        return out


def _type_name(kind: type) -> str:
    """The class's name, read past any metaclass ``__getattribute__``."""
    return type.__dict__["__qualname__"].__get__(kind)[:_NAMED]
