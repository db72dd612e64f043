"""A candidate's repository history, drawn so that no commit shape marks the bad commit.

The history is the service's base, an innocent commit adding the site's working component
(its module and its own test), then the feature commit that carries the bug (for the no-fault
family: the feature alone), with innocent commits drawn around it. The innocent commits have
the bad commit's shapes too, so neither its files nor its size nor its message nor its place
picks it out:

* six or seven other sites of the service, each a component (module and its own test) and a
  working feature shipped on it, sometimes refactored in between, exactly as the task's own;
* a helper module added with its own test, and later a change to that helper and its test;
* a refactor of the module that later breaks, with its test, before the feature lands;
* a fix elsewhere (the core module and its test), in words of the page's symptoms;
* a README line or a reworded overview, a note, an export list, a logger, a test of
  core, the core tests grouped in a class (touching one file);
* the feature's tests now in the feature commit, now in a follow-up commit.

The decoy sites' shapes are drawn without regard to the task's family, and a commit that names
a site (a helper "for" it, a core fix "seen by" it, a README line or a note on it) names one
drawn among all of the repository's sites alike. The task's component lands among the other
components and its feature at a drawn depth among the other commits. Every commit's date comes
from one process that does not know which commit is the bad one (:func:`_dates`). Every draw
comes from the candidate's stream (:func:`.recipes.rng_for`), keyed by the suite key.
"""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta
from typing import Callable, NamedTuple

from srelib.env.simulation.deploy_notes import AUTHORS

from .bases import BASES
from .recipes import Candidate, CommitSpec, History, module_path, rng_for, sha_for
from .shape_lib import SHAPE_SPLITS, SHAPES
from .shapes import fill
from .family_lib import FAMILIES

#: Commit bodies, drawn alike for every commit after the base: none says whether it changes
#: behaviour; ``{area}`` is the commit's own area (its subject's prefix).
BODIES = ("", "", "With tests.", "Follow-up from review.", "Small change; see the diff.",
          "Part of this sprint's {area} work.")
#: Words a page of each symptom uses; decoy commits say them.
SYMPTOM_WORDS = {"errors": ("errors", "5xx responses", "failed requests"),
                 "slow": ("latency", "slow responses", "timeouts"),
                 "restarts": ("restarts", "flapping health checks", "memory use")}

#: Helper modules an innocent commit adds with their own test: (module, code, test, change,
#: test of the change). ``{pkg}`` is the package.
HELPERS = (
    ("text_util",
     'def slug(text):\n    """``text`` lower-cased, its words joined by dashes."""\n'
     '    return "-".join(text.lower().split())\n',
     'from {pkg}.text_util import slug\n\n\ndef test_slug():\n    assert slug("A b") == "a-b"\n',
     ('def slug(text):\n    """``text`` lower-cased, its words joined by dashes."""\n'
      '    return "-".join(text.lower().split())\n',
      'def slug(text, limit=64):\n    """``text`` lower-cased, its words joined by dashes, at most ``limit``\n'
      '    characters ("" for no text)."""\n    if not text:\n        return ""\n'
      '    return "-".join(text.lower().split())[:limit]\n\n\n'
      'def words(text):\n    """The words of ``text``, lower-cased."""\n'
      '    return [] if not text else text.lower().split()\n'),
     '\n\ndef test_slug_of_nothing():\n    assert slug("") == "" and slug(None) == ""\n\n\n'
     'def test_slug_limit_and_words():\n    from {pkg}.text_util import words\n\n    assert slug("a b c", limit=3) == "a-b"\n'
     '    assert words("A b") == ["a", "b"] and words(None) == []\n'),
    ("ids",
     'def short_id(value, width=8):\n    """The first ``width`` characters of ``value`` as text."""\n'
     '    return str(value)[:width]\n',
     'from {pkg}.ids import short_id\n\n\ndef test_short_id():\n    assert short_id(123456789) == "12345678"\n',
     ('def short_id(value, width=8):\n    """The first ``width`` characters of ``value`` as text."""\n'
      '    return str(value)[:width]\n',
      'def short_id(value, width=8):\n    """The first ``width`` (at least 1) characters of ``value``."""\n'
      '    if width < 1:\n        raise ValueError("width must be at least 1")\n'
      '    return str(value)[:width]\n\n\n'
      'def same_id(a, b, width=8):\n    """Whether ``a`` and ``b`` have the same short id."""\n'
      '    return short_id(a, width) == short_id(b, width)\n'),
     '\n\ndef test_short_id_width():\n    import pytest\n\n    with pytest.raises(ValueError):\n'
     '        short_id("x", 0)\n\n\ndef test_same_id():\n    from {pkg}.ids import same_id\n\n'
     '    assert same_id("abcdefgh1", "abcdefgh2") and not same_id("a", "b")\n'),
    ("clock",
     'def minutes(seconds):\n    """Whole minutes in ``seconds``."""\n    return int(seconds) // 60\n',
     'from {pkg}.clock import minutes\n\n\ndef test_minutes():\n    assert minutes(125) == 2\n',
     ('def minutes(seconds):\n    """Whole minutes in ``seconds``."""\n    return int(seconds) // 60\n',
      'def minutes(seconds):\n    """Whole minutes in ``seconds`` (0 for a negative span)."""\n'
      '    return max(0, int(seconds)) // 60\n\n\n'
      'def hours(seconds):\n    """Whole hours in ``seconds`` (0 for a negative span)."""\n'
      '    return minutes(seconds) // 60\n'),
     '\n\ndef test_minutes_never_negative():\n    assert minutes(-5) == 0\n\n\n'
     'def test_hours():\n    from {pkg}.clock import hours\n\n    assert hours(7300) == 2 and hours(-1) == 0\n'),
)


