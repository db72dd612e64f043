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

import functools
import hashlib
import random
from datetime import date, timedelta
from typing import get_args

from .actions import DEPENDS_ON, SERVICES
from .topology import upstream_of
from .scenarios import METRIC_NAMES, ConditionSpec, LogTemplate, Scenario
from .types import Status

CPU, MEM, ERR, P50, P95, P99, RPS = range(7)
HEALTHY, DEGRADED, DOWN = 0, 1, 2
STATUS_NAMES: tuple[Status, ...] = get_args(Status)  # indexed by HEALTHY, DEGRADED, DOWN
RELIEF_MINUTES = 4  # a restart (or relieving scale) hides symptoms; they are back after this
REGRESSION_MINUTES = 6  # how long rolling back a good deploy hurts the service
HISTORY_POINTS = 30
LOG_WINDOW = 30
DEFAULT_REPLICAS = 3
INCIDENT_DATE = date(2025, 1, 15)

_IDX = {s: i for i, s in enumerate(SERVICES)}
_METRIC_IDX = {m: i for i, m in enumerate(METRIC_NAMES)}
_DEPS = tuple(tuple(_IDX[d] for d in DEPENDS_ON[s]) for s in SERVICES)

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
_LOG_SLOTS = 128
_LOG_SLOT_BYTES = 8
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

AUTHORS = ("alice", "amy", "bob", "carol", "charlie", "dan", "dave", "ed", "erin", "frankie",
           "lib-bot", "deploy-bot")
#: What good deploys say they do: varied, and often in the words of some fault class, so a
#: deploy note alone tells nothing about the fault.
DEPLOY_NOTES = (
    "Add request-id to access logs", "Bump base image to patch openssl",
    "Tune health-check timeout from 2s to 3s", "Add dashboard annotations",
    "Raise the connection pool from 20 to 40 connections",
    "Retry idempotent reads once with backoff on HTTP 503",
    "Tune GC: larger young generation, heap limit at 75% of the container",
    "Move feature flags to the central config service", "Rotate the service account secret",
    "Bump the shared HTTP client library to 4.12", "Pin transitive dependencies in requirements.lock",
    "Take the session registry lock only around the write", "Warm the local cache on startup",
    "Shorten the cache TTL of price lists to 60s", "Add tracing spans around request handlers",
    "Enable gzip on internal responses", "Remove the deprecated /v1/legacy endpoint",
    "Increase the readiness-probe grace period to 20s",
    "Log slow requests above 500ms with their route", "Upgrade the schema registry client",
    "Dependency bumps", "Bug fixes", "Minor performance fixes", "Refactor request validation",
)

#: How a deploy that ships a feature describes it; the generator's culprits and routine
#: deploys of every other service use the same templates, so neither the wording nor the
#: novelty of a note tells a feature that broke from one that did not.
FEATURE_NOTE_TEMPLATES = ("{Feature}", "Ship {feature}", "{area}: {feature}", "Roll out {feature}",
                          "{Feature} ({area})")
_FEATURE_THINGS = ("batched writes", "a read-through cache", "paged listing", "bulk import",
                   "async notifications", "per-tenant limits", "idempotent retries",
                   "lazy loading", "a compact wire format", "scheduled cleanup",
                   "streaming export", "soft deletes", "a warm standby", "shadow reads")
_FEATURE_NOUNS = (("invoice", "invoices"), ("webhook", "webhooks"), ("tenant", "tenants"),
                  ("shipment", "shipments"), ("coupon", "coupons"), ("profile", "profiles"),
                  ("report", "reports"), ("price", "prices"), ("audit", "audit events"),
                  ("export", "exports"), ("device", "devices"), ("address", "addresses"),
                  ("wishlist", "wishlists"), ("schedule", "schedules"), ("ledger", "ledger rows"),
                  ("segment", "segments"))
_FEATURE_AREAS = ("store", "client", "worker", "export", "index", "sync", "cache", "events")


