"""What a shallow agent sees: the reset observation and the result of any single query.

:func:`sight` plays one task and seed: the reset observation, then every single query an agent
could make first (``view_alerts``, and each service's metrics, logs, deploy history and health
check), each in a fresh episode of its own, so each result is exactly what that one query
shows at the page. :func:`features` turns the reset observation, with or without one query's
result, into a flat ``{name: number}`` dict over every field the agent sees; service names are
masked consistently (text keeps ``<svc>``, while each service's own values sit under its
name, so a model can still tell services apart by their place on the graph).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from srelib.env.actions import SERVICES, ActionType
from srelib.env.simulation.scenarios import METRIC_NAMES
from srelib.analysis.tell_audit import mask

#: The targeted queries, by short name.
TARGETED = {"metrics": ActionType.CHECK_METRICS, "logs": ActionType.QUERY_LOGS,
            "deploys": ActionType.CHECK_DEPLOY_HISTORY, "health": ActionType.RUN_HEALTH_CHECK}
#: Every single query: ``"alerts"`` and ``"<kind>:<service>"``.
QUERIES = ("alerts", *(f"{k}:{s}" for k in TARGETED for s in SERVICES))
_STATUS = {"healthy": 0.0, "degraded": 1.0, "down": 2.0}
_WORD = re.compile(r"[a-z<>#_]+")


@dataclass
class Sight:
    """One task and seed at the page: the reset observation and each query's result."""

    task: str
    seed: int
    culprit: str
    fault_class: str
    needs_fix: bool
    reset: dict
    results: dict = field(default_factory=dict)  # query -> action_result


def sight(task: str, seed: int, queries: tuple[str, ...] = QUERIES) -> Sight:
    """The reset observation of ``task`` on ``seed`` (phase 1 only) and the result of each of
    ``queries``, each played as the first action of its own fresh episode.

    Raises:
        ValueError: an unknown query.
    """
    from srelib.env.core import IncidentEnv
    from srelib.env.tasks.lookup import get_scenario

    scenario = get_scenario(task)
    env = IncidentEnv()
    obs: dict = dict(env.reset(task=task, mode="p1_only", seed=seed)[0])
    reset = {k: obs[k] for k in ("incident_title", "incident_summary", "severity",
                                 "service_statuses", "active_alerts_count")}
    out = Sight(task, seed, scenario.root_cause_service, scenario.fault_class,
                scenario.needs_fix, reset)
    for query in queries:
        kind, _, service = query.partition(":")
        if kind != "alerts" and (kind not in TARGETED or service not in SERVICES):
            raise ValueError(f"unknown query {query!r}; valid: {', '.join(QUERIES)}")
        env.reset(task=task, mode="p1_only", seed=seed)
        action = ActionType.VIEW_ALERTS if kind == "alerts" else TARGETED[kind]
        step = env.step({"action_type": action.value, "target_service": service or None,
                         "parameters": {}})
        out.results[query] = dict(step[0]).get("action_result")
    return out


def minutes(stamp: str) -> float:
    """Epoch minutes of an ISO timestamp such as ``2025-01-15T14:18:00Z``."""
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return moment.timestamp() / 60.0


def _words(prefix: str, text: str, into: dict) -> None:
    for w in _WORD.findall(mask(text).lower()):
        into[f"{prefix}={w}"] = into.get(f"{prefix}={w}", 0.0) + 1.0


def _named(prefix: str, text: str, into: dict) -> None:
    """Which services ``text`` names, and each with the word before it ("suspect orders",
    "from database"): a name's place in the text is as readable as the name."""
    low = text.lower()
    for s in SERVICES:
        for hit in re.finditer(rf"\b{s.replace('_', '[ _]')}\b", low):
            before = _WORD.findall(mask(low[:hit.start()]))[-1:] or ["^"]
            for key in (f"{prefix} names {s}", f"{prefix} names {s} after {before[0]}"):
                into[key] = into.get(key, 0.0) + 1.0


