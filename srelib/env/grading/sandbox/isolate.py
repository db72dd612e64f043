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
- ``"unshare"`` (util-linux ``unshare``, where bubblewrap is missing): new PID, network, IPC,
  UTS and mount namespaces and a root built like bubblewrap's on a tmpfs, then ``pivot_root``
  into it, so the machine's tree is gone: read-only ``/usr`` and the interpreter's prefix, a
  few devices, a fresh ``/proc``, ``/tmp`` a tmpfs of ``TMP_QUOTA``, ``scratch`` copied into a
  tmpfs of ``quota_bytes``; uid 65534 when started as root (else the caller, mapped to root of
  a user namespace, with every capability dropped). The process tree dies with the run.
- ``"uid-drop"`` (root, no working namespaces): the command runs as uid 65534 in its own
  session, writing into ``scratch`` itself. It keeps the network, may read and write what any
  user may (srelib's reference fixes, other grades' scratch), and a ``setsid`` child may
  outlive the run; per-file size is the only disk quota.
- ``"rlimits-only"`` (no uid to drop to: not root, or no interpreter uid 65534 can run; and no
  working namespaces): the command runs as the caller, with what every level has.

Only ``HOLDING_LEVELS`` (bwrap, unshare) keep patched code from what the grader holds; patch
grading asks :func:`grading_level`, which refuses the others unless ``SRELIB_SANDBOX=unsafe``.

Every level builds the environment from scratch, applies ``limits`` (RLIMIT_* name -> value,
through util-linux ``prlimit``), sets no-new-privileges (setuid programs grant nothing) and
kills the process group at the end. What the command writes under ``scratch`` is not meant to
be read back: results travel on stdout. Tests may pass ``level`` to run at a weaker level.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from srelib.env.grading.sandbox import slots as sandbox_slots
from srelib.env.grading.sandbox.process import SandboxResult, Started
from srelib.env.grading.sandbox.seccomp import entered

LEVELS = ("bwrap", "unshare", "uid-drop", "rlimits-only")
HOLDING_LEVELS = ("bwrap", "unshare")  # the levels patch grading trusts
SANDBOX_ENV = "SRELIB_SANDBOX"
SANDBOX_MODES = ("strict", "unsafe")
SANDBOX_UID = 65534
SCRATCH_QUOTA = 64 << 20
TMP_QUOTA = 16 << 20
LIMITS = {"RLIMIT_AS": 1 << 30, "RLIMIT_FSIZE": 16 << 20, "RLIMIT_NPROC": 64,
          "RLIMIT_CORE": 0, "RLIMIT_NOFILE": 256}
_PRLIMIT_FLAGS = {"RLIMIT_AS": "--as", "RLIMIT_FSIZE": "--fsize", "RLIMIT_NPROC": "--nproc",
                  "RLIMIT_CORE": "--core", "RLIMIT_NOFILE": "--nofile", "RLIMIT_CPU": "--cpu"}
_SCRATCH_SOURCE = "/.srelib-scratch"  # where bwrap shows the caller's scratch, read-only
FRESH_SCRATCH = Path("/srelib-box")  # a prepared sandbox's scratch, inside it only
_PACKAGE = Path(__file__).resolve().parents[3]  # srelib/: never visible inside


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


@functools.lru_cache(maxsize=1)  # no arguments: one small record
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
    """``SANDBOX_UID`` when sandboxed commands drop to a uid of the machine (started as root,
    with an interpreter that uid can run), else None (they run as the caller). Each sandbox
    runs as a uid of its own from :data:`~srelib.env.grading.sandbox.slots.GRADING_UIDS`, uid
    ``SANDBOX_UID`` inside bubblewrap."""
    return _interpreter().uid


def python() -> str:
    """The interpreter a sandboxed command should run (standard library only)."""
    return _interpreter().path


@functools.lru_cache(maxsize=1)  # no arguments: a tuple of at most three names
def available_levels() -> tuple[str, ...]:
    """The levels this machine can run, strongest first (the last is always available)."""
    working = [level for level in ("bwrap", "unshare") if shutil.which(level) and _works(level)]
    return (*working, "uid-drop" if _interpreter().uid is not None else "rlimits-only")


def _works(level: str) -> bool:
    """Does a command run at ``level`` here (user namespaces may be blocked, as in some
    containers), with the uid drop where there is one?"""
    if level == "bwrap":
        expected = {SANDBOX_UID}
    elif _interpreter().uid is not None:
        expected = set(sandbox_slots.GRADING_UIDS)
    else:
        expected = {0}  # unshare maps the caller to its namespace's root
    with tempfile.TemporaryDirectory(prefix="srelib-sandbox-probe-") as tmp:
        probe = _run_at(level, [python(), "-I", "-S", "-c", "import os; print(os.getuid())"],
                        Path(tmp), stdin=b"", timeout_s=30, readable=(), env=None, limits=None,
                        quota_bytes=SCRATCH_QUOTA)
    seen = probe.stdout.strip().decode(errors="replace")
    return probe.returncode == 0 and seen.isdigit() and int(seen) in expected


