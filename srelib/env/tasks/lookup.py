"""Any task by name or opaque id: its Scenario, its Repo and its card.

The one place that dispatches between the hand-written tasks (:mod:`.scenarios`,
:mod:`.repos`, which know only their own data) and the generator (:mod:`.taskgen`, which builds
on both), so that neither of them imports the other round a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import taskgen
from srelib.env.support.memo import byte_lru
from srelib.env.phase2.repos import Repo, classic_repo, list_repos
from srelib.env.simulation.scenarios import SCENARIOS, Scenario, is_classic, unknown_task_message
from srelib.env.tasks.ids import is_opaque, resolve, task_id

__all__ = ["TaskCard", "get_scenario", "in_memory", "load_repo", "task_card"]


def get_scenario(name: str) -> Scenario:
    """The Scenario of any task.

    Args:
        name: a classic name, a generated ``family.service.site`` name or an opaque id
            (:mod:`srelib.env.tasks.ids`).

    Returns:
        The task's :class:`Scenario`.

    Raises:
        ValueError: an unknown task; the message names the suites and example ids.
    """
    if is_opaque(name):
        name = resolve(name)
    if isinstance(name, str) and name in SCENARIOS:
        return SCENARIOS[name]
    if taskgen.is_generated_id(name):
        try:
            return _generated(name)
        except ValueError as exc:
            raise ValueError(f"{unknown_task_message(name)} ({exc})") from None
    raise ValueError(unknown_task_message(name))


@byte_lru(12 << 20)  # ~13 kB a scenario: all 609 generated tasks (~8 MB) fit
def _generated(name: str) -> Scenario:
    return taskgen.build_scenario(name)


def in_memory(task: str, with_repo: bool = False) -> bool:
    """Is ``task`` already built and held in memory? Asking builds nothing.

    Args:
        task: a task's name or opaque id (anything else, a suite included, is not a task).
        with_repo: ask for its repository too (:func:`load_repo`).

    Returns:
        True when :func:`get_scenario` of ``task``, and with ``with_repo`` :func:`load_repo` of
        its repository, would return without building anything; False for an unknown task and
        for a generated scenario or any repository not built yet or evicted from its memo.
    """
    try:
        name = resolve(task)
    except ValueError:
        return False
    scenario = SCENARIOS.get(name) or _generated.peek(name)
    if scenario is None:
        return False
    return not with_repo or scenario.repo is None or load_repo.peek(scenario.repo) is not None


@byte_lru(16 << 20)  # classic repos ~0.3 MB, a generated one ~18 kB: all of them (~14 MB) fit
def load_repo(name: str) -> Repo:
    """Load (once; repositories are static) the repository called ``name``: one in repo_data
    (:func:`.repos.classic_repo`) or a generated task's (``gen.<task id>``, built by
    :mod:`.taskgen`)."""
    valid = list_repos()
    if name in valid:
        return classic_repo(name)
    if isinstance(name, str) and "." in name:  # repo_data names have no dot; generated ones do
        return taskgen.build_repo(name)
    raise ValueError(f"unknown repo {name!r}; valid: {valid} or a generated task's repo")


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
    """The card of a task: its public facts (title, severity, split, pools, repository).

    Args:
        task: an opaque id or a name.

    Returns:
        The :class:`TaskCard`.

    Raises:
        ValueError: an unknown task.
    """
    name = resolve(task)
    scenario = get_scenario(name)
    family = shape = site = story = None
    if is_classic(name):
        story = name
    else:
        c = taskgen.candidate(name)
        family, shape, site = c.family, c.shape, c.site
    return TaskCard(id=task_id(name), name=name, suite="classic" if story else "generated",
                    split="heldout" if scenario.heldout else "train", family=family,
                    shape=shape, site=site, story=story, culprit=scenario.root_cause_service,
                    fault_class=scenario.fault_class, bad_commit=scenario.bad_commit,
                    needs_fix=scenario.needs_fix, repo=scenario.repo)
