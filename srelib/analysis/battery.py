"""The shallow-agent battery: agents that guess from the first screen must stay near chance.

Each row is a shallow agent that names a culprit service and a fault class from the reset
observation and at most one sweep of one kind of query (:mod:`.battery_evidence`):

* rules: do-nothing, first alert, most alerts, most severe alert, worst status, newest deploy,
  the status-board root (the deepest unhealthy service none of whose callees is unhealthy),
  PageRank over the call graph weighted by alerts, and a BARO-like ranker (robust z-scores of
  the last metric points against the history of one ``check_metrics`` sweep);
* learned: a multinomial logistic regression and a gradient-boosted model over the whole reset
  observation, and over the reset observation plus each single query (the row keeps the query
  that helps it most), fitted on train tasks.

A rule's fault class is fitted too: the train tasks' commonest class for what the rule read on
the service it names (its strongest alert rule, else its status). A row is measured on held-out
tasks (the generated suite, fitted on train) or leave-one-task-out (the classic ten). Its
``suite mean`` is the phase-1 score (``p1_only``) of an agent that reads the blamed service's
deploys, rolls it back and declares the row's answer; ``over`` is the share of tasks whose mean
over seeds exceeds :data:`TASK_BAR`.

A row passes when culprit and class accuracy are each at most chance + :data:`OVER_CHANCE`, the
suite mean at most :data:`MEAN_BAR` (:data:`NO_FAULT_BAR` on no-fault tasks) and ``over`` at
most :data:`OVER_SHARE`. ``srelib tasks audit`` prints the table beside the tell audit's, with
:func:`investigation_gap`. The suite build does not refuse on it yet: the current generator
fails most rows (bench/battery_before.md, docs/phase1_investigation.md), and the generator change
that would hold them is still open (issue 44). The learned rows need scikit-learn (the
``audit`` extra).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Sequence

from srelib.extras import require
from srelib.env.actions import DEPENDED_BY, DEPENDS_ON, SERVICES, ActionType
from srelib.env.types import Action
from srelib.analysis.battery_evidence import QUERIES, Sight, minutes, features, sight
from srelib.analysis.shortcuts import _ALERT_FAULT

OVER_CHANCE, MEAN_BAR, NO_FAULT_BAR, TASK_BAR, OVER_SHARE = 0.25, 0.20, 0.60, 0.35, 0.10
_SEVERITY = {"critical": 2.0, "warning": 1.0}
_STATUS = {"healthy": 0.0, "degraded": 1.0, "down": 2.0}
Scores = dict  # service -> score; the top ones are the guess (a tie of k counts 1/k)


# ── rules: scores over services from what the agent read ─────────────────────────────────
def _alert_list(s: Sight) -> list[dict]:
    return list(s.results.get("alerts", {}).get("alerts") or [])


def _first_alert(s: Sight) -> Scores:
    alerts = _alert_list(s)
    return {alerts[0]["source_service"]: 1.0} if alerts else {}


def _most_alerts(s: Sight) -> Scores:
    return dict(Counter(a["source_service"] for a in _alert_list(s)))


def _most_severe(s: Sight) -> Scores:
    out: Counter = Counter()
    for a in _alert_list(s):
        out[a["source_service"]] += 100.0 * (a["severity"] == "critical") + _SEVERITY[a["severity"]]
    return dict(out)


def _worst_status(s: Sight) -> Scores:
    return {k: _STATUS[v] for k, v in s.reset["service_statuses"].items() if v != "healthy"}


def _depth(service: str) -> int:
    """Calls from the gateway to ``service`` along the longest path (the gateway is 0)."""
    return max((_depth(c) + 1 for c in DEPENDED_BY[service]), default=0)


def _board_root(s: Sight) -> Scores:
    bad = {k for k, v in s.reset["service_statuses"].items() if v != "healthy"}
    roots = [x for x in bad if not any(c in bad for c in DEPENDS_ON[x])]
    return {x: float(_depth(x)) + 1.0 for x in roots}


def _newest_deploy(s: Sight) -> Scores:
    out = {}
    for svc in SERVICES:
        deploys = s.results.get(f"deploys:{svc}", {}).get("deploys") or []
        if deploys:
            out[svc] = minutes(deploys[-1]["timestamp"])
    return out


def _pagerank(s: Sight, damping: float = 0.85, rounds: int = 50) -> Scores:
    """PageRank on the call graph walked from callers to callees, every edge weighted by the
    callee's alerts (plus one), restarted in proportion to each service's alerts."""
    weight = Counter(a["source_service"] for a in _alert_list(s))
    if not weight:
        return {}
    total = sum(weight.values())
    restart = {x: weight[x] / total for x in SERVICES}
    rank = dict(restart)
    for _ in range(rounds):
        nxt = {x: (1 - damping) * restart[x] for x in SERVICES}
        for x in SERVICES:
            out = [(c, weight[c] + 1.0) for c in DEPENDS_ON[x]]
            if not out:
                nxt[x] += damping * rank[x]  # a sink keeps its mass
                continue
            norm = sum(w for _, w in out)
            for c, w in out:
                nxt[c] += damping * rank[x] * w / norm
        rank = nxt
    return rank


def _baro(s: Sight) -> Scores:
    """The largest robust z-score of a service's last five points against its first twenty."""
    out = {}
    for svc in SERVICES:
        points = s.results.get(f"metrics:{svc}", {}).get("metrics") or []
        if len(points) < 25:
            continue
        best = 0.0
        for m in ("cpu", "memory", "error_rate", "latency_p50", "latency_p95", "latency_p99", "rps"):
            series = [float(p[m]) for p in points]
            hist, last = sorted(series[:20]), sorted(series[-5:])
            med = hist[10]
            mad = sorted(abs(v - med) for v in hist)[10]
            best = max(best, abs(last[2] - med) / (1.4826 * mad + 1e-3 * (abs(med) + 1.0)))
        out[svc] = best
    return out


