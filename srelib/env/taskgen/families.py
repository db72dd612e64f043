"""Fault families: what a fault looks like at run time and which bug shapes cause it.

A family's run-time signature starts at whichever service is the culprit: a condition on it
(metrics it pushes, log lines, the alerts those metrics trip) and consequences on the services
the fault reaches, its callers along ``DEPENDED_BY`` (and, for some families, a service it
overloads). The simulation (``infra``) plays them out; rolling back the culprit's bad deploy
clears the fault and its consequences. The no-fault family ``none`` has a benign effect only:
organic load that slows the service and its callers, tripping alerts as a fault would.
What the page says (title, summary) comes from :data:`SYMPTOMS`: every symptom is shared by
several families, the no-fault one included, and names services drawn from those that feel the
fault and some that do not (``<a>``, ``<b>``, ``<x>``), so the page alone tells neither the class
nor the culprit. Text templates use ``<svc>`` (the culprit), ``<noun>``/``<nouns>`` (the bug
site's noun) and ``<feature>``; infra's own fill-ins such as ``{count}`` or
``{latency_p99:.0f}`` stay in braces.
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
    symptoms: tuple  # keys of SYMPTOMS: what the page may say, each shared with other families
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

#: What a page may say, by symptom: (titles, summaries). ``<x>``, ``<a>`` and ``<b>`` are services
#: the recipe draws (culprit or not); each symptom is shared by four families or more.
SYMPTOMS: dict[str, tuple[tuple, tuple]] = {
    "errors": (("Elevated 5xx behind <x>", "Errors on the request path through <x>",
                "Customers report failed requests"),
               ("Customers report failed requests. Error rates are up on <a> and <b>; the "
                "on-call engineer was paged.",
                "Requests through <a> fail intermittently; <b> shows errors in the same minutes.")),
    "slow": (("Slow pages behind <x>", "Latency up on <x>", "Requests slower than usual"),
             ("Pages are slow for customers. Latency is up on <a>; <b> looks slower too.",
              "Users report slow responses through <a> and <b> since early this afternoon.")),
    "restarts": (("Flapping health checks on <x>", "Replicas restarting behind <x>",
                  "Unstable replicas and failed requests"),
                 ("Health checks flap on <a> and some replicas restarted; <b> reports errors in "
                  "the same minutes.",
                  "Replicas of <a> were replaced twice this hour; customers going through <b> "
                  "see errors.")),
    "load": (("Load climbing inside the cluster", "CPU saturation behind <x>",
              "Busy services, flat public traffic"),
             ("Internal load is up: <a> and <b> are busier than usual while public traffic "
              "looks normal.",
              "<A> and <b> report more work than usual; dashboards show rising CPU.")),
    "stalls": (("Requests hang behind <x>", "Timeouts on <x>", "Work piling up"),
               ("Requests through <a> hang until they time out; <b> waits on its calls.",
                "Work reaching <a> takes much longer than usual and <b> times out on it.")),
}
#: How incidents are filed, whatever their cause: severity and the title's prefix.
SEVERITIES = ("SEV1", "SEV2", "SEV2", "SEV3")
TITLE_PREFIXES = ("", "", "", "User report: ")

FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family(
        "memory_leak", "memory_leak",
        symptoms=("restarts", "slow", "errors"),
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
        "pool_exhaustion", "pool_exhaustion",
        symptoms=("slow", "errors", "stalls"),
        root_cause="pool exhaustion in the <svc> service: a failed call never hands its slot "
                   "back to the <noun> pool since the deploy that shipped <feature>",
        keywords=("pool", "exhaustion", "<svc>"),
        culprit=Effect(target=(("latency_p95", (700.0, 1500.0)), ("latency_p99", (1800.0, 4000.0)),
                               ("error_rate", (8.0, 22.0)), ("cpu", (8.0, 14.0))), ramp=8, logs=(
            ("WARN", "<Noun> pool: 0 idle, {count} callers waiting for a slot", 1, None),
            ("ERROR", "Timed out after {ms}ms waiting for a free <noun> slot", 2, ("error_rate", ">", 5.0)))),
        callers=_CALLERS),
    Family(
        "retry_storm", "retry_storm",
        symptoms=("load", "errors", "slow"),
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
        "config_change", "config_change",
        symptoms=("errors", "restarts", "stalls"),
        root_cause="configuration change in the <svc> service: a <noun> setting is read wrongly "
                   "since the deploy that shipped <feature>",
        keywords=("configuration", "setting", "<svc>"),
        culprit=Effect(target=(("error_rate", (25.0, 48.0)), ("latency_p99", (400.0, 900.0))),
                       status_floor="degraded", ramp=2, logs=(
            ("ERROR", "<Noun> request rejected: invalid setting value in effect", 1, None),
            ("WARN", "Settings loaded for <nouns>; {count} requests failed validation", 3, None))),
        callers=_CALLERS, ago=(25, 70)),
    Family(
        "deadlock", "deadlock",
        symptoms=("stalls", "slow", "restarts"),
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
        "cache_thrash", "cache_thrash",
        symptoms=("slow", "load", "stalls"),
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
        "shared_dependency", "shared_dependency",
        symptoms=("errors", "load", "restarts"),
        root_cause="shared dependency change in the <svc> service: its vendored helper library "
                   "changed behaviour in the deploy that shipped <feature>",
        keywords=("shared", "library", "<svc>"),
        culprit=Effect(target=(("error_rate", (14.0, 30.0)),), status_floor="degraded", ramp=3, logs=(
            ("ERROR", "ValueError in common helpers: result does not match the contract for <nouns>", 1, None),
            ("WARN", "{count} <noun> records failed the consistency check", 3, None))),
        callers=Effect(target=(("error_rate", (6.0, 16.0)),), ramp=4, logs=(
            ("ERROR", "Invalid response from <svc>: values failed validation", 2, None),))),
    Family(
        "none", "none",
        symptoms=("slow", "errors", "load", "stalls", "restarts"),
        root_cause="no fault: <svc> is working normally; the deploy that shipped <feature> is "
                   "fine and the slowness is organic load, which the service absorbs",
        keywords=("no", "fault", "normal"),
        culprit=Effect(target=(("rps", (1300.0, 2400.0)), ("cpu", (74.0, 90.0)),
                               ("latency_p95", (300.0, 620.0)), ("latency_p99", (750.0, 1500.0))),
                       ramp=4, logs=(
            ("INFO", "Request rate above the usual for this hour; autoscaler added a replica", 4, None),
            ("INFO", "Request latency p99 {latency_p99:.0f}ms under organic load", 3, None))),
        callers=Effect(target=(("latency_p95", (200.0, 450.0)), ("latency_p99", (450.0, 1200.0)),
                               ("error_rate", (2.0, 12.0))),
                       ramp=5, logs=(("INFO", "Calls to <svc> slower than usual: p99 {latency_p99:.0f}ms",
                                      3, None),)),
        ago=(20, 50)),
)}


def _check() -> None:
    for f in FAMILIES.values():
        if f.fault_class not in FAULT_CLASSES:
            raise ValueError(f"family {f.name}: fault class {f.fault_class!r} not in FAULT_CLASSES")
        if not f.symptoms or any(s not in SYMPTOMS for s in f.symptoms):
            raise ValueError(f"family {f.name}: symptoms {f.symptoms} must be keys of SYMPTOMS")
    unknown = sorted({s.family for s in SHAPES.values()} - set(FAMILIES))
    if unknown:
        raise ValueError(f"shapes name unknown families {unknown}; valid: {sorted(FAMILIES)}")


_check()
