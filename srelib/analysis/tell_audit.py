"""The tell audit: can one surface field, read alone, give the answer away?

For every task the audit reads what an agent sees at the page (:func:`srelib.analysis.shortcuts.gather`:
title, summary, severity, alerts, every service's deploy history and logs, the git log) and
cuts it into fields. Each field has a kind: the ``exact`` value, a ``masked`` template (service
and package names and digits replaced) or a ``position`` (an order or a count). A field
describes either the task (title, severity, ...), each service (its newest deploy note, where
the summary names it, ...) or each commit (its subject, its place in the log, ...).

A predictor is fitted on the train tasks for every (field, target) pair and scored on the
held-out tasks:

* task fields -> ``fault_class`` and ``no_fault``: the majority answer per value (the train
  majority for a value never seen). ``no_fault`` is scored by balanced accuracy (the mean of
  the hit rates on fault and no-fault tasks) so that "always a fault" scores chance, 0.5;
* service fields -> ``service`` and commit fields -> ``bad_commit``: the rate at which a
  value marked the answer in train, smoothed towards the prior (one pseudo-observation), so a
  value never seen scores the prior: a field whose unusual values mark the culprit (an
  off-list deploy note) is caught too. The candidate with the highest rate is predicted; a
  tie among k candidates counts 1/k when the answer is among them.

Commit fields include each commit's *shape*: the files it touches, whether it touches a module
with its own test, the lines it adds and removes (in powers of two), its subject's template with
the repository's names masked, and where it sits among the commits that touch a module with its
test, and its *date*: the time of day (two-hour buckets), the gaps to the commits before and
after it (log2 minutes), its day counted back from the newest commit's, its rank within its day
and how many commits share that day. :func:`learned_commit_rows` fits a model (scikit-learn's
gradient-boosted trees) over all of them at once, with how often train commits share the
template, so a tell that only a combination of shapes carries is caught too.

Chance is 1/7 for the service, the mean of 1/commits for the bad commit, 0.5 for no-fault and,
for the fault class, the better of 1/classes and the held-out share of the train's commonest
class. A row passes when its held-out rate is at most :data:`MAX_RATE` and at most
:data:`MAX_OVER_CHANCE` above chance.

The generated suite is audited train -> held-out as split. The classic suite has ten tasks,
two of them held out: a held-out rate over two tasks is 0, 50 or 100% and says nothing, so
the classic audit is leave-one-task-out (fit on nine, predict the tenth, for each of the ten),
over five seeds per task.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from srelib.env.actions import SERVICES

MAX_RATE, MAX_OVER_CHANCE = 0.60, 0.25
TARGETS = ("service", "fault_class", "no_fault", "bad_commit")
#: Episodes per task: one for the generated suite (hundreds of tasks), five for the ten classic
#: ones (what varies by seed, such as other services' deploys, is then sampled fairly).
SEEDS = (0,)
CLASSIC_SEEDS = (0, 1, 2, 3, 4)

_PACKAGES = ("gateway", "cachesvc", "dbsvc", "mq")
_NAMES = re.compile(r"\b(" + "|".join(sorted({*SERVICES, *(s.replace("_", " ") for s in SERVICES),
                                                *_PACKAGES}, key=len, reverse=True)) + r")\b",
                    re.IGNORECASE)
_DIGITS = re.compile(r"\d+")


def mask(text: str) -> str:
    """``text`` with service and package names as ``<svc>`` and digit runs as ``#``."""
    return _DIGITS.sub("#", _NAMES.sub("<svc>", text))


def _named_order(text: str) -> list[str]:
    """The services ``text`` names, in order of first mention."""
    low, hits = text.lower(), []
    for s in SERVICES:
        m = re.search(rf"\b{s.replace('_', '[ _]')}\b", low)
        if m:
            hits.append((m.start(), s))
    return [s for _, s in sorted(hits)]


def _rank(order: list, item) -> str:
    """Where ``item`` sits in ``order``: first, last, middle, only or absent."""
    if item not in order:
        return "absent"
    if len(order) == 1:
        return "only"
    k = order.index(item)
    return "first" if k == 0 else "last" if k == len(order) - 1 else "middle"