#: Rule rows: (name, the queries it reads, its scorer).
RULES: tuple[tuple[str, tuple[str, ...], Callable[[Sight], Scores]], ...] = (
    ("do-nothing", (), lambda s: {}),
    ("first alert", ("alerts",), _first_alert),
    ("most alerts", ("alerts",), _most_alerts),
    ("most severe alert", ("alerts",), _most_severe),
    ("worst status", (), _worst_status),
    ("newest deploy", tuple(f"deploys:{x}" for x in SERVICES), _newest_deploy),
    ("status-board root", (), _board_root),
    ("pagerank on alerts", ("alerts",), _pagerank),
    ("baro (one metrics sweep)", tuple(f"metrics:{x}" for x in SERVICES), _baro),
)


def top(scores: Scores) -> list[str]:
    """The services with the highest score (none when nothing scored)."""
    if not scores:
        return []
    best = max(scores.values())
    return [x for x in SERVICES if scores.get(x) == best]


def _signature(s: Sight, service: str | None) -> str:
    """What a rule read of the service it names: its strongest alert rule, else its status."""
    if service is None:
        return "-"
    rules = [a["rule_name"] for a in _alert_list(s) if a["source_service"] == service]
    if rules:
        return min(rules, key=lambda r: (list(_ALERT_FAULT).index(r) if r in _ALERT_FAULT else 99, r))
    return s.reset["service_statuses"].get(service, "-")


class ClassLookup:
    """The commonest train class per signature (the train's commonest class otherwise)."""

    def __init__(self, pairs: Sequence[tuple[str, str]]):
        by: dict = {}
        for key, cls in pairs:
            by.setdefault(key, Counter())[cls] += 1
        overall = Counter(cls for _, cls in pairs)
        self.default = min(overall, key=lambda c: (-overall[c], c)) if overall else "none"
        self.by = {k: min(c, key=lambda x: (-c[x], x)) for k, c in by.items()}

    def __call__(self, key: str) -> str:
        return self.by.get(key, self.default)


@dataclass
class Guess:
    """One row's answer on one sight: its top services and a class (None: names nothing)."""

    services: list
    fault_class: str | None


def rule_guesses(rule: Callable[[Sight], Scores], train: Sequence[Sight],
                 test: Sequence[Sight]) -> list[Guess]:
    """A rule's guesses on ``test``, its classes fitted on ``train``."""
    lookup = ClassLookup([(_signature(s, (top(rule(s)) or [None])[0]), s.fault_class) for s in train])
    out = []
    for s in test:
        named = top(rule(s))
        out.append(Guess(named, lookup(_signature(s, named[0])) if named else None))
    return out


# ── learned rows ─────────────────────────────────────────────────────────────────────────
MODELS = ("logistic", "boosted")


def _model(kind: str):
    """A fresh classifier of ``kind`` (:data:`MODELS`)."""
    if kind == "logistic":
        return require("sklearn.linear_model", "the shallow-agent battery").LogisticRegression(
            max_iter=400, C=0.5)
    ensemble = require("sklearn.ensemble", "the shallow-agent battery")
    return ensemble.HistGradientBoostingClassifier(max_iter=30, max_depth=3, learning_rate=0.2,
                                                   min_samples_leaf=3, random_state=0)


