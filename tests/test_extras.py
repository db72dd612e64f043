"""Every optional dependency that is missing names the extra that installs it.

Two halves: the source is read (every import of a package outside the standard library and the
core install goes through :func:`srelib.extras.require` first, in the same scope), and each
extra's entry points are called in a child process where that extra's modules are blocked by a
meta-path hook, as on a machine where it was never installed.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from srelib.extras import EXTRA_OF

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "srelib"
#: the simulated services' source is data that runs in the sandbox, not srelib
DATA = ("repo_data", "scenario_data")
#: top-level modules the core install brings (google-re2)
CORE = {"re2"}


def _tops(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name.split(".")[0] for alias in node.names]
    return [node.module.split(".")[0]] if node.level == 0 and node.module else []


def _handles_absence(parents: list[ast.AST]) -> bool:
    """Under ``if TYPE_CHECKING:`` or in a ``try`` that catches the import's failure."""
    for parent in parents:
        if isinstance(parent, ast.If) and "TYPE_CHECKING" in ast.unparse(parent.test):
            return True
        if isinstance(parent, ast.Try) and any(
                h.type is not None and "ImportError" in ast.unparse(h.type)
                or h.type is not None and "ModuleNotFoundError" in ast.unparse(h.type)
                for h in parent.handlers):
            return True
    return False


def _required(statements: list[ast.stmt]) -> set[str]:
    """The top-level packages that ``require("...")`` calls among ``statements`` import."""
    return {call.args[0].value.split(".")[0] for stmt in statements for call in ast.walk(stmt)
            if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "require"
            and call.args and isinstance(call.args[0], ast.Constant)}


def unguarded_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """``(line, package)`` of each import of a non-core package that no earlier ``require``
    of the same package in the same block announces (and no ``try`` or ``TYPE_CHECKING``
    guards)."""
    found: list[tuple[int, str]] = []

    def walk(body: list[ast.stmt], parents: list[ast.AST]) -> None:
        for i, stmt in enumerate(body):
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for top in _tops(stmt):
                    if (top not in sys.stdlib_module_names and top not in CORE and top != "srelib"
                            and not _handles_absence(parents) and top not in _required(body[:i])):
                        found.append((stmt.lineno, top))
                continue
            for block in (getattr(stmt, "body", None), getattr(stmt, "orelse", None),
                          getattr(stmt, "finalbody", None)):
                if isinstance(block, list):
                    walk(block, parents + [stmt])
            for handler in getattr(stmt, "handlers", []):
                walk(handler.body, parents + [stmt])

    walk(tree.body, [])
    return found


def _modules() -> list[Path]:
    return [p for p in sorted(SOURCE.rglob("*.py")) if not set(DATA) & set(p.parts)]


def test_every_optional_import_is_announced_by_require():
    problems = [f"{path.relative_to(ROOT)}:{line}: import of {top} without require({top!r}, ...)"
                for path in _modules() for line, top in unguarded_imports(ast.parse(path.read_text()))]
    assert not problems, "\n".join(problems)


def test_every_optional_package_srelib_imports_has_an_extra():
    imported = {top for path in _modules() for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, (ast.Import, ast.ImportFrom)) for top in _tops(node)}
    optional = imported - set(sys.stdlib_module_names) - CORE - {"srelib"}
    assert optional - set(EXTRA_OF) == set(), "packages with no extra in srelib/extras.py"
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRA_OF.values()) <= set(extras), "EXTRA_OF names an extra pyproject lacks"


def test_the_checker_finds_an_unannounced_import():
    """The reader itself: a bare import, one in a function, one after a require of another
    package are found; a required, a TYPE_CHECKING and a try-guarded one are not."""
    tree = ast.parse(textwrap.dedent("""
        import json
        import pandas
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            import torch
        try:
            import orjson
        except ModuleNotFoundError:
            orjson = None
        def f():
            require("numpy", "f")
            import numpy
            from matplotlib.figure import Figure
        def g():
            require("trl.trainer", "g")
            from trl import SFTTrainer
    """))
    assert unguarded_imports(tree) == [(3, "pandas"), (14, "matplotlib")]


# Blocks every module of one extra (its packages as EXTRA_OF lists them), then runs CODE and
# prints the MissingExtra it raises (or says that none was raised).
_BLOCKED = textwrap.dedent("""
    import sys
    from importlib.abc import MetaPathFinder

    BLOCKED = set(sys.argv[1].split(","))

    class Block(MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Block())
    for name in [m for m in sys.modules if m.split(".")[0] in BLOCKED]:
        del sys.modules[name]
    from srelib.extras import MissingExtra
    try:
        exec(sys.argv[2])
    except MissingExtra as exc:
        print("MissingExtra:", exc)
    else:
        print("no error")
""")

#: One entry point per extra: what a user of that extra calls first.
ENTRY_POINTS = {
    "demo": ["import srelib\nsrelib.evaluate({'null': srelib.scripted_policy('null')}, "
             "tasks=['memory_leak'], seeds=1)",
             "from srelib.plots.axes import figure\nfigure(2, 2)"],
    "llm": ["from srelib.policies.llm.providers.openai_chat import OpenAIChatPolicy\n"
            "OpenAIChatPolicy()"],
    "hf": ["from srelib.policies.llm.providers.hf_chat import HFTransformersChatPolicy\n"
           "HFTransformersChatPolicy('google/gemma-3-270m-it')"],
    "notebooks": ["from srelib.widgets import EpisodeStepper\nEpisodeStepper()"],
    "train": ["from srelib.training.sft import sft_train\nsft_train(None, None, [], 'out')"],
    "serve": ["import srelib.serve.server", "import srelib.serve.remote"],
    "cluster": ["from srelib.runners.executors import RayExecutor\nRayExecutor().submit(print)"],
    "gym": ["import srelib.integrations.gym"],
    "inspect": ["import srelib.integrations.inspect_ai"],
    "sign": ["from srelib.results.signing import load_key\nimport pathlib\n"
             "pathlib.Path('k.pem').write_text('-----BEGIN PRIVATE KEY-----\\nAA==\\n"
             "-----END PRIVATE KEY-----\\n')\nload_key('k.pem')"],
    "audit": ["from srelib.analysis.tell_audit import learned_commit_rows\nlearned_commit_rows([], [])"],
}


@pytest.mark.parametrize("extra,code", [(e, c) for e, codes in ENTRY_POINTS.items() for c in codes])
def test_a_missing_extra_is_named_by_its_entry_point(extra, code, tmp_path):
    blocked = sorted(module for module, name in EXTRA_OF.items() if name == extra)
    done = subprocess.run([sys.executable, "-c", _BLOCKED, ",".join(blocked), code],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("MissingExtra:"), done.stdout + done.stderr
    assert f"pip install 'srelib[{extra}]'" in done.stdout, done.stdout


def test_every_extra_has_an_entry_point():
    assert set(ENTRY_POINTS) == set(EXTRA_OF.values())
