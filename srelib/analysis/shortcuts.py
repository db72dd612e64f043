"""Single-field shortcut rules and how often each one finds the answer.

A shortcut rule looks at one field of what an agent can see (the newest deploy, the first
alert, the incident summary, a commit subject, ...) and names a culprit service, a fault class
or a bad commit without investigating. If such a rule were right most of the time, a policy
could score by learning the rule instead of the incident. ``shortcut_rule_table`` plays every
task over many seeds, gathers what the diagnostic actions show at the page, applies each rule
and reports its hit rate; the project keeps every rule at or below ``MAX_HIT_RATE``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable

from srelib.env.actions import SERVICES, ActionType
from srelib.env.simulation.deploy_notes import DEPLOY_NOTES
from srelib.env.tasks.pools import POOLS
from srelib.env.tasks.lookup import get_scenario, load_repo
from srelib.env.simulation.scenarios import TASKS
from srelib.policies.scripted.heuristic import FAULT_KEYWORDS

MAX_HIT_RATE = 0.60
RECENT_SECONDS = 3 * 3600
TARGETS = ("service", "fault_class", "bad_commit")
#: A release tag or version marker in a commit subject: "(v3.1.0)", "release 2.4", "[release]".
#: A release tag in a subject ("(v3.1.0)", "v2.3.1", "release"). The gate's release-tag revert
#: (srelib.adversarial.cunning.RELEASE_TAG) also takes bare version bumps ("to 2.0.1") as tags.
_TAG = re.compile(r"\(v?\d+\.\d+(\.\d+)?\)|\bv\d+\.\d+\.\d+\b|\brelease\b", re.IGNORECASE)
#: Words with which a commit says it changes no behaviour.
_TRIVIAL = re.compile(r"\b(docs?|readme|typing|type hints?|docstrings?|tests?|comments?)\b( only)?"
                      r"|\bonly\b", re.IGNORECASE)
#: The fault class the first alert's rule suggests.
_ALERT_FAULT = {"HighMemoryUsage": "memory_leak", "HighErrorRate": "config_change",
                "ServiceDown": "config_change", "HighLatencyP99": "deadlock",
                "HighLatencyP95": "deadlock", "HighCPU": "retry_storm",
                "ServiceDegraded": "deadlock", "LowRequestRate": "none"}


@dataclass(frozen=True)
class Evidence:
    """What the diagnostic actions show at the page, plus the repository's git log."""

    task: str
    seed: int
    title: str
    summary: str
    alerts: tuple  # view_alerts, in the order shown
    deploys: dict  # service -> check_deploy_history deploys, oldest first
    metrics: dict  # service -> check_metrics points, oldest first
    commits: tuple  # get_git_log entries as dicts (sha, author, date, message, files, diff), newest first
    logs: dict = field(default_factory=dict)  # service -> query_logs lines at the page
    severity: str = ""


def gather(task: str, seed: int) -> Evidence:
    """Play ``view_alerts`` then every service's deploy history, metrics and logs in a fresh
    episode; the git log as that episode shows it (:class:`srelib.env.tasks.surface.EpisodeSurface`)."""
    from srelib.env.core import IncidentEnv
    from srelib.env.tasks.surface import EpisodeSurface, suite_key

    pool = next((name for name, p in POOLS.items() if task in p.tasks and not p.oracle_handoff), None)
    env = IncidentEnv()  # a generated task is in no pool's classic list: play it joint
    obs, _ = env.reset(task=task, pool=pool, mode=None if pool else "joint", seed=seed)

    def run(kind: ActionType, service: str | None = None) -> dict:
        out = env.step({"action_type": kind.value, "target_service": service, "parameters": {}})
        return out[0]["action_result"]

    alerts = tuple(run(ActionType.VIEW_ALERTS)["alerts"])
    deploys = {s: run(ActionType.CHECK_DEPLOY_HISTORY, s)["deploys"] for s in SERVICES}
    metrics = {s: run(ActionType.CHECK_METRICS, s)["metrics"] for s in SERVICES}
    logs = {s: run(ActionType.QUERY_LOGS, s)["logs"] for s in SERVICES}
    repo = load_repo(get_scenario(task).repo)
    shown = EpisodeSurface(suite_key(), seed, get_scenario(task).name).commits(repo.commits)
    commits = tuple({"sha": c.sha, "author": c.author, "date": c.date, "message": c.message,
                     "files": c.files, "diff": c.diff} for c in shown)
    return Evidence(task, seed, obs["incident_title"], obs["incident_summary"], alerts, deploys,
                    metrics, commits, logs, obs["severity"])