def _fit_predict(kind: str, x_train: list[dict], y_train: list[str], x_test: list[dict]) -> list[str]:
    """Fit model ``kind`` on ``x_train`` -> ``y_train``; its predictions on ``x_test``."""
    vectorizer = require("sklearn.feature_extraction", "the shallow-agent battery")
    scaling = require("sklearn.preprocessing", "the shallow-agent battery")
    if len(set(y_train)) < 2:
        return [y_train[0]] * len(x_test)
    vec = vectorizer.DictVectorizer(sparse=False)
    a = vec.fit_transform(x_train)
    b = vec.transform(x_test)
    scale = scaling.MaxAbsScaler().fit(a)
    model = _model(kind).fit(scale.transform(a), y_train)
    return [str(v) for v in model.predict(scale.transform(b))]


def learned_guesses(kind: str, query: str | None, train: Sequence[Sight],
                    test: Sequence[Sight]) -> list[Guess]:
    """Model ``kind``'s guesses on ``test`` from the reset observation (and ``query``),
    fitted on ``train``: one model for the culprit, one for the class."""
    xa = [features(s, query) for s in train]
    xb = [features(s, query) for s in test]
    services = _fit_predict(kind, xa, [s.culprit for s in train], xb)
    classes = _fit_predict(kind, xa, [s.fault_class for s in train], xb)
    return [Guess([svc], cls) for svc, cls in zip(services, classes)]


# ── measuring ────────────────────────────────────────────────────────────────────────────
def _accuracy(sights: Sequence[Sight], guesses: Sequence[Guess]) -> tuple[float, float]:
    culprit = sum((s.culprit in g.services) / len(g.services) for s, g in zip(sights, guesses)
                  if g.services) / len(sights)
    klass = sum(g.fault_class == s.fault_class for s, g in zip(sights, guesses)) / len(sights)
    return culprit, klass


def class_chance(train: Sequence[Sight], test: Sequence[Sight]) -> float:
    """The better of 1/classes and the test share of the train's commonest class."""
    counts = Counter(s.fault_class for s in train)
    common = min(counts, key=lambda c: (-counts[c], c))
    share = sum(s.fault_class == common for s in test) / len(test)
    return max(1.0 / len({s.fault_class for s in [*train, *test]}), share)


class GuessPolicy:
    """Plays a guess in phase 1: reads the blamed service's deploys (the evidence rule), rolls
    it back when it can, declares it (a no-fault guess declares and touches nothing)."""

    name = "battery_guess"

    def __init__(self, guess: Guess):
        self.guess = guess
        self.reset()

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        self._step = 0

    def __call__(self, observation: dict, phase: int, task_name: str) -> Action:
        from srelib.policies.base import make_action

        self._step += 1
        svc = self.guess.services[0] if self.guess.services else None
        cls = self.guess.fault_class or "none"
        if svc is None:
            return make_action(ActionType.DECLARE_ROOT_CAUSE, root_cause="unknown",
                               service="unknown", fault_class="none")
        plan = [make_action(ActionType.CHECK_DEPLOY_HISTORY, svc)]
        if cls != "none" and f"{ActionType.ROLLBACK_DEPLOY.value}:{svc}" in observation.get(
                "valid_actions", ()):
            plan.append(make_action(ActionType.ROLLBACK_DEPLOY, svc))
        plan.append(make_action(ActionType.DECLARE_ROOT_CAUSE, root_cause=f"{cls.replace('_', ' ')} in {svc}",
                                service=svc, fault_class=cls))
        if self._step == 1:
            self._plan = plan
        return self._plan[min(self._step - 1, len(self._plan) - 1)]


_PLAYED: dict = {}  # (task, seed, service, class) -> phase-1 score; a guess's play is fixed


def play_guess(s: Sight, g: Guess) -> float:
    """The ``p1_only`` final score of :class:`GuessPolicy` playing ``g`` on ``s``'s episode."""
    from srelib.analysis.validity import play

    key = (s.task, s.seed, g.services[0] if g.services else None, g.fault_class)
    if key not in _PLAYED:
        _PLAYED[key] = play(GuessPolicy(g), s.task, s.seed, mode="p1_only")["final"]
    return _PLAYED[key]


