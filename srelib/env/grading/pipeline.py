"""Patch grading with SWE-bench's resolution rules, sized for a fast inner loop.

:func:`grade_patch` normalises an agent's diff, applies it to a clean temporary copy of the
repository, runs the hidden tests' probes in one sandboxed subprocess, judges their
observations in this process and reports the outcome:

1. **Normalise** (:func:`normalise_diff`): refuse a diff over ``DIFF_CHARS`` characters (what
   it adds must fit the sandbox); take the first fenced code block if the text has
   one; CRLF to LF; a final newline; ``a/`` ``b/`` prefixes optional; a blank line inside a
   hunk is a context line; hunk line counts are recounted by ``git apply --recount``. Every
   file path must pass :func:`srelib.env.phase2.workspace.check_path`. Sections that touch test files
   (a ``tests``/``test`` folder, ``test_*.py``, ``*_test.py``, ``conftest.py``) are dropped and
   reported in ``tests_touched``.
2. **Apply** with ``git apply``; if that fails, with ``patch --fuzz=2`` (dry run first, so a
   failed fallback leaves nothing half-applied). ``patch_applied`` and ``apply_error`` say how
   it went; an empty or non-applying patch, one that adds a top-level module shadowing the
   standard library (the repository root comes first on ``sys.path``) or one that leaves more
   than ``TREE_FILES`` files runs no tests and resolves ``"no"``.
3. **Observe** (:mod:`srelib.env.grading.probe_run`): run the probes (``srelib/env/grading/sandbox/probe_runner.py``)
   with ``python -I -S -B`` in a fresh sandbox (:func:`srelib.env.grading.sandbox.isolate.prepare`, started
   ahead by :mod:`srelib.env.grading.sandbox.spare`): at best bubblewrap namespaces (no network, no view
   of the machine, a disk quota, the whole tree killed at the end), always a minimal
   environment (no API keys, tokens, ``OPENAI_*`` or ``HF_*``), resource limits, a wall
   timeout and, when started as root, uid 65534. ``isolation`` in the result names the level
   and ``verified`` says whether it holds: grading runs only at a level of
   :data:`~srelib.env.grading.sandbox.isolate.HOLDING_LEVELS` and otherwise raises
   :class:`~srelib.env.grading.sandbox.isolate.SandboxRefused`, unless ``SRELIB_SANDBOX=unsafe`` opts in to a
   weaker one (``verified`` False).
4. **Judge and report** (:mod:`srelib.env.grading.verdicts.rules`): each test's check runs here on its
   probe's observation; ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` map test id to passed, and
   ``resolved`` follows SWE-bench: ``"full"`` when every FAIL_TO_PASS and PASS_TO_PASS test
   passes, ``"partial"`` when some but not all FAIL_TO_PASS pass and every PASS_TO_PASS passes,
   else ``"no"``. ``fail_to_pass_rate`` and ``pass_to_pass_rate`` are SWE-bench's partial
   measures beside it: the fraction of FAIL_TO_PASS tests that now pass and of PASS_TO_PASS
   tests still passing (None where a task has no such test). A patch that leaves the bug site
   unchanged (:mod:`srelib.env.grading.site_guard`; ``site_unchanged`` in the result) passes no
   FAIL_TO_PASS test, whatever its probes reported. Results are memoised per (repository, test ids, normalised diff, timeout,
   level), the least recently used dropped beyond ``MEMO_BYTES``.
5. **Grader failures are not verdicts** (:mod:`srelib.env.grading.errors`): a full apply
   folder, a sandbox that could not start or ended before the tests started, a missing tool.
   Such a grading is tried once more, never memoised, then raises ``GradingError``. Patches
   are applied in :func:`apply_folder`, a tmpfs of srelib's own.

Hidden-test semantics (what a repository author relies on): each ``hidden_tests/probes/<file>.py``
is run as a module (its source reaches the sandbox on stdin, never as a file) with the patched
repository root as cwd and first on ``sys.path``; every top-level ``probe_<name>`` function is
called in name order, and what it returns, raises and prints is its
observation (a probe that takes one argument gets a ``random.Random`` seeded afresh at every
grading and draws its inputs from it). ``hidden_tests/checks/<file>.py`` holds
``test_<name>(seen)`` (or ``test_<name>(seen, rng)``, redrawing the same inputs), which judges
that observation in the grader and never enters the sandbox. A test id is
``"<file>::test_<name>"``; an id with no observation (import error, crash, timeout, reported
twice) fails. Probes use the standard library only and must not start
processes, open sockets, use ctypes or write outside the repository copy (the runner's audit
hook refuses these); each has :data:`~srelib.env.grading.verdicts.observe.PER_TEST_S` seconds.

Observations travel on a private copy of the runner's stdout, each line prefixed with a nonce
the runner read from stdin before any patched code ran; output printed by code under test goes
to /dev/null. The patched code runs in a child of the runner for which that channel leads to
/dev/null; the runner relays one record per probe the file defines (sandbox_runner.py). They
are decoded as plain, bounded JSON. Patched code that takes its child over (rebinding its
functions, walking its frames to the emitter or the nonce) can forge its own probes'
observations, but not verdicts: the expected values are only in the checks, in this process,
and the drawn inputs make a copied observation wrong.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Mapping

from srelib.env.grading.errors import GradingError, from_os_error
from srelib.env.support.json_copy import json_copy
from srelib.env.support.memo import ByteLRU
from srelib.env.tasks.lookup import load_repo
from srelib.env.phase2.repos import Repo
from srelib.env.grading.probe_run import preload_of, run_probes
from srelib.env.grading.sandbox.isolate import SandboxRefused, grading_level
from srelib.env.grading.site_guard import site_units, site_unchanged
from srelib.env.types import PatchGrade
from srelib.env.grading.verdicts.rules import Observation, draw_seed, rates, resolution, verdicts
from srelib.env.phase2.workspace import check_path, is_test_path

DEFAULT_TIMEOUT_S = 10.0
_FENCE = re.compile(r"^```[^\n]*\n(.*?)(^```|\Z)", re.S | re.M)
MEMO_BYTES = 8 << 20  # the grade memo's bound: diffs and results, in bytes of text
_MEMO = ByteLRU(MEMO_BYTES, size=lambda key, result: len(repr(key)) + len(json.dumps(result)))


def _header_path(line: str, prefix: str) -> str:
    path = line[4:].split("\t", 1)[0].strip()
    if path == "/dev/null":
        return path
    return path[2:] if path.startswith(prefix) else path


def _sections(text: str) -> list[dict]:
    """File sections of a unified diff: {old, new, hunks: [lines]}; junk lines are skipped."""
    lines, sections, i = text.split("\n"), [], 0
    current = None
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            current = {"old": _header_path(line, "a/"), "new": _header_path(lines[i + 1], "b/"),
                       "hunks": []}
            sections.append(current)
            i += 2
            continue
        if current is not None and line.startswith("@@"):
            current["hunks"].append(line)
        elif current is not None and current["hunks"] and (line[:1] in (" ", "+", "-", "\\") or line == ""):
            current["hunks"].append(line or " ")
        elif not line.startswith(("diff --git", "index ", "new file mode", "deleted file mode")):
            current = None if line.strip() else current
        i += 1
    for section in sections:  # trailing blank context lines are artefacts of the text's end
        while section["hunks"] and section["hunks"][-1] == " ":
            section["hunks"].pop()
    return sections


#: The longest diff graded: what it adds then fits the sandbox's per-file size limit and disk
#: quota (at most 4 bytes a character), and applying it stays small in :func:`apply_folder`.
DIFF_CHARS = 1 << 21
#: The most files a patched repository may have: each takes a page or more of the quota.
TREE_FILES = 2000
#: Diffs up to this many characters keep their normalised form (a policy proposes the same
#: diff again and again; its memo key is the normalised text).
_NORMALISED_TEXT = 20_000


def normalise_diff(text: object) -> tuple[str, list[str], str | None]:
    """``(clean diff, test paths dropped, error or None)`` for any agent-supplied text."""
    if not isinstance(text, str):
        return "", [], f"diff must be a string, got {type(text).__name__}"
    text = str.__str__(text)
    if len(text) > DIFF_CHARS:
        return "", [], f"diff is {len(text)} characters long; at most {DIFF_CHARS} are graded"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return "", [], f"diff is not valid text: {exc.reason} at character {exc.start}"
    clean, touched, error = (_normalised(text) if len(text) <= _NORMALISED_TEXT
                             else _normalise(text))
    return clean, list(touched), error


@functools.lru_cache(maxsize=256)
def _normalised(text: str) -> tuple[str, tuple[str, ...], str | None]:
    return _normalise(text)


def _normalise(text: str) -> tuple[str, tuple[str, ...], str | None]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    fenced = _FENCE.search(text)
    if fenced:
        text = str(fenced.group(1))
    parts, touched = [], []
    for section in _sections(text):
        old, new = section["old"], section["new"]
        if old != new and "/dev/null" not in (old, new):
            return "", tuple(touched), f"renames are not supported ({old} -> {new})"
        path = new if old == "/dev/null" else old
        checked, problem = check_path(path)
        if checked is None or checked == ".":
            return "", tuple(touched), f"bad path {path!r} in diff: {problem or 'no file named'}"
        if is_test_path(checked):
            touched.append(checked)
            continue
        if not any(h.startswith("@@") for h in section["hunks"]):
            return "", tuple(touched), f"the section for {checked} has no hunks"
        head = [f"diff --git a/{checked} b/{checked}"]
        head += ["new file mode 100644"] if old == "/dev/null" else []
        head += ["deleted file mode 100644"] if new == "/dev/null" else []
        head += ["--- /dev/null" if old == "/dev/null" else f"--- a/{checked}",
                 "+++ /dev/null" if new == "/dev/null" else f"+++ b/{checked}"]
        parts.append("\n".join(head + section["hunks"]) + "\n")
    clean = "".join(parts)
    if not clean:
        return "", tuple(sorted(set(touched))), "empty patch: no file changes outside the tests"
    return clean, tuple(sorted(set(touched))), None


def _write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


APPLY_TIMEOUT_S = 30.0  # for each of git apply and patch


def _apply(repo_dir: Path, diff: str) -> str | None:
    """Apply ``diff`` inside ``repo_dir``; None on success, else why it failed."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CEILING_DIRECTORIES": str(repo_dir.parent),
           "HOME": str(repo_dir.parent), "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}

    def run(command: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run(command, cwd=repo_dir, input=diff.encode(), capture_output=True,
                              env=env, timeout=APPLY_TIMEOUT_S)

    try:
        git = run(["git", "apply", "--recount", "--whitespace=nowarn", "-"])
        if git.returncode == 0:
            return None
        base = ["patch", "-p1", "--batch", "--forward", "--fuzz=2", "--no-backup-if-mismatch",
                "--reject-file=-", "--quiet"]
        if run(base + ["--dry-run"]).returncode == 0 and run(base).returncode == 0:
            return None
    except subprocess.TimeoutExpired as exc:
        return f"does not apply: {exc.cmd[0]} took over {APPLY_TIMEOUT_S:g} s"
    said = (git.stderr or git.stdout).decode(errors="replace").strip()
    if any(text in said for text in _NO_ROOM):  # the folder is full, not the patch wrong
        raise GradingError("no_space", f"applying the patch: {said.splitlines()[0][:300]}")
    reason = said.splitlines()
    return "does not apply: " + (reason[0] if reason else "git apply failed")[:300]


_NO_ROOM = ("No space left on device", "Disk quota exceeded")


def _shadowing(repo_dir: Path, tree: Mapping[str, str]) -> str | None:
    """Why the patch may not stand: it adds a top-level module that hides a standard one."""
    before = {p.split("/", 1)[0] for p in tree}
    for name in sorted(set(os.listdir(repo_dir)) - before):
        module = name[:-3] if name.endswith(".py") else name
        if module in sys.stdlib_module_names:
            return f"the patch adds {name}, which would shadow the standard library's {module}"
    return None


def observe(repo_name: str, task: str, files: dict[str, str], timeout_s: float = DEFAULT_TIMEOUT_S,
            seed: int = 0) -> tuple[dict[str, Observation], bool]:
    """Run ``task``'s probes against a full file map, drawing inputs from ``seed``:
    ``({test id: Observation}, timed_out)``."""
    repo = load_repo(repo_name)
    wanted = repo.fail_to_pass(task) + repo.pass_to_pass(task)
    return run_probes(files, _task_tests(repo, wanted), timeout_s, grading_level()[0], seed,
                          preload_of(repo_name))


def run_hidden_tests(repo_name: str, task: str, files: dict[str, str],
                     timeout_s: float = DEFAULT_TIMEOUT_S) -> tuple[dict[str, bool], bool]:
    """Run ``task``'s hidden tests against a full file map (e.g. the tree, or the fixed tree):
    ``({test id: passed}, timed_out)``."""
    repo = load_repo(repo_name)
    return run_tests(repo_name, repo.fail_to_pass(task) + repo.pass_to_pass(task), files, timeout_s)


def run_tests(repo_name: str, test_ids: list[str], files: dict[str, str],
              timeout_s: float = DEFAULT_TIMEOUT_S) -> tuple[dict[str, bool], bool]:
    """Run the hidden tests ``test_ids`` of ``repo_name`` against a full file map:
    ``({test id: passed}, timed_out)``."""
    repo = load_repo(repo_name)
    seed = draw_seed()
    seen, timed_out = run_probes(files, _task_tests(repo, test_ids), timeout_s,
                                     grading_level()[0], seed, preload_of(repo_name))
    return verdicts(repo, test_ids, seen, seed), timed_out


def _task_tests(repo: Repo, wanted: list[str]) -> dict[str, str]:
    names = {t.split("::", 1)[0] for t in wanted}
    return {n: repo.hidden_tests[n] for n in sorted(names)}


def grade_patch(repo_name: str, task: str, diff: object,
                timeout_s: float = DEFAULT_TIMEOUT_S) -> PatchGrade:
    """Grade a diff against ``task``'s hidden tests (see the module docstring), guarding the
    task's bug site (:mod:`srelib.env.grading.site_guard`); memoised."""
    return grade_diff(repo_name, *_test_ids(load_repo(repo_name), task), diff, timeout_s,
                      site=site_units(task))


def grade_memoised(repo_name: str, task: str, diff: object,
                   timeout_s: float = DEFAULT_TIMEOUT_S) -> bool:
    """Is the grade of ``diff`` already known? Asking builds nothing and runs no test.

    Args:
        repo_name: the task's repository, as for :func:`grade_patch`.
        task: the task's name, as for :func:`grade_patch`.
        diff: the diff, as for :func:`grade_patch` (any value).
        timeout_s: the time limit, as for :func:`grade_patch`.

    Returns:
        True when :func:`grade_patch` of these arguments is memoised, so that it returns
        without applying the diff or running a test; False before any grading in this process
        (which probes the sandbox first), where grading would refuse to run, and while the
        repository or the task's bug site is not in memory (loading them takes up to tens of
        milliseconds).
    """
    repo, site = load_repo.peek(repo_name), site_units.peek(task)
    if not len(_MEMO) or repo is None or site is None:
        return False
    try:
        level = grading_level()
        f2p_ids, p2p_ids = _test_ids(repo, task)
    except (SandboxRefused, ValueError):
        return False
    return _memo_key(repo_name, f2p_ids, p2p_ids, normalise_diff(diff), timeout_s, level,
                     site) in _MEMO


def _test_ids(repo: Repo, task: str) -> tuple[list[str], list[str]]:
    """``task``'s FAIL_TO_PASS and PASS_TO_PASS test ids in ``repo``."""
    return repo.fail_to_pass(task), repo.pass_to_pass(task)


def _memo_key(repo_name: str, f2p_ids: list[str], p2p_ids: list[str],
              normalised: tuple[str, list[str], str | None], timeout_s: float,
              level: tuple[str, bool], site: tuple[tuple[str, str], ...]) -> tuple:
    """What a grade is memoised under: everything it depends on, the diff normalised
    (:func:`normalise_diff`), the grading level as :func:`grading_level` gives it."""
    clean, touched, error = normalised
    return (repo_name, tuple(f2p_ids), tuple(p2p_ids), clean, tuple(touched), error, timeout_s,
            *level, site)


APPLY_QUOTA = 256 << 20  # the private tmpfs patches are applied in (each takes a few MB)


@functools.lru_cache(maxsize=1)
def apply_folder() -> str:
    """Where patches are applied: a folder of this process's own (mode 0700), a tmpfs of
    ``APPLY_QUOTA`` mounted on it where this process may mount one (root), so that no one
    else fills it; else the folder itself, in the system's temporary folder. Unmounted and
    removed when the process that made it exits."""
    folder = tempfile.mkdtemp(prefix="srelib-apply-")
    owner = os.getpid()
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={APPLY_QUOTA},mode=0700,nosuid,nodev", "none", folder],
        capture_output=True, timeout=30).returncode == 0

    def remove() -> None:
        if os.getpid() != owner:  # a forked child's exit: the folder is its parent's
            return
        if mounted:
            subprocess.run(["umount", "-l", folder], capture_output=True, timeout=30)
        shutil.rmtree(folder, ignore_errors=True)

    atexit.register(remove)
    return folder