@dataclass
class Surface:
    """One task at the page, cut into fields, with its answers."""

    task: str
    service: str
    fault_class: str
    needs_fix: bool
    bad_commit: str | None
    task_fields: dict = field(default_factory=dict)  # name -> value
    service_fields: dict = field(default_factory=dict)  # name -> {service: value}
    commit_fields: dict = field(default_factory=dict)  # name -> [value per commit, oldest first]
    commits: list = field(default_factory=list)  # shas, oldest first


#: (field name, kind, target group) of every field the audit cuts; the group says what a field
#: describes: "task", "service" or "commit".
FIELDS = (
    ("title", "exact", "task"), ("title", "masked", "task"),
    ("summary", "exact", "task"), ("summary", "masked", "task"),
    ("severity", "exact", "task"), ("alert rules in order", "position", "task"),
    ("first alert rule", "exact", "task"), ("newest deploy note", "masked", "task"),
    ("deploy note (newest)", "exact", "service"), ("deploy note (newest)", "masked", "service"),
    ("deploy note (oldest)", "masked", "service"), ("deploy notes", "masked", "service"),
    ("deploy count", "position", "service"), ("deploy recency rank", "position", "service"),
    ("newest deploy age (15 min)", "position", "service"),
    ("oldest deploy age (days)", "position", "service"),
    ("place in summary", "position", "service"), ("place in title", "position", "service"),
    ("place in alerts", "position", "service"), ("deploy log lines", "masked", "service"),
    ("commit subject", "exact", "commit"), ("commit subject", "masked", "commit"),
    ("commit body", "masked", "commit"), ("commit files", "masked", "commit"),
    ("commit author", "exact", "commit"), ("place from oldest", "position", "commit"),
    ("place from newest", "position", "commit"),
    ("files touched", "position", "commit"), ("test with its module", "position", "commit"),
    ("lines added", "position", "commit"), ("lines removed", "position", "commit"),
    ("message template", "masked", "commit"),
    ("module-and-test rank from newest", "position", "commit"),
    ("time of day (2 h)", "position", "commit"), ("gap to previous (log2 min)", "position", "commit"),
    ("gap to next (log2 min)", "position", "commit"), ("day from newest", "position", "commit"),
    ("rank in its day", "position", "commit"), ("commits that day", "position", "commit"),
)
#: The date fields (:func:`_date_fields`).
DATE_FIELDS = ("time of day (2 h)", "gap to previous (log2 min)", "gap to next (log2 min)",
               "day from newest", "rank in its day", "commits that day")


def _key(name: str, kind: str) -> str:
    return f"{name} [{kind}]"