def grouped_tests(text: str, name: str) -> str:
    """The test module ``text`` with its top-level functions moved into ``class Test<name>``
    (each test taking ``self``); its imports stay on top."""
    head, _, body = text.partition("\n\n\ndef ")
    lines = [("    " + line if line.strip() else line) for line in ("def " + body).splitlines()]
    lines = [re.sub(r"^    def (test_\w+)\((\)?)",
                    lambda m: f"    def {m[1]}(self{')' if m[2] else ', '}", line) for line in lines]
    return head + f"\n\n\nclass Test{name}:\n" + "\n".join(lines) + "\n"


def _words(c: Candidate, rng: random.Random) -> str:
    """A symptom's words, drawn from those the family's pages may show."""
    symptoms = FAMILIES[c.family].symptoms
    words = SYMPTOM_WORDS.get(symptoms[rng.randrange(len(symptoms))], ("errors",))
    return words[rng.randrange(len(words))]


Make = Callable[[dict], dict]


class Site(NamedTuple):
    """A site of the repository as its commits name it: what it holds, its module, its area."""

    what: str
    path: str
    area: str


def site_of(c: Candidate) -> Site:
    """The site of ``c`` (its shape at its noun) in ``c``'s service's repository."""
    shape = SHAPES[c.shape]
    path = module_path(shape, c)
    return Site(fill(shape.what, c.noun, c.plural, BASES[c.service].package), path,
                path.rsplit("/", 1)[-1][:-3])


def _plain_kinds(c: Candidate) -> dict[str, tuple[str, Make]]:
    """The one-file innocent commits that name no site, each ``(subject, make files from the
    tree)``."""
    base = BASES[c.service]
    core_path = f"{base.package}/core.py"

    def core_parts(t: dict) -> tuple[str, int, int, str]:
        core = t[core_path]
        func = next(line[4:].split("(", 1)[0] for line in core.splitlines() if line.startswith("def "))
        return core, core.index('"""', 3) + 3, core.index("\n\n\ndef "), func

    def exports(t: dict) -> dict:
        core, doc_end, _, func = core_parts(t)
        return {core_path: core[:doc_end] + f'\n\n__all__ = ["{func}"]' + core[doc_end:]}

    def logger(t: dict) -> dict:
        core, doc_end, first_def, _ = core_parts(t)
        return {core_path: core[:doc_end] + "\n\nimport logging" + core[doc_end:first_def]
                + "\n\nLOG = logging.getLogger(__name__)" + core[first_def:]}

    func = core_parts(base.files())[3]
    return {
        "exports": (f"core: export {func} explicitly", exports),
        "logger": ("core: add a module logger", logger),
        "grouped": ("tests: group the core tests in a class",
                    lambda t: {"tests/test_core.py": grouped_tests(t["tests/test_core.py"], "Core")}),
        "overview": ("readme: reword the overview",
                     lambda t: {"README.md": f"# The {c.service.replace('_', ' ')} service\n\n"
                                f"{base.description}\n\nCode: `{base.package}/`. Tests: "
                                "`python -m pytest tests`.\n" + "".join(
                                    t["README.md"].splitlines(keepends=True)[5:])}),
        "tests": (f"tests: check that {base.package}.core imports cleanly",
                  lambda t: {"tests/test_core.py": t["tests/test_core.py"]
                             + f"\n\ndef test_core_imports():\n    import {base.package}.core  # noqa: F401\n"}),
    }


