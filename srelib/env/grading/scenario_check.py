"""Check a hand-written scenario folder against its repository (``srelib tasks check PATH``).

:func:`check_folder` names every problem it finds, not just the first: a missing or malformed
``scenario.json`` (bad JSON, unknown keys, unknown services, ...), a repository that does not
exist, a bad commit that is not in its history, test ids that are not in its hidden tests, a
FAIL_TO_PASS test that already passes on the unfixed tree or a PASS_TO_PASS test that fails on
it, and a reference fix that does not apply or does not resolve.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from srelib.env.grading.pipeline import grade_diff, run_tests
from srelib.env.tasks.lookup import load_repo
from srelib.env.phase2.repos import Repo, unified_diff
from srelib.env.simulation.scenarios import FOLDERS, ScenarioFolder, read_folder
from srelib.env.support.ast_parse import parse as parse_python


def check_folder(path: Path | str) -> list[str]:
    """Every problem of the scenario folder at ``path``; an empty list when it is sound."""
    path = Path(path)
    if not path.is_dir():
        return [f"{path} is not a folder"]
    try:
        raw = json.loads((path / "scenario.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return [f"{path.name}: no scenario.json in the folder"]
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return [f"{path.name}/scenario.json: not valid JSON ({exc})"]
    problems = []
    try:
        folder = read_folder(path)
    except ValueError as exc:
        problems.append(str(exc))
        folder = None
    repo_name = raw.get("repo") if isinstance(raw, dict) else None
    if not isinstance(repo_name, str):
        return problems + [f"repo: scenario.json names no repository (repo is {repo_name!r})"]
    try:
        repo = load_repo(repo_name)
    except (ValueError, TypeError) as exc:
        return problems + [f"repo: {exc}"]
    if folder is None:
        return problems  # the test ids and the fix need a readable scenario
    name = folder.scenario.name
    if name in FOLDERS and FOLDERS[name].path.resolve() != path.resolve():
        problems.append(f"a task named {name!r} already exists ({FOLDERS[name].path})")
    problems += _check_history(folder, repo)
    unknown = _unknown_test_ids(repo, folder.fail_to_pass + folder.pass_to_pass)
    problems += [f"test id {t!r} is not in repo {repo.name!r}'s hidden tests" for t in unknown]
    problems += _check_fix_shape(folder)
    if not unknown:
        problems += _check_runs(folder, repo)
    return problems


def _check_history(folder: ScenarioFolder, repo: Repo) -> list[str]:
    bad = folder.scenario.bad_commit
    if bad is not None and repo.commit(bad) is None:
        return [f"bad_commit {bad!r} is not a commit of repo {repo.name!r}"]
    return []


def _functions(source: str | None, prefix: str) -> set[str]:
    if source is None:
        return set()
    try:
        tree = parse_python(source)
    except SyntaxError:
        return set()
    return {node.name[len(prefix):] for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith(prefix)}


def _unknown_test_ids(repo: Repo, test_ids: tuple[str, ...]) -> list[str]:
    """Ids with no ``test_<name>`` check or no ``probe_<name>`` probe in the repository."""
    unknown = []
    for test_id in test_ids:
        file, _, test = test_id.partition("::")
        name = test[len("test_"):] if test.startswith("test_") else None
        if name is None or name not in (_functions(repo.checks.get(file), "test_")
                                        & _functions(repo.hidden_tests.get(file), "probe_")):
            unknown.append(test_id)
    return unknown


def _check_fix_shape(folder: ScenarioFolder) -> list[str]:
    sc, fix = folder.scenario, folder.fix_files()
    problems = []
    if sc.needs_fix and fix is None:
        problems.append("needs_fix is true but the folder has no fix/")
    if not sc.needs_fix and fix is not None:
        problems.append("needs_fix is false but the folder has a fix/")
    if sc.needs_fix and not folder.fail_to_pass:
        problems.append("a task that needs a fix needs at least one FAIL_TO_PASS test")
    if not sc.needs_fix and folder.fail_to_pass:
        problems.append("a task that needs no change can have no FAIL_TO_PASS test")
    both = sorted(set(folder.fail_to_pass) & set(folder.pass_to_pass))
    if both:
        problems.append(f"tests in both FAIL_TO_PASS and PASS_TO_PASS: {both}")
    return problems


def _check_runs(folder: ScenarioFolder, repo: Repo) -> list[str]:
    """Run the hidden tests on the unfixed tree, then grade the reference fix like a patch."""
    f2p, p2p = list(folder.fail_to_pass), list(folder.pass_to_pass)
    before, timed_out = run_tests(repo.name, f2p + p2p, dict(repo.tree))
    problems = ["the hidden tests timed out on the unfixed tree"] if timed_out else []
    problems += [f"FAIL_TO_PASS test {t} already passes without the fix" for t in f2p if before[t]]
    problems += [f"PASS_TO_PASS test {t} fails on the unfixed tree" for t in p2p if not before[t]]
    fix = folder.fix_files()
    if fix is None:
        return problems
    diff = unified_diff(repo.tree, {**repo.tree, **fix})
    result = grade_diff(repo.name, f2p, p2p, diff)
    if result["tests_touched"]:
        problems.append(f"the fix changes test files {result['tests_touched']}")
    if not result["patch_applied"]:
        problems.append(f"the fix does not apply: {result['apply_error']}")
    elif result["resolved"] != "full":
        failing = [t for part in ("FAIL_TO_PASS", "PASS_TO_PASS")
                   for t, ok in result[part].items() if not ok]
        problems.append(f"the fix does not resolve the task ({result['resolved']}); "
                        f"failing with the fix: {failing}")
    return problems
