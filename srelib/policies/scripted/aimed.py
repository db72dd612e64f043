"""AimedRepairPhase2Policy: a scripted repairer that aims its edit with what the handoff says.

It reads only its observations: the issue (the incident, the hand-over's fault class and its
reasoning), ``bad_commit_sha``, the git log, the suspect's diff and the current files. Its aim
is the suspect commit, the bad files and the bad functions, and the finer the aim, the finer
the edit (:mod:`srelib.policies.scripted.aimed_edits`):

* no aim beyond a suspect: undo the suspect's whole edit blocks, the cautious partial revert
  (fine edits spread over every file a commit touched undo unrelated work);
* bad files: undo the suspect's changes line by line in those files only, keeping signatures,
  docstrings, comments and renamed names;
* bad functions: the line-level undo inside those functions (and module-level code), lines the
  commit deleted restored where the names they read still exist, and the error path of each
  bad function made to hand back what its success path hands back.

The aim comes from the handoff: a suspect is ``bad_commit_sha``; bad files are tree paths the
issue names; bad functions are names of functions in those files that the issue names (so a
phase-1 agent can hand them over in its belief's reasoning). With no suspect (an empty
handoff) it searches by itself: the newest commit of the last ten that changes Python code
outside the tests. A hand-over whose fault class is ``none`` gets "no change needed".
"""

from __future__ import annotations

import ast
import re

from srelib.env.actions import ActionType
from srelib.env.phase2.repos import unified_diff
from srelib.policies.base import EpisodeWatcher, make_action
from srelib.policies.scripted.aimed_edits import (function_spans, line_units, names_bound,
                                                  release_on_error)
from srelib.policies.scripted.partial_revert import Block, change_blocks, is_edit, locate
from srelib.policies.scripted.repair import LadderRungs
from srelib.policies.scripted.revert import _NO_FAULT

#: How many commits the self-search reads when no suspect was handed over.
SEARCH_COMMITS = 10


def _is_test(path: str) -> bool:
    from srelib.env.phase2.workspace import is_test_path

    return is_test_path(path)