NOTE_CHOICES, FIRST_NOTE_CHOICES = 2 * len(DEPLOY_NOTES), 3 * len(DEPLOY_NOTES)


def feature_note(template: str, feature: str, area: str) -> str:
    """A deploy note that ships ``feature`` in module ``area``, in one of
    :data:`FEATURE_NOTE_TEMPLATES`."""
    return (template.replace("{Feature}", feature[:1].upper() + feature[1:])
            .replace("{feature}", feature).replace("{area}", area))


def routine_note(k: int, sha: str, first_of: str | None = None) -> str:
    """The note of a routine deploy: ``k`` (drawn below :data:`NOTE_CHOICES`) picks a stock
    note, or, for the upper half, a feature note derived from the deploy's ``sha`` (no further
    draw, so an episode's random stream is the same whichever note it gets). The oldest deploy
    of a service (``first_of``: the service) draws ``k`` below :data:`FIRST_NOTE_CHOICES`: the
    top third is its "Initial ..." release, as likely on any service."""
    if k >= NOTE_CHOICES:
        if first_of is None:
            raise ValueError(f"k={k}: only a service's first deploy may be its initial release")
        return f"Initial {first_of.replace('_', ' ')} release"
    if k < len(DEPLOY_NOTES):
        return DEPLOY_NOTES[k]
    x = int(sha, 16)
    noun, plural = _FEATURE_NOUNS[x % len(_FEATURE_NOUNS)]
    thing = _FEATURE_THINGS[(x >> 4) % len(_FEATURE_THINGS)]
    area = f"{noun.split()[0]}_{_FEATURE_AREAS[(x >> 8) % len(_FEATURE_AREAS)]}"
    template = FEATURE_NOTE_TEMPLATES[(x >> 12) % len(FEATURE_NOTE_TEMPLATES)]
    return feature_note(template, f"{thing} for {plural}", area)


# (level, template, only on a healthy service)
_NOISE_LOGS = (
    ("INFO", "Flushed access log buffer: {n} entries", False),
    ("INFO", "Health probe ok: all dependencies reachable", True),
    ("INFO", "Connection pool: {a} active, {b} idle, max 50", False),
    ("DEBUG", "Local cache hit ratio {r}%", False),
    ("INFO", "Job 'metrics_export' finished in {d}ms", False),
    ("DEBUG", "Upstream TLS session resumed in {d}ms", False),
    ("INFO", "Config watcher: no changes", False),
    ("INFO", "GC cycle freed {a}MB in {d}ms", False),
)
_HERRING_LOGS = (
    ("WARN", "DNS lookup for {other}.internal took {d}ms (threshold 100ms)"),
    ("WARN", "TLS certificate for {other}.internal expires in {k} days"),
    ("WARN", "Disk usage on the log volume at {k}%: rotation recommended"),
    ("ERROR", "Metrics export to the collector timed out after {d}ms"),
    ("WARN", "Background job 'cleanup_sessions' took {d}ms (expected < 500ms)"),
)
#: Innocent deploys: how often one lands upstream of the symptoms (warming up) or on a quiet
#: service, the warm-up's p99 (ms), CPU and error-rate (%) ranges, and when it subsides (minutes
#: after the page). It never reaches a scenario's ``pinned_services``.
UPSTREAM_DEPLOY_CHANCE, QUIET_DEPLOY_CHANCE = 0.55, 0.2
#: Other teams ship too: how many good deploys of symptom-free services (often ones the
#: symptomatic services call) land shortly before the page (one count drawn per episode),
#: within twice the age of the scenario's newest scripted deploy (at least
#: ``LATER_DEPLOY_WINDOW`` minutes). About half of them land after that deploy, so the newest
#: deploy is often not the culprit's.
LATER_DEPLOYS = (1, 2, 2, 3, 3, 4)
LATER_DEPLOY_WINDOW = 20
WARMUP_P99 = (800.0, 5000.0)
WARMUP_CPU = (40.0, 92.0)
WARMUP_ERR = (1.0, 16.0)
WARMUP_END = (-2, 8)
#: Range of the factor on how much of an unhealthy callee's excess a caller feels.
COUPLING = (0.6, 1.6)
_HERRING_BYTE = 14  # a generic red herring appears when its byte is below this (about 5%/min)
_NOISE_BYTE = 102  # a noise line appears when its byte is below this (about 40%/min)


