"""The public API's docstrings pass a docstring linter: pydoclint, Google style, over the
modules that define what ``srelib.__all__`` and each sub-package's ``__all__`` export.

Args, Returns (Yields) and Raises are required on every exported function and on every public
method (and ``__init__``) of every exported class, and must match the signature and the body.
Only the exported objects are held to it: a module's private helpers are not the API."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import srelib

ROOT = Path(__file__).resolve().parents[1]
#: pydoclint's options: Google style, types in the signature rather than the docstring, every
#: docstring checked however short, class attributes not required. What it says of type hints
#: (:data:`NOT_CHECKED`) is not this test's business: it holds the sections.
PYDOCLINT = ["--style=google", "--arg-type-hints-in-docstring=False",
             "--check-return-types=False",
             "--check-yield-types=False", "--skip-checking-short-docstrings=False",
             "--check-class-attributes=False", "--quiet"]
#: pydoclint has no ``__main__``: its console entry point, run by this interpreter.
LINTER = [sys.executable, "-c", "import sys; from pydoclint.main import main; sys.exit(main())"]
#: Where ``make setup`` installs pydoclint (``pip install --target``), apart from the project's
#: packages: its docstring_parser is a fork installed under the name of the one inspect_ai needs.
LINTER_HOME = Path(sys.prefix) / "pydoclint"
needs_linter = pytest.mark.skipif(not (LINTER_HOME / "pydoclint").is_dir(),
                                  reason=f"pydoclint is not in {LINTER_HOME} (make setup puts it there)")
_VIOLATION = re.compile(r"^\s+(\d+): (DOC\d+): (?:Function|Method) `([\w.]+)`:? (.*)$")
NOT_CHECKED = {"DOC106", "DOC107",  # type hints missing in a signature
               "DOC502"}  # Raises naming what a callee raises: documented on purpose
#: ``path::qualified name`` of the exported objects whose docstrings still lack sections; the
#: list only shrinks (an entry that passes fails the test until it is taken off).
DEBT = ROOT / "tests" / "docstring_debt.txt"


def _packages() -> list[str]:
    """srelib and each sub-package whose ``__init__`` declares ``__all__`` (data folders aside)."""
    found = []
    for init in sorted((ROOT / "srelib").rglob("__init__.py")):
        parts = init.parent.relative_to(ROOT).parts
        if not any(p.endswith("_data") for p in parts) and "__all__" in init.read_text(encoding="utf-8"):
            found.append(".".join(parts))
    return found


def _exported() -> dict[Path, set[str]]:
    """``{defining file: qualified names}`` of the functions and classes the packages export."""
    out: dict[Path, set[str]] = {}
    for package in _packages():
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                out.setdefault(Path(inspect.getsourcefile(obj)), set()).add(obj.__qualname__)
    return out


def _checked_lines(path: Path, names: set[str]) -> set[int]:
    """The ``def`` lines pydoclint reports on for ``names`` in ``path``: each exported function,
    each exported class and its public methods and ``__init__``."""
    lines = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if getattr(node, "name", None) not in names:
            continue
        lines.add(node.lineno)
        if isinstance(node, ast.ClassDef):
            lines |= {item.lineno for item in node.body
                      if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and (not item.name.startswith("_") or item.name == "__init__")}
    return lines


def _lint(paths, timeout: int) -> subprocess.CompletedProcess:
    """pydoclint over ``paths``, from :data:`LINTER_HOME`; a linter that crashed fails here, so
    a crash never reads as a clean run (pydoclint exits 1 on findings, as Python does on an
    uncaught error)."""
    run = subprocess.run([*LINTER, *PYDOCLINT, *map(str, paths)], capture_output=True, text=True,
                         cwd=ROOT, timeout=timeout, env={**os.environ, "PYTHONPATH": str(LINTER_HOME)})
    assert run.returncode in (0, 1) and "Traceback (most recent call last)" not in run.stderr, \
        run.stderr[-2000:]
    return run


def _violations(exported: dict[Path, set[str]]) -> dict[str, list[str]]:
    """pydoclint's findings on the exported objects: ``{path::name: ["line: code message"]}``."""
    run = _lint(sorted(exported), timeout=300)
    found: dict[str, list[str]] = {}
    path = None
    for line in run.stderr.splitlines():  # pydoclint reports on stderr
        if line.strip() and not line.startswith(" "):
            path = Path(line.strip())
            continue
        hit = _VIOLATION.match(line)
        if hit and hit[2] not in NOT_CHECKED and path is not None \
                and int(hit[1]) in _checked_lines(path, exported[path]):
            key = f"{path.relative_to(ROOT).as_posix()}::{hit[3]}"
            found.setdefault(key, []).append(f"{hit[1]}: {hit[2]} {hit[4]}")
    return found


def test_the_linter_sees_the_whole_public_api():
    exported = _exported()
    assert {"srelib", "srelib.results", "srelib.policies", "srelib.env.tasks.taskgen"} <= set(_packages())
    assert "evaluate" in exported[ROOT / "srelib/runners/rollout.py"]
    assert {"RunStore", "load_episodes"} <= exported[ROOT / "srelib/results/store.py"]


@needs_linter
def test_the_linter_flags_a_public_function_without_args_returns_raises(tmp_path):
    """The linter run fails where it should (so a clean run below means something)."""
    bad = tmp_path / "bad.py"
    bad.write_text('def f(x):\n    """Do f."""\n    if x:\n        raise ValueError(x)\n    return x\n')
    run = _lint([bad], timeout=60)
    codes = set(re.findall(r"DOC\d+", run.stderr))  # pydoclint reports on stderr
    assert {"DOC101", "DOC201", "DOC501"} <= codes, run.stdout + run.stderr
    assert _checked_lines(bad, {"f"}) == {1} and _checked_lines(bad, {"g"}) == set()


@needs_linter
def test_the_public_api_documents_args_returns_and_raises():
    found = _violations(_exported())
    debt = set(DEBT.read_text(encoding="utf-8").split()) if DEBT.exists() else set()
    new = {k: v for k, v in found.items() if k not in debt}
    assert not new, "docstring findings on the public API:\n" + "\n".join(
        f"{key}\n    " + "\n    ".join(lines) for key, lines in sorted(new.items()))
    paid = sorted(debt - set(found))
    assert not paid, f"these now pass: take them off {DEBT.name}: {paid}"
