"""InvestigatorPolicy: an engineer who follows the evidence, handed no answer (issue 44).

It is handed no answer and reads only what it asks for. It looks at the alerts, then at every
service's metric history, and finds where each service's metrics first changed (its onset).
It reads the logs of the unhealthy services to see which service their failures name as the
next hop. Its suspect is a service that changed on its own (not a decoy whose only change is an
alert of a scheduled job, with no unhealthy service calling it), on the path of the
symptoms (unhealthy, or called by an unhealthy service), named by its victims' logs, whose
symptoms began first. It reads the suspect's deploys and logs: a deploy that precedes the
onset is the likely cause, rolled back; the suspect's own words give the fault class
(organic load with no such deploy is no fault). It declares, then hands over.

Its scores are what investigation earns: ``srelib tasks audit`` prints its culprit accuracy
against the best shallow agent of the battery (:mod:`srelib.analysis.battery`). It is meant as
the honest upper baseline of phase 1, but on the current generator, whose first screen already
points at the culprit, ``heuristic`` scores higher (docs/phase1_investigation.md).
"""

from __future__ import annotations

import re
from datetime import datetime

from srelib.env.actions import DEPENDED_BY, DEPENDS_ON, SERVICES, ActionType
from srelib.env.belief import BeliefState
from srelib.env.types import Action
from srelib.policies.base import EvidencePhase1Policy, handoff_action, make_action

#: Per metric: (absolute, relative) change from its first points that counts as a change.
CHANGE = {"cpu": (9.0, 0.0), "memory": (3.0, 0.0), "error_rate": (0.8, 0.0),
          "latency_p95": (0.0, 0.45), "latency_p99": (0.0, 0.45), "rps": (0.0, 0.3)}
#: Words with which a service says its load is organic.
ORGANIC = ("organic", "usual for this hour", "autoscaler")
#: Words of a scheduled job or batch, a decoy's own explanation.
SCHEDULED = ("scheduled job", "batch import")
#: What a service's own log lines say of each fault class (the words an engineer reads).
CLASS_WORDS = {
    "memory_leak": ("heap", "gc pressure", "allocation failed", "out of memory", "oom"),
    "config_change": ("invalid setting", "settings loaded", "config", "credential", "flag"),
    "deadlock": ("waiting on a lock", "deadlock", "lock order", "circular wait"),
    "pool_exhaustion": ("idle,", "free ", "slot", "pool exhausted", "connection pool"),
    "retry_storm": ("retrying", "after retries", "retry", "backoff"),
    "cache_thrash": ("hit ratio", "miss storm", "evict", "key churn"),
    "shared_dependency": ("common helpers", "contract", "consistency check", "serializ"),
}
#: How a log line names the service on the other end of a call.
_HOP = re.compile(r"\b(?:to|from) (" + "|".join(s.replace("_", "[ _]") for s in SERVICES) + r")\b")
#: Mentions of another service below this many lines are stray noise, not a stream of failures.
NAMED_LINES = 4
#: How long before its onset a deploy may still be the cause, in minutes.
CAUSAL_WINDOW = 120


def _epoch_minutes(stamp: object) -> float | None:
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp() / 60
    except ValueError:
        return None


def onset(points: list[dict]) -> tuple[float | None, set[str]]:
    """``(minute, metrics)``: the page-relative minute from which a service's metrics stay
    changed against its first five points (None: no change), and which metrics changed."""
    if len(points) < 8:
        return None, set()
    first, changed = None, set()
    for metric, (absolute, relative) in CHANGE.items():
        raw = [p.get(metric) for p in points]
        series = [float(v) for v in raw if isinstance(v, (int, float))]
        if len(series) != len(raw):
            continue
        base = sorted(series[:5])[2]
        tol = max(absolute, relative * abs(base))
        out = [abs(v - base) > tol for v in series]
        k = len(out)
        while k > 0 and out[k - 1]:
            k -= 1
        if k < len(out) - 2:  # changed for the last three points at least
            changed.add(metric)
            minute = points[k].get("minute", k)
            first = minute if first is None else min(first, minute)
    return first, changed