def measure(name: str, sights: Sequence[Sight], guesses: Sequence[Guess], chance_class: float,
            play: bool = True) -> dict:
    """A battery row: accuracy, chance, suite mean, over-bar share and whether it passes."""
    culprit, klass = _accuracy(sights, guesses)
    row = {"row": name, "n": len(sights), "culprit": culprit, "culprit_chance": 1.0 / len(SERVICES),
           "class": klass, "class_chance": chance_class, "mean": None, "no_fault_mean": None,
           "over": None}
    if play:
        per_task: dict = {}
        for s, g in zip(sights, guesses):
            per_task.setdefault(s.task, []).append((play_guess(s, g), s.needs_fix))
        means = {t: sum(v for v, _ in xs) / len(xs) for t, xs in per_task.items()}
        row["mean"] = sum(means.values()) / len(means)
        row["over"] = sum(m > TASK_BAR for m in means.values()) / len(means)
        nf = [means[t] for t, xs in per_task.items() if not xs[0][1]]
        row["no_fault_mean"] = sum(nf) / len(nf) if nf else None
    row["passes"] = not breaches(row)
    return row


def breaches(row: dict) -> list[str]:
    """The bars a battery row breaks (empty: it passes)."""
    out = []
    if row["culprit"] > row["culprit_chance"] + OVER_CHANCE + 1e-9:
        out.append(f"culprit {row['culprit']:.2f} > {row['culprit_chance'] + OVER_CHANCE:.2f}")
    if row["class"] > row["class_chance"] + OVER_CHANCE + 1e-9:
        out.append(f"class {row['class']:.2f} > {row['class_chance'] + OVER_CHANCE:.2f}")
    if row["mean"] is not None and row["mean"] > MEAN_BAR + 1e-9:
        out.append(f"suite mean {row['mean']:.3f} > {MEAN_BAR}")
    if row["over"] is not None and row["over"] > OVER_SHARE + 1e-9:
        out.append(f"{row['over']:.0%} of tasks over {TASK_BAR}")
    if row["no_fault_mean"] is not None and row["no_fault_mean"] > NO_FAULT_BAR + 1e-9:
        out.append(f"no-fault mean {row['no_fault_mean']:.3f} > {NO_FAULT_BAR}")
    return out


def _folds(sights: Sequence[Sight], split: dict | None) -> list[tuple[list, list]]:
    """``[(train, test)]``: the split given (task -> "train"/"heldout"), else leave one task out."""
    if split is not None:
        return [([s for s in sights if split[s.task] == "train"],
                 [s for s in sights if split[s.task] == "heldout"])]
    tasks = sorted({s.task for s in sights})
    return [([s for s in sights if s.task != t], [s for s in sights if s.task == t]) for t in tasks]


def _pooled(folds, make: Callable[[list, list], list[Guess]]) -> tuple[list, list]:
    tests, guesses = [], []
    for train, test in folds:
        tests += test
        guesses += make(train, test)
    return tests, guesses


def battery(sights: Sequence[Sight], split: dict | None = None, play: bool = True,
            queries: Sequence[str] = QUERIES, models: Sequence[str] = MODELS) -> list[dict]:
    """Every battery row over ``sights``: fitted on the train tasks of ``split`` and measured on
    its held-out ones, or leave-one-task-out when ``split`` is None (see the module doc). The
    "+ one query" rows keep, per model, the query with the best culprit accuracy (reported in
    the row's name); its class accuracy is the best over queries too.

    Raises:
        ValueError: no sight, or a split with no train or no held-out task.
    """
    folds = _folds(sights, split)
    if not sights or any(not a or not b for a, b in folds):
        raise ValueError("the battery needs sights of train and held-out tasks")
    chance = sum(class_chance(a, b) * len(b) for a, b in folds) / sum(len(b) for _, b in folds)
    rows = []
    for name, _, rule in RULES:
        tests, guesses = _pooled(folds, lambda a, b, r=rule: rule_guesses(r, a, b))
        rows.append(measure(name, tests, guesses, chance, play))
    for kind in models:
        tests, guesses = _pooled(folds, lambda a, b, k=kind: learned_guesses(k, None, a, b))
        rows.append(measure(f"{kind} (reset)", tests, guesses, chance, play))
        best = None
        for query in queries:
            tests, guesses = _pooled(folds, lambda a, b, k=kind, q=query: learned_guesses(k, q, a, b))
            culprit, klass = _accuracy(tests, guesses)
            if best is None or (culprit, klass) > best[0]:
                best = ((culprit, klass), query, tests, guesses)
            if klass > best[0][1]:
                best = ((best[0][0], klass), best[1], best[2],
                        [Guess(g.services, h.fault_class) for g, h in zip(best[3], guesses)])
        if best is not None:
            rows.append(measure(f"{kind} (reset + {best[1]})", best[2], best[3], chance, play))
    return rows


