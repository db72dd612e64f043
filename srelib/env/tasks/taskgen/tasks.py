"""Build one generated task, lazily: its Scenario, its Repo and its derived test ids."""

from __future__ import annotations

import functools
import re
from types import MappingProxyType

from srelib.env.support.memo import byte_lru
from srelib.env.phase2.repos import Commit, Repo, unified_diff
from srelib.env.simulation.scenarios import Scenario, _parse

from . import cache
from .bases import BASES
from .commits import history
from .recipes import Candidate, History, candidates, scenario_raw, split_of
from .runner import judge, observe_many

REPO_PREFIX = "gen."
_ID = re.compile(r"^[a-z_]+\.[a-z_]+\.[a-z_]+$")


@functools.lru_cache(maxsize=1)  # no arguments: one value, the fixed candidate list
def _candidates() -> dict[str, Candidate]:
    return candidates()


@functools.lru_cache(maxsize=1)  # no arguments: one value, a position per candidate
def _order() -> dict[str, int]:
    return {task_id: 1000 + k for k, task_id in enumerate(_candidates())}


def is_generated_id(name: object) -> bool:
    """Is ``name`` the id of a task the generator can build (``family.service.site``)?"""
    return isinstance(name, str) and bool(_ID.match(name)) and name in _candidates()


def candidate(task_id: str) -> Candidate:
    """The candidate called ``task_id``; ValueError naming the id format and an example."""
    if not is_generated_id(task_id):
        example = next(iter(_candidates()))
        raise ValueError(f"unknown generated task {task_id!r}; ids are '<family>.<service>.<site>', "
                         f"e.g. {example!r} (srelib.env.tasks.taskgen.candidates() lists them)")
    return _candidates()[task_id]


@byte_lru(4 << 20)  # ~13 kB a history: every candidate's (~4 MB) about fits
def task_history(task_id: str) -> History:
    """The repository history of a candidate (memoised)."""
    return history(candidate(task_id))


def trees(task_id: str) -> tuple[dict[str, str], dict[str, str]]:
    """``(tree at the page, tree after the reference fix)``; equal where no change is needed."""
    h = task_history(task_id)
    tree: dict[str, str] = {}
    for commit in h.commits:
        tree.update(dict(commit.files))
    return tree, {**tree, **dict(h.fix or ())}


def derive_tests(task_ids: list[str]) -> dict[str, dict]:
    """Run each task's hidden tests on its bad and fixed trees (one child for the batch):
    ``{task: {"fail_to_pass": [...], "pass_to_pass": [...], "broken": [...]}}``, where
    ``broken`` lists the tests the fixed tree fails. Cached per task on disk."""
    out, todo = {}, []
    for task_id in task_ids:
        hit = cache.read(f"tests/{task_id}.json")
        if hit is None:
            todo.append(task_id)
        else:
            out[task_id] = hit
    jobs = []
    for task_id in todo:
        probes = dict(task_history(task_id).probes)
        bad, fixed = trees(task_id)
        jobs += [(bad, probes), (fixed, probes)]
    seen = observe_many(jobs) if jobs else []
    for k, task_id in enumerate(todo):
        checks = dict(task_history(task_id).checks)
        before, after = judge(checks, seen[2 * k]), judge(checks, seen[2 * k + 1])
        entry = {"fail_to_pass": [t for t in after if after[t] and not before[t]],
                 "pass_to_pass": [t for t in after if after[t] and before[t]],
                 "broken": [t for t in after if not after[t]]}
        cache.write(f"tests/{task_id}.json", entry)
        out[task_id] = entry
    return out


def build_repo(repo_name: str) -> Repo:
    """The Repo of a generated task, named ``gen.<task id>`` (its scenario's ``repo``)."""
    if not (isinstance(repo_name, str) and repo_name.startswith(REPO_PREFIX)):
        raise ValueError(f"generated repositories are named '{REPO_PREFIX}<task id>', got {repo_name!r}")
    task_id = repo_name[len(REPO_PREFIX):]
    c, h = candidate(task_id), task_history(task_id)
    tests = derive_tests([task_id])[task_id]
    tree: dict[str, str] = {}
    commits = []
    for spec in h.commits:
        before = dict(tree)
        tree.update(dict(spec.files))
        commits.append(Commit(spec.sha, spec.author, spec.date, spec.message,
                              tuple(p for p, _ in spec.files), unified_diff(before, tree)))
    fixes = {} if h.fix is None else {task_id: MappingProxyType(dict(h.fix))}
    return Repo(
        name=repo_name, service=c.service, description=BASES[c.service].description,
        tree=MappingProxyType(tree), commits=tuple(reversed(commits)),
        hidden_tests=MappingProxyType(dict(h.probes)), checks=MappingProxyType(dict(h.checks)),
        fixes=MappingProxyType(fixes),
        tests_by_task=MappingProxyType({task_id: (tuple(tests["fail_to_pass"]),
                                                  tuple(tests["pass_to_pass"]))}),
    )


def build_scenario(task_id: str) -> Scenario:
    """The Scenario of a generated task (validated like a hand-written one)."""
    c = candidate(task_id)
    raw = scenario_raw(c, task_history(task_id), split_of(c.shape), _order()[task_id])
    return _parse(raw, f"generated task {task_id}")
