"""Every repository in repo_data is consistent: its history replays with real git, its bad
commit is the phase-1 deploy, its fixes apply, and its hidden tests mean what they claim."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from srelib.env.grading.pipeline import grade_patch, run_hidden_tests
from srelib.env.tasks.lookup import get_scenario, load_repo
from srelib.env.phase2.repos import REPO_DATA, _load_commits, list_repos, unified_diff
from srelib.env.simulation.scenarios import TASKS

REPOS = list_repos()
TASK_REPOS = [(t, get_scenario(t).repo) for t in TASKS]


def _git(cwd: Path, *args: str, stdin: str | None = None) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x", "HOME": str(cwd), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True, env=env)
    assert done.returncode == 0, f"git {args[0]} failed: {done.stderr}"
    return done.stdout


def _replay(repo_name: str, where: Path) -> None:
    """A real git repository built by applying every commit's diff in order."""
    _git(where, "init", "-q")
    for commit in reversed(load_repo(repo_name).commits):
        _git(where, "apply", "--index", "-", stdin=commit.diff)
        _git(where, "commit", "-q", "-m", commit.sha)


def _files(where: Path) -> dict[str, str]:
    return {p.relative_to(where).as_posix(): p.read_text() for p in sorted(where.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(where).parts}


def test_every_scenario_repo_is_present():
    assert {repo for _, repo in TASK_REPOS} <= set(REPOS)


@pytest.mark.parametrize("name", REPOS)
def test_repo_is_a_small_real_package_with_history(name):
    repo = load_repo(name)
    code = [p for p in repo.tree if p.endswith(".py")]
    assert len(repo.tree) >= 3 and code
    assert sum(t.count("\n") for t in repo.tree.values()) >= 60
    for path in code:
        compile(repo.tree[path], path, "exec")
    assert len(repo.commits) >= 2
    for c in repo.commits:
        assert len(c.sha) == 7 and int(c.sha, 16) >= 0 and c.author and c.date and c.message and c.files
    assert load_repo(name) is repo, "loaded repositories are cached"


def test_a_folder_left_with_only_byte_caches_is_not_read_as_a_commit(tmp_path):
    name = REPOS[0]
    root = tmp_path / name
    shutil.copytree(REPO_DATA / name, root)
    stale = root / "commits" / "000-deadbee" / "__pycache__"
    stale.mkdir(parents=True)
    (stale / "old.cpython-311.pyc").write_bytes(b"\0")
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    tree, commits = _load_commits(root, manifest)
    assert tree == dict(load_repo(name).tree)
    assert [c.sha for c in commits] == [c.sha for c in load_repo(name).commits]
    (stale.parent / "real.py").write_text("x = 1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="do not match the manifest"):
        _load_commits(root, manifest)


@pytest.mark.parametrize("name", REPOS)
def test_commit_diffs_replay_to_the_tree_with_git_apply(name, tmp_path):
    _replay(name, tmp_path)
    assert _files(tmp_path) == dict(load_repo(name).tree)


@pytest.mark.parametrize("task,name", TASK_REPOS)
def test_bad_commit_is_the_phase1_deploy_and_fix_applies(task, name, tmp_path):
    scenario, repo = get_scenario(task), load_repo(name)
    shas = [c.sha for c in repo.commits]
    if scenario.bad_commit is not None:
        assert scenario.bad_commit in shas
    assert task in repo.tasks
    fix = repo.fix_diff(task)
    assert (fix is None) == (not scenario.needs_fix)
    if fix is not None:
        _replay(name, tmp_path)
        _git(tmp_path, "apply", "--check", "-", stdin=fix)
        assert repo.fail_to_pass(task), "a fix needs failing tests"


@pytest.mark.parametrize("task,name", TASK_REPOS)
def test_hidden_tests_fail_before_and_pass_after_the_fix(task, name):
    repo = load_repo(name)
    f2p, p2p = repo.fail_to_pass(task), repo.pass_to_pass(task)
    assert p2p, "every task guards behaviour with PASS_TO_PASS tests"
    before, timed_out = run_hidden_tests(name, task, dict(repo.tree))
    assert not timed_out
    assert not any(before[t] for t in f2p), "FAIL_TO_PASS must fail on the tree"
    assert all(before[t] for t in p2p), "PASS_TO_PASS must pass on the tree"
    fixed = repo.fixed_tree(task)
    if fixed is not None:
        after, _ = run_hidden_tests(name, task, fixed)
        assert all(after.values()), f"the fix fails {[t for t, ok in after.items() if not ok]}"


@pytest.mark.parametrize("name", REPOS)
def test_hidden_tests_and_fixes_are_not_in_the_workspace_tree(name):
    repo = load_repo(name)
    for text in [*repo.hidden_tests.values(), *repo.checks.values()]:
        assert text not in repo.tree.values()
    for path in repo.tree:
        assert not path.startswith(("hidden_tests/", "fix/", "commits/")) and path != "manifest.json"


def _blind_revert(name: str, sha: str, where: Path) -> str:
    """The diff a `git revert` of the whole commit would make, computed by real git."""
    _replay(name, where)
    target = next(line.split(" ", 1)[0] for line in _git(where, "log", "--format=%H %s").splitlines()
                  if line.endswith(" " + sha))
    _git(where, "revert", "--no-commit", target)
    return _git(where, "diff", "--cached")


def test_a_blind_revert_of_the_bad_commit_is_not_a_universal_answer(tmp_path):
    """In at least half of all scenarios reverting the bad commit loses guarded behaviour."""
    partial = []
    for i, (task, name) in enumerate(TASK_REPOS):
        scenario = get_scenario(task)
        if scenario.bad_commit is None:
            continue
        where = tmp_path / str(i)
        where.mkdir()
        result = grade_patch(name, task, _blind_revert(name, scenario.bad_commit, where))
        assert result["patch_applied"], result["apply_error"]
        if result["resolved"] != "full" and not all(result["PASS_TO_PASS"].values()):
            partial.append(task)
    assert len(partial) >= len(TASKS) / 2, partial
    assert {"cascading_failure", "info_ordering", "heldout_confidence_ordering"} <= set(partial)


def test_no_change_repo_tests_fail_when_the_intentional_guard_is_removed():
    repo = load_repo("orders_breaker")
    tree = dict(repo.tree)
    path = "orders/handlers/checkout.py"
    guard = '        if not self.breaker.allow():\n            return {"status": 503, "error": "payment circuit open; retry later"}\n'
    assert guard in tree[path]
    unguarded = {**tree, path: tree[path].replace(guard, "")}
    result = grade_patch("orders_breaker", "circuit_breaker_noop", unified_diff(tree, unguarded))
    assert result["patch_applied"]
    assert not all(result["PASS_TO_PASS"].values()) and result["resolved"] != "full"


def test_unknown_repo_or_task_names_the_valid_choices():
    with pytest.raises(ValueError, match="orders_batch"):
        load_repo("no_such_repo")
    with pytest.raises(ValueError, match="memory_leak"):
        load_repo("orders_batch").fail_to_pass("cascading_failure")


def test_held_out_tasks_share_nothing_with_train_tasks():
    """A held-out task has its own repository, bug, fix and hidden tests, and neither its answer
    (culprit service and fault class) nor its involvement pattern is any train task's."""
    train = [get_scenario(t) for t in TASKS if not get_scenario(t).heldout]
    train_repos = {s.repo for s in train}
    train_tests = {text for s in train for text in
                   [*load_repo(s.repo).hidden_tests.values(), *load_repo(s.repo).checks.values()]}
    held_out = [get_scenario(t) for t in TASKS if get_scenario(t).heldout]
    assert held_out
    for s in held_out:
        repo = load_repo(s.repo)
        assert s.repo not in train_repos and repo.tasks == (s.name,)
        assert not train_tests & {*repo.hidden_tests.values(), *repo.checks.values()}
        assert (s.root_cause_service, s.fault_class) not in {(t.root_cause_service, t.fault_class)
                                                             for t in train}
        assert set(s.involved_services) not in [set(t.involved_services) for t in train]
        assert set(s.required_remediation) not in [set(t.required_remediation) for t in train]
