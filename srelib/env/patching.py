"""Patch grading in the manner of the SWE-bench harness, sized for a fast inner loop.

:func:`grade_patch` normalises an agent's diff, applies it to a clean temporary copy of the
repository, runs the hidden tests in one sandboxed subprocess and reports the outcome:

1. **Normalise** (:func:`normalise_diff`): take the first fenced code block if the text has
   one; CRLF to LF; a final newline; ``a/`` ``b/`` prefixes optional; a blank line inside a
   hunk is a context line; hunk line counts are recounted by ``git apply --recount``. Every
   file path must pass :func:`srelib.env.workspace.check_path`. Sections that touch test files
   (a ``tests``/``test`` folder, ``test_*.py``, ``*_test.py``, ``conftest.py``) are dropped and
   reported in ``tests_touched``.
2. **Apply** with ``git apply``; if that fails, with ``patch --fuzz=2`` (dry run first, so a
   failed fallback leaves nothing half-applied). ``patch_applied`` and ``apply_error`` say how
   it went; an empty or non-applying patch, or one that adds a top-level module shadowing the
   standard library (the repository root comes first on ``sys.path``), runs no tests and
   resolves ``"no"``.
3. **Run the hidden tests** (``srelib/env/sandbox_runner.py``) with ``python -I -S -B`` in a new
   session (process group), cwd = the patched copy, a minimal environment (no API keys,
   tokens, ``OPENAI_*`` or ``HF_*``), RLIMIT_CPU/AS/FSIZE/NPROC/CORE, a wall timeout after
   which the whole group is killed, and, when started as root, uid 65534.
4. **Report** ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` as ``{test id: passed}`` and ``resolved``:
   ``"full"`` when every test passes, ``"partial"`` when some FAIL_TO_PASS test passes, else
   ``"no"``. Results are memoised per (repository, task, normalised diff, timeout).

Hidden-test semantics (what a repository author relies on): each ``hidden_tests/<file>.py``
is imported as a module with the patched repository root as cwd and first on ``sys.path``;
every top-level function named ``test_*`` defined in it is called with no arguments, in name
order; a test passes when it returns without raising. A test id is ``"<file>::<function>"``;
an id with no result (import error, crash, timeout) counts as failed. Tests use the standard
library only and must not start processes, open sockets, use ctypes or write outside the
repository copy (the runner's audit hook refuses these); each has ``PER_TEST_S`` seconds.

Result lines travel on a private copy of the runner's stdout, each prefixed with a nonce the
runner read from stdin before any test code ran; output printed by code under test goes to
/dev/null. Code that deliberately inspects the runner's own frames could still find the
nonce: the protocol stops fake results printed by a patch, not a targeted attack, which the
uid, limits and audit hook still confine.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import secrets
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from srelib.env.repos import load_repo
from srelib.env.workspace import check_path

DEFAULT_TIMEOUT_S = 10.0
PER_TEST_S = 5.0
SANDBOX_UID = 65534
RESULT_BYTES = 1 << 20
LIMITS = {
    "RLIMIT_AS": 1 << 30,
    "RLIMIT_FSIZE": 16 << 20,
    "RLIMIT_NPROC": 256,
    "RLIMIT_CORE": 0,
    "RLIMIT_NOFILE": 256,
}
_RUNNER = Path(__file__).with_name("sandbox_runner.py")
_TEST_PATH = re.compile(r"(^|/)(tests?/|test_[^/]*\.py$|[^/]*_test\.py$|conftest\.py$)")
_FENCE = re.compile(r"^```[^\n]*\n(.*?)(^```|\Z)", re.S | re.M)
_CACHE: dict[tuple, dict] = {}


def is_test_path(path: str) -> bool:
    """Does this repository path belong to the tests (which a patch may not change)?"""
    return bool(_TEST_PATH.search(path))


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


def normalise_diff(text: object) -> tuple[str, list[str], str | None]:
    """``(clean diff, test paths dropped, error or None)`` for any agent-supplied text."""
    if not isinstance(text, str):
        return "", [], f"diff must be a string, got {type(text).__name__}"
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1)
    parts, touched = [], []
    for section in _sections(text):
        old, new = section["old"], section["new"]
        if old != new and "/dev/null" not in (old, new):
            return "", touched, f"renames are not supported ({old} -> {new})"
        path = new if old == "/dev/null" else old
        checked, problem = check_path(path)
        if problem or checked == ".":
            return "", touched, f"bad path {path!r} in diff: {problem or 'no file named'}"
        if is_test_path(checked):
            touched.append(checked)
            continue
        if not any(h.startswith("@@") for h in section["hunks"]):
            return "", touched, f"the section for {checked} has no hunks"
        head = [f"diff --git a/{checked} b/{checked}"]
        head += ["new file mode 100644"] if old == "/dev/null" else []
        head += ["deleted file mode 100644"] if new == "/dev/null" else []
        head += ["--- /dev/null" if old == "/dev/null" else f"--- a/{checked}",
                 "+++ /dev/null" if new == "/dev/null" else f"+++ b/{checked}"]
        parts.append("\n".join(head + section["hunks"]) + "\n")
    clean = "".join(parts)
    if not clean:
        return "", sorted(set(touched)), "empty patch: no file changes outside the tests"
    return clean, sorted(set(touched)), None


def _write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _apply(repo_dir: Path, diff: str) -> str | None:
    """Apply ``diff`` inside ``repo_dir``; None on success, else why it failed."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CEILING_DIRECTORIES": str(repo_dir.parent),
           "HOME": str(repo_dir.parent), "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}
    git = subprocess.run(["git", "apply", "--recount", "--whitespace=nowarn", "-"], cwd=repo_dir,
                         input=diff.encode(), capture_output=True, env=env, timeout=30)
    if git.returncode == 0:
        return None
    base = ["patch", "-p1", "--batch", "--forward", "--fuzz=2", "--no-backup-if-mismatch",
            "--reject-file=-", "--quiet"]
    dry = subprocess.run(base + ["--dry-run"], cwd=repo_dir, input=diff.encode(),
                         capture_output=True, env=env, timeout=30)
    if dry.returncode == 0 and subprocess.run(base, cwd=repo_dir, input=diff.encode(),
                                              capture_output=True, env=env, timeout=30).returncode == 0:
        return None
    reason = (git.stderr or git.stdout).decode(errors="replace").strip().splitlines()
    return "does not apply: " + (reason[0] if reason else "git apply failed")[:300]