def reset_features(reset: dict) -> dict:
    """Features of the reset observation: every status, the alert count, the severity, the
    title and summary (masked words, and which services each names)."""
    out: dict = {f"status {s}": _STATUS.get(v, 0.0) for s, v in reset["service_statuses"].items()}
    out["alert count"] = float(reset["active_alerts_count"])
    out[f"severity={reset['severity']}"] = 1.0
    for key in ("incident_title", "incident_summary"):
        _words(key, reset[key], out)
        _named(key, reset[key], out)
    return out


def _alerts(result: dict, out: dict) -> None:
    alerts = result.get("alerts") or []
    times = [minutes(a["firing_since"]) for a in alerts]
    first = min(times, default=0.0)
    for k, (a, t) in enumerate(zip(alerts, times)):
        s = a["source_service"]
        for key in (f"alerts {s}", f"alerts {s} {a['rule_name']}", f"alerts {s} {a['severity']}",
                    f"alert rule {a['rule_name']}"):
            out[key] = out.get(key, 0.0) + 1.0
        out[f"earliest alert {s}"] = max(out.get(f"earliest alert {s}", 0.0), 30.0 - (t - first))
        if k == 0:
            out[f"first alert {s}"] = 1.0
            out[f"first alert rule {a['rule_name']}"] = 1.0


def _metrics(service: str, result: dict, out: dict) -> None:
    points = result.get("metrics") or []
    if not points:
        return
    for m in METRIC_NAMES:
        series = [float(p[m]) for p in points]
        head = sorted(series[:10])
        mid = head[len(head) // 2]
        out[f"{service} {m} last"] = series[-1]
        out[f"{service} {m} rise"] = series[-1] - series[0]
        out[f"{service} {m} vs start"] = series[-1] / (abs(mid) + 1e-3)
        out[f"{service} {m} max"] = max(series)


def _logs(service: str, result: dict, out: dict) -> None:
    for line in result.get("logs") or []:
        level = line["level"]
        out[f"{service} logs {level}"] = out.get(f"{service} logs {level}", 0.0) + 1.0
        _words(f"{service} {level}", line["message"], out)
        _named(f"{service} {level}", line["message"], out)


def _deploys(service: str, result: dict, now: float | None, out: dict) -> None:
    deploys = result.get("deploys") or []
    out[f"{service} deploys"] = float(len(deploys))
    if deploys:
        newest = deploys[-1]
        if now is not None:
            out[f"{service} newest deploy minutes"] = now - minutes(newest["timestamp"])
        _words(f"{service} newest note", str(newest.get("description", "")), out)


def _health(service: str, result: dict, out: dict) -> None:
    check = result.get("health_check") or {}
    out[f"{service} health"] = _STATUS.get(str(check.get("status")), 0.0)
    out[f"{service} response ms"] = float(check.get("response_time_ms") or 0.0)
    out[f"{service} replicas"] = float(check.get("replicas") or 0)
    for dep, state in (check.get("dependencies") or {}).items():
        out[f"{service} sees {dep}"] = 0.0 if state == "ok" else _STATUS.get(state, 1.0)


def query_features(query: str, result: dict, now: float | None = None) -> dict:
    """Features of one query's result (``now``: the page in epoch minutes, for deploy ages)."""
    out: dict = {}
    kind, _, service = query.partition(":")
    if kind == "alerts":
        _alerts(result, out)
    elif kind == "metrics":
        _metrics(service, result, out)
    elif kind == "logs":
        _logs(service, result, out)
    elif kind == "deploys":
        _deploys(service, result, now, out)
    elif kind == "health":
        _health(service, result, out)
    return out


def pageminutes(s: Sight) -> float | None:
    """The page in epoch minutes, read from what a query showed (a metric point's timestamp)."""
    for query, result in s.results.items():
        if query.startswith("metrics:") and result.get("metrics"):
            return minutes(result["metrics"][-1]["timestamp"])
    return None


def features(s: Sight, query: str | None = None) -> dict:
    """The reset observation's features, plus those of ``query``'s result when given."""
    out = reset_features(s.reset)
    if query is not None:
        out.update(query_features(query, s.results[query], pageminutes(s)))
    return out
