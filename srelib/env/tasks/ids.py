"""Opaque task ids and the task cards behind them.

A task has a *name* that people and the environment's internals use (``memory_leak``, or a
generated ``<family>.<service>.<site>``) and an *opaque id* that everything an agent or a saved
run sees carries instead: ``c-`` (classic) or ``g-`` (generated) and eight hex digits of a keyed
hash (HMAC-SHA256) of the name. The id has no structure to parse: its digits are uniform, not
derived from any field of the task. The hash is keyed and stable (the same name gives the same
id in every process and release), so stored runs keep their ids. On the public suite it is not
a secret, since anyone holding srelib can map every name to its id and read the task's card, as
analyses do; what it rules out is an agent learning the answer from the string it is handed. On
a private suite (:mod:`.surface`: ``SRELIB_SUITE_KEY``) the hash is keyed by the suite's key,
so without the key file no id can be mapped to its task.

:func:`resolve` takes an id or a name and gives the name; :func:`task_id` gives the id;
:func:`public_name` is what tables show (the classic name, or the id of a generated task);
:func:`srelib.env.tasks.lookup.task_card` holds what analyses need and agents never get.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import re
from . import taskgen
from srelib.env.simulation.scenarios import TASKS, is_classic, unknown_task_message
from .surface import is_public, keyed

_KEY = b"srelib opaque task ids, v1"
_DIGITS = 8
_ID = re.compile(rf"^[cg]-[0-9a-f]{{{_DIGITS}}}$")


def is_opaque(value: object) -> bool:
    """Is ``value`` shaped like an opaque id (``c-``/``g-`` and eight hex digits)?"""
    return isinstance(value, str) and bool(_ID.match(value))


@functools.lru_cache(maxsize=4096)  # a few hundred tasks; every reset asks for one
def _digest(name: str) -> str:
    if is_public():
        return hmac.new(_KEY, name.encode(), hashlib.sha256).hexdigest()[:_DIGITS]
    return keyed("task id\0" + name).hex()[:_DIGITS]


def task_id(task: str) -> str:
    """The opaque id of a task.

    Args:
        task: a name or an id.

    Returns:
        The id a policy is shown (e.g. ``"c-17e50d39"``).

    Raises:
        ValueError: an unknown task.
    """
    return id_of_name(resolve(task))


def id_of_name(name: str) -> str:
    """The opaque id a task called ``name`` has (or would have: the name is not looked up)."""
    return f"{'c' if is_classic(name) else 'g'}-{_digest(name)}"


@functools.lru_cache(maxsize=1)
def _classic_ids() -> dict[str, str]:
    return _reverse(TASKS, "c")


@functools.lru_cache(maxsize=1)
def _generated_ids() -> dict[str, str]:
    return _reverse(taskgen.candidates(), "g")


def _reverse(names, prefix: str) -> dict[str, str]:
    ids: dict[str, str] = {}
    for name in names:
        key = f"{prefix}-{_digest(name)}"
        if key in ids:
            raise RuntimeError(f"opaque id {key} is shared by {ids[key]!r} and {name!r}: "
                               "lengthen task_ids._DIGITS")
        ids[key] = name
    return ids


def resolve(task: str) -> str:
    """The name of the task ``task`` names (an opaque id, or already a name). ValueError for an
    unknown id or name."""
    if is_opaque(task):
        table = _classic_ids() if task.startswith("c-") else _generated_ids()
        if task not in table:
            raise ValueError(f"unknown task id {task!r}; srelib.list_tasks() lists the tasks "
                             "(srelib.task_card(name) gives a task's id)")
        return table[task]
    if isinstance(task, str) and is_classic(task) or taskgen.is_generated_id(task):
        return task
    raise ValueError(unknown_task_message(task))


def public_name(task: str) -> str:
    """What a table shows people for ``task``: a classic task's name, else its opaque id."""
    name = resolve(task)
    return name if is_classic(name) else task_id(name)


def by_task(mapping, task: str):
    """``mapping``'s value for ``task``, whether its keys are ids, public names or names; None
    when it has none."""
    name = resolve(task)
    for key in (task, name, task_id(name), public_name(name)):
        if key in mapping:
            return mapping[key]
    return None