class AimedRepairPhase2Policy(EpisodeWatcher):
    """Phase 2: find the suspect, read what the aim points at, propose the aimed edit (see the
    module doc). In phase 1 (used alone in a joint episode) it transitions with no belief."""

    name = "aimed_repair_p2"

    def __init__(self) -> None:
        self.reset()

    def reset(self, seed: int | None = None, task_name: str | None = None) -> None:
        """Start a new episode.

        Args:
            seed: The episode's seed (accepted for the protocol; the policy is deterministic).
            task_name: The episode's task (accepted for the protocol; unused).
        """
        self._stage = "start"
        self._blocks: list[Block] = []
        self._to_read: list[str] = []
        self._reading: str | None = None
        self._files: dict[str, str] = {}
        self._issue = ""

    def __call__(self, observation: dict, phase: int, task_name: str) -> dict:
        self._watch_episode(observation)
        if phase != 2:
            return make_action(ActionType.TRANSITION_TO_PHASE2, belief=None)
        result = observation.get("action_result") or {}
        result = result if isinstance(result, dict) else {}
        if self._stage == "start":
            return self._start(observation, task_name)
        if self._stage == "log":
            return self._after_log(result)
        if self._stage == "diff":
            return self._after_diff(observation, result, task_name)
        if self._reading is not None and isinstance(result.get("content"), str) \
                and not result.get("truncated"):
            self._files[self._reading] = result["content"]
        if self._to_read:
            return self._read_next()
        return self._propose(task_name)

    # ── finding the suspect ───────────────────────────────────────────────────────────────
    def _start(self, observation: dict, task_name: str) -> dict:
        self._issue = str(observation.get("issue") or "")
        if _NO_FAULT.search(self._issue):
            return make_action(ActionType.DECLARE_NO_CHANGE,
                               reason="the handover says no fault: nothing to change")
        sha = self._suspect(observation, task_name)
        if sha:
            self._stage = "diff"
            return make_action(ActionType.GET_FILE_DIFF, commit_sha=sha)
        self._stage = "log"
        return make_action(ActionType.GET_GIT_LOG, n_commits=SEARCH_COMMITS)

    def _after_log(self, result: dict) -> dict:
        for commit in result.get("commits") or []:
            files = commit.get("files") if isinstance(commit, dict) else None
            if isinstance(files, list) and any(isinstance(f, str) and f.endswith(".py")
                                               and not _is_test(f) for f in files):
                self._stage = "diff"
                return make_action(ActionType.GET_FILE_DIFF, commit_sha=str(commit.get("sha")))
        return make_action(ActionType.DECLARE_NO_CHANGE,
                           reason="no recent commit changes code outside the tests")

    def _after_diff(self, observation: dict, result: dict, task_name: str) -> dict:
        diff = result.get("diff") if not result.get("truncated") else None
        blocks = [b for b in change_blocks(diff if isinstance(diff, str) else "")
                  if not _is_test(b.path)]
        tree = [p for p in observation.get("file_tree") or [] if isinstance(p, str)]
        aimed = self._aim_files(tree, task_name)
        if aimed:
            blocks = [b for b in blocks if b.path in aimed]
        self._blocks = blocks
        self._to_read = list(dict.fromkeys(b.path for b in blocks))
        self._stage = "read"
        if not self._to_read:
            return make_action(ActionType.DECLARE_NO_CHANGE,
                               reason="the suspect commit changes no code the aim points at")
        return self._read_next()

    def _read_next(self) -> dict:
        self._reading = self._to_read.pop(0)
        return make_action(ActionType.READ_FILE, path=self._reading)

    # ── the edit ──────────────────────────────────────────────────────────────────────────
    def _propose(self, task_name: str) -> dict:
        files = dict(self._files)
        blocks = [b for b in self._blocks if b.path in files]
        functions = {p: self._aim_functions(p, files[p], task_name) for p in files}
        if any(functions.values()):
            changed = self._function_edit(files, blocks, functions)
        elif self._aim_files(list(files), task_name):
            changed = self._apply(files, line_units(blocks))
        else:
            changed = self._apply(files, [b for b in blocks if is_edit(b)])
        touched = sorted(p for p in changed if changed[p] != files[p])
        if not touched:
            return make_action(ActionType.DECLARE_NO_CHANGE,
                               reason="none of the suspect commit's changes is still in place")
        diff = unified_diff({p: files[p] for p in touched}, {p: changed[p] for p in touched})
        return make_action(ActionType.PROPOSE_PATCH, diff=diff)

    @staticmethod
    def _apply(files: dict[str, str], blocks: list[Block]) -> dict[str, str]:
        """``files`` with every block of ``blocks`` that can be located undone."""
        return {path: _undo_all(text, [b for b in blocks if b.path == path])
                for path, text in files.items()}

    def _function_edit(self, files: dict[str, str], blocks: list[Block],
                       functions: dict[str, set[str]]) -> dict[str, str]:
        """Line-level undo (with restores) inside the aimed functions or at module level, then
        the error-path pattern on each aimed function."""
        units = []
        for unit in line_units(blocks, restore=True):
            text = files[unit.path]
            if not unit.added and not names_bound(text, unit.removed[0]):
                continue
            if self._inside(unit, text, functions.get(unit.path) or set()):
                units.append(unit)
        changed = self._apply(files, units)
        for path, names in functions.items():
            for name in sorted(names):
                span = function_spans(changed[path]).get(name)
                patched = release_on_error(changed[path], *span) if span else None
                changed[path] = patched or changed[path]
        return changed

    @staticmethod
    def _inside(unit: Block, text: str, names: set[str]) -> bool:
        """Whether ``unit`` sits in one of the functions ``names`` (innermost), or outside
        every function (module-level code, which a function aim says nothing against)."""
        start = locate(text, unit)
        if start is None:
            return False
        lines = {start - 1, start} if not unit.added else set(range(start, start + len(unit.added)))
        spans = function_spans(text)
        around = [n for n, (a, b) in spans.items() if any(a <= line <= b for line in lines)]
        innermost = [n for n in around if not any(o != n and o.startswith(n + ".") for o in around)]
        return not innermost or any(n in names for n in innermost)

    # ── the aim (overridden by the ladder's oracle rungs) ───────────────────────────────
    def _suspect(self, observation: dict, task_name: str) -> str | None:
        """The commit to repair: the handed-over suspect (None: search the log)."""
        sha = observation.get("bad_commit_sha")
        return sha if isinstance(sha, str) and sha else None

    def _aim_files(self, tree: list[str], task_name: str) -> set[str]:
        """Tree paths the issue names (empty: no file aim)."""
        return {p for p in tree if p.endswith(".py") and re.search(rf"(?<![\w/.]){re.escape(p)}\b",
                                                                   self._issue)}

    def _aim_functions(self, path: str, text: str, task_name: str) -> set[str]:
        """Qualified names of functions in ``path`` that the issue names (empty: no aim);
        only in a file the issue names."""
        if path not in self._aim_files([path], task_name):
            return set()
        return {name for name in function_spans(text)
                if re.search(rf"(?<![\w.]){re.escape(name)}\b", self._issue)}


def _undo_all(text: str, blocks: list[Block]) -> str:
    """``text`` with the blocks of ``blocks`` undone one after another, each where it can be
    located and leaves ``text`` still parsing as Python (a file that did)."""
    parses = _parses(text)
    for block in blocks:
        start = locate(text, block)
        if start is None:
            continue
        lines = text.split("\n")
        lines[start - 1:start - 1 + len(block.added)] = list(block.removed)
        undone = "\n".join(lines)
        if not parses or _parses(undone):
            text = undone
    return text


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


class AimedLadderPhase2Policy(LadderRungs, AimedRepairPhase2Policy):
    """The aimed repair with the answer known up to ``rung`` (:data:`RUNGS`): the bad commit
    as its suspect, the files the reference fix changes as its file aim, the functions it
    changes as its function aim, or the reference patch itself."""

    name_prefix = "aimed_ladder"

    def _aim_files(self, tree: list[str], task_name: str) -> set[str]:
        if self._knows("file"):
            return set(tree) & set(self._site(task_name).files)
        return super()._aim_files(tree, task_name)

    def _aim_functions(self, path: str, text: str, task_name: str) -> set[str]:
        if self._knows("function"):
            return {f.name for f in self._site(task_name).functions if f.file == path}
        return super()._aim_functions(path, text, task_name)
