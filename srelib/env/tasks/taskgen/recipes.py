"""Recipes: a candidate task is (family, culprit service, bug site); this module builds it.

A site is a shape of the family instantiated for one of the service's nouns (``quote_lru``).
From the candidate id and the suite key (:mod:`srelib.env.tasks.surface`), through seeded streams
derived from them, come:

* the repository history (:func:`.commits.history`, built from :class:`History` here): the
  base, the site's component, the feature commit that carries the bug and innocent commits of
  the same shapes around it; the files of the reference fix and the hidden tests;
* the incident (:func:`scenario_raw`): the family's signature on the culprit and its callers,
  the culprit's deploys (older ones routine, as ``infra`` draws every service's), one or two
  other services deploying in the same window, a page (title, summary, severity) drawn from
  symptoms several families share, and the answer. No surface field tells the culprit, the
  class or the bad commit on its own (:mod:`srelib.analysis.tell_audit` checks).

Everything is a pure function of GENERATOR_VERSION, the suite key and the id: no ``hash()`` of strings, no
set ordering, no clock.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from datetime import datetime, timezone

from srelib.env.actions import DEPENDED_BY, DEPENDS_ON, SERVICES
from srelib.env.simulation.incident_clock import INCIDENT_DATE, MAX_SHIFT, PAGE_MINUTE
from srelib.env.tasks.surface import MAX_JITTER_MIN, is_public, keyed
from srelib.env.simulation.deploy_notes import (AUTHORS, DEPLOY_NOTES, FEATURE_NOTE_TEMPLATES,
                                     FIRST_NOTE_CHOICES, NOTE_CHOICES, feature_note, routine_note)

from .bases import BASES
from .families import SEVERITIES, SYMPTOMS, TITLE_PREFIXES, Effect, Family
from .family_lib import FAMILIES
from .shape_lib import SHAPE_SPLITS, SHAPES
from .shapes import Shape, fill

GENERATOR_VERSION = "2"


@dataclass(frozen=True)
class Candidate:
    """One candidate task: ``<family>.<service>.<site>``, the site being ``<noun>_<shape>``."""

    family: str
    service: str
    noun: str
    plural: str
    shape: str

    @property
    def site(self) -> str:
        return f"{self.noun}_{self.shape}"

    @property
    def task_id(self) -> str:
        return f"{self.family}.{self.service}.{self.site}"

    @property
    def repo_name(self) -> str:
        return f"gen.{self.task_id}"


def _stream_digest(text: str) -> bytes:
    """The digest a drawn value of ``text`` comes from: keyed by the suite key
    (:mod:`srelib.env.tasks.surface`; the public suite's streams are the plain SHA-256 they always
    were)."""
    return hashlib.sha256(text.encode()).digest() if is_public() else keyed("taskgen\0" + text)


def rng_for(task_id: str, purpose: str) -> random.Random:
    """A stream seeded from the suite key, the generator version, the id and a purpose
    (stable everywhere)."""
    digest = _stream_digest(f"{GENERATOR_VERSION}:{task_id}:{purpose}")
    return random.Random(int.from_bytes(digest[:8], "big"))


def _sites(family: Family, service: str) -> list[tuple[str, str, str]]:
    """``(noun, plural, shape)`` of every site of ``family`` in ``service``."""
    nouns = BASES[service].nouns
    if family.needs_fix:
        return [(n, p, s) for s in family.shapes for n, p in nouns]
    # the no-fault family: one shipped feature per noun, every shape taken in turn
    offset = SERVICES.index(service) * len(nouns)
    return [(n, p, family.shapes[(offset + i) % len(family.shapes)]) for i, (n, p) in enumerate(nouns)]


def candidates() -> dict[str, Candidate]:
    """Every candidate, by id, in family, service, site order."""
    out = {}
    for family in FAMILIES.values():
        for service in SERVICES:
            for noun, plural, shape in _sites(family, service):
                c = Candidate(family.name, service, noun, plural, shape)
                out[c.task_id] = c
    return out


def split_of(shape: str) -> str:
    """``"train"`` or ``"heldout"``: the split of every task whose bug (or, in the no-fault
    family, shipped feature) has ``shape``. Whole shapes are held out, each fault family
    holding out some of its shapes, so no held-out task shares its shape with a train task."""
    if shape not in SHAPE_SPLITS:
        raise ValueError(f"unknown shape {shape!r}; valid: {sorted(SHAPE_SPLITS)}")
    return SHAPE_SPLITS[shape]


def templates_for(templates: tuple, split: str) -> tuple:
    """The story templates (a symptom's titles or summaries) a split's incidents draw from,
    dealt out in turn, train first, so a held-out page is not one a train page used; a single
    template is shared."""
    if split not in ("train", "heldout"):
        raise ValueError(f"unknown split {split!r}; valid: ['train', 'heldout']")
    if len(templates) < 2:
        return templates
    return templates[0 if split == "train" else 1::2]


# ───────────────────────────────────────────────────────────────────── the repository
@dataclass(frozen=True)
class CommitSpec:
    """A commit as built: sha, author, ISO date, message and the files it sets."""

    sha: str
    author: str
    date: str
    message: str
    files: tuple  # ((path, text), ...)


@dataclass(frozen=True)
class History:
    """A candidate's repository: commits oldest first, the bad one's index, fix and tests."""

    commits: tuple
    bad_index: int
    fix: tuple | None  # ((path, text), ...) the reference fix rewrites; None: no change needed
    probes: tuple  # ((file, text),)
    checks: tuple
    module_path: str
    feature: str


def sha_for(task_id: str, k: int) -> str:
    """The stored sha of a candidate's ``k``-th commit (keyed by the suite key)."""
    return _stream_digest(f"{GENERATOR_VERSION}:{task_id}:commit:{k}").hex()[:7]


def module_path(shape: Shape, c: Candidate) -> str:
    """Where the site's module lives in the candidate's repository."""
    if shape.module.startswith("common/"):
        return shape.module
    return f"{BASES[c.service].package}/{fill(shape.module, c.noun, c.plural, '')}"


# ─────────────────────────────────────────────────────────────────────── the incident
def _draw(rng: random.Random, span: tuple) -> float:
    lo, hi = span
    return round(lo + (hi - lo) * rng.random(), 1)


def _text(template: str, words: dict) -> str:
    for key, value in words.items():
        template = template.replace(key, value)
    return template


def _condition(cid: str, service: str, cause: str | None, effect: Effect, rng, words: dict,
               scale: float = 1.0) -> dict:
    raw = {"id": cid, "service": service, "cause": cause, "ramp": effect.ramp,
           "target": [[m, round(_draw(rng, span) * (scale if m != "rps" else 1.0), 1)]
                      for m, span in effect.target],
           "logs": [{"level": lv, "message": _text(msg, words), "every": every,
                     **({"when": list(when)} if when else {})}
                    for lv, msg, every, when in effect.logs]}
    if effect.memory_rate[1]:
        raw["memory_rate"] = _draw(rng, effect.memory_rate)
    if effect.status_floor:
        raw["status_floor"] = effect.status_floor
    if cause is None:
        raw["ago"] = 30 + rng.randrange(10)
    return raw


def _display(service: str) -> str:
    return service.replace("_", " ")


#: How often the bad deploy's note is a stock note rather than the feature it ships.
STOCK_NOTE_CHANCE = 0.3
_HERRINGS = (("WARN", "Slow query: SELECT on {noun}_audit took 840ms"),
             ("WARN", "Eviction rate above normal: 120 keys/s"),
             ("WARN", "TLS handshake with {peer}.internal took 310ms"),
             ("ERROR", "Webhook delivery to partner endpoint failed: HTTP 502"),
             ("WARN", "Thread pool queue at 70% on the batch exporter"))


def _culprit_deploys(c: Candidate, h: History, family: Family, ago: int, area: str,
                     rng: random.Random) -> list[dict]:
    """The culprit's deploys, drawn as the simulation draws every other service's: two routine
    releases days before (ages and notes as ``infra`` draws them), each of a commit older than
    the next deploy's and dated before its own (:func:`_deployable`), then the deploy of the
    bad commit, whose note is a stock note or the feature in a routine template."""
    major, minor = 1 + rng.randrange(3), rng.randrange(10)
    middle_ago = (2 + rng.randrange(3)) * 1440 + rng.randrange(600)
    oldest_ago = (7 + rng.randrange(5)) * 1440 + rng.randrange(600)
    middle = _deployable(h, h.bad_index, middle_ago)[-1]
    oldest = _deployable(h, middle, oldest_ago)
    older = [(oldest[rng.randrange(len(oldest))], oldest_ago), (middle, middle_ago)]
    if rng.random() < STOCK_NOTE_CHANCE:
        note = DEPLOY_NOTES[rng.randrange(len(DEPLOY_NOTES))]
    else:
        template = FEATURE_NOTE_TEMPLATES[rng.randrange(len(FEATURE_NOTE_TEMPLATES))]
        note = feature_note(template, h.feature, area)
    out = []
    for k, (index, minutes) in enumerate(older + [(h.bad_index, ago)]):
        commit = h.commits[index]
        bad = index == h.bad_index
        out.append({"version": f"v{major}.{minor + k}.{'{n}' if k == 0 else rng.randrange(10)}",
                    "ago": minutes, "sha": commit.sha, "author": commit.author,
                    "description": note if bad else _older_note(k, commit.sha, c.service, rng),
                    **({"bad": True} if bad and family.needs_fix else {})})
    return out


def _deployable(h: History, upto: int, ago: int) -> list[int]:
    """The indices below ``upto`` (at least the base, 0) of the commits that every episode shows
    dated before a deploy ``ago`` minutes before the page: however early the page and however
    far the episode moves the commit's date (:data:`~srelib.env.tasks.surface.MAX_JITTER_MIN`)."""
    earliest = PAGE_MINUTE - MAX_SHIFT - ago  # the deploy's minute of the incident day, at its earliest
    day0 = datetime(INCIDENT_DATE.year, INCIDENT_DATE.month, INCIDENT_DATE.day, tzinfo=timezone.utc)
    fits = [k for k in range(1, upto)
            if (datetime.fromisoformat(h.commits[k].date.replace("Z", "+00:00")) - day0)
            .total_seconds() // 60 + MAX_JITTER_MIN < earliest]
    return [0, *fits]


def _older_note(k: int, sha: str, service: str, rng: random.Random) -> str:
    """The note of a service's ``k``-th deploy, drawn as ``infra`` draws routine ones."""
    return routine_note(rng.randrange(FIRST_NOTE_CHOICES), sha, service) if k == 0 else \
        routine_note(rng.randrange(NOTE_CHOICES), sha)


def _routine_deploys(service: str, family: Family, rng: random.Random) -> list[dict]:
    """A service that also shipped shortly before the page: two routine releases days before
    and one within the family's deploy window, drawn as the culprit's are."""
    major, minor = 1 + rng.randrange(3), rng.randrange(10)
    agos = ((7 + rng.randrange(5)) * 1440 + rng.randrange(600), (2 + rng.randrange(3)) * 1440 + rng.randrange(600),
            family.ago[0] + rng.randrange(family.ago[1] - family.ago[0] + 1))
    out = []
    for k, minutes in enumerate(agos):
        sha = f"{rng.getrandbits(28):07x}"
        out.append({"version": f"v{major}.{minor + k}.{'{n}' if k == 0 else rng.randrange(10)}",
                    "ago": minutes, "sha": sha, "author": AUTHORS[rng.randrange(len(AUTHORS))],
                    "description": _older_note(k, sha, service, rng)})
    return out


def _page(family: Family, involved: list[str], rng: random.Random, split: str) -> tuple[str, str]:
    """The page's title and summary: a symptom of the family, naming services drawn from those
    the fault reaches, the api gateway and two that it does not reach (the culprit is one
    candidate among them), in templates of the task's split."""
    others = [s for s in SERVICES if s not in involved and s != "api_gateway"]
    named = list(dict.fromkeys([*involved, "api_gateway", *rng.sample(others, min(2, len(others)))]))
    a, b = rng.sample(named, 2)
    x = named[rng.randrange(len(named))]
    titles, summaries = (templates_for(t, split)
                         for t in SYMPTOMS[family.symptoms[rng.randrange(len(family.symptoms))]])
    words = {"<x>": _display(x), "<A>": _display(a).capitalize(), "<a>": _display(a), "<b>": _display(b)}
    title = TITLE_PREFIXES[rng.randrange(len(TITLE_PREFIXES))] + titles[rng.randrange(len(titles))]
    return _text(title, words), _text(summaries[rng.randrange(len(summaries))], words)


def scenario_raw(c: Candidate, h: History, split: str, order: int) -> dict:
    """The scenario as the loader's JSON dict (validated by ``scenarios``)."""
    family = FAMILIES[c.family]
    rng = rng_for(c.task_id, "incident")
    callers = [s for s in DEPENDED_BY[c.service]]
    overloaded = None
    if family.overloads == "callee":
        overloaded = next(iter(DEPENDS_ON[c.service]), None)
    elif family.overloads and family.overloads != c.service:
        overloaded = family.overloads
    area = h.module_path.rsplit("/", 1)[-1][:-3]
    words = {"<Svc>": _display(c.service).capitalize(), "<svc>": c.service,
             "<Noun>": c.noun.capitalize(), "<nouns>": c.plural, "<noun>": c.noun,
             "<feature>": h.feature}

    cause = "deploy" if family.needs_fix else None
    culprit_id = f"{c.service}:{family.name}"
    conditions = [_condition(culprit_id, c.service, cause, family.culprit, rng, words)]
    involved = [c.service]
    if overloaded and family.overload:
        conditions.append(_condition(f"{overloaded}:overloaded", overloaded, culprit_id,
                                     family.overload, rng, words))
        involved.append(overloaded)
    if family.callers:
        for s in callers:
            conditions.append(_condition(f"{s}:upstream_{c.service}", s, culprit_id, family.callers,
                                         rng, words, scale=0.6 + rng.random()))
            if family.needs_fix:  # organic load on the callers is part of no incident
                involved.append(s)
    ago = family.ago[0] + rng.randrange(family.ago[1] - family.ago[0] + 1)
    deploys = {c.service: _culprit_deploys(c, h, family, ago, area, rng)}
    for other in rng.sample([s for s in SERVICES if s != c.service], 1 + rng.randrange(2)):
        deploys[other] = _routine_deploys(other, family, rng)
    title, summary = _page(family, involved, rng, split)
    herrings = rng.sample(_HERRINGS, 2)
    others = [s for s in SERVICES if s not in involved]
    return {
        "name": c.task_id, "order": order, "title": title,
        "severity": SEVERITIES[rng.randrange(len(SEVERITIES))], "summary": summary,
        "root_cause_service": c.service, "acceptable_services": [c.service],
        "fault_class": family.fault_class,
        "correct_root_cause": _text(family.root_cause, words),
        "keywords": [_text(k, words) for k in family.keywords],
        "involved_services": involved,
        "required_remediation": [f"rollback_deploy:{c.service}"] if family.needs_fix else [],
        "needs_fix": family.needs_fix, "repo": c.repo_name,
        "bad_commit": h.commits[h.bad_index].sha if family.needs_fix else None,
        "expected_p1_steps": 5, "expected_p2_steps": 5, "max_steps": 40,
        "heldout": split == "heldout",
        "deploys": deploys,
        "conditions": conditions,
        "logs": [{"service": c.service, "ago": ago, "level": "INFO",
                  "message": f"Deploy {{{c.service}_version}} started: rolling update initiated"},
                 {"service": c.service, "ago": ago - 1, "level": "INFO",
                  "message": f"Deploy {{{c.service}_version}} complete"}],
        "red_herrings": [{"service": others[rng.randrange(len(others))] if others else c.service,
                          "level": lv, "message": _text(msg, {"{noun}": c.noun,
                                                              "{peer}": SERVICES[rng.randrange(7)]})}
                         for lv, msg in herrings],
    }
