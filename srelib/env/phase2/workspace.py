"""The phase-2 workspace: read-only actions over a Repo's in-memory tree.

Nothing here touches the filesystem: paths are looked up in ``Repo.tree`` after a strict check
(plain ASCII names, no ``..``, hidden or absolute paths, no backslashes, NUL or control
characters, bounded length), so neither the hidden tests nor the reference fixes, which are not
in the tree, can be reached. Every result comes in a deterministic order, with size caps and a
``truncated`` flag. :meth:`Workspace.execute` never raises: bad input gets an error result.
Parameters are checked against their declarations by
:func:`~srelib.env.actions.clean_parameters` (types, defaults, bounds) before any handler
runs; the handlers check only what depends on the repository or on a string's content.
``search_code`` regexes run on RE2, whose matching is linear in the text, under a time budget.
``propose_patch`` and ``declare_no_change`` are only acknowledged.
"""

from __future__ import annotations

import fnmatch
import re
import time
from typing import Any

from srelib.env.actions import PHASE2_ACTIONS, ActionType, clean_parameters
from srelib.env.phase2.repos import Repo

MAX_PATH_CHARS = 200
MAX_PATH_DEPTH = 12
MAX_LIST_ENTRIES = 200
MAX_READ_CHARS = 64 * 1024
MAX_QUERY_CHARS = 200
MAX_HIT_CHARS = 200
MAX_DIFF_CHARS = 64 * 1024
REGEX_LINE_CHARS = 240  # regexes only see this much of each line
REGEX_MAX_MEM = 2 << 20  # bytes for one compiled RE2 program: bounds the work per character
SEARCH_BUDGET_S = 0.25  # checked between lines; one line costs at most a few ms
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,99}")
_GLOB = re.compile(r"[A-Za-z0-9_.\-/*?\[\]!]{1,100}")
_SHA = re.compile(r"[0-9a-f]{4,40}")
_TEST_PATH = re.compile(r"(^|/)(tests?/|test_[^/]*\.py$|[^/]*_test\.py$|conftest\.py$)")

Result = tuple[bool, dict, str]


def is_test_path(path: str) -> bool:
    """Does this repository path belong to the tests (which a patch may not change)?"""
    return bool(_TEST_PATH.search(path))


def check_path(raw: object) -> tuple[str | None, str | None]:
    """Normalise an agent-supplied repository path: ``(path, None)`` or ``(None, reason)``.

    The root is ``"."``; ``./`` prefixes and repeated slashes are folded. Anything that could
    point outside the tree, or that is not a plain ASCII name, is refused.
    """
    if raw is None or raw == "":
        return ".", None
    if not isinstance(raw, str):
        return None, f"path must be a string, got {type(raw).__name__}"
    if len(raw) > MAX_PATH_CHARS:
        return None, f"path is longer than {MAX_PATH_CHARS} characters"
    if not raw.isascii() or not raw.isprintable():
        return None, "path must be printable ASCII (no control, bidi or other unicode characters)"
    if "\\" in raw:
        return None, "path must use '/' separators, not backslashes"
    if raw.startswith(("/", "~")):
        return None, "path must be relative to the repository root"
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if len(parts) > MAX_PATH_DEPTH:
        return None, f"path is deeper than {MAX_PATH_DEPTH} levels"
    for part in parts:
        if part == "..":
            return None, "path must not contain '..'"
        if not _NAME.fullmatch(part):
            return None, (f"illegal path component {part!r} "
                          "(letters, digits, '_', '-', '.' only; no hidden names)")
    return "/".join(parts) or ".", None


def compile_regex(pattern: str):
    """``(compiled, None)`` or ``(None, reason)``: ``pattern`` compiled by RE2.

    RE2 matches in time linear in the text, so no pattern backtracks catastrophically; its
    program size is capped by ``REGEX_MAX_MEM``. Python-only features (backreferences,
    lookaround, possessive and atomic groups) have no linear-time form and are refused.
    """
    try:
        import re2
    except ImportError:  # pragma: no cover - google-re2 is a base dependency
        return None, "regex search is unavailable (install google-re2); search without regex=true"
    options = re2.Options()
    options.log_errors = False
    options.max_mem = REGEX_MAX_MEM
    try:
        return re2.compile(pattern, options), None
    except re2.error as exc:
        detail = exc.args[0].decode(errors="replace") if exc.args and isinstance(
            exc.args[0], bytes) else str(exc)
        return None, (f"invalid or unsupported regex ({detail}); RE2 syntax is used: no "
                      "backreferences or lookaround, repetition counts up to 1000")


