"""A deep copy of JSON-shaped data (dicts, lists, tuples of scalars), several times faster than
``copy.deepcopy`` because it skips the memo and the copy protocol that such data never needs.

Only for data the environment built itself (trajectory records, grading results): containers
are rebuilt with their own type, every other value is immutable and shared.
"""

from __future__ import annotations

from typing import Any, TypeVar

_T = TypeVar("_T")


def json_copy(value: _T) -> _T:
    """A copy of ``value`` in which no dict, list or tuple is shared with the original."""
    return _copy(value)


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    if kind is tuple:
        return tuple([_copy(item) for item in value])
    return value
