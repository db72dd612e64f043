"""The layers hold: every srelib module imports only from its own layer or lower ones, no front
end imports another, no two modules import each other (directly or round a cycle), and the
environment runs with nothing of srelib above it and no package outside the core install.

Imports are read from the source with ``ast`` (``tools/import_graph.py``): top-level ones and
lazy ones (inside a function, or under ``if TYPE_CHECKING:``) alike.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Every module's layer, lowest first: a module imports only from its own layer or lower ones.
#: A name covers the module and everything under it (the package root ``srelib`` only itself).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("env", ("srelib.env",)),  # simulation, tasks, grading, the sandbox, reading text actions
    ("support", ("srelib._version", "srelib._lazy", "srelib.extras", "srelib.redact")),
    ("episode", ("srelib.episode",)),
    ("results", ("srelib.results",)),
    ("policies", ("srelib.policies",)),
    ("runners", ("srelib.runners",)),
    ("analysis", ("srelib.analysis",)),
    # cheaters register their gate rules with analysis; nothing in srelib imports them
    ("cheaters", ("srelib.adversarial",)),
    # each front end is a leaf: none imports another (plots and widgets included)
    ("front ends", ("srelib.plots", "srelib.widgets", "srelib.serve", "srelib.training",
                    "srelib.integrations")),
    # the run report composes two front ends (the plots and the widgets' HTML panes) into one
    # file: it sits above them, and only the command line imports it
    ("composed front ends", ("srelib.report",)),
    ("public API and command line", ("srelib", "srelib.cli", "srelib.commands", "srelib.__main__")),
)
FRONT_ENDS = dict(LAYERS)["front ends"]

#: The one place for exceptions: lazy imports of an optional extra that go up or across, as
#: ``(importing module, imported module): reason``. Each must be lazy and still be written.
ALLOWED: dict[tuple[str, str], str] = {}


#: Inside ``srelib.env``, every module's sub-layer, lowest first, read as :data:`LAYERS` is. The
#: vocabulary (actions, types, the belief, parsing a reply) sits at the root with the episode core;
#: grading's verdict rules and sandbox sit below the tasks, because the generator runs them to
#: derive a task's FAIL_TO_PASS, and the rest of grading above the tasks, which it looks up.
ENV_LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("support", ("srelib.env.support",)),
    ("vocabulary", ("srelib.env", "srelib.env.actions", "srelib.env.types",
                    "srelib.env.agent_input", "srelib.env.parse", "srelib.env.belief",
                    "srelib.env.records")),
    ("simulation", ("srelib.env.simulation",)),
    ("phase 2", ("srelib.env.phase2",)),
    ("sandbox", ("srelib.env.grading.sandbox",)),
    ("verdict rules", ("srelib.env.grading.verdicts",)),
    ("tasks", ("srelib.env.tasks",)),
    ("grading", ("srelib.env.grading",)),
    ("episode core", ("srelib.env.core",)),
)


def _graph():
    """``tools/import_graph.py``, loaded once (its dataclass needs it in ``sys.modules``)."""
    if "import_graph" not in sys.modules:
        spec = importlib.util.spec_from_file_location("import_graph", ROOT / "tools" / "import_graph.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["import_graph"] = module
        spec.loader.exec_module(module)
    return sys.modules["import_graph"]


def placement(module: str, layers=LAYERS) -> tuple[int, str] | None:
    """``(layer index, the table's name covering module)``, or None when no name covers it."""
    best = None
    for index, (_, names) in enumerate(layers):
        for name in names:
            covers = module == name or (name != "srelib" and module.startswith(name + "."))
            if covers and (best is None or len(name) > len(best[1])):
                best = (index, name)
    return best


def upward_imports(imports, root: Path = ROOT) -> list[str]:
    """Each import the table forbids, as ``file:line: what is wrong`` (ALLOWED ones left out)."""
    problems = []
    for imp in imports:
        if (imp.source, imp.target) in ALLOWED and imp.lazy:
            continue
        source, target = placement(imp.source), placement(imp.target)
        if source is None or target is None:
            continue  # test_every_module_has_a_layer names them
        if target[0] > source[0]:
            problems.append(f"{imp.where(root)}: {imp.source} ({LAYERS[source[0]][0]}) imports "
                            f"{imp.target} ({LAYERS[target[0]][0]}), a higher layer")
        elif source[1] in FRONT_ENDS and target[1] in FRONT_ENDS and source[1] != target[1]:
            problems.append(f"{imp.where(root)}: front end {source[1]} imports front end "
                            f"{target[1]} (front ends are leaves)")
    return problems


def env_upward_imports(imports, root: Path = ROOT) -> list[str]:
    """Each import within ``srelib.env`` that :data:`ENV_LAYERS` forbids, as ``file:line: what``."""
    problems = []
    for imp in imports:
        source, target = placement(imp.source, ENV_LAYERS), placement(imp.target, ENV_LAYERS)
        if source and target and target[0] > source[0]:
            problems.append(f"{imp.where(root)}: {imp.source} ({ENV_LAYERS[source[0]][0]}) "
                            f"imports {imp.target} ({ENV_LAYERS[target[0]][0]}), a higher sub-layer")
    return problems


def test_every_env_module_has_a_sub_layer_and_each_sub_package_says_its_job():
    modules = [m for m in _graph().modules(ROOT) if m.startswith("srelib.env")]
    unplaced = [m for m in modules if placement(m, ENV_LAYERS) is None]
    assert not unplaced, f"modules missing from ENV_LAYERS in {__file__}: {unplaced}"
    for init in (ROOT / "srelib" / "env").rglob("__init__.py"):
        if "repo_data" in init.parts or "scenario_data" in init.parts:
            continue  # the repositories' own packages
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{init}: no docstring saying what it owns"
        exported = [n for n in tree.body if isinstance(n, ast.Assign)
                    and any(getattr(t, "id", None) == "__all__" for t in n.targets)]
        assert exported or init.parent.name == "env", f"{init}: no __all__"


def test_no_env_module_imports_from_a_higher_sub_layer():
    problems = env_upward_imports(_graph().read_imports(ROOT))
    assert not problems, "imports against the env sub-layers:\n" + "\n".join(problems)


def test_the_sub_layer_check_names_an_upward_import(tmp_path):
    """On a tiny tree: the simulation importing the score is named; the score importing the
    simulation, and the generator importing the verdict rules, are not."""
    env = tmp_path / "srelib" / "env"
    for folder in ("simulation", "grading/verdicts", "tasks"):
        (env / folder).mkdir(parents=True)
    for init in ("", "simulation/", "grading/", "grading/verdicts/", "tasks/"):
        (env / init / "__init__.py").write_text("")
    (tmp_path / "srelib" / "__init__.py").write_text("")
    (env / "simulation" / "infra.py").write_text("def f():\n    from ..grading import score\n")
    (env / "grading" / "score.py").write_text("from srelib.env.simulation import infra\n")
    (env / "grading" / "verdicts" / "rules.py").write_text("")
    (env / "tasks" / "runner.py").write_text("from srelib.env.grading.verdicts import rules\n")
    assert env_upward_imports(_graph().read_imports(tmp_path), tmp_path) == [
        "srelib/env/simulation/infra.py:2: srelib.env.simulation.infra (simulation) imports "
        "srelib.env.grading.score (grading), a higher sub-layer"]


def test_every_module_has_a_layer():
    unplaced = [m for m in _graph().modules(ROOT) if placement(m) is None]
    assert not unplaced, f"modules missing from LAYERS in {__file__}: {unplaced}"


def test_nothing_in_srelib_imports_the_cheaters():
    """``srelib.adversarial`` is read by the gate's folder scan and imported by the tests only."""
    found = [f"{imp.where(ROOT)}: {imp.source} imports {imp.target}"
             for imp in _graph().read_imports(ROOT)
             if imp.target.startswith("srelib.adversarial") and not imp.source.startswith("srelib.adversarial")]
    assert not found, "\n".join(found)


def test_no_module_imports_from_a_higher_layer_or_another_front_end():
    problems = upward_imports(_graph().read_imports(ROOT))
    assert not problems, "imports against the layers:\n" + "\n".join(problems)


def _cycles() -> list[str]:
    """Every import cycle (lazy imports count), described as the walk of imports round it."""
    graph = _graph()
    imports = graph.read_imports(ROOT)
    return [f"{len(group)} modules: " + " -> ".join(
        f"{imp.source} ({imp.where(ROOT)})" for imp in graph.cycle_path(group, imports))
        + f" -> {group[0]}" for group in graph.cycles(imports)]


def test_no_import_cycle():
    found = _cycles()
    assert not found, "import cycles:\n" + "\n".join(found)


def test_each_exception_is_a_lazy_import_still_written():
    imports = {(i.source, i.target): i for i in _graph().read_imports(ROOT)}
    stale = [pair for pair in ALLOWED if pair not in imports or not imports[pair].lazy]
    assert not stale, f"ALLOWED names imports that are gone or not lazy: {stale}"


def test_the_reader_sees_lazy_relative_and_type_only_imports(tmp_path):
    """The reader itself: an upward import hidden in a function, a relative import and one under
    TYPE_CHECKING are all read, with their lines; a cycle is found and walked."""
    package = tmp_path / "srelib"
    (package / "env").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "env" / "__init__.py").write_text("")
    (package / "env" / "core.py").write_text(
        "from . import plan\n\ndef step():\n    from srelib.cli import main\n")
    (package / "env" / "plan.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from srelib.env.core import step\n")
    (package / "cli.py").write_text("from srelib.env.core import step\n")
    graph = _graph()
    imports = graph.read_imports(tmp_path)
    seen = {(i.source, i.target, i.line, i.lazy) for i in imports}
    assert seen == {("srelib.env.core", "srelib.env.plan", 1, False),
                    ("srelib.env.core", "srelib.cli", 4, True),
                    ("srelib.env.plan", "srelib.env.core", 3, True),
                    ("srelib.cli", "srelib.env.core", 1, False)}
    assert upward_imports(imports, tmp_path) == [
        "srelib/env/core.py:4: srelib.env.core (env) imports srelib.cli "
        "(public API and command line), a higher layer"]
    assert graph.cycles(imports) == [["srelib.cli", "srelib.env.core", "srelib.env.plan"]]
    walk = graph.cycle_path(["srelib.cli", "srelib.env.core", "srelib.env.plan"], imports)
    assert [(i.source, i.target) for i in walk] == [("srelib.cli", "srelib.env.core"),
                                                    ("srelib.env.core", "srelib.cli")]


