"""Fault families: what a fault looks like at run time and which bug shapes cause it.

A family's run-time signature starts at whichever service is the culprit: a condition on it
(metrics it pushes, log lines, the alerts those metrics trip) and consequences on the services
the fault reaches, its callers along ``DEPENDED_BY`` (and, for some families, a service it
overloads). The simulation (``infra``) plays them out; rolling back the culprit's bad deploy
clears the fault and its consequences. The no-fault family ``none`` has a benign effect only.
Text templates use ``<svc>`` (the culprit), ``<peer>`` (the service a consequence sits on),
``<noun>``/``<nouns>`` (the bug site's noun) and ``<feature>``; infra's own fill-ins such as
``{count}`` or ``{latency_p99:.0f}`` stay in braces.
"""

from __future__ import annotations

from dataclasses import dataclass

from srelib.env.actions import FAULT_CLASSES

from .shape_lib import SHAPES


@dataclass(frozen=True)
class Effect:
    """A condition template: metric targets (``((metric, (lo, hi)), ...)``, drawn per task),
    memory growth, a status floor and log lines ``(level, message, every, when)``."""

    target: tuple = ()
    memory_rate: tuple = (0.0, 0.0)
    status_floor: str | None = None
    ramp: int = 4
    logs: tuple = ()


@dataclass(frozen=True)
class Family:
    """A fault family (see the module doc)."""

    name: str
    fault_class: str
    severity: str
    titles: tuple
    summaries: tuple
    root_cause: str  # the correct root cause, a template
    keywords: tuple  # words of ``root_cause`` the declaration should use
    culprit: Effect
    callers: Effect | None = None  # a consequence on each direct caller of the culprit
    overloads: str | None = None  # "callee": the culprit's first dependency; or a service name
    overload: Effect | None = None
    ago: tuple = (35, 75)  # minutes between the bad deploy and the page

    @property
    def needs_fix(self) -> bool:
        return self.fault_class != "none"

    @property
    def shapes(self) -> tuple:
        """Its bug shapes from the registry; the no-fault family's are every shape, whose
        feature it ships bug-free."""
        return tuple(n for n, s in SHAPES.items() if s.family == self.name or not self.needs_fix)


_CALLER_LOGS = (("WARN", "Slow calls to <svc>: p99 {latency_p99:.0f}ms over the last minute", 2, None),
                ("ERROR", "Call to <svc> failed after {ms}ms: upstream error", 3, ("error_rate", ">", 4.0)))
_CALLERS = Effect(target=(("error_rate", (3.0, 14.0)), ("latency_p95", (250.0, 700.0)),
                          ("latency_p99", (600.0, 2400.0))), ramp=6, logs=_CALLER_LOGS)

FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family(
        "memory_leak", "memory_leak", "SEV2",
        titles=("Services restarting under memory pressure", "Intermittent 5xx and slow pages behind <caller>",
                "Flapping health checks and failed requests"),
        summaries=("Customers report intermittent errors. <Svc> health checks are flapping and a "
                   "HighMemoryUsage alert paged the on-call engineer.",
                   "Error rates are climbing on the customer path through <caller>; <svc> replicas "
                   "keep getting slower before they are killed.",
                   "Customers see intermittent errors through the api gateway; health checks "
                   "flap on <svc>, whose replicas get slower until they restart."),
        root_cause="memory leak in the <svc> service: <nouns> kept in memory are never released "
                   "since the deploy that shipped <feature>",
        keywords=("memory", "leak", "<svc>"),
        culprit=Effect(target=(("cpu", (30.0, 45.0)),), memory_rate=(1.2, 1.8), ramp=30, logs=(
            ("WARN", "GC pressure: heap usage at {memory:.0f}%, GC pause {pause_ms}ms", 2, ("memory", ">", 65.0)),
            ("ERROR", "Allocation failed while handling <nouns>: heap exhausted", 3, ("memory", ">", 80.0)),
            ("FATAL", "OutOfMemoryError: container <svc>-0 killed by the OOM killer (exit code 137)", 1,
             ("memory", ">", 96.0)))),
        callers=_CALLERS),
    Family(
        "pool_exhaustion", "pool_exhaustion", "SEV2",
        titles=("Requests through <caller> time out", "Latency spike, requests waiting downstream",
                "A service stops answering under normal load"),
        summaries=("Requests that reach <svc> hang until they time out. Latency alerts fired; CPU "
                   "is low and traffic is normal.",
                   "Users see timeouts at <caller>. The slow calls all wait on <svc>, whose "
                   "latency keeps rising while its CPU stays idle.",
                   "Requests through the api gateway time out; latency alerts fired on <svc> "
                   "although traffic and CPU are normal."),
        root_cause="pool exhaustion in the <svc> service: a failed call never hands its slot "
                   "back to the <noun> pool since the deploy that shipped <feature>",
        keywords=("pool", "exhaustion", "<svc>"),
        culprit=Effect(target=(("latency_p95", (700.0, 1500.0)), ("latency_p99", (1800.0, 4000.0)),
                               ("error_rate", (8.0, 22.0)), ("cpu", (8.0, 14.0))), ramp=8, logs=(
            ("WARN", "<Noun> pool: 0 idle, {count} callers waiting for a slot", 1, None),
            ("ERROR", "Timed out after {ms}ms waiting for a free <noun> slot", 2, ("error_rate", ">", 5.0)))),
        callers=_CALLERS),
    Family(
        "retry_storm", "retry_storm", "SEV2",
        titles=("Traffic surge inside the cluster, no surge outside", "Internal services and their dependencies saturated",
                "Error storm on <peer>"),
        summaries=("Internal request rates are several times normal while public traffic is flat. "
                   "CPU alerts fired and error rates are rising.",
                   "<Peer> is overloaded by internal traffic; <svc> sends far more requests than "
                   "its callers do."),
        root_cause="retry storm from the <svc> service: its <noun> client retries every failure "
                   "with no growing backoff since the deploy that shipped <feature>",
        keywords=("retry", "storm", "<svc>"),
        culprit=Effect(target=(("cpu", (82.0, 95.0)), ("rps", (1500.0, 3200.0)),
                               ("error_rate", (6.0, 18.0))), ramp=5, logs=(
            ("WARN", "Retrying <noun> request (attempt {count}) after a failure", 1, None),
            ("ERROR", "<Noun> request failed after retries: upstream busy", 2, ("error_rate", ">", 5.0)))),
        callers=_CALLERS, overloads="callee",
        overload=Effect(target=(("cpu", (85.0, 97.0)), ("latency_p99", (1200.0, 3000.0)),
                                ("error_rate", (5.0, 15.0))), ramp=5, logs=(
            ("WARN", "Request rate from <svc> far above normal: {count} req/s per replica", 1, None),
            ("ERROR", "Shedding load: queue full, rejecting request from <svc>", 2, None)))),
    Family(
        "config_change", "config_change", "SEV1",
        titles=("Most requests failing since this afternoon", "Errors everywhere after a change",
                "Elevated 5xx on <caller>"),
        summaries=("<Svc> is failing a large share of its requests since early this afternoon; "
                   "error-rate alerts fired across the request path.",
                   "Customers get errors from <caller>. The failures come from <svc>, which "
                   "rejects or mishandles requests with the current settings.",
                   "The api gateway returns 5xx for a large share of requests; the errors "
                   "trace back to <svc>."),
        root_cause="configuration change in the <svc> service: a <noun> setting is read wrongly "
                   "since the deploy that shipped <feature>",
        keywords=("configuration", "setting", "<svc>"),
        culprit=Effect(target=(("error_rate", (25.0, 48.0)), ("latency_p99", (400.0, 900.0))),
                       status_floor="degraded", ramp=2, logs=(
            ("ERROR", "<Noun> request rejected: invalid setting value in effect", 1, None),
            ("WARN", "Settings loaded for <nouns>; {count} requests failed validation", 3, None))),
        callers=_CALLERS, ago=(25, 70)),
    Family(
        "deadlock", "deadlock", "SEV1",
        titles=("Requests hang and pile up", "Throughput collapse behind <caller>",
                "Requests never complete under normal load"),
        summaries=("Requests to <svc> stall and never complete; its request rate has collapsed "
                   "while CPU is nearly idle. Latency alerts fired.",
                   "Users see spinning pages through <caller>. Work reaching <svc> stops and "
                   "never finishes.",
                   "Pages served by the api gateway spin until they time out; requests that "
                   "reach <svc> never complete."),
        root_cause="deadlock in the <svc> service: <nouns> code takes a lock it already holds or "
                   "takes two locks in opposite orders since the deploy that shipped <feature>",
        keywords=("deadlock", "lock", "<svc>"),
        culprit=Effect(target=(("latency_p95", (2500.0, 5000.0)), ("latency_p99", (6000.0, 12000.0)),
                               ("rps", (40.0, 90.0)), ("cpu", (4.0, 9.0)), ("error_rate", (6.0, 12.0))),
                       ramp=5, logs=(
            ("WARN", "{count} worker threads waiting on a lock in the <noun> code", 1, None),
            ("ERROR", "Request timed out after 30000ms in the <noun> handler", 2, None))),
        callers=_CALLERS),
    Family(
        "cache_thrash", "cache_thrash", "SEV2",
        titles=("Hit ratio collapse in the shared cache", "Slow pages, the cache is busy but useless",
                "Pages slow, database load climbing"),
        summaries=("The shared cache is evicting keys at a high rate and most lookups miss; "
                   "latency is up on the services that depend on it.",
                   "<Svc> got slow; its lookups miss the cache and the cache service churns "
                   "through keys."),
        root_cause="cache thrash caused by the <svc> service: its <noun> cache keys defeat the "
                   "shared cache since the deploy that shipped <feature>",
        keywords=("cache", "thrash", "<svc>"),
        culprit=Effect(target=(("latency_p95", (450.0, 800.0)), ("latency_p99", (1100.0, 2200.0)),
                               ("cpu", (45.0, 70.0))), ramp=6, logs=(
            ("WARN", "Cache hit ratio for <nouns> at {count}% of the usual", 2, None),
            ("WARN", "Cache miss storm: {count} misses per second on <noun> keys", 3, None))),
        callers=_CALLERS, overloads="cache",
        overload=Effect(target=(("cpu", (82.0, 96.0)), ("latency_p99", (40.0, 90.0))), ramp=4, logs=(
            ("WARN", "Evicting {count} keys per second: memory limit reached", 1, None),
            ("WARN", "Key churn from <svc>: most new keys are never read", 3, None)))),
    Family(
        "shared_dependency", "shared_dependency", "SEV2",
        titles=("Wrong numbers in responses between services", "Validation errors between services",
                "<Caller> rejecting responses from a dependency"),
        summaries=("Requests fail with validation errors where services exchange data; "
                   "error-rate alerts fired on <svc> and on the services calling it.",
                   "<Caller> rejects responses from <svc>: values are off in a way that looks "
                   "like a library change.",
                   "The api gateway reports failed requests with validation errors coming from "
                   "<svc>."),
        root_cause="shared dependency change in the <svc> service: its vendored helper library "
                   "changed behaviour in the deploy that shipped <feature>",
        keywords=("shared", "library", "<svc>"),
        culprit=Effect(target=(("error_rate", (14.0, 30.0)),), status_floor="degraded", ramp=3, logs=(
            ("ERROR", "ValueError in common helpers: result does not match the contract for <nouns>", 1, None),
            ("WARN", "{count} <noun> records failed the consistency check", 3, None))),
        callers=Effect(target=(("error_rate", (6.0, 16.0)),), ramp=4, logs=(
            ("ERROR", "Invalid response from <svc>: values failed validation", 2, None),))),
    Family(
        "none", "none", "SEV3",
        titles=("User report: <svc> slower since the latest release",
                "Report: <svc> 'broken' after this afternoon's deploy"),
        summaries=("A user reports that the <svc> deploy {<svc>_version} ({<svc>_ago} minutes ago) "
                   "'broke' it and that it feels slower. <Svc> latency is slightly above its usual "
                   "level; no alert has fired.",),
        root_cause="no fault: <svc> is working normally; the deploy that shipped <feature> is "
                   "fine and the slight slowness is normal load",
        keywords=("no", "fault", "normal"),
        culprit=Effect(target=(("latency_p50", (20.0, 28.0)), ("latency_p95", (120.0, 200.0)),
                               ("latency_p99", (300.0, 420.0))), ramp=3, logs=(
            ("INFO", "Request latency p99 {latency_p99:.0f}ms, within the objective", 4, None),)),
        ago=(20, 50)),
)}


def _check() -> None:
    for f in FAMILIES.values():
        if f.fault_class not in FAULT_CLASSES:
            raise ValueError(f"family {f.name}: fault class {f.fault_class!r} not in FAULT_CLASSES")
    unknown = sorted({s.family for s in SHAPES.values()} - set(FAMILIES))
    if unknown:
        raise ValueError(f"shapes name unknown families {unknown}; valid: {sorted(FAMILIES)}")


_check()