def isolation_level() -> str:
    """The isolation patch grading gets on this machine: one of :data:`LEVELS`."""
    return available_levels()[0]


class SandboxRefused(RuntimeError):
    """Patch grading will not run here: the strongest sandbox cannot hold (see
    :func:`grading_level`)."""


def sandbox_mode() -> str:
    """``SANDBOX_ENV``'s value: ``"strict"`` (the default: grade only at a level that holds) or
    ``"unsafe"`` (also at a weaker one, verdicts marked unverified)."""
    mode = os.environ.get(SANDBOX_ENV, "").strip().lower() or "strict"
    if mode not in SANDBOX_MODES:
        raise ValueError(f"{SANDBOX_ENV}={mode!r} is not a sandbox mode; valid: {list(SANDBOX_MODES)}")
    return mode


def grading_level() -> tuple[str, bool]:
    """``(level, verified)``: the level patch grading runs at, and whether its verdicts can be
    trusted. Only ``HOLDING_LEVELS`` keep srelib's reference fixes, the hidden tests and other
    grades out of reach and end every process with the run; below them grading raises
    :class:`SandboxRefused` unless ``SANDBOX_ENV`` is ``"unsafe"``."""
    level, mode = isolation_level(), sandbox_mode()
    if level in HOLDING_LEVELS:
        return level, True
    if mode == "unsafe":
        return level, False
    raise SandboxRefused(
        f"patch grading refuses to run: the strongest sandbox on this machine is {level!r}, which "
        "cannot hide srelib's reference fixes from the code under test or stop it outliving the "
        "grade. Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf "
        "install bubblewrap; Alpine: apk add bubblewrap) or allow user namespaces for unshare; "
        f"or grade anyway, unverified, with --sandbox=unsafe ({SANDBOX_ENV}=unsafe).")


class MissingTool(RuntimeError):
    """A program the sandbox needs is not installed."""


def _tool(name: str) -> str:
    path = shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin")
    if path is None:
        raise MissingTool(f"the sandbox needs {name} (util-linux) in /usr/bin, /bin, /usr/sbin or /sbin")
    return path


def _limited(argv: list[str], limits: dict[str, int]) -> list[str]:
    """``argv`` under ``limits``, through util-linux ``prlimit``."""
    unknown = sorted(set(limits) - set(_PRLIMIT_FLAGS))
    if unknown:
        raise ValueError(f"unknown limits {unknown}; valid: {sorted(_PRLIMIT_FLAGS)}")
    return [_tool("prlimit"), *(f"{_PRLIMIT_FLAGS[k]}={int(v)}" for k, v in sorted(limits.items())),
            "--", *argv]


def _unprivileged(argv: list[str], uid: int | None, drop_caps: bool = False) -> list[str]:
    """``argv`` as ``uid`` (if any) with no new privileges (setuid files grant nothing), through
    util-linux ``setpriv``; unlike Popen's ``user=``, this lets Popen start it with vfork.
    ``drop_caps``: also empty the capability sets (for a command left as a namespace's root)."""
    drop = [] if uid is None else [f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    caps = ["--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all"] if drop_caps else []
    return [_tool("setpriv"), "--no-new-privs", *drop, *caps, "--", *argv]


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
                quota_bytes: int, info_fd: int, copy_in: bool) -> list[str]:
    """``argv`` in bubblewrap (see the module doc), in a tmpfs at ``scratch`` that holds a copy
    of the caller's ``scratch`` when ``copy_in``, else nothing."""
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
    args += ["--ro-bind", str(scratch), _SCRATCH_SOURCE] if copy_in else []
    args += ["--size", str(quota_bytes), "--tmpfs", str(scratch), "--chdir", str(scratch),
             "--remount-ro", "/dev", "--remount-ro", "/"]  # no unbounded tmpfs left writable
    for key, value in env.items():
        args += ["--setenv", key, value]
    if not copy_in:
        return args + ["--", *argv]
    return args + ["--", "/bin/sh", "-c", f'cp -R -P {_SCRATCH_SOURCE}/. . && exec "$@"', "sh", *argv]


def _unshare_argv(argv: list[str], scratch: Path, readable: list[Path], quota_bytes: int,
                  new_root: Path, copy_in: bool) -> list[str]:
    """``argv`` in new PID, network, IPC, UTS and mount namespaces, pivoted into a root built
    like bubblewrap's (see :func:`_root_script`) on the empty folder ``new_root``."""
    flags = ["--pid", "--fork", "--kill-child", "--net", "--ipc", "--uts", "--mount",
             "--propagation", "private"]
    if os.geteuid() != 0:
        flags.insert(0, "--map-root-user")
    script = _root_script(scratch, readable, quota_bytes, new_root, copy_in)
    return [_tool("unshare"), *flags, "--", "/bin/sh", "-e", "-c", script, "sh", *argv]