def _applied_files(root: Path) -> dict[str, bytes] | str:
    """Every regular file under ``root`` (symlinks are not followed), ``{relative path:
    bytes}``, read in one walk; or why the tree cannot be graded: more than ``TREE_FILES``
    files, which the sandbox's quota (a page or more each) would not hold."""
    paths = [Path(folder, name) for folder, _, names in os.walk(root) for name in names]
    if len(paths) > TREE_FILES:
        return f"the patched repository has {len(paths)} files; at most {TREE_FILES} are graded"
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in paths
            if path.is_file() and not path.is_symlink()}


def _patched_files(repo: Repo, diff: str) -> dict[str, bytes] | str:
    """The files of ``repo`` with the normalised ``diff`` applied, in a temporary copy; or why
    it cannot be graded (it does not apply, shadows a standard module, or is too large)."""
    try:
        with tempfile.TemporaryDirectory(prefix="srelib-grade-", dir=apply_folder()) as tmp:
            tree = Path(tmp, "repo")
            _write_tree(tree, dict(repo.tree))
            return _apply(tree, diff) or _shadowing(tree, repo.tree) or _applied_files(tree)
    except OSError as exc:  # the folder, a tool: the grader's, never the patch's
        raise from_os_error(exc, "applying the patch") from exc


def grade_diff(repo_name: str, f2p_ids: list[str], p2p_ids: list[str], diff: object,
               timeout_s: float = DEFAULT_TIMEOUT_S, site: tuple[tuple[str, str], ...] = ()) -> PatchGrade:
    """Grade a diff against explicit FAIL_TO_PASS / PASS_TO_PASS test ids of ``repo_name``. When
    the patched tree leaves every unit of ``site`` (``(file, function or "<module>")``, see
    :mod:`srelib.env.grading.site_guard`) as it was, no FAIL_TO_PASS test counts as passing.

    Raises:
        GradingError: the grader could not run, twice (:mod:`srelib.env.grading.errors`);
            nothing is memoised then.
    """
    repo = load_repo(repo_name)
    level, verified = grading_level()
    normalised = normalise_diff(diff)
    key = _memo_key(repo_name, f2p_ids, p2p_ids, normalised, timeout_s, (level, verified), site)
    memoised = _MEMO.get(key)
    if memoised is not None:
        return json_copy(memoised)
    for attempt in range(1, GRADING_ATTEMPTS + 1):
        try:
            result = _graded(repo_name, repo, f2p_ids, p2p_ids, normalised, timeout_s, site, level, verified)
        except GradingError as exc:  # the grader's failure: never memoised, tried again
            if attempt == GRADING_ATTEMPTS:
                raise GradingError(exc.kind, exc.message, attempts=attempt) from exc
            continue
        _MEMO.put(key, result)
        return json_copy(result)
    raise AssertionError("unreachable: the last attempt returns or raises")


