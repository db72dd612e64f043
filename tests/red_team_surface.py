"""Red-team policies that read one surface field and never investigate (issue 28, requirement 10).

Each :class:`FieldCheater` looks at the page and every service's deploy history, names a culprit
and a fault class by its rules, declares them and hands over; in phase 2 it reads the git log
and reverts the commit its commit rule picks (or declares that no change is needed when its
no-fault rule fires). :func:`pool_means` plays a cheater on a suite's pools; the bar is a mean
of at most :data:`MEAN_BAR` per pool with at most :data:`OVER_SHARE` of the tasks over
:data:`TASK_BAR` (:data:`NO_FAULT_TASK_BAR` on no-fault tasks).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from srelib.env.actions import SERVICES, ActionType
from srelib.env.belief import BeliefState
from srelib.policies.base import handoff_action, make_action
from srelib.policies.scripted.revert import reverse_diff
from srelib.analysis.shortcuts import (Evidence, initial_release_service, last_summary_service, newest_commit,
                              newest_deploy_service, off_stock_note_service, reported_fault,
                              third_oldest_commit, unchanged_elsewhere_commit)
from srelib.analysis.tell_audit import mask

MEAN_BAR, TASK_BAR, NO_FAULT_TASK_BAR, OVER_SHARE = 0.2, 0.35, 0.6, 0.10


def _or_newest(rule):
    """``rule`` (a :mod:`srelib.analysis.shortcuts` culprit rule), else the service deployed last."""
    return lambda ev: rule(ev) or newest_deploy_service(ev)


def _or_head(rule):
    """``rule`` (a :mod:`srelib.analysis.shortcuts` bad-commit rule), else the newest commit."""
    return lambda ev: rule(ev) or newest_commit(ev)


def looks_reported(ev: Evidence) -> bool:
    return reported_fault(ev) == "none"


class FieldCheater:
    """A policy made of one culprit rule, one commit rule (both over a
    :class:`srelib.analysis.shortcuts.Evidence` of what it saw), an optional fault-class table and an
    optional no-fault rule (see the module doc)."""

    def __init__(self, name: str, culprit=newest_deploy_service, commit=_or_head(third_oldest_commit),
                 fault_class=None, no_fault=None):
        self.name, self._culprit, self._commit = name, culprit, commit
        self._class, self._no_fault = fault_class, no_fault
        self.reset()

    def reset(self, seed=None, task_name=None) -> None:
        self._seen: dict = {"deploys": {}, "title": "", "summary": "", "severity": ""}
        self._asked: str | None = None
        self._queue: list = []
        self._picked = False
        self._quiet = False

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        if phase == 2:
            return self._phase2(observation)
        return self._phase1(observation)

    def _evidence(self, commits: tuple = ()) -> Evidence:
        seen = self._seen
        return Evidence("", 0, seen["title"], seen["summary"], (), seen["deploys"], {}, commits,
                        severity=seen["severity"])

    def _phase1(self, obs: dict) -> dict:
        seen, result = self._seen, obs.get("action_result") or {}
        seen.update(title=obs.get("incident_title", ""), summary=obs.get("incident_summary", ""),
                    severity=obs.get("severity", ""))
        if self._asked is not None:
            seen["deploys"][self._asked] = list(result.get("deploys") or [])
            self._asked = None
        todo = [s for s in SERVICES if s not in seen["deploys"]]
        if todo:
            self._asked = todo[0]
            return make_action(ActionType.CHECK_DEPLOY_HISTORY, todo[0])
        if not self._queue:
            ev = self._evidence()
            self._quiet = bool(self._no_fault and self._no_fault(ev))
            service = self._culprit(ev)
            fault = "none" if self._quiet else (self._class(ev) if self._class else None)
            belief = BeliefState(suspected_service=service, suspected_fault_class=fault,
                                 service_confidence=1.0, fault_confidence=1.0 if fault else 0.0,
                                 reasoning=self.name)
            self._queue = [make_action(ActionType.DECLARE_ROOT_CAUSE, root_cause=f"{fault} in {service}",
                                       service=service, fault_class=fault),
                           handoff_action(belief)]
        return self._queue.pop(0) if len(self._queue) > 1 else self._queue[0]

    def _phase2(self, obs: dict) -> dict:
        result = obs.get("action_result") or {}
        if self._no_fault and not self._queue and not self._picked and not self._seen["title"]:
            # started in phase 2 (pool B): the page is all there is to read
            self._seen.update(title=obs.get("incident_title", ""), severity=obs.get("severity", ""),
                              summary=obs.get("incident_summary", ""))
            self._quiet = self._no_fault(self._evidence())
        if self._quiet:
            return make_action(ActionType.DECLARE_NO_CHANGE, reason=self.name)
        if isinstance(result.get("diff"), str) and result["diff"].strip():
            return make_action(ActionType.PROPOSE_PATCH, diff=reverse_diff(result["diff"]))
        if self._picked or "commits" not in result:
            if self._picked:
                return make_action(ActionType.DECLARE_NO_CHANGE, reason="nothing to revert")
            return make_action(ActionType.GET_GIT_LOG, n_commits=50)
        self._picked = True
        commits = tuple(c for c in result["commits"] if isinstance(c, dict) and c.get("sha"))
        sha = self._commit(self._evidence(commits))
        if sha is None:
            return make_action(ActionType.DECLARE_NO_CHANGE, reason="no commit")
        return make_action(ActionType.GET_FILE_DIFF, commit_sha=sha)


# ── the template learner: tables learned from train tasks ─────────────────────────────────
class TemplateLearner(FieldCheater):
    """Learns from train tasks, never investigating: masked title -> fault class (majority),
    masked newest deploy note -> culprit rate (unseen notes score the prior, so a note that
    only culprits carry stands out) and the bad commit's place from the oldest. Played on a
    train task, it learns from the other train tasks (``leave_out``), or it would be scored on
    what it memorised."""

    def __init__(self, train_surfaces: list, leave_out: str | None = None):
        train_surfaces = [s for s in train_surfaces if s.task != leave_out]
        titles: dict = defaultdict(Counter)
        hits, seen = Counter(), Counter()
        places = Counter()
        key = "deploy note (newest) [masked]"
        for s in train_surfaces:
            titles[s.task_fields["title [masked]"]][s.fault_class] += 1
            for svc, value in s.service_fields[key].items():
                seen[value] += 1
                hits[value] += svc == s.service
            if s.bad_commit:
                places[next(k for k, sha in enumerate(s.commits) if s.bad_commit.startswith(sha))] += 1
        prior = sum(hits.values()) / max(1, sum(seen.values()))
        common = Counter(s.fault_class for s in train_surfaces).most_common(1)[0][0]

        def culprit(ev: Evidence) -> str | None:
            rate = {svc: (hits[v] + prior) / (seen[v] + 1)
                    for svc, v in ((svc, mask(max(d, key=lambda x: x["timestamp"])["description"]))
                                   for svc, d in ev.deploys.items() if d)}
            return max(SERVICES, key=lambda svc: rate.get(svc, 0.0))

        def fault_class(ev: Evidence) -> str:
            votes = titles.get(mask(ev.title))
            return max(votes, key=votes.__getitem__) if votes else common

        place = places.most_common(1)[0][0] if places else 2

        def commit(ev: Evidence) -> str | None:
            oldest_first = ev.commits[::-1]
            return oldest_first[min(place, len(oldest_first) - 1)]["sha"] if oldest_first else None

        super().__init__("template learner", culprit, commit, fault_class,
                         no_fault=lambda view: fault_class(view) == "none")


def single_field_cheaters() -> list[FieldCheater]:
    """The single-field rules of issue 28, each as a policy."""
    return [FieldCheater("deploy-note rule", culprit=_or_newest(off_stock_note_service)),
            FieldCheater("initial-release rule", culprit=_or_newest(initial_release_service)),
            FieldCheater("summary-order rule", culprit=_or_newest(last_summary_service)),
            FieldCheater("commit-body rule", commit=_or_head(unchanged_elsewhere_commit)),
            FieldCheater("commit-position rule", commit=_or_head(third_oldest_commit)),
            FieldCheater("severity rule", no_fault=looks_reported)]


# ── playing a cheater on a suite ──────────────────────────────────────────────────────────
def pool_cells(suite: str, per_pool: int | None = None) -> dict[str, list[tuple[str, dict]]]:
    """``{pool: [(task, play kwargs), ...]}``: the classic pools' own tasks, or for the generated
    suite the train tasks in pools A-C' modes and the held-out tasks joint (pool D); the first
    ``per_pool`` tasks of each in a fixed shuffled order."""
    import random

    from srelib.env.tasks.pools import POOLS
    from srelib.env.simulation.scenarios import TASKS

    if suite == "classic":
        cells = {p: [(t, {"pool": p}) for t in pool.tasks if t in TASKS] for p, pool in POOLS.items()}
    elif suite == "generated":
        from srelib.env.tasks.taskgen import generated_suite

        tasks = generated_suite().tasks
        split = {name: sorted(t for t, i in tasks.items() if i.split == name) for name in ("train", "heldout")}
        cells = {p: [(t, {"mode": pool.mode}) for t in split[pool.split]] for p, pool in POOLS.items()}
    else:
        raise ValueError(f"unknown suite {suite!r}; valid: 'classic', 'generated'")
    if per_pool is not None:
        for p, rows in cells.items():
            rows = sorted(rows)
            random.Random(f"{suite}:{p}").shuffle(rows)
            cells[p] = rows[:per_pool]
    return cells


def pool_means(make_policy, suite: str, per_pool: int | None = None, seeds=(0,)) -> dict[str, dict]:
    """``{pool: {"mean", "over", "tasks", "ok"}}`` of the policy ``make_policy(task)`` builds for
    each task, per pool of ``suite`` (``over``: share of tasks above the per-task bar)."""
    from srelib.env.tasks.lookup import get_scenario
    from srelib.analysis.validity import play

    out = {}
    for pool, rows in pool_cells(suite, per_pool).items():
        scores = []
        for task, where in rows:
            mean = sum(play(make_policy(task), task, seed, **where)["final"] for seed in seeds) / len(seeds)
            bar = TASK_BAR if get_scenario(task).needs_fix else NO_FAULT_TASK_BAR
            scores.append((mean, mean > bar))
        if not scores:
            continue
        mean = sum(s for s, _ in scores) / len(scores)
        over = sum(o for _, o in scores) / len(scores)
        out[pool] = {"mean": round(mean, 3), "over": round(over, 3), "tasks": len(scores),
                     "ok": mean <= MEAN_BAR and over <= OVER_SHARE}
    return out