def _error(message: str) -> Result:
    return False, {"error": message}, message


class Workspace:
    """Phase-2 read-only actions over one repository.

    :meth:`execute` is the entry point; the per-action methods it dispatches to take
    parameters already cleaned by :func:`~srelib.env.actions.clean_parameters`.
    """

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self._dirs = repo.folders
        self._handlers = {
            ActionType.LIST_DIR.value: self.list_dir,
            ActionType.READ_FILE.value: self.read_file,
            ActionType.SEARCH_CODE.value: self.search_code,
            ActionType.GET_GIT_LOG.value: self.get_git_log,
            ActionType.GET_FILE_DIFF.value: self.get_file_diff,
            ActionType.PROPOSE_PATCH.value: self.propose_patch,
            ActionType.DECLARE_NO_CHANGE.value: self.declare_no_change,
        }

    def execute(self, action_type: str, params: Any) -> Result:
        """Run one phase-2 action: ``(ok, result, message)``; never raises.

        ``params`` are cleaned first (a no-op on parameters the environment has cleaned). The
        terminal actions are only acknowledged here; the environment ends the episode and the
        grader judges the patch.
        """
        handler = self._handlers.get(action_type) if isinstance(action_type, str) else None
        if handler is None:
            valid = [a.value for a in PHASE2_ACTIONS]
            return _error(f"{action_type!r} is not a workspace action; valid: {valid}")
        params, problem = clean_parameters(action_type, params)
        if problem is not None:
            return _error(problem)
        try:
            return handler(params)
        except Exception as exc:  # agent input never raises; report instead
            return _error(f"{action_type} failed: {type(exc).__name__}: {exc}")

    def propose_patch(self, params: dict) -> Result:
        patch_bytes = len(params["diff"].encode())
        return True, {"accepted": True, "patch_bytes": patch_bytes}, "Patch received"

    def declare_no_change(self, params: dict) -> Result:
        reason = params["reason"] or ""
        return True, {"accepted": True, "reason": reason}, "No-change declaration received"

    def _file(self, params: dict) -> tuple[str | None, str | None]:
        path, problem = check_path(params["path"])
        if problem:
            return None, problem
        if path not in self.repo.tree:
            kind = "a directory" if path in self._dirs else "not found"
            return None, f"{path}: {kind}; use list_dir to see the files"
        return path, None

    def list_dir(self, params: dict) -> Result:
        path, problem = check_path(params["path"])
        if problem:
            return _error(problem)
        if path not in self._dirs:
            return _error(f"{path}: not a directory" if path in self.repo.tree else f"{path}: not found")
        prefix = "" if path == "." else path + "/"
        entries: dict[str, dict] = {}
        for file, text in self.repo.tree.items():
            if file.startswith(prefix):
                name, sep, _ = file[len(prefix):].partition("/")
                entries[name] = ({"name": name, "type": "dir", "size": None} if sep else
                                 {"name": name, "type": "file", "size": len(text.encode())})
        listed = [entries[n] for n in sorted(entries)]
        result = {"path": path, "entries": listed[:MAX_LIST_ENTRIES], "count": len(listed),
                  "truncated": len(listed) > MAX_LIST_ENTRIES}
        return True, result, f"Listed {len(listed)} entries in {path}"

    def read_file(self, params: dict) -> Result:
        path, problem = self._file(params)
        if path is None:
            return _error(str(problem))
        lines = self.repo.tree[path].splitlines(keepends=True)
        start = params["start_line"] or 1
        end = params["end_line"] or len(lines) or 1
        if lines and start > len(lines):
            return _error(f"start_line {start} is past the end of {path} ({len(lines)} lines)")
        if end < start:
            return _error(f"end_line {end} is before start_line {start}")
        end = min(end, len(lines))
        content = "".join(lines[start - 1:end])
        truncated = len(content) > MAX_READ_CHARS
        result = {"path": path, "content": content[:MAX_READ_CHARS], "start_line": start,
                  "end_line": end, "total_lines": len(lines), "truncated": truncated}
        return True, result, f"Read {path} lines {start}-{end} of {len(lines)}"

    def search_code(self, params: dict) -> Result:
        query, use_regex, max_hits = params["query"], params["regex"], params["max_hits"]
        glob = params["path_glob"] or "*"
        if not query or len(query) > MAX_QUERY_CHARS or "\x00" in query:
            return _error(f"query must be a non-empty string of at most {MAX_QUERY_CHARS} characters")
        if not _GLOB.fullmatch(glob) or ".." in glob or glob.startswith("/"):
            return _error("path_glob must be a short relative glob (letters, digits, '_-./*?[]!'; no '..')")
        if use_regex:
            pattern, problem = compile_regex(query)
            if pattern is None:
                return _error(str(problem))

            def matches(line: str) -> bool:
                return pattern.search(line[:REGEX_LINE_CHARS]) is not None
        else:
            def matches(line: str) -> bool:
                return query in line
        hits, truncated, deadline = [], False, time.perf_counter() + SEARCH_BUDGET_S
        paths = [p for p in self.repo.paths
                 if fnmatch.fnmatchcase(p, glob) or fnmatch.fnmatchcase(p.rsplit("/", 1)[-1], glob)]
        for path in paths:
            for number, line in enumerate(self.repo.tree[path].splitlines(), 1):
                if matches(line):
                    if len(hits) == max_hits:
                        truncated = True
                        break
                    hits.append({"path": path, "line": number, "text": line.strip()[:MAX_HIT_CHARS]})
                if time.perf_counter() > deadline:
                    truncated = True
                    break
            if truncated:
                break
        result = {"query": query, "regex": use_regex, "path_glob": glob, "hits": hits,
                  "count": len(hits), "truncated": truncated}
        return True, result, f"Found {len(hits)} hit(s) for {query!r}"

    def get_git_log(self, params: dict) -> Result:
        path, problem = check_path(params["path"])
        if path is None:
            return _error(str(problem))
        n = params["n_commits"]
        selected = [c for c in self.repo.commits if path == "." or any(
            f == path or f.startswith(path + "/") for f in c.files)]
        commits = [{"sha": c.sha, "author": c.author, "date": c.date, "message": c.message,
                    "files": list(c.files)} for c in selected[:n]]
        result = {"path": path, "commits": commits, "count": len(commits),
                  "truncated": len(selected) > n}
        return True, result, f"Returned {len(commits)} commit(s)"

    def get_file_diff(self, params: dict) -> Result:
        raw = params["commit_sha"]
        if not _SHA.fullmatch(raw.strip().lower()):
            return _error("commit_sha must be 4 to 40 hex digits (a unique prefix of a commit's sha)")
        commit = self.repo.commit(raw.strip().lower())
        if commit is None:
            return _error(f"no single commit matches {raw!r}; use get_git_log to list the shas")
        path = None
        if params["path"] not in (None, "", "."):
            path, problem = check_path(params["path"])
            if problem:
                return _error(problem)
            if path not in commit.files:
                return _error(f"commit {commit.sha} does not touch {path}; it touches {list(commit.files)}")
        diff = commit.diff if path is None else _file_section(commit.diff, path)
        result = {"commit_sha": commit.sha, "path": path, "files": list(commit.files),
                  "diff": diff[:MAX_DIFF_CHARS], "truncated": len(diff) > MAX_DIFF_CHARS}
        return True, result, f"Diff of {commit.sha} ({len(diff)} chars)"


def _file_section(diff: str, path: str) -> str:
    """The part of a git-style diff that belongs to ``path``."""
    header = f"diff --git a/{path} b/{path}\n"
    start = diff.find(header)
    if start < 0:
        return ""
    end = diff.find("diff --git ", start + len(header))
    return diff[start:] if end < 0 else diff[start:end]
