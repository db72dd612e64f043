"""Red-team readers of phase 2's surface (issue 45): a git-log shape rule and a hash lookup.

* :func:`own_test_rule`: "the newest commit that touches a module and its own test file" (on
  main at 04832c5 it names the bad commit of every generated task);
* :class:`HashLookup`: a cheater that embeds srelib but not the suite key. It builds, from the
  public generator, a table from every commit sha a task's repository holds to the task, and
  looks an episode's shas up in it (``naming``: the task it names, or None). With the episode's
  seed (a policy's ``reset`` gets it) it also recomputes what the *public* key would show, the
  best a policy without the key can do;
* :func:`lookup_rate` / :func:`rule_rate`: how often each names the answer, with chance beside.

Both read what an agent is shown: the git log of phase 2 played through the environment.
"""

from __future__ import annotations

import functools

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


def shown_log(task: str, seed: int) -> tuple[list[dict], str | None]:
    """``(the git log an oracle-handoff episode of task shows, its bad_commit_sha)``."""
    env = IncidentEnv()
    obs, _ = env.reset(task=task, mode="p2_only", seed=seed)
    out = env.step(GIT_LOG)[0]["action_result"]
    return out["commits"], obs.get("bad_commit_sha")


def bad_index(task: str, seed: int) -> tuple[int | None, int, list[dict]]:
    """``(index of the bad commit in the shown log or None, commits, the log)``."""
    from srelib.env.lookup import get_scenario

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
    from srelib.env.taskgen.tasks import _candidates, task_history

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
            from srelib.env.surface import PUBLIC_KEY, EpisodeSurface
        except ImportError:  # a srelib whose shas do not depend on the episode
            return None
        from srelib.env.taskgen.tasks import _candidates, task_history

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
    """``(how often rule names the bad commit of a classic task, chance)``; a k-way tie
    counts 1/k, chance is the mean of 1/commits."""
    from srelib.env.scenarios import TASKS

    hits, chance, n = 0.0, 0.0, 0
    for task in TASKS:
        k, count, commits = bad_index(task, seed)
        if k is None:
            continue
        named = rule(commits)
        n += 1
        chance += 1 / count
        hits += (commits[k]["sha"] in named) / len(named) if named else 0.0
    return hits / n, chance / n
