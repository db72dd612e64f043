"""A deep copy of JSON-shaped data (dicts, lists, tuples of scalars), several times faster than
``copy.deepcopy`` because it skips the memo and the copy protocol that such data never needs.

Only for data the environment built itself (trajectory records, grading results): containers
are rebuilt with their own type, every other value is immutable and shared.
"""

from __future__ import annotations


def json_copy(value):
    """A copy of ``value`` in which no dict, list or tuple is shared with the original."""
    kind = type(value)
    if kind is dict:
        return {key: json_copy(item) for key, item in value.items()}
    if kind is list:
        return [json_copy(item) for item in value]
    if kind is tuple:
        return tuple([json_copy(item) for item in value])
    return value