def _readme(site: Site) -> tuple[str, Make]:
    """A README line describing ``site``."""
    return ("readme: describe " + site.what,
            lambda t: {"README.md": t["README.md"] + f"\nIt also holds {site.what}.\n"})


def _note(c: Candidate, site: Site) -> tuple[str, Make]:
    """A note in ``site``'s module on where it is used (lands after its component)."""
    package = BASES[c.service].package
    return (f"{site.area}: note where {site.what} is used",
            lambda t: {site.path: t[site.path] + f"\n\n# {site.what}: used by {package}.core callers\n"})


#: The one-file innocent commits that name a site (drawn among all of the repository's sites).
SITE_KINDS = ("note", "readme")


def _helper_commits(c: Candidate, rng: random.Random, what: str) -> list[tuple[str, Make]]:
    """A helper module for the site holding ``what``, added with its own test, then changed
    with its test (two commits)."""
    pkg = BASES[c.service].package
    name, code, test, (old, new), more = HELPERS[rng.randrange(len(HELPERS))]
    mod, tpath = f"{pkg}/{name}.py", f"tests/test_{name}.py"
    words = _words(c, rng)
    return [(f"{name}: add {name.replace('_', ' ')} helpers for {what}",
             lambda t: {mod: code, tpath: test.replace("{pkg}", pkg)}),
            (f"{name}: handle {words} in {what}",
             lambda t: {mod: t[mod].replace(old, new), tpath: t[tpath] + more.replace("{pkg}", pkg)})]


def _refactor(c: Candidate, path: str, test_path: str, what: str, area: str) -> tuple[str, Make]:
    """A refactor of the module that later breaks (a header) and of its test (grouped in a
    class), before the feature."""
    header = f"# {what}: kept small on purpose; see {test_path} for the contract.\n"
    name = "".join(part.capitalize() for part in area.split("_"))
    return (f"{area}: tidy {what}",
            lambda t: {path: header + t[path], test_path: grouped_tests(t[test_path], name)})


def _decoy_sites(c: Candidate, rng: random.Random) -> list[Candidate]:
    """Six or seven other sites of the service, drawn alike among every site of a shape in the
    task's split (whatever its family) whose module and test file are neither the task's nor
    another pick's nor a helper's: each gets a component and a working feature
    (:func:`_decoy_feature`)."""
    split = SHAPE_SPLITS[c.shape]
    pool = [Candidate(c.family, c.service, noun, plural, name)
            for name in SHAPES if SHAPE_SPLITS[name] == split for noun, plural in BASES[c.service].nouns]
    rng.shuffle(pool)
    taken = {"core", *(h[0] for h in HELPERS), site_of(c).area}
    picked: list[Candidate] = []
    for _ in range(6 + rng.randrange(2)):
        while pool and site_of(pool[-1]).area in taken:
            pool.pop()
        if pool:
            picked.append(pool.pop())
            taken.add(site_of(picked[-1]).area)
    return picked


def _component(path: str, test_path: str, source: str, tests: str) -> Make:
    """A site's component: its module and its own test (and ``common/``'s package file, the
    first time a module lands there)."""
    def make(t: dict) -> dict:
        files = {path: source, test_path: tests}
        if path.startswith("common/") and "common/__init__.py" not in t:
            files["common/__init__.py"] = '"""Helpers vendored from the shared platform library."""\n'
        return files
    return make


