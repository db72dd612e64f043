"""Opaque task ids and the task cards behind them.

A task has a *name* that people and the environment's internals use (``memory_leak``, or a
generated ``<family>.<service>.<site>``) and an *opaque id* that everything an agent or a saved
run sees carries instead: ``c-`` (classic) or ``g-`` (generated) and eight hex digits of a keyed
hash (HMAC-SHA256) of the name. The id has no structure to parse: its digits are uniform, not
derived from any field of the task. The hash is keyed and stable (the same name gives the same
id in every process and release), so stored runs keep their ids; it is not a secret, since
anyone holding srelib can map every name to its id and read the task's card, as analyses do.
What it rules out is an agent learning the answer from the string it is handed.

:func:`resolve` takes an id or a name and gives the name; :func:`task_id` gives the id;
:func:`public_name` is what tables show (the classic name, or the id of a generated task);
:func:`task_card` holds what analyses need and agents never get.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import re
from dataclasses import dataclass

from .scenarios import TASKS, is_classic

_KEY = b"srelib opaque task ids, v1"
_DIGITS = 8
_ID = re.compile(rf"^[cg]-[0-9a-f]{{{_DIGITS}}}$")


def is_opaque(value: object) -> bool:
    """Is ``value`` shaped like an opaque id (``c-``/``g-`` and eight hex digits)?"""
    return isinstance(value, str) and bool(_ID.match(value))


def _digest(name: str) -> str:
    return hmac.new(_KEY, name.encode(), hashlib.sha256).hexdigest()[:_DIGITS]


def task_id(task: str) -> str:
    """The opaque id of ``task`` (a name or an id); ValueError for an unknown task."""
    return id_of_name(resolve(task))


def id_of_name(name: str) -> str:
    """The opaque id a task called ``name`` has (or would have: the name is not looked up)."""
    return f"{'c' if is_classic(name) else 'g'}-{_digest(name)}"


@functools.lru_cache(maxsize=1)
def _classic_ids() -> dict[str, str]:
    return _reverse(TASKS, "c")


@functools.lru_cache(maxsize=1)
def _generated_ids() -> dict[str, str]:
    from .taskgen import candidates

    return _reverse(candidates(), "g")


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
    from .scenarios import get_scenario

    return get_scenario(task).name


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


@dataclass(frozen=True)
class TaskCard:
    """What analyses know about a task and a policy is never handed.

    ``family``, ``culprit`` (the root-cause service), ``fault_class``, ``shape`` and ``site``
    (generated tasks; None for classic ones, whose ``story`` is their name), ``bad_commit``
    (None for a no-change task), ``needs_fix``, ``suite`` and ``split``."""

    id: str
    name: str
    suite: str
    split: str
    family: str | None
    shape: str | None
    site: str | None
    story: str | None
    culprit: str
    fault_class: str
    bad_commit: str | None
    needs_fix: bool
    repo: str


def task_card(task: str) -> TaskCard:
    """The card of ``task`` (an opaque id or a name); ValueError for an unknown task."""
    from .catalog import split_of, suite_of
    from .scenarios import get_scenario

    name = resolve(task)
    scenario = get_scenario(name)
    family = shape = site = story = None
    if is_classic(name):
        story = name
    else:
        from .taskgen import candidate

        c = candidate(name)
        family, shape, site = c.family, c.shape, c.site
    return TaskCard(id=task_id(name), name=name, suite=suite_of(name), split=split_of(name),
                    family=family, shape=shape, site=site, story=story, culprit=scenario.root_cause_service,
                    fault_class=scenario.fault_class, bad_commit=scenario.bad_commit,
                    needs_fix=scenario.needs_fix, repo=scenario.repo)
