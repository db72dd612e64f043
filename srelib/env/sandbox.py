"""Run a command isolated from the machine: the sandbox that patch grading runs code in.

:func:`run_isolated` runs an argv with a scratch directory, a wall timeout and resource limits,
at the strongest level this machine allows (:func:`isolation_level`, detected once):

- ``"bwrap"``: bubblewrap. New user, PID, network, mount, IPC, UTS and cgroup namespaces; no
  network at all; the whole process tree dies with the run (the command is the init of a
  private PID namespace, killed at the end); a fresh ``/proc`` that shows only the sandbox's
  own processes; no environment but the one given; a read-only view of ``/usr`` (and the
  interpreter's prefix) and nothing else of the machine (not srelib's package with its
  reference fixes, not the user's home, not ``/etc``); uid 65534 inside, and on the machine too
  when started as root (with an interpreter that uid can run). ``scratch`` is copied into a tmpfs of ``quota_bytes`` at the same path
  (the disk quota: writes past it get ``ENOSPC``) and ``/tmp`` is a tmpfs of ``TMP_QUOTA``
  bytes; both vanish with the run, and nothing else is writable.
- ``"unshare"`` (util-linux ``unshare``, where bubblewrap is missing): new PID (with a fresh
  ``/proc``), network, IPC, UTS and mount namespaces, srelib's package covered by an empty
  tmpfs, uid 65534 when started as root (else the caller, mapped to root of a user namespace).
  The rest of the machine stays visible with the uid's own permissions, the command writes
  into ``scratch`` itself, and per-file size is the only disk quota.
- ``"uid-drop"`` (root, no working namespaces): the command runs as uid 65534 in its own
  session, writing into ``scratch`` itself. It keeps the network, may read and write what any
  user may, and a ``setsid`` child may outlive the run; per-file size is the only disk quota.
- ``"rlimits-only"`` (no uid to drop to: not root, or no interpreter uid 65534 can run; and no
  working namespaces): the command runs as the caller, with what every level has.

Every level builds the environment from scratch, applies ``limits`` (RLIMIT_* name -> value,
through util-linux ``prlimit``), sets no-new-privileges (setuid programs grant nothing) and
kills the process group at the end. What the command writes under ``scratch`` is not meant to
be read back: results travel on stdout. Tests may pass ``level`` to run at a weaker level.
"""

from __future__ import annotations

import functools
import json
import math
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

LEVELS = ("bwrap", "unshare", "uid-drop", "rlimits-only")
SANDBOX_UID = 65534
SCRATCH_QUOTA = 64 << 20
TMP_QUOTA = 16 << 20
OUTPUT_BYTES = 1 << 20
LIMITS = {"RLIMIT_AS": 1 << 30, "RLIMIT_FSIZE": 16 << 20, "RLIMIT_NPROC": 64,
          "RLIMIT_CORE": 0, "RLIMIT_NOFILE": 256}
_PRLIMIT_FLAGS = {"RLIMIT_AS": "--as", "RLIMIT_FSIZE": "--fsize", "RLIMIT_NPROC": "--nproc",
                  "RLIMIT_CORE": "--core", "RLIMIT_NOFILE": "--nofile", "RLIMIT_CPU": "--cpu"}
_SCRATCH_SOURCE = "/.srelib-scratch"  # where bwrap shows the caller's scratch, read-only
_PACKAGE = Path(__file__).resolve().parents[1]  # srelib/: never visible inside


@dataclass(frozen=True)
class SandboxResult:
    """What an isolated run did: exit status (negative: killed by that signal), its output
    (each capped at ``OUTPUT_BYTES``), whether the wall timeout ended it, and the level."""

    returncode: int
    stdout: bytes
    stderr: bytes
    timed_out: bool
    isolation: str


@dataclass(frozen=True)
class _Interpreter:
    path: str
    prefix: str
    uid: int | None  # the uid that launches the sandbox; None: the caller's own


def minimal_env(home: str | os.PathLike) -> dict[str, str]:
    """An environment built from scratch: nothing of the caller's (keys, tokens) leaks in."""
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(home), "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8", "TZ": "UTC"}