def _topological() -> tuple[int, ...]:
    order: list[int] = []

    def visit(i: int) -> None:
        if i not in order:
            for d in _DEPS[i]:
                visit(d)
            order.append(i)

    for i in range(len(SERVICES)):
        visit(i)
    return tuple(order)


_CALLEES_FIRST = _topological()
_NO_MASKS: frozenset = frozenset()
# day -> its date; bounded by construction: the days a scenario's minutes span (its deploy
# history and the episode's step budget), a few dozen of ~60 bytes
_DAY_CACHE: dict[int, str] = {}


@functools.lru_cache(maxsize=1024)  # a pure function of a few services: asked at every reset
def _upstream_of(services: tuple) -> tuple[str, ...]:
    """Services that ``services`` call, directly or not, outside ``services``, in SERVICES order."""
    found = set(upstream_of(*services))
    return tuple(s for s in SERVICES if s in found)


def _next_version(version: str, rng: random.Random) -> str:
    """A release after a generated ``vX.Y.Z`` (``v1.4.2`` -> ``v1.4.3`` or ``v1.5.x``)."""
    major, minor, patch = (int(x) for x in version.lstrip("v").split("."))
    if rng.random() < 0.5:
        return f"v{major}.{minor}.{patch + 1}"
    return f"v{major}.{minor + 1}.{rng.randrange(3)}"


def timestamp(minute: int, second: int = 0) -> str:
    """ISO timestamp of an absolute minute of the incident day (negative: days before)."""
    day, rem = divmod(minute, 1440)
    prefix = _DAY_CACHE.get(day)
    if prefix is None:
        prefix = _DAY_CACHE[day] = (INCIDENT_DATE + timedelta(days=day)).isoformat()
    return f"{prefix}T{rem // 60:02d}:{rem % 60:02d}:{second:02d}Z"


class Deploy:
    """A deploy as the history shows it; ``bad`` is hidden state, never shown to the agent.
    ``description`` is the note, or ``(k, first_of)`` of a :func:`routine_note`, written when
    first read (most episodes never look at most histories)."""

    __slots__ = ("version", "minute", "author", "sha", "_description", "bad")

    def __init__(self, version, minute, author, sha, description, bad=False):
        self.version, self.minute, self.author = version, minute, author
        self.sha, self._description, self.bad = sha, description, bad

    @property
    def description(self) -> str:
        if isinstance(self._description, tuple):
            k, first_of = self._description
            self._description = routine_note(k, self.sha, first_of)
        return self._description

    def public(self) -> dict:
        return {"version": self.version, "timestamp": timestamp(self.minute),
                "author": self.author, "commit_hash": self.sha, "description": self.description}


class Condition:
    """A live condition: its spec plus onset, clearing minute and relief minutes."""

    __slots__ = ("spec", "svc", "onset", "cleared_at", "reliefs", "targets", "floor", "masks",
                 "benign", "cause")

    def __init__(self, spec: ConditionSpec, onset: int, cause: Condition | None):
        self.spec, self.svc, self.onset, self.cause = spec, _IDX[spec.service], onset, cause
        self.cleared_at: int | None = None
        self.reliefs: list[int] = []
        self.targets = tuple((_METRIC_IDX[m], float(v)) for m, v in spec.target)
        self.floor = {None: HEALTHY, "degraded": DEGRADED, "down": DOWN}[spec.status_floor]
        self.masks = frozenset(_IDX[s] for s in spec.masks)
        self.benign = spec.cause is None and not spec.cleared_by

    def active(self, m: int) -> bool:
        return self.onset <= m and (self.cleared_at is None or m < self.cleared_at)

    def cause_cleared(self, m: int) -> bool:
        return self.cause is not None and not self.cause.active(m)

    def mult(self, m: int) -> float:
        for r in reversed(self.reliefs):
            if r < m:
                return min(1.0, (m - r) / RELIEF_MINUTES)
        return 1.0