def _when(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


def _newest_deploy(ev: Evidence) -> tuple[str, dict] | None:
    latest = [(s, d[-1]) for s, d in ev.deploys.items() if d]
    return max(latest, key=lambda x: _when(x[1]["timestamp"]), default=None)


def _keyword_fault(text: str) -> str | None:
    text = text.lower()
    counts = {f: sum(text.count(w) for w in words) for f, words in FAULT_KEYWORDS.items()}
    best = max(counts, key=lambda f: (counts[f], f))
    return best if counts[best] else None


def _subject(commit: dict) -> str:
    return commit["message"].split("\n", 1)[0]


# ── culprit-service rules ──────────────────────────────────────────────────────────────────
def newest_deploy_service(ev: Evidence) -> str | None:
    """The service whose latest deploy is the most recent."""
    found = _newest_deploy(ev)
    return found[0] if found else None


def first_alert_service(ev: Evidence) -> str | None:
    """The source service of the first alert ``view_alerts`` lists."""
    return ev.alerts[0]["source_service"] if ev.alerts else None


def most_alerts_service(ev: Evidence) -> str | None:
    """The service with the most firing alerts."""
    counts = {s: sum(a["source_service"] == s for a in ev.alerts) for s in SERVICES}
    best = max(SERVICES, key=lambda s: counts[s])
    return best if counts[best] else None


def first_summary_service(ev: Evidence) -> str | None:
    """The service the incident summary (or, failing that, the title) names first."""
    return next((named[0] for named in map(_services_named, (ev.summary, ev.title)) if named), None)


def _services_named(text: str) -> list[str]:
    low = text.lower()
    hits = sorted((m.start(), s) for s in SERVICES for m in re.finditer(rf"\b{s.replace('_', '[ _]')}\b", low))
    return [s for _, s in hits]


def last_summary_service(ev: Evidence) -> str | None:
    """The service the incident summary names last."""
    named = _services_named(ev.summary)
    return named[-1] if named else None


def off_stock_note_service(ev: Evidence) -> str | None:
    """The first service whose newest deploy note is not one of the stock notes of routine
    deploys (``deploy_notes.DEPLOY_NOTES``)."""
    return next((s for s in SERVICES if ev.deploys.get(s) and
                 max(ev.deploys[s], key=lambda d: d["timestamp"])["description"] not in DEPLOY_NOTES), None)


def initial_release_service(ev: Evidence) -> str | None:
    """The first service whose deploy history opens with an "Initial ..." release."""
    return next((s for s in SERVICES if ev.deploys.get(s)
                 and ev.deploys[s][0]["description"].startswith("Initial")), None)


def largest_jump_service(ev: Evidence) -> str | None:
    """The service with the largest relative rise of any metric over its 30-point history."""
    def jump(points: list) -> float:
        first, best = points[0], 0.0
        for name in ("cpu", "memory", "error_rate", "latency_p50", "latency_p95", "latency_p99"):
            base = max(abs(first[name]), 1e-3)
            best = max(best, max(p[name] for p in points) / base)
        return best

    scored = {s: jump(p) for s, p in ev.metrics.items() if p}
    return max(scored, key=lambda s: (scored[s], s)) if scored else None


# ── fault-class rules ──────────────────────────────────────────────────────────────────────
def deploy_keyword_fault(ev: Evidence) -> str | None:
    """The fault class whose keywords the newest deploy's description uses most."""
    found = _newest_deploy(ev)
    return _keyword_fault(found[1]["description"]) if found else None


def recent_deploys_keyword_fault(ev: Evidence) -> str | None:
    """The fault class whose keywords the descriptions of the last three hours' deploys use most."""
    now = max(_when(p[-1]["timestamp"]) for p in ev.metrics.values())
    text = " ".join(d["description"] for ds in ev.deploys.values() for d in ds
                    if (now - _when(d["timestamp"])).total_seconds() <= RECENT_SECONDS)
    return _keyword_fault(text)


def summary_keyword_fault(ev: Evidence) -> str | None:
    """The fault class whose keywords the title and summary use most."""
    return _keyword_fault(f"{ev.title} {ev.summary}")


def reported_fault(ev: Evidence) -> str | None:
    """No fault when the incident is filed as SEV3 or its title is a "User report"."""
    reported = ev.severity == "SEV3" or ev.title.lower().startswith(("user report", "report:"))
    return "none" if reported else None


def first_alert_fault(ev: Evidence) -> str | None:
    """The fault class the first alert's rule suggests (memory alert -> memory leak, ...)."""
    return _ALERT_FAULT.get(ev.alerts[0]["rule_name"]) if ev.alerts else None


# ── bad-commit rules ───────────────────────────────────────────────────────────────────────
def newest_commit(ev: Evidence) -> str | None:
    """The head of the git log."""
    return ev.commits[0]["sha"] if ev.commits else None


def newest_tagged_commit(ev: Evidence) -> str | None:
    """The newest commit whose subject carries a release tag or version marker."""
    return next((c["sha"] for c in ev.commits if _TAG.search(_subject(c))), None)


def newest_substantive_commit(ev: Evidence) -> str | None:
    """The newest commit whose message does not call itself docs-, test- or typing-only."""
    return next((c["sha"] for c in ev.commits if not _TRIVIAL.search(c["message"])), None)


def largest_commit(ev: Evidence) -> str | None:
    """The commit (other than the first) whose diff changes the most lines."""
    def size(c: dict) -> int:
        return sum(line[:1] in "+-" and line[:3] not in ("+++", "---") for line in c["diff"].splitlines())
    later = ev.commits[:-1]
    return max(later, key=size)["sha"] if later else None


def unchanged_elsewhere_commit(ev: Evidence) -> str | None:
    """The commit whose body says the rest "otherwise behaves as before"."""
    return next((c["sha"] for c in ev.commits if "otherwise behaves as before" in c["message"]), None)


def third_oldest_commit(ev: Evidence) -> str | None:
    """The third-oldest commit."""
    return ev.commits[-3]["sha"] if len(ev.commits) >= 3 else None


def newest_deploy_commit(ev: Evidence) -> str | None:
    """The commit the most recent deploy of any service shipped."""
    found = _newest_deploy(ev)
    return found[1]["commit_hash"] if found else None


@dataclass(frozen=True)
class Rule:
    """A one-line rule: its name, what it predicts, and the function over ``Evidence``."""

    name: str
    target: str
    predict: Callable[[Evidence], str | None]


RULES: tuple[Rule, ...] = (
    Rule("newest deploy", "service", newest_deploy_service),
    Rule("first alert", "service", first_alert_service),
    Rule("most alerts", "service", most_alerts_service),
    Rule("first service in the summary", "service", first_summary_service),
    Rule("largest metric jump", "service", largest_jump_service),
    Rule("last service in the summary", "service", last_summary_service),
    Rule("newest deploy note off the stock list", "service", off_stock_note_service),
    Rule("history opens with an Initial release", "service", initial_release_service),
    Rule("newest-deploy description keywords", "fault_class", deploy_keyword_fault),
    Rule("recent-deploy description keywords", "fault_class", recent_deploys_keyword_fault),
    Rule("summary keywords", "fault_class", summary_keyword_fault),
    Rule("first alert's rule", "fault_class", first_alert_fault),
    Rule("SEV3 or a user report means no fault", "fault_class", reported_fault),
    Rule("newest commit", "bad_commit", newest_commit),
    Rule("newest release-tagged commit", "bad_commit", newest_tagged_commit),
    Rule("newest non-trivial commit", "bad_commit", newest_substantive_commit),
    Rule("largest commit", "bad_commit", largest_commit),
    Rule("commit of the newest deploy", "bad_commit", newest_deploy_commit),
    Rule("body says it otherwise behaves as before", "bad_commit", unchanged_elsewhere_commit),
    Rule("third-oldest commit", "bad_commit", third_oldest_commit),
)


def is_hit(rule: Rule, ev: Evidence) -> bool | None:
    """Whether ``rule`` finds the answer for this episode (None: no such answer to find)."""
    sc = get_scenario(ev.task)
    guess = rule.predict(ev)
    if rule.target == "service":
        return guess in sc.acceptable_services
    if rule.target == "fault_class":
        return guess == sc.fault_class
    if sc.bad_commit is None:
        return None
    return guess is not None and sc.bad_commit.startswith(guess[:7])


def shortcut_rule_table(seeds: int = 20, tasks: tuple[str, ...] | None = None) -> list[dict]:
    """Each rule's hit rate over ``tasks`` (default: every task) x seeds ``0..seeds-1``.

    One row per rule: ``rule``, ``target``, ``hits``, ``episodes`` (those with an answer to
    find; tasks that need no code change have no bad commit) and ``hit_rate``.
    """
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    tasks = TASKS if tasks is None else tuple(tasks)
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise ValueError(f"unknown tasks {unknown}; valid tasks: {list(TASKS)}")
    counts = {r.name: [0, 0] for r in RULES}
    for task in tasks:
        for seed in range(seeds):
            ev = gather(task, seed)
            for rule in RULES:
                hit = is_hit(rule, ev)
                if hit is not None:
                    counts[rule.name][0] += hit
                    counts[rule.name][1] += 1
    return [{"rule": r.name, "target": r.target, "hits": counts[r.name][0],
             "episodes": counts[r.name][1],
             "hit_rate": round(counts[r.name][0] / counts[r.name][1], 3) if counts[r.name][1] else 0.0}
            for r in RULES]


def format_rule_table(rows: list[dict]) -> str:
    """The table as Markdown, one row per rule, with the ceiling it must stay under."""
    lines = [f"| rule | finds | hit rate (ceiling {MAX_HIT_RATE:.2f}) | episodes |",
             "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['rule']} | {r['target'].replace('_', ' ')} | {r['hit_rate']:.2f} "
                     f"| {r['hits']}/{r['episodes']} |")
    return "\n".join(lines)
