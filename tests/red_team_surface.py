"""Red-team policies that read one surface field and never investigate (issue 28, requirement 10).

Each :class:`FieldCheater` looks at the page and every service's deploy history, names a culprit
and a fault class by its rules, declares them and hands over; in phase 2 it reads the git log
and reverts the commit its commit rule picks (or declares that no change is needed when its
no-fault rule fires). :func:`pool_means` plays a cheater on a suite's pools; the bar is a mean
of at most :data:`MEAN_BAR` per pool with at most :data:`OVER_SHARE` of the tasks over
:data:`TASK_BAR` (:data:`NO_FAULT_TASK_BAR` on no-fault tasks).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from srelib.env.actions import SERVICES, ActionType
from srelib.env.belief import BeliefState
from srelib.env.infra import DEPLOY_NOTES
from srelib.policies.base import handoff_action, make_action
from srelib.policies.revert import reverse_diff
from srelib.tell_audit import mask

MEAN_BAR, TASK_BAR, NO_FAULT_TASK_BAR, OVER_SHARE = 0.2, 0.35, 0.6, 0.10


# ── rules over what the page and the deploy histories show ─────────────────────────────────
def _newest(deploys: list) -> dict:
    return max(deploys, key=lambda d: d["timestamp"]) if deploys else {}


def newest_deploy(seen: dict) -> str | None:
    latest = {s: _newest(d) for s, d in seen["deploys"].items() if d}
    return max(latest, key=lambda s: latest[s]["timestamp"]) if latest else None


def off_stock_note(seen: dict) -> str | None:
    """The service whose newest deploy note is not on the stock list innocent services use."""
    off = [s for s, d in seen["deploys"].items() if d and _newest(d)["description"] not in DEPLOY_NOTES]
    return off[0] if off else newest_deploy(seen)


def initial_release(seen: dict) -> str | None:
    """The service whose deploy history opens with an "Initial ..." release."""
    first = [s for s, d in seen["deploys"].items() if d and d[0]["description"].startswith("Initial")]
    return first[0] if first else newest_deploy(seen)


def last_named(seen: dict) -> str | None:
    """The last service the summary names."""
    low = seen["summary"].lower()
    hits = [(m.start(), s) for s in SERVICES for m in re.finditer(rf"\b{s.replace('_', '[ _]')}\b", low)]
    return max(hits)[1] if hits else newest_deploy(seen)


def looks_reported(seen: dict) -> bool:
    """SEV3, or a "User report" title: no fault."""
    return seen["severity"] == "SEV3" or seen["title"].lower().startswith(("user report", "report:"))


# ── rules over the git log (newest first) ──────────────────────────────────────────────────
def says_unchanged(commits: list) -> dict | None:
    """The commit whose body says the rest "otherwise behaves as before"."""
    return next((c for c in commits if "otherwise behaves as before" in c["message"]), None) or \
        (commits[0] if commits else None)


def third_oldest(commits: list) -> dict | None:
    return commits[-3] if len(commits) >= 3 else (commits[0] if commits else None)


class FieldCheater:
    """A policy made of one culprit rule, one commit rule, an optional fault-class table and an
    optional no-fault rule (see the module doc)."""

    def __init__(self, name: str, culprit=newest_deploy, commit=third_oldest, fault_class=None,
                 no_fault=None):
        self.name, self._culprit, self._commit = name, culprit, commit
        self._class, self._no_fault = fault_class, no_fault
        self.reset()

    def reset(self, seed=None, task_name=None) -> None:
        self._seen: dict = {"deploys": {}}
        self._asked: str | None = None
        self._queue: list = []
        self._picked = False
        self._quiet = False

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        if phase == 2:
            return self._phase2(observation)
        return self._phase1(observation)

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
            self._quiet = bool(self._no_fault and self._no_fault(seen))
            service = self._culprit(seen)
            fault = "none" if self._quiet else (self._class(seen) if self._class else None)
            belief = BeliefState(suspected_service=service, suspected_fault_class=fault,
                                 service_confidence=1.0, fault_confidence=1.0 if fault else 0.0,
                                 reasoning=self.name)
            self._queue = [make_action(ActionType.DECLARE_ROOT_CAUSE, root_cause=f"{fault} in {service}",
                                       service=service, fault_class=fault),
                           handoff_action(belief)]
        return self._queue.pop(0) if len(self._queue) > 1 else self._queue[0]

    def _phase2(self, obs: dict) -> dict:
        result = obs.get("action_result") or {}
        if self._no_fault and not self._queue and not self._picked and "title" not in self._seen:
            # started in phase 2 (pool B): the page is all there is to read
            self._seen.update(title=obs.get("incident_title", ""), severity=obs.get("severity", ""),
                              summary=obs.get("incident_summary", ""))
            self._quiet = self._no_fault(self._seen)
        if self._quiet:
            return make_action(ActionType.DECLARE_NO_CHANGE, reason=self.name)
        if isinstance(result.get("diff"), str) and result["diff"].strip():
            return make_action(ActionType.PROPOSE_PATCH, diff=reverse_diff(result["diff"]))
        if self._picked or "commits" not in result:
            if self._picked:
                return make_action(ActionType.DECLARE_NO_CHANGE, reason="nothing to revert")
            return make_action(ActionType.GET_GIT_LOG, n_commits=50)
        self._picked = True
        pick = self._commit([c for c in result["commits"] if isinstance(c, dict) and c.get("sha")])
        if pick is None:
            return make_action(ActionType.DECLARE_NO_CHANGE, reason="no commit")
        return make_action(ActionType.GET_FILE_DIFF, commit_sha=pick["sha"])


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

        def culprit(view: dict) -> str | None:
            rate = {svc: (hits[v] + prior) / (seen[v] + 1)
                    for svc, v in ((svc, mask(_newest(d).get("description", "")))
                                   for svc, d in view["deploys"].items())}
            return max(SERVICES, key=lambda svc: rate.get(svc, 0.0))

        def fault_class(view: dict) -> str:
            votes = titles.get(mask(view["title"]))
            return max(votes, key=votes.__getitem__) if votes else common

        place = places.most_common(1)[0][0] if places else 2

        def commit(commits: list) -> dict | None:
            oldest_first = commits[::-1]
            return oldest_first[min(place, len(oldest_first) - 1)] if oldest_first else None

        super().__init__("template learner", culprit, commit, fault_class,
                         no_fault=lambda view: fault_class(view) == "none")


def single_field_cheaters() -> list[FieldCheater]:
    """The single-field rules of issue 28, each as a policy."""
    return [FieldCheater("deploy-note rule", culprit=off_stock_note),
            FieldCheater("initial-release rule", culprit=initial_release),
            FieldCheater("summary-order rule", culprit=last_named),
            FieldCheater("commit-body rule", commit=says_unchanged),
            FieldCheater("commit-position rule", commit=third_oldest),
            FieldCheater("severity rule", no_fault=looks_reported)]


# ── playing a cheater on a suite ──────────────────────────────────────────────────────────
def pool_cells(suite: str, per_pool: int | None = None) -> dict[str, list[tuple[str, dict]]]:
    """``{pool: [(task, play kwargs), ...]}``: the classic pools' own tasks, or for the generated
    suite the train tasks in pools A-C' modes and the held-out tasks joint (pool D); the first
    ``per_pool`` tasks of each in a fixed shuffled order."""
    import random

    from srelib.env.pools import POOLS
    from srelib.env.scenarios import TASKS

    if suite == "classic":
        cells = {p: [(t, {"pool": p}) for t in pool.tasks if t in TASKS] for p, pool in POOLS.items()}
    elif suite == "generated":
        from srelib.env.taskgen import generated_suite

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
    from srelib.env.scenarios import get_scenario
    from srelib.validity import play

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