def _shadowing(repo_dir: Path, tree) -> str | None:
    """Why the patch may not stand: it adds a top-level module that hides a standard one."""
    before = {p.split("/", 1)[0] for p in tree}
    for name in sorted(set(os.listdir(repo_dir)) - before):
        module = name[:-3] if name.endswith(".py") else name
        if module in sys.stdlib_module_names:
            return f"the patch adds {name}, which would shadow the standard library's {module}"
    return None


def _sandbox_env(home: str) -> dict[str, str]:
    """A minimal environment built from scratch: nothing of the caller's leaks in."""
    return {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8", "TZ": "UTC"}


def _hand_over(path: Path, uid: int | None) -> None:
    """Let the unprivileged sandbox uid (if any) write inside ``path``."""
    if uid is None:
        return
    for dirpath, _, filenames in os.walk(path):
        os.chown(dirpath, uid, uid)
        for name in filenames:
            os.chown(os.path.join(dirpath, name), uid, uid)


def _world_readable(directory: str) -> bool:
    """Can any uid list ``directory`` and traverse every folder above it?"""
    path = Path(directory)
    for part in [path, *path.parents]:
        mode = part.stat().st_mode
        if not mode & stat.S_IXOTH or (part == path and not mode & stat.S_IROTH):
            return False
    return True


@functools.lru_cache(maxsize=1)
def sandbox_python() -> tuple[str, int | None]:
    """``(interpreter, uid)`` for the runner: uid 65534 when we are root and some interpreter's
    standard library is readable by that uid (a pyenv under /root is not), else None (no drop)."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    if os.geteuid() != 0:
        return base, None
    for candidate in dict.fromkeys([base, sys.executable, shutil.which("python3") or base]):
        probe = subprocess.run([candidate, "-I", "-S", "-c", "import os, sys;"
                                "print(sys.version_info >= (3, 10), os.path.dirname(os.__file__))"],
                               capture_output=True, text=True, timeout=30)
        ok, _, stdlib = probe.stdout.strip().partition(" ")
        if probe.returncode == 0 and ok == "True" and _world_readable(stdlib):
            return candidate, SANDBOX_UID
    return base, None


def _run_sandboxed(root: Path, repo_dir: Path, tests: dict[str, str], timeout_s: float):
    """Run the hidden tests against ``repo_dir``: ``({test id: passed}, timed_out)``."""
    tests_dir = root / "hidden_tests"
    _write_tree(tests_dir, tests)
    python, uid = sandbox_python()
    _hand_over(repo_dir, uid)
    os.chmod(root, 0o711)
    nonce = secrets.token_hex(16)
    config = {"repo": str(repo_dir), "tests": str(tests_dir), "files": sorted(tests),
              "limits": {**LIMITS, "RLIMIT_CPU": int(timeout_s) + 1}, "uid": uid,
              "per_test_s": PER_TEST_S}
    with tempfile.TemporaryFile(dir=root) as channel:
        proc = subprocess.Popen(
            [python, "-I", "-S", "-B", "-c", _RUNNER.read_text(encoding="utf-8")],
            stdin=subprocess.PIPE, stdout=channel, stderr=subprocess.DEVNULL, cwd=repo_dir,
            env=_sandbox_env(str(repo_dir)), start_new_session=True, close_fds=True)
        try:
            try:
                proc.stdin.write((nonce + "\n" + json.dumps(config) + "\n").encode())
                proc.stdin.close()
            except BrokenPipeError:
                pass
            timed_out = not _wait_for_exit(proc, timeout_s)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        channel.seek(0)
        raw = channel.read(RESULT_BYTES).decode(errors="replace")
    passed: dict[str, bool] = {}
    for line in raw.splitlines():
        tag, _, payload = line.partition(" ")
        if tag != nonce:
            continue
        try:
            record = json.loads(payload)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("id"), str):
            passed.setdefault(record["id"], record.get("ok") is True)
    return passed, timed_out


def _wait_for_exit(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Wait until ``proc`` exits or ``timeout_s`` passes; True if it exited.

    Popen.wait(timeout) polls with sleeps of up to 50 ms, a large part of a grading's wall time;
    a pidfd wakes us the moment the process exits (Linux 5.3+; the polled wait elsewhere).
    """
    if hasattr(os, "pidfd_open"):
        try:
            fd = os.pidfd_open(proc.pid)
        except OSError:
            fd = None
        if fd is not None:
            try:
                select.select([fd], [], [], timeout_s)
            finally:
                os.close(fd)
            return proc.poll() is not None
    try:
        proc.wait(timeout=timeout_s)
        return True
    except subprocess.TimeoutExpired:
        return False


def run_hidden_tests(repo_name: str, task: str, files: dict[str, str],
                     timeout_s: float = DEFAULT_TIMEOUT_S) -> tuple[dict[str, bool], bool]:
    """Run ``task``'s hidden tests against a full file map (e.g. the tree, or the fixed tree)."""
    repo = load_repo(repo_name)
    wanted = repo.fail_to_pass(task) + repo.pass_to_pass(task)
    with tempfile.TemporaryDirectory(prefix="srelib-grade-") as tmp:
        root = Path(tmp)
        _write_tree(root / "repo", files)
        passed, timed_out = _run_sandboxed(root, root / "repo", _task_tests(repo, wanted), timeout_s)
    return {t: passed.get(t, False) for t in wanted}, timed_out


def _task_tests(repo, wanted: list[str]) -> dict[str, str]:
    names = {t.split("::", 1)[0] for t in wanted}
    return {n: repo.hidden_tests[n] for n in sorted(names)}


def _verdict(f2p: dict[str, bool], p2p: dict[str, bool]) -> str:
    if all(f2p.values()) and all(p2p.values()):
        return "full"
    return "partial" if any(f2p.values()) else "no"


def grade_patch(repo_name: str, task: str, diff: object,
                timeout_s: float = DEFAULT_TIMEOUT_S) -> dict:
    """Grade a diff against ``task``'s hidden tests (see the module docstring); memoised."""
    repo = load_repo(repo_name)
    f2p_ids, p2p_ids = repo.fail_to_pass(task), repo.pass_to_pass(task)
    clean, touched, error = normalise_diff(diff)
    key = (repo_name, task, clean, tuple(touched), error, timeout_s)
    if key not in _CACHE:
        result = {"patch_applied": False, "apply_error": error, "tests_touched": touched,
                  "FAIL_TO_PASS": dict.fromkeys(f2p_ids, False),
                  "PASS_TO_PASS": dict.fromkeys(p2p_ids, False), "resolved": "no",
                  "timed_out": False}
        if error is None:
            with tempfile.TemporaryDirectory(prefix="srelib-grade-") as tmp:
                root = Path(tmp)
                _write_tree(root / "repo", dict(repo.tree))
                result["apply_error"] = _apply(root / "repo", clean) or _shadowing(root / "repo", repo.tree)
                if result["apply_error"] is None:
                    result["patch_applied"] = True
                    passed, result["timed_out"] = _run_sandboxed(
                        root, root / "repo", _task_tests(repo, f2p_ids + p2p_ids), timeout_s)
                    result["FAIL_TO_PASS"] = {t: passed.get(t, False) for t in f2p_ids}
                    result["PASS_TO_PASS"] = {t: passed.get(t, False) for t in p2p_ids}
                    result["resolved"] = _verdict(result["FAIL_TO_PASS"], result["PASS_TO_PASS"])
        _CACHE[key] = result
    return copy.deepcopy(_CACHE[key])
