"""Where a task's bug sits: the bad commit, the files and the functions its reference fix changes.

Computed from the repository's final (buggy) tree and the reference fix, never from text written
for the task, so classic and generated tasks get it the same way. A function is named by its
qualified name (``Class.method``; nested functions as ``outer.inner``) with its line span in the
buggy file; a changed line counts for the innermost function around it. A line the fix inserts
counts for the function around the lines on either side of the insertion. Tasks that need no
change have an empty site. Analyses (localisation columns) and the grader read it; it never
reaches a policy.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass

from srelib.env.support.memo import byte_lru
from srelib.env.tasks.lookup import get_scenario, load_repo
from srelib.env.tasks.ids import resolve
from srelib.env.support.ast_parse import parse as parse_python


@dataclass(frozen=True)
class BugFunction:
    """One function the reference fix changes: its file, qualified name and 1-based line span."""

    file: str
    name: str
    first_line: int
    last_line: int


@dataclass(frozen=True)
class BugSite:
    """The bad commit (None: no fault), the files the reference fix changes and their functions."""

    bad_commit: str | None
    files: tuple[str, ...]
    functions: tuple[BugFunction, ...]


def _functions(path: str, text: str) -> list[BugFunction]:
    """Every function in ``text`` (a Python file) with its qualified name and span."""
    found: list[BugFunction] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    found.append(BugFunction(path, name, child.lineno, child.end_lineno or child.lineno))
                visit(child, name + ".")

    try:
        visit(parse_python(text), "")
    except SyntaxError:
        return []
    return found


def changed_lines(before: str, after: str) -> set[int]:
    """1-based lines of ``before`` that ``after`` replaces or deletes, and the lines on both
    sides of each insertion."""
    lines: set[int] = set()
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            lines.update(range(i1 + 1, i2 + 1))
        elif tag == "insert":
            lines.update({i1, i1 + 1})
    return lines


def functions_touching(path: str, text: str, lines: set[int]) -> list[BugFunction]:
    """The innermost functions of ``text`` that hold any of ``lines``, in file order."""
    functions = _functions(path, text)
    hit = []
    for line in sorted(lines):
        around = [f for f in functions if f.first_line <= line <= f.last_line]
        if around:
            innermost = max(around, key=lambda f: f.first_line)
            if innermost not in hit:
                hit.append(innermost)
    return sorted(hit, key=lambda f: f.first_line)


@byte_lru(1 << 20)
def bug_site(task: str) -> BugSite:
    """The bug site of ``task`` (a task's name or opaque id)."""
    task = resolve(task)
    scenario = get_scenario(task)
    if scenario.repo is None:
        return BugSite(scenario.bad_commit, (), ())
    repo = load_repo(scenario.repo)
    fixed = repo.fixed_tree(task)
    if fixed is None:
        return BugSite(scenario.bad_commit, (), ())
    files = tuple(sorted(p for p in fixed if fixed[p] != repo.tree.get(p)))
    functions = tuple(
        f for path in files if path.endswith(".py")
        for f in functions_touching(path, repo.tree.get(path, ""),
                                    changed_lines(repo.tree.get(path, ""), fixed[path])))
    return BugSite(scenario.bad_commit, files, functions)