class Snapshot:
    """Every service at one minute: values (None = quiet baseline), statuses, alert count."""

    __slots__ = ("values", "statuses", "alerts")

    def __init__(self, values, statuses, alerts):
        self.values, self.statuses, self.alerts = values, statuses, alerts


class RemediationResult:
    """What a remediation did: the cleared condition ids, the rollback target, harm, relief."""

    __slots__ = ("cleared", "rolled_back_to", "harmful", "relieved", "message")

    def __init__(self, message, cleared=(), rolled_back_to=None, harmful=False, relieved=False):
        self.message, self.cleared, self.rolled_back_to = message, list(cleared), rolled_back_to
        self.harmful, self.relieved = harmful, relieved


class _Picker:
    """Cheap small random choices from a block of the episode's random bytes."""

    __slots__ = ("_bytes", "_at")

    def __init__(self, block: bytes):
        self._bytes, self._at = block, -1

    def __call__(self, n: int) -> int:
        self._at += 1
        return self._bytes[self._at % len(self._bytes)] % n


class Infrastructure:
    """One episode's simulated infrastructure, built from a scenario and the episode's RNG."""

    def __init__(self, scenario: Scenario, rng: random.Random):
        # the episode's own stream, also keyed by the task: two tasks played on one seed share
        # no background (routine deploys, noise), so none can be learned across tasks
        rng = random.Random(hashlib.sha256(scenario.name.encode() + b"\0" + rng.randbytes(16)).digest())
        self.scenario = scenario
        pick = _Picker(rng.randbytes(256))
        shift = pick(4)  # every pre-page event moves together: the story stays consistent
        self.page = self.now = 14 * 60 + 25 + pick(31)
        before = self.page - shift
        jitter = rng.randbytes(len(SERVICES) * 7)
        self._base = tuple(
            tuple([v * (0.94 + 0.00047 * j) for v, j in zip(BASELINES[s], jitter[i * 7:i * 7 + 7])])
            for i, s in enumerate(SERVICES))
        self._noise = rng.randbytes(len(SERVICES) * _NOISE_SLOTS * 7)
        self._log_seeds = [rng.getrandbits(64) for _ in SERVICES]
        self._log_bytes: list[bytes | None] = [None] * len(SERVICES)
        self.deploys = [self._deploy_history(s, before, rng, pick) for s in SERVICES]
        warmup = self._innocent_deploy(before, rng) if scenario.innocent_deploy else None
        self._later_deploys(before, rng)
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
            self._story[_IDX[log.service]].append(
                (before - log.ago, pick(60), log.level, log.message.format_map(self.vars), trace))
        for h in scenario.red_herrings:
            if pick(256) < h.chance * 256:
                lo, hi = h.window
                minute = self.page + lo + pick(hi - lo + 1)
                trace = f"trace-{rng.getrandbits(24):06x}" if h.level in ("ERROR", "FATAL") else None
                self._story[_IDX[h.service]].append(
                    (minute, pick(60), h.level, h.message.format_map(self.vars), trace))
        self._snaps: dict[int, Snapshot] = {}
        self._reachable = self._reachable_services()
        self._regressions = 0
        self._alert_salt = rng.randbytes(8)  # the episode's order of alerts
        self._set_current()

    # ---------------------------------------------------------------- setup
    def _deploy_history(self, svc: str, before: int, rng: random.Random, pick) -> list[Deploy]:
        specs = self.scenario.deploy_specs(svc)
        if not specs:
            major, minor = 1 + pick(3), pick(10)
            out = []
            for k, ago in enumerate(((7 + pick(5)) * 1440, (2 + pick(3)) * 1440)):
                version, minute = f"v{major}.{minor + k}.{pick(10)}", before - ago - pick(600)
                author, sha = AUTHORS[pick(len(AUTHORS))], f"{rng.getrandbits(28):07x}"
                out.append(Deploy(version, minute, author, sha,
                                  (pick(FIRST_NOTE_CHOICES), svc) if k == 0
                                  else (pick(NOTE_CHOICES), None)))
            return out
        out = []
        for d in specs:
            version = d.version.replace("{n}", str(pick(10)))
            out.append(Deploy(version, before - d.ago, d.author or AUTHORS[pick(len(AUTHORS))],
                              d.sha or f"{rng.getrandbits(28):07x}", d.description, d.bad))
        return out

    def _innocent_deploy(self, before: int, rng: random.Random) -> Condition | None:
        """Maybe add an innocent recent deploy; returns its warm-up condition, if any.

        On some seeds the deploy lands on a service upstream of the symptoms shortly before the
        page, and that service is still warming up (latency, CPU and errors of a seeded size,
        subsiding around the page): a plausible but wrong suspect. On others it is an older
        deploy of a quiet service, or there is none. Services with scripted deploys keep them.
        """
        sc = self.scenario
        roll = rng.random()
        pinned = _upstream_of(sc.pinned_services)
        upstream = [s for s in _upstream_of(sc.involved_services)
                    if s not in pinned and not sc.deploy_specs(s)]
        harmful = any(c.cause is not None or c.cleared_by for c in sc.conditions)
        quiet = [s for s in SERVICES if s not in sc.involved_services and not sc.deploy_specs(s)]
        if roll < UPSTREAM_DEPLOY_CHANCE and upstream and harmful:
            # a service more of the symptomatic ones call is the more tempting suspect
            weights = [sum(svc in _upstream_of((s,)) for s in sc.involved_services) for svc in upstream]
            svc, ago, warming = rng.choices(upstream, weights)[0], 6 + rng.randrange(35), True
        elif roll < UPSTREAM_DEPLOY_CHANCE + QUIET_DEPLOY_CHANCE and quiet:
            svc, ago, warming = quiet[rng.randrange(len(quiet))], 35 + rng.randrange(115), False
        else:
            return None
        history = self.deploys[_IDX[svc]]
        version, author = _next_version(history[-1].version, rng), AUTHORS[rng.randrange(len(AUTHORS))]
        sha = f"{rng.getrandbits(28):07x}"
        deploy = Deploy(version, before - ago, author, sha, (rng.randrange(NOTE_CHOICES), None))
        history.append(deploy)
        if not warming:
            return None
        p99 = WARMUP_P99[0] + (WARMUP_P99[1] - WARMUP_P99[0]) * rng.random()
        cpu = WARMUP_CPU[0] + (WARMUP_CPU[1] - WARMUP_CPU[0]) * rng.random()
        err = WARMUP_ERR[0] + (WARMUP_ERR[1] - WARMUP_ERR[0]) * rng.random()
        spec = ConditionSpec(
            id=f"{svc}:deploy_warmup", service=svc, cause=None, ramp=2,
            target=(("latency_p95", 0.5 * p99), ("latency_p99", p99), ("cpu", cpu), ("error_rate", err)),
            logs=(LogTemplate("WARN", f"Warm-up after deploy {deploy.version}: connection pools "
                                      "refilling, p99 {latency_p99:.0f}ms", every=2),
                  LogTemplate("ERROR", "{count} requests reset while replicas restarted",
                              every=3, when=("error_rate", ">", 5.0))))
        warmup = Condition(spec, deploy.minute + 1, None)
        warmup.cleared_at = self.page + WARMUP_END[0] + rng.randrange(WARMUP_END[1] - WARMUP_END[0] + 1)
        return warmup

    def _later_deploys(self, before: int, rng: random.Random) -> None:
        """Add the episode's good deploys of symptom-free services in the minutes before the page.

        They may land on services the symptomatic ones call or on their callers (on the path of
        the symptoms, a tempting suspect) or elsewhere; they change nothing in the simulation
        and the fault's onset precedes many of the deploys. The services a scenario involves,
        services with scripted deploys, and those already given a recent innocent deploy keep
        their histories.
        """
        sc = self.scenario
        # the involved services keep their histories; their callers may ship too, so a recent
        # deploy on the path of the symptoms is no sign of the culprit
        hit = set(sc.involved_services)
        scripted = [specs[-1].ago for _, specs in sc.deploys if specs]
        window = max(LATER_DEPLOY_WINDOW, 2 * min(scripted, default=LATER_DEPLOY_WINDOW))
        free = [s for s in SERVICES if s not in hit and not sc.deploy_specs(s)
                and self.deploys[_IDX[s]][-1].minute < before - window]
        count = LATER_DEPLOYS[rng.randrange(len(LATER_DEPLOYS))]
        for svc in rng.sample(free, min(count, len(free))):
            history = self.deploys[_IDX[svc]]
            version, minute = _next_version(history[-1].version, rng), before - 1 - rng.randrange(window)
            author, sha = AUTHORS[rng.randrange(len(AUTHORS))], f"{rng.getrandbits(28):07x}"
            history.append(Deploy(version, minute, author, sha,
                                  (rng.randrange(NOTE_CHOICES), None)))

    def _conditions(self, before: int) -> list[Condition]:
        built: dict[str, Condition] = {}
        specs = {c.id: c for c in self.scenario.conditions}

        def build(spec: ConditionSpec) -> Condition:
            if spec.id not in built:
                cause = None
                if spec.cause == "deploy":
                    onset = self.deploys[_IDX[spec.service]][-1].minute + spec.delay
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
            masks = _NO_MASKS
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
            for d in _DEPS[i]:
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
            callers = {i for i in range(len(SERVICES)) if any(d in hit for d in _DEPS[i])}
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
        i = _IDX[svc]
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
        i = _IDX[svc]
        v = self.metrics_at(i, self.now)
        status = self.statuses[i]
        return {"status": STATUS_NAMES[status],
                "response_time_ms": 30000 if status == DOWN else round(v[P50] * 1.5, 1),
                "replicas": self._replicas_at(i, self.now),
                "dependencies": {SERVICES[d]: "ok" if self.statuses[d] == HEALTHY else
                                 STATUS_NAMES[self.statuses[d]] for d in _DEPS[i]}}

    def deploy_history(self, svc: str) -> list[dict]:
        return [d.public() for d in self.deploys[_IDX[svc]]]

    # ---------------------------------------------------------------- logs
    def _entropy(self, i: int) -> bytes:
        b = self._log_bytes[i]
        if b is None:
            b = self._log_bytes[i] = random.Random(self._log_seeds[i]).randbytes(
                _LOG_SLOTS * _LOG_SLOT_BYTES)
        return b

    def logs(self, svc: str, level: str | None, keyword: str | None, limit: int) -> list[dict]:
        """The newest ``limit`` matching lines of ``svc``, oldest first, on one clock."""
        i = _IDX[svc]
        ent = self._entropy(i)
        lines = [line for line in self._story[i] if line[0] <= self.now]
        for m in range(self.now - LOG_WINDOW + 1, self.now + 1):
            self._generated_lines(i, m, ent, lines)
        lines.sort(key=lambda x: (x[0], x[1]))
        if level:
            lines = [x for x in lines if x[2] == level]
        if keyword:
            kw = keyword.lower()
            lines = [x for x in lines if kw in x[3].lower()]
        return [{"timestamp": timestamp(m, s), "level": lv, "service": svc, "message": msg,
                 "trace_id": tr} for m, s, lv, msg, tr in lines[-limit:]]

    def _generated_lines(self, i: int, m: int, ent: bytes, out: list) -> None:
        """Noise, red herrings, condition lines and upstream-failure lines of service i at m."""
        off = (m % _LOG_SLOTS) * _LOG_SLOT_BYTES
        b0, b1, b2, b3, b4, b5, b6, b7 = ent[off:off + _LOG_SLOT_BYTES]
        trace = f"trace-{(b2 << 16) | (b3 << 8) | b6:06x}"
        snap = self._snapshot(m)
        values, statuses = snap.values, snap.statuses
        if b0 < _NOISE_BYTE:
            level, template, healthy_only = _NOISE_LOGS[b1 % len(_NOISE_LOGS)]
            if not (healthy_only and statuses[i]):
                out.append((m, b4 % 60, level, template.format(
                    n=200 + 37 * b2, a=2 + b3 % 30, b=b6 % 20, r=80 + b2 % 19, d=5 + 3 * b3), None))
        if b5 < _HERRING_BYTE:
            level, template = _HERRING_LOGS[b1 % len(_HERRING_LOGS)]
            out.append((m, b7 % 60, level, template.format(
                other=SERVICES[b3 % len(SERVICES)], d=150 + 11 * b2, k=3 + b6 % 80),
                trace if level == "ERROR" else None))
        masks = _NO_MASKS
        second = b4
        for c in self._by_service[i]:
            if c.onset > m or (c.cleared_at is not None and m >= c.cleared_at):
                continue
            masks = masks | c.masks
            if c.spec.logs and (not c.reliefs or c.mult(m) >= 0.75):
                second = self._condition_lines(c, m, values[i], (b2, b3, b6, b7), second, trace, out)
        for d in _DEPS[i]:
            st = statuses[d]
            if st == HEALTHY or d in masks:
                continue
            name = SERVICES[d]
            if st == DOWN:
                out.append((m, b7 % 60, "ERROR", f"Call to {name} failed: HTTP 503 from upstream, "
                            f"{20 + b2 % 180} requests failed in the last minute", trace))
            else:
                out.append((m, b7 % 60, "WARN", f"Slow responses from {name}: upstream p99 "
                            f"{values[d][P99]:.0f}ms over the last minute", None))

    @staticmethod
    def _condition_lines(c: Condition, m: int, v, fill_bytes, second: int, trace: str, out: list) -> int:
        """Append the lines condition c emits at minute m; returns the next free second."""
        age = m - c.onset
        stage = "cause_cleared" if c.cause_cleared(m) else "cause_active"
        fill = None
        for t in c.spec.logs:
            if age % t.every or (t.stage and t.stage != stage):
                continue
            if t.when is not None:
                metric, op, threshold = t.when
                x = v[_METRIC_IDX[metric]]
                if (x <= threshold) if op == ">" else (x >= threshold):
                    continue
            if fill is None:
                b2, b3, b6, b7 = fill_bytes
                peers = c.spec.peers
                fill = dict(zip(METRIC_NAMES, v), pause_ms=200 + 3 * b2, count=10 + b3,
                            ms=1000 + 40 * b6, trace=trace, peer=peers[b7 % len(peers)] if peers else "")
            second += 7
            out.append((m, second % 60, t.level, t.message.format_map(fill),
                        trace if t.level in ("ERROR", "FATAL") else None))
        return second

    # ---------------------------------------------------------------- remediation
    def _clear(self, c: Condition, at: int, cleared: list) -> None:
        c.cleared_at = at
        cleared.append(c.spec.id)
        for other in self.conditions:
            if other.cause is c and not other.spec.residual and other.active(at):
                self._clear(other, at, cleared)

    def restart(self, svc: str) -> RemediationResult:
        i, at = _IDX[svc], self.now + 1
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
        return len(self.deploys[_IDX[svc]]) >= 2

    def rollback(self, svc: str) -> RemediationResult:
        """Pop the latest deploy; clears the service's deploy faults if that deploy was bad."""
        i, at = _IDX[svc], self.now + 1
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
        i, at = _IDX[svc], self.now + 1
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
