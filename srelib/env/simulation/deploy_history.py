"""An episode's deploy histories: the Deploy record, each service's scripted or routine
releases, the innocent recent deploy (maybe warming up) and other teams' deploys before the page.

The functions draw from the episode's stream in the order the simulation calls them, so the
histories (and everything drawn after them) are a pure function of the episode's seed.
"""

from __future__ import annotations

import functools
import random
from typing import Callable

from srelib.env.actions import SERVICES
from .deploy_notes import AUTHORS, FIRST_NOTE_CHOICES, NOTE_CHOICES, routine_note
from .incident_clock import timestamp
from .scenarios import ConditionSpec, LogTemplate, Scenario
from srelib.env.simulation.state import SERVICE_INDEX, Condition
from .topology import upstream_of

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


@functools.lru_cache(maxsize=1024)  # a pure function of a few services: asked at every reset
def _upstream_of(services: tuple) -> tuple[str, ...]:
    """Services that ``services`` call, directly or not, outside ``services``, in SERVICES order."""
    found = set(upstream_of(*services))
    return tuple(s for s in SERVICES if s in found)


def next_version(version: str, rng: random.Random) -> str:
    """A release after a generated ``vX.Y.Z`` (``v1.4.2`` -> ``v1.4.3`` or ``v1.5.x``)."""
    major, minor, patch = (int(x) for x in version.lstrip("v").split("."))
    if rng.random() < 0.5:
        return f"v{major}.{minor}.{patch + 1}"
    return f"v{major}.{minor + 1}.{rng.randrange(3)}"


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


def initial_history(scenario: Scenario, svc: str, before: int, rng: random.Random,
                    pick: Callable[[int], int]) -> list[Deploy]:
    """``svc``'s releases, oldest first: the scenario's scripted ones, or two routine ones
    days before the page; ``pick`` draws the small choices."""
    specs = scenario.deploy_specs(svc)
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


def innocent_deploy(sc: Scenario, deploys: list[list[Deploy]], before: int, page: int,
                    rng: random.Random) -> Condition | None:
    """Maybe add an innocent recent deploy; returns its warm-up condition, if any.

    On some seeds the deploy lands on a service upstream of the symptoms shortly before the
    page, and that service is still warming up (latency, CPU and errors of a seeded size,
    subsiding around the page): a plausible but wrong suspect. On others it is an older
    deploy of a quiet service, or there is none. Services with scripted deploys keep them.
    """
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
    history = deploys[SERVICE_INDEX[svc]]
    version, author = next_version(history[-1].version, rng), AUTHORS[rng.randrange(len(AUTHORS))]
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
    warmup.cleared_at = page + WARMUP_END[0] + rng.randrange(WARMUP_END[1] - WARMUP_END[0] + 1)
    return warmup


def later_deploys(sc: Scenario, deploys: list[list[Deploy]], before: int,
                  rng: random.Random) -> None:
    """Add the episode's good deploys of symptom-free services in the minutes before the page.

    They may land on services the symptomatic ones call or on their callers (on the path of
    the symptoms, a tempting suspect) or elsewhere; they change nothing in the simulation
    and the fault's onset precedes many of the deploys. The services a scenario involves,
    services with scripted deploys, and those already given a recent innocent deploy keep
    their histories.
    """
    # the involved services keep their histories; their callers may ship too, so a recent
    # deploy on the path of the symptoms is no sign of the culprit
    hit = set(sc.involved_services)
    scripted = [specs[-1].ago for _, specs in sc.deploys if specs]
    window = max(LATER_DEPLOY_WINDOW, 2 * min(scripted, default=LATER_DEPLOY_WINDOW))
    free = [s for s in SERVICES if s not in hit and not sc.deploy_specs(s)
            and deploys[SERVICE_INDEX[s]][-1].minute < before - window]
    count = LATER_DEPLOYS[rng.randrange(len(LATER_DEPLOYS))]
    for svc in rng.sample(free, min(count, len(free))):
        history = deploys[SERVICE_INDEX[svc]]
        version, minute = next_version(history[-1].version, rng), before - 1 - rng.randrange(window)
        author, sha = AUTHORS[rng.randrange(len(AUTHORS))], f"{rng.getrandbits(28):07x}"
        history.append(Deploy(version, minute, author, sha,
                              (rng.randrange(NOTE_CHOICES), None)))