GRADING_ATTEMPTS = 2  # a grading the grader could not run is tried once more, then reported


def _graded(repo_name: str, repo: Repo, f2p_ids: list[str], p2p_ids: list[str],
            normalised: tuple[str, list[str], str | None], timeout_s: float,
            site: tuple[tuple[str, str], ...], level: str, verified: bool) -> PatchGrade:
    """One grading (see :func:`grade_diff`), not memoised; raises :class:`GradingError` when
    the grader could not run."""
    clean, touched, error = normalised
    result: PatchGrade = {"patch_applied": False, "apply_error": error, "tests_touched": touched,
              "FAIL_TO_PASS": dict.fromkeys(f2p_ids, False),
              "PASS_TO_PASS": dict.fromkeys(p2p_ids, False), "resolved": "no",
              "site_unchanged": False, "timed_out": False, "isolation": level, "verified": verified,
              "fail_to_pass_rate": None, "pass_to_pass_rate": None}
    files = _patched_files(repo, clean) if error is None else error
    if isinstance(files, str):
        result["apply_error"] = files
    else:
        result["patch_applied"] = True
        result["site_unchanged"] = site_unchanged(site, dict(repo.tree), {
            path: files.get(path, b"").decode("utf-8", "replace") for path, _ in site})
        seed = draw_seed()
        seen, result["timed_out"] = run_probes(files, _task_tests(repo, f2p_ids + p2p_ids),
                                               timeout_s, level, seed, preload_of(repo_name))
        result["FAIL_TO_PASS"] = verdicts(repo, f2p_ids, seen, seed)
        if result["site_unchanged"]:
            result["FAIL_TO_PASS"] = dict.fromkeys(f2p_ids, False)
        result["PASS_TO_PASS"] = verdicts(repo, p2p_ids, seen, seed)
        result["resolved"] = resolution(result["FAIL_TO_PASS"], result["PASS_TO_PASS"])
    measured = rates(result["FAIL_TO_PASS"], result["PASS_TO_PASS"])
    result["fail_to_pass_rate"] = measured["fail_to_pass_rate"]
    result["pass_to_pass_rate"] = measured["pass_to_pass_rate"]
    return result
