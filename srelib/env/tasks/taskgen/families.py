"""Fault families: what a fault looks like at run time and which bug shapes cause it. This
module holds the types and the text they share; the families are the modules of
:mod:`.family_lib`, one per family.

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
    borrows: tuple = ()  # bug shapes of other families whose failure this one's signature fits

    @property
    def needs_fix(self) -> bool:
        return self.fault_class != "none"

    @property
    def shapes(self) -> tuple:
        """Its bug shapes from the registry (those naming it, and those it borrows); the
        no-fault family's are every shape, whose feature it ships bug-free."""
        return tuple(n for n, s in SHAPES.items()
                     if s.family == self.name or n in self.borrows or not self.needs_fix)


_CALLER_LOGS = (("WARN", "Slow calls to <svc>: p99 {latency_p99:.0f}ms over the last minute", 2, None),
                ("ERROR", "Call to <svc> failed after {ms}ms: upstream error", 3, ("error_rate", ">", 4.0)))
#: The consequence most families have on each direct caller of the culprit.
CALLERS = Effect(target=(("error_rate", (3.0, 14.0)), ("latency_p95", (250.0, 700.0)),
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
