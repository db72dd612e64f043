"""Recipes: a candidate task is (family, culprit service, bug site); this module builds it.

A site is a shape of the family instantiated for one of the service's nouns (``quote_lru``).
From the candidate id alone, and a seeded stream derived from it, come:

* the repository history (:func:`history`): the service's base, an innocent commit that adds
  the site's working component, the commit that ships a feature and carries the bug (for the
  no-fault family: the feature alone), and sometimes later innocent commits, all subjects in
  one ``area: what`` style;
* the files of the reference fix (the bug's inverse, feature kept) and the hidden tests;
* the incident (:func:`scenario_raw`): the family's signature on the culprit and its callers,
  the culprit's deploys of those commits, a title, a summary and the answer.

Everything is a pure function of GENERATOR_VERSION and the id: no ``hash()`` of strings, no
set ordering, no clock.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from srelib.env.actions import DEPENDED_BY, DEPENDS_ON, SERVICES
from srelib.env.infra import AUTHORS

from .bases import BASES
from .families import FAMILIES, Effect, Family
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


def rng_for(task_id: str, purpose: str) -> random.Random:
    """A stream seeded from the generator version, the id and a purpose (stable everywhere)."""
    digest = hashlib.sha256(f"{GENERATOR_VERSION}:{task_id}:{purpose}".encode()).digest()
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
    """The story templates (titles, summaries) a split's incidents draw from, so a held-out
    story is not one a train task told: the templates that name no caller or peer first, then
    the others, dealt out in turn (train first). A family with a single template shares it, as
    does a service that no template of its split fits."""
    if split not in ("train", "heldout"):
        raise ValueError(f"unknown split {split!r}; valid: ['train', 'heldout']")
    if len(templates) < 2:
        return templates
    dealt = sorted(templates, key=lambda t: "<caller>" in t.lower() or "<peer>" in t.lower())
    return tuple(dealt[0 if split == "train" else 1::2])


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


def _sha(task_id: str, k: int) -> str:
    return hashlib.sha256(f"{GENERATOR_VERSION}:{task_id}:commit:{k}".encode()).hexdigest()[:7]


def _module_path(shape: Shape, c: Candidate) -> str:
    if shape.module.startswith("common/"):
        return shape.module
    return f"{BASES[c.service].package}/{fill(shape.module, c.noun, c.plural, '')}"


def _later_commits(c: Candidate, tree: dict, rng: random.Random, what: str) -> list[tuple[str, dict]]:
    """Innocent commits after the bad one: none, a README line, an export list, a logger, a test."""
    base = BASES[c.service]
    core = tree[f"{base.package}/core.py"]
    func = next(line[4:].split("(", 1)[0] for line in core.splitlines() if line.startswith("def "))
    doc_end = core.index('"""', 3) + 3
    first_def = core.index("\n\n\ndef ")
    kinds = {
        "readme": ("readme: describe " + what,
                   {"README.md": tree["README.md"] + f"\nIt also holds {what}.\n"}),
        "exports": (f"core: export {func} explicitly",
                    {f"{base.package}/core.py":
                     core[:doc_end] + f'\n\n__all__ = ["{func}"]' + core[doc_end:]}),
        "logger": ("core: add a module logger",
                   {f"{base.package}/core.py": core[:doc_end] + "\n\nimport logging"
                    + core[doc_end:first_def] + "\n\nLOG = logging.getLogger(__name__)"
                    + core[first_def:]}),
        "tests": (f"tests: check that {base.package}.core imports cleanly",
                  {"tests/test_core.py": tree["tests/test_core.py"]
                   + f"\n\ndef test_core_imports():\n    import {base.package}.core  # noqa: F401\n"}),
    }
    plans = (("exports",), ("logger",), ("readme", "exports"), ("tests", "logger"),
             ("exports", "readme"), ("readme",), ("tests",), (), ())  # at most one edit of core
    return [kinds[k] for k in plans[rng.randrange(len(plans))]]