# The environment alone: a child process where importing any srelib module outside srelib.env
# (beyond what the package root itself runs) or any package outside the standard library and
# the core dependencies fails, and is recorded.
_ALONE = textwrap.dedent("""
    import json, sys
    from importlib.abc import MetaPathFinder

    allowed_srelib, allowed_top = set(ALLOWED_SRELIB), set(ALLOWED_TOP) | set(sys.stdlib_module_names)
    blocked = []

    class Block(MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            top = name.split(".")[0]
            if top == "srelib":
                ok = name in allowed_srelib or name.startswith("srelib.env.") or name == "srelib.env"
            else:
                ok = top in allowed_top
            if ok or not any(f.find_spec(name, path, target) for f in sys.meta_path if f is not self
                             and hasattr(f, "find_spec")):
                return None  # allowed, or not installed at all (a probe such as copy's "org")
            blocked.append(name)
            raise ImportError(f"blocked for this test: {name}")

    sys.meta_path.insert(0, Block())

    from srelib.env.tasks.catalog import list_tasks
    from srelib.env.core import IncidentEnv

    ended = {}
    for task in ("memory_leak", list_tasks("generated")[0]):
        env = IncidentEnv()
        obs, info = env.reset(task=task, pool="C", seed=3)
        done = False
        while not done:  # the first valid action each step, sent as text (the env's own parser)
            obs, reward, terminated, truncated, info = env.step(obs["valid_actions"][0])
            done = terminated or truncated
        ended[task] = len(env.trajectory)
    print(json.dumps({"ended": ended, "blocked": blocked,
                      "loaded": sorted(m for m in sys.modules if m.split(".")[0] == "srelib")}))
""")


def _core_modules() -> set[str]:
    """Top-level module names that pyproject's core dependencies install."""
    core = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {dep.split(">")[0].split("=")[0].split("<")[0].strip().lower() for dep in core}
    return {module for module, dists in importlib.metadata.packages_distributions().items()
            if any(d.lower() in names for d in dists)}


def test_the_environment_runs_alone():
    root_imports = sorted(i.target for i in _graph().read_imports(ROOT)
                          if i.source == "srelib" and not i.lazy)
    code = (f"ALLOWED_SRELIB = {['srelib', *root_imports]!r}\n"
            f"ALLOWED_TOP = {sorted(_core_modules())!r}\n" + _ALONE)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["blocked"] == [], f"the environment tried to import {result['blocked']}"
    assert len(result["ended"]) == 2 and all(n > 0 for n in result["ended"].values())
    outside = [m for m in result["loaded"] if m != "srelib" and m not in root_imports
               and not m.startswith("srelib.env")]
    assert outside == []

