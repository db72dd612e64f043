"""One way to name and list tasks: suites, splits, and task specs resolved to task ids.

Two suites:

* ``classic``: the hand-written tasks, one folder each in ``scenario_data/``; a task is in the
  ``heldout`` split when its scenario says ``heldout``, else in ``train``;
* ``generated``: the tasks ``srelib.env.tasks.taskgen`` generates and admits (ids
  ``<family>.<service>.<site>``), each built lazily when first used.

A *task spec* is a task id, a suite name (``"generated"``), a suite and split
(``"generated:heldout"``), a comma-separated string of those, or a list of them.
"""

from __future__ import annotations

from typing import Any

from .lookup import get_scenario, load_repo
from srelib.env.phase2.repos import Repo
from srelib.env.simulation.scenarios import TASKS, is_classic, unknown_task_message

SUITES: tuple[str, ...] = ("classic", "generated")
SPLITS: tuple[str, ...] = ("train", "heldout")

__all__ = ["SPLITS", "SUITES", "expand_tasks", "get_repo", "get_scenario", "list_tasks",
           "parse_suite", "resolve_tasks", "split_of", "suite_of"]


def _check_split(split: object) -> None:
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; valid splits: {list(SPLITS)} or None")


def list_tasks(suite: str = "classic", split: str | None = None) -> list[str]:
    """The ids of a suite's tasks, in the suite's order.

    Args:
        suite: ``"classic"``, ``"generated"`` or another suite :mod:`srelib.env.tasks.catalog` knows.
        split: ``"train"`` or ``"heldout"`` for one split; None for all.

    Returns:
        The task ids.

    Raises:
        ValueError: an unknown suite or split.
    """
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; valid suites: {list(SUITES)}")
    _check_split(split)
    if suite == "classic":
        return [t for t in TASKS if split is None or split_of(t) == split]
    from srelib.env.tasks.taskgen import generated_suite

    return [t for t, info in generated_suite().tasks.items() if split is None or info.split == split]


def split_of(task_id: str) -> str:
    """``"heldout"`` or ``"train"``: the split ``task_id`` belongs to (ValueError if unknown)."""
    return "heldout" if get_scenario(task_id).heldout else "train"


def suite_of(task_id: str) -> str:
    """``"classic"`` or ``"generated"``: the suite ``task_id`` belongs to (ValueError if unknown)."""
    return "classic" if is_classic(get_scenario(task_id).name) else "generated"


def parse_suite(spec: object) -> tuple[str, str | None] | None:
    """``(suite, split or None)`` when ``spec`` names a suite (``"generated:heldout"``), else None."""
    if not isinstance(spec, str):
        return None
    suite, colon, split = spec.partition(":")
    if suite not in SUITES:
        return None
    if colon:
        _check_split(split)
    return suite, (split if colon else None)


def _items(spec: Any) -> list:
    if isinstance(spec, str):
        return [part.strip() for part in spec.split(",") if part.strip()]
    try:
        return list(spec)
    except TypeError:
        raise ValueError(f"a task spec is an id, a suite name or a list of them, got {spec!r}") from None


def resolve_tasks(spec: object, split: str | None = None) -> list[str]:
    """The task ids a task spec names (only those of ``split`` when given), in order, each once.

    ValueError naming unknown ids, or saying that the spec names no task (of that split).
    """
    _check_split(split)
    wanted, unknown = [], []
    for item in _items(spec):
        suite = parse_suite(item)
        if suite is not None:
            if split is None or suite[1] in (None, split):
                wanted.extend(list_tasks(suite[0], split or suite[1]))
            continue
        try:
            item_split = split_of(item)
        except ValueError:
            unknown.append(item)
            continue
        if split in (None, item_split):
            wanted.append(item)
    if unknown:
        raise ValueError(unknown_task_message(unknown))
    if not wanted:
        where = f" of the {split} split" if split else ""
        raise ValueError(f"the task spec {spec!r} names no task{where}")
    return list(dict.fromkeys(wanted))


def expand_tasks(spec: object) -> list[str]:
    """The task ids a runner's ``tasks`` argument names: ``"all"`` is every classic task (each
    pool then keeps those of its split), anything else a task spec (:func:`resolve_tasks`)."""
    return list(TASKS) if spec == "all" else resolve_tasks(spec)


def get_repo(name: str) -> Repo:
    """The repository ``name``: one in ``repo_data/`` or a generated task's (``Scenario.repo``)."""
    return load_repo(name)