# ── the suites ───────────────────────────────────────────────────────────────────────────
CLASSIC_SEEDS = (0, 1, 2, 3, 4)


def generated_sights(stride: int = 2, seeds: Sequence[int] = (0,)) -> tuple[list[Sight], dict]:
    """Sights of every ``stride``-th task of each split of the generated suite, and the split."""
    from srelib.env.tasks.taskgen.suite import generated_suite

    tasks = generated_suite().tasks
    split = {t: info.split for t, info in tasks.items()}
    chosen = [t for part in ("train", "heldout") for t in
              [t for t in sorted(tasks) if split[t] == part][::stride]]
    return [sight(t, seed) for t in chosen for seed in seeds], split


def classic_sights(seeds: Sequence[int] = CLASSIC_SEEDS) -> list[Sight]:
    """Sights of the ten classic tasks on ``seeds``."""
    from srelib.env.simulation.scenarios import TASKS

    return [sight(t, seed) for t in TASKS for seed in seeds]


def run(suite: str = "generated", stride: int = 2, play: bool = True, **options) -> list[dict]:
    """The battery's rows on ``suite`` ("generated": every ``stride``-th task of each split,
    train -> held-out; "classic": leave-one-task-out over :data:`CLASSIC_SEEDS`).

    Raises:
        ValueError: an unknown suite.
    """
    if suite == "generated":
        sights, split = generated_sights(stride)
        return battery(sights, split, play, **options)
    if suite == "classic":
        return battery(classic_sights(), None, play, **options)
    raise ValueError(f"unknown suite {suite!r}; valid suites: 'generated', 'classic'")


def failures(rows: Sequence[dict]) -> list[str]:
    """``"row: breach"`` for every bar a row breaks."""
    return [f"{r['row']}: {b}" for r in rows for b in breaches(r)]


def best_culprit(rows: Sequence[dict]) -> float:
    """The best culprit accuracy over the rows."""
    return max(r["culprit"] for r in rows)


def format_battery(rows: Sequence[dict]) -> str:
    """The rows as a markdown table."""
    from srelib.analysis.stats import markdown_table

    def f(v, pct=False):
        return "-" if v is None else (f"{v:.0%}" if pct else f"{v:.3f}")

    body = [[r["row"], r["n"], f"{r['culprit']:.2f} / {r['culprit_chance'] + OVER_CHANCE:.2f}",
             f"{r['class']:.2f} / {r['class_chance'] + OVER_CHANCE:.2f}", f(r["mean"]),
             f(r["no_fault_mean"]), f(r["over"], True), "pass" if r["passes"] else "FAIL"]
            for r in rows]
    return markdown_table(["shallow agent", "episodes", "culprit / bar", "class / bar",
                           "suite mean", "no-fault mean", "tasks over 0.35", "verdict"], body)


def investigation_gap(suite: str, rows: Sequence[dict], stride: int = 2) -> dict:
    """The investigator against the battery, on the battery's test tasks (held-out, or all
    ten classic ones), ``p1_only``.

    Args:
        suite: ``"generated"`` or ``"classic"``, as for :func:`run`.
        rows: The battery's rows on that suite (:func:`run`).
        stride: The generated suite's stride, as for :func:`run`.

    Returns:
        ``{"investigator": culprit accuracy, "class": class accuracy, "mean": suite mean,
        "best_row": the best row's culprit accuracy, "gap": investigator - best_row}``.
    """
    from srelib.env.core import IncidentEnv
    from srelib.policies.scripted.investigator import InvestigatorPolicy
    from srelib.runners.rollout import run_episode

    if suite == "generated":
        sights, split = generated_sights(stride)
        tests = [s for s in sights if split[s.task] == "heldout"]
    else:
        tests = classic_sights()
    hits = klass = total = 0.0
    for s in tests:
        episode = run_episode(IncidentEnv(), InvestigatorPolicy(), s.task, None, "p1_only", seed=s.seed)
        declared = next((r.get("effect") or {} for r in reversed(episode.steps)
                         if (r.get("action") or {}).get("action_type") == "declare_root_cause"
                         and r.get("valid")), {})
        hits += declared.get("service") == s.culprit
        klass += declared.get("fault_class") == s.fault_class
        total += (episode.score or {}).get("final") or 0.0
    n = len(tests)
    best = best_culprit(rows)
    return {"investigator": hits / n, "class": klass / n, "mean": total / n, "best_row": best,
            "gap": hits / n - best}