def _decoy_feature(c: Candidate, other: Candidate, rng: random.Random) -> list[tuple[str, Make]]:
    """Another site's component (its module and test) and its feature, shipped working, in the
    very shapes of the task's own component and feature commits (and, as there, the feature's
    tests now with it, now in a commit of their own)."""
    shape, base = SHAPES[other.shape], BASES[c.service]

    def f(text: str) -> str:
        return fill(text, other.noun, other.plural, base.package)

    what, path, area = site_of(other)
    test_path = f"tests/test_{area}.py"
    source, good, tests, more = f(shape.source), f(shape.good), f(shape.tests), f(shape.feature_tests)
    apart = rng.random() < 0.35

    def ship(t: dict) -> dict:
        files = {path: t[path].replace(source, good)}
        if not apart:
            files[test_path] = t[test_path] + more
        return files
    feature = f(shape.feature)
    commits: list[tuple[str, Make]] = [(f"{area}: add {what}", _component(path, test_path, source, tests))]
    if rng.random() < 0.5:  # refactored before its feature, as the task's module may be
        commits.append(_refactor(other, path, test_path, what, area))
    commits.append((f"{area}: {feature}", ship))
    if apart:  # the feature's tests follow, as the task's own do
        commits.append((f"tests: cover {feature}", lambda t: {test_path: t[test_path] + more}))
    return commits


def _core_fix(c: Candidate, rng: random.Random, what: str) -> tuple[str, Make]:
    """A fix elsewhere: the core module's docstring and a test of it, in the symptom's words
    and naming the site holding ``what``."""
    base = BASES[c.service]
    core_path = f"{base.package}/core.py"
    words = _words(c, rng)

    def make(t: dict) -> dict:
        core = t[core_path]
        doc_end = core.index('"""', 3)
        return {core_path: core[:doc_end] + f" Callers see {words} when it raises." + core[doc_end:],
                "tests/test_core.py": t["tests/test_core.py"]
                + f"\n\ndef test_core_documented():\n    import {base.package}.core as core\n\n"
                  f"    assert core.__doc__\n"}
    return f"core: fix {words} seen by {what}", make


def history(c: Candidate) -> History:
    """The candidate's repository (see the module doc)."""
    family, shape, base = FAMILIES[c.family], SHAPES[c.shape], BASES[c.service]
    rng = rng_for(c.task_id, "history")
    own = site_of(c)
    path, area, what = own.path, own.area, own.what

    def f(text: str) -> str:
        return fill(text, c.noun, c.plural, base.package)

    feature = f(shape.feature)
    test_path = f"tests/test_{area}.py"
    tree = dict(base.files())
    steps: list[tuple[str, dict]] = [(f"core: initial {c.service.replace('_', ' ')} service", base.files())]

    decoys = _decoy_sites(c, rng)
    pairs = [_decoy_feature(c, other, rng) for other in decoys]
    sites = [own, *(site_of(o) for o in decoys)]

    def named() -> int:  # the site a commit names: any of the repository's alike
        return rng.randrange(len(sites))

    plain = _plain_kinds(c)
    names = sorted([*plain, *SITE_KINDS])
    before: list[tuple[str, Make]] = []
    after: list[tuple[str, Make]] = []
    needs_component: list[tuple[str, Make]] = []  # land after the component
    if rng.random() < 0.5:
        needs_component.append(_refactor(c, path, test_path, what, area))
    if rng.random() < 0.5:
        (before if rng.random() < 0.4 else after).append(_core_fix(c, rng, sites[named()].what))
    for name in rng.sample(names, 1 + rng.randrange(4)):
        k = named()
        commit = _readme(sites[k]) if name == "readme" else _note(c, sites[k]) if name == "note" \
            else plain[name]
        if name == "note" and k:  # after the decoy's component, wherever its commits land
            pairs[k - 1].insert(1 + rng.randrange(len(pairs[k - 1])), commit)
        elif rng.random() < 0.5:
            after.append(commit)
        else:
            (needs_component if name == "note" else before).append(commit)
    rng.shuffle(before)
    rng.shuffle(after)
    del after[2:]
    pairs.insert(0, _helper_commits(c, rng, sites[named()].what))
    for pair in pairs:
        where = rng.random()
        if where < 0.3:  # both after the feature
            _insert_in_order(after, pair, rng)
        elif where < 0.7:  # added before, changed after
            _insert_in_order(before, pair[:1], rng)
            _insert_in_order(after, pair[1:], rng)
        else:
            _insert_in_order(before, pair, rng)
    at = rng.randrange(len(before) + 1)  # the component among the other components
    before.insert(at, (f"{area}: add {what}", _component(path, test_path, f(shape.source), f(shape.tests))))
    rng.shuffle(needs_component)
    for commit in needs_component:
        before.insert(at + 1 + rng.randrange(len(before) - at), commit)

    def land(subject: str, make: Make) -> None:
        files = make(tree)
        steps.append((subject, files))
        tree.update(files)

    for subject, make in before:
        land(subject, make)
    shipped = f(shape.bad() if family.needs_fix else shape.good)
    old_text = f(shape.source)
    shipped_file = tree[path].replace(old_text, shipped) if old_text in tree[path] else shipped
    feature_tests = f(shape.feature_tests)
    tests_apart = rng.random() < 0.35
    change = {path: shipped_file}
    if not tests_apart:
        change[test_path] = tree[test_path] + feature_tests
    steps.append((f"{area}: {feature}", change))
    tree.update(change)
    bad_index = len(steps) - 1
    if tests_apart:
        after.insert(rng.randrange(len(after) + 1),
                     (f"tests: cover {feature}", lambda t: {test_path: t[test_path] + feature_tests}))
    for subject, make in after:
        land(subject, make)

    dates = _dates(rng, len(steps))
    bodies = [f"{base.description}\n\nThe package, its domain module and their tests."] + [
        BODIES[rng.randrange(len(BODIES))].replace("{area}", subject.split(":", 1)[0])
        for subject, _ in steps[1:]]
    commits = tuple(
        CommitSpec(sha_for(c.task_id, k), AUTHORS[rng.randrange(len(AUTHORS) - 2)], dates[k],
                   subject + (f"\n\n{body}" if body else ""), tuple(sorted(files.items())))
        for k, ((subject, files), body) in enumerate(zip(steps, bodies)))
    good = f(shape.good)
    fix = ((path, tree[path].replace(shipped, good)),) if family.needs_fix else None
    hidden = f"test_{area}.py"
    return History(commits, bad_index, fix, ((hidden, f(shape.probes)),), ((hidden, f(shape.checks)),),
                   path, feature)


