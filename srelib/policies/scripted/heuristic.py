"""HeuristicPhase1Policy: a scripted on-call engineer for phase 1.

It reads the alerts, investigates the loudest unhealthy services (metrics, logs, deploy history,
dependencies), then walks ``DEPENDS_ON`` upstream from them looking for a service with a recent
deploy: that service is the suspect. It rolls the suspect back, declares the root cause with a
fault class guessed from keywords in the evidence and from the metric trends, restarts victims
that stay unhealthy, and hands over a belief whose confidence counts the evidence it found.
It is decent but fallible: red herrings, noisy logs, victims that look worse than the culprit
and innocent recent deploys upstream of the symptoms (all seeded by the environment) mislead
it on some seeds, so its scores vary across seeds. It is deterministic given the observations.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timezone

from srelib.env.actions import SERVICES, ActionType
from srelib.env.simulation.topology import upstream_of
from srelib.env.belief import BeliefState
from srelib.policies.base import EvidencePhase1Policy, make_action

_STATUS_WEIGHT = {"down": 3.0, "degraded": 2.0}
_SEVERITY_WEIGHT = {"critical": 2.0, "warning": 1.0}
#: Evidence words for each fault class, matched as word prefixes in logs and deploy notes.
FAULT_KEYWORDS: dict[str, tuple[str, ...]] = {
    "memory_leak": ("memory", "heap", "oom", "outofmemory", "gc ", "garbage"),
    "config_change": ("config", "secret", "null", "credential", "flag", "endpoint", "jwt"),
    "deadlock": ("deadlock", "blocked", "lock", "waiting for", "thread", "circular"),
    "retry_storm": ("retry", "retries", "backoff", "storm", "throttl", "rate limit"),
    "cache_thrash": ("cache", "evict", "thrash", "hit ratio"),
    "shared_dependency": ("serializ", "dependency", "library", "requirements", "pinned", "schema"),
}
RECENT_MINUTES = 180


def _minutes(timestamp: object) -> float | None:
    """Minutes since the epoch of an ISO timestamp such as ``2025-01-15T13:40:00Z``."""
    try:
        moment = datetime.fromisoformat(str(timestamp).replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp() / 60


class HeuristicPhase1Policy(EvidencePhase1Policy):
    """Scripted SRE for phase 1 (see the module doc); in phase 2 it declares no change.

    ``investigate`` is how many of the loudest services get metrics and logs read;
    ``max_deploy_checks`` bounds the deploy histories read while walking upstream;
    below ``doubt_below`` (the share of keyword evidence behind its fault guess) it reads the
    suspect's error logs once more before concluding.

    Args:
        investigate: How many of the loudest services get metrics and logs read.
        max_deploy_checks: The most deploy histories read while walking upstream.
        doubt_below: The evidence share below which it reads the suspect's logs again.

    Raises:
        ValueError: ``investigate`` or ``max_deploy_checks`` is below 1.
    """

    name = "heuristic_p1"

    def __init__(self, investigate: int = 3, max_deploy_checks: int = 4,
                 doubt_below: float = 0.6):
        if investigate < 1 or max_deploy_checks < 1:
            raise ValueError("need investigate >= 1 and max_deploy_checks >= 1")
        self.investigate, self.max_deploy_checks = investigate, max_deploy_checks
        self.doubt_below = doubt_below
        self.reset()

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        """Forget the episode's evidence.

        Args:
            seed: The episode's seed (accepted for the protocol; unused).
            task_name: The episode's task (accepted for the protocol; unused).
        """
        self._plan: list[dict] = []
        self._stage = "start"
        self._asked: tuple[str, str | None] | None = None
        self._loudness: dict[str, float] = {}
        self._text: dict[str, str] = {}
        self._deploys: dict[str, list[dict]] = {}
        self._memory_trend: dict[str, float] = {}
        self._now: float | None = None  # the latest time seen in alerts, logs or metrics
        self._suspect: str | None = None
        self._evidence: list[str] = []
        self._gaps: list[str] = []
        self._fault: tuple[str, float] = ("none", 0.0)
        self._last_step = -1

    # ── evidence ───────────────────────────────────────────────────────────────────────────
    def _absorb(self, observation: dict) -> None:
        if self._asked is None or not observation.get("action_success", True):
            return
        kind, service = self._asked
        result = observation.get("action_result") or {}
        for records in result.values():
            for record in records if isinstance(records, list) else []:
                if isinstance(record, dict) and kind != ActionType.CHECK_DEPLOY_HISTORY.value:
                    seen = _minutes(record.get("timestamp") or record.get("firing_since"))
                    self._now = max(self._now or seen or 0, seen or 0) or None
        if kind == ActionType.VIEW_ALERTS.value:
            for alert in result.get("alerts") or []:
                svc = alert.get("source_service")
                if svc in SERVICES:
                    self._loudness[svc] = self._loudness.get(svc, 0.0) + _SEVERITY_WEIGHT.get(
                        alert.get("severity"), 0.5)
        elif kind == ActionType.QUERY_LOGS.value and service:
            lines = result.get("logs") or []
            self._text[service] = self._text.get(service, "") + " ".join(
                str(line.get("message", "")) for line in lines
                if line.get("level") in ("WARN", "ERROR", "FATAL")).lower()
        elif kind == ActionType.CHECK_METRICS.value and service:
            points = [p for p in result.get("metrics") or [] if isinstance(p.get("memory"), (int, float))]
            if len(points) >= 2:
                self._memory_trend[service] = points[-1]["memory"] - points[0]["memory"]
        elif kind == ActionType.CHECK_DEPLOY_HISTORY.value and service:
            self._deploys[service] = list(result.get("deploys") or [])

    # ── planning ───────────────────────────────────────────────────────────────────────────
    def _next(self, observation: dict) -> dict:
        valid = set(observation.get("valid_actions") or [])
        statuses = observation.get("service_statuses") or {}
        remaining = int(observation.get("steps_remaining") or 99)
        if remaining <= 2 and self._stage in ("alerts", "investigate", "upstream", "confirm", "doubt"):
            self._plan.clear()  # keep two steps for the declaration and the handover
            if self._stage in ("alerts", "investigate", "upstream"):
                self._choose_suspect()
            self._fault = self._guess_fault()
            self._stage = "mitigate"
        elif remaining <= 1:
            self._plan.clear()
            self._stage = "victims"
        while not self._plan:
            if self._stage == "start":
                self._stage = "alerts"
                return make_action(ActionType.VIEW_ALERTS)
            if self._stage == "alerts":
                self._stage = "investigate"
                self._plan_investigation(statuses)
            elif self._stage == "investigate":
                self._stage = "upstream"
                self._plan = [make_action(ActionType.CHECK_DEPLOY_HISTORY, s)
                              for s in self._upstream_candidates(statuses)]
            elif self._stage == "upstream":
                self._stage = "confirm"
                self._choose_suspect()
                if self._suspect and self._suspect not in self._text:
                    self._plan.append(make_action(ActionType.QUERY_LOGS, self._suspect))
            elif self._stage == "confirm":
                # Unsure of the fault class? Read the suspect's errors once more.
                self._stage = "doubt"
                if self._suspect and self._guess_fault()[1] < self.doubt_below:
                    self._plan.append(make_action(ActionType.QUERY_LOGS, self._suspect,
                                                  level="ERROR", limit=30))
            elif self._stage == "doubt":
                self._stage = "mitigate"
                self._fault = self._guess_fault()
                if self._recent_deploy(self._suspect) and f"rollback_deploy:{self._suspect}" in valid:
                    self._plan.append(make_action(ActionType.ROLLBACK_DEPLOY, self._suspect))
            elif self._stage == "mitigate":
                self._stage = "declare"
                return self._declare()
            elif self._stage == "declare":
                self._stage = "victims"
                self._plan = [make_action(ActionType.RESTART_SERVICE, s)
                              for s in self._victims(statuses) if f"restart_service:{s}" in valid]
            else:
                self._stage = "done"
                return make_action(ActionType.TRANSITION_TO_PHASE2, belief=asdict(self._belief()))
        return self._plan.pop(0)

    def _plan_investigation(self, statuses: dict) -> None:
        for svc, status in statuses.items():
            self._loudness[svc] = self._loudness.get(svc, 0.0) + _STATUS_WEIGHT.get(status, 0.0)
        loudest = self._loudest()
        for svc in loudest:
            self._plan += [make_action(ActionType.CHECK_METRICS, svc),
                           make_action(ActionType.QUERY_LOGS, svc),
                           make_action(ActionType.CHECK_DEPLOY_HISTORY, svc)]
        if loudest:
            self._plan.append(make_action(ActionType.CHECK_DEPENDENCIES, loudest[0]))

    def _loudest(self) -> list[str]:
        """Up to ``investigate`` services at least half as loud as the loudest one."""
        top = max(self._loudness.values(), default=0.0)
        ranked = sorted((s for s in SERVICES if self._loudness.get(s, 0) >= max(top / 2, 1e-9)),
                        key=lambda s: (-self._loudness[s], SERVICES.index(s)))
        return ranked[: self.investigate]

    def _upstream_candidates(self, statuses: dict) -> list[str]:
        """Services the loud ones call, not yet checked: unhealthy or alerting ones, and the
        healthy ones too when no deploy seen so far is recent."""
        found: list[str] = []
        for loud in self._loudest():
            found += [s for s in upstream_of(loud) if s not in self._deploys and s not in found]
        noisy = [s for s in found if self._loudness.get(s, 0) > 0 or statuses.get(s) in _STATUS_WEIGHT]
        if not any(self._recent_deploy(s) for s in self._deploys):
            noisy += [s for s in found if s not in noisy]
        return noisy[:max(0, self.max_deploy_checks - len(self._deploys))]

    def _recent_deploy(self, service: str | None) -> dict | None:
        deploys = self._deploys.get(service or "", [])
        if not deploys:
            return None
        latest = deploys[-1]
        when = _minutes(latest.get("timestamp"))
        if len(deploys) < 2 or when is None or self._now is None:
            return None
        return latest if self._now - when <= RECENT_MINUTES else None

    # ── conclusions ────────────────────────────────────────────────────────────────────────
    def _choose_suspect(self) -> None:
        loud = self._loudest()

        def score(svc: str) -> float:
            s = self._loudness.get(svc, 0.0) * 0.25
            s += 2.0 if self._recent_deploy(svc) else 0.0
            s += sum(1.0 for other in loud if other != svc and svc in upstream_of(other))
            return s

        candidates = [s for s in SERVICES if s in self._deploys or s in loud]
        if not candidates:
            self._gaps.append("no service looked unhealthy")
            return
        self._suspect = max(candidates, key=lambda s: (score(s), -SERVICES.index(s)))
        deploy = self._recent_deploy(self._suspect)
        if deploy:
            self._evidence.append(f"recent deploy {deploy.get('version')} on {self._suspect}")
        else:
            self._gaps.append(f"no recent deploy found on {self._suspect}")
        victims = [o for o in loud if o != self._suspect and self._suspect in upstream_of(o)]
        if victims:
            self._evidence.append(f"{self._suspect} is upstream of {', '.join(victims)}")
        if self._suspect in loud:
            self._evidence.append(f"{self._suspect} is among the loudest services")

    def _guess_fault(self) -> tuple[str, float]:
        """The fault class the suspect's logs, deploy note and memory trend point at, and the
        share of the evidence behind it."""
        svc = self._suspect or ""
        deploy = self._recent_deploy(svc)
        text = self._text.get(svc, "") + " " + str((deploy or {}).get("description", "")).lower()
        scores = {fault: float(sum(text.count(w) for w in words))
                  for fault, words in FAULT_KEYWORDS.items()}
        if self._memory_trend.get(svc, 0.0) > 15:
            scores["memory_leak"] += 3.0
        total = sum(scores.values())
        if not deploy and self._loudness.get(svc, 0) < 2 and total == 0:
            return "none", 0.5
        if total == 0:
            return "config_change" if deploy else "none", 0.2
        best = max(scores, key=lambda f: (scores[f], f))
        return best, round(scores[best] / total, 3)

    def _declare(self) -> dict:
        fault, _ = self._fault
        deploy = self._recent_deploy(self._suspect)
        if self._suspect is None or (fault == "none" and not deploy):
            return make_action(ActionType.DECLARE_ROOT_CAUSE, root_cause=(
                "no fault found: the symptoms look transient and no deploy explains them"),
                service=self._suspect, fault_class="none")
        cause = f"{fault.replace('_', ' ')} in {self._suspect}"
        if deploy:
            cause += f" introduced by deploy {deploy.get('version')} ({deploy.get('description', '')})"
        return make_action(ActionType.DECLARE_ROOT_CAUSE, root_cause=cause,
                           service=self._suspect, fault_class=fault)

    def _victims(self, statuses: dict) -> list[str]:
        return [s for s in self._loudest() if s != self._suspect
                and statuses.get(s) in _STATUS_WEIGHT and self._suspect in upstream_of(s)]

    def _belief(self) -> BeliefState:
        fault, fault_conf = self._fault
        service_conf = min(0.95, 0.2 + 0.2 * len(self._evidence)) if self._suspect else 0.0
        return BeliefState(
            suspected_service=self._suspect, suspected_fault_class=fault,
            service_confidence=round(service_conf, 3), fault_confidence=fault_conf,
            evidence_gaps=list(self._gaps),
            estimated_p2_cost="low" if self._recent_deploy(self._suspect) else "medium",
            decision="transition", reasoning="; ".join(self._evidence) or "little evidence")
