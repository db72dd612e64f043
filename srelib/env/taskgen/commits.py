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

The task's component lands among the other components and its feature at a drawn depth among
the other commits; the ones after it land in the hours after it. Every
draw comes from the candidate's stream (:func:`.recipes.rng_for`), keyed by the suite key.
"""

from __future__ import annotations

import random
import re
from typing import Callable

from srelib.env.deploy_notes import AUTHORS

from .bases import BASES
from .recipes import Candidate, CommitSpec, History, module_path, rng_for, sha_for
from .shape_lib import SHAPE_SPLITS, SHAPES
from .shapes import fill
from .family_lib import FAMILIES

#: Commit bodies, drawn alike for every commit after the base: none says whether it changes
#: behaviour.
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


def _plain_kinds(c: Candidate, what: str, path: str, area: str) -> dict[str, tuple[str, Make]]:
    """The one-file innocent commits, each ``(subject, make files from the tree)``."""
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
        "readme": ("readme: describe " + what,
                   lambda t: {"README.md": t["README.md"] + f"\nIt also holds {what}.\n"}),
        "note": (f"{area}: note where {what} is used",
                 lambda t: {path: t[path] + f"\n\n# {what}: used by {base.package}.core callers\n"}),
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


def _helper_commits(c: Candidate, rng: random.Random, what: str) -> list[tuple[str, Make]]:
    """A helper module for the component added with its own test, then changed with its test
    (two commits)."""
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


def _decoy_sites(c: Candidate, path: str, rng: random.Random) -> list[Candidate]:
    """Six or seven other sites of the service, of shapes in the task's split (each drawn as
    likely from the task's family as from any), whose modules are not the task's: each gets a
    component and a working feature (:func:`_decoy_feature`)."""
    split = SHAPE_SPLITS[c.shape]
    family = SHAPES[c.shape].family
    pools: list[list[Candidate]] = [[], []]
    for name in SHAPES:
        if name != c.shape and SHAPE_SPLITS[name] == split:
            for noun, plural in BASES[c.service].nouns:
                other = Candidate(c.family, c.service, noun, plural, name)
                where = module_path(SHAPES[name], other)
                if where != path and not where.startswith("common/"):
                    pools[SHAPES[name].family != family].append(other)
    for pool in pools:
        rng.shuffle(pool)
    picked: list[Candidate] = []
    paths = {path}
    for _ in range(6 + rng.randrange(2)):
        pool = pools[0] if pools[0] and (rng.random() < 0.5 or not pools[1]) else pools[1]
        while pool and module_path(SHAPES[pool[-1].shape], pool[-1]) in paths:
            pool.pop()
        if pool:
            picked.append(pool.pop())
            paths.add(module_path(SHAPES[picked[-1].shape], picked[-1]))
    return picked


def _decoy_feature(c: Candidate, other: Candidate, rng: random.Random) -> list[tuple[str, Make]]:
    """Another site's component (its module and test) and its feature, shipped working, in the
    very shapes of the task's own component and feature commits (and, as there, the feature's
    tests now with it, now in a commit of their own)."""
    shape, base = SHAPES[other.shape], BASES[c.service]

    def f(text: str) -> str:
        return fill(text, other.noun, other.plural, base.package)

    path = module_path(shape, other)
    area = path.rsplit("/", 1)[-1][:-3]
    test_path = f"tests/test_{area}.py"
    source, good, tests, more = f(shape.source), f(shape.good), f(shape.tests), f(shape.feature_tests)
    apart = rng.random() < 0.35

    def ship(t: dict) -> dict:
        files = {path: t[path].replace(source, good)}
        if not apart:
            files[test_path] = t[test_path] + more
        return files
    feature, what = f(shape.feature), f(shape.what)
    commits: list[tuple[str, Make]] = [(f"{area}: add {what}", lambda t: {path: source, test_path: tests})]
    if rng.random() < 0.5:  # refactored before its feature, as the task's module may be
        commits.append(_refactor(other, path, test_path, what, area))
    commits.append((f"{area}: {feature}", ship))
    if apart:  # the feature's tests follow, as the task's own do
        commits.append((f"tests: cover {feature}", lambda t: {test_path: t[test_path] + more}))
    return commits


def _core_fix(c: Candidate, rng: random.Random, what: str) -> tuple[str, Make]:
    """A fix elsewhere: the core module's docstring and a test of it, in the symptom's words
    and naming the component."""
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
    path = module_path(shape, c)
    area = path.rsplit("/", 1)[-1][:-3]

    def f(text: str) -> str:
        return fill(text, c.noun, c.plural, base.package)

    what, feature = f(shape.what), f(shape.feature)
    test_path = f"tests/test_{area}.py"
    component = {path: f(shape.source), test_path: f(shape.tests)}
    if path.startswith("common/"):
        component["common/__init__.py"] = '"""Helpers vendored from the shared platform library."""\n'
    tree = dict(base.files())
    steps: list[tuple[str, dict]] = [(f"core: initial {c.service.replace('_', ' ')} service", base.files())]

    plain = _plain_kinds(c, what, path, area)
    names = sorted(plain)
    before: list[tuple[str, Make]] = []
    after: list[tuple[str, Make]] = []
    needs_component: list[tuple[str, Make]] = []  # land after the component
    if rng.random() < 0.5:
        needs_component.append(_refactor(c, path, test_path, what, area))
    if rng.random() < 0.5:
        (before if rng.random() < 0.4 else after).append(_core_fix(c, rng, what))
    picked = rng.sample(names, 1 + rng.randrange(4))
    for k, name in enumerate(picked):
        if rng.random() < 0.5:
            after.append(plain[name])
        else:
            (needs_component if name == "note" else before).append(plain[name])
    rng.shuffle(before)
    rng.shuffle(after)
    del after[2:]
    pairs = [_helper_commits(c, rng, what)]
    pairs += [_decoy_feature(c, other, rng) for other in _decoy_sites(c, path, rng)]
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
    before.insert(at, (f"{area}: add {what}", lambda t: dict(component)))
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

    dates = _dates(rng, bad_index, len(steps))
    bodies = [f"{base.description}\n\nThe package, its domain module and their tests."] + [
        BODIES[rng.randrange(len(BODIES))].replace("{area}", area) for _ in steps[1:]]
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


def _dates(rng: random.Random, bad_index: int, count: int) -> list[str]:
    """Commit dates, oldest first: the base in December, the next commit early in January, the
    commits up to the feature at drawn minutes from the 9th to the incident day's morning, the
    feature on the incident day at noon and the later commits in the 150 minutes after 13:00."""
    from datetime import datetime, timedelta

    def at(start: datetime, minutes: list[int]) -> list[str]:
        return [(start + timedelta(minutes=m)).strftime("%Y-%m-%dT%H:%M:00Z") for m in minutes]

    dates = [f"2024-12-{rng.randrange(1, 20):02d}T{9 + rng.randrange(8):02d}:{rng.randrange(60):02d}:00Z",
             f"2025-01-{rng.randrange(2, 9):02d}T{9 + rng.randrange(8):02d}:{rng.randrange(60):02d}:00Z"]
    dates += at(datetime(2025, 1, 9, 9), sorted(rng.sample(range(8790), bad_index - 2)))
    dates.append(f"2025-01-15T12:{rng.randrange(10, 40):02d}:00Z")
    dates += at(datetime(2025, 1, 15, 13), sorted(rng.sample(range(150), count - bad_index - 1)))
    return dates