def _root_script(scratch: Path, readable: list[Path], quota_bytes: int, new_root: Path,
                 copy_in: bool) -> str:
    """Shell that builds a tmpfs root on ``new_root`` (read-only ``/usr``, the interpreter's
    prefix and ``readable``; a few devices; a fresh ``/proc``; ``/tmp`` a tmpfs of
    ``TMP_QUOTA``; a tmpfs of ``quota_bytes`` at ``scratch``, holding a copy of the caller's
    ``scratch`` when ``copy_in``), pivots into it, removes ``new_root`` from the machine (nothing
    is left behind however the caller ends), drops the machine's tree and execs ``"$@"`` in
    ``scratch``."""
    q, root = shlex.quote, str(new_root)
    lines = [f"mount -t tmpfs -o size=1m,mode=0755 none {q(root)}"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            lines.append(f"ln -s {q(os.readlink(top))} {q(root + top)}")
        elif os.path.isdir(top):
            readable = [Path(top), *readable]
    prefix = Path(os.path.realpath(_interpreter().prefix))
    for path in dict.fromkeys([Path("/usr"), prefix, *readable]):
        target = q(root + str(path))
        lines += [f"mkdir -p {target}"] if path.is_dir() else [
            f"mkdir -p {q(root + str(path.parent))}", f"touch {target}"]
        lines += [f"mount --bind {q(str(path))} {target}",
                  f"mount -o remount,bind,ro,nosuid,nodev {target}"]
    if _within(_PACKAGE, [str(p) for p in (Path("/usr"), prefix, *readable)]):
        lines.append(f"mount -t tmpfs -o size=4k,mode=0 none {q(root + str(_PACKAGE))}")
    lines.append(f"mkdir {q(root)}/dev {q(root)}/proc {q(root)}/tmp {q(root)}/.old")
    for device in ("null", "zero", "full", "random", "urandom"):
        lines += [f"touch {q(root)}/dev/{device}", f"mount --bind /dev/{device} {q(root)}/dev/{device}"]
    box = q(root + str(scratch))
    lines += [f"mount -t proc -o nosuid,nodev,noexec proc {q(root)}/proc",
              f"mount -t tmpfs -o size={TMP_QUOTA},mode=1777,nosuid,nodev none {q(root)}/tmp",
              f"mkdir -p {box}", f"mount -t tmpfs -o size={int(quota_bytes)},nosuid,nodev none {box}",
              *([f"cp -a {q(str(scratch))}/. {box}/"] if copy_in else []),
              f"cd {q(root)}", f"{_tool('pivot_root')} . .old",
              "cd /", f"rmdir /.old{q(root)} || :",  # new_root, no longer a mount point
              "umount -l /.old", "rmdir /.old", "mount -o remount,ro,bind /",
              f"cd {q(str(scratch))}", "unset OLDPWD", 'exec "$@"']
    return "\n".join(lines)  # each line a simple command, so that sh -e stops at any failure


def _reachable(path: Path) -> bool:
    """May any uid enter every folder above ``path``?"""
    return all(parent.stat().st_mode & stat.S_IXOTH for parent in path.parents)


def _hand_over(path: Path, uid: int) -> None:
    """Give the tree under ``path`` to ``uid`` (symlinks themselves, never their targets)."""
    for dirpath, dirnames, filenames in os.walk(path):
        os.lchown(dirpath, uid, uid)
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), uid, uid)


def run_isolated(argv: list[str], scratch: Path, *, stdin: bytes = b"", timeout_s: float,
                 readable: list[Path] | tuple = (), env: dict[str, str] | None = None,
                 limits: dict[str, int] | None = None, quota_bytes: int = SCRATCH_QUOTA,
                 level: str | None = None) -> SandboxResult:
    """Run ``argv`` isolated (see the module docstring), cwd = ``scratch``; never raises for
    anything the command does. ``readable``: extra paths bubblewrap shows read-only at the same
    place (the weaker levels see the whole machine anyway).
    ``env`` defaults to :func:`minimal_env`; ``limits`` are merged over :data:`LIMITS` (with
    RLIMIT_CPU from the timeout); ``level`` defaults to :func:`isolation_level`."""
    level = _checked_level(level)
    scratch = Path(scratch).resolve()
    if not scratch.is_dir():
        raise ValueError(f"scratch must be an existing directory, got {str(scratch)!r}")
    if _interpreter().uid is not None and level != "rlimits-only" and not _reachable(scratch):
        raise ValueError(f"scratch {str(scratch)!r} must be reachable by uid {SANDBOX_UID}: every "
                         "folder above it must let others in (o+x), as /tmp does")
    return _run_at(level, list(argv), scratch, stdin=stdin, timeout_s=timeout_s, readable=readable,
                   env=env, limits=limits, quota_bytes=quota_bytes)


