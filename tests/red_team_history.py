"""Red-team readers of phase 2's surface (issue 45): a git-log shape rule and a hash lookup.

* :func:`own_test_rule`: "the newest commit that touches a module and its own test file" (on
  main at 04832c5 it names the bad commit of every generated task);
* :class:`HashLookup`: a cheater that embeds srelib but not the suite key. It builds, from the
  public generator, a table from every commit sha a task's repository holds to the task, and
  looks an episode's shas up in it (``naming``: the task it names, or None). With the episode's
  seed (a policy's ``reset`` gets it) it also recomputes what the *public* key would show, the
  best a policy without the key can do;
* :func:`lookup_rate` / :func:`rule_rate`: how often each names the answer, with chance beside;
* the fourth attacks (red team of issue 45, part 1): rules over the commit dates
  (:func:`noon_rule`, :func:`burst_rule`, :func:`gap_rule`), over the words that name a site
  (:func:`sprint_body_rule`, :func:`named_site_rule`), each scored by :func:`named_rate`, and
  the family the file tree votes for (:func:`family_vote_rate`).

Both read what an agent is shown: the git log of phase 2 played through the environment.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from datetime import datetime

from srelib.env.actions import ActionType
from srelib.env.core import IncidentEnv

GIT_LOG = {"action_type": ActionType.GET_GIT_LOG.value, "parameters": {"n_commits": 50}}


def own_test_rule(commits: list[dict]) -> str | None:
    """The sha of the newest commit (``commits`` newest first) that touches a module
    ``.../<m>.py`` and its own test ``tests/test_<m>.py``; None when none does."""
    for c in commits:
        files = set(c["files"])
        modules = {f.rsplit("/", 1)[-1][:-3] for f in files
                   if f.endswith(".py") and not f.startswith("tests/")}
        if any(f"tests/test_{m}.py" in files for m in modules):
            return c["sha"]
    return None


@functools.lru_cache(maxsize=2048)  # the rules of one test module read the same episodes
def shown_log(task: str, seed: int) -> tuple[list[dict], str | None]:
    """``(the git log an oracle-handoff episode of task shows, its bad_commit_sha)``; callers
    read it and never change it."""
    env = IncidentEnv()
    obs, _ = env.reset(task=task, mode="p2_only", seed=seed)
    out = env.step(GIT_LOG)[0]["action_result"]
    return out["commits"], obs.get("bad_commit_sha")


def bad_index(task: str, seed: int) -> tuple[int | None, int, list[dict]]:
    """``(index of the bad commit in the shown log or None, commits, the log)``."""
    from srelib.env.tasks.lookup import get_scenario

    commits, bad_sha = shown_log(task, seed)
    scenario = get_scenario(task)
    if not scenario.needs_fix:
        return None, len(commits), commits
    # the oracle handoff names the culprit, so bad_commit_sha is the bad commit as shown
    shas = [c["sha"] for c in commits]
    return (shas.index(bad_sha) if bad_sha in shas else None), len(commits), commits


def rule_rate(tasks: list[str], seed: int = 0) -> tuple[float, float]:
    """``(how often own_test_rule names the bad commit, chance)`` over the fault tasks."""
    hits, chance, n = 0.0, 0.0, 0
    for task in tasks:
        k, count, commits = bad_index(task, seed)
        if k is None:
            continue
        n += 1
        chance += 1 / count
        hits += own_test_rule(commits) == commits[k]["sha"]
    return hits / n, chance / n


@functools.lru_cache(maxsize=1)
def _public_table() -> dict[str, str]:
    """sha -> task over every candidate's repository as the public generator builds it
    (shas shared by several tasks map to none)."""
    from srelib.env.tasks.taskgen.tasks import _candidates, task_history

    table: dict[str, str] = {}
    shared: set[str] = set()
    for task in _candidates():
        for commit in task_history(task).commits:
            if table.setdefault(commit.sha, task) != task:
                shared.add(commit.sha)
    return {sha: task for sha, task in table.items() if sha not in shared}


class HashLookup:
    """Names a task from the commit shas an episode shows (see the module doc)."""

    def __init__(self, recompute: bool = True) -> None:
        self.recompute = recompute

    def naming(self, commits: list[dict], seed: int) -> str | None:
        """The task the shas of ``commits`` name by the public table, else (``recompute``) by
        recomputing the public key's episode surface for ``seed`` over every candidate; None if
        neither does."""
        table = _public_table()
        votes = [table[c["sha"]] for c in commits if c["sha"] in table]
        if votes:
            return max(sorted(set(votes)), key=votes.count)
        return self._recomputed(commits, seed) if self.recompute else None

    @staticmethod
    def _recomputed(commits: list[dict], seed: int) -> str | None:
        try:
            from srelib.env.tasks.surface import PUBLIC_KEY, EpisodeSurface
        except ImportError:  # a srelib whose shas do not depend on the episode
            return None
        from srelib.env.tasks.taskgen.tasks import _candidates, task_history

        shown = {c["sha"] for c in commits}
        for task in _candidates():
            view = EpisodeSurface(PUBLIC_KEY, seed, task)
            if any(view.sha(c.sha) in shown for c in task_history(task).commits):
                return task
        return None


def lookup_rate(tasks: list[str], seed: int = 0, recompute: bool = True) -> float:
    """How often :class:`HashLookup` names the task an episode plays."""
    cheat = HashLookup(recompute)
    return sum(cheat.naming(shown_log(t, seed)[0], seed) == t for t in tasks) / len(tasks)


def most_removed_py_rule(commits: list[dict]) -> list[str]:
    """The shas of the commits (``commits`` newest first, the first commit left out) that touch
    a ``.py`` file and remove the most lines: "the commit that removes lines from code"."""
    from srelib.analysis.tell_audit import commit_shape

    code = [c for c in commits[:-1] if any(f.endswith(".py") for f in c["files"])]
    if not code:
        return []
    removed = {c["sha"]: commit_shape(c)["removed"] for c in code}
    return [sha for sha, n in removed.items() if n == max(removed.values())]


def classic_rule_rate(rule, seed: int = 0) -> tuple[float, float]:
    """``(how often rule names the bad commit of a classic task, chance)``, as :func:`named_rate`."""
    from srelib.env.simulation.scenarios import TASKS

    return named_rate(rule, list(TASKS), seed)


# ─────────────────────────────────────────────── the fourth attacks (dates, names, tree)
def _subject(c: dict) -> str:
    return c["message"].split("\n", 1)[0]


def _when(c: dict) -> datetime:
    return datetime.fromisoformat(c["date"].replace("Z", "+00:00"))


def noon_rule(commits: list[dict]) -> list[str]:
    """The commits of the newest commit's day closest to 12:25 (the bad commit's slot on main
    at 6a99c02)."""
    day = _when(commits[0]).date()
    off = {c["sha"]: abs(_when(c).hour * 60 + _when(c).minute - 745)
           for c in commits if _when(c).date() == day}
    return [sha for sha, d in off.items() if d == min(off.values())]


def burst_rule(commits: list[dict], gap_min: int = 180) -> list[str]:
    """The oldest commit of the newest burst: walking back from the newest commit until two
    neighbours are ``gap_min`` minutes apart or more."""
    k = 0
    while k + 1 < len(commits) and (_when(commits[k]) - _when(commits[k + 1])).total_seconds() < gap_min * 60:
        k += 1
    return [commits[k]["sha"]]


def gap_rule(commits: list[dict]) -> list[str]:
    """Among the commits of the newest day (24 hours), the one furthest from its older
    neighbour."""
    gaps = [((_when(commits[k]) - _when(commits[k + 1])).total_seconds(), commits[k]["sha"])
            for k in range(len(commits) - 1)
            if (_when(commits[0]) - _when(commits[k])).total_seconds() < 86400]
    return [max(gaps)[1]] if gaps else []


def _feature_of(commits: list[dict], area: str) -> list[str]:
    """The newest commit ``<area>: ...`` that neither adds, tidies nor notes: the area's
    feature."""
    for c in commits:
        if _subject(c).startswith(area + ": ") and not re.match(
                rf"{re.escape(area)}: (add|tidy|note) ", _subject(c)):
            return [c["sha"]]
    return []


def sprint_body_rule(commits: list[dict]) -> list[str]:
    """The feature of the area the first "Part of this sprint's <area> work." body names (on
    main at 6a99c02 the body named the task's area on any commit)."""
    for c in commits:
        m = re.search(r"Part of this sprint's (\w+) work", c["message"])
        if m:
            return _feature_of(commits, m[1])
    return []


_NAMING = (r"(?:\w+): add [\w ]+ helpers for (.+)$", r"core: fix .+ seen by (.+)$",
           r"readme: describe (.+)$", r"\w+: note where (.+) is used$")


def named_site_rule(commits: list[dict]) -> list[str]:
    """The feature of the site a helper, core fix, README or note commit names (on main at
    6a99c02 they named only the task's site)."""
    for c in commits:
        for pattern in _NAMING:
            m = re.match(pattern, _subject(c))
            if m:
                for other in commits:
                    add = re.match(rf"(\w+): add {re.escape(m[1])}$", _subject(other))
                    if add:
                        return _feature_of(commits, add[1])
    return []


def named_rate(rule, tasks: list[str], seed: int = 0) -> tuple[float, float]:
    """``(how often rule names the bad commit of the fault tasks of tasks, chance)``; a k-way
    tie counts 1/k, chance is the mean of 1/commits."""
    hits, chance, n = 0.0, 0.0, 0
    for task in tasks:
        k, count, commits = bad_index(task, seed)
        if k is None:
            continue
        named = rule(commits)
        n += 1
        chance += 1 / count
        hits += (commits[k]["sha"] in named) / len(named) if named else 0.0
    return hits / n, chance / n


@functools.lru_cache(maxsize=1)
def _families_at() -> dict[tuple[str, str], Counter]:
    """(package, module path) -> how many public candidates of each family have their site
    there: a table anyone holding srelib builds."""
    from srelib.env.tasks.taskgen.bases import BASES
    from srelib.env.tasks.taskgen.recipes import module_path
    from srelib.env.tasks.taskgen.shape_lib import SHAPES
    from srelib.env.tasks.taskgen.tasks import _candidates

    table: dict = {}
    for c in _candidates().values():
        key = (BASES[c.service].package, module_path(SHAPES[c.shape], c))
        table.setdefault(key, Counter())[SHAPES[c.shape].family] += 1
    return table


def family_vote(commits: list[dict], package: str) -> list[str]:
    """The families most of the tree's modules are sites of (each module votes for every family
    with a site at its path)."""
    votes: Counter = Counter()
    for path in {f for c in commits for f in c["files"]}:
        for family in _families_at().get((package, path), ()):
            votes[family] += 1
    return [f for f, v in votes.items() if v == max(votes.values())] if votes else []


def family_vote_rate(tasks: list[str], seed: int = 0) -> tuple[float, float]:
    """``(how often family_vote names the family of a fault task's bug, chance)``; chance is the
    better of one family in the count of fault families and always guessing the commonest."""
    from srelib.env.tasks.lookup import get_scenario
    from srelib.env.tasks.taskgen.bases import BASES
    from srelib.env.tasks.taskgen.tasks import candidate

    hits, truths = 0.0, []
    for task in tasks:
        if not get_scenario(task).needs_fix:
            continue
        c = candidate(task)
        family = c.family
        named = family_vote(shown_log(task, seed)[0], BASES[c.service].package)
        truths.append(family)
        hits += (family in named) / len(named) if named else 0.0
    chance = max(1 / len(set(truths)), Counter(truths).most_common(1)[0][1] / len(truths))
    return hits / len(truths), chance