def history(c: Candidate) -> History:
    """The candidate's repository (see the module doc)."""
    family, shape, base = FAMILIES[c.family], SHAPES[c.shape], BASES[c.service]
    rng = rng_for(c.task_id, "history")
    path = _module_path(shape, c)
    area = path.rsplit("/", 1)[-1][:-3]

    def f(text: str) -> str:
        return fill(text, c.noun, c.plural, base.package)

    what, feature = f(shape.what), f(shape.feature)
    test_path = f"tests/test_{area}.py"
    component = {path: f(shape.source), test_path: f(shape.tests)}
    if path.startswith("common/"):
        component["common/__init__.py"] = '"""Helpers vendored from the shared platform library."""\n'
    tree = dict(base.files())
    steps = [(f"core: initial {c.service.replace('_', ' ')} service",
              f"{base.description}\n\nThe package, its domain module and their tests.", base.files())]
    steps.append((f"{area}: add {what}", f"Adds {what}, with tests.", component))
    tree.update(component)
    shipped = f(shape.bad() if family.needs_fix else shape.good)
    change = {path: shipped, test_path: tree[test_path] + f(shape.feature_tests)}
    steps.append((f"{area}: {feature}",
                  f"Adds {feature}; {area} otherwise behaves as before.",
                  change))
    tree.update(change)
    bad_index = len(steps) - 1
    for subject, files in _later_commits(c, tree, rng, what):
        steps.append((subject, "", files))
        tree.update(files)
    dates = [f"2024-12-{rng.randrange(1, 20):02d}T{9 + rng.randrange(8):02d}:{rng.randrange(60):02d}:00Z",
             f"2025-01-{rng.randrange(9, 13):02d}T{9 + rng.randrange(8):02d}:{rng.randrange(60):02d}:00Z",
             f"2025-01-15T12:{rng.randrange(10, 40):02d}:00Z"]
    dates += [f"2025-01-15T13:{10 + 9 * k + rng.randrange(8):02d}:00Z" for k in range(len(steps) - 3)]
    commits = tuple(
        CommitSpec(_sha(c.task_id, k), AUTHORS[rng.randrange(len(AUTHORS) - 2)], dates[k],
                   subject + (f"\n\n{body}" if body else ""), tuple(sorted(files.items())))
        for k, (subject, body, files) in enumerate(steps))
    fix = ((path, f(shape.good)),) if family.needs_fix else None
    hidden = f"test_{area}.py"
    return History(commits, bad_index, fix, ((hidden, f(shape.probes)),), ((hidden, f(shape.checks)),),
                   path, feature)


# ─────────────────────────────────────────────────────────────────────── the incident
def _draw(rng: random.Random, span: tuple) -> float:
    lo, hi = span
    return round(lo + (hi - lo) * rng.random(), 1)


def _text(template: str, words: dict) -> str:
    for key, value in words.items():
        template = template.replace(key, value)
    return template


def _condition(cid: str, service: str, cause: str, effect: Effect, rng, words: dict,
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


_DEPLOY_NOTES = ("{Feature}", "Ship {feature}", "{area}: {feature}", "Roll out {feature}",
                 "{Feature} ({area})")
_HERRINGS = (("WARN", "Slow query: SELECT on {noun}_audit took 840ms"),
             ("WARN", "Eviction rate above normal: 120 keys/s"),
             ("WARN", "TLS handshake with {peer}.internal took 310ms"),
             ("ERROR", "Webhook delivery to partner endpoint failed: HTTP 502"),
             ("WARN", "Thread pool queue at 70% on the batch exporter"))


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
    peer = overloaded
    caller = callers[rng.randrange(len(callers))] if callers else None
    area = h.module_path.rsplit("/", 1)[-1][:-3]
    words = {"<Svc>": _display(c.service).capitalize(), "<svc>": c.service,
             "<Noun>": c.noun.capitalize(), "<nouns>": c.plural, "<noun>": c.noun,
             "<feature>": h.feature, "<Caller>": _display(caller or "").capitalize(),
             "<caller>": _display(caller or ""), "<Peer>": _display(peer or "").capitalize(),
             "<peer>": _display(peer or "")}

    def pick(templates: tuple) -> str:
        def usable(among):
            return [t for t in among if (caller or "<caller>" not in t.lower())
                    and (peer or "<peer>" not in t.lower())]
        choices = usable(templates_for(templates, split)) or usable(templates)
        return _text(choices[rng.randrange(len(choices))], words)

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
            involved.append(s)
    ago = family.ago[0] + rng.randrange(family.ago[1] - family.ago[0] + 1)
    major = 1 + rng.randrange(4)
    minor = rng.randrange(3, 9)
    notes = (f"Initial {_display(c.service)} service",
             f"Add {fill(SHAPES[c.shape].what, c.noun, c.plural, '')}",
             _text(_DEPLOY_NOTES[rng.randrange(len(_DEPLOY_NOTES))],
                   {"{Feature}": h.feature[:1].upper() + h.feature[1:], "{feature}": h.feature,
                    "{area}": area}))
    agos = (rng.randrange(20, 40) * 1440 + rng.randrange(600),
            rng.randrange(2, 6) * 1440 + rng.randrange(600), ago)
    deploys = [{"version": f"v{major}.{minor - 2 + k}.{'{n}' if k == 0 else rng.randrange(10)}",
                "ago": agos[k], "sha": h.commits[k].sha, "author": h.commits[k].author,
                "description": notes[k], **({"bad": True} if k == 2 and family.needs_fix else {})}
               for k in range(3)]
    herrings = rng.sample(_HERRINGS, 2)
    others = [s for s in SERVICES if s not in involved]
    return {
        "name": c.task_id, "order": order, "title": pick(family.titles),
        "severity": family.severity, "summary": pick(family.summaries),
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
        "deploys": {c.service: deploys},
        "conditions": conditions,
        "logs": [{"service": c.service, "ago": ago, "level": "INFO",
                  "message": f"Deploy {{{c.service}_version}} started: rolling update initiated"},
                 {"service": c.service, "ago": ago - 1, "level": "INFO",
                  "message": f"Deploy {{{c.service}_version}} complete: {h.feature}"}],
        "red_herrings": [{"service": others[rng.randrange(len(others))] if others else c.service,
                          "level": lv, "message": _text(msg, {"{noun}": c.noun,
                                                              "{peer}": SERVICES[rng.randrange(7)]})}
                         for lv, msg in herrings],
    }
