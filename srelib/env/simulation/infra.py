"""The seven-service simulation: metrics, statuses, logs, deploys, alerts, cascade, remediation.

Time is measured in absolute minutes of the incident day; the page arrives at ``page`` and
every valid action advances ``now`` by one. A service's metrics at any minute are a pure
function of its seeded baseline, the noise table and the hidden conditions (with their onset,
the minute they were cleared and the minutes they were relieved), so the 30-point history,
the logs and the alerts' ``firing_since`` are all computed lazily, on one clock, and cached.

Conditions of fault-less services (a consequence of a fault elsewhere) are real effects: they
persist while their cause persists and clear with it, unless they are residual, in which case
they wait for their own remediation. Callers of an unhealthy service feel it through the
dependency graph, callees first, so failures propagate transitively.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from typing import Callable

from srelib.env.actions import SERVICES
from .deploy_history import initial_history, innocent_deploy, later_deploys
from .incident_clock import MAX_SHIFT, PAGE_MINUTE, PAGE_SPREAD, timestamp
from .scenarios import METRIC_NAMES, ConditionSpec, LogTemplate, Scenario
from .service_logs import generated_lines, log_entropy
from srelib.env.simulation.state import (CALLEES, CPU, DEGRADED, DOWN, ERR, HEALTHY, MEM, NO_MASKS, P50, P95, P99,
                        RPS, SERVICE_INDEX, STATUS_NAMES, Condition, RemediationResult, Snapshot)
from srelib.env.types import Status

REGRESSION_MINUTES = 6  # how long rolling back a good deploy hurts the service
HISTORY_POINTS = 30
LOG_WINDOW = 30
DEFAULT_REPLICAS = 3
#: Healthy baselines per service, in METRIC_NAMES order.
BASELINES = {
    "api_gateway": (22.0, 40.0, 0.2, 15.0, 60.0, 140.0, 1200.0),
    "auth": (18.0, 35.0, 0.1, 8.0, 30.0, 80.0, 1400.0),
    "orders": (20.0, 38.0, 0.1, 14.0, 48.0, 120.0, 500.0),
    "payment": (16.0, 36.0, 0.1, 20.0, 70.0, 160.0, 300.0),
    "cache": (12.0, 45.0, 0.05, 1.0, 3.0, 8.0, 3000.0),
    "database": (30.0, 52.0, 0.05, 4.0, 15.0, 40.0, 2000.0),
    "queue": (14.0, 40.0, 0.05, 3.0, 12.0, 30.0, 800.0),
}
#: Noise per metric: (absolute, relative) half-widths.
_NOISE_SLOTS = 64
_ROUND = (1, 1, 2, 1, 1, 1, 0)

#: The fixed alert rule table: (rule_name, metric index or None for status, op, threshold, severity).
ALERT_RULES = (
    ("HighErrorRate", ERR, ">", 10.0, "critical", "error rate {v:.1f}% exceeds threshold 10%"),
    ("HighMemoryUsage", MEM, ">", 80.0, "critical", "memory usage {v:.0f}% exceeds threshold 80%"),
    ("HighLatencyP99", P99, ">", 1000.0, "warning", "p99 latency {v:.0f}ms exceeds threshold 1000ms"),
    ("HighLatencyP95", P95, ">", 500.0, "warning", "p95 latency {v:.0f}ms exceeds threshold 500ms"),
    ("HighCPU", CPU, ">", 80.0, "warning", "CPU usage {v:.0f}% exceeds threshold 80%"),
    ("ServiceDown", None, "=", DOWN, "critical", "service is DOWN: health check failing"),
    ("ServiceDegraded", None, "=", DEGRADED, "warning", "service is DEGRADED: partial failures"),
    ("LowRequestRate", RPS, "<", 100.0, "warning", "request rate {v:.0f} rps below threshold 100 rps"),
)
ALERT_RULE_NAMES = tuple(r[0] for r in ALERT_RULES)
#: Range of the factor on how much of an unhealthy callee's excess a caller feels.
COUPLING = (0.6, 1.6)


def _topological() -> tuple[int, ...]:
    order: list[int] = []

    def visit(i: int) -> None:
        if i not in order:
            for d in CALLEES[i]:
                visit(d)
            order.append(i)

    for i in range(len(SERVICES)):
        visit(i)
    return tuple(order)


_CALLEES_FIRST = _topological()


def _picker(block: bytes) -> Callable[[int], int]:
    """Cheap small random choices from a block of the episode's random bytes, taken in turn
    (round again past its end): ``pick(n)`` is the next byte modulo ``n``."""
    draws = itertools.cycle(block)
    return lambda n: next(draws) % n


class Infrastructure:
    """One episode's simulated infrastructure, built from a scenario and the episode's RNG."""

    def __init__(self, scenario: Scenario, rng: random.Random):
        # the episode's own stream, also keyed by the task: two tasks played on one seed share
        # no background (routine deploys, noise), so none can be learned across tasks
        rng = random.Random(hashlib.sha256(scenario.name.encode() + b"\0" + rng.randbytes(16)).digest())
        self.scenario = scenario
        pick = _picker(rng.randbytes(256))
        shift = pick(MAX_SHIFT + 1)  # every pre-page event moves together: the story stays consistent
        self.page = self.now = PAGE_MINUTE + pick(PAGE_SPREAD)
        before = self.page - shift
        jitter = rng.randbytes(len(SERVICES) * 7)
        self._base = tuple(
            tuple([v * (0.94 + 0.00047 * j) for v, j in zip(BASELINES[s], jitter[i * 7:i * 7 + 7])])
            for i, s in enumerate(SERVICES))
        self._noise = rng.randbytes(len(SERVICES) * _NOISE_SLOTS * 7)
        self._log_seeds = [rng.getrandbits(64) for _ in SERVICES]
        self._log_bytes: list[bytes | None] = [None] * len(SERVICES)
        self.deploys = [initial_history(scenario, s, before, rng, pick) for s in SERVICES]
        warmup = (innocent_deploy(scenario, self.deploys, before, self.page, rng)
                  if scenario.innocent_deploy else None)
        later_deploys(scenario, self.deploys, before, rng)
        self.incident_deploys = tuple(d[-1].sha for d in self.deploys)
        self.vars = {f"{s}_version": d[-1].version for s, d in zip(SERVICES, self.deploys)}
        self.vars.update({f"{s}_ago": self.page - d[-1].minute for s, d in zip(SERVICES, self.deploys)})
        self.conditions = self._conditions(before)
        if warmup is not None:
            self.conditions.append(warmup)
        # how strongly each service feels an unhealthy callee: victims sometimes look worse
        self._coupling = tuple(COUPLING[0] + (COUPLING[1] - COUPLING[0]) * rng.random()
                               for _ in SERVICES)
        self._by_service = [[c for c in self.conditions if c.svc == i] for i in range(len(SERVICES))]
        self._replicas: list[list[tuple[int, int]]] = [[(-10**9, DEFAULT_REPLICAS)] for _ in SERVICES]
        self._story = [[] for _ in SERVICES]  # (minute, second, level, message, trace)
        traces: dict[str, str] = {}
        for log in scenario.logs:
            trace = None
            if log.trace is not None:
                trace = traces.setdefault(log.trace, f"trace-{rng.getrandbits(24):06x}")
            elif log.level in ("ERROR", "FATAL"):
                trace = f"trace-{rng.getrandbits(24):06x}"
            self._story[SERVICE_INDEX[log.service]].append(
                (before - log.ago, pick(60), log.level, log.message.format_map(self.vars), trace))
        for h in scenario.red_herrings:
            if pick(256) < h.chance * 256:
                lo, hi = h.window
                minute = self.page + lo + pick(hi - lo + 1)
                trace = f"trace-{rng.getrandbits(24):06x}" if h.level in ("ERROR", "FATAL") else None
                self._story[SERVICE_INDEX[h.service]].append(
                    (minute, pick(60), h.level, h.message.format_map(self.vars), trace))
        self._snaps: dict[int, Snapshot] = {}
        self._reachable = self._reachable_services()
        self._regressions = 0
        self._alert_salt = rng.randbytes(8)  # the episode's order of alerts
        self._set_current()

    # ---------------------------------------------------------------- setup
    def _conditions(self, before: int) -> list[Condition]:
        built: dict[str, Condition] = {}
        specs = {c.id: c for c in self.scenario.conditions}

        def build(spec: ConditionSpec) -> Condition:
            if spec.id not in built:
                cause = None
                if spec.cause == "deploy":
                    onset = self.deploys[SERVICE_INDEX[spec.service]][-1].minute + spec.delay
                elif spec.cause is None:
                    onset = before - spec.ago
                else:
                    cause = build(specs[spec.cause])
                    onset = cause.onset + spec.delay
                built[spec.id] = Condition(spec, onset, cause)
            return built[spec.id]

        return [build(c) for c in self.scenario.conditions]

    # ---------------------------------------------------------------- metrics
    def _replicas_at(self, i: int, m: int) -> int:
        for since, n in reversed(self._replicas[i]):
            if since <= m:
                return n
        return DEFAULT_REPLICAS

    def _noisy(self, i: int, m: int, v: list) -> None:
        """Add the seeded noise of service i at minute m (unrolled: this is the hot path)."""
        off = (i * _NOISE_SLOTS + m % _NOISE_SLOTS) * 7
        n0, n1, n2, n3, n4, n5, n6 = self._noise[off:off + 7]
        v[0] += (n0 - 127.5) * 0.0196  # cpu: +-2.5
        v[1] += (n1 - 127.5) * 0.0118  # memory: +-1.5
        v[2] += (n2 - 127.5) * (0.00039 + 0.00094 * v[2])  # error rate: +-(0.05 + 12%)
        v[3] *= 1.0 + (n3 - 127.5) * 0.000627  # latencies: +-8%
        v[4] *= 1.0 + (n4 - 127.5) * 0.000627
        v[5] *= 1.0 + (n5 - 127.5) * 0.000627
        v[6] *= 1.0 + (n6 - 127.5) * 0.000392  # rps: +-5%

    def _snapshot(self, m: int) -> Snapshot:
        """The state of every service at minute m (cached; a pure function of the timeline)."""
        snap = self._snaps.get(m)
        if snap is not None:
            return snap
        values: list = [None] * len(SERVICES)
        status = [HEALTHY] * len(SERVICES)
        alerts = 0
        for i in self._reachable:
            base = self._base[i]
            v = None
            floor = HEALTHY
            masks = NO_MASKS
            for c in self._by_service[i]:
                if c.onset > m or (c.cleared_at is not None and m >= c.cleared_at):
                    continue
                if v is None:
                    v = list(base)
                mult = c.mult(m) if c.reliefs else 1.0
                spec = c.spec
                p = min(1.0, (m - c.onset + 1) / spec.ramp) * mult
                for k, target in c.targets:  # push the metric towards its target, never back
                    b0 = base[k]
                    x = b0 + (target - b0) * p
                    if (x > v[k]) if target >= b0 else (x < v[k]):
                        v[k] = x
                if spec.memory_rate:
                    v[MEM] = min(99.0, v[MEM] + spec.memory_rate * (m - c.onset) * mult)
                if mult >= 1.0 and c.floor > floor:
                    floor = c.floor
                if c.masks:
                    masks = masks | c.masks
            coupling = self._coupling[i]
            for d in CALLEES[i]:
                st = status[d]
                if st == HEALTHY or d in masks:
                    continue
                if v is None:
                    v = list(base)
                dv, db = values[d], self._base[d]
                f = (0.3 if st == DOWN else 0.25) * coupling
                for k in (ERR, P50, P95, P99):
                    excess = dv[k] - db[k]
                    if excess > 0.0:
                        v[k] += f * excess
                if st == DOWN:
                    v[ERR] += 3.0
            if v is None:
                continue
            mem = v[MEM]
            if mem > 75.0:
                v[ERR] += (mem - 75.0) * 0.8
                v[P95] += (mem - 75.0) * 25.0
                v[P99] += (mem - 75.0) * 60.0
                if mem >= 97.0:
                    v[ERR] = max(v[ERR], 60.0)
            self._noisy(i, m, v)
            cpu, mem, err, p95, p99, rps = v[CPU], v[MEM], v[ERR], v[P95], v[P99], v[RPS]
            if cpu > 100.0:
                v[CPU] = cpu = 100.0
            if mem > 99.9:
                v[MEM] = mem = 99.9
            if err > 100.0:
                v[ERR] = err = 100.0
            elif err < 0.0:
                v[ERR] = err = 0.0
            values[i] = v
            if err > 50.0 or mem >= 97.0:
                st = DOWN
            elif err > 5.0 or p99 > 1000.0 or p95 > 500.0 or mem > 85.0 or rps < 100.0:
                st = DEGRADED
            else:
                st = HEALTHY
            if floor > st:
                st = floor
            status[i] = st
            # one term per ALERT_RULES row, in order (the test suite checks the two agree)
            alerts += ((err > 10.0) + (mem > 80.0) + (p99 > 1000.0) + (p95 > 500.0)
                       + (cpu > 80.0) + (st != HEALTHY) + (rps < 100.0))
        snap = self._snaps[m] = Snapshot(values, tuple(status), alerts)
        return snap

    def metrics_at(self, i: int, m: int) -> list:
        """The (noisy) metric values of service i at minute m."""
        v = self._snapshot(m).values[i]
        if v is None:
            v = list(self._base[i])
            self._noisy(i, m, v)
        return v

    # ---------------------------------------------------------------- clock and state
    def tick(self) -> None:
        """Advance one simulated minute."""
        self.now += 1
        self._set_current()

    def _set_current(self) -> None:
        self._current = self._snapshot(self.now)
        self.statuses = self._current.statuses
        self._names = dict(zip(SERVICES, [STATUS_NAMES[x] for x in self.statuses]))

    def _reachable_services(self) -> tuple[int, ...]:
        """Services a condition can affect (its own and every transitive caller), callees first."""
        hit = {c.svc for c in self.conditions}
        grew = True
        while grew:
            callers = {i for i in range(len(SERVICES)) if any(d in hit for d in CALLEES[i])}
            grew = not callers <= hit
            hit |= callers
        return tuple(i for i in _CALLEES_FIRST if i in hit)

    def status_names(self) -> dict[str, Status]:
        """{service: status} now, in SERVICES order (a fresh dict)."""
        return dict(self._names)

    def healed(self) -> bool:
        """True when every service is healthy and no harmful condition is active."""
        return not any(self.statuses) and not any(
            c.active(self.now) for c in self.conditions if not c.benign)

    # ---------------------------------------------------------------- diagnostics
    def alerts(self) -> list[dict]:
        """The alerts firing now, in an order drawn for the episode: neither by service nor by
        severity (the culprit's alerts are often the critical ones), so where an alert sits
        tells nothing; its severity and ``firing_since`` are there to be read."""
        values, statuses = self._current.values, self.statuses
        out = []
        for i, svc in enumerate(SERVICES):
            if values[i] is None:
                continue
            for rule in ALERT_RULES:
                if not self._breach(rule, values[i], statuses[i]):
                    continue
                since = self.now
                while since > self.now - HISTORY_POINTS + 1:
                    past = self._snapshot(since - 1)
                    if past.values[i] is None or not self._breach(rule, past.values[i], past.statuses[i]):
                        break
                    since -= 1
                name, k, _, _, severity, template = rule
                out.append({"alert_id": f"{svc}/{name}", "severity": severity,
                            "source_service": svc, "rule_name": name,
                            "description": f"{svc}: " + template.format(v=values[i][k] if k is not None else 0),
                            "firing_since": timestamp(since)})
        out.sort(key=lambda a: hashlib.sha256(self._alert_salt + a["alert_id"].encode()).digest())
        return out

    @staticmethod
    def _breach(rule, v, status) -> bool:
        _, k, op, threshold, _, _ = rule
        if k is None:
            return status == threshold
        return v[k] > threshold if op == ">" else v[k] < threshold

    def alert_count(self) -> int:
        """How many alerts are firing now."""
        return self._current.alerts

    def metric_history(self, svc: str) -> list[dict]:
        """The last 30 points of ``svc``, minutes relative to the page, ending now."""
        i = SERVICE_INDEX[svc]
        points = []
        for m in range(self.now - HISTORY_POINTS + 1, self.now + 1):
            v = self.metrics_at(i, m)
            point = {"minute": m - self.page, "timestamp": timestamp(m)}
            for k, name in enumerate(METRIC_NAMES):
                point[name] = round(v[k], _ROUND[k])
            point["replicas"] = self._replicas_at(i, m)
            points.append(point)
        return points

    def health_check(self, svc: str) -> dict:
        i = SERVICE_INDEX[svc]
        v = self.metrics_at(i, self.now)
        status = self.statuses[i]
        return {"status": STATUS_NAMES[status],
                "response_time_ms": 30000 if status == DOWN else round(v[P50] * 1.5, 1),
                "replicas": self._replicas_at(i, self.now),
                "dependencies": {SERVICES[d]: "ok" if self.statuses[d] == HEALTHY else
                                 STATUS_NAMES[self.statuses[d]] for d in CALLEES[i]}}

    def deploy_history(self, svc: str) -> list[dict]:
        return [d.public() for d in self.deploys[SERVICE_INDEX[svc]]]


    # ---------------------------------------------------------------- logs
    def _entropy(self, i: int) -> bytes:
        b = self._log_bytes[i]
        if b is None:
            b = self._log_bytes[i] = log_entropy(self._log_seeds[i])
        return b

    def logs(self, svc: str, level: str | None, keyword: str | None, limit: int) -> list[dict]:
        """The newest ``limit`` matching lines of ``svc``, oldest first, on one clock."""
        i = SERVICE_INDEX[svc]
        ent = self._entropy(i)
        lines = [line for line in self._story[i] if line[0] <= self.now]
        for m in range(self.now - LOG_WINDOW + 1, self.now + 1):
            generated_lines(i, m, ent, self._snapshot(m), self._by_service[i], lines)
        lines.sort(key=lambda x: (x[0], x[1]))
        if level:
            lines = [x for x in lines if x[2] == level]
        if keyword:
            kw = keyword.lower()
            lines = [x for x in lines if kw in x[3].lower()]
        return [{"timestamp": timestamp(m, s), "level": lv, "service": svc, "message": msg,
                 "trace_id": tr} for m, s, lv, msg, tr in lines[-limit:]]


    # ---------------------------------------------------------------- remediation
    def _clear(self, c: Condition, at: int, cleared: list) -> None:
        c.cleared_at = at
        cleared.append(c.spec.id)
        for other in self.conditions:
            if other.cause is c and not other.spec.residual and other.active(at):
                self._clear(other, at, cleared)

    def restart(self, svc: str) -> RemediationResult:
        i, at = SERVICE_INDEX[svc], self.now + 1
        cleared: list = []
        relieved = False
        for c in self._by_service[i]:
            if not c.active(at) or c.benign:
                continue
            if c.spec.residual and "restart_service" in c.spec.cleared_by and c.cause_cleared(at):
                self._clear(c, at, cleared)
            else:
                c.reliefs.append(self.now)
                relieved = True
        self._story[i].append((self.now, 30, "INFO", f"Service {svc} restarted: all replicas recycled", None))
        if cleared:
            msg = f"{svc} restarted; it came back clean"
        elif relieved:
            msg = f"{svc} restarted; metrics reset (the underlying problem may recur)"
        elif self.statuses[i]:
            msg = f"{svc} restarted; symptoms unchanged"
        else:
            msg = f"{svc} restarted (it was already healthy)"
        return RemediationResult(msg, cleared, relieved=relieved)

    def can_rollback(self, svc: str) -> bool:
        return len(self.deploys[SERVICE_INDEX[svc]]) >= 2

    def rollback(self, svc: str) -> RemediationResult:
        """Pop the latest deploy; clears the service's deploy faults if that deploy was bad."""
        i, at = SERVICE_INDEX[svc], self.now + 1
        history = self.deploys[i]
        last = history.pop()
        prev = history[-1]
        cleared: list = []
        self._story[i].append((self.now, 40, "INFO",
                               f"Rolled back {svc} from {last.version} to {prev.version}", None))
        if last.bad:
            for c in self._by_service[i]:
                if c.spec.cause == "deploy" and c.active(at):
                    self._clear(c, at, cleared)
            return RemediationResult(f"Rolled back {svc} from {last.version} to {prev.version}",
                                     cleared, rolled_back_to=prev.sha)
        self._regressions += 1
        spec = ConditionSpec(
            id=f"{svc}:rollback_regression:{self._regressions}", service=svc, cause=None, ramp=1,
            target=(("error_rate", 22.0), ("latency_p99", 1400.0)), cleared_by=("restart_service",),
            logs=(LogTemplate("ERROR", f"Request failed after rollback to {prev.version}: "
                                       "incompatible schema version"),))
        c = Condition(spec, at, None)
        c.cleared_at = at + REGRESSION_MINUTES
        self.conditions.append(c)
        self._by_service[i].append(c)
        self._reachable = self._reachable_services()
        return RemediationResult(f"Rolled back {svc} from {last.version} to {prev.version}; "
                                 "errors rose after the rollback", rolled_back_to=prev.sha, harmful=True)

    def scale(self, svc: str, replicas: int) -> RemediationResult:
        """Set the replica count; more capacity clears or relieves capacity conditions only."""
        i, at = SERVICE_INDEX[svc], self.now + 1
        old = self._replicas_at(i, self.now)
        self._replicas[i].append((at, replicas))
        cleared: list = []
        relieved = False
        if replicas > old:
            for c in self._by_service[i]:
                if not c.active(at) or "scale_service" not in c.spec.cleared_by:
                    continue
                if c.cause is None or c.cause_cleared(at):
                    self._clear(c, at, cleared)
                else:
                    c.reliefs.append(self.now)
                    relieved = True
        self._story[i].append((self.now, 50, "INFO", f"Scaled {svc} from {old} to {replicas} replicas", None))
        return RemediationResult(f"Scaled {svc}: {old} -> {replicas} replicas", cleared, relieved=relieved)