class InvestigatorPolicy(EvidencePhase1Policy):
    """The evidence-following phase-1 policy (see the module doc); in phase 2 it declares no
    change (compose it with a phase-2 policy for joint episodes)."""

    name = "investigator"

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        """Forget the episode's evidence.

        Args:
            seed: The episode's seed (accepted for the protocol; unused).
            task_name: The episode's task (accepted for the protocol; unused).
        """
        self._asked: tuple[str, str | None] | None = None
        self._plan: list[Action] = []
        self._stage = "alerts"
        self._alerts: list[dict] = []
        self._onsets: dict[str, tuple[float | None, set[str]]] = {}
        self._page: dict[str, float] = {}  # service -> epoch minutes of its last metric point
        self._logs: dict[str, list[dict]] = {}
        self._deploys: dict[str, list[dict]] = {}
        self._statuses: dict[str, str] = {}
        self._suspect: str = ""  # "": not chosen yet
        self._fault: str | None = None
        self._last_step = -1

    def __init__(self) -> None:
        self.reset()

    # ── evidence ───────────────────────────────────────────────────────────────────────────
    def _absorb(self, observation: dict) -> None:
        self._statuses = dict(observation.get("service_statuses") or self._statuses)
        if self._asked is None or not observation.get("action_success", True):
            return
        kind, service = self._asked
        result = observation.get("action_result") or {}
        if kind == ActionType.VIEW_ALERTS.value:
            self._alerts = [a for a in result.get("alerts") or [] if isinstance(a, dict)]
        elif kind == ActionType.CHECK_METRICS.value and service:
            points = [p for p in result.get("metrics") or [] if isinstance(p, dict)]
            self._onsets[service] = onset(points)
            if points:
                self._page[service] = (_epoch_minutes(points[-1].get("timestamp")) or 0.0) \
                    - float(points[-1].get("minute", 0))
        elif kind == ActionType.QUERY_LOGS.value and service:
            self._logs[service] = [x for x in result.get("logs") or [] if isinstance(x, dict)]
        elif kind == ActionType.CHECK_DEPLOY_HISTORY.value and service:
            self._deploys[service] = [d for d in result.get("deploys") or [] if isinstance(d, dict)]

    def _unhealthy(self) -> list[str]:
        return [s for s in SERVICES if self._statuses.get(s, "healthy") != "healthy"]

    def _decoy(self, service: str) -> bool:
        """Changed in CPU or memory only, with an alert, yet healthy: a scheduled job's look."""
        _, changed = self._onsets.get(service, (None, set()))
        text = " ".join(str(x.get("message", "")).lower() for x in self._logs.get(service, []))
        if any(w in text for w in SCHEDULED):
            return True
        alerted = any(a.get("source_service") == service for a in self._alerts)
        return (alerted and self._statuses.get(service) == "healthy" and bool(changed)
                and changed <= {"cpu", "memory"})

    def _named(self) -> dict[str, int]:
        """How often the unhealthy services' warnings and errors name each other service."""
        counts = {s: 0 for s in SERVICES}
        for reader, lines in self._logs.items():
            if reader not in self._unhealthy():
                continue
            for line in lines:
                if line.get("level") not in ("WARN", "ERROR", "FATAL"):
                    continue
                for hop in _HOP.findall(str(line.get("message", "")).lower()):
                    s = hop.replace(" ", "_")
                    if s != reader:
                        counts[s] += 1
        return {s: n if n >= NAMED_LINES else 0 for s, n in counts.items()}

    def _candidates(self) -> list[str]:
        bad = self._unhealthy() or sorted({str(a.get("source_service")) for a in self._alerts
                                           if a.get("source_service") in SERVICES})
        near = set(bad) | {c for b in bad for c in DEPENDS_ON[b]}
        out = [s for s in SERVICES if s in near and not self._decoy(s)
               and (s in bad or self._onsets.get(s, (None, set()))[0] is not None)]
        return out or list(bad) or list(SERVICES)

    def _choose(self) -> str:
        named = self._named()
        bad = set(self._unhealthy())

        def key(s: str):
            minute = self._onsets.get(s, (None, set()))[0]
            callers_hit = sum(c in bad for c in DEPENDED_BY[s])
            return (minute if minute is not None else 99.0, -named[s], -callers_hit,
                    SERVICES.index(s))

        return min(self._candidates(), key=key)

    def _deploy_precedes(self, service: str) -> bool:
        deploys = self._deploys.get(service) or []
        minute, _ = self._onsets.get(service, (None, set()))
        if not deploys or service not in self._page:
            return False
        when = _epoch_minutes(deploys[-1].get("timestamp"))
        if when is None:
            return False
        start = self._page[service] + (minute if minute is not None else -30.0)
        return start - CAUSAL_WINDOW <= when <= start + 1

    def _fault_class(self, service: str, fault: bool) -> str:
        lines = self._logs.get(service, [])
        if not fault or any(w in str(x.get("message", "")).lower() for x in lines for w in ORGANIC):
            return "none"
        # its warnings and errors: routine INFO lines (pool stats, cache ratios) say nothing
        text = " ".join(str(x.get("message", "")).lower() for x in lines
                        if x.get("level") in ("WARN", "ERROR", "FATAL"))
        counts = {f: sum(text.count(w) for w in words) for f, words in CLASS_WORDS.items()}
        best = max(counts, key=lambda f: (counts[f], f))
        if counts[best]:
            return best
        _, changed = self._onsets.get(service, (None, set()))
        if "memory" in changed:
            return "memory_leak"
        if "rps" in changed:
            return "retry_storm"
        return "config_change" if "error_rate" in changed else "deadlock"

    # ── planning ───────────────────────────────────────────────────────────────────────────
    def _next(self, observation: dict) -> Action:
        remaining = int(observation.get("steps_remaining") or 99)
        if remaining <= 2 and self._stage not in ("declare", "handoff"):
            self._plan.clear()
            self._suspect = self._suspect or self._choose()
            self._stage = "declare"
        while not self._plan:
            if self._stage == "alerts":
                self._stage = "metrics"
                return make_action(ActionType.VIEW_ALERTS)
            if self._stage == "metrics":
                self._stage = "logs"
                self._plan = [make_action(ActionType.CHECK_METRICS, s) for s in SERVICES]
            elif self._stage == "logs":
                self._stage = "suspect"
                loud = sorted(self._unhealthy(), key=lambda s: (
                    -sum(a.get("source_service") == s for a in self._alerts), SERVICES.index(s)))
                self._plan = [make_action(ActionType.QUERY_LOGS, s, limit=50) for s in loud[:3]]
            elif self._stage == "suspect":
                self._stage = "confirm"
                self._suspect = self._choose()
                self._plan = [make_action(ActionType.CHECK_DEPLOY_HISTORY, self._suspect)]
                if self._suspect not in self._logs:
                    self._plan.append(make_action(ActionType.QUERY_LOGS, self._suspect, limit=50))
            elif self._stage == "confirm":
                self._stage = "declare"
                self._fault = self._fault_class(self._suspect, self._deploy_precedes(self._suspect))
                valid = set(observation.get("valid_actions") or [])
                if self._fault != "none" and f"rollback_deploy:{self._suspect}" in valid:
                    self._plan = [make_action(ActionType.ROLLBACK_DEPLOY, self._suspect)]
            elif self._stage == "declare":
                self._stage = "handoff"
                suspect = self._suspect or self._choose()
                fault = self._fault or self._fault_class(suspect, True)
                words = fault.replace("_", " ")
                return make_action(ActionType.DECLARE_ROOT_CAUSE, service=suspect, fault_class=fault,
                                   root_cause=f"{words} in {suspect}: its metrics changed first and "
                                              "its callers' failures trace back to it"
                                   if fault != "none" else
                                   f"no fault: {suspect} is working normally under organic load")
            else:
                suspect = self._suspect or self._choose()
                fault = self._fault or "none"
                return handoff_action(BeliefState(
                    suspected_service=suspect, suspected_fault_class=fault,
                    service_confidence=0.7, fault_confidence=0.6,
                    reasoning=f"onset of {suspect} first among the symptomatic services"))
        return self._plan.pop(0)
