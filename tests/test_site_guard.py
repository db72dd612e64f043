"""The bug-site guard: a patch that leaves the bug's code as it was is never resolved."""

from __future__ import annotations

import pytest

from srelib.env.grading.pipeline import grade_diff, grade_patch
from srelib.env.tasks.lookup import get_scenario, load_repo
from srelib.env.phase2.repos import unified_diff
from srelib.env.simulation.scenarios import TASKS
from srelib.env.grading.site_guard import MODULE, TEXT, site_unchanged, site_units

BUGGY = '''"""A module."""

LIMIT = 3


class Box:
    def total(self, items, scale=2):
        """Sum of the items, scaled."""
        acc = 0
        for item in items:
            acc += item
        return acc * scale
'''
UNIT = (("box.py", "Box.total"),)


def _same(after: str, units=UNIT) -> bool:
    return site_unchanged(units, {"box.py": BUGGY}, {"box.py": after})


@pytest.mark.parametrize("edit", [
    ("acc = 0\n", "acc = 0  # start at zero\n"),
    ('"""Sum of the items, scaled."""', '"""Another docstring."""'),
    ("        acc = 0\n", "        pass\n        acc = 0\n        ...\n"),
    ("        acc = 0\n", "        if False:\n            acc = 99\n        acc = 0\n"),
    ("        return acc * scale\n", "        return acc * scale\n        acc = -1\n"),
    ("acc", "running"),
    ("LIMIT = 3", "LIMIT = 3\nEXTRA = 4"),  # module code outside the unit
])
def test_edits_that_cannot_change_what_the_function_does_leave_the_site_unchanged(edit):
    old, new = edit
    assert old in BUGGY
    assert _same(BUGGY.replace(old, new))


@pytest.mark.parametrize("edit", [
    ("acc += item", "acc += 2 * item"),
    ("acc * scale", "acc * scale + 1"),
    ("        acc = 0\n", "        acc = 0\n        _unused = len(items)\n"),  # the guard lets it by; drawn inputs judge it
    ("    def total(self, items, scale=2):", "    def sum_all(self, items, scale=2):"),  # gone
    ("class Box:\n", "class Box:\n    def total(self, items, scale=2):\n        return 0\n\n"),  # defined twice
    ("acc * scale", "acc *"),  # no longer parses
])
def test_edits_of_the_function_change_the_site(edit):
    old, new = edit
    assert old in BUGGY
    assert not _same(BUGGY.replace(old, new))


def test_module_and_text_units():
    module = (("box.py", MODULE),)
    assert _same(BUGGY.replace("acc += item", "acc += 2 * item"), module) is False  # the class is module code
    assert _same(BUGGY.replace("LIMIT = 3", "LIMIT = 3  # three"), module)
    assert not _same(BUGGY.replace("LIMIT = 3", "LIMIT = 4"), module)
    pins = (("requirements.txt", TEXT),)
    before = {"requirements.txt": "a==1.0\nb==2.0\n"}
    assert site_unchanged(pins, before, {"requirements.txt": "# pins\nb==2.0\n\na==1.0\n"})
    assert not site_unchanged(pins, before, {"requirements.txt": "a==1.1\nb==2.0\n"})
    assert not site_unchanged((), before, before), "no units: nothing to guard"


@pytest.mark.parametrize("task", TASKS)
def test_every_fixable_task_has_a_site_the_reference_fix_changes(task):
    scenario = get_scenario(task)
    units = site_units(task)
    assert bool(units) == scenario.needs_fix
    if units:
        repo = load_repo(scenario.repo)
        assert not site_unchanged(units, dict(repo.tree), {**repo.tree, **repo.fixed_tree(task)})


def test_a_correct_implementation_planted_elsewhere_is_not_a_fix():
    """The fixed ``flush`` bound onto the class from the package ``__init__.py``: the code under
    test behaves as fixed, but the bug's own function is untouched, so nothing is resolved."""
    task = "memory_leak"
    repo = load_repo(get_scenario(task).repo)
    fixed = repo.fixed_tree(task)
    path = "orders/handlers/batch.py"
    planted = fixed[path].replace("class BatchProcessor", "class _FixedBatchProcessor")
    init = "orders/__init__.py"
    tree = dict(repo.tree)
    patched = {**tree, "orders/_fixed_batch.py": planted,
               init: tree.get(init, "") + "\nfrom orders._fixed_batch import _FixedBatchProcessor as _F\n"
                                          "from orders.handlers import batch as _b\n"
                                          "_b.BatchProcessor.flush = _F.flush\n"}
    diff = unified_diff(tree, patched)
    unguarded = grade_diff(repo.name, repo.fail_to_pass(task), repo.pass_to_pass(task), diff)
    assert unguarded["resolved"] == "full", "the planted code does behave as fixed"
    result = grade_patch(repo.name, task, diff)
    assert result["patch_applied"] and result["site_unchanged"], result["apply_error"]
    assert result["resolved"] == "no" and result["fail_to_pass_rate"] == 0.0
