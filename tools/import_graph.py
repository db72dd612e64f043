"""srelib's import graph, read from the source with ``ast``: which module imports which.

    python tools/import_graph.py [--root PATH] [--list]

Prints the number of modules, the arrows between them (top-level imports, and lazy ones: inside
a function or under ``if TYPE_CHECKING:``), the arrows that go up the layer table of
``tests/test_layers.py`` and the files caught in import cycles (top-level arrows alone, then all
arrows). ``--list`` names the upward arrows and the cycles. ``tests/test_layers.py`` reads the
graph through :func:`read_imports` and :func:`cycles`.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Import:
    """One import of an srelib module by another, where it is written."""

    source: str   # the importing module, e.g. "srelib.runners.rollout"
    target: str   # the imported module, e.g. "srelib.env.core"
    path: Path
    line: int
    lazy: bool    # inside a function, or under ``if TYPE_CHECKING:``: not run at import time

    def where(self, root: Path) -> str:
        return f"{self.path.relative_to(root)}:{self.line}"


def module_name(path: Path, root: Path) -> str:
    """``srelib/env/core.py`` -> ``srelib.env.core``; a package's ``__init__.py`` is the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path, package: str = "srelib") -> dict[str, Path]:
    """Every importable module of ``package`` under ``root``, by name: a ``.py`` file whose
    folders are all packages (the task data's Python files, under folders without an
    ``__init__.py``, are not modules)."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        folders = path.relative_to(root).parents
        if all((root / folder / "__init__.py").exists() for folder in list(folders)[:-1]):
            found[module_name(path, root)] = path
    return found


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The module ``name`` names, or the nearest package above it that exists (an attribute)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class _Reader(ast.NodeVisitor):
    """Collects imported names with their line and whether they run at import time."""

    def __init__(self, module: str, is_package: bool):
        self.package = module if is_package else module.rpartition(".")[0]
        self.depth = 0  # > 0 inside a function or a TYPE_CHECKING block
        self.found: list[tuple[str, int, bool]] = []

    def _lazy_body(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _lazy_body

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            self.depth += 1
            for child in node.body:
                self.visit(child)
            self.depth -= 1
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append((alias.name, node.lineno, self.depth > 0))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            base = base[:len(base) - node.level + 1]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        for alias in node.names:
            self.found.append((f"{prefix}.{alias.name}", node.lineno, self.depth > 0))


def read_imports(root: Path = ROOT, package: str = "srelib") -> list[Import]:
    """Every import of one ``package`` module by another, top-level and lazy, in file order."""
    known = modules(root, package)
    found: list[Import] = []
    for name, path in known.items():
        reader = _Reader(name, path.name == "__init__.py")
        reader.visit(ast.parse(path.read_text(), filename=str(path)))
        seen = set()  # one Import per target and line, however many names the line imports
        for imported, line, lazy in reader.found:
            if imported != package and not imported.startswith(package + "."):
                continue
            target = _resolve(imported, known)
            if target not in (None, name) and (target, line) not in seen:
                seen.add((target, line))
                found.append(Import(name, target, path, line, lazy))
    return found


def cycles(imports: list[Import]) -> list[list[str]]:
    """The import cycles: each strongly connected group of two or more modules, sorted."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.source, set()).add(imp.target)
        graph.setdefault(imp.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iterative (no recursion limit)
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def cycle_path(group: list[str], imports: list[Import]) -> list[Import]:
    """One closed walk of arrows through a cycle group, to show where the cycle is written."""
    members = set(group)
    arrows: dict[str, list[Import]] = {}
    for imp in imports:
        if imp.source in members and imp.target in members:
            arrows.setdefault(imp.source, []).append(imp)
    start = group[0]
    parents: dict[str, Import] = {}
    frontier = [start]
    while frontier:  # breadth first from start until an arrow comes back to it
        nxt = []
        for node in frontier:
            for imp in arrows.get(node, []):
                if imp.target == start:
                    walk = [imp]
                    while walk[0].source != start:
                        walk.insert(0, parents[walk[0].source])
                    return walk
                if imp.target not in parents:
                    parents[imp.target] = imp
                    nxt.append(imp.target)
        frontier = nxt
    raise ValueError(f"{group} is not a cycle")


def _layer_rules(root: Path):
    """``tests/test_layers.py``'s layer table and its upward-arrow rule."""
    spec = importlib.util.spec_from_file_location("test_layers", root / "tests" / "test_layers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="a checkout of srelib")
    parser.add_argument("--list", action="store_true", help="name the upward arrows and cycles")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    imports = read_imports(root)
    arrows = {(i.source, i.target, i.lazy) for i in imports}
    top = {(s, t) for s, t, lazy in arrows if not lazy}
    lazy = {(s, t) for s, t, lazy in arrows if lazy} - top
    print(f"modules: {len(modules(root))}")
    print(f"arrows: {len(top)} top-level, {len(lazy)} lazy only")
    rules_file = ROOT / "tests" / "test_layers.py"
    if rules_file.exists():
        upward = _layer_rules(ROOT).upward_imports(imports, root)
        print(f"upward arrows (layer table of tests/test_layers.py): {len(upward)}")
        if args.list:
            for line in upward:
                print("  " + line)
    for label, chosen in (("top-level", [i for i in imports if not i.lazy]), ("all", imports)):
        groups = cycles(chosen)
        print(f"files in cycles ({label} arrows): {sum(map(len, groups))} in {len(groups)} cycles")
        if args.list:
            for group in groups:
                print("  " + " -> ".join(i.source for i in cycle_path(group, chosen))
                      + f" -> {group[0]}")


if __name__ == "__main__":
    sys.exit(main())