def _probe(python: str, uid: int | None) -> str | None:
    """The stdlib prefix of ``python`` if ``uid`` can run it and it is this Python's version."""
    code = "import sys; print(sys.version_info[:2] == %r and sys.base_prefix or '')" % (
        tuple(sys.version_info[:2]),)
    try:
        out = subprocess.run([python, "-I", "-S", "-c", code], capture_output=True, text=True,
                             timeout=30, user=uid, group=uid, extra_groups=None if uid is None else [],
                             cwd="/", env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.SubprocessError):
        return None
    prefix = out.stdout.strip()
    return prefix if out.returncode == 0 and prefix else None


@functools.lru_cache(maxsize=1)
def _interpreter() -> _Interpreter:
    """An interpreter of this Python version for the sandbox, and the uid to launch it as.

    As root: the first candidate uid 65534 can run (a pyenv under /root is not one; the
    system's ``/usr/bin/python3.X`` usually is). Otherwise, or if none, the base interpreter.
    """
    version = "python%d.%d" % sys.version_info[:2]
    base = getattr(sys, "_base_executable", None) or sys.executable
    candidates = [base, sys.executable, f"/usr/bin/{version}", shutil.which(version), "/usr/bin/python3"]
    if os.geteuid() == 0:
        for candidate in dict.fromkeys(c for c in candidates if c and os.path.exists(c)):
            prefix = _probe(candidate, SANDBOX_UID)
            if prefix:
                return _Interpreter(os.path.realpath(candidate), prefix, SANDBOX_UID)
    return _Interpreter(os.path.realpath(base), sys.base_prefix, None)


def sandbox_uid() -> int | None:
    """The machine uid sandboxed commands run as: ``SANDBOX_UID`` when started as root (with an
    interpreter that uid can run), else None (the caller's own)."""
    return _interpreter().uid


def python() -> str:
    """The interpreter a sandboxed command should run (standard library only)."""
    return _interpreter().path


@functools.lru_cache(maxsize=1)
def available_levels() -> tuple[str, ...]:
    """The levels this machine can run, strongest first (the last is always available)."""
    working = [level for level in ("bwrap", "unshare") if shutil.which(level) and _works(level)]
    return (*working, "uid-drop" if _interpreter().uid is not None else "rlimits-only")


def _works(level: str) -> bool:
    """Does a command run at ``level`` here (user namespaces may be blocked, as in some
    containers), with the uid drop where there is one?"""
    dropped = level == "bwrap" or _interpreter().uid is not None
    expected = SANDBOX_UID if dropped else 0  # else unshare maps the caller to its namespace's root
    with tempfile.TemporaryDirectory(prefix="srelib-sandbox-probe-") as tmp:
        probe = _run_at(level, [python(), "-I", "-S", "-c", "import os; print(os.getuid())"],
                        Path(tmp), stdin=b"", timeout_s=30, readable=(), env=None, limits=None,
                        quota_bytes=SCRATCH_QUOTA)
    return probe.returncode == 0 and probe.stdout.strip() == str(expected).encode()


def isolation_level() -> str:
    """The isolation patch grading gets on this machine: one of :data:`LEVELS`."""
    return available_levels()[0]


def _tool(name: str) -> str:
    path = shutil.which(name, path="/usr/bin:/bin")
    if path is None:
        raise RuntimeError(f"the sandbox needs {name} (util-linux) in /usr/bin or /bin")
    return path


def _limited(argv: list[str], limits: dict[str, int]) -> list[str]:
    """``argv`` under ``limits``, through util-linux ``prlimit``."""
    unknown = sorted(set(limits) - set(_PRLIMIT_FLAGS))
    if unknown:
        raise ValueError(f"unknown limits {unknown}; valid: {sorted(_PRLIMIT_FLAGS)}")
    return [_tool("prlimit"), *(f"{_PRLIMIT_FLAGS[k]}={int(v)}" for k, v in sorted(limits.items())),
            "--", *argv]