def _insert_in_order(commits: list, new: list, rng: random.Random) -> None:
    """Insert ``new`` into ``commits`` at drawn places, keeping ``new``'s own order."""
    at = sorted(rng.randrange(len(commits) + 1) for _ in new)
    for k, (place, commit) in enumerate(zip(at, new)):
        commits.insert(place + k, commit)


#: Where commit dates fall: the base in December; the next commit from the 2nd to the 8th of
#: January; every later one at a minute drawn alike among the working minutes (08:00 to 18:59)
#: after it, up to the incident day's :data:`LAST_COMMIT_MINUTE` (so before any bad deploy).
FIRST_DAY, FIRST_END, INCIDENT_DAY = datetime(2025, 1, 2), datetime(2025, 1, 9), datetime(2025, 1, 15)
WORK_HOURS = (8 * 60, 19 * 60)
LAST_COMMIT_MINUTE = 12 * 60


def _working_minutes() -> list[datetime]:
    """Every working minute from :data:`FIRST_DAY` to the incident day's last commit minute."""
    out = []
    for day in range((INCIDENT_DAY - FIRST_DAY).days + 1):
        start = FIRST_DAY + timedelta(days=day)
        end = LAST_COMMIT_MINUTE if start == INCIDENT_DAY else WORK_HOURS[1]
        out += [start + timedelta(minutes=m) for m in range(WORK_HOURS[0], end)]
    return out


_WORKING = _working_minutes()


def _dates(rng: random.Random, count: int) -> list[str]:
    """``count`` commit dates, oldest first (see :data:`FIRST_DAY`). No date depends on which
    commit is the bad one: the commits after the base and the next one are a sorted sample
    of the working minutes after it, whatever their roles."""
    def iso(t: datetime) -> str:
        return t.strftime("%Y-%m-%dT%H:%M:00Z")

    first_days = [t for t in _WORKING if t < FIRST_END]
    first = first_days[rng.randrange(len(first_days))]
    later = [t for t in _WORKING if t > first]
    base = f"2024-12-{rng.randrange(1, 20):02d}T{9 + rng.randrange(8):02d}:{rng.randrange(60):02d}:00Z"
    return [base, iso(first)] + [iso(t) for t in sorted(rng.sample(later, count - 2))]
