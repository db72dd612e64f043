"""Did a patch change the code the bug is in? The grader's guard against fixes that fix nothing.

A task's bug site (:mod:`srelib.env.grading.bug_site`) is the set of code units its reference fix
changes: each function it edits (by qualified name), a file's module-level code when the fix
edits that file but no function in it, and the lines of each other file it edits (a
requirements file: compared as a set of lines without comments). :func:`site_unchanged` says whether a patched tree
leaves every unit as the buggy tree has it, after normalising away what cannot change
behaviour:

* comments, blank lines and layout (the AST has none of them);
* docstrings and statements that are bare constants (``pass``, ``...``, a string);
* branches on a constant test (``if False:`` keeps only its ``else``), loops that never run
  (``while False:``), and statements after a ``return``, ``raise``, ``continue`` or ``break``
  in the same block;
* the names of a function's parameters and locals (renamed in the order the AST holds them).

A unit that is missing, or that appears more than once, counts as changed. A patch that leaves
the site unchanged cannot have fixed the bug, whatever else it edits (a payload appended to an
``__init__.py``, a monkeypatch from another module, new files), so the grader never resolves it.
"""

from __future__ import annotations

from typing import Any

import ast
import copy

from .bug_site import bug_site
from srelib.env.support.memo import byte_lru
from srelib.env.tasks.lookup import get_scenario, load_repo
from srelib.env.support.ast_parse import parse as parse_python

MODULE = "<module>"  # the unit name of a file's module-level code
TEXT = "<text>"  # the unit name of a file that is not Python (its lines, as a set)
_JUMPS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@byte_lru(1 << 20)
def site_units(task: str) -> tuple[tuple[str, str], ...]:
    """``(file, qualified name or MODULE)`` of each unit the reference fix of ``task`` changes
    (module doc), leaving out those it changes only in ways the normal form ignores (a
    docstring); empty where the task needs no change."""
    site = bug_site(task)
    units = [(f.file, f.name) for f in site.functions]
    with_functions = {f.file for f in site.functions}
    units += [(path, MODULE if path.endswith(".py") else TEXT) for path in site.files
              if path not in with_functions]
    scenario = get_scenario(task)
    if not units or scenario.repo is None:
        return ()
    repo = load_repo(scenario.repo)
    fixed = {**repo.tree, **(repo.fixed_tree(task) or {})}
    return tuple(u for u in units if not site_unchanged((u,), dict(repo.tree), fixed))


def _constant_truth(test: ast.expr) -> bool | None:
    """The truth of a constant test (``False``, ``0``, ``not True``), else None."""
    if isinstance(test, ast.Constant):
        return bool(test.value)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _constant_truth(test.operand)
        return None if inner is None else not inner
    return None


def _block(statements: list[ast.stmt]) -> list[ast.stmt]:
    """``statements`` without no-ops, dead branches and anything after a jump."""
    out: list[ast.stmt] = []
    for stmt in statements:
        if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            continue
        if isinstance(stmt, ast.If) and _constant_truth(stmt.test) is not None:
            out += _block(stmt.body if _constant_truth(stmt.test) else stmt.orelse)
            continue
        if isinstance(stmt, ast.While) and _constant_truth(stmt.test) is False:
            out += _block(stmt.orelse)
            continue
        out.append(stmt)
        if isinstance(stmt, _JUMPS):
            break
    return out


class _Normaliser(ast.NodeTransformer):
    """Prunes every block (see :func:`_block`) and renames a function's own names."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for field in ("body", "orelse", "finalbody"):
            value = getattr(node, field, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                setattr(node, field, _block(value) or [ast.Pass()])
        return super().generic_visit(node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self.names.setdefault(node.arg, f"_v{len(self.names)}")
        node.annotation = None
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.names:
            node.id = self.names[node.id]
        return node


def _own_names(node: ast.AST) -> set[str]:
    """Parameters and names a function assigns (its locals), not those of nested scopes."""
    names: set[str] = set()
    todo = list(ast.iter_child_nodes(node))
    if isinstance(node, _SCOPES):
        names |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    while todo:
        child = todo.pop()
        if isinstance(child, (*_SCOPES, ast.ClassDef)):
            continue
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            names.add(child.id)
        todo.extend(ast.iter_child_nodes(child))
    return names


def normal_form(node: ast.AST) -> str:
    """A dump of ``node`` that two behaviour-identical spellings of it share (module doc)."""
    node = copy.deepcopy(node)
    normaliser = _Normaliser()
    if isinstance(node, _SCOPES):
        own = _own_names(node)
        for child in ast.walk(node):  # breadth first: the same order in two renamed spellings
            name = child.arg if isinstance(child, ast.arg) else getattr(child, "id", None)
            if name in own:
                normaliser.names.setdefault(name, f"_v{len(normaliser.names)}")
    return ast.dump(normaliser.visit(node), include_attributes=False)


def _lines(text: str) -> list[str]:
    """A text file's meaning up to layout: its lines without comments and blanks, as a sorted set."""
    return [repr(sorted({line.split("#", 1)[0].strip() for line in text.splitlines()} - {""}))]


def _units_size(key: Any, units: Any) -> int:
    """Bytes a cached :func:`_units` entry holds, about: its text and its normal forms."""
    text, path = key
    return len(text) + len(path) + sum(len(form) for forms in (units or {}).values()
                                       for form in forms)


@byte_lru(16 << 20, _units_size)
def _units(text: str, path: str) -> dict[str, list[str]] | None:
    """``{qualified name or MODULE: [normal form, ...]}`` of a Python file (``{TEXT: ...}`` of any
    other file); None if a Python file does not parse. Cached by text: every grading of a task
    compares against the same unpatched files (callers only read the result)."""
    if not path.endswith(".py"):
        return {TEXT: _lines(text)}
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError):
        return None
    found: dict[str, list[str]] = {}
    module_level = [s for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    found[MODULE] = [normal_form(ast.Module(body=module_level, type_ignores=[]))]

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    found.setdefault(name, []).append(normal_form(child))
                visit(child, name + ".")

    visit(tree, "")
    return found


def site_unchanged(units: tuple[tuple[str, str], ...], before: dict[str, str], after: dict[str, str]) -> bool:
    """Does ``after`` leave every unit of ``units`` as ``before`` has it (normalised)? False when
    there are no units (nothing to guard)."""
    if not units:
        return False
    for path in sorted({p for p, _ in units}):
        old, new = _units(before.get(path, ""), path), _units(after.get(path, ""), path)
        if old is None or new is None:
            return False
        for unit_path, name in units:
            if unit_path == path and (len(new.get(name, [])) != 1 or new[name] != old.get(name)):
                return False
    return True