def _unprivileged(argv: list[str], uid: int | None) -> list[str]:
    """``argv`` as ``uid`` (if any) with no new privileges (setuid files grant nothing), through
    util-linux ``setpriv``; unlike Popen's ``user=``, this lets Popen start it with vfork."""
    drop = [] if uid is None else [f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    return [_tool("setpriv"), "--no-new-privs", *drop, "--", *argv]


def _top_level_binds() -> list[str]:
    """/usr read-only, and /bin, /lib... as the symlinks or folders they are on this machine."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    return args


def _within(path: Path, roots: list[str]) -> bool:
    return any(path == Path(r) or Path(r) in path.parents for r in roots)


def _bwrap_argv(argv: list[str], scratch: Path, readable: list[Path], env: dict[str, str],
                quota_bytes: int, info_fd: int) -> list[str]:
    prefix = os.path.realpath(_interpreter().prefix)
    args = [shutil.which("bwrap"), "--unshare-all", "--unshare-user", "--disable-userns",
            "--die-with-parent", "--new-session", "--as-pid-1", "--clearenv", "--info-fd", str(info_fd),
            "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), *_top_level_binds()]
    bound = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]
    if not _within(Path(prefix), bound):
        args += ["--ro-bind", prefix, prefix]
        bound.append(prefix)
    args += ["--proc", "/proc", "--dev", "/dev", "--size", str(TMP_QUOTA), "--tmpfs", "/tmp"]
    for path in readable:
        args += ["--ro-bind", str(path), str(path)]
        bound.append(str(path))
    if _within(_PACKAGE, bound):  # e.g. srelib installed under /usr: hide it
        args += ["--tmpfs", str(_PACKAGE)]
    args += ["--ro-bind", str(scratch), _SCRATCH_SOURCE, "--size", str(quota_bytes),
             "--tmpfs", str(scratch), "--chdir", str(scratch),
             "--remount-ro", "/dev", "--remount-ro", "/"]  # no unbounded tmpfs left writable
    for key, value in env.items():
        args += ["--setenv", key, value]
    copy_in = f'cp -R -P {_SCRATCH_SOURCE}/. . && exec "$@"'
    return args + ["--", "/bin/sh", "-c", copy_in, "sh", *argv]


def _unshare_argv(argv: list[str]) -> list[str]:
    """``argv`` in new PID (with a fresh /proc), network, IPC, UTS and mount namespaces, with
    srelib's package and ``/dev/shm`` covered by tiny empty tmpfs mounts."""
    flags = ["--pid", "--fork", "--kill-child", "--mount-proc", "--net", "--ipc", "--uts"]
    if os.geteuid() != 0:
        flags.insert(0, "--map-root-user")
    cover = ('mount -t tmpfs -o size=4k,mode=0 none "$0" && '
             '{ [ ! -d /dev/shm ] || mount -t tmpfs -o size=1m none /dev/shm; } && exec "$@"')
    return [_tool("unshare"), *flags, "--", "/bin/sh", "-c", cover, str(_PACKAGE), *argv]


def _reachable(path: Path) -> bool:
    """May any uid enter every folder above ``path``?"""
    return all(parent.stat().st_mode & stat.S_IXOTH for parent in path.parents)


def _hand_over(path: Path, uid: int) -> None:
    """Give the tree under ``path`` to ``uid`` (symlinks themselves, never their targets)."""
    for dirpath, dirnames, filenames in os.walk(path):
        os.lchown(dirpath, uid, uid)
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), uid, uid)