def prepare(argv: list[str], *, timeout_s: float, readable: list[Path] | tuple = (),
            env: dict[str, str] | None = None, limits: dict[str, int] | None = None,
            quota_bytes: int = SCRATCH_QUOTA, level: str | None = None) -> Started:
    """Start ``argv`` isolated now, as :func:`run_isolated` would, with an empty scratch of its
    own (at a holding level, a tmpfs at ``FRESH_SCRATCH`` that exists only inside) and its
    standard input still to come: ``.finish(stdin, timeout_s)`` sends it and
    returns the :class:`SandboxResult` (the wall timeout counts from then; ``timeout_s`` here
    sets the CPU limit), ``.discard()`` ends it unused. Each one runs once."""
    level = _checked_level(level)
    stack = contextlib.ExitStack()
    try:
        if level in HOLDING_LEVELS:  # a tmpfs of its own: nothing on the machine to clean up
            scratch, copy_in = FRESH_SCRATCH, False
        else:
            scratch, copy_in = _temporary_folder(stack, "srelib-box-"), True
            scratch.chmod(0o755)  # reachable by the sandbox uid, as /tmp's other folders are
        return _start(level, list(argv), scratch, timeout_s=timeout_s, readable=readable, env=env,
                      limits=limits, quota_bytes=quota_bytes, stack=stack, copy_in=copy_in)
    except BaseException:
        stack.close()
        raise


def _temporary_folder(stack: contextlib.ExitStack, prefix: str) -> Path:
    """A new folder, removed when ``stack`` closes. Not a TemporaryDirectory: a forked child
    that drops the object must not remove the folder its parent's sandbox still uses."""
    folder = Path(tempfile.mkdtemp(prefix=prefix)).resolve()
    stack.callback(shutil.rmtree, folder, ignore_errors=True)
    return folder


def _checked_level(level: str | None) -> str:
    levels = available_levels()
    level = level or levels[0]
    if level not in levels:
        raise ValueError(f"isolation level {level!r} is not available here; valid: {list(levels)}")
    return level


def _run_at(level: str, argv: list[str], scratch: Path, *, stdin: bytes, timeout_s: float,
            readable, env: dict[str, str] | None, limits: dict[str, int] | None,
            quota_bytes: int) -> SandboxResult:
    started = _start(level, argv, scratch, timeout_s=timeout_s, readable=readable, env=env,
                     limits=limits, quota_bytes=quota_bytes, stack=contextlib.ExitStack())
    return started.finish(stdin, timeout_s)


def _start(level: str, argv: list[str], scratch: Path, *, timeout_s: float, readable,
           env: dict[str, str] | None, limits: dict[str, int] | None, quota_bytes: int,
           stack: contextlib.ExitStack, copy_in: bool = True) -> Started:
    """Launch ``argv`` at ``level`` in ``scratch``; ``stack`` holds what the run needs until it
    ends (it is closed when the run ends, or here if the launch fails). Without ``copy_in``
    (holding levels only), ``scratch`` is a path inside the sandbox, made empty there."""
    env = minimal_env(scratch) if env is None else dict(env)
    limits = {**LIMITS, "RLIMIT_CPU": math.ceil(timeout_s) + 1, **(limits or {})}
    command = _limited(entered(list(argv), python()), limits)
    readable = [Path(p).resolve() for p in readable]
    info_pipe = None
    with contextlib.ExitStack() as failing:
        failing.push(stack)  # closed only if the launch raises
        slot = sandbox_slots.acquire(stack, uid_drop=_interpreter().uid is not None)
        uid = None if level == "rlimits-only" else slot.uid
        if uid is not None and copy_in:
            _hand_over(scratch, uid)
        if level == "bwrap":
            info_pipe = os.pipe()
            command = _bwrap_argv(command, scratch, readable, env, quota_bytes, info_pipe[1], copy_in)
            env = {"PATH": "/usr/bin:/bin"}  # bubblewrap's own environment; the command gets --setenv
        elif level == "unshare":  # the uid drop comes last, inside, after the mounts
            new_root = _temporary_folder(stack, "srelib-root-")
            command = _unshare_argv(_unprivileged(command, uid, drop_caps=uid is None), scratch,
                                    readable, quota_bytes, new_root, copy_in)
            uid = None
        started = Started(sandbox_slots.joined(_unprivileged(command, uid), slot), cwd=str(scratch) if copy_in else "/",
                          env=env, level=level, info_pipe=info_pipe, stack=stack)
        failing.pop_all()
    return started
