"""The public surface: lazy exports that type checkers see too, notebooks that import only
public modules, and one-line errors for a missing optional extra."""

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import srelib

ROOT = Path(__file__).resolve().parents[1]


def _type_checking_names() -> dict[str, str]:
    tree = ast.parse((ROOT / "srelib" / "__init__.py").read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and getattr(node.test, "id", None) == "TYPE_CHECKING")
    return {alias.name: stmt.module for stmt in block.body for alias in stmt.names}


def test_type_checkers_see_every_lazy_export_from_its_module():
    assert _type_checking_names() == srelib._EXPORTS


def test_every_export_loads():
    for name, module in srelib._EXPORTS.items():
        assert getattr(srelib, name) is getattr(importlib.import_module(module), name)


def _public_names(module: str) -> set[str]:
    """The public names ``module`` defines itself (not those it imports)."""
    tree = ast.parse(Path(importlib.import_module(module).__file__).read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return {n for n in names if not n.startswith("_")}


def test_packages_that_replaced_a_module_export_all_it_had():
    """srelib.results, srelib.plots and srelib.widgets were modules: as packages they load each
    public name of every module they load from (plots and widgets were split into a module per
    job; ``load_run`` re-runs policies, so it moved up to ``srelib.runners.runs``)."""
    for package, modules in (("srelib.results", {"srelib.results.store"}),
                             ("srelib.plots", None), ("srelib.widgets", None)):
        exports = importlib.import_module(package)._EXPORTS
        for module in modules or set(exports.values()):
            assert _public_names(module) <= {n for n, m in exports.items() if m == module}, module
        for name, source in exports.items():
            assert getattr(importlib.import_module(package), name) is \
                getattr(importlib.import_module(source), name)
    assert not hasattr(srelib.results, "load_run")  # srelib.load_run: results run no policy


def test_notebooks_import_no_cli_internals_or_private_names():
    imports = re.compile(r"^\s*from (srelib[\w.]*) import (.+)$", re.M)
    for source in sorted((ROOT / "notebooks" / "src").glob("*.py")):
        for module, names in imports.findall(source.read_text()):
            assert module != "srelib.cli", f"{source.name} imports the CLI's internals"
            private = [n.strip() for n in names.split(",") if n.strip().startswith("_")]
            assert not private, f"{source.name} imports private names {private}"
            importlib.import_module(module)  # a module that exists


def _run_without(modules: list[str], code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter where ``modules`` cannot be imported."""
    block = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
    return subprocess.run([sys.executable, "-c", block + code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def test_eval_without_pandas_says_in_one_line_which_extra_to_install(tmp_path):
    done = _run_without(["pandas"], "from srelib.cli import main\n"
                        f"sys.exit(main(['eval', '--policy', 'null', '--seeds', '1', "
                        f"'--out', {str(tmp_path / 'run')!r}]))")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'srelib[demo]'" in lines[0], done.stderr
    assert not (tmp_path / "run" / "episodes.jsonl").exists()  # nothing ran, nothing half-written


def test_evaluate_runs_without_tqdm():
    done = _run_without(["tqdm", "tqdm.auto"],
                        "import srelib\n"
                        "frame = srelib.evaluate({'null': srelib.scripted_policy('null')}, "
                        "tasks=['memory_leak'], seeds=2)\nprint(len(frame))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"


def test_tasks_lists_both_suites_without_pandas():
    done = _run_without(["pandas"], "from srelib.cli import main\n"
                        "sys.exit(main(['tasks']) or main(['tasks', '--suite', 'generated']))")
    assert done.returncode == 0, done.stderr
    assert "| memory_leak " in done.stdout and "Tasks per family and split" in done.stdout