def _wait_for_exit(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Wait until ``proc`` exits or ``timeout_s`` passes; True if it exited.

    A pidfd wakes us the moment the process exits (Linux 5.3+); Popen.wait polls with sleeps
    of up to 50 ms, a large part of a grading's wall time.
    """
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        fd = None
    if fd is None:
        try:
            proc.wait(timeout=timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        select.select([fd], [], [], timeout_s)
    finally:
        os.close(fd)
    return proc.poll() is not None


def _namespace_init(info_read: int) -> int | None:
    """A pidfd of the sandbox's PID-namespace init, whose pid bubblewrap reports as JSON on
    ``--info-fd`` (in several writes); opened while bubblewrap, its parent, still holds it."""
    text, deadline = b"", time.monotonic() + 5.0
    while select.select([info_read], [], [], max(0.0, deadline - time.monotonic()))[0]:
        chunk = os.read(info_read, 4096)
        text += chunk
        try:
            return os.pidfd_open(int(json.loads(text)["child-pid"]))
        except ValueError:
            if not chunk:
                return None
        except (OSError, KeyError, TypeError):
            return None
    return None


def _end_namespace(init: int) -> None:
    """Kill the PID namespace's init, and so every process in it; return once they are gone
    (the kernel reaps the namespace before the init counts as exited)."""
    try:
        signal.pidfd_send_signal(init, signal.SIGKILL)
        select.select([init], [], [], 5.0)
    except OSError:
        pass
    finally:
        os.close(init)


def _end_group(proc: subprocess.Popen) -> None:
    """Kill ``proc``'s process group, reap ``proc`` and wait (up to 1 s) until the group is gone."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except OSError:
            return
        time.sleep(0.002)


def _read(file) -> bytes:
    file.seek(0)
    return file.read(OUTPUT_BYTES)


def run_isolated(argv: list[str], scratch: Path, *, stdin: bytes = b"", timeout_s: float,
                 readable: list[Path] | tuple = (), env: dict[str, str] | None = None,
                 limits: dict[str, int] | None = None, quota_bytes: int = SCRATCH_QUOTA,
                 level: str | None = None) -> SandboxResult:
    """Run ``argv`` isolated (see the module docstring), cwd = ``scratch``; never raises for
    anything the command does. ``readable``: extra paths bubblewrap shows read-only at the same
    place (the weaker levels see the whole machine anyway).
    ``env`` defaults to :func:`minimal_env`; ``limits`` are merged over :data:`LIMITS` (with
    RLIMIT_CPU from the timeout); ``level`` defaults to :func:`isolation_level`."""
    levels = available_levels()
    level = level or levels[0]
    if level not in levels:
        raise ValueError(f"isolation level {level!r} is not available here; valid: {list(levels)}")
    scratch = Path(scratch).resolve()
    if not scratch.is_dir():
        raise ValueError(f"scratch must be an existing directory, got {str(scratch)!r}")
    if _interpreter().uid is not None and level != "rlimits-only" and not _reachable(scratch):
        raise ValueError(f"scratch {str(scratch)!r} must be reachable by uid {SANDBOX_UID}: every "
                         "folder above it must let others in (o+x), as /tmp does")
    return _run_at(level, list(argv), scratch, stdin=stdin, timeout_s=timeout_s, readable=readable,
                   env=env, limits=limits, quota_bytes=quota_bytes)


def _run_at(level: str, argv: list[str], scratch: Path, *, stdin: bytes, timeout_s: float,
            readable, env: dict[str, str] | None, limits: dict[str, int] | None,
            quota_bytes: int) -> SandboxResult:
    env = minimal_env(scratch) if env is None else dict(env)
    limits = {**LIMITS, "RLIMIT_CPU": math.ceil(timeout_s) + 1, **(limits or {})}
    command = _limited(list(argv), limits)
    uid = None if level == "rlimits-only" else _interpreter().uid
    if uid is not None:
        _hand_over(scratch, uid)
    info_read = info_write = None
    if level == "bwrap":
        info_read, info_write = os.pipe()
        command = _bwrap_argv(command, scratch, [Path(p).resolve() for p in readable], env,
                              quota_bytes, info_write)
        env = {"PATH": "/usr/bin:/bin"}  # bubblewrap's own environment; the command gets --setenv
    elif level == "unshare":  # the uid drop comes last, inside, after the mounts
        command, uid = _unshare_argv(_unprivileged(command, uid)), None
    command = _unprivileged(command, uid)
    with tempfile.TemporaryFile() as given, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        given.write(stdin)
        given.seek(0)
        try:
            proc = subprocess.Popen(command, stdin=given, stdout=out, stderr=err, cwd=scratch, env=env,
                                    start_new_session=True, close_fds=True,
                                    pass_fds=() if info_write is None else (info_write,))
        finally:
            if info_write is not None:
                os.close(info_write)
        init = _namespace_init(info_read) if info_read is not None else None
        try:
            timed_out = not _wait_for_exit(proc, timeout_s)
        finally:
            if init is not None:
                _end_namespace(init)
            _end_group(proc)
            if info_read is not None:
                os.close(info_read)
        return SandboxResult(proc.returncode, _read(out), _read(err), timed_out, level)
