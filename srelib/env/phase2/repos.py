"""Phase-2 code repositories: the tree, its commit history, reference fixes and hidden tests.

Each repository lives in ``repo_data/<name>/`` (layout in docs/CONTRACTS.md): a manifest, the
full contents of every file each commit added or changed, and the hidden tests. What belongs to
one task (its FAIL_TO_PASS / PASS_TO_PASS ids and the files its reference fix rewrites) lives in
that task's scenario folder, so several tasks can share a repository. Unified diffs are
computed here from the stored file versions, so every commit diff replays onto its parent and
every fix diff applies to the final tree.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from srelib.env.simulation.scenarios import FOLDERS

REPO_DATA = Path(__file__).with_name("repo_data")
DELETED_SUFFIX = ".deleted"
_NO_NEWLINE = "\\ No newline at end of file\n"


@dataclass(frozen=True)
class Commit:
    """One commit: who, when, why, which files, and its unified diff against the parent."""

    sha: str
    author: str
    date: str
    message: str
    files: tuple[str, ...]
    diff: str


def unified_diff(before: Mapping[str, str], after: Mapping[str, str]) -> str:
    """A git-style unified diff (a/ b/ prefixes, 3 lines of context) between two file maps."""
    parts = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        header = [f"diff --git a/{path} b/{path}\n"]
        if old is None:
            header.append("new file mode 100644\n")
        elif new is None:
            header.append("deleted file mode 100644\n")
        body = difflib.unified_diff(
            (old or "").splitlines(keepends=True), (new or "").splitlines(keepends=True),
            fromfile="/dev/null" if old is None else f"a/{path}",
            tofile="/dev/null" if new is None else f"b/{path}",
        )
        parts.append("".join(header))
        for line in body:
            parts.append(line if line.endswith("\n") else line + "\n" + _NO_NEWLINE)
    return "".join(parts)


def _read_files(root: Path) -> dict[str, str]:
    """Every file under ``root`` as {relative posix path: text}."""
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


@dataclass(frozen=True)
class Repo:
    """A loaded repository. ``tree`` is the final state; ``commits`` are newest first.
    ``hidden_tests`` are the probe files (run next to a patch), ``checks`` the files that judge
    their observations in the grader (srelib.env.grading.verdicts.rules); both map file name to text."""

    name: str
    service: str
    description: str
    tree: Mapping[str, str]
    commits: tuple[Commit, ...]
    hidden_tests: Mapping[str, str]
    checks: Mapping[str, str]
    fixes: Mapping[str, Mapping[str, str]]
    tests_by_task: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]

    @property
    def tasks(self) -> tuple[str, ...]:
        """The tasks whose hidden tests this repository carries."""
        return tuple(sorted(self.tests_by_task))

    @functools.cached_property
    def paths(self) -> tuple[str, ...]:
        """The tree's file paths, sorted (worked out once: every episode's phase 2 shows them)."""
        return tuple(sorted(self.tree))

    @functools.cached_property
    def folders(self) -> frozenset[str]:
        """Every folder that holds a file of the tree, ``"."`` included."""
        return frozenset({"."} | {"/".join(p.split("/")[:i]) for p in self.tree
                                  for i in range(1, p.count("/") + 1)})

    @functools.cached_property
    def shas(self) -> frozenset[str]:
        """The commits' shas."""
        return frozenset(c.sha for c in self.commits)

    def _tests(self, task: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        if task not in self.tests_by_task:
            raise ValueError(f"repo {self.name!r} has no task {task!r}; valid: {list(self.tasks)}")
        return self.tests_by_task[task]

    def fail_to_pass(self, task: str) -> list[str]:
        """Test ids that fail on the tree and pass with the reference fix."""
        return list(self._tests(task)[0])

    def pass_to_pass(self, task: str) -> list[str]:
        """Test ids that pass both on the tree and with the reference fix."""
        return list(self._tests(task)[1])

    def fixed_tree(self, task: str) -> dict[str, str] | None:
        """The tree after the reference fix, or None when the task needs no change."""
        self._tests(task)
        files = self.fixes.get(task)
        return None if files is None else {**self.tree, **files}

    def fix_diff(self, task: str) -> str | None:
        """The reference fix as a unified diff against the tree (None: no change is needed)."""
        fixed = self.fixed_tree(task)
        return None if fixed is None else unified_diff(self.tree, fixed)

    def with_commits(self, commits: tuple[Commit, ...]) -> "Repo":
        """This repository with ``commits`` (newest first) in place of its own: what one
        episode shows of them (the tree, paths and folders are shared, not worked out again)."""
        view = dataclasses.replace(self, commits=tuple(commits))
        for name in ("paths", "folders"):
            if name in self.__dict__:
                view.__dict__[name] = self.__dict__[name]
        return view

    def commit(self, sha_prefix: str) -> Commit | None:
        """The one commit whose sha starts with ``sha_prefix`` (None: no match or ambiguous)."""
        hits = [c for c in self.commits if sha_prefix and c.sha.startswith(sha_prefix)]
        return hits[0] if len(hits) == 1 else None


def list_repos() -> list[str]:
    """Names of every repository in repo_data, sorted."""
    return sorted(p.parent.name for p in REPO_DATA.glob("*/manifest.json"))


def _load_commits(root: Path, manifest: dict) -> tuple[dict[str, str], list[Commit]]:
    # A folder left holding only byte caches (git keeps no empty folder) is no commit.
    folders = {p: _read_files(p) for p in sorted((root / "commits").iterdir()) if p.is_dir()}
    dirs = [p for p, files in folders.items() if files]
    entries = manifest["commits"]
    if [d.name.split("-", 1)[1] for d in dirs] != [c["sha"] for c in entries]:
        raise ValueError(f"repo {root.name}: commits/ folders do not match the manifest's commits")
    tree: dict[str, str] = {}
    commits = []
    for folder, entry in zip(dirs, entries):
        before = dict(tree)
        touched = []
        for rel, text in folders[folder].items():
            if rel.endswith(DELETED_SUFFIX):
                rel = rel[: -len(DELETED_SUFFIX)]
                tree.pop(rel, None)
            else:
                tree[rel] = text
            touched.append(rel)
        commits.append(Commit(entry["sha"], entry["author"], entry["date"], entry["message"],
                              tuple(sorted(touched)), unified_diff(before, tree)))
    return tree, commits[::-1]


def classic_repo(name: str) -> Repo:
    """The repository ``name`` in repo_data, with its per-task facts (test ids, reference fixes)
    from the scenario folders naming it. :func:`srelib.env.tasks.lookup.load_repo` loads any
    repository, a generated task's too, and keeps it."""
    if name not in list_repos():
        raise ValueError(f"unknown repo {name!r}; valid: {list_repos()}")
    root = REPO_DATA / name
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    tree, commits = _load_commits(root, manifest)
    folders = [f for f in FOLDERS.values() if f.scenario.repo == name]
    fix_files = {f.scenario.name: f.fix_files() for f in folders}
    fixes = {task: MappingProxyType(files) for task, files in fix_files.items() if files is not None}
    tests_by_task = {f.scenario.name: (f.fail_to_pass, f.pass_to_pass) for f in folders}
    return Repo(
        name=manifest["name"], service=manifest["service"], description=manifest["description"],
        tree=MappingProxyType(tree), commits=tuple(commits),
        hidden_tests=MappingProxyType(_read_files(root / "hidden_tests" / "probes")),
        checks=MappingProxyType(_read_files(root / "hidden_tests" / "checks")),
        fixes=MappingProxyType(fixes), tests_by_task=MappingProxyType(tests_by_task),
    )
