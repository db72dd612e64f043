"""The bug site: the functions a reference fix changes, found from the fix and the buggy tree."""

from __future__ import annotations

from srelib.env.grading.bug_site import bug_site, changed_lines, functions_touching
from srelib.env.tasks.lookup import get_scenario
from srelib.env.simulation.scenarios import TASKS

SOURCE = '''class Store:
    def get(self, key):
        return self.items[key]

    def put(self, key, value):
        self.items[key] = value


def helper():
    def inner():
        return 1
    return inner
'''


def test_replaced_and_inserted_lines_name_the_innermost_function():
    fixed = SOURCE.replace("self.items[key] = value", "self.items[key] = value\n        self.count += 1")
    lines = changed_lines(SOURCE, fixed)
    assert [f.name for f in functions_touching("s.py", SOURCE, lines)] == ["Store.put"]
    fixed = SOURCE.replace("return 1", "return 2")
    assert [f.name for f in functions_touching("s.py", SOURCE, changed_lines(SOURCE, fixed))] == [
        "helper.inner"]


def test_every_classic_fix_task_has_a_site_in_the_files_its_fix_rewrites():
    for task in TASKS:
        scenario, site = get_scenario(task), bug_site(task)
        assert site.bad_commit == scenario.bad_commit
        if not scenario.needs_fix:
            assert site.files == () and site.functions == ()
            continue
        assert site.files, task
        assert all(f.file in site.files for f in site.functions)
    assert bug_site("memory_leak").functions[0].name.startswith("BatchProcessor.")