def surface(task: str, seed: int = 0) -> Surface:
    """The fields of ``task`` as one episode (``seed``) shows them at the page."""
    from srelib.env.tasks.lookup import get_scenario
    from srelib.analysis.shortcuts import gather
    from srelib.env.tasks.surface import EpisodeSurface, suite_key

    sc, ev = get_scenario(task), gather(task, seed)
    bad = EpisodeSurface(suite_key(), seed, sc.name).sha(sc.bad_commit) if sc.bad_commit else None
    s = Surface(task, sc.root_cause_service, sc.fault_class, sc.needs_fix, bad)  # bad as shown
    minutes = {svc: [_minutes(d["timestamp"]) for d in ds] for svc, ds in ev.deploys.items()}
    page = max(m for ms in minutes.values() for m in ms) if any(minutes.values()) else 0
    newest = {svc: (ds[-1]["description"] if ds else "") for svc, ds in ev.deploys.items()}
    alert_order = list(dict.fromkeys(a["source_service"] for a in ev.alerts))
    recency = sorted((svc for svc in SERVICES if minutes[svc]), key=lambda v: -minutes[v][-1])
    t = {
        _key("title", "exact"): ev.title, _key("title", "masked"): mask(ev.title),
        _key("summary", "exact"): ev.summary, _key("summary", "masked"): mask(ev.summary),
        _key("severity", "exact"): sc.severity,
        _key("alert rules in order", "position"): " ".join(a["rule_name"] for a in ev.alerts),
        _key("first alert rule", "exact"): ev.alerts[0]["rule_name"] if ev.alerts else "",
        _key("newest deploy note", "masked"): mask(newest[recency[0]]) if recency else "",
    }
    summary_order, title_order = _named_order(ev.summary), _named_order(ev.title)
    per = {
        _key("deploy note (newest)", "exact"): newest,
        _key("deploy note (newest)", "masked"): {v: mask(n) for v, n in newest.items()},
        _key("deploy note (oldest)", "masked"): {
            v: mask(ds[0]["description"]) if ds else "" for v, ds in ev.deploys.items()},
        _key("deploy notes", "masked"): {
            v: " | ".join(mask(d["description"]) for d in ds) for v, ds in ev.deploys.items()},
        _key("deploy count", "position"): {v: str(len(ds)) for v, ds in ev.deploys.items()},
        _key("deploy recency rank", "position"): {
            v: str(recency.index(v)) if v in recency else "-" for v in SERVICES},
        _key("newest deploy age (15 min)", "position"): {
            v: str((page - ms[-1]) // 15) if ms else "-" for v, ms in minutes.items()},
        _key("oldest deploy age (days)", "position"): {
            v: str((page - ms[0]) // 1440) if ms else "-" for v, ms in minutes.items()},
        _key("place in summary", "position"): {v: _rank(summary_order, v) for v in SERVICES},
        _key("place in title", "position"): {v: _rank(title_order, v) for v in SERVICES},
        # order only: whether a service alerts at all is its metrics speaking, not a template
        _key("place in alerts", "position"): {
            v: _rank(alert_order, v) if len(alert_order) > 1 else "-" for v in SERVICES},
        _key("deploy log lines", "masked"): {
            v: " | ".join(sorted({mask(line["message"]) for line in ev.logs.get(v, ())
                                  if "deploy" in line["message"].lower()})) for v in SERVICES},
    }
    commits = list(reversed(ev.commits))  # oldest first
    n = len(commits)
    subjects = [c["message"].split("\n", 1)[0] for c in commits]
    bodies = [c["message"].split("\n", 1)[1].strip() if "\n" in c["message"] else "" for c in commits]
    com = {
        _key("commit subject", "exact"): subjects,
        _key("commit subject", "masked"): [mask(x) for x in subjects],
        _key("commit body", "masked"): [mask(x) for x in bodies],
        _key("commit files", "masked"): [mask(" ".join(sorted(c["files"]))) for c in commits],
        _key("commit author", "exact"): [c["author"] for c in commits],
        _key("place from oldest", "position"): [str(k) for k in range(n)],
        _key("place from newest", "position"): [str(n - 1 - k) for k in range(n)],
        **_shape_fields(commits),
    }
    s.task_fields, s.service_fields, s.commit_fields = t, per, com
    s.commits = [c["sha"] for c in commits]
    return s


def commit_shape(commit: dict) -> dict:
    """A commit's shape: ``files`` touched, ``with_test`` (a module and its own test),
    ``added`` and ``removed`` lines of its diff."""
    files = list(commit["files"])
    modules = {f.rsplit("/", 1)[-1][:-3] for f in files if f.endswith(".py") and not f.startswith("tests/")}
    tested = {f.rsplit("/", 1)[-1][5:-3] for f in files if f.startswith("tests/test_")}
    lines = commit.get("diff", "").splitlines()
    added = sum(1 for x in lines if x.startswith("+") and not x.startswith("+++"))
    removed = sum(1 for x in lines if x.startswith("-") and not x.startswith("---"))
    return {"files": len(files), "with_test": bool(modules & tested), "added": added,
            "removed": removed}


def mask_names(text: str, names) -> str:
    """``text`` :func:`mask`-ed, with each of ``names`` (and its words) as ``<name>``."""
    words = sorted({w for name in names for w in (name, *name.split("_"), name.replace("_", " "))
                    if len(w) > 2}, key=len, reverse=True)
    if words:
        text = re.sub(r"\b(" + "|".join(map(re.escape, words)) + r")\b", "<name>", text)
    return mask(text)


def _shape_fields(commits: list[dict]) -> dict:
    """The shape fields of ``commits`` (oldest first), keyed as :data:`FIELDS` names them."""
    shapes = [commit_shape(c) for c in commits]
    names = {part[:-3] if part.endswith(".py") else part for c in commits for f in c["files"]
             for part in f.split("/")}
    names |= {part[5:] for part in names if part.startswith("test_")}
    ranked = [k for k in range(len(commits) - 1, -1, -1) if shapes[k]["with_test"]]
    return {
        _key("files touched", "position"): [str(x["files"]) for x in shapes],
        _key("test with its module", "position"): [str(x["with_test"]) for x in shapes],
        _key("lines added", "position"): [str(x["added"].bit_length()) for x in shapes],
        _key("lines removed", "position"): [str(x["removed"].bit_length()) for x in shapes],
        _key("message template", "masked"): [mask_names(c["message"].split("\n", 1)[0], names)
                                              for c in commits],
        _key("module-and-test rank from newest", "position"): [
            str(ranked.index(k)) if k in ranked else "-" for k in range(len(commits))],
        **_date_fields(commits),
    }


def _date_fields(commits: list[dict]) -> dict:
    """The date fields of ``commits`` (oldest first; "-" for all of them where a commit has no
    ``date``): see the module doc."""
    n = len(commits)
    if not all(c.get("date") for c in commits):
        return {_key(name, "position"): ["-"] * n for name in DATE_FIELDS}
    minutes = [_minutes(c["date"]) for c in commits]
    days = [m // 1440 for m in minutes]
    gaps = [minutes[k + 1] - minutes[k] for k in range(n - 1)]
    return {
        _key("time of day (2 h)", "position"): [str(m % 1440 // 120) for m in minutes],
        _key("gap to previous (log2 min)", "position"): ["-"] + [str(max(g, 0).bit_length()) for g in gaps],
        _key("gap to next (log2 min)", "position"): [str(max(g, 0).bit_length()) for g in gaps] + ["-"],
        _key("day from newest", "position"): [str(days[-1] - d) for d in days],
        _key("rank in its day", "position"): [str(days[:k].count(d)) for k, d in enumerate(days)],
        _key("commits that day", "position"): [str(days.count(d)) for d in days],
    }


def _minutes(timestamp: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() // 60)


# ───────────────────────────────────────────────────────────────────── predictors
def _truth(s: Surface, target: str):
    if target == "fault_class":
        return s.fault_class
    if target == "no_fault":
        return not s.needs_fix
    return s.service if target == "service" else s.bad_commit


def _majority_hits(train: list[Surface], test: list[Surface], key: str, target: str) -> list[float]:
    """Majority answer per value of a task field, fitted on ``train``: a hit per ``test`` task."""
    by_value: dict = defaultdict(Counter)
    for s in train:
        by_value[s.task_fields[key]][_truth(s, target)] += 1
    overall = Counter(_truth(s, target) for s in train)

    def guess(s: Surface):
        votes = by_value.get(s.task_fields[key]) or overall
        return max(sorted(votes, key=str), key=votes.__getitem__)

    return [float(guess(s) == _truth(s, target)) for s in test]


def _candidates(s: Surface, key: str, target: str) -> list[tuple[str, str]]:
    if target == "service":
        return [(v, s.service_fields[key][v]) for v in SERVICES]
    return list(zip(s.commits, s.commit_fields[key]))


def _answer_is(s: Surface, target: str, cand: str) -> bool:
    truth = _truth(s, target)
    return cand == truth if target == "service" else truth.startswith(cand[:7])


def _marked_hits(train: list[Surface], test: list[Surface], key: str, target: str) -> list[float]:
    """Per-candidate fields (services or commits): the smoothed rate at which a value marked the
    answer in ``train``; the candidate with the highest rate is predicted (see the module doc)."""
    hits, seen = Counter(), Counter()
    for s in train:
        for cand, value in _candidates(s, key, target):
            seen[value] += 1
            hits[value] += _answer_is(s, target, cand)
    prior = sum(hits.values()) / sum(seen.values()) if seen else 0.0
    out = []
    for s in test:
        rates = {c: (hits[v] + prior) / (seen[v] + 1) for c, v in _candidates(s, key, target)}
        top = [c for c, r in rates.items() if r == max(rates.values())]
        out.append(sum(_answer_is(s, target, c) for c in top) / len(top))
    return out


def _chance(train: list[Surface], test: list[Surface], target: str) -> float:
    if target == "service":
        return 1 / len(SERVICES)
    if target == "no_fault":
        return 0.5
    if target == "bad_commit":
        return sum(1 / len(s.commits) for s in test) / len(test)
    common = Counter(s.fault_class for s in train).most_common(1)[0][0]
    classes = {s.fault_class for s in train + test}
    return max(1 / len(classes), sum(s.fault_class == common for s in test) / len(test))


def _pairs() -> list[tuple[str, str, str]]:
    """``(field key, target, group)`` of every predictor the audit fits."""
    targets = {"task": ("fault_class", "no_fault"), "service": ("service",), "commit": ("bad_commit",)}
    return [(_key(name, kind), target, group) for name, kind, group in FIELDS
            for target in targets[group]]


def audit_surfaces(train: list[Surface], test: list[Surface] | None = None) -> list[dict]:
    """One row per (field, target): held-out ``rate``, ``chance``, ``bar`` and ``passes``.
    Without ``test`` the audit is leave-one-task-out over ``train``."""
    if test is None:
        names = list(dict.fromkeys(s.task for s in train))
        folds = [([s for s in train if s.task != n], [s for s in train if s.task == n]) for n in names]
    else:
        folds = [(train, test)]
    if len(folds) < (1 if test is not None else 2) or not all(tr and te for tr, te in folds):
        raise ValueError("the audit needs train and held-out tasks (leave-one-out: two tasks or more)")
    everything = train + (test or [])
    rows = []
    for key, target, group in _pairs():
        pooled, truths = [], []
        for tr, te in folds:
            tr = [s for s in tr if _truth(s, target) is not None]
            te = [s for s in te if _truth(s, target) is not None]
            if tr and te:
                fit = _majority_hits if group == "task" else _marked_hits
                pooled += fit(tr, te, key, target)
                truths += [_truth(s, target) for s in te]
        if not pooled:
            continue
        if target == "no_fault":  # balanced accuracy: "always a fault" scores 0.5
            kinds = [[h for h, t in zip(pooled, truths) if t is flag] for flag in (True, False)]
            trained = {_truth(s, target) for tr, _ in folds for s in tr}
            if not all(kinds) or len(trained) < 2:
                continue  # no-fault and fault tasks on both sides, or nothing to learn or measure
            rate = sum(sum(k) / len(k) for k in kinds) / 2
        else:
            rate = sum(pooled) / len(pooled)
        held = [s for s in (test if test is not None else train) if _truth(s, target) is not None]
        chance = _chance([s for s in everything if s not in held] or held, held, target)
        bar = min(MAX_RATE, chance + MAX_OVER_CHANCE)
        rows.append({"field": key, "target": target, "rate": round(rate, 3),
                     "chance": round(chance, 3), "bar": round(bar, 3), "passes": rate <= bar + 1e-9})
    return rows


# ─────────────────────────────────────────────────────────────── the learned model
#: The commit fields the learned model reads, as numbers (the template by its train count).
_NUMERIC = ("files touched", "test with its module", "lines added", "lines removed",
            "place from oldest", "place from newest", *DATE_FIELDS)


def _commit_rows(s: Surface, templates: Counter) -> list[list[float]]:
    """One feature vector per commit of ``s`` (oldest first)."""
    f = s.commit_fields
    n = len(s.commits)
    rank = f[_key("module-and-test rank from newest", "position")]
    out = []
    for k in range(n):
        row = [float(f[_key(name, "position")][k] == "True") if name == "test with its module"
               else _number(f[_key(name, "position")][k]) for name in _NUMERIC]
        row += [float(n), _number(rank[k]),
                float(templates[f[_key("message template", "masked")][k]])]
        out.append(row)
    return out


def _number(value: str) -> float:
    """A position field's value as a number (-1 for "-", none)."""
    return -1.0 if value == "-" else float(value)


def _learned_hits(ensemble, train: list[Surface], test: list[Surface]) -> list[float]:
    """Fit the model on ``train``'s commits; a hit per ``test`` task (1/k for a k-way tie)."""
    templates = Counter(t for s in train for t in s.commit_fields[_key("message template", "masked")])
    x, y = [], []
    for s in train:
        x += _commit_rows(s, templates)
        y += [int(s.bad_commit.startswith(sha[:7])) for sha in s.commits]
    model = ensemble.HistGradientBoostingClassifier(max_iter=150, random_state=0).fit(x, y)
    hits = []
    for s in test:
        scores = list(model.predict_proba(_commit_rows(s, templates))[:, 1])
        top = [sha for sha, p in zip(s.commits, scores) if p == max(scores)]
        hits.append(sum(s.bad_commit.startswith(sha[:7]) for sha in top) / len(top))
    return hits


def learned_commit_rows(train: list[Surface], test: list[Surface] | None = None) -> list[dict]:
    """The learned model's audit row: gradient-boosted trees (scikit-learn) fitted on the
    commits of ``train``'s fault tasks (bad or not) over every commit-shape field, predicting
    the held-out tasks' bad commit as the one it scores highest. Without ``test`` it is
    leave-one-task-out over ``train``, as :func:`audit_surfaces` is. Its ``rate``,
    ``chance``, ``bar`` and ``passes`` are as :func:`audit_surfaces` reports them.

    Raises:
        ValueError: no fault task on one side (or, leave-one-out, fewer than two tasks).
        srelib.extras.MissingExtra: scikit-learn is not installed (``pip install 'srelib[audit]'``).
    """
    from srelib.extras import require

    ensemble = require("sklearn.ensemble", "the tell audit's learned model")
    train = [s for s in train if s.bad_commit]
    if test is None:
        names = list(dict.fromkeys(s.task for s in train))
        folds = [([s for s in train if s.task != n], [s for s in train if s.task == n]) for n in names]
        held = train
    else:
        held = [s for s in test if s.bad_commit]
        folds = [(train, held)]
    if len(folds) < (1 if test is not None else 2) or not all(tr and te for tr, te in folds):
        raise ValueError("the learned model needs fault tasks on both sides")
    hits = [h for tr, te in folds for h in _learned_hits(ensemble, tr, te)]
    rate = sum(hits) / len(hits)
    chance = _chance(train, held, "bad_commit")
    bar = min(MAX_RATE, chance + MAX_OVER_CHANCE)
    return [{"field": "commit shape [learned]", "target": "bad_commit", "rate": round(rate, 3),
             "chance": round(chance, 3), "bar": round(bar, 3), "passes": rate <= bar + 1e-9}]


# ───────────────────────────────────────────────────────────────────── the suites
def audit_tasks(train: list[str], heldout: list[str], seeds=SEEDS) -> list[dict]:
    """The audit rows of a suite split into ``train`` and ``heldout`` task ids, the learned
    commit model's (:func:`learned_commit_rows`) among them."""
    fit = [surface(t, seed) for t in train for seed in seeds]
    held = [surface(t, seed) for t in heldout for seed in seeds]
    rows = audit_surfaces(fit, held)
    if any(s.bad_commit for s in fit) and any(s.bad_commit for s in held):
        rows += learned_commit_rows(fit, held)
    return rows


def classic_surfaces(seeds=CLASSIC_SEEDS) -> list[Surface]:
    """The ten classic tasks' surfaces, one per task and seed."""
    from srelib.env.simulation.scenarios import TASKS

    return [surface(task, seed) for task in TASKS for seed in seeds]


def audit(suite: str = "generated", seeds=None) -> list[dict]:
    """The audit rows of ``suite`` (``"generated"``: train -> held-out, :data:`SEEDS`;
    ``"classic"``: leave-one-task-out, :data:`CLASSIC_SEEDS`), the learned commit model's
    (:func:`learned_commit_rows`) among them."""
    if suite == "generated":
        from srelib.env.tasks.taskgen import generated_suite

        split: dict = {"train": [], "heldout": []}
        for task, info in generated_suite().tasks.items():
            split[info.split].append(task)
        return audit_tasks(split["train"], split["heldout"], seeds or SEEDS)
    if suite == "classic":
        surfaces = classic_surfaces(seeds or CLASSIC_SEEDS)
        return audit_surfaces(surfaces) + learned_commit_rows(surfaces)
    raise ValueError(f"unknown suite {suite!r}; valid suites: 'generated', 'classic'")


def failures(rows: list[dict]) -> list[str]:
    """One line per row over its bar (empty: the audit passes)."""
    return [f"{r['field']} -> {r['target']}: {r['rate']:.2f} held-out (bar {r['bar']:.2f})"
            for r in rows if not r["passes"]]


def format_audit(rows: list[dict], only_failures: bool = False) -> str:
    """The audit as a Markdown table, the rows furthest above chance first."""
    shown = sorted((r for r in rows if not (only_failures and r["passes"])),
                   key=lambda r: -(r["rate"] - r["chance"]))
    lines = ["| field | predicts | held-out rate | chance | bar | |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['field']} | {r['target'].replace('_', ' ')} | {r['rate']:.2f} | "
              f"{r['chance']:.2f} | {r['bar']:.2f} | {'ok' if r['passes'] else 'TELL'} |"
              for r in shown]
    return "\n".join(lines)
