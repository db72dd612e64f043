"""Red team: a per-shape inverse patch learned on the train split must not repair held-out tasks.

The cheater never investigates. From every train task it reads the bad and the fixed tree,
takes each changed hunk (one line of context either side) as a rewrite rule, and writes the
service's noun and package out of it, so a rule learned on ``cart_lru`` also fits
``route_lru``. On a held-out task it fills the rules in with that task's noun and package (read
from the file names, as a cheater could) and applies every rule whose text occurs. Held-out
repair is the grader's credit (:func:`srelib.env.grading.score.repair_credit`) for the patched tree.
Held out means unseen bug shapes, so this must stay at or under 0.2 (issue 28, requirement 4);
on train tasks of another service the same rules do repair, so the bound is not vacuous.
"""

from __future__ import annotations

import difflib
import random

import pytest

from srelib.env.tasks import taskgen
from srelib.env.grading.score import repair_credit
from srelib.env.tasks.taskgen.bases import BASES
from srelib.env.tasks.taskgen.runner import judge, observe_many
from srelib.env.tasks.taskgen.tasks import derive_tests, task_history, trees

HELDOUT_REPAIR_BOUND = 0.2
CONTEXT = 1  # lines of context around each learned hunk


def _words(task: str) -> list[tuple[str, str]]:
    """``(text, placeholder)`` for the names a task's files spell its site with, longest first."""
    c = taskgen.candidates()[task]
    camel = "".join(part.capitalize() for part in c.noun.split("_"))
    pairs = [(camel, "@N@"), (c.plural, "@ns@"), (c.noun, "@n@"), (BASES[c.service].package, "@pkg@")]
    return sorted(pairs, key=lambda p: -len(p[0]))


def _generalise(text: str, task: str) -> str:
    for word, placeholder in _words(task):
        text = text.replace(word, placeholder)
    return text


def _fill(text: str, task: str) -> str:
    for word, placeholder in sorted(_words(task), key=lambda p: -len(p[1])):
        text = text.replace(placeholder, word)
    return text


def learn_rules(task: str) -> set[tuple[str, str]]:
    """The inverse of ``task``'s bug: ``(bad text, fixed text)`` per changed hunk, generalised."""
    bad, fixed = trees(task)
    rules = set()
    for path in sorted(p for p in fixed if fixed[p] != bad.get(p)):
        old, new = bad[path].splitlines(keepends=True), fixed[path].splitlines(keepends=True)
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new).get_opcodes():
            if tag == "equal":
                continue
            lo, hi = max(0, i1 - CONTEXT), i2 + CONTEXT
            before = "".join(old[lo:hi])
            after = "".join(old[lo:i1] + new[j1:j2] + old[i2:hi])
            rules.add((_generalise(before, task), _generalise(after, task)))
    return rules


def apply_rules(task: str, rules: set[tuple[str, str]]) -> dict[str, str]:
    """``task``'s bad tree with every rule that matches applied (filled in for its site)."""
    tree = dict(trees(task)[0])
    for before, after in sorted(rules):
        before, after = _fill(before, task), _fill(after, task)
        for path, text in tree.items():
            if before in text:
                tree[path] = text.replace(before, after)
    return tree


def repair_of(tasks: list[str], rules: set[tuple[str, str]]) -> dict[str, float]:
    """The grader's repair credit of the rule-patched tree of each task."""
    tests = derive_tests(tasks)
    seen = observe_many([(apply_rules(t, rules), dict(task_history(t).probes)) for t in tasks])
    credit = {}
    for task, observed in zip(tasks, seen):
        passed = judge(dict(task_history(task).checks), observed)
        credit[task] = repair_credit({"FAIL_TO_PASS": {t: passed[t] for t in tests[task]["fail_to_pass"]},
                                      "PASS_TO_PASS": {t: passed[t] for t in tests[task]["pass_to_pass"]}})
    return credit


def _fixable(suite, split: str) -> list[str]:
    return sorted(t for t, i in suite.tasks.items()
                  if i.split == split and taskgen.FAMILIES[i.family].needs_fix)


@pytest.fixture(scope="module")
def suite():
    return taskgen.generated_suite()


def test_the_cheater_repairs_train_tasks_of_other_services(suite):
    """Rules learned from one train task per shape repair that shape's other train tasks."""
    train = _fixable(suite, "train")
    shape_of = {t: taskgen.candidates()[t].shape for t in train}
    teachers = {}
    for task in train:
        teachers.setdefault(shape_of[task], task)
    rules = set().union(*(learn_rules(t) for t in teachers.values()))
    pupils = random.Random(0).sample([t for t in train if t not in teachers.values()], 24)
    credit = repair_of(pupils, rules)
    assert sum(credit.values()) / len(credit) >= 0.8, credit


def test_an_inverse_patch_learned_on_train_does_not_repair_held_out_tasks(suite):
    rules = set().union(*(learn_rules(t) for t in _fixable(suite, "train")))
    heldout = _fixable(suite, "heldout")
    credit = repair_of(heldout, rules)
    mean = sum(credit.values()) / len(credit)
    assert len(credit) >= 100 and mean <= HELDOUT_REPAIR_BOUND, (mean, sorted(credit.items())[:20])
